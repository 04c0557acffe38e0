"""Two stages joined by stores: a new RoPE position, option, spectrum or forms code computes the
forms from the stored factors and never reads a weight again (the readers are not even
constructed), with numbers identical to an analysis straight from the weights; a metrics hit
touches neither factors nor weights.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import tiny_models as tm
from counting import count_computations, stages

import headforms.readers as readers
from headforms import ModelAnalysis, analyze
from headforms.sources import locate
from headforms.store import FactorStore, ResultStore, factors_key
from headforms.store import factors as factor_store
from headforms.store import keys as store_keys


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random qwen3: RoPE, QK-norm gains that are not all one, biases off."""
    directory = tmp_path_factory.mktemp("stages-qwen3")
    tm.build("qwen3", directory, seed=7)
    return directory


@pytest.fixture
def model(tiny_dir: Path, tmp_path: Path) -> str:
    return str(shutil.copytree(tiny_dir, tmp_path / "model"))


def refuse_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if any reader of weights is constructed from now on."""
    for cls in (readers.GGUFReader, readers.SafetensorsReader, readers.TorchBinReader):
        monkeypatch.setattr(cls, "__init__", lambda *a, **k: pytest.fail("weights were read"))


def _same(a: ModelAnalysis, b: ModelAnalysis) -> None:
    pd.testing.assert_frame_equal(a.heads, b.heads, check_exact=True)
    assert a.spectra.keys() == b.spectra.keys()
    for name in a.spectra:
        np.testing.assert_array_equal(a.spectra[name], b.spectra[name])
    assert a.card.as_dict() == b.card.as_dict()


def test_new_positions_options_and_spectra_come_from_the_stored_factors(
    model: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ResultStore(tmp_path / "results")
    calls = count_computations(monkeypatch)
    analyze(model, store=store)
    assert stages(calls) == ["extraction"]
    variants = [
        {"rope_position": 5},
        {"rope_position": -3, "fold_qk_norm": False},
        {"spectra": ("sv_a", "eig_l_abs")},
    ]
    expected = [analyze(model, use_cache=False, **kw) for kw in variants]  # from the weights
    calls.clear()
    refuse_weights(monkeypatch)
    for kw, want in zip(variants, expected, strict=True):
        _same(analyze(model, store=store, **kw), want)
    assert stages(calls) == ["forms"] * len(variants)
    calls.clear()
    for kw, want in zip(variants, expected, strict=True):  # now metrics hits
        _same(analyze(model, store=store, **kw), want)
    assert calls == []


def test_a_change_to_the_forms_code_reuses_the_factors(
    model: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new metric or a changed formula (another forms code version): metrics are computed
    again, from the factors; the weights are not read."""
    store = ResultStore(tmp_path / "results")
    first = analyze(model, store=store)
    calls = count_computations(monkeypatch)
    refuse_weights(monkeypatch)
    real = store_keys.code_version

    def changed(stage: str) -> str:
        return real(stage) + ("-new" if stage == "forms" else "")

    monkeypatch.setattr(store_keys, "code_version", changed)
    _same(analyze(model, store=store), first)
    assert stages(calls) == ["forms"]


@pytest.mark.parametrize("damage", ["flip bytes", "truncate", "delete", "meta"])
def test_damaged_factors_are_read_again_from_the_weights(
    model: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    first = analyze(model, store=ResultStore(tmp_path / "a"))
    expected = analyze(model, rope_position=2, use_cache=False)

    entry = FactorStore().directory / factors_key(locate(model).fingerprint)
    layer = entry / factor_store.layer_file(1)
    if damage == "flip bytes":
        data = bytearray(layer.read_bytes())
        data[-5] ^= 0x40  # inside the last tensor's values
        layer.write_bytes(bytes(data))
    elif damage == "truncate":
        layer.write_bytes(layer.read_bytes()[:100])
    elif damage == "delete":
        layer.unlink()
    else:
        (entry / factor_store.META).write_text("{not json")
    calls = count_computations(monkeypatch)
    _same(analyze(model, rope_position=2, store=ResultStore(tmp_path / "b")), expected)
    assert stages(calls)[-1] == "extraction"  # the damaged entry was dropped, weights read
    assert (entry / factor_store.META).exists()  # and stored afresh, intact
    calls.clear()
    _same(analyze(model, store=ResultStore(tmp_path / "c")), first)
    assert stages(calls) == ["forms"]


FORMS_ONLY = """
import sys
import headforms.readers as r
for cls in (r.GGUFReader, r.SafetensorsReader, r.TorchBinReader):
    cls.__init__ = lambda *a, **k: (_ for _ in ()).throw(AssertionError('weights read'))
from headforms import analyze
result = analyze(sys.argv[1], rope_position=int(sys.argv[2]), fold_qk_norm=sys.argv[3] == "1")
heavy = sorted(m for m in ("torch", "transformers", "pandas", "pyarrow") if m in sys.modules)
print(result.card.rope_position, ",".join(heavy) or "-")
"""


@pytest.mark.parametrize(
    ("name", "position", "fold"), [("smollm2-135m", 7, True), ("minilm-l6", 0, False)]
)
def test_the_forms_stage_needs_no_config_transformers_or_torch(
    name: str, position: int, fold: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From stored factors, a new position (a GGUF model) or option (a config.json model, whose
    extraction needed transformers for its config) imports none of them."""
    monkeypatch.setenv("HEADFORMS_CACHE_DIR", str(tmp_path / "cache"))
    analyze(name)  # the factors stored here, by this process (the one below imports no more)
    out = subprocess.run(
        [sys.executable, "-c", FORMS_ONLY, name, str(position), "1" if fold else "0"],
        env=dict(os.environ),
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout.split()
    assert out == [str(position), "-"], out


KNOWN_CONFIG = """
import sys
from headforms import analyze
result = analyze(sys.argv[1])
result.heads.to_pickle(sys.argv[2])
heavy = sorted(m for m in ("torch", "transformers") if m in sys.modules)
print(",".join(heavy) or "-")
"""


def test_a_checkpoint_of_a_known_config_is_extracted_without_transformers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """transformers read a config.json once (its facts kept in the store, linear RoPE's
    frequencies included): another checkpoint of the same config, in a new process, is
    extracted from its weights without importing transformers or torch, to the same table."""
    monkeypatch.setenv("HEADFORMS_CACHE_DIR", str(tmp_path / "cache"))
    first, second = tmp_path / "first", tmp_path / "second"
    tm.build("llama", first, seed=1)
    tm.build("llama", second, seed=2)
    assert (first / "config.json").read_bytes() == (second / "config.json").read_bytes()
    analyze(str(first))  # the config's facts stored by this process (another fingerprint)
    out = subprocess.run(
        [sys.executable, "-c", KNOWN_CONFIG, str(second), str(tmp_path / "heads.pkl")],
        env=dict(os.environ),
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout.split()
    assert out == ["-"], out
    there = pd.read_pickle(tmp_path / "heads.pkl")
    here = analyze(str(second), use_cache=False).heads
    pd.testing.assert_frame_equal(there, here, check_exact=False, rtol=0, atol=1e-12)
