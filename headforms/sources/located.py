"""A located model: which files hold it, how big they are, and its content fingerprint.

Locating reads at most the config and a shard index (never weights), so a cache lookup can
happen before anything heavy is opened: locate -> fingerprint -> cache -> open.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

TABLE_FORMAT = "table"
"""The ``format`` of a published per-head table: its file holds metrics, not weights."""


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

    ``kind``: ``bundled``, ``local``, ``gguf``, ``hub`` or ``table``. ``format``:
    ``safetensors``, ``bin``, ``gguf`` or ``table`` (:data:`TABLE_FORMAT`). ``weights``: the
    files the engine reads (the one choice of
    :func:`headforms.sources.files.choose_weight_files`; a table's file); ``config``: the parsed
    config.json (None for GGUF, whose metadata holds it); ``complete``: the weight files hold
    every weight of the model (not only the attention shards); ``forward_files``: the other
    files a forward pass reads (the tokenizer files, then the shards the engine does not), with
    their sizes as listed (None: unknown, or not a regular file); ``fingerprint``: identifies
    the content; ``extra``: kind-specific facts (a table's ``model``). Set by the policy that
    checked it (:class:`headforms.sources.policy.Policy`): ``download_budget``, the bytes its
    weight files (and a forward pass's files) may take in all (None: unbounded), and
    ``confined``: no file beyond those named here may be opened (e.g. the other shards of an
    index). It is a plain value: a worker process receives it as JSON (:meth:`as_dict`) and
    opens it without locating it again.
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
    forward_files: tuple[LocatedFile, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    download_budget: int | None = None
    confined: bool = False

    @property
    def weight_bytes(self) -> int | None:
        """Total size of the weight files read, or None if any size is unknown."""
        sizes = [f.size for f in self.weights]
        return None if any(s is None for s in sizes) else int(sum(sizes))  # type: ignore[arg-type]

    @property
    def forward_bytes(self) -> int | None:
        """Total size of what a forward pass reads beyond the config and index (the weight
        files and :attr:`forward_files`), or None if any size is unknown."""
        sizes = [f.size for f in (*self.weights, *self.forward_files)]
        return None if any(s is None for s in sizes) else int(sum(sizes))  # type: ignore[arg-type]

    @property
    def model_type(self) -> str | None:
        """The transformers ``model_type`` from config.json (None for GGUF)."""
        return None if self.config is None else str(self.config.get("model_type"))

    def with_files(self, **changes: Any) -> Located:
        """A copy with some fields replaced (e.g. local paths after a download)."""
        return replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON (for a worker process, which then opens it without locating it again)."""
        data = asdict(self)
        for name in ("config_file", "index_file"):
            data[name] = _file_dict(getattr(self, name))
        data["weights"] = [_file_dict(f) for f in self.weights]
        data["forward_files"] = [_file_dict(f) for f in self.forward_files]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Located:
        """The located model of :meth:`as_dict`."""
        fields = dict(data)
        fields["weights"] = tuple(_file(f) for f in data["weights"])
        fields["forward_files"] = tuple(_file(f) for f in data.get("forward_files", ()))
        fields["config_file"] = _file(data.get("config_file"))
        fields["index_file"] = _file(data.get("index_file"))
        fields["hub"] = HubLocation(**data["hub"]) if data.get("hub") else None
        return cls(**fields)


def _file_dict(f: LocatedFile | None) -> dict[str, Any] | None:
    if f is None:
        return None
    return {"name": f.name, "size": f.size, "path": None if f.path is None else str(f.path)}


def _file(data: Mapping[str, Any] | None) -> LocatedFile | None:
    if data is None:
        return None
    path = data.get("path")
    return LocatedFile(data["name"], data["size"], None if path is None else Path(path))
