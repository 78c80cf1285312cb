"""Markdown → HTML for message bubbles (python-markdown + Pygments, inline styles so
QLabel's rich-text subset shows highlighted code without a stylesheet)."""

import functools
import html

import markdown

_EXTENSIONS = ["fenced_code", "codehilite", "tables", "sane_lists", "nl2br"]
_CONFIG = {"codehilite": {"noclasses": True, "pygments_style": "friendly", "guess_lang": False}}


@functools.lru_cache(maxsize=256)
def to_html(text: str) -> str:
    """HTML for `text`. Raw HTML inside the message is escaped, never interpreted."""
    safe = html.escape(text, quote=False)
    return markdown.markdown(safe, extensions=_EXTENSIONS, extension_configs=_CONFIG)
