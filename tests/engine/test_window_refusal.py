"""A message too long for the context is refused with remedies that can work."""

from dataclasses import replace

from app.core.history import TokenBudget, WindowResult
from app.engine.events import window_refusal


def _window(prompt_tokens: int, context: int, max_new: int, reserve: int) -> WindowResult:
    budget = TokenBudget.for_model(8192, context, max_new, reserve)
    return WindowResult(False, (), (), (), prompt_tokens, budget.prompt_tokens, 0, budget)


def test_a_short_message_is_not_told_to_shorten_by_more_than_it_holds():
    # --ask "Hi" --context 256 with the default max_new_tokens 512
    decision = window_refusal(_window(21, 256, 512, 32), 512)
    assert not decision.admitted and decision.cause == "positions"
    assert "shorten" not in decision.reason
    assert decision.reason.endswith("lower max_new_tokens to 203")
    assert decision.max_new_tokens_fit == 203


def test_a_long_message_can_be_shortened_or_max_new_tokens_lowered():
    decision = window_refusal(_window(1_000, 1_024, 256, 128), 256)
    assert decision.reason.endswith("shorten it by 360 tokens")


def test_nothing_helps_but_a_larger_context():
    decision = window_refusal(_window(2_021, 256, 512, 32), 512)
    assert decision.reason.endswith("use a larger context or a smaller max_new_tokens")
    assert decision.remedies == ()


def _system_window(system_tokens: int, notes_tokens: int, message_tokens: int, context: int = 8192,
                   max_new: int = 512, reserve: int = 512) -> WindowResult:
    budget = TokenBudget.for_model(8192, context, max_new, reserve)
    return WindowResult(False, (), (), (), system_tokens + message_tokens, budget.prompt_tokens, 0, budget,
                        system_tokens, notes_tokens)


def test_a_system_prompt_too_long_for_the_context_is_named_and_hi_is_not_told_to_shorten(real_loaded):
    """New-user trial: a ~24,000-token system prompt, an 8,192-token context and "hi": refused as
    "the new message needs 24,016 tokens … shorten it by 16,848 tokens", with "Attach as a file"
    (for "hi") the only remedy. The real model's tokenizer and template count it."""
    from app.core.conversation import Message, Role
    from app.core.history import SummaryState
    from app.engine.local.turn_planner import Foresight
    from app.engine.memory.probe import FakeProbe
    from app.engine.memory.units import GiB

    foresight = Foresight(real_loaded, FakeProbe(total=8 * GiB, kind="cpu", device_name="fake"))
    system = "Always answer in the voice of a careful librarian. " * 2400
    plan = foresight.plan([Message(Role.USER, "hi")], SummaryState(), system, 512, context_setting=8192)
    decision, window = plan.decision, plan.window
    tokenizer = real_loaded.tokenizer
    assert not plan.admitted and window.prompt_tokens == 24_016 and window.limit_tokens == 7_168
    assert len(tokenizer(system, add_special_tokens=False)["input_ids"]) == 24_001  # the frame adds 14
    assert window.system_tokens == 24_015 and window.notes_tokens == 0
    assert decision.reason_kind == "system" and decision.facts["message"] == 1  # "hi"
    assert decision.facts["shorten_by"] == 24_016 - 7_168 == 16_848
    assert decision.reason == ("the system prompt takes 24,015 of the 7,168 prompt tokens that the context of 8,192 "
                               "tokens minus max_new_tokens 512 and the summary reserve 512 leaves, and the new "
                               "message needs 1 more: shorten the system prompt by 16,848 tokens")
    assert decision.max_new_tokens_fit is None and decision.remedies == ()


def test_pinned_notes_too_long_are_named_not_the_system_prompt():
    decision = window_refusal(_system_window(9_030, 9_000, 16), 512)
    assert decision.reason_kind == "notes" and decision.facts["notes"] == 9_000
    assert decision.reason.startswith("the pinned notes take 9,000 and the system prompt 30 of the 7,168 prompt tokens")
    assert decision.reason.endswith("shorten the pinned notes by 1,878 tokens")


def test_a_long_message_beside_a_short_system_prompt_is_still_the_message():
    decision = window_refusal(_system_window(40, 0, 9_000), 512)
    assert decision.reason_kind == "message" and decision.facts["shorten_by"] == 9_040 - 7_168


def test_notes_are_not_told_to_shorten_by_more_than_they_hold():
    decision = window_refusal(_system_window(7_000, 3_600, 3_000), 512)  # 2,832 over; notes hold 3,600
    assert decision.reason_kind == "notes" and decision.facts["shorten_by"] == 2_832
    decision = window_refusal(_system_window(9_000, 5_000, 5_000), 512)  # 6,832 over: more than the notes
    assert decision.reason_kind == "notes" and decision.facts["shorten_by"] == 0
    assert decision.reason.endswith("removing the pinned notes cannot make it fit: use a larger context")
    from app.chat.refusal_text import refusal_line  # the window says the same (review: it said to shorten them)

    assert refusal_line(decision).endswith("Removing the pinned notes cannot make it fit: use a larger context.")


def _refused(real_loaded, system: str, context: int, max_new: int, message: str = "hi"):
    from app.core.conversation import Message, Role
    from app.core.history import SummaryState
    from app.engine.local.turn_planner import Foresight
    from app.engine.memory.probe import FakeProbe
    from app.engine.memory.units import GiB

    foresight = Foresight(real_loaded, FakeProbe(total=8 * GiB, kind="cpu", device_name="fake"))
    return foresight.plan([Message(Role.USER, message)], SummaryState(), system, max_new, context_setting=context)


def test_a_system_prompt_shorter_than_the_template_s_frame_is_not_told_to_shorten_by_more_than_it_holds(real_loaded):
    """New-user trial 10: context 16, max new tokens 8, "You are a helpful assistant." (6 tokens) and
    "hi": told to "shorten the system prompt by 15 tokens", which cannot be done — SmolLM2's frame
    around a system message and an empty turn alone takes 14 tokens of the 6 the context leaves."""
    plan = _refused(real_loaded, "You are a helpful assistant.", 16, 8)
    window, decision = plan.window, plan.decision
    assert (window.prompt_tokens, window.limit_tokens, window.system_tokens) == (21, 6, 20)
    assert window.frame_tokens == 14 + 1  # the frame and a one-character prompt
    assert decision.reason_kind == "system" and decision.facts["shorten_by"] == 0
    assert decision.reason.endswith("and the new message needs 1 more: shortening the system prompt cannot "
                                    "make it fit: use a larger context")


def test_shortening_the_system_prompt_by_the_count_said_makes_the_turn_fit(real_loaded):
    """The count a refusal names is one that works: the system prompt cut by that many tokens fits,
    one token less does not."""
    tokenizer = real_loaded.tokenizer
    system = "Always answer in the voice of a careful librarian who checks every fact twice. " * 4
    plan = _refused(real_loaded, system, 96, 16)
    shorten_by = plan.decision.facts["shorten_by"]
    assert plan.decision.reason_kind == "system" and 0 < shorten_by < plan.window.system_tokens - 14
    assert plan.decision.reason.endswith(f"shorten the system prompt by {shorten_by} tokens or lower "
                                         f"max_new_tokens to {plan.decision.max_new_tokens_fit}")
    ids = tokenizer(system, add_special_tokens=False)["input_ids"]
    assert _refused(real_loaded, tokenizer.decode(ids[:-shorten_by]), 96, 16).admitted
    assert not _refused(real_loaded, tokenizer.decode(ids[:-shorten_by + 1]), 96, 16).window.fits


def test_a_message_beside_a_system_message_that_fills_the_room_is_not_told_to_shorten(real_loaded):
    """New-user trial 11: context 16, max new tokens 8, "You are a helpful assistant." and "What is the
    capital of France? Please answer briefly.": "needs 31 … leaves 6. Shorten it by 25 tokens" — but
    the system message with an empty one already takes 20 of the 6: no shorter message fits."""
    question = "What is the capital of France? Please answer briefly."
    plan = _refused(real_loaded, "You are a helpful assistant.", 16, 8, question)
    window, decision = plan.window, plan.decision
    assert (window.prompt_tokens, window.limit_tokens, window.empty_message_tokens) == (31, 6, 20)
    assert decision.reason_kind == "message" and decision.facts["shorten_by"] == 0
    assert decision.facts["empty_message"] == 20 and not decision.facts["system_too"]
    assert decision.reason.endswith("leaves 6: even an empty message needs 20, so shortening it cannot make it "
                                    "fit: use a larger context")
    # no system prompt: SmolLM2's template adds its own (30 tokens with an empty message), as long
    bare = _refused(real_loaded, "", 16, 8, "Hello there")
    assert bare.window.system_tokens == 0 and bare.window.empty_message_tokens == 30
    assert bare.decision.reason_kind == "message" and bare.decision.facts["shorten_by"] == 0
    assert "shortening it cannot make it fit: use a larger context" in bare.decision.reason


def test_shortening_the_message_by_the_count_said_makes_the_turn_fit(real_loaded):
    """The count a message refusal names is one that works: the message cut by that many tokens fits."""
    tokenizer = real_loaded.tokenizer
    message = ("Please tell me everything about the history of the city of Paris and its bridges. " * 3).strip()
    plan = _refused(real_loaded, "You are a helpful assistant.", 64, 8, message)
    shorten_by = plan.decision.facts["shorten_by"]
    assert plan.decision.reason_kind == "message" and shorten_by == plan.window.over_by > 0
    assert plan.decision.reason.endswith(f"leaves 48: shorten it by {shorten_by} tokens")  # no room for new tokens
    ids = tokenizer(message, add_special_tokens=False)["input_ids"]
    assert _refused(real_loaded, "You are a helpful assistant.", 64, 8, tokenizer.decode(ids[:-shorten_by])).admitted
    assert not _refused(real_loaded, "You are a helpful assistant.", 64, 8,
                        tokenizer.decode(ids[:-shorten_by + 1])).window.fits


def test_a_long_system_prompt_and_a_long_message_are_told_to_shorten_both():
    """Neither alone can make it fit (the system message takes 3,500 of the 3,000 left, the message
    4,000 more), both together can: the system prompt's frame is 15 tokens."""
    budget = TokenBudget.for_model(8192, 4096, 512, 584)  # 3,000 for the prompt
    window = WindowResult(False, (), (), (), 7_500, budget.prompt_tokens, 0, budget, 3_500, 0, 15, 3_500)
    decision = window_refusal(window, 512)
    assert decision.reason_kind == "message" and decision.facts["shorten_by"] == 0 and decision.facts["system_too"]
    assert decision.reason.endswith("even an empty message needs 3,500, so shortening it cannot make it fit: "
                                    "shorten the system prompt as well or use a larger context")
    roomy = replace(window, budget=TokenBudget.for_model(32_768, 16_384, 12_800, 584))  # still 3,000 left
    assert roomy.budget.prompt_tokens == 3_000
    decision = window_refusal(roomy, 12_800)  # but 8,300 new tokens would leave room for all of it
    assert decision.reason.endswith("shorten the system prompt as well or lower max_new_tokens to 8,300 or use a "
                                    "larger context")


def test_a_system_prompt_that_cannot_be_shortened_enough_leaves_the_message_to_shorten(real_loaded):
    """Context 36, max new tokens 8: 24 left, the system message takes 20 (15 of them its frame) and the
    question 11 more, 7 over. The system prompt was named ("shortening the system prompt cannot make it
    fit"); the question can lose 7 tokens, and that is what is said."""
    question = "What is the capital of France? Please answer briefly."
    plan = _refused(real_loaded, "You are a helpful assistant.", 36, 8, question)
    assert (plan.window.prompt_tokens, plan.window.limit_tokens, plan.window.system_tokens) == (31, 24, 20)
    assert plan.decision.reason_kind == "message" and plan.decision.facts["shorten_by"] == 7
    assert plan.decision.reason.endswith("leaves 24: shorten it by 7 tokens or lower max_new_tokens to 1")


def test_counts_of_one_are_singular():
    """New-user trial: "shorten the system prompt by 1 tokens" and "the context of 1 tokens"."""
    decision = window_refusal(_system_window(7_160, 0, 9), 512)
    assert decision.reason_kind == "system" and decision.facts["shorten_by"] == 1
    assert decision.reason.endswith("shorten the system prompt by 1 token or lower max_new_tokens to 511")
    decision = window_refusal(_window(101, 1_024, 512, 412), 512)
    assert decision.reason.endswith("shorten it by 1 token or lower max_new_tokens to 511")
    decision = window_refusal(_window(21, 1, 1, 0), 1)
    assert decision.reason.startswith("the new message needs 21 prompt tokens, but the context of 1 token minus ")
    decision = window_refusal(_window(1, 1, 1, 0), 1)
    assert decision.reason.startswith("the new message needs 1 prompt token, but the context of 1 token minus ")
