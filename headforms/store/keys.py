"""The store keys: what names a stored result, for each of the two stages.

A key names a result by everything it depends on and a hash of the source of the code that
computes it (:func:`code_version` of its stage): a change to that code changes its keys, so
entries computed by older code are never served (they age out of the store).

- Extraction (:func:`factors_key`): the weights' fingerprint and :data:`EXTRACTION_CODE`
  (readers, models, the architecture table, the factor format).
- Forms (:func:`metrics_key`): the factors' key, the options that change the numbers and
  :data:`FORMS_CODE` (the algebra, the per-head table, the card, the result format). A new
  metric or RoPE position changes only these keys: it is computed from stored factors.
- Forward passes (:mod:`headforms.behaviour.cache`): the model's fingerprint, the prompt or
  probe, the versions of the libraries that run the pass and :data:`BEHAVIOUR_CODE`.
- Interventions (:mod:`headforms.interventions.run`): the model's fingerprint, the request, the
  libraries' versions and :data:`INTERVENTIONS_CODE`.
- Score splits (:mod:`headforms.why.run`): the same, with :data:`WHY_CODE`.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any, Literal

PACKAGE_ROOT = Path(__file__).resolve().parents[1]

Stage = Literal["extraction", "forms", "behaviour", "interventions", "why"]

EXTRACTION_CODE = (
    "architectures.py",
    "factors.py",
    "models",
    "readers",
    "store/factors.py",
)
"""Paths (relative to the package) of the code that extracts and stores factors."""

FORMS_CODE = (
    "baseline.py",
    "card.py",
    "columns.py",
    "engine.py",
    "factors.py",
    "forms.py",
    "head_paths.py",
    "heads.py",
    "model_analysis.py",
    "options.py",
    "store/records.py",
    "streaming.py",
    "sweeps.py",
)
"""Paths (relative to the package) of the code that computes and encodes forms and metrics."""

BEHAVIOUR_CODE = ("behaviour", "readers/gguf.py")
"""Paths (relative to the package) of the code a forward pass's results depend on."""

INTERVENTIONS_CODE = (
    "interventions",
    "behaviour",
    "readers/gguf.py",
    "architectures.py",
    "factors.py",
    "models",
    "heads.py",
    "forms.py",
    "options.py",
)
"""Paths of the code an intervention's results depend on: its own, the forward pass's, the
extraction of the factors it edits and the forms stage (parity groups, edited profiles)."""

WHY_CODE = ("why", *INTERVENTIONS_CODE)
"""Paths of the code a score split depends on: its own, and what an intervention's results
depend on (the hooks, the anatomy and the algebra it reuses, the pass, the factors, the forms)."""

STAGE_CODE: dict[str, tuple[str, ...]] = {
    "extraction": EXTRACTION_CODE,
    "forms": FORMS_CODE,
    "behaviour": BEHAVIOUR_CODE,
    "interventions": INTERVENTIONS_CODE,
    "why": WHY_CODE,
}


@cache
def code_version(stage: Stage) -> str:
    """SHA-256 of the source of a stage's code (every ``.py`` file, in path order)."""
    digest = hashlib.sha256()
    files: list[Path] = []
    for entry in STAGE_CODE[stage]:
        path = PACKAGE_ROOT / entry
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    for path in files:
        digest.update(path.relative_to(PACKAGE_ROOT).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def cache_key(subject: str, options: dict[str, Any], stage: Stage = "forms") -> str:
    """The key of a result: ``subject`` (what the result is of: factors' key, weights'
    fingerprint, a baseline's shapes), the options that change it, and its stage's code."""
    blob = json.dumps(
        {"code": code_version(stage), "subject": subject, "options": options},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def factors_key(fingerprint: str) -> str:
    """The key of a model's extracted factors (the weights' fingerprint, the extraction code)."""
    return cache_key(fingerprint, {}, "extraction")


def metrics_key(fingerprint: str, options: dict[str, Any]) -> str:
    """The key of a model's forms and metrics at ``options`` (see the module doc)."""
    return cache_key(factors_key(fingerprint), options, "forms")
