"""The request as a typed value: checked once, one line for every bad field, plain JSON both
ways; the shipped text and its provenance; edit names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from headforms.errors import LimitError, OptionError
from headforms.interventions import (
    DEFAULT_TEXT,
    EDITS,
    InterventionLimits,
    InterventionRequest,
    Scope,
    edit_named,
    parse_heads,
)
from headforms.interventions.text import (
    DEFAULT_TEXT_FILE,
    MAX_TEXT_CHARACTERS,
    TEXTS,
    check_text,
    read_text_file,
    shipped_text,
    text_label,
)


def request(**fields) -> InterventionRequest:
    fields.setdefault("scope", Scope("heads", heads=((1, 2),)))
    return InterventionRequest(edit=fields.pop("edit", "symmetric"), **fields)


def test_a_request_travels_as_json() -> None:
    original = request(each=True, text="Some text.", controls=3, seed=9, probe_length=12)
    data = json.loads(json.dumps(original.as_dict()))
    assert InterventionRequest.from_dict(data) == original
    for scope in (Scope("layer", layer=4), Scope("parity", parity="I-"), Scope("all")):
        again = InterventionRequest.from_dict(
            json.loads(json.dumps(request(scope=scope).as_dict()))
        )
        assert again.scope == scope


def test_the_store_key_names_the_text_by_its_digest() -> None:
    options = request(text="x" * 50).key_options()
    assert options["text"] != "x" * 50 and len(options["text"]) == 64
    assert request(text="a").key_options() != request(text="b").key_options()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"edit": "shuffle"}, "unknown edit 'shuffle'; accepted: identity"),
        ({"text": "   "}, "the text is empty"),
        ({"text": "x" * (MAX_TEXT_CHARACTERS + 1)}, "characters long; at most"),
        ({"max_tokens": 1}, "--max-tokens 1: a measure reads 2 to"),
        ({"max_tokens": 100_000}, "--max-tokens 100000"),
        ({"controls": 65}, "--controls 65: 0 to 64"),
        ({"seed": -1}, "--seed -1"),
        ({"probe_length": 1}, "probe length 1 is out of range"),
        ({"match": "gaussian"}, "unknown match 'gaussian'; accepted: scores, span"),
        ({"scope": {"kind": "parity", "parity": "III"}}, "unknown parity 'III'"),
        ({"scope": {"kind": "heads"}}, "no heads given"),
        ({"scope": {"kind": "heads", "heads": [[1, 2], [1, 2]]}}, "listed twice"),
        ({"scope": {"kind": "layer", "layer": -1}}, "layer -1 is not a whole number"),
    ],
)
def test_a_bad_field_is_one_line_when_the_request_is_made(fields: dict, message: str) -> None:
    """Parsed once: a request (or its scope) is checked when made, from Python or from JSON."""
    with pytest.raises(OptionError) as info:
        if isinstance(fields.get("scope"), dict):
            data = request().as_dict()
            data["scope"] = fields["scope"]
            InterventionRequest.from_dict(data)
        else:
            request(**fields)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_request_is_never_checked_twice() -> None:
    """A made request is valid: nothing in the library re-validates it (no ``checked``)."""
    assert not hasattr(InterventionRequest, "checked")
    assert request(match="span").match.value == "span"


def test_heads_are_written_layer_dot_head() -> None:
    assert parse_heads("3.1, L4.H2,0:0") == ((3, 1), (4, 2), (0, 0))
    with pytest.raises(OptionError, match="'3' is not a head; write LAYER.HEAD"):
        parse_heads("3")


def test_passes_are_counted_before_any_work() -> None:
    """Per row (one, or one per head with each) the edit, its controls and the probe; the
    reference points have no controls."""
    assert request(controls=8).passes(270) == 9
    assert request(controls=8, each=True).passes(270) == 270 * 9
    assert request(controls=8, each=True, probe_length=20).passes(10) == 10 * 9 * 2
    assert request(edit="output_zero", controls=8, each=True).passes(10) == 10


def test_limits_refuse_too_many_passes_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    InterventionLimits(max_passes=10).check_passes(10, "x")
    with pytest.raises(LimitError, match="takes 11 sequence passes; at most 10"):
        InterventionLimits(max_passes=10).check_passes(11, "x")


def test_one_pass_bound_for_the_library_the_command_line_and_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The default limits read ``HEADFORMS_INTERVENTION_PASSES``, as the hosted server does."""
    monkeypatch.setenv("HEADFORMS_INTERVENTION_PASSES", "33")
    InterventionLimits().check_passes(33, "x")
    with pytest.raises(LimitError, match="at most 33 are allowed .HEADFORMS_INTERVENTION_PASSES"):
        InterventionLimits().check_passes(34, "x")
    monkeypatch.delenv("HEADFORMS_INTERVENTION_PASSES")
    assert InterventionLimits().passes_allowed == 1024


def test_every_edit_is_named_and_an_unknown_one_refused() -> None:
    assert list(EDITS)[:8] == [
        "identity", "symmetric", "antisymmetric", "transpose", "flip", "zero", "rank1", "balanced",
    ]  # fmt: skip
    assert edit_named("flip").coefficients == (0.0, -1.0)
    with pytest.raises(OptionError):
        edit_named(3)


def test_the_shipped_text_and_its_provenance() -> None:
    """A few KB of English prose, the Declaration of Independence, its source and licence in a
    README beside it."""
    assert DEFAULT_TEXT.startswith("In Congress, July 4, 1776.")
    assert "We hold these truths to be self-evident" in DEFAULT_TEXT
    assert DEFAULT_TEXT.rstrip().endswith("our Fortunes and our sacred Honor.")
    assert 4000 < len(DEFAULT_TEXT.encode()) < 16000
    readme = (DEFAULT_TEXT_FILE.parent / "README.md").read_text()
    assert "Public domain" in readme and "National Archives" in readme


def test_three_shipped_texts_of_different_kinds_with_source_and_licence() -> None:
    """Prose, a narrative chapter and a program, each named in the README with its source (a
    package of PyPI or Debian and the file's sha256, or the transcription) and licence."""
    readme = (DEFAULT_TEXT_FILE.parent / "README.md").read_text()
    assert list(TEXTS) == ["declaration", "alice", "semver"]
    assert TEXTS["declaration"].text == DEFAULT_TEXT
    assert TEXTS["alice"].text.startswith("CHAPTER I\n\nDown the Rabbit-Hole")
    assert "Alice was beginning to get very tired" in TEXTS["alice"].text
    assert TEXTS["semver"].text.startswith("#ifndef SV_H__")
    for name, text in TEXTS.items():
        assert f"`{name}`" in readme and text.file in readme
        assert "public domain" in text.licence
        assert 4000 < len(text.text.encode()) < 16000
        assert text_label(text.text) == name
    assert "Brotli 1.1.0" in readme and "libsv-dev" in readme and "Unlicense" in readme
    assert text_label("other") == "a text of 5 characters"
    with pytest.raises(OptionError, match="the shipped texts are: declaration, alice, semver"):
        shipped_text("bible")


def test_a_text_file_is_read_or_refused_in_one_line(tmp_path: Path) -> None:
    good = tmp_path / "good.txt"
    good.write_text("Call it a text.", encoding="utf-8")
    assert read_text_file(good) == "Call it a text."
    binary = tmp_path / "bad.txt"
    binary.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(OptionError, match="not UTF-8 text"):
        read_text_file(binary)
    with pytest.raises(OptionError, match="no such file"):
        read_text_file(tmp_path / "missing.txt")
    with pytest.raises(OptionError, match="not a file"):
        read_text_file(tmp_path)
    with pytest.raises(OptionError, match="must be a string"):
        check_text(b"bytes")
