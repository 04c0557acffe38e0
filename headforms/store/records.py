"""Result entries in open formats, in a ``diskcache`` store.

An entry is a :class:`Record`: JSON metadata, named tables (columns of equal length) and named
arrays. It is stored as one zip archive (readable with any zip tool, numpy and a JSON parser):

    format.json      {"format": "headforms.result", "version": 1, "kind": ...}
    meta.json        the record's metadata (for an analysis: its model card)
    tables/<name>.npz   one array per column (labels as fixed-width unicode, read back as str
                        objects; no pickles)
    arrays.npz       the named arrays (spectra)

``diskcache`` stores the archive's bytes as they are and its SHA-256 as the entry's tag; an
entry is committed only once fully written. Reading checks the digest, the format and the
version: anything else (damaged, truncated, written by another format version) is a miss and
is deleted, so the caller recomputes it.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .location import cache_dir

FORMAT = "headforms.result"
FORMAT_VERSION = 1
SIZE_LIMIT = 8 * 2**30
"""Bytes kept before the least recently stored entries are evicted."""


@dataclass
class Record:
    """What one entry holds: ``meta`` (JSON), ``tables`` (name -> column -> 1-D array) and
    ``arrays`` (name -> array)."""

    kind: str
    meta: dict[str, Any]
    tables: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)


def _npz(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **{name: _storable(value) for name, value in arrays.items()})
    return buffer.getvalue()


def _storable(values: np.ndarray) -> np.ndarray:
    """Object columns (labels) become fixed-width unicode arrays, which need no pickle."""
    values = np.asarray(values)
    return values.astype(str) if values.dtype == object else values


def _load_npz(data: bytes) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        return {name: npz[name] for name in npz.files}


def _labels(values: np.ndarray) -> np.ndarray:
    """Stored label columns (fixed-width unicode) back to the object arrays computed ones use."""
    return values.astype(object) if values.dtype.kind == "U" else values


def encode(record: Record) -> bytes:
    """The zip archive of a record."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        header = {"format": FORMAT, "version": FORMAT_VERSION, "kind": record.kind}
        archive.writestr("format.json", json.dumps(header))
        archive.writestr("meta.json", json.dumps(record.meta, allow_nan=True))
        for name, columns in record.tables.items():
            archive.writestr(f"tables/{name}.npz", _npz(columns))
        archive.writestr("arrays.npz", _npz(record.arrays))
    return buffer.getvalue()


def decode(data: bytes, kind: str, arrays: bool = True) -> Record | None:
    """The record in an archive, or None if it is not a record of this ``kind`` and version;
    ``arrays=False`` leaves the named arrays unread (only the metadata and tables are wanted)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            header = json.loads(archive.read("format.json"))
            if header != {"format": FORMAT, "version": FORMAT_VERSION, "kind": kind}:
                return None
            tables = {
                name[len("tables/") : -len(".npz")]: {
                    column: _labels(values)
                    for column, values in _load_npz(archive.read(name)).items()
                }
                for name in archive.namelist()
                if name.startswith("tables/") and name.endswith(".npz")
            }
            return Record(
                kind=kind,
                meta=json.loads(archive.read("meta.json")),
                tables=tables,
                arrays=_load_npz(archive.read("arrays.npz")) if arrays else {},
            )
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, EOFError):
        return None


class ResultStore:
    """Records under string keys (:func:`headforms.store.cache_key`), in a ``diskcache.Cache``."""

    def __init__(self, directory: Path | None = None):
        import diskcache

        self.directory = Path(directory) if directory else cache_dir() / "results"
        self._cache = diskcache.Cache(str(self.directory), size_limit=SIZE_LIMIT)

    def get(self, key: str, kind: str) -> Record | None:
        """The record under ``key``, or None (a miss; a damaged or foreign entry is deleted)."""
        try:
            data, digest = self._cache.get(key, default=None, read=False, tag=True)
        except Exception:  # an unreadable entry file or database row: recompute
            data, digest = None, None
        if data is None:
            return None
        record = None
        if isinstance(data, bytes) and digest == hashlib.sha256(data).hexdigest():
            record = decode(data, kind)
        if record is None:
            self._cache.delete(key)
        return record

    def put(self, key: str, record: Record) -> None:
        """Store a record (atomically: readers see the old state or the whole new entry)."""
        data = encode(record)
        self._cache.set(key, data, tag=hashlib.sha256(data).hexdigest())

    def delete(self, key: str) -> None:
        """Forget one entry."""
        self._cache.delete(key)

    def __contains__(self, key: str) -> bool:
        return key in self._cache

    def close(self) -> None:
        """Close the underlying database."""
        self._cache.close()
