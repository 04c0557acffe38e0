"""Runnable transformers models for located models, loaded once per process and kept while used.

- GGUF files (the bundled SmolLM2 and Gemma-3, local ``.gguf``): built from headforms' own
  reader as transformers' GGUF loader builds them (:mod:`.gguf`), in about a fifth of its time.
- Checkpoint directories (the bundled MiniLM, local checkpoints, hub snapshots): transformers'
  ``AutoModelForCausalLM.from_pretrained`` for a causal language model, else
  ``AutoModel.from_pretrained`` (safetensors or ``.bin``), the field's own loaders.

Every model is float32, eager attention, eval mode; ``model`` is its base model (what attention
patterns and scores run). A causal language model also keeps its language-modelling head
(``causal_lm``: the ``*ForCausalLM`` around that same base model, sharing its weights), which
interventions use for next-token losses; an encoder (MiniLM) has none.
Loaded models are kept in an LRU bounded by their bytes (:class:`headforms.bounded.ByteLRU`;
``HEADFORMS_MODELS_MEMORY``, default 2 GiB: the three bundled models fit); one model larger
than the budget is kept alone until the next one is loaded. Tokenizers are converted once and
kept in the cache directory (:mod:`.tokens`, :mod:`.cache`).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..bounded import ByteLRU
from ..errors import HeadformsError, NotAllowedError, NotRunnableError
from ..progress import Progress, saying
from ..settings import MAX_BYTES_ENV, human_bytes, settings
from ..sources import Located, LocatedFile
from ..sources.files import TOKENIZER_FILES, files_fingerprint
from . import cache
from .tokens import TextTokenizer, transformers_tokenizer


@dataclass
class Runnable:
    """A loaded model: the base transformers module and its tokenizer (and, for a causal
    language model, the module with its language-modelling head)."""

    name: str
    fingerprint: str
    model: Any
    tokenizer: TextTokenizer
    n_layers: int
    n_heads: int
    vocab_size: int
    nbytes: int
    max_positions: int | None = None
    """The longest sequence its position embeddings cover (None: no such limit, e.g. RoPE)."""
    causal_lm: Any | None = None
    """The ``*ForCausalLM`` module whose ``base_model`` is ``model`` (the language-modelling
    head's weights loaded from the checkpoint or tied to the embeddings), or None: the
    checkpoint has no language-modelling head (an encoder)."""

    @property
    def n_heads_all(self) -> int:
        """Heads in all layers (a pattern holds a T x T matrix for each)."""
        return self.n_layers * self.n_heads

    @property
    def model_type(self) -> str:
        """transformers' ``model_type`` of the model."""
        return str(self.model.config.model_type)


def fingerprint(located: Located) -> str:
    """What a forward pass's results depend on: every weight file and the tokenizer.

    A GGUF file holds both; a hub snapshot is its commit; a local directory adds its tokenizer
    files and, when the engine reads only the attention shards, the other shards (its
    :attr:`~headforms.sources.Located.forward_files`).
    """
    if located.format == "gguf" or located.hub is not None or located.config_file is None:
        return located.fingerprint
    tokenizer = [f.path for f in located.forward_files if f.name in TOKENIZER_FILES]
    extra = [p for p in tokenizer if p is not None and p.is_file()]
    extra += [f.path for f in _other_shards(located) if f.path is not None]
    if not extra:
        return located.fingerprint
    combined = f"{located.fingerprint}+{files_fingerprint(extra)}"
    return hashlib.sha256(combined.encode()).hexdigest()


def check_confined(located: Located) -> None:
    """A model confined by a policy (hosted mode: only the files the engine reads were checked)
    gives a forward pass more to read or download: every shard and the tokenizer files
    (:attr:`~headforms.sources.Located.forward_files`). Each of a local model's must be a regular
    file in the model's own directory (its real path: no link leads out), each of a hub model's
    must have a declared size, and all of them with the weight files (and a hub model's config
    and index, downloaded too) must fit the policy's byte budget; else one line, before anything
    is read or downloaded."""
    if not located.confined or located.format == "gguf" or located.config_file is None:
        return  # a GGUF file holds everything
    if located.hub is None and located.config_file.path is not None:
        directory = Path(os.path.realpath(located.config_file.path.parent))
        for f in located.forward_files:
            real = Path(os.path.realpath(f.path)) if f.path is not None else None
            if real is None or real.parent != directory or not real.is_file():
                raise NotAllowedError(
                    f"{located.spec}: a forward pass also reads {f.name}, which is not a file in "
                    "the model's own directory on this server; refused"
                )
    unknown = [f.name for f in located.forward_files if f.size is None]
    if unknown:
        raise NotAllowedError(
            f"{located.spec}: a forward pass also downloads {', '.join(unknown)}, whose size the "
            "hub does not declare, so this server cannot check it against its limit; refused"
        )
    total, budget = located.forward_bytes, located.download_budget
    if total is not None and located.hub is not None:
        total += sum(f.size or 0 for f in (located.config_file, located.index_file) if f)
    if budget is not None and total is not None and total > budget:
        largest = max(located.forward_files, key=lambda f: f.size or 0, default=None)
        reads, read = ("reads", "read") if located.hub is None else ("downloads", "downloaded")
        among = f" (among them {largest.name}, {human_bytes(largest.size or 0)})" if largest else ""
        raise NotAllowedError(
            f"{located.spec}: a forward pass {reads} every shard and the tokenizer files, "
            f"{human_bytes(total)} in all{among}, more than this server's limit of "
            f"{human_bytes(budget)} ({MAX_BYTES_ENV}); nothing was {read}"
        )


def _other_shards(located: Located) -> list[LocatedFile]:
    """The shards of a checkpoint the engine does not read (a forward pass does)."""
    return [f for f in located.forward_files if f.name not in TOKENIZER_FILES]


def parameter_count(located: Located) -> int | None:
    """Parameters of a safetensors checkpoint from its headers (no weight read): every shard's
    (on the hub, the hub's safetensors metadata); None when they cannot be read (``.bin``, whose
    header is the whole pickle, or shards not on this machine)."""
    if located.format != "safetensors":
        return None
    if located.hub is not None and not located.hub.offline:
        from huggingface_hub import get_safetensors_metadata

        try:
            meta = get_safetensors_metadata(located.hub.repo_id, revision=located.hub.commit)
        except Exception:  # no metadata on the hub: unknown
            return None
        return int(sum(meta.parameter_count.values()))
    from ..readers import read_safetensors_header

    total = 0
    try:
        for f in (*located.weights, *_other_shards(located)):
            if f.path is None:
                return None
            header = read_safetensors_header(f.path)
            total += sum(math.prod(v["shape"]) for k, v in header.items() if k != "__metadata__")
    except (HeadformsError, OSError):
        return None
    return total


FORWARD_BASE_BYTES = {"gguf": 400 * 2**20, "directory": 512 * 2**20}
"""Memory of a forward-pass process besides its model: Python, torch and transformers (VmData
after their import: 238 MiB) and their working buffers; a checkpoint directory also runs
transformers' loader (a tiny model's pass peaks at 458 MiB)."""
ATTENTION_BYTES_PER_WEIGHT = 24
"""Bytes per attention weight of a pass: the model's weights and the tapped scores, as torch
tensors and numpy copies, and the softmax's temporaries."""


def config_layers_heads(config: dict[str, Any] | None) -> tuple[Any, Any]:
    """(layers, query heads) as a config.json declares them (a composite's text config)."""
    config = config or {}
    config = config.get("text_config", config)
    if not isinstance(config, dict):
        return None, None
    return (
        config.get("num_hidden_layers", config.get("n_layer")),
        config.get("num_attention_heads", config.get("n_head")),
    )


def _gguf_header(located: Located) -> Any:
    from ..readers import GGUFReader

    path = located.weights[0].path
    assert path is not None
    return GGUFReader(path)


def gguf_layers_heads(reader: Any) -> tuple[Any, Any]:
    """(layers, query heads) as a GGUF header declares them."""
    arch = reader.metadata.get("general.architecture")
    return (
        reader.metadata.get(f"{arch}.block_count"),
        reader.metadata.get(f"{arch}.attention.head_count"),
    )


def declared_layers_heads(located: Located) -> tuple[int, int] | None:
    """(layers, query heads) a located model declares (its GGUF header or config.json), without
    loading it; None when they are not declared as positive whole numbers, or the GGUF file is
    not on this machine yet."""
    if located.format == "gguf":
        if located.weights[0].path is None:  # a hub file not fetched yet: known after loading
            return None
        layers, heads = gguf_layers_heads(_gguf_header(located))
    else:
        layers, heads = config_layers_heads(located.config)
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (layers, heads)):
        return None
    return layers, heads


def forward_memory(located: Located, tokens: int) -> int | None:
    """Estimated peak memory (bytes) of loading ``located`` and running it on ``tokens`` tokens,
    from declared sizes only (headers, config); None when they are not known. The float32
    weights, the attention of every head, the base, and the loading's transients: a GGUF
    tensor's dequantization, or transformers' copy of a checkpoint. Tests check that it bounds
    the measured peaks."""
    declared = declared_size(located)
    return None if declared is None else pass_memory(declared, located.format, tokens)


def pass_memory(declared: tuple[int, int, int], weight_format: str, tokens: int) -> int:
    """:func:`forward_memory` of a model's :func:`declared_size` and weight format."""
    params, transient, heads_all = declared
    attention = ATTENTION_BYTES_PER_WEIGHT * heads_all * tokens * tokens
    base = FORWARD_BASE_BYTES["gguf" if weight_format == "gguf" else "directory"]
    return base + 4 * params + attention + transient


def declared_size(located: Located) -> tuple[int, int, int] | None:
    """``(parameters, loading transient in bytes, heads in all layers)`` of a model from its
    declared sizes only (a GGUF header, safetensors headers, config.json), without loading it;
    None when they are not known."""
    if located.format == "gguf":
        reader = _gguf_header(located)
        sizes = [math.prod(reader.shape(name)) for name in reader.names()]
        params, transient = sum(sizes), 3 * max(sizes)
        layers, heads = gguf_layers_heads(reader)
    else:
        params = parameter_count(located)
        if params is None and located.format == "bin" and located.weight_bytes:
            params = located.weight_bytes // 2  # at worst float16 on disk
        transient = 4 * (params or 0)
        layers, heads = config_layers_heads(located.config)
    if params is None or not all(isinstance(v, int) and v > 0 for v in (layers, heads)):
        return None
    return params, transient, layers * heads


# ---------------------------------------------------------------------------------------------
# Loading


def _threads() -> None:
    """torch's intra-op threads (:attr:`headforms.settings.Settings.forward_threads`)."""
    import torch

    threads = settings().forward_threads
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def load(located: Located, progress: Progress | None = None) -> Runnable:
    """A runnable model of ``located`` (not cached in memory: see :func:`runnable`)."""
    saying(progress, "importing torch and transformers")
    try:
        import accelerate  # noqa: F401 - the libraries of every forward pass, checked up front
        import torch  # noqa: F401
    except ImportError as exc:
        raise NotRunnableError(
            f"forward passes need torch and accelerate ({exc.name} is not installed): install "
            "the CPU build of torch, then `pip install 'headforms[behaviour]'`"
        ) from exc

    _threads()
    with _quiet_transformers():
        if located.format == "gguf":
            return _load_gguf(located, progress)
        return _load_directory(located, progress)


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """No progress bars or load reports from transformers while loading (progress is ours)."""
    from transformers.utils import logging

    verbosity, bars = logging.get_verbosity(), logging.is_progress_bar_enabled()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        logging.set_verbosity(verbosity)
        if bars:
            logging.enable_progress_bar()


def _load_gguf(located: Located, progress: Progress | None) -> Runnable:
    from ..readers import GGUFReader
    from .gguf import build_model

    path = located.weights[0].path
    assert path is not None
    key = fingerprint(located)
    tokenizer = cache.load_tokenizer(key)
    if tokenizer is None:
        saying(
            progress, "converting the tokenizer from the GGUF metadata (once; kept in the cache)"
        )
        tokenizer = transformers_tokenizer(path.parent, path.name, located.display_name)
        cache.save_tokenizer(key, tokenizer)
    saying(progress, "reading and dequantizing the weights")
    full = build_model(GGUFReader(path), located.display_name, with_head=True)
    return _runnable(located, key, full.base_model, tokenizer, full)


def _load_directory(located: Located, progress: Progress | None) -> Runnable:
    directory = _directory(located, progress)
    key = fingerprint(located)
    tokenizer = cache.load_tokenizer(key)
    if tokenizer is None:
        if not any((directory / name).is_file() for name in TOKENIZER_FILES):
            raise NotRunnableError(
                f"{located.display_name} has no tokenizer files (one of "
                + ", ".join(TOKENIZER_FILES)
                + "): attention patterns need the model's tokenizer"
            )
        saying(progress, "reading the tokenizer")
        tokenizer = transformers_tokenizer(directory, None, located.display_name)
        cache.save_tokenizer(key, tokenizer)
    saying(progress, "loading the weights (transformers)")
    try:
        model, causal_lm = _from_pretrained(directory, located.config)
    except HeadformsError:
        raise
    except Exception as exc:  # transformers' own errors: unknown type, missing weights, ...
        raise NotRunnableError(
            f"{located.display_name}: transformers cannot run it: "
            + " ".join(str(exc).split())[:300]
        ) from exc
    return _runnable(located, key, model, tokenizer, causal_lm)


CAUSAL_LM_SUFFIXES = ("ForCausalLM", "LMHeadModel")
LOAD_POLL_S = 0.25
"""Seconds between a waiting thread's relays of the load it waits for."""
"""Endings of the ``architectures`` a config.json names for a causal language model."""


def _from_pretrained(directory: Path, config: dict[str, Any] | None) -> tuple[Any, Any | None]:
    """``(base model, *ForCausalLM or None)`` of a checkpoint directory: with its
    language-modelling head when the config names a causal language model and the checkpoint
    holds that head's weights (or ties them to the embeddings); else the base model alone, as
    ``AutoModel`` loads it (a head transformers would initialise at random is never used)."""
    import torch
    from transformers import AutoModel, AutoModelForCausalLM

    options = {"attn_implementation": "eager", "dtype": torch.float32}
    names = (config or {}).get("architectures") or []
    if any(str(name).endswith(CAUSAL_LM_SUFFIXES) for name in names):
        full, info = AutoModelForCausalLM.from_pretrained(
            str(directory), output_loading_info=True, **options
        )
        full = full.eval().requires_grad_(False)
        prefix = full.base_model_prefix + "."
        if any(not key.startswith(prefix) for key in info.get("missing_keys", ())):
            return full.base_model, None  # its head would be random: the base model alone
        return full.base_model, full
    model = AutoModel.from_pretrained(str(directory), **options)
    return model.eval().requires_grad_(False), None


def _directory(located: Located, progress: Progress | None) -> Path:
    """The checkpoint directory, with every weight and tokenizer file on this machine (a hub
    model's downloaded into its snapshot, all within its byte budget: :func:`check_confined`
    checked their declared sizes first)."""
    if located.hub is None:
        assert located.config_file is not None and located.config_file.path is not None
        return located.config_file.path.parent
    saying(progress, "downloading the model files")
    from ..sources.hub import fetch_hub_snapshot

    return fetch_hub_snapshot(located, located.download_budget)


def _runnable(
    located: Located,
    key: str,
    model: Any,
    tokenizer: TextTokenizer,
    causal_lm: Any | None = None,
) -> Runnable:
    config = model.config
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    whole = causal_lm if causal_lm is not None else model  # tied weights are counted once
    nbytes = sum(t.numel() * t.element_size() for t in whole.parameters())
    nbytes += sum(t.numel() * t.element_size() for t in whole.buffers())
    embeddings = model.get_input_embeddings()
    return Runnable(
        name=located.display_name,
        fingerprint=key,
        model=model,
        tokenizer=tokenizer,
        n_layers=int(text.num_hidden_layers),
        n_heads=int(text.num_attention_heads),
        vocab_size=int(embeddings.weight.shape[0]),
        nbytes=int(nbytes),
        max_positions=_position_table(text),
        causal_lm=causal_lm,
    )


def _position_table(config: Any) -> int | None:
    """Rows of a learned or sinusoidal position table (GPT-2's ``n_positions``, BERT's
    ``max_position_embeddings``), past which a forward pass fails; None for rotary models,
    whose ``max_position_embeddings`` is a training length, not a table."""
    rotary = ("rope_parameters", "rope_theta", "rope_scaling", "rotary_pct", "rotary_dim")
    if any(getattr(config, name, None) is not None for name in rotary):
        return None
    for name in ("n_positions", "max_position_embeddings"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


# ---------------------------------------------------------------------------------------------
# The process-wide LRU


class LoadedModels:
    """Loaded models by fingerprint in a :class:`~headforms.bounded.ByteLRU` of their bytes
    (the newest kept even when it alone passes the budget); concurrent callers for one model
    wait for one load."""

    def __init__(self) -> None:
        self._items: ByteLRU[Runnable] = ByteLRU(
            settings().models_memory, sizer=lambda model: model.nbytes, keep_newest=True
        )
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Lock] = {}
        self._said: dict[str, str] = {}
        """What each load running now last said (relayed to the threads waiting for it)."""

    def get(
        self, located: Located, progress: Progress | None = None, budget: int | None = None
    ) -> Runnable:
        """The loaded model of ``located`` (loaded now if it is not in memory), kept within
        ``budget`` bytes (default ``HEADFORMS_MODELS_MEMORY``)."""
        key = fingerprint(located)
        hit = self._items.get(key)
        if hit is not None:
            return hit
        with self._lock:
            gate = self._loading.setdefault(key, threading.Lock())
        try:
            self._enter(gate, key, progress)
            try:
                hit = self._items.get(key)
                if hit is not None:
                    return hit
                model = load(located, self._reporting(key, progress))
                self._items.max_bytes = budget if budget is not None else settings().models_memory
                self._items.put(key, model)
                return model
            finally:
                gate.release()
        finally:
            with self._lock:
                self._loading.pop(key, None)
                self._said.pop(key, None)

    def _enter(self, gate: threading.Lock, key: str, progress: Progress | None) -> None:
        """Take ``gate``; while another thread loads the model, relay what that load says
        (a page's forward pass waiting for the load its page started early says what is
        being done, not nothing)."""
        while not gate.acquire(timeout=LOAD_POLL_S):
            said = self._said.get(key)
            if progress is not None and said is not None:
                progress(0, 1, said)

    def _reporting(self, key: str, progress: Progress | None) -> Progress:
        """``progress``, also kept as the load's last message for threads waiting on it."""

        def report(done: int, total: int, message: str) -> None:
            self._said[key] = message
            if progress is not None:
                progress(done, total, message)

        return report

    def nbytes(self) -> int:
        """Bytes of the models kept now."""
        return self._items.bytes

    def keys(self) -> list[str]:
        """Fingerprints of the models kept now, least recently used first."""
        return [str(key) for key in self._items.keys()]

    def clear(self) -> None:
        """Forget every loaded model."""
        self._items.clear()


LOADED = LoadedModels()
"""The process's loaded models."""


def runnable(located: Located, progress: Progress | None = None) -> Runnable:
    """The loaded model of ``located``, from :data:`LOADED` (loaded now if needed)."""
    return LOADED.get(located, progress)
