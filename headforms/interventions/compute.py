"""An intervention as a pure function of a loaded model and a request:
:func:`compute_intervention` (nothing read or written but the model's own passes).

Order of work: resolve the scope to heads (a parity group from the forms at d = 0, as the
analysis computes them), refuse a request over its limits before any pass, encode the text, run
the unedited pass, then every edited sequence (the edit of each row, and its K matched controls)
in batches sharing their unchanged prefix, then, when asked, the repeated-token probe (unedited,
then each row's edit), and assemble the rows.
"""

from __future__ import annotations

import time
from collections.abc import Callable
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
from .algebra import PROFILE_COLUMNS, change_norms, change_rank, distances, edited_profile
from .anatomy import Anatomy, anatomy_of
from .changes import ControlChange, FormChange, OutputChange, SequencePlan
from .controls import ControlSeed, control_summary
from .edits import Edit, edit_named
from .hooks import check_editable
from .passes import CleanPass, Outcome, clean_pass, edited_passes
from .request import InterventionLimits, InterventionRequest, Scope
from .result import CONTROL_MEASURES, ROW_COLUMNS, InterventionResult
from .text import text_tokens

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
    """The sequence plans of one request on one sequence, with each head's control sizes
    computed once."""

    def __init__(self, anatomy: Anatomy, edit: Edit, clean: CleanPass, seed: int):
        self.anatomy, self.edit, self.clean, self.seed = anatomy, edit, clean, seed
        self._sizes: dict[Head, tuple[int, np.ndarray, np.ndarray]] = {}

    def edited(self, row: tuple[Head, ...]) -> SequencePlan:
        if self.edit.edits_form:
            return tuple(
                FormChange(layer, head, self.anatomy.head_logit(layer, head), self.edit)
                for layer, head in row
            )
        n = self.anatomy.shapes.head_dim
        means = self.clean.recorded.head_means
        return tuple(
            OutputChange(
                layer,
                head,
                None
                if self.edit.name == "output_zero"
                else means[layer][head * n : (head + 1) * n],
            )
            for layer, head in row
        )

    def control(self, row: tuple[Head, ...], index: int) -> SequencePlan:
        changes = []
        length = len(self.clean.token_ids)
        for layer, head in row:
            logit = self.anatomy.head_logit(layer, head)
            if (layer, head) not in self._sizes:
                steps = distances(length, logit.causal, logit.factors.rotary)
                rank = change_rank(logit.factors, self.edit)
                self._sizes[layer, head] = (
                    rank,
                    steps,
                    change_norms(logit.factors, self.edit, steps),
                )
            rank, steps, norms = self._sizes[layer, head]
            seed = ControlSeed(self.seed, layer, head, index, rank, self.anatomy.shapes.model_dim)
            changes.append(ControlChange(layer, head, logit, seed, steps, norms))
        return tuple(changes)


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
    request = request.checked()
    limits = limits or InterventionLimits()
    deadline = None if limits.max_seconds is None else time.monotonic() + limits.max_seconds
    edit = edit_named(request.edit)
    anatomy = anatomy_of(model)
    check_editable(anatomy, model.name, outputs=not edit.edits_form)
    heads = resolve_heads(request.scope, anatomy, model.name)
    rows = [(head,) for head in heads] if request.each else [tuple(heads)]
    controls = request.controls if edit.edits_form else 0
    probing = request.probe_length is not None
    total = request.passes(len(heads))
    limits.check_passes(total, f"{request.edit} on {request.scope.label}")
    single = len(rows) == 1 and len(rows[0]) == 1
    ids = text_tokens(model, request.text, request.max_tokens)
    clean = clean_pass(
        model,
        anatomy,
        ids,
        np.arange(len(ids) - 1),
        means=edit.name == "output_mean",
        attention=single,
    )
    plans = _Plans(anatomy, edit, clean, request.seed)
    sequences: list[SequencePlan] = []
    watch: list[Head | None] = []
    for row in rows:
        sequences.append(plans.edited(row))
        watch.append(row[0] if single else None)
        for index in range(1, controls + 1):
            sequences.append(plans.control(row, index))
            watch.append(None)
    outcomes = edited_passes(
        model, anatomy, clean, sequences, watch, deadline, progress, total=total
    )
    per_row = 1 + controls
    edits = [outcomes[r * per_row] for r in range(len(rows))]
    controlled = [outcomes[r * per_row + 1 : (r + 1) * per_row] for r in range(len(rows))]
    measure = "delta_ce" if model.causal_lm is not None else "cosine_distance"
    columns = _row_columns(request, rows, edits, controlled, clean, anatomy, measure, len(ids))
    control_values = {
        name: np.array([[_value(o, name, clean) for o in row] for row in controlled]).reshape(
            len(rows), controls
        )
        for name in CONTROL_MEASURES
    }
    columns.update(_profile_columns(anatomy, edit, rows))
    patterns = {}
    if single and edits[0].watched is not None:
        layer, head = rows[0][0]
        patterns = {"before": clean.recorded.attention[layer][head], "after": edits[0].watched}
    if probing:
        columns.update(
            _probe_columns(model, anatomy, request, edit, rows, deadline, progress, total)
        )
    meta = {
        "request": request.as_dict(),
        "measure": measure,
        "token_ids": ids,
        "tokens": model.tokenizer.texts(ids),
        "notes": _notes(model, edit, request.controls),
    }
    return InterventionResult(
        model.name, model.fingerprint, columns, control_values, patterns, meta
    )


def _value(outcome: Outcome, name: str, clean: CleanPass) -> float:
    measured = outcome.measured
    if name == "delta_ce":
        return measured.ce - clean.ce
    return float(getattr(measured, name))


def _row_columns(
    request: InterventionRequest,
    rows: list[tuple[Head, ...]],
    edits: list[Outcome],
    controlled: list[list[Outcome]],
    clean: CleanPass,
    anatomy: Anatomy,
    measure: str,
    tokens: int,
) -> dict[str, np.ndarray]:
    """The :data:`ROW_COLUMNS` of every row."""
    records = []
    for row, outcome, others in zip(rows, edits, controlled, strict=True):
        one = len(row) == 1
        layer, head = row[0]
        measured = outcome.measured
        records.append(
            {
                "layer": float(layer) if one else np.nan,
                "head": float(head) if one else np.nan,
                "edit": request.edit,
                "scope": f"L{layer}.H{head}" if one else request.scope.label,
                "heads": len(row),
                "tokens": tokens,
                "ce_original": clean.ce,
                "ce_edited": measured.ce,
                "delta_ce": measured.ce - clean.ce,
                "kl": measured.kl,
                "cosine_distance": measured.cosine_distance,
                "controls": len(others),
                "parity": str(anatomy.parities(layer)[head]) if one else "",
                **control_summary(
                    _value(outcome, measure, clean), [_value(o, measure, clean) for o in others]
                ),
            }
        )
    return {
        name: np.asarray(
            [record[name] for record in records],
            dtype=object if name in ("edit", "scope", "parity") else None,
        )
        for name in ROW_COLUMNS
    }


def _profile_columns(
    anatomy: Anatomy, edit: Edit, rows: list[tuple[Head, ...]]
) -> dict[str, np.ndarray]:
    """Where each single head's edited form lands on the simplex at d = 0 (NaN and an empty
    parity for several heads together, or an edit of the output)."""
    values: dict[str, list] = {name: [] for name in PROFILE_COLUMNS}
    for row in rows:
        profile = None
        if len(row) == 1 and edit.edits_form:
            profile = edited_profile(anatomy.head_logit(*row[0]).factors, edit)
        for name in PROFILE_COLUMNS:
            empty = "" if name == "parity" else np.nan
            values[name].append(empty if profile is None else profile[name])
    return {
        f"{name}_edited": np.array(v, dtype=object if name == "parity" else float)
        for name, v in values.items()
    }


def _probe_columns(
    model: Runnable,
    anatomy: Anatomy,
    request: InterventionRequest,
    edit: Edit,
    rows: list[tuple[Head, ...]],
    deadline: float | None,
    progress: Progress | None,
    total: int,
) -> dict[str, np.ndarray]:
    """Induction loss before and after on the probe, and each single head's scores."""
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
    plans = _Plans(anatomy, edit, clean, request.seed)
    sequences = [plans.edited(row) for row in rows]
    watch = [row[0] if one else None for row, one in zip(rows, one_head, strict=True)]
    done = total - len(rows)
    outcomes = edited_passes(
        model, anatomy, clean, sequences, watch, deadline, progress, done, total
    )
    count = len(rows)
    columns: dict[str, np.ndarray] = {
        "probe_length": np.full(count, length),
        "induction_loss_original": np.full(count, clean.ce),
        "induction_loss_edited": np.array([o.measured.ce for o in outcomes]),
    }
    columns["delta_induction_loss"] = columns["induction_loss_edited"] - clean.ce
    scores: dict[str, Callable[[np.ndarray], np.ndarray]] = {
        "previous_token": previous_token,
        "first_token": first_token,
        "duplicate_token": lambda w: duplicate_token(w, probe.start, length),
        "induction": lambda w: induction(w, probe.start, length),
    }
    for score in SCORE_COLUMNS:
        before, after = [], []
        for row, outcome, one in zip(rows, outcomes, one_head, strict=True):
            if not one or outcome.watched is None:
                before.append(np.nan)
                after.append(np.nan)
                continue
            layer, head = row[0]
            before.append(float(scores[score](clean.recorded.attention[layer][head])))
            after.append(float(scores[score](outcome.watched)))
        columns[f"{score}_before"] = np.array(before)
        columns[f"{score}_after"] = np.array(after)
    return columns


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
