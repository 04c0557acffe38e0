"""Streaming tensor readers: safetensors, GGUF and torch ``.bin``, one tensor at a time.

Each reader exposes the same small interface (:class:`TensorReader`): tensor names, shapes,
storage dtype and ``read(name) -> float64 array``. Nothing is loaded until read, so the engine's
peak memory is about one layer's Q/K. Malformed files raise :class:`CorruptFileError` with the
file name and what is wrong, never a bare library exception.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import struct
import threading
from collections.abc import Iterable
from itertools import repeat
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..errors import CorruptFileError, ModelSpecError


class TensorReader(Protocol):
    """Read-only access to the named tensors of one checkpoint."""

    def names(self) -> list[str]: ...

    def shape(self, name: str) -> tuple[int, ...]: ...

    def storage_dtype(self, name: str) -> str: ...

    def read(self, name: str) -> np.ndarray: ...


# ---------------------------------------------------------------------------------------------
# safetensors (single file or sharded with its index)

_SAFETENSORS_MAX_HEADER = 100 * 1024 * 1024


def read_safetensors_header(path: Path) -> dict[str, Any]:
    """The JSON header of a safetensors file, validated against the file's real size."""
    size = path.stat().st_size
    with path.open("rb") as fh:
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
            start, end = (int(v) for v in info["data_offsets"])
            shape = [int(v) for v in info["shape"]]
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
            with path.open("rb") as fh:  # validated above: 8-byte length, then the header
                self._data_start[path] = 8 + struct.unpack("<Q", fh.read(8))[0]

    def read(self, name: str) -> np.ndarray:
        """One tensor as float64, read with a plain file read (no memory map stays resident)."""
        path = self._where[name]
        info = self._info[name]
        _require_float(path, name, self.storage_dtype(name))
        start, end = (int(v) for v in info["data_offsets"])
        raw = np.empty(end - start, dtype=np.uint8)
        try:
            with path.open("rb") as fh:
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
    """Float64 values of a safetensors tensor's little-endian bytes (exact for every float type).

    bf16 is the upper half of a float32, so it is widened by a 16-bit shift; float8 goes
    through torch.
    """
    if dtype in _NUMPY_STORAGE:
        values = np.frombuffer(raw, dtype=_NUMPY_STORAGE[dtype])
        if dtype == "BF16":
            values = (values.astype(np.uint32) << 16).view(np.float32)
        return values.astype(np.float64).reshape(shape)
    import torch

    if not len(raw):
        return np.zeros(shape)
    kind = {"F8_E4M3": torch.float8_e4m3fn, "F8_E5M2": torch.float8_e5m2}[dtype]
    tensor = torch.frombuffer(bytearray(raw), dtype=kind)
    return tensor.to(torch.float64).numpy().reshape(shape)


def _require_float(path: Path, name: str, dtype: str) -> None:
    """Attention weights are floating point; an integer or boolean tensor is not a weight."""
    if not any(t in dtype.lower() for t in ("float", "f16", "f32", "f64", "bf16", "f8")):
        raise CorruptFileError(
            f"{path.name}: tensor {name!r} is stored as {dtype}, not a floating-point type"
        )


# ---------------------------------------------------------------------------------------------
# torch .bin (weights_only, memory-mapped)


class TorchBinReader:
    """Tensors from ``pytorch_model.bin`` files, loaded with ``weights_only=True, mmap=True``."""

    def __init__(self, files: Iterable[Path]):
        import torch

        self._tensors: dict[str, Any] = {}
        self._where: dict[str, Path] = {}
        for path in files:
            try:
                state = torch.load(str(path), weights_only=True, mmap=True, map_location="cpu")
            except Exception as exc:  # torch raises many types for bad pickles
                raise CorruptFileError(
                    f"{Path(path).name}: not a loadable PyTorch weights file "
                    f"(only plain tensors are accepted, weights_only=True): "
                    f"{str(exc).splitlines()[0][:200]}"
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
        import torch

        tensor = self._tensors[name]
        _require_float(Path(self._where[name]), name, self.storage_dtype(name))
        try:
            return tensor.to(torch.float64).numpy()
        except RuntimeError as exc:  # a storage the memory map cannot supply (truncated file)
            raise CorruptFileError(
                f"{self._where[name].name}: cannot read tensor {name!r}: {exc}"
            ) from exc


# ---------------------------------------------------------------------------------------------
# GGUF: a minimal header parser that skips metadata arrays (tokenizers) and memory-maps tensors.

GGUF_MAGIC = b"GGUF"
_GGUF_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_GGUF_STRING, _GGUF_ARRAY = 8, 9
_U64 = struct.Struct("<Q")


class _Cursor:
    """Bounds-checked little-endian reads from a memory map."""

    def __init__(self, buf: mmap.mmap, path: Path):
        self.buf, self.pos, self.path = buf, 0, path

    def take(self, count: int) -> int:
        start = self.pos
        if count < 0 or start + count > len(self.buf):
            raise CorruptFileError(
                f"{self.path.name}: GGUF header runs past the end of the file at byte {start} "
                "(truncated or corrupt)"
            )
        self.pos += count
        return start

    def unpack(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        return struct.unpack_from(fmt, self.buf, self.take(size))[0]

    def string(self) -> str:
        length = self.unpack("<Q")
        start = self.take(length)
        return bytes(self.buf[start : start + length]).decode("utf-8", errors="replace")

    def skip_strings(self, count: int) -> None:
        """Skip ``count`` length-prefixed strings without decoding them (a tight loop: tokenizer
        arrays hold 10^5 strings)."""
        buf, pos, unpack = self.buf, self.pos, _U64.unpack_from
        count = min(count, len(buf) // 8 + 1)  # more strings than that cannot fit anyway
        try:
            for _ in repeat(None, count):
                pos += 8 + unpack(buf, pos)[0]
        except (struct.error, OverflowError):  # past the end, or a length beyond any offset
            pos = len(buf) + 1
        if pos > len(buf):
            self.take(len(buf) + 1)  # raises the truncation error
        self.pos = pos

    def value(self, vtype: int, keep_arrays: bool) -> Any:
        if vtype in _GGUF_SCALARS:
            return self.unpack(_GGUF_SCALARS[vtype])
        if vtype == _GGUF_STRING:
            return self.string()
        if vtype == _GGUF_ARRAY:
            etype, count = self.unpack("<I"), self.unpack("<Q")
            if etype in _GGUF_SCALARS:
                size = struct.calcsize(_GGUF_SCALARS[etype])
                start = self.take(count * size)
                if not keep_arrays:
                    return None
                return np.frombuffer(self.buf, _GGUF_SCALARS[etype], count, start).tolist()
            if etype == _GGUF_STRING:
                if keep_arrays:
                    return [self.string() for _ in range(count)]
                self.skip_strings(count)
                return None
            raise CorruptFileError(f"{self.path.name}: GGUF array of unsupported type {etype}")
        raise CorruptFileError(f"{self.path.name}: GGUF metadata value of unknown type {vtype}")


_GGUF_MEMO: dict[int, list[tuple[bytes, tuple[int, dict[str, Any], dict[str, Any]]]]] = {}
_GGUF_MEMO_LOCK = threading.Lock()
_GGUF_MEMO_MAX = 8


def _gguf_header_memo(buf: mmap.mmap) -> tuple[int, dict[str, Any], dict[str, Any]] | None:
    """A previous parse of a file of the same size whose header bytes are identical, if any.

    Skipping a tokenizer's 10^5 strings costs 30-100 ms; comparing the header bytes costs ~1 ms
    and is exact (the parse depends only on them and on the file size).
    """
    with _GGUF_MEMO_LOCK:
        entries = list(_GGUF_MEMO.get(len(buf), ()))
    for header, parsed in entries:
        if buf[: len(header)] == header:
            return parsed
    return None


def _remember_gguf_header(buf: mmap.mmap, header_end: int, parsed: tuple) -> None:
    """Keep a successful parse for :func:`_gguf_header_memo` (a few entries, oldest dropped)."""
    with _GGUF_MEMO_LOCK:
        if sum(len(v) for v in _GGUF_MEMO.values()) >= _GGUF_MEMO_MAX:
            _GGUF_MEMO.clear()
        _GGUF_MEMO.setdefault(len(buf), []).append((bytes(buf[:header_end]), parsed))


class GGUFReader:
    """Q/K tensors of a ``.gguf`` file without parsing its tokenizer arrays.

    Reads the header, skips metadata arrays, and memory-maps tensor data; quantized tensors
    are dequantized with ``gguf.quants.dequantize`` (bit-identical to ``gguf.GGUFReader``).
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            fh = self.path.open("rb")
        except OSError as exc:
            raise ModelSpecError(f"{self.path}: cannot open GGUF file: {exc.strerror}") from exc
        with fh:
            if os.fstat(fh.fileno()).st_size < 24:
                raise CorruptFileError(f"{self.path.name}: too small to be a GGUF file")
            self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        parsed = _gguf_header_memo(self._map)
        if parsed is not None:  # a byte-identical header parsed before in this process
            self.version, metadata, self._tensors = parsed
            self.metadata = dict(metadata)
            return
        cur = _Cursor(self._map, self.path)
        magic = bytes(self._map[:4])
        if magic != GGUF_MAGIC:
            raise CorruptFileError(
                f"{self.path.name}: not a GGUF file (magic {magic!r}, expected b'GGUF')"
            )
        cur.take(4)
        self.version = cur.unpack("<I")
        if self.version not in (2, 3):
            raise CorruptFileError(
                f"{self.path.name}: unsupported GGUF version {self.version} (accepted: 2, 3)"
            )
        n_tensors, n_kv = cur.unpack("<Q"), cur.unpack("<Q")
        file_size = len(self._map)
        if n_tensors > file_size // 24 or n_kv > file_size // 12:
            raise CorruptFileError(
                f"{self.path.name}: GGUF header declares {n_tensors} tensors and {n_kv} metadata "
                "entries, more than the file can hold (corrupt)"
            )
        self.metadata: dict[str, Any] = {}
        for _ in range(n_kv):
            key = cur.string()
            self.metadata[key] = cur.value(cur.unpack("<I"), keep_arrays=False)
        infos = []
        for _ in range(n_tensors):
            name = cur.string()
            n_dims = cur.unpack("<I")
            if n_dims > 8:
                raise CorruptFileError(f"{self.path.name}: tensor {name!r} has {n_dims} dims")
            dims = [cur.unpack("<Q") for _ in range(n_dims)]
            qtype, offset = cur.unpack("<I"), cur.unpack("<Q")
            infos.append((name, dims, qtype, offset))
        alignment = self.metadata.get("general.alignment", 32)
        if type(alignment) is not int or alignment <= 0 or alignment % 8:
            raise CorruptFileError(
                f"{self.path.name}: invalid general.alignment {alignment!r} "
                "(must be a positive multiple of 8)"
            )
        data_start = -(-cur.pos // alignment) * alignment
        self._tensors: dict[str, tuple[tuple[int, ...], int, int, int]] = {}
        from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

        for name, dims, qtype, offset in infos:
            try:
                qt = GGMLQuantizationType(qtype)
                block, type_size = GGML_QUANT_SIZES[qt]
            except (ValueError, KeyError) as exc:
                raise CorruptFileError(
                    f"{self.path.name}: tensor {name!r} has unknown quantization type {qtype}"
                ) from exc
            shape = tuple(reversed(dims))  # GGUF lists the fastest-varying dimension first
            count = math.prod(shape)  # Python integers: huge declared dims cannot overflow
            if shape and shape[-1] % block:
                raise CorruptFileError(f"{self.path.name}: tensor {name!r} shape {shape} invalid")
            n_bytes = count // block * type_size
            start = data_start + offset
            if start + n_bytes > file_size:
                raise CorruptFileError(
                    f"{self.path.name}: tensor {name!r} lies past the end of the file "
                    f"(needs byte {start + n_bytes}, file has {file_size}): truncated"
                )
            self._tensors[name] = (shape, qtype, start, n_bytes)
        parsed = (self.version, dict(self.metadata), self._tensors)
        _remember_gguf_header(self._map, cur.pos, parsed)

    def names(self) -> list[str]:
        return list(self._tensors)

    def shape(self, name: str) -> tuple[int, ...]:
        return self._tensors[name][0]

    def storage_dtype(self, name: str) -> str:
        from gguf import GGMLQuantizationType

        return GGMLQuantizationType(self._tensors[name][1]).name

    def raw(self, name: str) -> np.ndarray:
        """The stored bytes of a tensor as ``uint8`` rows (a view into the memory map)."""
        shape, _, start, n_bytes = self._tensors[name]
        rows = int(np.prod(shape[:-1], dtype=np.int64)) if len(shape) > 1 else 1
        return np.frombuffer(self._map, np.uint8, n_bytes, start).reshape(rows, -1)

    def read(self, name: str) -> np.ndarray:
        from gguf import GGMLQuantizationType
        from gguf.quants import dequantize

        shape, qtype, _, _ = self._tensors[name]
        kind = GGMLQuantizationType(qtype).name
        if kind.startswith("I"):  # I8/I16/I32/I64 hold integers, not weights
            raise CorruptFileError(
                f"{self.path.name}: tensor {name!r} is stored as {kind}, not a floating-point type"
            )
        if 0 in shape:
            raise CorruptFileError(f"{self.path.name}: tensor {name!r} is empty (shape {shape})")
        try:
            values = dequantize(self.raw(name), GGMLQuantizationType(qtype))
            return np.asarray(values, dtype=np.float64).reshape(shape)
        except (ValueError, NotImplementedError) as exc:
            raise CorruptFileError(
                f"{self.path.name}: cannot dequantize tensor {name!r} "
                f"({GGMLQuantizationType(qtype).name}, shape {shape}): {exc}"
            ) from exc
