"""Model specs -> located files and a content fingerprint, before any weight is read.

:func:`locate` classifies a spec (:mod:`.specs`), finds the model's files (:mod:`.bundled`,
:mod:`.local`, :mod:`.hub`), chooses the weight files to read (:mod:`.files`, the one
choice) and fingerprints them. A caller's :class:`Policy` (a hosted server's,
:mod:`headforms.hosted.policy`; this package never imports it) is applied while locating: on
the spec's text first, to every path before it is opened, and on the located files second.
Opening the files is the next stage's work (:mod:`headforms.models.source`).
"""

from __future__ import annotations

from pathlib import Path

from .bundled import BUNDLED_MODELS, DEFAULT_MODEL, BundledModel
from .files import MAX_INDEX_BYTES, choose_weight_files, files_fingerprint, open_regular
from .hub import MAX_HUB_FILES, fetch_hub_files, locate_hub
from .local import locate_path
from .located import HubLocation, Located, LocatedFile, Policy
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
    "Policy",
    "Spec",
    "choose_weight_files",
    "fetch",
    "files_fingerprint",
    "locate",
    "open_regular",
    "parse_spec",
]


def locate(spec: str, policy: Policy | None = None) -> Located:
    """Find a model's files and fingerprint them (config and index are the only files read),
    within ``policy`` when one is given (its refusals before anything is read)."""
    if policy is not None:
        policy.check_spec(spec)
    parsed = parse_spec(spec, probe=policy is None)
    index_bytes = MAX_INDEX_BYTES if policy is None else policy.max_index_bytes
    if parsed.kind == "bundled":
        model = BUNDLED_MODELS[parsed.value]
        located = locate_path(model.locate(), parsed.text, "bundled", model.title)
    elif parsed.kind == "path":
        guard = {} if policy is None else {"guard": policy.path_guard(parsed.text)}
        located = locate_path(Path(parsed.value), parsed.text, max_index_bytes=index_bytes, **guard)
    else:
        files = MAX_HUB_FILES if policy is None else policy.max_hub_files
        located = locate_hub(parsed.text, parsed.value, parsed.revision, index_bytes, files)
    return located if policy is None else policy.check_located(located)


def fetch(located: Located) -> Located:
    """The located model with every weight file on this machine (hub files downloaded, within
    the byte budget its policy gave it)."""
    if located.hub is None or all(f.path is not None for f in located.weights):
        return located
    return fetch_hub_files(located, located.download_budget)
