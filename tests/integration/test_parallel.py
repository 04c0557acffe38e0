"""The one threading rule (headforms/parallel.py): layers on worker threads, BLAS on one thread
each, whatever the thread count; results independent of it; contained workers share the cores."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from headforms.architectures import Shapes
from headforms.baseline import compute_baseline
from headforms.parallel import ordered_layers


def _blas_threads() -> set[int]:
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


@pytest.mark.parametrize("threads", [1, 2])
def test_blas_runs_on_one_thread_inside_every_layer(threads: int) -> None:
    with threadpool_limits(limits=2):  # what a caller's environment may have set
        seen = [found for _, found in ordered_layers(4, lambda _: _blas_threads(), None, threads)]
        assert _blas_threads() == {2}  # the caller's setting is given back afterwards
    assert all(found == {1} for found in seen), seen


def test_layers_come_back_in_order_with_progress() -> None:
    calls: list[tuple[int, int]] = []
    out = list(
        ordered_layers(5, lambda layer: layer * layer, lambda d, t, _: calls.append((d, t)), 2)
    )
    assert out == [(i, i * i) for i in range(5)]
    assert calls == [(i, 5) for i in range(5)]


def test_the_baseline_does_not_depend_on_the_thread_count(monkeypatch: pytest.MonkeyPatch) -> None:
    shapes = Shapes(n_layers=3, n_heads=2, n_kv_heads=2, head_dim=4, model_dim=20)
    runs = []
    for threads in ("1", "2"):
        monkeypatch.setenv("HEADFORMS_THREADS", threads)
        runs.append(compute_baseline(shapes))
    one, two = runs
    for name, values in one.columns.items():
        np.testing.assert_array_equal(two.columns[name], values, err_msg=name)
    for name, values in one.spectra.items():
        np.testing.assert_array_equal(two.spectra[name], values, err_msg=name)


def test_contained_workers_share_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    import headforms.hosted.limits as module
    from headforms.hosted.limits import Limits

    monkeypatch.setattr(module, "usable_cpus", lambda: 2)
    monkeypatch.delenv("HEADFORMS_THREADS", raising=False)
    monkeypatch.setenv("HEADFORMS_ANALYSIS_CONCURRENT", "2")
    assert Limits.from_env().worker_threads == 1
    monkeypatch.setenv("HEADFORMS_ANALYSIS_CONCURRENT", "1")
    assert Limits.from_env().worker_threads == 2
    monkeypatch.setenv("HEADFORMS_ANALYSIS_CONCURRENT", "4")
    assert Limits.from_env().worker_threads == 1  # never below one
    monkeypatch.setenv("HEADFORMS_THREADS", "3")
    assert Limits.from_env().worker_threads == 3  # an explicit setting wins
