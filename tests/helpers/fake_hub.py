"""A loopback fake of the Hugging Face hub, for tests that exercise hub ids without a network.

What it serves (the calls huggingface_hub 2.4 makes; headers as its ``file_download.py`` and
``utils/_http.py`` read them):

- ``GET /api/models/{repo}`` and ``/api/models/{repo}/revision/{rev}`` (``model_info``): ``id``,
  ``sha``, ``siblings``; with ``?blobs=true`` (``files_metadata=True``) every sibling's ``size``,
  ``blobId`` and, for LFS files, ``lfs`` (``sha256``, ``size``, ``pointerSize``); with
  ``?expand=...`` only those properties (and ``id``), as the hub does.
- ``GET /api/models/{repo}/tree/{rev}[/{path}]`` (``list_repo_tree``, ``list_repo_files``), in
  pages of :data:`TREE_PAGE` entries linked by a ``Link: <...>; rel="next"`` header as the hub
  paginates, and ``POST /api/models/{repo}/paths-info/{rev}`` (``get_paths_info``).
- Repository ids are matched without regard to case and answered with the repository's own
  spelling (``id``), as the hub does (``gOod/name`` is ``good/name``).
- ``HEAD``/``GET /{repo}/resolve/{rev}/{file}`` (``hf_hub_download``, ``get_hf_file_metadata``):
  regular files answer 200 with ``X-Repo-Commit``, ``ETag`` (git blob id) and
  ``Content-Length``; LFS files (weights: ``.safetensors``, ``.bin``, ``.gguf``, ...) answer
  ``302`` with ``X-Repo-Commit``, ``X-Linked-Etag`` (sha256), ``X-Linked-Size`` and a
  ``Location`` on a second loopback server (another origin, like the hub's CDN, so
  huggingface_hub does not follow the redirect on ``HEAD``), which serves the bytes.
- Byte ``Range`` requests (``bytes=a-b``, ``bytes=a-``) on both servers: ``206`` with
  ``Content-Range``; a range past the end: ``416``.
- Errors with the ``X-Error-Code`` headers huggingface_hub maps to exceptions: unknown repo
  ``RepoNotFound`` (-> ``RepositoryNotFoundError``), unknown branch/tag/commit
  ``RevisionNotFound``, missing file ``EntryNotFound`` (with ``X-Repo-Commit``, so the
  non-existence is cached), gated repo without its token ``GatedRepo`` (401), private repo
  without its token ``RepoNotFound`` (401).

Revisions: every :meth:`FakeRepo.commit` makes a new commit (40-hex sha) with a full snapshot
of the repo's files on a branch (default ``main``); :meth:`FakeRepo.tag` names a commit. A
revision is a branch, a tag or a full commit sha.

A hostile hub's metadata: ``repo.declared_sizes[name] = n`` makes ``model_info`` and the tree
declare ``n`` bytes for a file (``None``: no size) while the file's real bytes are still
served.

Adding a repo::

    repo = hub.add_repo("org/tiny-gpt2")                       # or gated=True / private=True
    sha = repo.commit(directory_files(model_dir))             # {filename: bytes}
    repo.commit({**files, "config.json": b"..."}, branch="dev")
    repo.tag("v1.0", sha)

or in one call ``hub.add_model("org/name", model_dir)``; :func:`checkpoint_files` turns a
``save_pretrained`` directory into the files of a single-file, sharded (with
``model.safetensors.index.json``) or ``pytorch_model.bin`` checkpoint.

What it counts (for tests that check what was fetched): ``hub.requests``, a list of
:class:`Request` (method, kind ``api``/``resolve``/``cdn``, repo, revision, filename, status,
bytes of body sent), and ``hub.bytes_sent(repo, filename)``; ``hub.reset_counts()`` clears them.

Using it: the session fixture ``fake_hub_server`` (conftest) runs one server for the session;
the function fixture ``fake_hub`` points huggingface_hub at it for one test, with an empty hub
cache and offline mode off, and clears its repos afterwards. huggingface_hub reads
``HF_ENDPOINT`` and ``HF_HUB_OFFLINE`` at import, so :meth:`FakeHub.activate` patches
``huggingface_hub.constants`` (``ENDPOINT``, ``HUGGINGFACE_CO_URL_TEMPLATE``,
``HF_HUB_OFFLINE``, ``HF_HUB_CACHE``) and the module-level ``HfApi`` as well as the
environment (which subprocesses inherit; :meth:`FakeHub.env` gives the same variables).
"""

from __future__ import annotations

import io
import json
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fake_hub_http import _Server
from fake_hub_repos import (
    LFS_POINTER_SIZE,
    LFS_SUFFIXES,
    TREE_PAGE,
    FakeFile,
    FakeRepo,
    Request,
    git_blob_id,
)

__all__ = [
    "LFS_POINTER_SIZE",
    "LFS_SUFFIXES",
    "TREE_PAGE",
    "FakeFile",
    "FakeHub",
    "FakeRepo",
    "Request",
    "checkpoint_files",
    "directory_files",
    "git_blob_id",
]


class FakeHub:
    """The hub's state (repos) and two loopback servers: the hub itself and its "CDN"."""

    def __init__(self) -> None:
        self.repos: dict[str, FakeRepo] = {}
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._servers = [_Server(self, cdn=False), _Server(self, cdn=True)]
        self._threads: list[threading.Thread] = []

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The endpoint (``HF_ENDPOINT``): ``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self._servers[0].server_address[1]}"

    @property
    def cdn_url(self) -> str:
        """Where LFS files are redirected to (another port: another origin)."""
        return f"http://127.0.0.1:{self._servers[1].server_address[1]}"

    def start(self) -> FakeHub:
        """Serve in daemon threads."""
        for server in self._servers:
            thread = threading.Thread(target=server.serve_forever, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        """Stop both servers."""
        for server in self._servers:
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)

    # -- content ----------------------------------------------------------------------------

    def add_repo(
        self, repo_id: str, gated: bool = False, private: bool = False, token: str | None = None
    ) -> FakeRepo:
        """A new empty repo (replacing one of that id). Gated/private repos need ``token``."""
        repo = FakeRepo(repo_id, gated=gated, private=private, token=token)
        with self._lock:
            self.repos[repo_id] = repo
        return repo

    def add_model(self, repo_id: str, directory: Path, layout: str = "safetensors") -> str:
        """A repo whose ``main`` is the checkpoint in ``directory`` (:func:`checkpoint_files`)."""
        return self.add_repo(repo_id).commit(checkpoint_files(directory, layout))

    def clear(self) -> None:
        """Forget every repo and count."""
        with self._lock:
            self.repos.clear()
        self.reset_counts()

    # -- counts -----------------------------------------------------------------------------

    def reset_counts(self) -> None:
        """Clear :attr:`requests`."""
        with self._lock:
            self.requests.clear()

    def record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def bytes_sent(self, repo: str | None = None, filename: str | None = None) -> int:
        """Body bytes of file content sent (resolve and CDN), for one repo and/or file."""
        return sum(
            r.body_bytes
            for r in list(self.requests)
            if r.kind in ("resolve", "cdn")
            and r.method == "GET"
            and (repo is None or r.repo == repo)
            and (filename is None or r.filename == filename)
        )

    def count(self, **match: Any) -> int:
        """Number of requests whose fields equal ``match`` (e.g. ``kind="api", repo="gpt2"``)."""
        return sum(all(getattr(r, k) == v for k, v in match.items()) for r in list(self.requests))

    # -- pointing huggingface_hub at it ------------------------------------------------------

    def env(self, hub_cache: Path) -> dict[str, str]:
        """Environment variables of a process that uses this hub (offline mode off)."""
        return {"HF_ENDPOINT": self.url, "HF_HUB_OFFLINE": "0", "HF_HUB_CACHE": str(hub_cache)}

    @contextmanager
    def activate(self, hub_cache: Path) -> Iterator[FakeHub]:
        """Point huggingface_hub (this process and its children) at this hub; restore after."""
        from huggingface_hub import constants, hf_api

        values = {
            "ENDPOINT": self.url,
            "HUGGINGFACE_CO_URL_TEMPLATE": self.url + "/{repo_id}/resolve/{revision}/{filename}",
            "HF_HUB_OFFLINE": False,
            "HF_HUB_CACHE": str(hub_cache),
        }
        saved_constants = {name: getattr(constants, name) for name in values}
        saved_api = hf_api.api.endpoint
        env = {**self.env(hub_cache), "TRANSFORMERS_OFFLINE": "0"}
        saved_env = {name: os.environ.get(name) for name in env}
        try:
            for name, value in values.items():
                setattr(constants, name, value)
            hf_api.api.endpoint = self.url
            os.environ.update(env)
            yield self
        finally:
            for name, value in saved_constants.items():
                setattr(constants, name, value)
            hf_api.api.endpoint = saved_api
            for name, value in saved_env.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


# ---------------------------------------------------------------------------------------------
# Checkpoint files


def directory_files(directory: Path) -> dict[str, bytes]:
    """Every file of a directory (recursively), by relative POSIX path."""
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def checkpoint_files(directory: Path, layout: str = "safetensors", shards: int = 3) -> dict:
    """The files of a ``save_pretrained`` directory (config + ``model.safetensors``) in a layout.

    ``safetensors``: as saved; ``sharded``: ``shards`` files with ``model.safetensors.index.json``,
    the first holding the tensors outside the layers (embeddings, head: no Q/K), the others the
    layers in order;
    ``bin``: one ``pytorch_model.bin`` (``torch.save`` of the state dict).
    """
    import torch
    from safetensors.torch import load_file, save

    files = directory_files(directory)
    if layout == "safetensors":
        return files
    state = load_file(str(directory / "model.safetensors"))
    del files["model.safetensors"]
    if layout == "bin":
        buffer = io.BytesIO()
        torch.save(state, buffer)
        files["pytorch_model.bin"] = buffer.getvalue()
        return files
    if layout != "sharded":
        raise ValueError(f"unknown layout {layout!r}: safetensors, sharded or bin")
    names = sorted(state, key=_layer_then_name)
    outside = [name for name in names if _layer_then_name(name)[0] < 0]  # embeddings, head
    layers = names[len(outside) :]
    parts = shards - 1
    groups = [outside] + [
        layers[i * len(layers) // parts : (i + 1) * len(layers) // parts] for i in range(parts)
    ]
    weight_map: dict[str, str] = {}
    total = 0
    for i, group in enumerate(groups):
        shard = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        files[shard] = save({name: state[name].contiguous() for name in group})
        weight_map.update(dict.fromkeys(group, shard))
        total += sum(state[name].numel() * state[name].element_size() for name in group)
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    files["model.safetensors.index.json"] = json.dumps(index, indent=2).encode()
    return files


def _layer_then_name(name: str) -> tuple[int, str]:
    match = re.search(r"\.(\d+)\.", name)
    return (int(match.group(1)) if match else -1, name)
