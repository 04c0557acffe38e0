"""A spec is parsed once into a value that travels: the policy it was checked by goes with it
into locating, and the located model (with the budget and confinement its policy gave it) is a
plain value a worker process receives as JSON and opens without locating it again; a published
table is one more source kind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tiny_models as tm

from headforms.errors import NotAllowedError
from headforms.hosted.policy import Policy
from headforms.models.source import open_model
from headforms.sources import TABLE_FORMAT, Located, locate, parse_spec


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("located") / "llama"
    tm.build("llama", directory, seed=3)
    return directory


def test_a_located_model_crosses_a_process_boundary_as_json(tiny_dir: Path) -> None:
    policy = Policy(roots=(tiny_dir.parent.resolve(),), max_bytes=10**9)
    located = locate(str(tiny_dir), policy)
    assert located.confined and located.download_budget == 10**9
    again = Located.from_dict(json.loads(json.dumps(located.as_dict())))
    assert again == located and again.weights[0].path == located.weights[0].path
    opened = open_model(again)  # opened as it is: nothing located again
    assert opened.fingerprint == located.fingerprint and opened.files == [located.weights[0].path]


def test_a_spec_is_checked_once_and_keeps_its_policy(tiny_dir: Path, tmp_path: Path) -> None:
    policy = Policy(roots=(tiny_dir.parent.resolve(),))
    parsed = parse_spec(str(tiny_dir), policy)
    assert parsed.policy is policy and locate(parsed).confined
    assert parse_spec(str(tiny_dir)).policy is None and not locate(str(tiny_dir)).confined
    with pytest.raises(ValueError, match="policy it was checked by"):
        locate(parsed, Policy())
    outside = Policy(roots=(tmp_path.resolve(),))
    with pytest.raises(NotAllowedError, match="outside the model directories"):
        parse_spec(str(tiny_dir), outside)  # refused when classified, before any read


def test_a_published_table_is_a_source_kind(tmp_path: Path) -> None:
    table = tmp_path / "heads.csv"
    table.write_text("model,layer,head\nm,0,0\n")
    parsed = parse_spec(f"{table}::m")
    assert (parsed.kind, parsed.value, parsed.model) == ("table", str(table), "m")
    located = locate(parsed)
    assert located.format == TABLE_FORMAT and located.extra["model"] == "m"
    assert located.weights[0].path == table and located.weights[0].size == table.stat().st_size
    assert parse_spec(str(table)).model is None  # a bare table: its only model, or all
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with pytest.raises(NotAllowedError, match="outside the model directories"):
        locate(f"{table}::m", Policy(roots=(elsewhere.resolve(),)))
