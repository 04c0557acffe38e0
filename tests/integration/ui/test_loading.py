"""A dashboard load parses and locates its model once, then hands the located model on through
the gateway: to the engine on a private server, to the contained worker in hosted mode (which
opens it as it is)."""

from __future__ import annotations

from pathlib import Path

import pytest
import tiny_models as tm

import headforms.sources as sources
from headforms.settings import HOSTED_ENV, ROOTS_ENV


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("loading") / "llama"
    tm.build("llama", directory, seed=41)
    return directory


@pytest.mark.parametrize("hosted", [False, True], ids=["private", "hosted"])
def test_a_load_locates_its_model_once(
    tiny_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hosted: bool
) -> None:
    from ui import compute, loading

    monkeypatch.setenv("HEADFORMS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HEADFORMS_THREADS", "1")
    if hosted:
        monkeypatch.setenv(HOSTED_ENV, "1")
        monkeypatch.setenv(ROOTS_ENV, str(tiny_dir.parent))
    else:
        monkeypatch.delenv(HOSTED_ENV, raising=False)
    located: list[Path] = []
    real = sources.locate_path
    monkeypatch.setattr(
        sources, "locate_path", lambda path, *a, **k: located.append(path) or real(path, *a, **k)
    )
    loading._located_local.clear()
    compute.gateway().clear()
    analysis = loading.load_analysis(str(tiny_dir))
    assert located == [tiny_dir]
    assert len(analysis.heads) == tm.LAYERS * tm.H
    # A first view computes what it draws: the core spectra, not the singular values of A nor
    # the eigenvalues of L; the page that draws them asks for them, from the stored factors.
    assert set(analysis.spectra) == {"eig_s", "lobe_pos", "lobe_neg"}
    located.clear()
    full = loading.load_analysis(str(tiny_dir), spectra=loading.HEAD_SPECTRA)
    assert "sv_a" in full.spectra and full.heads.equals(analysis.heads)
    assert loading.load_analysis(str(tiny_dir)) is full  # the richer one is kept
    assert len(located) <= 1  # once at most (again only past the fingerprint's few seconds)


@pytest.mark.parametrize("hosted", [False, True])
def test_a_bug_during_a_load_is_one_line_without_its_traceback(
    hosted: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An unexpected exception inside the engine is one line: its type and the first line of its
    message (hosted: its type only, the server's log has the rest)."""
    from ui import loading

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError(f"failed at {tmp_path}/secret\nTraceback (most recent call last):")

    monkeypatch.setattr(loading, "load_analysis", broken)
    if hosted:
        monkeypatch.setenv(HOSTED_ENV, "1")
        monkeypatch.setenv(ROOTS_ENV, str(tmp_path))
    analysis, message = loading.load_or_message("smollm2-135m")
    assert analysis is None and message is not None
    assert message.startswith("Could not analyse 'smollm2-135m': RuntimeError: ")
    assert "\n" not in message and "Traceback" not in message
    assert ("secret" in message) != hosted
