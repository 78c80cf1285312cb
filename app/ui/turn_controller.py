"""The chat turn, from the composer to the transcript: send → the worker's plan and admission
decision → streaming → finished, refused (with the admission dialog's remedies) or failed.

Owns the request in flight (its id), a message sent while Stop takes effect (sent as soon as
the turn ends), the pending turn's TurnPlan, and the per-turn projected vs measured peaks kept
for the diagnostics report. The conversation itself stays on the window; only the GUI thread
runs this code, and the worker only ever sees copies of the messages.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Slot

from app.core.conversation import MessageStatus, Role, copy_messages
from app.core.history import group_turns
from app.ui.admission_dialog import AdmissionDialog
from app.workers.generation_worker import TurnRequest

if TYPE_CHECKING:
    from app.ui.main_window import MainWindow


class TurnController(QObject):
    """Runs `window`'s turns through its GenerationWorker. No signals of its own: the window's
    turn_finished(str status) is emitted here when a turn ends (status value or "refused")."""

    def __init__(self, window: MainWindow):
        super().__init__(window)
        self._window = window
        self._request_ids = itertools.count(1)
        self._active_request: int | None = None
        self._queued_text: str | None = None
        self.last_plan = None         # the pending turn's TurnPlan (window, projection, decision)
        self.turn_records: list = []  # per-turn projected vs measured peaks, for diagnostics
        self.admission_dialog: AdmissionDialog | None = None  # the last refusal's remedies

    @property
    def active(self) -> bool:
        """Whether a reply is in flight (planned, streaming or stopping)."""
        return self._active_request is not None

    # ----- requests from the composer and the transcript ----------------------------------
    @Slot(str)
    def _on_send_requested(self, text: str) -> None:
        w = self._window
        if self._active_request is not None:  # sent while Stop takes effect: next in line
            self._queued_text = text
            w.worker.request_stop()
            return
        message = w.conversation.add(Role.USER, text)
        w.chat_view.add_message(Role.USER, text)
        w.conversation_controller.persist(message)
        self._start_turn()

    @Slot(int, str)
    def _on_edit_requested(self, index: int, text: str) -> None:
        message = self._window.conversation.messages[index]
        message.content = text
        self._window.conversation_controller.persist(message)
        self._window.conversation_controller.drop_from(index + 1)
        self._start_turn()

    @Slot(int)
    def _on_regenerate_requested(self, index: int) -> None:
        self._window.conversation_controller.drop_from(index)
        self._start_turn()

    @Slot(int)
    def _on_continue_requested(self, _index: int) -> None:
        self._window.conversation.messages[-1].status = MessageStatus.STREAMING
        self._start_turn(continue_final=True)

    @Slot()
    def _on_stop_requested(self) -> None:
        # A direct call, not a signal into the worker: the worker's event loop is busy
        # generating, so a queued slot would only run after the reply ends.
        self._window.worker.request_stop()

    def _start_turn(self, continue_final: bool = False, override_memory: bool = False,
                    settings=None) -> None:
        w = self._window
        if not continue_final:
            messages = copy_messages(w.conversation.messages)
            w.conversation.add(Role.ASSISTANT, "", MessageStatus.STREAMING)
            w.chat_view.begin_stream()
        else:
            messages = copy_messages(w.conversation.messages)
            w.chat_view.continue_stream()
        request = TurnRequest(next(self._request_ids), messages, w.summary,
                              settings or w.settings.generation, continue_final, override_memory,
                              backend=w.settings.backend)
        self._active_request = request.request_id
        w.composer.set_generating(True)
        w.worker.turn_requested.emit(request)

    # ----- events from the worker ------------------------------------------------------------
    @Slot(int, object)
    def _on_turn_planned(self, request_id: int, plan) -> None:
        w = self._window
        self.last_plan = plan
        w.vram_panel.show_projection(plan.projection, w.report.weight_bytes if w.report else 0)
        window = plan.window
        folded = sum(1 for t in group_turns(w.conversation.messages)
                     if t.last_position <= w.summary.folded_through)
        w.token_meter.set_counts(window.prompt_tokens, window.limit_tokens, len(window.kept), folded)

    @Slot(int, str)
    def _on_token_streamed(self, request_id: int, text: str) -> None:
        if request_id == self._active_request:
            self._window.conversation.messages[-1].content += text
            self._window.chat_view.append_stream(text)

    @Slot(int, object, object)
    def _on_reply_finished(self, request_id: int, finished, record) -> None:
        if request_id != self._active_request:
            return
        self.turn_records.append(record)
        if finished.stop_reason == "length":  # cut off by max_new_tokens: offer Continue
            self._end_turn(MessageStatus.STOPPED, "max new tokens reached")
        else:
            self._end_turn(MessageStatus.STOPPED if finished.stop_reason == "stopped"
                           else MessageStatus.COMPLETE)
        self._window.status.show_speed(finished.ttft_s, finished.decode_tokens_per_s, finished.new_tokens)

    @Slot(int, str, str)
    def _on_generation_failed(self, request_id: int, reason: str, _partial: str) -> None:
        if request_id != self._active_request:
            return
        self._end_turn(MessageStatus.FAILED, reason)
        self._window.chat_view.add_notice(f"The reply failed: {reason}", "error")

    @Slot(int, object)
    def _on_turn_refused(self, request_id: int, decision) -> None:
        if request_id != self._active_request:
            return
        w = self._window
        reply = w.conversation.messages[-1]
        if reply.id is None:  # a fresh placeholder: nothing ran, nothing to keep
            w.conversation.messages.pop()
            w.chat_view.end_stream(MessageStatus.FAILED)
            w.chat_view.truncate(len(w.conversation.messages))
        else:  # a refused "continue": the partial answer stays as it was
            reply.status = MessageStatus.STOPPED
            w.chat_view.end_stream(MessageStatus.STOPPED)
        self._active_request = None
        w.composer.set_generating(False)
        w.chat_view.add_notice(f"This turn was not started: {decision.reason}", "error")
        w.turn_finished.emit("refused")
        if self._queued_text:
            self._send_queued()
            return
        projection = self.last_plan.projection if self.last_plan is not None else None
        self.admission_dialog = AdmissionDialog(decision, projection, w)
        self.admission_dialog.remedy_chosen.connect(
            lambda choice: self._on_remedy_chosen(choice, decision))
        self.admission_dialog.open()  # window-modal, never blocks the event loop

    def _on_remedy_chosen(self, choice: str, decision) -> None:
        """Apply the remedy the user picked for a refused turn and send it again."""
        settings = self._window.settings.generation
        if choice == "lower_max_new_tokens" and decision.max_new_tokens_fit:
            self._start_turn(settings=replace(settings, max_new_tokens=decision.max_new_tokens_fit))
        elif choice == "trim" and decision.trim_tokens and self.last_plan is not None:
            # a smaller context for this turn: the oldest turns leave the window (and are summarized)
            context = len(self.last_plan.prompt_ids) - decision.trim_tokens + settings.max_new_tokens
            self._start_turn(settings=replace(settings, context_tokens=max(context, settings.max_new_tokens + 1)))
        elif choice == "override":
            self._start_turn(override_memory=True)
        else:
            self._withdraw_unanswered()

    def _withdraw_unanswered(self) -> None:
        """A refused message the user gives up on goes back into the composer, not into history."""
        w = self._window
        messages = w.conversation.messages
        if not messages or messages[-1].role is not Role.USER:
            return
        text = messages[-1].content
        w.conversation_controller.drop_from(len(messages) - 1)
        if not w.composer.editor.toPlainText().strip():
            w.composer.editor.setPlainText(text)

    # ----- ending a turn ---------------------------------------------------------------------
    def _end_turn(self, status: MessageStatus, detail: str = "") -> None:
        w = self._window
        message = w.conversation.messages[-1]
        message.status = status
        w.conversation_controller.persist(message)
        w.chat_view.end_stream(status, detail)
        self._active_request = None
        w.composer.set_generating(False)
        w.turn_finished.emit(status.value)
        self._send_queued()

    def _send_queued(self) -> None:
        text, self._queued_text = self._queued_text, None
        if text:
            self._on_send_requested(text)

    def discard_queued(self) -> None:
        """Forget a message sent while Stop takes effect: it must not start a turn now."""
        self._queued_text = None

    def keep_partial_as_stopped(self) -> None:
        """End the reply in flight, if any, keeping its partial answer as stopped."""
        if self._active_request is not None:
            self._end_turn(MessageStatus.STOPPED)

    def stop_for_switch(self) -> None:
        """Before the open conversation is replaced: drop a queued message and stop a reply in
        flight (it ends within one token), keeping its partial answer as stopped."""
        self.discard_queued()
        if self._active_request is not None:
            self._window.worker.request_stop()
            self.keep_partial_as_stopped()
