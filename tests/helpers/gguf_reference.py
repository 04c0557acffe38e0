"""gguf's own reader, parsed once per test session (it takes 1-5 s, mostly tokenizer arrays).

The reference the fast reader and the engine are checked against: ``gguf.GGUFReader`` plus
``gguf.quants.dequantize``, independent of :mod:`headforms.readers`.

:func:`parsed_once` (on for every test session, tests/conftest.py) makes every
``gguf.GGUFReader`` of a large file parsed once per process: transformers' GGUF loading
(``load_gguf_checkpoint``) parses the whole file, its 262,144 tokenizer strings included, each
time it is asked for a tokenizer, a config or the weights (5-20 s for Gemma-3), and headforms
converts a GGUF's tokenizer through it. The parse of an unchanged file is the same read-only
object each time; what transformers then builds from it is unchanged. The price: Gemma-3's
parse stays in the process (about 0.7 GB, 2 million objects: a full ``gc.collect()`` 0.6 s).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

SHARED_MIN_BYTES = 16 * 2**20
"""Files at least this large (the bundled SmolLM2 and Gemma-3) are parsed once per process;
the small files tests write (tiny models, damaged copies) are parsed each time."""


def _shared_key(path: Any, mode: str) -> tuple | None:
    """The identity of a large file opened read-only, as it is now (a rewritten file, another
    size or mtime, is another key); None for a file parsed each time."""
    if mode != "r":
        return None
    try:
        stat = os.stat(path)
    except (OSError, TypeError, ValueError):
        return None  # gguf's own reader says what is wrong
    if stat.st_size < SHARED_MIN_BYTES:
        return None
    return (os.path.realpath(path), stat.st_ino, stat.st_size, stat.st_mtime_ns)


@contextmanager
def parsed_once() -> Iterator[None]:
    """Within the block, ``gguf.GGUFReader(path)`` of a large file opened read-only returns the
    reader parsed the first time (a subclass: ``isinstance`` checks still hold)."""
    import gguf

    from headforms.behaviour.gguf_parse import viewing_reader

    original = gguf.GGUFReader
    parsed: dict[tuple, Any] = {}

    # Over an ndarray view of the mapped file: gguf's parser, the same fields and tensors, 3x
    # faster (tests/unit/behaviour/test_gguf_parse.py).
    class ParsedOnce(viewing_reader(original)):  # type: ignore[misc]
        def __new__(cls, path: Any, mode: str = "r") -> Any:
            key = _shared_key(path, mode)
            if key is not None and key in parsed:
                return parsed[key]
            return super().__new__(cls)

        def __init__(self, path: Any, mode: str = "r") -> None:
            if getattr(self, "_parsed_once", False):
                return  # the cached reader, already parsed
            super().__init__(path, mode)
            key = _shared_key(path, mode)
            if key is not None:
                self._parsed_once = True
                parsed[key] = self

    gguf.GGUFReader = ParsedOnce
    try:
        yield
    finally:
        gguf.GGUFReader = original
        parsed.clear()


@cache
def reference_reader(path: Path) -> Any:
    """``gguf.GGUFReader`` of ``path`` (tensor data stays memory-mapped)."""
    import gguf

    return gguf.GGUFReader(path)


def reference_tensors(path: Path) -> dict[str, Any]:
    """The file's tensors by name, in file order."""
    return {t.name: t for t in reference_reader(path).tensors}


def dequantized(tensor: Any) -> np.ndarray:
    """A tensor's values as float64 in row-major (numpy) shape, via gguf.quants.dequantize."""
    from gguf.quants import dequantize

    values = dequantize(tensor.data, tensor.tensor_type)
    return np.asarray(values, dtype=np.float64).reshape(tuple(reversed(tensor.shape.tolist())))
