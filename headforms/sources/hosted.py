"""Hosted mode: what one shared server lets its users open.

Switched on by ``HEADFORMS_HOSTED=1``. Then a model spec is checked before anything is read:
no shell metacharacters or control characters; bundled models always; local paths only
under ``HEADFORMS_MODEL_ROOTS`` (``os.pathsep``-separated; no ``..``, no ``~``, no symbolic
link or shard index leading outside); hub ids only of the hub's id form and, when
``HEADFORMS_HUB_ALLOWLIST`` is set (comma-separated ids or ``org/*`` globs), allow-listed; and
with ``HEADFORMS_MAX_MODEL_BYTES`` the weights' size (from file sizes, or the hub's file
metadata before any download) is refused up front when larger. One extraction per model at a
time is the engine's per-key lock (:func:`headforms.cache.key_lock`).
"""

from __future__ import annotations

import fnmatch
import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import NotAllowedError

HOSTED_ENV = "HEADFORMS_HOSTED"
ROOTS_ENV = "HEADFORMS_MODEL_ROOTS"
ALLOWLIST_ENV = "HEADFORMS_HUB_ALLOWLIST"
MAX_BYTES_ENV = "HEADFORMS_MAX_MODEL_BYTES"

MAX_SPEC_LENGTH = 512
MAX_INDEX_BYTES = 16 * 2**20
"""A shard index larger than this is not read (a real one is a few hundred KiB at most)."""

_NAMED_CHARACTERS = {"\0": "a NUL byte", "\n": "a newline", "\r": "a carriage return"}
SHELL_METACHARACTERS = frozenset(";|&$`<>()\\\"'*?[]{}!#")
"""Characters a shell would interpret; a model spec never needs them."""

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf")


def enabled() -> bool:
    """Whether hosted mode is on (``HEADFORMS_HOSTED`` = 1, true or yes)."""
    return os.environ.get(HOSTED_ENV, "").strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Policy:
    """The hosted-mode limits, as configured by the environment."""

    roots: tuple[Path, ...] = ()
    allowlist: tuple[str, ...] = ()
    max_bytes: int | None = None

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
            max_bytes = int(raw) if raw else None
        except ValueError as exc:
            raise NotAllowedError(
                f"{MAX_BYTES_ENV}={raw!r} is not a whole number of bytes (server configuration)"
            ) from exc
        return cls(roots, allowlist, max_bytes)


def check_spec(spec: str, policy: Policy | None = None) -> None:
    """Refuse a model spec this server does not serve (:class:`NotAllowedError`, one line)."""
    from . import BUNDLED_MODELS, HUB_ID_PATTERN, parse_spec

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
            f"path traversal ('..') is not accepted on this server: {spec!r}; give a path under "
            + _roots_text(policy)
        )
    kind, value, revision = parse_spec(spec)
    if kind == "path":
        files = local_model_files(Path(value), policy)
        _check_size(spec, sum(f.stat().st_size for f in files), policy)
        return
    if not HUB_ID_PATTERN.match(spec) or ".." in spec:
        raise NotAllowedError(f"{spec!r} is not a valid hub id ('name' or 'org/name[@revision]')")
    if policy.allowlist and not any(
        fnmatch.fnmatchcase(value.lower(), pattern.lower()) for pattern in policy.allowlist
    ):
        raise NotAllowedError(
            f"hub model {value!r} is not allowed on this server; allowed: "
            f"{', '.join(policy.allowlist)} (and the bundled models: {', '.join(BUNDLED_MODELS)})"
        )
    if policy.max_bytes is not None:
        size = hub_weight_bytes(value, revision)
        if size is not None:
            _check_size(spec, size, policy)


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


def _within_roots(path: Path, spec_path: Path, policy: Policy) -> Path:
    """The real path of ``path`` if it lies under a root, else a specific refusal."""
    if not policy.roots:
        raise NotAllowedError(
            f"local paths are disabled on this server ({ROOTS_ENV} is not set); use a bundled "
            "model or a hub id"
        )
    lexical = Path(os.path.abspath(path))
    real = Path(os.path.realpath(path))
    if _inside(real, policy.roots):
        return real
    if _inside(lexical, policy.roots):
        raise NotAllowedError(
            f"{spec_path} leads outside the allowed model directories through a symbolic link "
            f"({path.name}); allowed: {_roots_text(policy)}"
        )
    raise NotAllowedError(
        f"{spec_path} is outside the model directories this server allows: {_roots_text(policy)}"
    )


def local_model_files(path: Path, policy: Policy) -> list[Path]:
    """The files a local spec would read, each checked to lie under a root (real paths)."""
    from ..errors import ModelSpecError
    from . import weight_files

    real = _within_roots(path, path, policy)
    if not real.exists():
        raise ModelSpecError(f"no such file or directory: {path}")
    if real.is_file():
        return [real]
    config = real / "config.json"
    if not config.exists():
        candidates = sorted(real.glob("*.gguf"))
    else:
        for index in real.glob("*.index.json"):
            _within_roots(index, path, policy)
            if index.stat().st_size > MAX_INDEX_BYTES:
                raise NotAllowedError(f"{index.name} is larger than {MAX_INDEX_BYTES} bytes")
            _check_index_names(index, path)
        candidates = [config, *weight_files(real)]
    return [_within_roots(f, path, policy) for f in candidates]


def _check_index_names(index: Path, spec_path: Path) -> None:
    """Shard names in an index must be plain file names of the same directory."""
    try:
        weight_map = json.loads(index.read_text())["weight_map"]
        shards = set(weight_map.values())
    except (OSError, KeyError, TypeError, AttributeError, ValueError):
        return  # the engine reports the malformed index itself
    for shard in shards:
        if not isinstance(shard, str) or Path(shard).name != shard or shard in ("", ".", ".."):
            raise NotAllowedError(
                f"{spec_path}: {index.name} names the shard {str(shard)!r} outside its directory"
            )


def hub_weight_bytes(repo_id: str, revision: str | None) -> int | None:
    """Size of a hub model's weight files from the hub's metadata (no download), or None.

    Offline, the local hub cache's snapshot is measured instead; None when neither is known.
    """
    from . import hub_offline

    if not hub_offline():
        from huggingface_hub import HfApi

        try:
            info = HfApi().model_info(repo_id, revision=revision, files_metadata=True)
        except Exception:  # unreachable, private or missing: the download reports it clearly
            return None
        sizes = {s.rfilename: s.size or 0 for s in info.siblings or []}
        return _weight_total(sizes)
    from huggingface_hub import snapshot_download

    try:
        folder = Path(snapshot_download(repo_id, revision=revision, local_files_only=True))
    except Exception:
        return None
    sizes = {f.name: f.stat().st_size for f in folder.iterdir() if f.is_file()}
    return _weight_total(sizes)


def _weight_total(sizes: dict[str, int]) -> int:
    """Bytes of the weight format the engine would read (safetensors first, else .bin)."""
    for suffix in (".safetensors", ".bin"):
        chosen = [n for n in sizes if n.endswith(suffix) and "/" not in n]
        if chosen:
            return sum(sizes[n] for n in chosen)
    return 0


def _check_size(spec: str, size: int, policy: Policy) -> None:
    if policy.max_bytes is not None and size > policy.max_bytes:
        raise NotAllowedError(
            f"{spec!r} has {_human(size)} of weights, more than this server's limit of "
            f"{_human(policy.max_bytes)} ({MAX_BYTES_ENV}); nothing was downloaded or read"
        )


def _human(n: int) -> str:
    value = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{n} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} bytes"
