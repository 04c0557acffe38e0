"""Published per-head tables as read-only models: ``table.csv::gpt2`` opens model gpt2 of a table.

A per-head table (CSV, parquet, or JSON records) holds one row per head of one or more models:
the columns of a survey (``model``, ``head_dim``, ``model_dim`` and
:data:`headforms.engine.TABLE_COLUMNS`), or those of the author's published
``head_statistics.csv`` (``model, layer, head, kv_head, dim, symmetric_energy, balance,
pairing, ..., a, b, c, d, b_sym, c_sym, d_sym``). Each model becomes a :class:`TableAnalysis`:
its per-head table and a card of what the table says (layers, heads, kv heads, head dim), but
no spectra, and a Gaussian baseline only when the table gives the model dim N.

Spec syntax: ``FILE::MODEL`` (FILE ending in .csv, .parquet or .json), or a bare ``FILE`` ending
in .csv or .parquet when the table holds exactly one model (:func:`expand_table_spec` lists a
table's models as specs).

A table is bounded before it is parsed (:class:`TableLimits`): its file's size, its rows (a
parquet file's metadata: rows, columns and uncompressed size, before any data is read; a CSV
is read at most one row past the limit), and, once read, its models. Only the columns this
module knows are read. Read tables are kept in memory within :data:`CACHE_BYTES`.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from .baseline import Baseline
from .bounded import ByteLRU
from .engine import METRIC_COLUMNS, TABLE_COLUMNS, ModelAnalysis, ModelCard, gaussian_baseline
from .env import human_bytes
from .errors import CorruptFileError, ModelSpecError, OptionError, UnavailableDataError
from .forms import parity_labels
from .sources import Policy, files_fingerprint
from .sources.specs import SEPARATOR, split_spec

ALIASES = {"symmetric_energy": "energy", "dim": "head_dim"}
"""Column names of the author's published table -> this package's names."""

REQUIRED = ("layer", "head", "a", "b", "c", "d", "b_sym", "c_sym", "d_sym")
"""Columns a table must have: the head's place, its profile and its symmetric profile."""

SOURCE_KIND = "table"

KNOWN_COLUMNS = frozenset(
    {"model", "head_dim", "model_dim", "parity", *REQUIRED, *TABLE_COLUMNS, *ALIASES}
)
"""The columns read from a table file (any other is never used, so never parsed)."""

MAX_BYTES_ENV = "HEADFORMS_MAX_TABLE_BYTES"
MAX_ROWS_ENV = "HEADFORMS_MAX_TABLE_ROWS"
MAX_MODELS_ENV = "HEADFORMS_MAX_TABLE_MODELS"
MAX_COLUMNS = 512
"""Columns a table file may declare (a per-head table has a few dozen)."""
CACHE_BYTES = 64 * 2**20
"""Bytes of read tables kept in memory."""


@dataclass(frozen=True)
class TableLimits:
    """Bounds on one table file: bytes (the file; a parquet file's uncompressed data too),
    rows and models. Defaults hold a survey of hundreds of models; the variables raise them."""

    max_bytes: int = 64 * 2**20
    max_rows: int = 250_000
    max_models: int = 1_000

    @classmethod
    def from_env(cls) -> TableLimits:
        """The limits, with ``HEADFORMS_MAX_TABLE_BYTES``/``_ROWS``/``_MODELS`` when set."""
        values = {}
        for field, name in (
            ("max_bytes", MAX_BYTES_ENV),
            ("max_rows", MAX_ROWS_ENV),
            ("max_models", MAX_MODELS_ENV),
        ):
            raw = os.environ.get(name, "").strip()
            if raw:
                if not raw.isdigit() or int(raw) <= 0:
                    raise OptionError(f"{name}={raw[:40]!r} is not a positive whole number")
                values[field] = int(raw)
        return cls(**values)


def table_spec(path: Path | str, model: str) -> str:
    """The spec of ``model`` in the table at ``path``."""
    return f"{path}{SEPARATOR}{model}"


def expand_table_spec(spec: str, policy: Policy | None = None) -> list[str]:
    """A bare table file -> one spec per model it holds; any other spec -> ``[spec]``."""
    parts = split_spec(spec)
    if parts is None or parts[1] is not None:
        return [spec]
    return [table_spec(parts[0], model) for model in table_models(parts[0], policy)]


def table_models(path: Path, policy: Policy | None = None) -> list[str]:
    """The models of a table, in the order they first appear."""
    return list(_table(path, policy).rows)


def read_table(path: Path, policy: Policy | None = None) -> pd.DataFrame:
    """The normalised table of a file (cached while the file is unchanged), read only where
    ``policy`` allows (a shared server: under its model roots) and within its bounds."""
    return _table(path, policy).frame


@dataclass(frozen=True)
class _Table:
    """A read table: its normalised rows and, per model in order of appearance, its rows."""

    frame: pd.DataFrame
    rows: dict[str, np.ndarray]


_tables: ByteLRU[_Table] = ByteLRU(CACHE_BYTES)


def _table(path: Path, policy: Policy | None) -> _Table:
    path = Path(path)
    limits = TableLimits.from_env()
    info = _checked_file(path, policy, limits)
    key = (str(path), info.st_ino, info.st_mtime_ns, info.st_size, limits)
    return _tables.get_or_build(key, lambda: _read_table(path, limits))


def _checked_file(path: Path, policy: Policy | None, limits: TableLimits) -> os.stat_result:
    """The file's status, once it is known to be a regular file within ``policy`` and the
    size limit; otherwise one line saying what is wrong."""
    if policy is not None:
        policy.path_guard(str(path))(path)  # a shared server: only under its model roots
    try:
        info = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise ModelSpecError(
                f"no such table file: {path}; a published table is a .csv, .parquet or .json "
                "file with one row per head"
            ) from None
        raise ModelSpecError(
            f"cannot open the table file {_short(path.name)}: {exc.strerror or type(exc).__name__}"
        ) from None
    if not stat.S_ISREG(info.st_mode):
        raise ModelSpecError(f"the table {_short(path.name)} is not a regular file")
    if info.st_size > limits.max_bytes:
        raise CorruptFileError(
            f"{_short(path.name)} is {human_bytes(info.st_size)}, more than the "
            f"{human_bytes(limits.max_bytes)} a table may have ({MAX_BYTES_ENV})"
        )
    return info


def _read_table(path: Path, limits: TableLimits) -> _Table:
    name = _short(path.name)
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            raw = _read_parquet(path, name, limits)
        elif suffix == ".json":
            raw = pd.read_json(path, orient="records")
            raw = raw[[c for c in raw.columns if c in KNOWN_COLUMNS]]
        else:
            raw = pd.read_csv(path, usecols=lambda c: c in KNOWN_COLUMNS, nrows=limits.max_rows + 1)
    except (CorruptFileError, RecursionError, MemoryError):
        raise
    except Exception as exc:  # pandas/pyarrow raise many types for a malformed file
        raise CorruptFileError(
            f"{name}: cannot read it as a {suffix[1:]} table ({type(exc).__name__})"
        ) from exc
    if len(raw) > limits.max_rows:
        raise CorruptFileError(
            f"{name} has more than {limits.max_rows} rows, more than a table may have "
            f"({MAX_ROWS_ENV})"
        )
    table = normalise(raw, name)
    rows = table.groupby("model", sort=False).indices
    if len(rows) > limits.max_models:
        raise CorruptFileError(
            f"{name} holds {len(rows)} models, more than the {limits.max_models} a table may "
            f"hold ({MAX_MODELS_ENV})"
        )
    return _Table(table, {str(m): r for m, r in rows.items()})


def _read_parquet(path: Path, name: str, limits: TableLimits) -> pd.DataFrame:
    """A parquet file's known columns, once its metadata shows it within ``limits`` (its rows,
    columns and uncompressed size: a small file of constant rows can expand to gigabytes)."""
    import pyarrow.parquet as pq

    metadata = pq.ParquetFile(path).metadata
    uncompressed = sum(
        metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups)
    )
    if metadata.num_rows > limits.max_rows:
        raise CorruptFileError(
            f"{name} has {metadata.num_rows} rows, more than the {limits.max_rows} a table may "
            f"have ({MAX_ROWS_ENV}); nothing was read"
        )
    if metadata.num_columns > MAX_COLUMNS or uncompressed > limits.max_bytes:
        raise CorruptFileError(
            f"{name} expands to {human_bytes(uncompressed)} in {metadata.num_columns} columns, "
            f"more than the {human_bytes(limits.max_bytes)} a table may have ({MAX_BYTES_ENV}); "
            "nothing was read"
        )
    columns = [c for c in metadata.schema.names if c in KNOWN_COLUMNS]
    return pd.read_parquet(path, columns=columns)


def _short(name: str, limit: int = 80) -> str:
    """A file name as a message shows it (a 300-character name cut to ``limit``)."""
    return name if len(name) <= limit else name[: limit - 1] + "…"


def normalise(raw: pd.DataFrame, name: str) -> pd.DataFrame:
    """Rename the author's columns, check the required ones, add ``model`` and ``parity``."""
    renames = {k: v for k, v in ALIASES.items() if k in raw.columns and v not in raw.columns}
    table = raw.rename(columns=renames)
    table = table.loc[:, ~table.columns.duplicated()]
    missing = [c for c in REQUIRED if c not in table.columns]
    if missing:
        raise CorruptFileError(
            f"{name}: not a per-head table: missing column(s) {', '.join(missing)}; needed: "
            f"{', '.join(REQUIRED)} (and model when it holds several models)"
        )
    if "model" not in table.columns:
        table.insert(0, "model", Path(name).stem)
    table["model"] = table["model"].astype(str)
    numeric = [c for c in table.columns if c not in ("model", "parity")]
    for column in numeric:
        if not pd.api.types.is_numeric_dtype(table[column]):
            table[column] = pd.to_numeric(table[column], errors="coerce")
    if "kv_head" in table.columns and table["kv_head"].isna().all():
        del table["kv_head"]  # an empty column says nothing: each head is its own key head
    for column in ("layer", "head", "kv_head"):
        if column not in table.columns:
            continue
        values = table[column].to_numpy(dtype=float)
        if not np.all(np.isfinite(values)) or np.any(values < 0) or np.any(values % 1):
            raise CorruptFileError(f"{name}: column {column} must hold non-negative integers")
        table[column] = values.astype(np.int64)
    if "energy" not in table.columns:  # E = ||S||^2/||L||^2 = 1 - a
        table["energy"] = 1.0 - table["a"]
    if "parity" not in table.columns:
        table["parity"] = parity_labels(table["c_sym"].to_numpy(), table["d_sym"].to_numpy())
    return table


class PublishedTableAnalysis(ModelAnalysis):
    """One model of a published table: no spectra; a baseline only if the table gives N and n."""

    @cached_property
    def baseline(self) -> Baseline:
        """The Gaussian baseline of the table's shapes; an error when N or n is unknown."""
        if not self.card.model_dim or not self.card.head_dim:
            raise UnavailableDataError(
                f"{self.card.name}: no Gaussian baseline: the table does not give the model dim "
                "N and head dim n it needs"
            )
        return gaussian_baseline(self.card.baseline_shapes)


def open_table(
    spec: str, rope_position: int = 0, policy: Policy | None = None
) -> PublishedTableAnalysis:
    """The analysis of one model of a published table (``FILE::MODEL``, or a one-model FILE)."""
    if rope_position:
        raise OptionError(
            f"{spec}: a published table holds the profiles it was computed with; RoPE position "
            f"{rope_position} needs the weights (use 0)"
        )

    parts = split_spec(spec)
    if parts is None:
        raise ModelSpecError(f"{spec!r} is not a table spec (FILE.csv::MODEL)")
    path, model = parts
    read = _table(path, policy)
    table, models = read.frame, list(read.rows)
    if model is None:
        if len(models) != 1:
            raise ModelSpecError(
                f"{path.name} holds {len(models)} models; name one as {path.name}::MODEL with "
                f"MODEL one of: {_listing(models)}"
            )
        model = models[0]
    if model not in read.rows:
        raise ModelSpecError(
            f"{_short(path.name)} has no model {model!r}; it holds: {_listing(models)}"
        )
    rows = table.iloc[read.rows[model]]
    rows = rows.sort_values(["layer", "head"], kind="stable")
    n_layers, n_heads = int(rows["layer"].max()) + 1, int(rows["head"].max()) + 1
    if len(rows) != n_layers * n_heads or rows.duplicated(["layer", "head"]).any():
        raise CorruptFileError(
            f"{path.name}: model {model!r} has {len(rows)} rows, not one per head of "
            f"{n_layers} layers x {n_heads} heads"
        )
    heads = pd.DataFrame(index=range(len(rows)))
    for column in TABLE_COLUMNS:
        if column in rows.columns:
            heads[column] = rows[column].to_numpy()
        elif column == "kv_head":
            heads[column] = rows["head"].to_numpy()
        else:
            heads[column] = np.nan
    head_dim = _constant(rows, "head_dim", path.name, model)
    model_dim = _constant(rows, "model_dim", path.name, model)
    n_kv = int(heads["kv_head"].max()) + 1
    card = ModelCard(
        spec=spec,
        name=model,
        source_kind=SOURCE_KIND,
        family="unknown",
        model_type="",
        n_layers=n_layers,
        model_dim=model_dim,
        n_heads=n_heads,
        n_kv_heads=n_kv,
        head_dim=head_dim,
        positional="unknown",
        storage="table",
        rope_position=0,
        qk_norm=False,
        qk_norm_folded=False,
        has_qk_bias=bool(np.isfinite(heads["q_bias_norm"].to_numpy(dtype=float)).any()),
        notes=[
            f"Read from the published per-head table {path.name}: profiles and per-head scores "
            "only; the eigenvalue spectra are not in it."
            + (
                ""
                if model_dim
                else " The model dim N is not in it either, so there is no Gaussian baseline."
            )
        ],
        fingerprint=files_fingerprint([path]) + f":{model}",
        weight_bytes=0,
    )
    heads = heads[list(TABLE_COLUMNS)]
    for column in METRIC_COLUMNS:
        if column != "parity" and heads[column].dtype == object:
            heads[column] = pd.to_numeric(heads[column], errors="coerce")
    return PublishedTableAnalysis(card, heads, {})


def _constant(rows: pd.DataFrame, column: str, name: str, model: str) -> int:
    """A per-model dimension column's single value (0 when the table does not give it)."""
    if column not in rows.columns:
        return 0
    values = rows[column].dropna().unique()
    if len(values) == 0:
        return 0
    if len(values) > 1 or values[0] <= 0 or values[0] % 1:
        raise CorruptFileError(f"{name}: model {model!r} has no single positive {column}")
    return int(values[0])


def _listing(models: list[str], limit: int = 20) -> str:
    shown = ", ".join(models[:limit])
    return shown + (f", ... ({len(models)} in all)" if len(models) > limit else "")
