"""Hosted mode: path confinement, spec sanitising, hub allow-list and the up-front size limit."""

from __future__ import annotations

import os
import shutil
import types
from pathlib import Path
from unittest.mock import ANY

import pytest
import tiny_models

from headforms import ModelAnalysis, engine, sources
from headforms.errors import HeadformsError, ModelSpecError, NotAllowedError
from headforms.hosted import policy as hosted
from headforms.models import source as opening
from headforms.settings import ALLOWLIST_ENV, HOSTED_ENV, MAX_BYTES_ENV, ROOTS_ENV


def analyze(spec: str, **options: object) -> ModelAnalysis:
    """``engine.analyze`` within the policy in force, as the command line and the dashboard
    hand it in (None when hosted mode is off)."""
    return engine.analyze(spec, policy=hosted.policy_in_force(), **options)  # type: ignore[arg-type]


def locate(spec: str) -> sources.Located:
    """``sources.locate`` within the policy in force."""
    return sources.locate(spec, hosted.policy_in_force())


def check_spec(spec: str) -> None:
    """The policy's check of a spec's text."""
    hosted.Policy.from_env().parse(spec)


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A model root with a tiny model, the same model outside it, and hostile links inside it."""
    base = tmp_path_factory.mktemp("hosted")
    root, outside = base / "models", base / "outside"
    root.mkdir()
    outside.mkdir()
    model = root / "tiny"
    tiny_models.build("llama", model)
    shutil.copytree(model, outside / "tiny")
    (root / "escape").symlink_to(outside / "tiny")  # a directory link leaving the root
    (root / "alias").symlink_to(model)  # a link that stays inside the root: fine
    linked = root / "linked-weights"  # a real directory whose weight file leaves the root
    linked.mkdir()
    shutil.copy(model / "config.json", linked / "config.json")
    (linked / "model.safetensors").symlink_to(outside / "tiny" / "model.safetensors")
    sharded = root / "sharded"  # an index naming a shard outside its directory
    sharded.mkdir()
    shutil.copy(model / "config.json", sharded / "config.json")
    (sharded / "model.safetensors.index.json").write_text(
        '{"weight_map": {"model.layers.0.self_attn.q_proj.weight": '
        '"../../outside/tiny/model.safetensors"}}'
    )
    return {"base": base, "root": root, "outside": outside, "model": model}


@pytest.fixture
def hosted_env(monkeypatch: pytest.MonkeyPatch, layout: dict[str, Path]) -> dict[str, Path]:
    """Hosted mode on, one model root, no allow-list (no hub), the default size limit."""
    monkeypatch.setenv(HOSTED_ENV, "1")
    monkeypatch.setenv(ROOTS_ENV, str(layout["root"]))
    monkeypatch.delenv(ALLOWLIST_ENV, raising=False)
    monkeypatch.delenv(MAX_BYTES_ENV, raising=False)
    return layout


@pytest.fixture
def no_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every way of reading a model fail loudly: a refusal must come before any read."""

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("a model file was opened before the policy refused it")

    # The names as the callers see them: headforms.models.source and headforms.sources import
    # these by name, so patching them where they are defined would guard nothing.
    for name in ("SafetensorsReader", "TorchBinReader", "GGUFReader", "transformers_config"):
        monkeypatch.setattr(opening, name, forbidden)
    remote = types.SimpleNamespace(for_hub=forbidden)  # range requests (HEADFORMS_HUB_RANGES)
    monkeypatch.setattr(opening, "RemoteSafetensorsReader", remote)
    monkeypatch.setattr(sources, "fetch_hub_files", forbidden)  # what sources.fetch calls


TRAVERSAL = [
    ("{root}/../outside/tiny", "path traversal"),
    ("../outside/tiny", "path traversal"),
    ("{root}/tiny/../../outside/tiny", "path traversal"),
    ("{outside}/tiny", "outside the model directories"),
    ("/etc", "outside the model directories"),
    ("/etc/passwd", "outside the model directories"),
    ("{root}/escape", "symbolic link"),
    ("{root}/linked-weights", "symbolic link"),
    ("~", "home-directory"),
    ("~/models/tiny", "home-directory"),
    ("~root/.ssh/id_rsa", "home-directory"),
]


def test_a_shard_index_naming_files_elsewhere_is_refused(
    hosted_env: dict[str, Path], no_reading: None
) -> None:
    """An index naming '../..' shards is refused before any shard is looked at."""
    with pytest.raises(HeadformsError, match="not a valid shard index"):
        analyze(str(hosted_env["root"] / "sharded"))


@pytest.mark.parametrize(("spec", "message"), TRAVERSAL)
def test_paths_outside_the_roots_are_refused(
    hosted_env: dict[str, Path], no_reading: None, spec: str, message: str
) -> None:
    """Traversal, absolute paths elsewhere, symlink escapes and '~' are refused before reading."""
    spec = spec.format(root=hosted_env["root"], outside=hosted_env["outside"])
    with pytest.raises(NotAllowedError, match=message):
        analyze(spec)


def test_refusals_do_not_tell_which_relative_names_exist(
    hosted_env: dict[str, Path], no_reading: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bare relative name is classified by its text alone: an existing folder of the server's
    working directory and a missing one get the same answer."""
    (tmp_path / "secret" / "weights").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    answers = []
    for spec in ("secret/weights", "absent/weights"):
        with pytest.raises(NotAllowedError) as caught:
            analyze(spec)
        answers.append(str(caught.value).replace(spec, "SPEC"))
    assert answers[0] == answers[1]


METACHARACTERS = [
    ("gpt2;rm -rf /", "shell metacharacter ';'"),
    ("gpt2|cat /etc/passwd", "shell metacharacter '|'"),
    ("$(id)", "shell metacharacter '\\$'"),
    ("`id`", "shell metacharacter '`'"),
    ("gpt2 && id", "shell metacharacter '&'"),
    ("gpt2>out", "shell metacharacter '>'"),
    ("gpt2\nid", "a newline"),
    ("gpt2\x00.gguf", "a NUL byte"),
    ("gpt2\rx", "a carriage return"),
    ("gpt2\x1b[31m", "control character"),
    ("x" * 600, "at most 512"),
]


@pytest.mark.parametrize(("spec", "message"), METACHARACTERS)
def test_shell_metacharacters_are_refused(
    hosted_env: dict[str, Path], no_reading: None, spec: str, message: str
) -> None:
    """Specs with shell metacharacters or control characters never reach the engine."""
    with pytest.raises(NotAllowedError, match=message) as info:
        analyze(spec)
    assert "\n" not in str(info.value)


def test_no_roots_means_no_local_paths(
    hosted_env: dict[str, Path], no_reading: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without HEADFORMS_MODEL_ROOTS, hosted mode opens no local path at all."""
    monkeypatch.delenv(ROOTS_ENV)
    with pytest.raises(NotAllowedError, match="local paths are disabled"):
        analyze(str(hosted_env["model"]))


def test_allowed_paths_and_bundled_models_still_work(hosted_env: dict[str, Path]) -> None:
    """A model under a root (also through a link that stays inside) analyses as usual."""
    direct = analyze(str(hosted_env["model"]), use_cache=False)
    aliased = analyze(str(hosted_env["root"] / "alias"), use_cache=False)
    assert len(direct.heads) == tiny_models.LAYERS * tiny_models.H
    assert direct.heads.equals(aliased.heads)
    check_spec("smollm2-135m")  # bundled models need no root
    assert locate("minilm-l6").kind == "bundled"


def test_hub_allowlist(
    hosted_env: dict[str, Path], no_reading: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exact ids and org/* globs pass the allow-list (then the offline hub decides); others not."""
    monkeypatch.setenv(ALLOWLIST_ENV, "gpt2, openai-community/*")
    for spec in ("gpt2", "openai-community/gpt2", "openai-community/gpt2@main", "GPT2"):
        check_spec(spec)
    for spec in ("EleutherAI/pythia-70m", "openai-community", "gpt2-xl", "evil/gpt2"):
        with pytest.raises(NotAllowedError, match="not allowed on this server"):
            check_spec(spec)
    # each revision is another download: only main, unless an entry names revisions
    for spec in ("gpt2@refs/pr/1", "openai-community/gpt2@0123abcd"):
        with pytest.raises(NotAllowedError, match="a revision other than main needs an entry"):
            check_spec(spec)
    monkeypatch.setenv(ALLOWLIST_ENV, "gpt2@v*, openai-community/*@*")
    for spec in ("gpt2@v1.0", "openai-community/gpt2@0123abcd", "openai-community/gpt2"):
        check_spec(spec)
    with pytest.raises(NotAllowedError, match="not allowed on this server"):
        check_spec("gpt2@refs/pr/1")
    with pytest.raises(NotAllowedError, match="not allowed on this server"):
        analyze("EleutherAI/pythia-70m")
    with pytest.raises(ModelSpecError, match="hub id"):
        analyze("not a hub id")


def test_size_limit_refuses_local_models_before_reading(
    hosted_env: dict[str, Path], no_reading: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model larger than HEADFORMS_MAX_MODEL_BYTES is refused from its file sizes alone."""
    size = (hosted_env["model"] / "model.safetensors").stat().st_size
    monkeypatch.setenv(MAX_BYTES_ENV, str(size // 2))
    with pytest.raises(NotAllowedError, match="more than this server's limit") as info:
        analyze(str(hosted_env["model"]))
    assert "nothing was downloaded or read" in str(info.value)


def test_size_limit_refuses_a_large_gguf_before_reading(
    hosted_env: dict[str, Path], no_reading: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bundled SmolLM2 GGUF opened as a local file under a root is measured, not read."""
    gguf = sources.BUNDLED_MODELS["smollm2-135m"].locate()
    roots = os.pathsep.join([str(hosted_env["root"]), str(gguf.parent)])
    monkeypatch.setenv(ROOTS_ENV, roots)
    monkeypatch.setenv(MAX_BYTES_ENV, str(10 * 2**20))
    with pytest.raises(NotAllowedError, match=r"MiB of weights to read, more than .* 10 MiB"):
        analyze(str(gguf))


def test_size_limit_at_the_boundary(
    hosted_env: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model of exactly the limit is served; one byte less is refused."""
    model = hosted_env["model"]
    total = (model / "model.safetensors").stat().st_size  # exactly the weight files read
    monkeypatch.setenv(MAX_BYTES_ENV, str(total))
    assert len(analyze(str(model), use_cache=False).heads) > 0
    monkeypatch.setenv(MAX_BYTES_ENV, str(total - 1))
    with pytest.raises(NotAllowedError, match="limit"):
        analyze(str(model), use_cache=False)


def _hub_listing(
    monkeypatch: pytest.MonkeyPatch, sha: str, files: dict[str, int | None], folders: tuple = ()
) -> list[dict[str, object]]:
    """Make huggingface_hub's ``model_info`` answer ``sha`` and its tree listing ``files``
    (name -> declared size) and ``folders``; the calls made, recorded."""
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile, RepoFolder

    calls: list[dict[str, object]] = []

    def model_info(self: HfApi, repo_id: str, **kwargs: object) -> types.SimpleNamespace:
        calls.append({"call": "model_info", "repo_id": repo_id, **kwargs})
        return types.SimpleNamespace(id=repo_id, sha=sha)

    def list_repo_tree(self: HfApi, repo_id: str, **kwargs: object) -> object:
        calls.append({"call": "list_repo_tree", "repo_id": repo_id, **kwargs})
        for name, size in files.items():
            yield RepoFile(path=name, size=size, oid="0" * 40)
        for name in folders:
            yield RepoFolder(path=name, oid="1" * 40)

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(HfApi, "model_info", model_info)
    monkeypatch.setattr(HfApi, "list_repo_tree", list_repo_tree)
    return calls


def test_size_limit_uses_hub_metadata_before_download(
    hosted_env: dict[str, Path], no_reading: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hub models are measured from the hub's file metadata, the files the engine would read
    and only those: only config.json is downloaded before the refusal."""
    downloads: list[str] = []
    config = hosted_env["model"] / "config.json"
    files = {
        "config.json": config.stat().st_size,
        "model-00001-of-00002.safetensors": 5 * 2**30,
        "model-00002-of-00002.safetensors": 5 * 2**30,
        "pytorch_model.bin": 20 * 2**30,
    }
    calls = _hub_listing(monkeypatch, "c" * 40, files, folders=("subfolder",))

    def hf_hub_download(repo_id: str, filename: str, **kwargs: object) -> str:
        downloads.append(filename)
        assert filename == "config.json", f"{filename} was downloaded before the size check"
        return str(config)

    monkeypatch.setattr("huggingface_hub.hf_hub_download", hf_hub_download)
    monkeypatch.setenv(ALLOWLIST_ENV, "big-org/*@*")
    monkeypatch.setenv(MAX_BYTES_ENV, str(19 * 2**30))
    # As transformers would: without model.safetensors (or its index) the .bin is the weight
    # file; the index-less shards and the sub-folder are not read, so not counted.
    with pytest.raises(NotAllowedError, match=r"20 GiB of weights to read, more than .* 19 GiB"):
        analyze("big-org/big-model@v1")
    assert calls[0] == {
        "call": "model_info",
        "repo_id": "big-org/big-model",
        "revision": "v1",
        "expand": ["sha"],  # the commit alone: no listing of every file of the repository
        "timeout": ANY,
    }
    assert calls[1]["revision"] == "c" * 40 and calls[1]["recursive"] is False
    assert downloads == ["config.json"]
    monkeypatch.setenv(MAX_BYTES_ENV, str(20 * 2**30))
    located = locate("big-org/big-model@v1")  # at the limit: passes
    assert [f.name for f in located.weights] == ["pytorch_model.bin"]


def test_hub_file_of_undeclared_size_is_refused(
    hosted_env: dict[str, Path], no_reading: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A size the hub does not declare cannot be checked: hosted mode refuses (fails closed)."""
    config = hosted_env["model"] / "config.json"
    _hub_listing(monkeypatch, "d" * 40, {"config.json": None, "model.safetensors": None})
    monkeypatch.setattr("huggingface_hub.hf_hub_download", lambda *a, **k: str(config))
    monkeypatch.setenv(ALLOWLIST_ENV, "*")
    with pytest.raises(NotAllowedError, match="model.safetensors is not declared"):
        analyze("org/model")


def test_hub_ids_need_an_allowlist_in_hosted_mode(
    hosted_env: dict[str, Path], no_reading: None
) -> None:
    with pytest.raises(NotAllowedError, match="hub models are disabled on this server"):
        analyze("gpt2")


def test_hosted_mode_off_changes_nothing(
    monkeypatch: pytest.MonkeyPatch, layout: dict[str, Path]
) -> None:
    """Without HEADFORMS_HOSTED every local path opens as before and no policy applies."""
    for value in ("", "0", "no"):
        monkeypatch.setenv(HOSTED_ENV, value)
        assert not hosted.enabled()
    monkeypatch.setenv(ROOTS_ENV, str(layout["root"]))
    monkeypatch.setenv(MAX_BYTES_ENV, "1")
    res = analyze(str(layout["outside"] / "tiny"), use_cache=False)
    assert len(res.heads) == tiny_models.LAYERS * tiny_models.H
    assert len(analyze(str(layout["root"] / "escape"), use_cache=False).heads) == len(res.heads)
    with pytest.raises(ModelSpecError, match="no such file"):
        analyze(str(layout["base"] / "missing;dir"))
    assert issubclass(NotAllowedError, HeadformsError)


def test_size_limit_offline_measures_the_local_hub_cache(
    hosted_env: dict[str, Path],
    no_reading: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """Offline, a hub model is measured in the local hub cache (its snapshot), not read."""
    snapshot = tmp_path / "hub" / "models--some-org--some-model" / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("a" * 40)
    shutil.copy(hosted_env["model"] / "config.json", snapshot / "config.json")
    with (snapshot / "model.safetensors").open("wb") as fh:
        fh.truncate(3 * 2**20)  # sparse: only its size matters
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv(ALLOWLIST_ENV, "some-org/*")
    monkeypatch.setenv(MAX_BYTES_ENV, str(2**20))
    with pytest.raises(NotAllowedError, match=r"3 MiB of weights"):
        analyze("some-org/some-model")
    monkeypatch.setenv(MAX_BYTES_ENV, str(4 * 2**20))
    assert locate("some-org/some-model").weight_bytes == 3 * 2**20
