"""The fake hub's repositories (commits, branches, tags, files) and the record of the
requests it answered: the data that :mod:`fake_hub` serves over HTTP (:mod:`fake_hub_http`)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

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
