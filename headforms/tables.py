"""Published per-head tables as read-only models: ``table.csv::gpt2`` opens model gpt2 of a table.

A per-head table (CSV, parquet, or JSON records) holds one row per head of one or more models:
the columns of a survey (``model``, ``head_dim``, ``model_dim`` and
:data:`headforms.columns.TABLE_COLUMNS`), or those of the author's published
``head_statistics.csv`` (``model, layer, head, kv_head, dim, symmetric_energy, balance,
pairing, ..., a, b, c, d, b_sym, c_sym, d_sym, trace_ratio, participation_ratio, ...``), whose
``dim`` is the size 2n of the author's reduced form (the head dim n is ``dim / 2``) and whose
``n_zero`` counts zeros among those 2n (here: out of N, when N is known). Each model becomes a
:class:`PublishedTableAnalysis`: its per-head table and a card of what the table says (layers,
heads, kv heads, head dim; the paper's fourteen models add their public facts,
:mod:`headforms.presets`, so N and their Gaussian baseline are known), with the spectra of the
author's ``<model>_spectra.npz`` beside the table when there is one (:mod:`headforms.published`:
read, and checked against the table's columns). What the table does not say is unknown (None or
NaN), never guessed.

Spec syntax: ``FILE::MODEL`` (FILE ending in .csv, .parquet or .json), ``DIR::MODEL`` (a directory
of the author's files), or a bare ``FILE`` (.csv or .parquet) or ``DIR`` when the table holds
exactly one model (:func:`expand_table_spec` lists a table's models as specs). A table is one more
source kind: :func:`headforms.sources.locate` finds its file under the caller's policy (a shared
server's: only under its model roots) and this module reads what was located.

A table is bounded before it is parsed (:class:`TableLimits`): its file's size, its rows (a
parquet file's metadata: rows, columns and uncompressed size, before any data is read; a CSV
is read at most one row past the limit), and, once read, its models. Only the columns this
module knows are read. Read tables are kept in memory within :data:`CACHE_BYTES`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .architectures import Shapes, architecture_for
from .bounded import ByteLRU
from .card import TABLE_SOURCE, ModelCard
from .columns import (
    AUTHOR_COLUMNS,
    METRIC_COLUMNS,
    PROFILE,
    SYMMETRIC_PROFILE,
    TABLE_COLUMNS,
)
from .errors import CorruptFileError, ModelSpecError, OptionError
from .forms import parity_labels, proportional_profile
from .model_analysis import ModelAnalysis
from .options import DEFAULT_OPTIONS, AnalysisOptions
from .presets import PaperModel, paper_model
from .published import check_table, published_spectra, read_spectra_file
from .settings import (
    DEFAULT_MAX_TABLE_BYTES,
    DEFAULT_MAX_TABLE_MODELS,
    DEFAULT_MAX_TABLE_ROWS,
    MAX_TABLE_BYTES_ENV,
    MAX_TABLE_MODELS_ENV,
    MAX_TABLE_ROWS_ENV,
    human_bytes,
    settings,
)
from .sources import TABLE_FORMAT, Located, Policy, files_fingerprint, locate, parse_spec
from .sources.files import short_name
from .sources.local import locate_table
from .sources.specs import SEPARATOR, table_spec

ALIASES = AUTHOR_COLUMNS
"""Column names of the author's published table -> this package's names."""

THEOREM5 = ("theorem5_b", "theorem5_c", "theorem5_d")
"""The Theorem 5 point's columns (derived from ``rho`` when a table lacks them)."""

REDUCED_DIM = "dim"
"""The author's column of the reduced form's size 2n (kept as ``reduced_dim``)."""

REQUIRED = ("layer", "head", *PROFILE, *SYMMETRIC_PROFILE)
"""Columns a table must have: the head's place, its profile and its symmetric profile."""

SOURCE_KIND = TABLE_SOURCE

KNOWN_COLUMNS = frozenset(
    {"model", "head_dim", "model_dim", "parity", REDUCED_DIM, *REQUIRED, *TABLE_COLUMNS, *ALIASES}
)
"""The columns read from a table file (any other is never used, so never parsed)."""

MAX_COLUMNS = 512
"""Columns a table file may declare (a per-head table has a few dozen)."""
CACHE_BYTES = 64 * 2**20
"""Bytes of read tables kept in memory."""


@dataclass(frozen=True)
class TableLimits:
    """Bounds on one table file: bytes (the file; a parquet file's uncompressed data too),
    rows and models. Defaults hold a survey of hundreds of models; the variables raise them."""

    max_bytes: int = DEFAULT_MAX_TABLE_BYTES
    max_rows: int = DEFAULT_MAX_TABLE_ROWS
    max_models: int = DEFAULT_MAX_TABLE_MODELS

    @classmethod
    def from_env(cls) -> TableLimits:
        """The limits, with ``HEADFORMS_MAX_TABLE_BYTES``/``_ROWS``/``_MODELS`` when set."""
        values = settings()
        return cls(values.max_table_bytes, values.max_table_rows, values.max_table_models)


def expand_table_spec(spec: str, policy: Policy | None = None) -> list[str]:
    """A bare table file -> one spec per model it holds (located within ``policy``); any other
    spec -> ``[spec]`` (nothing is located)."""
    parsed = parse_spec(spec, policy)
    if parsed.kind != "table" or parsed.model is not None:
        return [spec]
    return [table_spec(parsed.value, model) for model in table_models(locate(parsed))]


def table_models(located: Located) -> list[str]:
    """The models of a located table, in the order they first appear."""
    return list(_table(_table_path(located)).rows)


@dataclass(frozen=True)
class TableEntry:
    """One model of a table as ``headforms models FILE`` lists it: the spec that opens it, its
    heads and layers, and its spectra file's name (None: there is none beside the table)."""

    spec: str
    heads: int
    layers: int
    spectra: str | None


def table_listing(located: Located) -> list[TableEntry]:
    """The models of a located table (its file or directory), without reading their spectra
    (only whether each spectra file is there)."""
    path = _table_path(located)
    read = _table(path)
    source = located.spec.rpartition(SEPARATOR)[0] or located.spec
    entries = []
    for model, rows in read.rows.items():
        spectra = locate_table(path, table_spec(source, model), model)
        layers = read.frame["layer"].to_numpy()[rows]
        entries.append(
            TableEntry(
                table_spec(source, model),
                len(rows),
                int(layers.max()) + 1 if len(rows) else 0,
                spectra.weights[1].name if len(spectra.weights) > 1 else None,
            )
        )
    return entries


def read_table(path: Path) -> pd.DataFrame:
    """The normalised table of a file (cached while the file is unchanged), within its bounds;
    ``path`` comes from :func:`headforms.sources.locate`, which held it to the caller's
    policy."""
    return _table(Path(path)).frame


def _table_path(located: Located) -> Path:
    if located.format != TABLE_FORMAT or located.weights[0].path is None:
        raise ModelSpecError(f"{located.spec!r} is not a table spec (FILE.csv::MODEL)")
    return located.weights[0].path


@dataclass(frozen=True)
class _Table:
    """A read table: its normalised rows and, per model in order of appearance, its rows."""

    frame: pd.DataFrame
    rows: dict[str, np.ndarray]


_tables: ByteLRU[_Table] = ByteLRU(CACHE_BYTES)


def _table(path: Path) -> _Table:
    limits = TableLimits.from_env()
    info = _checked_file(path, limits)
    key = (str(path), info.st_ino, info.st_mtime_ns, info.st_size, limits)
    return _tables.get_or_build(key, lambda: _read_table(path, limits))


def _checked_file(path: Path, limits: TableLimits) -> os.stat_result:
    """The status of a located table file (:func:`headforms.sources.locate` checked it is a
    regular file), once it is within the size limit; otherwise one line saying what is wrong."""
    try:
        info = os.stat(path)
    except OSError as exc:  # gone since it was located
        raise ModelSpecError(
            f"cannot open the table file {short_name(path.name)}: "
            f"{exc.strerror or type(exc).__name__}"
        ) from None
    if info.st_size > limits.max_bytes:
        raise CorruptFileError(
            f"{short_name(path.name)} is {human_bytes(info.st_size)}, more than the "
            f"{human_bytes(limits.max_bytes)} a table may have ({MAX_TABLE_BYTES_ENV})"
        )
    return info


def _read_table(path: Path, limits: TableLimits) -> _Table:
    name = short_name(path.name)
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
            f"({MAX_TABLE_ROWS_ENV})"
        )
    table = normalise(raw, name)
    rows = table.groupby("model", sort=False).indices
    if len(rows) > limits.max_models:
        raise CorruptFileError(
            f"{name} holds {len(rows)} models, more than the {limits.max_models} a table may "
            f"hold ({MAX_TABLE_MODELS_ENV})"
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
            f"have ({MAX_TABLE_ROWS_ENV}); nothing was read"
        )
    if metadata.num_columns > MAX_COLUMNS or uncompressed > limits.max_bytes:
        raise CorruptFileError(
            f"{name} expands to {human_bytes(uncompressed)} in {metadata.num_columns} columns, "
            f"more than the {human_bytes(limits.max_bytes)} a table may have "
            f"({MAX_TABLE_BYTES_ENV}); nothing was read"
        )
    columns = [c for c in metadata.schema.names if c in KNOWN_COLUMNS]
    return pd.read_parquet(path, columns=columns)


MAX_MODEL_NAME = 200
"""Characters of a model name a table may give (names are titles, legends and hover texts)."""


def check_model_names(names: np.ndarray, table: str) -> None:
    """Refuse model names a figure would read as markup (``<``, ``>``: Plotly draws text as
    HTML-like markup, so a name could become a link), with control characters, or too long."""
    for model in names:
        bad = [ch for ch in model if ch in "<>" or not ch.isprintable()]
        if bad or not model.strip() or len(model) > MAX_MODEL_NAME:
            shown = model if len(model) <= 60 else model[:57] + "..."
            raise CorruptFileError(
                f"{table}: model name {shown!r} is not accepted: a name is 1-{MAX_MODEL_NAME} "
                "printable characters without < or >"
            )


def normalise(raw: pd.DataFrame, name: str) -> pd.DataFrame:
    """Rename the author's columns, check the required ones, add ``model`` and ``parity``."""
    renames = {k: v for k, v in ALIASES.items() if k in raw.columns and v not in raw.columns}
    if REDUCED_DIM in raw.columns:
        renames[REDUCED_DIM] = "reduced_dim"
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
    check_model_names(table["model"].unique(), name)
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
    if "reduced_dim" in table.columns:  # the author's dim is 2n: the head dim is half of it
        reduced = table["reduced_dim"].to_numpy(dtype=float)
        if np.any(~np.isfinite(reduced) | (reduced <= 0) | (reduced % 2 != 0)):
            raise CorruptFileError(
                f"{name}: column dim (the size 2n of the reduced form) must hold positive even "
                "integers"
            )
        if "head_dim" not in table.columns:
            table["head_dim"] = reduced / 2
    if "energy" not in table.columns:  # E = ||S||^2/||L||^2 = 1 - a
        table["energy"] = 1.0 - table["a"]
    if "parity" not in table.columns:
        table["parity"] = parity_labels(table["c_sym"].to_numpy(), table["d_sym"].to_numpy())
    return table


class PublishedTableAnalysis(ModelAnalysis):
    """One model of a published table: spectra when its spectra file is beside the table; a
    Gaussian baseline (:func:`headforms.model_analysis.model_baseline`) only when N and n are
    known (the table's, or the paper's facts)."""


def open_table(
    located: Located, options: AnalysisOptions = DEFAULT_OPTIONS
) -> PublishedTableAnalysis:
    """The analysis of one model of a located published table (``FILE::MODEL``, ``DIR::MODEL``,
    or a one-model FILE or DIR), with its spectra file's spectra when one was located."""
    spec = located.spec
    if options.rope_position:
        raise OptionError(
            f"{spec}: a published table holds the profiles it was computed with; RoPE position "
            f"{options.rope_position} needs the weights (use 0)"
        )
    path = _table_path(located)
    model = located.extra.get("model")
    read = _table(path)
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
            f"{short_name(path.name)} has no model {model!r}; it holds: {_listing(models)}"
        )
    rows = table.iloc[read.rows[model]]
    rows = rows.sort_values(["layer", "head"], kind="stable").reset_index(drop=True)
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
    facts = paper_model(model)
    if facts is not None and (facts.n_layers, facts.n_heads, facts.head_dim) != (
        n_layers,
        n_heads,
        head_dim,
    ):
        facts = None  # named like a paper model, but another one: its facts are not these
    if facts is not None:
        model_dim = model_dim or facts.model_dim
    reduced = _constant(rows, "reduced_dim", path.name, model)
    if reduced:  # the author's n_zero counts zeros of the 2n-dimensional reduced form
        counted = heads["n_pos"].to_numpy(dtype=float) + heads["n_neg"].to_numpy(dtype=float)
        heads["n_zero"] = model_dim - counted if model_dim else np.nan
    spectra: dict[str, np.ndarray] = {}
    if len(located.weights) > 1 and located.weights[1].path is not None:
        spectra = _spectra(located.weights[1].path, rows, heads, reduced, model_dim, model)
    elif "rho" in rows.columns and not any(c in rows.columns for c in THEOREM5):
        # the Theorem 5 point is a function of the lobe ratio alone (forms.proportional_profile)
        point = proportional_profile(rows["rho"].to_numpy(dtype=float))
        heads[list(THEOREM5)] = np.column_stack(point)
    heads = heads[list(TABLE_COLUMNS)]
    for column in METRIC_COLUMNS:
        if column != "parity" and heads[column].dtype == object:
            heads[column] = pd.to_numeric(heads[column], errors="coerce")
    shapes = Shapes(n_layers, model_dim, n_heads, n_kv, head_dim)
    card = _card(spec, model, located, heads, spectra, facts, shapes)
    return PublishedTableAnalysis(card, heads, spectra)


def _spectra(
    path: Path,
    rows: pd.DataFrame,
    heads: pd.DataFrame,
    reduced: int,
    model_dim: int,
    model: str,
) -> dict[str, np.ndarray]:
    """A model's spectra from its spectra file, checked against its table's ``rows``; the
    metrics the table lacks (its columns of NaN in ``heads``) filled from them."""
    where = f"{short_name(path.name)}: model {model!r}"
    if not reduced:
        raise CorruptFileError(
            f"{where}: its table has no dim column (2n), which its spectra need to be read"
        )
    limits = TableLimits.from_env()
    _checked_file(path, limits)
    arrays = read_spectra_file(path, limits.max_bytes)
    layer, head = rows["layer"].to_numpy(), rows["head"].to_numpy()
    published = published_spectra(arrays, layer, head, reduced, model_dim, where)
    check_table(rows, published.metrics, where)
    for column in METRIC_COLUMNS:
        if column not in rows.columns and column not in ("parity", "n_zero"):
            heads[column] = published.metrics[column]
    return published.spectra


def _card(
    spec: str,
    model: str,
    located: Located,
    heads: pd.DataFrame,
    spectra: dict[str, np.ndarray],
    facts: PaperModel | None,
    shapes: Shapes,
) -> ModelCard:
    """The card of a table's model of ``shapes`` (N = 0: unknown): what the table (and the
    paper's facts, for its models) says; unknown facts are None or 'unknown'."""
    biases = np.isfinite(heads["q_bias_norm"].to_numpy(dtype=float)).any()
    files = " and ".join(short_name(f.name) for f in located.weights)
    held = (
        "profiles, per-head scores and the spectra of S and A (the moduli of the eigenvalues "
        "of L are not in them)"
        if spectra
        else "profiles and per-head scores only; the eigenvalue spectra are not in it"
    )
    notes = [f"Read from the published files {files}: {held}."]
    if facts is not None:
        architecture = architecture_for(facts.model_type)
        family, model_type, positional = (
            architecture.family,
            facts.model_type,
            architecture.positional,
        )
        notes.append(
            f"{model} is one of the paper's models ({facts.hub_id}): its shapes and N are its "
            "public facts."
        )
    else:
        family, model_type, positional = "unknown", "", "unknown"
        if not shapes.model_dim:
            notes.append("The model dim N is not in the table, so there is no Gaussian baseline.")
    return ModelCard(
        spec=spec,
        name=model,
        source_kind=SOURCE_KIND,
        family=family,
        model_type=model_type,
        n_layers=shapes.n_layers,
        model_dim=shapes.model_dim,
        n_heads=shapes.n_heads,
        n_kv_heads=shapes.n_kv_heads,
        head_dim=shapes.head_dim,
        positional=positional,
        storage="table",
        rope_position=0,
        qk_norm=False if facts is not None else None,
        qk_norm_folded=False,
        has_qk_bias=True if biases else (facts.qk_bias if facts is not None else None),
        notes=notes,
        fingerprint=files_fingerprint([f.path for f in located.weights]) + f":{model}",
        weight_bytes=0,
    )


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
