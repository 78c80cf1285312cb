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
