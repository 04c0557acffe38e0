"""Hosted mode: what one shared server lets strangers open.

Switched on by ``HEADFORMS_HOSTED=1``. A spec is checked twice, both times before any weight is
read or downloaded:

1. :func:`check_spec`, on the text: no shell metacharacters or control characters; bundled
   models always; local paths only under ``HEADFORMS_MODEL_ROOTS`` (``os.pathsep``-separated;
   no ``..``, no ``~``); hub ids only when ``HEADFORMS_HUB_ALLOWLIST`` allows them
   (comma-separated ids or ``org/*`` globs; ``*`` allows every id; unset: no hub model).
2. :func:`check_located`, on what :mod:`headforms.sources` located: every file the engine would
   open (config, index, each chosen weight file) lies under a root after resolving symbolic
   links, and the chosen weight files, exactly those, fit ``HEADFORMS_MAX_MODEL_BYTES`` (default
   :data:`DEFAULT_MAX_BYTES`). A hub file whose size the hub does not declare is refused.
   Downloads are held to the same budget while they run
   (:func:`headforms.sources.hub.fetch_hub_files`).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path

from ..env import env_flag, human_bytes
from ..errors import NotAllowedError
from .bundled import BUNDLED_MODELS
from .located import Located
from .specs import MAX_SPEC_LENGTH, parse_spec

HOSTED_ENV = "HEADFORMS_HOSTED"
ROOTS_ENV = "HEADFORMS_MODEL_ROOTS"
ALLOWLIST_ENV = "HEADFORMS_HUB_ALLOWLIST"
MAX_BYTES_ENV = "HEADFORMS_MAX_MODEL_BYTES"

DEFAULT_MAX_BYTES = 2 * 2**30
"""Weight bytes allowed per model in hosted mode when ``HEADFORMS_MAX_MODEL_BYTES`` is unset."""

_NAMED_CHARACTERS = {"\0": "a NUL byte", "\n": "a newline", "\r": "a carriage return"}
SHELL_METACHARACTERS = frozenset(";|&$`<>()\\\"'*?[]{}!#")
"""Characters a shell would interpret; a model spec never needs them."""


def enabled() -> bool:
    """Whether hosted mode is on (``HEADFORMS_HOSTED`` = 1, true, yes or on)."""
    return env_flag(HOSTED_ENV)


@dataclass(frozen=True)
class Policy:
    """The hosted-mode limits, as configured by the environment."""

    roots: tuple[Path, ...] = ()
    allowlist: tuple[str, ...] = ()
    max_bytes: int = DEFAULT_MAX_BYTES

    @classmethod
    def from_env(cls) -> Policy:
        """Read the policy from the ``HEADFORMS_*`` environment variables."""
        roots = tuple(
            Path(os.path.realpath(os.path.expanduser(r.strip())))
            for r in os.environ.get(ROOTS_ENV, "").split(os.pathsep)
            if r.strip()
        )
        allowlist = tuple(
            a.strip() for a in os.environ.get(ALLOWLIST_ENV, "").split(",") if a.strip()
        )
        raw = os.environ.get(MAX_BYTES_ENV, "").strip()
        try:
            max_bytes = int(raw) if raw else DEFAULT_MAX_BYTES
        except ValueError as exc:
            raise NotAllowedError(
                f"{MAX_BYTES_ENV}={raw!r} is not a whole number of bytes (server configuration)"
            ) from exc
        return cls(roots, allowlist, max_bytes)


def check_spec(spec: str, policy: Policy | None = None) -> None:
    """Refuse a spec's text that this server does not serve (:class:`NotAllowedError`)."""
    policy = policy or Policy.from_env()
    if not isinstance(spec, str):
        raise NotAllowedError("the model spec must be a string")
    _check_characters(spec)
    spec = spec.strip()
    if spec in BUNDLED_MODELS:
        return
    if spec.startswith("~"):
        raise NotAllowedError(
            "home-directory paths ('~') are not accepted on this server; give a path under "
            + _roots_text(policy)
        )
    if ".." in spec.replace("\\", "/").split("/"):
        raise NotAllowedError(
            "path traversal ('..') is not accepted on this server; give a path under "
            + _roots_text(policy)
        )
    parsed = parse_spec(spec)
    if parsed.kind == "path":
        within_roots(Path(parsed.value), spec, policy)
        return
    if not policy.allowlist:
        raise NotAllowedError(
            "hub models are disabled on this server; use a bundled model "
            f"({', '.join(BUNDLED_MODELS)})" + (" or a local path" if policy.roots else "")
        )
    if not any(_allows(pattern, parsed.value, parsed.revision) for pattern in policy.allowlist):
        raise NotAllowedError(
            f"hub model {spec!r} is not allowed on this server; allowed: "
            f"{', '.join(policy.allowlist)} (and the bundled models: {', '.join(BUNDLED_MODELS)})"
            + (
                "; a revision other than main needs an entry naming it (e.g. 'org/name@*')"
                if parsed.revision not in (None, "main")
                else ""
            )
        )


def _allows(pattern: str, repo_id: str, revision: str | None) -> bool:
    """Whether an allow-list entry admits ``repo_id`` at ``revision``: ``org/*`` admits its
    repositories at their main branch only (each revision is another download, so a visitor
    could otherwise fill the disk with one repository's history); ``org/*@*`` admits any."""
    repo_pattern, at, revision_pattern = pattern.lower().partition("@")
    if not fnmatch.fnmatchcase(repo_id.lower(), repo_pattern):
        return False
    if not at:
        return revision in (None, "main")
    return fnmatch.fnmatchcase((revision or "main").lower(), revision_pattern)


def check_located(located: Located, policy: Policy | None = None) -> None:
    """Refuse a located model whose files leave the roots or exceed the size limit."""
    policy = policy or Policy.from_env()
    if located.kind == "bundled":
        return
    if located.hub is None:
        for f in (located.config_file, located.index_file, *located.weights):
            if f is not None and f.path is not None:
                within_roots(f.path, located.spec, policy)
    size = located.weight_bytes
    if size is None:
        unknown = [f.name for f in located.weights if f.size is None]
        raise NotAllowedError(
            f"{located.spec!r}: the size of {', '.join(unknown)} is not declared, so this server "
            "cannot check it against its limit; refused"
        )
    if size > policy.max_bytes:
        raise NotAllowedError(
            f"{located.spec!r} has {human_bytes(size)} of weights to read, more than this "
            f"server's limit of {human_bytes(policy.max_bytes)} ({MAX_BYTES_ENV}); nothing was "
            "downloaded or read"
        )


def download_budget(policy: Policy | None = None) -> int:
    """Bytes a hosted analysis may download in all."""
    return (policy or Policy.from_env()).max_bytes


def _check_characters(spec: str) -> None:
    if len(spec) > MAX_SPEC_LENGTH:
        raise NotAllowedError(
            f"model spec is {len(spec)} characters long (at most {MAX_SPEC_LENGTH})"
        )
    for char in spec:
        if char in _NAMED_CHARACTERS:
            what = _NAMED_CHARACTERS[char]
        elif char in SHELL_METACHARACTERS:
            what = f"the shell metacharacter {char!r}"
        elif ord(char) < 32 or ord(char) == 127:
            what = f"the control character {char!r}"
        else:
            continue
        raise NotAllowedError(
            f"model spec contains {what}; accepted: a bundled name, a path under the model "
            "directories or a hub id (letters, digits, '.', '_', '-', '/', '@')"
        )


def _roots_text(policy: Policy) -> str:
    if not policy.roots:
        return f"no local path (none is allowed: {ROOTS_ENV} is not set)"
    return " or ".join(str(r) for r in policy.roots)


def _inside(path: Path, roots: tuple[Path, ...]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def within_roots(path: Path, spec: str, policy: Policy) -> Path:
    """The real path of ``path`` if it lies under a root, else a specific refusal."""
    if not policy.roots:
        raise NotAllowedError(
            f"local paths are disabled on this server ({ROOTS_ENV} is not set); use a bundled "
            "model" + (" or an allowed hub id" if policy.allowlist else "")
        )
    lexical = Path(os.path.abspath(path))
    real = Path(os.path.realpath(path))
    if _inside(real, policy.roots):
        return real
    if _inside(lexical, policy.roots):
        raise NotAllowedError(
            f"{spec} leads outside the allowed model directories through a symbolic link "
            f"({Path(path).name}); allowed: {_roots_text(policy)}"
        )
    raise NotAllowedError(
        f"{spec} is outside the model directories this server allows: {_roots_text(policy)}"
    )
