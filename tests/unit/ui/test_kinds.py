"""The gateway's kinds: every one complete (the "add a computation kind" checklist of
docs/CONTRIBUTING.md), and each computation from results at hand (ui/gateway/derived.py) the
library's result, keyed by content, run in the server: on a hosted one at the visitor's turn,
charged once to the visitor who started it and shared with the next who asks."""

from __future__ import annotations

import ast
import copy
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from repo import REPO
from synthetic_analysis import synthetic_analysis

import ui.gateway as gateway_package
from headforms.analyses import behaviour, fits, motion, theorem5
from headforms.analyses import spectra as sp
from headforms.analyses.spectral_geometry import spectral_geometry
from headforms.diff import ModelDiff
from headforms.hosted import Budget, api
from ui.gateway import (
    Computation,
    Derived,
    GeometryCorrelation,
    GeometryCorrelations,
    HostedGateway,
    LocalGateway,
    Movement,
    Observation3Fits,
    Observation6Fits,
    ObservationSummaries,
    ParityChanges,
    SilhouetteScan,
    SpectraClusters,
    SpectralGeometry,
    SpectraProjection,
    Theorem5Samples,
    derived,
    kinds,
)

ANALYSIS = synthetic_analysis(seed=1)
OTHER = synthetic_analysis(seed=2)
FRAME = behaviour.geometry_frame(ANALYSIS.heads).assign(
    score=np.random.default_rng(0).random(len(ANALYSIS.heads))
)
DIFF = ModelDiff(ANALYSIS, OTHER)

EXAMPLES: dict[type[Derived[Any]], tuple[Callable[[], Derived[Any]], Callable[[], Any]]] = {
    Observation3Fits: (
        lambda: Observation3Fits(ANALYSIS),
        lambda: fits.fit_lobes(ANALYSIS.spectra),
    ),
    Observation6Fits: (
        lambda: Observation6Fits(ANALYSIS),
        lambda: fits.fit_observation6(ANALYSIS.spectra),
    ),
    SilhouetteScan: (
        lambda: SilhouetteScan(ANALYSIS),
        lambda: sp.silhouette_scan(ANALYSIS.spectra["eig_s"]),
    ),
    SpectraClusters: (
        lambda: SpectraClusters(ANALYSIS, 3),
        lambda: sp.cluster_spectra(ANALYSIS.spectra["eig_s"], 3),
    ),
    SpectraProjection: (
        lambda: SpectraProjection(ANALYSIS, "svd"),
        lambda: sp.project(ANALYSIS.spectra["eig_s"], "svd"),
    ),
    SpectralGeometry: (
        lambda: SpectralGeometry(ANALYSIS),
        lambda: spectral_geometry(ANALYSIS.spectra),
    ),
    ObservationSummaries: (
        lambda: ObservationSummaries({"m": ANALYSIS}, {}),
        lambda: None,
    ),
    GeometryCorrelations: (
        lambda: GeometryCorrelations("frame", FRAME, "score"),
        lambda: behaviour.correlation_table(FRAME, "score"),
    ),
    GeometryCorrelation: (
        lambda: GeometryCorrelation("frame", FRAME, "energy", "score", 4),
        lambda: behaviour.rank_correlation(FRAME["energy"], FRAME["score"], seed=4),
    ),
    Theorem5Samples: (
        lambda: Theorem5Samples(-1.0, 2.0, 3.0, (4, 8), 5, 6),
        lambda: theorem5.sample_profiles_for_sizes(-1.0, 2.0, 3.0, (4, 8), 5, 6),
    ),
    ParityChanges: (
        lambda: ParityChanges("diff", DIFF),
        lambda: motion.parity_changes(DIFF),
    ),
    Movement: (lambda: Movement("diff", DIFF), lambda: motion.movement(DIFF)),
}
"""One request of each derived kind, and the library's own result (None: the kind's parts are
each one library function, checked below)."""


def _kinds(module: Any) -> list[type]:
    """The concrete kinds a module defines."""
    return [
        cls
        for cls in vars(module).values()
        if inspect.isclass(cls)
        and issubclass(cls, Computation)
        and cls.__module__ == module.__name__
        and not inspect.isabstract(cls)
        and cls is not Derived
    ]


KINDS = _kinds(kinds) + _kinds(derived)


def _named_in_tests(name: str) -> list[str]:
    """Test modules (other than this one) that use ``name`` as a name."""
    found = []
    for path in sorted((REPO / "tests").rglob("test_*.py")):
        if path.name == "test_kinds.py":
            continue
        tree = ast.parse(path.read_text())
        if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(tree)):
            found.append(path.name)
    return found


@pytest.mark.parametrize("kind", KINDS, ids=lambda cls: cls.__name__)
def test_every_kind_is_complete(kind: type) -> None:
    """A kind has its key, a local and a hosted way (a derived kind: its computation), is
    exported by ``ui.gateway``, named in its package doc, and has a test: a derived kind an
    example here, any other kind a test module of its own that uses it."""
    assert not inspect.isabstract(kind)
    assert isinstance(inspect.getattr_static(kind, "key"), property)
    for method in ("local", "hosted"):
        assert callable(getattr(kind, method))
    assert kind.__name__ in gateway_package.__all__
    assert f":class:`{kind.__name__}`" in (kinds.__doc__ or "") + (derived.__doc__ or "")
    if issubclass(kind, Derived):
        assert kind in EXAMPLES, f"add an example of {kind.__name__} to EXAMPLES"
        assert inspect.getattr_static(kind, "compute") is not Derived.compute
    else:
        assert _named_in_tests(kind.__name__), f"no test module uses {kind.__name__}"


def test_the_checklist_finds_every_kind() -> None:
    """The scan of kinds finds them (a guard against a scan that finds nothing)."""
    names = {cls.__name__ for cls in KINDS}
    assert {"Analysis", "PromptAttention", "Observation3Fits", "Theorem5Samples"} <= names


def _same(found: Any, want: Any) -> None:
    if want is None:
        return
    if isinstance(found, pd.DataFrame):
        pd.testing.assert_frame_equal(found.reset_index(drop=True), want.reset_index(drop=True))
    elif hasattr(found, "fits"):
        assert found.fits.keys() == want.keys()
        for name in want:
            for family, errors in want[name].errors.items():
                np.testing.assert_allclose(found.fits[name].errors[family], errors)
    elif hasattr(found, "fitted"):
        _same(found.fitted, want)
    elif hasattr(found, "clustering"):
        np.testing.assert_array_equal(found.clustering.labels, want.labels)
    elif hasattr(found, "projection"):
        np.testing.assert_allclose(found.projection.scores, want.scores)
    elif hasattr(found, "changes"):
        pd.testing.assert_frame_equal(found.changes, want)
    else:
        assert found == want


@pytest.mark.parametrize("kind", list(EXAMPLES), ids=lambda cls: cls.__name__)
def test_a_derived_kind_is_the_librarys_result_kept_by_content(kind: type) -> None:
    make, library = EXAMPLES[kind]
    gateway = LocalGateway()
    found = gateway.run(make())
    _same(found, library())
    assert gateway.run(make()) is found  # the cache's copy, by content
    assert gateway.peek(make()) is found


def test_the_observation_summaries_are_the_librarys_per_model() -> None:
    from headforms.analyses.lobes import observation5_summary
    from headforms.analyses.observations import symmetric_bias_summary
    from headforms.analyses.parity import theorem3_summary
    from headforms.analyses.theta import theta_summary

    analyses = {"a": ANALYSIS, "b": OTHER}
    baselines = {"a": OTHER.heads}
    found = LocalGateway().run(ObservationSummaries(analyses, baselines))
    models = {name: a.heads for name, a in analyses.items()}
    expected = theorem3_summary({n: (a.heads, a.card.head_dim) for n, a in analyses.items()})
    pd.testing.assert_frame_equal(found.theorem3, expected)
    pd.testing.assert_frame_equal(found.theta, theta_summary(models, baselines))
    pd.testing.assert_frame_equal(found.bias, symmetric_bias_summary(models, baselines))
    pd.testing.assert_frame_equal(found.observation5, observation5_summary(models, baselines))
    renamed = ObservationSummaries({"c": ANALYSIS, "b": OTHER}, {"c": OTHER.heads})
    assert renamed.key != ObservationSummaries(analyses, baselines).key  # the rows name models


def test_a_derived_key_names_the_weights_not_the_object() -> None:
    twin = copy.copy(ANALYSIS)  # another object of the same analysis
    assert Observation3Fits(twin).key == Observation3Fits(ANALYSIS).key
    assert Observation3Fits(OTHER).key != Observation3Fits(ANALYSIS).key
    assert SpectraClusters(ANALYSIS, 3).key != SpectraClusters(ANALYSIS, 4).key


def test_bad_inputs_are_one_line_before_any_work() -> None:
    from headforms.errors import HeadformsError, OptionError

    with pytest.raises(OptionError, match="no column 'nope'"):
        GeometryCorrelations("frame", FRAME, "nope")
    with pytest.raises(OptionError, match="unknown geometric column 'x'"):
        GeometryCorrelation("frame", FRAME, "x", "score")
    with pytest.raises(HeadformsError):
        Theorem5Samples(-1.0, 2.0, 3.0, (4,), theorem5.MAX_REPETITIONS + 1, 0)


@pytest.fixture
def fresh_hosting(monkeypatch: pytest.MonkeyPatch) -> api.Hosting:
    hosting = api.Hosting()
    monkeypatch.setattr(api, "hosting", hosting)
    return hosting


@pytest.mark.parametrize(
    ("make", "budget"),
    [
        (lambda: Observation3Fits(OTHER), Budget.SUMMARIES),
        (lambda: Theorem5Samples(-1.0, 2.0, 3.0, (4,), 3, 9), Budget.SAMPLES),
    ],
    ids=["summary", "sampling"],
)
def test_a_hosted_derived_kind_is_charged_once_and_shared(
    fresh_hosting: api.Hosting, make: Callable[[], Derived[Any]], budget: Budget
) -> None:
    gateway = HostedGateway()
    first = gateway.run(make(), visitor="10.0.0.1")
    assert gateway.run(make(), visitor="10.0.0.2") is first  # shared, not computed again
    starts = fresh_hosting.budgets._starts
    assert len(starts[("10.0.0.1", budget)]) == 1
    assert ("10.0.0.2", budget) not in starts
    assert fresh_hosting.server_slots.running() == 0  # its turn given back


def test_a_hosted_derived_kind_past_the_budget_is_one_line(
    fresh_hosting: api.Hosting, monkeypatch: pytest.MonkeyPatch
) -> None:
    from headforms.errors import LimitError

    monkeypatch.setenv("HEADFORMS_VISITOR_SUMMARIES", "1")
    gateway = HostedGateway()
    gateway.run(SilhouetteScan(ANALYSIS), visitor="10.0.0.3")
    with pytest.raises(LimitError, match="HEADFORMS_VISITOR_SUMMARIES") as refused:
        gateway.run(SilhouetteScan(OTHER), visitor="10.0.0.3")
    assert "\n" not in str(refused.value)
    assert gateway.run(SilhouetteScan(OTHER), visitor="10.0.0.4") is not None  # another visitor
