"""NF4 prefill in row slices (issue 16): a 4-bit linear's prefill chunk without its whole bf16 weight.

bitsandbytes computes a `Linear4bit` on more than one row as ``F.linear(x, dequantize_4bit(W))``:
the whole (N, K) weight in bf16 lives for the call, 117 MB for Llama-3-8B's 14336 × 4096
gate/up. Here the output columns are computed in slices of rows of W instead:
``out[..., n0:n1] = x @ W[n0:n1]^T (+ bias[n0:n1])``, each slice dequantized into one
tensor of at most `prefill_spike.PREFILL_DEQUANT_SLICE_BYTES`, so the transient is one slice
plus the weight's fp32 block scales (absmax, double quantization undone once per call).

Storage (bitsandbytes, see nf4_gemv): W is flattened row-major, quantized in blocks of
`blocksize` consecutive elements, two 4-bit codes per byte. With K a multiple of the blocksize,
rows [n0, n1) are exactly the packed bytes [n0·K/2, n1·K/2) and the absmax blocks
[n0·K/bs, n1·K/bs), so a slice is a plain (non-nested) 4-bit tensor of shape (n1 − n0, K).

`install(model)` wraps the forward of every 4-bit layer whose weight needs more than one slice;
a single row (M == 1: a decode step) goes to whatever forward the layer had (bitsandbytes'
GEMV, or the fused NF4 GEMV of nf4_hook when that was installed first), and so does everything
while torch.compile traces (the compiled decode step never sees the prefill branch).
`uninstall(model)` puts the previous forward back. `set_sliced(model, False)` lets the wrapped
layers run bitsandbytes' whole-weight prefill (fewer launches and no Python per slice) for a turn
whose projection was admitted with the whole weight's transient (app.engine.local.turn_planner:
slices only when memory demands them, as prefill chunks).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from app.engine.memory.prefill_spike import PREFILL_DEQUANT_SLICE_BYTES

# (packed bytes of rows [n0, n1), their fp32 absmax, rows) → (rows, K) weights in the compute dtype
Dequantize = Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor]


def slice_rows(n: int, k: int, element_bytes: int, budget: int = PREFILL_DEQUANT_SLICE_BYTES) -> int:
    """Rows per slice of a (n, k) weight dequantized to ``element_bytes`` per element: the fewest
    slices whose rows fit ``budget`` bytes, made equal (the last may be shorter). n when the
    whole weight fits; at least 1."""
    row_bytes = k * element_bytes
    slices = -(-n * row_bytes // max(budget, 1))
    return max(1, -(-n // max(slices, 1)))


def row_ranges(n: int, rows: int) -> list[tuple[int, int]]:
    """[(n0, n1), ...] covering 0..n in steps of ``rows``."""
    return [(n0, min(n0 + rows, n)) for n0 in range(0, n, rows)]


def packed_range(n0: int, n1: int, k: int) -> tuple[int, int]:
    """Byte range of rows [n0, n1) in the packed weight: two codes per byte."""
    return n0 * k // 2, n1 * k // 2


def absmax_range(n0: int, n1: int, k: int, blocksize: int) -> tuple[int, int]:
    """Absmax range of rows [n0, n1): one scale per ``blocksize`` elements (k % blocksize == 0)."""
    return n0 * k // blocksize, n1 * k // blocksize


def sliced_linear(x: torch.Tensor, packed: torch.Tensor, absmax: torch.Tensor, n: int, k: int,
                  blocksize: int, rows: int, dequantize: Dequantize,
                  bias: torch.Tensor | None = None) -> torch.Tensor:
    """out (..., n) = x (..., k) @ W^T (+ bias), W dequantized ``rows`` rows at a time.

    packed: (n·k/2,) uint8 (any shape with that many bytes); absmax: (n·k/blocksize,) fp32;
    dequantize: see `Dequantize`. Output dtype is x's. Each slice's product is written straight
    into its columns of the output (a strided view: cuBLAS writes it in place). Inference only:
    no autograd through out= products."""
    x2 = x.reshape(-1, k)
    flat = packed.reshape(-1)
    out = x2.new_empty((x2.shape[0], n))
    bias = None if bias is None else bias.detach()
    for n0, n1 in row_ranges(n, rows):
        b0, b1 = packed_range(n0, n1, k)
        a0, a1 = absmax_range(n0, n1, k, blocksize)
        w = dequantize(flat[b0:b1], absmax[a0:a1], n1 - n0)
        if bias is None:
            torch.mm(x2, w.t(), out=out[:, n0:n1])
        else:
            torch.addmm(bias[n0:n1], x2, w.t(), out=out[:, n0:n1])
        del w
    return out.view(*x.shape[:-1], n)


def bnb_absmax(quant_state) -> torch.Tensor:
    """The weight's fp32 absmax: double quantization undone (bitsandbytes' own arithmetic)."""
    if not quant_state.nested:
        return quant_state.absmax.float()
    import bitsandbytes.functional as F

    absmax = F.dequantize_blockwise(quant_state.absmax, quant_state.state2)
    absmax += quant_state.offset
    return absmax.float()


def bnb_dequantizer(quant_state, k: int) -> Dequantize:
    """Dequantize slices with bitsandbytes' `dequantize_4bit`, one non-nested QuantState per
    slice (a fresh tensor each: its CPU backend has no out= variant; CUDA's caching allocator
    hands the freed slice back to the next one)."""
    import bitsandbytes.functional as F

    def dequantize(packed: torch.Tensor, absmax: torch.Tensor, rows: int) -> torch.Tensor:
        state = F.QuantState(absmax=absmax, shape=torch.Size((rows, k)), code=quant_state.code,
                             blocksize=quant_state.blocksize, quant_type=quant_state.quant_type,
                             dtype=quant_state.dtype)
        return F.dequantize_4bit(packed.reshape(-1, 1), state)

    return dequantize


def reference_dequantizer(code: torch.Tensor, k: int) -> Dequantize:
    """Dequantize slices with nf4_gemv's pure-torch mirror of bitsandbytes (NF4 codebook
    ``code``): for quant states that are not bitsandbytes' own (tests, no bitsandbytes)."""
    from app.engine.local import nf4_gemv

    zero, lut = torch.zeros(1, device=code.device), nf4_gemv.pair_table(code.float())

    def dequantize(packed: torch.Tensor, absmax: torch.Tensor, rows: int) -> torch.Tensor:
        return nf4_gemv.reference_dequantize(nf4_gemv.Nf4Tensors(
            packed, absmax, zero, zero, zero, code.float(), lut, zero, rows, k, False))

    return dequantize


def _is_bnb(quant_state) -> bool:
    try:
        import bitsandbytes.functional as F
    except ImportError:
        return False
    return isinstance(quant_state, F.QuantState)


def why_not_sliced(layer, budget: int = PREFILL_DEQUANT_SLICE_BYTES) -> str:
    """"" when ``layer`` (a bitsandbytes Linear4bit) can be sliced, else why not (one line)."""
    qs = getattr(getattr(layer, "weight", None), "quant_state", None)
    if qs is None:
        return "no quant_state"
    if qs.quant_type not in ("nf4", "fp4"):
        return f"quant type {qs.quant_type}"
    if len(qs.shape) != 2:
        return f"weight shape {tuple(qs.shape)}"
    n, k = (int(s) for s in qs.shape)
    if k % qs.blocksize or k % 2:
        return f"in_features {k} not a multiple of the blocksize {qs.blocksize}"
    if layer.weight.data.numel() != n * k // 2 or layer.weight.data.dtype != torch.uint8:
        return "packed weight is not n·k/2 bytes (a repacked CPU layout?)"
    if getattr(qs, "packing_format_for_cpu", False):
        return "bitsandbytes' CPU packing"
    if n * k * qs.dtype.itemsize <= budget:
        return "fits one slice"
    return ""


def _swap(layer, require_cuda: bool, budget: int) -> None:
    previous = layer.forward  # bitsandbytes', or nf4_hook's decode-row wrapper around it
    qs = layer.weight.quant_state
    n, k = (int(s) for s in qs.shape)
    rows = slice_rows(n, k, qs.dtype.itemsize, budget)
    bnb = _is_bnb(qs)

    def forward(x: torch.Tensor) -> torch.Tensor:
        if (torch.compiler.is_compiling() or x.numel() == x.shape[-1] or (require_cuda and not x.is_cuda)
                or getattr(qs, "packing_format_for_cpu", False) or not layer._headroom_nf4_sliced):
            return previous(x)
        if bnb:
            absmax, dequantize = bnb_absmax(qs), bnb_dequantizer(qs, k)
        else:  # a test's stand-in
            from app.engine.local import nf4_gemv

            absmax = nf4_gemv.reference_absmax(nf4_gemv.tensors_of(layer))
            dequantize = reference_dequantizer(qs.code, k)
        bias = None if layer.bias is None else layer.bias.to(qs.dtype)
        out = sliced_linear(x.to(qs.dtype), layer.weight.data, absmax, n, k, qs.blocksize, rows, dequantize, bias)
        return out.to(x.dtype)

    layer._headroom_nf4_prefill = (previous, rows)
    layer._headroom_nf4_sliced = True
    layer.forward = forward


@dataclass(frozen=True)
class Nf4PrefillStatus:
    """layers: 4-bit layers whose prefill is sliced; rows: rows per slice by (N, K)."""

    layers: int
    rows: tuple[tuple[int, int, int], ...] = ()

    @property
    def active(self) -> bool:
        return self.layers > 0

    def label(self) -> str:
        return (f"NF4 prefill in slices of <= {PREFILL_DEQUANT_SLICE_BYTES >> 20} MiB on {self.layers} layers"
                if self.active else "NF4 prefill: whole weights (bitsandbytes)")


_WRAPPED = "_headroom_nf4_wrapped_layers"  # model attribute: the layers install() wrapped, found once


def _wrapped_layers(model) -> list:
    """The layers of ``model`` whose prefill install() wrapped, found once and kept on the model
    until the next install or uninstall: `set_sliced` runs before every NF4 turn's prefill, and
    walking the 8B's modules for them cost ~0.7 ms of host time (the CPU box, 225 linears)."""
    layers = model.__dict__.get(_WRAPPED)
    if layers is None:
        from app.engine.local.nf4_hook import nf4_layers

        layers = [layer for layer in nf4_layers(model) if "_headroom_nf4_prefill" in layer.__dict__]
        model.__dict__[_WRAPPED] = layers  # a plain list: not registered as submodules
    return layers


def install(model, require_cuda: bool = True, budget: int = PREFILL_DEQUANT_SLICE_BYTES) -> Nf4PrefillStatus:
    """Slice the prefill of every 4-bit layer of ``model`` whose weight exceeds ``budget``
    (install after nf4_hook.install: its wrapper becomes the M == 1 path). require_cuda: layers
    on the CPU keep bitsandbytes' forward (its CPU backend may repack the weight)."""
    from app.engine.local.nf4_hook import nf4_layers

    model.__dict__.pop(_WRAPPED, None)
    shapes: dict[tuple[int, int], int] = {}
    count = 0
    for layer in nf4_layers(model):
        if hasattr(layer, "_headroom_nf4_prefill") or why_not_sliced(layer, budget):
            continue
        if require_cuda and layer.weight.device.type != "cuda":
            continue
        _swap(layer, require_cuda, budget)
        qs = layer.weight.quant_state
        shapes[(int(qs.shape[0]), int(qs.shape[1]))] = layer._headroom_nf4_prefill[1]
        count += 1
    return Nf4PrefillStatus(count, tuple((n, k, r) for (n, k), r in sorted(shapes.items())))


def set_sliced(model, sliced: bool) -> int:
    """Slice the prefill of ``model``'s wrapped 4-bit layers (True, as installed) or let them
    dequantize whole weights (False, bitsandbytes' own path); returns how many layers. Runs
    before every NF4 turn's prefill, so it touches the wrapped layers only, through their
    ``__dict__`` (a plain flag: Module.__setattr__ would only add its checks, ~2 µs a layer)."""
    layers = _wrapped_layers(model)
    for layer in layers:
        layer.__dict__["_headroom_nf4_sliced"] = bool(sliced)
    return len(layers)


def uninstall(model) -> int:
    """Give every sliced layer its previous forward back; returns how many."""
    from app.engine.local.nf4_hook import nf4_layers

    model.__dict__.pop(_WRAPPED, None)
    count = 0
    for layer in nf4_layers(model):
        state = layer.__dict__.pop("_headroom_nf4_prefill", None)
        layer.__dict__.pop("_headroom_nf4_sliced", None)
        if state is not None:
            layer.forward = state[0]
            if getattr(layer.forward, "__func__", None) is type(layer).forward:
                del layer.forward  # it was the class's own: no instance attribute left behind
            count += 1
    return count
