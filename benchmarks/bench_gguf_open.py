"""Open a bundled GGUF model and read all its Q/K tensors: headforms' reader vs ``gguf``'s.

``headforms.readers.GGUFReader`` parses the header, skips the metadata arrays (tokenizer) and
memory-maps only the tensors it reads; ``gguf.GGUFReader`` parses everything on open. Both
dequantize Q/K with ``gguf.quants.dequantize``. Each route runs in-process, timed separately for
"open" (a full header parse) and "read all Q/K (dequantized to float64)", median of ``--repeat``
(gguf's reader once by default: it takes many seconds).

Run: ``.venv/bin/python benchmarks/bench_gguf_open.py``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
from _common import limit_threads, machine_line, print_table

QK = re.compile(r"^blk\.\d+\.attn_[qk]\.weight$")


def ours(path: str) -> tuple[float, float, int]:
    """Open (a full header parse) and read Q/K."""
    from headforms.readers import GGUFReader

    start = time.perf_counter()
    reader = GGUFReader(path)
    opened = time.perf_counter()
    total = 0
    for name in reader.names():
        if QK.match(name):
            total += reader.read(name).size
    return opened - start, time.perf_counter() - opened, total


def theirs(path: str) -> tuple[float, float, int]:
    import gguf
    from gguf.quants import dequantize

    start = time.perf_counter()
    reader = gguf.GGUFReader(path)
    opened = time.perf_counter()
    total = 0
    for tensor in reader.tensors:
        if QK.match(tensor.name):
            values = dequantize(tensor.data, tensor.tensor_type)
            total += np.asarray(values, dtype=np.float64).size
    return opened - start, time.perf_counter() - opened, total


def timed(fn, path: str, repeat: int) -> tuple[float, float, int]:
    runs = [fn(path) for _ in range(repeat)]
    return (
        statistics.median(r[0] for r in runs),
        statistics.median(r[1] for r in runs),
        runs[-1][2],
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["smollm2-135m", "gemma3-270m"])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--gguf-repeat", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="headforms-bench-gguf-")
    os.environ["HEADFORMS_CACHE_DIR"] = work  # Gemma is assembled here, deleted at exit
    try:
        from headforms.sources import BUNDLED_MODELS

        rows = []
        with limit_threads(args.threads):
            print(machine_line(args.threads))
            for name in args.models:
                path = str(BUNDLED_MODELS[name].locate())
                ours(path)  # warm the page cache for both routes
                o_open, o_read, o_count = timed(ours, path, args.repeat)
                t_open, t_read, t_count = timed(theirs, path, args.gguf_repeat)
                assert o_count == t_count, (o_count, t_count)
                rows.append(
                    {
                        "model": name,
                        "file MB": os.path.getsize(path) / 1e6,
                        "Q/K values": o_count,
                        "headforms open s": o_open,
                        "headforms read s": o_read,
                        "headforms total s": o_open + o_read,
                        "gguf open s": t_open,
                        "gguf read s": t_read,
                        "gguf total s": t_open + t_read,
                        "speedup": (t_open + t_read) / (o_open + o_read),
                    }
                )
                print_table("so far", rows[-1:])
        print_table(
            f"Open + read all Q/K tensors, in-process; headforms median of {args.repeat}, "
            f"gguf median of {args.gguf_repeat}",
            rows,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
