"""Help → About Headroom, and the start-up notices: what this machine's GPU, driver and
bitsandbytes mean for Headroom (no GPU, old driver, no 4-bit), explained once in the transcript.

Which notices were already shown is remembered in the window's WindowState, so a later start
stays quiet until the situation changes; they are said through the chat's notice funnel.
Environment facts come from app.engine.loading.environment, read off the GUI thread (nvidia-smi
can take seconds).
"""

from __future__ import annotations

import asyncio
import functools
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Slot
from qasync import asyncSlot

from app.ui.about_dialog import AboutDialog

if TYPE_CHECKING:
    from app.chat.chat import Chat
    from app.ui.window_state import WindowState


class HelpMenu(QObject):
    """Opens the About dialog over `window` (kept as about_dialog) and says the start-up notices
    through `chat`, remembering them in `window_state`. No signals."""

    def __init__(self, window, chat: Chat, window_state: WindowState, own_task):
        """own_task(): track the running async slot's task so closing the window cancels it."""
        super().__init__(window)
        self._window = window
        self._chat = chat
        self._window_state = window_state
        self._own_task = own_task
        self.about_dialog: AboutDialog | None = None

    def notice_text(self, notice) -> str:
        """A StartupNotice said in the window's language from its key and facts (its English
        text for a key this does not know)."""
        f, kind = notice.facts, notice.key.split(":")[0]
        cpu = self.tr("Headroom runs models on the CPU instead: chatting, the memory panel and your "
                      "conversations all work, only answers come more slowly and large models may not "
                      "fit in memory. 4-bit models need an NVIDIA GPU with CUDA and the bitsandbytes package.")
        if kind == "no-gpu":
            return self.tr("No NVIDIA GPU was found. {0}").format(cpu)
        if kind == "cpu-only-torch":
            return self.tr("Your NVIDIA GPU ({0}) is not used: the installed PyTorch is a CPU-only build. "
                           "Install a CUDA build of PyTorch (pytorch.org) to use it. {1}").format(f["gpu"], cpu)
        if kind == "driver-too-old":
            return self.tr("Your NVIDIA driver ({0}) is too old for this PyTorch, which is built for CUDA {1} "
                           "and needs driver {2} or newer, so your GPU ({3}) is not used. Update the NVIDIA "
                           "driver to use it. {4}").format(f["driver"], f["cuda"], f["needed_driver"], f["gpu"], cpu)
        if kind == "cuda-unavailable":
            driver = self.tr(" (driver {0})").format(f["driver"]) if f.get("driver") else ""
            return self.tr("An NVIDIA GPU ({0}) was found{1}, but CUDA could not start, so it is not used. "
                           "Restarting after a driver update often fixes this; check that `nvidia-smi` works. "
                           "{2}").format(f["gpu"], driver, cpu)
        if kind in ("no-bitsandbytes", "broken-bitsandbytes"):
            why = (self.tr("bitsandbytes is not installed") if kind == "no-bitsandbytes" else
                   self.tr("bitsandbytes {0} does not work here ({1})").format(f["version"], f["problem"]))
            return self.tr("Your GPU is used, but {0}, so models load in 16-bit instead of 4-bit: they need "
                           "about 3–4× the memory (an 8B model about 16 GB instead of about 5 GB), and large "
                           "ones may not fit. Install it with pip install 'headroom[cuda]' to load 4-bit "
                           "models.").format(why)
        return notice.text

    @Slot()
    def _on_about_triggered(self) -> None:
        from app.core.logs import current_log_file
        from app.engine.loading.environment import read_environment

        log_file = current_log_file()
        self.about_dialog = AboutDialog(read_environment(), self._chat.report,
                                        log_file.parent if log_file else None, self._window)
        self.about_dialog.open()  # window-modal, never blocks the event loop

    @asyncSlot()
    async def check_environment(self) -> None:
        """Read GPU, driver and bitsandbytes facts off the GUI thread (nvidia-smi can take
        seconds) and explain, once, what will not be used and what still works."""
        from app.engine.loading.environment import read_environment
        from app.engine.loading.startup_notices import startup_notices

        self._own_task()
        env = await asyncio.get_event_loop().run_in_executor(
            None, functools.partial(read_environment, probe_gpu=True))
        self.show_startup_notices(startup_notices(env, self._chat.device_preference))

    def show_startup_notices(self, notices) -> list:
        """Say each StartupNotice not shown at an earlier start (a transcript notice), and
        remember it in session.ini; returns the notices shown now."""
        seen = self._window_state.shown_notices()
        fresh = [n for n in notices if n.key not in seen]
        for notice in fresh:
            self._chat.announce(self.notice_text(notice))
        if fresh:
            self._window_state.remember_notices(n.key for n in fresh)
        return fresh
