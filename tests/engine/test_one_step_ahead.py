"""The compiled decode loop runs one step ahead of the host (issue 5): the step for token t is
launched before t is read, so a reply that ends on t has fed t into the cache. These tests run
that loop on the CPU (torch.compile replaced by the identity) and check that the KV bookkeeping
stays exact: the session's token ids are the cache's length, and the next turn's reuse gives the
same greedy answer as a cold prefill."""

import threading

import pytest

from app.engine.events import ReplyFinished, TextDelta
from app.engine.local.compiled_decode import warm_up
from app.engine.local.generation import SamplingParams, stream_chat_reply, stream_reply
from app.engine.local.kv_session import KVSession

TURN1 = [{"role": "system", "content": "You are a helpful assistant."},
         {"role": "user", "content": "What is the capital of France?"}]
CAPACITY = 512


@pytest.fixture(scope="module")
def decoder(real_loaded):
    decoder = warm_up(real_loaded, (CAPACITY,), compiler=lambda fn: fn, require_cuda=False)
    assert decoder.status.state == "ready"
    return decoder


def reply(loaded, messages, params, decoder=None, session=None, stop=None, on_delta=None) -> ReplyFinished:
    stop = stop or threading.Event()
    finished, pieces = None, []
    for event in stream_chat_reply(loaded, messages, params, stop, session=session, decoder=decoder):
        if isinstance(event, TextDelta):
            pieces.append(event.text)
            if on_delta:
                on_delta(len(pieces))
        else:
            finished = event
    assert finished.text == "".join(pieces)
    return finished


def cache_length(session: KVSession) -> int:
    return int(session.cache.layers[0].cumulative_length)


def test_eos_reply_feeds_the_end_token_and_the_next_turn_matches_cold(real_loaded, decoder):
    session = KVSession(capacity_tokens=CAPACITY, static=True)
    greedy = SamplingParams(max_new_tokens=40, temperature=0)
    first = reply(real_loaded, TURN1, greedy, decoder, session)
    assert first.decode_path == "compiled" and first.stop_reason == "eos"
    assert first.text == "The capital of France is Paris."
    # prompt + every answer token + the end-of-turn token the launched step fed
    held = session.cached_tokens
    assert held == first.prompt_tokens + first.new_tokens + 1 == cache_length(session)
    messages = [*TURN1, {"role": "assistant", "content": first.text}, {"role": "user", "content": "And of Italy?"}]
    warm = reply(real_loaded, messages, greedy, decoder, session)
    assert warm.reused_tokens == held and warm.prefill_tokens < 20  # the fed end token is reused too
    assert warm.text == reply(real_loaded, messages, greedy).text  # cold, eager, dynamic cache


def test_length_stop_launches_nothing_past_the_last_token(real_loaded, decoder):
    session = KVSession(capacity_tokens=CAPACITY, static=True)
    done = reply(real_loaded, TURN1, SamplingParams(max_new_tokens=3, temperature=0), decoder, session)
    assert done.stop_reason == "length" and done.new_tokens == 3
    assert session.cached_tokens == done.prompt_tokens + 2 == cache_length(session)


def test_stop_mid_reply_keeps_the_cache_exact(real_loaded, decoder):
    stop = threading.Event()
    session = KVSession(capacity_tokens=CAPACITY, static=True)
    long = [*TURN1[:1], {"role": "user", "content": "Write a long story about a lighthouse keeper."}]
    done = reply(real_loaded, long, SamplingParams(max_new_tokens=200, temperature=0), decoder, session,
                 stop, on_delta=lambda n: n == 4 and stop.set())
    assert done.stop_reason == "stopped" and done.new_tokens <= 5
    assert session.cached_tokens == cache_length(session)
    assert session.cached_tokens in (done.prompt_tokens + done.new_tokens - 1, done.prompt_tokens + done.new_tokens)


def test_compiled_path_gives_the_eager_greedy_tokens_and_seeded_samples_repeat(real_loaded, decoder):
    params = SamplingParams(max_new_tokens=24, temperature=0)
    prompt = list(range(100, 160))

    def tokens(params, decoder, static):
        session = KVSession(capacity_tokens=CAPACITY, static=static)
        done = None
        for event in stream_reply(real_loaded.model, real_loaded.tokenizer, prompt, params, frozenset(),
                                  threading.Event(), session=session, decoder=decoder):
            done = event
        return done.text, done.decode_path

    assert tokens(params, decoder, True) == (tokens(params, None, False)[0], "compiled")
    sampled = SamplingParams(max_new_tokens=24, temperature=0.9, top_p=0.9, seed=11)
    a, b = tokens(sampled, decoder, True), tokens(sampled, decoder, True)
    assert a == b and a[1] == "compiled" and a[0]
