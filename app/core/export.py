"""A stored conversation as a file: JSON (format "headroom-conversation") or Markdown. Both hold
the active branch (the path shown; other versions stay in the database), its summary, its
pinned notes, the documents attached to its messages (their extracted text) and the excerpts
each answer was given."""

import html
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from markdown_it import MarkdownIt

from app.core.conversation import MessageStatus, Role
from app.core.reasoning import ANSWERED, split_reasoning

if TYPE_CHECKING:
    from app.core.store import StoredConversation


def conversation_json(c: "StoredConversation") -> str:
    """JSON, format "headroom-conversation" v1 (times in Unix seconds); "pinned_notes" is absent
    when there are none, a message's "documents" (name, kind, pages, size_bytes, encoding, text)
    and "sources" (app.core.document_prompt.Citation fields) when it has none. A stopped answer
    has "stop_reason" when it was kept: "length" (max new tokens reached) or "stopped" (Stop). A
    user message whose turn was refused (never sent to the model) has "not_sent": the refusal's
    cause ("positions", "memory") and reason (English, app.engine.memory.admission). A failed answer
    has "failure", why it failed (English), when it was kept (Message.failure)."""
    data = {
        "format": "headroom-conversation", "version": 1, "title": c.info.title,
        "created_at": c.info.created_at, "updated_at": c.info.updated_at,
        "settings": c.settings,
        "summary": {"content": c.summary.content, "folded_through": c.summary.folded_through,
                    "tokens": c.summary.tokens} if c.summary.content else None,
        "messages": [_message_json(m, c.refusals.get(m.id)) for m in c.conversation.messages],
    }
    if c.pinned_notes:
        data["pinned_notes"] = c.pinned_notes
    return json.dumps(data, ensure_ascii=False, indent=2)


def _message_json(m, refusal: dict | None) -> dict:
    data = {"role": m.role.value, "content": m.content, "status": m.status.value, "created_at": m.created_at}
    if _stop_reason(m):  # "stopped" alone read as the user's Stop
        data["stop_reason"] = _stop_reason(m)
    if m.failure:
        data["failure"] = m.failure
    if refusal is not None:  # its status says "complete": the message is whole, it just never went
        data["not_sent"] = {"cause": refusal.get("cause", ""), "reason": refusal.get("reason", "")}
    if m.documents:
        data["documents"] = [{"name": d.name, "kind": d.kind, "pages": d.pages, "size_bytes": d.size_bytes,
                              "encoding": d.encoding, "text": d.text} for d in m.documents]
    if m.sources:
        data["sources"] = [s.to_json() for s in m.sources]
    return data


def conversation_markdown(c: "StoredConversation", stop_details: Mapping[str, str] | None = None) -> str:
    """Markdown: a heading per message; unfinished answers are marked ("_(stopped)_", "_(failed)_",
    "_(failed: <why>)_" where the reason was kept, in English;
    "_(stopped: <words>)_" for a stop reason in `stop_details`, ReplyStats.stop_reason → the
    words the window says, app.chat.stop_text.STOP_DETAILS), and so are messages whose
    turn was refused ("_(not sent: <reason>)_", the reason in English); an attached document
    follows its message in a collapsed <details> block, and so does an answer's reasoning
    (app.core.reasoning) before it; an answer's sources are listed under it (a removed file once).
    A user's message reads as typed (`_as_typed`), and so does the title (`_escaped`); answers are
    Markdown already."""
    lines = [f"# {_escaped(c.info.title) or 'Untitled conversation'}", "",
             f"_Exported from Headroom; started {_iso(c.info.created_at)}._", ""]
    if c.pinned_notes:
        lines += ["> **Pinned notes:** " + c.pinned_notes.replace("\n", "\n> "), ""]
    if c.summary.content:
        quoted = c.summary.content.replace("\n", "\n> ")  # every line of it inside the quote
        lines += ["> **Summary of earlier turns:** " + quoted, ""]
    for m in c.conversation.messages:
        # an answer's blank lines before and after say nothing in Markdown (a model without a chat
        # template starts with some: new-user trial, three blank lines under "## Assistant")
        lines += [f"## {m.role.value.capitalize()}", ""]
        if m.role is Role.USER:
            lines += [_as_typed(m.content), ""]
        else:  # a reasoning model's "<think>" would be an unknown HTML tag: folded as in the window
            reasoning, answer, state = split_reasoning(m.content)
            if reasoning:
                title = "Reasoning" if state == ANSWERED else "Reasoning (unfinished)"
                lines += ["<details>", f"<summary>{title}</summary>", "", _blocks_closed(reasoning), "",
                          "</details>", ""]
            shown = _blocks_closed(answer.strip("\n") if reasoning else m.content.strip("\n"))
            lines += [shown or "_(no answer)_", ""] if reasoning else [shown, ""]
        if m.status is not MessageStatus.COMPLETE:
            detail = _escaped(m.failure or (stop_details or {}).get(_stop_reason(m), ""))
            lines += [f"_({m.status.value}: {detail})_" if detail else f"_({m.status.value})_", ""]
        if m.id in c.refusals:  # refused before it started: exported as sent, it read as answered
            reason = _escaped(str(c.refusals[m.id].get("reason") or ""))
            lines += [f"_(not sent: {reason})_" if reason else "_(not sent)_", ""]
        for d in m.documents:
            fence = "`" * max(3, _longest_run(d.text, "`") + 1)
            extent = f", {d.pages} pages" if d.pages > 1 else ""
            lines += ["<details>", f"<summary>Attached: {html.escape(d.name)}{extent}</summary>", "",
                      fence + "text", d.text.rstrip("\n"), fence, "", "</details>", ""]
        if m.sources:
            lines += ["Sources: " + "; ".join(_source_labels(m.sources)), ""]
    return "\n".join(lines)


def _blocks_closed(markdown: str) -> str:
    """`markdown` with a code fence or raw HTML block it leaves open closed at its end: an answer
    stopped in the middle of its code, or a model's stray closing fence (read as an opening one),
    otherwise ran on through every later message of the export (new-user trial: the "## User"
    headings after it vanished into a code block; re-trial: the same after a `<pre>` or `<!--`).
    CommonMark's own reading (markdown-it-py): such a block left open runs to the end of the text;
    one inside a quote or a list item ends with it."""
    lines = markdown.split("\n")
    for token in MarkdownIt("commonmark").parse(markdown):
        # one in a quote or a list ends with it: only a top-level block runs on
        if token.level or not token.map or token.map[1] < len(lines):
            continue
        if token.type == "fence":
            end = lines[-1].strip()
            if not (token.map[1] - token.map[0] > 1 and len(end) >= len(token.markup)
                    and set(end) == {token.markup[0]}):
                return f"{markdown}\n{token.markup}"
        elif token.type == "html_block":
            closer = _html_block_closer(token.content)
            if closer and closer.lower() not in token.content.lower():
                return f"{markdown}\n{closer}"
    return markdown


_HTML_BLOCK_CLOSERS = (  # CommonMark's HTML blocks that end at a closer of their own (kinds 1-3 and 5)
    (re.compile(r"<(script|pre|style|textarea)(?:\s|>|$)", re.IGNORECASE), None),
    (re.compile(r"<!--"), "-->"),
    (re.compile(r"<\?"), "?>"),
    (re.compile(r"<!\[CDATA\["), "]]>"),
)


def _html_block_closer(block: str) -> str | None:
    """The text that ends the raw HTML block `block` (e.g. "</pre>", "-->"), or None for a block a
    blank line ends."""
    opening = block.lstrip()
    for pattern, closer in _HTML_BLOCK_CLOSERS:
        match = pattern.match(opening)
        if match:
            return closer or f"</{match.group(1).lower()}>"
    return None


def _stop_reason(m) -> str:
    """Why the stopped answer `m` stopped (ReplyStats.stop_reason); "" for any other message or
    one stored before the reason was kept."""
    return m.stats.stop_reason if m.status is MessageStatus.STOPPED and m.stats is not None else ""


def _source_labels(sources) -> list[str]:
    """Each excerpt's label ("manual.pdf #17, page 12"), in order; a removed file's excerpts (their
    text is gone) are one "big.txt (removed attachment)" where its first was, as the window shows."""
    labels, removed = [], set()
    for citation in sources:
        if not citation.removed:
            labels.append(citation.label)
        elif citation.name not in removed:
            removed.add(citation.name)
            labels.append(f"{citation.name} (removed attachment)")
    return labels


_MARKDOWN_WOULD_CHANGE = re.compile(
    r"[\\`*_\[\]<>&#|~\n\t]|  |^\s|\s$|^(?:[-+=>]|\d{1,9}[.)])(?:\s|$)|^-{3,}")
"""Something a Markdown reader would not show as typed: markup characters, entities, line breaks
(joined into one line), runs of spaces, a line starting like a list, quote or rule."""


def _as_typed(text: str) -> str:
    """`text` so that a Markdown reader shows exactly what was typed: as it is when nothing in
    it is markup, else in a fence (longer than any backtick run inside it) that keeps every
    character."""
    if not _MARKDOWN_WOULD_CHANGE.search(text):
        return text
    fence = "`" * max(3, _longest_run(text, "`") + 1)
    return f"{fence}text\n{text}\n{fence}"


_MARKUP_CHARACTER = re.compile(r"([\\`*_\[\]<>&#|~])")


def _escaped(text: str) -> str:
    """`text` on one line (a heading) that a Markdown reader shows as typed: each markup
    character backslash-escaped (CommonMark escapes any ASCII punctuation; "\\&" is no entity,
    "\\<" no HTML), line breaks as spaces. A heading cannot hold a fence as `_as_typed` uses."""
    return _MARKUP_CHARACTER.sub(r"\\\1", " ".join(text.splitlines()))


def _longest_run(text: str, char: str) -> int:
    """The longest run of `char` in `text` (a fence must be longer than any inside it)."""
    longest = run = 0
    for c in text:
        run = run + 1 if c == char else 0
        longest = max(longest, run)
    return longest


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")
