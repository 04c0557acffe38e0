"""A study's report (:mod:`headforms.study`): its numbers as lines of text, and one
self-contained HTML page (the command, versions and seeds at its top, every table and figure,
plotly.js inside the page: it opens offline)."""

from __future__ import annotations

import html
from typing import Any

TABLES = ("whole_model", "head_verdicts", "sweeps", "dose_controls", "correlations")
"""The study's tables, as CSV files ``NAME.csv``, in the report's order."""


def summary_text(study: Any) -> str:
    """The study's numbers as lines of text (what the command prints)."""
    lines = [f"{study.meta['model']}: study on {len(study.meta['texts'])} text(s)"]
    whole = study.whole_model
    if whole.empty:
        whole = whole.assign(text=[], delta_ce=[])
    overall = whole[whole["text"] == "all"] if (whole["text"] == "all").any() else whole
    measure = "delta_ce" if whole["delta_ce"].notna().any() else "cosine_distance"
    lines.append(
        f"every head at once ({measure}; controls' median [10-90%]; p; effect; 95% interval):"
    )
    for _, row in overall.iterrows():
        lines.append(
            f"  {row['edit']:<13} {row[measure]:8.4f} [{row['low']:.4f}, {row['high']:.4f}]"
            f"  controls {row['control_median']:8.4f} [{row['control_p10']:.4f}, "
            f"{row['control_p90']:.4f}]  p {row['p_value']:.3f}  effect {_times(row['effect'])}  "
            f"score RMS {row['score_rms']:.3f} / {row['control_score_rms']:.3f}"
        )
    heads = study.head_verdicts
    for edit, part in heads.groupby("edit", sort=False) if not heads.empty else ():
        worst = part.nlargest(4, "cost")
        costliest = ", ".join(
            f"L{int(r.layer)}.H{int(r.head)} {r.cost:.3f} (p {r.p_value:.3f})"
            for r in worst.itertuples()
        )
        lines.append(
            f"each head alone, {edit}: median cost {part['cost'].median():.4f}, median excess "
            f"over the dose-response {part['excess'].median():.4f}; "
            f"{int((part['p_value'] <= 0.05).sum())} of {len(part)} heads with p <= 0.05; "
            f"costliest {costliest}"
        )
    corr = study.correlations
    groups = corr.groupby(["edit", "measure"], sort=False) if not corr.empty else ()
    for (edit, measure_name), part in groups:
        cells = ", ".join(
            f"{r.column} {r.rho:+.2f} [{r.low:+.2f}, {r.high:+.2f}] p {r.p_value:.2g}"
            for r in part.itertuples()
        )
        lines.append(f"rho of {edit} {measure_name}: {cells}")
    return "\n".join(lines)


def _times(value: float) -> str:
    return f"{value:.2f}x" if value == value else "—"  # NaN: no positive median to divide by


def report_html(study: Any) -> str:
    """One self-contained HTML page: the command, versions and seeds, then each table and its
    figure (plotly.js inside the page once)."""
    from .figures.study import dose_response_figure, whole_model_figure

    meta = study.meta
    figures = (
        [whole_model_figure(study.whole_model, _measure(study))]
        if not study.whole_model.empty
        else []
    )
    edits = study.head_verdicts["edit"].unique() if not study.head_verdicts.empty else ()
    figures += [dose_response_figure(study.head_verdicts, study.dose_controls, e) for e in edits]
    parts = [
        fig.to_html(full_html=False, include_plotlyjs=(index == 0), default_width="100%")
        for index, fig in enumerate(figures)
    ]
    versions = ", ".join(f"{name} {version}" for name, version in meta["versions"].items())
    texts = "; ".join(f"{label} ({shipped}, {n} characters)" for label, shipped, n in meta["texts"])
    head = [
        f"<h1>headforms study of {html.escape(str(meta['model']))}</h1>",
        f"<p><b>Command:</b> <code>{html.escape(meta.get('command', ''))}</code></p>",
        f"<p><b>Versions:</b> {html.escape(versions)}</p>",
        f"<p><b>Seeds and options:</b> {html.escape(str(meta['options']))}</p>",
        f"<p><b>Model fingerprint:</b> <code>{html.escape(meta['fingerprint'])}</code>; "
        f"<b>texts:</b> {html.escape(texts)}; {meta['passes']} sequence passes in "
        f"{meta['seconds']:.0f} s</p>",
        f"<pre>{html.escape(summary_text(study))}</pre>",
    ]
    whole_parts = parts[:1] if not study.whole_model.empty else []
    body = [
        "<h2>Every head at once</h2>",
        *whole_parts,
        _table(study.whole_model),
        "<h2>Each head alone, against the dose-response of its controls</h2>",
        *parts[len(whole_parts) :],
        "<h2>Per-head verdicts (averaged over the texts)</h2>",
        _table(
            study.head_verdicts.sort_values("cost", ascending=False).head(40)
            if not study.head_verdicts.empty
            else study.head_verdicts
        ),
        "<h2>Correlations of the per-head cost with the geometry and the size</h2>",
        _table(study.correlations),
    ]
    style = (
        "body{font-family:sans-serif;max-width:1200px;margin:auto;padding:1em}"
        "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;"
        "padding:2px 6px;text-align:right}pre{white-space:pre-wrap;font-size:12px}"
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>headforms study</title>"
        f"<style>{style}</style></head><body>" + "\n".join([*head, *body]) + "</body></html>"
    )


def _measure(study: Any) -> str:
    frame = study.whole_model
    return "delta_ce" if frame["delta_ce"].notna().any() else "cosine_distance"


def _table(frame: Any) -> str:
    table = frame.to_html(index=False, float_format=lambda v: f"{v:.4g}", na_rep="")
    return f"<div style='overflow-x:auto'>{table}</div>"  # wide tables scroll, never clip
