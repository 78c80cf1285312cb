"""Counts read in their number: "1 token", "2 tokens", "1,200 tokens" in English (the singular
forms come from headroom_en.ts, the sources being written in the plural); Korean, which has no
plural, keeps one wording ("1 토큰", "2 토큰"). Spin box suffixes follow the value as it changes.
The chat's own counted texts (presets, turns, refusals, attachments) are tested in
tests/chat/test_counted_words.py."""

from types import SimpleNamespace

import pytest
from PySide6.QtCore import Qt

from app.core.conversation import ReplyStats, Role
from app.core.settings import GenerationSettings
from app.ui.context_choice import ContextChoice
from app.ui.document_chips import document_extent
from app.ui.message_bubble import MAX_SHOWN_CHARS, MessageBubble
from app.ui.reply_stats_text import stats_line, stats_tooltip
from app.ui.settings_dialog import SettingsDialog
from app.ui.status_bar import ModelStatusBar
from app.ui.summary_block import SummaryBlock
from app.ui.token_meter import TokenMeter


def _stats(new_tokens: int, prompt_tokens: int = 12, continued_tokens: int = 0) -> ReplyStats:
    return ReplyStats(prompt_tokens, prompt_tokens, 0, new_tokens, 0.25, 10.0, continued_tokens=continued_tokens)


def test_an_answer_of_one_token_says_token(qapp):
    assert stats_line(_stats(1)) == "1 token · TTFT 250 ms · 10.0 tok/s"
    assert stats_line(_stats(2)) == "2 tokens · TTFT 250 ms · 10.0 tok/s"
    assert stats_line(_stats(1200)).startswith("1,200 tokens · ")
    assert stats_line(_stats(41, continued_tokens=1)).startswith("41 tokens · last part: 1 token, TTFT 250 ms")
    assert stats_tooltip(_stats(1, prompt_tokens=1)).splitlines()[:2] == [
        "Prompt: 1 token (1 prefilled, 0 reused from the KV cache)", "Answer: 1 new token"]
    assert stats_tooltip(_stats(2, prompt_tokens=1_200)).splitlines()[:2] == [
        "Prompt: 1,200 tokens (1,200 prefilled, 0 reused from the KV cache)", "Answer: 2 new tokens"]


def test_an_answer_of_one_token_in_korean(korean):
    assert stats_line(_stats(1)).startswith("1 토큰 · TTFT")
    assert stats_line(_stats(2)).startswith("2 토큰 · TTFT")
    assert stats_line(_stats(1200)).startswith("1,200 토큰 · TTFT")
    assert stats_tooltip(_stats(1)).splitlines()[1] == "답변: 새 토큰 1개"


def test_the_settings_spin_boxes_say_token_or_tokens_as_the_value_changes(qtbot):
    dialog = SettingsDialog(GenerationSettings(max_new_tokens=1, summary_keep_turns=1))
    qtbot.addWidget(dialog)
    assert (dialog.max_new_tokens.text(), dialog.summary_keep_turns.text()) == ("1 token", "1 newest turn")
    dialog.max_new_tokens.setValue(2)
    dialog.summary_keep_turns.setValue(2)
    assert (dialog.max_new_tokens.text(), dialog.summary_keep_turns.text()) == ("2 tokens", "2 newest turns")
    dialog.context_tokens.setValue(1)
    assert dialog.context_tokens.text() == "1 token"
    dialog.context_tokens.setValue(0)
    assert dialog.context_tokens.text() == "auto (the largest that fits)"


def test_typing_a_count_keeps_the_cursor_where_the_digits_go(qtbot):
    """The suffix is rewritten only when its word changes ("1 token" → "10 tokens"): the typed
    digits land in order and the value is what was typed."""
    dialog = SettingsDialog(GenerationSettings(max_new_tokens=512))
    qtbot.addWidget(dialog)
    box = dialog.max_new_tokens
    box.setFocus()
    box.selectAll()
    qtbot.keyClicks(box, "1")
    assert (box.value(), box.text()) == (1, "1 token")
    qtbot.keyClicks(box, "024")
    assert (box.value(), box.text()) == (1024, "1024 tokens")
    qtbot.keyClick(box, Qt.Key.Key_Up)
    assert box.text() == "1,025 tokens"  # stepped: grouped as the window's counts are


def test_the_settings_spin_boxes_in_korean(korean, qtbot):
    dialog = SettingsDialog(GenerationSettings(max_new_tokens=1, summary_keep_turns=1))
    qtbot.addWidget(dialog)
    assert (dialog.max_new_tokens.text(), dialog.summary_keep_turns.text()) == ("1 토큰", "1 개의 최신 턴")
    dialog.max_new_tokens.setValue(2)
    assert dialog.max_new_tokens.text() == "2 토큰"


def test_the_context_choice_follows_a_value_set_with_its_signals_blocked(qtbot):
    choice = ContextChoice()
    qtbot.addWidget(choice)
    choice.show_model(1_200, 4_096, 0)
    assert (choice.auto.text(), choice.tokens.text()) == ("Auto: fits 1,200 tokens", "1,200 tokens")
    choice.show_model(1, 1, 1)  # a one-token model: only to reach the singular
    assert (choice.auto.text(), choice.tokens.text()) == ("Auto: fits 1 token", "1 token")
    assert choice.note.text().startswith("Trained for 1 token.")


@pytest.mark.parametrize(("used", "budget", "text", "tip"), [
    (999, 1_000, None, "1 token left: the oldest turns"),
    (998, 1_000, None, "2 tokens left: the oldest turns"),
    (1, 0, "1 token: no room left beside max new tokens", None),
    (1_200, 0, "1,200 tokens: no room left beside max new tokens", None),
])
def test_the_token_meter_counts_in_its_number(qtbot, used, budget, text, tip):
    meter = TokenMeter()
    qtbot.addWidget(meter)
    meter.set_counts(used, budget, 1, 0)
    if text is not None:
        assert meter.text().startswith(text + " · 1 turn in window")
    if tip is not None:
        assert tip in meter.toolTip()


def test_the_token_meter_in_korean(korean, qtbot):
    meter = TokenMeter()
    qtbot.addWidget(meter)
    meter.set_counts(999, 1_000, 1, 0)
    assert "1 토큰 남음" in meter.toolTip()



def _extent(characters: int) -> str:
    return document_extent(SimpleNamespace(pages=1, text="x" * characters))


def test_a_document_chip_counts_its_characters(qapp):
    assert [_extent(n) for n in (1, 2, 1_200)] == ["1 character", "2 characters", "1,200 characters"]


def test_a_document_chip_counts_its_characters_in_korean(korean):
    assert [_extent(n) for n in (1, 1_200)] == ["1자", "1,200자"]


@pytest.mark.parametrize(("turns", "tokens", "meta"), [
    (1, 1, "1 turn folded in · 1 token"),
    (2, 2, "2 turns folded in · 2 tokens"),
    (1_200, 1_200, "1,200 turns folded in · 1,200 tokens"),
])
def test_the_summary_block_counts_turns_and_tokens(qtbot, turns, tokens, meta):
    block = SummaryBlock()
    qtbot.addWidget(block)
    block.set_summary("The user asked about KV caches.", turns, tokens, 0)  # no cap: the tokens alone
    assert block.meta_label.text() == meta


def test_the_summary_block_in_korean(korean, qtbot):
    block = SummaryBlock()
    qtbot.addWidget(block)
    block.set_summary("KV 캐시에 대해 물었습니다.", 1, 1_200, 0)
    assert block.meta_label.text() == "턴 1개 접힘 · 1,200 토큰"


@pytest.mark.parametrize(("tokens", "count"), [(1, "1 token"), (2, "2 tokens"), (1_200, "1,200 tokens")])
def test_the_status_bar_counts_the_answers_tokens(qtbot, tokens, count):
    status = ModelStatusBar()
    qtbot.addWidget(status)
    status.show_speed(0.25, 10.0, tokens)
    assert status.speed_label.text() == "TTFT 250 ms · 10.0 tok/s · " + count


def test_the_status_bar_counts_in_korean(korean, qtbot):
    status = ModelStatusBar()
    qtbot.addWidget(status)
    status.show_speed(0.25, 10.0, 1_200)
    assert status.speed_label.text().endswith("초당 10.0 토큰 · 1,200 토큰")


@pytest.mark.parametrize(("hidden", "note"), [
    (1, "… 1 more character not shown here"),
    (2, "… 2 more characters not shown here"),
    (1_200, "… 1,200 more characters not shown here"),
])
def test_a_long_message_counts_the_characters_it_does_not_show(qtbot, hidden, note):
    bubble = MessageBubble(Role.USER, "word " * (MAX_SHOWN_CHARS // 5) + "x" * hidden)
    qtbot.addWidget(bubble)
    assert bubble.shown_text().endswith(note + " (the whole message is kept and sent)")


def test_a_long_message_counts_in_korean(korean, qtbot):
    bubble = MessageBubble(Role.USER, "word " * (MAX_SHOWN_CHARS // 5) + "x" * 1_200)
    qtbot.addWidget(bubble)
    assert bubble.shown_text().endswith("… 여기에 표시하지 않은 글자 1,200자 (메시지 전체는 보존되고 전송됩니다)")


def test_a_long_answer_says_it_is_kept_not_that_it_was_sent(qtbot):
    """Trial 6: a long answer said "the whole message is kept and sent" under it."""
    bubble = MessageBubble(Role.ASSISTANT, "word " * (MAX_SHOWN_CHARS // 5) + "x" * 1_200)
    qtbot.addWidget(bubble)
    assert bubble.shown_text().endswith(
        "… 1,200 more characters not shown here (the whole answer is kept: Copy and Export take all of it)")
