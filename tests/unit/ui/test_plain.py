"""Names a stranger chose are drawn as text (ui.guard.plain): after Markdown has read the escapes,
nothing is left that GFM's literal autolinks would turn into a link (``http://``, ``https://``,
``www.``, an e-mail address: GitHub Flavored Markdown spec, section 6.9), and the text reads
as the name. The browser's own rendering: tests/system/browser/test_names_browser.py."""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from ui.guard import WORD_JOINER, plain

GFM_AUTOLINKS = re.compile(
    r"(?i)(?:https?://|www\.)[-\w]"  # extended URL and www autolinks
    r"|[-.+\w]+@[-\w]+(?:\.[-\w]+)+"  # extended e-mail autolinks
)

NAMES = [
    "https://evil.example/x",
    "HTTP://EVIL.example",
    "see www.evil.example/path and WWW.Evil.example",
    "mailto:evil@evil.example or evil+x@mail.evil.example",
    "[click](https://evil.example/x) ![i](http://evil.example/t.png)",
    "model::https://evil.example",
]


@pytest.mark.parametrize("all_markup", [False, True], ids=["names", "notices"])
@pytest.mark.parametrize("name", NAMES)
def test_no_autolink_is_left_and_the_text_reads_as_the_name(name: str, all_markup: bool) -> None:
    html = MarkdownIt("commonmark").render(plain(name, all_markup))
    text = re.sub(r"<[^>]+>", "", html).strip()
    assert "<a " not in html and not GFM_AUTOLINKS.search(text), text
    unescaped = text.replace("&amp;", "&").replace("&quot;", '"')
    assert unescaped.replace(WORD_JOINER, "") == name
