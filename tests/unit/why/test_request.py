"""A score split's request: every bad field refused in one line, plain JSON both ways, the key's
options (the text by its digest)."""

from __future__ import annotations

import pytest

from headforms.errors import OptionError
from headforms.interventions.request import Scope
from headforms.why import MAX_PAIRS, WhyRequest
from headforms.why.run import request_of


def test_a_request_travels_as_plain_json() -> None:
    request = request_of(heads="3.1", text="some text", max_tokens=20, pairs=4, detail=True)
    again = WhyRequest.from_dict(request.as_dict())
    assert again == request
    assert again.pairs_per_direction == 10  # a detail lists at least ten pairs
    options = request.key_options()
    assert options["text"] != "some text" and len(options["text"]) == 64


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"max_tokens": 1}, "--max-tokens 1"),
        ({"max_tokens": 10**6}, "--max-tokens"),
        ({"pairs": -1}, "--pairs -1"),
        ({"pairs": MAX_PAIRS + 1}, f"0 to {MAX_PAIRS}"),
        ({"text": "  "}, "the text is empty"),
        ({"detail": True}, "exactly one head"),
        ({"detail": True, "scope": Scope("heads", ((1, 1), (1, 2)))}, "exactly one head"),
        ({"detail": "yes"}, "true or false"),
        ({"scope": Scope("parity", parity="III")}, "unknown parity"),
    ],
)
def test_bad_fields_are_one_line(fields: dict, message: str) -> None:
    with pytest.raises(OptionError, match=message.replace("+", r"\+")) as found:
        WhyRequest(**fields).checked()
    assert "\n" not in str(found.value)


def test_a_foreign_dict_is_one_line() -> None:
    with pytest.raises(OptionError, match="not a score-split request"):
        WhyRequest.from_dict({"scope": {"kind": "all"}, "colour": "red"})
