"""What a server knows of a runnable model before any worker starts, so that a forward pass it
can refuse costs nothing: the model's heads, attention shapes, vocabulary and forward-pass
memory, from declared sizes only (config.json, safetensors or GGUF headers), and its tokenizer
once an earlier pass converted and stored it (:func:`headforms.behaviour.cache.load_tokenizer`).

A prompt is counted only when it might be too long: ``len(prompt's UTF-8 bytes)`` plus
:data:`~headforms.behaviour.limits.SPECIAL_TOKEN_ROOM` bounds its tokens (a token is at least one
byte of text), so a shorter prompt fits whatever the tokenizer. The tokenizers the server holds
are bounded in bytes (:data:`TOKENIZERS_MEMORY`, estimated at :data:`TOKENIZER_EXPANSION` times
their stored size; one larger than that is never loaded: its prompts are counted by the
worker, and a refusal there counts against the visitor). Declared sizes are kept per model
(:data:`MAX_MODELS_KNOWN`), so a GGUF header is parsed once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..architectures import Shapes
from ..bounded import ByteLRU

if TYPE_CHECKING:
    from ..behaviour.tokens import TextTokenizer
    from ..sources import Located

TOKENIZERS_MEMORY = 128 * 2**20
"""Bytes of converted tokenizers a server holds to count prompts (estimated)."""
TOKENIZER_EXPANSION = 5
"""A loaded tokenizer's memory per byte of its stored JSON (SmolLM2's: 2.1 MB stored, 8.6 MiB
loaded)."""
MAX_MODELS_KNOWN = 256
"""Models whose declared sizes a server keeps."""


@dataclass(frozen=True)
class ModelFacts:
    """A model as the server knows it without loading it: its display ``name``, forward-pass
    ``fingerprint``, heads in all layers (None: not declared), the estimated peak memory of a
    pass at the token cap (None: unknown), and ``tokenizer()``, its converted tokenizer if the
    server holds or may load one (else None); its attention ``shapes`` and ``vocab`` size when
    declared, and ``loaded``, the estimated memory of the loaded model before any pass."""

    name: str
    fingerprint: str
    heads_all: int | None
    memory: int | None
    tokenizer: Callable[[], TextTokenizer | None]
    shapes: Shapes | None = None
    vocab: int | None = None
    loaded: int | None = None

    def pass_memory(self, tokens: int) -> int | None:
        """The estimated peak memory of the model and one pass of ``tokens`` tokens (every
        head's attention kept, as a pattern's), or None when not known."""
        from ..behaviour.runnable import ATTENTION_BYTES_PER_WEIGHT

        if self.loaded is None or self.heads_all is None:
            return None
        return self.loaded + ATTENTION_BYTES_PER_WEIGHT * self.heads_all * tokens * tokens

    def check_tokens(self, count: int, what: str) -> None:
        """A one-line :class:`~headforms.errors.OptionError` when ``what``, ``count`` tokens
        long, is longer than a pass of this model takes (the worker's own rule)."""
        from ..behaviour.limits import check_token_count

        if self.heads_all is not None:
            check_token_count(count, what, self.name, self.heads_all)

    def check_text(self, text: str, what: str) -> None:
        """:meth:`check_tokens` of ``text`` (a prompt), counted by the model's tokenizer when it
        might be too long and the server holds the tokenizer; else left to the worker."""
        from ..behaviour.limits import SPECIAL_TOKEN_ROOM, token_limit

        if self.heads_all is None:
            return
        limit, _ = token_limit(self.name, self.heads_all)
        if len(text.encode("utf-8")) + SPECIAL_TOKEN_ROOM <= limit:
            return  # it cannot have more tokens than that
        tokenizer = self.tokenizer()
        if tokenizer is not None:
            self.check_tokens(len(tokenizer.encode(text)), what)


class KnownModels:
    """Declared sizes per model and the tokenizers held, for one server process (thread-safe)."""

    def __init__(self) -> None:
        self._sizes: OrderedDict[str, _Declared] = OrderedDict()
        self._lock = threading.Lock()
        self.tokenizers: ByteLRU[tuple[TextTokenizer, int]] = ByteLRU(
            TOKENIZERS_MEMORY, sizer=lambda held: held[1]
        )

    def facts(self, located: Located, fingerprint: str, tokens: int) -> ModelFacts:
        """What the server knows of ``located`` (its forward-pass ``fingerprint``), with the
        memory estimate of a pass of ``tokens`` tokens."""
        from ..behaviour.runnable import pass_memory

        declared = self._declared(located, fingerprint)
        heads_all = memory = loaded = None
        if declared.sizes is not None:
            heads_all = declared.sizes[2]
            memory = pass_memory(declared.sizes, located.format, tokens)
            loaded = pass_memory(declared.sizes, located.format, 0)
        return ModelFacts(
            located.display_name,
            fingerprint,
            heads_all,
            memory,
            lambda: self.tokenizer(fingerprint),
            declared.shapes,
            declared.vocab,
            loaded,
        )

    def tokenizer(self, fingerprint: str) -> TextTokenizer | None:
        """The model's converted tokenizer: held, or loaded from the store if it fits the
        budget; None when no pass converted it yet or it is too large to hold."""
        from ..behaviour import cache

        held = self.tokenizers.get(fingerprint)
        if held is not None:
            return held[0]
        stored = cache.stored_tokenizer_bytes(fingerprint)
        if stored is None or stored * TOKENIZER_EXPANSION > TOKENIZERS_MEMORY:
            return None
        tokenizer = cache.load_tokenizer(fingerprint)
        if tokenizer is not None:
            self.tokenizers.put(fingerprint, (tokenizer, stored * TOKENIZER_EXPANSION))
        return tokenizer

    def _declared(self, located: Located, fingerprint: str) -> _Declared:
        from ..behaviour.runnable import declared_size

        key = f"{fingerprint}:{located.format}"
        with self._lock:
            if key in self._sizes:
                self._sizes.move_to_end(key)
                return self._sizes[key]
        sizes = declared_size(located)
        shapes, vocab = declared_shapes(located) if sizes is not None else (None, None)
        declared = _Declared(sizes, shapes, vocab)
        with self._lock:
            self._sizes[key] = declared
            while len(self._sizes) > MAX_MODELS_KNOWN:
                self._sizes.popitem(last=False)
        return declared


@dataclass(frozen=True)
class _Declared:
    """What a model's headers and config declare: ``(parameters, loading transient, heads in
    all layers)``, its attention shapes and its vocabulary (None: not declared)."""

    sizes: tuple[int, int, int] | None
    shapes: Shapes | None
    vocab: int | None


def declared_shapes(located: Located) -> tuple[Shapes | None, int | None]:
    """A runnable model's declared attention shapes and vocabulary size (its GGUF header, read
    without the metadata arrays, or its config.json); None for what is not declared."""
    from ..architectures import shapes_from_config
    from ..errors import HeadformsError

    try:
        if located.format == "gguf":
            if located.weights[0].path is None:  # a hub file not fetched yet
                return None, None
            from ..models.source import open_model

            source = open_model(located, use_store=False)
            embedding = "token_embd.weight"
            names = source.reader.names()
            vocab = max(source.reader.shape(embedding)) if embedding in names else None
            return shapes_from_config(source.config), vocab
        config = located.config or {}
        text = config.get("text_config") or config
        vocab = text.get("vocab_size") if isinstance(text, dict) else None
        shapes = shapes_from_config(config)
    except HeadformsError:
        return None, None
    return shapes, vocab if isinstance(vocab, int) and vocab > 0 else None
