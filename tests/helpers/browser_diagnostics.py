"""What a failed browser test saw: each open page's address, Streamlit's notices and errors, the
state of every plot (drawn, a canvas, an error text), the page's last console errors, a
screenshot, and the tail of the running test servers' logs. Printed to stderr (pytest shows it
under the failure), so a failure on a CI machine says more than "the canvas never appeared".

:func:`watch_contexts` makes a browser's new contexts record their console and report when they
are closed while a test's exception is in flight (``finally: context.close()``); a fixture that
closes its context in teardown calls :func:`report` itself when the test failed. Their pages
also load a page again when the host's network changed under the load
(:func:`reload_after_a_network_change`).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

KEPT_MESSAGES = 40
LOG_TAIL_CHARS = 3000

_server_logs: list[Path] = []

PLOTS_JS = """
() => [...document.querySelectorAll('div[data-hf-plot]')].map((gd) => ({
  key: gd.getAttribute('data-hf-plot'),
  drawn: Boolean(gd._fullLayout),
  canvases: gd.querySelectorAll('canvas').length,
  visibleCanvases: [...gd.querySelectorAll('canvas')].filter((c) => c.offsetParent !== null)
    .length,
  wanted: Boolean(gd.hfWanted),
  text: gd._fullLayout ? '' : (gd.textContent || '').slice(0, 300),
  noWebGl: (gd.textContent || '').includes('WebGL'),
}))
"""

NOTICES_JS = """
() => [...document.querySelectorAll(
  '[data-testid="stException"], [data-testid="stAlert"], [data-testid="stToast"]'
)].map((el) => el.innerText.slice(0, 400))
"""

RUNNING_JS = """
() => {
  const status = document.querySelector('[data-testid="stStatusWidget"]');
  return status && status.offsetParent !== null ? status.innerText.slice(0, 100) : null;
}
"""


@contextmanager
def server_log(path: Path) -> Iterator[Path]:
    """Within the block, a failed browser test's report ends with the tail of ``path``."""
    _server_logs.append(path)
    try:
        yield path
    finally:
        _server_logs.remove(path)


def watch_contexts(browser: object, timeout_ms: float) -> object:
    """``browser``, whose ``new_context`` now returns watched contexts (see the module) whose
    waits default to ``timeout_ms`` (Playwright's own default is 30 s)."""
    plain = browser.new_context

    def new_context(*args, **kwargs):
        context = plain(*args, **kwargs)
        context.set_default_timeout(timeout_ms)
        return watched(context)

    browser.new_context = new_context
    return browser


def watched(context: object) -> object:
    """``context``, recording its pages' console errors and page errors, and reporting what it
    shows when it is closed while an exception is in flight."""
    messages: list[str] = []
    context.hf_messages = messages

    def keep(text: str) -> None:
        messages.append(text)
        del messages[:-KEPT_MESSAGES]

    def on_page(page) -> None:
        page.on(
            "console",
            lambda message: (
                message.type in ("error", "warning")
                and keep(f"console.{message.type}: {message.text[:300]}")
            ),
        )
        page.on("pageerror", lambda error: keep(f"pageerror: {str(error)[:300]}"))

    context.on("page", on_page)
    context.on("page", reload_after_a_network_change)
    plain_close = context.close

    def close(*args, **kwargs):
        if sys.exc_info()[0] is not None:
            report(context, f"{sys.exc_info()[0].__name__}: {str(sys.exc_info()[1])[:200]}")
        return plain_close(*args, **kwargs)

    context.close = close
    return context


NETWORK_CHANGED = "ERR_NETWORK_CHANGED"
LOADS = 3


def reload_after_a_network_change(page: object) -> None:
    """Make ``page.goto`` load the page again (up to :data:`LOADS` times) when Chromium cut one of
    its requests because the host's network changed during the load: Chromium cancels every
    request in flight, loopback ones included, when an interface appears or goes. The Docker
    image tests once did that on the other worker (each container a veth interface: a page whose
    own scripts were cut stayed blank in a CI run); they add no interface now
    (tests/system/image/test_image.py), but other jobs of a shared machine may (a Docker engine
    with its bridge, a VPN). A person would load the page again, and so does the test, saying so
    on stderr."""
    cut: list[str] = []
    page.on(
        "requestfailed",
        lambda request: NETWORK_CHANGED in (request.failure or "") and cut.append(request.url),
    )
    plain_goto = page.goto

    def goto(url: str, **kwargs):
        for load in range(1, LOADS + 1):
            cut.clear()
            response = plain_goto(url, **kwargs)  # the page's own scripts loaded, or cut
            if not cut or load == LOADS:
                return response
            print(
                f"the host's network changed while {url} loaded ({len(cut)} requests cut, "
                f"e.g. {cut[0]}): loading it again",
                file=sys.stderr,
            )
        return response

    page.goto = goto


def failed(node: object) -> bool:
    """Whether the test ``node``'s call failed (tests/conftest.py keeps its report)."""
    outcome = getattr(node, "rep_call", None)
    return outcome is not None and outcome.failed


def report(context: object, why: str) -> None:
    """Print to stderr what each open page of ``context`` shows, and the servers' log tails."""
    lines = [f"=== browser state at failure ({why}) ==="]
    for number, page in enumerate(getattr(context, "pages", [])):
        lines += _describe(page, number)
    lines += [f"  {text}" for text in getattr(context, "hf_messages", [])] or [
        "  (no console errors)"
    ]
    for log in _server_logs:
        try:
            tail = log.read_text(errors="replace")[-LOG_TAIL_CHARS:]
        except OSError as error:
            tail = f"(unreadable: {error})"
        lines += [f"--- tail of {log} ---", tail]
    print("\n".join(lines), file=sys.stderr)


def _describe(page: object, number: int) -> list[str]:
    lines = [f"page {number}: {page.url}"]
    for name, script in (("running", RUNNING_JS), ("notices", NOTICES_JS), ("plots", PLOTS_JS)):
        try:
            lines.append(f"  {name}: {page.evaluate(script)!r}")
        except Exception as error:  # noqa: BLE001 - a page that cannot answer is reported so
            lines.append(f"  {name}: could not read ({type(error).__name__}: {error})")
    folder = Path(os.environ.get("HEADFORMS_TEST_ARTIFACTS") or tempfile.gettempdir())
    shot = folder / f"headforms-failure-{os.getpid()}-{id(page)}.png"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shot), full_page=True, timeout=10_000)
        lines.append(f"  screenshot: {shot}")
    except Exception as error:  # noqa: BLE001
        lines.append(f"  screenshot failed ({type(error).__name__}: {error})")
    return lines
