"""One chat turn end to end, as a generator of events: plan (window + admission), generate,
then fold evicted turns into the summary. Qt-free, so the generation worker and the headless
`--replay` run exactly the same code; the worker only turns events into signals.
"""

import logging
import threading
import traceback
from collections.abc import Iterator
from dataclasses import replace

from app.core.conversation import Message
from app.core.history import SummaryState, next_turn_window
from app.core.kv_precision import KV_8, KV_16
from app.core.settings import GenerationSettings
from app.engine.events import (
    DocumentsFitted,
    PrefillProgress,
    ReplyFinished,
    SummaryFailed,
    TextDelta,
    TurnCompleted,
    TurnEvent,
    TurnFailed,
    TurnPlan,
    TurnPlanned,
    TurnRecord,
    TurnRefused,
    describe_failure,
)
from app.engine.local import samplers
from app.engine.local.generation import SamplingParams
from app.engine.local.turn_planner import Foresight
from app.engine.memory.probe import MemoryProbe, release_memory
from app.engine.summary_flow import fold_now, summary_events

log = logging.getLogger(__name__)

# The warm-up prefill after load (tokens): long enough that the spike carries signal, short
# enough to take well under a second on a GPU (memory benchmark protocol uses 2,048).
CALIBRATION_PROMPT_TOKENS = 2048
DOCUMENTS_COUNTED = 16  # attached documents whose token counts are kept (count_window)


class TurnRunner:
    """Runs turns on one loaded model (the local backend). Use from one thread at a time."""

    kind = "local"

    def __init__(self, loaded, probe: MemoryProbe, decode_compiler=None):
        """decode_compiler: replaces torch.compile for the decode step (tests: ``lambda fn: fn``,
        then it also "compiles" on the CPU); None = torch.compile (Inductor) with a CUDA graph per cache, CUDA only."""
        from app.engine.local.session_pool import SessionPool

        self.loaded = loaded
        self.foresight = Foresight(loaded, probe)
        # The active conversation's cache, kept between turns (each turn keeps the longest common
        # prefix with its prompt, so edits, regenerations and summaries need no bookkeeping), and
        # the caches of recently used conversations parked in host memory.
        self.sessions = SessionPool()
        self.decoder = None  # a CompiledDecode once warm_up ran (CUDA); eager until then
        self._compile_options = dict(compiler=decode_compiler, require_cuda=decode_compiler is None)
        # the KV precision of the latest turn that decoded eagerly for lack of its compiled step
        self.uncompiled_kv_bits: int | None = None
        self._document_tokens: dict[tuple, int] = {}  # attached documents' whole-block tokens (count_window)
        self.cpu_meter = None  # CPU models: how many cores other programs keep busy
        self.cpu_threads = None  # intra-op threads of the latest CPU turn
        if loaded.model.device.type == "cpu":
            from app.engine.local.cpu_threads import CpuLoadMeter

            self.cpu_meter = CpuLoadMeter()

    @property
    def session(self):
        """The KVSession the next turn uses (the active conversation's)."""
        return self.sessions.active

    def activate(self, conversation_key: str, kept_cache_mib: int | None = None):
        """Make ``conversation_key``'s cache the active one (parking the previous chat's in host
        memory, restoring this one's if it was parked); "" keeps the active cache. Returns the
        session. Call it when the user opens a conversation, so the copy back to the device, and
        the capture of the decode step's CUDA graph for the restored cache, are done before the
        next turn (TTFT after a switch, issue 12 item 5); a session without a cache (a new chat)
        gets its empty cache object built here (`KVSession.prepare`), not in the turn."""
        budget = None if kept_cache_mib is None else kept_cache_mib * 2**20
        restoring = self.sessions.is_parked(conversation_key)
        session = self.sessions.activate(conversation_key, self.loaded.model.device, budget)
        if restoring and session.cache is not None and session.cached_tokens and self.decoder is not None:
            self.decoder.prepare(session.cache)  # its CUDA graph, so the first token replays at once
        if session.cache is None:
            session.prepare(self.loaded.model)  # a new chat's empty cache object, built before the turn
        return session

    @property
    def report(self):
        """The LoadReport of the model that answers (the backend protocol's report)."""
        return self.loaded.report

    def warm_up(self, on_status=None, kv_precision: str = KV_16):
        """After load: one measured prefill to calibrate the projection, then compile the decode
        step for every cache capacity, once per KV precision of `warm_up_kv_bits(kv_precision)`
        (the open chat's; CUDA; H200, 8B NF4, one decoder layer compiled for all: 7.5 s for one
        precision with a cold Inductor cache, 3.4 s with a warm one, tests/benchmarks/results/
        chat_path_h200.json; the whole forward, for other models: 58 / 15 s). Until it is ready
        decode runs eagerly; on the CPU it reports why it stays eager."""
        from app.engine.local.compiled_decode import warm_up

        self.calibrate()
        self.decoder = warm_up(self.loaded, on_status=on_status, kv_bits=self.warm_up_kv_bits(kv_precision),
                               decoder=self.decoder, **self._compile_options)
        return self.decoder.status

    def warm_up_kv_bits(self, kv_precision: str) -> tuple[int, ...]:
        """The KV precisions whose decode step the warm-up compiles, the open chat's first: 16
        always; 8 too when the chat is "8-bit", or "auto" and the model's whole context does not
        fit at 16-bit here (`Foresight.auto_context`, the fit plan's arithmetic: "auto" will then
        switch to 8-bit on a long chat) — when this model can run 8-bit KV at all."""
        foresight = self.foresight
        if not foresight.kv8_available or kv_precision == KV_16:
            return (16,)
        if kv_precision == KV_8:
            return (8, 16)
        return (16, 8) if foresight.auto_context < foresight.max_positions else (16,)

    def compile_missing(self, on_status=None):
        """After a turn that decoded eagerly because its KV precision's step was not compiled:
        compile it now (blocking: one compile, see `warm_up`; in the generating thread), so the
        next turn runs compiled. Returns the new DecodeStatus,
        None when nothing was missing."""
        from app.engine.local.compiled_decode import warm_up

        bits, self.uncompiled_kv_bits = self.uncompiled_kv_bits, None
        if bits is None or self.decoder is None or not self.decoder.missing(bits):
            return None
        warm_up(self.loaded, on_status=on_status, kv_bits=(bits,), decoder=self.decoder, **self._compile_options)
        release_memory()  # the scratch cache's blocks go back before the next turn is projected
        return self.decoder.status

    def calibrate(self, prompt_tokens: int = CALIBRATION_PROMPT_TOKENS) -> None:
        """Prefill `prompt_tokens` arbitrary tokens (one new token) and fold the measured peak into
        the projection's calibration. CUDA only: on the CPU the peak (RSS) is too noisy."""
        from app.engine.local import generation
        from app.engine.local.kv_session import KVSession, round_capacity

        foresight = self.foresight
        if self.loaded.model.device.type != "cuda":
            return
        positions = min(prompt_tokens, foresight.max_positions - 1)
        kv_new = round_capacity(positions + 1) - positions if foresight.static_cache else 1
        projection = foresight.project(positions, kv_new)
        vocab = self.loaded.model.config.get_text_config().vocab_size
        ids = [(7 + 31 * i) % vocab for i in range(positions)]
        foresight.begin_measurement()
        for _ in generation.stream_reply(self.loaded.model, self.loaded.tokenizer, ids,
                                         SamplingParams(max_new_tokens=1, temperature=0.0), frozenset(),
                                         threading.Event(), (), foresight.chunk, session=KVSession()):
            pass
        foresight.end_measurement(projection, positions, 1)
        release_memory()

    def run_turn(self, messages: list[Message], summary: SummaryState, settings: GenerationSettings,
                 stop_event: threading.Event, continue_final: bool = False,
                 override_memory: bool = False, conversation_key: str = "",
                 documents=(), kv_precision: str = KV_16) -> Iterator[TurnEvent]:
        """Plan, admit, stream and summarize one turn of the conversation ``conversation_key``
        (its kept KV cache is used; "" = the active cache). Never raises for a failed generation:
        the stream always ends with TurnRefused, TurnFailed or TurnCompleted (a stream that hangs when generation
        dies, transformers #22576), followed by
        the summary events when turns were evicted. documents: ExtractedDocuments attached to the
        newest user message, fitted into it (app.engine.documents.turn) and said in DocumentsFitted.
        kv_precision: the conversation's KV cache precision (app.core.kv_precision); the plan
        says which precision runs (``plan.kv_bits``) and a switch drops the chat's cache first."""
        self.activate(conversation_key, settings.kept_chat_cache_mib)

        def plan_turn(messages):
            session = self.session
            return self.foresight.plan(messages, summary, settings.system_prompt, settings.max_new_tokens,
                                       settings.context_tokens, continue_final, session.token_ids,
                                       session.capacity_tokens or 0, settings.summary_fold_at,
                                       settings.summary_keep_turns, kv_precision, session.kv_bits,
                                       session.cache_bytes)

        try:
            plan = plan_turn(messages)
        except ValueError as exc:  # nothing left to answer; the traceback, should it be another cause
            log.warning("the turn could not be planned", exc_info=True)
            yield TurnFailed(str(exc), "", TurnRecord(0, 0, 0, None, 0, "failed"))
            return
        if documents and plan.window.fits and not continue_final:
            try:
                messages, prepared = self._fit_documents(messages, documents, plan, settings)
                plan = plan_turn(messages)
            except Exception as exc:  # not expected (new-user trial 11: a bare ValueError, no traceback)
                log.exception("fitting the attached documents failed")
                yield TurnFailed(describe_failure(exc), "", TurnRecord(0, 0, 0, None, 0, "failed"))
                return
            yield DocumentsFitted(prepared.fits)
        yield TurnPlanned(plan)
        memory_override = override_memory and plan.window.fits and plan.decision.cause == "memory"
        if not plan.admitted and not memory_override:
            yield TurnRefused(plan.decision)
            return
        ok = yield from self._generate(plan, settings, stop_event, continue_final)
        if ok:
            yield from self._summarize(plan, summary, settings, stop_event)

    def _fit_documents(self, messages: list[Message], documents, plan: TurnPlan, settings: GenerationSettings):
        """The messages with `documents` fitted into the last one, and the PreparedMessage
        (app.engine.documents.turn.fit_documents)."""
        from app.engine.documents.turn import fit_documents

        return fit_documents(self.foresight, messages, documents, plan, settings.system_prompt)

    def count_window(self, messages: list[Message], summary: SummaryState, settings: GenerationSettings,
                     documents=()):
        """The window the next turn's prompt would keep of `messages` (a WindowResult: tokens
        used, the limit, the turns kept), counted with this model's tokenizer and the turn's own
        policy; nothing runs, no memory is projected. After an answer the next prompt ends with
        a message not written yet, counted as an empty one (app.core.history.next_turn_window: the
        last exchange may leave the window; `kept` holds the conversation's turns only).
        documents: the ExtractedDocuments attached to the message being written: prompt_tokens
        counts ≈ what they would add (app.engine.documents.turn.document_tokens) and the window
        keeps the turns that fit beside them; each document is tokenized once (kept per document).
        In an empty chat the documents go with its first message, not written yet: counted as an
        empty user turn carrying them (the system prompt, that turn's template and the documents).
        Raises ValueError when there is no turn (an empty chat with no documents)."""
        if not messages and not documents:
            raise ValueError("no turn to count: an empty chat with no documents")

        def window(max_new_tokens: int):
            return next_turn_window(messages, lambda counted: self.foresight.window(
                counted, summary, settings.system_prompt, max_new_tokens, settings.context_tokens,
                settings.summary_fold_at, settings.summary_keep_turns))

        plain = window(settings.max_new_tokens)
        if not documents:
            return plain
        from app.engine.documents.turn import document_tokens

        added = document_tokens(self.foresight, [self._whole_tokens(d) for d in documents], plain,
                                settings.system_prompt)
        if added <= 0:
            return plain
        beside = window(settings.max_new_tokens + added)  # the budget less what they take
        # the last exchange is an older turn for the next prompt: it may leave for them (kept: none)
        return replace(beside, prompt_tokens=min(beside.prompt_tokens + added, plain.limit_tokens),
                       limit_tokens=plain.limit_tokens, budget=plain.budget)

    def _whole_tokens(self, document) -> int:
        """The whole-block tokens of an attached document, counted once per document (the
        meter recounts whenever the next prompt changes; a document's text never does)."""
        key = (document.name, len(document.text), hash(document.text))
        if key not in self._document_tokens:
            from app.engine.documents.turn import whole_tokens

            if len(self._document_tokens) >= DOCUMENTS_COUNTED:
                self._document_tokens.clear()
            self._document_tokens[key] = whole_tokens(self.foresight, document)
        return self._document_tokens[key]

    def summarize_now(self, messages: list[Message], summary: SummaryState, settings: GenerationSettings,
                      stop_event: threading.Event) -> Iterator[TurnEvent]:
        """Fold every turn but the newest `settings.summary_keep_turns` into the summary now
        ("Summarize now"): the summary events, or a SummaryFinished that folds nothing new."""
        try:
            plan = self.foresight.plan(messages, summary, settings.system_prompt, settings.max_new_tokens,
                                       settings.context_tokens, fold_at=0.0, keep_turns=settings.summary_keep_turns)
        except ValueError as exc:
            yield SummaryFailed(str(exc))
            return
        yield from fold_now(self._summarize(plan, summary, settings, stop_event), plan.window, summary, settings)

    def _generate(self, plan: TurnPlan, settings: GenerationSettings, stop_event: threading.Event,
                  continue_final: bool = False):
        from app.engine.local import generation

        loaded, foresight = self.loaded, self.foresight
        params = SamplingParams(settings.max_new_tokens, settings.temperature, settings.top_p, settings.seed,
                                settings.top_k, settings.min_p, settings.repetition_penalty)
        # the chunk the admitted projection was made for (one shot when memory allows)
        chunk = plan.projection.basis.chunk_size if plan.projection is not None else foresight.chunk
        if self.cpu_meter is not None:
            from app.engine.local.cpu_threads import apply_cpu_threads

            self.cpu_threads = apply_cpu_threads(settings.cpu_threads, self.cpu_meter)
        partial: list[str] = []
        error = outcome = None
        if self.session.set_kv_bits(plan.kv_bits):
            release_memory()  # the cache in the other precision is gone before the new one fills
        if self.decoder is not None and self.decoder.missing(plan.kv_bits):
            self.uncompiled_kv_bits = plan.kv_bits  # decodes eagerly now; compile_missing after the turn
        # the NF4 prefill as admitted: whole weights where memory allows, slices where it does not
        self._slice_nf4_prefill(plan.projection is None or plan.projection.basis.model.nf4_sliced)
        foresight.begin_measurement()
        try:
            opening = "" if continue_final else loaded.prompt_format.reasoning_opening
            for event in generation.with_opening(generation.stream_reply(
                    loaded.model, loaded.tokenizer, list(plan.prompt_ids), params, loaded.stop_ids,
                    stop_event, loaded.prompt_format.stop_strings, chunk,
                    session=self.session, decoder=self.decoder, capacity_tokens=plan.capacity_tokens), opening):
                if isinstance(event, TextDelta):
                    partial.append(event.text)
                    yield event
                elif isinstance(event, PrefillProgress):
                    yield event
                elif isinstance(event, ReplyFinished):
                    peak = foresight.end_measurement(plan.projection, event.prefill_tokens, event.new_tokens)
                    yield TurnCompleted(event, TurnRecord(event.prompt_tokens, event.prefill_tokens,
                                                          event.new_tokens, plan.projection.peak, peak,
                                                          event.stop_reason, admitted=plan.admitted))
        # every failure ends the stream with an event (a stream that hangs when generation dies, transformers #22576)
        except samplers.NonFiniteLogits as exc:  # the model's numbers, not a fault here: no traceback
            log.info("generation failed: %s", exc)
            outcome, error = "failed", describe_failure(exc)
        except Exception as exc:
            # log text, not exc_info: a kept LogRecord would pin the frames and their tensors
            log.error("generation failed\n%s", traceback.format_exc())
            outcome = "oom" if type(exc).__name__ == "OutOfMemoryError" else "failed"
            error = describe_failure(exc)
        finally:
            self._slice_nf4_prefill(True)  # summaries and calibration are projected sliced
        if error is None:
            return True
        # Outside the except block the exception and its frames (inputs, logits, cache) are gone,
        # so the memory really returns (an OOM not recovered, pytorch #27600).
        release_memory()
        now = foresight.probe.sample()
        if outcome == "oom":
            error += (f"; allocated memory is back to {now.allocated / 2**20:,.0f} MiB "
                      f"(post-load baseline {foresight.baseline_allocated / 2**20:,.0f} MiB)")
        yield TurnFailed(error, "".join(partial), TurnRecord(
            len(plan.prompt_ids), 0, 0, plan.projection.peak, now.peak, outcome, admitted=plan.admitted))
        return False

    def _slice_nf4_prefill(self, sliced: bool) -> None:
        if self.loaded.report.nf4_prefill_sliced:
            from app.engine.local import nf4_prefill

            nf4_prefill.set_sliced(self.loaded.model, sliced)

    def _summarize(self, plan: TurnPlan, summary: SummaryState, settings: GenerationSettings,
                   stop_event: threading.Event):
        from app.engine.local.summarize import summarize

        count = self.foresight.count_tokens
        yield from summary_events(
            plan.window, summary, settings, stop_event, count, self.loaded.prompt_format.system_role,
            lambda summary_plan, stop: summarize(self.loaded, summary_plan, count, stop, self.foresight.chunk),
            after_failure=release_memory)
