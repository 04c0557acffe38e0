"""The peak of what a workers' memory limit counts (``VmData``: ``RLIMIT_DATA``) while a piece of
code runs in a fresh interpreter: what the tests of hosted mode's memory estimates measure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from repo import REPO

from headforms.hosted.process import WORKER_MALLOC

PRELUDE = """
import json, re, sys, threading, time
def vm_data():
    return int(re.search(r"VmData:\\s+(\\d+)", open("/proc/self/status").read())[1]) * 1024
peak = [0]
def watch():
    while True:
        peak[0] = max(peak[0], vm_data()); time.sleep(0.002)
threading.Thread(target=watch, daemon=True).start()
"""


def measured(body: str, *args: str, timeout: float = 900) -> dict[str, Any]:
    """Run ``body`` (Python, ``sys.argv[1:]`` = ``args``; it may set a dict ``out`` of more
    figures) in a fresh interpreter sampling ``VmData`` every 2 ms, its allocator set as a
    worker's (:data:`headforms.hosted.process.WORKER_MALLOC`): ``{"peak": bytes, ...}``."""
    script = (
        PRELUDE
        + "out = {}\n"
        + body
        + ("\ntime.sleep(0.05)\nprint(json.dumps({'peak': peak[0], **out}))\n")
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, **WORKER_MALLOC},
        timeout=timeout,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])
