"""plotly.js as static files of the app (``static/``, served at ``app/static/``).

Two bundles of the plotly.js version that the installed plotly package ships:

* ``full``: the package's own bundle (``plotly.offline.get_plotlyjs()``, 4.8 MB), written here
  whenever it is missing, so the dashboard always works offline;
* ``gl3d``: the npm package ``plotly.js-gl3d-dist-min`` of the same version (1.75 MB: scatter,
  scatter3d, mesh3d), fetched with npm by ``scripts/install.sh`` (``python -m ui.static
  --fetch-gl3d``), never at run time. It compiles in about a third of the time, so the 3D
  simplex is drawn sooner; without npm the full bundle does everything.

File names carry the version and a content hash (``plotly-4.1.1-gl3d-<sha>.min.js``): a new
plotly package gets new URLs, so browsers may keep a bundle as long as they like (repeat visits
then skip the download and reuse V8's compiled code). The clickable plot component
(:mod:`ui.plot`) picks the gl3d bundle for figures made only of its trace types.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from headforms.store import write_atomic

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
URL_PREFIX = "app/static"
"""Where Streamlit serves ``static/`` (``server.enableStaticServing``), below the base URL."""

GL3D_PACKAGE = "plotly.js-gl3d-dist-min"
GL3D_MEMBER = "package/plotly-gl3d.min.js"
GL3D_TRACE_TYPES = ("scatter", "scatter3d", "mesh3d")
"""Trace types of the gl3d bundle that the dashboard uses (the bundle also has surfaces, cones,
volumes...)."""

NPM_TIMEOUT_S = 300

LOGGER = logging.getLogger(__name__)


class PlotlyBundleError(RuntimeError):
    """A fetched plotly.js bundle is not the expected one (wrong version or not a bundle)."""


@dataclass(frozen=True)
class PlotlyAssets:
    """URL paths (below the base URL) of the plotly.js bundles available to the browser."""

    version: str
    full: str
    gl3d: str | None


def plotly_version() -> str:
    """The plotly.js version bundled with the installed plotly package (e.g. ``4.1.1``)."""
    from plotly.offline import get_plotlyjs_version

    return get_plotlyjs_version()


def bundle_name(kind: str, version: str, content: bytes) -> str:
    """``plotly-<version>-<kind>-<sha256[:16]>.min.js``: a new content is a new name."""
    return f"plotly-{version}-{kind}-{hashlib.sha256(content).hexdigest()[:16]}.min.js"


def _existing(static_dir: Path, kind: str, version: str) -> Path | None:
    found = sorted(static_dir.glob(f"plotly-{version}-{kind}-*.min.js"))
    return found[-1] if found else None


def _install(static_dir: Path, kind: str, version: str, content: bytes) -> Path:
    """Write a bundle under its hashed name and remove older bundles of the same kind."""
    path = static_dir / bundle_name(kind, version, content)
    if not (path.is_file() and path.stat().st_size == len(content)):
        write_atomic(path, content)  # a concurrent reader never sees half a script
    for old in static_dir.glob(f"plotly-*-{kind}-*.min.js"):
        if old != path:
            old.unlink(missing_ok=True)
    return path


_ensured: dict[Path, PlotlyAssets] = {}


def ensure_plotly_js(static_dir: Path = STATIC_DIR) -> PlotlyAssets:
    """The bundles to serve: writes the full bundle from the plotly package if it is missing
    (once per process) and uses a gl3d bundle of the same version if the install fetched one.

    A read-only app directory (e.g. an image that did not generate the file at build time) is
    logged, not raised: the plots then say that plotly.js could not be loaded.
    """
    if static_dir in _ensured:
        return _ensured[static_dir]
    version = plotly_version()
    full = _existing(static_dir, "full", version)
    if full is None:
        from plotly.offline import get_plotlyjs

        content = get_plotlyjs().encode()
        full = static_dir / bundle_name("full", version, content)
        try:
            _install(static_dir, "full", version, content)
        except OSError as error:
            LOGGER.error("cannot write %s (%s): run `python -m ui.static` once", full, error)
    gl3d = _existing(static_dir, "gl3d", version)
    assets = PlotlyAssets(
        version=version,
        full=f"{URL_PREFIX}/{full.name}",
        gl3d=f"{URL_PREFIX}/{gl3d.name}" if gl3d else None,
    )
    _ensured[static_dir] = assets
    return assets


def check_bundle(content: bytes, version: str, kind: str = "gl3d") -> None:
    """Raise :class:`PlotlyBundleError` unless ``content`` is plotly.js ``kind`` ``version``
    (its banner reads ``plotly.js (gl3d - minified) v4.1.1``)."""
    banner = content[:300].decode("utf-8", "replace")
    if f"plotly.js ({kind}" not in banner or f" v{version}\n" not in banner:
        first = banner.strip().splitlines()[:2]
        raise PlotlyBundleError(f"not plotly.js {kind} v{version}: the file starts with {first}")


def fetch_gl3d(static_dir: Path = STATIC_DIR, npm: str = "npm") -> Path | None:
    """Fetch ``plotly.js-gl3d-dist-min`` of the plotly package's plotly.js version with npm
    (``npm pack``: the registry's tarball, no node_modules) into ``static/``. Returns the file,
    or None (with a warning) when npm is missing or fails: the full bundle then serves."""
    version = plotly_version()
    if shutil.which(npm) is None:
        LOGGER.warning("npm not found: the 3D plots use the full plotly.js bundle")
        return None
    with tempfile.TemporaryDirectory(prefix="hf-plotly-") as tmp:
        spec = f"{GL3D_PACKAGE}@{version}"
        try:
            subprocess.run(
                [npm, "pack", spec, "--silent", "--pack-destination", tmp],
                cwd=tmp,
                check=True,
                capture_output=True,
                timeout=NPM_TIMEOUT_S,
            )
        except (OSError, subprocess.SubprocessError) as error:
            detail = getattr(error, "stderr", b"") or b""
            LOGGER.warning("npm pack %s failed (%s) %s", spec, error, detail.decode()[-300:])
            return None
        tarballs = sorted(Path(tmp).glob("*.tgz"))
        if not tarballs:
            LOGGER.warning("npm pack %s wrote no tarball", spec)
            return None
        with tarfile.open(tarballs[0], "r:gz") as archive:
            member = archive.extractfile(GL3D_MEMBER)
            if member is None:
                raise PlotlyBundleError(f"{tarballs[0].name} has no {GL3D_MEMBER}")
            content = member.read()
    check_bundle(content, version)
    return _install(static_dir, "gl3d", version, content)


def main(argv: list[str] | None = None) -> None:
    """``python -m ui.static [--fetch-gl3d]``: write the bundles now (install, image build)."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument(
        "--fetch-gl3d", action="store_true", help="also fetch the gl3d bundle with npm if missing"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.fetch_gl3d and _existing(STATIC_DIR, "gl3d", plotly_version()) is None:
        fetch_gl3d()
    assets = ensure_plotly_js()
    print(f"plotly.js {assets.version}: {assets.full}, gl3d: {assets.gl3d or 'not installed'}")


if __name__ == "__main__":
    main()
