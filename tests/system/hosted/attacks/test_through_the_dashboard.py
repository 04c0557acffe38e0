"""Hosted mode tried as an attacker would, through the dashboard (issue 9): per-session limits,
forged URL parameters and widget values (AppTest), forged click payloads and hostile specs over
real websockets to ``scripts/start.sh``; no traceback, no server path, no stale in-memory result
after a model file changes.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import page_runner
import pytest
import tiny_models
from hosted_attacks import (
    HANG_GUARD,
    SLOW_LIMIT,
    assert_no_worker_left,
    rss,
)
from repo import REPO
from streamlit.testing.v1 import AppTest

from headforms import DEFAULT_MODEL, engine, sources
from headforms.baseline import gaussian_baseline
from headforms.columns import ALL_SPECTRA
from headforms.settings import (
    ALLOWLIST_ENV,
    HOSTED_ENV,
    MAX_BYTES_ENV,
    ROOTS_ENV,
    SECONDS_ENV,
    VISITOR_ANALYSES_ENV,
    VISITOR_SAMPLES_ENV,
)

# --- the dashboard under AppTest ----------------------------------------------------------------


@pytest.fixture(scope="module")
def warm_default() -> None:
    """The default model analysed as the dashboard asks (all spectra, baseline) in the session
    cache, so that hosted AppTest runs open it without a worker."""
    card = engine.analyze(DEFAULT_MODEL, spectra=ALL_SPECTRA).card
    gaussian_baseline(card.baseline_shapes)


@pytest.fixture
def hosted_app(root: Path, warm_default: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Hosted mode for AppTest runs (the session's cache, where the default model is warm)."""
    monkeypatch.setenv(HOSTED_ENV, "1")
    monkeypatch.setenv(ROOTS_ENV, str(root))
    monkeypatch.setenv("HEADFORMS_THREADS", "1")
    yield
    assert_no_worker_left()


def run_app(page: str | None = None, params: dict[str, str] | None = None) -> AppTest:
    """The app under AppTest (tests/helpers/page_runner.py), declared hung after HANG_GUARD."""
    return page_runner.run_app(page, params, timeout=HANG_GUARD)


def visible_messages(at: AppTest) -> list[str]:
    """Every error, warning, toast and exception text of a run."""
    out = [e.value for e in at.error] + [w.value for w in at.warning] + [t.value for t in at.toast]
    for exc in at.exception:
        out.extend([exc.message, *exc.stack_trace])
    return out


@pytest.mark.parametrize(
    ("page", "label"),
    [
        (None, "RoPE relative position d"),
        (None, "Layer"),
        (None, "Head"),
        ("theorem5", "spectra per n"),
        ("theorem5", "seed"),
    ],
)
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
def test_forged_integer_inputs_raise_nothing(
    hosted_app: None, page: str | None, label: str, value: float
) -> None:
    """A non-finite value for an integer input (only a forged message carries one) is dropped:
    no exception (before: ``int(nan)`` raised inside Streamlit), the input keeps its value."""
    at = run_app(page, {"model": DEFAULT_MODEL})
    widget = next(w for w in at.number_input if w.label == label)
    widget.set_value(widget.value + 1).run()
    kept = next(w for w in at.number_input if w.label == label).value
    next(w for w in at.number_input if w.label == label).set_value(value).run()
    assert not at.exception, [e.message for e in at.exception]
    assert next(w for w in at.number_input if w.label == label).value == kept


@pytest.mark.parametrize(
    ("params", "notice"),
    [
        ({"rope": "nan"}, "The link's rope=nan is not a RoPE relative position"),
        ({"layer": "1e3"}, "The link's layer=1e3 is not a layer of smollm2-135m"),
        ({"head": "inf"}, "The link's head=inf is not a head of smollm2-135m"),
        ({"model": "m" * 5000}, "model spec is 5000 characters long (at most 512)"),
    ],
    ids=["rope", "layer", "head", "long-model"],
)
def test_forged_url_parameters_are_refused_with_one_line(
    hosted_app: None, params: dict[str, str], notice: str
) -> None:
    """Bad URL parameters are corrected with one notice line; a long spec reaches neither the
    state nor the URL (before: it was kept in both)."""
    from ui import state

    at = run_app(None, params)
    assert not at.exception and not at.error, visible_messages(at)
    assert [notice in w.value for w in at.warning] == [True], [w.value for w in at.warning]
    assert at.session_state[state.MODEL_KEY] == DEFAULT_MODEL
    assert all(len(value) <= sources.MAX_SPEC_LENGTH for value in at.query_params.values())


def test_hosted_mode_hides_exception_details(
    hosted_app: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hosted: ``client.showErrorDetails`` is "none" (no type, message or traceback reaches the
    browser); off: the server's own setting comes back."""
    import streamlit as st

    monkeypatch.setenv(HOSTED_ENV, "0")
    run_app()
    own = st.get_option("client.showErrorDetails")
    assert own != "none"
    monkeypatch.setenv(HOSTED_ENV, "1")
    run_app()
    assert st.get_option("client.showErrorDetails") == "none"
    monkeypatch.setenv(HOSTED_ENV, "0")
    run_app()
    assert st.get_option("client.showErrorDetails") == own


@pytest.mark.slow
def test_new_rope_positions_per_visitor_are_limited(
    hosted_app: None, root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each RoPE position is a new computation: past the visitor's limit, one line, in this
    session and in a new one (before: each new session started afresh); positions already
    computed still open."""
    from ui import state

    model = root / "budget-model"
    if not model.exists():
        tiny_models.build("llama", model, seed=21)
    monkeypatch.setenv(VISITOR_ANALYSES_ENV, "2")
    at = run_app(None, {"model": str(model)})  # the model itself: 1
    assert not at.exception and not at.error, visible_messages(at)
    at.number_input(key=state.ROPE_KEY).set_value(1).run()  # 2
    assert not at.error, visible_messages(at)
    at.number_input(key=state.ROPE_KEY).set_value(2).run()  # 3: refused, the page stays on d = 0
    refusal = (
        "you have started 2 new analyses (models or RoPE positions) within an hour, the most "
        "one visitor may start on this server (HEADFORMS_VISITOR_ANALYSES); results already "
        "computed still open, and a new one may start in about MIN min (showing d = 0 instead)"
    )

    def minutes_blanked(errors: list[Any]) -> list[str]:
        lines = (page_runner.plain(e.value) for e in errors)
        return [re.sub(r"about \d+ min", "about MIN min", line) for line in lines]

    assert minutes_blanked(at.error) == [refusal]
    assert at.session_state[state.ROPE_KEY] == 0 and at.title
    at.number_input(key=state.ROPE_KEY).set_value(1).run()  # computed: opens
    assert not at.error and not at.exception, visible_messages(at)
    again = run_app(None, {"model": str(model), "rope": "3"})  # a new session, same visitor
    assert minutes_blanked(again.error) == [refusal]


def test_new_theorem5_samplings_per_visitor_are_limited(
    hosted_app: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every new Theorem 5 sampling counts; past the limit, one line naming it, also in a new
    session."""
    monkeypatch.setenv(VISITOR_SAMPLES_ENV, "2")
    at = run_app("theorem5")
    seed = next(w for w in at.number_input if w.label == "seed")
    errors = []
    for value in (int(time.time()) % 10**6 + 1000 + i for i in range(3)):  # seeds never sampled
        seed.set_value(value).run()
        assert not at.exception, [e.message for e in at.exception]
        errors = [e.value for e in at.error]
    assert len(errors) == 1 and "HEADFORMS_VISITOR_SAMPLES" in errors[0], errors
    again = run_app("theorem5")
    next(w for w in again.number_input if w.label == "seed").set_value(value + 1).run()

    def minutes_blanked(lines: list[str]) -> list[str]:
        return [re.sub(r"about \d+ min", "about MIN min", line) for line in lines]

    assert minutes_blanked([e.value for e in again.error]) == minutes_blanked(errors)


def test_too_many_sizes_and_bad_sizes_are_refused(hosted_app: None) -> None:
    """Theorem 5 sizes: at most 8, each a whole number within the sampler's bound; the rest is
    ignored with one toast."""
    at = run_app("theorem5")
    at.multiselect[0].set_value(["16", "x" * 10_000, "-5", "1e9", *map(str, range(20, 40))]).run()
    assert not at.exception and not at.error, visible_messages(at)
    assert any("at most 8" in t.value for t in at.toast)


def test_figures_follow_the_weights_not_the_spec(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page keys its cached figures by the weights' fingerprint (``PageContext.model``): the
    same view again builds nothing, the same spec with other weights builds again."""
    from headforms.figures import head as head_figures
    from ui.loading import FINGERPRINT_SECONDS

    built: list[str] = []
    real = head_figures.eigenvalue_histogram

    def counting(*args: Any, **kwargs: Any) -> Any:
        built.append("histogram")
        return real(*args, **kwargs)

    monkeypatch.setattr(head_figures, "eigenvalue_histogram", counting)
    # Only the viewed head's figures: the next and previous heads' built ahead would count too.
    monkeypatch.setattr("ui.compute.ahead", lambda builds: None)
    model = tmp_path / "reweighted"
    tiny_models.build("llama", model, seed=33)
    params = {"model": str(model), "layer": "1", "head": "2"}
    for _ in range(2):  # the second view: the same weights, the figure kept
        at = run_app("head", params)
        assert not at.exception and not at.error, visible_messages(at)
    assert built == ["histogram"]
    time.sleep(0.05)
    tiny_models.build("llama", model, seed=34)  # same path, other weights
    time.sleep(FINGERPRINT_SECONDS + 0.2)  # the remembered fingerprint expires
    at = run_app("head", params)
    assert not at.exception and not at.error, visible_messages(at)
    assert built == ["histogram", "histogram"]


def test_a_changed_model_file_is_analysed_again(root: Path, tmp_path: Path) -> None:
    """The in-memory store is keyed by the weights' fingerprint: after the file changes, the
    page shows the new weights' numbers (before: the old result, keyed by the spec)."""
    from ui.loading import FINGERPRINT_SECONDS

    model = tmp_path / "changing"
    tiny_models.build("llama", model, seed=31)
    old = engine.analyze(str(model), use_cache=False).heads.iloc[0]["energy"]
    at = run_app("head", {"model": str(model), "layer": "0", "head": "0"})
    shown = next(m.value for m in at.metric if m.label == "Symmetric energy")
    assert shown == f"{old:.3f}"
    time.sleep(0.05)
    tiny_models.build("llama", model, seed=32)  # same path, other weights
    new = engine.analyze(str(model), use_cache=False).heads.iloc[0]["energy"]
    assert f"{new:.3f}" != f"{old:.3f}"
    time.sleep(FINGERPRINT_SECONDS + 0.2)  # the remembered fingerprint expires
    at = run_app("head", {"model": str(model), "layer": "0", "head": "0"})
    assert not at.exception and not at.error
    assert next(m.value for m in at.metric if m.label == "Symmetric energy") == f"{new:.3f}"


PRIVATE_MARKERS = ("Traceback", 'File "', "site-packages", ".venv", "/_stcore")


def _private_locations(extra: list[str]) -> list[str]:
    from headforms.sources.hub import hub_cache_dir
    from headforms.store import cache_dir

    return [str(cache_dir()), str(hub_cache_dir()), str(REPO), sys.prefix, *extra]


def test_ui_messages_name_no_server_path_nor_endpoint(
    hosted_app: None, fake_hub: Any, tiny_dir: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every hostile spec through the dashboard: one error line each, and no line names the
    result cache, the hub cache, the hub endpoint, the installation or a traceback."""
    from fake_hub import checkpoint_files

    monkeypatch.setenv(ALLOWLIST_ENV, "evil/*")
    files = checkpoint_files(tiny_dir)
    fake_hub.add_repo("evil/gated", gated=True, token="t").commit(files)
    liar = fake_hub.add_repo("evil/liar")
    liar.commit(files)
    liar.declared_sizes["model.safetensors"] = 10
    monkeypatch.setenv(MAX_BYTES_ENV, str(len(files["model.safetensors"]) // 2))
    fake_hub.add_repo("evil/broken").commit({"config.json": b"{not json"})
    specs = [
        "evil/missing",
        "evil/gated",
        "evil/liar",
        "evil/broken",
        "evil/gated@nope",
        "other/model",
        str(root / "fifo-model"),
        str(root / "counts.gguf"),
        str(root / ".." / "x"),
        "/etc/passwd",
        "gpt2;id",
    ]
    private = _private_locations([fake_hub.url, fake_hub.cdn_url, "127.0.0.1"])
    for spec in specs:
        at = run_app(None, {"model": spec})
        assert not at.exception, (spec, [e.message for e in at.exception])
        assert len(at.error) == 1, (spec, visible_messages(at))
        for message in visible_messages(at):
            assert "\n" not in message, (spec, message)
            for marker in [*private, *PRIVATE_MARKERS]:
                assert marker not in message, (spec, marker, message)


# --- the real server over websockets ------------------------------------------------------------


@pytest.fixture(scope="module")
def hosted_server(
    root: Path, warm_default: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """``scripts/start.sh`` in hosted mode on loopback: the hostile root allowed, a 2 s limit
    per analysis, the default model warm in the (session) cache."""
    from servers import free_port, serving

    port = free_port()
    log = tmp_path_factory.mktemp("hosted-server") / "streamlit.log"
    env = {
        **os.environ,
        "HEADFORMS_HOSTED": "1",
        "HEADFORMS_THREADS": "1",
        ROOTS_ENV: str(root),
        SECONDS_ENV: SLOW_LIMIT,
    }
    with serving(port, env, log, 120) as proc:
        yield {"port": port, "pid": proc.pid, "log": log}  # start.sh execs streamlit


def test_forged_clicks_and_widgets_over_websockets(hosted_server: dict[str, Any]) -> None:
    """Forged click payloads and widget values from a raw websocket client: no exception element
    (before: tracebacks from ``int(nan)``), a toast for each refused click, a multi-megabyte
    spec typed in the picker refused before it reaches the URL, a valid click selects its
    head."""
    from streamlit_client import Session, click_states, number_state, text_state

    with Session(hosted_server["port"]) as session:
        first = session.run()
        assert first.status == "FINISHED_SUCCESSFULLY" and not first.messages, first.messages
        simplex = session.components["simplex"]
        layer = session.widget("number_input", "Layer")
        for value in (math.nan, math.inf, "abc", 1e300):
            run = session.run(widget_states=[number_state(layer, value)])
            assert not run.exceptions and not run.errors, (value, run.messages)
        refused = [
            ["no-such-model", 1, 1],
            [DEFAULT_MODEL, math.nan, 0],
            [DEFAULT_MODEL, 10**9, 0],
            [DEFAULT_MODEL, 0.5, 1],
            [DEFAULT_MODEL, "3", [1]],
            "a string",
            {"a": 1},
            [],
        ]
        for payload in refused:
            raw = json.dumps([{"event": "clicked", "value": payload}])  # NaN as JSON's NaN
            run = session.run(widget_states=click_states(simplex, None, raw=raw))
            assert not run.exceptions and not run.errors, (payload, run.messages)
            assert len(run.toasts) == 1 and run.toasts[0].startswith("Ignored a click"), run.toasts
        huge = json.dumps([{"event": "clicked", "value": ["x" * 3_000_000, 1, 1]}])
        run = session.run(widget_states=click_states(simplex, None, raw=huge))
        assert not run.exceptions and len(run.toasts) == 1 and len(run.toasts[0]) < 200
        model = session.widget("selectbox", "Model")
        run = session.run(widget_states=[text_state(model, "/" + "x" * 2_000_000)])
        assert not run.exceptions and not run.errors, run.messages
        assert run.toasts == [
            "Ignored a model spec: model spec is 2000001 characters long (at most 512)."
        ]
        assert len(run.query_string or "") < 200  # the URL never carries it
        run = session.run(widget_states=click_states(simplex, [DEFAULT_MODEL, 3, 4]))
        assert not run.exceptions and not run.toasts, run.messages
        assert "layer=3" in (run.query_string or "") and "head=4" in (run.query_string or "")


HOSTILE_SPECS = {
    "fifo model": ("{root}/fifo-model", r"model\.safetensors is not a regular file \(a FIFO\)"),
    "fifo gguf": ("{root}/fifo.gguf", r"fifo\.gguf is not a regular file \(a FIFO\)"),
    "slow gguf": ("{root}/slow.gguf", rf"took longer than this server's limit of {SLOW_LIMIT} s"),
    "traversal": ("{root}/../../etc", r"path traversal"),
    "encoded traversal": ("{root}/%2e%2e/x", r"no such file or directory"),
    "proc": ("/proc/self/environ", r"outside the model directories"),
    "dev": ("/dev/zero", r"outside the model directories"),
    "hub": ("gpt2", r"hub models are disabled on this server"),
    "shell": ("gpt2;id", r"shell metacharacter"),
}
"""Specs answered without a worker, and one stopped at the wall-clock limit (lying configs and
counts need a worker slower to start than this server's 2 s limit: tested above)."""


def test_hostile_specs_over_websockets(hosted_server: dict[str, Any], root: Path) -> None:
    """Every hostile spec in a fresh session's URL: one error line naming what was wrong, no
    exception, no server path, the page still served; the server's memory grows by less than
    300 MB over all of them."""
    import re

    from streamlit_client import Session

    before = rss(hosted_server["pid"])
    private = _private_locations([])
    timings = {}
    for name, (spec, pattern) in HOSTILE_SPECS.items():
        spec = spec.format(root=root)
        with Session(hosted_server["port"], timeout=HANG_GUARD) as session:
            run = session.run("model=" + quote(spec, safe=""))
        timings[name] = round(run.seconds, 2)
        assert run.status == "FINISHED_SUCCESSFULLY", (name, run.status)
        assert not run.exceptions, (name, run.exceptions)
        assert len(run.errors) == 1 and re.search(pattern, run.errors[0]), (name, run.errors)
        for message in run.messages:
            for marker in [*private, *PRIVATE_MARKERS]:
                assert marker not in message, (name, marker, message)
    growth = rss(hosted_server["pid"]) - before
    print(f"answer seconds per hostile spec: {timings}; server RSS growth {growth / 2**20:.0f} MiB")
    assert growth < 300 * 2**20
