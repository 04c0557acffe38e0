"""headforms dashboard: `streamlit run app.py` (or `make run`).

Wires the pages and the shared sidebar (whose context it hands to the page it runs);
everything else lives in ``pages/`` and ``ui/``.
"""

from __future__ import annotations

import sys

import streamlit as st

# The line a server's first page shows while the dashboard's modules are imported.
STARTING = (
    "Starting headforms: loading its libraries (numpy, pandas, Plotly, the library), then the "
    "model (the first page of a new server) …"
)


def main() -> None:
    """One run of the app: page config, navigation, the shared sidebar, then the page."""
    starting = st.empty()  # the first run of a server imports for seconds: say so, at once
    if "ui.sidebar" not in sys.modules:
        starting.caption(STARTING)
    from ui import guard, links, notices, state
    from ui.sidebar import page_scope, render_sidebar, tab_title
    from ui.static import ensure_plotly_js

    guard.protect_session()  # first: hosted mode shows no exception details
    # An explicit favicon: without one, Streamlit shows each page's Material icon as the
    # favicon, fetched from fonts.gstatic.com (the only requests the app would make off the
    # machine).
    st.set_page_config(
        page_title="headforms",
        page_icon="🔺",
        layout="wide",
        menu_items={"About": "headforms: attention heads as bilinear forms (arXiv 2609.22990)."},
    )
    ensure_plotly_js()

    # Every page of the app: a new page is one file in pages/ and one line here.
    head_page = st.Page("pages/head.py", title="Head", icon=":material/center_focus_strong:")
    pages = {
        "Explore": [
            st.Page(
                "pages/simplex.py", title="Simplex", icon=":material/change_history:", default=True
            ),
            head_page,
            st.Page("pages/table.py", title="Heads table", icon=":material/table_rows:"),
            st.Page("pages/heatmaps.py", title="Heatmaps", icon=":material/grid_on:"),
            st.Page("pages/overview.py", title="Overview", icon=":material/info:"),
            st.Page("pages/behaviour.py", title="Geometry vs behaviour", icon=":material/hub:"),
            st.Page("pages/why.py", title="Why heads attend", icon=":material/call_split:"),
        ],
        "Motion": [
            st.Page("pages/positions.py", title="RoPE positions", icon=":material/animation:"),
            st.Page("pages/training.py", title="Training run", icon=":material/timeline:"),
            st.Page("pages/diff.py", title="Model diff", icon=":material/difference:"),
        ],
        "Paper views": [
            st.Page("pages/spectra.py", title="Spectra", icon=":material/bar_chart:"),
            st.Page("pages/fits.py", title="Fits", icon=":material/show_chart:"),
            st.Page("pages/theorem5.py", title="Theorem 5", icon=":material/functions:"),
            st.Page("pages/observations.py", title="Observations", icon=":material/fact_check:"),
            st.Page("pages/pairing.py", title="Pairing", icon=":material/compare_arrows:"),
            st.Page("pages/compare.py", title="Compare", icon=":material/stacked_bar_chart:"),
        ],
        "Experiments": [
            st.Page("pages/experiments.py", title="Edit the forms", icon=":material/science:"),
        ],
    }

    page = st.navigation(pages)
    notices.begin(page.url_path)
    links.start_page(page.title)
    top = st.container()  # notices: a link's corrected values, a model that failed to load
    context = render_sidebar()  # the model's own progress bar while it is analysed
    starting.empty()
    notices.show(top)
    st.set_page_config(page_title=tab_title(page.title, context))
    if context is None:  # not even the last good model loads: its error is shown, no page runs
        links.finish(page_ran=False)
        st.stop()
    if state.take_pending_jump() and page.url_path != head_page.url_path:
        st.switch_page(head_page, query_params=links.query())
    with page_scope(context):  # the page's page_context() for this run
        page.run()
    links.finish()  # a page that ended early (ui.stop_page) has done this already


# Streamlit runs this file as __main__ (and leaves it installed as sys.modules["__main__"]): a
# process spawned later from the server or a test (multiprocessing re-imports __main__ as
# __mp_main__) must not run the app.
if __name__ == "__main__":
    try:
        main()
    finally:  # also after st.stop, st.rerun or st.switch_page
        from headforms.heap import settle

        settle()
