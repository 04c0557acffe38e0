"""A located model: which files hold it, how big they are, and its content fingerprint.

Locating reads at most the config and a shard index (never weights), so a cache lookup can
happen before anything heavy is opened: locate -> fingerprint -> cache -> open.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol


@dataclass(frozen=True)
class LocatedFile:
    """One file of a model: ``name`` relative to its root, ``size`` in bytes (None: unknown),
    ``path`` on this machine (None: on the hub, not downloaded)."""

    name: str
    size: int | None
    path: Path | None = None


@dataclass(frozen=True)
class HubLocation:
    """Where a hub model lives: repository id, the revision asked for, and the resolved commit."""

    repo_id: str
    revision: str | None
    commit: str
    offline: bool = False


@dataclass(frozen=True)
class Located:
    """A model found but not opened.

    ``kind``: ``bundled``, ``local``, ``gguf`` or ``hub``. ``format``: ``safetensors``, ``bin``
    or ``gguf``. ``weights``: the weight files the engine reads (the one choice of
    :func:`headforms.sources.files.choose_weight_files`); ``config``: the parsed config.json
    (None for GGUF, whose metadata holds it); ``complete``: the weight files hold every weight
    of the model (not only the attention shards); ``fingerprint``: identifies the content.
    Set by the policy that checked it (:class:`Policy`): ``download_budget``, the bytes its
    downloads may take in all (None: unbounded), and ``confined``: no file beyond those named
    here may be opened (e.g. the other shards of an index).
    """

    spec: str
    kind: str
    display_name: str
    format: str
    fingerprint: str
    weights: tuple[LocatedFile, ...]
    config: dict[str, Any] | None = None
    config_file: LocatedFile | None = None
    index_file: LocatedFile | None = None
    complete: bool = True
    hub: HubLocation | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    download_budget: int | None = None
    confined: bool = False

    @property
    def weight_bytes(self) -> int | None:
        """Total size of the weight files read, or None if any size is unknown."""
        sizes = [f.size for f in self.weights]
        return None if any(s is None for s in sizes) else int(sum(sizes))  # type: ignore[arg-type]

    @property
    def model_type(self) -> str | None:
        """The transformers ``model_type`` from config.json (None for GGUF)."""
        return None if self.config is None else str(self.config.get("model_type"))

    def with_files(self, **changes: Any) -> Located:
        """A copy with some fields replaced (e.g. local paths after a download)."""
        return replace(self, **changes)


Guard = Callable[[Path], None]
"""Called with every path before it is opened (a policy's: refuses paths outside its roots)."""


class Policy(Protocol):
    """What a caller's policy (a hosted server's, :mod:`headforms.hosted.policy`) does while a
    model is located; :func:`headforms.sources.locate` applies it and never decides one."""

    max_index_bytes: int
    """Largest shard index parsed."""
    max_hub_files: int
    """Most top-level files of a hub repository listed."""

    def check_spec(self, spec: str) -> None:
        """Refuse the spec's text (before anything is looked up)."""

    def path_guard(self, spec: str) -> Guard:
        """The guard called with every local path before it is opened."""

    def check_located(self, located: Located) -> Located:
        """Refuse the located files, or return them with the policy's budget and confinement."""
