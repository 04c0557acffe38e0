"""plotly.js as a static file of the app (``static/plotly.min.js``, served at ``app/static/``).

The clickable plot component loads plotly.js once per browser session from this file; it is
generated from the installed plotly package (so versions always match) and never committed:
``scripts/install.sh`` runs ``python -c "import ui.static as s; s.ensure_plotly_js()"`` and
``app.py`` calls :func:`ensure_plotly_js` once per server process.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
PLOTLY_JS = STATIC_DIR / "plotly.min.js"
PLOTLY_JS_URL_PATH = "app/static/plotly.min.js"
"""Where Streamlit serves the file (``server.enableStaticServing``), below the base URL."""


LOGGER = logging.getLogger(__name__)
_ensured: set[Path] = set()


def ensure_plotly_js(path: Path = PLOTLY_JS) -> Path:
    """Write plotly.js of the installed plotly package to ``path`` unless it is already there.

    The file is written to a temporary name and renamed, so a concurrent reader (the static
    file server, another session) never sees a half-written script. A read-only app directory
    (e.g. a container image that did not generate the file at build time) is logged, not
    raised: the plots then say that plotly.js could not be loaded.
    """
    if path in _ensured:  # once per process: app.py calls this on every script run
        return path
    from plotly.offline import get_plotlyjs

    source = get_plotlyjs().encode()
    if not (path.is_file() and path.stat().st_size == len(source)):
        try:
            _write_atomically(path, source)
        except OSError as error:
            LOGGER.error("cannot write %s (%s): generate it once, see ui/static.py", path, error)
    _ensured.add(path)
    return path


def _write_atomically(path: Path, source: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".plotly-", suffix=".js")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(source)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


if __name__ == "__main__":  # `python -m ui.static`: generate it now (Docker build, install)
    print(ensure_plotly_js())
