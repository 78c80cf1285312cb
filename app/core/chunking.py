"""Split a document into overlapping chunks along its structure, for retrieval and citation.

The text is first cut into blocks: Markdown headings (ATX "# …" and setext "Title\\n====="),
fenced code blocks (``` or ~~~, kept whole where they fit) and paragraphs (runs of non-blank
lines). Blocks are packed in order into chunks of at most `max_tokens`; a heading starts a new
chunk once the current one holds a quarter of that, so chunks follow sections. A block longer than
`max_tokens` is cut at line ends, an overlong line at sentence ends, then at spaces (then, for a
run without spaces, at characters).

Overlap: a chunk that does not begin at a heading also carries, before its own text, the last
lines (or sentences, or words) of the previous chunk (about `overlap_tokens`), so a fact
straddling the cut is whole in at least one chunk. Chunks' own spans tile the document: joining
`own_text` of all chunks gives the text back exactly, and `text` = the lead-in + `own_text`.

Token counts come from an injected `count_tokens(str) -> int` (the model's tokenizer, as in
app.core.history); block sizes are summed from per-block counts (BPE merges across a blank line
are rare), each chunk's `tokens` is counted exactly. Pure Python.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

CountText = Callable[[str], int]

# 128-token chunks with 16 tokens of overlap. tests/benchmarks/retrieval.py (300-page stdlib text,
# 20 questions, SmolLM2 tokenizer): at the 960-token budget of a 2048-token context, natural
# questions hit 1.00 with 128, 0.88 with 256 and 0.62-0.75 with 512-token chunks (MRR 0.84-0.92 vs
# 0.76-0.85 vs 0.75-0.84); at the default 8192 context all three hit 1.00.
DEFAULT_CHUNK_TOKENS = 128
DEFAULT_OVERLAP_TOKENS = 16

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# Where an overlong block or an overlap may be cut, best first: line ends, sentence ends, spaces.
_SEPARATORS = (re.compile(r"\n"), re.compile(r"(?<=[.!?。])[ \t]+"), re.compile(r"[ \t]+"))


@dataclass(frozen=True)
class Chunk:
    """One retrievable piece of a document.

    id: 1-based position in the document (the citation number). start/end: character span of
    the chunk's own text in the document; lead_start ≤ start: where the overlap lead-in begins.
    heading: the section path, "Install > Linux" ("" before the first heading). page/last_page:
    1-based pages of `start` and of `end - 1` (None without pages). tokens: count_tokens(text).
    """

    id: int
    text: str
    lead_start: int
    start: int
    end: int
    heading: str
    page: int | None
    last_page: int | None
    tokens: int

    @property
    def own_text(self) -> str:
        """The chunk without its overlap lead-in."""
        return self.text[self.start - self.lead_start:]


@dataclass(frozen=True)
class _Block:
    start: int
    end: int
    heading: tuple[str, ...]  # section path in force at this block (its own title if a heading)
    is_heading: bool


def chunk_document(
    text: str, count_tokens: CountText, *, max_tokens: int = DEFAULT_CHUNK_TOKENS,
    overlap_tokens: int = DEFAULT_OVERLAP_TOKENS, page_starts: Sequence[int] = (),
) -> list[Chunk]:
    """Chunks of `text` in document order (see the module docstring). `page_starts`: character
    offset where each page begins (ExtractedDocument.page_starts). Returns [] for blank text.
    Raises ValueError when max_tokens < 16 or overlap_tokens is negative or ≥ max_tokens / 2."""
    if max_tokens < 16 or not 0 <= overlap_tokens < max_tokens / 2:
        raise ValueError(f"bad chunk sizes: max_tokens={max_tokens}, overlap_tokens={overlap_tokens}")
    pieces: list[tuple[_Block, int]] = []
    for block in _blocks(text):
        pieces.extend(_fit(text, block, count_tokens, max_tokens))
    groups = _pack(pieces, max_tokens)
    chunks: list[Chunk] = []
    for i, group in enumerate(groups):
        start, end = (0 if i == 0 else group[0].start), group[-1].end
        if i + 1 < len(groups):
            end = groups[i + 1][0].start  # own spans tile the text: blank lines go with the left chunk
        elif end < len(text):
            end = len(text)
        first = group[0]
        lead = start if first.is_heading or not chunks else _lead_start(text, chunks[-1], overlap_tokens,
                                                                          count_tokens)
        body = text[lead:end]
        chunks.append(Chunk(i + 1, body, lead, start, end, " > ".join(first.heading),
                            _page(page_starts, start), _page(page_starts, max(start, end - 1)),
                            count_tokens(body)))
    return chunks


def _blocks(text: str) -> list[_Block]:
    """Headings, fenced code and paragraphs of `text`, with the section path at each."""
    blocks: list[_Block] = []
    path: list[tuple[int, str]] = []
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    i = 0
    while i < len(lines):
        line = lines[i].rstrip("\n")
        start = offsets[i]
        if not line.strip():
            i += 1
            continue
        fence = _FENCE.match(line)
        atx = _ATX.match(line)
        nxt = lines[i + 1].rstrip("\n") if i + 1 < len(lines) else ""
        if fence:
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith(fence.group(1)):
                j += 1
            i = min(j + 1, len(lines))
            blocks.append(_Block(start, offsets[i], _titles(path), False))
        elif atx or (_SETEXT.match(nxt) and not _SETEXT.match(line) and len(line) <= 120):
            level = len(atx.group(1)) if atx else (1 if nxt.lstrip().startswith("=") else 2)
            title = atx.group(2).strip() if atx else line.strip()
            path = [p for p in path if p[0] < level] + [(level, title)]
            i += 1 if atx else 2
            blocks.append(_Block(start, offsets[i], _titles(path), True))
        else:
            j = i + 1
            while j < len(lines) and lines[j].strip() and not _FENCE.match(lines[j]) and not _ATX.match(lines[j]):
                if j + 1 < len(lines) and _SETEXT.match(lines[j + 1]) and not _SETEXT.match(lines[j]):
                    break
                j += 1
            i = j
            blocks.append(_Block(start, offsets[i], _titles(path), False))
    return blocks


def _titles(path: list[tuple[int, str]]) -> tuple[str, ...]:
    return tuple(title for _, title in path)


def _fit(text: str, block: _Block, count: CountText, max_tokens: int) -> list[tuple[_Block, int]]:
    """The block with its token count, or its pieces when it exceeds max_tokens."""
    pieces = _split(text, block.start, block.end, count, max_tokens)
    return [(_Block(a, b, block.heading, block.is_heading and i == 0), n) for i, (a, b, n) in enumerate(pieces)]


def _split(text: str, a: int, b: int, count: CountText, max_tokens: int, level: int = 0,
           tokens: int | None = None) -> list[tuple[int, int, int]]:
    """(start, end, tokens) pieces of text[a:b], each ≤ max_tokens where possible: cut at line
    ends, else sentence ends, else spaces, else characters. Pieces are grown greedily to the
    last cut whose length, at the span's tokens-per-character, should still fit, then counted
    exactly and shortened while over: ~2 `count` calls per piece instead of one per line."""
    n = count(text[a:b]) if tokens is None else tokens
    if n <= max_tokens:
        return [(a, b, n)]
    if level == len(_SEPARATORS):
        step = max(1, (b - a) * max_tokens // (n + 1))
        return [(c, min(b, c + step), count(text[c:min(b, c + step)])) for c in range(a, b, step)]
    cuts = [a] + [m.end() for m in _SEPARATORS[level].finditer(text, a, b) if a < m.end() < b] + [b]
    if len(cuts) == 2:
        return _split(text, a, b, count, max_tokens, level + 1, n)
    per_char = n / (b - a)
    pieces: list[tuple[int, int, int]] = []
    i = 0
    while i < len(cuts) - 1:
        j = bisect.bisect_right(cuts, cuts[i] + max_tokens / per_char, i + 1) - 1
        j = max(j, i + 1)
        m = count(text[cuts[i]:cuts[j]])
        while m > max_tokens and j > i + 1:
            target = cuts[i] + (cuts[j] - cuts[i]) * max_tokens / m
            j = max(i + 1, min(j - 1, bisect.bisect_right(cuts, target, i + 1) - 1))
            m = count(text[cuts[i]:cuts[j]])
        if m > max_tokens:  # one segment alone is too long: cut it finer
            pieces.extend(_split(text, cuts[i], cuts[j], count, max_tokens, level + 1, m))
        else:
            pieces.append((cuts[i], cuts[j], m))
        i = j
    return pieces


def _pack(pieces: list[tuple[_Block, int]], max_tokens: int) -> list[list[_Block]]:
    """Greedy packing in order; a heading opens a new group once the current one is ≥ max/4."""
    groups: list[list[_Block]] = []
    size = 0
    for block, tokens in pieces:
        only_headings = bool(groups) and all(b.is_heading for b in groups[-1])
        new_section = block.is_heading and size >= max_tokens / 4 and not only_headings
        if not groups or new_section or (size + tokens > max_tokens and not only_headings):
            groups.append([])
            size = 0
        groups[-1].append(block)
        size += tokens
    return groups


def _lead_start(text: str, previous: Chunk, overlap_tokens: int, count: CountText) -> int:
    """Start of a tail of `previous`'s own text worth ≥ overlap_tokens and at most half of it,
    cut at a line start, else a sentence start, else a word; previous.end if none. The cut is
    placed by previous's tokens-per-character and then checked (≤ 3 `count` calls per level)."""
    if overlap_tokens == 0:
        return previous.end
    own = text[previous.start:previous.end].rstrip()
    if not own:
        return previous.end
    per_char = max(previous.tokens, 1) / len(previous.text)
    half = previous.tokens // 2
    for separator in _SEPARATORS:
        starts = [m.end() for m in separator.finditer(own) if 0 < m.end() < len(own)]
        if not starts:
            continue
        k = max(0, bisect.bisect_right(starts, len(own) - overlap_tokens / per_char) - 1)
        for _ in range(3):
            n = count(own[starts[k]:])
            if n > half and k + 1 < len(starts):
                k += 1  # too long: a later start
            elif n < overlap_tokens and k > 0 and count(own[starts[k - 1]:]) <= half:
                k -= 1  # too short: an earlier start, if that is not over half
            else:
                break
        n = count(own[starts[k]:])
        if overlap_tokens <= n <= half or (n <= half and separator is _SEPARATORS[-1]):
            return previous.start + starts[k]
    return previous.end


def _page(page_starts: Sequence[int], offset: int) -> int | None:
    return max(1, bisect.bisect_right(page_starts, offset)) if page_starts else None
