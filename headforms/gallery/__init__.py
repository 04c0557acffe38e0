"""A model's gallery that travels: one self-contained HTML file (:func:`gallery_html`) that opens
offline with no server, written by ``headforms export MODEL --html FILE`` and offered by the
dashboard's Simplex page."""

from .page import gallery_html

__all__ = ["gallery_html"]
