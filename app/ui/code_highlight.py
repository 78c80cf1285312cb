"""Code → Qt rich-text spans with Pygments, in colours readable on the palette's code background.

Token colours come from a Pygments style picked per palette ("default" on light, "github-dark"
on dark) and are then moved towards the text colour until each reaches WCAG AA (4.5:1) on the
code background (`theme.readable`), so comments stay legible in both themes. Only colour, bold
and italic are used: no backgrounds, no font changes, so highlighting a block never changes its
size. No language guessing: an unknown or missing tag is plain text. Tabs and blank lines are
kept exactly (``stripnl=False``, ``ensurenl=False``).
"""

from __future__ import annotations

import functools
import html

from pygments.lexers import get_lexer_by_name
from pygments.styles import get_style_by_name
from pygments.token import Token
from pygments.util import ClassNotFound
from PySide6.QtGui import QColor

from app.ui.theme import TextColours, readable

STYLES = {False: "default", True: "github-dark"}
"""Pygments style per palette: key is `TextColours.dark`."""


@functools.lru_cache(maxsize=64)
def _lexer(language: str):
    try:
        return get_lexer_by_name(language, stripnl=False, ensurenl=False) if language else None
    except ClassNotFound:
        return None


@functools.lru_cache(maxsize=4096)
def token_style(token_type, colours: TextColours) -> str:
    """CSS for one token type in `colours` ("" when it is drawn as plain text)."""
    style = get_style_by_name(STYLES[colours.dark]).style_for_token(token_type)
    css = []
    if style["color"]:
        colour = readable(QColor("#" + style["color"]), QColor(colours.code_background))
        if colour.name() != colours.text:
            css.append(f"color: {colour.name()}")
    if style["bold"]:
        css.append("font-weight: 600")
    if style["italic"]:
        css.append("font-style: italic")
    return "; ".join(css)


def plain_html(code: str) -> str:
    """`code` escaped once, no highlighting."""
    return html.escape(code, quote=False)


def highlight_html(code: str, language: str, colours: TextColours) -> str:
    """`code` as escaped text with ``<span style=…>`` per token; the plain text of the result
    equals `code`. language: a Pygments alias ("python", "js", "bash" …); unknown → plain."""
    lexer = _lexer(language.lower())
    if lexer is None:
        return plain_html(code)
    parts = []
    for token_type, value in lexer.get_tokens(code):
        if not value:
            continue
        text = html.escape(value, quote=False)
        css = token_style(token_type, colours) if token_type is not Token.Text else ""
        parts.append(f'<span style="{css}">{text}</span>' if css else text)
    return "".join(parts)
