"""A tiny chat model for tests of the real-model path: a character-level tokenizer with a ChatML template
(SmolLM2's layout) and a random ``LlamaForCausalLM`` (SmolLM2's architecture) built from a small config."""
from __future__ import annotations

import string

CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def tiny_tokenizer():
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = ["<unk>", "<|im_start|>", "<|im_end|>", "<pad>"]
    vocab = {t: i for i, t in enumerate(specials + sorted(set(string.printable)))}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", eos_token="<|im_end|>",
                                  pad_token="<pad>", additional_special_tokens=["<|im_start|>"])
    tok.chat_template = CHAT_TEMPLATE
    return tok


def tiny_llama(vocab_size: int, seed: int = 0):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                      initializer_range=0.3)
    return LlamaForCausalLM(cfg).eval()


def tiny_policy(max_new_tokens: int = 8, seed: int = 0):
    from engines.dpsdp.chat import ChatPolicy

    tok = tiny_tokenizer()
    return ChatPolicy(tiny_llama(len(tok), seed), tok, max_new_tokens)
