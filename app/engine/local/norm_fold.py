"""A decoder layer's RMSNorms folded into the NF4 GEMVs around them (issue 15), behind HEADROOM_NORM_FOLD.

Why: a norm needs the sum of squares of the whole hidden state, so between two GEMVs it is a launch of its
own and a round trip on the decode step's critical path: the 8B step's 65 ``add_rms_norm`` launches add
~113 µs of ~2,950 on the H200 (tests/benchmarks/results/decode_experiments_h200_patched.json), more than
the ~95 µs that 350 tok/s at 1k still needs.

Folded: the GEMV that writes the hidden state (o_proj, down; nf4_mma FOLD_OUT) adds the residual in its
last write and stores

    h = bf16(residual + bf16(W x)),   g = bf16(w · h),   ssq[t] = Σ h² over row tile t (16 rows),

w the next norm's weight; the GEMV that reads the norm (q/k/v's group, the gate/up pair; FOLD_IN) takes g
as x and scales its float32 sums by r = 1 / sqrt(Σ ssq / H + eps) before bias and rounding:

    y = bf16(r · Σ W g + b)

Exact arithmetic gives transformers' LlamaRMSNorm (w · h · r) and the same y; the roundings differ: the
model rounds bf16(h · r) and then bf16(w · that), the fold rounds bf16(w · h) and never the normalized
input. tests/benchmarks/norm_fold_quality.py measures what that moves on the real SmolLM2-135M (NF4,
bf16, teacher-forced, 2,000 tokens a text; results/norm_fold_quality_cpu.json): next-token agreement
with the app's path 97.2 % (English) and 96.9 % (Korean) against 97.4-97.8 and 96.8-97.4 % for other
correct orders of the same sums (the floor), perplexity +0.00 / −0.10 % against +0.00…+0.05 / −0.19…+0.12 %,
the largest logit difference 1.25 / 2.50 against 1.25-1.38 / 1.64-2.57, 1 − correlation 1.1× / 1.2-1.4× the
floor's (the int8 GEMV of nf4_int8_quality: 6-8×): a different rounding. Against exact arithmetic (the same
NF4 weights, the rest in float64) it is as close as the app's path: 1 − correlation 1.61e-4 / 2.50e-4 against
the app's 1.58e-4 / 2.70e-4 and 1.56-1.70e-4 / 2.62-2.68e-4 for the other orders. Within bf16 noise; the
warm-up's regional check (compiled_decode) still compares every step with the model's own forward, and on
the 8B the fold must pass the issue's GPU logits check (compiled_step_logits) before it is the default.

The first layer's input norm has no GEMV before it (`first_input` makes g and ssq from the embedding
output); the final norm stays ``add_rms_norm`` (the lm_head is cuBLAS), fed h and a zero delta.

The launches between one decode step's GEMVs meet through `_PENDING` (as nf4_hook's group rows do): the
folded layer step (compiled_decode) says what the next reader and writer take (`expect`), the swapped
forwards take it (`input_for`, `output_request`) and leave their results (`deliver`, `made`).

Off by default (see FOLD; HEADROOM_NORM_FOLD=1 turns it on; its kernels are built only then). Sums run in
fixed orders, mirrored here bit for bit (`lane0_sum`), so a launch should repeat its bits (see FOLD).
"""

from __future__ import annotations

import os

import torch

FOLD = os.environ.get("HEADROOM_NORM_FOLD", "0") == "1"
"""The compiled decode step folds its layers' RMSNorms into the NF4 GEMVs (this module's docstring) where
nf4_hook.fold_reason allows. Off by default: on an H100 it saves ~40 µs a step (1k: 3.084 → 3.044 ms,
324 → 329 tok/s; tests/benchmarks/results/norm_fold_h100.json) with logits within noise, but one of its
GPU tests fails (test_pdl's folded chain: one tile's sum of squares does not repeat its bits)."""

TILE_ROWS = 16  # rows a tile of the writing GEMV (nf4_mma.ROWS_PER_WARP): one sum of squares each
LANES = 32  # the reading launch adds the tiles' sums over one warp

_PENDING: dict = {}
"""Between the launches of one folded layer step: "in" (x, ssq, eps) for the launch that reads the norm,
"out" (residual, weight) for the GEMV that writes the next, "made" (g, ssq) what it wrote. Emptied by the
step (one dict for all layers: no per-layer object for Dynamo to tell layers apart by)."""


def lane0_sum(values: torch.Tensor) -> torch.Tensor:
    """values (..., L) float32, L a power of two, as L lanes of one warp adding by butterfly (each lane
    its own value first, then its partner's at distance L/2, ..., 1) → (...) lane 0's sum, bit for bit the
    kernel's order (nf4_mma norm_scale, finish)."""
    index = torch.arange(values.shape[-1], device=values.device)
    step = values.shape[-1] // 2
    while step:
        values = values + values[..., index ^ step]
        step //= 2
    return values[..., 0]


def tile_ssq(hidden: torch.Tensor) -> torch.Tensor:
    """(ceil(H / 16),) float32: each 16-row tile's sum of squares of ``hidden`` (H,) bf16, as a FOLD_OUT
    launch writes it (rows past H add 0)."""
    h = hidden.reshape(-1).float()
    pad = -h.numel() % TILE_ROWS
    squares = torch.nn.functional.pad(h * h, (0, pad)).view(-1, TILE_ROWS)
    return lane0_sum(squares).contiguous()  # as the kernel's (a strided view would be another graph's guard)


def norm_scale(ssq: torch.Tensor, hidden_size: int, eps: float) -> torch.Tensor:
    """r = 1 / sqrt(Σ ssq / H + eps), float32 (0-dim), added as a FOLD_IN launch adds: lane j of a warp
    sums tiles j, j + 32, ... in order, then lane 0's butterfly; IEEE division and square root."""
    s = ssq.float().reshape(-1)
    s = torch.nn.functional.pad(s, (0, -s.numel() % LANES)).view(-1, LANES)
    lanes = s[0]
    for row in s[1:]:
        lanes = lanes + row
    total = lane0_sum(lanes)
    eps32 = torch.tensor(eps, dtype=torch.float32)
    return 1 / torch.sqrt(total / torch.tensor(float(hidden_size), dtype=torch.float32) + eps32)


def folded_rows(sums: torch.Tensor, r: torch.Tensor | None, bias: torch.Tensor | None) -> torch.Tensor:
    """y (N,) bf16 = bf16(r · sums + bias) (r None: bf16(sums + bias)) for float32 sums, as FOLD_IN rounds."""
    y = sums.float() if r is None else r * sums.float()
    if bias is not None:
        y = y + bias.float()
    return y.to(torch.bfloat16)


def written(y: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """(h, g, ssq) that a FOLD_OUT launch writes for its bf16 output y (N,): h = bf16(residual + y), g =
    bf16(weight · h), ssq = `tile_ssq` (h)."""
    h = (residual.reshape(-1).float() + y.reshape(-1).float()).to(torch.bfloat16)
    g = (weight.reshape(-1).float() * h.float()).to(torch.bfloat16)
    return h, g, tile_ssq(h)


def first_input(weight: torch.Tensor, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(g (1, 1, H), ssq) of the first layer's input norm (``weight``) for the embedding output ``hidden``
    (1, 1, H): what a FOLD_OUT launch would have left (no GEMV writes it). Compiled beside the step's outer
    modules (compiled_decode), so its tiles add in Inductor's order, not `tile_ssq`'s: the first norm's r
    may differ from a kernel's in its last bit, within bf16 noise like every other order of a sum."""
    g = (weight.reshape(-1).float() * hidden.reshape(-1).float()).to(hidden.dtype)
    h = hidden.reshape(-1).float()
    return g.view_as(hidden), torch.nn.functional.pad(h * h, (0, -h.numel() % TILE_ROWS)).view(-1, TILE_ROWS).sum(-1)


def expect(x: torch.Tensor, ssq: torch.Tensor, eps: float, writer, residual: torch.Tensor,
           weight: torch.Tensor) -> None:
    """The launch that reads ``x`` (q/k/v's group or the gate/up pair) scales by the norm of ``ssq``; the
    module ``writer`` (o_proj, down) writes the folded norm of ``residual`` plus its output for ``weight``."""
    _PENDING["in"] = (x, ssq, eps)
    _PENDING["out"] = (writer, residual, weight)


def input_for(x: torch.Tensor) -> tuple[torch.Tensor, float] | None:
    """(ssq, eps) when ``x`` is the folded norm's g the step expects (taken once), else None."""
    entry = _PENDING.get("in")
    if entry is None or entry[0] is not x:
        return None
    del _PENDING["in"]
    return entry[1], entry[2]


def output_request(layer) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(residual, weight) when the step asked ``layer`` (taken once) for its folded output, else None."""
    entry = _PENDING.get("out")
    if entry is None or entry[0] is not layer:
        return None
    del _PENDING["out"]
    return entry[1], entry[2]


def clear() -> None:
    """Forget what a step left (one that raised halfway): an entry must not reach another step's launch."""
    _PENDING.clear()


def deliver(g: torch.Tensor, ssq: torch.Tensor) -> None:
    _PENDING["made"] = (g, ssq)


def made() -> tuple[torch.Tensor, torch.Tensor]:
    """(g, ssq) the writing GEMV left. Raises RuntimeError (the pending entries cleared) when a launch did
    not take its part: the layer's modules are not the ones nf4_hook.fold_reason accepted."""
    entry = _PENDING.pop("made", None)
    left = sorted(_PENDING)
    _PENDING.clear()
    if entry is None or left:
        raise RuntimeError(f"the folded norm was not taken by the layer's launches (left: {left or ['made']})")
    return entry
