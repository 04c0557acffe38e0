"""Forward passes: the first attention pattern of a cold process, a new prompt on a loaded model,
and every head-type score of a model, against the route a researcher takes in a notebook.

Measured side by side in one run, alternating, each route in a fresh subprocess (one torch
thread for both), medians of ``--repeat`` runs:

* notebook: ``AutoTokenizer.from_pretrained(dir, gguf_file=...)``,
  ``AutoModelForCausalLM.from_pretrained(dir, gguf_file=..., attn_implementation="eager")`` and
  one forward pass with ``output_attentions=True``;
* CLI, cold: ``python -m headforms attention MODEL --prompt P --layer L --head H --no-cache``
  with the tokenizer converted once before (as after ``make install``), and with an empty cache
  directory (the one-time tokenizer conversion included);
* dashboard, cold: a fresh process runs the app under Streamlit's AppTest on its first page
  (the Simplex: the dashboard is up, no model has run), then the Head page with the prompt (its
  analysis is stored, its forward pass is not) to the drawn heatmap; timed from the switch to
  the Head page, and from process start.

In one process with the model loaded: a new prompt (median over prompts of 30-40 tokens), and
every head-type score of the model (the probe's forward pass and the four scores).

Hosted mode (a server process, ``HEADFORMS_HOSTED=1``): a new prompt in the model's worker,
kept loaded between passes, against a new prompt in a fresh worker (the model loaded again, as
every new prompt was before model workers), alternating, median over the prompts.

Run: ``.venv/bin/python benchmarks/bench_behaviour.py [--model smollm2-135m] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import PYTHON, ROOT, machine_line, print_table, thread_env

PROMPT = (
    "The lighthouse keeper counted seven ships before dawn and wrote their names in a blue "
    "notebook. The lighthouse keeper counted seven ships before dawn and wrote their names in "
    "a blue notebook."
)
PROMPTS = (
    "When Mary and John went to the store, John gave a drink to Mary. When Mary and John went.",
    "def add(a, b):\n    return a + b\n\ndef add(a, b):\n    return a + b\n",
    "Paris is the capital of France, Rome is the capital of Italy, and Berlin is the capital of",
    "One, two, three, four, five, six, seven, eight, nine, ten, eleven, twelve, thirteen.",
)

NOTEBOOK = """
import sys, time
start = time.perf_counter()
import torch
torch.set_num_threads(1)
from transformers import AutoModelForCausalLM, AutoTokenizer
directory, name, prompt = sys.argv[1:4]
tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=name)
model = AutoModelForCausalLM.from_pretrained(directory, gguf_file=name, attn_implementation="eager")
loaded = time.perf_counter()
with torch.no_grad():
    out = model(**tokenizer(prompt, return_tensors="pt"), output_attentions=True)
attention = out.attentions[0][0, 0].numpy()
print(f"{loaded - start:.3f} {time.perf_counter() - start:.3f}")
"""

DASHBOARD = """
import sys, time
start = time.perf_counter()
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(sys.argv[1], default_timeout=600)
at.session_state["hf_model"] = sys.argv[2]
at.run()  # the dashboard up, on its first page (the Simplex): no model run yet
assert not at.exception, [e.message for e in at.exception]
up = time.perf_counter()
at.session_state["hf_layer"], at.session_state["hf_head"] = 0, 0
at.session_state["prompt"] = sys.argv[3]  # ui.behaviour.PROMPT_KEY
at.switch_page("pages/head.py")
at.run()
assert not at.exception, [e.message for e in at.exception]
drawn = [e for e in at.get("bidi_component") if "attention weights on" in e.proto.json]
assert drawn, "no heatmap"
print(f"{up - start:.3f} {time.perf_counter() - up:.3f}")
"""

WARM = """
import sys, time, statistics
from headforms.behaviour import attention, head_type_scores
spec = sys.argv[1]
attention(spec, sys.argv[2], use_cache=False)  # loads the model
prompts = sys.argv[3:]
times = []
for prompt in prompts:
    t = time.perf_counter()
    attention(spec, prompt, use_cache=False)
    times.append(time.perf_counter() - t)
t = time.perf_counter(); head_type_scores(spec, use_cache=False); scores = time.perf_counter() - t
t = time.perf_counter(); head_type_scores(spec, use_cache=False); again = time.perf_counter() - t
print(f"{statistics.median(times):.4f} {min(scores, again):.4f}")
"""


HOSTED = """
import sys, time, statistics
from headforms import hosted
from headforms.hosted import api
spec, prompts = sys.argv[1], sys.argv[2:]
hosted.forward_pass(spec, prompt=prompts[0] + " (up)")  # the model's worker up, model loaded
fresh, kept = [], []
for i, prompt in enumerate(prompts):
    t = time.perf_counter(); hosted.forward_pass(spec, prompt=f"{prompt} (kept {i})")
    kept.append(time.perf_counter() - t)
    api.hosting.model_workers.stop_all()  # the next pass starts a new worker: a model load
    t = time.perf_counter(); hosted.forward_pass(spec, prompt=f"{prompt} (fresh {i})")
    fresh.append(time.perf_counter() - t)
print(f"{statistics.median(fresh):.4f} {statistics.median(kept):.4f}")
"""


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Wall time of a fresh process and its stdout (fails loudly on an error)."""
    start = time.perf_counter()
    out = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} failed:\n{out.stderr[-3000:]}")
    return wall, out.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from headforms.sources import locate

    gguf = locate(args.model).weights[0].path
    print(machine_line(1))
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    work = Path(tempfile.mkdtemp(prefix="bench-behaviour-"))
    warm_cache = work / "warm"
    # the state after `make install`: the analysis and the tokenizer of the model converted once
    env_warm = thread_env(1, HEADFORMS_CACHE_DIR=str(warm_cache))
    timed([PYTHON, "-m", "headforms", "analyze", args.model, "--spectra", "all", "--baseline",
           "--quiet"], env_warm)  # fmt: skip
    timed([PYTHON, "-m", "headforms", "behaviour", args.model, "--quiet"], env_warm)
    cli = [PYTHON, "-m", "headforms", "attention", args.model, "--prompt", PROMPT, "--layer",
           "0", "--head", "0", "--no-cache", "--quiet"]  # fmt: skip
    rows: dict[str, list[float]] = {k: [] for k in ("notebook", "notebook_load", "cli", "cli_empty",
                                                    "dashboard", "dashboard_head")}  # fmt: skip
    try:
        for _ in range(args.repeat):
            wall, out = timed(
                [PYTHON, "-c", NOTEBOOK, str(gguf.parent), gguf.name, PROMPT], thread_env(1)
            )
            load = float(out.split()[0])
            rows["notebook"].append(wall)
            rows["notebook_load"].append(load)
            rows["cli"].append(timed(cli, env_warm)[0])
            empty = work / f"empty-{len(rows['cli_empty'])}"
            rows["cli_empty"].append(timed(cli, thread_env(1, HEADFORMS_CACHE_DIR=str(empty)))[0])
            dash = work / f"dash-{len(rows['dashboard'])}"
            shutil.copytree(warm_cache, dash)  # analysis and tokenizer stored, no pattern
            wall, out = timed(
                [PYTHON, "-c", DASHBOARD, str(ROOT / "app.py"), args.model, PROMPT],
                thread_env(1, HEADFORMS_CACHE_DIR=str(dash)),
            )
            rows["dashboard"].append(wall)
            rows["dashboard_head"].append(float(out.split()[1]))
        _, out = timed([PYTHON, "-c", WARM, args.model, PROMPT, *PROMPTS], env_warm)
        new_prompt, all_scores = (float(v) for v in out.split())
        env_hosted = {**env_warm, "HEADFORMS_HOSTED": "1"}
        _, out = timed([PYTHON, "-c", HOSTED, args.model, *PROMPTS, *PROMPTS], env_hosted)
        hosted_fresh, hosted_kept = (float(v) for v in out.split())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in rows.items()}
    notebook = med["notebook"]
    print_table(
        f"{args.model}: first attention pattern of a cold process (median of {args.repeat}, "
        "wall time from process start)",
        [
            {"route": "notebook (transformers from_pretrained gguf_file)", "s": notebook,
             "x notebook": 1.0, "target": ""},
            {"route": "  of which loading (tokenizer + model)", "s": med["notebook_load"],
             "x notebook": med["notebook_load"] / notebook, "target": ""},
            {"route": "headforms attention (CLI), tokenizer converted before", "s": med["cli"],
             "x notebook": med["cli"] / notebook, "target": "<= 0.35"},
            {"route": "headforms attention (CLI), empty cache", "s": med["cli_empty"],
             "x notebook": med["cli_empty"] / notebook, "target": ""},
            {"route": "dashboard up (Simplex shown), then the Head page to its heatmap",
             "s": med["dashboard_head"], "x notebook": med["dashboard_head"] / notebook,
             "target": "<= 0.35"},
            {"route": "  the same from process start (Streamlit, Simplex, Head page)",
             "s": med["dashboard"], "x notebook": med["dashboard"] / notebook, "target": ""},
        ],
    )  # fmt: skip
    print_table(
        f"{args.model}, model loaded (one process)",
        [
            {"what": f"new prompt (median of {len(PROMPTS)})", "s": new_prompt, "target": "< 0.3"},
            {"what": "every head-type score (probe R = 50)", "s": all_scores, "target": "< 2"},
        ],
    )
    print_table(
        f"{args.model}, hosted mode: a new prompt (median of {2 * len(PROMPTS)}, server side)",
        [
            {"worker": "a fresh worker (loads the model)", "s": hosted_fresh, "x fresh": 1.0},
            {"worker": "the model's kept worker", "s": hosted_kept,
             "x fresh": hosted_kept / hosted_fresh},
        ],
    )  # fmt: skip
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    print("runs:", {k: [round(x, 2) for x in v] for k, v in rows.items()}, file=sys.stderr)


if __name__ == "__main__":
    main()
