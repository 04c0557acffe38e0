"""CSV and JSON records of a table held as numpy columns, without pandas.

The cold ``headforms analyze MODEL --out heads.csv`` would otherwise spend a good part of its
start importing pandas only to write 30 columns (benchmarks/README.md, section 2). These
writers give the bytes pandas gives (``DataFrame.to_csv(index=False)``, and the JSON records of
:func:`json_records_of_frame`): the tests hold them to pandas on real analyses. Parquet stays
with pandas and pyarrow.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

PLAIN_KINDS = "biufOU"
"""numpy dtype kinds these writers handle (bool, int, unsigned, float, object, str); a table
with another kind (dates, complex numbers) is written by pandas."""


def plain_columns(columns: Mapping[str, np.ndarray]) -> bool:
    """Whether every column is of a kind these writers handle (one-dimensional, plain dtype)."""
    arrays = [np.asarray(values) for values in columns.values()]
    return all(a.ndim == 1 and a.dtype.kind in PLAIN_KINDS for a in arrays)


def _is_missing(value: Any) -> bool:
    """pandas' idea of a missing cell in an object column: None or a float NaN."""
    return value is None or (isinstance(value, (float, np.floating)) and bool(np.isnan(value)))


def _csv_cells(values: np.ndarray) -> np.ndarray:
    """One column's cells as pandas hands them to ``csv.writer`` (``na_rep=''``): floats as
    numpy's shortest repr (``astype(str)``), NaN and None empty, other objects as they are."""
    if values.dtype.kind == "f":
        cells = values.astype(str).astype(object)
        cells[np.isnan(values)] = ""
        return cells
    if values.dtype.kind in "biuU":
        return values.astype(str).astype(object)
    cells = np.array(values, dtype=object)
    for i, value in enumerate(cells):
        if _is_missing(value):
            cells[i] = ""
    return cells


def csv_text(columns: Mapping[str, np.ndarray]) -> str:
    """The CSV of ``DataFrame(columns).to_csv(index=False)``: a header, then one line per row,
    quoted as the ``csv`` module quotes (minimal), lines ended by ``os.linesep``."""
    arrays = {name: np.asarray(values) for name, values in columns.items()}
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=os.linesep, quoting=csv.QUOTE_MINIMAL)
    writer.writerow(list(arrays))
    cells = [_csv_cells(values) for values in arrays.values()]
    writer.writerows(zip(*cells, strict=True))
    return out.getvalue()


def _json_value(value: Any) -> Any:
    """A numpy scalar as the Python value ``json`` writes (``default=``)."""
    return value.item()


def json_text(records: list[dict[str, Any]]) -> str:
    """JSON records with every float exact (shortest round-trip repr), missing cells null."""
    return json.dumps(records, indent=1, allow_nan=False, default=_json_value)


def json_records(columns: Mapping[str, np.ndarray]) -> str:
    """The JSON records of :func:`json_records_of_frame` for ``DataFrame(columns)``, from the
    numpy columns: one object per row, keys in column order, NaN and None as null."""
    names = list(columns)
    lists = []
    for values in (np.asarray(v) for v in columns.values()):
        cells = values.tolist()
        if values.dtype.kind in "fO":
            cells = [None if _is_missing(v) else v for v in cells]
        lists.append(cells)
    records = [dict(zip(names, row, strict=True)) for row in zip(*lists, strict=True)]
    return json_text(records)


def json_records_of_frame(table: Any) -> str:
    """JSON records of a ``DataFrame`` (floats exact; ``DataFrame.to_json`` keeps at most 15
    decimals, which loses small values' digits)."""
    records = table.astype(object).where(table.notna(), None).to_dict(orient="records")
    return json_text(records)
