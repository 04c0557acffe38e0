"""Convert a bundled GGUF model's tokenizer: transformers as it is vs within headforms'
``cheap_gguf_parses`` (``gguf.GGUFReader`` over an ndarray view of the memory map).

Both routes call ``AutoTokenizer.from_pretrained(dir, gguf_file=...)`` in a fresh process (the
conversion is what a first attention pattern of a GGUF model pays, once per cache); the routes
alternate, median of ``--repeat``; the child prints its token ids of a fixed text, which must be
the same for both routes. Only the conversion is timed (imports are not).

Run: ``.venv/bin/python benchmarks/bench_tokenizer.py [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess

from _common import PYTHON, machine_line, print_table, thread_env

CHILD = """
import json, sys, time
from transformers import AutoTokenizer
from headforms import BUNDLED_MODELS
from headforms.behaviour.gguf_parse import cheap_gguf_parses
path = BUNDLED_MODELS[sys.argv[1]].locate()
start = time.perf_counter()
if sys.argv[2] == "view":
    with cheap_gguf_parses():
        tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
else:
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
seconds = time.perf_counter() - start
ids = tokenizer("Attention heads, bilinear forms: K^T Q.")["input_ids"]
print(json.dumps({"s": seconds, "ids": ids}))
"""


def convert(model: str, route: str) -> tuple[float, list[int]]:
    out = subprocess.run(
        [PYTHON, "-c", CHILD, model, route],
        env=thread_env(1),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result = json.loads(out.strip().splitlines()[-1])
    return result["s"], result["ids"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(machine_line(1))
    rows = []
    for model in ("smollm2-135m", "gemma3-270m"):
        times: dict[str, list[float]] = {"plain": [], "view": []}
        ids: dict[str, list[int]] = {}
        for _ in range(args.repeat):
            for route in times:
                seconds, ids[route] = convert(model, route)
                times[route].append(seconds)
        if ids["plain"] != ids["view"]:
            raise SystemExit(f"{model}: the two routes tokenize differently")
        plain, view = (statistics.median(times[r]) for r in ("plain", "view"))
        rows.append(
            {"model": model, "transformers s": plain, "cheap parses s": view, "ratio": view / plain}
        )
    print_table("GGUF tokenizer conversion (median, fresh processes, routes alternating)", rows)


if __name__ == "__main__":
    main()
