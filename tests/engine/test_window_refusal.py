"""A message too long for the context is refused with remedies that can work."""

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
    assert decision.reason.endswith("shorten the pinned notes or use a larger context")


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
