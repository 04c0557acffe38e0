"""Tensor readers: safetensors, GGUF, torch ``.bin`` and hub range requests, one tensor at a time.

Each reader exposes the same small interface (:class:`TensorReader`): tensor names, shapes,
storage dtype, ``read(name) -> float64 array`` and ``read_exact(name)`` (the same values in the
narrowest float type holding them: float32, or float64 for float64 storage). Nothing is loaded
until read, so the engine's peak memory is about one layer's Q/K. Malformed files raise
:class:`headforms.errors.CorruptFileError` with the file name and what is wrong, never a bare
library exception. Readers only open regular files (:func:`headforms.sources.open_regular`).
How a checkpoint format names and stores attention tensors is model knowledge
(:class:`headforms.architectures.TensorScheme`), applied when layers are extracted.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from .gguf import GGUFReader
from .safetensors import SafetensorsReader, read_safetensors_header
from .torch_bin import TorchBinReader


class TensorReader(Protocol):
    """Read-only access to the named tensors of one checkpoint."""

    def names(self) -> list[str]: ...

    def shape(self, name: str) -> tuple[int, ...]: ...

    def storage_dtype(self, name: str) -> str: ...

    def read(self, name: str) -> np.ndarray: ...

    def read_exact(self, name: str) -> np.ndarray: ...


__all__ = [
    "GGUFReader",
    "SafetensorsReader",
    "TensorReader",
    "TorchBinReader",
    "read_safetensors_header",
]
