"""The text an intervention is measured on: the shipped default, a user's text, its tokens.

:data:`DEFAULT_TEXT` is the Declaration of Independence (1776), public domain, shipped in
``texts/`` with its provenance and licence (``texts/README.md``). A measure reads the first T
tokens of the tokenizer's encoding of a text (special tokens included), T within the token cap
of every forward pass (``HEADFORMS_PROMPT_TOKENS``) and the model's position table.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import OptionError

if TYPE_CHECKING:
    from ..behaviour.runnable import Runnable

TEXT_DIRECTORY = Path(__file__).resolve().parent / "texts"


@dataclass(frozen=True)
class ShippedText:
    """A text shipped with headforms: its short ``name``, ``title``, ``kind``, file (in
    ``texts/``) and licence (texts/README.md gives each one's source)."""

    name: str
    title: str
    kind: str
    file: str
    licence: str

    @property
    def text(self) -> str:
        return (TEXT_DIRECTORY / self.file).read_text(encoding="utf-8")

    @property
    def label(self) -> str:
        """``title (kind, licence)``, as a choice shows it."""
        return f"{self.title} ({self.kind}, {self.licence})"


TEXTS: dict[str, ShippedText] = {
    text.name: text
    for text in (
        ShippedText(
            "declaration",
            "Declaration of Independence (1776)",
            "prose",
            "declaration_of_independence.txt",
            "public domain",
        ),
        ShippedText(
            "alice",
            "Alice's Adventures in Wonderland, chapter I (1865)",
            "a narrative chapter",
            "alice_chapter_1.txt",
            "public domain",
        ),
        ShippedText(
            "semver",
            "semver.h of the sv library (C)",
            "a program",
            "semver_h.txt",
            "public domain (the Unlicense)",
        ),
    )
}
"""The shipped texts by name, the default first (sources and licences: texts/README.md)."""
DEFAULT_TEXT_KEY = "declaration"
DEFAULT_TEXT_FILE = TEXT_DIRECTORY / TEXTS[DEFAULT_TEXT_KEY].file
DEFAULT_TEXT = TEXTS[DEFAULT_TEXT_KEY].text
"""The Declaration of Independence, National Archives transcription (texts/README.md)."""
DEFAULT_TEXT_NAME = "Declaration of Independence (1776, public domain)"


def shipped_text(name: object) -> ShippedText:
    """The shipped text called ``name``, or a one-line :class:`OptionError` naming them."""
    if isinstance(name, str) and name in TEXTS:
        return TEXTS[name]
    raise OptionError(f"unknown text {name!r}; the shipped texts are: " + ", ".join(TEXTS))


def text_digest(text: str) -> str:
    """The sha256 of a text's UTF-8 bytes (how a request's text enters store keys)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_SHIPPED_BY_DIGEST: dict[str, str] = {}


def text_label(text: str) -> str:
    """The name of a shipped text, or ``"a text of N characters"``."""
    if not _SHIPPED_BY_DIGEST:
        _SHIPPED_BY_DIGEST.update({text_digest(t.text): n for n, t in TEXTS.items()})
    return _SHIPPED_BY_DIGEST.get(text_digest(text), f"a text of {len(text)} characters")


MAX_TEXT_CHARACTERS = 100_000
"""The longest text accepted, in characters (a measure uses its first T tokens only)."""
MAX_TEXT_FILE_BYTES = 4 * MAX_TEXT_CHARACTERS
"""The largest text file read (UTF-8 takes at most 4 bytes a character)."""


def check_text(text: object) -> str:
    """The text as given, or a one-line :class:`OptionError` (not text, empty, too long)."""
    if not isinstance(text, str):
        raise OptionError(f"the text must be a string, not {type(text).__name__}")
    if not text.strip():
        raise OptionError("the text is empty: give some text to measure the model on")
    if len(text) > MAX_TEXT_CHARACTERS:
        raise OptionError(
            f"the text is {len(text)} characters long; at most {MAX_TEXT_CHARACTERS} are "
            "accepted (a measure reads its first T tokens only: cut it)"
        )
    return text


def read_text_file(path: Path) -> str:
    """A UTF-8 text file's contents, or one line saying why it cannot be used."""
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise OptionError(f"--text {path}: not a file")
        if size > MAX_TEXT_FILE_BYTES:
            raise OptionError(
                f"--text {path}: {size} bytes; at most {MAX_TEXT_FILE_BYTES} are read (a measure "
                "uses the first T tokens only: cut it)"
            )
        return check_text(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise OptionError(f"--text {path}: no such file") from None
    except UnicodeDecodeError:
        raise OptionError(f"--text {path}: not UTF-8 text") from None
    except OSError as exc:
        raise OptionError(f"--text {path}: cannot read it: {exc.strerror or exc}") from None


def text_tokens(model: Runnable, text: str, max_tokens: int, what: str = "the text") -> list[int]:
    """The first ``max_tokens`` token ids of ``text`` as the model's tokenizer encodes it
    (special tokens included), within the limits of a forward pass; at least two."""
    from ..behaviour.forward import check_length

    ids = model.tokenizer.encode(text)[:max_tokens]
    if len(ids) < 2:
        raise OptionError(
            f"{what} makes {len(ids)} token(s) with {model.name}'s tokenizer; a measure needs at "
            "least 2"
        )
    check_length(ids, what, model)
    return ids
