"""A notice about a value replaces the one before it about the same value (issue 39.8: a model
spec that failed left the previous failure's line above its own), under AppTest: the notices as
the sidebar raises them for two models that fail one after the other (each shown instead of by
the same last good model) leave one line, the second's; and through the app, a link's bad model
leaves one line."""

from __future__ import annotations

from page_runner import notice_lines, run_app
from streamlit.testing.v1 import AppTest

from headforms import DEFAULT_MODEL


def two_failures() -> None:
    """Each run: the notices of a page, and the failure of the model typed in this run (as
    ui.sidebar raises it: about the model's key, which goes back to the last good model)."""
    import streamlit as st

    from ui import notices

    notices.begin("page")
    typed = st.session_state.get("typed")
    if typed:
        st.session_state["model"] = "smollm2-135m"  # the model shown instead
        notices.add(
            f"no such file or directory: {typed} (showing smollm2-135m instead)",
            "error",
            about=("model", "smollm2-135m"),
        )
    notices.show(st.container())


def test_a_second_failed_model_replaces_the_first_ones_line() -> None:
    at = AppTest.from_function(two_failures).run()
    for bad in ("/no/such/model/a", "/no/such/model/b"):
        at.session_state["typed"] = bad
        at.run()
        assert not at.exception, [e.message for e in at.exception]
        lines = [line.strip() for box in notice_lines(at) for line in box.splitlines()]
        assert len(lines) == 1 and bad in lines[0], lines


def test_a_links_bad_model_is_one_line() -> None:
    at = run_app("overview", {"model": "/no/such/model/a"})
    (line,) = notice_lines(at)
    assert "/no/such/model/a" in line and line.endswith(f"(showing {DEFAULT_MODEL} instead)")
