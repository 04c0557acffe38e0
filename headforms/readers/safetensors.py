"""safetensors checkpoints (one file or several shards), read one tensor at a time.

Headers are validated against each file's real size before any tensor is read (offsets inside
the data, byte lengths matching shapes and dtypes, no overlaps); a tensor is read with a plain
file read, so nothing stays memory-mapped. Values come back exactly: as float64 (``read``) or
in the narrowest float type that holds them (``read_exact``: float32, float64 for F64).
"""

from __future__ import annotations

import json
import math
import os
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CorruptFileError
from ..sources.files import open_regular

_SAFETENSORS_MAX_HEADER = 100 * 1024 * 1024


def read_safetensors_header(path: Path) -> dict[str, Any]:
    """The JSON header of a safetensors file, validated against the file's real size."""
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        raw = fh.read(8)
        if len(raw) < 8:
            raise CorruptFileError(f"{path.name}: truncated safetensors file (no header length)")
        (header_len,) = struct.unpack("<Q", raw)
        if header_len > min(size - 8, _SAFETENSORS_MAX_HEADER):
            raise CorruptFileError(
                f"{path.name}: safetensors header length {header_len} exceeds the file "
                f"({size} bytes): truncated or not a safetensors file"
            )
        try:
            header = json.loads(fh.read(header_len))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise CorruptFileError(f"{path.name}: safetensors header is not valid JSON") from exc
    return check_safetensors_header(header, size - 8 - header_len, path.name)


def check_safetensors_header(header: Any, data_size: int, label: str) -> dict[str, Any]:
    """Validate a parsed safetensors header against the size of the data that follows it."""
    if not isinstance(header, dict):
        raise CorruptFileError(f"{label}: safetensors header is not a JSON object")
    metadata = header.get("__metadata__", {})
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise CorruptFileError(f"{label}: safetensors __metadata__ must map strings to strings")
    spans: list[tuple[int, int, str]] = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            start, end = _integers(info["data_offsets"])
            shape = _integers(info["shape"])
            dtype = str(info["dtype"])
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptFileError(f"{label}: tensor {name!r} has a malformed entry") from exc
        if dtype not in _SAFETENSORS_ITEMSIZE:
            raise CorruptFileError(
                f"{label}: tensor {name!r} has unsupported dtype {dtype!r} "
                f"(accepted: {', '.join(sorted(_SAFETENSORS_ITEMSIZE))})"
            )
        if any(d < 0 for d in shape) or not 0 <= start <= end <= data_size:
            raise CorruptFileError(
                f"{label}: tensor {name!r} lies outside the file (offsets {start}..{end}, "
                f"data size {data_size}): truncated or corrupt file"
            )
        if (end - start) != math.prod(shape) * _SAFETENSORS_ITEMSIZE[dtype]:
            raise CorruptFileError(
                f"{label}: tensor {name!r} byte length does not match its shape {shape}"
            )
        spans.append((start, end, name))
    spans.sort()
    for (_, prev_end, prev), (start, end, name) in zip(spans, spans[1:], strict=False):
        if start < prev_end and end > start:
            raise CorruptFileError(
                f"{label}: tensors {prev!r} and {name!r} overlap in the data: corrupt file"
            )
    return header


_SAFETENSORS_ITEMSIZE = {
    "F64": 8,
    "F32": 4,
    "F16": 2,
    "BF16": 2,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
}


def _integers(values: Any) -> list[int]:
    """JSON integers of a header entry; 16.0 or "16" is malformed (the readers use them as-is)."""
    if not isinstance(values, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in values
    ):
        raise ValueError("not a list of integers")
    return values


class SafetensorsHeaderTensors:
    """Names, shapes and dtypes from parsed safetensors headers (``_where``: name -> file,
    ``_info``: name -> header entry); shared by the local and the HTTP range readers."""

    _where: dict[str, Any]
    _info: dict[str, dict[str, Any]]

    def names(self) -> list[str]:
        return list(self._where)

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self._info[name]["shape"])

    def storage_dtype(self, name: str) -> str:
        return str(self._info[name]["dtype"]).lower()

    def read(self, name: str) -> np.ndarray:
        """One tensor as float64 (exact)."""
        return self.read_exact(name).astype(np.float64)  # type: ignore[attr-defined]


class SafetensorsReader(SafetensorsHeaderTensors):
    """Tensors from one or more safetensors files (a sharded checkpoint is several files)."""

    def __init__(self, files: Iterable[Path]):
        self._files = [Path(f) for f in files]
        self._where: dict[str, Path] = {}
        self._info: dict[str, dict[str, Any]] = {}
        self._data_start: dict[Path, int] = {}
        for path in self._files:
            for name, info in read_safetensors_header(path).items():
                if name != "__metadata__":
                    self._where[name] = path
                    self._info[name] = info
            with open_regular(path) as fh:  # validated above: 8-byte length, then the header
                self._data_start[path] = 8 + struct.unpack("<Q", fh.read(8))[0]

    def read_exact(self, name: str) -> np.ndarray:
        """One tensor in the narrowest float type holding it exactly (float32, or float64 for
        F64), read with a plain file read (no memory map stays resident)."""
        path = self._where[name]
        info = self._info[name]
        require_float(path, name, self.storage_dtype(name))
        start, end = (int(v) for v in info["data_offsets"])
        raw = np.empty(end - start, dtype=np.uint8)
        try:
            with open_regular(path) as fh:
                fh.seek(self._data_start[path] + start)
                got = fh.readinto(raw)
        except OSError as exc:
            raise CorruptFileError(f"{path.name}: cannot read tensor {name!r}: {exc}") from exc
        if got != raw.size:
            raise CorruptFileError(
                f"{path.name}: cannot read tensor {name!r}: file truncated ({got} of {raw.size} "
                "bytes)"
            )
        return decode_tensor_bytes(raw, str(info["dtype"]), tuple(info["shape"]))


_NUMPY_STORAGE = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2"}


def decode_tensor_bytes(raw: Any, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """The values of a safetensors tensor's little-endian bytes, exactly, as float32 (float64
    for F64): every other float type widens to float32 without rounding.

    bf16 is the upper half of a float32, so it is widened by a 16-bit shift; float8 goes
    through torch.
    """
    if dtype in _NUMPY_STORAGE:
        values = np.frombuffer(raw, dtype=_NUMPY_STORAGE[dtype])
        if dtype == "BF16":
            values = (values.astype(np.uint32) << 16).view(np.float32)
        elif dtype == "F16":
            values = values.astype(np.float32)
        return values.reshape(shape)
    import torch

    if not len(raw):
        return np.zeros(shape, dtype=np.float32)
    kind = {"F8_E4M3": torch.float8_e4m3fn, "F8_E5M2": torch.float8_e5m2}[dtype]
    tensor = torch.frombuffer(bytearray(raw), dtype=kind)
    return tensor.to(torch.float32).numpy().reshape(shape)


def require_float(path: Path, name: str, dtype: str) -> None:
    """Attention weights are floating point; an integer or boolean tensor is not a weight."""
    if not any(t in dtype.lower() for t in ("float", "f16", "f32", "f64", "bf16", "f8")):
        raise CorruptFileError(
            f"{path.name}: tensor {name!r} is stored as {dtype}, not a floating-point type"
        )
