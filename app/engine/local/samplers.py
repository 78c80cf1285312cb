"""Logits processors of the own decode loop, on the device and without host syncs (issue 17, item 3).

Each processor maps last-position scores of shape (..., vocab), float32, to scores of the same
shape; filtered tokens get -inf. The definitions, and the order in which `process` applies them,
are transformers' (`generation/logits_process.py`, `GenerationMixin._get_logits_processor`):
repetition penalty (a processor, so greedy decoding gets it too), then, when sampling,
temperature, top-k, top-p, min-p. tests/engine/test_samplers.py compares every processor with
transformers' `RepetitionPenaltyLogitsProcessor`, `TemperatureLogitsWarper`, `TopKLogitsWarper`,
`TopPLogitsWarper` and `MinPLogitsWarper` on the same inputs.

No function here reads a value back to the host: no `.item()`, no `int()` of a tensor, no
boolean indexing or `nonzero` (both sync on CUDA); masks are applied with `masked_fill`/`where`
and ids are written with `index_fill_`. So the compiled decode path can sample the next token
while the GPU still runs the previous step (`generation._OneStepAhead`).

The repetition penalty reads the tokens seen so far (prompt and reply, as transformers' input_ids)
from a (vocab,) bool mask on the device, built once per turn by `seen_mask` and updated in place by
`sample` with every token it picks.

On CUDA the draw takes `draw_from_nucleus` instead (issue 15, item 2): the same filters as
prefixes of one ascending sort, and one uniform through the inverse CDF, because a single row of
128,256 scores makes PyTorch's one-row softmax, argmax and multinomial checks slow (0.38 ms of GPU
time a sampled token on the H200 at the default settings against 0.03 greedy, in a 3.9 ms step:
tests/benchmarks/results/sampler_gpu_h200.json). Where NVRTC builds it, `nucleus_kernel` draws
instead, the same filters as depth thresholds found by histograms, no sort (~4 small launches). On
the CPU `sample` keeps transformers' own steps,
so a seeded CPU draw picks the token `generate()` picks.

Presence and frequency penalties are OpenAI request parameters; Headroom passes them to remote
servers only (`app.engine.remote.openai_client.sampling_body`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import torch

from app.engine.local import nucleus_kernel

FILTERED = float("-inf")
"""Score given to a filtered token (transformers' default ``filter_value``)."""

NON_FINITE_WORDS = "the model produced invalid numbers (NaN or infinity)"
"""In NonFiniteLogits' message: app.chat.error_text says it in the window's language."""
_TORCH_NON_FINITE = "probability tensor contains either"
"""How torch.multinomial's refusal of NaN or infinite probabilities starts ("… `inf`, `nan` or
element < 0", aten Distributions.cpp; older releases wrote it without the backticks)."""


class NonFiniteLogits(RuntimeError):
    """The model's scores hold NaN or infinity: damaged weights (NaN in the file) or a compute
    dtype that overflows (fp16 activations past 65,504). Greedy decoding would take the argmax of
    NaN (token 0) until max_new_tokens; a draw fails inside torch with its own wording."""

    def __init__(self) -> None:
        super().__init__(f"{NON_FINITE_WORDS} — its weights may be damaged, or its compute dtype overflows")


class SamplerSettings(Protocol):
    """What `process` and `sample` read (`generation.SamplingParams` has these fields).

    temperature: 0 or less = greedy. top_k: tokens kept, 0 = off. top_p: nucleus mass in (0, 1],
    1 = off. min_p: fraction of the top token's probability, 0 = off. repetition_penalty: 1 = off,
    > 1 discourages tokens already seen (CTRL, Keskar et al. 2019, https://arxiv.org/abs/1909.05858).
    """

    temperature: float
    top_p: float
    top_k: int
    min_p: float
    repetition_penalty: float


def apply_repetition_penalty(scores: torch.Tensor, seen: torch.Tensor, penalty: float) -> torch.Tensor:
    """Scores of seen tokens divided by ``penalty`` where positive, multiplied where negative.

    scores: (..., vocab) float; seen: (vocab,) bool on the same device. Returns a new tensor.
    Same values as transformers' `RepetitionPenaltyLogitsProcessor(penalty)` given the ids that
    set ``seen`` (it gathers and scatters them; a mask gives the same result without a sync)."""
    penalized = torch.where(scores < 0, scores * penalty, scores / penalty)
    return torch.where(seen, penalized, scores)


def apply_temperature(scores: torch.Tensor, temperature: float) -> torch.Tensor:
    """scores / temperature (`TemperatureLogitsWarper`); temperature > 0."""
    return scores / temperature


def top_k_filter(scores: torch.Tensor, k: int) -> torch.Tensor:
    """Keep the ``k`` highest scores and any tied with the k-th (`TopKLogitsWarper`); k ≤ 0 or
    k ≥ vocab keeps everything (returns ``scores`` itself)."""
    if k <= 0 or k >= scores.shape[-1]:
        return scores
    kth = torch.topk(scores, k, dim=-1).values[..., -1:]
    return scores.masked_fill(scores < kth, FILTERED)


def top_p_filter(scores: torch.Tensor, top_p: float) -> torch.Tensor:
    """Nucleus filtering (Holtzman et al. 2019, https://arxiv.org/abs/1904.09751) as
    `TopPLogitsWarper(top_p, min_tokens_to_keep=1)`: sorted ascending, the tokens whose cumulative
    probability stays ≤ 1 − top_p go; the most probable token always stays. top_p ≥ 1 keeps
    everything (returns ``scores`` itself)."""
    if top_p >= 1.0:
        return scores
    sorted_scores, order = torch.sort(scores, dim=-1, descending=False)
    cumulative = sorted_scores.softmax(dim=-1).cumsum(dim=-1)
    remove_sorted = cumulative <= (1 - top_p)
    remove_sorted[..., -1:] = False
    remove = remove_sorted.scatter(-1, order, remove_sorted)
    return scores.masked_fill(remove, FILTERED)


def min_p_filter(scores: torch.Tensor, min_p: float) -> torch.Tensor:
    """Drop tokens whose probability is below ``min_p`` × the top token's (Nguyen et al. 2024,
    https://arxiv.org/abs/2407.01082), as `MinPLogitsWarper(min_p, min_tokens_to_keep=1)`; the top
    token always stays. min_p ≤ 0 keeps everything (returns ``scores`` itself)."""
    if min_p <= 0:
        return scores
    probs = torch.softmax(scores, dim=-1)
    remove = probs < min_p * probs.amax(dim=-1, keepdim=True)
    remove.scatter_(-1, torch.argmax(probs, dim=-1, keepdim=True), False)
    return scores.masked_fill(remove, FILTERED)


def process(scores: torch.Tensor, settings: SamplerSettings, seen: torch.Tensor | None = None) -> torch.Tensor:
    """All processors in transformers' order: repetition penalty (when ``seen`` is given and the
    penalty is not 1), then, unless greedy (temperature ≤ 0), temperature, top-k, top-p, min-p.
    scores: (..., vocab) float32; returns the processed scores, same shape and device."""
    if seen is not None and settings.repetition_penalty != 1.0:
        scores = apply_repetition_penalty(scores, seen, settings.repetition_penalty)
    if settings.temperature <= 0:
        return scores
    if settings.temperature != 1.0:
        scores = apply_temperature(scores, settings.temperature)
    scores = top_k_filter(scores, settings.top_k)
    scores = top_p_filter(scores, settings.top_p)
    return min_p_filter(scores, settings.min_p)


def seen_mask(token_ids: Sequence[int], scores: torch.Tensor) -> torch.Tensor:
    """A (vocab,) bool mask on ``scores.device``, True at ``token_ids`` (the prompt of a turn).

    vocab = scores.shape[-1]; ids outside [0, vocab) are left out, as transformers does for ids
    the output layer cannot produce. One host-to-device copy, once per turn."""
    vocab = scores.shape[-1]
    mask = torch.zeros(vocab, dtype=torch.bool, device=scores.device)
    kept = sorted({int(i) for i in token_ids if 0 <= int(i) < vocab})
    if kept:
        mask.index_fill_(0, torch.tensor(kept, dtype=torch.long).to(scores.device), True)
    return mask


def nucleus(scores: torch.Tensor, settings: SamplerSettings) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The sampling filters (temperature, top-k, top-p, min-p; not the repetition penalty) as one
    ascending sort: (order, cumulative, start), where ``order`` (V,) sorts ``scores`` ascending,
    ``cumulative`` (V,) float32 is the running sum of exp((score - top score) / temperature) in that
    order (the top token weighs 1), and the kept tokens are ``order[start:]``, start a (1,) long
    tensor on the device, at most V − 1 (the top token always stays).

    Every filter keeps a run of the highest scores, so each is a start index found by a binary
    search (`torch.searchsorted`), never by a host read:
    - top-k: scores ≥ the k-th highest (ties with it stay, as `TopKLogitsWarper`);
    - top-p, over what top-k kept: a token goes when the kept mass up to it in ascending order is
      ≤ (1 − top_p) of the kept total (`TopPLogitsWarper`'s cumulative sum, unnormalized);
    - min-p: weight ≥ min_p, i.e. score ≥ top + temperature · ln(min_p) (`MinPLogitsWarper`: the
      ratio to the top token's probability does not change with renormalization).
    The kept set is `process`'s up to float rounding at its edge (the sums run in another order).
    scores: (V,) or (1, V) float32; settings.temperature > 0."""
    flat = scores.reshape(-1)
    vocab = flat.numel()
    sorted_scores, order = torch.sort(flat)
    top = sorted_scores[-1:]
    temperature = settings.temperature
    cumulative = torch.cumsum(torch.exp((sorted_scores - top) / temperature), 0)
    start = torch.zeros(1, dtype=torch.long, device=flat.device)
    if 0 < settings.top_k < vocab:
        start = torch.searchsorted(sorted_scores, sorted_scores[vocab - settings.top_k:][:1])
    if settings.top_p < 1.0:
        base = _mass_before(cumulative, start)
        cut = base + (1.0 - settings.top_p) * (cumulative[-1:] - base)
        start = torch.maximum(start, torch.searchsorted(cumulative, cut, right=True))
    if settings.min_p > 0:
        floor = top + temperature * math.log(settings.min_p)
        start = torch.maximum(start, torch.searchsorted(sorted_scores, floor))
    return order, cumulative, start.clamp_(max=vocab - 1)


def _mass_before(cumulative: torch.Tensor, start: torch.Tensor) -> torch.Tensor:
    """cumulative[start − 1], 0 when start is 0: the weight of the tokens a filter dropped."""
    before = cumulative.gather(0, (start - 1).clamp(min=0))
    return torch.where(start > 0, before, torch.zeros_like(before))


def draw_from_nucleus(scores: torch.Tensor, settings: SamplerSettings,
                      generator: torch.Generator | None) -> torch.Tensor:
    """A token drawn from softmax(scores / temperature) over `nucleus`'s kept tokens: one uniform
    u ∈ [0, 1) maps through the kept tokens' cumulative weight (inverse-CDF sampling, the same
    distribution as `torch.multinomial` on `process`'s probabilities, other draws for a seed).
    A (1,) long tensor on ``scores.device``; no host sync when ``generator`` is on that device
    (one from another device draws u there and copies it). About 13 kernels, the sort the largest."""
    order, cumulative, start = nucleus(scores, settings)
    device = generator.device if generator is not None else scores.device
    u = torch.rand(1, generator=generator, device=device).to(scores.device)
    base = _mass_before(cumulative, start)
    target = base + u * (cumulative[-1:] - base)
    index = torch.searchsorted(cumulative, target, right=True)
    index = torch.minimum(torch.maximum(index, start), torch.full_like(index, order.numel() - 1))
    return order.gather(0, index)


def sample(scores: torch.Tensor, settings: SamplerSettings, generator: torch.Generator | None,
           seen: torch.Tensor | None = None, *, uniform: torch.Tensor | None = None,
           out: torch.Tensor | None = None) -> torch.Tensor:
    """The next token id from last-position scores (vocab,) or (1, vocab), float32: a (1,) long
    tensor on ``scores.device``, argmax when greedy, else drawn from softmax(process(scores)):
    on CUDA by `nucleus_kernel` (greedy too) where it builds, else `draw_from_nucleus`; on the CPU
    by transformers' own steps.

    uniform: the CUDA kernel's draw, a (1,) float32 u ∈ [0, 1) on the scores' device, drawn ahead by
    the caller (one launch for many tokens); None draws it here from ``generator``. out: a (1,) long
    tensor on the device that the CUDA kernel writes the token into (and returns); the other paths
    return a tensor of their own.

    seen: the turn's `seen_mask`; the picked token is marked in it (in place) so the next step
    penalizes it. generator: seeds the draw; one on another device than ``scores`` (the eager
    path keeps a CPU generator) gets the probabilities copied to it, which syncs; on the same
    device nothing here waits for the device."""
    if scores.device.type == "cuda" and nucleus_kernel.takes(scores):
        if settings.temperature <= 0:
            return nucleus_kernel.greedy(scores, seen, settings.repetition_penalty, out=out)
        if uniform is None:
            device = generator.device if generator is not None else scores.device
            uniform = torch.rand(1, generator=generator, device=device).to(scores.device)
        return nucleus_kernel.run(scores, settings, uniform, seen, settings.repetition_penalty, out=out)[0]
    if settings.temperature > 0 and scores.device.type == "cuda":
        if seen is not None and settings.repetition_penalty != 1.0:
            scores = apply_repetition_penalty(scores, seen, settings.repetition_penalty)
        token = draw_from_nucleus(scores, settings, generator)
        if seen is not None:
            seen.index_fill_(0, token, True)
        return token
    processed = process(scores, settings, seen)
    if settings.temperature <= 0:
        token = torch.argmax(processed.reshape(-1)).view(1)
    else:
        probs = torch.softmax(processed.reshape(-1), dim=-1)
        try:
            if generator is not None and generator.device.type != probs.device.type:
                token = torch.multinomial(probs.to(generator.device), 1, generator=generator).to(probs.device)
            else:
                token = torch.multinomial(probs, 1, generator=generator)
        except RuntimeError as exc:  # NaN that reached decode: said as that, not in torch's words
            if _TORCH_NON_FINITE in str(exc):
                raise NonFiniteLogits() from None
            raise
    if seen is not None:
        seen.index_fill_(0, token, True)
    return token
