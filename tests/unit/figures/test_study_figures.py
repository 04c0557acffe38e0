"""The study's figures on synthetic tables: each whole-model edit against its controls' spread,
and each head's cost against the dose-response of the controls."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from headforms.figures.study import dose_response_figure, whole_model_figure
from headforms.figures.style import FigureInputError


def test_the_whole_model_figure_draws_each_edit_over_the_texts() -> None:
    table = pd.DataFrame(
        {
            "edit": ["flip", "flip", "zero"],
            "text": ["declaration", "all", "all"],
            "delta_ce": [9.0, 6.0, 5.0],
            "low": [8.0, 5.5, 4.0],
            "high": [10.0, 6.5, 6.0],
            "control_median": [7.0, 8.0, 3.0],
            "control_p10": [6.0, 7.0, 2.0],
            "control_p90": [8.0, 9.0, 4.0],
            "p_value": [0.5, 0.97, 0.03],
        }
    )
    fig = whole_model_figure(table)
    bars, medians, edits = fig.data
    assert list(edits.x) == [6.0, 5.0]  # the rows over every text
    assert list(edits.y) == ["flip (p 0.970)", "zero (p 0.030)"]
    assert list(bars.base) == [7.0, 2.0] and list(bars.x) == [2.0, 2.0]
    assert list(edits.error_x.array) == [0.5, 1.0]
    with pytest.raises(FigureInputError):
        whole_model_figure(table.iloc[0:0])


def test_the_dose_response_figure_puts_heads_over_their_controls() -> None:
    heads = pd.DataFrame(
        {
            "edit": ["zero", "zero", "flip"],
            "layer": [0, 1, 0],
            "head": [0, 0, 0],
            "parity": ["I+", "II", "I+"],
            "cost": [0.1, 0.2, 0.3],
            "score_rms": [1.0, 2.0, 3.0],
            "p_value": [0.5, 0.02, 0.1],
            "measure": "delta_ce",
        }
    )
    controls = pd.DataFrame(
        {"layer": [0, 1], "head": [0, 0], "score_rms": [1.0, 2.0], "cost": [0.05, 0.1]}
    )
    fig = dose_response_figure(heads, controls, "zero")
    grey, edits = fig.data
    assert list(grey.x) == [1.0, 2.0] and list(edits.y) == [0.1, 0.2]
    assert fig.layout.xaxis.type == "log"
    assert np.array(edits.customdata)[1, 3] == 0.02
