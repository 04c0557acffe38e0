"""CSV and JSON records written from numpy columns (headforms.cli.column_files) hold the bytes
pandas writes for the same table: ``DataFrame.to_csv(index=False)`` and the JSON records of a
``DataFrame`` (the reference, pandas, stays in these tests)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from headforms.cli import write_table
from headforms.cli.column_files import (
    csv_text,
    json_records,
    json_records_of_frame,
    plain_columns,
)

HARD_FLOATS = [
    0.1 + 0.2,
    1e-05,
    1.5e-7,
    1e16,
    1.2345678901234568e17,
    123456789.0,
    -0.0,
    5e-324,
    1.7976931348623157e308,
    float("nan"),
    2.0,
    -3.25,
]
"""Floats whose text is easy to get wrong: shortest reprs, exponents, negative zero, the
smallest subnormal and the largest double, NaN, whole numbers."""


def synthetic_columns(rows: int = len(HARD_FLOATS)) -> dict[str, np.ndarray]:
    """Columns of every kind a head table holds, and a few it might: ints, floats (NaN
    included), parity strings, object columns with None and NaN, text the CSV must quote."""
    rng = np.random.default_rng(7)
    strings = np.array(["I+", "II", "I-", "zero", 'say "hi"', "a,b", "two\nlines", "", " x "])
    objects = np.array(
        [None if i % 4 == 1 else float("nan") if i % 4 == 2 else f"m{i}" for i in range(rows)],
        dtype=object,
    )
    return {
        "layer": np.arange(rows, dtype=np.int64) // 3,
        "head": np.arange(rows, dtype=np.int32) % 3,
        "count": np.arange(rows, dtype=np.uint16),
        "hard": np.resize(np.array(HARD_FLOATS), rows),
        "random": rng.standard_normal(rows) * 10.0 ** rng.integers(-12, 12, rows),
        "single": rng.standard_normal(rows).astype(np.float32),
        "parity": np.resize(strings, rows).astype(object),
        "name": objects,
        "flag": np.arange(rows) % 2 == 0,
        "bias_norm": np.full(rows, np.nan),
    }


@pytest.mark.parametrize("rows", [0, 1, 12, 250])
def test_csv_is_pandas_to_csv_byte_for_byte(rows: int) -> None:
    columns = synthetic_columns(rows)
    assert csv_text(columns) == pd.DataFrame(columns).to_csv(index=False)


@pytest.mark.parametrize("rows", [0, 1, 12, 250])
def test_json_is_the_frame_records_byte_for_byte(rows: int) -> None:
    columns = synthetic_columns(rows)
    assert json_records(columns) == json_records_of_frame(pd.DataFrame(columns))


def test_json_keeps_every_float_exact_and_missing_cells_null() -> None:
    columns = synthetic_columns()
    records = json.loads(json_records(columns))
    assert [r["hard"] for r in records] == [
        None if math.isnan(v) else v for v in HARD_FLOATS
    ]  # a round trip gives every double back, bit for bit
    assert math.copysign(1.0, records[6]["hard"]) == -1.0  # -0.0 stays negative
    assert [r["name"] for r in records[:3]] == ["m0", None, None]
    assert all(r["bias_norm"] is None for r in records)
    assert records[5]["parity"] == "a,b" and records[0]["flag"] is True


@pytest.mark.parametrize("suffix", [".csv", ".json", ".parquet"])
def test_write_table_of_columns_writes_the_frame_file(tmp_path: Path, suffix: str) -> None:
    """A table handed over as columns is written with the bytes of the same ``DataFrame``
    (parquet through pandas for both), and no temporary file is left behind."""
    columns = synthetic_columns()
    del columns["name"]  # parquet refuses an object column of strings and floats
    write_table(columns, tmp_path / f"columns{suffix}")
    write_table(pd.DataFrame(columns), tmp_path / f"frame{suffix}")
    if suffix == ".parquet":
        pd.testing.assert_frame_equal(
            pd.read_parquet(tmp_path / "columns.parquet"),
            pd.read_parquet(tmp_path / "frame.parquet"),
        )
    else:
        assert (tmp_path / f"columns{suffix}").read_bytes() == (
            tmp_path / f"frame{suffix}"
        ).read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"columns{suffix}", f"frame{suffix}"]


def test_other_kinds_of_column_go_to_pandas(tmp_path: Path) -> None:
    """A column these writers do not format (dates) is written by pandas, as before."""
    columns = {
        "layer": np.arange(3),
        "when": np.array(["2026-01-01", "2026-01-02", "NaT"], dtype="datetime64[ns]"),
    }
    assert not plain_columns(columns) and plain_columns({"layer": np.arange(3)})
    write_table(columns, tmp_path / "dates.csv")
    expected = pd.DataFrame(columns).to_csv(index=False)
    assert (tmp_path / "dates.csv").read_text() == expected
