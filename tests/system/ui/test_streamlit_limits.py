"""What Streamlit 1.67 does that the dashboard works around, each shown on a small script under
AppTest: why some URL parameters are bound by ui/links.py rather than by Streamlit's
``bind="query-params"``, why a link's value is read before Streamlit seeds a widget with it, and
why ui/guard.py (``harden_widget_states``) and ui/sidebar.py (``_leave_legacy_page_mode``) patch
Streamlit. A test here that fails means Streamlit changed: the workaround it names may go."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from page_runner import sharing_components
from streamlit.testing.v1 import AppTest


def bound_widgets() -> None:
    """A toggle, a labelled choice and a range bound to the URL; a button sets all three (the
    server writes a value set in a callback to the URL; a visitor's change, the browser)."""
    import streamlit as st

    labels = {"parity": "Parity type", "energy": "Symmetric energy"}

    def change() -> None:
        st.session_state.update(flag=True, color="energy", layers=(3, 7))

    st.button("change", on_click=change)
    st.toggle("flag", key="flag", bind="query-params")
    st.selectbox("color", list(labels), format_func=labels.get, key="color", bind="query-params")
    st.slider("layers", 0, 29, (0, 29), key="layers", bind="query-params")


def url(at: AppTest) -> dict[str, Any]:
    return dict(at.query_params)


def test_bound_widgets_write_other_values_than_the_dashboards_links() -> None:
    """Links say ``open=0``, ``color=energy``, ``layers=3-7``: Streamlit writes ``true``, the
    option's label and the range's ends as two values (so these stay bound by ui/links.py)."""
    at = sharing_components(AppTest.from_function(bound_widgets)).run()
    at.button[0].click().run()
    assert url(at) == {"flag": "true", "color": "Symmetric energy", "layers": ["3", "7"]}


def test_bound_widgets_drop_the_dashboards_link_values_without_a_word() -> None:
    """Today's links, opened on widgets Streamlit binds: every value is dropped, silently (no
    element says so), and the widgets show their defaults."""
    at = sharing_components(AppTest.from_function(bound_widgets))
    at.query_params.update({"flag": "1", "color": "energy", "layers": "3-7"})
    at.run()
    assert not at.exception and not at.warning and not at.error
    assert url(at) == {}
    assert (at.toggle[0].value, at.selectbox[0].value, at.slider[0].value) == (
        False,
        "parity",
        (0, 29),
    )


def test_a_bound_widget_at_its_default_is_left_out_of_the_url() -> None:
    """The model, layer and head are written even at their defaults (what a link is about):
    Streamlit leaves a bound widget's default out."""

    def script() -> None:
        import streamlit as st

        st.button("layer 0", on_click=lambda: st.session_state.update(layer=0))
        st.button("layer 3", on_click=lambda: st.session_state.update(layer=3))
        st.number_input("Layer", value=0, step=1, key="layer", bind="query-params")

    at = sharing_components(AppTest.from_function(script)).run()
    at.button[1].click().run()
    assert url(at) == {"layer": "3"}
    at.button[0].click().run()
    assert url(at) == {}


def test_one_key_carries_its_value_to_another_widget_of_that_key() -> None:
    """The key of a widget Streamlit binds is the parameter's name: where one name means two
    things (``scores``: the table's score columns, the Head page's pre-softmax scores), the
    value set on one page is the other page's value too."""

    def script() -> None:
        import streamlit as st

        st.button("other page", on_click=lambda: st.session_state.update(page="head"))
        if st.session_state.get("page") == "head":
            st.toggle("Pre-softmax scores", key="scores", bind="query-params")
        else:
            st.toggle("Head-type scores", key="scores", bind="query-params")

    at = sharing_components(AppTest.from_function(script)).run()
    at.toggle[0].set_value(True).run()
    at.button[0].click().run()
    assert at.toggle[0].label == "Pre-softmax scores" and at.toggle[0].value is True


def test_a_forged_nan_for_an_integer_input_raises_inside_streamlit(monkeypatch) -> None:
    """What ui.guard.harden_widget_states stops: Streamlit deserialises an integer input's NaN
    (which no browser sends) with ``int(nan)`` before any page code runs, and the run ends in a
    traceback. Shown with Streamlit's own method (the patch undone)."""
    from streamlit.runtime.state.session_state import WStates

    patched = WStates.set_widget_from_proto
    monkeypatch.setattr(WStates, "set_widget_from_proto", getattr(patched, "__wrapped__", patched))

    def script() -> None:
        import streamlit as st

        st.number_input("Layer", value=0, step=1, key="layer")

    from streamlit import config

    # The message as a developer's server shows it: a hosted page run earlier in this process
    # may have left Streamlit's global option at "none" (every message redacted).
    shown = config.get_option("client.showErrorDetails")
    config.set_option("client.showErrorDetails", "full")
    try:
        at = sharing_components(AppTest.from_function(script)).run()
        at.number_input[0].set_value(math.nan).run()
    finally:
        config.set_option("client.showErrorDetails", shown)
    assert [e.message for e in at.exception] == ["cannot convert float NaN to integer"]


def test_a_page_beside_a_pages_folder_runs_without_the_main_script(tmp_path: Path) -> None:
    """What ui.sidebar._leave_legacy_page_mode undoes: while no run of the server has called
    ``st.navigation``, Streamlit runs a ``pages/*.py`` file on its own (its legacy multipage
    mode), without the main script that draws the shared sidebar and writes the URL. The
    dashboard's pages folder is ``pages/`` by the project's brief."""
    (tmp_path / "pages").mkdir()
    (tmp_path / "app.py").write_text(
        "import streamlit as st\n"
        "st.session_state['main ran'] = True\n"
        "st.navigation([st.Page('pages/home.py', default=True), st.Page('pages/other.py')]).run()\n"
    )
    (tmp_path / "pages" / "home.py").write_text("import streamlit as st\nst.title('home')\n")
    (tmp_path / "pages" / "other.py").write_text("import streamlit as st\nst.title('other')\n")
    at = sharing_components(AppTest.from_file(str(tmp_path / "app.py")))
    at.switch_page("pages/other.py").run()
    assert [t.value for t in at.title] == ["other"]
    assert "main ran" not in at.session_state
