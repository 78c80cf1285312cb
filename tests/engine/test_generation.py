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


def test_cpu_chunks_are_sized_to_their_measured_time():
    from app.engine.local.generation import CPU_CHUNK_SECONDS, next_cpu_chunk

    assert CPU_CHUNK_SECONDS <= 0.8  # Stop lands within ~1 s: one chunk plus an overshoot
    assert next_cpu_chunk(16, 0.05, 0.05, 256) == 64  # the first chunk: grows, at most 4x per chunk
    assert next_cpu_chunk(64, 0.05, 0.01, 256) == 256  # never past the planned chunk (the projected spike)
    assert next_cpu_chunk(256, 12.4, 0.1, 256) == 13  # 256 tokens deep in a 4k prompt under load
    # 40 tokens in 0.4 s with 0.2 s of overhead: 5 ms a token, 0.4 s of budget left → 80 tokens
    assert next_cpu_chunk(40, 0.4, 0.2, 256) == int((CPU_CHUNK_SECONDS - 0.2) / 0.005)
    # overhead-bound (1.5 s per pass): chunks last twice the overhead, not 8 tokens of overhead
    assert next_cpu_chunk(64, 2.8, 1.5, 256) == int(1.5 / (1.3 / 64))


class _SlowPositionsModel(torch.nn.Module):
    """A stand-in for a causal LM on a busy CPU: a forward pass sleeps 1 ms per token plus 1 ms
    per token per 128 cached positions (attention grows with the position), so a 256-token
    chunk at position 1,024 takes ~2.3 s. Records each chunk's (position, tokens)."""

    def __init__(self):
        super().__init__()
        self.chunks: list[tuple[int, int]] = []

    def forward(self, input_ids, use_cache=True, logits_to_keep=1, past_key_values=None):
        import time
        from types import SimpleNamespace

        position = sum(tokens for _, tokens in self.chunks)
        tokens = input_ids.shape[1]
        self.chunks.append((position, tokens))
        time.sleep(tokens * 0.001 * (1 + position / 128))
        return SimpleNamespace(logits=torch.zeros((1, 1, 8)))


def test_stop_lands_within_a_second_deep_in_a_long_cpu_prefill():
    import time

    model = _SlowPositionsModel()
    prefill(model, torch.zeros((1, 1), dtype=torch.long), None, 256, threading.Event())  # imports done
    model.chunks.clear()
    ids = torch.zeros((1, 4096), dtype=torch.long)
    stop = threading.Event()
    pressed = []
    # fixed 256-token chunks: Stop at 4.5 s falls in the 5th chunk (4.1-6.4 s) and waits ~1.9 s
    timer = threading.Timer(4.5, lambda: (pressed.append(time.perf_counter()), stop.set()))
    timer.start()
    try:
        logits = prefill(model, ids, None, 256, stop)
    finally:
        timer.cancel()
    latency = time.perf_counter() - pressed[0]
    assert logits is None  # stopped, not finished
    assert latency < 1.25, (latency, model.chunks[-3:])  # chunks of ~CPU_CHUNK_SECONDS (0.75 s)
    assert model.chunks[0] == (0, 16) and max(tokens for _, tokens in model.chunks) <= 256
    late = [tokens for position, tokens in model.chunks if position >= 512]
    assert late and max(late) < 256  # deep in the prompt the chunks shrank


def test_sized_cpu_chunks_give_the_one_shot_logits(tiny_loaded):
    from transformers import DynamicCache

    model = tiny_loaded.model
    ids = torch.randint(0, 49152, (1, 300), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        one_shot = prefill(model, ids, DynamicCache(config=model.config), None)
        sized = prefill(model, ids, DynamicCache(config=model.config), 256, threading.Event())
    torch.testing.assert_close(sized, one_shot, rtol=1e-4, atol=1e-4)


def _reply_events(loaded, prompt_ids, chunk):
    from app.engine.local.generation import stream_reply

    params = SamplingParams(max_new_tokens=3, temperature=0)
    return list(stream_reply(loaded.model, loaded.tokenizer, prompt_ids, params, frozenset(), threading.Event(),
                             (), chunk))


def test_a_long_cpu_prefill_reports_progress_in_order_before_the_first_token(tiny_loaded, monkeypatch):
    """Product trial: a 5,200-token file showed "…" for 2.5 minutes. Progress comes between the
    CPU's sized chunks (the first CPU_FIRST_CHUNK tokens), never inside the text."""
    from app.engine.events import PrefillProgress
    from app.engine.local import generation

    monkeypatch.setattr(generation, "PREFILL_PROGRESS_AFTER_S", 0.0)  # the tiny model is fast
    prompt = torch.randint(0, 49152, (300,), generator=torch.Generator().manual_seed(2)).tolist()
    events = _reply_events(tiny_loaded, prompt, 256)
    progress = [e for e in events if isinstance(e, PrefillProgress)]
    assert progress and all(isinstance(e, PrefillProgress) for e in events[:len(progress)])  # before any text
    assert progress[0].done_tokens == generation.CPU_FIRST_CHUNK
    done = [p.done_tokens for p in progress]
    assert done == sorted(set(done)) and done[-1] < 300  # rising; the last chunk is followed by the answer
    assert {p.total_tokens for p in progress} == {300}
    assert events[-1].prefill_tokens == 300


def test_a_short_or_one_shot_prefill_reports_no_progress(tiny_loaded, monkeypatch):
    from app.engine.events import PrefillProgress
    from app.engine.local import generation

    prompt = list(range(100, 140))
    assert not any(isinstance(e, PrefillProgress) for e in _reply_events(tiny_loaded, prompt, 256))  # < 0.5 s
    monkeypatch.setattr(generation, "PREFILL_PROGRESS_AFTER_S", 0.0)
    assert not any(isinstance(e, PrefillProgress) for e in _reply_events(tiny_loaded, prompt, 0))  # one chunk


class _FixedTimeModel(_SlowPositionsModel):
    """Each forward pass lasts 0.2 s, whatever its tokens."""

    def forward(self, input_ids, use_cache=True, logits_to_keep=1, past_key_values=None):
        import time
        from types import SimpleNamespace

        self.chunks.append((0, input_ids.shape[1]))
        time.sleep(0.2)
        return SimpleNamespace(logits=torch.zeros((1, 1, 8)))


def test_progress_starts_once_the_prefill_has_run_half_a_second():
    from app.engine.local.generation import PREFILL_PROGRESS_AFTER_S, prefill_steps

    assert PREFILL_PROGRESS_AFTER_S == 0.5
    steps = prefill_steps(_FixedTimeModel(), torch.zeros((1, 40), dtype=torch.long), None, 8)
    done = [p.done_tokens for p in steps]  # chunks end at 0.2, 0.4, 0.6, 0.8 and 1.0 s
    assert done[-2:] == [24, 32] and done[0] >= 16  # (16 only when the box is slow)


def test_a_korean_answer_cut_inside_a_character_keeps_only_whole_characters(real_loaded, monkeypatch):
    # max new tokens can end the answer between the bytes of one Hangul syllable (byte-level BPE);
    # what is shown and saved then ends at the last whole character, never in U+FFFD
    from app.engine.local import generation

    written = []

    class Recording(generation.IncrementalDetokenizer):
        def push(self, token_id):
            written.append(token_id)
            return super().push(token_id)

    monkeypatch.setattr(generation, "IncrementalDetokenizer", Recording)
    korean = [{"role": "user", "content": "김치를 만드는 방법을 한국어로 설명해 주세요."}]
    run(real_loaded, SamplingParams(max_new_tokens=24, temperature=0), messages=korean)
    tok, ids = real_loaded.tokenizer, list(written)
    inside = [k for k in range(1, len(ids)) if tok.decode(ids[:k]).endswith("\ufffd")]
    assert inside, tok.decode(ids)  # the greedy answer is Korean
    cut = inside[0]
    whole = max(k for k in range(cut) if not tok.decode(ids[:k]).endswith("\ufffd"))
    deltas, finished = run(real_loaded, SamplingParams(max_new_tokens=cut, temperature=0), messages=korean)
    assert finished.stop_reason == "length" and finished.new_tokens == cut
    assert "".join(deltas) == finished.text == tok.decode(ids[:whole])
    assert "\ufffd" not in finished.text and tok.decode(ids).startswith(finished.text)


@pytest.fixture(scope="module")
def nan_loaded(tiny_loaded):
    """tiny_loaded with NaN in one weight (damaged weights, new-user trial: 0xFF over a GGUF's
    token_embd): every logit comes out NaN."""
    import copy
    from dataclasses import replace

    model = copy.deepcopy(tiny_loaded.model)
    with torch.no_grad():
        model.model.norm.weight.fill_(float("nan"))
    return replace(tiny_loaded, model=model)


@pytest.mark.parametrize("params", [SamplingParams(max_new_tokens=512, temperature=0),
                                    SamplingParams(max_new_tokens=512, temperature=0.8, seed=1)],
                         ids=["greedy", "sampled"])
def test_nan_weights_fail_the_reply_before_any_token(nan_loaded, params):
    """Greedy took the argmax of NaN for 512 tokens (an empty answer, exit 0); a draw failed
    in torch's words. Both raise NonFiniteLogits after the prefill, nothing streamed."""
    from app.engine.local.samplers import NonFiniteLogits

    streamed = []
    with pytest.raises(NonFiniteLogits, match=r"invalid numbers \(NaN or infinity\)"):
        for event in stream_chat_reply(nan_loaded, QUESTION, params, threading.Event()):
            streamed.append(event)
    assert not [e for e in streamed if isinstance(e, TextDelta)]


def test_a_draw_from_nan_scores_says_non_finite_not_torchs_words():
    """Scores that turn NaN mid-reply (after the prefill's check) reach torch.multinomial."""
    from app.engine.local.samplers import NonFiniteLogits

    scores = torch.full((32,), float("nan"))
    with pytest.raises(NonFiniteLogits):
        sample_next(scores, SamplingParams(temperature=0.8), torch.Generator().manual_seed(0))
    assert sample_next(torch.arange(32.0), SamplingParams(temperature=0), None) == 31  # finite: unchanged


def test_a_turn_on_nan_weights_fails_with_one_plain_line(nan_loaded):
    """What the window and --ask receive: TurnFailed with the engine's plain line, no partial."""
    from app.core.conversation import Message, Role
    from app.core.history import SummaryState
    from app.core.settings import GenerationSettings
    from app.engine.events import TurnCompleted, TurnFailed
    from app.engine.local.turn_runner import TurnRunner
    from app.engine.memory.probe import CpuProbe

    events = list(TurnRunner(nan_loaded, CpuProbe()).run_turn(
        [Message(Role.USER, "hi")], SummaryState(), GenerationSettings(max_new_tokens=64, temperature=0.0),
        threading.Event()))
    assert not [e for e in events if isinstance(e, TurnCompleted)]
    failed = events[-1]
    assert isinstance(failed, TurnFailed) and failed.partial == ""
    assert failed.reason == ("the model produced invalid numbers (NaN or infinity) — its weights may be "
                             "damaged, or its compute dtype overflows")
