"""Where forward-pass results and converted tokenizers are kept between runs.

- Patterns and scores are :class:`headforms.store.Record` entries of the result store, keyed as
  the stores key their results (:func:`headforms.store.cache_key`, stage ``behaviour``: the
  source of ``headforms/behaviour`` and the GGUF reader): the model's fingerprint
  (:func:`.runnable.fingerprint`), the prompt or the probe's length and seed, and the versions
  of :data:`LIBRARIES` (a forward pass depends on their code too).
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

from ..store import Record, ResultStore, cache_dir, cache_key, code_version, write_atomic

if TYPE_CHECKING:
    from .outputs import AttentionPattern, HeadTypeScores
    from .tokens import TextTokenizer

LIBRARIES = ("torch", "transformers", "tokenizers", "gguf", "accelerate")
"""Libraries whose versions enter every key (their code computes the pass)."""

PATTERN_KIND = "attention"
SCORES_KIND = "head_types"


def _version(library: str) -> str:
    try:
        return metadata.version(library)
    except metadata.PackageNotFoundError:
        return "absent"


@cache
def library_versions() -> dict[str, str]:
    """The installed version of each of :data:`LIBRARIES` (``absent`` when not installed)."""
    return {library: _version(library) for library in LIBRARIES}


def _key(fingerprint: str, options: dict[str, Any]) -> str:
    return cache_key(fingerprint, {**options, "libraries": library_versions()}, "behaviour")


def pattern_key(fingerprint: str, prompt: str) -> str:
    """The store key of a prompt's attention patterns."""
    return _key(fingerprint, {"prompt": prompt})


def scores_key(fingerprint: str, probe_length: int, seed: int) -> str:
    """The store key of the head-type scores of a probe."""
    return _key(fingerprint, {"probe_length": probe_length, "seed": seed})


def get_pattern(store: ResultStore, key: str) -> AttentionPattern | None:
    """The stored pattern under ``key``, or None."""
    from .outputs import AttentionPattern

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
    from .outputs import HeadTypeScores
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
    versions = f"transformers={_version('transformers')}\0tokenizers={_version('tokenizers')}"
    code = code_version("behaviour")  # the conversion (special and added ids) is this code's
    name = hashlib.sha256(f"{fingerprint}\0{versions}\0{code}".encode()).hexdigest()
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


def stored_tokenizer_bytes(fingerprint: str) -> int | None:
    """The size of a model's converted tokenizer as stored, or None when none is (a server
    checks it before it loads one)."""
    try:
        return _tokenizer_path(fingerprint).stat().st_size
    except OSError:
        return None


def save_tokenizer(fingerprint: str, tokenizer: TextTokenizer) -> None:
    """Keep a converted tokenizer (atomically; a failure to write only costs a reconversion)."""
    try:
        write_atomic(_tokenizer_path(fingerprint), tokenizer.to_json().encode("utf-8"))
    except OSError:
        pass
