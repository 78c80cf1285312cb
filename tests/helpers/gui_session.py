"""Drive the real start-up path (app.main → run_gui) offscreen and report what happened, as JSON
on stdout.

    QT_QPA_PLATFORM=offscreen python -m tests.helpers.gui_session appear [--model PATH]
        → the time from calling run_gui to the window's Show event, first paint, loading
          progress shown and model ready; quits 1.5 s after the model is ready (or the paint)
    QT_QPA_PLATFORM=offscreen python -m tests.helpers.gui_session close-mid-stream --model DIR
        → once the model is ready, sends a long question and closes the window mid-reply
    QT_QPA_PLATFORM=offscreen python -m tests.helpers.gui_session quit-mid-stream --model DIR
        → the same, but quits as a person does: File → Quit, then Quit in the question it asks

Both print {"exit_code": …, "shown_s": …, "painted_s": …, "progress_s": …, "model_ready_s": …, …}
and exit with main's code. Times are
seconds from the call of run_gui (after the imports and the logging set-up); "imports_s" is the
time before it, from this script's start (Python itself not counted).
Point HEADROOM_CONFIG_DIR / HEADROOM_DATA_DIR / HEADROOM_LOG_DIR at temporary folders first.
"""

import time

STARTED = time.perf_counter()  # before the app (and torch) is imported

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QEvent, QObject, QTimer  # noqa: E402

from app import main as app_main  # noqa: E402
from app.ui import application  # noqa: E402
from app.ui.notice import Notice  # noqa: E402

QUESTION = "Tell me a very long story about a dragon and a knight."


class _Watcher(QObject):
    """Times the window's first Show and Paint events, relative to `t0` (seconds)."""

    def __init__(self, t0: float, result: dict):
        super().__init__()
        self.t0, self.result = t0, result

    def eventFilter(self, obj, event):  # noqa: N802 (Qt override)
        kind = event.type()
        if kind == QEvent.Type.Show and "shown_s" not in self.result:
            self.result["shown_s"] = time.perf_counter() - self.t0
        elif kind == QEvent.Type.Paint and "painted_s" not in self.result:
            self.result["painted_s"] = time.perf_counter() - self.t0
        return False


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["appear", "close-mid-stream", "quit-mid-stream"])
    parser.add_argument("--model", type=Path)
    parser.add_argument("--min-chars", type=int, default=40, help="partial answer length before closing")
    opts = parser.parse_args(argv)
    result: dict = {}
    make_window, run_gui = application.create_window, application.run_gui

    def create_window(*args, **kwargs):
        window = make_window(*args, **kwargs)
        window.installEventFilter(watcher)
        _poll_progress(window, watcher, result)
        window.model_ready.connect(
            lambda _report: result.setdefault("model_ready_s", time.perf_counter() - watcher.t0))
        if opts.mode == "appear" and opts.model:
            window.model_ready.connect(lambda _report: QTimer.singleShot(1500, window.close))
        elif opts.mode == "appear":  # the default model path; it may not be installed here
            QTimer.singleShot(1500, window.close)
        else:
            window.model_ready.connect(lambda _report: _ask_then_close(window, opts.min_chars, result,
                                                                       opts.mode == "quit-mid-stream"))
        result["window"] = window  # removed before printing
        return window

    def timed_run_gui(*args, **kwargs):
        watcher.t0 = time.perf_counter()
        result["imports_s"] = watcher.t0 - STARTED
        return run_gui(*args, **kwargs)

    watcher = _Watcher(0.0, result)
    application.create_window, application.run_gui = create_window, timed_run_gui
    code = app_main.main(["--model", str(opts.model)] if opts.model else [])
    window = result.pop("window")
    result["exit_code"] = code
    result["notices"] = [n.text() for n in window.chat_view.findChildren(Notice)]
    result["worker_thread_finished"] = window.chat.thread.isFinished()
    print(json.dumps(result))
    return code


def _poll_progress(window, watcher: _Watcher, result: dict) -> None:
    """Record when the loading progress bar is first visible (every 10 ms until it is)."""
    if window.status.progress.isVisible():
        result["progress_s"] = time.perf_counter() - watcher.t0
    else:
        QTimer.singleShot(10, window, lambda: _poll_progress(window, watcher, result))


def _ask_then_close(window, min_chars: int, result: dict, through_quit: bool = False) -> None:
    """Send QUESTION; once `min_chars` of the answer are written, close the window (through_quit:
    File → Quit, and Quit in the question it asks while an answer is written)."""
    if result.get("asked"):
        return
    result["asked"] = True
    window.composer.editor.setPlainText(QUESTION)
    window.composer.send_requested.emit(QUESTION)

    def poll():
        if len(window.chat.conversation.messages[-1].content) >= min_chars:
            result["partial_at_close"] = window.chat.conversation.messages[-1].content
            if through_quit:
                window.menus.quit.trigger()  # asks first: an answer is being written
                result["asked_before_quitting"] = window.quit_question is not None
                window.quit_question.quit_confirmed.emit()
            else:
                window.close()
        else:
            QTimer.singleShot(20, poll)

    poll()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
