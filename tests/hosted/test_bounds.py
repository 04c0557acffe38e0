"""Every input a stranger controls is bounded before it costs anything (issue 17, items 5-6).

- published tables: bytes, rows, models and a parquet file's metadata checked before any data
  is parsed (a small parquet of constant rows that expands hugely, a huge CSV, a table of many
  models), only known columns read, read tables kept within a byte budget;
- the hub: shard indexes and listings bounded in hosted mode (index bombs and listing bombs
  through the loopback fake hub), a config's absurd shapes refused before any weight is
  downloaded, case variants of an id stored once, the hub cache evicted by size;
- messages: a 300-character file name is one line in the page and on the command line; no
  numpy warning naming the installation; model names are shown as text, never Markdown.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tiny_models

from headforms import analyze, engine, sources
from headforms.bounded import ByteLRU, sizeof
from headforms.errors import CorruptFileError
from headforms.hosted import policy_in_force
from headforms.hosted.policy import MAX_INDEX_BYTES
from headforms.settings import ALLOWLIST_ENV, HOSTED_ENV, ROOTS_ENV

REPO = Path(__file__).resolve().parents[2]


def head_rows(models: int, layers: int = 1, heads: int = 1, name: str = "m{}") -> pd.DataFrame:
    """A per-head table of ``models`` models of ``layers`` x ``heads`` heads."""
    count = models * layers * heads
    index = np.arange(count)
    return pd.DataFrame(
        {
            "model": [name.format(i // (layers * heads)) for i in index],
            "layer": (index // heads) % layers,
            "head": index % heads,
            **{c: 0.25 for c in ("a", "b", "c", "d")},
            **{c: 1 / 3 for c in ("b_sym", "c_sym", "d_sym")},
        }
    )


@pytest.fixture
def no_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make pandas' readers fail: a refusal must come before any table data is parsed."""

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("the table was parsed before it was refused")

    for name in ("read_parquet", "read_csv", "read_json"):
        monkeypatch.setattr(pd, name, forbidden)


# --- tables -------------------------------------------------------------------------------------


def test_a_parquet_of_constant_rows_is_refused_from_its_metadata(
    tmp_path: Path, no_parsing: None
) -> None:
    """A file of 5 million constant rows (well under a megabyte: dictionary and run-length
    encoding) that pandas would expand to gigabytes: refused from its metadata, nothing read
    (before: 9.3 GB in 15 s from a 1.7 MB file)."""
    path = tmp_path / "bomb.parquet"
    constant = head_rows(1).loc[[0] * 100_000].reset_index(drop=True)  # one row, repeated
    block = pa.Table.from_pandas(constant, preserve_index=False)
    with pq.ParquetWriter(path, block.schema, compression="zstd") as writer:
        for _ in range(50):
            writer.write_table(block)
    assert path.stat().st_size < 2**20
    with pytest.raises(CorruptFileError) as refused:
        analyze(f"{path}::m0")
    assert str(refused.value) == (
        "bomb.parquet has 5000000 rows, more than the 250000 a table may have "
        "(HEADFORMS_MAX_TABLE_ROWS); nothing was read"
    )


def test_a_parquet_too_wide_or_too_large_is_refused_from_its_metadata(
    tmp_path: Path, no_parsing: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    extra = pd.DataFrame(np.zeros((4, 600)), columns=[f"extra{i}" for i in range(600)])
    wide = pd.concat([head_rows(4), extra], axis=1)
    wide.to_parquet(tmp_path / "wide.parquet", index=False)
    with pytest.raises(CorruptFileError, match=r"in 6\d\d columns, more than .*nothing was read"):
        analyze(f"{tmp_path / 'wide.parquet'}::m0")
    # 20,000 distinct 2 KB model names: a small file (they compress well) of 40 MB of data
    long_names = head_rows(20_000, name="x" * 2000 + "{}")
    long_names.to_parquet(tmp_path / "names.parquet", index=False, compression="zstd")
    assert (tmp_path / "names.parquet").stat().st_size < 2**20
    monkeypatch.setenv("HEADFORMS_MAX_TABLE_BYTES", str(4 * 2**20))
    expected = (
        r"names.parquet expands to [\d.]+ MiB in 10 columns, more than the 4 MiB a table may "
        r"have \(HEADFORMS_MAX_TABLE_BYTES\); nothing was read"
    )
    with pytest.raises(CorruptFileError, match=expected):
        analyze(f"{tmp_path / 'names.parquet'}::m0")


def test_a_huge_csv_is_refused_before_a_byte_is_read(tmp_path: Path, no_parsing: None) -> None:
    """A 600 MB CSV (sparse here): refused from its size (before: over 9 GB while parsing)."""
    path = tmp_path / "huge.csv"
    with path.open("wb") as fh:
        fh.write(b"model,layer,head,a,b,c,d,b_sym,c_sym,d_sym\n")
        fh.truncate(600 * 2**20)
    with pytest.raises(CorruptFileError) as refused:
        analyze(f"{path}::m0")
    assert str(refused.value) == (
        "huge.csv is 600 MiB, more than the 64 MiB a table may have (HEADFORMS_MAX_TABLE_BYTES)"
    )


def test_rows_and_models_past_the_limits_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CSV is parsed at most one row past the row limit; a table of more models than the
    limit is refused (before: 300,000 models kept a core busy with no page after 300 s)."""
    head_rows(2_000).to_csv(tmp_path / "many.csv", index=False)
    with pytest.raises(CorruptFileError) as refused:
        sources_of(tmp_path / "many.csv")
    assert str(refused.value) == (
        "many.csv holds 2000 models, more than the 1000 a table may hold "
        "(HEADFORMS_MAX_TABLE_MODELS)"
    )
    monkeypatch.setenv("HEADFORMS_MAX_TABLE_ROWS", "1500")
    seen: list[Any] = []
    real = pd.read_csv

    def spy(*args: Any, **kwargs: Any) -> pd.DataFrame:
        seen.append(kwargs.get("nrows"))
        return real(*args, **kwargs)

    monkeypatch.setattr(pd, "read_csv", spy)
    with pytest.raises(CorruptFileError, match="many.csv has more than 1500 rows"):
        sources_of(tmp_path / "many.csv")
    assert seen == [1501]
    monkeypatch.setenv("HEADFORMS_MAX_TABLE_ROWS", "lots")
    with pytest.raises(Exception, match="HEADFORMS_MAX_TABLE_ROWS='lots' is not a positive"):
        sources_of(tmp_path / "many.csv")


def sources_of(path: Path) -> list[str]:
    """The specs a table file stands for (what the model picker lists)."""
    from headforms.tables import expand_table_spec

    return expand_table_spec(str(path))


def test_a_thousand_models_open_and_list_in_order(tmp_path: Path) -> None:
    """At the model limit every model is listed, in order, and opens (rows looked up once per
    table, not filtered per model)."""
    head_rows(1_000, layers=2, heads=2).to_csv(tmp_path / "thousand.csv", index=False)
    specs = sources_of(tmp_path / "thousand.csv")
    assert specs == [f"{tmp_path / 'thousand.csv'}::m{i}" for i in range(1_000)]
    last = analyze(specs[-1])
    assert (last.card.n_layers, last.card.n_heads) == (2, 2)
    assert list(last.heads["layer"]) == [0, 0, 1, 1]


def test_only_known_columns_are_read(tmp_path: Path) -> None:
    table = head_rows(2).assign(notes="x" * 1000, secret=1.0)
    table.to_csv(tmp_path / "t.csv", index=False)
    from headforms.tables import read_table

    assert {"notes", "secret"}.isdisjoint(read_table(tmp_path / "t.csv").columns)


def test_read_tables_are_kept_within_a_byte_budget() -> None:
    """The in-memory caches are bounded in bytes: the least recently used go first, an entry
    larger than the budget is never kept."""
    cache: ByteLRU[Any] = ByteLRU(10 * 2**20)
    for i in range(10):
        cache.put(i, np.zeros(2**18))  # 2 MiB each
    assert cache.bytes <= 10 * 2**20 and len(cache) == 4
    assert cache.get(0) is None and cache.get(9) is not None
    cache.put("huge", np.zeros(2**21))  # 16 MiB: not kept, nothing else lost
    assert cache.get("huge") is None and len(cache) == 4
    frame = pd.DataFrame({"s": ["x" * 1000] * 1000})
    assert 10**6 <= sizeof(frame) <= 2 * 10**6
    figure = {"data": [{"x": np.zeros(10**5), "y": np.zeros(10**5)}]}
    assert 1.6e6 <= sizeof([figure, figure]) <= 1.7e6  # shared objects counted once


# --- file names and warnings --------------------------------------------------------------------


LONG_NAME = "x" * 300 + ".csv"


def test_a_300_character_file_name_is_one_line_on_the_command_line(tmp_path: Path) -> None:
    """(before: a 31-line traceback from ``path.is_file()``)."""
    result = subprocess.run(
        [sys.executable, "-m", "headforms", "analyze", str(tmp_path / LONG_NAME)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith("error: cannot open the table file xxxxxxxx")
    assert "File name too long" in result.stderr and len(result.stderr) < 200


def test_a_300_character_file_name_is_one_line_in_the_page(tmp_path: Path) -> None:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    at.query_params["model"] = str(tmp_path / LONG_NAME)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert len(at.error) == 1 and "File name too long" in at.error[0].value


def test_no_warning_naming_the_installation_on_the_command_line(tmp_path: Path) -> None:
    """A table without pairing scores: the summary shows a dash (before: numpy's warnings, each
    naming a file of the installation)."""
    head_rows(1, layers=2, heads=2).to_csv(tmp_path / "nopairing.csv", index=False)
    result = subprocess.run(
        [sys.executable, "-m", "headforms", "analyze", str(tmp_path / "nopairing.csv")],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == "" and "—" in result.stdout


# --- model names as text ------------------------------------------------------------------------


def test_model_names_are_shown_as_text_never_markdown(tmp_path: Path) -> None:
    """A table's model named like a Markdown link and image: every element the page draws
    renders it as text (no link, no image fetched from another host)."""
    from markdown_it import MarkdownIt
    from streamlit.testing.v1 import AppTest

    name = "[click](https://evil.example/x) ![i](https://evil.example/t.png) <b>$x$</b>"
    head_rows(1, layers=2, heads=2, name=name).to_csv(tmp_path / "names.csv", index=False)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    at.query_params["model"] = f"{tmp_path / 'names.csv'}::{name}"
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    bodies = [c.value for c in at.caption] + [m.value for m in at.markdown]
    shown = [b for b in bodies if "evil" in b]
    assert shown, bodies
    for body in shown:
        html = MarkdownIt("commonmark").render(body)  # raw HTML on, as a browser would
        assert "<a " not in html and "<img" not in html and "<b>" not in html, html
        assert "[click](https://evil.example/x) ![i]" in html  # the name itself, as text


# --- the hub ------------------------------------------------------------------------------------


@pytest.fixture
def hosted_hub(fake_hub: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Any]:
    """Hosted mode with every hub id allowed, through the loopback fake hub."""
    monkeypatch.setenv(HOSTED_ENV, "1")
    monkeypatch.setenv(ALLOWLIST_ENV, "*")
    monkeypatch.setenv(ROOTS_ENV, str(tmp_path))
    monkeypatch.setenv("HEADFORMS_CACHE_DIR", str(tmp_path / "cache"))
    yield fake_hub


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("bounds-hub") / "tiny"
    tiny_models.build("llama", directory, seed=51)
    return directory


def test_a_shard_index_bomb_is_refused_before_it_is_downloaded(
    hosted_hub: Any, tiny_dir: Path
) -> None:
    """A 13 MB shard index (125,000 entries): refused in hosted mode from its declared size,
    never fetched (before: 2.6 s of server CPU per lookup); a private instance reads it."""
    from fake_hub import checkpoint_files

    files = checkpoint_files(tiny_dir, "sharded")
    index = json.loads(files["model.safetensors.index.json"])
    first = sorted(set(index["weight_map"].values()))[0]
    padding = {f"model.layers.{i}.mlp.padding_{'x' * 40}.weight": first for i in range(125_000)}
    index["weight_map"].update(padding)
    files["model.safetensors.index.json"] = json.dumps(index).encode()
    assert 12 * 2**20 < len(files["model.safetensors.index.json"]) < 16 * 2**20
    hosted_hub.add_repo("evil/index-bomb").commit(files)
    with pytest.raises(CorruptFileError) as refused:
        sources.locate("evil/index-bomb", policy_in_force())
    assert str(refused.value) == (
        f"'evil/index-bomb': model.safetensors.index.json is larger than {MAX_INDEX_BYTES} bytes"
    )
    assert hosted_hub.bytes_sent("evil/index-bomb", "model.safetensors.index.json") == 0
    located = sources.locate("evil/index-bomb")  # a private instance: read, and fast
    chosen = [f.name for f in located.weights]  # the shards holding Q/K, not the first
    assert chosen == sorted(set(index["weight_map"].values()) - {first})


def test_a_listing_bomb_is_refused_after_a_bounded_listing(hosted_hub: Any, tiny_dir: Path) -> None:
    """A repository of 12,000 top-level files: the listing stops past the hosted limit (10,000)
    after at most 11 pages of the tree, and the spec is refused in one line."""
    from fake_hub import checkpoint_files

    files = checkpoint_files(tiny_dir)
    files.update({f"junk-{i:05d}.txt": b"" for i in range(12_000)})
    hosted_hub.add_repo("evil/many-files").commit(files)
    hosted_hub.reset_counts()
    with pytest.raises(CorruptFileError) as refused:
        sources.locate("evil/many-files", policy_in_force())
    assert str(refused.value) == (
        "'evil/many-files' has more than 10000 files at its top level, more than this server "
        "lists; refused"
    )
    pages = [r for r in hosted_hub.requests if r.kind == "api" and r.status == 200]
    assert len(pages) <= 1 + 11  # the commit, then the tree's pages up to the limit


def test_absurd_config_shapes_are_refused_before_any_weight_is_downloaded(
    hosted_hub: Any, tiny_dir: Path
) -> None:
    """(before: refused only after its weights were downloaded, 87 MB each)."""
    from fake_hub import checkpoint_files

    files = checkpoint_files(tiny_dir)
    config = json.loads(files["config.json"])
    config["num_hidden_layers"] = 10**6
    files["config.json"] = json.dumps(config).encode()
    hosted_hub.add_repo("evil/absurd").commit(files)
    with pytest.raises(CorruptFileError, match="declares 1000000 layers, more than any supported"):
        analyze("evil/absurd", policy=policy_in_force())
    assert hosted_hub.bytes_sent("evil/absurd", "model.safetensors") == 0


def test_case_variants_of_a_hub_id_are_one_repository(
    hosted_hub: Any, tiny_dir: Path, tmp_path: Path
) -> None:
    """``good/name``, ``gOod/name``, ``GOOD/NAME``: one download, one folder in the hub cache,
    one stored analysis (before: each variant a new copy)."""
    hosted_hub.add_model("good/name", tiny_dir)
    first = analyze("good/name", policy=policy_in_force())
    sent = hosted_hub.bytes_sent("good/name", "model.safetensors")
    assert sent > 0
    for variant in ("gOod/name", "GOOD/NAME"):
        again = analyze(variant, policy=policy_in_force())
        assert again.card.fingerprint == first.card.fingerprint
    assert hosted_hub.bytes_sent("good/name", "model.safetensors") == sent
    folders = [p.name for p in (tmp_path / "hf-hub-cache").iterdir() if p.name.startswith("m")]
    assert folders == ["models--good--name"]


def test_the_hub_cache_is_evicted_by_size(hosted_hub: Any, tiny_dir: Path, tmp_path: Path) -> None:
    """Past its size the hub cache loses its least recently used repositories, never the one
    just used."""
    import time

    from huggingface_hub import hf_hub_download

    from headforms.sources.hub import evict_hub_cache, hub_cache_dir

    for name in ("org/old", "org/mid", "org/new"):
        hosted_hub.add_model(name, tiny_dir)
        hf_hub_download(name, "model.safetensors", cache_dir=hub_cache_dir())
        time.sleep(0.05)
    one = (tiny_dir / "model.safetensors").stat().st_size
    old = hub_cache_dir() / "models--org--old" / "blobs"
    for blob in old.iterdir():
        os.utime(blob, (1, 1))  # the least recently used
    freed = evict_hub_cache(2 * one + one // 2, keep="ORG/OLD")
    remaining = sorted(p.name for p in hub_cache_dir().iterdir() if p.name.startswith("models"))
    assert remaining == ["models--org--new", "models--org--old"]  # old kept: the one in use
    assert freed >= one
    assert evict_hub_cache(0) >= 2 * one
    assert not [p for p in hub_cache_dir().iterdir() if p.name.startswith("models")]


def test_the_stored_analysis_is_found_without_a_worker_for_every_variant(
    hosted_hub: Any, tiny_dir: Path
) -> None:
    hosted_hub.add_model("good/other", tiny_dir)
    analyze("good/other", policy=policy_in_force())
    located = sources.locate("GOOD/other", policy_in_force())
    assert located.hub is not None and located.hub.repo_id == "good/other"
    assert engine.stored_analysis(located) is not None
