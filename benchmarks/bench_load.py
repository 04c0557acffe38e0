"""A hosted server under load while attackers run: 30 visitors, 8 attackers, side by side.

Starts the dashboard (``scripts/start.sh``, ``HEADFORMS_HOSTED=1``) on a loopback port with a
model root full of hostile files and tables, the default model already analysed, then measures
two phases in the same run:

- **quiet**: 30 concurrent visitors, each: ``GET /``, one websocket script run of the simplex
  page (the browser's protocol, ``tests/helpers/streamlit_client.py``), ``GET`` of plotly.js,
  one rerun selecting another head;
- **attacked**: the same 30 visitors (``--rounds`` times, after ``--warmup`` seconds of attack)
  while the attackers of issue 17 loop (``--attackers`` of them, in this order):

  - ``rope`` (two of them): new RoPE positions of the default model, each few in a new
    session, reconnecting whenever a budget runs out;
  - ``theorem5``: new Theorem 5 samplings at the largest sizes (8 values of n, the most spectra
    per n that they allow), new sessions likewise;
  - ``hostile``: model specs naming FIFOs, a slow GGUF, a config lying about its layers, a model
    needing more memory than allowed, huge GGUF counts, traversal, a multi-megabyte spec and
    hostile tables (a small parquet of 5 million constant rows, a 600 MB CSV, 2,000 models, a
    300-character file name); forged click payloads and NaN widget values;
  - ``hopper``: new RoPE positions like ``rope``, but from a new address whenever its budget
    runs out (what per-visitor budgets cannot stop: the fair turns must);

  and those of issue 29:

  - ``flood``: a prompt flood with revisits: the Head page of the default model with a new
    prompt of about 180 tokens in each new session until its visitor's forward passes run out,
    then re-opening those stored prompts, each in a new session;
  - ``refund``: the refund loop: the Head page alternating gemma3-270m and smollm2-135m (which
    do not fit ``HEADFORMS_MODELS_MEMORY`` together) with a new prompt over the token cap in each
    request (before: each request started a worker that loaded its model, and cost nothing);
  - ``sweeps``: big sweep views: the RoPE positions page of a 16,384-head model whose sweep over
    positions 0-127 is stored (too big for the figure caches), in new sessions.

  and, once the attack runs, one **victim** asks for a new analysis (a RoPE position no one
  computed) and waits for it.

Every client names its own address in ``X-Forwarded-For`` and the server trusts loopback as its
proxy (``HEADFORMS_TRUSTED_PROXIES=127.0.0.1``), so each visitor and attacker is a visitor of
its own, as behind a reverse proxy.

Reported: visitor failures (a run not finishing, any error or exception shown, an HTTP error),
p50/p95 of page runs and of plotly.js, each hostile request's answer time (one line expected),
the victim's wait, the server's RSS growth (the server process; workers are separate processes,
their peak is listed apart), workers running at once and worker processes started during the
attack (each a model load for a forward pass).

Workers run at ``HEADFORMS_ANALYSIS_NICE`` (default 10); ``--nice 0,10`` runs one server per
value, one after the other, to compare; ``--before TREE`` first runs the server of an older
checkout (``mkdir /tmp/before && git archive main | tar -x -C /tmp/before``) under the same
load. Run:
``.venv/bin/python benchmarks/bench_load.py [--visitors 30] [--attackers 8 | --roles flood]
[--nice 0,10] [--before TREE]``.
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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _common import ROOT, machine_line, print_table, thread_env

sys.path.insert(0, str(ROOT / "tests" / "helpers"))

from load_clients import (
    BIG_SWEEP,
    MEMORY_LIMIT,
    REFUND_MODELS,
    ROLES,
    SECONDS_LIMIT,
    attacker,
    get,
    percentile,
    plotly_js_path,
    victim,
    visitor,
)


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
    wide_model(wide, n_dim=16384)  # 4 GiB to analyse: past the 2 GiB limit
    big = root / "big-sweep"  # 128 layers x 128 heads of n = 2: 16,384 heads with RoPE
    tiny_models.build(
        "llama",
        big,
        seed=3,
        num_hidden_layers=128,
        num_attention_heads=128,
        num_key_value_heads=128,
        hidden_size=256,
        head_dim=2,
        intermediate_size=16,
        vocab_size=16,
    )
    tables = hostile_tables(root)
    return (
        {
            "fifo model": str(fifo),
            "fifo gguf": str(root / "fifo.gguf"),
            "slow gguf": str(root / "slow.gguf"),
            "lying config": str(lying),
            "memory": str(wide),
            "huge counts": str(root / "counts.gguf"),
            "traversal": f"{root}/../../etc/passwd",
            "long spec": "/" + "x" * 100_000,  # (Streamlit itself drops a query string of MBs)
            **tables,
        },
        root,
        str(big),
    )


def hostile_tables(root: Path) -> dict[str, str]:
    """Hostile per-head tables under the root; returns name -> spec."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    def rows(models: int, count: int) -> pd.DataFrame:
        index = range(count)
        return pd.DataFrame(
            {
                "model": [f"m{i % models}" for i in index],
                "layer": [0] * count,
                "head": [i // models for i in index],
                **{c: 0.25 for c in ("a", "b", "c", "d", "b_sym", "c_sym", "d_sym")},
            }
        )

    constant = rows(1, 1).loc[[0] * 100_000].reset_index(drop=True)  # one row, repeated
    block = pa.Table.from_pandas(constant, preserve_index=False)
    with pq.ParquetWriter(root / "bomb.parquet", block.schema, compression="zstd") as writer:
        for _ in range(50):  # 5 million constant rows in well under a megabyte
            writer.write_table(block)
    with (root / "huge.csv").open("wb") as fh:  # 600 MB (sparse)
        fh.write(b"model,layer,head,a,b,c,d,b_sym,c_sym,d_sym\n")
        fh.truncate(600 * 2**20)
    rows(2_000, 2_000).to_csv(root / "models.csv", index=False)
    return {
        "parquet bomb": f"{root}/bomb.parquet::m0",
        "huge csv": f"{root}/huge.csv",
        "2,000 models": f"{root}/models.csv",
        "long file name": f"{root}/{'x' * 300}.csv",
    }


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
        self.started: set[int] = set()
        """Worker processes seen (a model load each, for a forward pass)."""

    def run(self) -> None:
        import psutil

        while not self.stop.is_set():
            try:
                self.peak_rss = max(self.peak_rss, server_rss(self.pid))
                children = workers(self.pid)
                self.peak_workers = max(self.peak_workers, len(children))
                self.started.update(child.pid for child in children)
                for child in children:
                    try:
                        self.peak_worker_rss = max(self.peak_worker_rss, child.memory_info().rss)
                    except psutil.NoSuchProcess:
                        pass
            except psutil.NoSuchProcess:
                return
            time.sleep(0.2)


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
        HEADFORMS_TRUSTED_PROXIES="127.0.0.1",  # clients name their addresses, as via a proxy
        HF_HUB_OFFLINE="1",
    )
    env["PYTHONPATH"] = str(tree)
    os.environ.update({k: env[k] for k in ("HEADFORMS_CACHE_DIR", "HF_HUB_OFFLINE")})
    try:
        specs, root, big = hostile_root(tmp)
        env["HEADFORMS_MODEL_ROOTS"] = str(root)
        models = list(dict.fromkeys([DEFAULT_MODEL, *REFUND_MODELS, big]))
        subprocess.run(  # the models as the dashboard asks for them and the big model's sweep,
            [  # before the server starts
                sys.executable,
                "-c",
                "from headforms import columns, engine\n"
                "from headforms.model_analysis import model_baseline\n"
                f"for model in {models!r}:\n"
                "    model_baseline(engine.analyze(model, spectra=columns.ALL_SPECTRA).card)\n"
                f"engine.sweep({big!r}, {BIG_SWEEP!r})",
            ],
            env=env,
            cwd=tree,
            check=True,
        )
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
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
        quiet_starts = len(monitor.started)

        stop = threading.Event()
        roles = attacker_roles(args)
        results: list[list[dict]] = [[] for _ in roles]

        def attack(i: int) -> None:
            results[i] = attacker(port, specs, stop, i, roles[i], big)

        threads = [threading.Thread(target=attack, args=(i,)) for i in range(len(roles))]
        for thread in threads:
            thread.start()
        time.sleep(args.warmup)
        waited: dict[str, Any] = {}
        newcomer = threading.Thread(target=lambda: waited.update(victim(port, 777_777)))
        newcomer.start()
        rounds = [phase(port, server.pid, args.visitors, plotly_path) for _ in range(args.rounds)]
        newcomer.join(600)
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
        "roles": roles,
        "victim": waited,
        "start_rss": start_rss,
        "end_rss": end_rss,
        "monitor": monitor,
        "attack_starts": len(monitor.started) - quiet_starts,
        "load": os.getloadavg(),
    }


def report(run: dict[str, Any], args: argparse.Namespace) -> None:
    """Print one server's tables."""
    nice = run["nice"] if run["tree"] == "this tree" else "before"
    rows = []
    for name, result in (("quiet", run["quiet"]), (attacked_name(run["roles"]), run["attacked"])):
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
    waited = run["victim"]
    print_table(
        f"a victim's new analysis while {', '.join(run['roles'])} run",
        [
            {
                "served": waited.get("served"),
                "seconds": waited.get("seconds", math.nan),
                "shown": "; ".join(waited.get("lines", []))[:100],
            }
        ],
    )
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
        example = next((a["lines"][0] for a in group if a["lines"]), "") or next(
            (a.get("exception", "") for a in group if a.get("exception")), ""
        )
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
                "workers started in the attack": run["attack_starts"],
            }
        ],
    )


def attacked_name(roles: list[str]) -> str:
    return " + ".join(roles) if len(roles) < 3 else f"{len(roles)} attackers"


def attacker_roles(args: argparse.Namespace) -> list[str]:
    """The attackers of a run: ``--roles`` as named, else the first ``--attackers`` of ROLES."""
    if args.roles:
        roles = args.roles.split(",")
        unknown = sorted(set(roles) - set(ROLES))
        if unknown:
            raise SystemExit(f"unknown roles {unknown}; known: {', '.join(dict.fromkeys(ROLES))}")
        return roles
    return [ROLES[i % len(ROLES)] for i in range(args.attackers)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--visitors", type=int, default=30)
    parser.add_argument("--attackers", type=int, default=len(ROLES), help="of: " + ", ".join(ROLES))
    parser.add_argument(
        "--roles", help="comma-separated attackers by name instead (e.g. flood for item 1 alone)"
    )
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
        load = ", ".join(f"{value:.1f}" for value in run["load"])
        print(f"load average at the end of the attack: {load}")


if __name__ == "__main__":
    main()
