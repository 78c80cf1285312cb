"""The sort-free draw (`nucleus_kernel`): its depth-threshold rule against transformers' filters on
the CPU (the rule, in `reference_depths`, is what the CUDA kernels compute bin by bin), and on a GPU the
kernels against that rule, against `samplers.process`'s kept set, and their draws against its
probabilities."""

import math
from dataclasses import replace

import pytest
import torch

from app.engine.local import nucleus_kernel as nk
from app.engine.local import samplers
from app.engine.local.generation import SamplingParams

SETTINGS = [
    SamplingParams(temperature=0.7, top_p=0.95),  # today's defaults
    SamplingParams(temperature=0.8, top_p=0.9, top_k=40, min_p=0.05, repetition_penalty=1.1),
    SamplingParams(temperature=1.3, top_p=1.0, top_k=0, min_p=0.1, repetition_penalty=1.5),
    SamplingParams(temperature=0.5, top_p=0.5, top_k=10**6),
    SamplingParams(temperature=0.2, top_p=1.0, top_k=20, min_p=0.1),  # Precise
    SamplingParams(temperature=1.0, top_p=0.999, top_k=3),
    SamplingParams(temperature=1.0, top_p=0.01),
    SamplingParams(temperature=0.9, top_p=0.9, top_k=50),  # top-p over what top-k kept, min-p off
]


def random_logits(vocab: int, seed: int, spread: float = 3.0, device: str = "cpu") -> torch.Tensor:
    """(vocab,) float32 logits: a few peaks over a normal spread (spread 1: a random-weight model's
    flat logits)."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(vocab, generator=g) * spread
    logits[torch.randint(vocab, (3,), generator=g)] += 8.0
    return logits.to(device)


def penalized(scores: torch.Tensor, seen: torch.Tensor | None, penalty: float) -> torch.Tensor:
    if seen is None or penalty == 1.0:
        return scores
    return torch.where(seen, torch.where(scores < 0, scores * penalty, scores / penalty), scores)


def reference_depths(scores: torch.Tensor, settings) -> tuple[torch.Tensor, int]:
    """(depths (V,), deepest kept depth P) by the kernels' rule, with a sort: the kept tokens are
    depths ≤ P. Weights in the same fixed point (exp2 here, ex2.approx there)."""
    s = scores.reshape(-1).float()
    top = float(s.max())
    depths = nk.depths(s, top, settings.temperature)
    k2 = torch.tensor(1.0 / (settings.temperature * math.log(2.0)), dtype=torch.float32)
    weights = (torch.exp2((s - top) * k2.to(s.device)) * 2.0**40).long()
    live = depths < nk.LIVE
    weights = torch.where(live, weights, torch.zeros_like(weights))
    order = torch.argsort(depths, stable=True)
    d_sorted, w_sorted = depths[order], weights[order]
    total = int(w_sorted.sum())
    deepest = nk.LIVE - 1
    base = 0
    vocab = s.numel()
    if 0 < settings.top_k < vocab and int(live.sum()) >= settings.top_k:
        deepest = int(d_sorted[settings.top_k - 1])
        base = int(weights[depths > deepest].sum())
    if settings.top_p < 1.0:
        keep = total - (base + int((1.0 - settings.top_p) * (total - base)))
        above = torch.cumsum(w_sorted, 0) - w_sorted  # weight of the tokens before, in depth order
        # the weight above a depth group is the group's first token's
        first = torch.ones_like(d_sorted, dtype=torch.bool)
        first[1:] = d_sorted[1:] != d_sorted[:-1]
        group_above = above[first]
        group_depth = d_sorted[first]
        kept_groups = group_depth[(group_above < keep) & (group_depth < nk.LIVE)]
        deepest = min(deepest, int(kept_groups.max()))
    deepest = min(deepest, nk.min_p_depth(settings.min_p))
    return depths, deepest


def kept_by_process(scores: torch.Tensor, settings) -> torch.Tensor:
    return torch.isfinite(samplers.process(scores.reshape(1, -1), settings)).reshape(-1)


@pytest.mark.parametrize("vocab", [50, 4096, 49152])
@pytest.mark.parametrize("settings", SETTINGS, ids=range(len(SETTINGS)))
def test_the_depth_rule_keeps_what_transformers_filters_keep(vocab, settings):
    for seed in range(3):
        for spread in (1.0, 3.0):
            scores = random_logits(vocab, seed, spread)
            depths, deepest = reference_depths(scores, settings)
            # the penalty is applied before both, so it is left out here
            plain = replace(settings, repetition_penalty=1.0)
            assert torch.equal(depths <= deepest, kept_by_process(scores, plain)), (seed, spread)


def test_ties_stay_together_and_the_top_token_always_stays():
    scores = torch.tensor([3.0, 1.0, 3.0, 2.0, 2.0, -1.0])
    depths, deepest = reference_depths(scores, SamplingParams(temperature=1.0, top_k=2))
    assert (depths <= deepest).tolist() == [True, False, True, False, False, False]
    depths, deepest = reference_depths(scores, SamplingParams(temperature=1.0, top_k=3))
    assert (depths <= deepest).tolist() == [True, False, True, True, True, False]  # ties with the 3rd
    depths, deepest = reference_depths(scores, SamplingParams(temperature=0.7, top_p=1e-6))
    assert (depths <= deepest).tolist() == [True, False, True, False, False, False]


def test_depth_is_linear_in_the_score_and_deep_tokens_are_never_kept():
    top = 10.0
    scores = torch.tensor([10.0, 10.0 - 28.0 * 0.5, 10.0 - 28.0, -math.inf, math.nan])
    d = nk.depths(scores, top, 0.7)  # 40 T = 28: a third of the range from the top is depth LIVE / 2
    assert d.tolist() == [0, nk.LIVE // 2, nk.LIVE, nk.LIVE, nk.LIVE]
    assert nk.min_p_depth(0.0) == nk.LIVE - 1
    assert nk.min_p_depth(1.0) == 0
    assert nk.min_p_depth(math.exp(-20)) == nk.LIVE // 2  # min_p = e^-20: 20 T below the top


def test_no_cuda_keeps_the_torch_draw():
    assert nk.unavailable_reason(torch.device("cpu")) in ("no CUDA device", "HEADROOM_SAMPLER_KERNEL=0")
    assert not nk.takes(torch.zeros(10))
    g = torch.Generator().manual_seed(3)
    token = samplers.sample(random_logits(100, 0), SETTINGS[0], g)
    assert token.shape == (1,) and 0 <= int(token) < 100


def test_source_compiles_for_sm90_without_spills():
    try:
        from app.engine.local import nvrtc

        lib = nvrtc.nvrtc_library()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"no NVRTC here ({exc}); pip nvidia-cuda-nvrtc and set HEADROOM_NVRTC")
    _, log = nvrtc.compile_cubin("90", nk.SOURCE, "nucleus_kernel.cu", ("--ptxas-options=-v",), lib)
    for name in nk.KERNEL_NAMES:
        assert f"Compiling entry function '{name}'" in log
    assert "spill stores" in log and " 0 bytes spill stores" in log
    assert "error" not in log.lower()


# ----------------------------------------------------------------------------- on a GPU
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (run on the GPU machine)")


def gpu_run(scores, settings, u=0.5, seen=None):
    uniform = torch.tensor([u], dtype=torch.float32, device=scores.device)
    token, ws = nk.run(scores, settings, uniform, seen, settings.repetition_penalty if seen is not None else 1.0)
    return int(token), nk.bounds(ws)


def assert_same_up_to_rounding(kept: torch.Tensor, theirs: torch.Tensor, scores: torch.Tensor, settings) -> None:
    """The kept sets agree but for tokens at the boundary whose whole probability is below 1e-5:
    transformers sums the probabilities in float32 (over 128k flat tokens its cumulative sum is off by
    about a token's probability at the cut); the kernels sum exact integers."""
    differ = kept ^ theirs
    if not bool(differ.any()):
        return
    probs = torch.softmax(scores.reshape(-1).float() / settings.temperature, -1)
    assert float(probs[differ].sum()) < 1e-5, (int(differ.sum()), float(probs[differ].sum()))


@cuda
@pytest.mark.parametrize("vocab", [50, 8192, 128256, 262144])
@pytest.mark.parametrize("settings", SETTINGS, ids=range(len(SETTINGS)))
def test_the_kernels_keep_what_the_rule_and_transformers_keep(vocab, settings):
    assert nk.unavailable_reason(torch.device("cuda")) == ""
    for seed in range(2):
        for spread in (1.0, 3.0, 8.0):
            scores = random_logits(vocab, seed, spread, "cuda")
            plain = replace(settings, repetition_penalty=1.0)
            token, (top, pk, pp) = gpu_run(scores, plain)
            assert top == float(scores.max())
            depths, deepest = reference_depths(scores, plain)
            got = min(pk, pp, nk.min_p_depth(plain.min_p))
            kept = depths <= got
            assert got == deepest or torch.equal(kept, depths <= deepest), (seed, spread, got, deepest)
            assert_same_up_to_rounding(kept, kept_by_process(scores, plain), scores, plain)
            assert bool(kept[token])


@cuda
def test_the_penalty_and_the_seen_mask_match_the_torch_path():
    settings = SamplingParams(temperature=0.9, top_p=0.9, top_k=50, repetition_penalty=1.3)
    scores = random_logits(32000, 7, 3.0, "cuda")
    seen = torch.zeros(32000, dtype=torch.bool, device="cuda")
    seen[torch.topk(scores, 20).indices] = True  # the most probable tokens were said already
    before = seen.clone()
    token, (top, pk, pp) = gpu_run(scores, settings, 0.3, seen)
    processed = penalized(scores, before, 1.3)
    assert top == float(processed.max())  # the same penalized scores as the torch path's
    kept = nk.depths(processed, top, settings.temperature) <= min(pk, pp)
    assert_same_up_to_rounding(kept, kept_by_process(processed, replace(settings, repetition_penalty=1.0)),
                               processed, settings)
    assert bool(kept[token]) and bool(seen[token]) and int(seen.sum()) == int(before.sum()) + (not before[token])


@cuda
@pytest.mark.parametrize("settings", [SETTINGS[0], SETTINGS[1], SETTINGS[4]], ids=["default", "all", "precise"])
def test_draws_follow_the_processed_probabilities(settings):
    scores = random_logits(128256, 11, 8.0, "cuda")  # a trained model's few-token nucleus
    plain = replace(settings, repetition_penalty=1.0)
    probs = torch.softmax(samplers.process(scores.reshape(1, -1), plain).reshape(-1), -1)
    g = torch.Generator(device="cuda").manual_seed(5)
    draws = 20000
    counts = torch.zeros_like(probs)
    for _ in range(draws):
        counts[samplers.sample(scores, plain, g)] += 1
    tv = 0.5 * float((counts / draws - probs).abs().sum())
    assert tv < 0.02, tv
    assert float(probs[counts > 0].min()) > 0  # nothing drawn outside the kept set


@cuda
def test_a_seed_repeats_its_draws_and_nan_or_inf_scores_give_the_top_token():
    scores = random_logits(128256, 2, 1.0, "cuda")
    runs = []
    for _ in range(2):
        g = torch.Generator(device="cuda").manual_seed(9)
        runs.append([int(samplers.sample(scores, SETTINGS[0], g)) for _ in range(50)])
    assert runs[0] == runs[1] and len(set(runs[0])) > 10
    odd = torch.full((1000,), float("-inf"), device="cuda")
    odd[17] = float("inf")
    assert gpu_run(odd, SETTINGS[0])[0] == 17
    odd[:] = float("nan")
    assert gpu_run(odd, SETTINGS[0])[0] == 0


@cuda
@pytest.mark.parametrize("penalty", [1.0, 1.3])
def test_greedy_is_the_first_argmax_after_the_penalty_and_marks_the_token(penalty):
    for vocab in (50, 128256, 262144):
        scores = random_logits(vocab, 4, 3.0, "cuda")
        scores[vocab // 2] = scores.max()  # a tie: the first index wins, as torch.argmax
        seen = torch.zeros(vocab, dtype=torch.bool, device="cuda")
        seen[torch.topk(scores, 3).indices] = True
        before = seen.clone()
        settings = SamplingParams(temperature=0.0, repetition_penalty=penalty)
        token = samplers.sample(scores, settings, None, seen)
        want = torch.argmax(penalized(scores, before, penalty))
        assert int(token) == int(want) and token.shape == (1,) and bool(seen[token])


@cuda
@pytest.mark.parametrize("temperature", [0.0, 0.7], ids=["greedy", "sampled"])
def test_the_token_is_written_where_the_caller_asks_with_the_uniform_it_gives(temperature):
    """generation._OneStepAhead hands the sampler the captured step's token buffer and a uniform drawn
    ahead: the token lands there (no copy kernel after it) and is the one the sampler's own draw of
    that uniform gives; an ``out`` of another dtype is refused, not written."""
    scores = random_logits(128256, 3, 2.0, "cuda")
    settings = replace(SETTINGS[0], temperature=temperature) if temperature else SamplingParams(temperature=0.0)
    uniforms = torch.rand(64, generator=torch.Generator(device="cuda").manual_seed(3), device="cuda")
    buffer = torch.full((1, 1), -1, dtype=torch.long, device="cuda")
    for i in range(64):
        u = uniforms[i:i + 1]
        token = samplers.sample(scores, settings, None, uniform=u, out=buffer.view(1))
        assert token.data_ptr() == buffer.data_ptr()
        assert int(buffer) == int(samplers.sample(scores, settings, None, uniform=u.clone()))
    with pytest.raises(ValueError, match="int64"):
        samplers.sample(scores, settings, None, uniform=uniforms[:1], out=torch.zeros(1, dtype=torch.int32,
                                                                                      device="cuda"))
