"""An intervention as a pure function of a loaded model and a request:
:func:`compute_intervention` (nothing read or written but the model's own passes).

Order of work: resolve the scope to heads (a parity group from the forms at d = 0, as the
analysis computes them), refuse a request over its limits before any pass, encode the text, run
the unedited pass, then every edited sequence (the edit of each row, then its K matched
controls, :mod:`.controls`) in batches sharing their unchanged prefix, then, when asked, the
same on the repeated-token probe, and assemble the rows with each measure's verdict against
its controls (:mod:`.verdict`). A failure of the hooks inside the model's own code is one line
(:func:`.hooks.hook_failures`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..behaviour.probe import repeated_tokens
from ..behaviour.scores import (
    SCORE_COLUMNS,
    duplicate_token,
    first_token,
    induction,
    previous_token,
)
from ..errors import OptionError
from ..progress import Progress
from ..settings import settings
from .algebra import (
    PROFILE_COLUMNS,
    change_norms,
    change_rank,
    distances,
    edited_profile,
)
from .anatomy import Anatomy, anatomy_of
from .changes import ControlChange, FormChange, OutputChange, SequencePlan
from .controls import ControlSeed, Match, ScoreLedger
from .edits import Edit, edit_named
from .hooks import check_editable, hook_failures
from .passes import CleanPass, Outcome, clean_pass, edited_passes
from .request import InterventionLimits, InterventionRequest, Scope
from .result import ROW_COLUMNS, InterventionResult
from .text import text_label, text_tokens
from .verdict import verdict

if TYPE_CHECKING:
    from ..behaviour.runnable import Runnable

Head = tuple[int, int]


def resolve_heads(scope: Scope, anatomy: Anatomy, name: str) -> list[Head]:
    """The heads of a scope, layer-major; one line for a head, layer or parity that is not
    there."""
    layers, heads = anatomy.shapes.n_layers, anatomy.shapes.n_heads

    def check(what: str, value: int, count: int) -> None:
        if not 0 <= value < count:
            raise OptionError(f"{what} {value} does not exist: {name} has {what}s 0 to {count - 1}")

    if scope.kind == "heads":
        for layer, head in scope.heads:
            check("layer", layer, layers)
            check("head", head, heads)
        return sorted(scope.heads)
    if scope.kind == "layer":
        assert scope.layer is not None
        check("layer", scope.layer, layers)
        return [(scope.layer, h) for h in range(heads)]
    every = [(layer, h) for layer in range(layers) for h in range(heads)]
    if scope.kind == "all":
        return every
    chosen = [(layer, h) for layer, h in every if anatomy.parities(layer)[h] == scope.parity]
    if not chosen:
        raise OptionError(f"{name} has no head of parity {scope.parity} (at d = 0)")
    return chosen


class _Plans:
    """The sequence plans of one request on one sequence: each row's edit (tagged ``("edit",
    r)``) and its controls (``("control", r, k)``), recording their score changes in one
    :class:`ScoreLedger`; each head's control sizes and span computed once."""

    def __init__(
        self, anatomy: Anatomy, request: InterventionRequest, edit: Edit, clean: CleanPass
    ):
        self.anatomy, self.request, self.edit, self.clean = anatomy, request, edit, clean
        self.ledger = ScoreLedger()
        self._rank: dict[Head, int] = {}
        self._norms: dict[Head, tuple[np.ndarray, np.ndarray]] = {}

    def edited(self, row: tuple[Head, ...], index: int) -> SequencePlan:
        if self.edit.edits_form:
            return tuple(
                FormChange(
                    layer,
                    head,
                    self.anatomy.head_logit(layer, head),
                    self.edit,
                    self.ledger,
                    ("edit", index),
                )
                for layer, head in row
            )
        n = self.anatomy.shapes.head_dim
        changes = []
        for layer, head in row:
            value = None
            if self.edit.name == "output_mean":
                value = self.clean.running_means(layer)[:, head * n : (head + 1) * n]
            changes.append(OutputChange(layer, head, value))
        return tuple(changes)

    def control(self, row: tuple[Head, ...], index: int, k: int) -> SequencePlan:
        match = self.request.match
        changes = []
        for layer, head in row:
            logit = self.anatomy.head_logit(layer, head)
            span = self.anatomy.span(layer, head)
            if (layer, head) not in self._rank:
                self._rank[layer, head] = change_rank(logit.factors, self.edit, span)
            basis = None if match is Match.FROBENIUS else span.w
            steps, norms = np.zeros(1, np.int64), np.zeros(1)
            if match is not Match.SCORES:
                if (layer, head) not in self._norms:
                    length = len(self.clean.token_ids)
                    found = distances(length, logit.causal, logit.factors.rotary)
                    self._norms[layer, head] = (
                        found,
                        change_norms(logit.factors, self.edit, found),
                    )
                steps, norms = self._norms[layer, head]
            seed = ControlSeed(
                self.request.seed,
                layer,
                head,
                k,
                self._rank[layer, head],
                self.anatomy.shapes.model_dim,
                basis,
            )
            changes.append(
                ControlChange(
                    layer,
                    head,
                    logit,
                    seed,
                    match,
                    self.ledger,
                    ("control", index, k),
                    ("edit", index),
                    steps,
                    norms,
                )
            )
        return tuple(changes)

    def score_rms(self, index: int, controls: int) -> tuple[float, np.ndarray]:
        """Row ``index``'s edit's score RMS and each control's (NaN for an output edit)."""
        if not self.edit.edits_form:
            return float("nan"), np.full(controls, np.nan)
        return self.ledger.tag_rms(("edit", index)), np.array(
            [self.ledger.tag_rms(("control", index, k)) for k in range(1, controls + 1)]
        )


@dataclass
class _Measured:
    """A request's passes on one sequence: per row the edit's outcome, its controls', and the
    score RMS of each."""

    clean: CleanPass
    edits: list[Outcome]
    controls: list[list[Outcome]]
    score_rms: list[float]
    control_score_rms: np.ndarray


def _run_sequence(
    model: Runnable,
    anatomy: Anatomy,
    request: InterventionRequest,
    edit: Edit,
    rows: list[tuple[Head, ...]],
    clean: CleanPass,
    watch_single: bool,
    deadline: float | None,
    progress: Progress | None,
    done: int,
    total: int,
) -> _Measured:
    """The edit of every row and its controls on one sequence (the edit first: a scores-matched
    control reads its edit's score change)."""
    controls = request.controlled
    plans = _Plans(anatomy, request, edit, clean)
    sequences: list[SequencePlan] = []
    watch: list[Head | None] = []
    for index, row in enumerate(rows):
        sequences.append(plans.edited(row, index))
        watch.append(row[0] if watch_single and len(row) == 1 else None)
        for k in range(1, controls + 1):
            sequences.append(plans.control(row, index, k))
            watch.append(None)
    outcomes = edited_passes(
        model, anatomy, clean, sequences, watch, deadline, progress, done, total
    )
    per_row = 1 + controls
    measured = _Measured(clean, [], [], [], np.zeros((len(rows), controls)))
    for r in range(len(rows)):
        measured.edits.append(outcomes[r * per_row])
        measured.controls.append(outcomes[r * per_row + 1 : (r + 1) * per_row])
        edit_rms, control_rms = plans.score_rms(r, controls)
        measured.score_rms.append(edit_rms)
        measured.control_score_rms[r] = control_rms
    return measured


def compute_intervention(
    model: Runnable,
    request: InterventionRequest,
    progress: Progress | None = None,
    limits: InterventionLimits | None = None,
) -> InterventionResult:
    """Run ``request`` on a loaded model (module doc); the rows as :class:`InterventionResult`.
    numpy's BLAS runs on as many threads as torch's passes do
    (:attr:`headforms.settings.Settings.forward_threads`)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=settings().forward_threads):
        return _compute(model, request, progress, limits)


def _compute(
    model: Runnable,
    request: InterventionRequest,
    progress: Progress | None,
    limits: InterventionLimits | None,
) -> InterventionResult:
    limits = limits or InterventionLimits()
    deadline = None if limits.max_seconds is None else time.monotonic() + limits.max_seconds
    edit = edit_named(request.edit)
    anatomy = anatomy_of(model)
    check_editable(anatomy, model.name, outputs=not edit.edits_form)
    heads = resolve_heads(request.scope, anatomy, model.name)
    rows = [(head,) for head in heads] if request.each else [tuple(heads)]
    total = request.passes(len(heads))
    limits.check_passes(total, f"{request.edit} on {request.scope.label}")
    single = len(rows) == 1 and len(rows[0]) == 1
    ids = text_tokens(model, request.text, request.max_tokens)
    means = edit.name == "output_mean"
    with hook_failures(model.name):
        clean = clean_pass(
            model, anatomy, ids, np.arange(len(ids) - 1), means=means, attention=single
        )
        text = _run_sequence(
            model, anatomy, request, edit, rows, clean, single, deadline, progress, 0, total
        )
    measure = "delta_ce" if model.causal_lm is not None else "cosine_distance"
    columns = _row_columns(request, rows, text, anatomy, measure, len(ids))
    controls = {
        "delta_ce": _values(text, lambda o: o.measured.ce - clean.ce),
        "kl": _values(text, lambda o: o.measured.kl),
        "cosine_distance": _values(text, lambda o: o.measured.cosine_distance),
        "score_rms": text.control_score_rms,
    }
    terms = {
        "delta_ce": _terms(text, lambda o: o.measured.losses - clean.losses),
        "kl": _terms(text, lambda o: o.measured.kls),
        "cosine_distance": _terms(text, lambda o: o.measured.cosines),
    }
    columns.update(_profile_columns(anatomy, edit, rows))
    patterns = {}
    if single and text.edits[0].watched is not None:
        layer, head = rows[0][0]
        patterns = {"before": clean.recorded.attention[layer][head], "after": text.edits[0].watched}
    if request.probe_length is not None:
        with hook_failures(model.name):
            probe_columns, probe_controls, probe_terms = _probe(
                model, anatomy, request, edit, rows, deadline, progress, total
            )
        columns.update(probe_columns)
        controls["delta_induction_loss"] = probe_controls
        terms["delta_induction_loss"] = probe_terms
    meta = {
        "request": request.as_dict(),
        "measure": measure,
        "token_ids": ids,
        "tokens": model.tokenizer.texts(ids),
        "text": text_label(request.text),
        "notes": _notes(model, edit, request.controls),
    }
    return InterventionResult(
        model.name, model.fingerprint, columns, controls, patterns, meta, terms
    )


def _values(measured: _Measured, value: Callable[[Outcome], float]) -> np.ndarray:
    """Each control's value (rows x K)."""
    count = measured.control_score_rms.shape[1]
    return np.array(
        [[value(o) for o in row] for row in measured.controls], dtype=np.float64
    ).reshape(len(measured.edits), count)


def _terms(measured: _Measured, terms: Callable[[Outcome], np.ndarray]) -> np.ndarray:
    """Per-position terms, the edit's then each control's (rows x (1 + K) x positions)."""
    return np.stack(
        [
            np.stack([terms(o) for o in (edit, *others)])
            for edit, others in zip(measured.edits, measured.controls, strict=True)
        ]
    ).astype(np.float64)


def _row_columns(
    request: InterventionRequest,
    rows: list[tuple[Head, ...]],
    text: _Measured,
    anatomy: Anatomy,
    measure: str,
    tokens: int,
) -> dict[str, np.ndarray]:
    """The :data:`ROW_COLUMNS` of every row."""
    clean = text.clean
    main = (
        (lambda o: o.measured.losses - clean.losses)
        if measure == "delta_ce"
        else (lambda o: o.measured.cosines)
    )
    records = []
    for r, (row, outcome, others) in enumerate(zip(rows, text.edits, text.controls, strict=True)):
        one = len(row) == 1
        layer, head = row[0]
        measured = outcome.measured
        found = verdict(
            [main(outcome)], [_stack([main(o) for o in others], main(outcome))], request.seed
        )
        kl = verdict(
            [measured.kls], [_stack([o.measured.kls for o in others], measured.kls)], request.seed
        )
        records.append(
            {
                "layer": float(layer) if one else np.nan,
                "head": float(head) if one else np.nan,
                "edit": request.edit,
                "scope": f"L{layer}.H{head}" if one else request.scope.label,
                "heads": len(row),
                "tokens": tokens,
                "match": request.match.value,
                "ce_original": clean.ce,
                "ce_edited": measured.ce,
                "delta_ce": measured.ce - clean.ce,
                "kl": measured.kl,
                "cosine_distance": measured.cosine_distance,
                "score_rms": text.score_rms[r],
                "control_score_rms": _median(text.control_score_rms[r]),
                "controls": len(others),
                "parity": str(anatomy.parities(layer)[head]) if one else "",
                **found.fields(),
                **kl.fields("kl_"),
            }
        )
    return {
        name: np.asarray(
            [record[name] for record in records],
            dtype=object if name in ("edit", "scope", "parity", "match") else None,
        )
        for name in ROW_COLUMNS
    }


def _stack(arrays: list[np.ndarray], like: np.ndarray) -> np.ndarray:
    return np.stack(arrays) if arrays else np.zeros((0, len(like)))


def _median(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(np.median(finite)) if finite.size else float("nan")


def _profile_columns(
    anatomy: Anatomy, edit: Edit, rows: list[tuple[Head, ...]]
) -> dict[str, np.ndarray]:
    """Where each single head's edited form lands on the simplex at d = 0 (NaN and an empty
    parity for several heads together, or an edit of the output)."""
    values: dict[str, list] = {name: [] for name in PROFILE_COLUMNS}
    for row in rows:
        profile = None
        if len(row) == 1 and edit.edits_form:
            layer, head = row[0]
            factors = anatomy.head_logit(layer, head).factors
            profile = edited_profile(factors, edit, anatomy.span(layer, head))
        for name in PROFILE_COLUMNS:
            empty = "" if name == "parity" else np.nan
            values[name].append(empty if profile is None else profile[name])
    return {
        f"{name}_edited": np.array(v, dtype=object if name == "parity" else float)
        for name, v in values.items()
    }


def _probe(
    model: Runnable,
    anatomy: Anatomy,
    request: InterventionRequest,
    edit: Edit,
    rows: list[tuple[Head, ...]],
    deadline: float | None,
    progress: Progress | None,
    total: int,
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """On the probe, each row's edit and its controls: the induction loss before and after,
    its verdict against the controls', each single head's scores; the controls' changes of the
    induction loss (rows x K) and the per-position terms."""
    from ..behaviour.forward import check_length

    assert request.probe_length is not None
    length = request.probe_length
    probe = repeated_tokens(model.tokenizer, model.vocab_size, length, request.seed)
    check_length(probe.token_ids, "the probe", model)
    window = np.arange(probe.start + length, probe.start + 2 * length - 1)
    one_head = [len(row) == 1 for row in rows]
    clean = clean_pass(
        model,
        anatomy,
        probe.token_ids,
        window,
        means=edit.name == "output_mean",
        attention=any(one_head),
    )
    done = total // 2
    measured = _run_sequence(
        model, anatomy, request, edit, rows, clean, True, deadline, progress, done, total
    )
    count = len(rows)
    columns: dict[str, np.ndarray] = {
        "probe_length": np.full(count, length),
        "induction_loss_original": np.full(count, clean.ce),
        "induction_loss_edited": np.array([o.measured.ce for o in measured.edits]),
    }
    columns["delta_induction_loss"] = columns["induction_loss_edited"] - clean.ce
    terms = _terms(measured, lambda o: o.measured.losses - clean.losses)
    verdicts = [verdict([t[0]], [t[1:]], request.seed).fields("induction_") for t in terms]
    for name in verdicts[0] if verdicts else ():
        columns[name] = np.array([v[name] for v in verdicts])
    scores: dict[str, Callable[[np.ndarray], np.ndarray]] = {
        "previous_token": previous_token,
        "first_token": first_token,
        "duplicate_token": lambda w: duplicate_token(w, probe.start, length),
        "induction": lambda w: induction(w, probe.start, length),
    }
    for score in SCORE_COLUMNS:
        before, after = [], []
        for row, outcome, one in zip(rows, measured.edits, one_head, strict=True):
            if not one or outcome.watched is None:
                before.append(np.nan)
                after.append(np.nan)
                continue
            layer, head = row[0]
            before.append(float(scores[score](clean.recorded.attention[layer][head])))
            after.append(float(scores[score](outcome.watched)))
        columns[f"{score}_before"] = np.array(before)
        columns[f"{score}_after"] = np.array(after)
    controls = _values(measured, lambda o: o.measured.ce - clean.ce)
    return columns, controls, terms


def _notes(model: Runnable, edit: Edit, controls: int) -> list[str]:
    notes = []
    if model.causal_lm is None:
        notes.append(
            f"{model.name} has no language-modelling head: there is no next-token loss, so "
            "ce_original, ce_edited, delta_ce, kl and the induction loss are absent (NaN); "
            "cosine_distance (of the final hidden states) measures the change, and the controls "
            "are compared on it"
        )
    if not edit.edits_form and controls > 0:
        notes.append(
            f"{edit.name} acts on the head's output, not its form: it has no matched controls"
        )
    return notes
