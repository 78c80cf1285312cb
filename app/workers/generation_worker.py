"""The generation worker: a plain QObject living in its own QThread.

It owns the loaded model; the GUI thread never touches it. Commands arrive as queued
`*_requested` signals; events leave as past-tense signals. Stop is *not* a queued slot —
the worker's event loop is busy while generating — but a `threading.Event` set directly
from the GUI thread and polled before every decode step (gpt4all `chatllm.cpp`).
"""

import gc
import logging
import threading
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal, Slot

from app.core.settings import GenerationSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GenerationRequest:
    """One turn. messages: {"role", "content"} dicts including the system prompt.
    continue_final: the last message is a partial assistant answer to continue (C17)."""

    request_id: int
    messages: tuple[dict, ...]
    settings: GenerationSettings
    continue_final: bool = False


class GenerationWorker(QObject):
    """Runs one generation at a time in the worker thread.

    Signals in (connect from the GUI thread; delivered queued):
        model_change_requested(object): a LoadedModel to adopt, or None to unload.
        generate_requested(object): a GenerationRequest.
    Signals out:
        model_changed(object): the adopted model's LoadReport, or None after unload.
        token_streamed(int, str): request id, new text (never half a character).
        reply_finished(int, object): request id, engine ReplyFinished.
        generation_failed(int, str, str): request id, one-line reason, partial answer text.
    """

    model_change_requested = Signal(object)
    generate_requested = Signal(object)

    model_changed = Signal(object)
    token_streamed = Signal(int, str)
    reply_finished = Signal(int, object)
    generation_failed = Signal(int, str, str)

    def __init__(self):
        super().__init__()
        self._loaded = None
        self._stop = threading.Event()
        self.model_change_requested.connect(self._on_model_change_requested)
        self.generate_requested.connect(self._on_generate_requested)

    def request_stop(self) -> None:
        """Thread-safe: ends the current reply before its next decode step."""
        self._stop.set()

    @Slot(object)
    def _on_model_change_requested(self, loaded) -> None:
        self._loaded = None
        _release_memory()  # the old model is gone before the new one is announced (C05)
        self._loaded = loaded
        self.model_changed.emit(loaded.report if loaded is not None else None)

    @Slot(object)
    def _on_generate_requested(self, request: GenerationRequest) -> None:
        from app.engine.generation import (
            ReplyFinished,
            SamplingParams,
            TextDelta,
            stream_chat_reply,
        )

        self._stop.clear()
        if self._loaded is None:
            self.generation_failed.emit(request.request_id, "no model is loaded", "")
            return
        settings = request.settings
        params = SamplingParams(settings.max_new_tokens, settings.temperature, settings.top_p)
        partial: list[str] = []
        error = None
        try:
            for event in stream_chat_reply(self._loaded, list(request.messages), params, self._stop,
                                           request.continue_final):
                if isinstance(event, TextDelta):
                    partial.append(event.text)
                    self.token_streamed.emit(request.request_id, event.text)
                elif isinstance(event, ReplyFinished):
                    self.reply_finished.emit(request.request_id, event)
        except Exception as exc:  # every failure ends the stream with an event (C19)
            log.exception("generation failed")
            error = _describe_failure(exc)
        if error is not None:  # outside the except block: the traceback is already dropped
            _release_memory()
            self.generation_failed.emit(request.request_id, error, "".join(partial))


def _describe_failure(exc: BaseException) -> str:
    name = type(exc).__name__
    if name == "OutOfMemoryError":
        return ("the GPU ran out of memory during this reply; memory was released — "
                "try a shorter message, a lower max_new_tokens or a new chat")
    lines = str(exc).strip().splitlines()
    return f"{name}: {lines[0]}" if lines else name


def _release_memory() -> None:
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:
        pass
