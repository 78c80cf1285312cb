"""KV reuse across turns, invalidation, OOM recovery, static cache + compiled-decode fallback
(issue 5, item 7). Greedy answers are compared token for token with a cold prefill."""

import gc
import threading
import weakref

import pytest
import torch

from app.engine.events import ReplyFinished, TextDelta
from app.engine.local.chat_format import encode_prompt, render_prompt
from app.engine.local.compiled_decode import warm_up
from app.engine.local.generation import SamplingParams, prefill, stream_chat_reply
from app.engine.local.kv_session import KVSession, common_prefix, round_capacity

GREEDY = SamplingParams(max_new_tokens=12, temperature=0)
TURN1 = [{"role": "system", "content": "You are a helpful assistant."},
         {"role": "user", "content": "What is the capital of France?"}]


def run(loaded, messages, params=GREEDY, **kwargs) -> ReplyFinished:
    finished = None
    text = []
    for event in stream_chat_reply(loaded, messages, params, threading.Event(), **kwargs):
        if isinstance(event, TextDelta):
            text.append(event.text)
        else:
            finished = event
    assert finished.text == "".join(text)
    return finished


def turn2(first: ReplyFinished) -> list[dict]:
    return [*TURN1, {"role": "assistant", "content": first.text},
            {"role": "user", "content": "And of Italy?"}]


def prompt_ids(loaded, messages) -> list[int]:
    return encode_prompt(loaded.tokenizer, render_prompt(loaded.tokenizer, loaded.prompt_format, messages))


def test_common_prefix_and_capacity():
    assert common_prefix([1, 2, 3], [1, 2, 4, 5]) == 2
    assert common_prefix([], [1]) == 0 and common_prefix([1, 2], [1, 2]) == 2
    assert round_capacity(1) == 2048 and round_capacity(2049) == 4096


def test_second_turn_prefills_only_new_tokens_and_matches_cold(real_loaded):
    session = KVSession()
    first = run(real_loaded, TURN1, session=session)
    assert first.text == "The capital of France is Paris."
    assert first.prefill_tokens == first.prompt_tokens and first.reused_tokens == 0
    held = list(session.token_ids)
    # the cache holds the prompt and every answer token fed back (the last sampled one is not)
    assert held == prompt_ids(real_loaded, TURN1) + held[first.prompt_tokens:]
    assert session.cached_tokens == first.prompt_tokens + first.new_tokens and session.cache_bytes > 0

    messages = turn2(first)
    ids = prompt_ids(real_loaded, messages)
    expected_reused = common_prefix(held, ids)
    warm = run(real_loaded, messages, session=session)
    assert warm.reused_tokens == expected_reused > first.prompt_tokens
    assert warm.prefill_tokens == len(ids) - expected_reused < 20  # only the new question
    cold = run(real_loaded, messages)  # no session: prefill everything
    assert cold.prefill_tokens == cold.prompt_tokens == len(ids)
    assert warm.text == cold.text and warm.text


def test_invalidate_and_regenerate(real_loaded):
    session = KVSession()
    first = run(real_loaded, TURN1, session=session)
    again = run(real_loaded, TURN1, session=session)  # regenerate without invalidating
    assert again.prefill_tokens == 1  # at least the last prompt token, for its logits
    assert again.text == first.text
    session.invalidate()
    assert session.cached_tokens == 0 and session.cache_bytes == 0 and session.cache is None
    after = run(real_loaded, TURN1, session=session)
    assert after.prefill_tokens == after.prompt_tokens and after.text == first.text


def test_edited_history_prefills_from_the_edit(real_loaded):
    session = KVSession()
    first = run(real_loaded, TURN1, session=session)
    edited = [TURN1[0], {"role": "user", "content": "What is the capital of Spain?"}]
    ids = prompt_ids(real_loaded, edited)
    shared = common_prefix(session.token_ids, ids)
    second = run(real_loaded, edited, session=session)
    assert second.reused_tokens == shared < first.prompt_tokens
    assert second.prefill_tokens == len(ids) - shared
    assert second.text == run(real_loaded, edited).text


class ExplodingModel(torch.nn.Module):
    """Delegates to a real model and raises OutOfMemoryError on forward call number `fail_at`."""

    def __init__(self, inner, fail_at: int):
        super().__init__()
        self.inner, self.fail_at, self.calls = inner, fail_at, 0
        self.config = inner.config
        self.seen_caches: list[weakref.ref] = []

    @property
    def device(self):
        return self.inner.device

    def forward(self, input_ids=None, cache=None, **kwargs):
        self.calls += 1
        self.seen_caches.append(weakref.ref(cache))
        if self.calls == self.fail_at:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return self.inner(input_ids=input_ids, cache=cache, **kwargs)


def test_exception_drops_the_cache_and_frees_it(tiny_loaded):  # C03
    from app.engine.local.generation import stream_reply

    session = KVSession()
    model = ExplodingModel(tiny_loaded.model, fail_at=4)
    params = SamplingParams(max_new_tokens=20, temperature=1.0, seed=1)
    args = (model, tiny_loaded.tokenizer, list(range(10, 40)), params, frozenset(), threading.Event())
    failed = False
    try:
        for _ in stream_reply(*args, session=session):
            pass
    except torch.OutOfMemoryError:
        failed = True
    assert failed
    gc.collect()
    assert session.cache is None and session.token_ids == [] and session.cache_bytes == 0
    assert all(ref() is None for ref in model.seen_caches)  # no frame or traceback keeps it


def test_static_cache_with_compiled_step_matches_eager(real_loaded):
    """The CUDA path (StaticCache + compiled step) run on the CPU: torch.compile is replaced by
    the identity, so this checks the cache handling, cropping and reuse, not inductor."""
    decoder = warm_up(real_loaded, (512,), compiler=lambda fn: fn, require_cuda=False)
    assert decoder.status.state == "ready" and decoder.status.capacities == (512,)
    session = KVSession(capacity_tokens=512, static=True)
    first = run(real_loaded, TURN1, session=session, decoder=decoder)
    assert first.decode_path == "compiled" and session.is_static
    assert first.text == "The capital of France is Paris."
    assert session.cache_bytes == 2 * 30 * 3 * 64 * 512 * 4  # layers x kv heads x head_dim x slots x fp32
    messages = turn2(first)
    warm = run(real_loaded, messages, session=session, decoder=decoder)
    assert 0 < warm.prefill_tokens < 20 and warm.decode_path == "compiled"
    assert warm.text == run(real_loaded, messages).text


def test_static_session_grows_between_turns(tiny_loaded):
    session = KVSession(capacity_tokens=64, static=True)
    params = SamplingParams(max_new_tokens=40, temperature=0)
    done = run(tiny_loaded, TURN1, params, session=session)
    assert session.capacity_tokens == round_capacity(done.prompt_tokens + 40)
    assert done.prefill_tokens == done.prompt_tokens and session.notes


def test_compile_failure_falls_back_to_eager(tiny_loaded):
    def broken(_fn):
        raise RuntimeError("inductor unavailable\nlong traceback")

    seen = []
    decoder = warm_up(tiny_loaded, (256,), on_status=seen.append, compiler=broken, require_cuda=False)
    assert [s.state for s in seen] == ["compiling", "failed"]
    assert "RuntimeError: inductor unavailable" in decoder.status.reason
    assert not decoder.can_run(None)
    session = KVSession(capacity_tokens=256, static=True)
    done = run(tiny_loaded, TURN1, SamplingParams(max_new_tokens=8, temperature=0), session=session,
               decoder=decoder)
    assert done.decode_path == "eager-static" and done.new_tokens > 0


def test_cpu_warm_up_stays_eager_and_says_why(tiny_loaded):
    decoder = warm_up(tiny_loaded)
    assert decoder.status.state == "eager" and "no CUDA" in decoder.status.reason
    done = run(tiny_loaded, TURN1, SamplingParams(max_new_tokens=4, temperature=0), decoder=decoder)
    assert done.decode_path == "eager"


@pytest.mark.parametrize("chunk", [5, 16])
def test_chunked_prefill_on_static_cache_matches_one_shot(tiny_loaded, chunk):
    from transformers import StaticCache

    model = tiny_loaded.model
    ids = torch.randint(0, 49152, (1, 40), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        one_shot = prefill(model, ids, StaticCache(config=model.config, max_cache_len=64), None)
        chunked = prefill(model, ids, StaticCache(config=model.config, max_cache_len=64), chunk)
    torch.testing.assert_close(chunked, one_shot, rtol=1e-4, atol=1e-4)  # fp32 summation order


class ConstructionCount:
    """Counts the caches the session builds (static_cache.new_static_cache, DynamicCache)."""

    def __init__(self, monkeypatch):
        from app.engine.local import kv_session, static_cache

        self.static = self.dynamic = 0
        new_static, dynamic = static_cache.new_static_cache, kv_session.DynamicCache

        def counted_static(*args, **kwargs):
            self.static += 1
            return new_static(*args, **kwargs)

        def counted_dynamic(*args, **kwargs):
            self.dynamic += 1
            return dynamic(*args, **kwargs)

        monkeypatch.setattr(static_cache, "new_static_cache", counted_static)
        monkeypatch.setattr(kv_session, "DynamicCache", counted_dynamic)


@pytest.mark.parametrize("static", [True, False])
def test_a_prepared_cache_serves_the_next_turn_without_building_one(tiny_loaded, monkeypatch, static):
    """Issue 12, item 4: a new chat's cache object is built by prepare() (when the chat is
    activated), not inside the turn; the turn then runs exactly as with a cache built in it."""
    from app.engine.local.static_cache import capacity_of

    params = SamplingParams(max_new_tokens=10, temperature=0)
    cold = run(tiny_loaded, TURN1, params, session=KVSession(static=static))
    counts = ConstructionCount(monkeypatch)
    session = KVSession(static=static)
    session.prepare(tiny_loaded.model)
    assert (counts.static, counts.dynamic) == ((1, 0) if static else (0, 1))
    session.prepare(tiny_loaded.model)  # prepared already: nothing more
    warm = run(tiny_loaded, TURN1, params, session=session)
    assert (counts.static, counts.dynamic) == ((1, 0) if static else (0, 1))  # none built in the turn
    assert warm.text == cold.text and warm.new_tokens == cold.new_tokens
    assert session.is_static is static
    if static:  # the placeholder capacity became the turn's
        assert session.capacity_tokens == round_capacity(warm.prompt_tokens + 10)
        assert capacity_of(session.cache) == session.capacity_tokens
        assert all(layer.keys.shape[2] == session.capacity_tokens for layer in session.cache.layers)
    again = run(tiny_loaded, turn2(warm), params, session=session)  # the kept cache, as before
    assert again.reused_tokens > 0 and (counts.static, counts.dynamic) == ((1, 0) if static else (0, 1))


def test_a_prepared_cache_of_another_precision_is_not_used(tiny_loaded, monkeypatch):
    from app.engine.local.static_cache import kv_bits_of

    counts = ConstructionCount(monkeypatch)
    session = KVSession(static=True)
    session.prepare(tiny_loaded.model)
    session.set_kv_bits(8)  # the chat switched to 8-bit KV after it was opened
    cache, reused = session.begin_turn(tiny_loaded.model, list(range(1, 30)), 4)
    assert kv_bits_of(cache) == 8 and reused == 0 and counts.static == 2
    session.invalidate()
    session.set_kv_bits(16)
    session.prepare(tiny_loaded.model)  # no cache held: prepared for 16-bit again
    assert counts.static == 3
    assert kv_bits_of(session.begin_turn(tiny_loaded.model, list(range(1, 30)), 4)[0]) == 16 and counts.static == 3
