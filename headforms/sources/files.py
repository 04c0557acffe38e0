"""Which files of a model the engine reads, how they are opened, and their fingerprint.

:func:`choose_weight_files` is the one decision of which weight files are read, for a local
directory and a hub repository alike; the hosted size check measures exactly those files.
:func:`open_regular` is the only way a model file is opened: it never blocks on, nor reads from,
anything but a regular file (no FIFO, device or socket).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from ..architectures import Architecture, attention_patterns
from ..errors import CorruptFileError, ModelSpecError

WeightFormat = Literal["safetensors", "bin"]

SINGLE_FILES: tuple[tuple[str, WeightFormat], ...] = (
    ("model.safetensors", "safetensors"),
    ("pytorch_model.bin", "bin"),
)
"""Weight files of a transformers checkpoint, by preference; each may be sharded with an
``<name>.index.json``."""

TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "tokenizer.model",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
)
"""Files a checkpoint's tokenizer may be read from: a forward pass reads them (the engine does
not), so a located checkpoint lists those it has (:attr:`.Located.forward_files`)."""

GGUF_MAGIC = b"GGUF"
"""The first four bytes of every GGUF file."""

MAX_INDEX_BYTES = 16 * 2**20
"""A shard index larger than this is refused (a real one is a few hundred KiB at most)."""

MAX_CONFIG_BYTES = 4 * 2**20
"""A config.json larger than this is refused."""

HEADER_HASH_BYTES = 1 << 20
"""Bytes of each file hashed into its fingerprint (with its name, size and mtime)."""


@dataclass(frozen=True)
class WeightChoice:
    """The weight files to read: ``files`` (names relative to the model's root), their format,
    the shard ``index`` used (if any), whether they hold every weight (``complete``) and the
    checkpoint's ``other`` weight files (the shards not read, which a forward pass reads)."""

    format: WeightFormat
    files: tuple[str, ...]
    index: str | None = None
    complete: bool = True
    other: tuple[str, ...] = ()


def choose_weight_files(
    names: Collection[str],
    read_index: Callable[[str], bytes],
    arch: Architecture,
    max_index_bytes: int = MAX_INDEX_BYTES,
) -> WeightChoice:
    """The weight files of a model whose root holds ``names`` (top level; sub-folders ignored).

    ``model.safetensors`` (or its shards, from ``model.safetensors.index.json``) first, then
    ``pytorch_model.bin`` (or its shards), then every top-level ``*.safetensors``. Of a sharded
    checkpoint, only the shards holding attention tensors (Q/K weights, biases, norms) are read.
    ``read_index(name)`` returns an index file's bytes (at most ``max_index_bytes``).
    """
    top = {n for n in names if "/" not in n}
    for single, fmt in SINGLE_FILES:
        index = f"{single}.index.json"
        if index in top:
            weight_map = parse_index(read_index(index), index, max_index_bytes)
            shards = set(weight_map.values())
            wanted = {f for t, f in weight_map.items() if is_attention_tensor(t, arch)} or shards
            missing = sorted(wanted - top)
            if missing:
                raise CorruptFileError(f"{index} lists missing shard(s): {', '.join(missing)}")
            other = tuple(sorted(shards - wanted))
            return WeightChoice(fmt, tuple(sorted(wanted)), index, not other, other)
        if single in top:
            return WeightChoice(fmt, (single,))
    shards = sorted(n for n in top if n.endswith(".safetensors"))
    if shards:
        return WeightChoice("safetensors", tuple(shards))
    raise ModelSpecError(
        "the model has a config.json but no weights; accepted: model.safetensors (or shards "
        "with model.safetensors.index.json) or pytorch_model.bin (or its shards)"
    )


def parse_index(data: bytes, label: str, limit: int = MAX_INDEX_BYTES) -> dict[str, str]:
    """The ``weight_map`` of a shard index: tensor name -> plain shard file name."""
    if len(data) > limit:
        raise CorruptFileError(f"{label} is larger than {limit} bytes")
    try:
        weight_map = json.loads(data)["weight_map"]
    except (KeyError, TypeError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise CorruptFileError(f"{label}: not a valid shard index (no weight_map)") from exc
    if not isinstance(weight_map, dict) or not all(
        isinstance(t, str) and is_plain_name(f) for t, f in weight_map.items()
    ):
        raise CorruptFileError(
            f"{label}: not a valid shard index (weight_map must map tensor names to shard file "
            "names in the same directory)"
        )
    return weight_map


def is_plain_name(name: Any) -> bool:
    """A file name of the same directory: no separator, not '.' or '..', no NUL."""
    return (
        isinstance(name, str)
        and name not in ("", ".", "..")
        and "/" not in name
        and "\\" not in name
        and "\0" not in name
    )


def is_attention_tensor(name: str, arch: Architecture) -> bool:
    """Whether a checkpoint tensor is one the engine reads (by the architecture's patterns):
    its name's literal ending first (most names of an index fail there), then the pattern."""
    endings, pattern = _attention_matcher(arch)
    return name.endswith(endings) and pattern.search(name) is not None


@functools.cache
def _attention_matcher(arch: Architecture) -> tuple[tuple[str, ...], re.Pattern[str]]:
    """The literal endings of ``arch``'s attention patterns and one compiled pattern matching
    them all (built once per architecture: an index of 10^5 tensors is matched in
    milliseconds)."""
    patterns = attention_patterns(arch)
    endings = tuple(p.rsplit("{i}", 1)[-1] for p in patterns)
    parts = [re.escape(p).replace(r"\{i\}", r"\d+") for p in patterns]
    return endings, re.compile(f"(?:{'|'.join(parts)})$")


# ---------------------------------------------------------------------------------------------
# Opening and fingerprinting local files


def open_regular(path: Path) -> IO[bytes]:
    """Open a model file for reading; refuse anything that is not a regular file.

    The file is opened without blocking (a FIFO would otherwise wait for a writer forever) and
    checked on the open descriptor, so it cannot be swapped between check and read.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise ModelSpecError(f"cannot open {path.name}: {exc.strerror or exc}") from exc
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise ModelSpecError(
            f"{path.name} is not a regular file ({_file_kind(mode)}); model files must be "
            "regular files"
        )
    return os.fdopen(fd, "rb")


def regular_size(path: Path) -> int:
    """Size of a regular file (following symbolic links); anything else is refused."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise ModelSpecError(f"cannot read {Path(path).name}: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(info.st_mode):
        raise ModelSpecError(
            f"{Path(path).name} is not a regular file ({_file_kind(info.st_mode)}); model files "
            "must be regular files"
        )
    return info.st_size


def short_name(name: str, limit: int = 80) -> str:
    """A file name as a message shows it (a 300-character name cut to ``limit``)."""
    return name if len(name) <= limit else name[: limit - 1] + "…"


def _file_kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def read_small(path: Path, limit: int) -> bytes:
    """A small regular file's bytes (config, index), refused beyond ``limit`` bytes."""
    with open_regular(path) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise CorruptFileError(f"{Path(path).name} is larger than {limit} bytes")
    return data


def files_fingerprint(paths: list[Path]) -> str:
    """Content fingerprint of local files: name, size, mtime and a hash of the first MiB."""
    digest = hashlib.sha256()
    for path in paths:
        with open_regular(path) as fh:
            info = os.fstat(fh.fileno())
            digest.update(f"{Path(path).name}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
            digest.update(fh.read(HEADER_HASH_BYTES))
    return digest.hexdigest()
