"""Help → About Headroom, and the start-up notices: what this machine's GPU, driver and
bitsandbytes mean for Headroom (no GPU, old driver, no 4-bit), explained once in the transcript.

Which notices were already shown is remembered in the window's SessionState, so a later start
stays quiet until the situation changes. Environment facts come from app.engine.loading.environment,
read off the GUI thread (nvidia-smi can take seconds).
"""

from __future__ import annotations

import asyncio
import functools
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Slot
from qasync import asyncSlot

from app.ui.about_dialog import AboutDialog

if TYPE_CHECKING:
    from app.ui.main_window import MainWindow


class HelpController(QObject):
    """Opens `window`'s About dialog (kept as about_dialog) and shows start-up notices. No
    signals."""

    def __init__(self, window: MainWindow):
        super().__init__(window)
        self._window = window
        self.about_dialog: AboutDialog | None = None

    @Slot()
    def _on_about_triggered(self) -> None:
        from app.core.logs import current_log_file
        from app.engine.loading.environment import read_environment

        log_file = current_log_file()
        self.about_dialog = AboutDialog(read_environment(), self._window.report,
                                        log_file.parent if log_file else None, self._window)
        self.about_dialog.open()  # window-modal, never blocks the event loop

    @asyncSlot()
    async def check_environment(self) -> None:
        """Read GPU, driver and bitsandbytes facts off the GUI thread (nvidia-smi can take
        seconds) and explain, once, what will not be used and what still works."""
        from app.engine.loading.environment import read_environment
        from app.engine.loading.startup_notices import startup_notices

        self._window.own_current_task()
        env = await asyncio.get_event_loop().run_in_executor(
            None, functools.partial(read_environment, probe_gpu=True))
        self.show_startup_notices(startup_notices(env, self._window.device_preference))

    def show_startup_notices(self, notices) -> list:
        """Add to the transcript each StartupNotice not shown at an earlier start, and remember
        it in the session file; returns the notices shown now."""
        session = self._window.session
        seen = session.shown_notices()
        fresh = [n for n in notices if n.key not in seen]
        for notice in fresh:
            self._window.chat_view.add_notice(notice.text)
        if fresh:
            session.remember_notices(n.key for n in fresh)
        return fresh
