"""A model's tokenizer as forward passes use it: text -> token ids (special tokens included, as
the tokenizer adds them), ids -> the text of each token, and which ids are ordinary tokens.

The reference is transformers' own tokenizer (``AutoTokenizer.from_pretrained``; for a GGUF file
built from its metadata, which takes transformers 7-25 s). It is converted once and its
``tokenizers`` backend kept in the cache directory as ``tokenizer.json`` text with the special
token ids beside it, so later processes load it in about 0.1 s. Tests check that the cached
tokenizer encodes exactly as transformers' does.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from ..errors import NotRunnableError

UNUSED = re.compile(r"^(\[unused\d+\]|<unused\d+>)$")
"""Vocabulary placeholders no text ever produces (BERT's ``[unused7]``, Gemma's ``<unused7>``)."""
FORMAT = "headforms.tokenizer"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class TextTokenizer:
    """A ``tokenizers.Tokenizer`` with no truncation or padding, and the ids that are special.

    ``special_ids``: the tokenizer's special tokens (BOS, EOS, ...); ``added_ids``: every token
    added to the vocabulary (specials, control and unused tokens): none of them is ordinary.
    """

    backend: Any
    special_ids: frozenset[int]
    added_ids: frozenset[int]

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` with the special tokens the tokenizer adds (BOS, CLS/SEP)."""
        return list(self.backend.encode(text).ids)

    def texts(self, ids: list[int]) -> list[str]:
        """The text of each token on its own (as ``tokenizer.decode([id])``)."""
        return [self.backend.decode([i], skip_special_tokens=False) for i in ids]

    def pieces(self, ids: list[int]) -> list[str]:
        """Each token as the vocabulary spells it (``Ġfox``, ``▁fox``, ``##ing``)."""
        return [self.backend.id_to_token(i) or "" for i in ids]

    @cached_property
    def wrapping(self) -> tuple[list[int], list[int]]:
        """``(leading, trailing)``: the special tokens the tokenizer puts around any text."""
        probe = "x"
        bare = list(self.backend.encode(probe, add_special_tokens=False).ids)
        full = self.encode(probe)
        for start in range(len(full) - len(bare) + 1):
            if full[start : start + len(bare)] == bare:
                return full[:start], full[start + len(bare) :]
        return [], []

    def ordinary_ids(self, vocab_size: int) -> list[int]:
        """Ids below ``vocab_size`` (the model's embedding rows) that are no special or added
        token and no unused placeholder (BERT's ``[unused7]``): what a random-token probe
        draws from."""
        size = min(vocab_size, self.backend.get_vocab_size(with_added_tokens=True))
        excluded = self.special_ids | self.added_ids
        piece = self.backend.id_to_token
        return [i for i in range(size) if i not in excluded and not UNUSED.match(piece(i) or "")]

    def to_json(self) -> str:
        """The tokenizer as stored in the cache (the backend's JSON and the special ids)."""
        return json.dumps(
            {
                "format": FORMAT,
                "version": FORMAT_VERSION,
                "tokenizer": self.backend.to_str(),
                "special_ids": sorted(self.special_ids),
                "added_ids": sorted(self.added_ids),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> TextTokenizer | None:
        """A stored tokenizer, or None if it is not one of this format."""
        from tokenizers import Tokenizer

        try:
            data = json.loads(text)
            if data.get("format") != FORMAT or data.get("version") != FORMAT_VERSION:
                return None
            backend = Tokenizer.from_str(data["tokenizer"])
            return cls(backend, frozenset(data["special_ids"]), frozenset(data["added_ids"]))
        except Exception:  # not JSON, missing fields, or a backend tokenizers cannot read
            return None

    @classmethod
    def from_transformers(cls, tokenizer: Any) -> TextTokenizer:
        """The backend of a transformers tokenizer, with its truncation and padding off."""
        from tokenizers import Tokenizer

        backend = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
        backend.no_truncation()
        backend.no_padding()
        added = backend.get_added_tokens_decoder()
        special = set(tokenizer.all_special_ids) | {i for i, t in added.items() if t.special}
        return cls(backend, frozenset(special), frozenset(added))


def transformers_tokenizer(directory: Path, gguf_file: str | None, label: str) -> TextTokenizer:
    """transformers' tokenizer of a checkpoint directory (or of a GGUF file in it)."""
    from transformers import AutoTokenizer

    from .gguf_parse import cheap_gguf_parses

    try:
        if gguf_file is not None:
            with cheap_gguf_parses():  # transformers parses the whole file, several times
                tokenizer = AutoTokenizer.from_pretrained(str(directory), gguf_file=gguf_file)
        else:
            tokenizer = AutoTokenizer.from_pretrained(str(directory))
    except Exception as exc:  # transformers raises OSError, ValueError, KeyError... variously
        raise NotRunnableError(
            f"{label}: transformers cannot build its tokenizer ("
            + " ".join(str(exc).split())[:200]
            + "); attention patterns need the model's tokenizer files"
        ) from exc
    if getattr(tokenizer, "backend_tokenizer", None) is None:
        raise NotRunnableError(f"{label}: its tokenizer has no fast (tokenizers) backend")
    return TextTokenizer.from_transformers(tokenizer)
