"""Extraction is exact for every architecture: extracted Q, K reproduce the model's own attention.

For each family a tiny random model is built with transformers, saved as safetensors, opened
with ``headforms.sources.resolve`` and read layer by layer exactly as the engine does
(``read_layer`` + ``effective_factors``). With every position id 0 (RoPE = identity), the
scores ``y^T K^T Q x`` (+ biases, QK-norm RMS factor, ALiBi) must give the model's eager
attention probabilities up to float32 softmax rounding. Negative controls (wrong fused split,
wrong grouped-query mapping) must fail the same comparison by orders of magnitude.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tiny_models as tm

from headforms.architectures import Shapes, shapes_from_config, split_biases, split_weights
from headforms.heads import effective_factors
from headforms.models.extract import TensorIndex, read_layer
from headforms.models.source import ModelSource, open_model
from headforms.streaming import compute_analysis

SEQ = 7
TOLERANCE = 1e-5
"""Eager softmax runs in float32 for most families; float64 elsewhere (errors ~1e-14)."""
WRONG = 1e-3
"""A negative control must be off by more than this (measured errors are ~0.1-10)."""

FAMILIES = list(tm.FAMILIES)
GQA_FAMILIES = ["llama", "mistral", "qwen2", "qwen3"]


@dataclass
class Tiny:
    """A built tiny model, its headforms source and one forward pass at position 0."""

    family: str
    model: Any
    source: ModelSource
    shapes: Shapes
    index: TensorIndex
    run: tm.Run

    def weights(self, layer: int) -> Any:
        return read_layer(self.source, self.shapes, self.index, layer)

    def error(
        self,
        layer: int,
        factors: tm.Factors | None = None,
        kv_of_head: np.ndarray | None = None,
    ) -> float:
        """Max log-probability error of the forms predicted for ``layer`` (engine by default)."""
        aug = tm.with_bias_column(self.weights(layer))
        if factors is None:

            def factors(d: int) -> tuple[np.ndarray, np.ndarray]:
                return effective_factors(aug, d)

        has_norm = aug.q_gain is not None
        scores = tm.predict_scores(
            factors,
            (aug.q, aug.k),
            self.run.hidden[layer],
            self.shapes.kv_of_head if kv_of_head is None else kv_of_head,
            self.run.position_ids,
            tm.attention_scale(self.family, self.model, layer),
            qk_norm_eps=tm.qk_norm_eps(self.model) if has_norm else None,
            key_bias=tm.alibi(self.model, SEQ) if self.family == "bloom" else None,
        )
        causal = tm.FAMILIES[self.family].causal
        return tm.log_prob_error(self.run.probs[layer], scores, causal)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Tiny]:
    """Every family's tiny model, built once for this module."""
    root = tmp_path_factory.mktemp("tiny-architectures")
    built: dict[str, Tiny] = {}
    for seed, family in enumerate(FAMILIES):
        directory = Path(root / family)
        model = tm.build(family, directory, seed=seed)
        source = open_model(str(directory))
        shapes = shapes_from_config(source.config)
        index = TensorIndex.for_source(source)
        run = tm.run(family, model, np.zeros(SEQ, dtype=np.int64), seed=100 + seed)
        built[family] = Tiny(family, model, source, shapes, index, run)
    return built


@pytest.mark.parametrize("family", FAMILIES)
def test_extracted_forms_reproduce_attention(tiny: dict[str, Tiny], family: str) -> None:
    """Extracted Q, K (+ biases, QK-norm, ALiBi) give the model's attention at position 0."""
    t = tiny[family]
    assert t.shapes.n_layers == tm.LAYERS
    for layer in range(t.shapes.n_layers):
        error = t.error(layer)
        assert error < TOLERANCE, f"{family} layer {layer}: log-prob error {error:.2e}"


@pytest.mark.parametrize("family", FAMILIES)
def test_attention_is_far_from_uniform(tiny: dict[str, Tiny], family: str) -> None:
    """The comparison has power: the model's attention is not uniform over visible keys."""
    probs = tiny[family].run.probs[0][:, -1, :]
    assert np.ptp(np.log(probs), axis=-1).min() > 0.5


def test_shapes_of_the_tiny_models(tiny: dict[str, Tiny]) -> None:
    """GQA, MQA and a head dim different from N/H are really exercised."""
    got = {f: (t.shapes.n_heads, t.shapes.n_kv_heads, t.shapes.head_dim) for f, t in tiny.items()}
    assert got["llama"] == got["mistral"] == got["qwen2"] == got["qwen3"] == (tm.H, 2, 16)
    assert got["gemma3_text"] == (tm.H, 1, 24)
    assert got["gpt_neox"] == got["gpt2"] == got["bert"] == (tm.H, tm.H, tm.N // tm.H)
    assert tiny["qwen2"].weights(0).q_bias is not None
    assert tiny["qwen3"].weights(0).q_gain is not None
    assert tiny["gemma3_text"].weights(0).q_gain is not None
    assert tiny["roberta"].source.arch.family == "bert"


@pytest.mark.parametrize("family", FAMILIES)
def test_engine_table_is_balanced(tiny: dict[str, Tiny], family: str) -> None:
    """Theorem 3 on the engine's table: n positive and n negative eigenvalues of S per head."""
    t = tiny[family]
    result = compute_analysis(t.source)
    n = t.shapes.head_dim
    assert 2 * n <= t.shapes.model_dim
    assert len(result.heads) == t.shapes.n_layers * t.shapes.n_heads
    assert (result.heads["n_pos"] == n).all() and (result.heads["n_neg"] == n).all()
    assert result.heads["kv_head"].tolist() == list(t.shapes.kv_of_head) * t.shapes.n_layers


# ---------------------------------------------------------------------------------------------
# Negative controls: the same comparison must fail for plausible wrong extractions


def _fixed(q: np.ndarray, k: np.ndarray) -> tm.Factors:
    return lambda d: (q, k)


def _augment(q: np.ndarray, k: np.ndarray, qb: np.ndarray, kb: np.ndarray) -> tm.Factors:
    return _fixed(np.concatenate([q, qb[..., None]], -1), np.concatenate([k, kb[..., None]], -1))


@pytest.mark.parametrize("family", ["gpt_neox", "bloom"])
def test_contiguous_split_of_per_head_fused_qkv_fails(tiny: dict[str, Tiny], family: str) -> None:
    """Splitting the fused [3N, N] tensor as q|k|v (instead of per head) is detectably wrong."""
    t = tiny[family]
    pat, hn = t.source.scheme.patterns, t.shapes.n_heads * t.shapes.head_dim
    fused = t.index.read(pat["q_weight"], 0)
    bias = t.index.read(pat["q_bias"], 0)
    q, k = split_weights("separate", t.shapes, fused[:hn], fused[hn : 2 * hn])
    qb, kb = split_biases("separate", t.shapes, bias[:hn], bias[hn : 2 * hn])
    assert t.error(0) < TOLERANCE
    assert t.error(0, _augment(q, k, qb, kb)) > WRONG


def test_gpt2_swapped_or_untransposed_split_fails(tiny: dict[str, Tiny]) -> None:
    """GPT-2's Conv1D c_attn: swapping Q and K, or forgetting the transpose, is wrong."""
    t = tiny["gpt2"]
    w = t.weights(0)
    swapped = _augment(w.k, w.q, w.k_bias, w.q_bias)
    fused = t.index.read(t.source.scheme.patterns["q_weight"], 0)
    N, H, n = t.shapes.model_dim, t.shapes.n_heads, t.shapes.head_dim
    untransposed = _augment(
        fused[:, :N].reshape(H, n, N), fused[:, N : 2 * N].reshape(H, n, N), w.q_bias, w.k_bias
    )
    assert t.error(0) < TOLERANCE
    assert t.error(0, swapped) > WRONG
    assert t.error(0, untransposed) > WRONG


@pytest.mark.parametrize("family", GQA_FAMILIES)
def test_wrong_grouped_query_mapping_fails(tiny: dict[str, Tiny], family: str) -> None:
    """Query head h uses key head h // (H / H_kv); h % H_kv is detectably wrong."""
    t = tiny[family]
    wrong = np.arange(t.shapes.n_heads) % t.shapes.n_kv_heads
    assert not np.array_equal(wrong, t.shapes.kv_of_head)
    for layer in range(t.shapes.n_layers):
        assert t.error(layer) < TOLERANCE
        assert t.error(layer, kv_of_head=wrong) > WRONG


@pytest.mark.parametrize("family", ["qwen3", "gemma3_text"])
def test_unfolded_or_misread_qk_norm_gains_fail(tiny: dict[str, Tiny], family: str) -> None:
    """QK-norm gains must be folded, and Gemma's must be 1 + w (not w)."""
    t = tiny[family]
    aug = tm.with_bias_column(t.weights(0))
    unfolded = _fixed(aug.q, aug.k)
    assert t.error(0) < TOLERANCE
    assert t.error(0, unfolded) > WRONG
    if t.source.scheme.norm_gain_offset:
        g_q, g_k = aug.q_gain - 1.0, aug.k_gain - 1.0
        raw_w = _fixed(aug.q * g_q[None, :, None], aug.k * g_k[None, :, None])
        assert t.error(0, raw_w) > WRONG


# ---------------------------------------------------------------------------------------------
# Other checkpoint layouts give the same extraction


@pytest.mark.parametrize(
    ("family", "layout"), [("opt", "bin"), ("bert", "bin"), ("llama", "shards")]
)
def test_bin_and_sharded_checkpoints_read_the_same(
    tiny: dict[str, Tiny], tmp_path: Path, family: str, layout: str
) -> None:
    """A legacy pytorch_model.bin and a sharded safetensors checkpoint read like the original."""
    import copy

    import torch

    t = tiny[family]
    model = copy.deepcopy(t.model).float()
    if layout == "bin":
        model.config.save_pretrained(tmp_path)
        torch.save(model.state_dict(), tmp_path / "pytorch_model.bin")
    else:
        model.save_pretrained(tmp_path, max_shard_size="60KB")
        assert (tmp_path / "model.safetensors.index.json").exists()
        assert len(list(tmp_path.glob("*.safetensors"))) > 2
    source = open_model(str(tmp_path))
    assert type(source.reader).__name__ == (
        "TorchBinReader" if layout == "bin" else "SafetensorsReader"
    )
    index = TensorIndex.for_source(source)
    for layer in range(t.shapes.n_layers):
        got, want = read_layer(source, t.shapes, index, layer), t.weights(layer)
        for name in ("q", "k", "q_bias", "k_bias"):
            np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
