"""The fuzzers' hostile model files (tests/system/fuzz): each case a real file derived from the
valid tiny model of :mod:`model_files`, with the error it must raise."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from model_files import (
    ARRAY,
    CONFIG,
    F16_TYPE,
    F32_TYPE,
    HEADS,
    HIDDEN,
    KV_HEADS,
    LAYERS,
    Q8_0_TYPE,
    STRING,
    U32,
    U64,
    base_tensors,
    gguf_file,
    patched,
    safetensors_bytes,
    safetensors_parts,
)

# --- the cases ----------------------------------------------------------------------------------

TRUNCATED = (
    r"truncated|past the end|outside the file|exceeds the file|too small|not valid JSON"
    r"|more than the file can hold"
)
SHAPES = (
    r"config implies|invalid attention shapes|paired rows|no tensor named like|missing"
    r"|more than any supported model"
)
LIES = r"more than any supported model|declares \d+ layers but the checkpoint has"
ANY = None  # random mutation: analyses or raises a HeadformsError


@dataclass(frozen=True)
class Case:
    """One hostile input: how to write it, and the error it must give (None: any or success)."""

    name: str
    write: Callable[[Path], Path]  # writes the case under a fresh directory, returns the spec
    error: str | None = "CorruptFileError"
    message: str | None = None


def st_case(
    name: str,
    error: str | None,
    message: str | None,
    *,
    tensors: Callable[[dict[str, np.ndarray]], None] | None = None,
    header: Callable[[dict[str, Any]], Any] | None = None,
    config: Callable[[dict[str, Any]], Any] | None = None,
    raw: Callable[[bytes], bytes] | None = None,
) -> Case:
    def write(directory: Path) -> Path:
        weights = base_tensors()
        if tensors:
            tensors(weights)
        head, data = safetensors_parts(weights)
        if header:
            head = header(head)
        blob = safetensors_bytes(head, data)
        if raw:
            blob = raw(blob)
        conf: Any = dict(CONFIG)
        if config:
            conf = config(conf)
        (directory / "config.json").write_text(conf if isinstance(conf, str) else json.dumps(conf))
        (directory / "model.safetensors").write_bytes(blob)
        return directory

    return Case(name, write, error, message)


def gguf_case(name: str, error: str | None, message: str | None, make: Callable[[], bytes]) -> Case:
    def write(directory: Path) -> Path:
        path = directory / "model.gguf"
        path.write_bytes(make())
        return path

    return Case(name, write, error, message)


def _entry(head: dict[str, Any], key: str, **changes: Any) -> dict[str, Any]:
    head[key] = {**head[key], **changes}
    return head


Q0 = "model.layers.0.self_attn.q_proj.weight"
K1 = "model.layers.1.self_attn.k_proj.weight"


def safetensors_cases() -> list[Case]:
    """Structured, truncated and randomly mutated safetensors checkpoints."""
    head, data = safetensors_parts(base_tensors())
    size = len(safetensors_bytes(head, data))
    header_end = size - len(data)
    cases: list[Case] = []
    offsets = sorted(
        {0, 1, 4, 7, 8, 9, header_end - 1, header_end, header_end + 1, size - 1}
        | {int(f * size) for f in np.linspace(0.01, 0.99, 50)}
    )
    for off in offsets:
        cases.append(
            st_case(
                f"st-truncated-at-{off}", "CorruptFileError", TRUNCATED, raw=lambda b, o=off: b[:o]
            )
        )
    for declared in (0, 2**63, 2**40, size, 101 * 2**20, 2**64 - 1):
        cases.append(
            st_case(
                f"st-header-length-{declared}",
                "CorruptFileError",
                r"header length .* exceeds the file|not valid JSON",
                raw=lambda b, d=declared: struct.pack("<Q", d) + b[8:],
            )
        )
    structured: list[tuple[str, str, Callable[[dict[str, Any]], Any]]] = [
        ("offset-huge", "outside the file", lambda h: _entry(h, Q0, data_offsets=[0, 10**12])),
        ("offset-reversed", "outside the file", lambda h: _entry(h, Q0, data_offsets=[512, 0])),
        ("offset-negative", "outside the file", lambda h: _entry(h, Q0, data_offsets=[-8, 1016])),
        ("offset-strings", "malformed entry", lambda h: _entry(h, Q0, data_offsets=["a", "b"])),
        ("offset-missing", "malformed entry", lambda h: {**h, Q0: {"dtype": "F32", "shape": [2]}}),
        ("offset-one-number", "malformed entry", lambda h: _entry(h, Q0, data_offsets=[0])),
        ("entry-not-object", "malformed entry", lambda h: {**h, Q0: "weights"}),
        ("entry-list", "malformed entry", lambda h: {**h, Q0: [1, 2, 3]}),
        ("dtype-unknown", "unsupported dtype", lambda h: _entry(h, Q0, dtype="Q4")),
        ("dtype-empty", "unsupported dtype", lambda h: _entry(h, Q0, dtype="")),
        ("dtype-number", "unsupported dtype", lambda h: _entry(h, Q0, dtype=4)),
        ("dtype-int32", "not a floating-point type", lambda h: _entry(h, Q0, dtype="I32")),
        ("dtype-bool", "byte length does not match", lambda h: _entry(h, Q0, dtype="BOOL")),
        ("dtype-u8", "byte length does not match", lambda h: _entry(h, Q0, dtype="U8")),
        ("dtype-f64-size", "byte length does not match", lambda h: _entry(h, Q0, dtype="F64")),
        ("dtype-f16-size", "byte length does not match", lambda h: _entry(h, Q0, dtype="F16")),
        (
            "shape-huge",
            "byte length does not match",
            lambda h: _entry(h, Q0, shape=[2**62, 2**62]),
        ),
        (
            "shape-overflow-wraps",
            "byte length does not match",
            lambda h: _entry(h, Q0, shape=[2**32, 2**32, 256]),
        ),
        ("shape-negative", "outside the file", lambda h: _entry(h, Q0, shape=[-32, -32])),
        ("shape-strings", "malformed entry", lambda h: _entry(h, Q0, shape=["x"])),
        (
            "shape-floats",
            "malformed entry",
            lambda h: _entry(h, Q0, shape=[float(d) for d in h[Q0]["shape"]]),
        ),
        (
            "offset-floats",
            "malformed entry",
            lambda h: _entry(h, Q0, data_offsets=[float(o) for o in h[Q0]["data_offsets"]]),
        ),
        ("shape-transposed-mismatch", SHAPES, lambda h: _entry(h, Q0, shape=[16, 64])),
        ("shape-flat", SHAPES, lambda h: _entry(h, Q0, shape=[1024])),
        ("q-renamed", SHAPES, lambda h: {("x" + k if k == Q0 else k): v for k, v in h.items()}),
        ("header-list", "not a JSON object", lambda h: [h]),
        ("header-string", "not a JSON object", lambda h: "header"),
        ("header-nested-deep", "not valid JSON", lambda h: b"[" * 200_000),
        ("header-not-utf8", "not valid JSON", lambda h: b"\xff\xfe{" + b"\x80" * 64),
        ("header-not-json", "not valid JSON", lambda h: b"{'a': 1}"),
        (
            "metadata-not-strings",
            "must map strings to strings",
            lambda h: {**h, "__metadata__": {"a": 1}},
        ),
        (
            "overlapping-tensors",
            "overlap in the data",
            lambda h: _entry(h, K1, data_offsets=h[Q0]["data_offsets"], shape=h[Q0]["shape"]),
        ),
    ]
    for name, message, change in structured:
        cases.append(st_case(f"st-{name}", "CorruptFileError", message, header=change))

    def poison(value: float, key: str, dtype: Any = np.float32) -> Callable[[dict], None]:
        def change(t: dict[str, np.ndarray]) -> None:
            t[key] = t[key].astype(dtype)
            t[key][1, 3] = value

        return change

    for name, change in (
        ("nan-q", poison(np.nan, Q0)),
        ("inf-k", poison(np.inf, K1)),
        ("neg-inf-q", poison(-np.inf, Q0)),
        ("nan-f16", poison(np.nan, K1, np.float16)),
        ("inf-f64", poison(np.inf, Q0, np.float64)),
    ):
        cases.append(st_case(f"st-{name}", "CorruptFileError", "NaN or infinite", tensors=change))
    configs: list[tuple[str, str, str, Callable[[dict[str, Any]], Any]]] = [
        (
            "zero-heads",
            "CorruptFileError",
            "invalid|division",
            lambda c: {**c, "num_attention_heads": 0},
        ),
        (
            "zero-kv-heads",  # 0 means "as many as query heads", so the key weight is too small
            "CorruptFileError",
            "invalid|config implies",
            lambda c: {**c, "num_key_value_heads": 0},
        ),
        (
            "negative-heads",
            "CorruptFileError",
            "invalid",
            lambda c: {**c, "num_attention_heads": -4},
        ),
        (
            "heads-not-multiple",
            "CorruptFileError",
            "multiple|invalid",
            lambda c: {**c, "num_key_value_heads": 3},
        ),
        (
            "heads-huge",
            "CorruptFileError",
            "not a multiple of the number of attention heads",
            lambda c: {**c, "num_attention_heads": 2**40},
        ),
        (
            "heads-string",
            "CorruptFileError",
            "transformers cannot read|invalid",
            lambda c: {**c, "num_attention_heads": "four"},
        ),
        ("hidden-wrong", "CorruptFileError", SHAPES, lambda c: {**c, "hidden_size": 48}),
        ("hidden-huge", "CorruptFileError", SHAPES, lambda c: {**c, "hidden_size": 10**12}),
        ("head-dim-huge", "CorruptFileError", SHAPES, lambda c: {**c, "head_dim": 2**40}),
        ("layers-huge", "CorruptFileError", LIES, lambda c: {**c, "num_hidden_layers": 10**9}),
        ("layers-more", "CorruptFileError", LIES, lambda c: {**c, "num_hidden_layers": 40}),
        ("layers-zero", "CorruptFileError", "invalid", lambda c: {**c, "num_hidden_layers": 0}),
        ("not-json", "CorruptFileError", "not valid JSON", lambda c: "{model_type: llama"),
        ("array", "CorruptFileError", "no 'model_type'", lambda c: [c]),
        (
            "no-model-type",
            "CorruptFileError",
            "no 'model_type'",
            lambda c: {k: v for k, v in c.items() if k != "model_type"},
        ),
        (
            "unknown-family",
            "UnsupportedArchitectureError",
            "",
            lambda c: {**c, "model_type": "nosuchnet"},
        ),
    ]
    for name, error, message, change in configs:
        cases.append(st_case(f"st-config-{name}", error, message, config=change))
    rng = np.random.default_rng(20261129)
    blob = safetensors_bytes(head, data)
    for j in range(40):
        positions = rng.integers(0, header_end, size=int(rng.integers(1, 5)))
        values = rng.integers(0, 256, size=len(positions))

        def mutate(b: bytes, p: Any = positions, v: Any = values) -> bytes:
            out = bytearray(b)
            for pos, val in zip(p, v, strict=True):
                out[pos] = val
            return bytes(out)

        assert len(blob) == size
        cases.append(st_case(f"st-random-{j:02d}", ANY, None, raw=mutate))
    return cases


def gguf_cases() -> list[Case]:
    """Structured, truncated and randomly mutated GGUF files."""
    base = gguf_file()
    end, start = base.data_end, base.fields["data_start"]
    cases: list[Case] = []
    offsets = sorted(
        {0, 3, 4, 8, 16, 23, 24, start - 1, start, start + 1, end - 1}
        | {int(f * end) for f in np.linspace(0.01, 0.99, 70)}
    )
    for off in offsets:
        cases.append(
            gguf_case(
                f"gguf-truncated-at-{off}",
                "CorruptFileError",
                TRUNCATED + "|not a GGUF file",
                lambda o=off: bytes(base.data[:o]),
            )
        )
    q0, k1 = "blk.0.attn_q.weight", "blk.1.attn_k.weight"
    tokens = "value:tokenizer.ggml.tokens"
    patches: list[tuple[str, str, str, str, Any]] = [
        ("magic", "not a GGUF file", "", "", None),
        ("version-1", "unsupported GGUF version", "version", "<I", 1),
        ("version-huge", "unsupported GGUF version", "version", "<I", 2**32 - 1),
        ("n-tensors-huge", "more than the file can hold", "n_tensors", "<Q", 2**63),
        ("n-kv-huge", "more than the file can hold", "n_kv", "<Q", 2**64 - 1),
        ("n-kv-plus-one", TRUNCATED + "|unknown type", "n_kv", "<Q", 10),
        ("key-length-huge", "runs past the end", "key:general.name:len", "<Q", 2**62),
        ("string-length-huge", "runs past the end", "value:general.name:len", "<Q", 2**63),
        ("array-count-huge", "runs past the end", "value:tokenizer.ggml.scores:count", "<Q", 2**61),
        ("string-array-count-huge", "runs past the end", tokens + ":count", "<Q", 2**62),
        ("array-string-length-huge", "runs past the end", tokens + ":1:len", "<Q", 2**40),
        ("value-type-unknown", "unknown type", "type:general.name", "<I", 99),
        ("array-of-arrays", "unsupported type", "value:tokenizer.ggml.scores:etype", "<I", ARRAY),
        ("array-type-unknown", "unsupported type", tokens + ":etype", "<I", 77),
        ("tensor-name-huge", "runs past the end", f"tensor:{q0}:len", "<Q", 2**60),
        ("ndims-9", "dims", f"ndims:{q0}", "<I", 9),
        ("ndims-huge", "dims", f"ndims:{q0}", "<I", 2**31),
        ("dim-huge", "past the end", f"dim0:{q0}", "<Q", 2**62),
        ("dim-overflow", "past the end", f"dim1:{q0}", "<Q", 2**63 + 1),
        ("dim-zero", "empty|config implies|paired rows", f"dim1:{q0}", "<Q", 0),
        ("dim-wrong", SHAPES, f"dim1:{q0}", "<Q", 16),
        ("offset-huge", "past the end", f"offset:{k1}", "<Q", 2**63),
        ("offset-end", "past the end", f"offset:{k1}", "<Q", end - start),
        ("qtype-unknown", "unknown quantization type", f"qtype:{q0}", "<I", 999),
        (
            "qtype-q8-misfit",
            "invalid|NaN or infinite|config implies",
            f"qtype:{q0}",
            "<I",
            Q8_0_TYPE,
        ),
        ("qtype-int32", "not a floating-point type", f"qtype:{q0}", "<I", 26),
        ("heads-zero", "invalid", "value:llama.attention.head_count", "<I", 0),
        ("heads-huge", SHAPES + "|invalid", "value:llama.attention.head_count", "<I", 2**31),
        ("kv-heads-3", "multiple", "value:llama.attention.head_count_kv", "<I", 3),
        ("hidden-wrong", SHAPES, "value:llama.embedding_length", "<I", 48),
        ("hidden-zero", "invalid attention shapes", "value:llama.embedding_length", "<I", 0),
        ("layers-huge", LIES + "|declares", "value:llama.block_count", "<I", 2**31),
        ("layers-more", LIES, "value:llama.block_count", "<I", 40),
        ("layers-zero", "declares 0 layers", "value:llama.block_count", "<I", 0),
        (
            "heads-as-string-type",
            TRUNCATED + "|unknown type|lacks|wrong type",
            "type:llama.attention.head_count",
            "<I",
            STRING,
        ),
        (
            "freq-base-as-array",
            TRUNCATED + "|wrong type|unsupported type",
            "type:llama.rope.freq_base",
            "<I",
            ARRAY,
        ),
    ]
    for name, message, field, fmt, value in patches:
        if name == "magic":
            make = lambda: b"GGML" + bytes(base.data[4:])  # noqa: E731
        else:
            make = lambda f=field, t=fmt, v=value: patched(base, f, t, v)  # noqa: E731
        cases.append(gguf_case(f"gguf-{name}", "CorruptFileError", message, make))

    def with_kvs(change: Callable[[list], list]) -> Callable[[], bytes]:
        def make() -> bytes:
            default = [
                ("general.architecture", STRING, "llama"),
                ("llama.block_count", U32, LAYERS),
                ("llama.embedding_length", U32, HIDDEN),
                ("llama.attention.head_count", U32, HEADS),
                ("llama.attention.head_count_kv", U32, KV_HEADS),
            ]
            return bytes(gguf_file(kvs=change(default)).data)

        return make

    for name, error, message, change in (
        (
            "arch-unknown",
            "UnsupportedArchitectureError",
            "",
            lambda k: [("general.architecture", STRING, "nosuch")] + k[1:],
        ),
        ("arch-missing", "UnsupportedArchitectureError", "", lambda k: k[1:]),
        ("heads-missing", "CorruptFileError", "lacks", lambda k: k[:3] + k[4:]),
        (
            "alignment-zero",
            "CorruptFileError",
            "general.alignment",
            lambda k: k + [("general.alignment", U32, 0)],
        ),
        (
            "alignment-odd",
            "CorruptFileError",
            "general.alignment",
            lambda k: k + [("general.alignment", U32, 7)],
        ),
        (
            "alignment-string",
            "CorruptFileError",
            "general.alignment",
            lambda k: k + [("general.alignment", STRING, "32")],
        ),
        (
            "alignment-huge",
            "CorruptFileError",
            "past the end",
            lambda k: k + [("general.alignment", U64, 2**40)],
        ),
        (
            "freq-base-string",
            "CorruptFileError",
            "wrong type",
            lambda k: k + [("llama.rope.freq_base", STRING, "ten")],
        ),
    ):
        cases.append(gguf_case(f"gguf-meta-{name}", error, message, with_kvs(change)))

    def poisoned(key: str, value: float, qtype: int) -> Callable[[], bytes]:
        def make() -> bytes:
            weights = base_tensors()
            tensors = {}
            for i in range(LAYERS):
                tensors[f"blk.{i}.attn_q.weight"] = (
                    weights[f"model.layers.{i}.self_attn.q_proj.weight"],
                    F32_TYPE,
                )
                tensors[f"blk.{i}.attn_k.weight"] = (
                    weights[f"model.layers.{i}.self_attn.k_proj.weight"],
                    F32_TYPE,
                )
            array = tensors[key][0].copy()
            array[2, 5] = value
            if qtype == F16_TYPE:
                array = array.astype(np.float16)
            tensors[key] = (array, qtype)
            return bytes(gguf_file(tensors=tensors).data)

        return make

    for name, key, value, qtype in (
        ("nan-q-f32", q0, np.nan, F32_TYPE),
        ("inf-k-f32", k1, np.inf, F32_TYPE),
        ("nan-k-f16", k1, np.nan, F16_TYPE),
        ("neg-inf-q-f16", q0, -np.inf, F16_TYPE),
    ):
        cases.append(
            gguf_case(
                f"gguf-{name}", "CorruptFileError", "NaN or infinite", poisoned(key, value, qtype)
            )
        )

    def q8_nan_scale() -> bytes:
        data = bytearray(base.data)
        k0_offset = struct.unpack_from("<Q", data, base.fields["offset:blk.0.attn_k.weight"])[0]
        block0 = start + k0_offset
        data[block0 : block0 + 2] = np.array([np.nan], dtype=np.float16).tobytes()
        return bytes(data)

    cases.append(
        gguf_case("gguf-nan-q8-scale", "CorruptFileError", "NaN or infinite", q8_nan_scale)
    )
    rng = np.random.default_rng(20261130)
    for j in range(60):
        positions = rng.integers(0, start, size=int(rng.integers(1, 5)))
        values = rng.integers(0, 256, size=len(positions))

        def mutate(p: Any = positions, v: Any = values) -> bytes:
            out = bytearray(base.data)
            for pos, val in zip(p, v, strict=True):
                out[pos] = val
            return bytes(out)

        cases.append(gguf_case(f"gguf-random-{j:02d}", ANY, None, mutate))
    return cases


def bin_cases() -> list[Case]:
    """Truncated PyTorch ``.bin`` checkpoints (zip + pickle) and non-tensor payloads."""
    import io

    import torch

    buffer = io.BytesIO()
    torch.save({k: torch.from_numpy(v) for k, v in base_tensors().items()}, buffer)
    blob = buffer.getvalue()
    cases = []

    def bin_case(name: str, message: str, payload: Callable[[], bytes]) -> Case:
        def write(directory: Path) -> Path:
            (directory / "config.json").write_text(json.dumps(CONFIG))
            (directory / "pytorch_model.bin").write_bytes(payload())
            return directory

        return Case(name, write, "CorruptFileError", message)

    for f in np.linspace(0.05, 0.95, 12):
        off = int(f * len(blob))
        cases.append(
            bin_case(f"bin-truncated-at-{off}", "not a loadable PyTorch", lambda o=off: blob[:o])
        )
    cases.append(bin_case("bin-empty", "not a loadable PyTorch", lambda: b""))
    noise = np.random.default_rng(3).integers(0, 256, 4096, dtype=np.uint8).tobytes()
    cases.append(bin_case("bin-random", "not a loadable PyTorch", lambda: noise))

    def int_weights() -> bytes:
        out = io.BytesIO()
        torch.save({k: torch.from_numpy(v).to(torch.int32) for k, v in base_tensors().items()}, out)
        return out.getvalue()

    cases.append(bin_case("bin-int-weights", "not a floating-point type", int_weights))

    def a_list() -> bytes:
        out = io.BytesIO()
        torch.save([torch.zeros(2)], out)
        return out.getvalue()

    cases.append(bin_case("bin-not-a-dict", "does not hold a state dict", a_list))
    return cases


def all_cases() -> list[Case]:
    """Every fuzz case (deterministic)."""
    return safetensors_cases() + gguf_cases() + bin_cases()


CASES = {c.name: c for c in all_cases()}
