"""The architecture table: where each model family keeps its Q/K weights and how to split them.

One :class:`Architecture` row per family drives extraction for every checkpoint format:
tensor name patterns (suffixes, so ``transformer.``/``model.`` prefixes do not matter), the
fused layout exactly as the model's forward pass splits it, grouped-query mapping, RoPE
convention and QK-norm gains. GGUF files use the same rows through ``gguf_arch``; a
:class:`TensorScheme` says how one checkpoint format names and stores those tensors, so that
extraction always sees them in one convention (Hugging Face row order, full norm gains).
Every stage consults this table: sources (which shards hold attention tensors), models
(extraction), the engine (shapes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .errors import CorruptFileError, UnsupportedArchitectureError

Layout = Literal["separate", "conv1d_qkv", "per_head_qkv"]


ROTARY = "rotary"
"""The ``positional`` value of models whose positions enter the form as a RoPE rotation."""


@dataclass(frozen=True)
class Architecture:
    """How one model family stores and uses its query/key projections.

    Patterns contain ``{i}`` for the layer index and match tensor names by suffix.
    ``layout``: ``separate`` (q/k weights ``[H n, N]``, out x in), ``conv1d_qkv`` (GPT-2 Conv1D
    ``[N, 3N]``, in x out, q|k|v contiguous) or ``per_head_qkv`` (fused ``[3N, N]`` interleaved per
    head as ``(H, 3, n)``: GPT-NeoX, BLOOM). ``norm_gain_offset``: QK-norm gain = offset + stored
    weight (Gemma stores ``w`` and multiplies by ``1 + w``).
    """

    family: str
    model_types: tuple[str, ...]
    layout: Layout
    q_weight: str
    k_weight: str
    q_bias: str | None
    k_bias: str | None
    positional: str
    q_norm: str | None = None
    k_norm: str | None = None
    norm_gain_offset: float = 0.0
    gguf_arch: str | None = None
    gguf_permuted: bool = False

    @property
    def rotary(self) -> bool:
        """True when positions enter the form as a RoPE rotation."""
        return self.positional == ROTARY


_LLAMA_LIKE = dict(
    layout="separate",
    q_weight="layers.{i}.self_attn.q_proj.weight",
    k_weight="layers.{i}.self_attn.k_proj.weight",
    q_bias="layers.{i}.self_attn.q_proj.bias",
    k_bias="layers.{i}.self_attn.k_proj.bias",
    positional=ROTARY,
)

ARCHITECTURES: tuple[Architecture, ...] = (
    Architecture(
        family="gpt2",
        model_types=("gpt2",),
        layout="conv1d_qkv",
        q_weight="h.{i}.attn.c_attn.weight",
        k_weight="h.{i}.attn.c_attn.weight",
        q_bias="h.{i}.attn.c_attn.bias",
        k_bias="h.{i}.attn.c_attn.bias",
        positional="learned absolute",
    ),
    Architecture(
        family="opt",
        model_types=("opt",),
        layout="separate",
        q_weight="decoder.layers.{i}.self_attn.q_proj.weight",
        k_weight="decoder.layers.{i}.self_attn.k_proj.weight",
        q_bias="decoder.layers.{i}.self_attn.q_proj.bias",
        k_bias="decoder.layers.{i}.self_attn.k_proj.bias",
        positional="learned absolute",
    ),
    Architecture(
        family="bloom",
        model_types=("bloom",),
        layout="per_head_qkv",
        q_weight="h.{i}.self_attention.query_key_value.weight",
        k_weight="h.{i}.self_attention.query_key_value.weight",
        q_bias="h.{i}.self_attention.query_key_value.bias",
        k_bias="h.{i}.self_attention.query_key_value.bias",
        positional="alibi",
    ),
    Architecture(
        family="gpt_neox",
        model_types=("gpt_neox",),
        layout="per_head_qkv",
        q_weight="layers.{i}.attention.query_key_value.weight",
        k_weight="layers.{i}.attention.query_key_value.weight",
        q_bias="layers.{i}.attention.query_key_value.bias",
        k_bias="layers.{i}.attention.query_key_value.bias",
        positional=ROTARY,
    ),
    Architecture(
        family="llama", model_types=("llama",), gguf_arch="llama", gguf_permuted=True, **_LLAMA_LIKE
    ),
    Architecture(family="mistral", model_types=("mistral",), **_LLAMA_LIKE),
    Architecture(family="qwen2", model_types=("qwen2",), gguf_arch="qwen2", **_LLAMA_LIKE),
    Architecture(
        family="qwen3",
        model_types=("qwen3",),
        q_norm="layers.{i}.self_attn.q_norm.weight",
        k_norm="layers.{i}.self_attn.k_norm.weight",
        gguf_arch="qwen3",
        **_LLAMA_LIKE,
    ),
    Architecture(
        family="gemma3",
        model_types=("gemma3_text", "gemma3"),
        q_norm="layers.{i}.self_attn.q_norm.weight",
        k_norm="layers.{i}.self_attn.k_norm.weight",
        norm_gain_offset=1.0,
        gguf_arch="gemma3",
        **_LLAMA_LIKE,
    ),
    Architecture(
        family="bert",
        model_types=("bert", "roberta", "xlm-roberta"),
        layout="separate",
        q_weight="encoder.layer.{i}.attention.self.query.weight",
        k_weight="encoder.layer.{i}.attention.self.key.weight",
        q_bias="encoder.layer.{i}.attention.self.query.bias",
        k_bias="encoder.layer.{i}.attention.self.key.bias",
        positional="learned absolute",
    ),
)


@dataclass(frozen=True)
class TensorScheme:
    """How one checkpoint format names and stores an architecture's attention tensors.

    ``patterns``: role (``q_weight``, ``k_weight``, ``q_bias``, ``k_bias``, ``q_norm``,
    ``k_norm``) -> name pattern with ``{i}`` for the layer. ``permuted_rows``: Q/K rows are in
    llama.cpp's per-head RoPE order (undone by :func:`unpermute_gguf_rows`).
    ``norm_gain_offset``: the QK-norm gain is ``offset + stored value``.
    """

    patterns: dict[str, str | None]
    layout: Layout
    permuted_rows: bool = False
    norm_gain_offset: float = 0.0


def hf_scheme(arch: Architecture) -> TensorScheme:
    """Tensor names and storage of a transformers checkpoint (safetensors or .bin)."""
    patterns = {
        "q_weight": arch.q_weight,
        "k_weight": arch.k_weight,
        "q_bias": arch.q_bias,
        "k_bias": arch.k_bias,
        "q_norm": arch.q_norm,
        "k_norm": arch.k_norm,
    }
    return TensorScheme(patterns, arch.layout, False, arch.norm_gain_offset)


def gguf_scheme(arch: Architecture) -> TensorScheme:
    """Tensor names and storage of a llama.cpp GGUF file (separate Q/K, norms hold full gains)."""
    return TensorScheme(dict(GGUF_TENSORS), "separate", arch.gguf_permuted, 0.0)


def attention_patterns(arch: Architecture) -> list[str]:
    """Every tensor name pattern of a transformers checkpoint that the engine reads."""
    return [p for p in hf_scheme(arch).patterns.values() if p]


GGUF_TENSORS = {
    "q_weight": "blk.{i}.attn_q.weight",
    "k_weight": "blk.{i}.attn_k.weight",
    "q_bias": "blk.{i}.attn_q.bias",
    "k_bias": "blk.{i}.attn_k.bias",
    "q_norm": "blk.{i}.attn_q_norm.weight",
    "k_norm": "blk.{i}.attn_k_norm.weight",
}
"""GGUF tensor names (llama.cpp), shared by every GGUF architecture; norms store the full gain."""


def supported_families() -> str:
    """One line naming the supported families (for error messages)."""
    return ", ".join(sorted({t for a in ARCHITECTURES for t in a.model_types}))


def architecture_for(model_type: str) -> Architecture:
    """The table row for a transformers ``model_type``, or a clear error."""
    for arch in ARCHITECTURES:
        if model_type in arch.model_types:
            return arch
    raise UnsupportedArchitectureError(
        f"unsupported architecture {model_type!r}; supported model types: {supported_families()}"
    )


def architecture_for_gguf(gguf_arch: str) -> Architecture:
    """The table row for a GGUF ``general.architecture``, or a clear error."""
    for arch in ARCHITECTURES:
        if arch.gguf_arch == gguf_arch:
            return arch
    names = ", ".join(sorted(a.gguf_arch for a in ARCHITECTURES if a.gguf_arch))
    raise UnsupportedArchitectureError(
        f"unsupported GGUF architecture {gguf_arch!r}; supported GGUF architectures: {names}"
    )


# ---------------------------------------------------------------------------------------------
# Shapes from a transformers config


@dataclass(frozen=True)
class Shapes:
    """The attention shapes of a model: layers, model dim N, heads H, key heads H_kv, head dim n."""

    n_layers: int
    model_dim: int
    n_heads: int
    n_kv_heads: int
    head_dim: int

    @property
    def kv_of_head(self) -> np.ndarray:
        """Key head of each query head: ``h // (H / H_kv)`` (grouped-query attention)."""
        return np.arange(self.n_heads) // (self.n_heads // self.n_kv_heads)


SHAPE_LIMITS = {
    "layers": 1024,
    "hidden size": 131072,
    "heads": 4096,
    "kv heads": 4096,
    "head dim": 4096,
}
"""Hard caps on declared shapes (the largest published models are far below): a config that
declares more is refused before any work is queued."""


CONFIG_FIELDS: dict[str, tuple[str, ...]] = {
    "n_layers": ("num_hidden_layers", "n_layer", "n_layers", "num_layers"),
    "model_dim": ("hidden_size", "n_embd", "d_model", "dim"),
    "n_heads": ("num_attention_heads", "n_head", "n_heads", "num_heads"),
    "n_kv_heads": ("num_key_value_heads", "num_kv_heads"),
    "head_dim": ("head_dim",),
}
"""The names configs give each shape, the transformers name first (a transformers config object
answers it for every family; a config.json's dict may use the others)."""


def _declared(config: Any, shape: str) -> Any:
    """The first of a shape's names that ``config`` (a dict or a config object) sets."""
    for name in CONFIG_FIELDS[shape]:
        value = config.get(name) if isinstance(config, Mapping) else getattr(config, name, None)
        if value is not None:
            return value
    return None


def shapes_from_config(config: Any) -> Shapes:
    """Attention shapes read from a config: a transformers config object, or a config.json's
    fields (the text config of composite models); names as :data:`CONFIG_FIELDS`.

    Declared values are checked against :data:`SHAPE_LIMITS` here and against the tensors
    actually present by the engine, before any layer is read.
    """
    if isinstance(config, Mapping):
        config = config.get("text_config") or config
    try:
        required = {s: _declared(config, s) for s in ("n_layers", "model_dim", "n_heads")}
        missing = [CONFIG_FIELDS[s][0] for s, value in required.items() if value is None]
        if missing:
            raise ValueError(f"no {', '.join(missing)}")
        n_layers = int(required["n_layers"])
        model_dim = int(required["model_dim"])
        n_heads = int(required["n_heads"])
        n_kv = int(_declared(config, "n_kv_heads") or n_heads)
        head_dim = int(_declared(config, "head_dim") or model_dim // max(n_heads, 1))
    except (AttributeError, TypeError, ValueError) as exc:
        raise CorruptFileError(f"config lacks attention shapes: {exc}") from exc
    declared = {
        "layers": n_layers,
        "hidden size": model_dim,
        "heads": n_heads,
        "kv heads": n_kv,
        "head dim": head_dim,
    }
    for what, value in declared.items():
        if value > SHAPE_LIMITS[what]:
            raise CorruptFileError(
                f"config declares {value} {what}, more than any supported model "
                f"(at most {SHAPE_LIMITS[what]}): refused"
            )
    if min(n_layers, model_dim, n_heads, n_kv, head_dim) <= 0 or n_heads % n_kv:
        raise CorruptFileError(
            f"config has invalid attention shapes (layers {n_layers}, hidden {model_dim}, heads "
            f"{n_heads}, kv heads {n_kv}, head dim {head_dim}): heads must be a multiple of kv"
        )
    return Shapes(n_layers, model_dim, n_heads, n_kv, head_dim)


# ---------------------------------------------------------------------------------------------
# Splitting stored tensors into per-head Q and K


def split_weights(
    layout: Layout, shapes: Shapes, q_stored: np.ndarray, k_stored: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Per-head ``Q (H, n, N)`` and ``K (H_kv, n, N)`` from the stored tensor(s) of one layer.

    For fused layouts ``q_stored`` is the fused tensor and ``k_stored`` is unused.
    """
    H, Hkv, n, N = shapes.n_heads, shapes.n_kv_heads, shapes.head_dim, shapes.model_dim
    if layout == "conv1d_qkv":
        _expect(q_stored, (N, 3 * H * n), "fused qkv weight")
        return (
            q_stored[:, : H * n].T.reshape(H, n, N),
            q_stored[:, H * n : 2 * H * n].T.reshape(H, n, N),
        )
    if layout == "per_head_qkv":
        _expect(q_stored, (3 * H * n, N), "fused qkv weight")
        fused = q_stored.reshape(H, 3, n, N)
        return fused[:, 0], fused[:, 1]
    _expect(q_stored, (H * n, N), "query weight")
    _expect(k_stored, (Hkv * n, N), "key weight")
    return q_stored.reshape(H, n, N), k_stored.reshape(Hkv, n, N)


def split_biases(
    layout: Layout, shapes: Shapes, q_stored: np.ndarray, k_stored: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Per-head query bias ``(H, n)`` and key bias ``(H_kv, n)``, split like the weights."""
    H, Hkv, n = shapes.n_heads, shapes.n_kv_heads, shapes.head_dim
    if layout == "conv1d_qkv":
        _expect(q_stored, (3 * H * n,), "fused qkv bias")
        return q_stored[: H * n].reshape(H, n), q_stored[H * n : 2 * H * n].reshape(H, n)
    if layout == "per_head_qkv":
        _expect(q_stored, (3 * H * n,), "fused qkv bias")
        fused = q_stored.reshape(H, 3, n)
        return fused[:, 0], fused[:, 1]
    _expect(q_stored, (H * n,), "query bias")
    _expect(k_stored, (Hkv * n,), "key bias")
    return q_stored.reshape(H, n), k_stored.reshape(Hkv, n)


def unpermute_gguf_rows(weight: np.ndarray, n_heads: int) -> np.ndarray:
    """Undo llama.cpp's per-head row permutation of ``attn_q``/``attn_k`` (back to HF order)."""
    if weight.ndim != 2 or weight.shape[0] % (2 * n_heads):
        raise CorruptFileError(
            f"GGUF attention weight has shape {weight.shape}, not {n_heads} heads of paired rows"
        )
    rows, cols = weight.shape
    return weight.reshape(n_heads, rows // n_heads // 2, 2, cols).swapaxes(1, 2).reshape(rows, cols)


def _expect(tensor: np.ndarray | None, shape: tuple[int, ...], what: str) -> None:
    if tensor is None or tuple(tensor.shape) != shape:
        got = None if tensor is None else tuple(tensor.shape)
        raise CorruptFileError(f"the {what} has shape {got}, but the config implies {shape}")
