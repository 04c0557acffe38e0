"""Model specs -> located files and a content fingerprint, before any weight is read.

:func:`parse_spec` classifies a spec once (:mod:`.specs`), under the policy the caller hands in
(:mod:`.policy`; a hosted server's, :mod:`headforms.hosted.policy`: this package never imports
it); :func:`locate` finds the model's files (:mod:`.bundled`, :mod:`.local`, :mod:`.hub`; a
published table is one more kind), chooses the weight files to read (:mod:`.files`, the one
choice) and fingerprints them, holding every path and the files found to that policy. The
:class:`Located` value it returns travels on: opening the files is the next stage's work
(:mod:`headforms.models.source`), in this process or in a worker's.
"""

from __future__ import annotations

from pathlib import Path

from .bundled import BUNDLED_MODELS, DEFAULT_MODEL, BundledModel
from .files import MAX_INDEX_BYTES, choose_weight_files, files_fingerprint, open_regular
from .hub import MAX_HUB_FILES, fetch_hub_files, locate_hub
from .local import locate_path, locate_table
from .located import TABLE_FORMAT, HubLocation, Located, LocatedFile
from .policy import Guard, Policy, allow
from .specs import HUB_ID_PATTERN, MAX_SPEC_LENGTH, Spec, parse_spec, table_spec

__all__ = [
    "BUNDLED_MODELS",
    "DEFAULT_MODEL",
    "HUB_ID_PATTERN",
    "MAX_SPEC_LENGTH",
    "TABLE_FORMAT",
    "BundledModel",
    "Guard",
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
    "table_spec",
]


def locate(spec: str | Spec, policy: Policy | None = None) -> Located:
    """Find a model's files and fingerprint them (config and index are the only files read),
    within ``policy`` when one is given (its refusals before anything is read).

    ``spec``: a spec's text, classified here, or a :class:`Spec` already classified (by
    :func:`parse_spec`), which is located under the policy it was checked by.
    """
    if isinstance(spec, Spec):
        if policy is not None and policy is not spec.policy:
            raise ValueError("a parsed Spec is located under the policy it was checked by")
        parsed = spec
    else:
        parsed = parse_spec(spec, policy)
    policy = parsed.policy
    guard: Guard = allow if policy is None else policy.path_guard(parsed.text)
    index_bytes = MAX_INDEX_BYTES if policy is None else policy.max_index_bytes
    if parsed.kind == "bundled":
        model = BUNDLED_MODELS[parsed.value]
        located = locate_path(model.locate(), parsed.text, "bundled", model.title)
    elif parsed.kind == "path":
        located = locate_path(
            Path(parsed.value), parsed.text, guard=guard, max_index_bytes=index_bytes
        )
    elif parsed.kind == "table":
        located = locate_table(Path(parsed.value), parsed.text, parsed.model, guard=guard)
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
