"""The paper-scale path's code on a tiny Llama checkpoint folder (the SmolLM2 layout), built here."""
from __future__ import annotations

import torch

from engines.l2d import real


def _char_llama(folder):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    chars = sorted(set("0123456789+-=. Compute"))
    vocab = {c: i for i, c in enumerate(["<unk>"] + chars)}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>")
    torch.manual_seed(0)
    conf = LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    LlamaForCausalLM(conf).save_pretrained(folder)
    tok.save_pretrained(folder)


def test_real_model_path_on_a_llama_folder(tmp_path):
    _char_llama(tmp_path)
    res = real.real_model({"model_id": str(tmp_path), "train_steps": 1, "batch": 2, "n_eval": 2, "steps": [1, 3],
                           "flow_dim": 16, "lora_rank": 4})
    assert res["base_bit_identical"] is True and res["t0_max_abs_diff"] < 1e-5
    assert set(res["acc"]) == {"1", "3"} and res["n_eval"] == 2 and len(res["losses"]) == 1
    assert res["prompt_tokens"] == len("Compute 123+456+789=") and res["answer_tokens"] == 5
