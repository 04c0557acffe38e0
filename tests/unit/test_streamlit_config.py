"""The Streamlit settings the dashboard ships (``.streamlit/config.toml``, also in the wheel and
the image): the ones its speed and safety depend on."""

from __future__ import annotations

import tomllib
from pathlib import Path

CONFIG = Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml"


def settings() -> dict:
    return tomllib.loads(CONFIG.read_text(encoding="utf-8"))


def test_a_full_garbage_collection_after_every_script_run() -> None:
    # What a run or a closed session leaves in reference cycles is freed at once; the server
    # keeps these passes cheap by freezing its start-up heap (headforms/heap.py).
    assert settings()["runner"]["postScriptGC"] is True


def test_static_files_served_and_no_file_watcher() -> None:
    server = settings()["server"]
    assert server["enableStaticServing"] is True  # plotly.js comes from static/
    assert server["fileWatcherType"] == "none"
    assert server["runOnSave"] is False
