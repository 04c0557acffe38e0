"""gguf's own reader, parsed once per test session (it takes 3-12 s, mostly tokenizer arrays).

The reference the fast reader and the engine are checked against: ``gguf.GGUFReader`` plus
``gguf.quants.dequantize``, independent of :mod:`headforms.readers`.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np


@cache
def reference_reader(path: Path) -> Any:
    """``gguf.GGUFReader`` of ``path`` (tensor data stays memory-mapped)."""
    import gguf

    return gguf.GGUFReader(path)


def reference_tensors(path: Path) -> dict[str, Any]:
    """The file's tensors by name, in file order."""
    return {t.name: t for t in reference_reader(path).tensors}


def dequantized(tensor: Any) -> np.ndarray:
    """A tensor's values as float64 in row-major (numpy) shape, via gguf.quants.dequantize."""
    from gguf.quants import dequantize

    values = dequantize(tensor.data, tensor.tensor_type)
    return np.asarray(values, dtype=np.float64).reshape(tuple(reversed(tensor.shape.tolist())))
