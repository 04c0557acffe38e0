"""Forward passes from a model spec: locate -> store? -> load (once per process) -> run -> store.

:func:`attention` gives every head's attention on a prompt; :func:`head_type_scores` every
head's previous-token, first-token, duplicate-token and induction scores on the seeded
repeated-token probe (previous-token and first-token on a prompt instead, when one is given).
Results are stored like analyses (:mod:`.cache`); a stored result needs no model, no torch.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

from ..errors import NotRunnableError, OptionError
from ..progress import Progress, saying
from ..sources import TABLE_FORMAT, Located, Policy, Spec, locate, parse_spec
from ..store import ResultStore, key_lock
from . import cache, forward
from .limits import DEFAULT_PROBE_LENGTH, DEFAULT_PROMPT, DEFAULT_SEED, check_probe, check_prompt
from .outputs import AttentionPattern, HeadTypeScores, check_layer_head, score_columns
from .probe import repeated_tokens
from .runnable import check_confined, declared_layers_heads, fingerprint, runnable
from .scores import first_token, previous_token
from .scores import head_type_scores as probe_scores

T = TypeVar("T")
ModelSpec = str | os.PathLike[str] | Spec | Located
"""A spec's text or path, a parsed :class:`Spec`, or a model already located (as it is)."""


def locate_runnable(
    spec: ModelSpec,
    policy: Policy | None = None,
    what: str = "attention patterns and head-type scores",
) -> Located:
    """The located model of a spec that names weights (a published table has none), within
    ``policy`` (a hosted server's; a located model was located under one already); ``what``
    needs the weights (for the error line)."""
    if isinstance(spec, Located):
        located = spec
    else:
        parsed = spec if isinstance(spec, Spec) else parse_spec(os.fspath(spec), policy)
        if parsed.kind == "table":
            located = None
        else:
            located = locate(parsed)
    if located is None or located.format == TABLE_FORMAT:
        name = located.spec if located is not None else str(getattr(spec, "text", spec))
        raise NotRunnableError(
            f"{name} is a published per-head table: it has no weights to run; {what} need the "
            "model itself"
        )
    check_confined(located)
    return located


def attention(
    spec: ModelSpec,
    prompt: str = DEFAULT_PROMPT,
    *,
    use_cache: bool = True,
    store: ResultStore | None = None,
    progress: Progress | None = None,
    policy: Policy | None = None,
    layer: int | None = None,
    head: int | None = None,
) -> AttentionPattern:
    """Every head's attention weights (and pre-softmax scores) on ``prompt``, as the model's
    tokenizer encodes it (special tokens included); ``policy``: what may be opened (None:
    everything). ``layer``, ``head``: the ones the caller will read, refused before any pass
    (from the model's declared sizes) if the model does not have them."""
    prompt = check_prompt(prompt)
    located = locate_runnable(spec, policy)
    if layer is not None or head is not None:
        declared = declared_layers_heads(located)
        if declared is not None:  # else the pattern's own check, after the pass
            check_layer_head(layer, head, *declared, located.spec)
    key_fingerprint = fingerprint(located)

    def compute() -> AttentionPattern:
        return _attention(located, key_fingerprint, prompt, progress)

    if not use_cache:
        return compute()
    key = cache.pattern_key(key_fingerprint, prompt)
    found = _stored(store, key, cache.get_pattern, cache.put_pattern, compute)
    return found.named(located.spec)


def _stored(
    store: ResultStore | None,
    key: str,
    get: Callable[[ResultStore, str], T | None],
    put: Callable[[ResultStore, str, T], None],
    compute: Callable[[], T],
) -> T:
    """The stored result under ``key``, or ``compute()``'d and stored (once across threads and
    processes: the key's lock)."""
    store = store or ResultStore()
    found = get(store, key)
    if found is None:
        with key_lock(key):
            found = get(store, key)
            if found is None:
                found = compute()
                put(store, key, found)
    return found


def _attention(
    located: Located, key_fingerprint: str, prompt: str, progress: Progress | None
) -> AttentionPattern:
    model = runnable(located, progress)
    ids = model.tokenizer.encode(prompt)
    if not ids:
        raise OptionError(f"{located.display_name}'s tokenizer makes no tokens of the prompt")
    forward.check_length(ids, "the prompt", model)
    saying(progress, f"running {located.display_name} on {len(ids)} tokens")
    result = forward.run(model.model, ids, model.n_layers)
    return AttentionPattern(
        model=located.spec,
        fingerprint=key_fingerprint,
        token_ids=ids,
        tokens=model.tokenizer.texts(ids),
        pieces=model.tokenizer.pieces(ids),
        weights=result.weights,
        scores=result.scores,
        meta={"prompt": prompt, "model_type": model.model_type},
    )


def head_type_scores(
    spec: ModelSpec,
    prompt: str | None = None,
    probe_length: int = DEFAULT_PROBE_LENGTH,
    seed: int = DEFAULT_SEED,
    *,
    use_cache: bool = True,
    store: ResultStore | None = None,
    progress: Progress | None = None,
    policy: Policy | None = None,
) -> HeadTypeScores:
    """Every head's head-type scores on the probe of ``probe_length`` (R) seeded random tokens
    repeated twice; with ``prompt``, ``previous_token`` and ``first_token`` are the prompt's."""
    probe_length, seed = check_probe(probe_length, seed)
    if prompt is not None:
        prompt = check_prompt(prompt)
    located = locate_runnable(spec, policy)
    key_fingerprint = fingerprint(located)

    def compute() -> HeadTypeScores:
        return _probe_scores(located, key_fingerprint, probe_length, seed, progress)

    if use_cache:
        key = cache.scores_key(key_fingerprint, probe_length, seed)
        found = _stored(store, key, cache.get_scores, cache.put_scores, compute)
    else:
        found = compute()
    found = found.named(located.spec)
    if prompt is None:
        return found
    pattern = attention(located, prompt, use_cache=use_cache, store=store, progress=progress)
    columns = dict(found.columns)  # layer-major, as the pattern's (layers, heads) flattened
    columns["previous_token"] = previous_token(pattern.weights).reshape(-1)
    columns["first_token"] = first_token(pattern.weights).reshape(-1)
    meta = {**found.meta, "prompt": prompt, "prompt_tokens": len(pattern.token_ids)}
    return HeadTypeScores(found.model, found.fingerprint, columns, meta)


def _probe_scores(
    located: Located, key_fingerprint: str, probe_length: int, seed: int, progress: Progress | None
) -> HeadTypeScores:
    model = runnable(located, progress)
    probe = repeated_tokens(model.tokenizer, model.vocab_size, probe_length, seed)
    forward.check_length(probe.token_ids, "the probe", model)
    saying(progress, f"running {located.display_name} on the probe ({len(probe.token_ids)} tokens)")
    result = forward.run(model.model, probe.token_ids, model.n_layers)
    columns = score_columns(result.weights, probe_scores(result.weights, probe.start, probe_length))
    meta = {
        "probe_length": probe_length,
        "seed": seed,
        "probe_start": probe.start,
        "probe_ids": probe.token_ids,
    }
    return HeadTypeScores(located.spec, key_fingerprint, columns, meta)
