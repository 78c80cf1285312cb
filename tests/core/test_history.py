
"""Sliding window, role normalisation and summary policy (app.core.history).

The fake token counter charges one token per whitespace word, MESSAGE_OVERHEAD per message and
GENERATION_PROMPT once, roughly like a chat template's role headers.
"""

from dataclasses import replace

import jinja2
import jinja2.sandbox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.conversation import Message, MessageStatus, Role
from app.core.history import (
    DEFAULT_MODEL_CONTEXT,
    NO_ROOM,
    SUMMARY_HEADER,
    SummaryState,
    SummaryVerdict,
    TokenBudget,
    _facts,
    accept_summary,
    build_prompt,
    end_sentence,
    finish_summary,
    foldable_turns,
    group_turns,
    next_turn_window,
    normalize_roles,
    plan_summary,
    select_window,
    without_unanswered,
)

MESSAGE_OVERHEAD = 4
GENERATION_PROMPT = 2
SYSTEM = "You are a helpful assistant."


def count_words(messages: list[dict[str, str]]) -> int:
    return GENERATION_PROMPT + sum(len(m["content"].split()) + MESSAGE_OVERHEAD for m in messages)


def words(n: int, tag: str) -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


def chat(*lengths: int) -> list[Message]:
    """Alternating user/assistant messages; message i has lengths[i] words tagged m<i>_."""
    roles = [Role.USER, Role.ASSISTANT]
    return [Message(roles[i % 2], words(n, f"m{i}_")) for i, n in enumerate(lengths)]


# --- Chat templates with the raise conditions of the real ones (tokenizer_config.json) ----------
GEMMA = (
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}"
    "{{ raise_exception('System role not supported') }}{% endif %}"
    "{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{% endif %}<start_of_turn>{{ message['role'] }}\n{{ message['content'] }}<end_of_turn>\n"
    "{% endfor %}"
)
MISTRAL_V03 = (
    "{%- if messages[0]['role'] == 'system' %}{%- set loop_messages = messages[1:] %}"
    "{%- else %}{%- set loop_messages = messages %}{%- endif %}"
    "{%- for message in loop_messages %}"
    "{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{- raise_exception('After the optional system message, conversation roles must alternate') }}"
    "{%- endif %}{%- if message['role'] not in ['user', 'assistant'] %}"
    "{{- raise_exception('Only user and assistant roles are supported') }}{%- endif %}"
    "[{{ message['role'] }}] {{ message['content'] }}{%- endfor %}"
)


def render(template: str, messages: list[dict[str, str]]) -> str:
    def raise_exception(text: str) -> None:
        raise jinja2.TemplateError(text)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment()
    env.globals["raise_exception"] = raise_exception
    return env.from_string(template).render(messages=messages, bos_token="<bos>")


def test_templates_reject_what_normalize_roles_fixes():
    raw = [{"role": "system", "content": "s"}, {"role": "user", "content": "a"},
           {"role": "user", "content": "b"}]
    with pytest.raises(jinja2.TemplateError, match="System role"):
        render(GEMMA, raw)
    with pytest.raises(jinja2.TemplateError, match="alternate"):
        render(MISTRAL_V03, raw)
    assert render(GEMMA, normalize_roles(raw, system_allowed=False)) == (
        "<bos><start_of_turn>user\ns\n\na\n\nb<end_of_turn>\n")
    assert render(MISTRAL_V03, normalize_roles(raw, system_allowed=True)) == "[user] a\n\nb"


# --- Budget ---------------------------------------------------------------------------------------
def test_budget_uses_smaller_context_and_default():
    assert TokenBudget.for_model(8192, 4096, 512, 256).prompt_tokens == 4096 - 512 - 256
    assert TokenBudget.for_model(8192, 0, 512, 256).context_tokens == 8192
    default = TokenBudget.for_model(None, None, 256, 128)
    assert default.context_tokens == DEFAULT_MODEL_CONTEXT == 2048
    assert default.prompt_tokens == 2048 - 256 - 128
    with pytest.raises(ValueError):
        TokenBudget.for_model(4096, None, -1, 0)


# --- Turns and window -----------------------------------------------------------------------------
def test_group_turns_skips_placeholder_and_keeps_positions():
    messages = [Message(Role.ASSISTANT, "hello"), *chat(1, 1, 1),
                Message(Role.ASSISTANT, "", MessageStatus.STREAMING)]
    turns = group_turns(messages)
    assert [(t.first_position, t.last_position) for t in turns] == [(0, 0), (1, 2), (3, 3)]
    assert [m["role"] for m in turns[1].messages] == ["user", "assistant"]


REASONED = "<think>\nFrance's capital is Paris, I am sure.\n</think>\n\nParis."


def test_earlier_answers_go_without_their_reasoning():
    """As Qwen3's and DeepSeek-R1's templates send them: the answer alone, counted as sent. An
    answer stopped inside its reasoning has none to send, and is left out like a placeholder."""
    messages = [Message(Role.USER, "Capital of France?"), Message(Role.ASSISTANT, REASONED),
                Message(Role.USER, "And of Italy?"), Message(Role.ASSISTANT, "<think>Rome, or", MessageStatus.STOPPED),
                Message(Role.USER, "Italy?")]
    turns = group_turns(messages)
    assert [m["content"] for t in turns for m in t.messages] == [
        "Capital of France?", "Paris.", "And of Italy?", "Italy?"]
    assert [(t.first_position, t.last_position) for t in turns] == [(0, 1), (2, 2), (4, 4)]
    budget = TokenBudget(context_tokens=100, max_new_tokens=20, summary_reserve=10)
    window = select_window(messages, system_prompt=SYSTEM, summary=SummaryState(), budget=budget,
                           count_tokens=count_words)
    assert [m["content"] for m in window.messages] == [SYSTEM, "Capital of France?", "Paris.",
                                                       "And of Italy?\n\nItaly?"]
    assert window.prompt_tokens == count_words(list(window.messages))
    assert not any("think" in m["content"] for m in window.messages)
    # the meter between turns counts the same
    meter = next_turn_window(messages[:2], lambda m: select_window(
        m, system_prompt=SYSTEM, summary=SummaryState(), budget=budget, count_tokens=count_words))
    assert [m["content"] for m in meter.messages][1:3] == ["Capital of France?", "Paris."]


def test_the_answer_continue_extends_goes_as_written():
    """Continue renders the prompt inside the stopped answer: its raw text, reasoning and all, so the
    model goes on from where it stopped; earlier answers still go without theirs."""
    stopped = Message(Role.ASSISTANT, "<think>\nRome, or was it", MessageStatus.STOPPED)
    messages = [Message(Role.USER, "Capital of France?"), Message(Role.ASSISTANT, REASONED),
                Message(Role.USER, "And of Italy?"), stopped]
    budget = TokenBudget(context_tokens=100, max_new_tokens=20, summary_reserve=10)
    window = select_window(messages, system_prompt="", summary=SummaryState(), budget=budget,
                           count_tokens=count_words)
    assert [m["content"] for m in window.messages] == ["Capital of France?", "Paris.", "And of Italy?",
                                                       "<think>\nRome, or was it"]


def test_window_evicts_whole_turns_oldest_first():
    messages = chat(10, 10, 10, 10, 10)  # turns: (0,1) (2,3) (4,)
    # system 5+4 words, turns of 2×(10+4) each, newest 14, +2: all three need 9+28+28+14+2 = 81.
    budget = TokenBudget(context_tokens=100, max_new_tokens=20, summary_reserve=10)  # 70 for prompt
    result = select_window(messages, system_prompt=SYSTEM, summary=SummaryState(), budget=budget,
                           count_tokens=count_words)
    assert result.fits and result.limit_tokens == 70
    assert [t.first_position for t in result.kept] == [2, 4]
    assert [t.first_position for t in result.evicted] == [0]
    assert result.prompt_tokens == 81 - 28 == count_words(list(result.messages))
    assert result.messages[0] == {"role": "system", "content": SYSTEM}
    assert result.messages[-1]["content"] == words(10, "m4_")


def test_newest_message_too_long_is_reported_not_cut():
    messages = chat(3, 3, 200)
    budget = TokenBudget(context_tokens=150, max_new_tokens=20, summary_reserve=10)
    result = select_window(messages, system_prompt=SYSTEM, summary=SummaryState(), budget=budget,
                           count_tokens=count_words)
    assert not result.fits and result.messages == () and result.kept == ()
    assert result.prompt_tokens == 9 + 204 + 2 and result.limit_tokens == 120
    assert result.over_by == 215 - 120


def test_between_turns_the_last_exchange_is_history_beside_the_message_not_written_yet():
    """New-user trial 10: after a normal answer on a 512-token model the meter read "474 / 255 tokens
    in context · 0 turns in window" in red: the last exchange (a long question and a 256-token answer)
    was counted as the newest turn, which must fit. The next prompt holds the next message instead
    and may leave that exchange out, as the turn will."""
    budget = TokenBudget(context_tokens=150, max_new_tokens=20, summary_reserve=10)  # 120 for the prompt

    def select(messages):
        return select_window(messages, system_prompt=SYSTEM, summary=SummaryState(), budget=budget,
                             count_tokens=count_words)

    long_last = chat(10, 10, 30, 100)  # the last exchange alone is 2 + 9 + 34 + 104 = 149 tokens
    assert not select(long_last).fits  # as the meter counted it: over, no turn kept
    window = next_turn_window(long_last, select)
    assert window.fits and window.prompt_tokens == 2 + (5 + 4) + (0 + 4) <= window.limit_tokens == 120
    assert window.kept == () and [t.first_position for t in window.evicted] == [0, 2]
    next_turn = select([*long_last, Message(Role.USER, "next")])
    assert next_turn.fits and next_turn.kept[-1].first_position == 4 and len(next_turn.evicted) == 2  # the same
    short = chat(10, 10, 5, 5)
    window = next_turn_window(short, select)  # both exchanges stay, beside the empty message's frame
    assert [t.first_position for t in window.kept] == [0, 2]
    assert window.prompt_tokens == select(short).prompt_tokens + 4
    refused = chat(10, 10, 200)  # ends with the user's message: counted as it is, sent again
    assert next_turn_window(refused, select) == select(refused)
    assert next_turn_window([], select).fits  # an empty chat: the first message's frame


def test_a_refused_window_says_how_much_of_it_the_system_message_takes():
    """New-user trial: a system prompt too long for the context was refused as "the new message
    needs 24,016 tokens" for "hi": the refusal needs the system message's own share."""
    from app.core.pinned_notes import with_pinned_notes

    system = with_pinned_notes(words(120, "s"), words(30, "n"))  # the notes add 30 words and a 7-word header
    budget = TokenBudget(context_tokens=150, max_new_tokens=20, summary_reserve=10)
    result = select_window([Message(Role.USER, "hi")], system_prompt=system, summary=SummaryState(),
                           budget=budget, count_tokens=count_words)
    assert not result.fits and result.prompt_tokens == 157 + 4 + 1 + 4 + 2 == 168
    assert result.system_tokens == 168 - 1 and result.notes_tokens == 37  # all but "hi"; the notes' words
    assert result.frame_tokens == 4 + 4 + 2 + 1  # what stays of the rest with the prompt cut to "."
    summarized = select_window([Message(Role.USER, "hi")], system_prompt=words(200, "s"),
                               summary=SummaryState("they said hi", -1, 0), budget=budget, count_tokens=count_words)
    assert summarized.system_tokens == 200 + 4 + 3 + 4 + 4 + 2 and summarized.notes_tokens == 0  # summary in it
    none = select_window([Message(Role.USER, "hi " * 200)], system_prompt="", summary=SummaryState(), budget=budget,
                         count_tokens=count_words)
    assert not none.fits and none.system_tokens == 0  # the template's frame alone is no system prompt
    fits = select_window([Message(Role.USER, "hi")], system_prompt=SYSTEM, summary=SummaryState(), budget=budget,
                         count_tokens=count_words)
    assert fits.fits and fits.system_tokens == 0  # only said for a refusal


def test_a_refused_window_says_what_an_empty_message_still_needs():
    """New-user trial 11: a 16-token context leaves 6 for the prompt, the system message takes 20,
    and a question was told to "shorten it by 25 tokens": no message is that short. The refusal
    needs what stays however short the message gets: the prompt with the newest turn emptied,
    with a system prompt or not (SmolLM2's template adds its own system prompt when none is given)."""
    budget = TokenBudget(context_tokens=40, max_new_tokens=20, summary_reserve=10)  # 10 for the prompt
    question = [Message(Role.USER, words(11, "q"))]
    result = select_window(question, system_prompt=SYSTEM, summary=SummaryState(), budget=budget,
                           count_tokens=count_words)
    assert not result.fits and result.prompt_tokens == (5 + 4) + (11 + 4) + 2 == 26
    assert result.empty_message_tokens == result.system_tokens == (5 + 4) + (0 + 4) + 2 == 15

    def adds_its_own_system_prompt(messages):  # a template's own 30-token system prompt when none is given
        return count_words(messages) + (0 if messages and messages[0]["role"] == "system" else 30)

    none = select_window(question, system_prompt="", summary=SummaryState(), budget=budget,
                         count_tokens=adds_its_own_system_prompt)
    assert not none.fits and none.system_tokens == 0  # still no system prompt to blame
    assert none.empty_message_tokens == 30 + (0 + 4) + 2 == none.prompt_tokens - 11


@pytest.mark.parametrize("prompt", ["", "Be brief.", "Be brief.\n\nAnswer in Korean."])
def test_without_pinned_notes_undoes_with_pinned_notes(prompt):
    from app.core.pinned_notes import with_pinned_notes, without_pinned_notes

    assert without_pinned_notes(with_pinned_notes(prompt, "Alex lives in Lisbon.")) == prompt
    assert without_pinned_notes(prompt) == prompt  # no notes: unchanged


def test_folded_turns_stay_out_and_summary_sits_in_system_message():
    messages = chat(2, 2, 2, 2, 2)
    summary = SummaryState("they said hi", folded_through=1, tokens=0)
    budget = TokenBudget(context_tokens=1000, max_new_tokens=10, summary_reserve=50)
    result = select_window(messages, system_prompt=SYSTEM, summary=summary, budget=budget,
                           count_tokens=count_words)
    assert [t.first_position for t in result.kept] == [2, 4] and result.evicted == ()
    assert result.messages[0]["content"] == f"{SYSTEM}\n\n{SUMMARY_HEADER}they said hi"
    assert result.summary_tokens == 7  # "Earlier in this conversation:" + 3 words
    assert result.limit_tokens == 1000 - 10 - 50 + 7


def test_summary_over_reserve_shrinks_the_window_instead_of_overflowing():
    messages = chat(10, 10, 10)
    summary = SummaryState(words(60, "s"), folded_through=-1)  # 64 tokens, reserve 10
    budget = TokenBudget(context_tokens=120, max_new_tokens=20, summary_reserve=10)
    result = select_window(messages, system_prompt=SYSTEM, summary=summary, budget=budget,
                           count_tokens=count_words)
    assert result.limit_tokens == 100 == budget.context_tokens - budget.max_new_tokens
    assert result.fits and [t.first_position for t in result.kept] == [2]
    assert result.prompt_tokens <= 100


role_lists = st.lists(st.sampled_from(["system", "user", "assistant"]), max_size=12)
conversations = st.lists(
    st.tuples(st.sampled_from([Role.USER, Role.ASSISTANT]), st.integers(0, 30)), max_size=14,
).map(lambda spec: [Message(r, words(n, f"m{i}_")) for i, (r, n) in enumerate(spec)]
      + [Message(Role.USER, words(5, "newest_"))])


@settings(max_examples=300, deadline=None)
@given(
    messages=conversations, context=st.integers(20, 400), max_new=st.integers(0, 60),
    reserve=st.integers(0, 60), summary_words=st.integers(0, 50), system_allowed=st.booleans(),
    system_prompt=st.sampled_from(["", SYSTEM]), folded=st.integers(-1, 3),
)
def test_window_properties(messages, context, max_new, reserve, summary_words, system_allowed,
                           system_prompt, folded):
    budget = TokenBudget(context, max_new, reserve)
    folded = min(folded, len(messages) - 2)  # the newest user message is never folded
    summary = SummaryState(words(summary_words, "s"), folded_through=folded)
    result = select_window(messages, system_prompt=system_prompt, summary=summary, budget=budget,
                           count_tokens=count_words, system_allowed=system_allowed)
    live = [t for t in group_turns(messages) if t.last_position > folded]
    assert list(result.evicted) + list(result.kept) == (live if result.fits else live[:-1])
    newest_alone = build_prompt(system_prompt, summary.content, live[-1:], system_allowed)
    assert result.fits == (count_words(newest_alone) <= result.limit_tokens)
    if not result.fits:
        assert result.over_by == count_words(newest_alone) - result.limit_tokens > 0
        return
    prompt = list(result.messages)
    assert count_words(prompt) == result.prompt_tokens <= result.limit_tokens
    assert result.prompt_tokens <= context - max_new
    if not summary.content:
        assert result.prompt_tokens <= budget.prompt_tokens
    assert result.kept[-1] == live[-1]  # the newest user message is in, whole
    assert prompt[-1]["role"] == "user"  # may carry merged neighbours / the system text
    assert prompt[-1]["content"].endswith(words(5, "newest_"))
    pinned = system_prompt or (SUMMARY_HEADER if summary.content else "")
    assert prompt[0]["content"].startswith(pinned)  # system prompt (and summary) always present
    assert (prompt[0]["role"] == "system") == bool(pinned and system_allowed)
    assert system_allowed or all(m["role"] != "system" for m in prompt)
    text = " ".join(m["content"] for m in prompt).split()
    kept_words = [w for t in result.kept for m in t.messages for w in m["content"].split()]
    assert text[len(text) - len(kept_words):] == kept_words  # order preserved
    if result.evicted:  # greedy: one more turn would not have fitted
        wider = build_prompt(system_prompt, summary.content, [result.evicted[-1], *result.kept],
                             system_allowed)
        assert count_words(wider) > result.limit_tokens


@settings(max_examples=300, deadline=None)
@given(messages=conversations, context=st.integers(20, 400), bias=st.integers(-40, 40), scale=st.floats(0.3, 3))
def test_an_estimate_changes_the_cost_of_the_search_never_its_answer(messages, context, bias, scale):
    """Any estimate, good or wildly off, picks the same window as exact counting; a good one
    needs at most three exact counts past the newest turn's."""
    budget = TokenBudget(context, 10, 10)
    calls = []

    def counting(prompt):
        calls.append(1)
        return count_words(prompt)

    exact = select_window(messages, system_prompt=SYSTEM, summary=SummaryState(), budget=budget,
                          count_tokens=count_words)
    guided = select_window(messages, system_prompt=SYSTEM, summary=SummaryState(), budget=budget,
                           count_tokens=counting, estimate_tokens=lambda p: int(count_words(p) * scale) + bias)
    assert (guided.fits, guided.kept, guided.evicted, guided.prompt_tokens) == (
        exact.fits, exact.kept, exact.evicted, exact.prompt_tokens)
    calls.clear()
    select_window(messages, system_prompt=SYSTEM, summary=SummaryState(), budget=budget,
                  count_tokens=counting, estimate_tokens=count_words)
    assert len(calls) <= 3  # the newest turn alone, the estimated window and its wider neighbour


@settings(max_examples=300, deadline=None)
@given(roles=role_lists, system_allowed=st.booleans(), summary=st.booleans())
def test_normalize_roles_properties(roles, system_allowed, summary):
    messages = [{"role": r, "content": f"w{i}"} for i, r in enumerate(roles)]
    if summary:
        messages = build_prompt("", "digest", [], True)[:1] + messages
    out = normalize_roles(messages, system_allowed)
    rest = [m for m in out if m["role"] != "system"]
    assert [m["role"] for m in rest] == ["user", "assistant"] * (len(rest) // 2) + (
        ["user"] if len(rest) % 2 else [])
    assert [m["role"] for m in out].count("system") == (
        1 if system_allowed and any(m["role"] == "system" for m in messages) else 0)
    moved = [m["content"] for m in messages if m["role"] == "system"]
    expected = " ".join(moved + [m["content"] for m in messages if m["role"] != "system"]).split()
    assert " ".join(m["content"] for m in out).split() == expected
    if out:
        render(GEMMA if not system_allowed else MISTRAL_V03, out)  # must not raise


# --- Summary policy -------------------------------------------------------------------------------
@given(old=st.integers(0, 10_000), new=st.integers(0, 10_000), summary=st.integers(0, 10_000),
       cap=st.integers(0, 10_000))
def test_accept_summary_only_if_capped_and_shrinking(old, new, summary, cap):
    verdict = accept_summary(old, new, summary, cap)
    assert verdict.accepted == (summary <= cap and new < old) == bool(verdict)


def test_accept_summary_reasons_and_errors():
    assert "cap" in accept_summary(100, 50, 300, 256).reason
    assert "does not shrink" in accept_summary(100, 100, 10, 256).reason
    with pytest.raises(ValueError):
        accept_summary(-1, 0, 0, 1)


def window_for(messages, summary, budget, system_allowed=True):
    return select_window(messages, system_prompt=SYSTEM, summary=summary, budget=budget,
                         count_tokens=count_words, system_allowed=system_allowed)


def test_plan_and_finish_summary_fold_evicted_turns_once():
    messages = chat(60, 60, 60, 60, 5)  # turns of 128 tokens, newest 9
    budget = TokenBudget(context_tokens=400, max_new_tokens=250, summary_reserve=30)
    window = window_for(messages, SummaryState(), budget)
    assert [t.first_position for t in window.evicted] == [0, 2]
    plan = plan_summary(window, SummaryState(), system_prompt=SYSTEM, count_tokens=count_words)
    assert plan.fold_through == 3 and not plan.truncated and plan.cap_tokens == 30
    assert "under 18 words" in plan.request[-1]["content"]  # 30 tokens × 0.6 words
    assert words(60, "m0_") in plan.request[-1]["content"]
    assert words(60, "m3_") in plan.request[-1]["content"]
    assert count_words(list(plan.request)) <= 400 - 30
    assert plan.old_history_tokens == 2 * 128 and plan.max_new_tokens == 30 - 5

    state, verdict = finish_summary(plan, "  they compared four long lists  ", count_words)
    assert verdict.accepted and state == SummaryState("they compared four long lists", 3, 9)
    again = window_for(messages, state, budget)
    assert again.evicted == () and [t.first_position for t in again.kept] == [4]
    assert plan_summary(again, state, system_prompt=SYSTEM, count_tokens=count_words) is None


def test_rejected_summary_keeps_old_text_and_does_not_loop():
    messages = chat(3, 3, 3, 3, 60)
    budget = TokenBudget(context_tokens=140, max_new_tokens=30, summary_reserve=20)
    previous = SummaryState("old facts", folded_through=-1, tokens=6)
    window = window_for(messages, previous, budget)
    plan = plan_summary(window, previous, system_prompt=SYSTEM, count_tokens=count_words)
    state, verdict = finish_summary(plan, words(40, "long"), count_words)
    # the model's summary is over the cap; the extract of the folded user messages is not
    assert verdict.accepted and "kept an extract" in verdict.reason and "cap" in verdict.reason
    assert state.content.startswith("old facts\n\nThe user said: ")
    assert state.folded_through == plan.fold_through and 6 < state.tokens <= plan.cap_tokens
    assert plan_summary(window_for(messages, state, budget), state, system_prompt=SYSTEM,
                        count_tokens=count_words) is None
    # an extract that cannot fit either: the old summary stays, the turns are not retried
    tight = replace(plan, cap_tokens=6)
    state, verdict = finish_summary(tight, words(40, "long"), count_words)
    assert not verdict.accepted and state == SummaryState("old facts", plan.fold_through, 6)
    state, verdict = finish_summary(plan, "   ", count_words)
    assert verdict.accepted and "empty summary" in verdict.reason and "The user said" in state.content


def test_a_context_with_no_room_for_a_summary_request_is_a_verdict_not_an_error():
    """New-user trial: a 64-token model, cap 8, said "summary request cannot fit: context 64, cap 8"
    as an error after every turn. The request's instructions alone (about 50 words) are longer
    than the 35 tokens this context leaves it: the evicted turns just leave, the summary stays."""
    previous = SummaryState("old facts", folded_through=-1, tokens=6)
    window = window_for(chat(3, 3, 3, 3, 3), previous, TokenBudget(context_tokens=40, max_new_tokens=5,
                                                                    summary_reserve=5))
    assert window.fits and [t.first_position for t in window.evicted] == [0, 2]
    verdict = plan_summary(window, previous, system_prompt=SYSTEM, count_tokens=count_words)
    assert verdict == SummaryVerdict(False, f"{NO_ROOM}: the request takes more than the context of 40 tokens "
                                            "less the summary's cap of 5")
    assert verdict.reason.startswith("no room for a summary")


def plan_for(firsts: list[str]):
    """The summary plan of a chat whose folded user messages start with `firsts` (three words
    follow each; a long last message stays unfolded)."""
    messages = [m for first in firsts for m in (Message(Role.USER, first + "\n" + words(3, "u")),
                                                   Message(Role.ASSISTANT, words(3, "a")))]
    messages.append(Message(Role.USER, words(60, "next")))
    budget = TokenBudget(context_tokens=200, max_new_tokens=30, summary_reserve=80)
    return plan_summary(window_for(messages, SummaryState(), budget), SummaryState(), system_prompt=SYSTEM,
                        count_tokens=count_words)


def extract_of(firsts: list[str]):
    """The summary state and verdict of `plan_for(firsts)` when the model's summary is empty."""
    return finish_summary(plan_for(firsts), "   ", count_words)


def test_the_extract_does_not_double_a_sentences_own_punctuation():
    """A trial's fallback read "The user said: Hello! What is 2+2?. Write a long essay…"."""
    state, verdict = extract_of(["Hello! What is 2+2?", "Write a long essay about cats", "Done...", "서울에 살아요？",
                                 'He said "stop."', "(see the list.)", "끝났어요。"])
    assert verdict.accepted and "kept an extract" in verdict.reason
    assert state.content == ('The user said: Hello! What is 2+2? Write a long essay about cats. Done. 서울에 살아요？ '
                             'He said "stop."')


def test_end_sentence_adds_a_full_stop_only_where_none_is():
    assert end_sentence("I live in Seoul") == "I live in Seoul."
    for ended in ("Hello! What is 2+2?", "Stop!", "서울에 살아요？", "끝났어요。", 'He said "stop."',
                  "(see the list.)", "「끝。」", "Wait…", ""):
        assert end_sentence(ended) == ended


def test_huge_evicted_turn_is_clipped_to_fit_the_summary_request():
    messages = [*chat(900, 10), Message(Role.USER, "next")]
    budget = TokenBudget(context_tokens=400, max_new_tokens=50, summary_reserve=40)
    window = window_for(messages, SummaryState(), budget, system_allowed=False)
    plan = plan_summary(window, SummaryState(), system_prompt=SYSTEM, count_tokens=count_words,
                        system_allowed=False)
    assert plan.truncated and plan.fold_through == 1
    assert all(m["role"] != "system" for m in plan.request)
    assert 400 - 40 - 1 <= count_words(list(plan.request)) <= 400 - 40
    assert plan.request[0]["content"].count("…[truncated]") == 1


@settings(max_examples=150, deadline=None)
@given(lengths=st.lists(st.integers(1, 40), min_size=2, max_size=30),
       context=st.integers(150, 400), system_allowed=st.booleans(),
       keep_words=st.integers(1, 30))
def test_growing_chat_never_overflows_and_folds_each_turn_once(lengths, context, system_allowed,
                                                               keep_words):
    budget = TokenBudget(context, max_new_tokens=40, summary_reserve=40)
    summary, messages, folds = SummaryState(), [], []
    for i, n in enumerate(lengths):
        messages.append(Message(Role.USER if i % 2 == 0 else Role.ASSISTANT, words(n, f"m{i}_")))
        if messages[-1].role is not Role.USER:
            continue
        window = window_for(messages, summary, budget, system_allowed)
        assert window.fits  # 9 + summary + 44 + 2 ≤ prompt_tokens + summary for context ≥ 150
        while plan := plan_summary(window, summary, system_prompt=SYSTEM,
                                   count_tokens=count_words, system_allowed=system_allowed):
            assert count_words(list(plan.request)) <= context - plan.cap_tokens
            text = " ".join(plan.request[-1]["content"].split()[:keep_words])
            new_summary, verdict = finish_summary(plan, text, count_words)
            if verdict:
                assert new_summary.tokens <= plan.cap_tokens
                assert new_summary.tokens < plan.old_history_tokens
            assert new_summary.folded_through == plan.fold_through > summary.folded_through
            folds.append(plan.fold_through)
            summary = new_summary
            window = window_for(messages, summary, budget, system_allowed)
        assert window.fits and window.evicted == ()
        assert window.prompt_tokens <= context - budget.max_new_tokens
        assert window.kept[0].first_position == summary.folded_through + 1
    assert folds == sorted(set(folds))


def test_summaries_are_asked_for_in_the_conversations_language():
    from app.core.history import summary_request, written_language

    assert written_language("User: 8 GiB GPU에서 7B 모델의 KV 캐시는 얼마나 차지하나요?") == "Korean"
    assert written_language("User: 東京の天気はどうですか") == "Japanese"
    assert written_language("User: 北京今天天气怎么样") == "Chinese"
    assert written_language("User: What is the capital of France?") is None
    korean = summary_request("", "User: 서울의 겨울 아침에 대해 써 주세요\nAssistant: 차가운 바람이 붑니다", 80)
    assert "Write it in Korean." in korean[-1]["content"]
    english = summary_request("", "User: Tell me about Paris\nAssistant: It is the capital.", 80)
    assert "Write it in the language of the conversation." in english[-1]["content"]
    answered_in_english = summary_request("", "User: 제 이름은 박민아이고 부산에 살아요\nAssistant: I'm glad to assist "
                                              "with your situation. Please refer to any of my articles.", 80)
    assert "Write it in Korean." in answered_in_english[-1]["content"]  # the user's language (trial 5)


def test_fold_at_evicts_before_the_window_is_full_and_keeps_the_newest_turns():
    messages = chat(*[10] * 12)  # 6 turns of 2 × (10 words + 4 overhead) = 28 tokens each

    def window(budget=None, **policy):
        return select_window(messages, system_prompt="", summary=SummaryState(),
                             budget=budget or TokenBudget(300, 0, 0), count_tokens=count_words, **policy)

    full = window()
    assert len(full.kept) == 6 and full.evicted == () and full.prompt_tokens == 2 + 6 * 28 == 170
    half = window(fold_at=0.5)  # 150 tokens: 2 + 5 × 28 = 142 fits, 170 does not
    assert [t.first_position for t in half.kept] == [2, 4, 6, 8, 10] and half.prompt_tokens == 142
    assert [t.first_position for t in half.evicted] == [0] and half.limit_tokens == 300
    now = window(fold_at=0.0, keep_turns=2)  # "Summarize now": all but the two newest
    assert [t.first_position for t in now.kept] == [8, 10] and len(now.evicted) == 4
    kept = window(fold_at=0.0, keep_turns=50)
    assert len(kept.kept) == 6 and kept.evicted == ()
    forced = window(TokenBudget(50, 0, 0), fold_at=0.0, keep_turns=2)  # one turn fits at all
    assert [t.first_position for t in forced.kept] == [10]


def test_summarize_now_folds_the_answered_turns_before_a_refused_message_left_at_the_end():
    """New-user trial: 4 answered turns, then a paste too long for the context, refused and left
    in the chat. "Summarize now" (keep 2) folded nothing ("the last 2 turns stay as they are")
    while the button counted 3 turns to fold: the paste was the newest turn, so the window did not
    fit and no summary was planned. The paste is no history (the next Send withdraws it): the two
    oldest answered turns fold, the two newest stay, and the count is what the fold does."""
    messages = chat(*[10] * 8, 500)  # 4 turns of 28 tokens, then the refused paste
    budget, summary = TokenBudget(300, 50, 30), SummaryState()

    def now(messages):
        return select_window(messages, system_prompt=SYSTEM, summary=summary, budget=budget,
                             count_tokens=count_words, fold_at=0.0, keep_turns=2)

    with_paste = now(messages)  # what "Summarize now" planned before
    assert not with_paste.fits
    assert plan_summary(with_paste, summary, system_prompt=SYSTEM, count_tokens=count_words) is None
    assert [m.content for m in without_unanswered(messages)] == [m.content for m in messages[:-1]]
    foldable = foldable_turns(messages, summary, keep_turns=2)
    assert [t.first_position for t in foldable] == [0, 2]
    window = now(without_unanswered(messages))
    assert window.evicted == foldable and [t.first_position for t in window.kept] == [4, 6]
    plan = plan_summary(window, summary, system_prompt=SYSTEM, count_tokens=count_words)
    assert plan.folded == foldable and plan.fold_through == 3
    assert words(500, "m8_") not in plan.request[-1]["content"]
    answered = messages[:-1]  # a chat that ends with an answer is whole
    assert without_unanswered(answered) == answered
    assert foldable_turns(answered, summary, keep_turns=2) == foldable
    assert foldable_turns(messages, SummaryState("s", 3, 1), keep_turns=2) == ()  # folded already
    assert foldable_turns(messages[-1:], summary, keep_turns=1) == ()  # only the refused one: nothing


@settings(max_examples=200, deadline=None)
@given(messages=conversations, unanswered=st.booleans(), keep=st.integers(0, 6), folded=st.integers(-1, 5))
def test_foldable_turns_are_what_summarize_now_evicts(messages, unanswered, keep, folded):
    """One rule for the "Summarize now" count and its fold: with room for every turn,
    select_window(fold_at=0) on the messages without an unanswered end evicts foldable_turns."""
    messages = [*messages, Message(Role.ASSISTANT, words(3, "answer_"))]
    if unanswered:
        messages.append(Message(Role.USER, words(3, "left_")))
    answered = without_unanswered(messages)
    turns = group_turns(answered)
    folded = min(folded, turns[-1].first_position - 1 if turns else -1)  # the newest turn is never folded
    summary = SummaryState("s" if folded >= 0 else "", folded)
    foldable = foldable_turns(messages, summary, keep)
    window = select_window(answered, system_prompt=SYSTEM, summary=summary, budget=TokenBudget(10_000, 0, 0),
                           count_tokens=count_words, fold_at=0.0, keep_turns=keep)
    assert window.evicted == foldable
    assert len(window.kept) == min(max(keep, 1), len([t for t in turns if t.last_position > folded]))


def test_an_extract_too_long_for_the_cap_keeps_the_oldest_and_newest_first_sentences():
    """Trial 6: only the newest were kept, and the name the user gave in turn 4 was gone."""
    messages = chat(*[6, 2] * 8, 3)
    budget = TokenBudget(context_tokens=400, max_new_tokens=10, summary_reserve=40)
    window = select_window(messages, system_prompt=SYSTEM, summary=SummaryState(), budget=budget,
                           count_tokens=count_words, fold_at=0.0, keep_turns=1)
    plan = plan_summary(window, SummaryState(), system_prompt=SYSTEM, count_tokens=count_words)
    assert len(plan.folded) == 8
    state, verdict = finish_summary(plan, words(80, "rambling"), count_words)
    assert verdict.accepted and "kept the first and last" in verdict.reason and state.tokens <= plan.cap_tokens
    said = state.content.removeprefix("The user said: ")
    assert said != state.content and " … " in said  # the middle left out, and said to be
    early, late = said.split(" … ")
    assert early.startswith("m0_0") and late.rstrip(".").split()[-1].startswith("m14_")  # both ends kept
    assert "m6_0" not in said and "m8_0" not in said  # the middle did not fit
    assert int(verdict.reason.split("kept the first and last ")[1].split()[0]) == said.count(".")


def test_the_extract_says_a_sentence_the_user_repeated_once():
    messages = chat(*[6, 2] * 3, 3)
    for index in (0, 2, 4):
        messages[index] = Message(Role.USER, "Hello there. How are you?")
    window = select_window(messages, system_prompt=SYSTEM, summary=SummaryState(),
                           budget=TokenBudget(context_tokens=400, max_new_tokens=10, summary_reserve=40),
                           count_tokens=count_words, fold_at=0.0, keep_turns=1)
    plan = plan_summary(window, SummaryState(), system_prompt=SYSTEM, count_tokens=count_words)
    state, verdict = finish_summary(plan, words(80, "rambling"), count_words)
    assert verdict.accepted and state.content == "The user said: Hello there."


def test_a_summary_that_repeats_itself_is_kept_once():
    """Greedy decoding of a small model loops: the same sentence again and again, or a phrase to
    the token cap. The summary keeps each sentence once and stops before the loop; the verdict
    says what was left out."""
    messages = chat(60, 60, 60, 60, 5)
    budget = TokenBudget(context_tokens=400, max_new_tokens=250, summary_reserve=30)
    plan = plan_summary(window_for(messages, SummaryState(), budget), SummaryState(), system_prompt=SYSTEM,
                        count_tokens=count_words)
    looping = "Minji is a nurse. She likes tea. She lives in Busan. minji is a nurse! She likes tea."
    state, verdict = finish_summary(plan, looping, count_words)
    assert verdict.accepted and state.content == "Minji is a nurse. She likes tea. She lives in Busan."
    assert verdict.reason == "history 256 → 15 tokens (left out 2 repeated sentences)"  # + the header
    run_on = "Minji lives in Busan and she likes tea and she likes tea and she likes tea and she likes tea and she"
    state, verdict = finish_summary(plan, run_on, count_words)
    assert verdict.accepted and state.content == "Minji lives in Busan and she likes tea"
    assert verdict.reason.endswith(f"(left out a loop of {len(run_on) - len(state.content) - 1} characters)")
    plain = "Minji works at the hospital in Busan and moved to Busan for the hospital job."
    state, verdict = finish_summary(plan, plain, count_words)
    assert state.content == plain and "left out" not in verdict.reason


def test_a_summary_that_repeats_the_requests_instructions_keeps_only_its_own_sentences():
    """Trial 7: the default model ended its summary with the request's instructions, which were then
    shown as the summary, went into every later prompt and were offered as a note to pin."""
    messages = chat(60, 60, 60, 60, 5)
    budget = TokenBudget(context_tokens=400, max_new_tokens=250, summary_reserve=30)
    plan = plan_summary(window_for(messages, SummaryState(), budget), SummaryState(), system_prompt=SYSTEM,
                        count_tokens=count_words)
    ask = plan.request[-1]["content"]
    instructions = ask[ask.index("Write one updated summary"):]
    state, verdict = finish_summary(plan, "Mina lives in Seoul. She is a nurse.\n" + instructions, count_words)
    assert verdict.accepted and state.content == "Mina lives in Seoul. She is a nurse."
    state, verdict = finish_summary(plan, "You keep a running summary of a chat. " + instructions, count_words)
    assert not verdict.accepted and state.content == ""  # nothing of its own: the previous summary (none)


def test_a_summary_that_copies_the_turns_or_mostly_loops_gives_way_to_the_extract():
    """A small model may copy the request's transcript ("User: …" / "Assistant: …") instead of
    summarizing it (a trial: SmolLM2-135M kept none of the facts), or loop so that most of what it
    wrote was repeats: neither is trusted; the extract of what the user said is kept."""
    messages = chat(60, 60, 60, 60, 5)
    budget = TokenBudget(context_tokens=400, max_new_tokens=250, summary_reserve=60)
    plan = plan_summary(window_for(messages, SummaryState(), budget), SummaryState(), system_prompt=SYSTEM,
                        count_tokens=count_words)
    echo = ("New turns:\nUser: what is the code?\n\nAssistant: It is a set of laws.\n\n"
            "User: who leads it?\nMira leads it.")
    state, verdict = finish_summary(plan, echo, count_words)
    assert verdict.accepted and "repeated the conversation instead of summarizing it (4 of 5 lines)" in verdict.reason
    assert state.content.startswith("The user said: ")  # the newest folded user messages that fit
    loop = "Alex lives in Lisbon. " + "Alex lives in Lisbon and likes tea. " * 4
    state, verdict = finish_summary(plan, loop, count_words)
    assert "the model repeated itself (3 repeated sentences, 2 kept)" in verdict.reason
    assert state.content.startswith("The user said: ")
    fine = "Alex lives in Lisbon. He is a nurse. They meet on Friday at 6 pm at the harbour cafe."
    state, verdict = finish_summary(plan, fine, count_words)
    assert verdict.accepted and state.content == fine
    # a summary with a line or two copied from the request keeps its own lines only (trial 4:
    # "New turns:\nUser: What should" was shown under "Earlier in this conversation")
    own = "Alex lives in Lisbon.\nHe is a nurse.\nThey meet on Friday at 6 pm at the harbour cafe."
    state, verdict = finish_summary(plan, own + "\nNew turns:\nUser: What should", count_words)
    assert verdict.accepted and state.content == own
    # a re-trial's: "The new summary: …" and "The new turns:" (the request's headings, reworded)
    state, verdict = finish_summary(plan, "The new summary: " + own + "\n\nThe new turns:\nAss", count_words)
    assert verdict.accepted and state.content == own


def test_a_summary_that_copies_an_answer_gives_way_to_the_extract():
    """New-user trial: SmolLM2-135M's "summary" was its own answer about the Moon, word for word,
    with no "Assistant:" to give it away: the user's name and city were lost, and the fact check
    then guarded the made-up "238 days". A summary mostly made of sentences copied from the folded
    answers is not trusted; sentences the user wrote, or the previous summary held, are no copies."""
    messages = chat(60, 60, 60, 60, 5)
    budget = TokenBudget(context_tokens=400, max_new_tokens=250, summary_reserve=60)
    previous = SummaryState(f"Earlier: {words(12, 'm3_')}.", folded_through=-1, tokens=15)
    plan = plan_summary(window_for(messages, previous, budget), previous, system_prompt=SYSTEM,
                        count_tokens=count_words)
    assert [t.first_position for t in plan.folded] == [0, 2]
    answer = words(30, "m1_")  # the first folded answer, copied
    state, verdict = finish_summary(plan, f"{answer}.", count_words)
    assert verdict.accepted and "the model copied an answer instead of summarizing (30 of 30 words)" in verdict.reason
    assert state.content.startswith(previous.content + "\n\nThe user said: m0_0 m0_1")
    own = "Alex lives in Lisbon and works nights as a nurse at the harbour hospital."
    state, verdict = finish_summary(plan, f"{own} {words(8, 'm1_')}.", count_words)  # a short quote of it
    assert verdict.accepted and state.content == f"{own} {words(8, 'm1_')}."
    for kept in (words(30, "m0_"), words(12, "m3_")):  # the user's words, the previous summary's
        state, verdict = finish_summary(plan, f"{kept}.", count_words)
        assert "copied an answer" not in verdict.reason


def test_extracts_in_a_row_go_on_under_one_lead():
    """A re-trial's summary after three rejected model summaries read "The user said: … The user
    said: … The user said: …": the lead is said once."""
    plan = plan_for(["My name is Alice", "I live in Lyon"])
    first = SummaryState("Alice likes jazz.\n\nThe user said: My cat is Pixel.", folded_through=-1, tokens=12)
    state, verdict = finish_summary(replace(plan, previous=first), "   ", count_words)
    assert verdict.accepted
    assert state.content == ("Alice likes jazz.\n\nThe user said: My cat is Pixel. My name is Alice. "
                             "I live in Lyon.")
    korean = SummaryState("사용자가 한 말: 저는 민지예요.", folded_through=-1, tokens=6)
    state, _ = finish_summary(replace(plan, previous=korean), "   ", count_words)
    assert state.content == "사용자가 한 말: 저는 민지예요.\n\nThe user said: My name is Alice. I live in Lyon."


def test_an_extract_at_its_cap_makes_room_for_the_new_sentences():
    """New-user re-trial: once the summary, an extract of what the user said, was at its cap, no
    extract fitted beside it and the next folded turns were folded into nothing. Its sentences are
    chosen from with the new ones, the oldest and the newest first."""
    plan = plan_for(["My cat is called Whiskers", "I work as a nurse"])
    earlier = " ".join(f"Sentence {i} has four words." for i in range(14))
    previous = SummaryState(f"The user said: My name is Alice. {earlier}", folded_through=-1, tokens=75)
    state, verdict = finish_summary(replace(plan, previous=previous), "   ", count_words)
    assert verdict.accepted and "kept the first and last" in verdict.reason
    assert state.content.startswith("The user said: My name is Alice. Sentence 0 has four words.")
    assert " … " in state.content and state.content.endswith("My cat is called Whiskers. I work as a nurse.")
    assert state.tokens <= plan.cap_tokens


def test_a_model_summary_at_its_cap_gives_way_by_sentences_to_what_the_user_said():
    """New-user trial: when the previous summary was a model's at its cap and the next one was
    rejected, no extract fitted beside it, and the folded turns were lost, said only as "rejected".
    The previous summary now leaves out up to half of its sentences, from the middle, to let at
    least half of what the user said in; when even that cannot fit, the verdict says the turns are gone."""
    firsts = ["My cat is called Whiskers", "I work as a nurse"]
    messages = [m for first in firsts for m in (Message(Role.USER, first + "\n" + words(3, "u")),
                                                   Message(Role.ASSISTANT, words(3, "a")))]
    messages.append(Message(Role.USER, words(165, "next")))
    model = " ".join(f"Fact {i} has four words." for i in range(15))
    previous = SummaryState(f"Alice lives in Lyon. {model} it was a nice chat.", folded_through=-1, tokens=84)
    budget = TokenBudget(context_tokens=300, max_new_tokens=30, summary_reserve=85)
    plan = plan_summary(window_for(messages, previous, budget), previous, system_prompt=SYSTEM,
                        count_tokens=count_words)
    assert len(plan.folded) == 2 and plan.cap_tokens == 85
    state, verdict = finish_summary(plan, "A story about a cat.", count_words)
    assert verdict.accepted and "; the earlier summary cut to 14 of 17 sentences: history" in verdict.reason
    # the sentence that names nothing goes first, then the middle
    assert state.content == ("Alice lives in Lyon. " + " ".join(f"Fact {i} has four words." for i in range(7))
                             + " … " + " ".join(f"Fact {i} has four words." for i in range(9, 15))
                             + "\n\nThe user said: My cat is called Whiskers.")
    assert state.tokens <= plan.cap_tokens and state.folded_through == plan.fold_through
    # cut to half, nothing fits either: the previous summary stays whole, and the verdict says the turns are gone
    state, verdict = finish_summary(replace(plan, cap_tokens=48), "A story about a cat.", count_words)
    assert not verdict.accepted and verdict.reason.endswith("; the folded turns were left out")
    assert state.content == previous.content


def test_an_extract_beside_a_model_summary_at_the_cap_still_takes_the_new_turns_statement():
    """New-user re-trial: beside a model summary near the cap, the extract kept "1 of 2 messages",
    the older one, "My cat is called Biscuit.", four turns running, and each new turn's statement
    (the job, the family) was lost. The model summary gives way by sentences until one of the new
    statements fits."""
    messages = [Message(Role.USER, "I work as a pharmacist at Solsiden\n" + words(3, "u")),
                Message(Role.ASSISTANT, words(3, "a")), Message(Role.USER, words(165, "next"))]
    model = " ".join(f"Fact {i} has four words." for i in range(12))
    previous = SummaryState(f"Alice lives in Lyon. {model}\n\nThe user said: My cat is called Biscuit.",
                            folded_through=-1, tokens=80)
    budget = TokenBudget(context_tokens=300, max_new_tokens=30, summary_reserve=80)
    plan = plan_summary(window_for(messages, previous, budget), previous, system_prompt=SYSTEM,
                        count_tokens=count_words)
    state, verdict = finish_summary(plan, "A story about a cat.", count_words)
    assert verdict.accepted and "kept an extract; the earlier summary cut to 12 of 13 sentences" in verdict.reason
    assert state.content.endswith("The user said: My cat is called Biscuit. I work as a pharmacist at Solsiden.")
    assert " … Fact 6 has four words." in state.content and state.tokens <= plan.cap_tokens


def test_a_summary_that_folds_nothing_of_the_new_turns_gives_way_to_the_extract():
    """Re-trial: a 20-turn chat had the same 56-token summary of its first turns accepted at every turn
    from 12 on: judged only against the previous summary, it kept that one's facts, and Whiskers, the
    job, Emma, 1990 and Marseille never reached it. A summary keeps at least half of the names and
    numbers of the folded turns' first sentences (what the extract keeps); digits inside a word
    ("m0_1") are none."""
    plan = plan_for(["My cat is called Whiskers", "I work at Renault since 2019", "What is a black hole?"])
    state, verdict = finish_summary(plan, "The user likes animals and space.", count_words)
    assert verdict.accepted and verdict.reason.startswith(
        "model summary rejected (the model left out what the user said in the folded turns (2019, renault, "
        "whiskers)); kept an extract")
    assert state.content == ("The user said: My cat is called Whiskers. I work at Renault since 2019. "
                             "What is a black hole?")
    for kept in ("The user's cat Whiskers; works at Renault.", "Cat: Whiskers. Job since 2019."):  # 2 of 3
        state, verdict = finish_summary(plan, kept, count_words)
        assert verdict.reason.startswith("history ") and state.content == kept
    # a question's names are no facts of the user's (re-trial: a summary refused for leaving out "Europe")
    asked = plan_for(["What is the tallest mountain in Europe?", "Which river flows through Paris?", "My cat is Tom"])
    state, verdict = finish_summary(asked, "The user's cat is Tom.", count_words)
    assert verdict.reason.startswith("history ") and state.content == "The user's cat is Tom."
    assert _facts("m0_1 m12_3 v2 3pm (4) 1,200 Lyon") == {"3", "4", "1,200", "lyon"}
    facts = _facts("3시 KTX를 타요. Seoul에서")  # a Korean particle is no part of a name
    assert {"3", "ktx", "seoul"} <= facts and not {"ktx를", "seoul에서"} & facts


def test_a_summary_that_drops_what_the_user_said_or_only_cuts_the_last_one_is_not_kept():
    """New-user re-trial: after an extract of "… Alice … the Moon … I live in Lyon.", the model's
    next summary was its first two sentences, and another kept 4 of 5 facts: Lyon was gone either
    way. A summary after an extract keeps every name and number of it (not the words a question
    starts with), and one that is only part of the previous summary is not one."""
    previous = SummaryState("The user said: My name is Alice. Explain the Moon to me. By the way, I live in Lyon. "
                            "What is 2+2?", folded_through=-1, tokens=30)
    messages = chat(60, 60, 60, 60, 5)
    budget = TokenBudget(context_tokens=400, max_new_tokens=250, summary_reserve=60)
    plan = plan_summary(window_for(messages, previous, budget), previous, system_prompt=SYSTEM,
                        count_tokens=count_words)
    state, verdict = finish_summary(plan, "Alice asked about the Moon and 2+2.", count_words)
    assert not state.content.startswith("Alice asked")
    assert "model summary rejected (the model dropped what the user said (lyon))" in verdict.reason
    state, verdict = finish_summary(plan, "The user said: My name is Alice. Explain the Moon to me.", count_words)
    assert "model summary rejected (the model wrote back part of the earlier summary" in verdict.reason
    good = "Alice lives in Lyon; she asked about the Moon and what 2+2 is."
    state, verdict = finish_summary(plan, good, count_words)
    assert verdict.accepted and state.content == good  # "Explain", "What", "By" are not required
    korean = SummaryState("사용자가 한 말: 제 이름은 민수예요. 부산에 살아요. 고양이 이름은 초코예요.",
                          folded_through=-1, tokens=12)
    plan = replace(plan, previous=korean)
    state, verdict = finish_summary(plan, "민수는 부산에 살고 고양이 초코를 키워요.", count_words)
    assert verdict.accepted and state.content.startswith("민수는")  # the lead's "사용" is no fact to keep


def test_an_extract_short_of_room_keeps_what_the_user_stated_before_what_they_asked():
    """New-user re-trial: at its cap the extract kept "What is the capital of Japan?" and "What is a
    black hole?" and left out "I live in Lyon." and "I work as a nurse.", which a later turn asked for."""
    plan = plan_for(["My name is Alice", "What is 2+2?", "I live in Lyon", "What is a black hole?"])
    state, verdict = finish_summary(replace(plan, cap_tokens=16), "   ", count_words)
    assert verdict.accepted and "kept 2 of 4 messages, what the user stated first" in verdict.reason
    assert state.content == "The user said: My name is Alice. … I live in Lyon."  # was "… What is a black hole?"
    state, verdict = finish_summary(replace(plan, cap_tokens=12), "   ", count_words)
    assert "kept the first and last 1 of 4 messages" in verdict.reason  # the oldest is a statement
    assert state.content == "The user said: My name is Alice."


def test_the_extract_of_a_korean_chat_is_led_in_korean():
    """Trial 4: "The user said:" before Korean sentences in a Korean chat's summary."""
    state, _verdict = extract_of(["제 이름은 민지예요", "부산에 살아요", "예산은 30만 원이에요"])
    assert state.content == "사용자가 한 말: 제 이름은 민지예요. 부산에 살아요. 예산은 30만 원이에요."


def test_a_summary_that_drops_the_earlier_summarys_facts_gives_way_to_the_extract():
    """Trial 4: SmolLM2-135M folded "Mina Park … Tokyo on March 14 … 1200 dollars" into a story
    about a cat, and the name and the budget were gone for good."""
    previous = SummaryState("Mina Park lives in Busan. She goes to Tokyo on March 14 with a budget of 1200 dollars.",
                            folded_through=-1, tokens=20)
    messages = chat(60, 60, 60, 60, 5)
    budget = TokenBudget(context_tokens=400, max_new_tokens=250, summary_reserve=60)
    plan = plan_summary(window_for(messages, previous, budget), previous, system_prompt=SYSTEM,
                        count_tokens=count_words)
    story = "In the year 2020, the cat Akira had no idea where to go. He lived in Tokyo."
    state, verdict = finish_summary(plan, story, count_words)
    assert "dropped the earlier summary's facts (kept 1 of 7; lost 1200, 14, busan, march, mina)" in verdict.reason
    assert state.content.startswith(previous.content + "\n\nThe user said: ")  # the facts are kept
    folded = "Mina Park from Busan flies to Tokyo on March 14; the budget is 1200 dollars. She asked what to pack."
    state, verdict = finish_summary(plan, folded, count_words)  # the same facts in other words
    assert verdict.accepted and state.content == folded
    korean = SummaryState("민지는 부산에 살고 3월 14일에 120만 원으로 도쿄에 간다.", folded_through=-1, tokens=20)
    plan = replace(plan, previous=korean)
    state, verdict = finish_summary(plan, "민지는 도쿄 여행을 준비하고 있다.", count_words)  # no date, no budget
    assert "kept 2 of 10" in verdict.reason and state.content.startswith(korean.content)
    paraphrase = "박민아는 부산에서 살며 예산이 120만 원이에요. 3월 14일 도쿄."  # Korean facts by their stems
    said = SummaryState("사용자 박민아는 부산에 살고 예산은 120만 원이다.", folded_through=-1, tokens=12)
    state, verdict = finish_summary(replace(plan, previous=said), paraphrase, count_words)
    assert verdict.accepted and state.content == paraphrase


def test_a_last_sentence_cut_off_by_the_cap_is_dropped_and_lists_are_left_alone():
    """Trial 5: a Korean summary ended "… 부산에 살아요.\\n\\n박" for ten turns, an English one "… I'll be"."""
    messages = chat(60, 60, 60, 60, 5)
    budget = TokenBudget(context_tokens=400, max_new_tokens=250, summary_reserve=60)
    plan = plan_summary(window_for(messages, SummaryState(), budget), SummaryState(), system_prompt=SYSTEM,
                        count_tokens=count_words)
    cases = {
        "안녕하세요! 제 이름은 박민아이고 부산에 살아요.\n\n박": "안녕하세요! 제 이름은 박민아이고 부산에 살아요.",
        "Mina lives in Busan. What's her budget like?\n\nI'll be": "Mina lives in Busan. What's her budget like?",
        "Mina is in Seoul. She flies to Tokyo on May 4 and is": "Mina is in Seoul. She flies to Tokyo on May 4 and is",
        "- Name: Mina\n- City: Busan": "- Name: Mina\n- City: Busan",  # a list: its last line is whole
        "Mina lives in Busan.\n- Friend: Jonas": "Mina lives in Busan.\n- Friend: Jonas",
        "Dr. Kim lives in Seoul with Mina": "Dr. Kim lives in Seoul with Mina",  # most of it: kept
    }
    for written, kept in cases.items():
        state, verdict = finish_summary(plan, written, count_words)
        assert verdict.accepted and state.content == kept, written


def test_a_summary_in_another_language_than_the_turns_gives_way_to_the_extract():
    """Trial 5: a Korean chat's first summary read "I'm glad to assist with your situation…"."""
    plan = plan_for(["제 이름은 박민아이고 부산에 살아요", "예산은 120만 원이에요"])
    for turn in plan.folded:  # the model answered in English, at length (trial 5)
        turn.messages[1]["content"] = "I'm glad to assist with your situation. " * 5
    state, verdict = finish_summary(plan, "I'm glad to assist with your situation. I'm here to help.", count_words)
    assert "not written in Korean" in verdict.reason and state.content.startswith("사용자가 한 말: 제 이름은")
    state, verdict = finish_summary(plan, "사용자 박민아는 부산에 살고 예산은 120만 원이다.", count_words)
    assert verdict.accepted and state.content == "사용자 박민아는 부산에 살고 예산은 120만 원이다."
