"""Swap the fused NF4 GEMV in for decode rows of every bitsandbytes 4-bit linear (issue 15).

`install(model)` finds every `Linear4bit` (any `nn.Linear` whose weight carries a
`quant_state`), checks the kernel against bitsandbytes on one layer of each distinct shape, and
replaces each layer's forward with one that sends a single row (M == 1: a decode step, batch 1)
to the custom op ``headroom::nf4_gemv`` and everything else (prefill chunks) to bitsandbytes'
own forward, unchanged. The op is opaque to torch.compile and captured inside the
CUDA graph compiled_decode captures. When Triton or CUDA is missing, a layer is
not NF4/bf16, or the self-check disagrees, nothing is swapped and `Nf4GemvStatus.reason` says
why (the loader puts it in LoadReport.fallbacks). `uninstall(model)` restores bitsandbytes.
"""

from dataclasses import dataclass

import torch

from app.engine.local import nf4_gemv as k
from app.engine.local.nf4_gemv import Nf4Tensors, Plan, Unsupported

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


@torch.library.custom_op("headroom::nf4_gemv", mutates_args=())
def nf4_gemv(x: torch.Tensor, packed: torch.Tensor, absmax: torch.Tensor, absmax2: torch.Tensor,
             code2: torch.Tensor, offset: torch.Tensor, code: torch.Tensor, pair_lut: torch.Tensor,
             counters: torch.Tensor, bias: torch.Tensor | None, n: int, kk: int, nested: bool,
             block_n: int, block_k: int, split_k: int, num_warps: int, lookup: int, kernel: int,
             bits: bool, stages: int, row_tiles: int) -> torch.Tensor:
    """(N,) bf16 = W x for x (K,) bf16: the Triton kernel on CUDA, the pure-torch mirror elsewhere."""
    t = Nf4Tensors(packed, absmax, absmax2, code2, offset, code, pair_lut, counters, n, kk, nested)
    x = x.contiguous()
    if x.is_cuda and k.triton is not None:
        return k.launch(x, t, Plan(block_n, block_k, split_k, num_warps, lookup, kernel, bits, stages, row_tiles),
                        bias)
    return k.reference_gemv(x, t, bias)


@nf4_gemv.register_fake
def _(x, packed, absmax, absmax2, code2, offset, code, pair_lut, counters, bias, n, kk, nested,
      block_n, block_k, split_k, num_warps, lookup, kernel, bits, stages, row_tiles):
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


def run(x: torch.Tensor, t: Nf4Tensors, plan: Plan, bias: torch.Tensor | None = None) -> torch.Tensor:
    """The op on one row: x (..., K) with one row → (..., N) bf16."""
    y = torch.ops.headroom.nf4_gemv(x.reshape(-1), t.packed, t.absmax, t.absmax2, t.code2, t.offset, t.code,
                                    t.pair_lut, t.counters, bias, t.n, t.k, t.nested, plan.block_n,
                                    plan.block_k, plan.split_k, plan.num_warps, plan.lookup, plan.kernel,
                                    plan.bits, plan.stages, plan.row_tiles)
    return y.view(*x.shape[:-1], t.n)


@dataclass(frozen=True)
class Nf4GemvStatus:
    """active: decode rows use the kernel. reason: why not (one line), "" when active.
    layers: layers swapped. checks: (N, K, rel. error vs dequantized fp32, vs bitsandbytes GEMV)."""

    active: bool
    reason: str = ""
    layers: int = 0
    checks: tuple[tuple[int, int, float, float], ...] = ()

    def label(self) -> str:
        return (f"fused NF4 GEMV (Triton) on {self.layers} layers" if self.active
                else f"bitsandbytes GEMV ({self.reason})")


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


def time_per_token(prepared) -> tuple[float, float]:
    """(kernel, bitsandbytes) µs for one decode row through every layer in ``prepared``
    [(layer, Nf4Tensors)]: per shape, a CUDA graph over up to 32 distinct layers (weights read
    from HBM, not L2), scaled by that shape's layer count."""
    by_shape: dict[tuple[int, int], list] = {}
    for layer, t in prepared:
        by_shape.setdefault((t.n, t.k), []).append((layer, t))
    ours = theirs = 0.0
    with torch.inference_mode():
        for (n, kdim), group in by_shape.items():
            sample = group[:32]
            x = torch.randn(1, kdim, device=sample[0][1].packed.device).to(torch.bfloat16)
            plan = choose_plan(n, kdim)
            ours += len(group) * _graph_us(
                lambda s=sample, p=plan, x=x: [run(x, t, p, lay.bias) for lay, t in s], len(sample))
            theirs += len(group) * _graph_us(lambda s=sample, x=x: [lay.forward(x) for lay, _ in s], len(sample))
    return ours, theirs


def install(model, require_cuda: bool = True, check: bool = True,
            require_faster: bool | None = None) -> Nf4GemvStatus:
    """Swap the kernel in for decode rows of every NF4 layer of ``model``; never raises for an
    unsupported model (returns an inactive status with the reason). require_cuda=False also
    swaps on the CPU (the op then runs the pure-torch mirror: tests only). require_faster
    (default: on CUDA) times both on the model's own layers and keeps bitsandbytes unless the
    kernel is faster per token: on the H200 by 5 % (3.78 vs 3.99 ms, results/nf4_gemv_h200.json)."""
    layers = nf4_layers(model)
    if not layers:
        return Nf4GemvStatus(False, "no 4-bit layers")
    reason = unavailable_reason(layers[0].weight.device, require_cuda)
    if reason:
        return Nf4GemvStatus(False, reason)
    try:
        prepared = [(layer, k.tensors_of(layer)) for layer in layers]
    except Unsupported as exc:
        return Nf4GemvStatus(False, str(exc))
    checks, seen = [], set()
    for layer, t in prepared if check else ():
        if (t.n, t.k) in seen:
            continue
        seen.add((t.n, t.k))
        try:
            e_ref, e_bnb = self_check(layer, t, choose_plan(t.n, t.k))
        except Exception as exc:  # noqa: BLE001 - a kernel that cannot run is a fallback, not a crash
            return Nf4GemvStatus(False, f"NF4 GEMV failed on {t.n}x{t.k}: {type(exc).__name__}: "
                                        f"{str(exc).strip().splitlines()[0][:160] if str(exc).strip() else ''}")
        checks.append((t.n, t.k, e_ref, e_bnb))
        if not (e_ref <= REF_TOLERANCE and e_bnb <= BNB_TOLERANCE):
            return Nf4GemvStatus(False, f"NF4 GEMV disagrees with bitsandbytes on {t.n}x{t.k} (rel. error "
                                        f"{e_ref:.1e} vs dequantized weights, {e_bnb:.1e} vs its GEMV)",
                                 checks=tuple(checks))
    if require_faster is None:
        require_faster = prepared[0][1].packed.is_cuda
    if require_faster:
        try:
            ours, theirs = time_per_token(prepared)
        except Exception as exc:  # noqa: BLE001 - a graph that cannot be timed is a fallback
            return Nf4GemvStatus(False, f"NF4 GEMV could not be timed: {type(exc).__name__}", checks=tuple(checks))
        if not ours < theirs:
            return Nf4GemvStatus(False, f"fused NF4 GEMV slower than bitsandbytes here ({ours / 1e3:.2f} vs "
                                        f"{theirs / 1e3:.2f} ms per token)", checks=tuple(checks))
    for layer, t in prepared:
        _swap(layer, t, require_cuda)
    return Nf4GemvStatus(True, "", len(prepared), tuple(checks))


def _swap(layer, t: Nf4Tensors, require_cuda: bool) -> None:
    original = type(layer).forward.__get__(layer)
    plan = choose_plan(t.n, t.k)

    def forward(x: torch.Tensor) -> torch.Tensor:
        if (x.is_cuda or not require_cuda) and x.dtype == torch.bfloat16 and x.numel() == x.shape[-1]:
            return run(x, t, plan, layer.bias)
        return original(x)

    layer.forward = forward
    layer._headroom_nf4_gemv = plan


def uninstall(model) -> int:
    """Give every swapped layer bitsandbytes' forward back; returns how many were swapped."""
    count = 0
    for layer in nf4_layers(model):
        if "forward" in layer.__dict__:
            del layer.forward
            del layer._headroom_nf4_gemv
            count += 1
    return count
