"""The "add an edit" checklist of docs/CONTRIBUTING.md, proven: every edit of the edit table has
its dense reference (tests/helpers/dense_edits.py, against which the integration tests compare
every form edit), its way of changing the logits (linear coefficients, or a line of
``SPECTRAL_DELTAS``), its size and edited form (``change_norms``, ``edited_reduced``), and its
line in docs/interventions.md; an edit of the output has its hook's case."""

from __future__ import annotations

import numpy as np
import pytest
from dense_edits import dense_edit, dense_form
from repo import REPO

from headforms.interventions.algebra import HeadFactors, change_norms, edited_reduced
from headforms.interventions.changes import SPECTRAL_DELTAS, bilinear_delta
from headforms.interventions.edits import EDITS, FORM_EDITS

DOC = (REPO / "docs" / "interventions.md").read_text(encoding="utf-8")


def head() -> HeadFactors:
    rng = np.random.default_rng(2)
    return HeadFactors(rng.standard_normal((3, 10)), rng.standard_normal((3, 10)))


@pytest.mark.parametrize("name", list(EDITS))
def test_every_edit_has_its_line_in_the_docs(name: str) -> None:
    assert f"| `{name}` |" in DOC, f"docs/interventions.md has no table row for {name}"


@pytest.mark.parametrize("name", FORM_EDITS)
def test_every_form_edit_has_a_dense_reference_and_its_algebra(name: str) -> None:
    """The dense reference knows it, and headforms' change, size and edited form agree with it
    (a new edit missing from any of them fails here)."""
    factors = head()
    form = dense_form(factors.q, factors.k, None, 0)
    want = dense_edit(form, name) - form
    edit = EDITS[name]
    if edit.kind == "spectral":
        assert name in SPECTRAL_DELTAS
    x = np.random.default_rng(3).standard_normal((5, 10))
    got = bilinear_delta(factors, x, edit, causal=False)
    np.testing.assert_allclose(got, x @ want.T @ x.T, atol=1e-9)
    norms = change_norms(factors, edit, np.zeros(1, np.int64))
    assert norms[0] == pytest.approx(np.linalg.norm(want), abs=1e-9)
    reduced, basis = edited_reduced(factors, edit)
    np.testing.assert_allclose(basis.w @ reduced @ basis.w.T, dense_edit(form, name), atol=1e-9)


def test_the_dense_reference_refuses_an_edit_it_does_not_know() -> None:
    with pytest.raises(ValueError):
        dense_edit(np.eye(3), "mystery")
