"""Hostile model files shared by the adversarial tests and the load benchmark: a GGUF that is
slow to parse and a real but wide model that needs about 1 GiB to analyse."""

from __future__ import annotations

import json
import struct
from pathlib import Path


def slow_gguf(path: Path, pairs: int) -> None:
    """A GGUF header of ``pairs`` metadata entries (one key, repeated): every count it declares
    fits the file, and parsing it takes seconds."""
    entry = struct.pack("<Q", 1) + b"a" + struct.pack("<I", 4) + struct.pack("<I", 7)
    with path.open("wb") as fh:
        fh.write(b"GGUF" + struct.pack("<I", 3) + struct.pack("<Q", 0) + struct.pack("<Q", pairs))
        for _ in range(pairs // 100_000):
            fh.write(entry * 100_000)


def wide_model(directory: Path, n_dim: int = 8192) -> None:
    """One llama layer of width ``n_dim`` (default N = 8192: 64 heads of n = 128), stored F16 (a
    sparse file of zeros, 256 MiB by default): reading its Q and K as float64 needs about 1 GiB
    (4 GiB at N = 16384)."""
    directory.mkdir()
    config = {
        "model_type": "llama",
        "hidden_size": n_dim,
        "num_attention_heads": 64,
        "num_key_value_heads": 64,
        "num_hidden_layers": 1,
        "intermediate_size": 16,
        "vocab_size": 16,
    }
    (directory / "config.json").write_text(json.dumps(config))
    size = n_dim * n_dim * 2
    header = {
        "model.layers.0.self_attn.q_proj.weight": {
            "dtype": "F16",
            "shape": [n_dim, n_dim],
            "data_offsets": [0, size],
        },
        "model.layers.0.self_attn.k_proj.weight": {
            "dtype": "F16",
            "shape": [n_dim, n_dim],
            "data_offsets": [size, 2 * size],
        },
    }
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    with (directory / "model.safetensors").open("wb") as fh:
        fh.write(struct.pack("<Q", len(blob)) + blob)
        fh.truncate(8 + len(blob) + 2 * size)
