"""Opening a model: asking the worker to load it (the worker frees the open model first, loads
in its own thread with progress, and adopts it), Cancel, and adopting what is actually active
(its LoadReport) as the chat's report.

The open model is freed before the next one loads (VRAM kept after unload, bitsandbytes #1611), so a failed or
cancelled load reopens the previous one. A chosen model's opt-ins (trust_remote_code, pickle), its
context length and the recent-models list are saved in settings; the context set for the open
model (Settings.context_for) is what its turns run with. At start-up the last model used opens
again (the default when it is gone, with a notice). A max new tokens that the open model's
context cannot hold with a prompt (app.core.new_tokens) never reaches a turn: that model's turns
get what fits, said in a notice when the model opens or settings are adopted, and the user's own
value stays in settings for models with more context.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QObject, Slot

from app.chat.error_text import load_stage_text, plain_failure
from app.core.new_tokens import conversation_tokens, fitted_new_tokens, model_context
from app.core.settings import AUTO_CONTEXT, GenerationSettings
from app.engine.loading.model_path import refusal

if TYPE_CHECKING:
    from app.chat.chat import Chat


translate = QCoreApplication.translate  # lupdate reads translate("Context", "source") calls
log = logging.getLogger(__name__)
OPENING = "Opening the model file"  # the progress line's first stage (app.chat.error_text.load_stage_text)


class ModelFlow(QObject):
    """Loads models through the chat's worker and adopts the worker's LoadReport as chat.report.
    No signals of its own: the Chat's load_progressed, load_ended, model_changed, model_loaded,
    load_failed, load_notices_withdrawn and decode_status_changed are emitted here.

    Why a model did not open is a notice of kind "load": it stays while the previous model
    reopens after it (so it can be read), and is withdrawn once a model opened afterwards
    opens (new-user trial: it stayed above the first message of the next chat)."""

    def __init__(self, chat: Chat):
        super().__init__(chat)
        self._chat = chat
        self._loads: list[Path] = []  # requested and not yet answered, oldest first
        self._fraction = 0.0          # of the newest load's progress
        self._limit_said: tuple | None = None  # (max new tokens, context, limit) last said
        self._reopened: Path | None = None  # the previous model, reopened after a failed or cancelled load
        worker = chat.worker
        worker.load_progressed.connect(self._on_load_progressed)
        worker.model_changed.connect(self._on_model_changed)
        worker.model_loaded.connect(self._on_model_loaded)
        worker.load_failed.connect(self._on_load_failed)
        worker.load_cancelled.connect(self._on_load_cancelled)
        worker.decode_status_changed.connect(chat.decode_status_changed)
        # the open chat's KV precision decides which decode steps the warm-up after a load compiles
        chat.kv_precision_changed.connect(worker.kv_precision_chosen)

    @property
    def loading(self) -> bool:
        """Whether a load is requested and not yet answered."""
        return bool(self._loads)

    @Slot(str, object, int)
    def open_chosen(self, path: str, permissions, context_tokens: int = AUTO_CONTEXT) -> None:
        """Open a model picked in the Open-model dialog, remembering its opt-ins (ModelPermissions)
        and its context (tokens; AUTO_CONTEXT: the largest that fits)."""
        chat = self._chat
        chat.save_defaults(lambda settings: settings.with_permissions(permissions).with_context(path, context_tokens))
        self.open_model(Path(path))

    def open_at_start(self, model: Path | None, default: Path) -> None:
        """Start-up: open `model` when one was asked for, else the last model used when it still
        exists, else `default` (saying that the last one is gone); when the default is not
        installed either, say how to get a model, in one notice."""
        chat = self._chat
        last = Path(chat.settings.last_model_path) if chat.settings.last_model_path else None
        if model is not None:
            self.open_model(Path(model))
            return
        if last is not None and last.exists():
            self.open_model(last)
            return
        if default.exists():
            if last is not None:
                chat.announce(translate("Models", "The model used last is no longer at {0}; opening the default "
                                                  "model.").format(last), "error")
            self.open_model(default)
            return
        # one notice: when the model used last was the default itself, it was installed once and is
        # gone now (trial 8: moved away, "not installed yet" misled); the two never name the same path
        if last is not None and last.resolve() == default.resolve():
            chat.announce(translate("Models", "The default model is no longer at {0}. Run "
                                              "`python -m app.install_model` to install it again, or open a model "
                                              "with Open model…").format(default), "error")
            return
        text = translate("Models", "The default model is not installed yet ({0}). Run "
                                   "`python -m app.install_model`, or open a model with Open model…").format(default)
        if last is not None:
            text = translate("Models", "The model used last is no longer at {0}.").format(last) + " " + text
        chat.announce(text, "error")

    def turn_settings(self, generation: GenerationSettings | None = None) -> GenerationSettings:
        """`generation` (default: the chat's) with the context set for the open local model
        (Settings.context_for: its own, else the settings' one) and a max new tokens that context
        allows (app.core.new_tokens.fitted_new_tokens); a remote backend keeps its own."""
        chat = self._chat
        generation = generation or chat.settings.generation
        if chat.model_path is None or chat.settings.backend.is_remote:
            return generation
        generation = replace(generation, context_tokens=chat.settings.context_for(chat.model_path))
        context = self.context_limit()  # never a turn that no message could fit
        if context is None:
            return generation
        return replace(generation, max_new_tokens=fitted_new_tokens(generation.max_new_tokens, context))

    def context_limit(self) -> int | None:
        """The most tokens of context the open local model's turns run with: its context setting
        within its trained length (LoadReport.max_positions; DEFAULT_MODEL_CONTEXT when the config
        does not say). None with no model open or a remote backend (the server decides)."""
        chat = self._chat
        if chat.model_path is None or chat.report is None or chat.settings.backend.is_remote:
            return None
        return model_context(chat.settings.context_for(chat.model_path), chat.report.max_positions)

    def say_new_tokens_limit(self) -> None:
        """Say in one line when the open model's context cannot hold the chat's max new tokens
        beside a prompt: its turns get the lower value (turn_settings, this model and context
        only) and the user's own value stays in settings, in settings.json and with the
        conversation (new-user trial: a 256-token context saved 128 for good, and a later 8,192
        still stopped answers at 128). Said once per limit; called when a model opens and when
        settings, a preset or a stored conversation are adopted."""
        chat = self._chat
        context, wanted = self.context_limit(), chat.settings.generation.max_new_tokens
        limit = None if context is None else fitted_new_tokens(wanted, context)
        situation = (wanted, context, limit)
        if situation == self._limit_said:
            return
        if self._limit_said is not None:  # what was said of the last situation no longer holds
            chat.limit_notices_withdrawn.emit()
        self._limit_said = situation
        if context is None or limit == wanted:
            return
        chat.announce(translate("Models", "Max new tokens ({0}) is more than this model's {1}-token context can "
                                          "hold beside a message, so its answers get at most {2} tokens and the "
                                          "conversation keeps {3}. Your setting stays {0} for models with more "
                                          "context.").format(
            f"{wanted:,}", f"{context:,}", f"{limit:,}", f"{conversation_tokens(limit, context):,}"), "limit")

    def open_model(self, path: Path) -> None:
        """Load `path` (HF folder or .gguf) in the worker with this model's opt-ins: progress on
        load_progressed, then model_loaded or load_failed (a notice says why) or, after Cancel,
        a notice. A path that cannot be a model (missing, not a .gguf or model folder, a .gguf
        without the GGUF magic bytes: app.engine.loading.model_path.refusal) is refused before the
        open model is unloaded, which stays open; so is one the worker refuses by its headers
        (app.engine.loading.loader.preflight: a cut or unsupported file), nothing then to reopen."""
        chat, path = self._chat, Path(path)
        why = refusal(path)
        if why is not None:
            chat.announce(self._failure_line(why, path), "load")
            chat.load_failed.emit(why)
            return
        if self._loads:
            chat.worker.request_cancel_load()  # a newer request replaces a load in progress
        self._loads.append(path)
        chat.worker.request_stop()  # a reply in flight ends before the model goes
        chat.can_send_changed.emit(False)
        self._fraction = 0.0
        # a phase from the start: the worker's first report comes only after it has freed the open
        # model, imported the loader and read the model's header (seconds on a first load; trial 5)
        chat.load_progressed.emit(self._loading_line(path, OPENING), 0.0)
        chat.worker.load_requested.emit(str(path), chat.settings.permissions_for(path), chat.device_preference)

    def cancel_load(self) -> bool:
        """Ask the load in progress to stop after its current step; False when none is running.
        The progress line says so until it has."""
        if not self._loads:
            return False
        self._chat.worker.request_cancel_load()
        self._chat.load_progressed.emit(translate("Models", "Cancelling after the current step…"), self._fraction)
        return True

    def _answered(self) -> tuple[Path, bool]:
        """The path of the load the worker just answered, and whether it was the newest."""
        path = self._loads.pop(0)
        if not self._loads:
            self._chat.load_ended.emit()
        return path, not self._loads

    def _previous_model(self, path: Path) -> Path | None:
        """The last model that opened, when it is another one than `path` (it was freed before
        this load, so a failed or cancelled load reopens it); None otherwise or after close."""
        previous = self._chat.settings.last_model_path
        if not previous or Path(previous) == path or self._chat.closed:
            return None
        return Path(previous)

    @staticmethod
    def _loading_line(path: Path, stage: str = "Ready") -> str:
        """The progress line: which model loads, then the loader's stage. Its last stage,
        "Ready", is not said: the window is not ready until model_loaded (a first start read
        "Ready" beside the bar while the model was still being adopted)."""
        loading = translate("Models", "Loading {0}…").format(path.name)
        return loading if stage == "Ready" else f"{loading} · {load_stage_text(stage)}"

    @staticmethod
    def _failure_line(reason: str, path: Path) -> str:
        """Why `path` did not open, one plain line that names it (trial 9: after a few failed opens
        no notice said which file had failed), unless the line already gives its whole path."""
        line = plain_failure(reason, "load", path).line()
        return line if str(path) in line else translate("Models", "{0}: {1}").format(path.name or str(path), line)

    @staticmethod
    def _reopening(text: str, previous: Path | None) -> str:
        """`text`, then that the previous model opens again (when there is one)."""
        if previous is None:
            return text
        return text + " " + translate("Models", "Reopening {0}.").format(previous.name)

    # ----- events from the worker --------------------------------------------------------------
    @Slot(str, float)
    def _on_load_progressed(self, text: str, fraction: float) -> None:
        if len(self._loads) == 1:  # not the stages of a load already replaced
            self._fraction = fraction
            self._chat.load_progressed.emit(self._loading_line(self._loads[0], text), fraction)

    @Slot(object)
    def _on_model_changed(self, report) -> None:
        chat = self._chat
        chat.report = report
        if report is None:
            chat.model_path = None
        chat.model_changed.emit(report)
        chat.backend.refresh_can_send()
        chat.backend.name_backend()

    @Slot(object)
    def _on_model_loaded(self, report) -> None:
        path, newest = self._answered()
        chat = self._chat
        chat.model_path = path
        if not newest:  # a newer open is queued and frees this model first
            return
        reopened, self._reopened = self._reopened, None
        if path != reopened:  # a model the user opened: why an earlier one did not is stale now
            chat.load_notices_withdrawn.emit()
        chat.save_defaults(lambda settings: settings.with_recent_model(path))
        self.say_new_tokens_limit()
        if getattr(report, "template_problem", ""):  # broken, not missing: the user should fetch a fixed copy
            chat.announce(translate("Models", "The chat template of {0} is broken, so Headroom set it aside: its "
                                              "prompts are written as a plain User / Assistant transcript, and its "
                                              "answers may be worse than they should be. A fixed copy of the model "
                                              "answers better. ({1})").format(path.name, report.template_problem),
                          "info")
        elif getattr(report, "has_chat_template", True) is False:  # trial 7: said only at the status bar's end
            chat.announce(translate("Models", "{0} has no chat template (a base model?): its prompts are written "
                                              "as a plain User / Assistant transcript, and its answers may ramble "
                                              "or carry on as the user. A chat (instruct) model answers "
                                              "better.").format(path.name), "info")
        chat.model_loaded.emit(report)

    @Slot(str)
    def _on_load_failed(self, reason: str) -> None:
        path, newest = self._answered()
        if not newest:
            return
        kept = self._chat.report is not None  # refused by its header before the open model was freed
        previous = None if kept else self._previous_model(path)
        if kept:
            self._chat.backend.refresh_can_send()
        log.warning("could not open %s: %s", path, reason)  # the engine's words stay in the log
        self._chat.announce(self._reopening(self._failure_line(reason, path), previous), "load")
        self._chat.load_failed.emit(reason)
        self._reopen(previous)

    @Slot()
    def _on_load_cancelled(self) -> None:
        path, newest = self._answered()
        if not newest:
            return
        previous = self._previous_model(path)
        self._chat.announce(self._reopening(translate("Models", "Loading cancelled."), previous))
        self._reopen(previous)

    def _reopen(self, previous: Path | None) -> None:
        """Open `previous` again after a failed or cancelled load (None: nothing to reopen)."""
        self._reopened = previous
        if previous:
            self.open_model(previous)
