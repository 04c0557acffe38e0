"""Hosted mode: what one shared server lets strangers open.

Switched on by ``HEADFORMS_HOSTED=1``; the caller hands :class:`Policy` to
:func:`headforms.sources.parse_spec` / :func:`~headforms.sources.locate`, which apply it before
any weight is read or downloaded:

1. :meth:`Policy.check_text` and :meth:`Policy.check_spec`, on the spec: no shell
   metacharacters or control characters; bundled models always; local paths and tables only
   under ``HEADFORMS_MODEL_ROOTS`` (``os.pathsep``-separated; no ``..``, no ``~``); hub ids only
   when ``HEADFORMS_HUB_ALLOWLIST`` allows them (comma-separated ids or ``org/*`` globs; ``*``
   allows every id; unset: no hub model).
2. :meth:`Policy.check_located`, on what was located: every file the engine would open
   (config, index, each chosen weight file) lies under a root after resolving symbolic links,
   and the chosen files, exactly those, fit ``HEADFORMS_MAX_MODEL_BYTES`` (default
   :data:`~headforms.settings.DEFAULT_MAX_BYTES`). A hub file whose size the hub does not
   declare is refused. Downloads are held to the same budget while they run
   (:func:`headforms.sources.hub.fetch_hub_files`).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ..errors import NotAllowedError
from ..settings import (
    ALLOWLIST_ENV,
    DEFAULT_MAX_BYTES,
    HOSTED_ENV,
    MAX_BYTES_ENV,
    ROOTS_ENV,
    Settings,
    human_bytes,
    settings,
)
from .bundled import BUNDLED_MODELS
from .located import Located
from .policy import Guard, allow
from .specs import MAX_SPEC_LENGTH, Spec, parse_spec

__all__ = ["ALLOWLIST_ENV", "HOSTED_ENV", "MAX_BYTES_ENV", "ROOTS_ENV", "Policy"]

_NAMED_CHARACTERS = {"\0": "a NUL byte", "\n": "a newline", "\r": "a carriage return"}
SHELL_METACHARACTERS = frozenset(";|&$`<>()\\\"'*?[]{}!#")
"""Characters a shell would interpret; a model spec never needs them."""


def enabled() -> bool:
    """Whether hosted mode is on (``HEADFORMS_HOSTED`` = 1, true, yes or on)."""
    return settings().hosted


@dataclass(frozen=True)
class Policy:
    """The hosted-mode limits, as configured by the environment; a
    :class:`headforms.sources.policy.Policy` that :func:`headforms.sources.locate` applies."""

    roots: tuple[Path, ...] = ()
    allowlist: tuple[str, ...] = ()
    max_bytes: int = DEFAULT_MAX_BYTES

    probe_paths: ClassVar[bool] = False
    confined: ClassVar[bool] = True

    @classmethod
    def from_env(cls) -> Policy:
        """The policy of the ``HEADFORMS_*`` variables set now."""
        return cls.from_settings(settings())

    @classmethod
    def from_settings(cls, values: Settings) -> Policy:
        """The policy of ``values``."""
        return cls(values.model_roots, values.hub_allowlist, values.max_model_bytes)

    @property
    def download_budget(self) -> int | None:
        """Bytes a hosted analysis may download in all."""
        return self.max_bytes

    def check_text(self, spec: str) -> None:
        """Refuse a spec's text before it is classified: characters, length, ``~``, ``..``."""
        if not isinstance(spec, str):
            raise NotAllowedError("the model spec must be a string")
        _check_characters(spec)
        spec = spec.strip()
        if spec in BUNDLED_MODELS:
            return
        if spec.startswith("~"):
            raise NotAllowedError(
                "home-directory paths ('~') are not accepted on this server; give a path under "
                + _roots_text(self)
            )
        if ".." in spec.replace("\\", "/").split("/"):
            raise NotAllowedError(
                "path traversal ('..') is not accepted on this server; give a path under "
                + _roots_text(self)
            )

    def check_spec(self, spec: Spec) -> None:
        """Refuse a classified spec this server does not serve: local paths and tables outside
        the roots, hub ids off the allow-list."""
        if spec.kind == "bundled":
            return
        if spec.kind in ("path", "table"):
            within_roots(Path(spec.value), spec.text, self)
            return
        if not self.allowlist:
            raise NotAllowedError(
                "hub models are disabled on this server; use a bundled model "
                f"({', '.join(BUNDLED_MODELS)})" + (" or a local path" if self.roots else "")
            )
        if not any(_allows(pattern, spec.value, spec.revision) for pattern in self.allowlist):
            raise NotAllowedError(
                f"hub model {spec.text!r} is not allowed on this server; allowed: "
                f"{', '.join(self.allowlist)} (and the bundled models: "
                f"{', '.join(BUNDLED_MODELS)})"
                + (
                    "; a revision other than main needs an entry naming it (e.g. 'org/name@*')"
                    if spec.revision not in (None, "main")
                    else ""
                )
            )

    def guard(self, spec: Spec) -> Guard:
        """Refuse any path outside the roots, before it is opened (bundled models: none)."""
        if spec.kind == "bundled":
            return allow

        def guard(path: Path) -> None:
            within_roots(path, spec.text, self)

        return guard

    def check_located(self, located: Located) -> None:
        """Refuse a located model whose files leave the roots or exceed the size limit."""
        if located.kind == "bundled":
            return
        if located.hub is None:
            for f in (located.config_file, located.index_file, *located.weights):
                if f is not None and f.path is not None:
                    within_roots(f.path, located.spec, self)
        size = located.weight_bytes
        if size is None:
            unknown = [f.name for f in located.weights if f.size is None]
            raise NotAllowedError(
                f"{located.spec!r}: the size of {', '.join(unknown)} is not declared, so this "
                "server cannot check it against its limit; refused"
            )
        if size > self.max_bytes:
            raise NotAllowedError(
                f"{located.spec!r} has {human_bytes(size)} of weights to read, more than this "
                f"server's limit of {human_bytes(self.max_bytes)} ({MAX_BYTES_ENV}); nothing "
                "was downloaded or read"
            )


def check_spec(spec: str, policy: Policy | None = None) -> Spec:
    """The spec as this server classifies it, or a refusal (:class:`NotAllowedError`)."""
    return parse_spec(spec, policy or Policy.from_env())


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
