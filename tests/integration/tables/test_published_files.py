"""The author's published files as a source: ``head_statistics.csv`` and ``<tag>_spectra.npz``
written (tests/helpers/author_files.py, dense reduced forms as the author defines them) from tiny
models, read back through headforms and compared, view by view, with the same models analysed
from their weights; the spectra are checked against the table's own columns when read."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import tiny_models
from author_files import write_author_files

from headforms import analyze
from headforms.analyses import fits, lobes, parity, spectra
from headforms.columns import ALL_SPECTRA, METRIC_COLUMNS
from headforms.errors import CorruptFileError, ModelSpecError
from headforms.model_analysis import model_baseline
from headforms.tables import expand_table_spec

TAGS = {"tiny-gpt2": "gpt2", "tiny-mistral": "mistral"}
SHARES = ("a", "b", "c", "d", "b_sym", "c_sym", "d_sym", "energy", "pairing", "balance")


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The two tiny models on disk, their analyses from the weights, and the author's files."""
    root = tmp_path_factory.mktemp("published")
    models, weights = {}, {}
    for tag, family in TAGS.items():
        models[tag] = tiny_models.build(family, root / tag, seed=3)
        weights[tag] = analyze(str(root / tag), spectra=ALL_SPECTRA)
    csv = write_author_files(root / "survey_results", models)
    return {"dir": csv.parent, "csv": csv, "weights": weights}


def test_the_heads_and_spectra_are_those_of_the_weights(published):
    for tag, from_weights in published["weights"].items():
        result = analyze(f"{published['dir']}::{tag}")
        card, reference = result.card, from_weights.card
        shape = ("n_layers", "n_heads", "n_kv_heads", "head_dim")
        assert [getattr(card, f) for f in shape] == [getattr(reference, f) for f in shape]
        assert card.model_dim == 0 and card.has_qk_bias is None and card.qk_norm is None
        heads, expected = result.heads, from_weights.heads
        for column in METRIC_COLUMNS:
            if column in ("parity", "n_zero"):
                continue
            tolerance = {"atol": 1e-9} if column in SHARES else {"rtol": 1e-7, "atol": 1e-12}
            np.testing.assert_allclose(heads[column], expected[column], **tolerance, err_msg=column)
        assert list(heads["parity"]) == list(expected["parity"])
        assert heads["n_zero"].isna().all()  # out of N, which the files do not give
        assert set(result.spectra) == {"eig_s", "lobe_pos", "lobe_neg", "sv_a"}  # no eig_l_abs
        for name, values in result.spectra.items():
            scale = np.abs(from_weights.spectra[name]).max()
            np.testing.assert_allclose(
                values, from_weights.spectra[name], atol=1e-9 * scale, err_msg=name
            )


def test_every_view_of_the_spectra_agrees(published):
    for tag, from_weights in published["weights"].items():
        result = analyze(f"{published['dir']}::{tag}")
        eig_s, expected_eig = result.spectra["eig_s"], from_weights.spectra["eig_s"]
        clusters = spectra.cluster_spectra(eig_s)
        assert list(clusters.labels) == list(spectra.cluster_spectra(expected_eig).labels)
        np.testing.assert_allclose(
            spectra.spectral_svd(eig_s).scores, spectra.spectral_svd(expected_eig).scores, atol=1e-9
        )
        got, want = fits.fit_lobes(result.spectra), fits.fit_lobes(from_weights.spectra)
        for lobe in got:
            for family, errors in got[lobe].errors.items():
                np.testing.assert_allclose(errors, want[lobe].errors[family], rtol=1e-6)
        sigma = fits.fit_observation6(result.spectra)
        assert list(sigma) == ["σ(A)"]  # |λ(L)| is not in the files: only σ(A) is fitted
        reference = fits.fit_observation6(from_weights.spectra)["σ(A)"].errors["gamma"]
        np.testing.assert_allclose(sigma["σ(A)"].errors["gamma"], reference, rtol=1e-6)
        pd.testing.assert_frame_equal(
            lobes.observation5_summary({tag: result.heads}),
            lobes.observation5_summary({tag: from_weights.heads}),
        )
        pd.testing.assert_frame_equal(
            parity.theorem3_summary({tag: (result.heads, result.card.head_dim)}),
            parity.theorem3_summary({tag: (from_weights.heads, from_weights.card.head_dim)}),
        )


def test_a_model_dim_column_gives_n_zero_and_the_same_baseline(published, tmp_path: Path):
    table = pd.read_csv(published["csv"]).assign(model_dim=tiny_models.N)
    for path in published["dir"].glob("*_spectra.npz"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    table.to_csv(tmp_path / "head_statistics.csv", index=False)
    for tag, from_weights in published["weights"].items():
        result = analyze(f"{tmp_path}::{tag}")
        np.testing.assert_array_equal(result.heads["n_zero"], from_weights.heads["n_zero"])
        assert result.card.baseline_shapes == from_weights.card.baseline_shapes
        np.testing.assert_array_equal(
            model_baseline(result.card).columns["energy"],
            model_baseline(from_weights.card).columns["energy"],
        )


def test_the_directory_the_table_file_and_their_listing(published):
    directory, csv = published["dir"], published["csv"]
    both = sorted(TAGS)
    assert expand_table_spec(str(directory)) == [f"{directory}::{tag}" for tag in TAGS]
    assert expand_table_spec(str(csv)) == [f"{csv}::{tag}" for tag in TAGS]
    assert analyze(f"{csv}::tiny-gpt2").spectra  # the spectra file beside the table file
    with pytest.raises(ModelSpecError, match="holds 2 models") as caught:
        analyze(str(directory))
    assert all(tag in str(caught.value) for tag in both)
    with pytest.raises(ModelSpecError, match="holds no head_statistics.csv"):
        analyze(f"{directory.parent / 'tiny-gpt2'}::x")


def _copy(published: dict, target: Path) -> Path:
    target.mkdir(parents=True)
    for path in published["dir"].iterdir():
        (target / path.name).write_bytes(path.read_bytes())
    return target


def test_a_table_that_disagrees_with_its_spectra_is_one_line(published, tmp_path: Path):
    directory = _copy(published, tmp_path / "edited")
    table = pd.read_csv(directory / "head_statistics.csv")
    chosen = (table["model"] == "tiny-gpt2") & (table["layer"] == 1) & (table["head"] == 2)
    row = table.index[chosen]
    table.loc[row, "c_sym"] += 0.01
    table.to_csv(directory / "head_statistics.csv", index=False)
    with pytest.raises(CorruptFileError) as caught:
        analyze(f"{directory}::tiny-gpt2")
    message = str(caught.value)
    assert "model 'tiny-gpt2', head L1H2" in message and "c_sym" in message and "\n" not in message
    assert analyze(f"{directory}::tiny-mistral").spectra  # the other model is untouched


def _rewrite(path: Path, **changes: np.ndarray | None) -> None:
    with np.load(path) as data:
        arrays = {name: data[name] for name in data.files}
    for name, value in changes.items():
        if value is None:
            del arrays[name]
        else:
            arrays[name] = value
    np.savez_compressed(path, **arrays)


@pytest.mark.parametrize(
    "case, message",
    [
        ("missing", "no sigma_L"),
        ("shape", "eigenvalues has shape (7, 32), not (heads, 2n) = (8, 32)"),
        ("nan", "sigma_T holds a value that is not a finite number (row 3)"),
        ("heads", "its heads are not the table's: the table has L1H3 where the file has L1H2"),
        ("text", "eigenvalues holds a value that is not a finite number (its type is <U"),
        ("garbage", "cannot read it as a spectra file (BadZipFile)"),
        ("large", "expands to"),
        ("objects", "sigma_L.npy holds Python objects, not numbers"),
        ("lying", "eigenvalues.npy declares (1000000000, 32) values of float64, more than it"),
    ],
)
def test_bad_spectra_files_are_one_line(published, tmp_path: Path, monkeypatch, case, message):
    directory = _copy(published, tmp_path / "bad")
    path = directory / "tiny-gpt2_spectra.npz"
    with np.load(path) as data:
        eigenvalues, sigma_t, head = data["eigenvalues"], data["sigma_T"], data["head"]
    if case == "missing":
        _rewrite(path, sigma_L=None)
    elif case == "shape":
        _rewrite(path, eigenvalues=eigenvalues[:7])
    elif case == "nan":
        sigma_t = sigma_t.copy()
        sigma_t[3, 0] = np.nan
        _rewrite(path, sigma_T=sigma_t)
    elif case == "heads":
        head = head.copy()
        head[7] = 2  # L1H3 listed as a second L1H2
        _rewrite(path, head=head)
    elif case == "text":
        _rewrite(path, eigenvalues=eigenvalues.astype(str))
    elif case == "garbage":
        path.write_bytes(b"not a zip archive")
    elif case == "objects":
        _rewrite(path, sigma_L=np.array([object()] * 8, dtype=object))
    elif case == "lying":  # a header promising 256 GB over a few bytes: never allocated
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(
            header, {"descr": "<f8", "fortran_order": False, "shape": (10**9, 32)}
        )
        with zipfile.ZipFile(path) as archive:
            members = {n: archive.read(n) for n in archive.namelist()}
        members["eigenvalues.npy"] = header.getvalue() + b"\0" * 64
        with zipfile.ZipFile(path, "w") as archive:
            for member, content in members.items():
                archive.writestr(member, content)
    elif case == "large":
        declared = sum(i.file_size for i in zipfile.ZipFile(path).infolist())
        limit = declared - 1  # above both files' sizes: only the expanded arrays exceed it
        assert limit > max(path.stat().st_size, (directory / "head_statistics.csv").stat().st_size)
        monkeypatch.setenv("HEADFORMS_MAX_TABLE_BYTES", str(limit))
    with pytest.raises(CorruptFileError) as caught:
        analyze(f"{directory}::tiny-gpt2")
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert "tiny-gpt2_spectra.npz" in str(caught.value)


def test_hosted_mode_holds_the_spectra_files_to_the_model_roots(
    published, tmp_path: Path, monkeypatch
):
    """On a shared server the table and each spectra file must lie under the model roots: a
    spectra file that is a symbolic link leaving them is refused before it is read."""
    from headforms.errors import NotAllowedError
    from headforms.hosted import policy_in_force

    directory = _copy(published, tmp_path / "roots" / "survey")
    outside = tmp_path / "outside"
    outside.mkdir()
    spectra = directory / "tiny-gpt2_spectra.npz"
    spectra.rename(outside / spectra.name)
    spectra.symlink_to(outside / spectra.name)
    monkeypatch.setenv("HEADFORMS_HOSTED", "1")
    monkeypatch.setenv("HEADFORMS_MODEL_ROOTS", str(tmp_path / "roots"))
    assert analyze(f"{directory}::tiny-mistral", policy=policy_in_force()).spectra
    with pytest.raises(NotAllowedError, match="symbolic link"):
        analyze(f"{directory}::tiny-gpt2", policy=policy_in_force())
