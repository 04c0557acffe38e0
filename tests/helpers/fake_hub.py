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

import hashlib
import io
import json
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

LFS_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth", ".h5", ".msgpack", ".onnx")
"""Files stored with git LFS on the fake hub (as the hub's default .gitattributes does)."""

LFS_POINTER_SIZE = 134
"""Size of a git LFS pointer file (what ``pointerSize`` reports)."""

TREE_PAGE = 1000
"""Entries per page of a tree listing (the hub's page size)."""


def git_blob_id(data: bytes) -> str:
    """The git object id of a blob (what the hub reports as ``blobId`` / ETag of regular files)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass(frozen=True)
class FakeFile:
    """One file of a commit: its bytes, and whether git LFS stores it."""

    data: bytes
    lfs: bool

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def blob_id(self) -> str:
        """Git object id: of the LFS pointer for LFS files, of the content otherwise."""
        if self.lfs:
            pointer = (
                "version https://git-lfs.github.com/spec/v1\n"
                f"oid sha256:{self.sha256}\nsize {len(self.data)}\n"
            )
            return git_blob_id(pointer.encode())
        return git_blob_id(self.data)


@dataclass
class FakeRepo:
    """A model repo: commits (full snapshots), branches and tags; optional gating or privacy."""

    repo_id: str
    gated: bool = False
    private: bool = False
    token: str | None = None
    commits: dict[str, dict[str, FakeFile]] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    declared_sizes: dict[str, int | None] = field(default_factory=dict)
    """A hostile hub's metadata: file name -> the size it declares (None: no size at all)
    instead of the size of the bytes it serves."""

    def commit(
        self,
        files: dict[str, bytes],
        branch: str = "main",
        message: str = "",
        lfs: set[str] | None = None,
    ) -> str:
        """Make ``files`` (name -> bytes) the whole snapshot of a new commit on ``branch``.

        ``lfs``: names stored with LFS (default: the weight suffixes :data:`LFS_SUFFIXES`).
        Returns the commit sha.
        """
        parent = self.branches.get(branch, "")
        digest = hashlib.sha1(f"{self.repo_id}\0{parent}\0{message}\0".encode())
        for name in sorted(files):
            digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
        sha = digest.hexdigest()
        self.commits[sha] = {
            name: FakeFile(data, name in lfs if lfs is not None else name.endswith(LFS_SUFFIXES))
            for name, data in files.items()
        }
        self.branches[branch] = sha
        return sha

    def tag(self, name: str, sha: str) -> None:
        """Name a commit (a revision like ``v1.0``)."""
        if sha not in self.commits:
            raise KeyError(f"{self.repo_id} has no commit {sha}")
        self.tags[name] = sha

    def resolve(self, revision: str) -> str | None:
        """The commit sha of a branch, tag or full sha; None if unknown."""
        if revision in self.commits:
            return revision
        return self.branches.get(revision) or self.tags.get(revision)


@dataclass(frozen=True)
class Request:
    """One request the fake hub answered."""

    method: str
    kind: str  # "api", "resolve", "cdn", "other"
    repo: str | None
    revision: str | None
    filename: str | None
    status: int
    body_bytes: int


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


# ---------------------------------------------------------------------------------------------
# The HTTP side


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, hub: FakeHub, cdn: bool):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.hub = hub
        self.cdn = cdn


_RANGE = re.compile(r"bytes=(\d+)-(\d*)$")


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet test output
        pass

    # -- dispatch ---------------------------------------------------------------------------

    def do_HEAD(self) -> None:  # noqa: N802 (http.server's name)
        self._dispatch("HEAD")

    def do_GET(self) -> None:  # noqa: N802
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        split = urlsplit(self.path)
        path, query = unquote(split.path), parse_qs(split.query)
        self._log = {"method": method, "kind": "other", "repo": None, "revision": None}
        self._log["filename"] = None
        self._method = method
        length = int(self.headers.get("Content-Length") or 0)
        self._body = self.rfile.read(length) if length else b""  # read before any answer
        try:
            if self.server.cdn:
                self._cdn(method, path)
            elif path.startswith("/api/models/"):
                self._api(method, path[len("/api/models/") :], split.path, query)
            else:
                self._resolve(method, path, split.path)
        except (BrokenPipeError, ConnectionResetError):
            pass

    # -- responses --------------------------------------------------------------------------

    def _send(
        self, status: int, body: bytes = b"", headers: dict[str, str] | None = None, head=False
    ) -> None:
        """Answer; the request is recorded before the body goes out (clients see it counted)."""
        sent = body if body and not head and self._method != "HEAD" else b""
        self.server.hub.record(Request(**self._log, status=status, body_bytes=len(sent)))
        self.send_response(status)
        headers = dict(headers or {})
        headers.setdefault("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if sent:
            self.wfile.write(sent)

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload).encode()
        self._send(status, body, {"Content-Type": "application/json", **(headers or {})})

    def _error(self, status: int, code: str, message: str, headers=None) -> None:
        head = {"X-Error-Code": code, "X-Error-Message": message, **(headers or {})}
        self._json(status, {"error": message}, head)

    def _content(self, method: str, data: bytes, headers: dict[str, str]) -> None:
        """File bytes, honouring a single ``Range`` (206 + Content-Range, 416 past the end)."""
        size = len(data)
        match = _RANGE.match(self.headers.get("Range", ""))
        if match:
            start = int(match.group(1))
            end = min(int(match.group(2)) if match.group(2) else size - 1, size - 1)
            if start >= size:
                self._send(416, b"", {"Content-Range": f"bytes */{size}", **headers})
                return
            part = data[start : end + 1]
            range_headers = {"Content-Range": f"bytes {start}-{end}/{size}", **headers}
            self._send(206, part, range_headers, head=method == "HEAD")
            return
        self._send(200, data, {"Accept-Ranges": "bytes", **headers}, head=method == "HEAD")

    # -- repos and access -------------------------------------------------------------------

    def _find_repo(self, rest: str) -> tuple[FakeRepo | None, str]:
        """The repo a path starts with (``org/name`` or ``name``) and the rest of the path."""
        repos = self.server.hub.repos
        folded = rest.lower()
        for repo_id in sorted(repos, key=len, reverse=True):
            if folded == repo_id.lower() or folded.startswith(repo_id.lower() + "/"):
                return repos[repo_id], rest[len(repo_id) :]
        return None, rest

    def _denied(self, repo: FakeRepo) -> bool:
        """Answer 401 for a gated/private repo without its token; True if answered."""
        if not (repo.gated or repo.private):
            return False
        if repo.token and self.headers.get("Authorization") == f"Bearer {repo.token}":
            return False
        if repo.gated:
            self._error(401, "GatedRepo", f"Access to model {repo.repo_id} is restricted.")
        else:
            self._error(401, "RepoNotFound", "Repository not found")
        return True

    def _commit(self, repo: FakeRepo, revision: str) -> str | None:
        sha = repo.resolve(revision)
        if sha is None:
            self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        return sha

    # -- /api/models/... -------------------------------------------------------------------

    def _api(self, method: str, rest: str, raw_path: str, query: dict[str, list[str]]) -> None:
        self._log["kind"] = "api"
        repo, tail = self._find_repo(rest)
        if repo is None:
            self._error(404, "RepoNotFound", "Repository not found")
            return
        self._log["repo"] = repo.repo_id
        if self._denied(repo):
            return
        # the revision segment is percent-encoded as one segment (refs%2Fpr%2F1): split raw
        raw_tail = raw_path[len("/api/models/") + len(quote(repo.repo_id)) :]
        parts = raw_tail.strip("/").split("/", 2) if raw_tail.strip("/") else []
        op = parts[0] if parts else "revision"
        revision = unquote(parts[1]) if len(parts) > 1 else "main"
        sub_path = unquote(parts[2]) if len(parts) > 2 else ""
        self._log["revision"] = revision
        if op not in ("revision", "tree", "paths-info") or (method == "POST") != (
            op == "paths-info"
        ):
            self._error(404, "EntryNotFound", f"unknown API path {raw_path}")
            return
        sha = self._commit(repo, revision)
        if sha is None:
            return
        files = repo.commits[sha]
        if op == "revision":
            info = _model_info(repo, sha, files, blobs=_true(query, "blobs"))
            if query.get("expand"):
                info = {k: v for k, v in info.items() if k in {"_id", "id", *query["expand"]}}
            self._json(200, info)
        elif op == "tree":
            recursive = _true(query, "recursive")
            entries = _tree(repo, files, sub_path, recursive)
            start = int(query.get("cursor", ["0"])[-1] or 0)
            headers = {}
            if start + TREE_PAGE < len(entries):
                flag = "&recursive=true" if recursive else ""
                url = f"{self.server.hub.url}{raw_path}?cursor={start + TREE_PAGE}{flag}"
                headers["Link"] = f'<{url}>; rel="next"'
            self._json(200, entries[start : start + TREE_PAGE], headers)
        else:
            form = parse_qs(self._body.decode())
            wanted = form.get("paths", [])
            self._json(200, [_file_entry(repo, p, files[p]) for p in wanted if p in files])

    # -- /{repo}/resolve/{rev}/{file} -------------------------------------------------------

    def _resolve(self, method: str, path: str, raw_path: str) -> None:
        repo, tail = self._find_repo(path.lstrip("/"))
        if repo is None:
            self._error(404, "RepoNotFound", "Repository not found")
            return
        self._log.update(kind="resolve", repo=repo.repo_id)
        raw_tail = raw_path.lstrip("/")[len(quote(repo.repo_id)) :]
        parts = raw_tail.strip("/").split("/", 2)
        if len(parts) < 3 or parts[0] != "resolve":
            self._error(404, "EntryNotFound", f"not a resolve URL: {raw_path}")
            return
        revision, filename = unquote(parts[1]), unquote(parts[2])
        self._log.update(revision=revision, filename=filename)
        if self._denied(repo):
            return
        sha = self._commit(repo, revision)
        if sha is None:
            return
        file = repo.commits[sha].get(filename)
        common = {"X-Repo-Commit": sha}
        if file is None:
            self._error(404, "EntryNotFound", f"{filename} does not exist", common)
            return
        if file.lfs:  # like the hub: metadata here, bytes from the CDN (another origin)
            location = (
                f"{self.server.hub.cdn_url}/{quote(repo.repo_id)}/{file.sha256}/{quote(filename)}"
            )
            self._send(
                302,
                b"",
                {
                    **common,
                    "ETag": f'"{file.blob_id}"',
                    "X-Linked-Etag": f'"{file.sha256}"',
                    "X-Linked-Size": str(len(file.data)),
                    "Location": location,
                },
            )
            return
        self._content(method, file.data, {**common, "ETag": f'"{file.blob_id}"'})

    # -- the CDN: /{repo}/{sha256}/{file} ---------------------------------------------------

    def _cdn(self, method: str, path: str) -> None:
        self._log["kind"] = "cdn"
        repo, tail = self._find_repo(path.lstrip("/"))
        sha256, _, filename = tail.strip("/").partition("/")
        self._log.update(repo=repo.repo_id if repo else None, filename=filename or None)
        data = None
        if repo is not None:
            data = next(
                (
                    f.data
                    for files in repo.commits.values()
                    for name, f in files.items()
                    if name == filename and f.sha256 == sha256
                ),
                None,
            )
        if data is None:
            self._send(404, b"not found")
            return
        self._content(method, data, {"ETag": f'"{sha256}"'})


def _true(query: dict[str, list[str]], name: str) -> bool:
    return query.get(name, ["false"])[-1].lower() in ("1", "true")


def _model_info(repo: FakeRepo, sha: str, files: dict[str, FakeFile], blobs: bool) -> dict:
    siblings = []
    for name, file in sorted(files.items()):
        entry: dict[str, Any] = {"rfilename": name}
        if blobs:
            size = repo.declared_sizes.get(name, len(file.data))
            entry.update(blobId=file.blob_id)
            if size is not None:
                entry["size"] = size
            if file.lfs and size is not None:
                lfs = {"sha256": file.sha256, "size": size, "pointerSize": LFS_POINTER_SIZE}
                entry["lfs"] = lfs
        siblings.append(entry)
    config = None
    if "config.json" in files:
        try:
            config = {"model_type": json.loads(files["config.json"].data).get("model_type")}
        except (ValueError, AttributeError):
            config = None
    return {
        "_id": hashlib.sha1(repo.repo_id.encode()).hexdigest()[:24],
        "id": repo.repo_id,
        "modelId": repo.repo_id,
        "author": repo.repo_id.split("/")[0] if "/" in repo.repo_id else None,
        "sha": sha,
        "lastModified": "2026-09-29T00:00:00.000Z",
        "createdAt": "2026-09-29T00:00:00.000Z",
        "private": repo.private,
        "gated": "manual" if repo.gated else False,
        "disabled": False,
        "downloads": 0,
        "likes": 0,
        "library_name": "transformers",
        "tags": ["transformers", "safetensors"],
        "config": config,
        "siblings": siblings,
    }


def _file_entry(repo: FakeRepo, name: str, file: FakeFile) -> dict[str, Any]:
    size = repo.declared_sizes.get(name, len(file.data))
    entry: dict[str, Any] = {"type": "file", "oid": file.blob_id, "size": size}
    entry["path"] = name
    if file.lfs and size is not None:
        entry["lfs"] = {"oid": file.sha256, "size": size, "pointerSize": LFS_POINTER_SIZE}
    return entry


def _tree(
    repo: FakeRepo, files: dict[str, FakeFile], sub_path: str, recursive: bool
) -> list[dict[str, Any]]:
    prefix = sub_path.strip("/") + "/" if sub_path.strip("/") else ""
    entries: dict[str, dict[str, Any]] = {}
    for name, file in sorted(files.items()):
        if not name.startswith(prefix):
            continue
        rest = name[len(prefix) :]
        if "/" in rest and not recursive:
            folder = prefix + rest.split("/", 1)[0]
            entries.setdefault(folder, {"type": "directory", "oid": git_blob_id(folder.encode())})
            entries[folder]["path"] = folder
            continue
        if recursive:
            parts = rest.split("/")[:-1]
            for i in range(len(parts)):
                folder = prefix + "/".join(parts[: i + 1])
                entries.setdefault(
                    folder,
                    {"type": "directory", "oid": git_blob_id(folder.encode()), "path": folder},
                )
        entries[name] = _file_entry(repo, name, file)
    return list(entries.values())
