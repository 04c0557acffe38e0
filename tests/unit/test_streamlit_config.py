"""The Streamlit settings the dashboard ships (``.streamlit/config.toml``, also in the wheel and
the image): the ones its speed and safety depend on."""

from __future__ import annotations

import tomllib
from pathlib import Path

CONFIG = Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml"


def settings() -> dict:
    return tomllib.loads(CONFIG.read_text(encoding="utf-8"))


def test_no_full_garbage_collection_after_every_script_run() -> None:
    # Streamlit's default gc.collect(2) after each run cost a visit most of its server time
    # (about 0.1 s a run on the server's heap; benchmarks/README.md, hosted server under attack).
    assert settings()["runner"]["postScriptGC"] is False


def test_static_files_served_and_no_file_watcher() -> None:
    server = settings()["server"]
    assert server["enableStaticServing"] is True  # plotly.js comes from static/
    assert server["fileWatcherType"] == "none"
    assert server["runOnSave"] is False
