"""Range-request reading of hub checkpoints (headforms.remote) against a loopback HTTP server.

A sharded llama-shaped safetensors checkpoint (attention plus larger MLP "filler" tensors) is
served by a small ``http.server`` on 127.0.0.1 that honours ``Range`` and counts the bytes it
sends. The remote reader must return exactly the local reader's tensors, fetch only headers and
Q/K ranges (a small fraction of the files), reuse its disk cache, and fail clearly on a server
without range support or a corrupt header. No other address is contacted.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from repo import REPO as CHECKOUT
from safetensors.torch import save_file

from headforms.errors import CorruptFileError, HubUnavailableError
from headforms.models.source import open_model
from headforms.readers import SafetensorsReader
from headforms.readers.remote import RangeFetcher, RemoteSafetensorsReader, ranges_enabled
from headforms.streaming import compute_analysis

REPO, COMMIT = "org/tiny-llama", "0123456789abcdef0123456789abcdef01234567"
LAYERS, SHARDS, HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN = 6, 3, 48, 4, 2, 12, 2048
SERVER_LIFETIME_S = 120.0


def _write_checkpoint(directory: Path) -> None:
    """A llama checkpoint in 3 shards: bf16 attention, float32 MLP tensors 20x larger."""
    gen = torch.Generator().manual_seed(7)
    config = {
        "model_type": "llama",
        "hidden_size": HIDDEN,
        "intermediate_size": FFN,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "head_dim": HEAD_DIM,
        "vocab_size": 100,
    }
    (directory / "config.json").write_text(json.dumps(config))
    weight_map = {}
    per_shard = LAYERS // SHARDS
    for shard in range(SHARDS):
        fname = f"model-{shard + 1:05d}-of-{SHARDS:05d}.safetensors"
        tensors = {}
        for i in range(shard * per_shard, (shard + 1) * per_shard):
            attn, mlp = f"model.layers.{i}.self_attn.", f"model.layers.{i}.mlp."
            rows = {"q_proj": HEADS * HEAD_DIM, "k_proj": KV_HEADS * HEAD_DIM}
            rows["v_proj"] = KV_HEADS * HEAD_DIM
            for proj, n_rows in rows.items():
                w = torch.randn(n_rows, HIDDEN, generator=gen).to(torch.bfloat16)
                tensors[attn + proj + ".weight"] = w
            for proj in ("gate_proj", "up_proj", "down_proj"):
                shape = (HIDDEN, FFN) if proj == "down_proj" else (FFN, HIDDEN)
                tensors[mlp + proj + ".weight"] = torch.randn(shape, generator=gen)
        save_file(tensors, str(directory / fname))
        weight_map.update(dict.fromkeys(tensors, fname))
    index = {"metadata": {}, "weight_map": weight_map}
    (directory / "model.safetensors.index.json").write_text(json.dumps(index))


class _Handler(BaseHTTPRequestHandler):
    """Serves ``/<repo>/resolve/<commit>/<file>`` (and ``/norange/...`` ignoring Range), and the
    model's metadata at ``/api/models/<repo>[/revision/<rev>]`` (commit, files and sizes) and
    its top-level files at ``/api/models/<repo>/tree/<rev>``.

    HEAD answers with the headers ``hf_hub_download`` reads (commit, etag, size). Bytes are
    counted before they are written, so a client that has read them sees them counted.
    """

    def _model_info(self) -> bool:
        server: _Server = self.server  # type: ignore[assignment]
        path = self.path.split("?")[0]
        files = [p for p in sorted(server.root.iterdir()) if p.is_file()]
        if path in (f"/api/models/{REPO}/tree/{r}" for r in (COMMIT, "main")):
            answer: Any = [  # list_repo_tree: the top-level files, one page
                {"type": "file", "path": p.name, "size": p.stat().st_size, "oid": p.name}
                for p in files
            ]
        elif path in (
            f"/api/models/{REPO}",
            *(f"/api/models/{REPO}/revision/{r}" for r in (COMMIT, "main")),
        ):
            siblings = [{"rfilename": p.name, "size": p.stat().st_size} for p in files]
            answer = {"id": REPO, "sha": COMMIT, "siblings": siblings}
        else:
            return False
        body = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return True

    def _file(self) -> Path | None:
        server: _Server = self.server  # type: ignore[assignment]
        prefix = f"/{'norange/' if self.path.startswith('/norange/') else ''}{REPO}/resolve/"
        rest = self.path[len(prefix) :] if self.path.startswith(prefix) else ""
        revision, _, name = rest.partition("/")
        path = server.root / name
        if revision not in (COMMIT, "main") or not name or "/" in name or ".." in name:
            return None
        return path if path.is_file() else None

    def _not_found(self) -> None:
        self.send_response(404)
        self.send_header("X-Error-Code", "EntryNotFound")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_HEAD(self) -> None:  # noqa: N802 (http.server's name)
        path = self._file()
        if path is None:
            self._not_found()
            return
        data = path.read_bytes()
        self.send_response(200)
        self.send_header("X-Repo-Commit", COMMIT)
        self.send_header("ETag", '"' + hashlib.sha256(data).hexdigest() + '"')
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        server: _Server = self.server  # type: ignore[assignment]
        if self._model_info():
            return
        ignore_range = self.path.startswith("/norange/")
        path = self._file()
        if path is None:
            self._not_found()
            return
        data = path.read_bytes()
        size = len(data)
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if match and not ignore_range:
            start = int(match.group(1))
            end = min(int(match.group(2)) if match.group(2) else size - 1, size - 1)
            if start >= size:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = data[start : end + 1]
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        else:
            body = data
            self.send_response(200)
        self.send_header("X-Repo-Commit", COMMIT)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with server.lock:  # counted first: the client cannot see the body before its count
            server.bytes_sent += len(body)
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, root: Path):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.root = root
        self.bytes_sent = 0
        self.lock = threading.Lock()


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("tiny-llama")
    _write_checkpoint(directory)
    return directory


@pytest.fixture(scope="module")
def server(checkpoint: Path):
    """The loopback server, shut down after the module (or after SERVER_LIFETIME_S at most)."""
    srv = _Server(checkpoint)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    watchdog = threading.Timer(SERVER_LIFETIME_S, srv.shutdown)
    watchdog.daemon = True
    watchdog.start()
    yield srv
    watchdog.cancel()
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=5)


@pytest.fixture(autouse=True)
def _online(monkeypatch: pytest.MonkeyPatch) -> None:
    """conftest sets HF_HUB_OFFLINE; these tests only talk to the loopback server.

    Both places matter: headforms reads the variable from os.environ when it locates a model,
    huggingface_hub's HTTP session (which the range fetcher uses) reads its constant, fixed
    when huggingface_hub was first imported (before or after the variable was set).
    """
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


def _base_url(server: _Server, prefix: str = "") -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}/{prefix}{REPO}/resolve/{COMMIT}/"


def _shards(checkpoint: Path) -> list[str]:
    return sorted(p.name for p in checkpoint.glob("*.safetensors"))


def _qk_names(reader: SafetensorsReader) -> list[str]:
    return [n for n in reader.names() if re.search(r"self_attn\.[qk]_proj\.weight$", n)]


def test_remote_tensors_equal_local_and_transfer_is_small(
    checkpoint: Path, server: _Server, tmp_path: Path
) -> None:
    local = SafetensorsReader(sorted(checkpoint.glob("*.safetensors")))
    sent_before = server.bytes_sent
    fetcher = RangeFetcher(_base_url(server))
    remote = RemoteSafetensorsReader(fetcher, _shards(checkpoint), tmp_path / "ranges")
    assert sorted(remote.names()) == sorted(local.names())
    for name in local.names():
        assert remote.shape(name) == local.shape(name)
        assert remote.storage_dtype(name) == local.storage_dtype(name)
    names = _qk_names(local)
    assert len(names) == 2 * LAYERS
    for name in names:
        ours = remote.read(name)
        assert ours.dtype == np.float64
        np.testing.assert_array_equal(ours, local.read(name))
    files_size = sum(p.stat().st_size for p in checkpoint.glob("*.safetensors"))
    qk_bytes = sum(int(np.prod(local.shape(n))) * 2 for n in names)
    assert remote.remote_bytes == files_size
    assert fetcher.bytes_received == server.bytes_sent - sent_before
    assert qk_bytes <= fetcher.bytes_received < 0.05 * files_size
    # headers: one probe per shard (the probe may cover a whole small file's start)
    assert fetcher.requests == SHARDS + len(names)


def test_second_reader_uses_the_disk_cache(
    checkpoint: Path, server: _Server, tmp_path: Path
) -> None:
    local = SafetensorsReader(sorted(checkpoint.glob("*.safetensors")))
    names = _qk_names(local)
    first = RemoteSafetensorsReader(
        RangeFetcher(_base_url(server)), _shards(checkpoint), tmp_path / "ranges"
    )
    for name in names:
        first.read(name)
    fetcher = RangeFetcher(_base_url(server))
    second = RemoteSafetensorsReader(fetcher, _shards(checkpoint), tmp_path / "ranges")
    for name in names:
        np.testing.assert_array_equal(second.read(name), local.read(name))
    assert fetcher.bytes_received == 0 and fetcher.requests == 0


def test_damaged_cache_entry_is_fetched_again(
    checkpoint: Path, server: _Server, tmp_path: Path
) -> None:
    local = SafetensorsReader(sorted(checkpoint.glob("*.safetensors")))
    name = _qk_names(local)[0]
    root = tmp_path / "ranges"
    RemoteSafetensorsReader(RangeFetcher(_base_url(server)), _shards(checkpoint), root).read(name)
    for entry in root.rglob("*.bin"):
        entry.write_bytes(entry.read_bytes()[:-3])  # truncated by a crash or a full disk
    fetcher = RangeFetcher(_base_url(server))
    reader = RemoteSafetensorsReader(fetcher, _shards(checkpoint), root)
    np.testing.assert_array_equal(reader.read(name), local.read(name))
    assert fetcher.requests == 1


def test_engine_results_match_the_local_checkpoint(
    checkpoint: Path, server: _Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    host, port = server.server_address[:2]
    monkeypatch.setenv("HF_ENDPOINT", f"http://{host}:{port}")
    source = open_model(str(checkpoint))
    expected = compute_analysis(source)
    source.reader = RemoteSafetensorsReader.for_hub(
        REPO, COMMIT, _shards(checkpoint), cache_root=tmp_path / "ranges"
    )
    result = compute_analysis(source)
    assert len(result.heads) == LAYERS * HEADS
    for column in ("a", "b", "c", "d", "energy", "pairing", "parity"):
        assert result.heads[column].tolist() == expected.heads[column].tolist()
    for key, values in expected.spectra.items():
        np.testing.assert_array_equal(result.spectra[key], values)


_CHILD = """
import json, sys
from headforms.streaming import compute_analysis
from headforms.models.source import open_model
source = open_model(sys.argv[1])
result = compute_analysis(source)
print(json.dumps({"reader": type(source.reader).__name__,
                  "energy": result.heads["energy"].tolist(),
                  "eig_s": result.spectra["eig_s"].tolist()}))
"""


@pytest.mark.slow
def test_hub_spec_with_ranges_reads_only_headers_and_qk(
    checkpoint: Path, server: _Server, tmp_path: Path
) -> None:
    """``HF_ENDPOINT`` + ``HEADFORMS_HUB_RANGES=1``: a hub id downloads config and index only.

    In a child process with the variables set in its environment, exactly as a user's process
    would have them.
    """
    host, port = server.server_address[:2]
    env = {
        **os.environ,
        "HF_ENDPOINT": f"http://{host}:{port}",
        "HF_HUB_OFFLINE": "0",
        "HF_HUB_CACHE": str(tmp_path / "hub"),
        "HEADFORMS_HUB_RANGES": "1",
        "HEADFORMS_CACHE_DIR": str(tmp_path / "headforms"),
        "HEADFORMS_THREADS": "1",
    }
    sent_before = server.bytes_sent
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, f"{REPO}@{COMMIT}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=CHECKOUT,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    out = json.loads(child.stdout.strip().splitlines()[-1])
    expected = compute_analysis(open_model(str(checkpoint)))
    assert out["reader"] == "RemoteSafetensorsReader"
    assert out["energy"] == expected.heads["energy"].tolist()
    np.testing.assert_array_equal(np.array(out["eig_s"]), expected.spectra["eig_s"])
    files_size = sum(p.stat().st_size for p in checkpoint.glob("*.safetensors"))
    assert server.bytes_sent - sent_before < 0.05 * files_size
    assert not list((tmp_path / "hub").rglob("*.safetensors"))  # no shard was downloaded
    assert list((tmp_path / "headforms" / "hub-ranges").rglob("*.bin"))


@pytest.mark.slow
def test_offline_with_ranges_reads_the_snapshot_already_on_disk(
    checkpoint: Path, server: _Server, tmp_path: Path
) -> None:
    """With ``HEADFORMS_HUB_RANGES=1`` but ``HF_HUB_OFFLINE=1``, a snapshot already in the hub
    cache is read from disk: no range request (which offline mode forbids) is attempted."""
    host, port = server.server_address[:2]
    env = {
        **os.environ,
        "HF_ENDPOINT": f"http://{host}:{port}",
        "HF_HUB_CACHE": str(tmp_path / "hub"),
        "HEADFORMS_CACHE_DIR": str(tmp_path / "headforms"),
        "HEADFORMS_THREADS": "1",
    }
    outputs = []
    for offline, ranges in (("0", "0"), ("1", "1")):  # download whole, then offline + ranges
        child = subprocess.run(
            [sys.executable, "-c", _CHILD, f"{REPO}@{COMMIT}"],
            env={**env, "HF_HUB_OFFLINE": offline, "HEADFORMS_HUB_RANGES": ranges},
            capture_output=True,
            text=True,
            timeout=120,
            cwd=CHECKOUT,
        )
        assert child.returncode == 0, child.stderr[-2000:]
        outputs.append(json.loads(child.stdout.strip().splitlines()[-1]))
    assert [out["reader"] for out in outputs] == ["SafetensorsReader", "SafetensorsReader"]
    assert outputs[1]["energy"] == outputs[0]["energy"]
    assert not (tmp_path / "headforms" / "hub-ranges").exists()


def test_server_without_range_support_is_a_clear_error(
    checkpoint: Path, server: _Server, tmp_path: Path
) -> None:
    fetcher = RangeFetcher(_base_url(server, prefix="norange/"))
    with pytest.raises(HubUnavailableError, match="ignored the range request"):
        RemoteSafetensorsReader(fetcher, _shards(checkpoint), tmp_path / "ranges")


def test_missing_shard_and_corrupt_header_are_clear_errors(
    checkpoint: Path, server: _Server, tmp_path: Path
) -> None:
    fetcher = RangeFetcher(_base_url(server))
    with pytest.raises(HubUnavailableError, match="HTTP 404"):
        RemoteSafetensorsReader(fetcher, ["no-such-shard.safetensors"], tmp_path / "a")
    bad = checkpoint / "corrupt.safetensors"
    bad.write_bytes((10**9).to_bytes(8, "little") + b"{}")
    try:
        with pytest.raises(CorruptFileError, match="header length"):
            RemoteSafetensorsReader(fetcher, [bad.name], tmp_path / "b")
    finally:
        bad.unlink()


def test_ranges_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HEADFORMS_HUB_RANGES", raising=False)
    assert not ranges_enabled()
    monkeypatch.setenv("HEADFORMS_HUB_RANGES", "1")
    assert ranges_enabled()
    monkeypatch.setenv("HEADFORMS_HUB_RANGES", "0")
    assert not ranges_enabled()
