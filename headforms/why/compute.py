"""A score split as a pure function of a loaded model and a request: :func:`compute_why`
(nothing read or written but the model's own pass).

Order of work: resolve the scope to heads (a parity group from the forms at d = 0, as the
analysis computes them), encode the text, run the model once with hooks that record each
layer's attention input and mask (:func:`.capture.capturing`; the pre-softmax scores are the
pass's own, :func:`headforms.behaviour.forward.run`), then split each head
(:func:`.split.split_scores`, heads on worker threads as the forms stage runs layers) and, for a
detail, read its top directions out through the vocabulary (:func:`.capture.direct_inputs`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from ..behaviour import forward
from ..behaviour.tokens import UNUSED
from ..bounded import ByteLRU
from ..errors import NotRunnableError
from ..forms import head_forms
from ..interventions.anatomy import Anatomy, anatomy_of
from ..interventions.compute import resolve_heads
from ..interventions.hooks import check_editable
from ..interventions.text import text_tokens
from ..parallel import ordered_layers
from ..progress import Progress
from ..settings import settings
from .capture import Captured, capturing, direct_inputs
from .readout import top_directions, top_pairs, vocabulary_readout
from .request import DIRECTIONS, VOCABULARY_TOP, WhyRequest
from .result import HEAD_COLUMNS, PAIR_COLUMNS, HeadDetail, WhyResult
from .shares import (
    WEIGHT_COLUMNS,
    first_key_margins,
    realised_shares,
    split_error,
    weight_shares,
)
from .split import Eigensolver, ScoreSplit, directions_at, split_scores

if TYPE_CHECKING:
    from ..behaviour.runnable import Runnable

Head = tuple[int, int]

EXACT_PATH = "layer 0: each token's attention input as the only token of a sequence"
DIRECT_PATH = (
    "direct path through the embeddings: each token's embedding (alone, at position 0) "
    "through layer {layer}'s own norm, skipping the layers below"
)
"""What a vocabulary readout's attention inputs are, at layer 0 and above."""


def compute_why(
    model: Runnable, request: WhyRequest, progress: Progress | None = None
) -> WhyResult:
    """Run ``request`` on a loaded model (module doc); numpy's BLAS on as many threads as
    torch's pass (:attr:`headforms.settings.Settings.forward_threads`), numpy's and torch's on
    one per worker thread while heads are split (:func:`headforms.parallel.ordered_layers`,
    :func:`one_torch_thread`)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=settings().forward_threads):
        return _compute(model, request, progress)


def _compute(model: Runnable, request: WhyRequest, progress: Progress | None) -> WhyResult:
    request = request.checked()
    anatomy = anatomy_of(model)
    check_editable(anatomy, model.name, outputs=False, what="its score split is")
    heads = resolve_heads(request.scope, anatomy, model.name)
    ids = text_tokens(model, request.text, request.max_tokens)
    tokens = model.tokenizer.texts(ids)
    if progress:
        progress(0, len(heads), f"running {model.name} on {len(ids)} tokens")
    captured, scores_of = recorded_pass(model, anatomy, ids)
    weights = _weight_shares(anatomy, heads)
    pairs_each = request.pairs_per_direction
    rows: dict[str, list] = {name: [] for name in HEAD_COLUMNS}
    pairs: dict[str, list] = {name: [] for name in PAIR_COLUMNS}
    detail = None

    def work(index: int) -> tuple[ScoreSplit, dict[str, float], dict[str, list] | None]:
        layer, head = heads[index]
        scores = scores_of[layer, head]
        ranks = DIRECTIONS if pairs_each else 0
        split = split_head(anatomy, captured, layer, head, np.isfinite(scores), ranks)
        measured = {
            **realised_shares(split),
            **first_key_margins(split),
            "split_error": split_error(split, scores),
        }
        found = None
        if pairs_each:
            values, _ = directions_at(anatomy.head_logit(layer, head).factors)
            assert split.ranked is not None
            found = top_pairs(
                split.ranked,
                split.total,
                values,
                top_directions(values, DIRECTIONS),
                pairs_each,
                tokens,
            )
        return split, measured, found

    def report(done: int, total: int, message: str) -> None:
        if progress:
            progress(done, total, f"splitting head {done + 1} of {total}")

    with one_torch_thread():  # at most threads + 1 heads' splits held at once
        for index, (split, measured, found) in ordered_layers(len(heads), work, report):
            layer, head = heads[index]
            rows["layer"].append(layer)
            rows["head"].append(head)
            rows["parity"].append(str(anatomy.parities(layer)[head]))
            rows["tokens"].append(len(ids))
            for name, value in {**measured, **weights[layer, head]}.items():
                rows[name].append(value)
            if found is not None:
                for name, values in found.items():
                    pairs[name].extend(values)
                pairs["layer"].extend([layer] * len(found["rank"]))
                pairs["head"].extend([head] * len(found["rank"]))
            if request.detail:  # the one head: read out after, with the pass's threads
                kept = (layer, head, split)
    if request.detail:
        layer, head, split = kept
        detail = _detail(model, anatomy, layer, head, split, scores_of[layer, head])
    if progress:
        progress(len(heads), len(heads), "done")
    return WhyResult(
        model.name,
        model.fingerprint,
        {name: _column(name, values) for name, values in rows.items()},
        {name: _column(name, values) for name, values in pairs.items()} if pairs_each else {},
        detail,
        {
            "request": request.as_dict(),
            "token_ids": ids,
            "tokens": tokens,
            "notes": _notes(anatomy),
        },
    )


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """torch (and the MKL its LAPACK calls) on one thread while heads are split on worker
    threads: the parallelism is the workers' (:mod:`headforms.parallel`); a multi-threaded
    ``ssyevd`` of a ``128 x 128`` matrix spends its time at barriers, more so beside other
    workers (benchmarks/README.md, "Score splits"). The pass's threads are restored after."""
    import torch

    before = torch.get_num_threads()
    if before != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


RECORDED_BYTES = 256 * 2**20
"""Bytes of recorded passes kept in memory: the next head split on the same text (the Head
page's Next and Previous) skips its forward pass."""


def _recorded_bytes(found: tuple[Captured, np.ndarray]) -> int:
    captured, scores = found
    arrays = [*captured.inputs, *(m for m in captured.masks if m is not None)]
    arrays += [b for b in captured.biases if b is not None]
    return scores.nbytes + sum(a.nbytes for a in arrays)


_RECORDED: ByteLRU[tuple[Captured, np.ndarray]] = ByteLRU(RECORDED_BYTES, sizer=_recorded_bytes)


def recorded_pass(model: Runnable, anatomy: Anatomy, ids: list[int]) -> tuple[Captured, np.ndarray]:
    """The model's pass on ``ids``: what :func:`.capture.capturing` records and the pre-softmax
    scores (layers, heads, T, T); kept by the model's fingerprint and the tokens
    (:data:`RECORDED_BYTES`)."""
    key = (model.fingerprint, tuple(ids))
    found = _RECORDED.get(key)
    if found is None:
        with capturing(anatomy) as captured:
            passed = forward.run(model.model, ids, model.n_layers)
        if passed.scores is None:
            raise NotRunnableError(
                f"{model.name}: its pre-softmax scores could not be read (its attention does "
                "not call torch's softmax), so they cannot be split"
            )
        found = _RECORDED.put(key, (captured, passed.scores))
    return found


TEXT_COLUMNS = ("parity", "lobe", "query_token", "key_token", "end", "token")


def _column(name: str, values: list) -> np.ndarray:
    return np.asarray(values, dtype=object if name in TEXT_COLUMNS else None)


def torch_eigh(sym: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:data:`.split.Eigen` by torch's LAPACK (MKL's ``ssyevd`` for float32), in the stack's own
    precision."""
    import torch

    values, vectors = torch.linalg.eigh(torch.from_numpy(np.ascontiguousarray(sym)))
    return values.numpy(), vectors.numpy()


FLOAT32 = Eigensolver(torch_eigh, np.float32)
"""The split's eigenproblems, and the lobes' products, in float32 by torch's LAPACK: about
twice numpy's float64 speed here (benchmarks/README.md), each lobe exact to float32 rounding,
as the model's own scores are (the parts still add up exactly: the negative lobe is the
symmetric part minus the positive one, in float64)."""


def folded_biases(
    anatomy: Anatomy, layer: int, head: int
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Head ``head``'s Q and K biases times the QK-norm gains (as the factors are folded)."""
    factors = anatomy.layers[layer].factors
    kv = int(anatomy.kv_of_head[head])

    def folded(bias: np.ndarray | None, gain: np.ndarray | None, row: int) -> np.ndarray | None:
        if bias is None:
            return None
        values = np.asarray(bias[row], np.float64)
        return values if gain is None else values * np.asarray(gain, np.float64)

    return folded(factors.q_bias, factors.q_gain, head), folded(factors.k_bias, factors.k_gain, kv)


def split_head(
    anatomy: Anatomy,
    captured: Captured,
    layer: int,
    head: int,
    visible: np.ndarray,
    ranks: int = 0,
    solver: Eigensolver = FLOAT32,
) -> ScoreSplit:
    """The split of head ``head`` of ``layer`` on the pass ``captured`` recorded; ``visible``:
    the pairs the model let through (its pre-softmax scores' finite entries); ``solver``: the
    eigensolver and its precision (:data:`FLOAT32`)."""
    logit = anatomy.head_logit(layer, head)
    x = captured.inputs[layer]
    extra = captured.extra(layer, head)
    return split_scores(
        logit.factors,
        x,
        logit.factor(x),
        visible,
        extra,
        folded_biases(anatomy, layer, head),
        ranks,
        solver,
    )


def _weight_shares(anatomy: Anatomy, heads: list[Head]) -> dict[Head, dict[str, float]]:
    """Each of ``heads``: its weight shares at d = 0 (gains folded, as the analysis has them),
    the forms of the listed heads only."""
    found: dict[Head, dict[str, float]] = {}
    for layer in sorted({layer for layer, _ in heads}):
        chosen = np.array([head for at, head in heads if at == layer])
        q, k = anatomy.layers[layer].folded
        batch = head_forms(q[chosen], k, anatomy.kv_of_head[chosen])
        shares = weight_shares(batch.lobe_pos, batch.lobe_neg, batch.norm_a2, batch.norm_l2)
        for index, head in enumerate(chosen.tolist()):
            found[layer, head] = {name: float(shares[name][index]) for name in WEIGHT_COLUMNS}
    return found


def readable_ids(model: Runnable) -> np.ndarray:
    """The token ids a vocabulary readout lists: every id of the model's embeddings that the
    tokenizer knows, but unused placeholders (BERT's ``[unused7]``, Gemma's ``<unused7>``)."""
    backend = model.tokenizer.backend
    size = min(model.vocab_size, backend.get_vocab_size(with_added_tokens=True))
    return np.array(
        [i for i in range(size) if not UNUSED.match(backend.id_to_token(i) or "")], np.int64
    )


def _detail(
    model: Runnable,
    anatomy: Anatomy,
    layer: int,
    head: int,
    split: ScoreSplit,
    scores: np.ndarray,
) -> HeadDetail:
    values, vectors = directions_at(anatomy.head_logit(layer, head).factors)
    chosen = top_directions(values, DIRECTIONS)
    ids = readable_ids(model)
    onto = vectors[:, [column for _, _, column in chosen]].astype(np.float32)
    projections = direct_inputs(model, anatomy, layer, ids.tolist(), onto)
    vocabulary = vocabulary_readout(
        projections, ids, values, chosen, VOCABULARY_TOP, model.tokenizer.texts
    )
    return HeadDetail(
        layer,
        head,
        split.stacked.astype(np.float32),
        np.asarray(scores, np.float32),
        np.sort(values)[::-1].copy(),
        vocabulary,
        EXACT_PATH if layer == 0 else DIRECT_PATH.format(layer=layer),
    )


def _notes(anatomy: Anatomy) -> list[str]:
    notes = []
    if anatomy.layers and anatomy.layers[0].qk_norm_eps is not None:
        notes.append(
            "QK-norm: every part is divided by the query's and the key's RMS as the model "
            "computes them, and the gains are folded into the form"
        )
    return notes
