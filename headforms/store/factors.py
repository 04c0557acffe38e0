"""The factor store: each model's extracted per-layer factors, between extraction and forms.

An entry is a directory ``<cache>/factors/<key>/`` of open formats:

    factors.json           {"format": "headforms.factors", "version": 1, "facts": ...,
                            "layers": [{"file", "bytes", "crc32"}, ...]}
    layer-00000.safetensors   q, k (and q_bias, k_bias, q_gain, k_gain, inv_freq if present)

It is written into a hidden partial directory, one layer file at a time on a background thread
(while the next layers are computed), and committed by one rename once every layer and
``factors.json`` are written: a killed writer leaves only a partial directory, which is never
read and is removed later. Reading checks the format, the version and each layer's CRC-32 (a
damaged entry is a miss: the weights are read again). The store is bounded: a model whose
factors exceed :data:`MODEL_LIMIT` is not kept, and past :data:`TOTAL_LIMIT` the least recently
used entries are evicted.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import tempfile
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..factors import LAYER_ARRAYS, LayerFactors, ModelFacts
from .location import cache_dir

FORMAT = "headforms.factors"
FORMAT_VERSION = 1
MODEL_LIMIT = 2**30
"""Bytes of factors above which a model's factors are not kept (its new positions and metrics
then read the weights again): 1 GiB holds the float32 factors of models up to a few billion
parameters (SmolLM2 53 MB, gpt2-large 472 MB; Mistral-Small-24B needs 4.2 GB)."""
TOTAL_LIMIT = 4 * 2**30
"""Bytes kept in the factor store before the least recently used entries are evicted."""
PARTIAL_SECONDS = 3600.0
"""A partial entry untouched this long is a killed writer's leftover and is removed."""
META = "factors.json"
PARTIAL_PREFIX = ".partial-"
QUEUED_LAYERS = 2
"""Layers waiting for the writer thread at most (the producer waits beyond: bounded memory)."""


class DamagedFactors(Exception):
    """A stored layer does not match its checksum or cannot be read (the entry is dropped)."""


def layer_file(layer: int) -> str:
    """The file name of one layer's factors."""
    return f"layer-{layer:05d}.safetensors"


def _crc(arrays: dict[str, np.ndarray]) -> int:
    """CRC-32 of the arrays' bytes, in :data:`LAYER_ARRAYS` order."""
    crc = 0
    for name in LAYER_ARRAYS:
        if name in arrays:
            crc = zlib.crc32(np.ascontiguousarray(arrays[name]).data, crc)
    return crc


class StoredFactors:
    """One committed entry: its facts, and its layers read on demand (checked)."""

    def __init__(self, directory: Path, facts: ModelFacts, layers: list[dict[str, Any]]):
        self.directory = directory
        self.facts = facts
        self.layers = layers

    def layer(self, index: int) -> LayerFactors:
        """The factors of layer ``index``; :class:`DamagedFactors` if they are not intact."""
        from safetensors.numpy import load_file

        entry = self.layers[index]
        try:
            arrays = load_file(self.directory / entry["file"])
        except Exception as exc:  # a missing, truncated or garbled file: the entry is damaged
            raise DamagedFactors(f"{entry['file']}: {type(exc).__name__}") from exc
        if _crc(arrays) != entry["crc32"]:
            raise DamagedFactors(f"{entry['file']}: checksum mismatch")
        return LayerFactors.from_arrays(arrays)


class FactorWriter:
    """Writes one entry's layers on a background thread; :meth:`commit` publishes it whole.

    Layers must be added in order. A failure to write (a full disk) is not an error of the
    analysis: the entry is then simply not committed.
    """

    def __init__(self, store: FactorStore, key: str):
        self.store = store
        self.key = key
        store.directory.mkdir(parents=True, exist_ok=True)
        self.partial = Path(tempfile.mkdtemp(prefix=f"{PARTIAL_PREFIX}{key}-", dir=store.directory))
        self.layers: list[dict[str, Any]] = []
        self.failed: BaseException | None = None
        self._queue: queue.Queue[tuple[int, LayerFactors] | None] = queue.Queue(QUEUED_LAYERS)
        self._thread = threading.Thread(target=self._run, name="headforms-factors", daemon=True)
        self._thread.start()

    def add(self, index: int, layer: LayerFactors) -> None:
        """Queue one layer for writing (waits while :data:`QUEUED_LAYERS` are queued)."""
        if self.failed is None:
            self._queue.put((index, layer))

    def _run(self) -> None:
        from safetensors.numpy import save_file

        while (item := self._queue.get()) is not None:
            if self.failed is not None:
                continue
            index, layer = item
            arrays = {k: np.ascontiguousarray(v) for k, v in layer.arrays().items()}
            name = layer_file(index)
            try:
                save_file(arrays, self.partial / name)
                size = (self.partial / name).stat().st_size
            except Exception as exc:  # the disk is full or gone: keep computing, store nothing
                self.failed = exc
                continue
            self.layers.append({"file": name, "bytes": size, "crc32": _crc(arrays)})

    def _finish(self) -> None:
        self._queue.put(None)
        self._thread.join()

    def commit(self, facts: ModelFacts) -> bool:
        """Publish the entry (every layer written, then ``factors.json``, then one rename);
        False when it could not be written."""
        self._finish()
        try:
            if self.failed is not None or len(self.layers) != facts.shapes.n_layers:
                return False
            meta = {
                "format": FORMAT,
                "version": FORMAT_VERSION,
                "facts": facts.as_dict(),
                "layers": self.layers,
            }
            try:
                (self.partial / META).write_text(json.dumps(meta))
                os.rename(self.partial, self.store.directory / self.key)
            except OSError:  # a full disk, or committed meanwhile by another writer
                return False
            self.store.evict()
            return True
        finally:
            shutil.rmtree(self.partial, ignore_errors=True)

    def abort(self) -> None:
        """Drop the partial entry."""
        self._finish()
        shutil.rmtree(self.partial, ignore_errors=True)


class FactorStore:
    """Factor entries under their keys (:func:`headforms.store.keys.factors_key`)."""

    def __init__(
        self,
        directory: Path | None = None,
        model_limit: int | None = None,
        total_limit: int | None = None,
    ):
        self.directory = Path(directory) if directory else cache_dir() / "factors"
        self.model_limit = MODEL_LIMIT if model_limit is None else model_limit
        self.total_limit = TOTAL_LIMIT if total_limit is None else total_limit

    def get(self, key: str) -> StoredFactors | None:
        """The committed entry under ``key``, or None (marked as used now, for eviction)."""
        directory = self.directory / key
        try:
            meta = json.loads((directory / META).read_text())
            if (meta.get("format"), meta.get("version")) != (FORMAT, FORMAT_VERSION):
                raise ValueError("another format")
            facts = ModelFacts.from_dict(meta["facts"])
            layers = list(meta["layers"])
            if len(layers) != facts.shapes.n_layers:
                raise ValueError("layers missing")
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError):
            self.delete(key)
            return None
        _touch(directory / META)
        return StoredFactors(directory, facts, layers)

    def writer(self, key: str, nbytes: int) -> FactorWriter | None:
        """A writer of a new entry of about ``nbytes``, or None when the store does not keep
        factors that large (or cannot write)."""
        if nbytes > self.model_limit:
            return None
        try:
            return FactorWriter(self, key)
        except OSError:
            return None

    def delete(self, key: str) -> None:
        """Forget one entry."""
        shutil.rmtree(self.directory / key, ignore_errors=True)

    def entries(self) -> Iterator[tuple[str, int, float]]:
        """``(key, bytes, last used)`` of every committed entry."""
        if not self.directory.is_dir():
            return
        for entry in os.scandir(self.directory):
            if entry.name.startswith(PARTIAL_PREFIX) or not entry.is_dir():
                continue
            try:
                meta_path = Path(entry.path) / META
                used = meta_path.stat().st_mtime
                size = sum(f.stat().st_size for f in os.scandir(entry.path))
            except OSError:
                continue
            yield entry.name, size, used

    def evict(self) -> None:
        """Remove stale partial entries, then the least recently used entries past the total."""
        if not self.directory.is_dir():
            return
        now = time.time()
        for entry in os.scandir(self.directory):
            if entry.name.startswith(PARTIAL_PREFIX):
                try:
                    if now - entry.stat().st_mtime > PARTIAL_SECONDS:
                        shutil.rmtree(entry.path, ignore_errors=True)
                except OSError:
                    continue
        entries = sorted(self.entries(), key=lambda e: e[2])
        total = sum(size for _, size, _ in entries)
        for key, size, _ in entries:
            if total <= self.total_limit:
                break
            self.delete(key)
            total -= size


def _touch(path: Path) -> None:
    try:
        os.utime(path)
    except OSError:
        pass
