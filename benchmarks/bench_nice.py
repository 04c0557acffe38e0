"""Does a contained worker really run below the server? CPU shares on one shared core.

A busy "server" process (this one's session) and a busy "worker", both pinned to one CPU, spin
for ``--seconds``; the worker's share of that CPU is reported for a worker in a session of its
own (``start_new_session=True``) with no niceness, with ``os.nice(10)``, with ``os.nice(10)`` and
its session's autogroup niceness 10, and for a worker in the server's session (a process group
of its own, ``process_group=0``, as the contained workers are started) with ``os.nice(10)``.
Where the kernel groups sessions for scheduling (``/proc/sys/kernel/sched_autogroup_enabled`` =
1) a process's niceness ranks it only within its session's group: in a session of its own,
``os.nice`` alone leaves the worker at about half the core, and raising its group's niceness
instead makes it yield to every other session of the machine too (a worker with autogroup
niceness 10 got 5% of a core beside another session's busy process, a worker in the server's
session 32%: its group's fair share while the server was idle).

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
    "own session, no niceness": ("", True),
    "own session, os.nice(10)": ("import os; os.nice(10)\n", True),
    "own session, os.nice(10) + its autogroup's 10": (
        "import os; os.nice(10); open('/proc/self/autogroup', 'w').write('10')\n",
        True,
    ),
    "the server's session (own process group), os.nice(10)": ("import os; os.nice(10)\n", False),
}
"""How the worker is started and lowered: (setup code, in a session of its own)."""


def share(
    setup: str, own_session: bool, seconds: float, cpu: int, neighbour: bool = False
) -> float:
    """The worker's share of CPU ``cpu`` while the server (or, with ``neighbour``, a process of
    another session, the server idle) spins beside it."""
    code = f"import os; os.sched_setaffinity(0, {{{cpu}}})\n{setup}{SPIN.format(seconds=seconds)}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import os; os.sched_setaffinity(0, {{{cpu}}})\n" + SPIN.format(seconds=seconds + 1),
        ],
        env=env,
        start_new_session=neighbour,
    )
    time.sleep(0.3)
    started = {"start_new_session": True} if own_session else {"process_group": 0}
    worker = subprocess.Popen([sys.executable, "-c", code], env=env, **started)
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
        {"worker": name, "its share of the core": share(setup, own, args.seconds, cpu)}
        for name, (setup, own) in SETUPS.items()
    ]
    beside = [
        {"worker": name, "its share of the core": share(setup, own, args.seconds, cpu, True)}
        for name, (setup, own) in SETUPS.items()
        if "10" in name
    ]
    print(f"\n{machine_line(1)}; sched_autogroup_enabled = {grouped}")
    print_table("a busy worker beside a busy server on one core", rows)
    print_table("a busy worker beside another session's busy process (the server idle)", beside)


if __name__ == "__main__":
    main()
