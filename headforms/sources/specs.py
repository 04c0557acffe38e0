"""Model specs: one string naming a model, classified once, before anything is opened.

A spec is a bundled model's short name (``smollm2-135m``), a local path (a directory with
``config.json`` and weights, or a ``.gguf`` file), a hub id with an optional revision
(``gpt2``, ``org/name@revision``), or a published per-head table (``FILE.csv::MODEL``, or a bare
``FILE.csv`` / ``FILE.parquet``; ``DIR::MODEL`` or a bare ``DIR`` for a directory of the
author's published files: ``head_statistics.csv`` and ``<model>_spectra.npz``).
:func:`parse_spec` checks it under the caller's policy (:mod:`.policy`) and gives the
:class:`Spec` that travels on.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from ..errors import ModelSpecError
from ..store.location import demo_directory
from .bundled import BUNDLED_MODELS
from .policy import Policy

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


DEMO_PREFIX = "demo:"
"""Names the parts of the demo (``headforms demo``, the dashboard's "Try the demo"), wherever
the cache lies: ``demo:run`` (its training run), ``demo:base`` (model A of the pair) and
``demo:finetuned`` (model B); a path inside the demo's folder
(:func:`headforms.store.location.demo_directory`)."""

DEMO_PARTS = "demo:run, demo:base or demo:finetuned"

SEPARATOR = "::"
"""Between a table file and a model name in a spec."""

TABLE_SUFFIXES = (".csv", ".parquet", ".json")
"""Table formats (``FILE::MODEL``); a bare spec is a table only for :data:`BARE_SUFFIXES`."""

BARE_SUFFIXES = (".csv", ".parquet")


PUBLISHED_TABLE = "head_statistics.csv"
"""The per-head table of the author's published files (``scripts/survey_results/``); a
directory holding it (and ``<model>_spectra.npz`` files) is a table source."""

SPECTRA_SUFFIX = "_spectra.npz"
"""The author's spectra file of a model: ``<model>_spectra.npz`` beside the table."""


def split_spec(spec: str, probe: bool = False) -> tuple[Path, str | None] | None:
    """``(file or directory, model or None)`` if ``spec``'s text names a published per-head
    table or a model in one (``FILE::MODEL``, ``DIR::MODEL``: a directory of the author's
    files), else None. ``probe``: a bare directory holding :data:`PUBLISHED_TABLE` (and no
    config.json) is a table too (looked at on disk)."""
    spec = spec.strip()
    if SEPARATOR in spec:
        path, _, model = spec.rpartition(SEPARATOR)
        suffix = Path(path).suffix.lower()
        if suffix in TABLE_SUFFIXES or not suffix:
            return Path(path).expanduser(), model.strip() or None
        return None
    if Path(spec).suffix.lower() in BARE_SUFFIXES:
        return Path(spec).expanduser(), None
    if probe and published_directory(Path(spec).expanduser()):
        return Path(spec).expanduser(), None
    return None


def published_directory(path: Path) -> bool:
    """Whether ``path`` is a directory of the author's published files: it holds
    :data:`PUBLISHED_TABLE` and is not a model directory (no config.json)."""
    return os.path.isfile(path / PUBLISHED_TABLE) and not os.path.lexists(path / "config.json")


def short_name(spec: str) -> str:
    """How a model is named where room is short (figure titles, pickers): a published table's
    model by its name and the table file's (``gpt2 · head_statistics.csv``), not the table's
    whole path; any other spec as it is written."""
    table = split_spec(str(spec))
    if table is None:
        return str(spec)
    path, model = table
    return f"{model} · {path.name}" if model else path.name


def table_spec(path: Path | str, model: str) -> str:
    """The spec of ``model`` in the table at ``path``."""
    return f"{path}{SEPARATOR}{model}"


@dataclass(frozen=True)
class Spec:
    """A classified spec: ``kind`` is ``bundled``, ``path``, ``hub`` or ``table``; ``value`` the
    name, path, repo id or table file; ``revision`` the hub revision (None: the default
    branch); ``model`` the model named in a table (None: the table's only one, or all of them).
    ``policy``: the policy it was checked by (None: none), which the files it leads to are held
    to when it is located."""

    text: str
    kind: str
    value: str
    revision: str | None = None
    model: str | None = None
    policy: Policy | None = field(default=None, compare=False, repr=False)


def parse_spec(spec: str, policy: Policy | None = None) -> Spec:
    """Classify a spec once, under ``policy`` when one is given (its text checked first, the
    classified spec second). No file is opened. Without a policy a bare relative name that
    exists is a path; with one (a shared server's: the answer would tell strangers which files
    it has) a spec is classified by its text alone."""
    if policy is None:
        return _classify(spec, probe=True)
    policy.check_text(spec)
    parsed = replace(_classify(spec, probe=False), policy=policy)
    policy.check_spec(parsed)
    return parsed


def _classify(spec: str, probe: bool) -> Spec:
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
    if text.startswith(DEMO_PREFIX):
        return _demo_part(text)
    table = split_spec(text, probe)
    if table is not None:
        return Spec(text, "table", str(table[0]), model=table[1])
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


def _demo_part(text: str) -> Spec:
    """``demo:PART``: the path ``PART`` inside the demo's folder (:data:`DEMO_PREFIX`), a
    relative path that stays inside it."""
    part = text[len(DEMO_PREFIX) :].strip()
    pieces = PurePosixPath(part).parts
    if not part or part.startswith("/") or "\\" in part or ".." in pieces:
        raise ModelSpecError(
            f"{text!r}: a part of the demo is {DEMO_PARTS} (`headforms demo` builds it)"
        )
    return Spec(text, "path", str(demo_directory() / part))
