"""One road for computations: the pages and the dashboard's modules (outside the gateway) call
none of the library's computations nor a numerical library themselves; they ask the gateway
(``ui/gateway``), which charges, bounds and shares them in hosted mode. What they may call of a
computing module is a view of results at hand, listed in :data:`VIEWS` with why it is one.

A name is resolved as the page imports it (``from headforms.analyses import spectra as sp`` then
``sp.silhouette_scan``) and then by the object's own module (``headforms.analyze`` is
``headforms.engine``'s), so that a re-export does not hide a computation. Planted violations
prove the scan finds them (a direct call, a call through a module alias, a function handed over
uncalled, a numerical library)."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest
from repo import REPO

COMPUTING = (
    "headforms.analyses",
    "headforms.baseline",
    "headforms.behaviour",
    "headforms.demo",
    "headforms.diff",
    "headforms.engine",
    "headforms.forms",
    "headforms.heads",
    "headforms.hosted.api",
    "headforms.interventions",
    "headforms.series",
    "headforms.streaming",
    "headforms.survey",
)
"""The library's modules that compute: a callable of theirs is a computation unless a view."""
NUMERICAL = ("sklearn", "scipy", "torch", "transformers", "threadpoolctl")
"""Libraries a page never calls (the library does, behind the gateway)."""

VIEWS = {
    "headforms.analyses.behaviour.behaviour_frame": "a join of the heads and their scores",
    "headforms.analyses.behaviour.table_correlation": "one row of a correlation table",
    "headforms.analyses.behaviour.with_shares": "a join of a frame and a score split's shares",
    "headforms.analyses.fits.head_fit_curves": "one head's fitted densities on a grid",
    "headforms.analyses.fits.head_histograms": "one head's histograms",
    "headforms.analyses.interventions.edit_frame": "a join of the heads and an edit's rows",
    "headforms.analyses.interventions.sweep_summary": "a median and a sort of one column",
    "headforms.analyses.interventions.whole_model_table": "one row per edit at hand",
    "headforms.analyses.motion.head_curves": "one head's rows of a path",
    "headforms.analyses.motion.most_moved": "a sort of a movement table",
    "headforms.analyses.parity.paper_table2": "the paper's rows beside counts of labels",
    "headforms.analyses.parity.parity_by_layer": "counts of parity labels per layer",
    "headforms.analyses.parity.parity_table": "counts of parity labels",
    "headforms.analyses.spectra.best_k_or_none": "the largest of a scan's values",
    "headforms.analyses.spectra.clusters_by_layer": "counts of cluster labels per layer",
    "headforms.analyses.spectra.extreme_count": "a number from a head count",
    "headforms.analyses.spectra.feasible_k": "a range from a head count",
    "headforms.analyses.spectra.mean_unit_spectrum": "one mean over the heads' spectra",
    "headforms.analyses.spectra.projection_frame": "a join of a projection and the heads",
    "headforms.analyses.spectral_geometry.geometry_summary": "quantiles of a computed table",
    "headforms.analyses.theorem5.convergence_table": "means of a sampling at hand",
    "headforms.analyses.theorem5.limit_edge": "which edge a profile lies on",
    "headforms.analyses.theorem5.limit_profile": "a closed formula of two numbers",
    "headforms.analyses.theta.theta_frame": "each head's projection on Theta (a formula)",
    "headforms.behaviour.run.locate_runnable": "locates a model's files, computes nothing",
    "headforms.behaviour.scores.first_token": "a mean over a pattern at hand",
    "headforms.behaviour.scores.previous_token": "a mean over a pattern at hand",
    "headforms.demo.Demo": "the built demo's folders and steps",
    "headforms.demo.demo_directory": "where the demo is built",
    "headforms.diff.ModelDiff": "two analyses at hand matched head by head",
    "headforms.interventions.controls.Match": "a control's match named (an enum)",
    "headforms.interventions.request.Scope": "a scope (a checked value)",
    "headforms.interventions.run.request_of": "a request (a checked value), not its run",
    "headforms.series.Trajectory": "analyses at hand along a training run",
    "headforms.series.open_series": "the checkpoints of a run, located (nothing computed)",
    "headforms.series.run_store_of": "whether a path holds a run store (nothing read)",
    "headforms.series.series_label": "a run's name",
}
"""Callables of computing modules a page may call: views of results at hand, each bounded by
what it is handed, with why."""


def scanned() -> list[Path]:
    """The dashboard's files outside the gateway: ``app.py``, the pages, ``ui/*.py``."""
    return [REPO / "app.py", *sorted((REPO / "pages").glob("*.py")), *sorted(REPO.glob("ui/*.py"))]


def _imported(tree: ast.AST) -> dict[str, str]:
    """Local name -> the dotted name it was imported as (absolute imports only)."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                names[local] = alias.name if alias.asname else local
    return names


def _dotted(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]`` (None for anything else)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def _resolve(dotted: str) -> object | None:
    """The object a dotted name names (the longest importable module, then attributes)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            found = getattr(found, attribute, None)
            if found is None:
                return None
        return found
    return None


def _where(obj: object, dotted: str) -> str:
    """Where a callable is defined: ``module.name`` (a re-export named by its own module)."""
    module = getattr(obj, "__module__", None)
    name = getattr(obj, "__qualname__", None)
    return f"{module}.{name}" if module and name else dotted


def _annotations(tree: ast.AST) -> set[int]:
    """The nodes inside type annotations (names there are types, not uses)."""
    roots: list[ast.expr | None] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg | ast.AnnAssign):
            roots.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            roots.append(node.returns)
    return {id(inner) for root in roots if root is not None for inner in ast.walk(root)}


def violations(path: Path) -> list[str]:
    """Each use in ``path`` of a computation of the library or of a numerical library: a
    function of a computing module used in any way (called, or handed over to be called), a
    class of one called (its constructor computes), unless a view."""
    tree = ast.parse(path.read_text(), str(path))
    names, annotations = _imported(tree), _annotations(tree)
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules.append(node.module)
            found += [
                f"{path.name}:{node.lineno} imports {m}"
                for m in modules
                if m.split(".")[0] in NUMERICAL
            ]
            continue
        if not isinstance(node, ast.Name | ast.Attribute) or not isinstance(node.ctx, ast.Load):
            continue
        if id(node) in annotations:
            continue
        dotted = _dotted(node)
        if dotted is None or dotted[0] not in names:
            continue
        full = ".".join([names[dotted[0]], *dotted[1:]])
        if not full.startswith("headforms.") or any(full.startswith(v) for v in NUMERICAL):
            continue
        obj = _resolve(full)
        if not (inspect.isfunction(obj) or (inspect.isclass(obj) and id(node) in called)):
            continue
        where = _where(obj, full)
        if where.startswith(COMPUTING) and where not in VIEWS:
            found.append(f"{path.name}:{node.lineno} uses {where}")
    return found


def test_no_page_computes_outside_the_gateway() -> None:
    found = [line for path in scanned() for line in violations(path)]
    assert found == [], "ask the gateway (ui/gateway: a kind; ui.compute.derive/run) instead:\n" + (
        "\n".join(found)
    )


def test_the_views_are_still_there() -> None:
    """Every listed view exists where it is listed (a renamed one must be listed again)."""
    gone = [name for name in VIEWS if _where(_resolve(name), name) != name]
    assert gone == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "from headforms.analyses.fits import fit_lobes\nfits = fit_lobes(spectra)\n",
            "uses headforms.analyses.fits.fit_lobes",
        ),
        (
            "from headforms.analyses import spectra as sp\nscan = sp.silhouette_scan(eig_s)\n",
            "uses headforms.analyses.spectra.silhouette_scan",
        ),
        (
            "from ui import cached\nfrom headforms.analyses import spectra as sp\n"
            "scan = cached('scan', key, lambda: sp.silhouette_scan(eig_s))\n",
            "uses headforms.analyses.spectra.silhouette_scan",
        ),
        (
            "from headforms.analyses.behaviour import rank_correlation\n"
            "found = cached('rho', key, rank_correlation)\n",
            "uses headforms.analyses.behaviour.rank_correlation",
        ),
        ("from headforms import analyze\nanalyze('x')\n", "uses headforms.engine.analyze"),
        (
            "from headforms import hosted\nhosted.analyze('x')\n",
            "uses headforms.hosted.api.analyze",
        ),
        ("from sklearn.cluster import KMeans\n", "imports sklearn.cluster"),
        ("import scipy.stats\n", "imports scipy.stats"),
    ],
)
def test_a_planted_computation_is_found(tmp_path: Path, source: str, expected: str) -> None:
    page = tmp_path / "planted.py"
    page.write_text(source)
    assert any(expected in line for line in violations(page)), violations(page)


def test_a_view_and_a_figure_are_not_computations(tmp_path: Path) -> None:
    page = tmp_path / "fine.py"
    page.write_text(
        "from headforms.analyses import spectra as sp\n"
        "from headforms.figures import spectra as figures\n"
        "from headforms.analyses.behaviour import GEOMETRY_COLUMNS\n"
        "ks = sp.feasible_k(len(eig_s))\nfig = figures.silhouette_figure(scan, 3)\n"
        "columns = list(GEOMETRY_COLUMNS)\n"
    )
    assert violations(page) == []
