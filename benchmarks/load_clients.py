"""The clients of benchmarks/bench_load.py: the visitors, the victim and the attackers (each
role one loop of requests through the browser's protocol), and what each answer was."""

from __future__ import annotations

import itertools
import json
import math
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote

from _common import ROOT

sys.path.insert(0, str(ROOT / "tests" / "helpers"))

SECONDS_LIMIT = "90"  # HEADFORMS_ANALYSIS_SECONDS: a model's first pass under load fits
MEMORY_LIMIT = str(2 * 2**30)  # HEADFORMS_ANALYSIS_MEMORY (the default: gemma3-270m's passes fit)
ROLES = ("rope", "rope", "theorem5", "hostile", "hopper", "flood", "refund", "sweeps")
"""The attackers, in the order ``--attackers N`` takes them (cycling past eight)."""
REFUND_MODELS = ("gemma3-270m", "smollm2-135m")
"""The refund loop's models (together past HEADFORMS_MODELS_MEMORY)."""
BIG_SWEEP = "0:127"
"""The stored sweep of the ``sweeps`` attacker's 16,384-head model."""
FLOOD_WORDS = ("the", "keeper", "counted", "ships", "before", "dawn", "and", "wrote", "names")
LARGEST_SIZES = [4096 - i for i in range(8)]
"""Theorem 5 sizes of the ``theorem5`` attacker: 8 values of n at the top of the range."""

_addresses = itertools.count(1)


def new_address() -> str:
    """A client address of its own (named in X-Forwarded-For to the trusted local proxy)."""
    n = next(_addresses)
    return f"10.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"


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
    """One legitimate visitor (an address of its own); the outcome with its latencies (seconds)
    and problems."""
    from streamlit_client import Session, click_states

    from headforms import DEFAULT_MODEL

    out: dict[str, Any] = {"problems": []}
    try:
        status, out["shell"] = get(port, "/")
        if status != 200:
            out["problems"].append(f"GET / {status}")
        with Session(port, timeout=180, forwarded_for=new_address()) as session:
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


def victim(port: int, position: int) -> dict[str, Any]:
    """A newcomer asking for an analysis nobody computed (the default model at a new RoPE
    position) while the attackers run: how long until it is served, and what it saw."""
    from streamlit_client import Session

    started = time.monotonic()
    try:
        with Session(port, timeout=600, forwarded_for=new_address()) as session:
            run = session.run(f"rope={position}")
        return {
            "seconds": time.monotonic() - started,
            "served": run.status == "FINISHED_SUCCESSFULLY" and not run.messages,
            "lines": run.messages[:2],
        }
    except Exception as exc:
        return {"seconds": time.monotonic() - started, "served": False, "lines": [repr(exc)]}


def attacker(
    port: int, specs: dict[str, str], stop: threading.Event, index: int, role: str, big: str
) -> list[dict]:
    """Hostile requests of ``role`` (see the module doc) in a loop until ``stop``; each
    answer's time and what it showed."""
    answers: list[dict] = []
    address = new_address()
    step = 0
    while not stop.is_set():
        try:
            if role in ("rope", "hopper"):
                refused = _rope_positions(
                    port, address, answers, first=1 + 1000 * (step + 1000 * index)
                )
                if refused and role == "hopper":
                    address = new_address()  # a fresh address: a fresh budget
            elif role == "theorem5":
                _theorem5_samplings(port, address, answers, seed=10_000 * (index + 1) + 3 * step)
            elif role == "flood":
                _prompt_flood(port, address, answers, step, index)
            elif role == "refund":
                _refund_loop(port, address, answers, step, index)
            elif role == "sweeps":
                _sweep_view(port, address, answers, big)
            else:
                _hostile_requests(port, specs, address, answers, step)
        except Exception as exc:
            answers.append({"name": "attacker error", "seconds": math.nan, "lines": [repr(exc)]})
        step += 1
    return answers


def _rope_positions(port: int, address: str, answers: list[dict], first: int) -> bool:
    """Three new RoPE positions of the default model in one new session; whether a budget
    refused one."""
    from streamlit_client import Session, number_state

    refused = False
    with Session(port, timeout=600, forwarded_for=address) as session:
        session.run()
        rope = session.widget("number_input", "RoPE relative position d")
        for position in range(first, first + 3):
            run = session.run(widget_states=[number_state(rope, position)])
            answers.append(_answer("new RoPE position", run))
            seen = [line.replace("\\", "") for line in run.errors]  # notices escape Markdown
            refused |= any("HEADFORMS_VISITOR_" in line for line in seen)
    return refused


def _theorem5_samplings(port: int, address: str, answers: list[dict], seed: int) -> None:
    """Three new Theorem 5 samplings at the largest sizes, in one new session."""
    from streamlit_client import Session, number_state

    with Session(port, timeout=600, forwarded_for=address) as session:
        session.run(page_name="theorem5")
        reps = session.widget("number_input", "spectra per n")
        sizes = session.widget("multiselect", "eigenvalues per side n")
        largest = _multiselect_state(sizes, [str(n) for n in LARGEST_SIZES])
        spectra = number_state(reps, 200_000 // max(LARGEST_SIZES))
        run = session.run(page_name="theorem5", widget_states=[largest, spectra])
        seed_input = session.widget("number_input", "seed")
        for value in range(seed, seed + 3):
            run = session.run(
                page_name="theorem5",
                widget_states=[largest, spectra, number_state(seed_input, value)],
            )
            answers.append(_answer("new Theorem 5 sampling", run))


def _flood_prompt(index: int, number: int) -> str:
    """The ``number``-th prompt of flooder ``index``: about 180 tokens, none seen before."""
    words = [FLOOD_WORDS[(number + i) % len(FLOOD_WORDS)] for i in range(150)]
    return f"Prompt {index}-{number}: " + " ".join(words)


def _prompt_flood(port: int, address: str, answers: list[dict], step: int, index: int) -> None:
    """A new prompt on the Head page in a new session, until the visitor's forward passes run
    out; from then on one of its stored prompts again, each in a new session."""
    from streamlit_client import Session

    sent = [a for a in answers if a["name"] == "new prompt" and not a["lines"]]
    refused = any(a["name"] == "new prompt" and a["lines"] for a in answers)
    number = step % max(1, len(sent)) if refused else step
    name = "stored prompt again" if refused else "new prompt"
    with Session(port, timeout=600, forwarded_for=address) as session:
        run = session.run("prompt=" + quote(_flood_prompt(index, number)), page_name="head")
    answers.append(_answer(name, run))


def _refund_loop(port: int, address: str, answers: list[dict], step: int, index: int) -> None:
    """The Head page of the refund loop's next model with a new prompt over the token cap (about
    600 tokens, within the 2,000 characters), in a new session."""
    from streamlit_client import Session

    model = REFUND_MODELS[step % len(REFUND_MODELS)]
    prompt = " ".join(f"z{index}{step}{i}" for i in range(200))[:1990]
    with Session(port, timeout=600, forwarded_for=address) as session:
        run = session.run(f"model={model}&prompt=" + quote(prompt), page_name="head")
    answers.append(_answer(f"prompt over the cap ({model})", run))


def _sweep_view(port: int, address: str, answers: list[dict], big: str) -> None:
    """The RoPE positions page of the 16,384-head model (its sweep stored), in a new session."""
    from streamlit_client import Session

    with Session(port, timeout=600, forwarded_for=address) as session:
        query = f"model={quote(big, safe='')}&positions={BIG_SWEEP}"
        run = session.run(query, page_name="positions")
    answers.append(_answer("big sweep view", run))


def _multiselect_state(widget_id: str, options: list[str]) -> Any:
    """A multiselect's state naming ``options`` (new options typed, as its frontend sends)."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    state = WidgetState(id=widget_id)
    state.string_array_value.data.extend(options)
    return state


def _hostile_requests(
    port: int, specs: dict[str, str], address: str, answers: list[dict], step: int
) -> None:
    """Every hostile spec in a fresh session's URL; then forged clicks and a NaN widget value."""
    from streamlit_client import Session, click_states, number_state

    from headforms import DEFAULT_MODEL

    if step % 2 == 0:
        for name, spec in specs.items():
            with Session(port, timeout=600, forwarded_for=address) as session:
                run = session.run("model=" + quote(spec, safe=""))
            answers.append(_answer(name, run))
        return
    with Session(port, timeout=600, forwarded_for=address) as session:
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


def _answer(name: str, run: Any) -> dict[str, Any]:
    return {
        "name": name,
        "seconds": run.seconds,
        "lines": [*run.errors, *run.toasts, *(t for t in run.texts if "HEADFORMS_" in t)],
        "exceptions": len(run.exceptions),
        "exception": next((f"{e['type']}: {e['message']}" for e in run.exceptions), ""),
    }


def percentile(values: list[float], q: float) -> float:
    values = sorted(v for v in values if not math.isnan(v))
    if not values:
        return math.nan
    return values[min(len(values) - 1, math.ceil(q * len(values)) - 1)]
