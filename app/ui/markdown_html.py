"""Model output (markdown) → blocks of Qt rich text, with markdown-it-py and Pygments.

markdown-it-py parses CommonMark plus the two GFM extensions models use most (tables and
~~strikethrough~~); single newlines are kept as line breaks (``breaks``), as chat models expect.
Raw HTML is off, so ``<b>`` in a reply is shown as text; markdown-it escapes the text exactly once
(the old pipeline escaped it, then python-markdown escaped code again: ``&amp;lt;``). ``$`` is
left literal (no math extension).

Model output is untrusted: links keep their target only for http, https and mailto (anything
else — ``file:``, relative paths, custom schemes — is shown as plain text) and images are never
emitted as ``<img>``; an image becomes its alt text, linked when its URL is http(s).

`split_blocks` cuts a message into top-level prose and fenced/indented code blocks: code blocks
get their own widget (horizontal scroll, Copy button; app/ui/code_block_view.py), prose goes to a
QTextBrowser. `settled_length` says how much of a growing reply later tokens cannot change.
"""

from __future__ import annotations

import functools
import html
import re
from dataclasses import dataclass

from markdown_it import MarkdownIt

from app.ui.code_highlight import highlight_html, plain_html
from app.ui.theme import TextColours

SAFE_SCHEMES = ("http", "https", "mailto")
_FENCES = ("```", "~~~")


@dataclass(frozen=True)
class Block:
    """One top-level piece of a message. kind: "prose" (markdown source in `text`) or "code"
    (the code itself in `text`, its language tag in `language`, "" when none)."""

    kind: str
    text: str
    language: str = ""


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False})
    md.validateLink = lambda url: True  # every link parses; _render_link_open keeps safe targets only
    return md.enable(["table", "strikethrough"])


_BLOCK_PARSER = _parser().disable("inline")  # block structure only, for split_blocks
_BREAK_BEFORE_BLOCK = re.compile(r"\n(?=</?(?:ul|ol|li|p|table|thead|tbody|tr|th|td|blockquote|h[1-6]|hr)\b)")
"""markdown-it puts a newline before block tags; Qt would show it as a space ("fruit " before a
nested list). Code inside prose is escaped and wrapped in <span>, so it never matches."""
_MAYBE_CODE = re.compile(r"^(?: {0,3}(?:```|~~~)| {4}|\t)", re.MULTILINE)


def safe_href(url: str) -> str | None:
    """`url` when its scheme is http, https or mailto, else None (never file: or relative)."""
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    return url if scheme in SAFE_SCHEMES else None


def normalise(text: str) -> str:
    """Line ends as ``\\n`` (markdown-it counts lines the same way)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_blocks(text: str) -> list[Block]:
    """Top-level blocks of `text`: runs of prose and each top-level code block (fenced, or
    indented by four spaces). An unclosed fence runs to the end (a reply still streaming). A code
    block with nothing but blank lines is left out: an empty box with a Copy button for nothing
    (a fence just opened while streaming, or one closed with nothing inside) says nothing."""
    text = normalise(text)
    if _MAYBE_CODE.search(text) is None:  # no fence, no indented line: one prose block, no parse
        return [Block("prose", text)] if text.strip() else []
    lines = text.split("\n")
    blocks: list[Block] = []
    prose_from = 0
    for token in _BLOCK_PARSER.parse(text):
        if token.level != 0 or token.type not in ("fence", "code_block") or token.map is None:
            continue
        start, end = token.map
        prose = "\n".join(lines[prose_from:start])
        if prose.strip():
            blocks.append(Block("prose", prose))
        prose_from = end
        if not token.content.strip():
            continue
        language = token.info.strip().split(" ")[0] if token.type == "fence" else ""
        blocks.append(Block("code", token.content.removesuffix("\n"), language))
    rest = "\n".join(lines[prose_from:])
    if rest.strip():
        blocks.append(Block("prose", rest))
    return blocks


def settled_cuts(text: str) -> list[int]:
    """Offsets where `text` can be cut into markdown blocks that later text cannot change: after
    a blank line outside any fence, once the next line has started and is not indented (an
    indented line could continue a list item or an indented code block). Ascending.

    The cuts are a property of the text alone, so a reply rendered chunk by chunk while it
    streams and the same text rendered at once are cut, and so rendered, the same way."""
    pos = 0
    cuts: list[int] = []
    fence = None
    candidate = -1  # end of a blank line outside a fence, waiting for the next line to show
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if candidate >= 0 and stripped and line[0] not in " \t":
            cuts.append(candidate)
        if stripped:
            candidate = -1
        if fence is not None:
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence = None
        elif stripped.startswith(_FENCES):
            fence = stripped[:3]
        elif not stripped and line.endswith("\n") and pos > 0 and candidate < 0:
            candidate = pos + len(line)
        pos += len(line)
    return cuts


def settled_length(text: str) -> int:
    """Length of the longest prefix of `text` made of whole settled blocks (the last cut)."""
    cuts = settled_cuts(text)
    return cuts[-1] if cuts else 0


_ORDERED = re.compile(r"^( {0,3})(\d{1,9}[.)] +)\S")
_SHORT_NESTED = re.compile(r"^( {2,})([-*+]|\d{1,9}[.)]) ")


def nest_short_indents(text: str) -> str:
    """Re-indent list items that models nest under a numbered item with two spaces
    ("1. Step\\n  - detail"): CommonMark needs the item's content column (3 for "1. "), else
    the detail ends the numbered list. Lines inside fences are left alone."""
    out, content_col, fence = [], 0, None
    for line in text.split("\n"):
        stripped = line.strip()
        if fence is not None:
            fence = None if stripped.startswith(fence) and not stripped.strip(fence[0]) else fence
        elif stripped.startswith(_FENCES):
            fence, content_col = stripped[:3], 0
        elif (ordered := _ORDERED.match(line)) is not None:
            content_col = len(ordered.group(1)) + len(ordered.group(2))
        elif content_col and (nested := _SHORT_NESTED.match(line)) and len(nested.group(1)) < content_col:
            line = " " * content_col + line.lstrip(" ")
        elif stripped and not line.startswith(" "):
            content_col = 0
        out.append(line)
    return "\n".join(out)


def _render_link_open(self, tokens, idx, options, env):
    token = tokens[idx]
    href = safe_href(token.attrGet("href") or "")
    if href is None:
        token.meta["dropped"] = True
        return ""
    return f'<a href="{html.escape(href)}">'


def _render_link_close(self, tokens, idx, options, env):
    depth = 0
    for j in range(idx - 1, -1, -1):  # the matching link_open
        if tokens[j].type == "link_close":
            depth += 1
        elif tokens[j].type == "link_open":
            if depth == 0:
                return "" if tokens[j].meta.get("dropped") else "</a>"
            depth -= 1
    return "</a>"


def _render_image(self, tokens, idx, options, env):
    token = tokens[idx]
    alt = html.escape(self.renderInlineAsText(token.children or [], options, env) or "image")
    href = safe_href(token.attrGet("src") or "")
    label = f"[{alt}]"
    return f'<a href="{html.escape(href)}">{label}</a>' if href else label


@functools.lru_cache(maxsize=4)
def _renderer(colours: TextColours) -> MarkdownIt:
    """A parser whose HTML rules draw code, tables and links in `colours` (one per palette)."""
    md = _parser()

    def fence(tokens, idx, options, env):
        token = tokens[idx]
        language = token.info.strip().split(" ")[0] if token.type == "fence" else ""
        body = highlight_html(token.content.removesuffix("\n"), language, colours).replace("\n", "<br>")
        return (f'<p style="white-space: pre-wrap; font-family: monospace; '
                f'background-color: {colours.code_background};">{body}</p>')

    def code_inline(tokens, idx, options, env):
        return (f'<code style="background-color: {colours.code_background};">'
                f"{html.escape(tokens[idx].content, quote=False)}</code>")

    def table_open(tokens, idx, options, env):
        return (f'<table border="1" cellspacing="0" cellpadding="4" '
                f'style="border-color: {colours.code_border};">')

    md.renderer.rules.update(
        fence=fence, code_block=fence, code_inline=code_inline, table_open=table_open,
        link_open=_render_link_open.__get__(md.renderer), link_close=_render_link_close.__get__(md.renderer),
        image=_render_image.__get__(md.renderer))
    return md


@functools.lru_cache(maxsize=512)
def to_html(text: str, colours: TextColours) -> str:
    """Qt rich text for markdown `text` (a prose block; nested code blocks are highlighted in
    place and wrap). Cached: settled blocks are converted once."""
    rendered = _renderer(colours).render(nest_short_indents(normalise(text))).strip()
    return _BREAK_BEFORE_BLOCK.sub("", rendered)


def code_html(code: str, language: str, colours: TextColours, highlighted: bool = True) -> str:
    """The inside of a code block widget: highlighted spans, or escaped text when
    `highlighted` is False (a block still streaming: no Pygments pass on every frame)."""
    return highlight_html(code, language, colours) if highlighted else plain_html(code)
