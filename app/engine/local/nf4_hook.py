"""Swap the fused NF4 GEMV in for decode rows of every bitsandbytes 4-bit linear (issue 15).

`install(model)` finds every `Linear4bit` (any `nn.Linear` whose weight carries a
`quant_state`), checks the candidate kernels against bitsandbytes on one layer of each distinct
shape — the CUDA mma kernel (nf4_mma, Plan.kernel == MMA_KERNEL) and the Triton kernel
(nf4_gemv) — times the ones that pass against bitsandbytes per shape, and replaces each layer's
forward with one that sends a single row (M == 1: a decode step, batch 1) to the custom op
``headroom::nf4_gemv`` with the fastest plan of its shape, and everything else (prefill chunks)
to bitsandbytes' own forward, unchanged. Shapes where bitsandbytes is fastest keep it. The op is
opaque to torch.compile and captured inside the CUDA graph compiled_decode captures. When CUDA
and both kernels are missing, a layer is not NF4/bf16, or no candidate passes the self-check,
nothing is swapped and `Nf4GemvStatus.reason` says why (the loader puts it in
LoadReport.fallbacks); `Nf4GemvStatus.mma_reason` says why the CUDA kernel is not used.
Sibling layers of one input (GROUPS: q/k/v, gate/up) then run as one launch of the CUDA mma kernel
per decode row where that passes its check and is faster (`Nf4Group`, ``headroom::nf4_gemv_group``):
on the H200 it took the 8B decode step from 4.29 to 3.89 ms at 4k tokens, 218 → 239 tok/s sampled
(results/decode_anatomy_h200_mma_kv.json, _groups.json): k and v alone are latency-bound launches
(5.5 µs for 2 MB each). An MLP whose forward is down(silu(gate(x)) * up(x)) (checked by running it)
then takes silu(gate) * up from one paired launch (`Nf4GateUp`, ``headroom::nf4_gemv_silu_mul``) where
that is faster: the 8B step 3.021 against 3.066 ms at 1k (results/decode_anatomy_h200_silu_pair.json).
`uninstall(model)` restores bitsandbytes and the MLPs' own forward.
"""

import logging
from dataclasses import dataclass, replace

import torch

from app.engine.local import nf4_gemv as k
from app.engine.local import nf4_mma, norm_fold
from app.engine.local.nf4_gemv import Nf4Tensors, Plan, Unsupported

log = logging.getLogger(__name__)
H200_SMS = 132
REF_TOLERANCE = 4e-3  # rel. L2 vs fp32 W·x on bitsandbytes' own dequantized weights (bf16 output rounding ≈ 1.1e-3)
BNB_TOLERANCE = 2e-2  # rel. L2 vs bitsandbytes' GEMV, which rounds every product to bf16
# Fastest launch shapes per (N, K) measured on the H200, 2026-12-01 (tests/benchmarks/nf4_gemv.py,
# results/nf4_gemv_h200.json: kernels 2 and 6, 11.7 / 5.7 / 26.7 / 30.0 µs against bitsandbytes'
# 10.8 / 6.9 / 29.4 / 30.3; 3.78 vs 3.99 ms per token); other shapes use choose_plan's rule.
TUNED: dict[tuple[int, int], Plan] = {
    (4096, 4096): Plan(32, 256, 4, 4, 0, 2),
    (1024, 4096): Plan(32, 256, 16, 4, 0, 2),
    (14336, 4096): Plan(16, 512, 1, 4, 0, 6),
    (4096, 14336): Plan(64, 512, 4, 4, 0, 6),
}
MMA_KERNEL = 7  # Plan.kernel of the CUDA mma kernel (nf4_mma): block_n 16 rows a warp, block_k 256,
# num_warps warps a block, split_k blocks along K. Launch shapes measured on the H200 where they beat
# nf4_mma.choose_launch's rule (2026-12-02, tests/benchmarks/results/nf4_gemv_h200_cuda.json: 5.5 vs 5.7
# and 21.6 vs 23.9 µs; the other two shapes' best is the rule's): 2.99 against 3.16 ms of GEMV a token.
MMA_TUNED: dict[tuple[int, int], Plan] = {
    (1024, 4096): Plan(16, 256, 4, 4, 0, MMA_KERNEL),
    (14336, 4096): Plan(16, 256, 1, 4, 0, MMA_KERNEL),
}
BNB = "bitsandbytes"  # Nf4GemvStatus.kernels' name for a shape that keeps bitsandbytes' GEMV


def kernel_name(plan: Plan) -> str:
    return "CUDA mma" if plan.kernel == MMA_KERNEL else "Triton"


@torch.library.custom_op("headroom::nf4_gemv", mutates_args=())
def nf4_gemv(x: torch.Tensor, packed: torch.Tensor, absmax: torch.Tensor, absmax2: torch.Tensor,
             code2: torch.Tensor, offset: torch.Tensor, code: torch.Tensor, pair_lut: torch.Tensor,
             counters: torch.Tensor, bias: torch.Tensor | None, n: int, kk: int, nested: bool,
             block_n: int, block_k: int, split_k: int, num_warps: int, lookup: int, kernel: int,
             bits: bool, stages: int, row_tiles: int) -> torch.Tensor:
    """(N,) bf16 = W x for x (K,) bf16: on CUDA the CUDA mma kernel (kernel == MMA_KERNEL) or the
    Triton kernel, the pure-torch mirror elsewhere."""
    t = Nf4Tensors(packed, absmax, absmax2, code2, offset, code, pair_lut, counters, n, kk, nested)
    x = x.contiguous()
    if x.is_cuda and kernel == MMA_KERNEL:
        return nf4_mma.launch(x, t, bias, num_warps, split_k)
    if x.is_cuda and k.triton is not None:
        return k.launch(x, t, Plan(block_n, block_k, split_k, num_warps, lookup, kernel, bits, stages, row_tiles),
                        bias)
    return k.reference_gemv(x, t, bias)


@nf4_gemv.register_fake
def _(x, packed, absmax, absmax2, code2, offset, code, pair_lut, counters, bias, n, kk, nested,
      block_n, block_k, split_k, num_warps, lookup, kernel, bits, stages, row_tiles):
    return x.new_empty((n,), dtype=torch.bfloat16)


@torch.library.custom_op("headroom::nf4_gemv_group", mutates_args=())
def nf4_gemv_group(x: torch.Tensor, packed: list[torch.Tensor], absmax: list[torch.Tensor],
                   absmax2: list[torch.Tensor], code2: list[torch.Tensor], offset: list[torch.Tensor],
                   code: torch.Tensor, biases: list[torch.Tensor], counters: torch.Tensor, ns: list[int], kk: int,
                   nested: bool, num_warps: int, split_k: int, ssq: torch.Tensor | None = None,
                   eps: float = 0.0) -> torch.Tensor:
    """(N0 + N1 [+ N2],) bf16: sibling layers of one input x (K,) bf16 (q, k, v; gate, up), their
    outputs one after the other: one launch of the CUDA mma kernel (nf4_mma.launch_group) on CUDA,
    the pure-torch mirror elsewhere. biases: one per layer, or empty. ssq (K / 16,) float32: x is the
    folded norm's g and the rows are scaled by its r (norm_fold)."""
    x = x.contiguous()
    lut = code if x.is_cuda else k.pair_table(code)  # the mirror's byte → pair table; the kernel has none
    ts = [Nf4Tensors(p, a, a2, c2, o, code, lut, counters, n, kk, nested)
          for p, a, a2, c2, o, n in zip(packed, absmax, absmax2, code2, offset, ns, strict=True)]
    bias_list = list(biases) if biases else [None] * len(ts)
    if x.is_cuda:
        return nf4_mma.launch_group(x, ts, bias_list, counters, num_warps, split_k,
                                    None if ssq is None else (ssq, eps))
    return torch.cat([_mirror_rows(x, t, b, ssq, eps) for t, b in zip(ts, bias_list, strict=True)])


@nf4_gemv_group.register_fake
def _(x, packed, absmax, absmax2, code2, offset, code, biases, counters, ns, kk, nested, num_warps, split_k,
      ssq=None, eps=0.0):
    return x.new_empty((sum(ns),), dtype=torch.bfloat16)


def _mirror_rows(x: torch.Tensor, t: Nf4Tensors, bias: torch.Tensor | None, ssq: torch.Tensor | None,
                 eps: float) -> torch.Tensor:
    """The pure-torch mirror's rows (N,) bf16: reference_gemv, or with ssq the folded norm's bf16(r · W x + b)."""
    if ssq is None:
        return k.reference_gemv(x, t, bias)
    sums = k.reference_dequantize(t).float() @ x.float()
    return norm_fold.folded_rows(sums, norm_fold.norm_scale(ssq, x.numel(), eps), bias)


@torch.library.custom_op("headroom::nf4_gemv_fold_out", mutates_args=())
def nf4_gemv_fold_out(x: torch.Tensor, packed: torch.Tensor, absmax: torch.Tensor, absmax2: torch.Tensor,
                      code2: torch.Tensor, offset: torch.Tensor, code: torch.Tensor, counters: torch.Tensor,
                      bias: torch.Tensor | None, residual: torch.Tensor, weight: torch.Tensor, n: int, kk: int,
                      nested: bool, num_warps: int, split_k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(h (N,) bf16, g (N,) bf16, ssq (ceil(N / 16),) float32): the folded norm's writer (norm_fold.written)
    for y = W x (+ bias), x (K,) bf16, residual and weight (N,) bf16: one launch of the CUDA mma kernel
    (nf4_mma.launch with fold_out) on CUDA, the pure-torch mirror elsewhere."""
    x = x.contiguous()
    t = Nf4Tensors(packed, absmax, absmax2, code2, offset, code, code if x.is_cuda else k.pair_table(code),
                   counters, n, kk, nested)
    if x.is_cuda:
        return nf4_mma.launch(x, t, bias, num_warps, split_k, (residual, weight))
    return norm_fold.written(k.reference_gemv(x, t, bias), residual, weight)


@nf4_gemv_fold_out.register_fake
def _(x, packed, absmax, absmax2, code2, offset, code, counters, bias, residual, weight, n, kk, nested, num_warps,
      split_k):
    return (x.new_empty((n,), dtype=torch.bfloat16), x.new_empty((n,), dtype=torch.bfloat16),
            x.new_empty((-(-n // norm_fold.TILE_ROWS),), dtype=torch.float32))


@torch.library.custom_op("headroom::nf4_gemv_silu_mul", mutates_args=())
def nf4_gemv_silu_mul(x: torch.Tensor, packed: list[torch.Tensor], absmax: list[torch.Tensor],
                      absmax2: list[torch.Tensor], absmax2_pair: torch.Tensor, code2: list[torch.Tensor],
                      offset: list[torch.Tensor], code: torch.Tensor, biases: list[torch.Tensor],
                      counters: torch.Tensor, n: int, kk: int, nested: bool, num_warps: int,
                      split_k: int, ssq: torch.Tensor | None = None, eps: float = 0.0) -> torch.Tensor:
    """(N,) bf16 = silu(gate x) * (up x) for x (K,) bf16, gate and up (N, K) NF4 (packed etc. [gate's,
    up's]): one launch of the CUDA mma kernel (nf4_mma.launch_pair, absmax2_pair its absmax2) on CUDA;
    elsewhere the pure-torch mirror's rows, then the model's eager silu and product. biases: two or none.
    ssq: x is the folded norm's g, gate and up scaled by its r (norm_fold)."""
    x = x.contiguous()
    lut = code if x.is_cuda else k.pair_table(code)
    gate, up = (Nf4Tensors(p, a, a2, c2, o, code, lut, counters, n, kk, nested)
                for p, a, a2, c2, o in zip(packed, absmax, absmax2, code2, offset, strict=True))
    bias_list = list(biases) if biases else [None, None]
    if x.is_cuda:
        return nf4_mma.launch_pair(x, gate, up, bias_list, absmax2_pair, counters, num_warps, split_k,
                                   None if ssq is None else (ssq, eps))
    return (torch.nn.functional.silu(_mirror_rows(x, gate, bias_list[0], ssq, eps))
            * _mirror_rows(x, up, bias_list[1], ssq, eps))


@nf4_gemv_silu_mul.register_fake
def _(x, packed, absmax, absmax2, absmax2_pair, code2, offset, code, biases, counters, n, kk, nested, num_warps,
      split_k, ssq=None, eps=0.0):
    return x.new_empty((n,), dtype=torch.bfloat16)


def choose_plan(n: int, kdim: int, sms: int = H200_SMS) -> Plan:
    """A launch shape for W (n, kdim): the tuned one if measured, else 16-row tiles of 256
    inputs split along K until about 4 programs per SM (each keeps >= 2 K tiles), register-lookup
    kernel 2 (faster than the gather kernels 0 and 1 in every measured shape)."""
    if (n, kdim) in TUNED:
        return TUNED[(n, kdim)]
    block_k = next(b for b in (256, 128, 64) if kdim % b == 0)
    tiles, iters, split = -(-n // 16), kdim // block_k, 1
    while tiles * split < 4 * sms and iters % (split * 2) == 0 and iters // (split * 2) >= 2:
        split *= 2
    return Plan(16, block_k, split, 4, 0, kernel=2)


def mma_plan(n: int, kdim: int, sms: int = H200_SMS) -> Plan:
    """The CUDA mma kernel's launch shape for W (n, kdim): measured (MMA_TUNED) or
    nf4_mma.choose_launch's rule. kdim must suit the kernel (nf4_mma.shape_reason)."""
    if (n, kdim) in MMA_TUNED:
        return MMA_TUNED[(n, kdim)]
    warps, split = nf4_mma.choose_launch(n, kdim, sms)
    return Plan(nf4_mma.ROWS_PER_WARP, nf4_mma.SUPER_TILE, split, warps, 0, MMA_KERNEL)


def run(x: torch.Tensor, t: Nf4Tensors, plan: Plan, bias: torch.Tensor | None = None) -> torch.Tensor:
    """The op on one row: x (..., K) with one row → (..., N) bf16."""
    y = torch.ops.headroom.nf4_gemv(x.reshape(-1), t.packed, t.absmax, t.absmax2, t.code2, t.offset, t.code,
                                    t.pair_lut, t.counters, bias, t.n, t.k, t.nested, plan.block_n,
                                    plan.block_k, plan.split_k, plan.num_warps, plan.lookup, plan.kernel,
                                    plan.bits, plan.stages, plan.row_tiles)
    return y.view(*x.shape[:-1], t.n)


def run_fold_out(x: torch.Tensor, t: Nf4Tensors, plan: Plan, bias: torch.Tensor | None, residual: torch.Tensor,
                 weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``headroom::nf4_gemv_fold_out`` on one row x (..., K): (h, g, ssq), h and g (N,) (norm_fold)."""
    return torch.ops.headroom.nf4_gemv_fold_out(
        x.reshape(-1), t.packed, t.absmax, t.absmax2, t.code2, t.offset, t.code, t.counters, bias,
        residual.reshape(-1), weight.reshape(-1), t.n, t.k, t.nested, plan.num_warps, plan.split_k)


GROUPS = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"))
"""Sibling layers of one input that may run as one launch (Llama, Mistral, Qwen2/3 names), called
in this order by the model's forward: the first computes all, the others take their rows."""
_PENDING: dict = {}
"""The last group launch of a decode step: {"x": its input, "y": all rows}, cleared by the group's
last layer. One dict for every layer, so a decode step compiled once serves all of them (a
per-layer object would be a guard that tells layers apart)."""


@dataclass(frozen=True)
class Nf4Group:
    """Sibling NF4 layers run as one launch of the CUDA mma kernel: ``layers`` in call order, their
    `Nf4Tensors`, one counters vector for all their row tiles, the launch shape (0, 0: the rule's)."""

    names: tuple[str, ...]
    layers: tuple
    tensors: tuple[Nf4Tensors, ...]
    counters: torch.Tensor
    num_warps: int = 0
    split_k: int = 0

    @property
    def ns(self) -> list[int]:
        return [t.n for t in self.tensors]

    def run(self, x: torch.Tensor, fold: tuple[torch.Tensor, float] | None = None) -> torch.Tensor:
        """(N0 + N1 [+ N2],) bf16 for one row x; fold (ssq, eps): x is the folded norm's g (norm_fold)."""
        t0 = self.tensors[0]
        biases = [lay.bias for lay in self.layers] if self.layers[0].bias is not None else []
        return torch.ops.headroom.nf4_gemv_group(
            x.reshape(-1), [t.packed for t in self.tensors], [t.absmax for t in self.tensors],
            [t.absmax2 for t in self.tensors], [t.code2 for t in self.tensors], [t.offset for t in self.tensors],
            t0.code, biases, self.counters, self.ns, t0.k, t0.nested, self.num_warps, self.split_k,
            *(fold or ()))


@dataclass(frozen=True)
class Nf4GateUp:
    """An MLP's gate and up NF4 layers with silu(gate) * up as one launch of the CUDA mma kernel
    (``headroom::nf4_gemv_silu_mul``): its decode rows skip the separate silu and product launch.
    ``absmax2``: nf4_mma.pair_absmax2; counters: one per 8 rows; the launch shape (0, 0: the rule's)."""

    mlp: torch.nn.Module
    layers: tuple
    tensors: tuple[Nf4Tensors, Nf4Tensors]
    absmax2: torch.Tensor
    counters: torch.Tensor
    num_warps: int = 0
    split_k: int = 0

    def run(self, x: torch.Tensor, fold: tuple[torch.Tensor, float] | None = None) -> torch.Tensor:
        """(N,) bf16 for one row x; fold (ssq, eps): x is the folded norm's g (norm_fold)."""
        gate, up = self.tensors
        biases = [lay.bias for lay in self.layers] if self.layers[0].bias is not None else []
        return torch.ops.headroom.nf4_gemv_silu_mul(
            x.reshape(-1), [t.packed for t in self.tensors], [t.absmax for t in self.tensors],
            [t.absmax2 for t in self.tensors], self.absmax2, [t.code2 for t in self.tensors],
            [t.offset for t in self.tensors], gate.code, biases, self.counters, gate.n, gate.k, gate.nested,
            self.num_warps, self.split_k, *(fold or ()))


def _silu(module) -> bool:
    """``module`` computes silu (torch's nn.SiLU, transformers' SiLUActivation, ...), judged by its output."""
    probe = torch.linspace(-12, 12, 97).to(torch.bfloat16)
    try:
        with torch.inference_mode():
            return torch.equal(module(probe.clone()), torch.nn.functional.silu(probe))  # clone: an in-place SiLU
    except Exception:  # noqa: BLE001 - not an activation we can read
        return False


def gate_up_pairs(model, prepared) -> list[Nf4GateUp]:
    """MLPs of ``model`` (gate_proj, up_proj, down_proj, a silu act_fn) whose gate and up are in
    ``prepared`` and suit nf4_mma.launch_pair (with one nested codebook), with a bias each or none.
    Whether the MLP's forward is down(silu(gate(x)) * up(x)) install checks by running it."""
    tensors = {id(layer): t for layer, t in prepared}
    found = []
    for mlp in model.modules():
        gate, up = getattr(mlp, "gate_proj", None), getattr(mlp, "up_proj", None)
        if (id(gate) not in tensors or id(up) not in tensors or getattr(mlp, "down_proj", None) is None
                or (gate.bias is None) != (up.bias is None) or not _silu(getattr(mlp, "act_fn", None))):
            continue
        tg, tu = tensors[id(gate)], tensors[id(up)]
        if nf4_mma.pair_reason(tg, tu) or (tg.nested and not torch.equal(tg.code2, tu.code2)):
            continue
        counters = torch.zeros(-(-tg.n // 8), dtype=torch.int32, device=tg.packed.device)
        found.append(Nf4GateUp(mlp, (gate, up), (tg, tu), nf4_mma.pair_absmax2(tg, tu), counters))
    return found


def sibling_groups(model, prepared) -> list[Nf4Group]:
    """The GROUPS found in ``model`` whose layers are all in ``prepared`` [(layer, Nf4Tensors)], share K
    (a multiple of 256) and nesting, and have a bias each or none (launch shape left to be chosen)."""
    tensors = {id(layer): t for layer, t in prepared}
    found = []
    for parent in model.modules():
        for names in GROUPS:
            layers = [getattr(parent, name, None) for name in names]
            if any(id(layer) not in tensors for layer in layers):
                continue
            ts = [tensors[id(layer)] for layer in layers]
            if (len({(t.k, t.nested) for t in ts}) == 1 and not any(nf4_mma.shape_reason(t.n, t.k) for t in ts)
                    and len({layer.bias is None for layer in layers}) == 1):
                tiles = sum(-(-t.n // nf4_mma.ROWS_PER_WARP) for t in ts)
                counters = torch.zeros(tiles, dtype=torch.int32, device=ts[0].packed.device)
                found.append(Nf4Group(names, tuple(layers), tuple(ts), counters))
    return found


def group_launches(n_total: int, kdim: int, sms: int = H200_SMS) -> list[tuple[int, int]]:
    """(warps, split_k) candidates for a group launch of n_total stacked rows: the rule's first, then
    the launch shapes giving 4-32 warps per SM."""
    rule = nf4_mma.choose_launch(n_total, kdim, sms)
    tiles = -(-n_total // nf4_mma.ROWS_PER_WARP)
    return [rule] + [(w, s) for w, s in nf4_mma.launch_shapes(n_total, kdim)
                     if w >= 2 and 4 * sms <= tiles * w * s <= 32 * sms and (w, s) != rule]


@dataclass(frozen=True)
class Nf4GemvStatus:
    """active: decode rows of some layers use a fused kernel. reason: why none does (one line),
    "" when active. layers: layers swapped. checks / mma_checks: (N, K, rel. error vs dequantized
    fp32, vs bitsandbytes GEMV) of the Triton / CUDA mma kernel per shape checked. kernels: (N, K,
    "CUDA mma" | "Triton" | "bitsandbytes") what decode rows of each shape run. mma_reason: why the
    CUDA mma kernel runs on no shape or not on all ("" when it runs everywhere). timings: (N, K,
    kernel, µs per token over that shape's layers) as install timed them. groups: per kind of sibling
    layers (GROUPS), and "silu(gate_proj)*up_proj" for MLPs whose silu and product join the gate/up
    launch: (name, stacked N, K, µs per token as one launch each, µs as separate launches, whether they
    run as one launch)."""

    active: bool
    reason: str = ""
    layers: int = 0
    checks: tuple[tuple[int, int, float, float], ...] = ()
    mma_checks: tuple[tuple[int, int, float, float], ...] = ()
    kernels: tuple[tuple[int, int, str], ...] = ()
    mma_reason: str = ""
    timings: tuple[tuple[int, int, str, float], ...] = ()
    groups: tuple[tuple[str, int, int, float, float, bool], ...] = ()

    def label(self) -> str:
        if not self.active:
            return f"bitsandbytes GEMV ({self.reason})"
        names = " + ".join(sorted({name for _, _, name in self.kernels if name != BNB}))
        fused = [g[0] for g in self.groups if g[5]]
        together = f"; {', '.join(fused)} as one launch each" if fused else ""
        return f"fused NF4 GEMV ({names}) on {self.layers} layers{together}"


def nf4_layers(model) -> list:
    return [m for m in model.modules() if isinstance(m, torch.nn.Linear)
            and getattr(getattr(m, "weight", None), "quant_state", None) is not None]


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-30))


def _dequantized(layer, t: Nf4Tensors) -> torch.Tensor:
    try:  # bitsandbytes' own dequantization of the stored bytes
        import bitsandbytes.functional as F
    except ImportError:
        return k.reference_dequantize(t)
    if not isinstance(layer.weight.quant_state, F.QuantState):  # a test's stand-in
        return k.reference_dequantize(t)
    return F.dequantize_4bit(layer.weight.data, layer.weight.quant_state)


def self_check(layer, t: Nf4Tensors, plan: Plan) -> tuple[float, float]:
    """Relative L2 errors of the op on a random bf16 row vs (fp32 W·x with bitsandbytes'
    dequantized W, bitsandbytes' own forward). NaN when an output is not finite."""
    g = torch.Generator(device=t.packed.device).manual_seed(t.n * 31 + t.k)
    x = torch.randn(1, t.k, generator=g, device=t.packed.device).to(torch.bfloat16)
    with torch.inference_mode():
        ours = run(x, t, plan, layer.bias)
        ref = x.float() @ _dequantized(layer, t).float().reshape(t.n, t.k).T
        if layer.bias is not None:
            ref = ref + layer.bias.float()
        theirs = layer.forward(x)
    if not bool(torch.isfinite(ours).all()):
        return float("nan"), float("nan")
    return _rel(ours, ref), _rel(ours, theirs)


def unavailable_reason(device: torch.device, require_cuda: bool = True) -> str:
    if not require_cuda:
        return ""
    if device.type != "cuda":
        return "no CUDA device"
    if k.triton is None:
        return "Triton is not installed"
    if torch.cuda.get_device_capability(device) < (8, 0):
        return "GPU older than Ampere (bf16 needs sm_80)"
    return ""


def _graph_us(fn, calls: int = 3) -> float:
    """µs per fn() call, timed as one CUDA graph of fn (which makes ``calls`` calls) replayed."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()  # compile / warm outside the capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    times = []
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / calls)
    return sorted(times)[2]


def time_per_token(prepared, plans: dict[tuple[int, int], list[Plan]]) -> dict[tuple[int, int], dict]:
    """µs for one decode row through every layer in ``prepared`` [(layer, Nf4Tensors)], per shape
    {(N, K): {None: bitsandbytes, plan: that plan, ...}} for the candidate ``plans`` of each shape:
    a CUDA graph over up to 32 distinct layers (weights read from HBM, not L2), scaled by the
    shape's layer count. A plan that cannot be captured or replayed times as inf."""
    by_shape: dict[tuple[int, int], list] = {}
    for layer, t in prepared:
        by_shape.setdefault((t.n, t.k), []).append((layer, t))
    out: dict[tuple[int, int], dict] = {}
    with torch.inference_mode():
        for (n, kdim), group in by_shape.items():
            sample = group[:32]
            x = torch.randn(1, kdim, device=sample[0][1].packed.device).to(torch.bfloat16)
            row = out[(n, kdim)] = {None: len(group) * _graph_us(
                lambda s=sample, x=x: [lay.forward(x) for lay, _ in s], len(sample))}
            for plan in plans.get((n, kdim), ()):
                try:
                    row[plan] = len(group) * _graph_us(
                        lambda s=sample, p=plan, x=x: [run(x, t, p, lay.bias) for lay, t in s], len(sample))
                except Exception:  # noqa: BLE001 - a kernel that cannot be graphed is not a candidate
                    row[plan] = float("inf")
    return out


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:160] if text else ''}"


def _check_candidates(shapes: dict, plans: dict, check: bool):
    """Self-check every candidate plan on one layer of its shape. Returns (passing plans per shape,
    Triton checks, mma checks, {kernel name: why it is out}); a kernel that fails on one shape is
    dropped on all (a kernel that is wrong somewhere is not trusted anywhere)."""
    checks: dict[str, list] = {"Triton": [], "CUDA mma": []}
    out: dict[str, str] = {}
    for (n, kdim), (layer, t) in shapes.items() if check else ():
        for plan in plans[(n, kdim)]:
            name = kernel_name(plan)
            if name in out:
                continue
            try:
                e_ref, e_bnb = self_check(layer, t, plan)
            except Exception as exc:  # noqa: BLE001 - a kernel that cannot run is a fallback, not a crash
                out[name] = f"NF4 GEMV ({name}) failed on {n}x{kdim}: {_first_line(exc)}"
                continue
            checks[name].append((n, kdim, e_ref, e_bnb))
            if not (e_ref <= REF_TOLERANCE and e_bnb <= BNB_TOLERANCE):
                out[name] = (f"NF4 GEMV ({name}) disagrees with bitsandbytes on {n}x{kdim} (rel. error "
                             f"{e_ref:.1e} vs dequantized weights, {e_bnb:.1e} vs its GEMV)")
    passing = {shape: [p for p in ps if kernel_name(p) not in out] for shape, ps in plans.items()}
    return passing, tuple(checks["Triton"]), tuple(checks["CUDA mma"]), out


def install(model, require_cuda: bool = True, check: bool = True,
            require_faster: bool | None = None) -> Nf4GemvStatus:
    """Swap a fused kernel in for decode rows of the NF4 layers of ``model``; never raises for an
    unsupported model (returns an inactive status with the reason). Candidates per shape: the CUDA
    mma kernel (nf4_mma, where NVRTC builds it and K % 256 == 0) and the Triton kernel.
    require_cuda=False also swaps on the CPU (the op then runs the pure-torch mirror: tests only).
    require_faster (default: on CUDA) times the candidates and bitsandbytes per shape on the
    model's own layers and gives each shape the fastest (bitsandbytes keeps a shape it wins);
    without it the first candidate that passes the self-check (CUDA mma before Triton) is used."""
    layers = nf4_layers(model)
    if not layers:
        return Nf4GemvStatus(False, "no 4-bit layers")
    device = layers[0].weight.device
    triton_reason = unavailable_reason(device, require_cuda)
    mma_reason = nf4_mma.unavailable_reason(device)
    if triton_reason and mma_reason:
        reason = triton_reason if triton_reason == mma_reason else f"{triton_reason}; {mma_reason}"
        return Nf4GemvStatus(False, reason, mma_reason=mma_reason)
    try:
        prepared = [(layer, k.tensors_of(layer)) for layer in layers]
    except Unsupported as exc:
        return Nf4GemvStatus(False, str(exc), mma_reason=mma_reason)
    shapes: dict[tuple[int, int], tuple] = {}
    for layer, t in prepared:
        shapes.setdefault((t.n, t.k), (layer, t))
    plans = {shape: ([mma_plan(*shape)] if not mma_reason and not nf4_mma.shape_reason(*shape) else [])
             + ([] if triton_reason else [choose_plan(*shape)]) for shape in shapes}
    plans, checks, mma_checks, out = _check_candidates(shapes, plans, check)
    base = {"checks": checks, "mma_checks": mma_checks}
    mma_reason = mma_reason or out.get("CUDA mma", "")
    if not any(plans.values()):
        reason = next(iter(out.values()), "no shape suits a fused kernel")
        return Nf4GemvStatus(False, reason, mma_reason=mma_reason or "no shape has K % 256 == 0", **base)
    if require_faster is None:
        require_faster = prepared[0][1].packed.is_cuda
    chosen, timings = {shape: (ps[0] if ps else None) for shape, ps in plans.items()}, ()
    if require_faster:
        try:
            times = time_per_token(prepared, plans)
        except Exception as exc:  # noqa: BLE001 - a graph that cannot be timed is a fallback
            return Nf4GemvStatus(False, f"NF4 GEMV could not be timed: {type(exc).__name__}", mma_reason=mma_reason,
                                 **base)
        chosen = {shape: min(row, key=lambda p, row=row: row[p]) for shape, row in times.items()}
        timings = tuple((n, kd, kernel_name(p) if p else BNB, us) for (n, kd), row in times.items()
                        for p, us in row.items())
        if not any(chosen.values()):
            ours = sum(min((us for p, us in row.items() if p), default=row[None]) for row in times.values())
            theirs = sum(row[None] for row in times.values())
            return Nf4GemvStatus(False, f"fused NF4 GEMV slower than bitsandbytes here ({ours / 1e3:.2f} vs "
                                        f"{theirs / 1e3:.2f} ms per token)", mma_reason=mma_reason or
                                 "slower than bitsandbytes on every shape", timings=timings, **base)
    kernels = tuple((n, kd, kernel_name(p) if p else BNB) for (n, kd), p in chosen.items())
    if not mma_reason:
        mma_reason = "; ".join(f"{n}x{kd}: {nf4_mma.shape_reason(n, kd) or name + ' is faster'}"
                               for n, kd, name in kernels if name != "CUDA mma")
    swapped = 0
    for layer, t in prepared:
        if chosen[(t.n, t.k)] is not None:
            _swap(layer, t, chosen[(t.n, t.k)], require_cuda)
            swapped += 1
    groups = ()
    if not nf4_mma.unavailable_reason(device) and "CUDA mma" not in out:
        groups = _install_groups(model, prepared, chosen, require_cuda, require_faster)
        groups += _install_gate_up(model, prepared, require_cuda, require_faster)
    return Nf4GemvStatus(True, "", swapped, kernels=kernels, mma_reason=mma_reason, timings=timings, groups=groups,
                         **base)


def _group_check(group: Nf4Group) -> float:
    """Largest relative L2 error of a group launch's rows, per layer, against fp32 W·x on that
    layer's dequantized weights (as `self_check`). NaN when not finite."""
    t0 = group.tensors[0]
    g = torch.Generator(device=t0.packed.device).manual_seed(sum(group.ns) * 31 + t0.k)
    x = torch.randn(1, t0.k, generator=g, device=t0.packed.device).to(torch.bfloat16)
    worst, start = 0.0, 0
    with torch.inference_mode():
        y = group.run(x)
        if not bool(torch.isfinite(y).all()):
            return float("nan")
        for layer, t in zip(group.layers, group.tensors, strict=True):
            ref = x.float() @ _dequantized(layer, t).float().reshape(t.n, t.k).T
            if layer.bias is not None:
                ref = ref + layer.bias.float()
            worst = max(worst, _rel(y[start:start + t.n], ref[0]))
            start += t.n
    return worst


def _install_groups(model, prepared, chosen, require_cuda: bool, require_faster: bool) -> tuple:
    """Swap one launch in for each group of sibling layers (q/k/v, gate/up) where it passes its check
    and (require_faster) is faster than their separate decode rows; returns Nf4GemvStatus.groups."""
    rows = []
    by_kind: dict[tuple[str, ...], list[Nf4Group]] = {}
    for group in sibling_groups(model, prepared):
        by_kind.setdefault(group.names, []).append(group)
    for names, groups in by_kind.items():
        label, t0 = "+".join(names), groups[0].tensors[0]
        n_total = sum(groups[0].ns)
        try:
            if not _group_check(groups[0]) <= REF_TOLERANCE:
                continue
            shape, ours, theirs = (0, 0), float("nan"), float("nan")
            if require_faster:
                sample, x = groups[:32], torch.randn(1, t0.k, device=t0.packed.device).to(torch.bfloat16)
                with torch.inference_mode():
                    theirs = len(groups) * _graph_us(lambda s=sample, x=x: [lay(x) for grp in s for lay in grp.layers],
                                                     len(sample))
                    timed = {launch: len(groups) * _graph_us(
                        lambda s=sample, x=x, w=launch[0], sk=launch[1]: [replace(grp, num_warps=w, split_k=sk).run(x)
                                                                         for grp in s], len(sample))
                        for launch in group_launches(n_total, t0.k)}
                shape = min(timed, key=timed.get)
                ours = timed[shape]
        except Exception:  # noqa: BLE001 - a group that cannot run stays separate launches
            continue
        use = not require_faster or ours < theirs
        rows.append((label, n_total, t0.k, ours, theirs, use))
        if use:
            for group in groups:
                _swap_group(replace(group, num_warps=shape[0], split_k=shape[1]), require_cuda)
    return tuple(rows)


def _mlp_check(pair: Nf4GateUp) -> float:
    """Relative L2 error of the MLP's output with silu(gate) * up as one launch against its own forward
    on the same decode row (which also shows that the forward is down(silu(gate(x)) * up(x))); NaN when
    not finite."""
    t0 = pair.tensors[0]
    g = torch.Generator(device=t0.packed.device).manual_seed(t0.n * 17 + t0.k)
    x = torch.randn(1, 1, t0.k, generator=g, device=t0.packed.device).to(torch.bfloat16)
    with torch.inference_mode():
        fused = pair.mlp.down_proj(pair.run(x).view(1, 1, -1))
        own = pair.mlp(x)
    if not bool(torch.isfinite(fused).all()):
        return float("nan")
    return _rel(fused, own)


def _install_gate_up(model, prepared, require_cuda: bool, require_faster: bool) -> tuple:
    """Swap silu(gate) * up as one launch into each MLP where that passes `_mlp_check` (one MLP of each
    class) and (require_faster) makes the MLP's decode row faster; returns Nf4GemvStatus.groups' row."""
    pairs = gate_up_pairs(model, prepared)
    if not pairs:
        return ()
    t0 = pairs[0].tensors[0]
    label = "silu(gate_proj)*up_proj"
    shape, ours, theirs = (0, 0), float("nan"), float("nan")
    try:
        error = max(_mlp_check(next(p for p in pairs if type(p.mlp) is kind)) for kind in {type(p.mlp) for p in pairs})
        if not error <= REF_TOLERANCE:
            log.info("%s: not one launch, its MLP output is %.2g off the MLP's own", label, error)
            return ((label, 2 * t0.n, t0.k, ours, theirs, False),)
        if require_faster:  # the whole MLP's decode row, as the launch shapes of a group of 2N rows
            sample, x = pairs[:32], torch.randn(1, 1, t0.k, device=t0.packed.device).to(torch.bfloat16)
            with torch.inference_mode():
                theirs = len(pairs) * _graph_us(lambda: [p.mlp(x) for p in sample], len(sample))
                timed = {launch: len(pairs) * _graph_us(
                    lambda w=launch[0], sk=launch[1]: [p.mlp.down_proj(replace(p, num_warps=w, split_k=sk).run(x)
                                                                       .view(1, 1, -1)) for p in sample], len(sample))
                    for launch in group_launches(2 * t0.n, t0.k)}
            shape = min(timed, key=timed.get)
            ours = timed[shape]
    except Exception as exc:  # noqa: BLE001 - MLPs that cannot run it keep their own forward
        log.info("%s: not one launch (%s)", label, exc)
        return ((label, 2 * t0.n, t0.k, ours, theirs, False),)
    use = not require_faster or ours < theirs
    if use:
        for pair in pairs:
            _swap_mlp(replace(pair, num_warps=shape[0], split_k=shape[1]), require_cuda)
    return ((label, 2 * t0.n, t0.k, ours, theirs, use),)


def _swap_mlp(pair: Nf4GateUp, require_cuda: bool) -> None:
    """The MLP's decode rows: down(silu(gate) * up) with the first two as one launch; other calls run its
    own forward."""
    mlp, own = pair.mlp, type(pair.mlp).forward

    def forward(x: torch.Tensor) -> torch.Tensor:
        if _decode_row(x, require_cuda):
            return mlp.down_proj(pair.run(x, norm_fold.input_for(x)).view(*x.shape[:-1], pair.tensors[0].n))
        return own(mlp, x)

    mlp.forward = forward
    mlp._headroom_nf4_gate_up = True


def _decode_row(x: torch.Tensor, require_cuda: bool) -> bool:
    """x is one bf16 row (a decode step, batch 1) on a device the fused kernels serve."""
    return (x.is_cuda or not require_cuda) and x.dtype == torch.bfloat16 and x.numel() == x.shape[-1]


def _swap_group(group: Nf4Group, require_cuda: bool) -> None:
    """The first layer of ``group`` computes the rows of all of them for a decode row and leaves them
    in _PENDING; the others take their rows from there when called with the same input (any other
    call runs their own forward)."""
    starts = [0]
    for n in group.ns:
        starts.append(starts[-1] + n)
    lead, own_lead = group.layers[0], group.layers[0].forward

    def lead_forward(x: torch.Tensor) -> torch.Tensor:
        if _decode_row(x, require_cuda):
            y = group.run(x, norm_fold.input_for(x))
            _PENDING["x"], _PENDING["y"] = x, y
            return y[:starts[1]].view(*x.shape[:-1], starts[1])
        return own_lead(x)

    lead.forward = lead_forward
    count = len(group.layers)
    for i, layer in enumerate(group.layers[1:], start=1):
        def forward(x: torch.Tensor, own=layer.forward, a=starts[i], b=starts[i + 1],
                    last=i == count - 1) -> torch.Tensor:
            if _PENDING.get("x") is x:
                y = _PENDING["y"][a:b]
                if last:
                    _PENDING.clear()
                return y.view(*x.shape[:-1], b - a)
            return own(x)

        layer.forward = forward
    for layer in group.layers:
        layer._headroom_nf4_group = group.names


def _swap(layer, t: Nf4Tensors, plan: Plan, require_cuda: bool) -> None:
    original = type(layer).forward.__get__(layer)

    def forward(x: torch.Tensor) -> torch.Tensor:
        if _decode_row(x, require_cuda):
            request = norm_fold.output_request(layer) if norm_fold.FOLD and plan.kernel == MMA_KERNEL else None
            if request is not None:  # the folded step's o_proj or down: h out, g and ssq left for the next
                h, g, ssq = run_fold_out(x, t, plan, layer.bias, *request)
                norm_fold.deliver(g, ssq)
                return h.view(*x.shape[:-1], t.n)
            return run(x, t, plan, layer.bias)
        return original(x)

    layer.forward = forward
    layer._headroom_nf4_gemv = plan


def fold_reason(layers) -> str:
    """"" when every decoder layer of ``layers`` can carry its norms folded into its NF4 launches
    (norm_fold): q/k/v one group launch, silu(gate) * up one paired launch, o_proj and down_proj on the
    CUDA mma kernel; else why not (one line). Attributes only: what install swapped. (A group takes only a
    hidden size that is a multiple of 256, so the readers can stage its 16-row tiles' sums 16 bytes at a
    time.)"""
    for layer in layers:
        attention, mlp = getattr(layer, "self_attn", None), getattr(layer, "mlp", None)
        q_proj = getattr(attention, "q_proj", None)
        if getattr(q_proj, "_headroom_nf4_group", None) != GROUPS[0]:
            return "q, k and v are not one NF4 launch"
        if not getattr(mlp, "_headroom_nf4_gate_up", False):
            return "gate and up are not one paired NF4 launch"
        for writer in (getattr(attention, "o_proj", None), getattr(mlp, "down_proj", None)):
            plan = getattr(writer, "_headroom_nf4_gemv", None)
            if plan is None or plan.kernel != MMA_KERNEL:
                return "o_proj or down_proj is not on the CUDA mma kernel"
    return ""


def uninstall(model) -> int:
    """Give every swapped layer bitsandbytes' forward back; returns how many were swapped."""
    count = 0
    for layer in nf4_layers(model):
        if "forward" in layer.__dict__:
            del layer.forward
            count += 1
        for name in ("_headroom_nf4_gemv", "_headroom_nf4_group"):
            layer.__dict__.pop(name, None)
    for mlp in model.modules():
        if mlp.__dict__.pop("_headroom_nf4_gate_up", None):
            del mlp.forward
    _PENDING.clear()
    return count
