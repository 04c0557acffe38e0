"""The study's tables from synthetic sweeps: the dose-response null of each head's edit (the
nearest controls in log score RMS, against a loop written from the definition), its options'
pass count, and the whole-model rows over several texts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from headforms.errors import OptionError
from headforms.study import DOSE_NEIGHBOURS, dose_response
from headforms.study_options import StudyOptions


def sweeps(rng: np.random.Generator) -> pd.DataFrame:
    rows = []
    for text in ("a", "b"):
        for edit in ("zero", "flip"):
            for layer in range(8):
                for head in range(4):
                    dose = float(np.exp(rng.normal()))
                    rows.append(
                        {
                            "edit": edit, "text": text, "layer": layer, "head": head,
                            "parity": "II", "delta_ce": dose**2 + rng.normal(0, 0.1),
                            "kl": 0.0, "score_rms": dose,
                            "control_delta_ce": [dose**2 * rng.uniform(0.5, 1.5)],
                            "control_score_rms_each": [dose],
                        }
                    )  # fmt: skip
    return pd.DataFrame(rows)


def test_each_heads_null_is_the_nearest_controls_in_log_dose() -> None:
    table = sweeps(np.random.default_rng(1))
    heads, points = dose_response(table, "delta_ce")
    assert len(heads) == 2 * 8 * 4 and len(points) == len(heads)
    log_dose = np.log(points["score_rms"].to_numpy())
    for _, row in heads.sample(10, random_state=0).iterrows():
        nearest = np.argsort(np.abs(log_dose - np.log(row["score_rms"])), kind="stable")
        null = points["cost"].to_numpy()[nearest[:DOSE_NEIGHBOURS]]
        assert row["expected"] == pytest.approx(np.median(null))
        assert row["excess"] == pytest.approx(row["cost"] - np.median(null))
        assert row["p_value"] == pytest.approx(((null >= row["cost"]).sum() + 1) / (len(null) + 1))
    one = table[(table["edit"] == "zero") & (table["layer"] == 0) & (table["head"] == 0)]
    first = heads[(heads["edit"] == "zero") & (heads["layer"] == 0) & (heads["head"] == 0)]
    assert first["cost"].iloc[0] == pytest.approx(one["delta_ce"].mean())  # over the texts


def test_the_options_count_their_passes_and_refuse_bad_edits() -> None:
    options = StudyOptions(texts=(("t", "some text"),), controls=32, head_controls=1)
    # identity and the output edits have no controls; 7 form edits with 32 each
    assert options.passes(270) == 7 * 33 + 3 + 3 * 270 * 2
    with pytest.raises(OptionError, match="per-head sweep edits the form"):
        StudyOptions(sweep_edits=("output_zero",))
    with pytest.raises(OptionError, match="unknown edit"):
        StudyOptions(whole_edits=("sideways",))
    assert "--controls 32" in options.command("smollm2-135m")
