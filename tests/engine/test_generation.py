import threading

import pytest
import torch

from app.engine.events import ReplyFinished, TextDelta
from app.engine.local.generation import SamplingParams, prefill, sample_next, stream_chat_reply

QUESTION = [{"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "What is the capital of France?"}]


def run(loaded, params, stop_event=None, messages=QUESTION, on_delta=None):
    deltas, finished = [], None
    for event in stream_chat_reply(loaded, messages, params, stop_event or threading.Event()):
        if isinstance(event, TextDelta):
            deltas.append(event.text)
            if on_delta:
                on_delta(len(deltas))
        else:
            finished = event
    return deltas, finished


def test_real_model_answers_paris_greedily(real_loaded):
    deltas, finished = run(real_loaded, SamplingParams(max_new_tokens=40, temperature=0))
    assert finished.text == "The capital of France is Paris."
    assert "".join(deltas) == finished.text
    assert finished.stop_reason == "eos"
    assert finished.new_tokens == 7
    assert finished.prompt_tokens == finished.prefill_tokens > 20
    assert 0 < finished.ttft_s  # speed targets live in tests/benchmarks, not here


def test_max_new_tokens_is_respected(tiny_loaded):
    _, finished = run(tiny_loaded, SamplingParams(max_new_tokens=12, temperature=1.0, seed=3))
    assert isinstance(finished, ReplyFinished)
    assert finished.stop_reason == "length" and finished.new_tokens == 12


def test_stop_ends_within_one_token(tiny_loaded):  # case C20
    stop = threading.Event()

    def press_stop_after(n):
        if n == 5:
            stop.set()

    deltas, finished = run(tiny_loaded, SamplingParams(max_new_tokens=2048, temperature=1.0, seed=1),
                           stop, on_delta=press_stop_after)
    assert finished.stop_reason == "stopped"
    assert finished.new_tokens <= 6  # the token in flight when Stop was pressed, at most
    assert finished.text == "".join(deltas) and finished.text


def test_seeded_sampling_is_reproducible(tiny_loaded):
    a = run(tiny_loaded, SamplingParams(max_new_tokens=10, temperature=0.8, seed=7))[1].text
    b = run(tiny_loaded, SamplingParams(max_new_tokens=10, temperature=0.8, seed=7))[1].text
    assert a == b


def test_top_p_keeps_only_the_nucleus():
    logits = torch.log(torch.tensor([0.5, 0.3, 0.15, 0.05]))
    params = SamplingParams(temperature=1.0, top_p=0.7)
    seen = {sample_next(logits, params, torch.Generator().manual_seed(s)) for s in range(200)}
    assert seen == {0, 1}
    assert sample_next(logits, SamplingParams(temperature=0), None) == 0


@pytest.mark.parametrize("chunk", [1, 7, 16])
def test_chunked_prefill_matches_one_shot(tiny_loaded, chunk):
    from transformers import DynamicCache

    model = tiny_loaded.model
    ids = torch.randint(0, 49152, (1, 40), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        one_shot = prefill(model, ids, DynamicCache(config=model.config), None)
        chunked = prefill(model, ids, DynamicCache(config=model.config), chunk)
    torch.testing.assert_close(chunked, one_shot, rtol=1e-4, atol=1e-4)  # fp32 summation order
