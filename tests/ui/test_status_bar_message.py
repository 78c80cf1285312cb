"""A temporary status-bar message gets the room it needs (new-user trial 9: at 800 px
"Summary: the model's summary…" showed as "Summary: t" running into "answered by local model"):
the labels on the right step aside for it, "answered by" first and the speed last, and come back
when it goes; one longer than the bar is cut with "…", whole in the tooltip. In English and
Korean, light and dark. Screenshots go to $HEADROOM_SCREENSHOT_DIR (else the test's folder)."""

import pytest
from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QWidget

from app.ui.fonts import install_hangul_fallback
from tests.helpers.palettes import fusion_palette
from tests.ui.test_small_window import shot

SPEED = "TTFT 171 ms · 24.3 tok/s · 19 tokens"
FILE = "a-very-long-file-name-for-an-exported-conversation-about-volcanoes.md"


def status_window(qtbot, make_window, width: int):
    window = make_window()
    window.resize(width, 600)
    qtbot.waitUntil(lambda: window.width() == width, timeout=3000)
    status = window.status
    status.backend_label.setText(QCoreApplication.translate("ModelStatusBar", "answered by local model"))
    status.decode_label.setText("eager decode")
    status.speed_label.setText(SPEED)
    qtbot.wait(50)
    return window, status


def labels(status) -> list[bool]:
    return [not label.isHidden() for label in (status.backend_label, status.decode_label, status.speed_label)]


def painted(status) -> str:
    """The message as Qt paints it (QStatusBar's own, elided or whole)."""
    return super(type(status), status).currentMessage()


def clear_of_the_widgets(status) -> bool:
    """The painted message ends before every shown permanent widget (Qt clips it at the first)."""
    visible = [w for w in status.findChildren(QWidget) if w.parent() is status and w.isVisible()
               and w is not status.model_label]  # the labels, the badge, an undo notice, a load's bar
    right = min(w.geometry().left() for w in visible) if visible else status.width()
    return 6 + status.fontMetrics().horizontalAdvance(painted(status)) <= right - 2


@pytest.mark.parametrize("language", ["en", "ko"])
@pytest.mark.parametrize("palette", ["light", "dark"])
def test_the_labels_step_aside_for_a_message_and_come_back(qapp, qtbot, make_window, request, tmp_path, language,
                                                           palette):
    if language == "ko":
        request.getfixturevalue("korean")
    with fusion_palette(qapp, palette):
        install_hangul_fallback(qapp)
        window, status = status_window(qtbot, make_window, 800)
        assert labels(status) == [True, True, True]
        text = QCoreApplication.translate("Conversations", "Exported to {0}").format(FILE)
        status.showMessage(text, 8000)
        qtbot.wait(50)
        assert painted(status) == text  # whole, no "…"
        assert clear_of_the_widgets(status)
        shown = labels(status)
        assert shown != [True, True, True] and shown == sorted(shown)  # "answered by" first, the speed last
        shot(qtbot, window, tmp_path, f"status-message-{language}-{palette}-800")
        status.clearMessage()
        qtbot.wait(50)
        assert labels(status) == [True, True, True]  # back where they were


def test_a_short_message_leaves_the_labels_alone(qtbot, make_window):
    window, status = status_window(qtbot, make_window, 1100)
    places = [label.geometry() for label in (status.backend_label, status.decode_label, status.speed_label)]
    status.showMessage("Copied the last answer.", 8000)
    qtbot.wait(50)
    assert painted(status) == "Copied the last answer." and labels(status) == [True, True, True]
    assert [label.geometry() for label in (status.backend_label, status.decode_label, status.speed_label)] == places


def test_for_a_shorter_message_only_the_least_useful_steps_aside_and_the_rest_keep_their_places(qtbot, make_window,
                                                                                            tmp_path):
    window, status = status_window(qtbot, make_window, 900)
    places = [label.geometry() for label in (status.decode_label, status.speed_label)]
    text = "Summary: history 1,250 → 310 tokens"
    status.showMessage(text, 8000)
    qtbot.wait(50)
    assert painted(status) == text and clear_of_the_widgets(status)
    assert labels(status) == [False, True, True]  # "answered by local model" only
    assert [label.geometry() for label in (status.decode_label, status.speed_label)] == places
    shot(qtbot, window, tmp_path, "status-message-en-900-partial")


def test_a_label_set_while_a_message_shows_waits_for_it_to_go(qtbot, make_window):
    """The answer's speed arrives while a long message shows: it does not cover the message."""
    window, status = status_window(qtbot, make_window, 800)
    status.speed_label.setText("")
    qtbot.wait(50)
    text = "Exported to " + FILE
    status.showMessage(text, 8000)
    qtbot.wait(50)
    status.speed_label.setText(SPEED)
    qtbot.wait(50)
    assert painted(status) == text and clear_of_the_widgets(status)
    status.clearMessage()
    qtbot.wait(50)
    assert labels(status) == [True, True, True]


@pytest.mark.parametrize("language", ["en", "ko"])
def test_a_message_longer_than_the_bar_is_cut_with_its_whole_text_in_the_tooltip(qapp, qtbot, make_window, request,
                                                                                 tmp_path, language):
    if language == "ko":
        request.getfixturevalue("korean")
    install_hangul_fallback(qapp)
    window, status = status_window(qtbot, make_window, 640)
    text = QCoreApplication.translate("Conversations", "Exported to {0}").format(FILE * 3)
    status.showMessage(text, 8000)
    qtbot.wait(50)
    assert labels(status) == [False, False, False]
    assert painted(status).endswith("…") and len(painted(status)) > 40  # most of it, not a sliver
    assert clear_of_the_widgets(status)
    assert status.currentMessage() == text and status.toolTip() == text
    shot(qtbot, window, tmp_path, f"status-message-cut-{language}-640")
    status.clearMessage()
    qtbot.wait(50)
    assert status.toolTip() == "" and not status.speed_label.isHidden()


@pytest.mark.parametrize("language", ["en", "ko"])
@pytest.mark.parametrize("palette", ["light", "dark"])
def test_a_summary_verdict_that_matters_reads_in_full_in_the_transcript(qapp, qtbot, make_fake_window, request,
                                                                        tmp_path, language, palette):
    """Trial 9: the summary's verdict was said only in the status bar, cut to "Summary: t".
    That the model's summary was not used is a transcript line, wrapped to its width."""
    from app.core.history import SummaryState
    from app.ui.notice import Notice
    from tests.ui.test_small_window import cut_off, open_trial_chat

    if language == "ko":
        request.getfixturevalue("korean")
    with fusion_palette(qapp, palette):
        install_hangul_fallback(qapp)
        window = open_trial_chat(qtbot, make_fake_window, tmp_path)
        window.resize(800, 600)
        qtbot.waitUntil(lambda: window.width() == 800, timeout=3000)
        window.chat.summaries.expect(99)  # a summary asked for the chat shown
        window.chat.worker.summary_finished.emit(99, SummaryState("The user asked for a poem.", 1, 12), (
            "model summary rejected (the model repeated the conversation instead of summarizing it (4 of 4 lines)); "
            "kept the first and last 2 of 5 messages: history 1250 → 310 tokens"))
        said = QCoreApplication.translate("Summary", "Summary: {0}").format(QCoreApplication.translate(
            "PlainError", "the model's summary was not usable; kept what the first and last {0} of {1} messages said "
            "(history {2} → {3} tokens)").format("2", "5", "1250", "310"))
        view = window.chat_view
        qtbot.wait(50)
        qtbot.waitUntil(lambda: view.verticalScrollBar().value() == view.verticalScrollBar().maximum(), timeout=3000)
        notices = [n for n in view.widget().findChildren(Notice) if n.isVisible()]
        assert said in [n.text() for n in notices]
        qtbot.waitUntil(lambda: cut_off(view) == [], timeout=3000)  # once the new summary block is laid out
        shot(qtbot, window, tmp_path, f"summary-verdict-{language}-{palette}-800")
