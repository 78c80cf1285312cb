"""The own decode loop's logits processors against transformers' on the same inputs (issue 17,
item 3): every processor alone, the chain in transformers' order, the seen-token mask, seeded
draws, and a greedy reply with a repetition penalty token for token against `generate()`."""

import json
import threading

import pytest
import torch
from transformers.generation.logits_process import (
    LogitsProcessorList,
    MinPLogitsWarper,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from app.engine.local import samplers
from app.engine.local.generation import SamplingParams, stream_reply

VOCABS = (7, 100, 49152)


def random_logits(vocab: int, seed: int) -> torch.Tensor:
    """[1, vocab] float32 logits with a realistic spread (a few peaks, both signs)."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(1, vocab, generator=g) * 3.0
    logits[0, torch.randint(vocab, (3,), generator=g)] += 8.0
    return logits


def random_ids(vocab: int, n: int, seed: int) -> torch.Tensor:
    """[1, n] ids with repeats (drawn from a small range so ids recur)."""
    g = torch.Generator().manual_seed(seed + 1)
    return torch.randint(min(vocab, max(n // 2, 1)), (1, n), generator=g)


def mask_of(ids: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    return samplers.seen_mask(ids[0].tolist(), logits)


def assert_same(ours: torch.Tensor, theirs: torch.Tensor) -> None:
    assert ours.shape == theirs.shape
    assert torch.equal(torch.isinf(ours), torch.isinf(theirs))
    finite = torch.isfinite(theirs)
    assert torch.equal(ours[finite], theirs[finite])  # bit for bit: the same ops on the same values


@pytest.mark.parametrize("vocab", VOCABS)
@pytest.mark.parametrize("penalty", [1.0, 1.3, 0.8, 2.0])
def test_repetition_penalty_matches_transformers(vocab, penalty):
    for seed in range(3):
        logits, ids = random_logits(vocab, seed), random_ids(vocab, 40, seed)
        ours = samplers.apply_repetition_penalty(logits, mask_of(ids, logits), penalty)
        assert_same(ours, RepetitionPenaltyLogitsProcessor(penalty)(ids, logits.clone()))


def test_repetition_penalty_hits_seen_tokens_only_and_both_signs():
    logits = torch.tensor([[2.0, -2.0, 4.0, -1.0, 0.0]])
    seen = samplers.seen_mask([0, 1, 1, 1, 4], logits)  # repeated ids count once, as in transformers
    ours = samplers.apply_repetition_penalty(logits, seen, 2.0)
    assert ours.tolist() == [[1.0, -4.0, 4.0, -1.0, 0.0]]


def test_seen_mask_drops_ids_the_output_layer_cannot_produce():
    logits = torch.zeros(1, 10)
    mask = samplers.seen_mask([3, 3, 9, 10, 500, -1], logits)
    assert mask.shape == (10,) and mask.dtype == torch.bool
    assert mask.nonzero().flatten().tolist() == [3, 9]
    ids = torch.tensor([[3, 9, 10, 500]])  # transformers clamps ids ≥ vocab and drops them too
    assert_same(samplers.apply_repetition_penalty(logits + 1.5, mask, 1.5),
                RepetitionPenaltyLogitsProcessor(1.5)(ids, logits + 1.5))


@pytest.mark.parametrize("vocab", VOCABS)
@pytest.mark.parametrize("temperature", [0.3, 0.7, 1.0, 1.9])
def test_temperature_matches_transformers(vocab, temperature):
    logits = random_logits(vocab, 5)
    assert_same(samplers.apply_temperature(logits, temperature), TemperatureLogitsWarper(temperature)(None, logits))


@pytest.mark.parametrize("vocab", VOCABS)
@pytest.mark.parametrize("k", [1, 2, 5, 40, 49152, 10**6])
def test_top_k_matches_transformers(vocab, k):
    for seed in range(3):
        logits = random_logits(vocab, seed)
        ours = samplers.top_k_filter(logits, k)
        assert_same(ours, TopKLogitsWarper(k)(None, logits))
        assert int(torch.isfinite(ours).sum()) == min(k, vocab)  # no ties in random floats


def test_top_k_keeps_ties_with_the_kth_and_zero_is_off():
    logits = torch.tensor([[3.0, 1.0, 3.0, 2.0, 2.0]])
    assert_same(samplers.top_k_filter(logits, 2), TopKLogitsWarper(2)(None, logits))
    assert samplers.top_k_filter(logits, 4).isfinite().tolist() == [[True, False, True, True, True]]
    assert samplers.top_k_filter(logits, 0) is logits


@pytest.mark.parametrize("vocab", VOCABS)
@pytest.mark.parametrize("top_p", [0.01, 0.5, 0.9, 0.95, 0.999])
def test_top_p_matches_transformers(vocab, top_p):
    for seed in range(3):
        logits = random_logits(vocab, seed)
        ours = samplers.top_p_filter(logits, top_p)
        assert_same(ours, TopPLogitsWarper(top_p)(None, logits))
        assert torch.isfinite(ours[0, logits.argmax()])  # the most probable token always stays


def test_top_p_one_is_off():
    logits = random_logits(100, 0)
    assert samplers.top_p_filter(logits, 1.0) is logits


@pytest.mark.parametrize("vocab", VOCABS)
@pytest.mark.parametrize("min_p", [0.01, 0.05, 0.1, 0.5, 1.0])
def test_min_p_matches_transformers(vocab, min_p):
    for seed in range(3):
        logits = random_logits(vocab, seed)
        ours = samplers.min_p_filter(logits, min_p)
        assert_same(ours, MinPLogitsWarper(min_p)(None, logits))
        assert torch.isfinite(ours[0, logits.argmax()])


def test_min_p_zero_is_off_and_threshold_is_relative_to_the_top_token():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    assert samplers.min_p_filter(logits, 0.0) is logits
    kept = samplers.min_p_filter(logits, 0.3).isfinite()[0].tolist()  # threshold 0.3 × 0.5 = 0.15
    assert kept == [True, True, True, False]


CHAINS = [
    SamplingParams(temperature=0.7, top_p=0.95),  # today's defaults
    SamplingParams(temperature=0.8, top_p=0.9, top_k=40, min_p=0.05, repetition_penalty=1.1),
    SamplingParams(temperature=1.3, top_p=1.0, top_k=0, min_p=0.1, repetition_penalty=1.5),
    SamplingParams(temperature=0.5, top_p=0.5, top_k=10**6, min_p=0.0, repetition_penalty=1.0),
    SamplingParams(temperature=0.0, top_k=5, top_p=0.5, repetition_penalty=1.3),  # greedy: penalty only
]


def transformers_chain(params: SamplingParams) -> LogitsProcessorList:
    """What `GenerationMixin._get_logits_processor` builds for these settings (same order)."""
    chain = LogitsProcessorList()
    if params.repetition_penalty != 1.0:
        chain.append(RepetitionPenaltyLogitsProcessor(params.repetition_penalty))
    if params.temperature > 0:
        if params.temperature != 1.0:
            chain.append(TemperatureLogitsWarper(params.temperature))
        if params.top_k:
            chain.append(TopKLogitsWarper(params.top_k))
        if params.top_p < 1.0:
            chain.append(TopPLogitsWarper(params.top_p))
        if params.min_p:
            chain.append(MinPLogitsWarper(params.min_p))
    return chain


@pytest.mark.parametrize("vocab", VOCABS)
@pytest.mark.parametrize("params", CHAINS)
def test_chain_matches_transformers_order(vocab, params):
    logits, ids = random_logits(vocab, 9), random_ids(vocab, 30, 9)
    ours = samplers.process(logits, params, mask_of(ids, logits))
    assert_same(ours, transformers_chain(params)(ids, logits.clone()))


def test_greedy_with_penalty_avoids_the_seen_winner():
    logits = torch.tensor([5.0, 4.0, 1.0])
    params = SamplingParams(temperature=0, repetition_penalty=2.0)
    seen = samplers.seen_mask([0], logits)
    assert samplers.sample(logits, params, None, seen).tolist() == [1]
    assert seen.tolist() == [True, True, False]  # the picked token is remembered in place
    assert samplers.sample(logits, params, None, seen).tolist() == [0]  # 5/2 > 4/2


def draws(params: SamplingParams, seed: int, steps: int = 50, vocab: int = 1000) -> list[int]:
    generator = torch.Generator().manual_seed(seed)
    logits = random_logits(vocab, 1)[0] / 3  # flat enough that draws differ
    seen = samplers.seen_mask([1, 2, 3], logits) if params.repetition_penalty != 1.0 else None
    return [int(samplers.sample(logits, params, generator, seen)) for _ in range(steps)]


@pytest.mark.parametrize("params", CHAINS[:4])
def test_seeded_sampling_repeats_exactly(params):
    assert draws(params, 7) == draws(params, 7)
    assert draws(params, 7) != draws(params, 8)


def test_draws_stay_inside_the_filtered_set():
    params = SamplingParams(temperature=1.0, top_p=1.0, top_k=5)
    logits = random_logits(1000, 1)[0] / 3
    allowed = set(torch.topk(logits, 5).indices.tolist())
    assert set(draws(params, 3, steps=300)) <= allowed
    params = SamplingParams(temperature=1.0, top_p=1.0, min_p=0.5)
    probs = torch.softmax(logits, -1)
    allowed = set(torch.nonzero(probs >= 0.5 * probs.max()).flatten().tolist())
    assert set(draws(params, 3, steps=300)) <= allowed


def test_seeded_draw_matches_transformers_sampling_step():
    """One sampling step as `GenerationMixin._sample` takes it: processors, softmax, multinomial
    on the global CPU generator; ours with a generator seeded the same picks the same ids."""
    params = CHAINS[1]
    for seed in range(20):
        logits, ids = random_logits(1000, seed), random_ids(1000, 30, seed)
        torch.manual_seed(seed)
        theirs = torch.multinomial(torch.softmax(transformers_chain(params)(ids, logits.clone()), -1), 1)
        ours = samplers.sample(logits[0], params, torch.Generator().manual_seed(seed), mask_of(ids, logits))
        assert ours.tolist() == theirs[0].tolist()


def test_greedy_reply_with_penalty_matches_generate(tiny_loaded):
    """The own loop against transformers' `generate()` on the tiny model, token for token; the
    penalty changes the reply (the tiny random model repeats itself greedily)."""
    model, tokenizer = tiny_loaded.model, tiny_loaded.tokenizer
    prompt = [5, 9, 5, 17, 23, 5, 9, 40, 41, 42]
    texts = {}
    for penalty in (1.0, 1.5):
        params = SamplingParams(max_new_tokens=24, temperature=0, repetition_penalty=penalty)
        done = None
        for event in stream_reply(model, tokenizer, prompt, params, frozenset(), threading.Event(),
                                  prefill_chunk_tokens=0):
            done = event
        with torch.inference_mode():
            out = model.generate(torch.tensor([prompt], device=model.device), max_new_tokens=24,
                                 min_new_tokens=24, do_sample=False, repetition_penalty=penalty,
                                 pad_token_id=0)
        theirs = out[0, len(prompt):].tolist()
        assert done.new_tokens == len(theirs) == 24
        assert done.text == tokenizer.decode(theirs)
        texts[penalty] = done.text
    assert texts[1.0] != texts[1.5]



# ----- the CUDA draw: filters as prefixes of one sort, inverse-CDF sampling ----------------------
SAMPLED = [c for c in CHAINS if c.temperature > 0] + [
    SamplingParams(temperature=1.0, top_p=0.8, top_k=7),  # top-p over what top-k kept
    SamplingParams(temperature=0.9, top_p=1.0, top_k=3),
    SamplingParams(temperature=0.6, top_p=0.97, min_p=0.2),
]


@pytest.mark.parametrize("vocab", VOCABS)
@pytest.mark.parametrize("params", SAMPLED)
def test_nucleus_keeps_the_tokens_process_keeps(vocab, params):
    for seed in range(4):
        logits = random_logits(vocab, 40 + seed)
        seen = mask_of(random_ids(vocab, 30, seed), logits)
        penalized = samplers.apply_repetition_penalty(logits, seen, params.repetition_penalty)
        order, cumulative, start = samplers.nucleus(penalized, params)
        kept = set(order[int(start):].tolist())
        theirs = set(torch.nonzero(samplers.process(logits, params, seen)[0].isfinite()).flatten().tolist())
        assert kept == theirs
        assert cumulative.shape == (vocab,)
        assert float(cumulative[-1] - cumulative[-2]) == pytest.approx(1.0, rel=1e-4)  # the top token weighs 1


def test_nucleus_keeps_ties_with_the_kth_and_always_the_top_token():
    logits = torch.tensor([0.0, 2.0, 2.0, 2.0, 5.0])
    order, _, start = samplers.nucleus(logits, SamplingParams(temperature=1.0, top_p=1.0, top_k=2))
    assert sorted(order[int(start):].tolist()) == [1, 2, 3, 4]  # three tie with the 2nd highest
    order, _, start = samplers.nucleus(logits, SamplingParams(temperature=0.01, top_p=0.01, min_p=0.99))
    assert order[int(start):].tolist() == [4]


def test_draw_from_nucleus_follows_the_filtered_softmax():
    """20,000 seeded draws on 12 tokens against softmax(process(scores)): every frequency within
    0.012 of its probability (4 standard deviations at most), none outside the kept set."""
    params = SamplingParams(temperature=0.8, top_p=0.9, top_k=9)
    logits = torch.randn(12, generator=torch.Generator().manual_seed(5)) * 1.5
    probs = torch.softmax(samplers.process(logits, params), -1)
    generator = torch.Generator().manual_seed(11)
    counts = torch.zeros(12)
    for _ in range(20_000):
        counts[samplers.draw_from_nucleus(logits, params, generator)] += 1
    assert float((counts / 20_000 - probs).abs().max()) < 0.012
    assert torch.equal(counts > 0, probs > 0)
    assert int((probs > 0).sum()) < 9  # top-p dropped some of what top-k kept: the test has teeth


def test_seeded_nucleus_draws_repeat_exactly():
    logits = random_logits(1000, 3)[0] / 3
    params = CHAINS[0]

    def run(seed: int) -> list[int]:
        generator = torch.Generator().manual_seed(seed)
        return [int(samplers.draw_from_nucleus(logits, params, generator)) for _ in range(40)]

    assert run(7) == run(7)
    assert run(7) != run(8)

@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (run on the GPU machine)")
@pytest.mark.parametrize("params", CHAINS)
def test_no_host_sync_on_cuda(params):
    """The compiled path samples one step ahead of the host: nothing in `sample` may wait for the
    device (torch raises on any synchronizing op in sync-debug mode "error")."""
    logits = random_logits(128256, 2)[0].cuda()
    seen = samplers.seen_mask(list(range(0, 5000, 7)), logits)
    generator = torch.Generator(device="cuda").manual_seed(1)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        tokens = [samplers.sample(logits, params, generator, seen) for _ in range(8)]
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert all(t.device.type == "cuda" and t.shape == (1,) for t in tokens)
    assert bool(seen[tokens[0]]) if params.repetition_penalty != 1.0 else True


# ----- remote servers: the request body (app.engine.remote.openai_client) ------------------------
def request_bodies(settings) -> list[dict]:
    """The JSON bodies the remote client POSTs for one chat with these GenerationSettings."""
    import httpx

    from app.core.backend_settings import RemoteSettings
    from app.engine.remote.openai_client import OpenAIClient, sampling_body

    bodies = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, content=b'data: {"choices": [{"index": 0, "delta": {"content": "ok"}, '
                              b'"finish_reason": "stop"}]}\n\ndata: [DONE]\n\n',
                              headers={"content-type": "text/event-stream"})

    client = OpenAIClient(RemoteSettings("http://gpu-box:8000/v1", "m"), "", httpx.MockTransport(handler))
    items = list(client.stream_chat([{"role": "user", "content": "hi"}], 16, settings.temperature,
                                    settings.top_p, threading.Event(), sampling=sampling_body(settings)))
    assert items[0] == "ok"
    return bodies


def test_remote_request_carries_only_the_samplers_turned_on():
    from app.core.settings import GenerationSettings

    plain = request_bodies(GenerationSettings())[0]
    assert set(plain) == {"model", "messages", "stream", "max_tokens", "temperature", "top_p", "stream_options"}
    full = request_bodies(GenerationSettings(top_k=40, min_p=0.05, repetition_penalty=1.1, presence_penalty=0.5,
                                             frequency_penalty=-0.5, seed=9))[0]
    assert {k: full[k] for k in set(full) - set(plain)} == {
        "top_k": 40, "min_p": 0.05, "repetition_penalty": 1.1, "presence_penalty": 0.5,
        "frequency_penalty": -0.5, "seed": 9}
    assert request_bodies(GenerationSettings(seed=0))[0]["seed"] == 0  # 0 is a seed, not "off"


def test_turn_runner_takes_the_samplers_from_the_settings(tiny_loaded):
    """GenerationSettings → SamplingParams in the local backend: the penalty changes a greedy
    reply, and a seed makes a sampled reply repeat."""
    from app.core.conversation import Message, Role
    from app.core.history import SummaryState
    from app.core.settings import GenerationSettings
    from app.engine.events import TurnCompleted
    from app.engine.local.turn_runner import TurnRunner
    from app.engine.memory.probe import pick_probe

    runner = TurnRunner(tiny_loaded, pick_probe())

    def reply(**settings) -> str:
        events = runner.run_turn([Message(Role.USER, "hello hello hello")], SummaryState(),
                                 GenerationSettings(max_new_tokens=16, **settings), threading.Event())
        return next(e.finished.text for e in events if isinstance(e, TurnCompleted))

    greedy = reply(temperature=0)
    assert greedy and reply(temperature=0, repetition_penalty=1.8) != greedy
    seeded = reply(temperature=1.0, top_k=50, seed=5)
    assert reply(temperature=1.0, top_k=50, seed=5) == seeded != reply(temperature=1.0, top_k=50, seed=6)
