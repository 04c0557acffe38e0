"""Local models: a directory (config.json + safetensors or .bin, single or sharded), a .gguf, or
a published per-head table file or directory of the author's published files (a source of
metrics and spectra, :mod:`headforms.tables` reads it).

Only regular files are read (see :func:`headforms.sources.files.open_regular`); weights are
never opened here: the config, a shard index and the first MiB of each chosen file (its
fingerprint) are all that is read.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

from ..architectures import architecture_for
from ..errors import CorruptFileError, ModelSpecError
from .files import (
    GGUF_MAGIC,
    MAX_CONFIG_BYTES,
    MAX_INDEX_BYTES,
    TOKENIZER_FILES,
    choose_weight_files,
    files_fingerprint,
    open_regular,
    read_small,
    regular_size,
    short_name,
)
from .located import TABLE_FORMAT, Located, LocatedFile
from .policy import Guard, allow
from .specs import PUBLISHED_TABLE, SPECTRA_SUFFIX, published_directory

ACCEPTED_LOCAL = (
    "accepted: a directory with config.json and *.safetensors or pytorch_model.bin (single or "
    "sharded with its index), or a .gguf file"
)


def locate_path(
    path: Path,
    spec: str,
    kind: str = "local",
    display_name: str | None = None,
    guard: Guard = allow,
    max_index_bytes: int = MAX_INDEX_BYTES,
) -> Located:
    """Locate a local directory or ``.gguf`` file (see the module doc); ``guard`` sees every
    path before it is opened."""
    path = Path(path)
    guard(path)
    try:
        info = os.stat(path)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
            raise ModelSpecError(f"no such file or directory: {spec}; {ACCEPTED_LOCAL}") from None
        raise ModelSpecError(  # e.g. a name longer than the file system allows
            f"cannot open {short_name(path.name)}: {exc.strerror or type(exc).__name__}"
        ) from None
    if not stat.S_ISDIR(info.st_mode):
        if path.suffix.lower() == ".gguf" or _has_gguf_magic(path):
            return _locate_gguf(path, spec, "gguf" if kind == "local" else kind, display_name)
        raise ModelSpecError(
            f"{path.name} is not a model: a single file must be a .gguf file; for safetensors or "
            ".bin weights give the directory that holds them with their config.json"
        )
    config_path = path / "config.json"
    if not config_path.exists():
        if published_directory(path):  # the author's published files, named bare
            return locate_table(path, spec, None, guard)
        ggufs = sorted(path.glob("*.gguf"))
        if len(ggufs) == 1:
            guard(ggufs[0])
            return _locate_gguf(ggufs[0], spec, "gguf", display_name or path.name)
        raise ModelSpecError(f"{spec} has no config.json; {ACCEPTED_LOCAL}")
    guard(config_path)
    config = parse_config(read_small(config_path, MAX_CONFIG_BYTES), "config.json")
    arch = architecture_for(config["model_type"])
    names = [entry.name for entry in os.scandir(path)]

    def read_index(name: str) -> bytes:
        guard(path / name)
        return read_small(path / name, max_index_bytes)

    choice = choose_weight_files(names, read_index, arch, max_index_bytes)
    for name in choice.files:
        guard(path / name)
    weights = tuple(LocatedFile(n, regular_size(path / n), path / n) for n in choice.files)
    index = None
    if choice.index:
        index = LocatedFile(choice.index, regular_size(path / choice.index), path / choice.index)
    config_file = LocatedFile("config.json", regular_size(config_path), config_path)
    others = [n for n in TOKENIZER_FILES if os.path.lexists(path / n)] + list(choice.other)
    return Located(
        spec=spec,
        kind=kind,
        display_name=display_name or path.name,
        format=choice.format,
        fingerprint=files_fingerprint([config_path, *(f.path for f in weights)]),
        weights=weights,
        config=config,
        config_file=config_file,
        index_file=index,
        complete=choice.complete,
        forward_files=tuple(LocatedFile(n, _size_if_regular(path / n), path / n) for n in others),
    )


def _size_if_regular(path: Path) -> int | None:
    """A file's size (following links), or None when it is missing or not a regular file (a
    forward pass refuses it then: :func:`headforms.behaviour.runnable.check_confined`)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def parse_config(data: bytes, label: str) -> dict[str, Any]:
    """A config.json's fields; it must be a JSON object with a string ``model_type``."""
    try:
        config = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise CorruptFileError(f"{label}: not valid JSON") from exc
    if not isinstance(config, dict) or not isinstance(config.get("model_type"), str):
        raise CorruptFileError(f"{label}: no 'model_type' field")
    return config


def locate_table(path: Path, spec: str, model: str | None, guard: Guard = allow) -> Located:
    """Locate a published per-head table: a table file, or a directory of the author's
    published files (its :data:`~.specs.PUBLISHED_TABLE`); ``model``: the model named in it
    (None: its only one, or, for listing, all of them). The model's spectra file
    (``<model>_spectra.npz`` beside the table), when there is one, is located with it: the
    second of ``weights``."""
    path = Path(path)
    guard(path)
    table = path
    if stat.S_ISDIR(_table_status(path).st_mode):
        table = path / PUBLISHED_TABLE
        guard(table)
        if not os.path.isfile(table):
            raise ModelSpecError(
                f"{short_name(path.name)} holds no {PUBLISHED_TABLE}: a directory of published "
                f"files holds {PUBLISHED_TABLE} and <model>{SPECTRA_SUFFIX} files"
            )
    files = [_table_file(table)]
    if model is not None and "/" not in model and model not in (".", ".."):
        spectra = table.parent / f"{model}{SPECTRA_SUFFIX}"
        guard(spectra)
        if os.path.lexists(spectra):  # (a name too long to look at: none)
            files.append(_table_file(spectra))
    return Located(
        spec=spec,
        kind="table",
        display_name=model or table.stem,
        format=TABLE_FORMAT,
        fingerprint=files_fingerprint([f.path for f in files]) + f":{model or ''}",
        weights=tuple(files),
        extra={"model": model},
    )


def _table_file(path: Path) -> LocatedFile:
    """A located regular file of a table source (its size), or one line saying why not."""
    info = _table_status(path)
    if not stat.S_ISREG(info.st_mode):
        raise ModelSpecError(f"the table {short_name(path.name)} is not a regular file")
    return LocatedFile(path.name, info.st_size, path)


def _table_status(path: Path) -> os.stat_result:
    """``os.stat`` of a table source's path, or one line saying why it cannot be opened (a
    missing file, a name too long, ...)."""
    try:
        return os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise ModelSpecError(
                f"no such table file: {path}; a published table is a .csv, .parquet or .json "
                f"file with one row per head, or a directory holding {PUBLISHED_TABLE}"
            ) from None
        raise ModelSpecError(
            f"cannot open the table file {short_name(path.name)}: "
            f"{exc.strerror or type(exc).__name__}"
        ) from None


def _has_gguf_magic(path: Path) -> bool:
    with open_regular(path) as fh:
        return fh.read(4) == GGUF_MAGIC


def _locate_gguf(path: Path, spec: str, kind: str, display_name: str | None) -> Located:
    weights = (LocatedFile(path.name, regular_size(path), path),)
    return Located(
        spec=spec,
        kind=kind,
        display_name=display_name or path.stem,
        format="gguf",
        fingerprint=files_fingerprint([path]),
        weights=weights,
    )
