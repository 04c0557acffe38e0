"""One model's gallery as one self-contained HTML file: it opens from disk with no server and no
network (plotly.js is embedded, from the plotly package).

It holds the figures of the dashboard's builders (:mod:`headforms.figures`): the 3D simplex and
the triangle of symmetric profiles (for a RoPE model with a sweep, every position as frames
with a slider and Play button), the energy and pairing heatmaps beside their Gaussian baseline
(Figures 13, 14), parity by layer (Figure 12), and a head table; clicking a head (a marker, a
cell or a row) shows its numbers and its spectrum of S in the page.

The animated views are :func:`headforms.figures.animated.animated_figure`'s figures without
their frames: the frames (every head's coordinates and hover text at every position) are rebuilt
in the browser (``gallery.js``) from each position's profile values (float32) and parities
(uint8), the same numbers in a third of the bytes, so that SmolLM2's 129 positions fit in a
file of a few MB beside plotly.js. The page's own code is in ``template.html``, ``gallery.js``
and ``gallery.css`` beside this module.
"""

from __future__ import annotations

import base64
import html
import json
import re
from importlib import resources
from typing import TYPE_CHECKING, Any

import numpy as np

from ..analyses.parity import parity_by_layer
from ..columns import COLUMN_DESCRIPTIONS, METRIC_COLUMNS
from ..figures.animated import VIEWS, animated_figure
from ..figures.heatmaps import heatmap_pair_figure, heatmap_range
from ..figures.parity import parity_by_layer_figure
from ..figures.simplex import simplex_figure
from ..figures.style import NEGATIVE_COLOR, POSITIVE_COLOR
from ..figures.triangle import triangle_figure
from ..forms import PARITY_LABELS

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from ..baseline import Baseline
    from ..model_analysis import ModelAnalysis
    from ..sweeps import PositionSweep

PAGE_FILES = ("template.html", "gallery.js", "gallery.css")
"""The page's own files, beside this module."""

TABLE_COLUMNS = ("layer", "head", "kv_head", *METRIC_COLUMNS)
"""The head table's columns (the per-head table's, bias norms aside)."""

ZERO_PARITY = 255
"""The parity code of a head with no profile (a vanishing form) in the packed frames."""

PLACEHOLDER = re.compile(r"<!--@(\w+)-->|/\*@(\w+)\*/")


def gallery_html(
    analysis: ModelAnalysis,
    sweep: PositionSweep | None = None,
    baseline: Baseline | None = None,
) -> str:
    """The gallery page of ``analysis`` (module doc): with ``sweep`` (a RoPE model's positions)
    the simplex and the triangle animate over them; with ``baseline`` the heatmaps sit beside
    the Gaussian baseline's."""
    from plotly.offline import get_plotlyjs

    card = analysis.card
    name = card.spec or card.name
    heads = analysis.heads
    figures: dict[str, Any] = {}
    frames: dict[str, Any] = {}
    if sweep is not None:
        parity = _parity_codes(sweep.stacked("parity"))
        frames["parity"] = _packed(parity.astype(np.uint8))
        frames["positions"] = [int(v) for v in sweep.values]
        for view in VIEWS:
            fig = animated_figure(sweep, view)
            frames[view] = _frame_pack(fig, sweep, view)
            fig.frames = ()  # rebuilt in the browser from the pack
            figures[view] = _figure(fig)
    else:
        figures["simplex"] = _figure(simplex_figure({name: heads}, "parity", frame="simplex"))
        figures["triangle"] = _figure(triangle_figure({name: heads}, "parity"))
    base = None if baseline is None else baseline.heads
    for column in ("energy", "pairing"):
        values = [heads[column]] + ([base[column]] if base is not None else [])
        fig = heatmap_pair_figure(heads, base, column, name, None, heatmap_range(values))
        figures[column] = _figure(fig)
    figures["parity"] = _figure(parity_by_layer_figure({name: parity_by_layer(heads)}))
    data = {
        "model": name,
        "card": _card_rows(analysis),
        "figures": figures,
        "frames": frames or None,
        "table": _table(heads),
        "descriptions": {c: COLUMN_DESCRIPTIONS[c] for c in TABLE_COLUMNS},
        "spectra": _spectra(analysis),
        "colors": {"positive": POSITIVE_COLOR, "negative": NEGATIVE_COLOR},
    }
    parts = {
        "title": html.escape(f"{name} · headforms gallery"),
        "style": _page_file("gallery.css"),
        "plotly": get_plotlyjs(),
        "data": _script_json(data),
        "script": _page_file("gallery.js"),
    }
    return PLACEHOLDER.sub(lambda m: parts[m.group(1) or m.group(2)], _page_file("template.html"))


def _page_file(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _figure(fig: go.Figure) -> Any:
    """A figure as plain JSON (plotly's encoding: arrays as typed base64 blocks)."""
    return json.loads(fig.to_json())


def _script_json(data: Any) -> str:
    """JSON safe inside a ``<script type="application/json">`` element: no ``<`` (so no
    ``</script>`` can end it early), no NaN (``null`` instead)."""
    text = json.dumps(data, allow_nan=False, separators=(",", ":"), default=_plain)
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot write {type(value).__name__} into the gallery")


def _packed(values: np.ndarray) -> dict[str, Any]:
    """An array as little-endian bytes in base64, with its dtype and shape (for gallery.js)."""
    array = np.ascontiguousarray(values)
    kind = {"f": "float32", "u": "uint8"}[array.dtype.kind]
    array = array.astype("<f4" if kind == "float32" else "u1")
    return {
        "dtype": kind,
        "shape": list(array.shape),
        "bytes": base64.b64encode(array.tobytes()).decode("ascii"),
    }


def _parity_codes(parity: np.ndarray) -> np.ndarray:
    """Parity labels as the index of their type in :data:`PARITY_LABELS` (:data:`ZERO_PARITY`
    for a head without a profile)."""
    codes = np.full(parity.shape, ZERO_PARITY, dtype=np.uint8)
    for index, label in enumerate(PARITY_LABELS):
        codes[parity == label] = index
    return codes


def _frame_pack(fig: go.Figure, sweep: PositionSweep, view: str) -> dict[str, Any]:
    """What gallery.js needs to rebuild ``fig``'s frames: their names, the head traces they
    change (one per parity type, in :data:`PARITY_LABELS` order), the view's coordinates at
    every point (float32, points x heads x coordinates) and its vertices."""
    columns, vertices = VIEWS[view]
    values = np.stack([sweep.stacked(c).astype(float) for c in columns], axis=-1)
    first = fig.frames[0]
    return {
        "names": [frame.name for frame in fig.frames],
        "traces": list(first.traces),
        "values": _packed(values.astype(np.float32)),
        "vertices": np.asarray(vertices, dtype=float).tolist(),
        "three_d": view == "simplex",
    }


def _table(heads: Any) -> dict[str, Any]:
    """The head table: its columns, and its rows (numbers rounded to 6 significant digits;
    missing values null)."""
    columns = [c for c in TABLE_COLUMNS if c in heads.columns]
    rows = []
    for record in heads[columns].itertuples(index=False):
        rows.append([_cell(value) for value in record])
    return {"columns": columns, "rows": rows}


def _cell(value: Any) -> Any:
    if isinstance(value, str):
        return value
    number = float(value)
    if not np.isfinite(number):
        return None
    return int(number) if number.is_integer() and abs(number) < 2**53 else float(f"{number:.6g}")


def _spectra(analysis: ModelAnalysis) -> dict[str, Any] | None:
    """Each head's eigenvalues of S that can be non-zero (float32, heads x 2n), or None."""
    eig_s = analysis.spectra.get("eig_s")
    return None if eig_s is None else _packed(np.asarray(eig_s, dtype=np.float32))


def _card_rows(analysis: ModelAnalysis) -> list[list[str]]:
    """The model card's lines shown at the top of the page."""
    card = analysis.card
    unknown = "unknown"
    rows = [
        ["source", f"{card.source_kind}: {card.spec}"],
        ["architecture", f"{card.family}" + (f" ({card.model_type})" if card.model_type else "")],
        ["layers × heads", f"{card.n_layers} × {card.n_heads} ({card.n_kv_heads} key heads)"],
        ["model dim N, head dim n", f"{card.model_dim or unknown}, {card.head_dim}"],
        ["positional encoding", card.positional],
    ]
    if card.rotary:
        rows.append(["RoPE position d of the heatmaps and the table", str(card.rope_position)])
    return rows
