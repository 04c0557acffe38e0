"""Published tables are bounded before they are parsed (issue 17, item 5): bytes, rows, models
and a parquet file's metadata, checked before any data is read (a small parquet of constant
rows that expands hugely, a huge CSV, a table of many models); only known columns are read; the
models of a table are looked up once per table; read tables are kept within a byte budget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from published_tables import head_rows

from headforms import analyze
from headforms.bounded import ByteLRU, sizeof
from headforms.errors import CorruptFileError


@pytest.fixture
def no_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make pandas' readers fail: a refusal must come before any table data is parsed."""

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("the table was parsed before it was refused")

    for name in ("read_parquet", "read_csv", "read_json"):
        monkeypatch.setattr(pd, name, forbidden)


def test_a_parquet_of_constant_rows_is_refused_from_its_metadata(
    tmp_path: Path, no_parsing: None
) -> None:
    """A file of 5 million constant rows (well under a megabyte: dictionary and run-length
    encoding) that pandas would expand to gigabytes: refused from its metadata, nothing read
    (before: 9.3 GB in 15 s from a 1.7 MB file)."""
    path = tmp_path / "bomb.parquet"
    constant = head_rows(1).loc[[0] * 100_000].reset_index(drop=True)  # one row, repeated
    block = pa.Table.from_pandas(constant, preserve_index=False)
    with pq.ParquetWriter(path, block.schema, compression="zstd") as writer:
        for _ in range(50):
            writer.write_table(block)
    assert path.stat().st_size < 2**20
    with pytest.raises(CorruptFileError) as refused:
        analyze(f"{path}::m0")
    assert str(refused.value) == (
        "bomb.parquet has 5000000 rows, more than the 250000 a table may have "
        "(HEADFORMS_MAX_TABLE_ROWS); nothing was read"
    )


def test_a_parquet_too_wide_or_too_large_is_refused_from_its_metadata(
    tmp_path: Path, no_parsing: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    extra = pd.DataFrame(np.zeros((4, 600)), columns=[f"extra{i}" for i in range(600)])
    wide = pd.concat([head_rows(4), extra], axis=1)
    wide.to_parquet(tmp_path / "wide.parquet", index=False)
    with pytest.raises(CorruptFileError, match=r"in 6\d\d columns, more than .*nothing was read"):
        analyze(f"{tmp_path / 'wide.parquet'}::m0")
    # 20,000 distinct 2 KB model names: a small file (they compress well) of 40 MB of data
    long_names = head_rows(20_000, name="x" * 2000 + "{}")
    long_names.to_parquet(tmp_path / "names.parquet", index=False, compression="zstd")
    assert (tmp_path / "names.parquet").stat().st_size < 2**20
    monkeypatch.setenv("HEADFORMS_MAX_TABLE_BYTES", str(4 * 2**20))
    expected = (
        r"names.parquet expands to [\d.]+ MiB in 10 columns, more than the 4 MiB a table may "
        r"have \(HEADFORMS_MAX_TABLE_BYTES\); nothing was read"
    )
    with pytest.raises(CorruptFileError, match=expected):
        analyze(f"{tmp_path / 'names.parquet'}::m0")


def test_a_huge_csv_is_refused_before_a_byte_is_read(tmp_path: Path, no_parsing: None) -> None:
    """A 600 MB CSV (sparse here): refused from its size (before: over 9 GB while parsing)."""
    path = tmp_path / "huge.csv"
    with path.open("wb") as fh:
        fh.write(b"model,layer,head,a,b,c,d,b_sym,c_sym,d_sym\n")
        fh.truncate(600 * 2**20)
    with pytest.raises(CorruptFileError) as refused:
        analyze(f"{path}::m0")
    assert str(refused.value) == (
        "huge.csv is 600 MiB, more than the 64 MiB a table may have (HEADFORMS_MAX_TABLE_BYTES)"
    )


def test_rows_and_models_past_the_limits_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CSV is parsed at most one row past the row limit; a table of more models than the
    limit is refused (before: 300,000 models kept a core busy with no page after 300 s)."""
    head_rows(2_000).to_csv(tmp_path / "many.csv", index=False)
    with pytest.raises(CorruptFileError) as refused:
        sources_of(tmp_path / "many.csv")
    assert str(refused.value) == (
        "many.csv holds 2000 models, more than the 1000 a table may hold "
        "(HEADFORMS_MAX_TABLE_MODELS)"
    )
    monkeypatch.setenv("HEADFORMS_MAX_TABLE_ROWS", "1500")
    seen: list[Any] = []
    real = pd.read_csv

    def spy(*args: Any, **kwargs: Any) -> pd.DataFrame:
        seen.append(kwargs.get("nrows"))
        return real(*args, **kwargs)

    monkeypatch.setattr(pd, "read_csv", spy)
    with pytest.raises(CorruptFileError, match="many.csv has more than 1500 rows"):
        sources_of(tmp_path / "many.csv")
    assert seen == [1501]
    monkeypatch.setenv("HEADFORMS_MAX_TABLE_ROWS", "lots")
    with pytest.raises(Exception, match="HEADFORMS_MAX_TABLE_ROWS='lots' is not a positive"):
        sources_of(tmp_path / "many.csv")


def sources_of(path: Path) -> list[str]:
    """The specs a table file stands for (what the model picker lists)."""
    from headforms.tables import expand_table_spec

    return expand_table_spec(str(path))


def test_a_thousand_models_open_and_list_in_order(tmp_path: Path) -> None:
    """At the model limit every model is listed, in order, and opens (rows looked up once per
    table, not filtered per model)."""
    head_rows(1_000, layers=2, heads=2).to_csv(tmp_path / "thousand.csv", index=False)
    specs = sources_of(tmp_path / "thousand.csv")
    assert specs == [f"{tmp_path / 'thousand.csv'}::m{i}" for i in range(1_000)]
    last = analyze(specs[-1])
    assert (last.card.n_layers, last.card.n_heads) == (2, 2)
    assert list(last.heads["layer"]) == [0, 0, 1, 1]


def test_only_known_columns_are_read(tmp_path: Path) -> None:
    table = head_rows(2).assign(notes="x" * 1000, secret=1.0)
    table.to_csv(tmp_path / "t.csv", index=False)
    from headforms.tables import read_table

    assert {"notes", "secret"}.isdisjoint(read_table(tmp_path / "t.csv").columns)


def test_read_tables_are_kept_within_a_byte_budget() -> None:
    """The in-memory caches are bounded in bytes: the least recently used go first, an entry
    larger than the budget is never kept."""
    cache: ByteLRU[Any] = ByteLRU(10 * 2**20)
    for i in range(10):
        cache.put(i, np.zeros(2**18))  # 2 MiB each
    assert cache.bytes <= 10 * 2**20 and len(cache) == 4
    assert cache.get(0) is None and cache.get(9) is not None
    cache.put("huge", np.zeros(2**21))  # 16 MiB: not kept, nothing else lost
    assert cache.get("huge") is None and len(cache) == 4
    frame = pd.DataFrame({"s": ["x" * 1000] * 1000})
    assert 10**6 <= sizeof(frame) <= 2 * 10**6
    figure = {"data": [{"x": np.zeros(10**5), "y": np.zeros(10**5)}]}
    assert 1.6e6 <= sizeof([figure, figure]) <= 1.7e6  # shared objects counted once
