"""Every RoPE position at once (headforms.heads.layer_sweep, headforms.engine.sweep).

The sweep reuses what does not depend on d (each head's Gram matrix and its factor) and at each
position solves one 2n x 2n problem. Its rows must equal the single-position analysis at every
d (to 1e-9), and a dense recomputation of K^T R_d Q: exactly (1e-9) with the rotation as
headforms builds it, and, with the model's own rotation as transformers applies it to queries
(its RoPE initialisers and ``apply_rotary_pos_emb``: partial rotary, per-layer theta, linear
scaling; computed in float32 by transformers, hence 1e-4), on tiny random llama, gpt_neox
(partial rotary) and gemma3 (per-layer theta, QK-norm gains folded) models and on the bundled
SmolLM2 and Gemma-3. Then the bounds and the one-line refusals, the cache, and memory (spectra
only when asked).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import tiny_models as tm
from numerics import SHARE_ATOL
from oracle import dense_profile

from headforms import analyze, heads
from headforms.architectures import shapes_from_config
from headforms.columns import METRIC_COLUMNS
from headforms.engine import stored_sweep, sweep
from headforms.errors import OptionError, UnavailableDataError
from headforms.heads import effective_factors
from headforms.models.extract import TensorIndex, read_layer
from headforms.models.rope import inverse_frequencies, rope_layer_type, rotation
from headforms.models.source import open_model
from headforms.options import MAX_ROPE_POSITIONS, SweepOptions, parse_rope_positions
from headforms.sources import locate
from headforms.sweeps import MAX_SWEEP_ROWS, check_sweep_size

FAMILIES = ["llama", "gpt_neox", "gemma3_text"]
"""Default RoPE + linear scaling and biases; partial rotary; per-layer theta and QK-norm."""
CHECKED = (0, 1, 2, 5, 17, 40, 128)
"""Positions compared with the single-position analysis and the dense oracles."""
EXACT = 1e-9
TRANSFORMERS_ROPE = 1e-4
"""transformers computes cos(d theta) and sin(d theta) in float32."""
PROFILE = ("a", "b", "c", "d", "b_sym", "c_sym", "d_sym", "energy", "pairing")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The tiny RoPE models, saved once for this module."""
    root = tmp_path_factory.mktemp("tiny-sweep")
    for seed, family in enumerate(FAMILIES):
        tm.build(family, root / family, seed=30 + seed)
    return {family: root / family for family in FAMILIES}


def assert_rows_equal(got: dict, want: dict, where: str, atol: float = EXACT) -> None:
    """Every per-head metric of ``got`` equals ``want`` (labels exactly, numbers to ``atol``,
    relative for the unbounded ones)."""
    for name in METRIC_COLUMNS:
        a, b = np.asarray(got[name]), np.asarray(want[name])
        if b.dtype == object or b.dtype.kind in "US":
            assert (a == b).all(), f"{where}: {name}"
        else:
            np.testing.assert_allclose(
                a.astype(float),
                b.astype(float),
                rtol=atol,
                atol=atol,
                equal_nan=True,
                err_msg=f"{where}: {name}",
            )


@pytest.mark.parametrize("family", FAMILIES)
def test_sweep_rows_equal_the_single_position_analysis(tiny: dict[str, Path], family: str):
    result = sweep(str(tiny[family]), "0:128")
    assert result.positions == tuple(range(129))
    assert len(result.table) == 129 * result.card.total_heads
    for d in CHECKED:
        single = analyze(str(tiny[family]), rope_position=d)
        assert_rows_equal(result.at(result.index(d)), single.columns, f"{family} d={d}")
        for column in ("layer", "head", "kv_head"):
            np.testing.assert_array_equal(
                result.at(result.index(d))[column], single.columns[column]
            )


def dense_rows(q: np.ndarray, k: np.ndarray, kv: np.ndarray) -> dict[str, np.ndarray]:
    """The profile columns of every head from dense ``L_h = K_kv(h)^T Q_h`` (N x N)."""
    rows = [dense_profile(k[kv[h]].T @ q[h]) for h in range(len(q))]
    return {name: np.array([row[name] for row in rows]) for name in PROFILE}


def transformers_rotated(config, family: str, q: np.ndarray, d: int, layer: int) -> np.ndarray:
    """``R_d Q_h`` as the model itself rotates a query d tokens after its key: every column of
    ``Q_h`` (an n-vector) through transformers' rotary embedding at position d (the key at 0 is
    not turned) and ``apply_rotary_pos_emb`` of the model's own module."""
    import importlib

    import torch

    module = importlib.import_module(f"transformers.models.{MODULES[family]}")
    rotary = getattr(module, ROTARY[family])(config)
    columns = torch.from_numpy(np.ascontiguousarray(q.transpose(0, 2, 1)))[None]  # (1, H, N, n)
    positions = torch.full((1, columns.shape[2]), d)
    layer_type = rope_layer_type(config, layer)
    extra = {"layer_type": layer_type} if layer_type else {}
    cos, sin = rotary(columns, positions, **extra)
    turned, _ = module.apply_rotary_pos_emb(columns, columns, cos.double(), sin.double())
    return turned[0].numpy().transpose(0, 2, 1)


MODULES = {
    "llama": "llama.modeling_llama",
    "gpt_neox": "gpt_neox.modeling_gpt_neox",
    "gemma3_text": "gemma3.modeling_gemma3",
}
ROTARY = {
    "llama": "LlamaRotaryEmbedding",
    "gpt_neox": "GPTNeoXRotaryEmbedding",
    "gemma3_text": "Gemma3RotaryEmbedding",
}


def check_against_dense(spec: str, family: str, positions: tuple[int, ...], layers=None) -> None:
    """The sweep at ``positions`` against dense K^T R_d Q: headforms' rotation (1e-9) and the
    model's own as transformers applies it (1e-4), with QK-norm gains folded."""
    source = open_model(spec)
    shapes = shapes_from_config(source.config)
    index = TensorIndex.for_source(source)
    config = (
        source.config.to_transformers()
        if hasattr(source.config, "to_transformers")
        else (source.config)
    )
    result = sweep(spec, positions)
    per_layer = shapes.n_heads
    for layer in layers if layers is not None else range(shapes.n_layers):
        factors = read_layer(source, shapes, index, layer)
        q, k = effective_factors(factors, 0)  # gains folded, not rotated
        inv_freq = inverse_frequencies(source.config, shapes.head_dim, layer)
        for d in positions:
            rows = result.at(result.index(d))
            got = {
                name: rows[name][layer * per_layer : (layer + 1) * per_layer] for name in PROFILE
            }
            ours = rotation(inv_freq, shapes.head_dim, d) @ q
            want = dense_rows(ours, k, shapes.kv_of_head)
            for name in PROFILE:
                np.testing.assert_allclose(got[name], want[name], atol=EXACT, err_msg=f"{name} {d}")
            theirs = transformers_rotated(config, family, q, d, layer)
            want = dense_rows(theirs, k, shapes.kv_of_head)
            for name in PROFILE:
                np.testing.assert_allclose(
                    got[name], want[name], atol=TRANSFORMERS_ROPE, err_msg=f"{name} d={d}"
                )


@pytest.mark.parametrize("family", FAMILIES)
def test_sweep_matches_dense_forms_with_the_models_own_rotation(tiny, family: str):
    check_against_dense(str(tiny[family]), family, CHECKED)


def test_the_dense_check_sees_a_wrong_rotation(tiny):
    """Power: the full-dims frequencies of GPT-NeoX (it rotates only half of each head) give
    other profiles than the model's own rotation."""
    source = open_model(str(tiny["gpt_neox"]))
    shapes = shapes_from_config(source.config)
    factors = read_layer(source, shapes, TensorIndex.for_source(source), 0)
    q, k = effective_factors(factors, 0)
    n = shapes.head_dim
    full = 1.0 / 500.0 ** (np.arange(0, n, 2) / n)
    wrong = dense_rows(rotation(full, n, 5) @ q, k, shapes.kv_of_head)
    right = dense_rows(
        transformers_rotated(source.config, "gpt_neox", q, 5, 0), k, shapes.kv_of_head
    )
    assert np.abs(wrong["a"] - right["a"]).max() > 1e-3


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("smollm2-135m", "llama"),
        pytest.param("gemma3-270m", "gemma3_text", marks=pytest.mark.slow),  # 20-35 s
    ],
)
def test_bundled_models_sweep_equals_single_analyses_and_dense_forms(name: str, family: str):
    """The bundled SmolLM2 (GQA) and Gemma-3 (local and global theta, folded QK-norm gains with
    exact zeros): single-position analyses at a few d, dense forms on two layers (Gemma-3: a
    local and a global one)."""
    positions = (0, 3, 64, 128)
    result = sweep(name, positions)
    for d in positions:
        assert_rows_equal(
            result.at(result.index(d)), analyze(name, rope_position=d).columns, f"{name} d={d}"
        )
    check_against_dense(name, family, (3, 128), layers=(0, 5))


def test_positions_are_taken_in_chunks_with_the_same_rows(tiny, monkeypatch: pytest.MonkeyPatch):
    """Memory per layer is bounded by computing positions a few at a time: one position per
    chunk gives the same rows."""
    spec = str(tiny["llama"])
    whole = sweep(spec, "0:40", use_cache=False)
    monkeypatch.setattr(heads, "SWEEP_CHUNK_BYTES", 1)
    chunked = sweep(spec, "0:40", use_cache=False)
    for point in range(whole.n_points):
        assert_rows_equal(chunked.at(point), whole.at(point), f"point {point}", atol=1e-13)


def test_spectra_are_kept_only_when_asked(tiny):
    spec = str(tiny["gemma3_text"])
    assert sweep(spec, "0:8").eig_s is None
    kept = sweep(spec, "0:8", spectra=True)
    single = analyze(spec, rope_position=7)
    for name, values in kept.spectra_at(kept.index(7)).items():
        np.testing.assert_allclose(values, single.spectra[name], atol=1e-12, err_msg=name)
    with pytest.raises(OptionError, match="kept no spectra"):
        sweep(spec, "0:8").spectra_at(0)


def test_a_sweep_is_cached_and_computed_from_stored_factors(tiny, monkeypatch):
    """A second sweep is a store read; a sweep of a model analysed before reads its stored
    factors, never the weights."""
    import headforms.streaming as streaming

    spec = str(tiny["llama"])
    analyze(spec)  # its factors are stored
    calls = []
    for name in ("compute_sweep", "forms_sweep"):
        real = getattr(streaming, name)
        monkeypatch.setattr(
            streaming,
            name,
            lambda *a, _real=real, _name=name, **k: calls.append(_name) or _real(*a, **k),
        )
    first = sweep(spec, "3:9")
    assert calls == ["forms_sweep"]
    again = sweep(spec, "3:9")
    assert calls == ["forms_sweep"]  # a store read
    assert_rows_equal(again.at(2), first.at(2), "cached", atol=0)
    assert stored_sweep(locate(spec), SweepOptions("3:9")) is not None
    assert stored_sweep(locate(spec), SweepOptions("3:10")) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("5:1", "starts after it ends (5 > 1)"),
        ("0:10:0", "step must be a positive"),
        ("0:2000", f"more than {MAX_ROPE_POSITIONS} positions"),
        ("0:a", "is not a whole number"),
        ("1,x", "is not a whole number"),
        ("", "no RoPE positions"),
        ("0:1:2:3", "accepted A:B"),
        ("0:99999999", "out of range"),
    ],
)
def test_bad_positions_are_one_line_errors(text: str, message: str):
    with pytest.raises(OptionError, match=re.escape(message)) as caught:
        parse_rope_positions(text)
    assert "\n" not in str(caught.value)


def test_positions_ranges_and_lists():
    assert parse_rope_positions("0:6:2") == (0, 2, 4, 6)
    assert parse_rope_positions("8, 1, 1, 0:2") == (0, 1, 2, 8)
    assert parse_rope_positions([3, -2]) == (-2, 3)
    assert SweepOptions().positions == tuple(range(129))  # the paper's slider


def test_a_model_without_rope_and_a_table_are_refused_in_one_line(tmp_path: Path):
    with pytest.raises(OptionError, match="has no rotation: it uses learned absolute positions"):
        sweep("minilm-l6", "0:4")
    table = tmp_path / "heads.csv"
    analyze("minilm-l6").heads.assign(model="m").to_csv(table, index=False)
    with pytest.raises(UnavailableDataError, match="no Q and K to rotate"):
        sweep(f"{table}::m", "0:4")


def test_a_sweep_too_large_is_refused_before_any_layer_is_read():
    from dataclasses import replace

    shapes = locate_shapes("smollm2-135m")
    check_sweep_size(shapes, SweepOptions("0:1023"))  # 276 k rows: within the bound
    layers = MAX_SWEEP_ROWS // (1024 * shapes.n_heads) + 1  # 1024 positions pass it
    wide = replace(shapes, n_layers=layers)
    check_sweep_size(wide, SweepOptions("0:1000"))
    with pytest.raises(OptionError, match="rows, more than a sweep may have"):
        check_sweep_size(wide, SweepOptions("0:1023"))
    with pytest.raises(OptionError, match="drop the spectra"):
        check_sweep_size(wide, SweepOptions("0:400", spectra=True))


def locate_shapes(spec: str):
    return shapes_from_config(open_model(spec).config)


def test_shares_stay_shares():
    """Every share of every row of a sweep lies in [0, 1] (shares are clipped as in one
    analysis)."""
    result = sweep("smollm2-135m", (0, 64, 128))
    for name in ("a", "b", "c", "d", "b_sym", "c_sym", "d_sym", "energy", "pairing"):
        values = result.stacked(name).astype(float)
        assert (values >= -SHARE_ATOL).all() and (values <= 1 + SHARE_ATOL).all(), name


def test_degenerate_heads_sweep_as_one_position_does():
    """Heads whose Gram matrix is singular (zero query rows: the QR factor), a vanishing head
    (every statistic missing, parity "zero") and partial rotary: the sweep's rows at each d are
    the single-position rows."""
    from headforms.factors import LayerFactors
    from headforms.heads import layer_heads, layer_sweep
    from headforms.options import AnalysisOptions

    rng = np.random.default_rng(7)
    q = rng.standard_normal((3, 8, 40))
    k = rng.standard_normal((3, 8, 40))
    q[0, 2:5] = 0.0  # rank-deficient: refactored by a QR of U
    q[2] = 0.0  # a vanishing form
    inv_freq = 1.0 / 50.0 ** (np.arange(0, 4, 2) / 4)  # 2 of the 4 pairs rotate
    layer = LayerFactors(q=q, k=k, inv_freq=inv_freq)
    kv = np.arange(3)
    options = SweepOptions("0:30:3")
    swept = layer_sweep(0, layer, kv, 40, options)
    for point, d in enumerate(options.positions):
        single = layer_heads(0, layer, kv, 40, AnalysisOptions(d)).rows
        assert_rows_equal({n: swept.rows[n][point] for n in METRIC_COLUMNS}, single, f"d={d}")
    assert (swept.rows["parity"][:, 2] == "zero").all()
