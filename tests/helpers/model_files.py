"""Model files written byte by byte, for the fuzz and adversarial tests: the fuzzers' valid tiny
llama and the safetensors and GGUF writers that derive hostile files from it (recording where
each field lies so that a case can patch it)."""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

# --- the valid tiny model -------------------------------------------------------------------

HIDDEN, HEADS, KV_HEADS, LAYERS = 32, 4, 2, 2
HEAD_DIM = HIDDEN // HEADS
CONFIG = {
    "model_type": "llama",
    "hidden_size": HIDDEN,
    "num_attention_heads": HEADS,
    "num_key_value_heads": KV_HEADS,
    "num_hidden_layers": LAYERS,
    "intermediate_size": 64,
    "vocab_size": 16,
}


def base_tensors() -> dict[str, np.ndarray]:
    """Q/K weights of the tiny llama (seeded)."""
    rng = np.random.default_rng(7)
    out = {}
    for i in range(LAYERS):
        out[f"model.layers.{i}.self_attn.q_proj.weight"] = rng.standard_normal(
            (HEADS * HEAD_DIM, HIDDEN)
        ).astype(np.float32)
        out[f"model.layers.{i}.self_attn.k_proj.weight"] = rng.standard_normal(
            (KV_HEADS * HEAD_DIM, HIDDEN)
        ).astype(np.float32)
    return out


_ST_DTYPES = {np.float32: "F32", np.float16: "F16", np.float64: "F64", np.int32: "I32"}


def safetensors_parts(tensors: dict[str, np.ndarray]) -> tuple[dict[str, Any], bytes]:
    """(header, data) of a safetensors file, laid out as the format specifies."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    data = b""
    for name, array in tensors.items():
        raw = np.ascontiguousarray(array).tobytes()
        header[name] = {
            "dtype": _ST_DTYPES[array.dtype.type],
            "shape": list(array.shape),
            "data_offsets": [len(data), len(data) + len(raw)],
        }
        data += raw
    return header, data


def safetensors_bytes(header: Any, data: bytes, header_len: int | None = None) -> bytes:
    """Serialise a (possibly hostile) header; ``header_len`` overrides the declared length."""
    blob = header if isinstance(header, bytes) else json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    declared = len(blob) if header_len is None else header_len
    return struct.pack("<Q", declared) + blob + data


# GGUF: a small writer of our own, recording where each field lies so cases can patch it.
U32, F32, STRING, ARRAY, U64 = 4, 6, 8, 9, 10
Q8_0_TYPE, F32_TYPE, F16_TYPE = 8, 0, 1


@dataclass
class GGUFFile:
    """A serialised GGUF file and the byte offset of each named field."""

    data: bytearray
    fields: dict[str, int]
    data_end: int


def gguf_file(
    kvs: list[tuple[str, int, Any]] | None = None,
    tensors: dict[str, tuple[np.ndarray, int]] | None = None,
    alignment: int = 32,
) -> GGUFFile:
    """A llama GGUF: metadata, a string and a float array, F32/F16/Q8_0 tensors."""
    from gguf import GGMLQuantizationType
    from gguf.quants import quantize

    if kvs is None:
        kvs = [
            ("general.architecture", STRING, "llama"),
            ("general.name", STRING, "fuzz"),
            ("llama.block_count", U32, LAYERS),
            ("llama.embedding_length", U32, HIDDEN),
            ("llama.attention.head_count", U32, HEADS),
            ("llama.attention.head_count_kv", U32, KV_HEADS),
            ("llama.rope.freq_base", F32, 10000.0),
            ("tokenizer.ggml.tokens", ARRAY, (STRING, ["<s>", "a", "b", "c"])),
            ("tokenizer.ggml.scores", ARRAY, (F32, [0.0, 1.0, 2.0, 3.0])),
        ]
    if tensors is None:
        weights = base_tensors()
        tensors = {}
        for i in range(LAYERS):
            q = weights[f"model.layers.{i}.self_attn.q_proj.weight"]
            k = weights[f"model.layers.{i}.self_attn.k_proj.weight"]
            tensors[f"blk.{i}.attn_q.weight"] = (
                (q, F32_TYPE) if i == 0 else (q.astype(np.float16), F16_TYPE)
            )
            tensors[f"blk.{i}.attn_k.weight"] = (
                quantize(k, GGMLQuantizationType.Q8_0),
                Q8_0_TYPE,
            )
    out, fields = bytearray(), {}

    def put(fmt: str, value: Any, field: str | None = None) -> None:
        if field:
            fields[field] = len(out)
        out.extend(struct.pack(fmt, value))

    def put_string(text: str, field: str) -> None:
        raw = text.encode()
        put("<Q", len(raw), field + ":len")
        out.extend(raw)

    def put_value(vtype: int, value: Any, field: str) -> None:
        if vtype == STRING:
            put_string(value, field)
        elif vtype == ARRAY:
            etype, items = value
            put("<I", etype, field + ":etype")
            put("<Q", len(items), field + ":count")
            for j, item in enumerate(items):
                put_value(etype, item, f"{field}:{j}")
        else:
            put({U32: "<I", F32: "<f", U64: "<Q"}[vtype], value, field)

    out.extend(b"GGUF")
    put("<I", 3, "version")
    put("<Q", len(tensors), "n_tensors")
    put("<Q", len(kvs), "n_kv")
    for key, vtype, value in kvs:
        put_string(key, f"key:{key}")
        put("<I", vtype, f"type:{key}")
        put_value(vtype, value, f"value:{key}")
    offset, blobs = 0, []
    for name, (array, qtype) in tensors.items():
        shape = array.shape if qtype != Q8_0_TYPE else (array.shape[0], array.shape[1] // 34 * 32)
        put_string(name, f"tensor:{name}")
        put("<I", len(shape), f"ndims:{name}")
        for d, dim in enumerate(reversed(shape)):
            put("<Q", dim, f"dim{d}:{name}")
        put("<I", qtype, f"qtype:{name}")
        put("<Q", offset, f"offset:{name}")
        raw = np.ascontiguousarray(array).tobytes()
        blobs.append(raw + b"\0" * (-len(raw) % alignment))
        offset += len(blobs[-1])
    out.extend(b"\0" * (-len(out) % alignment))
    fields["data_start"] = len(out)
    for blob in blobs:
        out.extend(blob)
    last = len(np.ascontiguousarray(list(tensors.values())[-1][0]).tobytes())
    return GGUFFile(out, fields, len(out) - len(blobs[-1]) + last)


def patched(base: GGUFFile, field: str, fmt: str, value: Any) -> bytes:
    """The GGUF bytes with one field overwritten."""
    data = bytearray(base.data)
    struct.pack_into(fmt, data, base.fields[field], value)
    return bytes(data)
