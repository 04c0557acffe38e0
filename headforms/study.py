"""The study: every number of docs/interventions.md from one call (and one command,
``headforms study MODEL --out DIR``).

On each of several texts (default: the three shipped texts, their first T tokens):

- **whole-model edits**: each edit applied to every head at once, against K matched controls
  (default K = 32, matched on the scores); per text and over the texts (the texts weigh alike:
  the verdict of :func:`headforms.interventions.verdict.verdict` over every text's positions);
- **per-head sweeps** (default ``zero``, ``symmetric``, ``flip``): each head edited on its own,
  with one scores-matched control per head and text. A head's edit is read against a
  **dose-response**: the controls of every head and sweep edit (each averaged over the texts,
  as the edit is), as points (score RMS, cost); the null of an edit at score RMS r is the
  :data:`DOSE_NEIGHBOURS` controls nearest r on a log scale: ``expected`` is their median,
  ``excess`` the edit's cost minus it, ``p_value`` ``(#{neighbours >= cost} + 1) / (k + 1)``;
- **correlations**: Spearman's rho over heads of each sweep edit's cost (and of its excess over
  the dose-response) with the geometry (``a``, ``c - d``, pairing, energy, distance to Theta,
  parity) and the form's size ``norm_l``, with a bootstrap interval over heads and scipy's
  p-value.

Everything is seeded by one seed and computed by the library's intervention calls on one
loaded model (:func:`headforms.interventions.compute.compute_intervention`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .analyses.behaviour import GEOMETRY_COLUMNS, correlation_table, geometry_frame
from .interventions.text import text_label
from .interventions.verdict import VERDICT_FIELDS, verdict
from .progress import Progress
from .study_jobs import run_requests
from .study_options import StudyOptions, controlled

DOSE_NEIGHBOURS = 50
"""Controls read as the null of one head's edit (nearest its score RMS, log scale)."""
SIZE_COLUMN = {"norm_l": "the form's size ‖L‖ (Frobenius)"}
CORRELATED = {**GEOMETRY_COLUMNS, **SIZE_COLUMN}
"""What a head's cost is correlated with: its geometry and the size of its form."""


@dataclass
class Study:
    """A study's tables (module doc) and what reproduces it (``meta``: model, fingerprint,
    options, versions, seconds)."""

    whole_model: pd.DataFrame
    sweeps: pd.DataFrame
    head_verdicts: pd.DataFrame
    dose_controls: pd.DataFrame
    correlations: pd.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)


def library_versions() -> dict[str, str]:
    """The versions of what computed the study."""
    import importlib.metadata as metadata

    from . import __version__

    versions = {"headforms": __version__}
    for package in ("torch", "transformers", "numpy", "scipy", "pandas"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "absent"
    return versions


def run_study(
    spec: str,
    options: StudyOptions,
    progress: Progress | None = None,
    jobs: int = 1,
) -> Study:
    """Run the study of ``options`` on the model of ``spec`` (module doc), its requests on
    ``jobs`` worker processes (:func:`headforms.study_jobs.run_requests`; 1: in this
    process)."""
    from .behaviour.run import locate_runnable
    from .behaviour.runnable import runnable
    from .engine import analyze
    from .interventions.anatomy import anatomy_of
    from .interventions.compute import compute_intervention
    from .interventions.run import request_of

    started = time.perf_counter()
    located = locate_runnable(spec, what="interventions")
    heads = analyze(located).heads
    model = runnable(located)
    shapes = anatomy_of(model).shapes
    total = options.passes(shapes.n_layers * shapes.n_heads)
    done = 0

    def passes(request: Any) -> int:
        each = shapes.n_heads if request.scope.kind == "layer" else shapes.n_layers * shapes.n_heads
        return request.passes(each)

    def run(request: Any) -> Any:
        def relay(step: int, steps: int, message: str) -> None:
            if progress is not None:
                progress(done + step, total, message)

        return compute_intervention(model, request, relay)

    planned: list[tuple[str, str, int | None]] = []  # (text's label, edit, layer of a sweep)
    requests: list[Any] = []
    for label, text in options.texts:
        for edit in options.whole_edits:
            planned.append((label, edit, None))
            requests.append(
                request_of(
                    edit,
                    text=text,
                    max_tokens=options.max_tokens,
                    controls=options.controls if controlled(edit) else 0,
                    seed=options.seed,
                    match=options.match,
                )
            )
        for edit in options.sweep_edits:
            for layer in range(shapes.n_layers):
                planned.append((label, edit, layer))
                requests.append(
                    request_of(
                        edit,
                        layer=layer,
                        each=True,
                        text=text,
                        max_tokens=options.max_tokens,
                        controls=options.head_controls,
                        seed=options.seed,
                        match=options.match,
                    )
                )

    def finished(index: int, result: Any) -> None:
        nonlocal done
        done += passes(requests[index])
        if progress is not None:
            label, edit, layer = planned[index]
            where = "every head" if layer is None else f"layer {layer}"
            progress(done, total, f"{label}: {edit}, {where}")

    def cost(index: int) -> int:  # sequences times the layers they run (and the output head)
        layer = planned[index][2]
        return passes(requests[index]) * (shapes.n_layers - (layer or 0) + 1)

    # text by text (a text's unedited pass is kept between its requests: Gemma-3's three would
    # not fit together), the longest first within a text (the workers end together)
    texts = {label: position for position, (label, _) in enumerate(options.texts)}
    order = sorted(range(len(requests)), key=lambda i: (texts[planned[i][0]], -cost(i)))
    ran = run_requests(
        spec, [requests[i] for i in order], jobs, run, lambda i, r: finished(order[i], r)
    )
    results: list[Any] = [None] * len(requests)
    for position, index in enumerate(order):
        results[index] = ran[position]

    whole: dict[str, list[Any]] = {edit: [] for edit in options.whole_edits}
    sweeps: list[pd.DataFrame] = []
    for (label, edit, layer), result in zip(planned, results, strict=True):
        if layer is None:
            whole[edit].append((label, result))
            continue
        table = result.table
        table["text"] = label
        table["control_delta_ce"] = list(result.controls[result.measure])
        table["control_score_rms_each"] = list(result.controls["score_rms"])
        sweeps.append(table)
    whole_table = whole_model_table(whole, options.seed)
    if sweeps:
        sweep_table = pd.concat(sweeps, ignore_index=True)
        head_table, dose = dose_response(sweep_table, measure_of(sweep_table))
        correlations = study_correlations(head_table, heads, options.seed)
    else:  # a study of whole-model edits only
        sweep_table, head_table, dose, correlations = (pd.DataFrame() for _ in range(4))
    meta = {
        "command": options.command(getattr(spec, "spec", spec)),
        "model": getattr(spec, "spec", spec),
        "fingerprint": model.fingerprint,
        "texts": [(label, text_label(text), len(text)) for label, text in options.texts],
        "options": {
            "max_tokens": options.max_tokens,
            "controls": options.controls,
            "head_controls": options.head_controls,
            "seed": options.seed,
            "match": options.match,
            "whole_edits": list(options.whole_edits),
            "sweep_edits": list(options.sweep_edits),
            "dose_neighbours": DOSE_NEIGHBOURS,
        },
        "passes": total,
        "versions": library_versions(),
        "seconds": time.perf_counter() - started,
        "ce_original": {
            label: float(results[0][1].table["ce_original"].iloc[0])
            for label, results in zip(
                [t[0] for t in options.texts],
                zip(*whole.values(), strict=True),
                strict=True,
            )
        }
        if options.whole_edits
        else {},
    }
    return Study(whole_table, sweep_table, head_table, dose, correlations, meta)


def measure_of(table: pd.DataFrame) -> str:
    """``delta_ce``, or ``cosine_distance`` for a model without a language-modelling head."""
    return "delta_ce" if np.isfinite(table["delta_ce"].to_numpy(float)).any() else "cosine_distance"


def whole_model_table(results: dict[str, list[Any]], seed: int) -> pd.DataFrame:
    """One row per edit and text, then one per edit over every text (``text`` = ``all``):
    the edit's measures, the match (score RMS of the edit and the controls' median) and the
    verdict of ``delta_ce`` (or ``cosine_distance``) and of ``kl``."""
    rows = []
    for edit, found in results.items():
        for label, result in found:
            row = result.table.iloc[0].to_dict()
            rows.append({"edit": edit, "text": label, **_whole_row(row)})
        if len(found) > 1:
            measure = found[0][1].measure
            record: dict[str, Any] = {"edit": edit, "text": "all"}
            for name, prefix in ((measure, ""), ("kl", "kl_")):
                terms = [result.terms[name][0] for _, result in found]
                judged = verdict([t[0] for t in terms], [t[1:] for t in terms], seed)
                record[name] = judged.value
                record.update(judged.fields(prefix))
            for name in ("delta_ce", "kl", "cosine_distance", "score_rms", "control_score_rms"):
                record.setdefault(name, float(np.mean([r.table[name].iloc[0] for _, r in found])))
            record["controls"] = int(found[0][1].table["controls"].iloc[0])
            record["match"] = found[0][1].table["match"].iloc[0]
            rows.append(record)
    return pd.DataFrame(rows, columns=WHOLE_COLUMNS)


WHOLE_COLUMNS = (
    "edit",
    "text",
    "delta_ce",
    "kl",
    "cosine_distance",
    "match",
    "score_rms",
    "control_score_rms",
    "controls",
    *VERDICT_FIELDS,
    *(f"kl_{name}" for name in VERDICT_FIELDS),
)


def _whole_row(row: dict[str, Any]) -> dict[str, Any]:
    return {name: row.get(name) for name in WHOLE_COLUMNS if name not in ("edit", "text")}


def dose_response(sweeps: pd.DataFrame, measure: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per head and sweep edit, averaged over the texts: the edit's cost and score RMS, its
    controls' (module doc), and its reading against the dose-response; and the control points
    themselves (edit, layer, head, score_rms, cost)."""
    rows = sweeps.assign(
        control_cost=[float(np.mean(v)) if len(v) else np.nan for v in sweeps["control_delta_ce"]],
        control_rms=[
            float(np.mean(v)) if len(v) else np.nan for v in sweeps["control_score_rms_each"]
        ],
    )
    grouped = (
        rows.groupby(["edit", "layer", "head"], sort=False)
        .agg(
            parity=("parity", "first"),
            cost=(measure, "mean"),
            kl=("kl", "mean"),
            score_rms=("score_rms", "mean"),
            control_cost=("control_cost", "mean"),
            control_rms=("control_rms", "mean"),
            texts=("text", "nunique"),
        )
        .reset_index()
    )
    points = grouped[["edit", "layer", "head", "control_rms", "control_cost"]].rename(
        columns={"control_rms": "score_rms", "control_cost": "cost"}
    )
    points = points[np.isfinite(points["score_rms"]) & (points["score_rms"] > 0)]
    log_dose = np.log(points["score_rms"].to_numpy(float))
    costs = points["cost"].to_numpy(float)
    expected, excess, p_values, spread = [], [], [], []
    for rms, cost in zip(grouped["score_rms"], grouped["cost"], strict=True):
        if not (np.isfinite(rms) and rms > 0 and len(costs)):
            expected.append(np.nan)
            excess.append(np.nan)
            p_values.append(np.nan)
            spread.append(np.nan)
            continue
        nearest = np.argsort(np.abs(log_dose - np.log(rms)), kind="stable")[:DOSE_NEIGHBOURS]
        null = costs[nearest]
        median = float(np.median(null))
        expected.append(median)
        excess.append(cost - median)
        p_values.append(float((np.count_nonzero(null >= cost) + 1) / (len(null) + 1)))
        spread.append(float(np.percentile(null, 90) - np.percentile(null, 10)))
    grouped["expected"] = expected
    grouped["excess"] = excess
    grouped["p_value"] = p_values
    grouped["null_spread"] = spread
    grouped["measure"] = measure
    return grouped, points.reset_index(drop=True)


def study_correlations(head_table: pd.DataFrame, heads: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Spearman's rho of each sweep edit's ``cost`` and ``excess`` with every column of
    :data:`CORRELATED`: rho, its 95% bootstrap interval over heads, scipy's p-value, n (the
    library's one :func:`~headforms.analyses.behaviour.correlation_table`, per edit and measure)."""
    geometry = geometry_frame(heads)
    geometry["norm_l"] = heads["norm_l"].to_numpy(float)
    geometry["layer"] = geometry["layer"].astype(int)
    geometry["head"] = geometry["head"].astype(int)
    tables = []
    for edit, part in head_table.groupby("edit", sort=False):
        part = part.assign(layer=part["layer"].astype(int), head=part["head"].astype(int))
        joined = part.drop(columns=["parity"]).merge(geometry, on=["layer", "head"], how="left")
        for measure in ("cost", "excess"):
            table = correlation_table(joined, measure, seed=seed, against=CORRELATED)
            table.insert(0, "measure", measure)
            table.insert(0, "edit", edit)
            tables.append(table)
    return pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()
