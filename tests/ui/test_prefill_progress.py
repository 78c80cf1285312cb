"""A long prompt's prefill shows its progress in the answer bubble (product trial: a 5,200-token
file showed only "…" for 2.5 minutes before the first token), and durations read as a person
would say them (the status bar wrote "TTFT 146550 ms")."""

import os
from pathlib import Path

import pytest

from app.core.conversation import Message, MessageStatus, Role
from app.ui.chat_view import ChatView
from app.ui.duration_text import duration_text
from app.ui.fonts import install_hangul_fallback
from tests.helpers.palettes import fusion_palette


def test_the_bubble_reads_the_prompt_then_shows_the_answer(qtbot, make_window):
    window = make_window()
    chat, view = window.chat, window.chat_view
    chat.reply_started.emit(False)
    [answer] = view.bubbles()
    assert answer.shown_text() == "…"  # nothing reported yet
    chat.reply_prefill_progressed.emit(1200, 5200)
    assert answer.shown_text() == "Reading the prompt… 1,200 / 5,200 tokens"
    chat.reply_prefill_progressed.emit(4800, 5200)
    assert answer.shown_text() == "Reading the prompt… 4,800 / 5,200 tokens"
    chat.reply_streamed.emit("The file ")
    view.flush()  # the next frame
    assert answer.shown_text() == "The file"  # the progress went with the first text
    chat.reply_ended.emit(MessageStatus.COMPLETE, "")
    assert answer.shown_text() == "The file"


def test_stop_while_the_prompt_is_read_leaves_no_progress(qtbot):
    view = ChatView()
    qtbot.addWidget(view)
    view.begin_stream()
    view.show_prefill_progress(300, 5200)
    view.end_stream(MessageStatus.STOPPED, "stopped")
    [answer] = view.bubbles()
    assert answer.shown_text() == "(no text)"
    view.continue_stream()  # Continue: the old progress does not come back
    assert "Reading" not in answer.shown_text()
    view.show_prefill_progress(0, 10)  # after the stream ended: nowhere to show it
    view.end_stream()
    view.show_prefill_progress(5, 10)
    assert "Reading" not in answer.shown_text()


@pytest.mark.parametrize("palette_name", ["light", "dark"])
@pytest.mark.parametrize("language", ["en", "ko"])
def test_the_progress_reads_in_both_palettes_and_in_korean(qtbot, qapp, request, tmp_path, palette_name, language):
    if language == "ko":
        request.getfixturevalue("korean")
    with fusion_palette(qapp, palette_name):
        install_hangul_fallback(qapp)
        view = ChatView()
        qtbot.addWidget(view)
        view.resize(560, 220)
        view.load_messages([Message(Role.USER, "Summarize the attached file." if language == "en"
                                    else "첨부한 파일을 요약해 주세요.")])
        view.begin_stream()
        view.show_prefill_progress(1200, 5200)
        view.show()
        qtbot.waitExposed(view)
        qtbot.wait(50)
        note = view.bubbles()[1].shown_text()
        assert note == ("Reading the prompt… 1,200 / 5,200 tokens" if language == "en"
                        else "프롬프트 읽는 중… 1,200 / 5,200 토큰")
        folder = Path(os.environ.get("HEADROOM_SCREENSHOT_DIR") or tmp_path)
        view.grab().save(str(folder / f"{language}-prefill-progress-{palette_name}.png"))


@pytest.mark.parametrize("seconds, text", [
    (0.0, "0 ms"), (0.25, "250 ms"), (9.85, "9,850 ms"), (9.9996, "10.0 s"), (12.34, "12.3 s"),
    (119.9, "119.9 s"), (119.96, "2 min 0 s"), (146.55, "2 min 27 s"), (3725.0, "62 min 5 s"), (-1.0, "0 ms")])
def test_durations_read_in_ms_then_seconds_then_minutes(seconds, text):
    assert duration_text(seconds) == text


def test_durations_in_korean(korean):
    assert [duration_text(s) for s in (0.85, 12.34, 146.55)] == ["850 ms", "12.3초", "2분 27초"]


def test_the_status_bar_and_the_stats_line_write_a_long_ttft_in_minutes(make_window):
    from app.core.conversation import ReplyStats
    from app.ui.reply_stats_text import stats_line, stats_tooltip

    window = make_window()
    window.status.show_speed(146.55, 9.96, 120)
    assert window.status.speed_label.text() == "TTFT 2 min 27 s · 10.0 tok/s · 120 tokens"
    window.status.show_speed(1.5, 10.0, 1)
    assert window.status.speed_label.text() == "TTFT 1,500 ms · 10.0 tok/s · 1 token"
    stats = ReplyStats(5200, 5200, 0, 120, 146.55, 9.96)
    assert stats_line(stats) == "120 tokens · TTFT 2 min 27 s · 10.0 tok/s"
    assert "Time to first token: 2 min 27 s" in stats_tooltip(stats).splitlines()
