"""What an intervention gives back, as plain data, and how it is stored.

:class:`InterventionResult` holds one row per edited unit (a head on its own, or the scope's
heads together) as named columns (:data:`ROW_COLUMNS` and the probe's, head scores' and
profile's when present), each control's value of each measure (``controls[measure]``: rows x
K), and, for a single-head edit, that head's attention weights on the text before and after.
Nothing is computed on access; :attr:`InterventionResult.table` only assembles a DataFrame.
Stored in the result store as a :class:`headforms.store.Record` (kind ``intervention``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from ..behaviour.scores import SCORE_COLUMNS
from ..store import Record, ResultStore
from .algebra import PROFILE_COLUMNS
from .request import InterventionRequest
from .verdict import VERDICT_FIELDS

if TYPE_CHECKING:
    import pandas as pd

KIND = "intervention"

ROW_COLUMNS = (
    "layer",
    "head",
    "edit",
    "scope",
    "heads",
    "tokens",
    "match",
    "ce_original",
    "ce_edited",
    "delta_ce",
    "kl",
    "cosine_distance",
    "score_rms",
    "control_score_rms",
    "controls",
    *VERDICT_FIELDS,
    *(f"kl_{name}" for name in VERDICT_FIELDS),
    "parity",
)
"""Columns of every row. ``layer``/``head``: the edited head (empty for several heads edited
together); ``heads``: how many heads the row edits; ``tokens``: T; ``match``: how the controls
are matched; ``score_rms``: the RMS over the visible pairs of the edit's change of the edited
heads' pre-softmax scores, ``control_score_rms`` the controls' median of theirs; ``controls``:
K; the verdict (:mod:`.verdict`) of :attr:`InterventionResult.measure` unprefixed, of ``kl``
with ``kl_``."""
PROBE_COLUMNS = (
    "probe_length",
    "induction_loss_original",
    "induction_loss_edited",
    "delta_induction_loss",
    *(f"induction_{name}" for name in VERDICT_FIELDS),
)
"""Columns added when the probe is asked for (the verdict of ``delta_induction_loss`` against
the controls run on the probe, with ``induction_``)."""
SCORE_CHANGE_COLUMNS = tuple(
    f"{score}_{when}" for score in SCORE_COLUMNS for when in ("before", "after")
)
"""A head's head-type scores on the probe before and after its edit (single-head rows)."""
EDITED_PROFILE_COLUMNS = tuple(f"{name}_edited" for name in PROFILE_COLUMNS)
"""Where the edited form lands on the simplex at d = 0 (single-head rows of form edits)."""
CONTROL_MEASURES = ("delta_ce", "kl", "cosine_distance", "score_rms")
"""The measures kept for every control (and ``delta_induction_loss`` with the probe)."""
TERM_MEASURES = ("delta_ce", "kl", "cosine_distance", "delta_induction_loss")
"""Measures whose per-position terms are kept (``terms[m]``: rows x (1 + K) x positions, the
edit first): what a bootstrap over positions, or over texts, resamples."""
INTEGER_COLUMNS = ("layer", "head")
"""Columns of whole numbers that may be empty (shown as nullable integers)."""


@dataclass(frozen=True)
class InterventionResult:
    """An intervention's rows and what the dashboard draws (module doc); ``controls[m]``: each
    control's value of measure ``m`` (rows x K); ``terms[m]``: per-position terms
    (:data:`TERM_MEASURES`); ``meta``: the request, the tokens (``token_ids``, ``tokens``), the
    ``measure`` the controls are read on and ``notes`` on measures that are absent."""

    model: str
    fingerprint: str
    columns: dict[str, np.ndarray]
    controls: dict[str, np.ndarray] = field(default_factory=dict)
    patterns: dict[str, np.ndarray] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    terms: dict[str, np.ndarray] = field(default_factory=dict)

    def named(self, model: str) -> Self:
        """The same result named ``model`` (a copy; its arrays are shared): a stored or shared
        result is never changed."""
        return self if model == self.model else replace(self, model=model)

    @property
    def request(self) -> InterventionRequest:
        """The request this answers."""
        return InterventionRequest.from_dict(self.meta["request"])

    @property
    def measure(self) -> str:
        """The measure the controls are compared on: ``delta_ce`` (language models) or
        ``cosine_distance`` (a model without a language-modelling head)."""
        return str(self.meta["measure"])

    @property
    def notes(self) -> list[str]:
        """What is absent and why (one sentence each)."""
        return [str(note) for note in self.meta.get("notes", ())]

    @property
    def table(self) -> pd.DataFrame:
        """One row per edited unit (a pandas DataFrame; ``layer``/``head`` nullable
        integers)."""
        import pandas as pd

        table = pd.DataFrame({name: np.asarray(values) for name, values in self.columns.items()})
        for name in INTEGER_COLUMNS:
            table[name] = pd.array(
                [None if np.isnan(v) else int(v) for v in table[name]], dtype="Int64"
            )
        return table


def to_record(result: InterventionResult) -> Record:
    """The result as a store record."""
    arrays = {f"controls/{name}": values for name, values in result.controls.items()}
    arrays.update({f"pattern/{name}": values for name, values in result.patterns.items()})
    arrays.update({f"terms/{name}": values for name, values in result.terms.items()})
    meta = {**result.meta, "model": result.model, "fingerprint": result.fingerprint}
    return Record(KIND, meta, tables={"rows": result.columns}, arrays=arrays)


def from_record(record: Record) -> InterventionResult:
    """The result of a stored record (KeyError/ValueError/TypeError if it is not one)."""
    meta = dict(record.meta)
    model, fingerprint = str(meta.pop("model")), str(meta.pop("fingerprint"))
    InterventionRequest.from_dict(meta["request"])  # a record of an older request format fails
    controls = {
        name.removeprefix("controls/"): values
        for name, values in record.arrays.items()
        if name.startswith("controls/")
    }
    patterns = {
        name.removeprefix("pattern/"): values
        for name, values in record.arrays.items()
        if name.startswith("pattern/")
    }
    terms = {
        name.removeprefix("terms/"): values
        for name, values in record.arrays.items()
        if name.startswith("terms/")
    }
    columns = record.tables["rows"]
    missing = set(ROW_COLUMNS) - set(columns)
    if missing:
        raise KeyError(sorted(missing)[0])
    return InterventionResult(model, fingerprint, dict(columns), controls, patterns, meta, terms)


def get(store: ResultStore, key: str) -> InterventionResult | None:
    """The stored result under ``key`` (a damaged or foreign one is deleted), or None."""
    record = store.get(key, KIND)
    if record is None:
        return None
    try:
        return from_record(record)
    except (KeyError, TypeError, ValueError):
        store.delete(key)
        return None


def put(store: ResultStore, key: str, result: InterventionResult) -> None:
    """Store a result."""
    store.put(key, to_record(result))
