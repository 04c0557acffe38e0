"""Matched controls: random changes of a head's form as large as an edit's, where "as large"
is one of three matches (:class:`Match`; pure numpy).

An edit changes a head's form by ``D_d = M_d - L_d``. Control k of a head changes it by a random
form instead, drawn from ``numpy.random.default_rng([seed, layer, head, k])`` (the same control
for the same head whatever else is edited, on every machine), of ``rho``, the rank of ``D_0``
(:func:`headforms.interventions.algebra.change_rank`):

- ``scores`` (the default): ``Z = W G W^T`` with ``W`` an orthonormal basis of the head's span
  (the columns of ``[K^T, Q^T]``, where every edit of the form lives) and ``G = P^T O``
  (``P, O``: ``rho x r`` standard Gaussian), times **one factor** chosen so that the RMS over
  the text's visible query/key pairs of the control's change of the head's pre-softmax scores
  (the model's scale and QK-norm factors included) equals the edit's. The edit's RMS is taken
  in the edit's own pass, the control's in its own (:class:`ScoreLedger`): for a joint edit each
  head's control is matched on that head's own scores, as the model computes them.
- ``span``: the same ``W G W^T``, scaled at each relative position d so that ``||Z_d||_F =
  ||D_d||_F`` (the Frobenius match inside the span).
- ``frobenius``: ``Z = P^T O`` with ``P, O`` (``rho x N``) standard Gaussian over all N input
  dimensions, ``||Z_d||_F = ||D_d||_F`` at each d (headforms' first controls).

The attention input is far from isotropic and a form lives in its head's span, so the same
Frobenius size over N dimensions moves the scores much less than the edit does; ``scores``
matches what the model feels. A control's direction is the same at every d (a random form has
no rotation of its own to follow). Its bilinear part is ``x_j^T Z_d x_i = s_d (P' x_j) . (O'
x_i)`` with ``P' = P W^T`` (or ``P``), ``s_d`` its scale.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from ..errors import OptionError


class Match(Enum):
    """What a matched control has in common with the edit (module doc)."""

    SCORES = "scores"
    SPAN = "span"
    FROBENIUS = "frobenius"


MATCHES: tuple[str, ...] = tuple(match.value for match in Match)
DEFAULT_MATCH = Match.SCORES
MATCH_SUMMARIES = {
    Match.SCORES: "a random form in the head's span, with the edit's RMS change of the scores",
    Match.SPAN: "a random form in the head's span, with the edit's Frobenius size at every d",
    Match.FROBENIUS: "a random form over all N input dimensions, the edit's Frobenius size",
}


def match_named(name: object) -> Match:
    """The match called ``name`` (or a :class:`Match`), or a one-line :class:`OptionError`."""
    if isinstance(name, Match):
        return name
    if isinstance(name, str) and name in MATCHES:
        return Match(name)
    raise OptionError(f"unknown match {name!r}; accepted: " + ", ".join(MATCHES))


def control_factors(
    seed: int,
    layer: int,
    head: int,
    index: int,
    rank: int,
    dim: int,
    out: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(P, O)`` of control ``index`` of a head: ``rank x dim`` standard Gaussian, seeded
    (``out``: two C-contiguous ``rank x dim`` float64 arrays to draw them into, the same
    values)."""
    rng = np.random.default_rng([seed, layer, head, index])
    if out is None:
        return rng.standard_normal((rank, dim)), rng.standard_normal((rank, dim))
    for array in out:
        if array.shape != (rank, dim):
            raise ValueError(f"out arrays of shape {(rank, dim)} expected, got {array.shape}")
        rng.standard_normal(out=array)
    return out


@dataclass(frozen=True)
class ControlSeed:
    """What draws one control's factors (:func:`control_factors`): a few numbers, so that a
    batch of many controls holds no ``rank x N`` matrices until each is used; ``basis``: the
    head's span (``N x r``) for a control inside it, None for one over all N dimensions."""

    seed: int
    layer: int
    head: int
    index: int
    rank: int
    model_dim: int
    basis: np.ndarray | None = field(default=None, compare=False, repr=False)

    def factors(self) -> tuple[np.ndarray, np.ndarray]:
        """``(P', O')`` in the N input dimensions (``rank x N``)."""
        if self.basis is None:
            return control_factors(
                self.seed, self.layer, self.head, self.index, self.rank, self.model_dim
            )
        p, o = control_factors(
            self.seed, self.layer, self.head, self.index, self.rank, self.basis.shape[1]
        )
        return p @ self.basis.T, o @ self.basis.T


@dataclass(frozen=True)
class ControlForm:
    """A control's change ``s_d P'^T O'`` at each relative position d of ``steps``."""

    p: np.ndarray
    o: np.ndarray
    steps: np.ndarray
    scales: np.ndarray

    @property
    def size(self) -> float:
        """``||P'^T O'||_F`` (from ``rank x rank`` Gram matrices)."""
        return float(
            np.sqrt(max(float(np.einsum("ab,ab->", self.p @ self.p.T, self.o @ self.o.T)), 0.0))
        )

    @classmethod
    def matched(
        cls, p: np.ndarray, o: np.ndarray, steps: np.ndarray, change_norms: np.ndarray
    ) -> ControlForm:
        """The control whose norm at each d of ``steps`` is ``change_norms`` (a zero form when
        the edit changes nothing, rank 0)."""
        size = cls(p, o, np.asarray(steps), np.ones(len(steps))).size
        scales = np.zeros(len(steps)) if size == 0.0 else np.asarray(change_norms) / size
        return cls(p, o, np.asarray(steps), scales)

    @classmethod
    def unit(cls, p: np.ndarray, o: np.ndarray) -> ControlForm:
        """The control of scale 1 at every d (scaled afterwards on the scores)."""
        return cls(p, o, np.zeros(1, np.int64), np.ones(1))

    @classmethod
    def drawn(cls, seed: ControlSeed, steps: np.ndarray, change_norms: np.ndarray) -> ControlForm:
        """The Frobenius-matched control of ``seed`` (its Gaussian factors drawn now)."""
        return cls.matched(*seed.factors(), steps, change_norms)

    def dense(self, step_index: int) -> np.ndarray:
        """``Z_d`` as an ``N x N`` matrix (for checks)."""
        return self.scales[step_index] * (self.p.T @ self.o)

    def delta(self, x: np.ndarray, causal: bool) -> np.ndarray:
        """``x_j^T Z_d x_i`` for tokens ``x`` (``T x N``) at positions ``0 .. T-1`` (0 for a key
        a causal query does not see)."""
        length = len(x)
        products = (x @ self.o.T) @ (x @ self.p.T).T  # [i, j] = (O x_i) . (P x_j)
        if len(self.steps) == 1:
            scale = np.full((length, length), self.scales[0])
        else:
            index = np.subtract.outer(np.arange(length), np.arange(length)) - int(self.steps[0])
            inside = (index >= 0) & (index < len(self.steps))
            scale = np.where(inside, self.scales[np.clip(index, 0, len(self.steps) - 1)], 0.0)
        return np.where(visible_pairs(length, causal), products * scale, 0.0)


def visible_pairs(length: int, causal: bool) -> np.ndarray:
    """The query/key pairs a head sees: ``j <= i`` (causal) or every pair."""
    if causal:
        return np.tril(np.ones((length, length), bool))
    return np.ones((length, length), bool)


class ScoreLedger:
    """Sums of squares of score changes over visible pairs, by (tag, layer, head): what each
    sequence's edit and controls changed in each head's scores, in their own passes, so that a
    scores-matched control reads the edit's RMS (the edit's sequence runs first) and every row
    reports both (module doc)."""

    def __init__(self) -> None:
        self._sums: dict[tuple, tuple[float, int]] = {}

    def record(self, key: tuple, delta: np.ndarray, visible: np.ndarray) -> None:
        seen = delta[visible]
        self.record_sum(key, float(np.sum(seen * seen)), int(seen.size))

    def record_sum(self, key: tuple, total: float, count: int) -> None:
        """Record a change by its sum of squares over ``count`` visible pairs."""
        self._sums[key] = (float(total), int(count))

    def rms(self, key: tuple) -> float:
        """The RMS of one head's recorded change (KeyError before it is recorded)."""
        total, count = self._sums[key]
        return float(np.sqrt(total / count)) if count else 0.0

    def tag_rms(self, tag: tuple) -> float:
        """The RMS over every head recorded under ``tag`` (the key's first part), NaN for
        none."""
        parts = [value for key, value in self._sums.items() if key[0] == tag]
        count = sum(c for _, c in parts)
        return float(np.sqrt(sum(t for t, _ in parts) / count)) if count else float("nan")


SPREAD_PERCENTILES = (10.0, 90.0)
"""The controls' spread: these percentiles of their values."""
