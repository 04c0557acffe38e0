"""An edit read against its matched controls, as a referee reads it (pure numpy).

A measure is a mean over positions of per-position terms (a next-token loss change, a KL, a
cosine distance): the edit's terms and each control's, on one or several texts. The verdict:

- ``value``: the edit's measure (on several texts: the mean of the per-text means);
- ``control_median``, ``control_p10``, ``control_p90``: the controls' median and spread;
- ``controls_smaller``: how many controls changed the measure less **in absolute value** than
  the edit did (0 .. K: an edit that lowers the loss a lot changed it more than controls that
  nudge it, whatever the signs);
- ``p_value``: the empirical one-sided p-value that the edit costs no more than a control,
  ``(#{controls >= value} + 1) / (K + 1)`` on the signed measure (1/(K+1) at best: K = 32 reaches
  0.03, K = 64 0.015);
- ``effect``: the value over the controls' median (NaN when that median is not positive: a
  ratio to a gain or to nothing says nothing);
- ``low``, ``high``: a 95% interval of the value, and ``excess_low``, ``excess_high`` of the
  value minus the controls' median, from a moving-block bootstrap over each text's positions
  (:data:`BLOCK` consecutive positions per block, drawn with wrap-around, the same positions
  for the edit and every control; several texts are resampled each within itself, then
  averaged), :data:`RESAMPLES` resamples seeded by the request's seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np

BLOCK = 8
"""Consecutive positions per bootstrap block (neighbouring tokens' losses are correlated)."""
RESAMPLES = 2000
"""Bootstrap resamples."""
LEVEL = 0.95
"""The intervals' coverage."""

VERDICT_FIELDS = (
    "control_median",
    "control_p10",
    "control_p90",
    "controls_smaller",
    "p_value",
    "effect",
    "low",
    "high",
    "excess_low",
    "excess_high",
)
"""A verdict's columns beside the measure's own value (prefixed for a second measure)."""


@dataclass(frozen=True)
class Verdict:
    """The edit's ``value`` against its controls (module doc); NaN where it has no meaning
    (no controls: every field but ``value``, ``low`` and ``high``)."""

    value: float
    control_median: float
    control_p10: float
    control_p90: float
    controls_smaller: float
    p_value: float
    effect: float
    low: float
    high: float
    excess_low: float
    excess_high: float

    def fields(self, prefix: str = "") -> dict[str, float]:
        """The :data:`VERDICT_FIELDS` as columns named ``prefix + field``."""
        values = asdict(self)
        return {prefix + name: values[name] for name in VERDICT_FIELDS}


def control_verdict(value: float, controls: np.ndarray) -> dict[str, float]:
    """The verdict's fields that need no positions: median, spread, ``controls_smaller``,
    ``p_value`` and ``effect`` of ``value`` against the controls' values (NaN without)."""
    controls = np.asarray(controls, np.float64)
    controls = controls[np.isfinite(controls)]
    nothing = float("nan")
    if controls.size == 0 or not np.isfinite(value):
        return dict.fromkeys(
            (
                "control_median",
                "control_p10",
                "control_p90",
                "controls_smaller",
                "p_value",
                "effect",
            ),
            nothing,
        )
    low, high = np.percentile(controls, (10.0, 90.0))
    median = float(np.median(controls))
    return {
        "control_median": median,
        "control_p10": float(low),
        "control_p90": float(high),
        "controls_smaller": float(np.count_nonzero(np.abs(controls) < abs(value))),
        "p_value": float((np.count_nonzero(controls >= value) + 1) / (controls.size + 1)),
        "effect": value / median if median > 0 else nothing,
    }


def block_indices(length: int, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """``resamples x length`` positions: blocks of :data:`BLOCK` consecutive positions (wrapping
    around the end) from random starts, cut to ``length``."""
    block = min(BLOCK, length)
    count = -(-length // block)
    starts = rng.integers(0, length, size=(resamples, count))
    offsets = np.arange(block)
    return ((starts[:, :, None] + offsets) % length).reshape(resamples, -1)[:, :length]


def verdict(
    edit_terms: Sequence[np.ndarray],
    control_terms: Sequence[np.ndarray],
    seed: int = 0,
    resamples: int = RESAMPLES,
) -> Verdict:
    """The :class:`Verdict` of an edit whose per-position terms on each text are
    ``edit_terms[t]`` (``P_t``), its controls' ``control_terms[t]`` (``K x P_t``; ``K`` may be
    0): texts weigh alike."""
    edits = [np.asarray(terms, np.float64) for terms in edit_terms]
    controls = [
        np.asarray(terms, np.float64).reshape(-1, len(e))
        for terms, e in zip(control_terms, edits, strict=True)
    ]
    value = float(np.mean([e.mean() for e in edits]))
    count = controls[0].shape[0] if controls else 0
    control_values = np.mean([c.mean(axis=1) for c in controls], axis=0) if count else np.zeros(0)
    fields = control_verdict(value, control_values)
    boot_values = np.zeros(resamples)
    boot_controls = np.zeros((resamples, count))
    indices = _resampled(seed, tuple(len(e) for e in edits), resamples)
    for e, c, index in zip(edits, controls, indices, strict=True):
        if not np.all(np.isfinite(e)):
            boot_values[:] = np.nan
            continue
        boot_values += e[index].mean(axis=1) / len(edits)
        if count:
            boot_controls += c[:, index].mean(axis=2).T / len(edits)
    tail = (1.0 - LEVEL) / 2.0 * 100.0
    low, high = _interval(boot_values, tail)
    excess_low = excess_high = float("nan")
    if count:
        excess_low, excess_high = _interval(boot_values - np.median(boot_controls, axis=1), tail)
    return Verdict(
        value=value,
        low=low,
        high=high,
        excess_low=excess_low,
        excess_high=excess_high,
        **fields,
    )


@lru_cache(maxsize=2)
def _resampled(seed: int, lengths: tuple[int, ...], resamples: int) -> tuple[np.ndarray, ...]:
    """The bootstrap's positions for texts of ``lengths``, text after text from one generator
    seeded by ``seed`` (:func:`block_indices`): the same for every edit and head of a request,
    drawn once (read-only). Two sets kept (a request's one text; a study's texts together),
    each the size of the positions one call would draw for itself anyway."""
    rng = np.random.default_rng([seed, 38])
    found = tuple(block_indices(length, rng, resamples) for length in lengths)
    for index in found:
        index.flags.writeable = False
    return found


def _interval(samples: np.ndarray, tail: float) -> tuple[float, float]:
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return float("nan"), float("nan")
    low, high = np.percentile(finite, (tail, 100.0 - tail))
    return float(low), float(high)
