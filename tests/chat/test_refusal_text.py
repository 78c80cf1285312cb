"""A refused turn said from its numbers (app/chat/refusal_text.py): the same facts as the
engine's English reason, one line for the transcript, and the remedies as button labels."""

from app.chat.refusal_text import (
    lowered_max_new_tokens,
    other_remedies,
    refusal_advice,
    refusal_line,
    refusal_line_stored,
    refusal_reason,
    remedy_labels,
    stored_refusal,
)
from app.core.history import TokenBudget, WindowResult
from app.engine.events import window_refusal
from app.engine.memory.admission import AdmissionDecision, admit_turn
from app.engine.memory.probe import FakeProbe
from app.engine.memory.units import GiB, MiB, format_bytes
from tests.helpers import vram_scene


def test_a_memory_refusal_says_its_bytes_and_what_to_do():
    card = FakeProbe(12 * GiB, allocated=5 * GiB + 512 * MiB, context_overhead=512 * MiB).sample()  # 6 GiB free
    projection = vram_scene.project(card.allocated, prompt_tokens=30_000, resident_tokens=0, max_new_tokens=512,
                                    chunk_size=None)
    decision = admit_turn(projection, card.free, 256 << 20, 131_072, 30_000, 512, None)
    assert decision.reason_kind == "memory" and decision.facts["free"] == card.free
    reason = refusal_reason(decision)
    assert reason == (f"This turn needs {format_bytes(decision.needed_bytes)} of memory but 6.00 GiB is free: "
                      f"short by {format_bytes(decision.shortfall_bytes)}.")
    line = refusal_line(decision)
    assert line.startswith("This turn was not started. " + reason) and "\n" not in line
    assert "Trim older turns" in line
    labels = remedy_labels(decision)
    trim_needed = decision.facts["trim_needed"]  # the trimmed turn's own projection: it fits
    assert trim_needed <= card.free < decision.needed_bytes
    assert labels["trim"] == (f"Trim older turns (drop at least {decision.trim_tokens:,} tokens)"
                              f" — needs {format_bytes(trim_needed)}")
    assert labels["chunked"] == "Prefill in 1,024-token chunks"  # the engine's remedy, from facts
    assert other_remedies(decision) == ["Close other programs using this device, or load a smaller model."]


def test_a_positions_refusal_says_its_tokens():
    projection = vram_scene.project(0, prompt_tokens=4000, resident_tokens=0, max_new_tokens=512, chunk_size=None)
    decision = admit_turn(projection, 80 * GiB, 256 << 20, 4096, 4000, 512, None)
    assert decision.reason_kind == "positions"
    assert refusal_reason(decision) == ("The prompt (4,000 tokens) plus max new tokens (512) is 4,512 tokens, more "
                                        "than the context limit of 4,096 tokens; the prompt may use at most 3,584.")
    assert remedy_labels(decision) == {"trim": "Trim older turns (drop at least 416 tokens)",
                                       "lower_max_new_tokens": "Lower max new tokens to 96"}


def test_lowering_max_new_tokens_for_the_context_keeps_room_for_the_conversation():
    """The fit alone (1,755 of a 2,048 context) would leave history ~nothing once kept: a quarter is offered."""
    budget = TokenBudget.for_model(2048, 2048, 256, 64)
    window = WindowResult(False, (), (), (), 229, budget.prompt_tokens, 0, budget)
    decision = window_refusal(window, 2048)
    assert decision.max_new_tokens_fit == 2048 - 64 - 229 == 1755
    assert lowered_max_new_tokens(decision) == 512
    assert remedy_labels(decision)["lower_max_new_tokens"] == (
        "Lower max new tokens to 512, leaving room for the chat")
    small = AdmissionDecision(False, "positions", "", context_limit=512, max_new_tokens_fit=400)
    assert lowered_max_new_tokens(small) == 256  # a small context: half, still a sensible answer
    memory = AdmissionDecision(False, "memory", "", context_limit=2048, max_new_tokens_fit=1755)
    assert lowered_max_new_tokens(memory) == 1755  # this turn only: the whole fit


def test_a_message_too_long_says_how_much_to_shorten():
    budget = TokenBudget.for_model(8192, 1024, 256, 64)
    window = WindowResult(False, (), (), (), 900, budget.prompt_tokens, 0, budget)
    decision = window_refusal(window, 256)
    line = refusal_line(decision)
    assert line == ("This turn was not started. The new message needs 900 tokens with the system prompt, but the "
                    "context of 1,024 tokens minus max new tokens (256) and the summary reserve (64) leaves 704. "
                    f"Shorten it by {window.over_by:,} tokens or lower max new tokens.")


def test_a_message_longer_than_the_whole_context_is_not_told_to_lower_max_new_tokens():
    """1,852 tokens over with 512 new tokens: even none would not make room, so only shortening helps."""
    budget = TokenBudget.for_model(8192, 8192, 512, 512)  # the trial's numbers: it "leaves 7,168"
    window = WindowResult(False, (), (), (), 9020, budget.prompt_tokens, 0, budget)
    decision = window_refusal(window, 512)
    assert decision.facts["shorten_by"] == 9020 - (8192 - 512 - 512) == 1852
    assert refusal_advice(decision) == "Shorten it by 1,852 tokens."


def test_a_decision_without_a_kind_keeps_its_english_reason():
    decision = AdmissionDecision(False, "memory", "short by 120 MiB")
    assert refusal_line(decision) == "This turn was not started: short by 120 MiB"


def system_refusal(system: int, notes: int, message: int):
    """window_refusal of a prompt whose system message takes `system` tokens (`notes` of them the
    pinned notes') beside a newest message of `message`: 8,192 context, 512 new tokens, 512 reserve."""
    budget = TokenBudget.for_model(8192, 8192, 512, 512)
    window = WindowResult(False, (), (), (), system + message, budget.prompt_tokens, 0, budget, system, notes)
    return window_refusal(window, 512)


def test_a_system_prompt_too_long_is_named_with_where_to_shorten_it():
    """New-user trial: a 24,000-token system prompt, "hi": the line said "The new message needs 24,016
    tokens … Shorten it by 16,368 tokens"."""
    decision = system_refusal(24_015, 0, 1)
    line = ("This turn was not started. The system prompt takes 24,015 tokens, but the context of 8,192 tokens "
            "minus max new tokens (512) and the summary reserve (512) leaves 7,168 for it and the new message. "
            "Shorten the system prompt (Edit → Settings → System prompt) by 16,848 tokens.")
    assert refusal_line(decision) == line
    assert refusal_line_stored(stored_refusal(decision)) == line  # said again when the chat is opened
    assert remedy_labels(decision) == {} and other_remedies(decision) == []


def test_pinned_notes_too_long_are_named_and_a_room_for_new_tokens_is_offered():
    decision = system_refusal(7_000, 6_500, 300)  # 132 over; with 380 new tokens it fits
    assert decision.reason_kind == "notes"
    assert refusal_reason(decision) == (
        "This chat's pinned notes take 6,500 tokens, but the context of 8,192 tokens minus max new tokens (512) "
        "and the summary reserve (512) leaves 7,168 for them, the system prompt and the new message.")
    assert refusal_advice(decision) == "Shorten this chat's pinned notes (Notes, in the chat bar) by 132 tokens."
    assert remedy_labels(decision) == {"lower_max_new_tokens": "Lower max new tokens to 380"}


def test_a_system_prompt_that_cannot_be_shortened_enough_points_to_a_larger_context():
    decision = system_refusal(9_000, 0, 9_000)  # as long as the message, neither alone fits
    assert decision.reason_kind == "message"  # the message alone is too long: it is the one named
    decision = system_refusal(5_000, 0, 4_000)  # 1,832 over: either may go
    assert decision.reason_kind == "system" and refusal_advice(decision) == (
        "Shorten the system prompt (Edit → Settings → System prompt) by 1,832 tokens.")


def message_refusal(prompt: int, empty: int, limit: int, max_new: int = 8, frame: int = 15):
    """window_refusal of a message beside a system message of `empty` tokens (with an empty message;
    its template's frame `frame`), with `limit` tokens left for the prompt; 2 reserved for the summary."""
    budget = TokenBudget(context_tokens=limit + max_new + 2, max_new_tokens=max_new, summary_reserve=2)
    window = WindowResult(False, (), (), (), prompt, budget.prompt_tokens, 0, budget, empty, 0, frame, empty)
    return window_refusal(window, max_new)


def test_a_message_that_no_shortening_can_fit_says_what_can():
    """New-user trial 11: context 16, the system message 20 tokens, "What is the capital of France? Please
    answer briefly." (31 with it): "leaves 6. Shorten it by 25 tokens." — no message is that short."""
    decision = message_refusal(31, 20, 6)
    assert refusal_line(decision) == (
        "This turn was not started. The new message needs 31 tokens with the system prompt, but the context of 16 "
        "tokens minus max new tokens (8) and the summary reserve (2) leaves 6. Even an empty message needs 20 "
        "tokens with the system prompt, so shortening the message cannot make it fit: use a larger context.")
    assert refusal_line_stored(stored_refusal(decision)) == refusal_line(decision)
    assert remedy_labels(decision) == {}
    lower = message_refusal(31, 20, 6, max_new=40)  # 40 new tokens: 23 of them leave room for all 31
    assert refusal_advice(lower) == (
        "Even an empty message needs 20 tokens with the system prompt, so shortening the message cannot make it "
        "fit: lower max new tokens or use a larger context.")
    assert list(remedy_labels(lower)) == ["lower_max_new_tokens"]
    both = message_refusal(7_500, 3_500, 3_000)  # a 3,500-token system message, a 4,000-token message
    assert refusal_advice(both) == (
        "Even an empty message needs 3,500 tokens with the system prompt, so shortening the message cannot make it "
        "fit: shorten the system prompt (Edit → Settings → System prompt) as well or use a larger context.")
    both_lower = message_refusal(7_500, 3_500, 3_000, max_new=5_000)
    assert refusal_advice(both_lower) == (
        "Even an empty message needs 3,500 tokens with the system prompt, so shortening the message cannot make it "
        "fit: shorten the system prompt (Edit → Settings → System prompt) as well, lower max new tokens or use a "
        "larger context.")
    assert refusal_advice(message_refusal(40, 20, 30)) == "Shorten it by 10 tokens."  # 20 of 30: a shorter one fits
