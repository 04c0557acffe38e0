"""What a score split gives back, as plain data, and how it is stored.

:class:`WhyResult` holds one row per head (:data:`HEAD_COLUMNS`: realised, spread and weight
shares, the rest, how exactly the parts add up), the top pairs of each lobe direction
(:data:`PAIR_COLUMNS`, when asked) and, for one head asked in detail (:class:`HeadDetail`), its
four parts on the text, the model's own scores, its spectrum at d = 0 and the vocabulary readout
of its top directions (:data:`VOCABULARY_COLUMNS`). Nothing is computed on access; the tables
are assembled as DataFrames when read. Stored in the result store as a
:class:`headforms.store.Record` (kind ``why``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from ..store import Record, ResultStore
from .readout import PAIR_FIELDS
from .request import WhyRequest
from .shares import MARGIN_COLUMNS, SHARE_COLUMNS, WEIGHT_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

KIND = "why"

HEAD_COLUMNS = (
    "layer",
    "head",
    "parity",
    "tokens",
    *SHARE_COLUMNS,
    *WEIGHT_COLUMNS,
    *MARGIN_COLUMNS,
    "split_error",
)
"""One row per head: its realised shares on the text (mean square and row spread of each
bilinear part, the rest), its weight shares at d = 0, how much each part lifts the first key
above the others (``first_margin_*``, the model's units) and ``split_error``, the largest gap
between the parts' sum and the model's own score over the largest score."""
PAIR_COLUMNS = ("layer", "head", *PAIR_FIELDS)
"""One row per top pair of a lobe direction: the direction (``lobe`` positive or negative,
``rank`` 1 for the largest |lambda|, its ``eigenvalue`` at d = 0), the pair's ``place`` (1: the
largest |contribution|), its positions and tokens, the direction's contribution at the pair's
own d and the pair's whole pre-softmax score (the model's units)."""
VOCABULARY_COLUMNS = (
    "lobe",
    "rank",
    "eigenvalue",
    "end",
    "place",
    "token_id",
    "token",
    "projection",
)
"""One row per token of a direction's vocabulary readout: ``end`` ``+`` (the tokens projecting
most onto ``+v_k``) or ``-`` (onto ``-v_k``), ``projection`` ``v_k . x`` of the token's attention
input along the path the detail's ``vocabulary_path`` names."""


@dataclass
class HeadDetail:
    """One head in full: ``parts`` ``(4, T, T)`` (positive, negative, antisymmetric, rest;
    float32, NaN where masked), the model's ``scores`` ``(T, T)``, ``spectrum``: the eigenvalues
    of S at d = 0 that can be non-zero (decreasing), ``vocabulary`` its directions' readout
    (columns of :data:`VOCABULARY_COLUMNS`) and ``vocabulary_path``: what the readout's
    attention inputs are (the exact inputs of one-token sequences at layer 0, else the direct
    path through the embeddings)."""

    layer: int
    head: int
    parts: np.ndarray
    scores: np.ndarray
    spectrum: np.ndarray
    vocabulary: dict[str, np.ndarray]
    vocabulary_path: str


@dataclass(frozen=True)
class WhyResult:
    """A score split's rows and what the dashboard draws (module doc); ``meta``: the request,
    the tokens (``token_ids``, ``tokens``) and ``notes``."""

    model: str
    fingerprint: str
    columns: dict[str, np.ndarray]
    pairs: dict[str, np.ndarray] = field(default_factory=dict)
    detail: HeadDetail | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def named(self, model: str) -> Self:
        """The same result named ``model`` (a copy; its arrays are shared): a stored or shared
        result is never changed."""
        return self if model == self.model else replace(self, model=model)

    @property
    def request(self) -> WhyRequest:
        """The request this answers."""
        return WhyRequest.from_dict(self.meta["request"])

    @property
    def tokens(self) -> list[str]:
        """The text's tokens as the model's tokenizer made them (special tokens included)."""
        return [str(t) for t in self.meta.get("tokens", ())]

    @property
    def table(self) -> pd.DataFrame:
        """One row per head (a pandas DataFrame)."""
        import pandas as pd

        return pd.DataFrame({name: np.asarray(self.columns[name]) for name in HEAD_COLUMNS})

    @property
    def pair_table(self) -> pd.DataFrame:
        """The top pairs of each head's lobe directions (empty when none were asked)."""
        import pandas as pd

        return pd.DataFrame(
            {name: np.asarray(self.pairs.get(name, np.empty(0))) for name in PAIR_COLUMNS}
        )

    @property
    def vocabulary_table(self) -> pd.DataFrame:
        """The detail's vocabulary readout (empty without a detail)."""
        import pandas as pd

        found = {} if self.detail is None else self.detail.vocabulary
        return pd.DataFrame(
            {name: np.asarray(found.get(name, np.empty(0))) for name in VOCABULARY_COLUMNS}
        )


def to_record(result: WhyResult) -> Record:
    """The result as a store record."""
    tables = {"heads": result.columns, "pairs": result.pairs}
    arrays: dict[str, np.ndarray] = {}
    meta = {**result.meta, "model": result.model, "fingerprint": result.fingerprint}
    detail = result.detail
    if detail is not None:
        tables["vocabulary"] = detail.vocabulary
        arrays = {"parts": detail.parts, "scores": detail.scores, "spectrum": detail.spectrum}
        meta["detail"] = {
            "layer": detail.layer,
            "head": detail.head,
            "vocabulary_path": detail.vocabulary_path,
        }
    return Record(KIND, meta, tables=tables, arrays=arrays)


def from_record(record: Record) -> WhyResult:
    """The result of a stored record (KeyError/ValueError/TypeError if it is not one)."""
    meta = dict(record.meta)
    model, fingerprint = str(meta.pop("model")), str(meta.pop("fingerprint"))
    WhyRequest.from_dict(meta["request"])  # a record of an older request format fails
    columns = dict(record.tables["heads"])
    missing = set(HEAD_COLUMNS) - set(columns)
    if missing:
        raise KeyError(sorted(missing)[0])
    detail = None
    described = meta.pop("detail", None)
    if described is not None:
        detail = HeadDetail(
            int(described["layer"]),
            int(described["head"]),
            record.arrays["parts"],
            record.arrays["scores"],
            record.arrays["spectrum"],
            dict(record.tables["vocabulary"]),
            str(described["vocabulary_path"]),
        )
    pairs = dict(record.tables.get("pairs", {}))
    return WhyResult(model, fingerprint, columns, pairs, detail, meta)


def get(store: ResultStore, key: str) -> WhyResult | None:
    """The stored result under ``key`` (a damaged or foreign one is deleted), or None."""
    record = store.get(key, KIND)
    if record is None:
        return None
    try:
        return from_record(record)
    except (KeyError, TypeError, ValueError):
        store.delete(key)
        return None


def put(store: ResultStore, key: str, result: WhyResult) -> None:
    """Store a result."""
    store.put(key, to_record(result))
