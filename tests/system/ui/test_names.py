"""What the page shows of names a stranger chose (issue 17, item 6): a 300-character file name
is one line, a table's model names are text, never Markdown."""

from __future__ import annotations

from pathlib import Path

from page_runner import TIMEOUT, sharing_components
from published_tables import head_rows
from repo import REPO

from ui.guard import WORD_JOINER

LONG_NAME = "x" * 300 + ".csv"


def test_a_300_character_file_name_is_one_line_in_the_page(tmp_path: Path) -> None:
    from streamlit.testing.v1 import AppTest

    at = sharing_components(AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT))
    at.query_params["model"] = str(tmp_path / LONG_NAME)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert len(at.error) == 1 and "File name too long" in at.error[0].value


def test_model_names_are_shown_as_text_never_markdown(tmp_path: Path) -> None:
    """A table's model named like a Markdown link and image: every element the page draws
    renders it as text (no link, no image fetched from another host)."""
    from markdown_it import MarkdownIt
    from streamlit.testing.v1 import AppTest

    # (< and > are refused in table model names: tests/unit/tables; Markdown is the risk left)
    name = "[click](https://evil.example/x) ![i](https://evil.example/t.png) **$x$** _y_"
    head_rows(1, layers=2, heads=2, name=name).to_csv(tmp_path / "names.csv", index=False)
    at = sharing_components(AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT))
    at.query_params["model"] = f"{tmp_path / 'names.csv'}::{name}"
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    bodies = [c.value for c in at.caption] + [m.value for m in at.markdown]
    shown = [b for b in bodies if "evil" in b]
    assert shown, bodies
    for body in shown:
        html = MarkdownIt("commonmark").render(body)  # raw HTML on, as a browser would
        assert "<a " not in html and "<img" not in html and "<b>" not in html, html
        text = html.replace(WORD_JOINER, "")  # invisible: it keeps GFM from linking the URLs
        assert "[click](https://evil.example/x) ![i]" in text  # the name itself, as text
