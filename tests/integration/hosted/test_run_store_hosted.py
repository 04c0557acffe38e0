"""A run store in hosted mode: read within the model directories served, refused in one line
outside them or through a symbolic link leaving them, before any record is read; a manifest
that is a FIFO is refused without blocking."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import tiny_models as tm

from headforms.errors import HeadformsError, NotAllowedError
from headforms.hosted import policy as hosted
from headforms.integrations import record
from headforms.run_store import MANIFEST, RECORDS, run_state
from headforms.series import trajectory
from headforms.settings import ALLOWLIST_ENV, HOSTED_ENV, ROOTS_ENV


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from transformers import AutoModelForCausalLM

    base = tmp_path_factory.mktemp("hosted-runs")
    root, outside = base / "models", base / "outside"
    model = AutoModelForCausalLM.from_config(tm.FAMILIES["llama"].config())
    for where in (root / "run", outside / "run"):
        record(model, 0, out=where)
    linked = root / "linked"  # its records are a link to the store outside the root
    linked.mkdir()
    (linked / MANIFEST).write_bytes((outside / "run" / MANIFEST).read_bytes())
    (linked / RECORDS).symlink_to(outside / "run" / RECORDS)
    fifo = root / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / MANIFEST)
    return {"root": root, "outside": outside}


@pytest.fixture
def hosted_env(monkeypatch: pytest.MonkeyPatch, stores: dict[str, Path]) -> dict[str, Path]:
    monkeypatch.setenv(HOSTED_ENV, "1")
    monkeypatch.setenv(ROOTS_ENV, str(stores["root"]))
    monkeypatch.delenv(ALLOWLIST_ENV, raising=False)
    return stores


def test_a_run_store_is_read_within_the_roots_only(hosted_env: dict[str, Path]) -> None:
    policy = hosted.policy_in_force()
    inside = trajectory(str(hosted_env["root"] / "run"), policy=policy)
    assert inside.steps == (0,) and np.isfinite(inside.stacked("a")).all()
    with pytest.raises(NotAllowedError, match="outside the model directories"):
        trajectory(str(hosted_env["outside"] / "run"), policy=policy)
    with pytest.raises(HeadformsError, match="a symbolic link, not a run store's own records"):
        trajectory(str(hosted_env["root"] / "linked"), policy=policy)


def test_a_manifest_that_is_a_fifo_is_refused_without_blocking(stores: dict[str, Path]) -> None:
    with pytest.raises(HeadformsError, match="not a readable run store manifest"):
        run_state(stores["root"] / "fifo")
