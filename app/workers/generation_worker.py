"""The generation worker: a plain QObject living in its own QThread.

It owns the loaded model and everything that touches it (tokenizer, KV cache, memory
projection); the GUI thread never does. Commands arrive as queued `*_requested` signals and are
served one at a time, so a summary queued behind a chat turn runs after it (one GPU job at a
time). Stop is *not* a queued slot — the worker's event loop is busy while generating — but a
`threading.Event` set directly from the GUI thread and polled before every decode step.
The turn itself is the backend's (app.engine.backend: the local TurnRunner or a remote
OpenAI-compatible server), picked per request from its BackendSettings snapshot; this class
only maps the backend's events to signals, the same signals for both.

Models are loaded here too, as gpt4all's ChatLLM does: the open model is freed first (VRAM kept after unload,
bitsandbytes #1611:
unload keeps VRAM), the loader runs in this thread with progress and Cancel (a LoadTicket, set
from the GUI thread like Stop), and a model that loaded is adopted at once, so no half-loaded
model is left in memory. The memory probe is chosen here, once per model, from the device the
model was actually placed on, and shared with the GUI's memory monitor.
"""

import logging
import threading
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal, Slot

from app.core.backend_settings import BackendSettings
from app.core.conversation import Message
from app.core.history import SummaryState
from app.core.kv_precision import KV_16
from app.core.secrets import load_api_key
from app.core.settings import GenerationSettings
from app.engine import events as ev
from app.engine.backend import RemoteBackends
from app.engine.events import TextDelta
from app.engine.local import turn_runner as tr
from app.engine.memory.probe import probe_for, release_memory
from app.workers.load_tickets import LoadTickets

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TurnRequest:
    """One chat turn. messages: the whole conversation (copies), oldest first, ending with the
    new user message — or with a partial assistant answer when continue_final (continue after Stop,
    text-generation-webui #7565).
    override_memory: the user chose "send anyway" after a memory refusal.
    backend: which engine answers (the conversation's choice; local by default).
    conversation_key: the conversation whose kept KV cache the turn uses (the chat layer's key;
    "" = whatever cache is active).
    documents: ExtractedDocuments attached to the new user message (local model only).
    summarize_only: no reply; fold the older turns into the summary now ("Summarize now").
    kv_precision: the conversation's KV cache precision, "16-bit", "8-bit" or "auto"
    (app.core.kv_precision; local model only)."""

    request_id: int
    messages: tuple[Message, ...]
    summary: SummaryState
    settings: GenerationSettings
    continue_final: bool = False
    override_memory: bool = False
    backend: BackendSettings = BackendSettings()
    conversation_key: str = ""
    documents: tuple = ()
    summarize_only: bool = False
    kv_precision: str = KV_16


class GenerationWorker(QObject):
    """Runs one GPU job at a time in the worker thread.

    Signals in (queued into the worker thread):
        load_requested(str, object, str): model path, its ModelPermissions (trust_remote_code,
            allow_pickle), device preference ("auto" or "cpu"): free the open model, load this
            one, adopt it. Cancel with request_cancel_load().
        model_change_requested(object): a LoadedModel to adopt, or None to unload.
        turn_requested(object): a TurnRequest.
        window_requested(object): a TurnRequest to count only: which turns the next prompt keeps
            and how many tokens they take, its documents (attached to the message being written)
            included (nothing runs); answered on window_counted.
        conversation_activated(str, int): the user opened this conversation (its key) — the
            local model makes its kept KV cache active now (parking the previous chat's in host
            memory, at most the given MiB), so the next turn prefills only its new tokens.
        conversation_forgotten(str): the conversation was deleted; its kept cache is dropped.
        kv_precision_chosen(str): the open chat's KV cache precision ("16-bit", "8-bit",
            "auto"): which KV precisions the decode warm-up after the next load compiles.
    Signals out:
        load_progressed(str, float): stage text, fraction 0..1 of the load in progress.
        model_loaded(object): the LoadReport of a model load_requested opened (after model_changed).
        load_failed(str): one line saying why the requested model did not open.
        load_cancelled(): the requested load stopped after a step; nothing of it stays in memory.
        model_changed(object): the adopted model's LoadReport, or None after unload.
        probe_changed(object): the MemoryProbe of the device the adopted model is on (the same
            object the turn planner samples).
        decode_status_changed(object): DecodeStatus of the compiled decode step ("compiling"
            while optimizing in the background, then "ready", "failed" or "eager" with a reason):
            after a load, and after a turn that decoded eagerly because its KV precision's step
            was not compiled yet (it is compiled then, so the next turn is not).
        foresight_changed(object): ForesightSnapshot for the "what if" view (None after unload).
        backend_chosen(int, object): request id, the report of what answers it (LoadReport for
            the local model, RemoteReport for a server), before its first other event.
        documents_fitted(int, object): request id, tuple of DocumentFit — how each attached
            document went into the prompt (whole or retrieved), before turn_planned.
        turn_planned(int, object): request id, TurnPlan (window, projection, decision).
        window_counted(int, object): request id, the WindowResult of a window_requested (None
            when nothing can count it: no model loaded, a server not reached yet, no turn).
        turn_refused(int, object): request id, AdmissionDecision — the turn did not start.
        prefill_progressed(int, int, int): request id, prompt tokens read so far, tokens to read
            (a prefill that runs long, generation.PREFILL_PROGRESS_AFTER_S; before the first
            token_streamed).
        token_streamed(int, str): request id, new text (never half a character).
        reply_finished(int, object, object): request id, engine ReplyFinished, TurnRecord.
        generation_failed(int, str, str): request id, one-line reason, partial answer text.
        summary_started(int, int): request id, turns being folded into the summary.
        summary_finished(int, object, str): request id, new SummaryState, verdict text.
        summary_failed(int, str): request id, reason.
    """

    load_requested = Signal(str, object, str)
    model_change_requested = Signal(object)
    turn_requested = Signal(object)
    window_requested = Signal(object)
    conversation_activated = Signal(str, int)
    conversation_forgotten = Signal(str)
    kv_precision_chosen = Signal(str)

    load_progressed = Signal(str, float)
    model_loaded = Signal(object)
    load_failed = Signal(str)
    load_cancelled = Signal()
    model_changed = Signal(object)
    probe_changed = Signal(object)
    decode_status_changed = Signal(object)
    foresight_changed = Signal(object)
    backend_chosen = Signal(int, object)
    documents_fitted = Signal(int, object)
    turn_planned = Signal(int, object)
    window_counted = Signal(int, object)
    turn_refused = Signal(int, object)
    prefill_progressed = Signal(int, int, int)
    token_streamed = Signal(int, str)
    reply_finished = Signal(int, object, object)
    generation_failed = Signal(int, str, str)
    summary_started = Signal(int, int)
    summary_finished = Signal(int, object, str)
    summary_failed = Signal(int, str)

    def __init__(self, probe_factory=probe_for, api_key_lookup=load_api_key, remote_transport=None,
                 device_preference: str = "auto", decode_compiler=None):
        """probe_factory(device) → MemoryProbe for a torch device string ("cuda:0", "cpu") or a
        device preference ("auto", "cpu"; the probe before any model is loaded);
        api_key_lookup(base_url) → the stored API key or "" (app.core.secrets);
        remote_transport: an httpx transport for the remote backend (tests);
        decode_compiler: replaces torch.compile for the decode step (tests, see TurnRunner)."""
        super().__init__()
        self._runner: tr.TurnRunner | None = None
        self._remotes = RemoteBackends(api_key_lookup, remote_transport)
        self._probe_factory = probe_factory
        self._decode_compiler = decode_compiler
        self.probe = probe_factory(device_preference)  # replaced by each adopted model's
        self._kv_precision = KV_16  # the open chat's, for the warm-up after a load
        self._stop = threading.Event()
        # turns cancelled from the GUI thread before they ran (queued behind a summary) and the
        # turn running now, both guarded by the lock: see request_cancel_turn
        self._turn_lock = threading.Lock()
        self._cancelled: set[int] = set()
        self._running: int | None = None
        self._loads = LoadTickets()
        # counted in the emitting (GUI) thread, so a Cancel reaches loads still in the queue
        self.load_requested.connect(self._loads.ask, Qt.ConnectionType.DirectConnection)
        self.load_requested.connect(self._on_load_requested)
        self.model_change_requested.connect(self._on_model_change_requested)
        self.turn_requested.connect(self._on_turn_requested)
        self.window_requested.connect(self._on_window_requested)
        self.conversation_activated.connect(self._on_conversation_activated)
        self.conversation_forgotten.connect(self._on_conversation_forgotten)
        self.kv_precision_chosen.connect(self._on_kv_precision_chosen)

    def request_stop(self) -> None:
        """Thread-safe: ends the current reply or summary before its next decode step."""
        self._stop.set()

    def request_cancel_turn(self, request_id: int) -> None:
        """Thread-safe: the turn `request_id` does not run. Still queued (behind another chat's
        summary, a compile): it is dropped when its turn comes, with no signal at all; running:
        stopped before its next decode step, as request_stop (its events still come)."""
        with self._turn_lock:
            if self._running == request_id:
                self._stop.set()
            else:
                self._cancelled.add(request_id)

    def request_cancel_load(self) -> None:
        """Thread-safe: the load in progress, and any requested before now, stop after their
        current step (a GGUF conversion step can take seconds) and emit load_cancelled."""
        self._loads.cancel()

    @Slot(str, object, str)
    def _on_load_requested(self, path: str, permissions, device: str) -> None:
        ticket = self._loads.start()
        from app.engine.loading.loader import LoadCancelled, ModelLoadError, load_model, preflight

        try:  # a file refused by its header leaves the open model open
            preflight(Path(path), permissions.trust_remote_code, permissions.allow_pickle)
        except ModelLoadError as exc:
            self.load_failed.emit(str(exc))
            return
        self._adopt(None)  # free the open model before the next one loads (VRAM kept after unload, bitsandbytes #1611)
        if ticket.is_set():
            self.load_cancelled.emit()
            return

        try:
            loaded = load_model(Path(path), self.load_progressed.emit, ticket,
                                trust_remote_code=permissions.trust_remote_code,
                                device_preference=device, allow_pickle=permissions.allow_pickle)
        except LoadCancelled:
            self.load_cancelled.emit()
            return
        except ModelLoadError as exc:
            self.load_failed.emit(str(exc))
            return
        except Exception as exc:  # not expected: said on load_failed, then to the excepthook
            self.load_failed.emit(f"cannot load {Path(path).name}: {type(exc).__name__}")
            raise
        if ticket.is_set():  # cancelled after the last step: not adopted, freed at once
            del loaded
            release_memory()
            self.load_cancelled.emit()
            return
        report = loaded.report
        self._adopt(loaded)
        del loaded  # the runner owns the model now
        self.model_loaded.emit(report)
        self._warm_up()

    @Slot(object)
    def _on_model_change_requested(self, loaded) -> None:
        self._adopt(loaded)
        del loaded
        self._warm_up()

    def _adopt(self, loaded) -> None:
        """Drop the open model, then adopt `loaded` (None: unload) with the probe of its device."""
        self._runner = None
        # the old model is gone before the new one is announced (VRAM kept after unload, bitsandbytes #1611)
        release_memory()
        if loaded is not None:
            self.probe = self._probe_factory(loaded.report.device)
            self._runner = tr.TurnRunner(loaded, self.probe, self._decode_compiler)
            self.probe_changed.emit(self.probe)
        self.model_changed.emit(loaded.report if loaded is not None else None)
        self.foresight_changed.emit(self._runner.foresight.snapshot() if self._runner else None)

    def _warm_up(self) -> None:
        if self._runner is not None:
            # In this thread, the one that generates: no two threads touch the model. Turns sent
            # meanwhile queue behind it; the window stays usable and shows "optimizing".
            self._runner.warm_up(self.decode_status_changed.emit, self._kv_precision)

    @Slot(str)
    def _on_kv_precision_chosen(self, precision: str) -> None:
        self._kv_precision = precision

    @Slot(str, int)
    def _on_conversation_activated(self, key: str, kept_cache_mib: int) -> None:
        if self._runner is not None:
            self._runner.activate(key, kept_cache_mib)

    @Slot(str)
    def _on_conversation_forgotten(self, key: str) -> None:
        if self._runner is not None:
            self._runner.sessions.forget(key)

    @Slot(object)
    def _on_window_requested(self, request: TurnRequest) -> None:
        backend = self._remotes.get(request.backend) if request.backend.is_remote else self._runner
        window = None
        # documents attached to the message being written: read by the local model only
        extra = {"documents": request.documents} if request.documents and backend is self._runner else {}
        if backend is not None:
            try:
                window = backend.count_window(list(request.messages), request.summary, request.settings, **extra)
            except ValueError:  # no turn to count (an empty or fully folded conversation)
                window = None
            except Exception:  # not expected: no count shown (the turn itself says what is wrong)
                log.exception("counting the next prompt failed")
                window = None
        self.window_counted.emit(request.request_id, window)

    @Slot(object)
    def _on_turn_requested(self, request: TurnRequest) -> None:
        rid = request.request_id
        with self._turn_lock:
            cancelled = rid in self._cancelled
            self._cancelled = {r for r in self._cancelled if r > rid}  # ids only grow: older ones are done
            if cancelled:
                return
            self._running = rid
            self._stop.clear()
        try:
            self._run_turn(request)
        except Exception as exc:  # not expected: the turn ends with an error, then the excepthook
            reason = f"an internal error stopped it ({type(exc).__name__}: {exc})"  # (trial 4: it hung)
            if request.summarize_only:
                self.summary_failed.emit(rid, reason)
            else:
                self.generation_failed.emit(rid, reason, "")
            raise
        finally:
            with self._turn_lock:
                self._running = None

    def _run_turn(self, request: TurnRequest) -> None:
        """The turn (or summary) `request`, its events emitted as signals."""
        rid = request.request_id
        backend = self._remotes.get(request.backend) if request.backend.is_remote else self._runner
        if backend is None:
            if request.summarize_only:
                self.summary_failed.emit(rid, "no model is loaded")
            else:
                self.generation_failed.emit(rid, "no model is loaded", "")
            return
        extra = {}
        if backend is self._runner and request.kv_precision != KV_16:
            extra["kv_precision"] = request.kv_precision
        if request.documents:
            if backend is not self._runner:
                self.generation_failed.emit(rid, "attached documents are read by the local model only", "")
                return
            extra["documents"] = request.documents
        if request.summarize_only:
            events = backend.summarize_now(list(request.messages), request.summary, request.settings, self._stop)
        else:
            events = backend.run_turn(list(request.messages), request.summary, request.settings,
                                      self._stop, request.continue_final, request.override_memory,
                                      request.conversation_key, **extra)
        announced = False
        for event in events:
            if not announced and backend.report is not None:  # a remote one knows after connecting
                self.backend_chosen.emit(rid, backend.report)
                announced = True
            match event:
                case TextDelta(text=text):
                    self.token_streamed.emit(rid, text)
                case ev.PrefillProgress(done_tokens=done, total_tokens=total):
                    self.prefill_progressed.emit(rid, done, total)
                case ev.DocumentsFitted(fits=fits):
                    self.documents_fitted.emit(rid, fits)
                case ev.TurnPlanned(plan=plan):
                    self.turn_planned.emit(rid, plan)
                case ev.TurnRefused(decision=decision):
                    self.turn_refused.emit(rid, decision)
                case ev.TurnCompleted(finished=finished, record=record):
                    self.reply_finished.emit(rid, finished, record)
                    if backend is self._runner:
                        self.foresight_changed.emit(self._runner.foresight.snapshot())
                case ev.TurnFailed(reason=reason, partial=partial):
                    self.generation_failed.emit(rid, reason, partial)
                case ev.SummaryStarted(folded_turns=folded):
                    self.summary_started.emit(rid, folded)
                case ev.SummaryFinished(state=state, verdict=verdict):
                    self.summary_finished.emit(rid, state, verdict.reason)
                case ev.SummaryFailed(reason=reason):
                    self.summary_failed.emit(rid, reason)
        if backend is self._runner:
            # The turn decoded eagerly for lack of its KV precision's compiled step: compile it
            # now, in this thread (as the warm-up); sends meanwhile queue behind it.
            self._runner.compile_missing(self.decode_status_changed.emit)
