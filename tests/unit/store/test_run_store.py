"""The run store (headforms.run_store) on synthetic analyses: records written and read back as
they were, listed by step while the store grows, a series equal to its records; a record is
whole or absent (a writer stopped mid-record leaves no record; a leftover temporary file, a
truncated, compressed or foreign file are left out and counted); the manifest's options and
shapes are kept by a resumed run and another run's refused in one line; the scalars of a
record (headforms.analyses.training) against an independent recount."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from headforms.analyses.training import record_scalars
from headforms.architectures import Shapes
from headforms.errors import CorruptFileError, OptionError
from headforms.factors import LayerFactors, ModelFacts
from headforms.forms import PARITY_LABELS, simplex_distance
from headforms.options import AnalysisOptions
from headforms.run_store import (
    MANIFEST,
    RECORDS,
    RunWriter,
    read_record,
    read_records,
    record_path,
    run_state,
    thinned,
)
from headforms.series import run_series, trajectory
from headforms.streaming import forms_analysis

SHAPES = Shapes(n_layers=2, model_dim=24, n_heads=4, n_kv_heads=2, head_dim=6)
OPTIONS = AnalysisOptions()
SHAPE_FIELDS = {
    "n_layers": 2,
    "n_heads": 4,
    "n_kv_heads": 2,
    "head_dim": 6,
    "model_dim": 24,
}


def analysis(seed: int):
    """The analysis of random Q/K factors of :data:`SHAPES` (a record's content)."""
    facts = ModelFacts(
        SHAPES, "tiny", "live", "llama", "llama", "rotary", "f32", "", 0, 0, False, False
    )

    def layer(i: int) -> LayerFactors:  # its own generator: layers may be made in any order
        rng = np.random.default_rng((seed, i))
        q = rng.normal(size=(4, 6, 24)).astype(np.float32)
        return LayerFactors(q, rng.normal(size=(2, 6, 24)).astype(np.float32))

    return forms_analysis(facts, layer, OPTIONS, "tiny")


def store(directory: Path, steps=(0, 10, 20)) -> RunWriter:
    writer = RunWriter.open(directory, "tiny", SHAPE_FIELDS, OPTIONS, every=10)
    for step in steps:
        writer.write(step, analysis(step))
    return writer


def test_records_read_back_as_written_and_as_a_series(tmp_path: Path) -> None:
    writer = store(tmp_path)
    state = run_state(tmp_path)
    assert state.steps == (0, 10, 20) and state.live and state.manifest.every == 10
    for record in state.records:
        got, want = read_record(record), analysis(record.step)
        for name, column in want.columns.items():
            np.testing.assert_array_equal(got.columns[name], column, name)
        for name, spectrum in want.spectra.items():
            np.testing.assert_array_equal(got.spectra[name], spectrum, name)
        assert got.card.spec == str(record.path) and len(got.card.fingerprint) == 64
        assert read_record(record, spectra=False).spectra == {}
    series = trajectory(str(tmp_path))
    assert series.steps == (0, 10, 20) and series.run is not None
    np.testing.assert_array_equal(series.stacked("a")[2], analysis(20).columns["a"])
    writer.write(30, analysis(30))  # the store grows: a new listing
    grown = run_state(tmp_path)
    assert grown.steps == (0, 10, 20, 30) and grown.listing != state.listing
    writer.finish(30)
    assert not run_state(tmp_path).live and run_state(tmp_path).manifest.finished == 30


def test_a_record_is_whole_or_absent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = store(tmp_path, steps=(0,))

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt  # the process stopped while the record was being written

    monkeypatch.setattr("headforms.run_store.encode", stopped)
    with pytest.raises(KeyboardInterrupt):
        writer.write(10, analysis(10))
    monkeypatch.undo()
    assert run_state(tmp_path).steps == (0,)
    assert sorted(p.name for p in (tmp_path / RECORDS).iterdir()) == ["step-0.zip"]
    # what a killed writer leaves (its temporary file) and damage from outside
    whole = record_path(tmp_path, 0).read_bytes()
    (tmp_path / RECORDS / ".step-10.zip.x1y2.tmp").write_bytes(whole[:100])
    record_path(tmp_path, 20).write_bytes(whole[: len(whole) // 2])
    record_path(tmp_path, 30).write_bytes(b"not a zip")
    record_path(tmp_path, 40).write_bytes(_compressed(whole))
    state = run_state(tmp_path)
    assert state.steps == (0, 20, 30, 40)  # the temporary file is not a record
    kept, damaged = read_records(state)
    assert [r.step for r, _ in kept] == [0] and [r.step for r in damaged] == [20, 30, 40]
    series = run_series(state)
    assert series.steps == (0,) and [r.step for r in series.damaged] == [20, 30, 40]


def _compressed(data: bytes) -> bytes:
    """The same record's members deflated (a reader must not expand them: refused)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info), compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


def test_a_resumed_run_keeps_its_store_and_another_run_is_refused(tmp_path: Path) -> None:
    store(tmp_path).finish(20)
    again = RunWriter.open(tmp_path, "tiny", SHAPE_FIELDS, OPTIONS, every=10)  # resumed
    again.write(30, analysis(30))
    state = run_state(tmp_path)
    assert state.steps == (0, 10, 20, 30) and state.live
    other = {**SHAPE_FIELDS, "n_heads": 8}
    with pytest.raises(OptionError, match="another run .*shapes"):
        RunWriter.open(tmp_path, "other", other, OPTIONS)
    with pytest.raises(OptionError, match="RoPE position"):
        RunWriter.open(tmp_path, "tiny", SHAPE_FIELDS, AnalysisOptions(5))
    with pytest.raises(OptionError, match="made at RoPE position 0"):
        trajectory(str(tmp_path), AnalysisOptions(3))


def test_an_empty_or_foreign_store_is_one_line(tmp_path: Path) -> None:
    RunWriter.open(tmp_path, "tiny", SHAPE_FIELDS, OPTIONS)
    with pytest.raises(OptionError, match="no record yet"):
        trajectory(str(tmp_path))
    (tmp_path / MANIFEST).write_text(json.dumps({"format": "something else"}))
    with pytest.raises(CorruptFileError, match="not a readable run store manifest"):
        run_state(tmp_path)


def test_thinned_keeps_the_ends_and_spreads_evenly(tmp_path: Path) -> None:
    records = list(range(200))
    picked = thinned(records, 64)  # type: ignore[arg-type]
    assert len(picked) == 64 and picked[0] == 0 and picked[-1] == 199
    gaps = np.diff(picked)
    assert gaps.min() >= 3 and gaps.max() <= 4
    assert thinned(records[:10], 64) == tuple(range(10))  # type: ignore[arg-type]


def test_the_scalars_of_a_record() -> None:
    first, second = analysis(1).columns, analysis(2).columns
    scalars = record_scalars(second, first)
    parity = list(second["parity"])
    names = {"I+": "I_plus", "II": "II", "I-": "I_minus"}
    for label in PARITY_LABELS:
        want = parity.count(label) / len(parity)
        assert scalars[f"headforms/share_{names[label]}"] == pytest.approx(want)
    assert scalars["headforms/mean_a"] == pytest.approx(float(np.mean(second["a"])))
    profile = np.column_stack([second[c] for c in "abcd"])
    brute = [_theta_distance_by_search(p) for p in profile]
    assert scalars["headforms/mean_theta_distance"] == pytest.approx(np.mean(brute), abs=1e-4)
    moved = simplex_distance(np.column_stack([first[c] for c in "abcd"]), profile)
    assert scalars["headforms/moved_max"] == pytest.approx(moved.max())
    assert scalars["headforms/moved_mean"] == pytest.approx(moved.mean())
    top = np.argsort(-moved)[:3]
    named = {k for k in scalars if k.startswith("headforms/moved/")}
    assert named == {f"headforms/moved/L{second['layer'][i]}H{second['head'][i]}" for i in top}
    assert all(k.replace("/", "").replace("_", "").isalnum() for k in scalars)
    assert "headforms/moved_max" not in record_scalars(second)  # no record before


def _theta_distance_by_search(p: np.ndarray) -> float:
    """Distance to Theta by a fine search along both branches (vertex -> midpoint)."""
    t = np.linspace(0, 1, 20001)[:, None]
    mid = np.array([0.5, 0.5, 0, 0])
    points = np.vstack(
        [np.array([0, 0, 1, 0]) * (1 - t) + mid * t, np.array([0, 0, 0, 1]) * (1 - t) + mid * t]
    )
    return float(np.linalg.norm(points - p, axis=1).min())
