"""plotly.js bundles in static/: the full bundle of the plotly package, the gl3d bundle fetched
with npm at install time (a stand-in npm here: no network in tests), hashed names."""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from pathlib import Path

import pytest
from plotly.offline import get_plotlyjs, get_plotlyjs_version

from ui import static

FAKE_NPM = """#!{python}
# Stand-in for `npm pack SPEC --silent --pack-destination DIR`: writes the tarball a registry
# would serve, with a bundle whose banner names the version in $FAKE_BUNDLE_VERSION.
import io, os, sys, tarfile
args = sys.argv[1:]
assert args[0] == "pack", args
spec, destination = args[1], args[args.index("--pack-destination") + 1]
name, version = spec.rsplit("@", 1)
with open(os.path.join(os.environ["FAKE_NPM_LOG"]), "a") as log:
    log.write(spec + "\\n")
body = ("/**\\n* plotly.js (gl3d - minified) v" + os.environ["FAKE_BUNDLE_VERSION"]
        + "\\n*/\\nwindow.Plotly = {{}};\\n" + os.environ.get("FAKE_BUNDLE_EXTRA", "")).encode()
with tarfile.open(os.path.join(destination, name + "-" + version + ".tgz"), "w:gz") as tar:
    info = tarfile.TarInfo("package/plotly-gl3d.min.js")
    info.size = len(body)
    tar.addfile(info, io.BytesIO(body))
"""


@pytest.fixture
def fake_npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An `npm` on PATH that serves plotly.js-gl3d-dist-min tarballs; returns its log file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    npm = bin_dir / "npm"
    npm.write_text(FAKE_NPM.format(python=sys.executable))
    npm.chmod(npm.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "npm.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NPM_LOG", str(log))
    monkeypatch.setenv("FAKE_BUNDLE_VERSION", get_plotlyjs_version())
    return log


def test_the_full_bundle_is_the_plotly_package_s_under_a_hashed_name(tmp_path: Path) -> None:
    assets = static.ensure_plotly_js(tmp_path)
    content = get_plotlyjs().encode()
    digest = hashlib.sha256(content).hexdigest()
    (written,) = tmp_path.glob("plotly-*-full-*.min.js")
    assert written.read_bytes() == content
    assert digest.startswith(written.name.split("-")[-1].removesuffix(".min.js"))
    assert get_plotlyjs_version() in written.name
    assert assets.full == f"app/static/{written.name}" and assets.gl3d is None


def test_install_fetches_the_gl3d_bundle_of_the_same_version(
    tmp_path: Path, fake_npm: Path
) -> None:
    path = static.fetch_gl3d(tmp_path)
    version = get_plotlyjs_version()
    assert fake_npm.read_text().split() == [f"plotly.js-gl3d-dist-min@{version}"]
    content = path.read_bytes()
    assert content.startswith(b"/**\n* plotly.js (gl3d - minified) v" + version.encode())
    assert hashlib.sha256(content).hexdigest().startswith(path.name.split("-")[-1][:16])
    assets = static.ensure_plotly_js(tmp_path)
    assert assets.gl3d == f"app/static/{path.name}"


def test_a_bundle_of_another_version_is_refused(
    tmp_path: Path, fake_npm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_BUNDLE_VERSION", "0.0.1")
    with pytest.raises(static.PlotlyBundleError, match="not plotly.js gl3d"):
        static.fetch_gl3d(tmp_path)
    assert not list(tmp_path.glob("plotly-*-gl3d-*"))


def test_without_npm_the_full_bundle_serves_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert static.fetch_gl3d(tmp_path) is None
    assets = static.ensure_plotly_js(tmp_path)
    assert assets.gl3d is None and (tmp_path / Path(assets.full).name).is_file()


def test_a_new_bundle_replaces_the_old_one(
    tmp_path: Path, fake_npm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = static.fetch_gl3d(tmp_path)
    monkeypatch.setenv("FAKE_BUNDLE_EXTRA", "// a rebuilt bundle")
    second = static.fetch_gl3d(tmp_path)
    assert second != first and second.is_file() and not first.exists()
    assert b"a rebuilt bundle" in second.read_bytes()
