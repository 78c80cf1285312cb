"""The summary of earlier turns: the transcript's summary block, kept in step with the worker's
summary events, the user's edits, and the Store.

The worker folds the oldest turns into a summary when the history outgrows the context window;
this shows it (with how many turns it covers and its token cap), saves each new or edited one
with the open conversation, and reports a failed summary inline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Slot

from app.core.history import SummaryState, group_turns

if TYPE_CHECKING:
    from app.ui.main_window import MainWindow


class SummaryController(QObject):
    """Shows and saves `window`'s SummaryState (window.summary). No signals."""

    def __init__(self, window: MainWindow):
        super().__init__(window)
        self._window = window

    def _summary_cap(self) -> int:
        """The summary's token budget: a reserve out of the context window in use (the local
        model's positions, or the remote server's context; capped by settings)."""
        from app.core.history import summary_reserve

        w = self._window
        positions = (w.report.max_positions if w.report else None) or 2048
        remote_report = w.backend_controller.remote_report
        if w.settings.backend.is_remote and remote_report is not None:
            positions = remote_report.context_tokens
        context = w.settings.generation.context_tokens
        return summary_reserve(min(positions, context) if context > 0 else positions)

    def show_summary(self) -> None:
        """Show window.summary in the summary block, with the number of turns it folds."""
        w = self._window
        folded = sum(1 for t in group_turns(w.conversation.messages)
                     if t.last_position <= w.summary.folded_through)
        w.chat_view.summary_block.set_summary(w.summary.content, folded, w.summary.tokens,
                                              self._summary_cap())

    @Slot(int, int)
    def _on_summary_started(self, _request_id: int, _folded: int) -> None:
        self._window.chat_view.summary_block.set_summarizing(True)

    @Slot(int, object, str)
    def _on_summary_finished(self, _request_id: int, state, verdict: str) -> None:
        w = self._window
        w.summary = state
        if w.conversation_id is not None:
            w.store.save_summary(w.conversation_id, state)
        w.chat_view.summary_block.set_summarizing(False)
        self.show_summary()
        w.status.showMessage(f"Summary: {verdict}", 8000)

    @Slot(int, str)
    def _on_summary_failed(self, _request_id: int, reason: str) -> None:
        self._window.chat_view.summary_block.set_summarizing(False)
        self._window.chat_view.add_notice(f"The summary of earlier turns failed: {reason}", "error")

    @Slot(str)
    def _on_summary_edited(self, text: str) -> None:
        w = self._window
        w.summary = SummaryState(text, w.summary.folded_through if text else -1,
                                 len(text.split()) * 4 // 3)  # recounted by the next turn's plan
        if w.conversation_id is not None:
            w.store.save_summary(w.conversation_id, w.summary)
        self.show_summary()
