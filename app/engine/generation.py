"""Streaming generation: a plain generator under `torch.inference_mode()` that knows
nothing of the UI (nanochat `engine.py`, gpt-fast `generate.py`).

The loop is our own rather than `model.generate()`: it prefills with logits for the last
position only (`logits_to_keep=1`, case C02), optionally in chunks so the activation spike
stays bounded, then decodes one token at a time. Stop is a `threading.Event` polled by a
`StoppingCriteria` before every decode step, so a press of Stop ends the reply within one
token (case C20).
"""

import functools
import inspect
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from transformers import DynamicCache, StoppingCriteria

from app.engine.detokenize import IncrementalDetokenizer


@dataclass(frozen=True)
class SamplingParams:
    """max_new_tokens in tokens; temperature 0 = greedy; top_p nucleus mass in (0, 1]."""

    max_new_tokens: int = 512
    temperature: float = 0.7
    top_p: float = 0.95
    seed: int | None = None


@dataclass(frozen=True)
class TextDelta:
    """New text to append to the reply; never ends inside a multi-byte character."""

    text: str


@dataclass(frozen=True)
class ReplyFinished:
    """The reply ended. stop_reason: "eos" (end-of-turn token), "stop_string", "length"
    (max_new_tokens), or "stopped" (the user pressed Stop).

    prefill_tokens: tokens run through the model before the first new token (all of the
    prompt here). ttft_s: seconds from the start of the turn to the first new token.
    decode_tokens_per_s: new tokens after the first over the seconds they took.
    """

    text: str
    stop_reason: str
    prompt_tokens: int
    prefill_tokens: int
    new_tokens: int
    ttft_s: float
    decode_tokens_per_s: float


class StopOnEvent(StoppingCriteria):
    """True once `event` is set; polled before every decode step (gpt4all chatllm.cpp)."""

    def __init__(self, event: threading.Event):
        self.event = event

    def __call__(self, input_ids, scores, **kwargs) -> torch.BoolTensor:
        return torch.full((input_ids.shape[0],), self.event.is_set(), dtype=torch.bool)


def sample_next(logits: torch.Tensor, params: SamplingParams,
                generator: torch.Generator | None) -> int:
    """One token id from last-position logits of shape (vocab,), float32.

    Greedy when temperature <= 0; otherwise temperature scaling then nucleus (top-p)
    filtering (Holtzman et al. 2019, https://arxiv.org/abs/1904.09751), always keeping the
    most probable token.
    """
    if params.temperature <= 0:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits / params.temperature, dim=-1)
    if params.top_p < 1.0:
        sorted_probs, order = torch.sort(probs, descending=True)
        outside = torch.cumsum(sorted_probs, dim=-1) - sorted_probs > params.top_p
        sorted_probs[outside] = 0.0
        probs = torch.zeros_like(probs).scatter_(0, order, sorted_probs)
    return int(torch.multinomial(probs, 1, generator=generator))


@functools.cache
def _cache_kwarg(forward_cls: type) -> str:
    """transformers renamed `past_key_values` to `cache` (5.2x, old name removed in 5.40)."""
    return "cache" if "cache" in inspect.signature(forward_cls.forward).parameters else "past_key_values"


def forward_step(model, input_ids: torch.Tensor, cache, logits_to_keep: int = 1):
    """One forward pass appending `input_ids` (shape (1, n)) to `cache`."""
    return model(input_ids=input_ids, use_cache=True, logits_to_keep=logits_to_keep,
                 **{_cache_kwarg(type(model)): cache})


def prefill(model, input_ids: torch.Tensor, cache, chunk_tokens: int | None) -> torch.Tensor:
    """Run `input_ids` (shape (1, n)) through the model into `cache`; return the last
    position's logits, shape (vocab,), float32. With chunk_tokens, the prompt goes in slices
    of that many tokens, bounding the activation spike by the chunk, not the prompt."""
    n = input_ids.shape[1]
    step = chunk_tokens or n
    logits = None
    for start in range(0, n, step):
        out = forward_step(model, input_ids[:, start:start + step], cache)
        logits = out.logits[0, -1].float()
        del out
    return logits


@torch.inference_mode()
def stream_reply(model, tokenizer, prompt_ids: list[int], params: SamplingParams,
                 stop_ids: frozenset[int], stop_event: threading.Event,
                 stop_strings: tuple[str, ...] = (),
                 prefill_chunk_tokens: int | None = None) -> Iterator[TextDelta | ReplyFinished]:
    """Generate a reply to `prompt_ids`, yielding TextDelta pieces and one ReplyFinished.

    Inputs move to `model.device`; the model itself is never moved (C12). Exceptions (e.g.
    torch.cuda.OutOfMemoryError) propagate to the caller after the cache is released; the
    text yielded so far is the partial answer.
    """
    started = time.perf_counter()
    stop_criteria = StopOnEvent(stop_event)
    generator = torch.Generator().manual_seed(params.seed) if params.seed is not None else None
    detok = IncrementalDetokenizer(tokenizer, stop_strings)
    cache = DynamicCache(config=model.config)
    input_ids = torch.tensor([prompt_ids], dtype=torch.long, device=model.device)
    generated: list[int] = []
    first_token_at = None
    stop_reason = "length"
    try:
        logits = prefill(model, input_ids, cache, prefill_chunk_tokens)
        while len(generated) < params.max_new_tokens:
            token = sample_next(logits, params, generator)
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
            if stop_criteria(input_ids, None).item():
                stop_reason = "stopped"
                break
            if len(generated) >= params.max_new_tokens:
                break
            step = torch.tensor([[token]], dtype=torch.long, device=model.device)
            logits = forward_step(model, step, cache).logits[0, -1].float()
    finally:
        del cache  # release the KV cache before the caller handles any error
    tail = detok.flush()
    if tail:
        yield TextDelta(tail)
    ended = time.perf_counter()
    first = first_token_at or ended
    yield ReplyFinished(
        text=detok.text,
        stop_reason=stop_reason,
        prompt_tokens=len(prompt_ids),
        prefill_tokens=len(prompt_ids),
        new_tokens=len(generated),
        ttft_s=first - started,
        decode_tokens_per_s=(len(generated) - 1) / (ended - first) if len(generated) > 1 and ended > first else 0.0,
    )


def stream_chat_reply(loaded, messages: list[dict], params: SamplingParams,
                      stop_event: threading.Event, continue_final: bool = False,
                      prefill_chunk_tokens: int | None = None) -> Iterator[TextDelta | ReplyFinished]:
    """Render `messages` with the model's prompt format and stream the reply.

    `loaded` is an `app.engine.loader.LoadedModel`; messages are {"role", "content"} dicts.
    """
    from app.engine.chat_format import encode_prompt, render_prompt

    text = render_prompt(loaded.tokenizer, loaded.prompt_format, messages, continue_final)
    prompt_ids = encode_prompt(loaded.tokenizer, text)
    yield from stream_reply(loaded.model, loaded.tokenizer, prompt_ids, params, loaded.stop_ids,
                            stop_event, loaded.prompt_format.stop_strings, prefill_chunk_tokens)
