"""Published per-head tables (headforms.tables) as read-only models: ``FILE::MODEL`` specs.

Tables are written here from random profiles (Dirichlet) with the author's column names
(``symmetric_energy``, ``dim``, no ``parity``) or the survey's; the reader must keep every
value, derive parity by the Table 2 rule (recomputed here with numpy), build the card from
the table's shape (its ``dim`` is 2n: the head dim is half of it), refuse malformed tables in
one line, and give a Gaussian baseline only when the table has the model dim N.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from published_tables import author_table

from headforms import analyze
from headforms.errors import CorruptFileError, ModelSpecError, OptionError, UnavailableDataError
from headforms.model_analysis import model_baseline
from headforms.sources import parse_spec
from headforms.sources.specs import split_spec
from headforms.tables import expand_table_spec


def is_table_spec(spec: str) -> bool:
    return parse_spec(spec).kind == "table"


def expected_parity(rows: pd.DataFrame) -> np.ndarray:
    c, d = rows["c_sym"].to_numpy(), rows["d_sym"].to_numpy()
    return np.where(c + d <= 1 / 50, "II", np.where(c > d, "I+", "I-"))


@pytest.fixture
def published(tmp_path: Path) -> tuple[Path, pd.DataFrame]:
    table = pd.concat(
        [author_table("org/alpha", 3, 4, 2, 16, 0), author_table("beta", 2, 6, 6, 8, 1)],
        ignore_index=True,
    )
    path = tmp_path / "head_statistics.csv"
    table.sample(frac=1.0, random_state=0).to_csv(path, index=False)  # rows in any order
    return path, table


def test_author_columns_open_as_read_only_models(published):
    path, table = published
    for model, shape in (("org/alpha", (3, 4, 2, 8)), ("beta", (2, 6, 6, 4))):  # n = dim / 2
        result = analyze(f"{path}::{model}")
        card = result.card
        assert (card.n_layers, card.n_heads, card.n_kv_heads, card.head_dim) == shape
        assert card.source_kind == "table" and card.model_dim == 0 and card.name == model
        assert result.spectra == {}
        rows = table[table["model"] == model].sort_values(["layer", "head"])
        np.testing.assert_allclose(result.heads["energy"], rows["symmetric_energy"])
        for column in ("a", "b", "c", "d", "b_sym", "c_sym", "d_sym", "pairing", "balance"):
            np.testing.assert_allclose(result.heads[column], rows[column], err_msg=column)
        assert list(result.heads["parity"]) == list(expected_parity(rows))
        assert result.heads["n_pos"].isna().all()  # not in the table: missing, not invented
        with pytest.raises(UnavailableDataError, match="no Gaussian baseline"):
            model_baseline(result.card)  # noqa: B018


def test_model_dim_column_gives_the_gaussian_baseline(tmp_path: Path):
    table = author_table("m", 2, 4, 4, 8, 3)
    table["model_dim"] = 64
    path = tmp_path / "t.parquet"
    table.to_parquet(path)
    result = analyze(str(path))  # one model: the bare file is enough
    baseline = model_baseline(result.card)
    assert (baseline.shapes.head_dim, baseline.shapes.model_dim) == (4, 64)  # n = dim / 2
    # Gaussian K, Q: E[energy] = (N + 1) / (2N) (SPEC fact 4), here within sampling error
    assert abs(baseline.heads["energy"].mean() - 65 / 128) < 0.02


def test_specs_and_expansion(published, tmp_path: Path):
    path, _ = published
    assert split_spec(f"{path}::beta") == (path, "beta")
    assert is_table_spec("x.parquet") and is_table_spec("x.json::m")
    assert not is_table_spec("gpt2") and not is_table_spec("x.json")
    assert expand_table_spec(str(path)) == [f"{path}::org/alpha", f"{path}::beta"]
    assert expand_table_spec("gpt2") == ["gpt2"]


def test_an_empty_kv_head_column_means_one_key_head_per_query_head(published, tmp_path: Path):
    path, table = published
    table.assign(kv_head=np.nan).to_csv(tmp_path / "nokv.csv", index=False)
    result = analyze(f"{tmp_path / 'nokv.csv'}::org/alpha")
    assert result.card.n_kv_heads == result.card.n_heads == 4
    np.testing.assert_array_equal(result.heads["kv_head"], result.heads["head"])


@pytest.mark.parametrize(
    "case, error, message",
    [
        ("several", ModelSpecError, "holds 2 models; name one as head_statistics.csv::MODEL"),
        ("unknown", ModelSpecError, "has no model 'gamma'; it holds: org/alpha, beta"),
        ("missing", ModelSpecError, "no such table file"),
        ("rope", OptionError, "RoPE position 3 needs the weights"),
        ("columns", CorruptFileError, "missing column(s) c_sym"),
        ("grid", CorruptFileError, "not one per head of 3 layers x 4 heads"),
        ("garbage", CorruptFileError, "cannot read it as a parquet table"),
        ("kv-partly-empty", CorruptFileError, "column kv_head must hold non-negative integers"),
        ("markup", CorruptFileError, "model name '<a href=\"https://x.test\">beta</a>' is not"),
        ("control", CorruptFileError, "model name 'be\\x1b[2Jta' is not accepted"),
    ],
)
def test_bad_tables_are_one_line(published, tmp_path: Path, case, error, message):
    path, table = published
    spec, rope = str(path), 0
    if case == "unknown":
        spec = f"{path}::gamma"
    elif case == "missing":
        spec = str(tmp_path / "nope.csv")
    elif case == "rope":
        spec, rope = f"{path}::beta", 3
    elif case == "columns":
        table.drop(columns="c_sym").to_csv(tmp_path / "c.csv", index=False)
        spec = f"{tmp_path / 'c.csv'}::beta"
    elif case == "grid":
        table.drop(index=[5]).to_csv(tmp_path / "g.csv", index=False)
        spec = f"{tmp_path / 'g.csv'}::org/alpha"
    elif case == "kv-partly-empty":
        table.loc[3, "kv_head"] = np.nan
        table.to_csv(tmp_path / "k.csv", index=False)
        spec = f"{tmp_path / 'k.csv'}::org/alpha"
    elif case in ("markup", "control"):
        name = '<a href="https://x.test">beta</a>' if case == "markup" else "be\x1b[2Jta"
        table.loc[table["model"] == "beta", "model"] = name
        table.to_csv(tmp_path / "m.csv", index=False)
        spec = f"{tmp_path / 'm.csv'}::org/alpha"
    elif case == "garbage":
        (tmp_path / "bad.parquet").write_bytes(b"not parquet at all")
        spec = str(tmp_path / "bad.parquet")
    with pytest.raises(error) as caught:
        analyze(spec, rope_position=rope)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_hosted_mode_reads_tables_only_under_the_model_roots(published, tmp_path, monkeypatch):
    from headforms.errors import NotAllowedError
    from headforms.hosted import policy_in_force

    path, _ = published
    monkeypatch.setenv("HEADFORMS_HOSTED", "1")
    monkeypatch.setenv("HEADFORMS_MODEL_ROOTS", str(tmp_path / "elsewhere"))
    with pytest.raises(NotAllowedError, match="outside the model directories"):
        analyze(f"{path}::beta", policy=policy_in_force())
    monkeypatch.setenv("HEADFORMS_MODEL_ROOTS", str(path.parent))
    assert analyze(f"{path}::beta", policy=policy_in_force()).card.n_heads == 6


def test_the_papers_models_get_their_public_facts(tmp_path: Path):
    """A table model named like one of the paper's (tag or hub id) with its shapes gets N, its
    family, positions and biases from headforms.presets; the author's n_zero (zeros among 2n)
    becomes zeros out of N; a model of that name with other shapes gets none of them."""
    from headforms.architectures import Shapes
    from headforms.presets import PAPER_MODEL_FACTS

    assert sum(m.total_heads for m in PAPER_MODEL_FACTS) == 9512  # the paper's count
    table = pd.concat(
        [
            author_table("gpt2", 12, 12, 12, 128, 4),
            author_table("mistralai/Mistral-Small-24B-Base-2501", 40, 32, 8, 256, 5),
            author_table("gpt2-medium", 2, 2, 2, 128, 6),
        ],
        ignore_index=True,
    ).assign(n_pos=63, n_neg=64, n_zero=1)
    path = tmp_path / "head_statistics.csv"
    table.to_csv(path, index=False)
    gpt2 = analyze(f"{path}::gpt2")
    card = gpt2.card
    assert (card.model_dim, card.head_dim, card.family, card.positional) == (
        768,
        64,
        "gpt2",
        "learned absolute",
    )
    assert card.has_qk_bias is True and card.qk_norm is False
    assert card.baseline_shapes == Shapes(12, 768, 12, 12, 64)
    assert (gpt2.heads["n_zero"] == 768 - 127).all()
    mistral = analyze(f"{path}::mistralai/Mistral-Small-24B-Base-2501").card
    assert (mistral.model_dim, mistral.n_kv_heads, mistral.positional) == (5120, 8, "rotary")
    assert mistral.has_qk_bias is False
    other = analyze(f"{path}::gpt2-medium")
    assert other.card.model_dim == 0 and other.card.has_qk_bias is None
    assert other.card.positional == "unknown" and other.heads["n_zero"].isna().all()


def test_the_theorem5_point_follows_from_a_tables_lobe_ratio(tmp_path: Path):
    """A table with the author's rho but no spectra: the Theorem 5 point is its function,
    b = 2r / (1 + r^2) and (1 - r)^2 / (1 + r^2) on the side of the larger lobe, r = min(rho,
    1/rho); without rho it stays missing."""
    table = author_table("m", 2, 3, 3, 8, 2)
    rho = np.array([0.5, 2.0, 1.0, 0.1, 3.0, 0.8])
    path = tmp_path / "t.csv"
    table.assign(rho=rho).to_csv(path, index=False)
    heads = analyze(f"{path}::m").heads
    r = np.minimum(rho, 1 / rho)
    np.testing.assert_allclose(heads["theorem5_b"], 2 * r / (1 + r**2))
    np.testing.assert_allclose(heads["theorem5_c"], np.where(rho < 1, (1 - r) ** 2 / (1 + r**2), 0))
    np.testing.assert_allclose(heads["theorem5_d"], np.where(rho > 1, (1 - r) ** 2 / (1 + r**2), 0))
    table.to_csv(tmp_path / "u.csv", index=False)
    assert analyze(f"{tmp_path / 'u.csv'}::m").heads["theorem5_b"].isna().all()


def test_every_column_says_what_it_holds():
    from headforms.columns import COLUMN_DESCRIPTIONS, TABLE_COLUMNS

    assert set(COLUMN_DESCRIPTIONS) == set(TABLE_COLUMNS)
    for name in ("participation_ratio", "stable_rank", "leading_share"):
        assert "singular values h of L" in COLUMN_DESCRIPTIONS[name]
        assert "eigenvalues λ of S" in COLUMN_DESCRIPTIONS[f"{name}_s"]
