"""Model specs: one string naming a model, classified before anything is opened.

A spec is a bundled model's short name (``smollm2-135m``), a local path (a directory with
``config.json`` and weights, or a ``.gguf`` file), or a hub id with an optional revision
(``gpt2``, ``org/name@revision``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelSpecError
from .bundled import BUNDLED_MODELS

HUB_ID_PATTERN = re.compile(
    r"^(?:[A-Za-z0-9][A-Za-z0-9._-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9._-]{0,95}(?:@[A-Za-z0-9._/-]{1,128})?$"
)
"""``[namespace/]name[@revision]`` as the hub accepts them (no ``..``, no spaces)."""

MAX_SPEC_LENGTH = 512
"""Longest accepted spec (a path or hub id is far shorter)."""

ACCEPTED = (
    f"accepted: a bundled name ({', '.join(BUNDLED_MODELS)}), a local directory with "
    "config.json and weights, a .gguf file, or a hub id like 'gpt2' or 'org/name@revision'"
)


SEPARATOR = "::"
"""Between a table file and a model name in a spec."""

TABLE_SUFFIXES = (".csv", ".parquet", ".json")
"""Table formats (``FILE::MODEL``); a bare spec is a table only for :data:`BARE_SUFFIXES`."""

BARE_SUFFIXES = (".csv", ".parquet")


def split_spec(spec: str) -> tuple[Path, str | None] | None:
    """``(file, model or None)`` if ``spec`` names a published per-head table (or a model in
    one, ``FILE::MODEL``), else None. Tables are opened by :mod:`headforms.tables`."""
    if not isinstance(spec, str):  # parse_spec says what a spec must be
        return None
    spec = spec.strip()
    if SEPARATOR in spec:
        path, _, model = spec.rpartition(SEPARATOR)
        if Path(path).suffix.lower() in TABLE_SUFFIXES:
            return Path(path).expanduser(), model.strip() or None
        return None
    if Path(spec).suffix.lower() in BARE_SUFFIXES:
        return Path(spec).expanduser(), None
    return None


def is_table_spec(spec: str) -> bool:
    """Whether ``spec`` names a published table (or a model in one)."""
    return split_spec(spec) is not None


@dataclass(frozen=True)
class Spec:
    """A classified spec: ``kind`` is ``bundled``, ``path`` or ``hub``; ``value`` the name, path
    or repo id; ``revision`` the hub revision (None: the default branch)."""

    text: str
    kind: str
    value: str
    revision: str | None = None


def parse_spec(spec: str, probe: bool = True) -> Spec:
    """Classify a spec (no file is opened). With ``probe``, a bare relative name that exists is
    a path; without (a shared server's policy: the answer would tell strangers which files it
    has), a spec is classified by its text alone."""
    if not isinstance(spec, str):
        raise ModelSpecError(f"the model spec must be a string; {ACCEPTED}")
    text = spec.strip()
    if not text:
        raise ModelSpecError(f"empty model spec; {ACCEPTED}")
    if len(text) > MAX_SPEC_LENGTH:
        raise ModelSpecError(
            f"model spec is {len(text)} characters long (at most {MAX_SPEC_LENGTH})"
        )
    if "\0" in text:
        raise ModelSpecError(f"model spec contains a NUL byte; {ACCEPTED}")
    if text in BUNDLED_MODELS:
        return Spec(text, "bundled", text)
    looks_like_path = (
        text.startswith(("/", ".", "~"))
        or text.endswith((".gguf", ".safetensors", ".bin", ".json"))
        or (probe and Path(text).expanduser().exists())
    )
    if looks_like_path:
        return Spec(text, "path", str(Path(text).expanduser()))
    if HUB_ID_PATTERN.match(text) and ".." not in text:
        repo, _, revision = text.partition("@")
        return Spec(text, "hub", repo, revision or None)
    raise ModelSpecError(
        f"{text!r} is neither a bundled model, an existing local path, nor a hub id; {ACCEPTED}"
    )
