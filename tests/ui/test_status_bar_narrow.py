"""At the window's narrowest, the status bar keeps the model's name readable: the labels on the
right (which backend answered, the decode path, the last speed) elide and then step aside, in that
order, and the memory badge stays inside the window (new-user
trial: at 640 px the model label was a one-pixel sliver while "answered by local model" and
"eager decode" stayed whole)."""

from PySide6.QtWidgets import QApplication

from app.ui.main_window import MINIMUM_SIZE
from app.ui.status_bar import MODEL_MIN_WIDTH

MODEL = "SmolLM2-135M-Instruct · cpu · sdpa · none · float32 · 256.6 MiB weights"


def test_at_the_narrowest_the_model_label_keeps_its_room_and_the_others_elide(qtbot, make_window):
    window = make_window()
    status = window.status
    status.model_label.setText(MODEL)
    status.backend_label.setText("answered by local model")
    status.decode_label.setText("eager decode")
    status.show_speed(0.25, 41.5, 120)
    window.resize(*MINIMUM_SIZE)
    QApplication.processEvents()
    qtbot.wait(50)
    assert window.width() == MINIMUM_SIZE[0] and status.width() <= window.width()
    assert status.model_label.width() >= MODEL_MIN_WIDTH
    assert len(status.model_label.shown_text()) >= 20
    badge = window.headroom_badge  # the memory badge, rightmost, is never pushed past the edge
    assert badge.isVisible() and badge.geometry().right() < status.width()
    shown = [not label.isHidden() for label in (status.backend_label, status.decode_label, status.speed_label)]
    assert shown != [True, True, True] and shown == sorted(shown)  # "answered by" goes first, the speed last
    for label in (status.backend_label, status.decode_label, status.speed_label):
        if not label.isHidden() and label.shown_text() != label.text():
            assert label.shown_text().endswith("…") and label.text() in label.toolTip()
    window.resize(1400, 700)
    qtbot.wait(50)
    assert status.model_label.shown_text() == MODEL  # wide again: everything whole
    assert status.backend_label.shown_text() == "answered by local model" and not status.backend_label.isHidden()
    assert not status.decode_label.isHidden() and not status.speed_label.isHidden()
