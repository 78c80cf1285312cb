""""Summarize now" shows its progress where the user is looking (product trial: in a long chat
the progress was at the top of the transcript, out of view): in the chat bar above the composer,
beside the button that asked for it, with Stop."""

import pytest
from PySide6.QtCore import QRect, Qt

from app.core.conversation import Message, Role
from app.core.store import Store


def long_chat(store_path, turns=30) -> int:
    with Store(store_path) as store:
        cid = store.create_conversation("A long chat")
        for i in range(turns):
            store.append_message(cid, Message(Role.USER, f"Question {i}: what about step {i}?"))
            store.append_message(cid, Message(Role.ASSISTANT, f"Answer {i}. " + "More detail here. " * 12))
    return cid


def in_view(window, widget) -> bool:
    """Whether `widget` is shown and lies wholly inside the window (not scrolled away, not clipped)."""
    if not widget.isVisible():
        return False
    top_left = widget.mapTo(window, widget.rect().topLeft())
    return window.rect().contains(QRect(top_left, widget.size()))


def test_summary_progress_is_in_view_in_a_long_chat_and_stop_stops_it(qtbot, make_window, tmp_path, monkeypatch):
    db = tmp_path / "long.sqlite3"
    cid = long_chat(db)
    window = make_window(store_path=db)
    window.resize(900, 640)
    window.sidebar.open_requested.emit(cid)
    view = window.chat_view
    qtbot.waitUntil(lambda: view.verticalScrollBar().value() == view.verticalScrollBar().maximum() > 0, timeout=5000)
    bar = window.chat_bar
    assert not bar.summary_busy.isVisible() and bar.summarize_button.isVisible()

    window.chat.summarizing_changed.emit(True)  # the worker started writing the summary
    qtbot.wait(50)
    block = view.summary_block  # where the summary lands: at the top, scrolled out of view
    block_top = block.mapTo(view.viewport(), block.rect().topLeft())
    assert block_top.y() + block.height() < 0
    for widget in (bar.summary_busy, bar.summary_busy_label, bar.summary_stop_button):
        assert in_view(window, widget), widget.objectName()
    assert bar.summary_busy_label.text() == "Summarizing earlier turns…"
    assert not bar.summarize_button.isVisible()

    stops = []
    monkeypatch.setattr(window.chat.worker, "request_stop", lambda: stops.append(1))
    qtbot.mouseClick(bar.summary_stop_button, Qt.MouseButton.LeftButton)
    assert stops == [1]
    window.chat.summarizing_changed.emit(False)
    assert bar.summarize_button.isVisible() and not bar.summary_busy.isVisible()
    assert not bar.summary_stop_button.isVisible()


class Clock:
    """QElapsedTimer's part the chat bar reads, at a fixed time (milliseconds)."""

    def __init__(self, elapsed_ms: int):
        self.elapsed_ms = elapsed_ms

    def start(self) -> None:
        pass

    def elapsed(self) -> int:
        return self.elapsed_ms


def test_the_summary_progress_counts_the_seconds_while_it_is_written(qtbot, make_window):
    """Trial 5: on the CPU a summary took 65–120 s with nothing moving but the busy bar."""
    bar = make_window().chat_bar
    label = bar.summary_busy_label
    bar.set_summarizing(True)
    assert label.text() == "Summarizing earlier turns…"
    qtbot.waitUntil(lambda: label.text() == "Summarizing earlier turns… 1 s", timeout=3000)  # ticking
    bar.set_summarizing(False)
    assert bar.summary_seconds() == 0 and not label.isVisible()
    bar.set_summarizing(True)  # the next summary counts from 0 again
    assert label.text() == "Summarizing earlier turns…"
    bar._summary_clock = Clock(65_400)
    bar._show_summary_seconds()
    assert label.text() == "Summarizing earlier turns… 1 min 5 s" and bar.summary_seconds() == 65
    bar.set_summarizing(False)


@pytest.mark.parametrize("palette", ["light", "dark"])
def test_in_korean_the_summary_progress_counts_in_korean(qtbot, qapp, make_window, korean, palette, tmp_path):
    import os
    from pathlib import Path

    from app.ui.fonts import install_hangul_fallback
    from tests.helpers.palettes import fusion_palette

    install_hangul_fallback(qapp)
    with fusion_palette(qapp, palette):
        window = make_window()
        window.resize(900, 640)
        bar = window.chat_bar
        bar.set_summarizing(True)
        bar._summary_clock = Clock(65_000)
        bar._show_summary_seconds()
        assert bar.summary_busy_label.text() == "이전 턴을 요약하는 중… 1분 5초"
        qtbot.wait(50)
        folder = Path(os.environ.get("HEADROOM_SCREENSHOT_DIR") or tmp_path)
        bar.grab().save(str(folder / f"ko-summary-progress-{palette}.png"))
        bar.set_summarizing(False)


@pytest.mark.parametrize("language", ["en", "ko"])
@pytest.mark.parametrize("palette", ["light", "dark"])
def test_the_notes_button_stays_put_while_the_seconds_count(qtbot, qapp, make_window, request, language, palette,
                                                            tmp_path):
    """A trial: "이전 턴을 요약하는 중… 1분 5초" grew with each digit and pushed Notes to the left.
    The progress text has the width of the longest it shows, so nothing beside it moves."""
    import os
    from pathlib import Path

    from app.ui.fonts import install_hangul_fallback
    from tests.helpers.palettes import fusion_palette

    if language == "ko":
        request.getfixturevalue("korean")
    install_hangul_fallback(qapp)
    with fusion_palette(qapp, palette):
        window = make_window()
        window.resize(1280, 720)  # a first start's window on a small laptop screen
        bar = window.chat_bar
        bar.set_summarizing(True)
        folder = Path(os.environ.get("HEADROOM_SCREENSHOT_DIR") or tmp_path)
        places = {}
        for seconds in (0, 2, 65, 9 * 60 + 58):
            bar._summary_clock = Clock(seconds * 1000 + 400)
            bar._show_summary_seconds()
            qtbot.wait(20)
            label = bar.summary_busy_label
            assert label.fontMetrics().horizontalAdvance(label.text()) <= label.contentsRect().width()  # not cut
            places[seconds] = (bar.notes_button.x(), label.x(), bar.summary_stop_button.x())
            if seconds in (2, 65):
                bar.grab().save(str(folder / f"{language}-summary-clock-{seconds}s-{palette}.png"))
        assert len(set(places.values())) == 1, places
        assert ("1분 5초" if language == "ko" else "1 min 5 s") in bar._summary_text(65)
        bar.set_summarizing(False)


def test_summarize_now_is_usable_only_when_a_turn_can_be_folded(qtbot, make_fake_window, tmp_path):
    """Trial 8: "Summarize now" was enabled in an empty chat. It is disabled, with a tooltip that
    says why, until a turn older than the last `summary_keep_turns` (2) is not yet in the
    summary; again once the summary holds all of them; and in a new chat."""
    from app.core.history import SummaryState
    from tests.ui.test_chat_switch_states import answered, shot

    window = make_fake_window()
    window.resize(1000, 640)
    button = window.chat_bar.summarize_button
    assert not button.isEnabled()
    assert button.toolTip() == "Nothing to summarize yet: the last 2 turns always stay as they are " \
                               "(Settings: keep the last turns verbatim)"
    shot(qtbot, window, tmp_path, "summarize-now-empty-chat")
    answered(qtbot, window, "First question")
    answered(qtbot, window, "Second question")
    assert not button.isEnabled()  # the last two always stay
    cid, rid = answered(qtbot, window, "Third question")
    assert button.isEnabled() and button.toolTip().startswith("Fold the older turns into the summary now")

    window.chat.worker.summary_finished.emit(rid, SummaryState("The first question.", 1, 5), "kept 5 tokens")
    assert not button.isEnabled()  # the first turn is folded already; the other two stay
    assert button.toolTip() == "The turns before the last 2 are already in the summary"
    window.new_chat_action.trigger()
    assert not button.isEnabled() and button.toolTip().startswith("Nothing to summarize yet")
    window.sidebar.open_requested.emit(cid)
    assert not button.isEnabled()  # reopened: still all folded
    window.composer.set_can_send(True)  # a stored chat's backend is applied: no model in the fake, so not
    answered(qtbot, window, "Fourth question")
    assert button.isEnabled()  # the second turn can be folded now
    window.chat_bar.set_foldable(0, 0, 1)  # Settings: keep 1 turn verbatim
    assert button.toolTip() == ("Nothing to summarize yet: the last turn always stays as it is "
                                "(Settings: keep the last turns verbatim)")


def test_summarize_now_waits_disabled_while_an_answer_is_written(qtbot, make_fake_window):
    """Trial 10: mid-answer "Summarize now" looked usable and, clicked, only said in the status
    bar to wait. It is disabled with that reason as its tooltip, like the Edit buttons, and usable
    again when the turn ends."""
    from tests.chat.conftest import finished, record
    from tests.ui.test_chat_switch_states import answered, send

    window = make_fake_window()
    button = window.chat_bar.summarize_button
    for question in ("First question", "Second question", "Third question"):
        answered(qtbot, window, question)
    assert button.isEnabled()  # the first turn can be folded
    rid = send(qtbot, window, "Fourth question")
    assert not button.isEnabled()
    assert button.toolTip() == "Wait for the reply to end before summarizing"
    window.chat.worker.token_streamed.emit(rid, "Sure.")
    assert not button.isEnabled()
    window.chat.worker.reply_finished.emit(rid, finished("Sure."), record())
    qtbot.waitUntil(button.isEnabled, timeout=2000)
    assert button.toolTip().startswith("Fold the older turns into the summary now")
