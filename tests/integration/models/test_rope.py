"""RoPE forms at relative position d != 0, and the GGUF (llama.cpp) row permutation.

With explicit, increasing position ids every (query, key) pair of one forward pass has a
relative position ``d = p_query - p_key``; the engine's ``L_d = K'^T Q'`` from
``effective_factors(..., rope_position=d)`` must reproduce the model's own attention for all
pairs at once. Covers partial rotary (GPT-NeoX), per-layer-type frequencies (Gemma-3), and
non-default RoPE types (linear for Llama and Gemma-3 global layers, llama3 for Qwen2 with
biases). Interleaved (GGUF/Meta) pairing, or the wrong layer's frequencies, must fail.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tiny_models as tm
from tiny_runnable import llama_cpp_permute

from headforms.architectures import shapes_from_config
from headforms.heads import effective_factors
from headforms.models.extract import TensorIndex, read_layer
from headforms.models.rope import inverse_frequencies, rotation
from headforms.models.source import ModelSource, open_model
from headforms.options import AnalysisOptions
from headforms.streaming import compute_analysis

POSITIONS = np.array([0, 1, 2, 4, 7, 11, 16, 23, 31, 40])
"""Position ids of the tokens: relative positions 0..40 occur between them."""
TOLERANCE = 1e-5
WRONG = 1e-3
ROPE_FAMILIES = ["llama", "gpt_neox", "gemma3_text", "qwen2"]


class Rotary:
    """A built tiny RoPE model, its headforms source and one forward pass at POSITIONS."""

    def __init__(self, family: str, directory: Path, seed: int):
        self.family = family
        self.model = tm.build(family, directory, seed=seed)
        self.source: ModelSource = open_model(str(directory))
        self.shapes = shapes_from_config(self.source.config)
        self.index = TensorIndex.for_source(self.source)
        self.run = tm.run(family, self.model, POSITIONS, seed=200 + seed)

    def weights(self, layer: int) -> Any:
        """The engine's reading of one layer, bias appended as an input column."""
        return tm.with_bias_column(read_layer(self.source, self.shapes, self.index, layer))

    def error(self, layer: int, factors: tm.Factors | None = None) -> float:
        """Max log-probability error of ``factors`` (the engine's by default) over all pairs."""
        aug = self.weights(layer)
        if factors is None:

            def factors(d: int) -> tuple[np.ndarray, np.ndarray]:
                return effective_factors(aug, d)

        scores = tm.predict_scores(
            factors,
            (aug.q, aug.k),
            self.run.hidden[layer],
            self.shapes.kv_of_head,
            self.run.position_ids,
            tm.attention_scale(self.family, self.model, layer),
            qk_norm_eps=tm.qk_norm_eps(self.model) if aug.q_gain is not None else None,
        )
        return tm.log_prob_error(self.run.probs[layer], scores, causal=True)

    def rotated_by(self, layer: int, rot: Any) -> tm.Factors:
        """Factors with a custom rotation ``rot(d) -> (n, n)`` in place of the engine's."""
        aug = self.weights(layer)
        q, k = effective_factors(aug, 0)
        return lambda d: (rot(d) @ q, k)


@pytest.fixture(scope="module")
def rotary(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Rotary]:
    """The RoPE families' tiny models, built once for this module."""
    root = tmp_path_factory.mktemp("tiny-rope")
    return {f: Rotary(f, root / f, seed=10 + i) for i, f in enumerate(ROPE_FAMILIES)}


def interleaved_rotation(inv_freq: np.ndarray, head_dim: int, distance: int) -> np.ndarray:
    """``R_d`` with GGUF/Meta pairing ``(2i, 2i + 1)``: the wrong convention for HF weights."""
    rot = np.eye(head_dim)
    for i, theta in enumerate(inv_freq):
        c, s = np.cos(distance * theta), np.sin(distance * theta)
        rot[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[c, -s], [s, c]]
    return rot


@pytest.mark.parametrize("family", ROPE_FAMILIES)
def test_rotated_forms_reproduce_attention(rotary: dict[str, Rotary], family: str) -> None:
    """y^T L_d x with the engine's L_d gives the model's attention for every d in 0..40."""
    r = rotary[family]
    assert len(np.unique(POSITIONS[:, None] - POSITIONS[None, :])) > 20
    for layer in range(r.shapes.n_layers):
        error = r.error(layer)
        assert error < TOLERANCE, f"{family} layer {layer}: log-prob error {error:.2e}"


@pytest.mark.parametrize("family", ROPE_FAMILIES)
def test_interleaved_pairing_fails(rotary: dict[str, Rotary], family: str) -> None:
    """GGUF/Meta interleaved pairing applied to HF-ordered weights is wrong at d != 0."""
    r = rotary[family]
    n = r.shapes.head_dim
    for layer in range(r.shapes.n_layers):
        inv = inverse_frequencies(r.source.config, n, layer)
        same_pairing = r.rotated_by(layer, lambda d, inv=inv: rotation(inv, n, d))
        interleaved = r.rotated_by(layer, lambda d, inv=inv: interleaved_rotation(inv, n, d))
        assert r.error(layer, same_pairing) < TOLERANCE  # the custom path itself is right
        assert r.error(layer, interleaved) > WRONG


def test_partial_rotary_leaves_the_rest_unrotated(rotary: dict[str, Rotary]) -> None:
    """GPT-NeoX rotates only the first half of each head (partial_rotary_factor 0.5)."""
    r = rotary["gpt_neox"]
    n = r.shapes.head_dim
    inv = inverse_frequencies(r.source.config, n, 0)
    assert 2 * len(inv) == n // 2
    full = 1.0 / 500.0 ** (np.arange(0, n, 2) / n)
    assert r.error(0, r.rotated_by(0, lambda d: rotation(full, n, d))) > WRONG


def test_gemma3_frequencies_follow_layer_types(rotary: dict[str, Rotary]) -> None:
    """Gemma-3 local (sliding) and global layers have their own theta and RoPE type."""
    r = rotary["gemma3_text"]
    n = r.shapes.head_dim
    assert r.source.config.layer_types == ["sliding_attention", "full_attention"]
    local, glob = (inverse_frequencies(r.source.config, n, layer) for layer in (0, 1))
    assert np.allclose(local, 1.0 / 100.0 ** (np.arange(0, n, 2) / n))
    assert np.allclose(glob, 1.0 / 10000.0 ** (np.arange(0, n, 2) / n) / 4.0)
    for layer, other in ((0, glob), (1, local)):
        assert r.error(layer, r.rotated_by(layer, lambda d, o=other: rotation(o, n, d))) > WRONG


@pytest.mark.parametrize(("family", "theta"), [("llama", 1000.0), ("qwen2", 300.0)])
def test_rope_scaling_is_applied(rotary: dict[str, Rotary], family: str, theta: float) -> None:
    """Non-default RoPE types change the frequencies; ignoring them fails the comparison."""
    r = rotary[family]
    n = r.shapes.head_dim
    plain = 1.0 / theta ** (np.arange(0, n, 2) / n)
    assert r.source.config.rope_parameters["rope_type"] != "default"
    assert not np.allclose(inverse_frequencies(r.source.config, n, 0), plain)
    assert r.error(0, r.rotated_by(0, lambda d: rotation(plain, n, d))) > WRONG


# ---------------------------------------------------------------------------------------------
# GGUF: llama.cpp permutes attn_q / attn_k rows; headforms must undo it


def write_gguf(source: ModelSource, path: Path) -> None:
    """Write a tiny llama or gemma3's attention weights as llama.cpp's converter would (F32).

    Llama: ``attn_q``/``attn_k`` rows permuted per head, RoPE scaling in the metadata.
    Gemma-3: rows as in HF, QK-norm stored as ``1 + w``, local theta in ``rope.freq_base_swa``,
    linear scaling of the global layers, sliding-window pattern.
    """
    import gguf

    cfg = source.config
    shapes = shapes_from_config(cfg)
    index = TensorIndex.for_source(source)
    gemma = cfg.model_type == "gemma3_text"
    writer = gguf.GGUFWriter(str(path), "gemma3" if gemma else "llama")
    writer.add_name(f"tiny-{cfg.model_type}")
    writer.add_block_count(shapes.n_layers)
    writer.add_embedding_length(shapes.model_dim)
    writer.add_head_count(shapes.n_heads)
    writer.add_head_count_kv(shapes.n_kv_heads)
    writer.add_key_length(shapes.head_dim)
    rope = cfg.rope_parameters["full_attention"] if gemma else cfg.rope_parameters
    writer.add_rope_freq_base(float(rope["rope_theta"]))
    writer.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
    writer.add_rope_scaling_factor(float(rope["factor"]))
    if gemma:
        local = cfg.rope_parameters["sliding_attention"]["rope_theta"]
        writer.add_rope_freq_base_swa(float(local))
        writer.add_sliding_window(cfg.sliding_window)
        writer.add_sliding_window_pattern(2)
    else:
        writer.add_rope_dimension_count(shapes.head_dim)
    for layer in range(shapes.n_layers):
        q = index.read(source.scheme.patterns["q_weight"], layer)
        k = index.read(source.scheme.patterns["k_weight"], layer)
        tensors = {"attn_q.weight": q, "attn_k.weight": k}
        if index.has(source.scheme.patterns["q_bias"], layer):
            tensors["attn_q.bias"] = index.read(source.scheme.patterns["q_bias"], layer)
            tensors["attn_k.bias"] = index.read(source.scheme.patterns["k_bias"], layer)
        for name, values in tensors.items():
            heads = shapes.n_heads if name.startswith("attn_q") else shapes.n_kv_heads
            values = values.astype(np.float32)
            writer.add_tensor(
                f"blk.{layer}.{name}", values if gemma else llama_cpp_permute(values, heads)
            )
        if gemma:
            for part in ("q", "k"):
                w = index.read(source.scheme.patterns[f"{part}_norm"], layer).astype(np.float32)
                writer.add_tensor(f"blk.{layer}.attn_{part}_norm.weight", 1.0 + w)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@pytest.fixture(scope="module")
def gguf_llama(rotary: dict[str, Rotary], tmp_path_factory: pytest.TempPathFactory) -> ModelSource:
    """The tiny llama written as a llama.cpp GGUF file and opened by headforms."""
    path = tmp_path_factory.mktemp("tiny-gguf") / "tiny-llama-F32.gguf"
    write_gguf(rotary["llama"].source, path)
    return open_model(str(path))


@pytest.fixture(scope="module")
def gguf_gemma3(rotary: dict[str, Rotary], tmp_path_factory: pytest.TempPathFactory) -> ModelSource:
    """The tiny Gemma-3 written as a llama.cpp GGUF file and opened by headforms."""
    path = tmp_path_factory.mktemp("tiny-gguf") / "tiny-gemma3-F32.gguf"
    write_gguf(rotary["gemma3_text"].source, path)
    return open_model(str(path))


def test_gguf_rows_are_unpermuted_to_hf_order(
    rotary: dict[str, Rotary], gguf_llama: ModelSource
) -> None:
    """headforms reads the GGUF's per-head Q, K back in HF order, identical to safetensors."""
    hf = rotary["llama"]
    shapes = shapes_from_config(gguf_llama.config)
    assert shapes == hf.shapes
    assert gguf_llama.kind == "gguf"
    index = TensorIndex.for_source(gguf_llama)
    raw = gguf_llama.reader.read("blk.0.attn_q.weight")
    assert not np.array_equal(raw, hf.index.read(hf.source.scheme.patterns["q_weight"], 0))
    for layer in range(shapes.n_layers):
        from_gguf = read_layer(gguf_llama, shapes, index, layer)
        from_hf = read_layer(hf.source, hf.shapes, hf.index, layer)
        for name in ("q", "k", "q_bias", "k_bias"):
            np.testing.assert_array_equal(getattr(from_gguf, name), getattr(from_hf, name))
        for d in (0, 1, 7, 40):
            q_g, k_g = effective_factors(from_gguf, d)
            q_h, k_h = effective_factors(from_hf, d)
            np.testing.assert_allclose(q_g, q_h, rtol=0, atol=1e-12)
            np.testing.assert_array_equal(k_g, k_h)


def test_gguf_config_reproduces_the_rope(
    rotary: dict[str, Rotary], gguf_llama: ModelSource
) -> None:
    """The config rebuilt from GGUF metadata gives the same (linearly scaled) frequencies."""
    hf = rotary["llama"]
    for layer in range(hf.shapes.n_layers):
        np.testing.assert_allclose(
            inverse_frequencies(gguf_llama.config, hf.shapes.head_dim, layer),
            inverse_frequencies(hf.source.config, hf.shapes.head_dim, layer),
            rtol=1e-12,
        )


def test_gguf_permutation_matters_only_at_nonzero_d(
    rotary: dict[str, Rotary], gguf_llama: ModelSource
) -> None:
    """Without un-permuting, K^T Q is unchanged at d = 0 but wrong at d != 0 (test has power)."""
    hf = rotary["llama"]
    shapes = hf.shapes
    kept = replace(gguf_llama, scheme=replace(gguf_llama.scheme, permuted_rows=False))
    index = TensorIndex.for_source(kept)
    permuted = tm.with_bias_column(read_layer(kept, shapes, index, 0))
    hf_weights = hf.weights(0)
    kv = shapes.kv_of_head
    for d, should_match in ((0, True), (5, False)):
        q_p, k_p = effective_factors(permuted, d)
        q_h, k_h = effective_factors(hf_weights, d)
        l_p = np.einsum("hnm,hnk->hmk", k_p[kv], q_p)
        l_h = np.einsum("hnm,hnk->hmk", k_h[kv], q_h)
        assert np.allclose(l_p, l_h, atol=1e-9) == should_match
    assert hf.error(0) < TOLERANCE
    assert hf.error(0, lambda d: effective_factors(permuted, d)) > WRONG


@pytest.mark.parametrize("distance", [0, 3])
def test_gguf_and_safetensors_tables_agree(
    rotary: dict[str, Rotary], gguf_llama: ModelSource, distance: int
) -> None:
    """End to end: the engine's per-head table is the same from either file."""
    hf = compute_analysis(rotary["llama"].source, AnalysisOptions(distance))
    gg = compute_analysis(gguf_llama, AnalysisOptions(distance))
    cols = ["a", "b", "c", "d", "energy", "pairing", "norm_l", "n_pos", "n_neg"]
    np.testing.assert_allclose(gg.heads[cols].to_numpy(float), hf.heads[cols].to_numpy(float))
    assert gg.card.rope == hf.card.rope


def test_gemma3_gguf_matches_safetensors(
    rotary: dict[str, Rotary], gguf_gemma3: ModelSource
) -> None:
    """Gemma-3 GGUF: same Q, K, QK-norm gains (stored 1 + w), layer types and frequencies."""
    hf = rotary["gemma3_text"]
    shapes = shapes_from_config(gguf_gemma3.config)
    assert shapes == hf.shapes
    assert gguf_gemma3.config.layer_types == hf.source.config.layer_types
    index = TensorIndex.for_source(gguf_gemma3)
    for layer in range(shapes.n_layers):
        from_gguf = read_layer(gguf_gemma3, shapes, index, layer)
        from_hf = read_layer(hf.source, hf.shapes, hf.index, layer)
        for name in ("q", "k", "q_gain", "k_gain"):
            np.testing.assert_allclose(getattr(from_gguf, name), getattr(from_hf, name), atol=1e-7)
        np.testing.assert_allclose(
            inverse_frequencies(gguf_gemma3.config, shapes.head_dim, layer),
            inverse_frequencies(hf.source.config, shapes.head_dim, layer),
            rtol=1e-12,
        )


@pytest.mark.parametrize("family", ["llama", "gemma3_text"])
def test_gguf_forms_reproduce_attention(
    rotary: dict[str, Rotary], gguf_llama: ModelSource, gguf_gemma3: ModelSource, family: str
) -> None:
    """The GGUF's rotated forms (+ biases) give the safetensors model's attention at every d."""
    hf = rotary[family]
    source = gguf_llama if family == "llama" else gguf_gemma3
    shapes = shapes_from_config(source.config)
    index = TensorIndex.for_source(source)
    for layer in range(shapes.n_layers):
        aug = tm.with_bias_column(read_layer(source, shapes, index, layer))
        assert hf.error(layer, partial(effective_factors, aug)) < TOLERANCE


@pytest.mark.parametrize("family", ROPE_FAMILIES)
def test_engine_table_at_nonzero_d(rotary: dict[str, Rotary], family: str) -> None:
    """The engine applies R_d (profiles move) and L_d keeps n positive / n negative eigenvalues."""
    r = rotary[family]
    at0 = compute_analysis(r.source, AnalysisOptions(0)).heads
    at5 = compute_analysis(r.source, AnalysisOptions(5)).heads
    n = r.shapes.head_dim
    assert (at5["n_pos"] == n).all() and (at5["n_neg"] == n).all()
    assert np.abs(at5["a"] - at0["a"]).max() > WRONG


def test_gguf_rope_freqs_divisors_reproduce_llama3_scaling(
    rotary: dict[str, Rotary], tmp_path: Path
) -> None:
    """llama.cpp keeps Llama-3 RoPE scaling as a ``rope_freqs`` tensor of frequency divisors.

    A GGUF with default RoPE metadata plus those divisors must give the llama3 frequencies of
    transformers (the reference); without the tensor it would be plain default RoPE.
    """
    import gguf
    from transformers import LlamaConfig

    hf = rotary["llama"]
    n = hf.shapes.head_dim
    llama3 = LlamaConfig(
        hidden_size=hf.shapes.model_dim,
        num_attention_heads=hf.shapes.n_heads,
        head_dim=n,
        rope_parameters={
            "rope_type": "llama3",
            "rope_theta": 500000.0,
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 64,
        },
    )
    default = LlamaConfig(
        hidden_size=hf.shapes.model_dim,
        num_attention_heads=hf.shapes.n_heads,
        head_dim=n,
        rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
    )
    want = inverse_frequencies(llama3, n, 0)
    plain = inverse_frequencies(default, n, 0)
    assert not np.allclose(want, plain)  # the scaling really changes some frequencies
    path = tmp_path / "tiny-llama3.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(1)
    writer.add_embedding_length(hf.shapes.model_dim)
    writer.add_head_count(hf.shapes.n_heads)
    writer.add_head_count_kv(hf.shapes.n_kv_heads)
    writer.add_rope_freq_base(500000.0)
    writer.add_rope_dimension_count(n)
    writer.add_tensor("rope_freqs.weight", (plain / want).astype(np.float32))
    rng = np.random.default_rng(0)
    for name, rows in (("attn_q", hf.shapes.n_heads * n), ("attn_k", hf.shapes.n_kv_heads * n)):
        writer.add_tensor(
            f"blk.0.{name}.weight",
            rng.standard_normal((rows, hf.shapes.model_dim)).astype(np.float32),
        )
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    source = open_model(str(path))
    got = inverse_frequencies(source.config, n, 0)
    np.testing.assert_allclose(got, want, rtol=1e-6)  # divisors are stored as float32
    assert compute_analysis(source, AnalysisOptions(5)).heads["n_pos"].eq(n).all()


@pytest.mark.parametrize("name", ["smollm2-135m", "gemma3-270m"])
def test_light_gguf_config_matches_transformers_config(name: str) -> None:
    """The transformers-free GGUF config (fast cold start) equals transformers' own config
    class built from the same metadata: shapes, layer types, RoPE parameters and frequencies."""
    from headforms.models.rope import rope_parameters

    light = open_model(name).config
    reference = light.to_transformers()
    assert type(reference).__module__.startswith("transformers.")
    shapes = shapes_from_config(light)
    assert shapes == shapes_from_config(reference)
    if light.layer_types is not None:
        assert light.layer_types == list(reference.layer_types)
        assert "full_attention" in light.layer_types and "sliding_attention" in light.layer_types
    for layer in range(shapes.n_layers):
        assert rope_parameters(light, layer) == rope_parameters(reference, layer)
        np.testing.assert_array_equal(
            inverse_frequencies(light, shapes.head_dim, layer),
            inverse_frequencies(reference, shapes.head_dim, layer),
        )
