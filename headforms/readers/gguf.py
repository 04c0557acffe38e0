"""GGUF files (llama.cpp): a minimal header parser that skips metadata arrays (tokenizers hold
10^5 strings) and memory-maps only the tensors read; quantized tensors are dequantized with
``gguf.quants.dequantize`` (bit-identical to ``gguf.GGUFReader``, which is 40-300x slower to
open). Every declared count and size is checked against the file's size before it is used.
"""

from __future__ import annotations

import math
import mmap
import os
import struct
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CorruptFileError
from ..sources.files import GGUF_MAGIC, open_regular

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
                if count > (len(self.buf) - self.pos) // 8:  # each string has an 8-byte length
                    self.take(len(self.buf) + 1)  # raises the truncation error, before looping
                if keep_arrays:
                    return [self.string() for _ in range(count)]
                self.skip_strings(count)
                return None
            raise CorruptFileError(f"{self.path.name}: GGUF array of unsupported type {etype}")
        raise CorruptFileError(f"{self.path.name}: GGUF metadata value of unknown type {vtype}")


class GGUFReader:
    """Q/K tensors of a ``.gguf`` file without parsing its tokenizer arrays.

    Reads the header, skips metadata arrays, and memory-maps tensor data; quantized tensors
    are dequantized with ``gguf.quants.dequantize`` (bit-identical to ``gguf.GGUFReader``).
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        with open_regular(self.path) as fh:
            if os.fstat(fh.fileno()).st_size < 24:
                raise CorruptFileError(f"{self.path.name}: too small to be a GGUF file")
            self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
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
        """One tensor, dequantized, as float64 (exact)."""
        return self.read_exact(name).astype(np.float64)

    def read_exact(self, name: str) -> np.ndarray:
        """One tensor, dequantized, as float32 (what ``gguf.quants.dequantize`` gives)."""
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
            return np.asarray(values, dtype=np.float32).reshape(shape)
        except (ValueError, NotImplementedError) as exc:
            raise CorruptFileError(
                f"{self.path.name}: cannot dequantize tensor {name!r} "
                f"({GGMLQuantizationType(qtype).name}, shape {shape}): {exc}"
            ) from exc
