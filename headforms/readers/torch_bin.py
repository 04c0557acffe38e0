"""PyTorch ``.bin`` checkpoints, loaded with ``weights_only=True`` (no pickled code runs) and
memory-mapped (``mmap=True``), so only the tensors read are paged in."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CorruptFileError
from ..sources.files import open_regular
from .safetensors import require_float


class TorchBinReader:
    """Tensors from ``pytorch_model.bin`` files, loaded with ``weights_only=True, mmap=True``."""

    def __init__(self, files: Iterable[Path]):
        import torch

        self._tensors: dict[str, Any] = {}
        self._where: dict[str, Path] = {}
        for path in files:
            open_regular(path).close()  # a regular file, never a FIFO or device
            try:
                state = torch.load(str(path), weights_only=True, mmap=True, map_location="cpu")
            except Exception as exc:  # torch raises many types for bad pickles
                raise CorruptFileError(
                    f"{Path(path).name}: not a loadable PyTorch weights file "
                    f"(only plain tensors are accepted, weights_only=True; {type(exc).__name__})"
                ) from exc
            if not isinstance(state, dict):
                raise CorruptFileError(f"{Path(path).name}: does not hold a state dict")
            tensors = {k: v for k, v in state.items() if isinstance(k, str) and hasattr(v, "shape")}
            self._tensors.update(tensors)
            self._where.update(dict.fromkeys(tensors, Path(path)))

    def names(self) -> list[str]:
        return list(self._tensors)

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self._tensors[name].shape)

    def storage_dtype(self, name: str) -> str:
        return str(self._tensors[name].dtype).removeprefix("torch.")

    def read(self, name: str) -> np.ndarray:
        """One tensor as float64 (exact)."""
        return self.read_exact(name).astype(np.float64)

    def read_exact(self, name: str) -> np.ndarray:
        """One tensor as float32 (float64 for float64 storage): widened exactly."""
        import torch

        tensor = self._tensors[name]
        require_float(Path(self._where[name]), name, self.storage_dtype(name))
        wide = torch.float64 if tensor.dtype == torch.float64 else torch.float32
        try:
            return tensor.to(wide).numpy()
        except RuntimeError as exc:  # a storage the memory map cannot supply (truncated file)
            raise CorruptFileError(
                f"{self._where[name].name}: cannot read tensor {name!r}: {exc}"
            ) from exc
