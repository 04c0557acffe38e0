"""GGUF files as runnable transformers models, built as transformers' own GGUF loader builds them.

transformers' loader (``from_pretrained(dir, gguf_file=...)``, for llama-family and Gemma files its
legacy path ``transformers.modeling_gguf_pytorch_utils.load_gguf_checkpoint``) parses the whole
file with ``gguf.GGUFReader``, tokenizer arrays included, three times: 16 s of the 18 s a
notebook takes to its first attention pattern. Here the same steps run from headforms' fast
reader (:class:`headforms.readers.GGUFReader`: header only, tensors memory-mapped):

- the config dict is the loader's, key for key (its tables ``GGUF_TO_TRANSFORMERS_MAPPING`` and
  ``GGUF_CONFIG_DEFAULTS_MAPPING``, its special cases), turned into the config class as
  ``AutoConfig`` does;
- the model is instantiated with empty (meta) parameters and real buffers (RoPE frequencies);
- every tensor is dequantized to float32 (``gguf.quants.dequantize``, as the loader does), passed
  through the loader's own tensor processor (llama.cpp's Q/K row permutation undone, Gemma's
  ``1 + w`` norms) and renamed by the loader's own name map (``get_gguf_hf_weights_map``), then
  assigned to the model without a copy.

Tests compare the config, the weights and the attention with ``from_pretrained(gguf_file=...)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import CorruptFileError, NotRunnableError

_GGUF_MODEL_TYPES = {
    "cohere": "command-r",
    "qwen2_moe": "qwen2moe",
    "qwen3_moe": "qwen3moe",
    "gemma3_text": "gemma3",
    "gemma4_text": "gemma4",
    "umt5": "t5",
    "minimax_m2": "minimax-m2",
    "gpt_oss": "gpt-oss",
}
"""transformers model type -> gguf-py architecture name (``get_gguf_hf_weights_map``'s table)."""
_RENAMED = {"qwen2moe": "qwen2_moe", "qwen3moe": "qwen3_moe", "minimax-m2": "minimax_m2"}
"""Architectures whose transformers name differs (``load_gguf_checkpoint``'s renames)."""
_UNTIED = ("falcon", "bloom")
"""Architectures whose embeddings the loader treats as tied even with an ``output.weight``."""


def _architectures(reader: Any) -> tuple[str, str]:
    """``(architecture, updated_architecture)`` as ``load_gguf_checkpoint`` names them."""
    architecture = str(reader.metadata.get("general.architecture", ""))
    name = reader.metadata.get("general.name")
    model_name = [name] if name is not None else []
    updated = architecture
    if "llama" in architecture and "mistral" in model_name:  # the loader's own test (a list)
        updated = "mistral"
    elif "t5" in architecture:
        raise NotRunnableError(
            f"GGUF architecture {architecture!r} is not a decoder headforms runs"
        )
    for old, new in _RENAMED.items():
        if old in architecture:
            updated = new
    if "gpt_oss" in architecture or "gpt-oss" in architecture:
        updated = "gpt_oss"
    return architecture, updated


def _metadata_value(reader: Any, key: str) -> Any:
    """A metadata value as ``load_gguf_checkpoint`` parses it: arrays as lists, a one-element
    array as its element."""
    if key in reader.array_keys():
        values = reader.array(key)
        return values[0] if len(values) == 1 else values
    return reader.metadata[key]


def config_dict(reader: Any) -> dict[str, Any]:
    """The transformers config dict of a GGUF file, as ``load_gguf_checkpoint`` builds it."""
    from transformers.integrations import GGUF_CONFIG_DEFAULTS_MAPPING
    from transformers.modeling_gguf_pytorch_utils import (
        GGUF_SUPPORTED_ARCHITECTURES,
        GGUF_TO_TRANSFORMERS_MAPPING,
    )

    architecture, updated = _architectures(reader)
    if architecture not in GGUF_SUPPORTED_ARCHITECTURES and updated not in (
        GGUF_SUPPORTED_ARCHITECTURES
    ):
        raise NotRunnableError(
            f"GGUF architecture {architecture!r} is not one transformers' GGUF loader converts "
            "(it converts: " + ", ".join(sorted(GGUF_SUPPORTED_ARCHITECTURES)) + ")"
        )
    config: dict[str, Any] = {
        "tie_word_embeddings": "output.weight" not in reader.names() or architecture in _UNTIED
    }
    defaults = GGUF_CONFIG_DEFAULTS_MAPPING.get(
        updated, GGUF_CONFIG_DEFAULTS_MAPPING.get(architecture)
    )
    for key, value in (defaults or {}).items():
        config.setdefault(key, value)
    renames = GGUF_TO_TRANSFORMERS_MAPPING["config"]
    for key in reader.metadata:
        prefix, _, config_key = key.replace(architecture, updated).partition(".")
        renamed = renames.get(prefix, {}).get(config_key)
        if renamed is None or renamed == -1:
            continue
        value = _metadata_value(reader, key)
        if isinstance(value, str) and architecture in value:
            value = value.replace(architecture, updated)
        config[renamed] = value
    if config.get("model_type") == "gemma3":  # the file holds the text backbone only
        config["model_type"] = "gemma3_text"
    if "vocab_size" not in config and "tokenizer.ggml.tokens" in reader.array_keys():
        config["vocab_size"] = reader.array_keys()["tokenizer.ggml.tokens"]
    return config


def transformers_config(reader: Any) -> Any:
    """The config object ``AutoConfig.from_pretrained(dir, gguf_file=...)`` gives."""
    from transformers import CONFIG_MAPPING

    fields = config_dict(reader)
    model_type = fields.get("model_type")
    if model_type not in CONFIG_MAPPING:
        raise NotRunnableError(f"transformers has no model type {model_type!r}")
    return CONFIG_MAPPING[model_type].from_dict(dict(fields))


def weights_map(model: Any, processor: Any) -> dict[str, str]:
    """GGUF tensor name -> the model's parameter name, as ``get_gguf_hf_weights_map`` maps them:
    every module's state-dict names (the model's first, then each child's, depth first, an
    earlier mapping never overwritten) looked up in gguf-py's name map of the architecture."""
    from gguf import MODEL_ARCH_NAMES, get_tensor_name_map

    config = model.config
    model_type = _GGUF_MODEL_TYPES.get(config.model_type, config.model_type)
    arch = next((key for key, value in MODEL_ARCH_NAMES.items() if value == model_type), None)
    if arch is None:
        raise NotRunnableError(f"gguf-py has no architecture {model_type!r}")
    name_map = get_tensor_name_map(arch, config.num_hidden_layers)
    keys = list(model.state_dict())
    mapping: dict[str, str] = {}

    def walk(module: Any, qual_name: str) -> None:
        own: dict[str, str] = {}
        for full_key in keys:
            if not full_key.startswith(qual_name):
                continue
            hf_name = processor.preprocess_name(full_key[len(qual_name) :])
            name, suffix = hf_name, ""
            if hf_name.endswith((".weight", ".bias")):
                name, suffix = hf_name.rsplit(".", 1)
                suffix = "." + suffix
            gguf_name = name_map.get_name(name)
            if gguf_name is None:
                processor.perform_fallback_tensor_mapping(own, suffix, qual_name, hf_name)
                continue
            own[gguf_name + suffix] = qual_name + hf_name
        for key, value in own.items():
            mapping.setdefault(key, value)
        for child_name, child in module.named_children():
            walk(child, f"{qual_name}{child_name}.")

    walk(model, "")
    return mapping


def build_model(reader: Any, label: str, with_head: bool = False) -> Any:
    """The base transformers model (float32, eager attention, eval mode) of a GGUF file; with
    ``with_head``, the ``*ForCausalLM`` model around it (its language-modelling head read from
    ``output.weight``, or tied to the token embeddings as the loader ties them).

    Instantiated on the meta device with real buffers, then every tensor assigned from the file
    (dequantized, processed and renamed as ``load_gguf_checkpoint`` does). Without
    ``with_head`` the language-model head is not loaded: attention needs the base model only.
    """
    import torch
    from accelerate import init_empty_weights
    from transformers import AutoModelForCausalLM
    from transformers.modeling_gguf_pytorch_utils import TENSOR_PROCESSORS, TensorProcessor

    fields = config_dict(reader)
    config = transformers_config(reader)
    with init_empty_weights(include_buffers=False):
        try:
            full = AutoModelForCausalLM.from_config(
                config, attn_implementation="eager", dtype=torch.float32
            )
        except ValueError as exc:
            raise NotRunnableError(
                f"{label}: transformers cannot build a model for it: " + " ".join(str(exc).split())
            ) from exc
    architecture, _ = _architectures(reader)
    processor = TENSOR_PROCESSORS.get(architecture, TensorProcessor)(config=fields)
    mapping = weights_map(full, processor)
    base = full.base_model
    prefix = full.base_model_prefix + "."
    parsed: dict[str, dict[str, Any]] = {"tensors": {}}
    for name in reader.names():
        if name not in mapping or not (with_head or mapping[name].startswith(prefix)):
            continue  # the language-model head (unless asked for), or a tensor without a place
        weights = reader.read_exact(name)
        if not weights.flags.writeable:  # an F32 tensor is a view of the file: the model's copy
            weights = weights.copy()
        result = processor.process(
            weights=weights,
            name=name,
            tensor_key_mapping=mapping,
            parsed_parameters=parsed,
        )
        if result.name is not None and result.name in mapping:
            parsed["tensors"][mapping[result.name]] = torch.from_numpy(
                np.ascontiguousarray(result.weights, dtype=np.float32)
            )
    module = full if with_head else base
    start = 0 if with_head else len(prefix)
    state = {
        k[start:]: v for k, v in parsed["tensors"].items() if with_head or k.startswith(prefix)
    }
    expected = dict(module.named_parameters())
    for key, tensor in state.items():
        if key in expected and tuple(expected[key].shape) != tuple(tensor.shape):
            raise CorruptFileError(
                f"{label}: tensor for {key} has shape {tuple(tensor.shape)}, the model expects "
                f"{tuple(expected[key].shape)}"
            )
    module.load_state_dict(state, strict=False, assign=True)
    if with_head and config.tie_word_embeddings:
        full.tie_weights()
    missing = [n for n, p in module.named_parameters() if p.is_meta]
    if missing:
        raise CorruptFileError(
            f"{label}: the GGUF file has no tensor for {len(missing)} weights of the model "
            f"(first: {missing[0]})"
        )
    return module.eval().requires_grad_(False)
