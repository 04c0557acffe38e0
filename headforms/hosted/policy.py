"""What one shared server lets strangers open: the hosted policy, handed to the sources.

Switched on by ``HEADFORMS_HOSTED=1``: :func:`policy_in_force` is then a :class:`Policy` (else
None), which the caller hands to :func:`headforms.sources.locate` (the sources never import this
module). A spec is checked twice, both times before any weight is read or downloaded:

1. :meth:`Policy.check_text` and :meth:`Policy.check_spec`, on the spec as it is classified
   (once, :func:`headforms.sources.parse_spec`): no shell metacharacters or control
   characters; bundled models always; local paths and published tables only under
   ``HEADFORMS_MODEL_ROOTS`` (``os.pathsep``-separated; no ``..``, no ``~``); hub ids only when
   ``HEADFORMS_HUB_ALLOWLIST`` allows them (comma-separated ids or ``org/*`` globs; ``*``
   allows every id; unset: no hub model).
2. :meth:`Policy.check_located`, on what :mod:`headforms.sources` located: every file the
   engine would open (config, index, each chosen weight file) lies under a root after resolving
   symbolic links, and the chosen weight files, exactly those, fit ``HEADFORMS_MAX_MODEL_BYTES``
   (default :data:`DEFAULT_MAX_BYTES`); a hub model's config and index were sized from the
   listing before they were downloaded, each within a small bound of its own. A hub file whose
   size the hub does not declare is refused. The located model then carries the byte budget its
   downloads are held to while they run (:func:`headforms.sources.fetch`) and is marked
   confined: nothing beyond the files it names is opened. A forward pass downloads more (the
   tokenizer files, the other shards): every file it reads, config and index included, is
   counted against the same limit from its declared size before anything is downloaded
   (:func:`headforms.behaviour.runnable.check_confined`), and its downloads share one budget.

While a model is located, every path is passed through :meth:`Policy.path_guard` before it is
opened, and hub listings and shard indexes are held to :data:`MAX_HUB_FILES` entries and
:data:`MAX_INDEX_BYTES` bytes. The local hub cache is kept within ``HEADFORMS_HUB_CACHE_BYTES``
(default :data:`DEFAULT_HUB_CACHE_BYTES`; least recently used repositories are deleted after
each contained computation of a hub model: analyses and forward passes alike).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import NotAllowedError
from ..settings import (
    DEFAULT_HUB_CACHE_BYTES,
    DEFAULT_MAX_BYTES,
    MAX_BYTES_ENV,
    ROOTS_ENV,
    human_bytes,
    settings,
)
from ..sources import BUNDLED_MODELS, Guard, Located, Spec, parse_spec
from ..sources.specs import MAX_SPEC_LENGTH
from .limits import Limits

MAX_INDEX_BYTES = 2 * 2**20
"""Largest shard index a hosted server parses (a 405B model's index is about 150 KiB)."""
MAX_HUB_FILES = 10_000
"""Most top-level files of a hub repository a hosted server lists."""

_NAMED_CHARACTERS = {"\0": "a NUL byte", "\n": "a newline", "\r": "a carriage return"}
SHELL_METACHARACTERS = frozenset(";|&$`<>()\\\"'*?[]{}!#")
"""Characters a shell would interpret; a model spec never needs them."""


def enabled() -> bool:
    """Whether hosted mode is on (``HEADFORMS_HOSTED`` = 1, true, yes or on)."""
    return settings().hosted


def policy_in_force() -> Policy | None:
    """The policy of this server (read from the settings now), or None when hosted mode is
    off: what a caller hands to :func:`headforms.sources.locate` and the engine."""
    return Policy.from_env() if settings().hosted else None


@dataclass(frozen=True)
class Policy:
    """The hosted-mode limits on what may be opened, as configured by the environment."""

    roots: tuple[Path, ...] = ()
    allowlist: tuple[str, ...] = ()
    max_bytes: int = DEFAULT_MAX_BYTES
    max_index_bytes: int = MAX_INDEX_BYTES
    max_hub_files: int = MAX_HUB_FILES
    hub_cache_bytes: int = DEFAULT_HUB_CACHE_BYTES

    @classmethod
    def from_env(cls) -> Policy:
        """The policy of the ``HEADFORMS_*`` settings now."""
        return cls.from_limits(Limits.from_env())

    @classmethod
    def from_limits(cls, limits: Limits) -> Policy:
        """The policy of the hosted settings ``limits``."""
        return cls(
            limits.model_roots,
            limits.hub_allowlist,
            limits.max_model_bytes,
            hub_cache_bytes=limits.hub_cache_bytes,
        )

    # --- the spec ----------------------------------------------------------------------------

    def check_text(self, spec: str) -> None:
        """Refuse a spec's text before it is classified (:class:`NotAllowedError`):
        characters, length, ``~``, ``..``."""
        if not isinstance(spec, str):
            raise NotAllowedError("the model spec must be a string")
        _check_characters(spec)
        spec = spec.strip()
        if spec in BUNDLED_MODELS:
            return
        if spec.startswith("~"):
            raise NotAllowedError(
                "home-directory paths ('~') are not accepted on this server; give a path under "
                + self.roots_text()
            )
        if ".." in spec.replace("\\", "/").split("/"):
            raise NotAllowedError(
                "path traversal ('..') is not accepted on this server; give a path under "
                + self.roots_text()
            )

    def check_spec(self, spec: Spec) -> None:
        """Refuse a classified spec this server does not serve (:class:`NotAllowedError`):
        local paths and tables outside the roots, hub ids off the allow-list."""
        if spec.kind == "bundled":
            return
        if spec.kind in ("path", "table"):
            self.within_roots(Path(spec.value), spec.text)
            return
        if not self.allowlist:
            raise NotAllowedError(
                "hub models are disabled on this server; use a bundled model "
                f"({', '.join(BUNDLED_MODELS)})" + (" or a local path" if self.roots else "")
            )
        if not any(_allows(p, spec.value, spec.revision) for p in self.allowlist):
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

    def parse(self, spec: str) -> Spec:
        """The spec as this server classifies it, or its refusal."""
        return parse_spec(spec, self)

    # --- paths -------------------------------------------------------------------------------

    def path_guard(self, spec: str) -> Guard:
        """A guard refusing any path outside the roots (called before each path is opened)."""

        def guard(path: Path) -> None:
            self.within_roots(path, spec)

        return guard

    def within_roots(self, path: Path, spec: str) -> Path:
        """The real path of ``path`` if it lies under a root, else a specific refusal."""
        if not self.roots:
            raise NotAllowedError(
                f"local paths are disabled on this server ({ROOTS_ENV} is not set); use a "
                "bundled model" + (" or an allowed hub id" if self.allowlist else "")
            )
        lexical = Path(os.path.abspath(path))
        real = Path(os.path.realpath(path))
        if _inside(real, self.roots):
            return real
        if _inside(lexical, self.roots):
            raise NotAllowedError(
                f"{spec} leads outside the allowed model directories through a symbolic link "
                f"({Path(path).name}); allowed: {self.roots_text()}"
            )
        raise NotAllowedError(
            f"{spec} is outside the model directories this server allows: {self.roots_text()}"
        )

    def roots_text(self) -> str:
        """The allowed model directories as a visitor reads them."""
        if not self.roots:
            return f"no local path (none is allowed: {ROOTS_ENV} is not set)"
        return " or ".join(str(r) for r in self.roots)

    # --- what was located --------------------------------------------------------------------

    def check_located(self, located: Located) -> Located:
        """The located model, confined and with its download budget, unless its files leave
        the roots or exceed the size limit (then a :class:`NotAllowedError`)."""
        if located.kind == "bundled":
            return located
        if located.hub is None:
            for f in (located.config_file, located.index_file, *located.weights):
                if f is not None and f.path is not None:
                    self.within_roots(f.path, located.spec)
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
        return located.with_files(download_budget=self.max_bytes, confined=True)


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


def _inside(path: Path, roots: tuple[Path, ...]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)
