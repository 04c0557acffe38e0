"""Tiny random models that headforms can run: a checkpoint directory with a tokenizer, and the
same model written as a GGUF file the way llama.cpp's converter writes one (every tensor, F32).

The tokenizer is a word-level vocabulary ``w3 ... w127`` (``[CLS] ... [SEP]`` around encoder
inputs), enough for forward passes on text; the GGUF files have no tokenizer (their tests feed
token ids).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import tiny_models

VOCAB = tiny_models.VOCAB
ENCODERS = ("bert", "roberta")


def words(ids: list[int]) -> str:
    """The text of ordinary token ids in the tiny vocabulary."""
    return " ".join(f"w{i}" for i in ids)


def save_tokenizer(directory: Path, encoder: bool) -> None:
    """Write a word-level tokenizer of the tiny vocabulary into a checkpoint directory."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, **{f"w{i}": i for i in range(3, VOCAB)}}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    if encoder:
        backend.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)]
        )
    PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]"
    ).save_pretrained(directory)


def checkpoint(family: str, directory: Path, seed: int = 0, **overrides: Any) -> Any:
    """A tiny ``family`` checkpoint with a tokenizer in ``directory``; the model (float64)."""
    model = tiny_models.build(family, directory, seed, **overrides)
    save_tokenizer(directory, family in ENCODERS)
    return model


GGUF_ARCH = {"llama": "llama", "qwen2": "qwen2", "gemma3_text": "gemma3"}
"""Tiny families written as GGUF, and their llama.cpp architecture names."""


def llama_cpp_permute(weights: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's convert_hf_to_gguf ``LlamaModel.permute`` of attn_q / attn_k rows (and
    biases): rows interleaved per head."""
    shape = weights.shape
    return (
        weights.reshape(n_head, 2, shape[0] // n_head // 2, *shape[1:])
        .swapaxes(1, 2)
        .reshape(shape)
    )


def write_gguf(model: Any, path: Path) -> None:
    """Write every tensor of a tiny llama, qwen2 or gemma3 model (a *ForCausalLM) to ``path``
    as llama.cpp's converter would, in F32, with the metadata transformers reads back."""
    import gguf

    config = model.config
    arch = GGUF_ARCH[config.model_type]
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_name(f"tiny-{config.model_type}")
    writer.add_context_length(config.max_position_embeddings)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_embedding_length(config.hidden_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_vocab_size(config.vocab_size)
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    rope = config.rope_parameters
    if arch == "gemma3":
        writer.add_key_length(head_dim)
        writer.add_value_length(head_dim)
        writer.add_sliding_window(config.sliding_window)
        rope = rope["full_attention"]
    else:
        writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(float(rope["rope_theta"]))
    names = gguf.get_tensor_name_map(
        next(k for k, v in gguf.MODEL_ARCH_NAMES.items() if v == arch), config.num_hidden_layers
    )
    for hf_name, tensor in model.state_dict().items():
        stem, suffix = hf_name.rsplit(".", 1)
        name = names.get_name(stem)
        if name is None:
            continue
        values = tensor.detach().float().numpy().copy()
        if arch == "llama" and name.endswith(("attn_q", "attn_k")):
            heads = config.num_attention_heads if name.endswith("q") else config.num_key_value_heads
            values = llama_cpp_permute(values, heads)
        if arch == "gemma3" and name.endswith("norm"):
            values = values + 1.0  # llama.cpp stores Gemma's norm gains as 1 + w
        writer.add_tensor(f"{name}.{suffix}", values.astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
