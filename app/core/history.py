"""Token-budgeted sliding window over a conversation, plus the rolling-summary policy.

The prompt is: system message (system prompt, pinned, plus "Earlier in this conversation: "
and the rolling summary) followed by the newest whole turns that fit. A turn is a user message
and the assistant messages after it; turns are evicted oldest first and reported so they can be
folded into the summary. Turns at or before `SummaryState.folded_through` are never shown again.

Token counts come from a callable (`CountTokens`) that gets the final chat dicts and returns the
length of the rendered prompt in tokens, template overhead included. The engine passes e.g.
`lambda m: len(tok.apply_chat_template(m, add_generation_prompt=True, return_dict=False))`.
Counts are assumed monotone (adding a message never lowers the count); the searches below are
binary searches that rely on it, and every returned prompt is re-checked against its limit.
"""

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from app.core.conversation import Message, Role
from app.core.pinned_notes import without_pinned_notes
from app.core.plural import counted
from app.core.reasoning import without_reasoning
from app.core.repetition import Cleaned, without_repeats

ChatDict = dict[str, str]
CountTokens = Callable[[list[ChatDict]], int]

# Used when a model does not state its context length: 2048 tokens is the window of older small
# chat models (TinyLlama-1.1B-Chat config: max_position_embeddings=2048); current ones state more
# (SmolLM2-135M-Instruct: 8192), so the default errs on the short side.
DEFAULT_MODEL_CONTEXT = 2048
# Space kept for the rolling summary: 1/8 of the context, at most 512 tokens.
SUMMARY_RESERVE_FRACTION, SUMMARY_RESERVE_MAX = 8, 512
SUMMARY_HEADER = "Earlier in this conversation: "
# ~0.75 English words per BPE token (OpenAI, "What are tokens and how to count them"); the summary
# prompt asks for 80% of that because small models overshoot word limits.
WORDS_PER_TOKEN = 0.75 * 0.8
_TRUNCATION_MARK = " …[truncated]"


@dataclass(frozen=True)
class TokenBudget:
    """Token budget of one turn (tokens). `prompt_tokens` = context − max_new_tokens −
    summary_reserve is for the system prompt and the window; the reserve is kept free for the
    rolling summary, so folding evicted turns into it never pushes further turns out.
    `prompt_tokens` may be ≤ 0 (then nothing fits)."""

    context_tokens: int
    max_new_tokens: int
    summary_reserve: int

    @classmethod
    def for_model(
        cls, model_context: int | None, user_context: int | None, max_new_tokens: int,
        summary_reserve: int,
    ) -> "TokenBudget":
        """context = min(model_context, user_context); None model context → DEFAULT_MODEL_CONTEXT,
        None or 0 user context → the model's. Raises ValueError on a context < 1 or a negative
        max_new_tokens / summary_reserve."""
        context = DEFAULT_MODEL_CONTEXT if model_context is None else model_context
        if user_context:
            context = min(context, user_context)
        if context < 1 or max_new_tokens < 0 or summary_reserve < 0:
            raise ValueError(f"bad budget: context={context}, max_new_tokens={max_new_tokens},"
                             f" summary_reserve={summary_reserve}")
        return cls(context, max_new_tokens, summary_reserve)

    @property
    def prompt_tokens(self) -> int:
        return self.context_tokens - self.max_new_tokens - self.summary_reserve


@dataclass(frozen=True)
class Turn:
    """Whole turn: positions are indexes into the conversation's message list (= store position)."""

    first_position: int
    last_position: int
    messages: tuple[ChatDict, ...]


@dataclass(frozen=True)
class SummaryState:
    """Rolling summary: `folded_through` is the position of the last folded message (−1: none);
    `tokens` is what the summary adds to a prompt, header included."""

    content: str = ""
    folded_through: int = -1
    tokens: int = 0


@dataclass(frozen=True)
class WindowResult:
    """Outcome of `select_window`. When `fits` is False, `messages` and `kept` are empty and
    `prompt_tokens` is the smallest possible prompt (system + summary + newest turn): the UI tells
    the user it is `over_by` tokens too long before anything runs, and `system_tokens` of it are
    the system message's (system prompt, pinned notes, summary, with the template's frame),
    `notes_tokens` of those the pinned notes': the rest is the newest turn's own text (0 and 0
    when it fits, or when there is no system prompt). `frame_tokens` of `system_tokens` stay
    however short the system prompt gets: the template's frame, the summary and a one-character
    prompt (the notes not included), so shortening the system prompt takes off at most
    `system_tokens − notes_tokens − frame_tokens` (new-user trial: a 6-token system prompt in a
    16-token context was told to shorten by 15). `empty_message_tokens` is what stays however short
    the message gets: the prompt with the newest turn emptied (`system_tokens` before it is capped,
    or, with no system prompt, the frame with any system prompt the template adds itself; 0 when not
    measured), so shortening the message takes off at most `prompt_tokens − empty_message_tokens − 1`
    (new-user trial 11: a 20-token system message in a 16-token context, 6 left, and a question
    told to shorten by 25)."""

    fits: bool
    messages: tuple[ChatDict, ...]
    kept: tuple[Turn, ...]
    evicted: tuple[Turn, ...]  # not in the window and not yet folded, oldest first
    prompt_tokens: int
    limit_tokens: int  # prompt_tokens limit: budget.prompt_tokens + min(summary, reserve)
    summary_tokens: int
    budget: TokenBudget
    system_tokens: int = 0
    notes_tokens: int = 0
    frame_tokens: int = 0
    empty_message_tokens: int = 0

    @property
    def over_by(self) -> int:
        return max(0, self.prompt_tokens - self.limit_tokens)


def group_turns(messages: Sequence[Message]) -> list[Turn]:
    """Split messages into turns, each starting at a user message (leading non-user messages
    form a turn of their own). Empty non-user messages (streaming placeholders) are skipped.

    An answer's reasoning ("<think>…</think>", app.core.reasoning) is left out of its chat dict,
    as Qwen3's and DeepSeek-R1's own templates leave it out of earlier turns: every count, the
    window, the summary's transcript and the meter see the prompt as sent. One answer keeps it: an
    assistant message that ends `messages` is the stopped answer that Continue extends
    (continue_final renders the prompt inside it), so it goes as written. An answer stopped
    inside its reasoning has no answer to send and is skipped like a placeholder."""
    turns: list[list[tuple[int, ChatDict]]] = []
    last = len(messages) - 1
    for position, message in enumerate(messages):
        chat_dict = message.as_chat_dict()
        if message.role is Role.ASSISTANT and position != last:
            chat_dict["content"] = without_reasoning(message.content)
        if not chat_dict["content"] and message.role is not Role.USER:
            continue
        if message.role is Role.USER or not turns:
            turns.append([])
        turns[-1].append((position, chat_dict))
    return [Turn(t[0][0], t[-1][0], tuple(m for _, m in t)) for t in turns]


def without_unanswered(messages: Sequence[Message]) -> list[Message]:
    """`messages` without the user message that ends them unanswered, if one does: its turn was
    refused (a paste too long for the context, app.chat.turns) or never began (Headroom stopped
    first). The next Send withdraws that message (app.chat.turns.TurnFlow.send), so it is no
    history: "Summarize now" neither keeps it as one of the newest turns nor lets it block the
    fold (new-user trial: a refused paste at the end made it fold nothing, "the last 2 turns
    stay as they are"). A chat that ends with an answer, even a failed or empty one, is whole."""
    return list(messages[:-1] if messages and messages[-1].role is Role.USER else messages)


def foldable_turns(messages: Sequence[Message], summary: SummaryState, keep_turns: int) -> tuple[Turn, ...]:
    """The turns "Summarize now" folds: those of `without_unanswered(messages)` that `summary`
    does not fold yet, before the newest `keep_turns` (at least one stays). `select_window` with
    fold_at=0 and the same `keep_turns` evicts exactly these from the same messages (and newer
    ones only when they do not fit the context at all); `plan_summary` folds the oldest of them
    that fit one request, the rest the next time. () when there is nothing to fold."""
    live = _live(group_turns(without_unanswered(messages)), summary)
    return tuple(live[:_kept_from(len(live), keep_turns)])


def _live(turns: Sequence[Turn], summary: SummaryState) -> list[Turn]:
    """The turns `summary` does not fold yet (the newest ones: a summary folds the oldest)."""
    return [t for t in turns if t.last_position > summary.folded_through]


def _kept_from(live_turns: int, keep_turns: int) -> int:
    """Index of the first of `live_turns` turns that stays verbatim: the newest `keep_turns`,
    at least one, stay as they are."""
    return max(live_turns - max(keep_turns, 1), 0)


def normalize_roles(messages: Sequence[ChatDict], system_allowed: bool) -> list[ChatDict]:
    """Make chat dicts acceptable to strict templates (new dicts; the input is not changed).

    Afterwards: at most one system message, first, and none when `system_allowed` is False (its
    text then opens the first user message: Gemma rejects the system role); neighbours never share
    a role (merged with a blank line) and the first non-system message is a user message (an empty
    one is inserted before a leading assistant message): Mistral's template raises unless roles
    alternate user/assistant. Content and order are otherwise kept.
    """
    system = _join(*(m["content"] for m in messages if m["role"] == Role.SYSTEM.value))
    merged: list[ChatDict] = []
    for m in messages:
        if m["role"] == Role.SYSTEM.value:
            continue
        if merged and merged[-1]["role"] == m["role"]:
            merged[-1]["content"] = _join(merged[-1]["content"], m["content"])
        else:
            merged.append({"role": m["role"], "content": m["content"]})
    needs_user = bool(merged) and merged[0]["role"] != Role.USER.value
    if needs_user or (not merged and system and not system_allowed):
        merged.insert(0, {"role": Role.USER.value, "content": ""})
    if not system:
        return merged
    if not system_allowed:
        merged[0]["content"] = _join(system, merged[0]["content"])
        return merged
    return [{"role": Role.SYSTEM.value, "content": system}, *merged]


def build_prompt(
    system_prompt: str, summary: str, turns: Sequence[Turn], system_allowed: bool = True,
) -> list[ChatDict]:
    """Final chat dicts: system prompt + "Earlier in this conversation: <summary>" as one system
    message, then the turns' messages, passed through `normalize_roles`."""
    system = _join(system_prompt, SUMMARY_HEADER + summary if summary else "")
    head = [{"role": Role.SYSTEM.value, "content": system}] if system else []
    return normalize_roles(head + [m for t in turns for m in t.messages], system_allowed)


def select_window(
    messages: Sequence[Message], *, system_prompt: str, summary: SummaryState,
    budget: TokenBudget, count_tokens: CountTokens, system_allowed: bool = True,
    estimate_tokens: CountTokens | None = None, fold_at: float = 1.0, keep_turns: int = 1,
) -> WindowResult:
    """Keep the newest whole turns whose prompt fits; report the rest as evicted.

    The prompt (system + summary + window, as `build_prompt` makes it) must be ≤
    `budget.prompt_tokens + min(summary_tokens, budget.summary_reserve)` tokens, which is never more
    than context − max_new_tokens. The newest turn is kept whole or `fits` is False. Calls
    `count_tokens` O(log turns) times; with ``estimate_tokens`` (a cheap approximation of it, e.g.
    per-message counts kept between turns) the estimated window is checked first, so a long chat
    usually costs two or three exact counts (each renders and tokenizes the whole window: ~45 ms
    for 21k tokens on two CPU cores). Raises ValueError when the summary claims to fold the newest
    turn or the conversation has no turns.

    fold_at < 1 evicts (for the summary to fold) the oldest turns from `fold_at` × that limit on,
    so the summary grows before the window is full; 0 evicts all it may ("Summarize now"). Either
    way the newest `keep_turns` turns that fit the full limit stay (at least the newest one);
    `foldable_turns` says which turns fold_at=0 evicts, and "Summarize now" passes the messages
    `without_unanswered`, as its count does.
    """
    live = _live(group_turns(messages), summary)
    if not live:
        raise ValueError("no unfolded turn to answer (empty conversation or over-folded summary)")

    counted: dict[tuple[int, str], int] = {}

    def count(k: int, text: str = summary.content) -> int:
        if (k, text) not in counted:
            counted[k, text] = count_tokens(build_prompt(system_prompt, text, live[k:], system_allowed))
        return counted[k, text]

    newest = len(live) - 1
    summary_tokens = count(newest) - count(newest, "") if summary.content else 0
    limit = budget.prompt_tokens + min(summary_tokens, budget.summary_reserve)
    smallest = count(newest)
    if smallest > limit:
        older = tuple(live[:-1])
        empty, notes_tokens, frame_tokens = _system_share(system_prompt, summary.content, count_tokens,
                                                          system_allowed)
        system_tokens = min(empty, smallest) if system_prompt.strip() else 0
        return WindowResult(False, (), (), older, smallest, limit, summary_tokens, budget, system_tokens,
                            notes_tokens, min(frame_tokens, max(system_tokens - notes_tokens, 0)),
                            min(empty, smallest))
    guess = None
    if estimate_tokens is not None:
        guess = _first_true(0, newest, lambda k: estimate_tokens(
            build_prompt(system_prompt, summary.content, live[k:], system_allowed)) <= limit)
    start = _first_true(0, newest, lambda k: count(k) <= limit, guess)
    if fold_at < 1.0:
        soft = int(limit * fold_at)
        start = min(_first_true(start, newest, lambda k: count(k) <= soft),
                    max(start, _kept_from(len(live), keep_turns)))
    prompt = build_prompt(system_prompt, summary.content, live[start:], system_allowed)
    return WindowResult(
        True, tuple(prompt), tuple(live[start:]), tuple(live[:start]), count(start),
        limit, summary_tokens, budget,
    )


def next_turn_window(messages: Sequence[Message], select: Callable[[list[Message]], WindowResult]) -> WindowResult:
    """The window of the next turn's prompt in a chat that stands at `messages`, for the context
    meter between turns: `select` (select_window with that turn's budget and policy) of what that
    prompt holds. After an answer (or in an empty chat) it holds a message not written yet as well:
    counted as an empty user message (its template's frame is in `prompt_tokens`), so the last
    exchange is history that leaves the window as any older turn does, and it is not one of `kept`
    (the conversation's whole turns). Judged as the newest turn, which must fit or nothing does, a
    long last exchange made the meter read "474 / 255 tokens in context · 0 turns in window" in red
    right after a normal answer (new-user trial 10: a 512-token model, 256 new tokens). A chat that
    ends with a user message (refused, or not answered) is counted as it is: the next Send sends
    it again. Raises what `select` raises."""
    if messages and messages[-1].role is Role.USER:
        return select(list(messages))
    window = select([*messages, Message(Role.USER, "")])
    return replace(window, kept=window.kept[:-1]) if window.fits else window


def _system_share(system_prompt: str, summary: str, count_tokens: CountTokens,
                  system_allowed: bool) -> tuple[int, int, int]:
    """(tokens, of which the pinned notes', of which neither) the system message takes of a refused
    prompt, so that a refusal can name what is too long (new-user trial: a 24,000-token system
    prompt was refused as "the new message needs 24,016 tokens" for "hi"): the prompt with the
    newest turn emptied, i.e. with the template's frame. Without a system prompt or notes it is
    (the frame, 0, 0): the frame alone is no cause (select_window says 0 for the system message),
    but a message cannot be shortened below it (a template that adds its own system prompt when
    none is given, SmolLM2's, takes 30 tokens with an empty message). The third is what stays when
    the system prompt (not the notes) is cut to one character: the frame, the summary and that
    character, less the notes — so a refusal never asks to shorten it by more than it holds
    (new-user trial: "You are a helpful assistant.", 6 tokens, was to be shortened by 15; SmolLM2's
    frame is 14). Measured with a system message in every count: a template that adds its own
    system prompt when none is given (SmolLM2's) would otherwise count that one instead."""
    empty_turn = (Turn(-1, -1, ({"role": Role.USER.value, "content": ""},)),)

    def frame(prompt: str) -> int:
        return count_tokens(build_prompt(prompt, summary, empty_turn, system_allowed))

    system = frame(system_prompt)
    if not system_prompt.strip():
        return system, 0, 0
    without_notes = without_pinned_notes(system_prompt)
    notes = max(system - frame(without_notes), 0) if without_notes != system_prompt else 0
    if not without_notes.strip():  # notes only: no system prompt of the user's to shorten
        return system, notes, system - notes
    shortest = frame("." + system_prompt[len(without_notes):])  # the prompt cut to ".", the notes kept
    return system, notes, max(shortest - notes, 0)


@dataclass(frozen=True)
class SummaryVerdict:
    accepted: bool
    reason: str

    def __bool__(self) -> bool:
        return self.accepted


def accept_summary(
    old_history_tokens: int, new_history_tokens: int, summary_tokens: int, cap: int,
) -> SummaryVerdict:
    """Accept a new summary only if it is ≤ `cap` tokens and the history it replaces (old
    summary + folded turns, `old_history_tokens`) shrinks to `new_history_tokens`. Raises
    ValueError on a negative count."""
    if min(old_history_tokens, new_history_tokens, summary_tokens, cap) < 0:
        raise ValueError("token counts must be ≥ 0")
    if summary_tokens > cap:
        return SummaryVerdict(False, f"summary is {summary_tokens} tokens, cap is {cap}")
    if new_history_tokens >= old_history_tokens:
        return SummaryVerdict(
            False, f"history does not shrink ({old_history_tokens} → {new_history_tokens} tokens)"
        )
    return SummaryVerdict(True, f"history {old_history_tokens} → {new_history_tokens} tokens")


@dataclass(frozen=True)
class SummaryPlan:
    """A summary to generate: send `request` with `max_new_tokens`, then call `finish_summary`.
    `truncated` is True when the oldest turn alone was too long and was clipped for the request."""

    request: tuple[ChatDict, ...]
    max_new_tokens: int
    fold_through: int
    folded: tuple[Turn, ...]
    truncated: bool
    previous: SummaryState
    cap_tokens: int
    old_history_tokens: int
    base_tokens: int  # prompt tokens of system prompt + newest turn, no summary
    probe: Turn  # the newest turn: the frame summaries are measured in
    system_prompt: str
    system_allowed: bool


def summary_request(
    previous: str, transcript: str, words: int, system_allowed: bool = True,
) -> list[ChatDict]:
    """Chat dicts asking the model to fold `previous` and `transcript` into one summary, written
    in the conversation's language: the user's, named when its script tells it (`written_language`
    of the transcript's "User:" lines; a small model's English answers to Korean questions made a
    Korean chat's request say "the language of the conversation", trial 5)."""
    users = "\n".join(line for line in transcript.splitlines() if line.startswith("User:"))
    language = written_language(users) if users else written_language(transcript)
    ask = (
        f"Previous summary:\n{previous or '(none)'}\n\nNew turns:\n{transcript}\n\n"
        "Write one updated summary that folds the previous summary and the new turns together, "
        f"in under {words} words. Keep names, numbers, decisions and open questions. "
        f"Write it in {language or 'the language of the conversation'}. Reply with the summary only."
    )
    return normalize_roles([
        {"role": "system", "content": "You keep a running summary of a chat."},
        {"role": "user", "content": ask},
    ], system_allowed)


# Scripts that name their language well enough for a summary request (Unicode block ranges).
_SCRIPTS = (
    ("Korean", ((0xAC00, 0xD7A3), (0x1100, 0x11FF), (0x3130, 0x318F))),
    ("Japanese", ((0x3040, 0x30FF),)),
    ("Chinese", ((0x4E00, 0x9FFF),)),
    ("Russian", ((0x0400, 0x04FF),)),
    ("Greek", ((0x0370, 0x03FF),)),
    ("Arabic", ((0x0600, 0x06FF),)),
    ("Hebrew", ((0x0590, 0x05FF),)),
    ("Thai", ((0x0E00, 0x0E7F),)),
    ("Hindi", ((0x0900, 0x097F),)),
)


def written_language(text: str) -> str | None:
    """The language a text's letters say it is in, when their script names one: "Korean" for
    mostly Hangul, "Japanese" when kana appear (kanji alone read as "Chinese"), … None for Latin
    script or too few letters (the model is then asked for "the language of the conversation")."""
    counts = dict.fromkeys((name for name, _ in _SCRIPTS), 0)
    letters = 0
    for ch in text:
        if not ch.isalpha():
            continue
        letters += 1
        code = ord(ch)
        for name, ranges in _SCRIPTS:
            if any(lo <= code <= hi for lo, hi in ranges):
                counts[name] += 1
                break
    if counts["Japanese"] and counts["Japanese"] + counts["Chinese"] >= letters * 0.3:
        return "Japanese"
    name, count = max(counts.items(), key=lambda item: item[1])
    return name if letters >= 4 and count >= letters * 0.3 else None


NO_ROOM = "no room for a summary"
"""How `plan_summary`'s verdict starts when the context cannot hold a summary request at all."""


def plan_summary(
    window: WindowResult, summary: SummaryState, *, system_prompt: str,
    count_tokens: CountTokens, cap_tokens: int | None = None, system_allowed: bool = True,
) -> SummaryPlan | SummaryVerdict | None:
    """Plan folding the evicted turns into the summary; None when there is nothing new to fold
    (or the window does not fit: then no summary helps). The request must fit in
    context − cap tokens: the oldest evicted turns that fit are folded now, the rest next time;
    a single turn too long for it is clipped. `cap_tokens` defaults to the summary reserve.
    When even a request with one clipped turn cannot fit (a small context: 64 tokens, cap 8, and
    the request's instructions alone take more), a rejected verdict that starts with NO_ROOM: a
    limit of the context, not a failure; the evicted turns leave the window unsummarized (a plain
    sliding window) and `summary` stays as it is (new-user trial: "summary request cannot fit:
    context 64, cap 8" was shown as an error after every turn)."""
    todo = [t for t in window.evicted if t.last_position > summary.folded_through]
    if not window.fits or not todo:
        return None
    cap = window.budget.summary_reserve if cap_tokens is None else cap_tokens
    words, room = max(1, int(cap * WORDS_PER_TOKEN)), window.budget.context_tokens - cap

    def request(text: str) -> list[ChatDict]:
        return summary_request(summary.content, text, words, system_allowed)

    def too_long(text: str) -> bool:
        return count_tokens(request(text)) > room

    n = _first_true(1, len(todo) + 1, lambda j: too_long(_transcript(todo[:j])))
    folded = todo[: max(n - 1, 1)]
    text = _transcript(folded)
    if n == 1:
        if too_long(_TRUNCATION_MARK):
            return SummaryVerdict(False, f"{NO_ROOM}: the request takes more than the context of "
                                         f"{counted(room + cap, 'token')} less the summary's cap of {cap:,}")
        clip = _first_true(1, len(text), lambda c: too_long(text[:c] + _TRUNCATION_MARK))
        text = text[: clip - 1] + _TRUNCATION_MARK
    probe = window.kept[-1]

    def measure(text: str, turns: Sequence[Turn] = ()) -> int:
        return count_tokens(build_prompt(system_prompt, text, [*turns, probe], system_allowed))

    base = measure("")
    return SummaryPlan(
        tuple(request(text)), max(1, cap - (measure(".") - base)), folded[-1].last_position,
        tuple(folded), n == 1, summary, cap, measure(summary.content, folded) - base, base,
        probe, system_prompt, system_allowed,
    )


def finish_summary(
    plan: SummaryPlan, text: str, count_tokens: CountTokens,
) -> tuple[SummaryState, SummaryVerdict]:
    """Fold the generated `text` in, each sentence once and without a phrase loop at its end
    (`repetition.without_repeats`: greedy decoding of a small model loops; what it left out is
    said in the verdict). Accepted → new summary. Rejected → an extractive fallback
    (the previous summary plus the first sentence of each folded user message, the facts a
    small model most often fails to carry over; as many as fit the cap and shrink the history,
    the oldest and the newest first; a model's previous summary gives up to half its sentences to
    make room, `_head_given_way`), else the previous summary, the verdict ending with FOLDED_LOST.
    A summary is rejected too when it keeps fewer than half the names and numbers the user gave in
    the folded turns (`_dropped_new_facts`). Either way `folded_through`
    advances to `plan.fold_through`: retrying the same input would give the same output, so there
    is no re-summarize loop."""

    def judge(candidate: str) -> tuple[int, SummaryVerdict]:
        if not candidate:
            return 0, SummaryVerdict(False, "empty summary")
        frame = build_prompt(plan.system_prompt, candidate, [plan.probe], plan.system_allowed)
        tokens = count_tokens(frame) - plan.base_tokens
        return tokens, accept_summary(plan.old_history_tokens, tokens, tokens, plan.cap_tokens)

    cleaned = without_repeats(_without_instructions(text))
    text = _without_fragment(_without_echoes(cleaned.text))  # after `_untrusted` has counted echoes, below
    new, verdict = judge(text)
    untrusted = (_untrusted(cleaned) or _other_language(plan, text) or _copied_answers(plan, text)
                 or _cut_previous(plan.previous.content, text) or _dropped_facts(plan.previous.content, text)
                 or _dropped_new_facts(plan, text))
    if untrusted:
        verdict = SummaryVerdict(False, untrusted)
    elif cleaned.changed:
        verdict = SummaryVerdict(verdict.accepted, f"{verdict.reason} ({cleaned.describe()})")
    if not verdict:
        head, lead, said = _extract_parts(plan)
        n = len(said)

        @functools.cache  # asked again of the same head by `enough` and below
        def skipped(head: str) -> int:  # how many of `said` must be left out for the extract to fit
            return _first_true(0, n, lambda k: bool(judge(_extract(head, lead, _chosen(said, n - k)[0]))[1]))

        # as many sentences as fit, statements first, then from both ends: a shorter extract beats losing the
        # folded turns, and a chat says who and what early (trial 6: "제 이름은 민수예요" in turn 4
        # was dropped when only the newest were kept), what it is working on late
        stated = {first.casefold() for first in _folded_firsts(plan) if not _is_question(first)}

        def enough(head: str) -> bool:  # half of `said` fits, and a statement of the new turns if there is one
            skip = skipped(head)
            kept = _chosen(said, n - skip)[0] if skip < n else []
            return skip * 2 <= n and (not stated or any(sentence.casefold() in stated for sentence in kept))

        cut = ""
        if not enough(head):  # a model summary at its cap gives way by sentences (a re-trial's extract kept
            # "My cat is called Biscuit." beside it four turns running, and each new turn's statement was lost)
            head, cut = _head_given_way(head, enough)
        skip = skipped(head)
        if skip < n:
            chosen, statements_first = _chosen(said, n - skip)
            extract = _extract(head, lead, chosen)
            tokens, fallback = judge(extract)
            which = ("an extract" if not skip else f"{n - skip} of {n} messages, what the user stated first"
                     if statements_first else f"the first and last {n - skip} of {n} messages")
            return SummaryState(extract, plan.fold_through, tokens), SummaryVerdict(
                True, f"model summary rejected ({verdict.reason}); kept {which}{cut}: {fallback.reason}")
        if said:  # the previous summary stays as it was; the folded turns are gone from the history
            verdict = SummaryVerdict(False, f"{verdict.reason}; {FOLDED_LOST}")
    kept = SummaryState(text, plan.fold_through, new) if verdict else plan.previous
    return SummaryState(kept.content, plan.fold_through, kept.tokens), verdict


FOLDED_LOST = "the folded turns were left out"
"""How a rejected summary's verdict ends when not even one sentence of what the user said fitted
beside the previous summary, even cut to half its sentences: those turns have left the history."""


def _head_given_way(head: str, fits: Callable[[str], bool]) -> tuple[str, str]:
    """`head` (the previous summary, a model's) with as few of its sentences left out as lets
    `fits` hold, at most half of them: those without a name or number first (a re-trial's cut
    kept "I'm not sure what photosynthesis is." and left out "I'm from Lyon."), then from the
    middle (a summary says who early and what now late); and how the verdict says so ("; the
    earlier summary cut to 4 of 7 sentences"), or `head` and "" when cutting does not help. A model
    summary at its cap left no room for an extract beside it: the folded turns were lost, said only
    as "rejected" (new-user trial)."""
    sentences = _sentences(head)
    n = len(sentences)
    for keep in range(n - 1, (n + 1) // 2 - 1, -1):
        cut = " ".join(_chosen(sentences, keep, lambda sentence: not _facts(sentence))[0])
        if fits(cut):
            return cut, f"; the earlier summary cut to {keep} of {n} sentences"
    return head, ""


# the request's own instructions (`summary_request`), when a small model writes them back into its
# summary (trial 7: SmolLM2-135M ended a summary with "Write one updated summary that folds … Reply
# with the summary only.", shown under "Earlier in this conversation" and offered as a note)
_INSTRUCTION = re.compile(
    r"(?:You keep a running summary|Write one updated summary|Keep names, numbers, decisions"
    r"|Write it in (?:\w+|the language of the conversation)\s*\.|Reply with the summary only)[^\n.?!]*[.?!]?",
    re.IGNORECASE)


def _without_instructions(text: str) -> str:
    """`text` without the sentences of the summary request's instructions it repeats."""
    kept = _INSTRUCTION.sub("", text)
    return "\n".join(re.sub(r"[ \t]{2,}", " ", line).strip() for line in kept.splitlines()).strip()


_ECHO_LINE = re.compile(r"^\s*(?:(?:User|Assistant|System|Tool)\s*:"
                        r"|(?:the\s+)?(?:previous|new|updated)\s+(?:summary|turns)\s*:\s*$)", re.IGNORECASE)
# "The new summary: …" before the summary itself (a re-trial's 25-turn chat)
_SUMMARY_HEADING = re.compile(r"^\s*(?:the\s+)?(?:new|updated)\s+summary\s*:\s*", re.IGNORECASE | re.MULTILINE)


def _without_echoes(text: str) -> str:
    """`text` without the lines that copy the request (its "New turns:" heading, a transcript's
    "User: …" line): a summary that kept a few showed "New turns: User: What should" (trial 4);
    a re-trial's kept "The new summary: …" and "The new turns:" (the heading goes, its text stays)."""
    kept = "\n".join(line for line in text.splitlines() if not _ECHO_LINE.match(line))
    return _SUMMARY_HEADING.sub("", kept).strip()


# a sentence's end: . ? ! … (or the CJK 。？！), perhaps inside a closing quote or bracket
_SENTENCE_ENDS = re.compile(r"[.?!…。？！][\"'”’)\]」』）]*")


def _without_fragment(text: str) -> str:
    """`text` without a last sentence cut off by the summary's token cap ("… in Busan.\n\n박",
    "… budget like?\n\nI'll be": trial 5), when whole sentences come before it. A summary written
    as lines without full stops (a list) is left as it is: its last line is not a fragment."""
    stripped = text.rstrip()
    if not stripped or _ENDED.search(stripped):
        return stripped
    ends = [m for m in _SENTENCE_ENDS.finditer(stripped)
            if not re.fullmatch(r"\s*\d+", stripped[stripped.rfind("\n", 0, m.start()) + 1:m.start()])]  # "2." lists
    if not ends:
        return stripped
    cut = ends[-1].end()
    kept, fragment = stripped[:cut].rstrip(), stripped[cut:].strip()
    if "\n" in fragment or len(fragment) > len(kept) or re.match(r"[-*•]|\d+[.)]", fragment):
        return stripped  # more lines, most of it ("Dr. Kim …"), or a list item: not a cut sentence
    return kept


def _untrusted(cleaned: Cleaned) -> str:
    """Why a generated summary is not one, or "": most of its lines echo the request (the
    transcript's "User: …" / "Assistant: …" lines or the request's own headings — a small
    model copies the turns instead of summarizing them; a trial's SmolLM2-135M summary did,
    and kept none of the facts), or most of its sentences were repeats (a loop: what is left is
    no more trustworthy). The extract of what the user said is kept instead."""
    lines = [line for line in cleaned.text.splitlines() if line.strip()]
    echoed = sum(bool(_ECHO_LINE.match(line)) for line in lines)
    if lines and echoed * 2 >= len(lines):
        return f"the model repeated the conversation instead of summarizing it ({echoed} of {len(lines)} lines)"
    if cleaned.sentences_dropped > cleaned.sentences_kept:
        return (f"the model repeated itself ({cleaned.sentences_dropped} repeated sentences, "
                f"{cleaned.sentences_kept} kept)")
    return ""


COPY_SHINGLE_WORDS = 4
"""Word n-grams compared to tell a sentence copied from an answer (shingling, Broder 1997)."""


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.casefold())
    return {tuple(words[i:i + COPY_SHINGLE_WORDS]) for i in range(len(words) - COPY_SHINGLE_WORDS + 1)}


_SENTENCE_BREAK = re.compile(r"(?<=[.?!…。？！])\s+|\n+")


def _sentences(text: str) -> list[str]:
    """`text` split after each sentence's end and at line breaks (empty pieces left out)."""
    return [sentence for sentence in _SENTENCE_BREAK.split(text) if sentence.strip()]


def _copied_answers(plan: "SummaryPlan", summary: str) -> str:
    """Why `summary` is no summary, or "": most of its words are in sentences copied from the
    folded answers (at least 3 of 5 of a sentence's word 4-grams are an answer's and neither the
    user's nor the previous summary's; a re-trial's copy had dropped two words: 10 of 13). A small
    model asked to summarize often writes back an answer it just read (new-user trial: SmolLM2-135M's
    summary was its own answer about the Moon, word for word; the user's name and city were gone,
    and the fact check then guarded the Moon's made-up "238 days"). What the user said is kept
    instead (the extract)."""
    answers = _shingles("\n".join(m["content"] for t in plan.folded for m in t.messages
                                   if m["role"] == Role.ASSISTANT.value))
    kept = _shingles(_users_text(plan.folded) + "\n" + plan.previous.content)
    copied = total = 0
    for sentence in _sentences(summary):
        words = len(re.findall(r"\w+", sentence))
        shingles = _shingles(sentence)
        total += words
        if shingles and len((shingles & answers) - kept) * 5 >= len(shingles) * 3:
            copied += words
    if not total or copied * 2 < total:
        return ""
    return f"the model copied an answer instead of summarizing ({copied} of {total} words)"


def _cut_previous(previous: str, summary: str) -> str:
    """Why `summary` is no summary, or "": it is a shorter part of the previous one and nothing
    else (at least 4 of 5 of its word 4-grams are the previous summary's): the new turns are not in
    it, and what it left out is gone (new-user re-trial: an extract of "… Alice … the Moon …
    photosynthesis … I live in Lyon." came back as its first two sentences, and Lyon was lost)."""
    before, after = _shingles(previous), _shingles(summary)
    shared = len(after & before)
    if not after or len(after) >= len(before) or shared * 5 < len(after) * 4:
        return ""
    return f"the model wrote back part of the earlier summary ({shared} of its {len(before)} word 4-grams)"


# words a sentence may start with that name nothing: not facts to carry over
_FUNCTION_WORDS = frozenset("""a an and as at but by for from he her his how i if in is it its me my no not of on or
our she so that the their then there these they this to we what when where which who why will with you your
yes hello hi ok okay please thanks thank i'm i've i'll i'd it's let's that's there's here's what's user
assistant summary""".split())
# no digit inside a word ("m0_1", "v2"); a name ends before Korean particles ("KTX를", "Seoul에서": "KTX", "Seoul")
_FACT = re.compile(r"(?<!\w)\d[\d,.:]*\d|(?<!\w)\d|[A-Z](?:(?![\uac00-\ud7a3])[\w'’-])*")
MIN_FACTS_TO_JUDGE = 3
"""A previous summary with fewer facts (numbers, capitalised names) is not used to judge the next."""


_HANGUL_WORD = re.compile(r"[\uac00-\ud7a3]{2,}")
# Korean words that name nothing to keep: greetings, pronouns, "is / has / does" and the like
_HANGUL_FUNCTION_STEMS = frozenset("안녕 감사 고마 그리 그러 그래 그런 이것 저것 그것 여기 저기 거기 우리 저는 "
                                   "제가 나는 내가 있어 있습 없어 없습 했어 했습 해요 합니 하는 하고 같이 정말 "
                                   "너무 아주".split())


def _facts(text: str) -> set[str]:
    """The numbers and capitalised words of `text` (not function words that start a sentence),
    compared without case: what a later summary must not lose ("Mina", "Tokyo", "1200", "14").
    Korean has no capitals: its words count by their first two syllables, the particles after
    them left out ("부산에" and "부산으로" are one fact, "부산")."""
    words = (match.lower().replace("’", "'").rstrip(".,:") for match in _FACT.findall(text))
    facts = {word.removesuffix("'s") if word not in _FUNCTION_WORDS else word for word in words} - _FUNCTION_WORDS
    return facts | ({word[:2] for word in _HANGUL_WORD.findall(text)} - _HANGUL_FUNCTION_STEMS)


def _users_text(turns: Sequence[Turn]) -> str:
    """What the user wrote in `turns`: the conversation's language is theirs (a small model may
    answer a Korean question in English)."""
    return "\n".join(m["content"] for t in turns for m in t.messages if m["role"] == Role.USER.value)


def _other_language(plan: SummaryPlan, summary: str) -> str:
    """Why `summary` is not this conversation's, or "": the turns are written in a script that
    names their language (Korean, Japanese, …) and the summary is not (trial 5: a Korean chat's
    first summary was "I'm glad to assist with your situation…", and the name and city were lost)."""
    wanted = written_language(_users_text(plan.folded))
    if wanted is None or not summary.strip() or written_language(summary) == wanted:
        return ""
    return f"the summary is not written in {wanted}, the conversation's language"


def _names(text: str) -> set[str]:
    """The capitalised words and numbers of `text`'s sentences past their first words (`_facts`
    without the "What", "Explain" or "Tell" a question or a request starts with, and without
    Korean's word stems, too common to require each)."""
    past_first = (words[1] for sentence in _sentences(text) if len(words := sentence.split(None, 1)) == 2)
    return {fact for rest in past_first for fact in _facts(rest) if not _HANGUL_WORD.fullmatch(fact)}


def _without_leads(text: str) -> str:
    """`text` without the extract's own leads (USER_SAID): no facts of the conversation (a re-trial:
    "사용" of "사용자가 한 말:" was a fact that later summaries were rejected for not keeping)."""
    for lead in USER_SAID.values():
        text = text.replace(lead, "")
    return text


def _dropped_facts(previous: str, new: str) -> str:
    """Why `new` is no summary of `previous` and more, or "": it keeps fewer than half of the
    previous summary's facts. A small model asked to fold both often rewrites only the newest
    turns (trial 4: "Mina Park … Tokyo … March 14 … 1200 dollars" became a story about a cat,
    and the name and the budget were gone for good). The extract keeps the previous summary. An
    extract the previous summary ends with (the user's own sentences) keeps every name and number
    (a re-trial: a summary that kept 4 of 5 dropped "Lyon", and the user's city was gone)."""
    said = previous.rpartition("\n\n")[2]
    if any(said.startswith(lead + " ") for lead in USER_SAID.values()):  # the user's own words, kept whole
        lost = _names(_without_leads(said)) - _facts(new)
        if lost:
            return f"the model dropped what the user said ({', '.join(sorted(lost)[:5])})"
    before = _facts(_without_leads(previous))
    if len(before) < MIN_FACTS_TO_JUDGE:
        return ""
    kept = before & _facts(_without_leads(new))
    if len(kept) * 2 >= len(before):
        return ""
    lost = ", ".join(sorted(before - kept)[:5])
    return f"the model dropped the earlier summary's facts (kept {len(kept)} of {len(before)}; lost {lost})"


def _dropped_new_facts(plan: SummaryPlan, new: str) -> str:
    """Why `new` folded nothing of what the user said in the folded turns, or "": it keeps fewer
    than half of the names and numbers of their first sentences that are no questions (`_names`:
    what the extract would keep; "Europe" of "What is the tallest mountain in Europe?" is no fact
    of the user's). A summary was judged only against the previous one: a re-trial's 20-turn chat
    had the same 56-token summary of turns 1-4 accepted at every turn from 12 on, and Whiskers, the
    job, Emma, 1990 and Marseille never reached it."""
    wanted = _names(" ".join(first for first in _folded_firsts(plan) if not _is_question(first)))
    kept = wanted & _facts(_without_leads(new))
    if len(kept) * 2 >= len(wanted):
        return ""
    return f"the model left out what the user said in the folded turns ({', '.join(sorted(wanted - kept)[:5])})"


def _folded_firsts(plan: SummaryPlan) -> list[str]:
    """The first sentence of each folded user message, oldest first (≤ 200 characters each), each
    once (trial 6: "hi." asked again and again filled the extract's room twice)."""
    firsts, seen = [], set()
    for turn in plan.folded:
        for m in turn.messages:
            if m["role"] == Role.USER.value and m["content"].strip():
                first = m["content"].strip().splitlines()[0]
                sentence = end_sentence(first.split(". ")[0].rstrip(".")[:200])
                if sentence.casefold() not in seen:
                    seen.add(sentence.casefold())
                    firsts.append(sentence)
    return firsts


GAP = "…"
"""Between the oldest and the newest first sentences when an extract leaves the middle out."""


_QUESTION = re.compile(r"[?？][\"'”’)\]」』）]*$")


def _is_question(sentence: str) -> bool:
    return bool(_QUESTION.search(sentence))


def _chosen(said: Sequence[str], keep: int, goes_later: Callable[[str], bool] = _is_question,
            ) -> tuple[list[str], bool]:
    """`keep` of `said` (oldest first), in their order, with GAP where any between are left out,
    and whether a sentence that `goes_later` gave way to one that does not. By default what the
    user stated goes before what they asked (a question's answer left with its turn, and a later
    turn asks for the facts: a re-trial's extract kept "What is a black hole?" and lost "I live in
    Lyon."); within each, the oldest and the newest first: ["A.", "B.", "…", "Y.", "Z."] (one: ["A."])."""
    n = len(said)
    if keep >= n:
        return list(said), False
    ends = sorted(range(n), key=lambda i: min(2 * i, 2 * (n - 1 - i) + 1))  # 0, n-1, 1, n-2, …
    ranked = sorted(ends, key=lambda i: goes_later(said[i]))
    picked = sorted(ranked[:max(keep, 0)])
    chosen: list[str] = []
    for before, i in zip([None, *picked], picked, strict=False):  # each with the one before it
        if before is not None and i - before > 1:
            chosen.append(GAP)
        chosen.append(said[i])
    return chosen, picked != sorted(ends[:max(keep, 0)])


_ENDED = re.compile(_SENTENCE_ENDS.pattern + "$")  # text that ends with one


def end_sentence(text: str) -> str:
    """`text` with a full stop unless it already ends a sentence ("Hello! What is 2+2?" stays
    as it is; "I live in Seoul" becomes "I live in Seoul.")."""
    text = text.rstrip()
    return text if not text or _ENDED.search(text) else text + "."


USER_SAID = {None: "The user said:", "Korean": "사용자가 한 말:"}
"""The extract's lead in the language its sentences are written in (trial 4: "The user said:"
before Korean sentences in a Korean chat); English for the others."""


def _extract_parts(plan: SummaryPlan) -> tuple[str, str, list[str]]:
    """The extractive fallback's parts: the previous summary kept as it is, the lead ("The user
    said:", USER_SAID in the language of the folded user messages) and the sentences under it,
    oldest first: the first sentence of each folded user message, the facts a small model most
    often fails to carry over. A previous summary that ends with such an extract in the same
    language gives its sentences too, to be chosen from with the new ones (new-user re-trials:
    extracts in a row read "The user said: … The user said: …", and once the summary was at its
    cap no extract fitted beside it, so the next turns were folded into nothing)."""
    firsts = _folded_firsts(plan)
    lead = USER_SAID.get(written_language(" ".join(firsts)), USER_SAID[None])
    head, _, last = plan.previous.content.rpartition("\n\n")
    if not firsts or not last.startswith(lead + " "):
        return plan.previous.content, lead, firsts
    earlier = [sentence for sentence in _sentences(last.removeprefix(lead + " ")) if sentence.strip() != GAP]
    said: dict[str, str] = {}  # each sentence once, by its casefold, oldest first
    for sentence in [*earlier, *firsts]:
        said.setdefault(sentence.casefold(), sentence)
    return head, lead, list(said.values())


def _extract(head: str, lead: str, said: Sequence[str]) -> str:
    """The extractive fallback: `head` (the previous summary, or what it holds besides an extract)
    and `lead` with the sentences `said` (`_extract_parts`)."""
    return _join(head, f"{lead} {' '.join(said)}" if said else "")


def _transcript(turns: Sequence[Turn]) -> str:
    return "\n".join(f"{m['role'].capitalize()}: {m['content']}" for t in turns for m in t.messages)


def _join(*parts: str) -> str:
    return "\n\n".join(p for p in parts if p)


def _first_true(lo: int, hi: int, pred: Callable[[int], bool], guess: int | None = None) -> int:
    """Smallest i in [lo, hi) with pred(i) True for a monotone pred (False…True); hi if none.
    guess: where the answer probably is; checked first (two calls of pred when it is right),
    then the search goes on in the side it rules out."""
    if guess is not None and lo <= guess <= hi:
        if guess < hi and not pred(guess):  # hi itself needs no check: it is the answer if none is
            lo = guess + 1
        elif guess == lo or not pred(guess - 1):
            return guess
        else:
            hi = guess - 1 if guess - 1 > lo else lo
            if hi == lo:
                return lo
    while lo < hi:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def summary_reserve(context_tokens: int) -> int:
    """Tokens kept free for the rolling summary in a `context_tokens` window: 1/8, at most 512."""
    return min(SUMMARY_RESERVE_MAX, context_tokens // SUMMARY_RESERVE_FRACTION)
