"""The edits an intervention applies to a head, by name: edits of its form, and two reference
points that act on its output instead.

A form edit replaces the head's form ``L_d`` (``x_j^T L_d x_i`` is the bilinear part of the logit
of query i and key j, ``d = i - j``) by ``M_d = T(L_d)`` at every relative position d, with
``S_d = (L_d + L_d^T)/2`` and ``A_d = (L_d - L_d^T)/2``:

- ``identity``: ``M = L`` (reproduces the model: the check of the machinery);
- ``symmetric``: ``S``; ``antisymmetric``: ``A``; ``transpose``: ``L^T = S - A``;
- ``flip``: ``A - S = -L^T`` (the lobes swap: c <-> d, Type I+ <-> I-);
- ``zero``: ``M = 0`` (the head attends uniformly to the keys it may see, biases aside);
- ``rank1``: the best rank-one approximation of ``L_d`` (its top singular pair): on Theta;
- ``balanced``: ``A + H``, ``H`` with ``S``'s eigenvectors, its k-th positive and k-th negative
  eigenvalues both replaced by ``+-min(lambda_+k, lambda_-k)``: the excess lobe dropped
  (c = d = 0).

The first six are linear: ``M = alpha L + beta L^T`` (:attr:`Edit.coefficients`). The two
reference points do not touch the form: ``output_zero`` sets the head's output (its attention-
weighted values, before the output projection) to zero, ``output_mean`` to its mean over the
text's positions in the unedited model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..errors import OptionError

EditKind = Literal["linear", "spectral", "output"]


@dataclass(frozen=True)
class Edit:
    """One edit: its name, kind and what it does; a linear edit's ``M = alpha L + beta L^T``."""

    name: str
    kind: EditKind
    summary: str
    alpha: float = 0.0
    beta: float = 0.0

    @property
    def coefficients(self) -> tuple[float, float]:
        """``(alpha, beta)`` of a linear edit ``M = alpha L + beta L^T``."""
        if self.kind != "linear":
            raise ValueError(f"{self.name} is not a linear edit")
        return self.alpha, self.beta

    @property
    def edits_form(self) -> bool:
        """Whether the edit replaces the form (else it acts on the head's output)."""
        return self.kind != "output"


EDITS: dict[str, Edit] = {
    edit.name: edit
    for edit in (
        Edit("identity", "linear", "the form unchanged (reproduces the model)", 1.0, 0.0),
        Edit("symmetric", "linear", "the symmetric part S", 0.5, 0.5),
        Edit("antisymmetric", "linear", "the antisymmetric part A", 0.5, -0.5),
        Edit("transpose", "linear", "the transpose L^T = S - A", 0.0, 1.0),
        Edit("flip", "linear", "A - S: the lobes swap (I+ <-> I-)", 0.0, -1.0),
        Edit("zero", "linear", "M = 0: uniform attention (biases aside)", 0.0, 0.0),
        Edit("rank1", "spectral", "the best rank-one approximation (on Theta)"),
        Edit("balanced", "spectral", "A + S with the excess lobe dropped (c = d = 0)"),
        Edit("output_zero", "output", "the head's output set to zero"),
        Edit("output_mean", "output", "the head's output set to its mean over positions"),
    )
}
"""Every edit by name, in the order help texts list them."""

FORM_EDITS = tuple(name for name, edit in EDITS.items() if edit.edits_form)
"""The names of the edits of the form (the ones matched controls apply to)."""


def edit_named(name: object) -> Edit:
    """The edit called ``name``, or a one-line :class:`OptionError` naming those accepted."""
    if isinstance(name, str) and name in EDITS:
        return EDITS[name]
    raise OptionError(f"unknown edit {name!r}; accepted: " + ", ".join(EDITS))
