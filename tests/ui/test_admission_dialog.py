"""The refusal dialog: real AdmissionDecisions from admit_turn on a simulated 12 GiB card
(Llama-3-8B shape, NF4), each remedy button, and no override for a position overflow (C23)."""

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from app.engine.memory.admission import admit_turn
from app.engine.memory.probe import FakeProbe
from app.engine.memory.units import GiB, MiB, format_bytes
from app.ui.admission_dialog import CHOICES, AdmissionDialog
from tests.helpers import vram_scene

MARGIN = 256 * MiB


@pytest.fixture
def card():
    # 5.5 GiB of weights, 512 MiB of CUDA context → 6 GiB free
    return FakeProbe(12 * GiB, allocated=5 * GiB + 512 * MiB, context_overhead=512 * MiB).sample()


def refuse_memory(card, prompt=30_000, new=512, chunk=None):
    projection = vram_scene.project(card.allocated, prompt_tokens=prompt, resident_tokens=0,
                                    max_new_tokens=new, chunk_size=chunk)
    decision = admit_turn(projection, card.free, MARGIN, 131_072, prompt, new, None)
    assert not decision.admitted and decision.cause == "memory"
    return decision, projection


def open_dialog(qtbot, decision, projection=None):
    dialog = AdmissionDialog(decision, projection)
    qtbot.addWidget(dialog)
    dialog.open()
    qtbot.waitExposed(dialog)
    return dialog


def test_memory_refusal_shows_the_numbers(qtbot, card):
    decision, projection = refuse_memory(card)
    dialog = open_dialog(qtbot, decision, projection)
    values = {key: label.text() for key, label in dialog.value_labels.items()}
    assert values["admissionNeeded"].startswith(format_bytes(decision.needed_bytes))
    assert f"prefill spike {format_bytes(projection.prefill_spike)}" in values["admissionNeeded"]
    assert f"margin {format_bytes(MARGIN)}" in values["admissionNeeded"]
    assert values["admissionFree"].startswith("6.00 GiB")
    assert values["admissionShortfall"] == format_bytes(decision.shortfall_bytes)
    assert decision.shortfall_bytes == decision.needed_bytes - card.free > 0
    assert values["admissionErrorBar"].startswith(f"± {format_bytes(projection.error_bar_bytes)}")
    share = projection.error_bar_bytes / projection.growth
    assert f"(± {share:.0%} of the turn" in values["admissionErrorBar"]
    assert dialog.windowTitle() == "Not enough memory for this turn"


def test_memory_refusal_offers_its_remedies_and_a_risky_override(qtbot, card):
    decision, projection = refuse_memory(card)
    assert decision.trim_tokens is not None and decision.max_new_tokens_fit is None
    dialog = open_dialog(qtbot, decision, projection)
    assert set(dialog.buttons) == {"trim", "chunked", "override", "cancel"}
    assert dialog.buttons["trim"].text() == (f"Trim older turns (drop at least {decision.trim_tokens:,} tokens)"
                                             f" — needs {format_bytes(decision.facts['trim_needed'])}")
    assert dialog.buttons["chunked"].text() == "Prefill in 1,024-token chunks"
    override = dialog.buttons["override"]
    assert override.text() == "Send anyway" and override.objectName() == "riskyButton"
    assert not override.isDefault() and not override.autoDefault()
    assert "out-of-memory" in override.toolTip()
    assert dialog.buttons["trim"].isDefault()  # Enter picks the safe remedy
    assert "Close other programs" in dialog.findChild(type(dialog.value_labels["admissionFree"]),
                                                      "admissionHint").text()


def test_lower_max_new_tokens_is_offered_when_it_fits(qtbot, card):
    decision, projection = refuse_memory(card, prompt=20_000, new=30_000, chunk=1_024)
    assert decision.max_new_tokens_fit is not None
    dialog = open_dialog(qtbot, decision, projection)
    lower_needed = format_bytes(decision.facts["lower_needed"])
    assert dialog.buttons["lower_max_new_tokens"].text() == (
        f"Lower max new tokens to {decision.max_new_tokens_fit:,} — needs {lower_needed}")
    with qtbot.waitSignal(dialog.remedy_chosen) as blocker:
        qtbot.mouseClick(dialog.buttons["lower_max_new_tokens"], Qt.MouseButton.LeftButton)
    assert blocker.args == ["lower_max_new_tokens"]
    assert dialog.choice() == "lower_max_new_tokens" and dialog.result() == 1


@pytest.mark.parametrize("choice", ["trim", "chunked", "override", "cancel"])
def test_each_button_is_the_choice(qtbot, card, choice):
    decision, projection = refuse_memory(card)
    dialog = open_dialog(qtbot, decision, projection)
    with qtbot.waitSignal(dialog.remedy_chosen) as blocker:
        qtbot.mouseClick(dialog.buttons[choice], Qt.MouseButton.LeftButton)
    assert blocker.args == [choice] and dialog.choice() == choice in CHOICES
    assert not dialog.isVisible()


def test_switching_to_8bit_kv_is_offered_with_its_need(qtbot, card):
    from dataclasses import replace

    decision, projection = refuse_memory(card)
    offered = replace(decision, kv8_needed_bytes=5 * 2**30)
    dialog = open_dialog(qtbot, offered, projection)
    assert list(dialog.buttons)[:3] == ["trim", "kv8", "chunked"]
    assert dialog.buttons["kv8"].text() == "Switch this chat to 8-bit KV cache — needs 5.00 GiB"
    assert "reads the whole history again once" in dialog.buttons["kv8"].toolTip()
    with qtbot.waitSignal(dialog.remedy_chosen) as blocker:
        qtbot.mouseClick(dialog.buttons["kv8"], Qt.MouseButton.LeftButton)
    assert blocker.args == ["kv8"] and dialog.choice() == "kv8" in CHOICES


def test_escape_cancels(qtbot, card):
    decision, projection = refuse_memory(card)
    dialog = open_dialog(qtbot, decision, projection)
    with qtbot.waitSignal(dialog.remedy_chosen) as blocker:
        qtbot.keyClick(dialog, Qt.Key.Key_Escape)
    assert blocker.args == ["cancel"] and dialog.choice() == "cancel"


def test_position_overflow_has_no_override(qtbot, card):
    # C23: 7,900 prompt + 512 new tokens > 8,192 positions: trim 220 or lower to 292
    projection = vram_scene.project(card.allocated, prompt_tokens=7_900, resident_tokens=0,
                                    max_new_tokens=512)
    decision = admit_turn(projection, card.free, MARGIN, 8_192, 7_900, 512, None)
    assert decision.cause == "positions"
    dialog = open_dialog(qtbot, decision, projection)
    assert set(dialog.buttons) == {"trim", "lower_max_new_tokens", "cancel"}
    assert dialog.buttons["trim"].text() == "Trim older turns (drop at least 220 tokens)"
    assert dialog.buttons["lower_max_new_tokens"].text() == "Lower max new tokens to 292"
    values = {key: label.text() for key, label in dialog.value_labels.items()}
    assert values == {"admissionTokens": "7,900 + 512 = 8,412 tokens",
                      "admissionLimit": "8,192 tokens", "admissionShortfall": "220 tokens"}
    assert dialog.windowTitle() == "This turn does not fit the context"


def test_position_overflow_without_a_projection_still_explains(qtbot):
    from app.engine.memory.admission import AdmissionDecision

    decision = AdmissionDecision(False, "positions", "the new message alone needs 9,000 prompt "
                                 "tokens but the budget is 7,000", context_limit=8_192,
                                 trim_tokens=2_000)
    dialog = open_dialog(qtbot, decision)
    assert set(dialog.buttons) == {"trim", "cancel"}
    assert dialog.value_labels["admissionLimit"].text() == "8,192 tokens"
    assert dialog.buttons["trim"].isDefault()


def refused_message(room_for_new_tokens=None):
    from app.engine.memory.admission import AdmissionDecision

    return AdmissionDecision(False, "positions", "too long", context_limit=8_192, reason_kind="message",
                             max_new_tokens_fit=room_for_new_tokens,
                             facts=dict(message=40_020, context=8_192, max_new_tokens=512, summary_reserve=512,
                                        room=7_168, shorten_by=32_852))


def test_a_message_too_long_says_it_can_be_attached_and_offers_to_attach_it(qtbot):
    """New-user trial: ~6,000 pasted Korean words: the dialog said how many tokens to cut and
    offered only Cancel; it now says long text can go in as a file, and "Attach as a file" is the
    choice "attach" (the chat flow acts on it)."""
    dialog = open_dialog(qtbot, refused_message())
    assert list(dialog.buttons) == ["attach", "cancel"]
    assert dialog.buttons["attach"].text() == "Attach as a file" and dialog.buttons["attach"].isDefault()
    hint = dialog.findChild(QLabel, "admissionAttachHint")
    assert hint.text() == ("Long text can go in as an attached file instead: an attached file is searched for the "
                           "passages each question needs, so only those take room in the context.")
    assert dialog.findChild(QLabel, "admissionReason").text().endswith("Shorten it by 32,852 tokens.")
    with qtbot.waitSignal(dialog.remedy_chosen) as blocker:
        qtbot.mouseClick(dialog.buttons["attach"], Qt.MouseButton.LeftButton)
    assert blocker.args == ["attach"] and dialog.choice() == "attach" in CHOICES


def test_attach_as_a_file_follows_a_remedy_that_runs_the_turn_and_not_for_memory(qtbot, card):
    dialog = open_dialog(qtbot, refused_message(room_for_new_tokens=400))
    assert list(dialog.buttons) == ["lower_max_new_tokens", "attach", "cancel"]
    assert dialog.buttons["lower_max_new_tokens"].isDefault() and not dialog.buttons["attach"].isDefault()
    decision, projection = refuse_memory(card)
    memory = open_dialog(qtbot, decision, projection)
    assert "attach" not in memory.buttons and memory.findChild(QLabel, "admissionAttachHint") is None


def test_a_system_prompt_too_long_is_named_and_hi_is_not_offered_as_a_file(qtbot):
    """New-user trial: a 24,000-token system prompt, "hi" sent: the dialog blamed the new message
    and offered only "Attach as a file" (for "hi")."""
    from app.core.history import TokenBudget, WindowResult
    from app.engine.events import window_refusal

    budget = TokenBudget.for_model(8192, 8192, 512, 512)
    window = WindowResult(False, (), (), (), 24_016, budget.prompt_tokens, 0, budget, 24_015, 0)
    dialog = open_dialog(qtbot, window_refusal(window, 512))
    assert list(dialog.buttons) == ["cancel"] and dialog.buttons["cancel"].autoDefault()
    assert dialog.findChild(QLabel, "admissionAttachHint") is None
    assert dialog.findChild(QLabel, "admissionReason").text() == (
        "The system prompt takes 24,015 tokens, but the context of 8,192 tokens minus max new tokens (512) and the "
        "summary reserve (512) leaves 7,168 for it and the new message. Shorten the system prompt "
        "(Edit → Settings → System prompt) by 16,848 tokens.")


def test_a_message_no_shortening_can_fit_is_not_offered_as_a_file(qtbot):
    """New-user trial 11: context 16, the system message 20 of the 6 tokens left, a 31-token question:
    the dialog said "Shorten it by 25 tokens" and offered "Attach as a file" — a question about the
    file would not fit either. It says what can help, and offers no file."""
    from app.core.history import TokenBudget, WindowResult
    from app.engine.events import window_refusal

    budget = TokenBudget(context_tokens=16, max_new_tokens=8, summary_reserve=2)
    window = WindowResult(False, (), (), (), 31, budget.prompt_tokens, 0, budget, 20, 0, 15, 20)
    dialog = open_dialog(qtbot, window_refusal(window, 8))
    assert list(dialog.buttons) == ["cancel"] and dialog.buttons["cancel"].autoDefault()
    assert dialog.findChild(QLabel, "admissionAttachHint") is None
    assert dialog.findChild(QLabel, "admissionReason").text().endswith(
        "leaves 6. Even an empty message needs 20 tokens with the system prompt, so shortening the message cannot "
        "make it fit: use a larger context.")
