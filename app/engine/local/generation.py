"""Streaming generation: a plain generator under `torch.inference_mode()` that knows
nothing of the UI (nanochat `engine.py`, gpt-fast `generate.py`).

The loop is our own rather than `model.generate()`: it prefills with logits for the last
position only (`logits_to_keep=1`, the long-paste logits spike, transformers #30860), in chunks on CUDA so the
activation spike
stays bounded, then decodes one token at a time. A caller-owned `KVSession` keeps the cache
between turns so only new tokens are prefilled; on CUDA the cache is a preallocated
StaticCache and the decode step may run as a compiled CUDA graph (`compiled_decode`).
Stop is a `threading.Event` polled before every decode step (and between prefill chunks), so
a press of Stop ends the reply within one token (Stop that does not stop, text-generation-webui #1749). The compiled
path runs one step
ahead of the host (`_OneStepAhead`): the GPU never waits for Python between tokens.
"""

import functools
import inspect
import threading
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, replace

import torch

from app.engine.events import PrefillProgress, ReplyFinished, TextDelta
from app.engine.local import samplers
from app.engine.local.detokenize import IncrementalDetokenizer

CUDA_PREFILL_CHUNK = 1024
"""Default prefill chunk on CUDA, tokens (see `default_prefill_chunk`)."""
CPU_PREFILL_CHUNK = 256
"""Largest prefill chunk on the CPU, tokens; each chunk is sized from the time the previous ones
took (`next_cpu_chunk`), so Stop, polled between chunks, lands within about a second."""
CPU_CHUNK_SECONDS = 0.75
"""What one CPU prefill chunk aims to last, seconds. A fixed 256-token chunk lasted up to 12 s
deep in a 4k-token prompt on the shared 2-core box under load (attention grows with the
position), so Stop waited that long. Each forward pass also streams all the weights once
(~0.1 s for the default model on one thread), so shorter chunks cost throughput. Measured on
that box under load (tests/benchmarks/results/prefill_stop_cpu.json, 3,072-token prompt, one
thread): Stop 12 s in landed after 2.3 / 3.1 s with 256-token chunks, 0.35 / 1.1 s with sized
ones; the whole prefill took 41.5 / 43.3 s against 62.9 / 50.3 s."""
CPU_FIRST_CHUNK = 16
"""The first CPU chunk, tokens, before any chunk has been timed (the prompt may start deep in a
cached conversation, where tokens are slowest)."""
_CPU_MIN_CHUNK = 8
PREFILL_PROGRESS_AFTER_S = 0.5
"""A prefill reports its progress (PrefillProgress) once it has run this long, seconds: a short
prompt's (0.1-0.3 s on the CPU, first chunk CPU_FIRST_CHUNK tokens) would only flash in the
answer bubble; a 5,200-token file took 2.5 min on the CPU (product trial)."""


@dataclass(frozen=True)
class SamplingParams:
    """max_new_tokens in tokens; temperature 0 = greedy; top_p nucleus mass in (0, 1]; top_k
    tokens kept (0 = off); min_p fraction of the top token's probability (0 = off);
    repetition_penalty 1 = off (see `samplers`); seed None = unseeded."""

    max_new_tokens: int = 512
    temperature: float = 0.7
    top_p: float = 0.95
    seed: int | None = None
    top_k: int = 0
    min_p: float = 0.0
    repetition_penalty: float = 1.0


def sample_next(logits: torch.Tensor, params: SamplingParams,
                generator: torch.Generator | None) -> int:
    """One token id from last-position logits of shape (vocab,), float32.

    Greedy when temperature <= 0; otherwise transformers' warpers (temperature, top-k, top-p,
    min-p; `samplers.process`) then a draw, always keeping the most probable token.
    """
    return int(sample_token(logits, params, generator))


def sample_token(logits: torch.Tensor, params: SamplingParams,
                 generator: torch.Generator | None, seen: torch.Tensor | None = None, *,
                 uniform: torch.Tensor | None = None, out: torch.Tensor | None = None) -> torch.Tensor:
    """`sample_next` without leaving the device: a (1,) long tensor on ``logits.device``.

    No op here waits for the device when ``generator`` lives on ``logits.device`` (see
    `samplers.sample`), so the compiled decode loop can launch the next step before reading the
    token. seen: the turn's `samplers.seen_mask` for the repetition penalty, updated in place.
    uniform, out: see `samplers.sample`."""
    return samplers.sample(logits, params, generator, seen, uniform=uniform, out=out)


@functools.cache
def cache_kwarg(forward_cls: type) -> str:
    """transformers renamed `past_key_values` to `cache` (5.2x, old name removed in 5.40)."""
    return "cache" if "cache" in inspect.signature(forward_cls.forward).parameters else "past_key_values"


_cache_kwarg = cache_kwarg  # old private name, kept for callers


def forward_step(model, input_ids: torch.Tensor, cache, logits_to_keep: int = 1, **kwargs):
    """One forward pass appending `input_ids` (shape (1, n)) to `cache`; ``kwargs`` go to the
    attention function (e.g. ``attention.KV_SPAN_KWARG``)."""
    return model(input_ids=input_ids, use_cache=True, logits_to_keep=logits_to_keep,
                 **{cache_kwarg(type(model)): cache}, **kwargs)


def _span_attention(model, cache) -> bool:
    """The model's attention takes ``kv_span`` (Headroom's packed SDPA) and the cache is static."""
    from transformers import StaticCache

    from app.engine.local.attention import PACKED_SDPA

    return (isinstance(cache, StaticCache)
            and getattr(model.config, "_attn_implementation", None) == PACKED_SDPA)


def default_prefill_chunk(device: torch.device | str) -> int:
    """Prefill chunk used when the caller passes None: CUDA_PREFILL_CHUNK tokens on CUDA (bounded
    activation spike, ../shared/gpu/README.md: 32k prompt 7.86 GiB one-shot vs 4.86 GiB in
    1,024-token chunks); CPU_PREFILL_CHUNK on the CPU, so Stop is honoured within about a
    second even during a long paste."""
    return CUDA_PREFILL_CHUNK if torch.device(device).type == "cuda" else CPU_PREFILL_CHUNK


def next_cpu_chunk(tokens: int, seconds: float, overhead: float, largest: int) -> int:
    """Tokens for the next CPU prefill chunk after one of `tokens` took `seconds`.

    A chunk lasts about overhead + tokens × cost per token; `overhead` (seconds) is bounded by
    the fastest chunk so far, the cost per token is read off this one. The next chunk fills
    CPU_CHUNK_SECONDS, or twice the overhead where the overhead alone is that large (two
    threads fighting another program for two cores took 1.5 s for 16 tokens: chunks that small
    would spend most of the prefill on overhead); at most 4× the last (the cost per token grows
    with the position), between 8 and `largest`."""
    per_token = max(seconds - overhead, 0.05 * seconds) / tokens
    budget = max(CPU_CHUNK_SECONDS, 2 * overhead) - overhead
    return max(_CPU_MIN_CHUNK, min(largest, 4 * tokens, int(budget / max(per_token, 1e-6))))


class _StoppedInPrefill(Exception):
    """Internal: Stop arrived between prefill chunks."""


def prefill(model, input_ids: torch.Tensor, cache, chunk_tokens: int | None,
            stop_event: threading.Event | None = None, cached_tokens: int = 0) -> torch.Tensor | None:
    """Run `input_ids` (shape (1, n)) through the model into `cache`; return the last
    position's logits, shape (vocab,), float32, or None when stopped (see `prefill_steps`, which
    this runs to the end without its progress events)."""
    steps = prefill_steps(model, input_ids, cache, chunk_tokens, stop_event, cached_tokens)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def prefill_steps(model, input_ids: torch.Tensor, cache, chunk_tokens: int | None,
                  stop_event: threading.Event | None = None,
                  cached_tokens: int = 0) -> Generator[PrefillProgress, None, torch.Tensor | None]:
    """Run `input_ids` (shape (1, n)) through the model into `cache`, yielding PrefillProgress
    (tokens of this prefill done, n) after each chunk but the last once the prefill has run
    PREFILL_PROGRESS_AFTER_S, and return the last position's logits, shape (vocab,), float32
    (``logits = yield from prefill_steps(...)``). With chunk_tokens, the prompt goes in slices
    of at most that many tokens, bounding the activation spike by the chunk, not the prompt. On
    the CPU with a `stop_event`, slices are sized from the last one's measured time
    (`next_cpu_chunk`, starting at CPU_FIRST_CHUNK) so that each lasts ~CPU_CHUNK_SECONDS
    (longer only where a forward pass's own overhead is that large).
    Returns None when `stop_event` is set between chunks (Stop during a long paste,
    text-generation-webui #1749).
    cached_tokens: tokens already in the cache; on a static cache with Headroom's attention each
    chunk attends to the filled span only (cached + chunk end), on the flash kernel where it
    applies (`attention.KV_SPAN_KWARG`).
    Progress costs no device sync: on CUDA a chunk counts once its kernels are queued."""
    from app.engine.local.attention import KV_SPAN_KWARG

    n = input_ids.shape[1]
    largest = chunk_tokens or n
    timed = bool(chunk_tokens) and stop_event is not None and input_ids.device.type == "cpu"
    step = min(CPU_FIRST_CHUNK, largest) if timed else largest
    spans = _span_attention(model, cache)
    logits = None
    start, overhead = 0, float("inf")
    began_prefill = time.perf_counter()
    while start < n:
        if stop_event is not None and stop_event.is_set():
            return None
        end = min(start + step, n)
        extra = {KV_SPAN_KWARG: cached_tokens + end} if spans else {}
        began = time.perf_counter()
        out = forward_step(model, input_ids[:, start:end], cache, **extra)
        logits = out.logits[0, -1].float()
        del out
        if timed:
            seconds = time.perf_counter() - began
            overhead = min(overhead, seconds)
            step = next_cpu_chunk(end - start, seconds, overhead, largest)
        start = end
        if start < n and time.perf_counter() - began_prefill >= PREFILL_PROGRESS_AFTER_S:
            yield PrefillProgress(start, n)
    return logits


def _pick_token(logits: torch.Tensor, params: SamplingParams, generator, seen=None) -> int:
    # on the device: only the id crosses to the host (a seeded generator lives on the CPU)
    return int(sample_token(logits, params, generator, seen))


class _OneStepAhead:
    """Compiled decode run one step ahead of the host (gpt-fast keeps tokens on the device too).

    ``advance(logits, launch)`` samples on the device, writes the token into the step's input
    buffer, starts its copy to pinned host memory, and, when ``launch``, replays the compiled
    step for that token *before* waiting for the copy. The host then reads the token, detokenizes
    and checks stop conditions while the GPU already computes the next step, so the per-token host
    cost (graph replay and guard checks, detokenizer, Python) hides behind the GPU's instead of
    adding to it: measured on the H200, 99 tok/s serial (5.8 ms GPU + ~4.3 ms host per token).
    A launched step feeds the token into the cache even when the token turns out to end the
    reply; the caller then counts it among the cached tokens.

    Between two steps on the GPU only the sampler runs: it writes the token straight into the
    captured step's own token buffer (`CompiledDecode.token_buffer`: no copy kernel into a buffer of
    ours, none from ours into the graph's), its uniforms are drawn UNIFORMS_AHEAD at a time (no
    generator launch a token), and the token's copy to the host runs on a stream of its own, so the
    next step does not wait behind that transfer.
    Returns (token id, logits of the launched step or None).
    """

    UNIFORMS_AHEAD = 256  # the sampler's uniforms drawn in one launch (CUDA)

    def __init__(self, decoder, cache, params: SamplingParams, device: torch.device, seed: int | None,
                 seen: torch.Tensor | None = None):
        self.decoder, self.cache, self.params, self.seen = decoder, cache, params, seen
        self.cuda = device.type == "cuda"
        self.step_in = decoder.token_buffer() if self.cuda else torch.zeros((1, 1), dtype=torch.long, device=device)
        self.host = torch.zeros((1,), dtype=torch.long, pin_memory=self.cuda)
        self.sampled = torch.cuda.Event() if self.cuda else None
        self.copied = torch.cuda.Event() if self.cuda else None
        self.copy_stream = torch.cuda.Stream(device=device) if self.cuda else None
        self.generator = torch.Generator(device=device).manual_seed(seed) if seed is not None else None
        self.device = device
        self.uniforms: torch.Tensor | None = None  # drawn ahead (CUDA, sampled); the next one at self.taken
        self.taken = 0

    def launch(self) -> torch.Tensor:
        """Replay the compiled step for the token in the step's input buffer; its logits."""
        return self.decoder.step(self.step_in, self.cache)

    def _uniform(self) -> torch.Tensor | None:
        """The next draw's u (1,) on the device (CUDA, sampled), else None (the sampler draws its own)."""
        if not self.cuda or self.params.temperature <= 0:
            return None
        if self.uniforms is None or self.taken == self.uniforms.numel():
            self.uniforms = torch.rand(self.UNIFORMS_AHEAD, generator=self.generator, device=self.device)
            self.taken = 0
        self.taken += 1
        return self.uniforms[self.taken - 1:self.taken]

    def advance(self, logits: torch.Tensor, launch: bool) -> tuple[int, torch.Tensor | None]:
        into = self.step_in.view(1)
        token = sample_token(logits, self.params, self.generator, self.seen, uniform=self._uniform(), out=into)
        if token.data_ptr() != into.data_ptr():  # a sampler path that made its own tensor
            self.step_in.copy_(token.view(1, 1))
        if self.cuda:
            self.sampled.record()
            self.copy_stream.wait_event(self.sampled)
            with torch.cuda.stream(self.copy_stream):
                self.host.copy_(into, non_blocking=True)
                self.copied.record()
        else:
            self.host.copy_(token)
        following = self.launch() if launch else None
        if self.copied is not None:
            self.copied.synchronize()  # waits for this token only, not for the launched step
        return int(self.host[0]), following


@torch.inference_mode()
def stream_reply(model, tokenizer, prompt_ids: list[int], params: SamplingParams,
                 stop_ids: frozenset[int], stop_event: threading.Event,
                 stop_strings: tuple[str, ...] = (),
                 prefill_chunk_tokens: int | None = None, *, session=None,
                 decoder=None, capacity_tokens: int | None = None,
                 ) -> Iterator[PrefillProgress | TextDelta | ReplyFinished]:
    """Generate a reply to `prompt_ids`, yielding TextDelta pieces and one ReplyFinished; before
    them, PrefillProgress between the prefill's chunks when it runs long (`prefill_steps`).

    session: an `app.engine.local.kv_session.KVSession` kept by the caller between turns; only the
    prompt tokens after the common prefix with its cache are prefilled (ReplyFinished
    .prefill_tokens counts them). Without one, a throwaway session is used.
    decoder: an `app.engine.local.compiled_decode.CompiledDecode`; its compiled step runs when it is
    ready for the session's static cache (its capacity and KV format), else decode is eager;
    nothing is compiled here.
    prefill_chunk_tokens: None = `default_prefill_chunk(model.device)`; 0 = one shot.
    capacity_tokens: slots for a static cache that must grow this turn (the plan's; default:
    rounded up to a multiple of CAPACITY_STEP).

    Inputs move to `model.device`; the model itself is never moved (.to() on a 4-bit model raises, bitsandbytes #547).
    Raises `samplers.NonFiniteLogits` when the prefill's last-position logits hold NaN or infinity
    (damaged weights, an overflowing compute dtype), before any token is picked, or when a draw
    meets them later; greedy decode does not check them per token (that would sync every step).
    On any exception
    (e.g. torch.cuda.OutOfMemoryError) the session drops its cache and no tensor stays
    referenced by this frame; the exception propagates and the text yielded so far is the
    partial answer.
    """
    from app.engine.local.kv_session import KVSession

    started = time.perf_counter()
    generator = torch.Generator().manual_seed(params.seed) if params.seed is not None else None
    detok = IncrementalDetokenizer(tokenizer, stop_strings)
    chunk = default_prefill_chunk(model.device) if prefill_chunk_tokens is None else prefill_chunk_tokens
    own_session = session is None
    session = KVSession() if own_session else session
    generated: list[int] = []
    first_token_at = None
    stop_reason = "length"
    path = "eager"
    cache = logits = step = ahead = seen = None
    try:
        cache, reused = session.begin_turn(model, prompt_ids, params.max_new_tokens, capacity_tokens)
        fed = list(prompt_ids)
        new_ids = torch.tensor([prompt_ids[reused:]], dtype=torch.long, device=model.device)
        logits = yield from prefill_steps(model, new_ids, cache, chunk or None, stop_event, reused)
        del new_ids
        if logits is None:  # stopped during prefill: nothing generated, the cache is partial
            stop_reason = "stopped"
            session.invalidate()
            raise _StoppedInPrefill
        if not bool(torch.isfinite(logits).all()):  # one host sync a turn, never one a token
            raise samplers.NonFiniteLogits()
        compiled = decoder is not None and decoder.can_run(cache)
        path = "compiled" if compiled else ("eager-static" if session.is_static else "eager")
        why = decoder.eager_reason(cache) if decoder is not None and not compiled else ""
        if why:  # the step is compiled for another KV format; this one compiles after the turn
            path += f" ({why})"
        seen = samplers.seen_mask(prompt_ids, logits) if params.repetition_penalty != 1.0 else None
        ahead = _OneStepAhead(decoder, cache, params, model.device, params.seed, seen) if compiled else None
        step = torch.zeros((1, 1), dtype=torch.long, device=model.device)
        while len(generated) < params.max_new_tokens:
            if ahead is not None:
                # the first token is read before its step launches: a launch may record a CUDA
                # graph (new cache or capacity), which belongs to decode, not to TTFT
                launch = (first_token_at is not None and len(generated) + 1 < params.max_new_tokens
                          and not stop_event.is_set())
                token, logits = ahead.advance(logits, launch)
                if launch:
                    fed.append(token)  # the launched step has written its keys and values
            else:
                token = _pick_token(logits, params, generator, seen)
            if first_token_at is None:
                first_token_at = time.perf_counter()
            if token in stop_ids:
                stop_reason = "eos"
                break
            generated.append(token)
            delta = detok.push(token)
            if delta:
                yield TextDelta(delta)
            if detok.hit_stop_string:
                stop_reason = "stop_string"
                break
            if stop_event.is_set():
                stop_reason = "stopped"
                break
            if len(generated) >= params.max_new_tokens:
                break
            if ahead is None:
                step.fill_(token)
                logits = forward_step(model, step, cache).logits[0, -1].float()
                fed.append(token)
            elif logits is None:  # the first token, shown; now its step
                logits = ahead.launch()
                fed.append(token)
        session.commit(fed)
    except _StoppedInPrefill:
        pass
    except BaseException:
        # OOM recovery (an OOM not recovered, pytorch #27600): nothing on this frame may keep a tensor alive through
        # the traceback.
        cache = logits = step = ahead = seen = None
        session.invalidate()
        raise
    finally:
        cache = logits = step = ahead = seen = None
        cached_after = session.cached_tokens
        if own_session:
            session.invalidate()  # a throwaway session frees its cache with the turn
    tail = detok.flush()
    if tail:
        yield TextDelta(tail)
    ended = time.perf_counter()
    first = first_token_at or ended
    yield ReplyFinished(
        text=detok.text,
        stop_reason=stop_reason,
        prompt_tokens=len(prompt_ids),
        prefill_tokens=session.last_prefill_tokens,
        new_tokens=len(generated),
        ttft_s=first - started,
        decode_tokens_per_s=(len(generated) - 1) / (ended - first) if len(generated) > 1 and ended > first else 0.0,
        reused_tokens=session.last_reused_tokens,
        cached_tokens=cached_after,
        decode_path=path,
    )


def stream_chat_reply(loaded, messages: list[dict], params: SamplingParams,
                      stop_event: threading.Event, continue_final: bool = False,
                      prefill_chunk_tokens: int | None = None, *, session=None,
                      decoder=None) -> Iterator[PrefillProgress | TextDelta | ReplyFinished]:
    """Render `messages` with the model's prompt format and stream the reply.

    `loaded` is an `app.engine.loading.loader.LoadedModel`; messages are {"role", "content"} dicts.
    session / decoder: see `stream_reply` (KV reuse across turns, compiled decode).
    """
    from app.engine.local.chat_format import encode_messages

    fmt = loaded.prompt_format
    prompt_ids = encode_messages(loaded.tokenizer, fmt, messages, continue_final)
    yield from with_opening(stream_reply(loaded.model, loaded.tokenizer, prompt_ids, params, loaded.stop_ids,
                                         stop_event, fmt.stop_strings, prefill_chunk_tokens,
                                         session=session, decoder=decoder),
                            "" if continue_final else fmt.reasoning_opening)


def with_opening(events: Iterator, opening: str) -> Iterator:
    """`events` (stream_reply's) as if the reply began with `opening`: the "<think>\n" a chat
    template wrote at the end of the prompt (PromptFormat.reasoning_opening). The reply then
    reads as the model's reasoning from its first token (app.core.reasoning), in the transcript
    as in the store, and Continue renders the same prompt again. Said after the prefill, with the
    first text or the end."""
    said = not opening
    for event in events:
        if not said and not isinstance(event, PrefillProgress):
            said = True
            yield TextDelta(opening)
        if opening and isinstance(event, ReplyFinished):
            event = replace(event, text=opening + event.text)
        yield event
