"""Where a loaded transformers model keeps what an intervention changes, found from the
architecture table (:mod:`headforms.architectures`) rather than per family code.

- The **factors** of each layer are read from the loaded model's own weights by the engine's
  extraction (:func:`headforms.models.extract.read_layer` over the base model's state dict, in
  the transformers naming of :func:`headforms.architectures.hf_scheme`): Hugging Face row
  order, full QK-norm gains, the layer's RoPE frequencies from its config. The forms edited are
  exactly those the analysis describes (:func:`headforms.heads.effective_factors`).
- The **attention module** is the parent of the query weight's module
  (``layers.{i}.self_attn`` of ``layers.{i}.self_attn.q_proj.weight``): its input is the
  attention input x (after the layer's norm) and it receives the additive attention mask that
  its eager attention adds to ``scale * q . k`` before the softmax. The **layer** is the
  pattern up to ``{i}`` (its input is the hidden state entering it). The **output projection**
  (whose input is the heads' outputs side by side) is named per family in
  :data:`OUTPUT_PROJECTIONS`.
- The **scale** is the module's ``scaling`` (BLOOM: ``inv_norm_factor``) times the square of
  the RoPE ``attention_scaling`` of the layer's type (yarn's: transformers multiplies the cosines
  and sines, so both the query and the key, by it); RoPE whose frequencies change with the
  sequence length (``longrope``, ``dynamic``) is refused in one line. QK-norm's epsilon is its
  norm module's; ``is_causal`` says whether keys after the query are hidden.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..architectures import Architecture, Shapes, architecture_for, hf_scheme, shapes_from_config
from ..errors import NotRunnableError
from ..factors import LayerFactors
from ..heads import effective_factors, layer_heads
from ..options import AnalysisOptions
from ..readers.module import ModuleReader
from .algebra import HeadFactors, SpanBasis, span_basis

if TYPE_CHECKING:
    from ..behaviour.runnable import Runnable

OUTPUT_PROJECTIONS = {
    "gpt2": "h.{i}.attn.c_proj",
    "opt": "decoder.layers.{i}.self_attn.out_proj",
    "bloom": "h.{i}.self_attention.dense",
    "gpt_neox": "layers.{i}.attention.dense",
    "llama": "layers.{i}.self_attn.o_proj",
    "mistral": "layers.{i}.self_attn.o_proj",
    "qwen2": "layers.{i}.self_attn.o_proj",
    "qwen3": "layers.{i}.self_attn.o_proj",
    "gemma3": "layers.{i}.self_attn.o_proj",
    "bert": "encoder.layer.{i}.attention.output.dense",
}
"""Per family, the module whose input is the heads' outputs side by side (``T x H n``)."""


@dataclass(frozen=True)
class HeadLogit:
    """How one query head turns its form into its logit: ``scale * x_j^T L_d x_i / (r_q(i)
    r_k(j))`` plus bias terms, with ``r`` QK-norm's RMS of the raw (biased, unfolded)
    projection of a token (1 without QK-norm); ``q_raw``, ``k_raw`` and the biases as read
    (float32)."""

    factors: HeadFactors
    q_raw: np.ndarray
    k_raw: np.ndarray
    q_bias: np.ndarray | None
    k_bias: np.ndarray | None
    eps: float | None
    scale: float
    causal: bool

    def _rms(self, x: np.ndarray, weights: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
        if self.eps is None:
            return np.ones(len(x))
        projected = x @ np.asarray(weights, np.float64).T
        if bias is not None:
            projected = projected + np.asarray(bias, np.float64)
        return np.sqrt(np.mean(projected**2, axis=-1) + self.eps)

    def factor(self, x: np.ndarray) -> np.ndarray:
        """``[i, j] = scale / (r_q(i) r_k(j))``: what turns a bilinear part into scores."""
        rq = self._rms(x, self.q_raw, self.q_bias)
        rk = self._rms(x, self.k_raw, self.k_bias)
        return self.scale / np.outer(rq, rk)


@dataclass(frozen=True)
class LayerAnatomy:
    """One layer's modules and factors (module doc)."""

    index: int
    layer: Any
    attention: Any
    output_projection: Any | None
    scale: float
    causal: bool
    qk_norm_eps: float | None
    factors: LayerFactors
    folded: tuple[np.ndarray, np.ndarray]
    """``(Q', K')`` float64 with the QK-norm gains folded in (:func:`effective_factors`)."""


@dataclass(frozen=True)
class Anatomy:
    """A loaded model's layers, its architecture row and shapes."""

    arch: Architecture
    shapes: Shapes
    layers: tuple[LayerAnatomy, ...]
    config: Any = field(default=None, repr=False, compare=False)
    _spans: dict[tuple[int, int], SpanBasis] = field(
        default_factory=dict, repr=False, compare=False
    )
    _parities: dict[int, np.ndarray] = field(default_factory=dict, repr=False, compare=False)
    batched: dict[int, Any] = field(default_factory=dict, repr=False, compare=False)
    """Each layer's factors as tensors for the hooks (:func:`.batch_deltas.layer_tensors`)."""

    @property
    def kv_of_head(self) -> np.ndarray:
        return self.shapes.kv_of_head

    def parities(self, layer: int) -> np.ndarray:
        """The parity of each head of ``layer`` at d = 0 with folded gains, as the analysis
        computes it (:func:`headforms.heads.layer_heads`; kept once computed)."""
        if layer not in self._parities:
            shapes = self.shapes
            rows = layer_heads(
                layer,
                self.layers[layer].factors,
                shapes.kv_of_head,
                shapes.model_dim,
                AnalysisOptions(),
            ).rows
            self._parities[layer] = np.asarray(rows["parity"], dtype=object)
        return self._parities[layer]

    def span(self, layer: int, head: int) -> SpanBasis:
        """The orthonormal basis of query head ``head``'s span (kept once computed)."""
        if (layer, head) not in self._spans:
            self._spans[layer, head] = span_basis(self.head_logit(layer, head).factors)
        return self._spans[layer, head]

    def head_logit(self, layer: int, head: int) -> HeadLogit:
        """The logit of query head ``head`` of ``layer`` (gains folded into its factors)."""
        part = self.layers[layer]
        q, k = part.folded
        kv = int(self.kv_of_head[head])
        factors = part.factors
        return HeadLogit(  # views of the layer's arrays: a head's logit holds no copy
            HeadFactors(q[head], k[kv], factors.inv_freq),
            factors.q[head],
            factors.k[kv],
            None if factors.q_bias is None else factors.q_bias[head],
            None if factors.k_bias is None else factors.k_bias[kv],
            part.qk_norm_eps,
            part.scale,
            part.causal,
        )


_ANATOMIES: weakref.WeakKeyDictionary[Any, Anatomy] = weakref.WeakKeyDictionary()


def anatomy_of(model: Runnable) -> Anatomy:
    """The anatomy of a loaded model (found once per loaded model)."""
    found = _ANATOMIES.get(model.model)
    if found is None:
        found = _ANATOMIES[model.model] = _find(model)
    return found


def _find(model: Runnable) -> Anatomy:
    from ..models.extract import TensorIndex, read_layer
    from ..models.source import ModelSource

    base = model.model
    config = base.config.get_text_config() if hasattr(base.config, "get_text_config") else None
    config = config or base.config
    arch = architecture_for(str(config.model_type))
    shapes = shapes_from_config(config)
    reader = ModuleReader(base)  # the one reader of a live module's tensors
    scheme = hf_scheme(arch)
    source = ModelSource(
        spec=model.name,
        display_name=model.name,
        kind="loaded",
        config=config,
        arch=arch,
        reader=reader,
        fingerprint=model.fingerprint,
        scheme=scheme,
    )
    index = TensorIndex(reader, arch.q_weight)

    def module(pattern: str, layer: int) -> Any:
        return base.get_submodule(index.prefix + pattern.format(i=layer))

    attention_path = arch.q_weight.rsplit(".", 2)[0]
    layer_path = arch.q_weight[: arch.q_weight.index("{i}") + len("{i}")]
    projection = OUTPUT_PROJECTIONS.get(arch.family)
    layers = []
    for i in range(shapes.n_layers):
        attention = module(attention_path, i)
        eps = None
        if arch.q_norm is not None:
            norm = module(arch.q_norm.removesuffix(".weight"), i)
            eps = float(getattr(norm, "eps", getattr(norm, "variance_epsilon", 0.0)))
        layers.append(
            LayerAnatomy(
                index=i,
                layer=module(layer_path, i),
                attention=attention,
                output_projection=None if projection is None else module(projection, i),
                scale=_scale(attention, model.name) * _rope_scaling(config, i, model.name) ** 2,
                causal=bool(getattr(attention, "is_causal", True)),
                qk_norm_eps=eps,
                factors=(factors := read_layer(source, shapes, index, i)),
                folded=effective_factors(factors),
            )
        )
    return Anatomy(arch, shapes, tuple(layers), config)


LENGTH_DEPENDENT_ROPE = ("longrope", "dynamic")
"""RoPE types whose frequencies depend on the sequence's length: not edited (module doc)."""


def _rope_scaling(config: Any, layer: int, name: str) -> float:
    """The factor transformers' RoPE multiplies cosines and sines by (1 but for yarn and
    longrope), or a one-line refusal for frequencies that change with the sequence length."""
    from ..models.rope import rope_layer_type, rope_parameters

    params = rope_parameters(config, layer)
    rope_type = params.get("rope_type", "default") if params else "default"
    if rope_type in LENGTH_DEPENDENT_ROPE:
        raise NotRunnableError(
            f"{name}: its RoPE scaling {rope_type!r} changes the frequencies with the sequence's "
            "length, so edits of its forms are not supported"
        )
    if rope_type == "default":
        return 1.0
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    _, scaling = ROPE_INIT_FUNCTIONS[rope_type](
        config, None, layer_type=rope_layer_type(config, layer)
    )
    return float(scaling)


def _scale(attention: Any, name: str) -> float:
    """The positive factor the attention multiplies ``q . k`` by."""
    for attribute in ("scaling", "inv_norm_factor"):
        value = getattr(attention, attribute, None)
        if isinstance(value, int | float) and value > 0:
            return float(value)
    raise NotRunnableError(
        f"{name}: its attention module ({type(attention).__name__}) has no scale headforms "
        "knows (scaling), so its logits cannot be edited"
    )
