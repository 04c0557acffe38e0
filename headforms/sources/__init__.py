"""Model specs -> located files and a content fingerprint, before any weight is read.

:func:`parse_spec` classifies a spec once (:mod:`.specs`) under the policy the caller hands in
(:mod:`.policy`: everything allowed, or a shared server's rules); :func:`locate` finds the
model's files (:mod:`.bundled`, :mod:`.local`, :mod:`.hub`; a published table is one more
kind), chooses the weight files to read (:mod:`.files`, the one choice) and fingerprints them,
holding every path and the files found to that policy. The :class:`Located` value it returns
travels on: opening the files is the next stage's work (:mod:`headforms.models.source`).
"""

from __future__ import annotations

from pathlib import Path

from .bundled import BUNDLED_MODELS, DEFAULT_MODEL, BundledModel
from .files import choose_weight_files, files_fingerprint, open_regular
from .hub import fetch_hub_files, locate_hub
from .local import locate_path, locate_table
from .located import TABLE_FORMAT, HubLocation, Located, LocatedFile
from .policy import OPEN, Policy
from .specs import HUB_ID_PATTERN, MAX_SPEC_LENGTH, Spec, parse_spec, table_spec

__all__ = [
    "BUNDLED_MODELS",
    "DEFAULT_MODEL",
    "HUB_ID_PATTERN",
    "MAX_SPEC_LENGTH",
    "OPEN",
    "TABLE_FORMAT",
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
    "table_spec",
]


def locate(spec: str | Spec, policy: Policy | None = None) -> Located:
    """Find a model's files and fingerprint them (config and index are the only files read).

    ``spec``: a spec's text, classified here under ``policy`` (default :data:`OPEN`), or a
    :class:`Spec` already classified, which keeps the policy it was checked by.
    """
    if isinstance(spec, Spec):
        if policy is not None and policy is not spec.policy:
            raise ValueError("a parsed Spec is located under the policy it was checked by")
        parsed = spec
    else:
        parsed = parse_spec(spec, policy or OPEN)
    policy = parsed.policy
    if parsed.kind == "bundled":
        model = BUNDLED_MODELS[parsed.value]
        located = locate_path(model.locate(), parsed.text, "bundled", model.title)
    elif parsed.kind == "path":
        located = locate_path(Path(parsed.value), parsed.text, guard=policy.guard(parsed))
    elif parsed.kind == "table":
        guard = policy.guard(parsed)
        located = locate_table(Path(parsed.value), parsed.text, parsed.model, guard=guard)
    else:
        located = locate_hub(parsed.text, parsed.value, parsed.revision)
    policy.check_located(located)
    return located.with_files(policy=policy)


def fetch(located: Located) -> Located:
    """The located model with every weight file on this machine (hub files downloaded, within
    its policy's download budget)."""
    if located.hub is None or all(f.path is not None for f in located.weights):
        return located
    return fetch_hub_files(located, located.policy.download_budget)
