"""Render the README screenshot: the real window, offscreen, answering a real question.

    QT_QPA_PLATFORM=offscreen python -m tests.helpers.screenshot resources/screenshot.png
"""

import asyncio
import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
from qasync import QEventLoop

from app.core.settings import GenerationSettings, Settings
from app.ui.application import create_window, load_stylesheet

QUESTIONS = ["What is the capital of France?", "Write a Python function that adds two numbers."]


def main(out: str) -> int:
    app = QApplication(sys.argv)
    app.setStyleSheet(load_stylesheet())
    loop = QEventLoop(app)
    asyncio.set_event_loop(loop)
    import tempfile
    from pathlib import Path

    from app.core.store import Store

    store = Store(Path(tempfile.mkdtemp()) / "screenshot.sqlite3")
    window = create_window(Settings(GenerationSettings(max_new_tokens=200, temperature=0.0)), store=store)
    window.resize(1480, 820)
    window.show()
    pending = list(QUESTIONS)

    def ask_next(*_):
        if not pending:
            QTimer.singleShot(300, lambda: (window.grab().save(out), app.quit()))
            return
        window.composer.editor.setPlainText(pending.pop(0))
        window.composer.send_button.click()

    window.model_ready.connect(ask_next)
    window.turn_finished.connect(ask_next)
    QTimer.singleShot(600_000, app.quit)  # never hang a script
    with loop:
        loop.run_forever()
    window.close()
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "resources/screenshot.png"))
