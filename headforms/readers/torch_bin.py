"""PyTorch state dicts: ``.bin`` checkpoints, loaded with ``weights_only=True`` (no pickled code
runs) and memory-mapped (``mmap=True``), so only the tensors read are paged in; and a loaded
module's own tensors (:meth:`StateDictReader.of_module`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CorruptFileError
from ..sources.files import open_regular
from .safetensors import require_float


class StateDictReader:
    """Tensors from a PyTorch state dict (``name -> tensor``): the one reader of torch tensors,
    for a ``.bin`` checkpoint's (:class:`TorchBinReader`) and a loaded module's
    (:meth:`of_module`: what an intervention reads its factors from). ``origins``: where each
    tensor came from, for error lines (a file's name; default ``source``)."""

    def __init__(
        self, tensors: Mapping[str, Any], origins: Mapping[str, str] | None = None, source: str = ""
    ) -> None:
        self._tensors = dict(tensors)
        self._origins = dict(origins or {})
        self._source = source or "the state dict"

    @classmethod
    def of_module(cls, module: Any) -> StateDictReader:
        """The tensors of a loaded ``torch.nn.Module`` (its parameters and buffers)."""
        return cls(module.state_dict(), source=type(module).__name__)

    def origin(self, name: str) -> str:
        """Where tensor ``name`` came from (a file's name)."""
        return self._origins.get(name, self._source)

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
        """One tensor as float32 (float64 for float64 storage): widened exactly, in memory of
        its own (never a view of a live module's weights nor of a mapped file)."""
        import torch

        tensor = self._tensors[name]
        require_float(Path(self.origin(name)), name, self.storage_dtype(name))
        wide = torch.float64 if tensor.dtype == torch.float64 else torch.float32
        try:
            return tensor.detach().to("cpu", wide).numpy().copy()
        except RuntimeError as exc:  # a storage the memory map cannot supply (truncated file)
            where = self.origin(name)
            raise CorruptFileError(f"{where}: cannot read tensor {name!r}: {exc}") from exc


class TorchBinReader(StateDictReader):
    """Tensors from ``pytorch_model.bin`` files, loaded with ``weights_only=True, mmap=True``."""

    def __init__(self, files: Iterable[Path]):
        import torch

        tensors: dict[str, Any] = {}
        origins: dict[str, str] = {}
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
            found = {k: v for k, v in state.items() if isinstance(k, str) and hasattr(v, "shape")}
            tensors.update(found)
            origins.update(dict.fromkeys(found, Path(path).name))
        super().__init__(tensors, origins)
