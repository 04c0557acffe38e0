"""Read a hub checkpoint's attention tensors by HTTP range requests, not whole shards.

A sharded checkpoint spreads every layer's Q/K over all its shards, so downloading "only the
shards that hold attention weights" is the whole model. :class:`RemoteSafetensorsReader`
instead fetches each shard's safetensors header, then exactly the byte range of each tensor
that is read. Everything fetched is kept on disk under
``cache_dir()/hub-ranges/<repo>/<commit>/`` (a commit's files never change), so a second run
transfers nothing. Enabled by ``HEADFORMS_HUB_RANGES=1`` (:mod:`headforms.models.source`).
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CorruptFileError, HubUnavailableError
from ..settings import HUB_RANGES_ENV, settings
from ..store import write_atomic
from .safetensors import (
    _SAFETENSORS_MAX_HEADER,
    SafetensorsHeaderTensors,
    check_safetensors_header,
    decode_tensor_bytes,
    require_float,
)

HEADER_PROBE_BYTES = 1 << 14
"""First request per shard: the 8-byte length and, usually, the whole JSON header."""

_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


def ranges_enabled() -> bool:
    """Whether ``$HEADFORMS_HUB_RANGES`` asks for range requests (default: download shards)."""
    return settings().hub_ranges


def _safe_part(text: str) -> str:
    """A path component for a repo id, revision or file name (no separators, no dot-dots)."""
    clean = re.sub(r"[^A-Za-z0-9._-]+", "--", text).strip(".")
    return clean or hashlib.sha256(text.encode()).hexdigest()[:16]


class RangeFetcher:
    """``GET`` byte ranges of files under a base URL (huggingface_hub's session, auth, retries).

    ``base_url`` is a prefix that the file name is appended to, e.g.
    ``https://huggingface.co/org/name/resolve/<commit>/``. Counts the bytes it receives.
    """

    def __init__(self, base_url: str, headers: dict[str, str] | None = None, timeout: float = 60):
        self.base_url = base_url if base_url.endswith("/") else base_url + "/"
        self.headers = dict(headers or {})
        self.timeout = timeout
        self.bytes_received = 0
        self.requests = 0
        self._lock = threading.Lock()

    def get(self, filename: str, start: int, end: int) -> tuple[bytes, int]:
        """Bytes ``[start, end)`` of ``filename`` and the file's total size."""
        from urllib.parse import quote

        from huggingface_hub.utils import http_backoff

        url = self.base_url + quote(filename)
        headers = {**self.headers, "Range": f"bytes={start}-{end - 1}"}
        try:
            response = http_backoff("GET", url, headers=headers, timeout=self.timeout)
        except Exception as exc:  # connection errors of the HTTP stack, after its retries
            raise HubUnavailableError(
                f"cannot fetch {filename} by range request ({type(exc).__name__})"
            ) from exc
        if response.status_code == 416:  # the range starts past the end: a short file
            raise CorruptFileError(f"{filename}: byte range {start}..{end} is past the end")
        if response.status_code != 206:
            if response.status_code == 200:
                raise HubUnavailableError(
                    f"{filename}: the server ignored the range request (HTTP 200, whole file); "
                    f"unset {HUB_RANGES_ENV} to download the shards instead"
                )
            raise HubUnavailableError(
                f"{filename}: range request failed with HTTP {response.status_code}"
            )
        match = _CONTENT_RANGE.match(response.headers.get("content-range", ""))
        body = response.content
        with self._lock:
            self.bytes_received += len(body)
            self.requests += 1
        if not match or match.group(3) == "*" or int(match.group(1)) != start:
            raise HubUnavailableError(f"{filename}: the server sent no usable Content-Range")
        total = int(match.group(3))
        if len(body) != min(end, total) - start:
            raise CorruptFileError(
                f"{filename}: received {len(body)} bytes for range {start}..{end} (truncated)"
            )
        return body, total


class RemoteSafetensorsReader(SafetensorsHeaderTensors):
    """Tensors of remote safetensors shards, fetched by range and cached on disk.

    Same interface as :class:`headforms.readers.SafetensorsReader` (``names``, ``shape``,
    ``storage_dtype``, ``read``). ``cache_root`` is this checkpoint's own directory (one per
    repo and commit): headers go to ``<shard>/header.json``, tensors to ``<shard>/<hash>.bin``.
    """

    def __init__(self, fetcher: RangeFetcher, filenames: Iterable[str], cache_root: Path):
        self.fetcher = fetcher
        self.cache_root = Path(cache_root)
        self.filenames = list(filenames)
        self.remote_bytes = 0  # total size of the shards on the server
        self._where: dict[str, str] = {}
        self._info: dict[str, dict[str, Any]] = {}
        self._data_start: dict[str, int] = {}
        for filename in self.filenames:
            header, data_start, total = self._header(filename)
            self.remote_bytes += total
            self._data_start[filename] = data_start
            for name, info in header.items():
                if name != "__metadata__":
                    self._where[name] = filename
                    self._info[name] = info

    @classmethod
    def for_hub(
        cls, repo_id: str, commit: str, filenames: Iterable[str], cache_root: Path | None = None
    ) -> RemoteSafetensorsReader:
        """A reader of ``repo_id`` at ``commit`` on the configured endpoint (``HF_ENDPOINT``)."""
        from huggingface_hub.utils import build_hf_headers

        from ..sources.hub import hub_endpoint
        from ..store import cache_dir

        base = f"{hub_endpoint()}/{repo_id}/resolve/{commit}/"
        root = cache_root or cache_dir() / "hub-ranges" / _safe_part(repo_id) / _safe_part(commit)
        return cls(RangeFetcher(base, headers=build_hf_headers()), filenames, root)

    # -- the reader interface -----------------------------------------------------------------

    def read_exact(self, name: str) -> np.ndarray:
        """One tensor, exactly (float32, or float64 for F64), its bytes fetched once, then read
        from the disk cache."""
        filename = self._where[name]
        info = self._info[name]
        dtype = str(info["dtype"])
        require_float(Path(filename), name, dtype.lower())
        start, end = (int(v) for v in info["data_offsets"])
        raw = self._tensor_bytes(filename, name, start, end)
        return decode_tensor_bytes(raw, dtype, tuple(int(d) for d in info["shape"]))

    # -- fetching and caching -----------------------------------------------------------------

    def _shard_dir(self, filename: str) -> Path:
        return self.cache_root / _safe_part(filename)

    def _header(self, filename: str) -> tuple[dict[str, Any], int, int]:
        """``(header, data start, file size)`` of a shard, from the cache or two requests."""
        cached = self._shard_dir(filename) / "header.json"
        try:
            entry = json.loads(cached.read_text())
            header, data_start, total = entry["header"], entry["data_start"], entry["size"]
            check_safetensors_header(header, total - data_start, filename)
            return header, int(data_start), int(total)
        except (OSError, ValueError, KeyError, TypeError, CorruptFileError):
            pass  # not cached yet, or damaged: fetch again
        probe, total = self.fetcher.get(filename, 0, HEADER_PROBE_BYTES)
        if len(probe) < 8:
            raise CorruptFileError(f"{filename}: truncated safetensors file (no header length)")
        (header_len,) = struct.unpack("<Q", probe[:8])
        if header_len > min(total - 8, _SAFETENSORS_MAX_HEADER):
            raise CorruptFileError(
                f"{filename}: safetensors header length {header_len} exceeds the file "
                f"({total} bytes): truncated or not a safetensors file"
            )
        raw = probe[8 : 8 + header_len]
        if len(raw) < header_len:
            rest, _ = self.fetcher.get(filename, len(probe), 8 + header_len)
            raw += rest
        try:
            header = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise CorruptFileError(f"{filename}: safetensors header is not valid JSON") from exc
        data_start = 8 + header_len
        check_safetensors_header(header, total - data_start, filename)
        entry = {"header": header, "data_start": data_start, "size": total}
        write_atomic(cached, json.dumps(entry).encode())
        return header, data_start, total

    def _tensor_bytes(self, filename: str, name: str, start: int, end: int) -> bytes:
        size = end - start
        cached = self._shard_dir(filename) / (hashlib.sha256(name.encode()).hexdigest() + ".bin")
        try:
            data = cached.read_bytes()
            if len(data) == size:
                return data
        except OSError:
            pass
        if size == 0:
            return b""
        base = self._data_start[filename]
        data, _ = self.fetcher.get(filename, base + start, base + end)
        write_atomic(cached, data)
        return data
