"""Model specs -> located files and a content fingerprint, before any weight is read.

:func:`locate` classifies a spec (:mod:`.specs`), finds the model's files (:mod:`.bundled`,
:mod:`.local`, :mod:`.hub`), chooses the weight files to read (:mod:`.files`, the one
choice) and fingerprints them; in hosted mode (:mod:`.hosted`) it refuses what the server's
policy forbids, on the spec's text first and on the located files second. Opening the files is
the next stage's work (:mod:`headforms.models.source`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from . import hosted
from .bundled import BUNDLED_MODELS, DEFAULT_MODEL, BundledModel
from .files import choose_weight_files, files_fingerprint, open_regular
from .hub import fetch_hub_files, locate_hub
from .local import locate_path
from .located import HubLocation, Located, LocatedFile
from .specs import HUB_ID_PATTERN, MAX_SPEC_LENGTH, Spec, parse_spec

__all__ = [
    "BUNDLED_MODELS",
    "DEFAULT_MODEL",
    "HUB_ID_PATTERN",
    "MAX_SPEC_LENGTH",
    "BundledModel",
    "HubLocation",
    "Located",
    "LocatedFile",
    "Spec",
    "choose_weight_files",
    "fetch",
    "files_fingerprint",
    "locate",
    "open_regular",
    "parse_spec",
]


def locate(spec: str) -> Located:
    """Find a model's files and fingerprint them (config and index are the only files read)."""
    policy = None
    if hosted.enabled():  # a shared server: refuse what its policy forbids, before any read
        policy = hosted.Policy.from_env()
        hosted.check_spec(spec, policy)
    parsed = parse_spec(spec)
    if parsed.kind == "bundled":
        model = BUNDLED_MODELS[parsed.value]
        located = locate_path(model.locate(), parsed.text, "bundled", model.title)
    elif parsed.kind == "path":
        if policy is None:
            located = locate_path(Path(parsed.value), parsed.text)
        else:
            guard = _roots_guard(parsed.text, policy)
            located = locate_path(Path(parsed.value), parsed.text, guard=guard)
    else:
        located = locate_hub(parsed.text, parsed.value, parsed.revision)
    if policy is not None:
        hosted.check_located(located, policy)
    return located


def fetch(located: Located) -> Located:
    """The located model with every weight file on this machine (hub files downloaded; in
    hosted mode within the server's byte budget)."""
    if located.hub is None or all(f.path is not None for f in located.weights):
        return located
    budget = hosted.download_budget() if hosted.enabled() else None
    return fetch_hub_files(located, budget)


def _roots_guard(spec: str, policy: hosted.Policy) -> Callable[[Path], None]:
    """A guard refusing any path outside the hosted model roots (before it is opened)."""

    def guard(path: Path) -> None:
        hosted.within_roots(path, spec, policy)

    return guard
