"""Does a contained worker really run below the server? CPU shares on one shared core.

A busy "server" process (this one's session) and a busy "worker" in a session of its own (as
the contained workers are started: ``start_new_session=True``), both pinned to one CPU, spin
for ``--seconds``; the worker's share of that CPU is reported for: no niceness, ``os.nice(10)``
alone, and :func:`headforms.hosted.workers.lower_priority` (``os.nice`` and the session's
autogroup niceness). Where the kernel groups sessions for scheduling
(``/proc/sys/kernel/sched_autogroup_enabled`` = 1) a process's niceness ranks it only within its
group, so ``os.nice`` alone leaves the worker at about half the core.

Run: ``.venv/bin/python benchmarks/bench_nice.py [--seconds 4]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import ROOT, machine_line, print_table

SPIN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"

SETUPS = {
    "no niceness": "",
    "os.nice(10) only": "import os; os.nice(10)\n",
    "lower_priority(10)": (
        "from headforms.hosted.workers import lower_priority; lower_priority(10)\n"
    ),
}


def share(setup: str, seconds: float, cpu: int) -> float:
    """The worker's share of CPU ``cpu`` while the server spins beside it."""
    code = f"import os; os.sched_setaffinity(0, {{{cpu}}})\n{setup}{SPIN.format(seconds=seconds)}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import os; os.sched_setaffinity(0, {{{cpu}}})\n" + SPIN.format(seconds=seconds + 1),
        ],
        env=env,
    )
    time.sleep(0.3)
    worker = subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True)
    _, status, usage = os.wait4(worker.pid, 0)
    server.wait()
    del status
    return (usage.ru_utime + usage.ru_stime) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=4.0)
    args = parser.parse_args()
    cpu = sorted(os.sched_getaffinity(0))[-1]
    autogroup = Path("/proc/sys/kernel/sched_autogroup_enabled")
    grouped = autogroup.read_text().strip() if autogroup.exists() else "absent"
    rows = [
        {"worker": name, "its share of the core": share(setup, args.seconds, cpu)}
        for name, setup in SETUPS.items()
    ]
    print(f"\n{machine_line(1)}; sched_autogroup_enabled = {grouped}")
    print_table("a busy worker beside a busy server on one core", rows)


if __name__ == "__main__":
    main()
