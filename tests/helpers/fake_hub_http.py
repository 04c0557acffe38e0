"""The HTTP side of the fake hub (:mod:`fake_hub`): the API, resolve and CDN servers and the
answers huggingface_hub expects from them."""

from __future__ import annotations

import hashlib
import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from fake_hub_repos import LFS_POINTER_SIZE, TREE_PAGE, FakeFile, FakeRepo, Request, git_blob_id

if TYPE_CHECKING:  # the hub that owns the servers (fake_hub imports this module)
    from fake_hub import FakeHub


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
