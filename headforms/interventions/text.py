"""The text an intervention is measured on: the shipped default, a user's text, its tokens.

:data:`DEFAULT_TEXT` is the Declaration of Independence (1776), public domain, shipped in
``texts/`` with its provenance and licence (``texts/README.md``). A measure reads the first T
tokens of the tokenizer's encoding of a text (special tokens included), T within the token cap
of every forward pass (``HEADFORMS_PROMPT_TOKENS``) and the model's position table.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import OptionError

if TYPE_CHECKING:
    from ..behaviour.runnable import Runnable

TEXT_DIRECTORY = Path(__file__).resolve().parent / "texts"
DEFAULT_TEXT_FILE = TEXT_DIRECTORY / "declaration_of_independence.txt"
DEFAULT_TEXT = DEFAULT_TEXT_FILE.read_text(encoding="utf-8")
"""The Declaration of Independence, National Archives transcription (texts/README.md)."""
DEFAULT_TEXT_NAME = "Declaration of Independence (1776, public domain)"

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
