"""Figure builders of the heatmaps, the spectra and the paper's figures: colour scales, titles,
exports, the tables behind what is drawn."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from figure_checks import (
    PROFILE,
    points,
    synthetic_baseline,
    synthetic_heads,
    traces_with,
    valid_heads,
    vertex_coords,
)
from plotly.colors import hex_to_rgb

from headforms import HeadformsError
from headforms.analyses.parity import parity_by_layer
from headforms.figures import export as FE
from headforms.figures import head as FH
from headforms.figures import heatmaps as FM
from headforms.figures import parity as FP
from headforms.figures import simplex as FS
from headforms.figures import triangle as FTR
from headforms.forms import PARITY_LABELS
from headforms.model_analysis import model_baseline


def test_heatmap_pair_shares_a_diverging_scale_white_at_half(minilm):
    heads, base = minilm.heads, model_baseline(minilm.card).heads
    fig = FM.heatmap_pair_figure(heads, base, "energy", "minilm", selected=("minilm", 3, 7))
    axis = fig.layout.coloraxis
    assert (axis.cmin + axis.cmax) / 2 == pytest.approx(0.5)
    for values in (heads["energy"], base["energy"]):
        assert axis.cmin <= values.min() and values.max() <= axis.cmax
    scale = dict((pos, color) for pos, color in axis.colorscale)
    assert hex_to_rgb(scale[0.5]) == (255, 255, 255)
    low = hex_to_rgb(scale[0.0])
    assert low[2] > low[0]  # blue below
    high = hex_to_rgb(scale[1.0])
    assert high[0] > high[2]  # red above
    cells = traces_with(fig, "cells")
    assert [t.meta["panel"] for t in cells] == ["trained", "baseline"]
    assert {t.xaxis for t in cells} == {"x", "x2"}
    for trace, values in zip(cells, (heads["energy"], base["energy"]), strict=True):
        assert trace.marker.coloraxis == "coloraxis"
        assert trace.marker.symbol == "square"
        np.testing.assert_allclose(np.asarray(trace.marker.color, float), values)
        for (model, layer, head), x, y in zip(trace.customdata, trace.x, trace.y, strict=True):
            assert (model, layer, head) == ("minilm", y, x)
    assert sum(1 for t in fig.data if getattr(t.marker, "showscale", None)) == 0
    # the selected head is outlined in both panels: exactly its cell, in data coordinates
    outlines = [shape for shape in fig.layout.shapes if shape.name == "selected"]
    assert sorted(shape.xref for shape in outlines) == ["x", "x2"]
    for shape in outlines:
        assert (shape.x0, shape.x1, shape.y0, shape.y1) == (6.5, 7.5, 2.5, 3.5)
    assert fig.layout.xaxis.title.text == "head" and fig.layout.yaxis.title.text == "layer"


def test_heatmaps_of_several_models_side_by_side_on_one_scale(minilm, smollm):
    models = {"minilm": minilm.heads, "smollm": smollm.heads}
    fig = FM.heatmap_models_figure(models, "pairing", selected=("smollm", 29, 8))
    cells = traces_with(fig, "cells")
    assert [t.meta["panel"] for t in cells] == ["minilm", "smollm"]
    for trace, (name, heads) in zip(cells, models.items(), strict=True):
        np.testing.assert_allclose(np.asarray(trace.marker.color, float), heads["pairing"])
        assert {tuple(c) for c in trace.customdata} == {
            (name, int(layer), int(head))
            for layer, head in zip(heads["layer"], heads["head"], strict=True)
        }
    axis = fig.layout.coloraxis
    every = np.concatenate([heads["pairing"].to_numpy() for heads in models.values()])
    assert axis.cmin <= every.min() and every.max() <= axis.cmax
    assert (axis.cmin + axis.cmax) / 2 == pytest.approx(0.5)
    # each panel spans its own grid (6 x 12 and 30 x 9)
    assert tuple(fig.layout.yaxis.range) == (5.5, -0.5) and tuple(fig.layout.xaxis.range) == (
        -0.5,
        11.5,
    )
    assert tuple(fig.layout.yaxis2.range) == (29.5, -0.5)
    outlines = [shape for shape in fig.layout.shapes if shape.name == "selected"]
    assert [(s.xref, s.x0, s.y0) for s in outlines] == [("x2", 7.5, 28.5)]
    with pytest.raises(HeadformsError, match="no column 'balance'"):
        FM.heatmap_models_figure({"m": minilm.heads.drop(columns="balance")}, "balance")


def test_heatmap_range_is_symmetric_about_half_and_covers_both_panels():
    heads, base = synthetic_heads(), synthetic_baseline()
    fig = FM.heatmap_pair_figure(heads, base, "pairing", "synthetic")
    axis = fig.layout.coloraxis
    assert axis.cmin == pytest.approx(0.0) and axis.cmax == pytest.approx(1.0)
    with pytest.raises(HeadformsError, match="baseline has no column 'balance'"):
        FM.heatmap_pair_figure(heads.assign(balance=1.0), base, "balance", "synthetic")
    with pytest.raises(HeadformsError, match="not the same shapes"):
        FM.heatmap_pair_figure(heads, base.iloc[:3], "pairing", "synthetic")


def test_heatmap_marker_size_shrinks_with_the_grid(minilm, smollm):
    small = FM.heatmap_pair_figure(
        minilm.heads, model_baseline(minilm.card).heads, "energy", "minilm"
    )
    large = FM.heatmap_pair_figure(
        smollm.heads, model_baseline(smollm.card).heads, "energy", "smollm"
    )
    assert traces_with(large, "cells")[0].marker.size < traces_with(small, "cells")[0].marker.size


def test_eigenvalue_histogram_counts_nonzero_eigenvalues_scaled_by_norm(minilm):
    eig = minilm.spectra["eig_s"][4].copy()
    eig[-3:] = 0.0  # pretend three are exact zeros
    fig = FH.eigenvalue_histogram(
        eig, model_baseline(minilm.card).spectra["eig_s"][4], title="L0H4"
    )
    bars = [t for t in fig.data if isinstance(t, go.Bar)]
    assert sum(float(np.sum(b.y)) for b in bars) == pytest.approx(np.count_nonzero(eig))
    positive, negative = bars
    assert (np.asarray(positive.x) > 0).all() and (np.asarray(negative.x) < 0).all()
    assert positive.marker.color != negative.marker.color
    assert float(np.sum(positive.y)) == np.count_nonzero(eig > 0)
    extent = max(np.abs(np.asarray(b.x)).max() for b in bars)
    assert extent <= np.abs(eig).max() / np.linalg.norm(eig) + 1e-12
    assert "3 exactly 0" in fig.layout.title.text and f"2n = {eig.size}" in fig.layout.title.text
    assert "‖S‖" in fig.layout.xaxis.title.text
    (outline,) = [t for t in fig.data if isinstance(t, go.Scatter)]
    assert "baseline" in outline.name


def test_eigenvalue_histogram_pools_several_heads_per_head(minilm):
    eig = minilm.spectra["eig_s"]
    fig = FH.eigenvalue_histogram(eig, model_baseline(minilm.card).spectra["eig_s"])
    bars = [t for t in fig.data if isinstance(t, go.Bar)]
    total = sum(float(np.sum(b.y)) for b in bars)
    assert total == pytest.approx(np.count_nonzero(eig) / eig.shape[0])


def test_lobes_figure_accepts_lobes_or_eigenvalues_for_the_baseline(minilm):
    sp = minilm.spectra
    i = 7
    pos, neg = sp["lobe_pos"][i], sp["lobe_neg"][i]
    rand = model_baseline(minilm.card).spectra["eig_s"][i]
    rpos = np.sort(rand[rand > 0])[::-1]
    rneg = np.sort(-rand[rand < 0])[::-1]
    by_lobes = FH.lobes_figure(pos, neg, rpos, rneg)
    by_eigs = FH.lobes_figure(pos, neg, rand)
    head, base = by_lobes.data[1], by_lobes.data[2]
    norm = np.sqrt(np.sum(sp["eig_s"][i] ** 2))
    keep = (pos > 0) | (neg > 0)
    np.testing.assert_allclose(head.x, pos[keep] / norm)
    np.testing.assert_allclose(head.y, neg[keep] / norm)
    np.testing.assert_allclose(by_eigs.data[2].x, base.x)
    np.testing.assert_allclose(by_eigs.data[2].y, base.y)
    diagonal = by_lobes.data[0]
    assert list(diagonal.x) == list(diagonal.y)


def test_singular_values_figure_keeps_distinct_values(minilm):
    sv = minilm.spectra["sv_a"][3]
    fig = FH.singular_values_figure(sv, model_baseline(minilm.card).spectra["sv_a"][3])
    head, base = fig.data
    n = minilm.card.head_dim
    assert len(head.y) == len(base.y) == n
    assert float(np.sum(np.square(head.y))) == pytest.approx(1.0)
    assert list(head.x) == list(range(1, n + 1))
    # every singular value of A appears twice (A's eigenvalues are +-i sigma): the figure shows
    # each pair once, scaled so that the distinct values have unit length
    scale = np.sqrt(np.sum(np.square(sv)) / 2)
    np.testing.assert_allclose(
        np.repeat(np.asarray(head.y, dtype=float), 2) * scale, np.sort(sv)[::-1], rtol=1e-12
    )


def test_figure_12_is_a_white_to_black_grid_of_each_layers_parity_shares(minilm, smollm):
    """Figure 12 as the paper draws it: per model a type x layer grid, one shared scale from
    white (0%) to black (100%), each layer's column the percent of its heads of each type, drawn
    as vector cells."""
    frames = {"minilm": parity_by_layer(minilm.heads), "smollm": parity_by_layer(smollm.heads)}
    fig = FP.parity_by_layer_figure(frames)
    grids = traces_with(fig, "cells")
    assert [t.name for t in grids] == list(frames)
    scale = fig.layout.coloraxis
    assert (scale.cmin, scale.cmax) == (0, 100)
    assert [tuple(stop) for stop in scale.colorscale] == [(0.0, "#ffffff"), (1.0, "#000000")]
    assert all(t.marker.coloraxis == "coloraxis" for t in grids)  # one scale for every model
    cells = {(s.xref, round(s.x0 + 0.5), round(s.y0 + 0.5)): s.fillcolor for s in fig.layout.shapes}
    for index, (trace, analysis) in enumerate(zip(grids, (minilm, smollm), strict=True)):
        heads = analysis.heads
        xref = "x" if index == 0 else f"x{index + 1}"
        for layer, row, percent in zip(trace.x, trace.y, trace.marker.color, strict=True):
            parity = PARITY_LABELS[int(row)]
            in_layer = heads[heads["layer"] == layer]["parity"]
            assert percent == pytest.approx(100 * (in_layer == parity).mean())
            level = round(255 * (1 - percent / 100))  # white at 0 %, black at 100 %
            assert cells[(xref, int(layer), int(row))] == f"rgb({level},{level},{level})"
        totals = pd.Series(trace.marker.color).groupby(np.asarray(trace.x)).sum()
        np.testing.assert_allclose(totals.to_numpy(), 100.0)
    assert FE.exports_as_vector(fig)


def test_profile_bar_figure_uses_the_baseline_columns(minilm):
    row, base_row = minilm.heads.iloc[5], model_baseline(minilm.card).heads.iloc[5]
    fig = FH.profile_bar_figure(row, base_row)
    head, base = fig.data
    np.testing.assert_allclose(head.y[:4], row[PROFILE].to_numpy(float))
    np.testing.assert_allclose(base.y[:4], base_row[PROFILE].to_numpy(float))


def all_figures(analysis) -> dict[str, go.Figure]:
    heads, sp = analysis.heads, analysis.spectra
    base, bsp = model_baseline(analysis.card).heads, model_baseline(analysis.card).spectra
    models = {"m": heads}
    return {
        "simplex": FS.simplex_figure(models),
        "triangle": FTR.triangle_figure(models, color_by="layer"),
        "histogram": FH.eigenvalue_histogram(sp["eig_s"][0], bsp["eig_s"][0]),
        "lobes": FH.lobes_figure(sp["lobe_pos"][0], sp["lobe_neg"][0], bsp["eig_s"][0]),
        "singular": FH.singular_values_figure(sp["sv_a"][0], bsp["sv_a"][0]),
        "heatmap": FM.heatmap_pair_figure(heads, base, "pairing", "m"),
        "parity": FP.parity_by_layer_figure({"m": parity_by_layer(heads)}),
        "profile": FH.profile_bar_figure(heads.iloc[0], base.iloc[0]),
    }


def test_every_figure_has_titles_and_the_template(minilm):
    for name, fig in all_figures(minilm).items():
        assert fig.layout.title.text, name
        assert fig.layout.template.layout.paper_bgcolor == "white", name
        if name == "simplex":
            assert all(fig.layout.scene[a].title.text for a in ("xaxis", "yaxis", "zaxis"))
            continue
        if name == "triangle":  # barycentric: the vertex labels name the directions, no axes
            assert len(vertex_coords(fig)) == 3 and not fig.layout.xaxis.showticklabels
            continue
        axes = [k for k in fig.layout.to_plotly_json() if k.startswith(("xaxis", "yaxis"))]
        assert {"xaxis", "yaxis"} <= set(axes), name
        titled = [fig.layout[k].title.text for k in axes if fig.layout[k].title.text]
        assert len(titled) >= 2, name


def test_one_colour_scale_across_models_white_at_one_half(minilm, smollm):
    """Figures 13/14 of several models on one scale: the same range for every model's pair,
    symmetric about 1/2 (white), covering every trained and baseline value; per model, the
    ranges differ (so the shared scale is what makes colours comparable)."""
    tables = {"minilm": minilm, "smollm": smollm}
    for column in ("energy", "pairing"):
        values = [t.heads[column] for t in tables.values()]
        values += [model_baseline(t.card).heads[column] for t in tables.values()]
        scale = FM.heatmap_range(values)
        assert (scale[0] + scale[1]) / 2 == pytest.approx(0.5)
        own = []
        for name, analysis in tables.items():
            heads, base = analysis.heads, model_baseline(analysis.card).heads
            fig = FM.heatmap_pair_figure(heads, base, column, name, color_range=scale)
            axis = fig.layout.coloraxis
            assert (axis.cmin, axis.cmax) == scale
            assert axis.colorscale[len(axis.colorscale) // 2][1].lower() == "#ffffff"
            for trace in traces_with(fig, "cells"):
                drawn = np.asarray(trace.marker.color, float)
                drawn = drawn[np.isfinite(drawn)]
                assert scale[0] <= drawn.min() and drawn.max() <= scale[1]
            alone = FM.heatmap_pair_figure(heads, base, column, name).layout.coloraxis
            own.append((alone.cmin, alone.cmax))
        assert own[0] != own[1]


def test_2d_figures_export_as_vector_svg_and_3d_ones_as_high_resolution_png(smollm):
    """The toolbar offers SVG only for figures drawn entirely as SVG elements; a WebGL scene or
    an image trace would be a raster picture inside the SVG."""
    from headforms.analyses import spectra as sp
    from headforms.figures import spectra as FSP

    figures = all_figures(smollm)
    eig_s = smollm.spectra["eig_s"]
    clusters = sp.cluster_spectra(eig_s, 3)
    summary, means = sp.cluster_summary(smollm.heads, eig_s, clusters)
    figures["fig4"] = FSP.cluster_spectra_figure(summary, means, "m", None, clusters.places)
    figures["fig3"] = FSP.mean_spectrum_figure(sp.mean_unit_spectrum(eig_s))
    for name, fig in figures.items():
        assert FE.exports_as_vector(fig) == (name != "simplex"), name
    assert not FE.exports_as_vector(go.Figure(go.Heatmap(z=[[1, 2]])))  # an <image> in SVG


def test_figures_serialise_to_json(smollm):
    """The dashboard sends figures to plotly.js as JSON: every builder's output must survive
    the round trip with every trace and every point (numpy arrays become typed arrays)."""
    import base64

    def decoded(values: object) -> np.ndarray:
        if isinstance(values, dict):  # a typed array: {"dtype": ..., "bdata": base64[, "shape"]}
            flat = np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"])
            shape = [int(n) for n in str(values.get("shape", len(flat))).split(",")]
            return flat.reshape(shape)
        return np.asarray(values)

    for name, fig in all_figures(smollm).items():
        back = json.loads(fig.to_json())
        assert len(back["data"]) == len(fig.data), name
        for original, sent in zip(fig.data, back["data"], strict=True):
            for axis in ("x", "y", "z"):
                values = getattr(original, axis, None)
                if values is not None and np.asarray(values).dtype.kind in "fiu":
                    np.testing.assert_array_equal(
                        decoded(sent[axis]), np.asarray(values), err_msg=f"{name} {axis}"
                    )
        assert back["layout"]["title"]["text"] == fig.layout.title.text, name


def test_profile_and_heatmap_tables_hold_what_is_drawn(minilm, smollm):
    models = {"minilm": minilm.heads, "smollm2": smollm.heads}
    table = FS.profile_table(models)
    assert len(table) == sum(len(h) for h in models.values())
    fig = FS.simplex_figure(models)
    drawn = {}
    for trace in traces_with(fig, "heads"):
        for (model, layer, head), point in zip(trace.customdata, points(trace), strict=True):
            drawn[(model, layer, head)] = point
    vertices = vertex_coords(fig)
    for row in table.itertuples():
        point = drawn.get((row.model, row.layer, row.head))
        if point is not None:  # every drawn marker is the table's profile
            np.testing.assert_allclose(point, np.array([row.a, row.b, row.c, row.d]) @ vertices)
    assert len(drawn) == len(valid_heads(table, PROFILE))
    heads, base = minilm.heads, model_baseline(minilm.card).heads
    cells = FM.heatmap_table(heads, base, "pairing")
    np.testing.assert_array_equal(cells["pairing"], heads["pairing"])
    np.testing.assert_array_equal(cells["rand_pairing"], base["pairing"])
    assert list(cells.columns) == ["layer", "head", "pairing", "rand_pairing"]


def test_figure_table_reads_back_every_data_point(minilm):
    from headforms.figures.export import figure_table

    heads, base = minilm.heads, model_baseline(minilm.card).heads
    fig = FM.heatmap_pair_figure(heads, base, "energy", "minilm", selected=("minilm", 1, 1))
    table = figure_table(fig)
    assert set(table["trace"]) == {"trained", "baseline"}  # no selection ring
    trained = table[table["trace"] == "trained"].sort_values(["layer", "head"])
    np.testing.assert_allclose(trained["value"], heads.sort_values(["layer", "head"])["energy"])
    np.testing.assert_array_equal(trained["x"].astype(int), trained["head"].astype(int))
    eig = minilm.spectra["eig_s"][3]
    hist = figure_table(
        FH.eigenvalue_histogram(eig, model_baseline(minilm.card).spectra["eig_s"][3])
    )
    bars = hist[hist["trace"].str.contains("lobe")]
    assert bars["y"].astype(float).sum() == pytest.approx(np.count_nonzero(eig))
    assert "Gaussian baseline" in set(hist["trace"])
    geometry = figure_table(FS.simplex_figure({"minilm": heads}))
    assert set(geometry["trace"]) <= {f"Type {p}" for p in ("I+", "II", "I−")}
    assert len(geometry) == len(valid_heads(heads, PROFILE))


def test_fit_head_figure_frames_the_lobe_not_its_farthest_eigenvalue():
    from headforms.analyses import fits
    from headforms.figures.fits import FIT_VIEW_MASS, fit_head_figure

    rng = np.random.default_rng(3)
    lobe = np.sort(rng.gamma(2.0, 1.0, 64))[::-1]
    lobe[0] = 60.0  # one far eigenvalue: 20 equal bins would put the rest in the first few
    spectra = {"lobe_pos": lobe[None, :], "lobe_neg": np.sort(rng.gamma(3.0, 1.0, 64))[::-1][None]}
    result = fits.fit_lobes(spectra)
    hist, curves = fits.head_histograms(result, 0), fits.head_fit_curves(result, 0)
    fig = fit_head_figure(hist, curves, "synthetic")
    plus = hist[hist["lobe"] == "+"]
    unit = lobe / lobe.mean()
    x_end = fig.layout.xaxis.range[1]
    assert x_end < unit.max() / 2  # the view is not stretched to the far eigenvalue
    assert np.mean(unit <= x_end) >= FIT_VIEW_MASS - 1 / unit.size
    beyond = 1 - (plus["height"] * plus["width"])[plus["centre"] < x_end].sum()
    notes = [a.text for a in fig.layout.annotations if "beyond" in (a.text or "")]
    assert notes and f"{100 * beyond:.1f}%" in notes[0] and f"{unit.max():.1f}" in notes[0]
    # every value the error compares is inside the y range: bin heights
    assert plus["height"].max() <= fig.layout.yaxis.range[1]
    # one legend entry per family, naming its errors on both lobes
    named = [t.name for t in fig.data if t.showlegend is not False and t.type == "scatter"]
    assert len(named) == len(fits.FAMILIES)
    assert fig.layout.legend.orientation == "h"


def test_comparison_table_counts_heads_and_the_size_plot_draws_no_trend(minilm, smollm):
    from headforms.figures.fits import fit_error_vs_size_figure
    from headforms.figures.parity import parity_comparison_table

    models = {"minilm": minilm.heads, "smollm2": smollm.heads}
    table = parity_comparison_table(models)
    ours = table[table["source"] == "computed here"].set_index("model")["heads"]
    assert ours.to_dict() == {name: len(h) for name, h in models.items()}
    assert str(table["heads"].dtype) == "Int64"
    errors = pd.DataFrame({"both": [0.2, 0.3]}, index=["gamma", "weibull"])
    fig = fit_error_vs_size_figure({"a": (72, errors), "b": (270, errors * 0.9)})
    assert all("lines" not in t.mode for t in fig.data)  # two models are two points, not a trend


@pytest.mark.parametrize("sizes", [(22_700_000, 134_500_000), (72_000_000, 13_000_000_000)])
def test_figure_6_names_each_models_column_and_labels_only_round_ticks(sizes):
    """Every column of dots (one model, one dot per family) is named above it, and the log axis
    carries only labelled round ticks (1-2-5 on a narrow range): never "2 3 ... 9 100M 2"."""
    from headforms.figures.fits import fit_error_vs_size_figure

    errors = pd.DataFrame({"both": [0.2, 0.3, 0.25]}, index=["gamma", "weibull", "lognormal"])
    fig = fit_error_vs_size_figure({"small": (sizes[0], errors), "large": (sizes[1], errors / 2)})
    names = {a.text: a.x for a in fig.layout.annotations if a.name == "model"}
    assert names.keys() == {"small", "large"}
    for name, size in zip(("small", "large"), sizes, strict=True):
        assert names[name] == pytest.approx(np.log10(size))  # above its own column
    axis = fig.layout.xaxis
    assert axis.type == "log" and len(axis.tickvals) >= 2
    assert len(axis.ticktext) == len(axis.tickvals)
    for value, text in zip(axis.tickvals, axis.ticktext, strict=True):
        mantissa = value / 10 ** np.floor(np.log10(value))
        assert round(mantissa, 9) in (1, 2, 5) and re.fullmatch(r"\d+[kMBT]?", text), text
        assert axis.range[0] <= np.log10(value) <= axis.range[1]
