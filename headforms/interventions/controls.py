"""Matched controls: random changes of a head's form as large as an edit's (pure numpy).

An edit changes a head's form by ``D_d = M_d - L_d``. A control changes it by a random form of
the same Frobenius norm instead: ``Z = P^T O`` with ``P, O`` (``rho x N``) independent standard
Gaussian, ``rho`` the rank of ``D_0`` (:func:`headforms.interventions.algebra.change_rank`),
drawn from ``numpy.random.default_rng([seed, layer, head, index])`` (the same control for the
same head whatever else is edited, on every machine). **The same size** is exact at every
relative position d: the control added at d is ``Z_d = (||D_d|| / ||Z||) Z``, so
``||Z_d|| = ||D_d||`` although a RoPE head's change differs from one d to the next; the control's
direction is the same at every d (a random form has no rotation of its own to follow). Its
bilinear part is ``x_j^T Z_d x_i = s_d (P x_j) . (O x_i)`` with ``s_d = ||D_d|| / ||Z||``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def control_factors(
    seed: int, layer: int, head: int, index: int, rank: int, model_dim: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(P, O)`` of control ``index`` of a head: ``rank x N`` standard Gaussian, seeded."""
    rng = np.random.default_rng([seed, layer, head, index])
    return rng.standard_normal((rank, model_dim)), rng.standard_normal((rank, model_dim))


@dataclass(frozen=True)
class ControlSeed:
    """What draws one control's factors (:func:`control_factors`): a few numbers, so that a
    batch of many controls holds no ``rank x N`` matrices until each is used."""

    seed: int
    layer: int
    head: int
    index: int
    rank: int
    model_dim: int

    def factors(self) -> tuple[np.ndarray, np.ndarray]:
        return control_factors(
            self.seed, self.layer, self.head, self.index, self.rank, self.model_dim
        )


@dataclass(frozen=True)
class ControlForm:
    """A control's change ``s_d P^T O`` at each relative position d of ``steps``."""

    p: np.ndarray
    o: np.ndarray
    steps: np.ndarray
    scales: np.ndarray

    @classmethod
    def matched(
        cls, p: np.ndarray, o: np.ndarray, steps: np.ndarray, change_norms: np.ndarray
    ) -> ControlForm:
        """The control whose norm at each d of ``steps`` is ``change_norms`` (a zero form when
        the edit changes nothing, rank 0)."""
        size = np.sqrt(max(float(np.einsum("ab,ab->", p @ p.T, o @ o.T)), 0.0))
        scales = np.zeros(len(steps)) if size == 0.0 else np.asarray(change_norms) / size
        return cls(p, o, np.asarray(steps), scales)

    @classmethod
    def drawn(cls, seed: ControlSeed, steps: np.ndarray, change_norms: np.ndarray) -> ControlForm:
        """The matched control of ``seed`` (its Gaussian factors drawn now)."""
        return cls.matched(*seed.factors(), steps, change_norms)

    def dense(self, step_index: int) -> np.ndarray:
        """``Z_d`` as an ``N x N`` matrix (for checks)."""
        return self.scales[step_index] * (self.p.T @ self.o)

    def delta(self, x: np.ndarray, causal: bool) -> np.ndarray:
        """``x_j^T Z_d x_i`` for tokens ``x`` (``T x N``) at positions ``0 .. T-1``."""
        length = len(x)
        products = (x @ self.o.T) @ (x @ self.p.T).T  # [i, j] = (O x_i) . (P x_j)
        if len(self.steps) == 1:
            scale = np.full((length, length), self.scales[0])
        else:
            index = np.subtract.outer(np.arange(length), np.arange(length)) - int(self.steps[0])
            inside = (index >= 0) & (index < len(self.steps))
            scale = np.where(inside, self.scales[np.clip(index, 0, len(self.steps) - 1)], 0.0)
        return products * scale


SPREAD_PERCENTILES = (10.0, 90.0)
"""The controls' spread: these percentiles of their values."""


def control_summary(edit_value: float, values: np.ndarray) -> dict[str, float]:
    """The controls' median and 10th and 90th percentiles, and the edit's rank among them:
    how many controls changed the measure less than the edit did (0 .. K); NaN without
    controls."""
    values = np.asarray(values, np.float64)
    if values.size == 0 or not np.isfinite(edit_value):
        nothing = float("nan")
        return {
            "control_median": nothing,
            "control_p10": nothing,
            "control_p90": nothing,
            "control_rank": nothing,
        }
    low, high = np.percentile(values, SPREAD_PERCENTILES)
    return {
        "control_median": float(np.median(values)),
        "control_p10": float(low),
        "control_p90": float(high),
        "control_rank": float(np.count_nonzero(values < edit_value)),
    }
