"""The loopback fake hub (helpers/fake_hub.py) against huggingface_hub, and hub ids end to end.

huggingface_hub's own functions (model_info, hf_hub_download, get_hf_file_metadata, tree and
paths-info listings) must see what the real hub would show: commits, sizes, LFS metadata,
redirects, ranges and the errors it maps to exceptions. Then ``headforms.analyze`` on hub ids:
revisions (branch, tag, sha) give each commit's own weights (checked against a dense numpy
computation from the saved tensors), sharded checkpoints fetch only the shards holding Q/K, a
``pytorch_model.bin`` works, errors are one line, and a fresh process honours ``HF_ENDPOINT``.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import tiny_models as tm
from fake_hub import FakeHub, checkpoint_files, directory_files, git_blob_id
from oracle import dense_profile

from headforms import analyze
from headforms.errors import HubUnavailableError, ModelSpecError

REPO = "tiny-org/tiny-llama"


@pytest.fixture(scope="module")
def llamas(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two tiny random llamas (different seeds), saved with save_pretrained."""
    root = tmp_path_factory.mktemp("llamas")
    dirs = [root / f"seed{seed}" for seed in (0, 1)]
    for seed, directory in enumerate(dirs):
        tm.build("llama", directory, seed=seed)
    return dirs


def dense_energy(directory: Path) -> np.ndarray:
    """||S||^2/||L||^2 per head from dense L = K_h^T Q_h (numpy only, GQA h -> h // (H/Hkv))."""
    from safetensors.numpy import load_file

    config = json.loads((directory / "config.json").read_text())
    state = load_file(str(directory / "model.safetensors"))
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    n = config["hidden_size"] // heads
    out = []
    for layer in range(config["num_hidden_layers"]):
        prefix = f"model.layers.{layer}.self_attn."
        q = state[prefix + "q_proj.weight"].astype(np.float64).reshape(heads, n, -1)
        k = state[prefix + "k_proj.weight"].astype(np.float64).reshape(kv_heads, n, -1)
        for h in range(heads):
            out.append(dense_profile(k[h // (heads // kv_heads)].T @ q[h])["energy"])
    return np.array(out)


# ---------------------------------------------------------------------------------------------
# huggingface_hub against the fake


def test_model_info_lists_siblings_with_sizes_and_lfs(fake_hub: FakeHub, llamas: list[Path]):
    from huggingface_hub import HfApi, model_info

    files = checkpoint_files(llamas[0], "sharded")
    sha = fake_hub.add_repo(REPO).commit(files)
    info = model_info(REPO)
    assert info.id == REPO and info.sha == sha
    assert sorted(s.rfilename for s in info.siblings) == sorted(files)
    assert all(s.size is None for s in info.siblings)

    detailed = HfApi().model_info(REPO, revision=sha, files_metadata=True)
    for sibling in detailed.siblings:
        data = files[sibling.rfilename]
        assert sibling.size == len(data)
        if sibling.rfilename.endswith(".safetensors"):
            assert (
                sibling.lfs is not None and sibling.lfs.sha256 == hashlib.sha256(data).hexdigest()
            )
            assert sibling.lfs.size == len(data)
        else:
            assert sibling.lfs is None and sibling.blob_id == git_blob_id(data)


def test_hf_hub_download_regular_and_lfs_files_and_metadata(fake_hub: FakeHub, llamas):
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url

    files = checkpoint_files(llamas[0])
    sha = fake_hub.add_repo(REPO).commit(files)
    for name in ("config.json", "model.safetensors"):
        path = Path(hf_hub_download(REPO, name))
        assert path.read_bytes() == files[name]
        assert path.parent.name == sha  # snapshots/<commit>/
    weights = len(files["model.safetensors"])
    assert fake_hub.bytes_sent(REPO, "model.safetensors") == weights
    assert fake_hub.count(kind="cdn", method="GET", filename="model.safetensors") == 1

    meta = get_hf_file_metadata(hf_hub_url(REPO, "model.safetensors"))
    assert meta.commit_hash == sha and meta.size == weights
    assert meta.etag == hashlib.sha256(files["model.safetensors"]).hexdigest()
    assert meta.location.startswith(fake_hub.cdn_url)  # the redirect was not followed on HEAD
    config_meta = get_hf_file_metadata(hf_hub_url(REPO, "config.json"))
    assert config_meta.etag == git_blob_id(files["config.json"])
    assert config_meta.size == len(files["config.json"])

    fake_hub.reset_counts()  # a second download is a cache hit: HEAD only, no bytes
    hf_hub_download(REPO, "model.safetensors")
    assert fake_hub.bytes_sent() == 0


def test_revisions_branches_tags_and_shas(fake_hub: FakeHub, llamas: list[Path]):
    from huggingface_hub import hf_hub_download, model_info

    repo = fake_hub.add_repo(REPO)
    first = repo.commit(checkpoint_files(llamas[0]))
    second = repo.commit(checkpoint_files(llamas[1]))
    repo.tag("v1", first)
    dev = repo.commit({"config.json": b"{}"}, branch="dev")
    assert len({first, second, dev}) == 3
    assert model_info(REPO).sha == second
    assert model_info(REPO, revision="v1").sha == first
    assert model_info(REPO, revision="dev").sha == dev
    old = Path(hf_hub_download(REPO, "model.safetensors", revision=first)).read_bytes()
    new = Path(hf_hub_download(REPO, "model.safetensors")).read_bytes()
    assert old == (llamas[0] / "model.safetensors").read_bytes()
    assert new == (llamas[1] / "model.safetensors").read_bytes()


def test_range_requests_on_hub_and_cdn(fake_hub: FakeHub, llamas: list[Path]):
    from huggingface_hub.utils import get_session

    files = checkpoint_files(llamas[0])
    fake_hub.add_repo(REPO).commit(files)
    session = get_session()
    config = files["config.json"]
    part = session.get(
        f"{fake_hub.url}/{REPO}/resolve/main/config.json", headers={"Range": "bytes=2-9"}
    )
    assert part.status_code == 206 and part.content == config[2:10]
    assert part.headers["Content-Range"] == f"bytes 2-9/{len(config)}"
    weights = files["model.safetensors"]
    tail = session.get(
        f"{fake_hub.url}/{REPO}/resolve/main/model.safetensors", headers={"Range": "bytes=8-"}
    )  # follows the redirect to the CDN, the Range with it
    assert tail.status_code == 206 and tail.content == weights[8:]
    past = session.get(
        f"{fake_hub.url}/{REPO}/resolve/main/config.json",
        headers={"Range": f"bytes={len(config)}-"},
    )
    assert past.status_code == 416


def test_errors_map_to_huggingface_hub_exceptions(fake_hub: FakeHub, llamas: list[Path]):
    from huggingface_hub import hf_hub_download, model_info
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    fake_hub.add_repo(REPO).commit(checkpoint_files(llamas[0]))
    fake_hub.add_repo("org/gated", gated=True, token="hf_secret").commit({"config.json": b"{}"})
    fake_hub.add_repo("org/private", private=True).commit({"config.json": b"{}"})
    with pytest.raises(RepositoryNotFoundError):
        model_info("org/missing")
    with pytest.raises(RepositoryNotFoundError):
        hf_hub_download("org/missing", "config.json")
    with pytest.raises(RevisionNotFoundError):
        hf_hub_download(REPO, "config.json", revision="nope")
    with pytest.raises(RevisionNotFoundError):
        model_info(REPO, revision="nope")
    with pytest.raises(EntryNotFoundError):
        hf_hub_download(REPO, "missing.json")
    with pytest.raises(GatedRepoError):
        hf_hub_download("org/gated", "config.json")
    assert (
        Path(hf_hub_download("org/gated", "config.json", token="hf_secret")).read_bytes() == b"{}"
    )
    with pytest.raises(RepositoryNotFoundError):
        model_info("org/private")


def test_tree_and_paths_info(fake_hub: FakeHub, llamas: list[Path]):
    from huggingface_hub import HfApi

    files = checkpoint_files(llamas[0], "sharded")
    files["sub/extra.txt"] = b"x"
    fake_hub.add_repo(REPO).commit(files)
    api = HfApi()
    assert sorted(api.list_repo_files(REPO)) == sorted(files)
    top = {entry.path for entry in api.list_repo_tree(REPO)}
    assert "sub" in top and "sub/extra.txt" not in top
    index = "model.safetensors.index.json"
    infos = api.get_paths_info(REPO, [index, "model-00001-of-00003.safetensors", "nope"])
    sizes = {info.path: info.size for info in infos}
    assert sizes == {
        index: len(files[index]),
        "model-00001-of-00003.safetensors": len(files["model-00001-of-00003.safetensors"]),
    }


def test_checkpoint_layouts_hold_the_same_tensors(llamas: list[Path]):
    import io

    import torch
    from safetensors.torch import load, load_file

    reference = load_file(str(llamas[0] / "model.safetensors"))
    sharded = checkpoint_files(llamas[0], "sharded")
    index = json.loads(sharded["model.safetensors.index.json"])["weight_map"]
    assert len(set(index.values())) == 3 and set(index) == set(reference)
    merged = {}
    for shard in set(index.values()):
        merged.update(load(sharded[shard]))
    binary = torch.load(io.BytesIO(checkpoint_files(llamas[0], "bin")["pytorch_model.bin"]))
    for name, tensor in reference.items():
        assert torch.equal(merged[name], tensor) and torch.equal(binary[name], tensor)
    assert directory_files(llamas[0])["config.json"] == (llamas[0] / "config.json").read_bytes()


# ---------------------------------------------------------------------------------------------
# headforms on hub ids


def test_analyze_hub_revisions_read_each_commits_weights(fake_hub: FakeHub, llamas):
    repo = fake_hub.add_repo(REPO)
    first = repo.commit(checkpoint_files(llamas[0]))
    second = repo.commit(checkpoint_files(llamas[1]))
    repo.tag("v1", first)
    expected = [dense_energy(d) for d in llamas]
    for spec, want in (
        (REPO, expected[1]),
        (f"{REPO}@main", expected[1]),
        (f"{REPO}@v1", expected[0]),
        (f"{REPO}@{first}", expected[0]),
        (f"{REPO}@{second}", expected[1]),
    ):
        result = analyze(spec, use_cache=False)
        assert result.card.source_kind == "hub"
        np.testing.assert_allclose(result.heads["energy"], want, rtol=1e-9, err_msg=spec)


@pytest.mark.parametrize("layout", ["sharded", "bin"])
def test_analyze_hub_layouts(fake_hub: FakeHub, llamas: list[Path], layout: str):
    files = checkpoint_files(llamas[0], layout)
    fake_hub.add_repo(REPO).commit(files)
    result = analyze(REPO, use_cache=False)
    np.testing.assert_allclose(result.heads["energy"], dense_energy(llamas[0]), rtol=1e-9)
    if layout == "sharded":
        weight_map = json.loads(files["model.safetensors.index.json"])["weight_map"]
        attention = {f for t, f in weight_map.items() if ".q_proj." in t or ".k_proj." in t}
        idle = set(weight_map.values()) - attention
        assert idle, "the fixture must have a shard without Q/K"
        for shard in idle:
            assert fake_hub.bytes_sent(REPO, shard) == 0, f"{shard} was downloaded"
        for shard in attention:
            assert fake_hub.bytes_sent(REPO, shard) == len(files[shard])


def test_analyze_hub_by_range_requests(fake_hub: FakeHub, llamas, monkeypatch):
    monkeypatch.setenv("HEADFORMS_HUB_RANGES", "1")
    files = checkpoint_files(llamas[0], "sharded")
    fake_hub.add_repo(REPO).commit(files)
    result = analyze(REPO, use_cache=False)
    np.testing.assert_allclose(result.heads["energy"], dense_energy(llamas[0]), rtol=1e-9)
    weights = sum(len(v) for k, v in files.items() if k.endswith(".safetensors"))
    assert 0 < fake_hub.bytes_sent() < weights / 2


def test_analyze_hub_errors_are_one_line(fake_hub: FakeHub, llamas: list[Path]):
    fake_hub.add_repo(REPO).commit(checkpoint_files(llamas[0]))
    fake_hub.add_repo("org/gated", gated=True, token="t").commit(checkpoint_files(llamas[0]))
    fake_hub.add_repo("org/empty").commit({"README.md": b"nothing"})
    cases = [
        ("org/missing", ModelSpecError, "no model 'org/missing' on the hub"),
        (f"{REPO}@nope", ModelSpecError, "has no revision 'nope'"),
        ("org/gated", HubUnavailableError, "gated"),
        ("org/empty", ModelSpecError, "config.json"),
    ]
    for spec, error, message in cases:
        with pytest.raises(error, match=message) as caught:
            analyze(spec, use_cache=False)
        assert "\n" not in str(caught.value)


@pytest.mark.slow
def test_cli_in_a_fresh_process_uses_hf_endpoint(fake_hub: FakeHub, llamas, tmp_path: Path):
    sha = fake_hub.add_repo(REPO).commit(checkpoint_files(llamas[0]))
    out = tmp_path / "heads.csv"
    env = {**os.environ, **fake_hub.env(tmp_path / "fresh-cache")}
    done = subprocess.run(
        [sys.executable, "-m", "headforms", "analyze", f"{REPO}@{sha}", "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(out)
    np.testing.assert_allclose(table["energy"], dense_energy(llamas[0]), rtol=1e-9)
    assert (tmp_path / "fresh-cache").is_dir()  # the fresh process used the given hub cache
