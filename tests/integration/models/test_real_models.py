"""The three bundled real models end to end, and SmolLM2's GGUF extraction against transformers.

Theorem 3 (balance) per head, profiles in the simplex, the Gaussian baseline's mean energy,
BERT's symmetric bias; Gemma-3's QK-norm gains are read independently with ``gguf.GGUFReader``.
The parity shares and mean profiles are printed at the end of the module (``-q`` shows them).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import numpy as np
import pandas as pd
import pytest
from gguf_reference import dequantized, reference_tensors

from headforms import BUNDLED_MODELS, ModelAnalysis, analyze
from headforms.analyses.parity import parity_table
from headforms.architectures import shapes_from_config
from headforms.forms import head_forms
from headforms.heads import effective_factors
from headforms.model_analysis import model_baseline
from headforms.models.extract import TensorIndex, read_layer
from headforms.models.source import open_model

BUNDLED = ("smollm2-135m", "minilm-l6", "gemma3-270m")
PROFILE = ["a", "b", "c", "d"]
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="module", autouse=True)
def one_blas_thread() -> Iterator[None]:
    """One BLAS thread: on a shared 2-core machine more threads are erratic, not faster."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield


class Analyses(dict):
    """Bundled models analysed on first use, with the default options (QK-norm folded, d = 0)."""

    def __missing__(self, name: str) -> ModelAnalysis:
        self[name] = analyze(name)
        return self[name]


@pytest.fixture(scope="module")
def analyses() -> Analyses:
    """The bundled models' analyses, each computed once for the module when a test asks."""
    return Analyses()


GEMMA = pytest.param("gemma3-270m", marks=pytest.mark.slow)
"""Gemma-3's cases run in ``make test``, not the fast lane (its analyses take 5-10 s each); the
tiny Gemma-3 models check its architecture there."""
BUNDLED_CASES = ("smollm2-135m", "minilm-l6", GEMMA)


@pytest.fixture(scope="module")
def gemma_unfolded() -> ModelAnalysis:
    """Gemma-3 with its raw Q/K projections (``--no-fold-qk-norm``)."""
    return analyze("gemma3-270m", fold_qk_norm=False)


@pytest.fixture(scope="module")
def gemma_gains() -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per layer ``(g_q, g_k)`` read with gguf's own reader (the GGUF stores the full gain)."""
    tensors = reference_tensors(BUNDLED_MODELS["gemma3-270m"].locate())
    gains = {}
    layer = 0
    while f"blk.{layer}.attn_q_norm.weight" in tensors:
        gains[layer] = (
            dequantized(tensors[f"blk.{layer}.attn_q_norm.weight"]),
            dequantized(tensors[f"blk.{layer}.attn_k_norm.weight"]),
        )
        layer += 1
    return gains


@pytest.fixture(scope="module")
def report(request: pytest.FixtureRequest) -> Iterator[list[str]]:
    """Lines printed after this module's tests (parity shares, mean profiles)."""
    lines: list[str] = []
    yield lines
    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    if reporter is not None and capture is not None and lines:
        with capture.global_and_fixture_disabled():
            reporter.ensure_newline()
            reporter.write_sep("-", "bundled real models")
            for line in lines:
                reporter.write_line(line)


# ---------------------------------------------------------------------------------------------
# Theorem 3: n positive and n negative eigenvalues of S per head


@pytest.mark.parametrize("name", ["smollm2-135m", "minilm-l6"])
def test_every_head_is_balanced_with_n_of_each_sign(analyses: Analyses, name: str) -> None:
    card, heads = analyses[name].card, analyses[name].heads
    assert len(heads) == card.n_layers * card.n_heads
    assert (heads["n_pos"] == card.head_dim).all()
    assert (heads["n_neg"] == card.head_dim).all()
    assert (heads["n_zero"] == card.model_dim - 2 * card.head_dim).all()
    assert (heads["balance"] == 1.0).all()


@pytest.mark.slow
def test_gemma_folded_balance_loses_exactly_the_dims_with_a_zero_gain(
    analyses: Analyses, gemma_gains: dict[int, tuple[np.ndarray, np.ndarray]]
) -> None:
    card, heads = analyses["gemma3-270m"].card, analyses["gemma3-270m"].heads
    assert card.qk_norm and card.qk_norm_folded
    assert sorted(gemma_gains) == list(range(card.n_layers))
    dead = {
        layer: int(np.count_nonzero(g_q * g_k == 0)) for layer, (g_q, g_k) in gemma_gains.items()
    }
    assert sum(dead.values()) > 0, "the model is known to have exactly-zero gains"
    expected = heads["layer"].map(dead).to_numpy()
    n = card.head_dim
    assert (heads["n_pos"].to_numpy() == n - expected).all()
    assert (heads["n_neg"].to_numpy() == n - expected).all()


@pytest.mark.slow
def test_gemma_unfolded_heads_have_n_of_each_sign(gemma_unfolded: ModelAnalysis) -> None:
    card, heads = gemma_unfolded.card, gemma_unfolded.heads
    assert card.qk_norm and not card.qk_norm_folded
    assert (heads["n_pos"] == card.head_dim).all()
    assert (heads["n_neg"] == card.head_dim).all()


# ---------------------------------------------------------------------------------------------
# Profiles, parity, baseline


@pytest.mark.parametrize("name", BUNDLED_CASES)
def test_profiles_lie_in_the_simplex(analyses: Analyses, name: str) -> None:
    heads = analyses[name].heads
    for columns in (PROFILE, ["b_sym", "c_sym", "d_sym"]):
        values = heads[columns].to_numpy()
        assert (values >= 0).all()
        np.testing.assert_allclose(values.sum(axis=1), 1.0, atol=1e-12)
    mean = heads[PROFILE].mean().to_numpy()
    assert (mean >= 0).all() and abs(mean.sum() - 1.0) < 1e-12
    np.testing.assert_allclose(heads["energy"], 1.0 - heads["a"], atol=1e-12)
    assert heads["parity"].isin(["I+", "II", "I-"]).all()


@pytest.mark.parametrize("name", BUNDLED_CASES)
def test_baseline_mean_energy_is_near_theory(analyses: Analyses, name: str) -> None:
    card, energy = analyses[name].card, model_baseline(analyses[name].card).heads["energy"]
    expected = (card.model_dim + 1) / (2 * card.model_dim)
    standard_error = energy.std(ddof=1) / np.sqrt(len(energy))
    assert abs(energy.mean() - expected) < 4 * standard_error


def test_bidirectional_bert_heads_lean_symmetric(analyses: Analyses) -> None:
    energy = analyses["minilm-l6"].heads["energy"]
    assert energy.mean() > 0.5


@pytest.mark.slow
def test_parity_shares_and_mean_profiles(
    analyses: Analyses, gemma_unfolded: ModelAnalysis, report: list[str]
) -> None:
    models = {name: analyses[name].heads for name in BUNDLED}
    models["gemma3-270m (unfolded)"] = gemma_unfolded.heads
    table = parity_table(models)
    np.testing.assert_allclose(table[["I+", "II", "I-"]].sum(axis=1), 100.0, atol=1e-9)
    baselines = {name: model_baseline(analyses[name].card).heads for name in BUNDLED}
    baselines["gemma3-270m (unfolded)"] = model_baseline(gemma_unfolded.card).heads
    means = {
        name: pd.concat(
            [
                heads[[*PROFILE, "energy", "pairing"]].mean(),
                pd.Series({"baseline energy": baselines[name]["energy"].mean()}),
            ]
        )
        for name, heads in models.items()
    }
    for mean in means.values():
        assert abs(mean[PROFILE].sum() - 1.0) < 1e-12 and (mean[PROFILE] >= 0).all()
    report.append("parity shares (% of heads):")
    report.extend(table.round(1).to_string().splitlines())
    report.append("mean profile, symmetric energy, pairing, baseline energy:")
    frame = pd.DataFrame(means).T
    report.extend(frame.round(4).to_string().splitlines())


# ---------------------------------------------------------------------------------------------
# SmolLM2: the engine's GGUF extraction against transformers' own GGUF loading


@pytest.fixture(scope="module")
def hf_smollm2() -> dict[str, object]:
    """q_proj/k_proj weights (float64, HF row order) and the rotary embedding, via transformers."""
    import torch
    from transformers import AutoModelForCausalLM

    folder = BUNDLED_MODELS["smollm2-135m"].locate().parent
    model = AutoModelForCausalLM.from_pretrained(str(folder), gguf_file=SMOLLM2_GGUF)
    layers = model.model.layers
    out = {
        "q": [layer.self_attn.q_proj.weight.detach().to(torch.float64).numpy() for layer in layers],
        "k": [layer.self_attn.k_proj.weight.detach().to(torch.float64).numpy() for layer in layers],
        "rotary": model.model.rotary_emb,
        "config": model.config,
    }
    del model, layers
    gc.collect()
    return out


@pytest.fixture(scope="module")
def smollm2_source():
    """The engine's view of SmolLM2: source, shapes and tensor index."""
    source = open_model("smollm2-135m")
    shapes = shapes_from_config(source.config)
    return source, shapes, TensorIndex.for_source(source)


@pytest.mark.slow
def test_gguf_forms_match_transformers_gguf_loading(hf_smollm2, smollm2_source) -> None:
    source, shapes, index = smollm2_source
    config = hf_smollm2["config"]
    assert (shapes.n_layers, shapes.model_dim) == (config.num_hidden_layers, config.hidden_size)
    assert (shapes.n_heads, shapes.n_kv_heads) == (
        config.num_attention_heads,
        config.num_key_value_heads,
    )
    H, Hkv, n, N = shapes.n_heads, shapes.n_kv_heads, shapes.head_dim, shapes.model_dim
    worst = 0.0
    for layer in range(shapes.n_layers):
        weights = read_layer(source, shapes, index, layer)
        q, k = effective_factors(weights)
        q_hf = hf_smollm2["q"][layer].reshape(H, n, N)
        k_hf = hf_smollm2["k"][layer].reshape(Hkv, n, N)
        for head in range(H):
            kv = head // (H // Hkv)
            form = k[kv].T @ q[head]
            form_hf = k_hf[kv].T @ q_hf[head]
            worst = max(worst, np.linalg.norm(form - form_hf) / np.linalg.norm(form_hf))
        # Same rows in the same (HF rotate-half) order, not only the same product.
        np.testing.assert_allclose(q, q_hf, rtol=1e-6, atol=0)
        np.testing.assert_allclose(k, k_hf, rtol=1e-6, atol=0)
    assert worst <= 1e-6


def test_head_table_matches_forms_of_transformers_weights(
    hf_smollm2, smollm2_source, analyses: Analyses
) -> None:
    _, shapes, _ = smollm2_source
    heads = analyses["smollm2-135m"].heads
    H, Hkv, n, N = shapes.n_heads, shapes.n_kv_heads, shapes.head_dim, shapes.model_dim
    for layer in (0, shapes.n_layers // 2, shapes.n_layers - 1):
        q = hf_smollm2["q"][layer].reshape(H, n, N)
        k = hf_smollm2["k"][layer].reshape(Hkv, n, N)
        metrics = head_forms(q, k, np.arange(H) // (H // Hkv)).metrics()
        rows = heads[heads["layer"] == layer]
        for column in [*PROFILE, "b_sym", "c_sym", "d_sym", "energy", "pairing"]:
            np.testing.assert_allclose(rows[column], metrics[column], rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("position", [1, 37, 4000])
def test_rope_position_matches_transformers_rotary_embedding(
    hf_smollm2, smollm2_source, position: int
) -> None:
    """``L_d = K^T R_d Q``: the query factor rotated as HF rotates a query at position d."""
    import torch
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    source, shapes, index = smollm2_source
    H, n, N = shapes.n_heads, shapes.head_dim, shapes.model_dim
    layer = 3
    weights = read_layer(source, shapes, index, layer)
    q_rot, _ = effective_factors(weights, rope_position=position)
    q_hf = torch.from_numpy(hf_smollm2["q"][layer].reshape(H, n, N).transpose(0, 2, 1).copy())
    with torch.no_grad():
        cos, sin = hf_smollm2["rotary"](q_hf, torch.tensor([[position]]))
        # The N columns of each head's Q are N query vectors at position d.
        rotated, _ = apply_rotary_pos_emb(
            q_hf[None], q_hf[None], cos.double(), sin.double(), unsqueeze_dim=1
        )
    expected = rotated[0].numpy().transpose(0, 2, 1)
    scale = np.linalg.norm(expected)
    # transformers computes the angles d * theta_i in float32: allow that rounding.
    assert np.linalg.norm(q_rot - expected) / scale < 1e-6 * (10 + position)
    # And the rotation is not the identity at this position.
    assert np.linalg.norm(q_rot - weights.q) / scale > 1e-3
