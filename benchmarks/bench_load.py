"""A hosted server under load while attackers run: 30 visitors, 3 attackers, side by side.

Starts the dashboard (``scripts/start.sh``, ``HEADFORMS_HOSTED=1``) on a loopback port with a
model root full of hostile files, the default model already analysed, then measures two phases
in the same run:

- **quiet**: 30 concurrent visitors, each: ``GET /``, one websocket script run of the simplex
  page (the browser's protocol, ``tests/helpers/streamlit_client.py``), ``GET`` of plotly.js,
  one rerun selecting another head;
- **attacked**: the same 30 visitors (``--rounds`` times, after ``--warmup`` seconds of attack)
  while 3 attacker sessions loop over hostile requests:
  model specs naming FIFOs, a slow GGUF, a config lying about its layers, a model needing more
  memory than allowed, huge GGUF counts, traversal and a multi-megabyte spec; floods of new
  RoPE positions and Theorem 5 samplings; forged click payloads and NaN widget values.

Reported: visitor failures (a run not finishing, any error or exception shown, an HTTP error),
p50/p95 of page runs and of plotly.js, each hostile request's answer time (one line expected),
the server's RSS growth (the server process; workers are separate processes, their peak is
listed apart) and workers running at once.

Workers run at ``HEADFORMS_ANALYSIS_NICE`` (default 10); ``--nice 0,10`` runs one server per
value, one after the other, to compare; ``--before TREE`` first runs the server of an older
checkout (``mkdir /tmp/before && git archive main | tar -x -C /tmp/before``) under the same
load. Run:
``.venv/bin/python benchmarks/bench_load.py [--visitors 30] [--attackers 3] [--nice 0,10]
[--before TREE]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import quote

from _common import ROOT, machine_line, print_table, thread_env

sys.path.insert(0, str(ROOT / "tests" / "helpers"))

SECONDS_LIMIT = "6"  # HEADFORMS_ANALYSIS_SECONDS of the benchmark's server
MEMORY_LIMIT = str(768 * 2**20)  # HEADFORMS_ANALYSIS_MEMORY of the benchmark's server


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def hostile_root(base: Path) -> dict[str, str]:
    """A model root with hostile files; returns name -> spec."""
    import tiny_models
    from hostile_files import slow_gguf, wide_model

    root = base / "models"
    root.mkdir()
    tiny = root / "tiny"
    tiny_models.build("llama", tiny, seed=5)
    lying = root / "lying"
    shutil.copytree(tiny, lying)
    config = json.loads((lying / "config.json").read_text())
    config["num_hidden_layers"] = 1000
    (lying / "config.json").write_text(json.dumps(config))
    fifo = root / "fifo-model"
    fifo.mkdir()
    shutil.copy(tiny / "config.json", fifo / "config.json")
    os.mkfifo(fifo / "model.safetensors")
    os.mkfifo(root / "fifo.gguf")
    slow_gguf(root / "slow.gguf", 30_000_000)  # ~510 MB of metadata: a minute or more to parse
    counts = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1) + b"t"
    counts += struct.pack("<IIQ", 9, 8, 2**60) + b"\0" * 64
    (root / "counts.gguf").write_bytes(counts)
    wide = root / "wide"
    wide_model(wide)
    return {
        "fifo model": str(fifo),
        "fifo gguf": str(root / "fifo.gguf"),
        "slow gguf": str(root / "slow.gguf"),
        "lying config": str(lying),
        "memory": str(wide),
        "huge counts": str(root / "counts.gguf"),
        "traversal": f"{root}/../../etc/passwd",
        "long spec": "/" + "x" * 100_000,  # (Streamlit itself drops a query string of MBs)
    }, root


def server_rss(pid: int) -> int:
    import psutil

    return psutil.Process(pid).memory_info().rss


def workers(pid: int) -> list[Any]:
    import psutil

    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


class Monitor(threading.Thread):
    """Samples the server's RSS, its workers' count and their largest RSS every 0.2 s."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.stop = threading.Event()
        self.peak_rss = 0
        self.peak_workers = 0
        self.peak_worker_rss = 0

    def run(self) -> None:
        import psutil

        while not self.stop.is_set():
            try:
                self.peak_rss = max(self.peak_rss, server_rss(self.pid))
                children = workers(self.pid)
                self.peak_workers = max(self.peak_workers, len(children))
                for child in children:
                    try:
                        self.peak_worker_rss = max(self.peak_worker_rss, child.memory_info().rss)
                    except psutil.NoSuchProcess:
                        pass
            except psutil.NoSuchProcess:
                return
            time.sleep(0.2)


def get(port: int, path: str) -> tuple[int, float]:
    start = time.monotonic()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=120) as resp:
        resp.read()
        return resp.status, time.monotonic() - start


def plotly_js_path(tree: Path) -> str:
    """URL path of the plotly.js bundle a simplex figure loads first (the gl3d bundle if the
    install fetched one, else the full one), written into ``tree``'s ``static/`` if missing."""
    from ui.static import ensure_plotly_js

    assets = ensure_plotly_js(tree / "static")
    return "/" + (assets.gl3d or assets.full)


def visitor(port: int, plotly_path: str) -> dict[str, Any]:
    """One legitimate visitor; the outcome with its latencies (seconds) and problems."""
    from streamlit_client import Session, click_states

    from headforms import DEFAULT_MODEL

    out: dict[str, Any] = {"problems": []}
    try:
        status, out["shell"] = get(port, "/")
        if status != 200:
            out["problems"].append(f"GET / {status}")
        with Session(port, timeout=180) as session:
            run = session.run()
            out["page"] = run.seconds
            status, out["plotly"] = get(port, plotly_path)
            if status != 200:
                out["problems"].append(f"plotly.js {status}")
            problems = [run] if run.status != "FINISHED_SUCCESSFULLY" or run.messages else []
            click = click_states(session.components["simplex"], [DEFAULT_MODEL, 2, 3])
            again = session.run(widget_states=click)
            out["rerun"] = again.seconds
            if again.status != "FINISHED_SUCCESSFULLY" or again.messages:
                problems.append(again)
            for bad in problems:
                out["problems"].append(f"{bad.status}: {bad.messages[:2]}")
    except Exception as exc:  # a timeout or a dropped connection is a failure, not a crash
        out["problems"].append(f"{type(exc).__name__}: {exc}")
    return out


def attacker(port: int, specs: dict[str, str], stop: threading.Event, index: int) -> list[dict]:
    """Hostile requests in a loop until ``stop``; each answer's time and what it showed."""
    from streamlit_client import Session, click_states, number_state

    from headforms import DEFAULT_MODEL

    answers: list[dict] = []
    names = list(specs)
    step = 0
    while not stop.is_set():
        kind, batch = step % 4, step // 4
        step += 1
        try:
            if kind == 0:  # the hostile specs, each in a fresh session's URL
                for name in names[index % 2 :: 2]:
                    with Session(port, timeout=180) as session:
                        run = session.run("model=" + quote(specs[name], safe=""))
                    answers.append(_answer(name, run))
            elif kind == 1:  # three new RoPE positions (each a new analysis)
                with Session(port, timeout=180) as session:
                    session.run()
                    rope = session.widget("number_input", "RoPE relative position d")
                    for i in range(3):
                        position = 1 + i + 10 * batch + 10_000 * index
                        run = session.run(widget_states=[number_state(rope, position)])
                        answers.append(_answer("new RoPE position", run))
            elif kind == 2:  # three Theorem 5 samplings with new seeds
                with Session(port, timeout=180) as session:
                    session.run(page_name="theorem5")
                    seed = session.widget("number_input", "seed")
                    for i in range(3):
                        value = 1000 + i + 10 * batch + 10_000 * index
                        run = session.run(
                            page_name="theorem5", widget_states=[number_state(seed, value)]
                        )
                        answers.append(_answer("new Theorem 5 sampling", run))
            else:  # forged clicks and a NaN widget value
                with Session(port, timeout=180) as session:
                    session.run()
                    layer = session.widget("number_input", "Layer")
                    simplex = session.components["simplex"]
                    for payload in (
                        [DEFAULT_MODEL, math.nan, 0],
                        ["x" * 1_000_000, 1, 1],
                        {"a": [1] * 1000},
                    ):
                        raw = json.dumps([{"event": "clicked", "value": payload}])
                        run = session.run(widget_states=click_states(simplex, None, raw=raw))
                        answers.append(_answer("forged click", run))
                    run = session.run(widget_states=[number_state(layer, math.nan)])
                    answers.append(_answer("NaN widget value", run))
        except Exception as exc:
            answers.append({"name": "attacker error", "seconds": math.nan, "lines": [repr(exc)]})
    return answers


def _answer(name: str, run: Any) -> dict[str, Any]:
    return {
        "name": name,
        "seconds": run.seconds,
        "lines": [*run.errors, *run.toasts],
        "exceptions": len(run.exceptions),
    }


def percentile(values: list[float], q: float) -> float:
    values = sorted(v for v in values if not math.isnan(v))
    if not values:
        return math.nan
    return values[min(len(values) - 1, math.ceil(q * len(values)) - 1)]


def phase(port: int, pid: int, visitors: int, plotly_path: str) -> dict[str, Any]:
    with ThreadPoolExecutor(visitors) as pool:
        outcomes = list(pool.map(lambda _: visitor(port, plotly_path), range(visitors)))
    failures = [o for o in outcomes if o["problems"]]
    return {
        "outcomes": outcomes,
        "failures": failures,
        "rss": server_rss(pid),
    }


def run_server(args: argparse.Namespace, nice: int, tree: Path = ROOT) -> dict[str, Any]:
    """One server of the checkout ``tree`` (workers at niceness ``nice``): the quiet phase,
    then the attacked one."""
    from headforms import DEFAULT_MODEL

    tmp = Path(tempfile.mkdtemp(prefix="bench-load-"))
    env = thread_env(
        1,
        HEADFORMS_HOSTED="1",
        HEADFORMS_CACHE_DIR=str(tmp / "cache"),
        HEADFORMS_ANALYSIS_SECONDS=SECONDS_LIMIT,
        HEADFORMS_ANALYSIS_MEMORY=MEMORY_LIMIT,
        HEADFORMS_ANALYSIS_NICE=str(nice),
        HF_HUB_OFFLINE="1",
    )
    env["PYTHONPATH"] = str(tree)
    os.environ.update({k: env[k] for k in ("HEADFORMS_CACHE_DIR", "HF_HUB_OFFLINE")})
    specs, root = hostile_root(tmp)
    env["HEADFORMS_MODEL_ROOTS"] = str(root)
    subprocess.run(  # the default model as the dashboard asks for it, before the server starts
        [
            sys.executable,
            "-c",
            "from headforms import engine; "
            f"engine.analyze({DEFAULT_MODEL!r}, spectra=engine.ALL_SPECTRA).baseline",
        ],
        env=env,
        cwd=tree,
        check=True,
    )
    plotly_path = plotly_js_path(tree)
    port = free_port()
    env.update(HOST="127.0.0.1", PORT=str(port), VENV=str(ROOT / ".venv"))
    log = (tmp / "server.log").open("wb")
    server = subprocess.Popen(
        ["bash", str(tree / "scripts" / "start.sh")],
        cwd=tree,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if get(port, "/_stcore/health")[0] == 200:
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        visitor(port, plotly_path)  # the first session of the process: imports
        start_rss = server_rss(server.pid)
        monitor = Monitor(server.pid)
        monitor.start()
        quiet = phase(port, server.pid, args.visitors, plotly_path)

        stop = threading.Event()
        results: list[list[dict]] = [[] for _ in range(args.attackers)]

        def attack(i: int) -> None:
            results[i] = attacker(port, specs, stop, i)

        threads = [threading.Thread(target=attack, args=(i,)) for i in range(args.attackers)]
        for thread in threads:
            thread.start()
        time.sleep(args.warmup)
        rounds = [phase(port, server.pid, args.visitors, plotly_path) for _ in range(args.rounds)]
        attacked = {
            "outcomes": [o for r in rounds for o in r["outcomes"]],
            "failures": [f for r in rounds for f in r["failures"]],
            "rss": rounds[-1]["rss"],
        }
        stop.set()
        for thread in threads:
            thread.join(600)
        monitor.stop.set()
        end_rss = server_rss(server.pid)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "tree": "before" if tree != ROOT else "this tree",
        "nice": nice,
        "quiet": quiet,
        "attacked": attacked,
        "answers": [a for per in results for a in per],
        "start_rss": start_rss,
        "end_rss": end_rss,
        "monitor": monitor,
    }


def report(run: dict[str, Any], args: argparse.Namespace) -> None:
    """Print one server's tables."""
    nice = run["nice"] if run["tree"] == "this tree" else "before"
    rows = []
    for name, result in (("quiet", run["quiet"]), (f"{args.attackers} attackers", run["attacked"])):
        outs = result["outcomes"]
        rows.append(
            {
                "workers' nice": nice,
                "phase": name,
                "visits": len(outs),
                "failures": len(result["failures"]),
                "page p50 s": percentile([o.get("page", math.nan) for o in outs], 0.5),
                "page p95 s": percentile([o.get("page", math.nan) for o in outs], 0.95),
                "rerun p95 s": percentile([o.get("rerun", math.nan) for o in outs], 0.95),
                "plotly.js p50 s": percentile([o.get("plotly", math.nan) for o in outs], 0.5),
                "plotly.js p95 s": percentile([o.get("plotly", math.nan) for o in outs], 0.95),
            }
        )
    print_table(f"{args.visitors} concurrent visitors (websocket page runs, GET plotly.js)", rows)
    for name in ("quiet", "attacked"):
        for failure in run[name]["failures"][:5]:
            print(f"  {name} failure: {failure['problems']}")

    by_name: dict[str, list[dict]] = {}
    for answer in run["answers"]:
        name = answer["name"]
        if name.startswith("new ") and not answer["lines"]:
            name += " (computed)"  # not refused: the page with a new result
        by_name.setdefault(name, []).append(answer)
    rows = []
    for name, group in sorted(by_name.items()):
        seconds = [a["seconds"] for a in group]
        lines = [len(a["lines"]) for a in group]
        example = next((a["lines"][0] for a in group if a["lines"]), "")
        rows.append(
            {
                "request": name,
                "count": len(group),
                "p50 s": percentile(seconds, 0.5),
                "max s": max((s for s in seconds if not math.isnan(s)), default=math.nan),
                "over 10 s": sum(s > 10 for s in seconds),
                "exceptions": sum(a.get("exceptions", 0) for a in group),
                "lines": f"{min(lines)}-{max(lines)}",
                "example": example[:80],
            }
        )
    print_table(f"attackers' requests (workers' nice {nice}): answer time, what was shown", rows)
    monitor = run["monitor"]
    print_table(
        f"server memory (workers' nice {nice})",
        [
            {
                "server RSS start MiB": run["start_rss"] / 2**20,
                "after quiet MiB": run["quiet"]["rss"] / 2**20,
                "after attack MiB": run["end_rss"] / 2**20,
                "growth MiB": (run["end_rss"] - run["start_rss"]) / 2**20,
                "peak server MiB": monitor.peak_rss / 2**20,
                "peak workers at once": monitor.peak_workers,
                "peak worker RSS MiB": monitor.peak_worker_rss / 2**20,
            }
        ],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--visitors", type=int, default=30)
    parser.add_argument("--attackers", type=int, default=3)
    parser.add_argument("--warmup", type=float, default=30.0, help="seconds of attack first")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of visitors under attack")
    parser.add_argument(
        "--before",
        type=Path,
        help="also run the server of this older checkout (e.g. `git archive main`), first",
    )
    parser.add_argument(
        "--nice",
        default="10",
        help="comma-separated HEADFORMS_ANALYSIS_NICE values, one server each (e.g. 0,10)",
    )
    args = parser.parse_args()
    runs = [run_server(args, 0, args.before.resolve())] if args.before else []
    runs += [run_server(args, int(n)) for n in args.nice.split(",")]
    print(f"\n{machine_line(1)}; server limits: {SECONDS_LIMIT} s, {int(MEMORY_LIMIT) >> 20} MiB")
    for run in runs:
        report(run, args)


if __name__ == "__main__":
    main()
