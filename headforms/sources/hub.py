"""Hub models: ``org/name[@revision]`` through ``huggingface_hub``.

Locating asks the hub for the repository's canonical id and commit (``model_info``, the sha
alone) and its top-level files with their sizes (``list_repo_tree``, page by page, at most
:data:`MAX_HUB_FILES` files), and reads config.json and a shard index (small; kept in the hub
cache), so the fingerprint (``repo@commit``) and the weight files to read are known before any
weight is downloaded. Every request and download uses the hub's canonical id, so the case
variants of one id (``gOod/name``) are one repository, stored once. With no network
(``HF_HUB_OFFLINE``, or the endpoint unreachable) the local hub cache is used alone.
``HF_ENDPOINT``, ``HF_HOME``/``HF_HUB_CACHE``, ``HF_TOKEN`` and ``HF_HUB_OFFLINE`` are read
when a model is located, so a running process follows them.

Downloads (:func:`fetch_hub_files`) take only the chosen files and can be held to a byte
budget: past it the transfer is aborted and its partial file removed. Messages name the
repository and what is wrong, never an endpoint URL or a cache path.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..architectures import architecture_for
from ..errors import (
    CorruptFileError,
    HeadformsError,
    HubUnavailableError,
    ModelSpecError,
    NoSuchModelError,
    NotAllowedError,
)
from ..settings import env_flag
from .bundled import BUNDLED_MODELS
from .files import (
    MAX_CONFIG_BYTES,
    MAX_INDEX_BYTES,
    TOKENIZER_FILES,
    choose_weight_files,
    read_small,
)
from .local import parse_config
from .located import HubLocation, Located, LocatedFile
from .specs import ACCEPTED

HUB_TIMEOUT = 10.0
"""Seconds to wait for the hub's answer before falling back to the local hub cache."""

UNREACHABLE_MEMORY = 60.0
"""After a failed connection, the local cache is used directly for this many seconds."""

MAX_HUB_FILES = 100_000
"""Most top-level files of a repository listed (a caller's policy may allow fewer)."""

_unreachable_until: dict[str, float] = {}
_unreachable_lock = threading.Lock()

OFFLINE_HINT = f"models available offline: {', '.join(BUNDLED_MODELS)} (or a local path)"


def hub_endpoint() -> str:
    """The hub's base URL (``$HF_ENDPOINT``, read now; default huggingface.co)."""
    from huggingface_hub import constants

    return (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def hub_cache_dir() -> Path:
    """The local hub cache (``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, read now)."""
    from huggingface_hub import constants

    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    return Path(constants.HF_HUB_CACHE)


def hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) is set now."""
    return env_flag("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


def locate_hub(
    spec: str,
    repo_id: str,
    revision: str | None,
    max_index_bytes: int = MAX_INDEX_BYTES,
    max_files: int = MAX_HUB_FILES,
) -> Located:
    """Locate a hub model (see the module doc); nothing but config and index is downloaded."""
    endpoint = hub_endpoint()
    offline = hub_offline() or _recently_unreachable(endpoint)
    listing: dict[str, int | None] | None = None
    commit = None
    if not offline:
        try:
            repo_id, listing, commit = _remote_listing(repo_id, revision, endpoint, max_files)
        except _Unreachable:
            _remember_unreachable(endpoint)
            offline = True
    if offline:
        repo_id = _cached_repo_id(repo_id)
        listing, commit = _cached_listing(spec, repo_id, revision)
    assert listing is not None and commit is not None
    fetch = _fetcher(repo_id, commit, endpoint, offline)
    config_path = fetch("config.json", listing, MAX_CONFIG_BYTES)
    config = parse_config(read_small(config_path, MAX_CONFIG_BYTES), f"{repo_id}: config.json")
    arch = architecture_for(config["model_type"])
    choice = choose_weight_files(
        listing,
        lambda name: read_small(fetch(name, listing, max_index_bytes), max_index_bytes),
        arch,
        max_index_bytes,
    )
    weights = tuple(LocatedFile(name, listing.get(name)) for name in choice.files)
    if offline:  # every chosen file must already be in the local cache (nothing downloads)
        weights = tuple(LocatedFile(f.name, f.size, fetch(f.name, listing)) for f in weights)
    index = LocatedFile(choice.index, listing.get(choice.index)) if choice.index else None
    others = [name for name in TOKENIZER_FILES if name in listing] + list(choice.other)
    return Located(
        spec=spec,
        kind="hub",
        display_name=repo_id,
        format=choice.format,
        fingerprint=hashlib.sha256(f"hub:{repo_id}@{commit}".encode()).hexdigest(),
        weights=weights,
        config=config,
        config_file=LocatedFile("config.json", listing.get("config.json"), config_path),
        index_file=index,
        complete=choice.complete,
        hub=HubLocation(repo_id, revision, commit, offline),
        forward_files=tuple(LocatedFile(name, listing.get(name)) for name in others),
    )


def _remote_listing(
    repo_id: str, revision: str | None, endpoint: str, max_files: int
) -> tuple[str, dict[str, int | None], str]:
    """``(canonical id, {top-level file name: size}, commit)`` from the hub: the commit first
    (one small answer), then the top-level tree page by page, stopped past ``max_files``."""
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    api = HfApi(endpoint=endpoint)
    try:
        info = api.model_info(repo_id, revision=revision, expand=["sha"], timeout=HUB_TIMEOUT)
        if not info.sha:
            raise HubUnavailableError(f"the hub did not report a commit for {repo_id!r}")
        # The hub's own spelling, if it is a case variant of the id asked for (and only then:
        # the allow-list was checked on that id).
        same = isinstance(info.id, str) and info.id.lower() == repo_id.lower()
        canonical = info.id if same else repo_id
        sizes: dict[str, int | None] = {}
        for entry in api.list_repo_tree(canonical, revision=info.sha, recursive=False):
            if isinstance(entry, RepoFile):
                size = entry.lfs.size if entry.lfs is not None else entry.size
                sizes[entry.path] = int(size) if size is not None else None
                if len(sizes) > max_files:
                    raise CorruptFileError(
                        f"{repo_id!r} has more than {max_files} files at its top level, more "
                        "than this server lists; refused"
                    )
    except HeadformsError:
        raise
    except Exception as exc:  # the hub's own answers: one line each; no answer: unreachable
        if _is_connection_failure(exc):
            raise _Unreachable from exc
        raise _hub_error(exc, repo_id, revision) from exc
    return canonical, sizes, str(info.sha)


def _cached_repo_id(repo_id: str) -> str:
    """The id under which the local hub cache holds ``repo_id`` (its folder names keep the
    canonical case: ``gOod/name`` finds ``models--good--name``); ``repo_id`` when absent."""
    from huggingface_hub.file_download import repo_folder_name

    wanted = repo_folder_name(repo_id=repo_id, repo_type="model").lower()
    folder = hub_cache_dir()
    try:
        names = [e.name for e in os.scandir(folder) if e.name.lower() == wanted]
    except OSError:
        return repo_id
    exact = repo_folder_name(repo_id=repo_id, repo_type="model")
    if not names or exact in names:
        return repo_id
    return names[0].removeprefix("models--").replace("--", "/")


def _cached_listing(
    spec: str, repo_id: str, revision: str | None
) -> tuple[dict[str, int | None], str]:
    """``({file name: size}, commit)`` of the local hub cache's snapshot of ``revision``; a
    repository not in it is no model here (:class:`NoSuchModelError`)."""
    from huggingface_hub import snapshot_download

    try:
        folder = Path(
            snapshot_download(
                repo_id, revision=revision, local_files_only=True, cache_dir=hub_cache_dir()
            )
        )
    except Exception as exc:
        hub = "the hub is off: HF_HUB_OFFLINE" if hub_offline() else "the hub cannot be reached"
        raise NoSuchModelError(
            f"no such model here: {spec.strip()!r} is not a bundled model nor a local path, and "
            f"it is not in the local hub cache ({hub}); {ACCEPTED}"
        ) from exc
    sizes: dict[str, int | None] = {}
    for entry in os.scandir(folder):
        try:
            if entry.is_file():  # follows the snapshot's symbolic links into blobs/
                sizes[entry.name] = entry.stat().st_size
        except OSError:
            continue
    return sizes, folder.name


def _fetcher(repo_id: str, commit: str, endpoint: str, offline: bool) -> Callable[..., Path]:
    """``fetch(name, listing, limit) -> local path`` of a file at ``commit``: a small file
    (config, index: declared size checked, transfer held to ``limit`` bytes), or, offline, a
    file of the local cache."""

    def fetch(name: str, listing: dict[str, int | None], limit: int | None = None) -> Path:
        if name not in listing:
            raise ModelSpecError(f"{repo_id!r} has no {name}")
        size = listing[name]
        if limit is not None and size is not None and size > limit:
            raise CorruptFileError(f"{repo_id!r}: {name} is larger than {limit} bytes")
        budget = Budget(limit) if limit is not None else None
        return _download(repo_id, commit, name, endpoint, offline, budget=budget)

    return fetch


def _download(
    repo_id: str, commit: str, name: str, endpoint: str, offline: bool, budget: Budget | None
) -> Path:
    from huggingface_hub import hf_hub_download

    try:
        return Path(
            hf_hub_download(
                repo_id,
                name,
                revision=commit,
                endpoint=endpoint,
                cache_dir=hub_cache_dir(),
                local_files_only=offline,
                tqdm_class=budget.progress_class() if budget else None,
            )
        )
    except BudgetExceeded:
        _remove_partial_downloads(repo_id)
        assert budget is not None
        if budget.server_limit:
            raise NotAllowedError(
                f"{repo_id!r}: downloading {name} went past this server's limit of "
                f"{budget.limit} bytes; the download was stopped and its partial file removed"
            ) from None
        raise CorruptFileError(
            f"{repo_id!r}: {name} is larger than {budget.limit} bytes; the download was stopped"
        ) from None
    except Exception as exc:
        _remove_partial_downloads(repo_id)
        raise _hub_error(exc, repo_id, commit, name) from exc


def _hub_error(
    exc: BaseException, repo_id: str, revision: str | None, name: str | None = None
) -> Exception:
    """One line for a huggingface_hub failure (no URL, no cache path)."""
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(exc, GatedRepoError):
        return HubUnavailableError(f"{repo_id!r} is gated: set HF_TOKEN to a token with access")
    if isinstance(exc, RepositoryNotFoundError):
        return ModelSpecError(f"no model {repo_id!r} on the hub (or it is private: set HF_TOKEN)")
    if isinstance(exc, RevisionNotFoundError):
        return ModelSpecError(f"{repo_id!r} has no revision {revision!r}")
    if isinstance(exc, LocalEntryNotFoundError):
        return HubUnavailableError(
            f"cannot reach the Hugging Face hub for {repo_id!r} and "
            f"{name or 'it'} is not in the local hub cache; {OFFLINE_HINT}"
        )
    if isinstance(exc, EntryNotFoundError):
        return ModelSpecError(f"{repo_id!r} has no file {name or ''}".rstrip())
    if isinstance(exc, OSError) and "Consistency check failed" in str(exc):
        return HubUnavailableError(
            f"{repo_id!r}: {name} arrived with a size other than the hub declared; not used"
        )
    return HubUnavailableError(
        f"cannot reach the Hugging Face hub for {repo_id!r} ({type(exc).__name__}); {OFFLINE_HINT}"
    )


class _Unreachable(Exception):
    """The hub gave no answer (connection refused, DNS failure, timeout)."""


def _is_connection_failure(exc: BaseException) -> bool:
    """Whether an exception means the hub could not be reached at all (not a hub answer)."""
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    if isinstance(exc, OfflineModeIsEnabled):
        return True
    if isinstance(exc, HfHubHTTPError):
        return False
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"ConnectError", "TimeoutException", "ConnectionError", "Timeout"}) or (
        isinstance(exc, OSError)
    )


def _recently_unreachable(endpoint: str) -> bool:
    with _unreachable_lock:
        return _unreachable_until.get(endpoint, 0.0) > time.monotonic()


def _remember_unreachable(endpoint: str) -> None:
    with _unreachable_lock:
        _unreachable_until[endpoint] = time.monotonic() + UNREACHABLE_MEMORY


# ---------------------------------------------------------------------------------------------
# Downloading the chosen weight files, within a byte budget


class BudgetExceeded(Exception):
    """Raised inside a download when the byte budget is spent (aborts the transfer)."""


class Budget:
    """A byte budget shared by every download of one analysis (thread-safe)."""

    def __init__(self, limit: int, server_limit: bool = False):
        self.limit = int(limit)
        self.server_limit = server_limit  # the hosted server's limit (else a format's bound)
        self.used = 0
        self._lock = threading.Lock()

    def spend(self, count: int) -> None:
        """Count ``count`` more bytes; past the limit, abort the transfer."""
        with self._lock:
            self.used += count
            if self.used > self.limit:
                raise BudgetExceeded

    def progress_class(self) -> type:
        """A ``tqdm`` class for huggingface_hub whose updates spend this budget."""
        from tqdm.auto import tqdm

        budget = self

        class BudgetProgress(tqdm):  # type: ignore[misc, valid-type]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                kwargs["disable"] = True  # counting only: the engine reports its own progress
                super().__init__(*args, **kwargs)

            def update(self, n: float | None = 1) -> bool | None:
                if n and n > 0:
                    budget.spend(int(n))
                return super().update(n)

        return BudgetProgress


def fetch_hub_files(located: Located, budget: int | None = None) -> Located:
    """The located hub model with every weight file on disk (downloaded if needed).

    With ``budget``, at most that many bytes are downloaded in all: a transfer that would go
    past it is aborted, its partial file removed, and :class:`NotAllowedError` raised.
    """
    hub = located.hub
    if hub is None:
        return located
    spend = Budget(budget, server_limit=True) if budget is not None else None
    endpoint = hub_endpoint()
    files = []
    for f in located.weights:
        path = f.path or _download(hub.repo_id, hub.commit, f.name, endpoint, hub.offline, spend)
        files.append(LocatedFile(f.name, f.size, path))
    return located.with_files(weights=tuple(files))


def fetch_hub_snapshot(located: Located, budget: int | None = None) -> Path:
    """The folder of a hub model's snapshot with every file a forward pass reads on disk: the
    config, the index, every weight file and :attr:`~.Located.forward_files` (the tokenizer's
    and the other shards), downloaded if needed, all within one ``budget`` of bytes (as for
    :func:`fetch_hub_files`)."""
    hub = located.hub
    assert hub is not None
    spend = Budget(budget, server_limit=True) if budget is not None else None
    endpoint = hub_endpoint()
    files = [f for f in (located.config_file, located.index_file) if f is not None]
    files += [*located.weights, *located.forward_files]
    folder = None
    for f in files:
        path = _download(hub.repo_id, hub.commit, f.name, endpoint, hub.offline, spend)
        folder = folder or path.parent
    assert folder is not None
    return folder


def _remove_partial_downloads(repo_id: str) -> None:
    """Delete the ``*.incomplete`` blobs of ``repo_id`` that no download is writing: each blob's
    download holds huggingface_hub's lock ``.locks/<repo folder>/<etag>.lock``, so a partial
    file whose lock is taken belongs to a download still running (another thread, process or
    revision) and stays."""
    from filelock import FileLock, Timeout
    from huggingface_hub.file_download import repo_folder_name

    folder = repo_folder_name(repo_id=repo_id, repo_type="model")
    locks = hub_cache_dir() / ".locks" / folder
    for partial in _glob(hub_cache_dir() / folder / "blobs", "*.incomplete"):
        lock = FileLock(str(locks / f"{partial.name.removesuffix('.incomplete')}.lock"))
        try:
            with lock.acquire(timeout=0):
                partial.unlink(missing_ok=True)
        except Timeout:
            continue


def _glob(folder: Path, pattern: str) -> Iterable[Path]:
    return folder.glob(pattern) if folder.is_dir() else ()


def evict_hub_cache(max_bytes: int, keep: str | None = None) -> int:
    """Delete whole repositories from the local hub cache, least recently used first, until it
    holds at most ``max_bytes``; never ``keep`` (case aside) nor a repository with a download
    in progress. Returns the bytes freed."""
    from huggingface_hub import scan_cache_dir

    folder = hub_cache_dir()
    if not folder.is_dir():
        return 0
    info = scan_cache_dir(folder)
    excess = info.size_on_disk - max_bytes
    freed = 0
    by_use = sorted(info.repos, key=lambda r: max(r.last_accessed, r.last_modified))
    for repo in by_use:
        if freed >= excess:
            break
        if (keep and repo.repo_id.lower() == keep.lower()) or any(
            _glob(repo.repo_path / "blobs", "*.incomplete")
        ):
            continue
        info.delete_revisions(*(r.commit_hash for r in repo.revisions)).execute()
        freed += repo.size_on_disk
    return freed
