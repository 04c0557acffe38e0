"""The gallery page (headforms.gallery) of tiny models: one file that needs nothing beyond
itself (plotly.js inside, no URL it loads), whose data are the analysis's: the figures of the
dashboard's builders, the head table, the spectra, and for a RoPE model each position's
profile values and parities, from which the page rebuilds the animated figures' frames."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import numpy as np
import pytest
import tiny_models
from plotly.offline import get_plotlyjs

from headforms import analyze
from headforms.cli import main
from headforms.engine import sweep
from headforms.forms import PARITY_LABELS
from headforms.gallery import gallery_html
from headforms.model_analysis import model_baseline


def page_data(page: str) -> dict:
    match = re.search(r'<script type="application/json" id="gallery-data">(.*?)</script>', page)
    assert match is not None
    return json.loads(match.group(1))


def unpack(packed: dict) -> np.ndarray:
    dtype = {"float32": "<f4", "uint8": "u1"}[packed["dtype"]]
    raw = base64.b64decode(packed["bytes"])
    return np.frombuffer(raw, dtype=dtype).reshape(packed["shape"])


@pytest.fixture(scope="module")
def rope_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("gallery") / "mistral"
    tiny_models.build("mistral", directory, seed=4)
    return directory


def test_a_rope_models_page_holds_every_position(rope_model: Path):
    analysis = analyze(str(rope_model))
    paths = sweep(str(rope_model), rope_positions="0:12")
    page = gallery_html(analysis, paths, model_baseline(analysis.card))
    assert get_plotlyjs() in page  # plotly.js inside: nothing to fetch
    without_plotly = page.replace(get_plotlyjs(), "")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", without_plotly)
    assert page.count("</script>") == 3  # plotly.js, the data, the page's script: none cut short
    data = page_data(page)
    assert set(data["figures"]) == {"simplex", "triangle", "energy", "pairing", "parity"}
    assert all("frames" not in figure for figure in data["figures"].values())
    frames = data["frames"]
    assert frames["positions"] == list(range(13))
    parity = unpack(frames["parity"])
    expected = paths.stacked("parity")
    for index, label in enumerate(PARITY_LABELS):
        assert ((parity == index) == (expected == label)).all()
    for view, columns in (("simplex", "abcd"), ("triangle", ("b_sym", "c_sym", "d_sym"))):
        values = unpack(frames[view]["values"])
        reference = np.stack([paths.stacked(c).astype(float) for c in columns], axis=-1)
        np.testing.assert_allclose(values, reference, rtol=1e-6, atol=1e-7)
        assert frames[view]["names"] == [str(d) for d in range(13)]
    table = data["table"]
    assert len(table["rows"]) == analysis.card.total_heads
    energy = np.array([row[table["columns"].index("energy")] for row in table["rows"]])
    np.testing.assert_allclose(energy, analysis.heads["energy"], rtol=1e-5)
    eig = unpack(data["spectra"])
    np.testing.assert_allclose(eig, analysis.spectra["eig_s"], rtol=1e-6, atol=1e-6)
    heatmap = data["figures"]["energy"]
    assert [t["name"] for t in heatmap["data"]] == ["trained", "baseline"]


def test_export_writes_the_page_and_refuses_what_it_cannot_do(rope_model: Path, tmp_path, capsys):
    out = tmp_path / "tiny.html"
    assert main(["export", str(rope_model), "--html", str(out), "--rope-positions", "0:3"]) == 0
    data = page_data(out.read_text(encoding="utf-8"))
    assert data["frames"]["positions"] == [0, 1, 2, 3]
    assert main(["export", str(rope_model), "--html", str(out), "--no-frames"]) == 0
    assert page_data(out.read_text(encoding="utf-8"))["frames"] is None
    assert main(["export", str(rope_model), "--html", str(tmp_path / "x.csv")]) == 2
    assert "accepted: .html" in capsys.readouterr().err
    both = ["--no-frames", "--rope-positions", "0:3"]
    assert main(["export", str(rope_model), "--html", str(out), *both]) == 2
    assert "not both" in capsys.readouterr().err


def test_a_published_table_without_spectra_or_n_has_a_page_too(tmp_path: Path, capsys):
    from published_tables import author_table

    table = tmp_path / "head_statistics.csv"
    author_table("m", 2, 3, 3, 8, 0).to_csv(table, index=False)
    out = tmp_path / "m.html"
    assert main(["export", f"{table}::m", "--html", str(out)]) == 0
    data = page_data(out.read_text(encoding="utf-8"))
    assert data["spectra"] is None and data["frames"] is None
    assert [t["name"] for t in data["figures"]["pairing"]["data"]] == ["trained"]  # no N
    assert main(["export", f"{table}::m", "--html", str(out), "--rope-positions", "0:3"]) == 2
    assert "has no RoPE positions to animate" in capsys.readouterr().err
