"""Counting the engine's computations: every analysis computed from the weights (stage
``extraction``) or from stored factors (stage ``forms``), with the options it was computed at.

A cache hit computes nothing; a new RoPE position or a lost metrics entry computes forms from the
stored factors; only a model whose factors are not stored is extracted from its weights.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

import headforms.streaming as streaming
from headforms.options import DEFAULT_OPTIONS

COUNTING = """
import os, time
import headforms.streaming as streaming

def _counted(stage, real):
    def counted(*args, **kwargs):
        with open(os.environ["TEST_EXTRACTION_LOG"], "a") as fh:
            fh.write(f"{stage} {os.getpid()}\\n")
        time.sleep(float(os.environ.get("TEST_SLOW_SECONDS", "0")))
        return real(*args, **kwargs)
    return counted

streaming.compute_analysis = _counted("extraction", streaming.compute_analysis)
streaming.forms_analysis = _counted("forms", streaming.forms_analysis)
"""
"""The same count in a subprocess: one line per computation appended to
``$TEST_EXTRACTION_LOG`` (each after ``$TEST_SLOW_SECONDS``, so that overlaps are certain)."""


def count_computations(monkeypatch: pytest.MonkeyPatch, delay: float = 0.0) -> list[dict[str, Any]]:
    """Record every computation of this process from now on (each after ``delay`` seconds):
    ``{"stage": "extraction" | "forms", "rope_position": d, "fold_qk_norm": fold}``."""
    calls: list[dict[str, Any]] = []
    real_extraction, real_forms = streaming.compute_analysis, streaming.forms_analysis

    def extraction(source: Any, options: Any = DEFAULT_OPTIONS, *args: Any) -> Any:
        calls.append({"stage": "extraction", **options.key()})
        time.sleep(delay)
        return real_extraction(source, options, *args)

    def forms(facts: Any, layer_of: Any, options: Any, *args: Any) -> Any:
        calls.append({"stage": "forms", **options.key()})
        time.sleep(delay)
        return real_forms(facts, layer_of, options, *args)

    monkeypatch.setattr(streaming, "compute_analysis", extraction)
    monkeypatch.setattr(streaming, "forms_analysis", forms)
    return calls


def stages(calls: list[dict[str, Any]]) -> list[str]:
    """The stage of each recorded computation, in order."""
    return [call["stage"] for call in calls]
