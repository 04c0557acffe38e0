"""Where forward-pass results and converted tokenizers are kept between runs (one module, so it
can follow the store's design).

- Patterns and scores are :class:`headforms.store.Record` entries of the result store, under
  :func:`headforms.store.cache_key` of the model's fingerprint (:func:`.runnable.fingerprint`)
  and the options: the prompt, or the probe's length and seed, and :func:`code_version` (this
  package's source, headforms' GGUF reader, and the versions of torch, transformers, tokenizers
  and gguf: a forward pass depends on all of them).
- Tokenizers are one JSON file each under ``tokenizers/`` of the cache directory, keyed by the
  fingerprint and transformers' version, written atomically.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..store import Record, ResultStore, cache_dir, cache_key, write_atomic
from ..store.keys import PACKAGE_ROOT

if TYPE_CHECKING:
    from .results import AttentionPattern, HeadTypeScores
    from .tokens import TextTokenizer

BEHAVIOUR_CODE = ("behaviour", "readers/gguf.py")
"""Paths (relative to the package) of the code a forward pass's results depend on."""
LIBRARIES = ("torch", "transformers", "tokenizers", "gguf", "accelerate")
"""Libraries whose versions enter every key (their code computes the pass)."""

PATTERN_KIND = "attention"
SCORES_KIND = "head_types"


@cache
def code_version() -> str:
    """SHA-256 of :data:`BEHAVIOUR_CODE`'s source and of :data:`LIBRARIES`' versions."""
    digest = hashlib.sha256()
    for entry in BEHAVIOUR_CODE:
        path = PACKAGE_ROOT / entry
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            digest.update(file.relative_to(PACKAGE_ROOT).as_posix().encode() + b"\0")
            digest.update(file.read_bytes() + b"\0")
    for library in LIBRARIES:
        try:
            version = metadata.version(library)
        except metadata.PackageNotFoundError:
            version = "absent"
        digest.update(f"{library}={version}\0".encode())
    return digest.hexdigest()


def pattern_key(fingerprint: str, prompt: str) -> str:
    """The store key of a prompt's attention patterns."""
    return cache_key(fingerprint, {"behaviour": code_version(), "prompt": prompt})


def scores_key(fingerprint: str, probe_length: int, seed: int) -> str:
    """The store key of the head-type scores of a probe."""
    options = {"behaviour": code_version(), "probe_length": probe_length, "seed": seed}
    return cache_key(fingerprint, options)


def get_pattern(store: ResultStore, key: str) -> AttentionPattern | None:
    """The stored pattern under ``key``, or None."""
    from .results import AttentionPattern

    record = store.get(key, PATTERN_KIND)
    if record is None:
        return None
    try:
        meta = dict(record.meta)
        return AttentionPattern(
            model=str(meta.pop("model")),
            fingerprint=str(meta.pop("fingerprint")),
            token_ids=[int(i) for i in meta.pop("token_ids")],
            tokens=[str(t) for t in meta.pop("tokens")],
            pieces=[str(t) for t in meta.pop("pieces")],
            weights=record.arrays["weights"],
            scores=record.arrays.get("scores"),
            meta=meta,
        )
    except (KeyError, TypeError, ValueError):
        store.delete(key)
        return None


def put_pattern(store: ResultStore, key: str, pattern: AttentionPattern) -> None:
    """Store a pattern (weights and, when tapped, scores)."""
    arrays = {"weights": pattern.weights}
    if pattern.scores is not None:
        arrays["scores"] = pattern.scores
    meta: dict[str, Any] = {
        **pattern.meta,
        "model": pattern.model,
        "fingerprint": pattern.fingerprint,
        "token_ids": list(pattern.token_ids),
        "tokens": list(pattern.tokens),
        "pieces": list(pattern.pieces),
    }
    store.put(key, Record(PATTERN_KIND, meta, arrays=arrays))


def get_scores(store: ResultStore, key: str) -> HeadTypeScores | None:
    """The stored head-type scores under ``key``, or None."""
    from .results import HeadTypeScores
    from .scores import SCORE_COLUMNS

    record = store.get(key, SCORES_KIND)
    if record is None:
        return None
    try:
        meta = dict(record.meta)
        columns = record.tables["heads"]
        missing = {"layer", "head", *SCORE_COLUMNS} - set(columns)
        if missing:
            raise KeyError(sorted(missing)[0])
        return HeadTypeScores(str(meta.pop("model")), str(meta.pop("fingerprint")), columns, meta)
    except (KeyError, TypeError, ValueError):
        store.delete(key)
        return None


def put_scores(store: ResultStore, key: str, scores: HeadTypeScores) -> None:
    """Store head-type scores."""
    meta = {**scores.meta, "model": scores.model, "fingerprint": scores.fingerprint}
    columns = {name: np.asarray(values) for name, values in scores.columns.items()}
    store.put(key, Record(SCORES_KIND, meta, tables={"heads": columns}))


def _tokenizer_path(fingerprint: str) -> Path:
    try:
        version = metadata.version("transformers")
    except metadata.PackageNotFoundError:
        version = "absent"
    name = hashlib.sha256(f"{fingerprint}\0transformers={version}".encode()).hexdigest()
    return cache_dir() / "tokenizers" / f"{name}.json"


def load_tokenizer(fingerprint: str) -> TextTokenizer | None:
    """The converted tokenizer of a model, or None (never converted, or unreadable)."""
    from .tokens import TextTokenizer

    path = _tokenizer_path(fingerprint)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    found = TextTokenizer.from_json(text)
    if found is None:
        path.unlink(missing_ok=True)
    return found


def save_tokenizer(fingerprint: str, tokenizer: TextTokenizer) -> None:
    """Keep a converted tokenizer (atomically; a failure to write only costs a reconversion)."""
    try:
        write_atomic(_tokenizer_path(fingerprint), tokenizer.to_json().encode("utf-8"))
    except OSError:
        pass
