"""A fused NF4 GEMV for decode (issue 15): one Triton launch per bitsandbytes 4-bit linear.

bitsandbytes stores an NF4 `Linear4bit` weight of shape (N out, K in) as N·K/2 bytes, two 4-bit
codes per byte, the first element of each pair in the high nibble (row-major over (N, K));
one absmax per 64-element block; with double quantization ("nested") that absmax is itself a
uint8 code into `state2.code` (256 fp32 values), scaled by `state2.absmax` (one fp32 per 256
absmax) and shifted by `offset`: ``absmax = code2[q] * absmax2[i // 256] + offset`` (fp32,
multiply then add, as bitsandbytes' `dequantize_blockwise` followed by `absmax += offset`).
A weight is ``bf16(code[nibble] * absmax)``, the fp32 product rounded once to bf16
(bitsandbytes `dequantize_4bit`, CPU backend and CUDA kernel alike).

The kernel reads those bytes as stored (no repacking, no extra copy), dequantizes in
registers with the same fp32 operations (the absmax multiply is an explicit `mul.rn`, never
contracted into an FMA with the offset add, so the rounding is the same),
multiplies by the bf16 activation in fp32 (a bf16·bf16 product is exact in fp32) and
accumulates in fp32. Split-K spreads one token over all SMs; the last program of each row tile
(an atomic counter) adds the partial sums in a fixed order, so one launch, deterministic.

`nf4_gemv(x, layer_tensors...)` is the torch custom op ``headroom::nf4_gemv`` (opaque to
torch.compile, captured inside its CUDA graphs); on the CPU, or without Triton, it runs
`reference_gemv`, the pure-torch mirror of the kernel. `install(model)` (nf4_hook.py) swaps it
in for decode rows only, and only where it is faster than bitsandbytes (on the H200 the
register-lookup kernels 2 and 6 are 5 % faster, 3.78 vs 3.99 ms of GEMV per token, bound by the
integer pipe). Figures: tests/benchmarks/results/nf4_gemv_h200*.json; the analysis in
tests/benchmarks/nf4_gemv.py. nf4_mma.py is the same product in CUDA C with the lookups fed
straight into the tensor cores (Plan.kernel 7 in nf4_hook).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

try:  # Triton ships with torch on CUDA; absent on CPU-only installs (CI)
    import triton
    import triton.language as tl
except Exception:  # noqa: BLE001 - any import failure means "no Triton"
    triton = tl = None

BLOCKSIZE = 64  # NF4 elements per absmax (bitsandbytes' default blocksize, `bnb_4bit_blocksize`)
ABSMAX_BLOCKSIZE = 256  # absmax per second-level scale (bitsandbytes nests with blocksize 256)
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"  # CPU interpreter: round to bf16 by integer ops
MIN_BLOCK_N = 4  # smallest row tile a Plan may use (sizes the per-layer counters)


@dataclass(frozen=True)
class Plan:
    """Launch shape: BLOCK_N rows × BLOCK_K inputs per tile, SPLIT_K programs per row tile,
    LOOKUP 0 = byte → (hi, lo) fp32 pair table (256 × 8 B, L1-resident), 1 = nibble table
    (16 × 4 B), 2 = select tree over 16 values held in registers (kernel 0 only). kernel 0 reads
    bytes as (rows, 64-blocks, 32) tiles, 1 reads int32 words (8 codes) as (rows, words) tiles,
    2 reads words as (rows, 64-blocks, 8) tiles and looks up per-block bf16 tables with `prmt`
    (no gather; `lookup` is ignored); 3 is kernel 2 with x converted once per program, which
    walks `row_tiles` row tiles of one BLOCK_K slice (split_k is then K / block_k, whatever given);
    4 is kernel 2 with the next tile's loads issued before this tile's arithmetic; 5 is kernel 2's
    lookup with the products on the tensor cores (block_n >= 16); 6 is kernel 2 with each thread
    on two rows of the same words (x converted once for both).
    bits: round to bf16 by integer ops instead of the conversion instruction. stages: Triton's
    software pipelining of the K loop (cp.async into shared memory; 1 = none, the measured default)."""

    block_n: int = 16
    block_k: int = 256
    split_k: int = 1
    num_warps: int = 4
    lookup: int = 0
    kernel: int = 0
    bits: bool = False
    stages: int = 1
    row_tiles: int = 1


@dataclass(frozen=True)
class Nf4Tensors:
    """One layer's NF4 state, exactly as bitsandbytes stores it (views, no copies).

    packed (N*K/2,) uint8; absmax (N*K/64,) uint8 codes when nested else fp32;
    absmax2 (ceil(N*K/64/256),) fp32, code2 (256,) fp32, offset (1,) fp32 (dummies when not
    nested); code (16,) fp32 the NF4 codebook; pair_lut (256,) int64: byte b → code[b >> 4]
    in the low 32 bits, code[b & 15] in the high 32 bits; counters (row tiles,) int32 zeros.
    """

    packed: torch.Tensor
    absmax: torch.Tensor
    absmax2: torch.Tensor
    code2: torch.Tensor
    offset: torch.Tensor
    code: torch.Tensor
    pair_lut: torch.Tensor
    counters: torch.Tensor
    n: int
    k: int
    nested: bool


class Unsupported(ValueError):
    """A layer this kernel does not handle; str(exc) says why (one line)."""


def pair_table(code: torch.Tensor) -> torch.Tensor:
    """(256,) int64: for byte b the fp32 bits of code[b >> 4] (low word), code[b & 15] (high)."""
    b = torch.arange(256, device=code.device)
    pairs = torch.stack([code[b >> 4], code[b & 15]], dim=1).float().contiguous()
    return pairs.view(torch.int64).reshape(256)


def tensors_of(layer) -> Nf4Tensors:
    """The NF4 state of a bitsandbytes `Linear4bit` (duck-typed: `.weight.quant_state`).
    Raises Unsupported for FP4, other blocksizes, compute dtypes other than bf16, or K not a
    multiple of 64 (a block would straddle two rows)."""
    qs = getattr(layer.weight, "quant_state", None)
    if qs is None:
        raise Unsupported("no quant_state on the weight")
    if qs.quant_type != "nf4" or qs.blocksize != BLOCKSIZE:
        raise Unsupported(f"{qs.quant_type} blocksize {qs.blocksize}, kernel needs nf4 blocksize 64")
    if qs.dtype != torch.bfloat16:
        raise Unsupported(f"compute dtype {qs.dtype}, kernel needs bfloat16")
    n, k = (int(s) for s in qs.shape)
    if k % BLOCKSIZE:
        raise Unsupported(f"in_features {k} is not a multiple of {BLOCKSIZE}")
    packed = layer.weight.data.reshape(-1)
    if packed.dtype != torch.uint8 or packed.numel() != n * k // 2:
        raise Unsupported(f"packed weight {packed.dtype} x {packed.numel()}, expected uint8 x {n * k // 2}")
    dev = packed.device
    nested = bool(qs.nested)
    if nested:
        if qs.state2.blocksize != ABSMAX_BLOCKSIZE:
            raise Unsupported(f"nested absmax blocksize {qs.state2.blocksize}, kernel needs 256")
        absmax2, code2 = qs.state2.absmax.float(), qs.state2.code.float()
        offset = torch.as_tensor(qs.offset, dtype=torch.float32, device=dev).reshape(1)
    else:
        absmax2 = code2 = offset = torch.zeros(1, dtype=torch.float32, device=dev)
    return Nf4Tensors(packed, qs.absmax.reshape(-1), absmax2.reshape(-1), code2.reshape(-1), offset,
                      qs.code.float().reshape(16), pair_table(qs.code.float()),
                      torch.zeros(-(-n // MIN_BLOCK_N), dtype=torch.int32, device=dev), n, k, nested)


# ----------------------------------------------------------------------------- reference (CPU, CI)
def reference_absmax(t: Nf4Tensors) -> torch.Tensor:
    """(N*K/64,) fp32 block scales, as the kernel computes them."""
    if not t.nested:
        return t.absmax.float()
    idx = torch.arange(t.absmax.numel(), device=t.absmax.device)
    scaled = t.code2[t.absmax.long()] * t.absmax2[idx // ABSMAX_BLOCKSIZE]  # fp32 multiply ...
    return scaled + t.offset  # ... then add: two roundings, as bitsandbytes (no FMA)


def reference_dequantize(t: Nf4Tensors) -> torch.Tensor:
    """(N, K) bf16 weights from the stored bytes via the same pair table the kernel reads:
    bit-identical to bitsandbytes' `dequantize_4bit` (tests/engine/test_nf4_gemv.py)."""
    pairs = t.pair_lut[t.packed.long()].view(torch.float32).reshape(-1, 2)  # (N*K/2, 2): hi, lo
    blocks = pairs.reshape(-1, BLOCKSIZE)  # (N*K/64, 64) in element order
    return (blocks * reference_absmax(t)[:, None]).to(torch.bfloat16).reshape(t.n, t.k)


def reference_gemv(x: torch.Tensor, t: Nf4Tensors, bias: torch.Tensor | None = None) -> torch.Tensor:
    """(N,) bf16 = bf16(W @ x + bias) with fp32 products and sums; x (K,) bf16."""
    y = reference_dequantize(t).float() @ x.float()
    if bias is not None:
        y = y + bias.float()
    return y.to(torch.bfloat16)


# ----------------------------------------------------------------------------- Triton kernel
if triton is not None:

    @triton.jit
    def _bf16_round(v, BITS: tl.constexpr):
        """fp32 → nearest bf16 (ties to even), returned as fp32. BITS: by integer ops (Triton's
        CPU interpreter truncates in its casts), else the hardware conversion."""
        if BITS:
            u = v.to(tl.int32, bitcast=True)
            u = (u + 0x7FFF + ((u >> 16) & 1)) & -65536
            return u.to(tl.float32, bitcast=True)
        else:
            return v.to(tl.bfloat16, fp_downcast_rounding="rtne").to(tl.float32)

    _INTERP = tl.constexpr(INTERPRETED)

    @triton.jit
    def _bf16_round2(a, b, BITS: tl.constexpr):
        """_bf16_round of two fp32 tensors with one packed conversion (`cvt.rn.bf16x2.f32`)."""
        if BITS:
            return _bf16_round(a, True), _bf16_round(b, True)
        else:
            r = tl.inline_asm_elementwise("cvt.rn.bf16x2.f32 $0, $1, $2;", "=r,r,r", [a, b], dtype=tl.int32,
                                          is_pure=True, pack=1)  # a → upper half, b → lower half
            return (r & -65536).to(tl.float32, bitcast=True), (r << 16).to(tl.float32, bitcast=True)

    @triton.jit
    def _mul_rn(a, b):
        """a * b in fp32 that the compiler may not contract into an FMA with a following add."""
        if _INTERP:
            return a * b
        else:
            return tl.inline_asm_elementwise("mul.rn.f32 $0, $1, $2;", "=r,r,r", [a, b], dtype=tl.float32,
                                             is_pure=True, pack=1)

    @triton.jit
    def _select16(c, t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12, t13, t14, t15):
        b0 = (c & 1) != 0
        a0, a1 = tl.where(b0, t1, t0), tl.where(b0, t3, t2)
        a2, a3 = tl.where(b0, t5, t4), tl.where(b0, t7, t6)
        a4, a5 = tl.where(b0, t9, t8), tl.where(b0, t11, t10)
        a6, a7 = tl.where(b0, t13, t12), tl.where(b0, t15, t14)
        b1 = (c & 2) != 0
        c0, c1 = tl.where(b1, a1, a0), tl.where(b1, a3, a2)
        c2, c3 = tl.where(b1, a5, a4), tl.where(b1, a7, a6)
        b2 = (c & 4) != 0
        d0, d1 = tl.where(b2, c1, c0), tl.where(b2, c3, c2)
        return tl.where((c & 8) != 0, d1, d0)

    @triton.jit
    def _nf4_gemv_kernel(x_ptr, w_ptr, am_ptr, am2_ptr, code2_ptr, off_ptr, code_ptr, lut_ptr,
                         bias_ptr, part_ptr, cnt_ptr, y_ptr, N, K, ITERS, HALF_K, WORDS, BLOCKS,
                         NESTED: tl.constexpr, HAS_BIAS: tl.constexpr, LOOKUP: tl.constexpr,
                         BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr,
                         BITS: tl.constexpr, STAGES: tl.constexpr):
        """y (N,) bf16 = W x. x_ptr: x as int32 pairs of bf16 (K/2,). Grid (N/BLOCK_N, SPLIT_K);
        ITERS = K / (BLOCK_K * SPLIT_K) tiles per program; HALF_K, WORDS, BLOCKS = K/2, K/8, K/64."""
        NB: tl.constexpr = BLOCK_K // 64
        pid_n = tl.program_id(0)
        pid_k = tl.program_id(1)
        rows = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        rmask = rows < N
        rows = tl.where(rmask, rows, 0).to(tl.int64)  # clamped: loads stay in bounds, unmasked
        kb = tl.arange(0, NB)
        j = tl.arange(0, 32)
        half_k = HALF_K  # bytes, words and 64-blocks per row as arguments: Triton then knows
        blocks_per_row = BLOCKS  # their divisibility by 16 and can issue 16-byte loads
        off = tl.load(off_ptr)
        if LOOKUP == 2:
            t0, t1, t2, t3 = tl.load(code_ptr), tl.load(code_ptr + 1), tl.load(code_ptr + 2), tl.load(code_ptr + 3)
            t4, t5, t6, t7 = tl.load(code_ptr + 4), tl.load(code_ptr + 5), tl.load(code_ptr + 6), tl.load(code_ptr + 7)
            t8, t9, t10, t11 = tl.load(code_ptr + 8), tl.load(code_ptr + 9), tl.load(code_ptr + 10), \
                tl.load(code_ptr + 11)
            t12, t13 = tl.load(code_ptr + 12), tl.load(code_ptr + 13)
            t14, t15 = tl.load(code_ptr + 14), tl.load(code_ptr + 15)
        acc = tl.zeros((BLOCK_N, NB, 32), dtype=tl.float32)
        for i in tl.range(0, ITERS, num_stages=STAGES):  # STAGES > 1: cp.async prefetch of later tiles
            k0 = (pid_k * ITERS + i) * BLOCK_K
            col = k0 // 2 + kb[:, None] * 32 + j[None, :]  # (NB, 32) byte / bf16-pair index
            xi = tl.load(x_ptr + col)
            x_hi = (xi << 16).to(tl.float32, bitcast=True)  # element 2c (low half of the word)
            x_lo = (xi & -65536).to(tl.float32, bitcast=True)  # element 2c + 1
            byte = tl.load(w_ptr + rows[:, None, None] * half_k + col[None, :, :])  # (BN, NB, 32)
            blk = rows[:, None] * blocks_per_row + k0 // 64 + kb[None, :]  # (BN, NB)
            if NESTED:
                q = tl.load(am_ptr + blk).to(tl.int32)
                scale = _mul_rn(tl.load(code2_ptr + q), tl.load(am2_ptr + blk // 256)) + off
            else:
                scale = tl.load(am_ptr + blk)
            scale = scale[:, :, None]
            if LOOKUP == 0:
                pair = tl.load(lut_ptr + byte.to(tl.int32))
                v_hi = pair.to(tl.int32).to(tl.float32, bitcast=True)
                v_lo = (pair >> 32).to(tl.int32).to(tl.float32, bitcast=True)
            elif LOOKUP == 1:
                v_hi = tl.load(code_ptr + (byte >> 4).to(tl.int32))
                v_lo = tl.load(code_ptr + (byte & 15).to(tl.int32))
            else:
                hi = (byte >> 4).to(tl.int32)
                lo = (byte & 15).to(tl.int32)
                v_hi = _select16(hi, t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12, t13, t14, t15)
                v_lo = _select16(lo, t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12, t13, t14, t15)
            w_hi, w_lo = _bf16_round2(v_hi * scale, v_lo * scale, BITS)
            acc += w_hi * x_hi[None, :, :]
            acc += w_lo * x_lo[None, :, :]
        _finish(tl.sum(tl.sum(acc, axis=2), axis=1), pid_n, pid_k, rmask, bias_ptr, part_ptr, cnt_ptr, y_ptr, N,
                HAS_BIAS, BLOCK_N, SPLIT_K, BITS)

    @triton.jit
    def _finish(part, pid_n, pid_k, rmask, bias_ptr, part_ptr, cnt_ptr, y_ptr, N, HAS_BIAS: tl.constexpr,
                BLOCK_N: tl.constexpr, SPLIT_K: tl.constexpr, BITS: tl.constexpr):
        """Store the row tile's sums (BN,) fp32; with split-K, the last program adds the partials."""
        out_rows = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        if SPLIT_K == 1:
            if HAS_BIAS:
                part += tl.load(bias_ptr + out_rows, mask=rmask, other=0.0).to(tl.float32)
            tl.store(y_ptr + out_rows, _bf16_round(part, BITS).to(tl.bfloat16), mask=rmask)
        else:
            tl.store(part_ptr + pid_k * N + out_rows, part, mask=rmask)
            tl.debug_barrier()  # every thread's partial is written before the release below
            done = tl.atomic_add(cnt_ptr + pid_n, 1, sem="acq_rel")
            if done == SPLIT_K - 1:  # the last program of this row tile adds the partials in order
                total = tl.zeros((BLOCK_N,), dtype=tl.float32)
                for s in range(SPLIT_K):
                    total += tl.load(part_ptr + s * N + out_rows, mask=rmask, other=0.0, cache_modifier=".cg")
                if HAS_BIAS:
                    total += tl.load(bias_ptr + out_rows, mask=rmask, other=0.0).to(tl.float32)
                tl.store(y_ptr + out_rows, _bf16_round(total, BITS).to(tl.bfloat16), mask=rmask)
                tl.atomic_xchg(cnt_ptr + pid_n, 0)  # ready for the next call (and graph replay)

    @triton.jit
    def _nf4_gemv_words_kernel(x_ptr, w_ptr, am_ptr, am2_ptr, code2_ptr, off_ptr, code_ptr, lut_ptr,
                               bias_ptr, part_ptr, cnt_ptr, y_ptr, N, K, ITERS, HALF_K, WORDS, BLOCKS,
                               NESTED: tl.constexpr, HAS_BIAS: tl.constexpr, LOOKUP: tl.constexpr,
                               BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr,
                               BITS: tl.constexpr, STAGES: tl.constexpr):
        """The same product over int32 words (8 codes each, 16-byte loads): w_ptr is the packed
        weight viewed as int32 (N*K/8,), x_ptr x as int32 pairs. Byte b of a word (little-endian)
        holds elements 2b (high nibble) and 2b+1. One scale per word, from its 64-block."""
        BW: tl.constexpr = BLOCK_K // 8
        pid_n = tl.program_id(0)
        pid_k = tl.program_id(1)
        rows = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        rmask = rows < N
        rows = tl.where(rmask, rows, 0).to(tl.int64)
        c = tl.arange(0, BW)
        words_per_row = WORDS
        blocks_per_row = BLOCKS
        off = tl.load(off_ptr)
        acc = tl.zeros((BLOCK_N, BW), dtype=tl.float32)
        for i in tl.range(0, ITERS, num_stages=STAGES):  # STAGES > 1: cp.async prefetch of later tiles
            k0 = (pid_k * ITERS + i) * BLOCK_K
            w = tl.load(w_ptr + rows[:, None] * words_per_row + (k0 // 8 + c)[None, :])  # (BN, BW)
            blk = rows[:, None] * blocks_per_row + (k0 // 64 + c // 8)[None, :]
            if NESTED:
                q = tl.load(am_ptr + blk).to(tl.int32)
                scale = _mul_rn(tl.load(code2_ptr + q), tl.load(am2_ptr + blk // 256)) + off
            else:
                scale = tl.load(am_ptr + blk)
            for b in tl.static_range(4):
                xi = tl.load(x_ptr + (k0 // 2 + c * 4 + b)[None, :])  # (1, BW): elements 8c+2b, 8c+2b+1
                byte = (w >> (8 * b)) & 255
                if LOOKUP == 0:
                    pair = tl.load(lut_ptr + byte)
                    v_hi = pair.to(tl.int32).to(tl.float32, bitcast=True)
                    v_lo = (pair >> 32).to(tl.int32).to(tl.float32, bitcast=True)
                else:
                    v_hi = tl.load(code_ptr + (byte >> 4))
                    v_lo = tl.load(code_ptr + (byte & 15))
                w_hi, w_lo = _bf16_round2(v_hi * scale, v_lo * scale, BITS)
                acc += w_hi * (xi << 16).to(tl.float32, bitcast=True)
                acc += w_lo * (xi & -65536).to(tl.float32, bitcast=True)
        _finish(tl.sum(acc, axis=1), pid_n, pid_k, rmask, bias_ptr, part_ptr, cnt_ptr, y_ptr, N,
                HAS_BIAS, BLOCK_N, SPLIT_K, BITS)


    @triton.jit
    def _prmt(a, b, sel):
        """PTX `prmt.b32` (generic mode): byte n of the result is byte sel[4n:4n+3] of {b, a}
        (bytes 0-3 from a, 4-7 from b). Selectors here never set the sign-replicate bit."""
        sel = sel + tl.zeros_like(a)  # a constant selector as a tensor operand
        if _INTERP:
            r = tl.zeros_like(a)
            for n in tl.static_range(4):
                idx = (sel >> (4 * n)) & 7
                byte = tl.where(idx < 4, a >> (8 * (idx & 3)), b >> (8 * (idx & 3))) & 255
                r = r | (byte << (8 * n))
            return r
        else:
            return tl.inline_asm_elementwise("prmt.b32 $0, $1, $2, $3;", "=r,r,r,r", [a, b, sel],
                                             dtype=tl.int32, is_pure=True, pack=1)

    @triton.jit
    def _bf16x2(a, b, BITS: tl.constexpr):
        """int32 holding bf16(a) in the upper half and bf16(b) in the lower (`cvt.rn.bf16x2.f32`)."""
        if BITS:
            hi = _bf16_round(a, True).to(tl.int32, bitcast=True)
            lo = _bf16_round(b, True).to(tl.int32, bitcast=True)
            return (hi & -65536) | ((lo >> 16) & 65535)
        else:
            return tl.inline_asm_elementwise("cvt.rn.bf16x2.f32 $0, $1, $2;", "=r,r,r", [a, b], dtype=tl.int32,
                                             is_pure=True, pack=1)

    @triton.jit
    def _lookup4(t0, t1, t2, t3, sel, half):
        """Bytes of a 16-entry byte table (t0..t3, entry i in byte i % 4 of t[i // 4]) at the four
        4-bit indices of sel's low 16 bits: two 8-entry lookups, then per byte the half that
        index bit 3 names (`half`: 0x3210 | bit 3 of each index moved to bit 2)."""
        return _prmt(_prmt(t0, t1, sel), _prmt(t2, t3, sel), half)

    @triton.jit
    def _codebook(code_ptr):
        """The 16 NF4 code values as scalars (registers shared by the whole program)."""
        return (tl.load(code_ptr), tl.load(code_ptr + 1), tl.load(code_ptr + 2), tl.load(code_ptr + 3),
                tl.load(code_ptr + 4), tl.load(code_ptr + 5), tl.load(code_ptr + 6), tl.load(code_ptr + 7),
                tl.load(code_ptr + 8), tl.load(code_ptr + 9), tl.load(code_ptr + 10), tl.load(code_ptr + 11),
                tl.load(code_ptr + 12), tl.load(code_ptr + 13), tl.load(code_ptr + 14), tl.load(code_ptr + 15))

    @triton.jit
    def _block_scale(am_ptr, am2_ptr, code2_ptr, off, blk, NESTED: tl.constexpr):
        """fp32 absmax of the 64-blocks `blk`, as bitsandbytes computes it."""
        if NESTED:
            q = tl.load(am_ptr + blk).to(tl.int32)
            return _mul_rn(tl.load(code2_ptr + q), tl.load(am2_ptr + blk // 256)) + off
        else:
            return tl.load(am_ptr + blk)

    @triton.jit
    def _block_tables(s, cb, BITS: tl.constexpr):
        """Per block, the 16 weights bf16(code[i] * s) as byte planes: (l0..l3, h0..h3), entry i's
        low byte in byte i % 4 of l[i // 4], its high byte likewise in h (shape of s + (1,))."""
        c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15 = cb
        r0, r1 = _bf16x2(c1 * s, c0 * s, BITS), _bf16x2(c3 * s, c2 * s, BITS)  # entry 2j low, 2j+1 high
        r2, r3 = _bf16x2(c5 * s, c4 * s, BITS), _bf16x2(c7 * s, c6 * s, BITS)
        r4, r5 = _bf16x2(c9 * s, c8 * s, BITS), _bf16x2(c11 * s, c10 * s, BITS)
        r6, r7 = _bf16x2(c13 * s, c12 * s, BITS), _bf16x2(c15 * s, c14 * s, BITS)
        return (_prmt(r0, r1, 0x6420)[:, :, None], _prmt(r2, r3, 0x6420)[:, :, None],
                _prmt(r4, r5, 0x6420)[:, :, None], _prmt(r6, r7, 0x6420)[:, :, None],
                _prmt(r0, r1, 0x7531)[:, :, None], _prmt(r2, r3, 0x7531)[:, :, None],
                _prmt(r4, r5, 0x7531)[:, :, None], _prmt(r6, r7, 0x7531)[:, :, None])

    @triton.jit
    def _word_weights(w, tables):
        """The 8 weights of each int32 word w as four bf16 pairs (p01, p23, p45, p67), the even
        element in the high half. The word's nibbles, low to high, are elements 1, 0, 3, 2 | 5, 4,
        7, 6 and serve directly as `prmt` selectors (bit 3 masked, then used to pick the half)."""
        l0, l1, l2, l3, h0, h1, h2, h3 = tables
        sel = w & 0x77777777
        sel_hi = sel >> 16  # prmt reads a selector's low 16 bits only
        half_lo = ((w >> 1) & 0x44444444) | 0x32103210
        half_hi = half_lo >> 16
        lo = _lookup4(l0, l1, l2, l3, sel, half_lo)
        hi = _lookup4(h0, h1, h2, h3, sel, half_lo)
        lo2 = _lookup4(l0, l1, l2, l3, sel_hi, half_hi)
        hi2 = _lookup4(h0, h1, h2, h3, sel_hi, half_hi)
        return _prmt(lo, hi, 0x5140), _prmt(lo, hi, 0x7362), _prmt(lo2, hi2, 0x5140), _prmt(lo2, hi2, 0x7362)

    @triton.jit
    def _pair_dot(acc, p, x_even, x_odd):
        """acc + w·x over one bf16 pair p (even element high, odd low); x as fp32.
        A bf16's fp32 value is its bits in the upper half."""
        acc += (p & -65536).to(tl.float32, bitcast=True) * x_even
        acc += (p << 16).to(tl.float32, bitcast=True) * x_odd
        return acc

    @triton.jit
    def _x_pairs(x_ptr, idx):
        """x[2i], x[2i+1] as fp32 for pair indices idx (x read as int32 pairs, even element low)."""
        xi = tl.load(x_ptr + idx)
        return (xi << 16).to(tl.float32, bitcast=True), (xi & -65536).to(tl.float32, bitcast=True)

    @triton.jit
    def _table_tile(w_ptr, am_ptr, am2_ptr, x_ptr, rows, k0, kb, jw, words_per_row, blocks_per_row,
                    NESTED: tl.constexpr):
        """The loads of one (rows, BLOCK_K) tile: packed words (BN, NB, 8), absmax codes (or fp32
        absmax) and their second-level scales (BN, NB), and x as int32 pairs, four (1, NB, 8)."""
        word = k0 // 8 + kb[:, None] * 8 + jw[None, :]  # (NB, 8) word index in the row
        w = tl.load(w_ptr + rows[:, None, None] * words_per_row + word[None, :, :])
        blk = rows[:, None] * blocks_per_row + k0 // 64 + kb[None, :]
        am = tl.load(am_ptr + blk)
        am2 = tl.load(am2_ptr + blk // 256) if NESTED else am
        xw = (word * 4)[None, :, :]  # x pair index of each word's elements 0, 1
        return w, am, am2, tl.load(x_ptr + xw), tl.load(x_ptr + xw + 1), tl.load(x_ptr + xw + 2), \
            tl.load(x_ptr + xw + 3)

    @triton.jit
    def _table_tile_dot(acc, tile, code2_ptr, off, cb, NESTED: tl.constexpr, BITS: tl.constexpr):
        """acc + the products of one loaded tile (_table_tile)."""
        w, am, am2, x0, x1, x2, x3 = tile
        s = _mul_rn(tl.load(code2_ptr + am.to(tl.int32)), am2) + off if NESTED else am
        p01, p23, p45, p67 = _word_weights(w, _block_tables(s, cb, BITS))
        acc = _pair_dot(acc, p01, (x0 << 16).to(tl.float32, bitcast=True), (x0 & -65536).to(tl.float32, bitcast=True))
        acc = _pair_dot(acc, p23, (x1 << 16).to(tl.float32, bitcast=True), (x1 & -65536).to(tl.float32, bitcast=True))
        acc = _pair_dot(acc, p45, (x2 << 16).to(tl.float32, bitcast=True), (x2 & -65536).to(tl.float32, bitcast=True))
        acc = _pair_dot(acc, p67, (x3 << 16).to(tl.float32, bitcast=True), (x3 & -65536).to(tl.float32, bitcast=True))
        return acc

    @triton.jit
    def _nf4_gemv_table_kernel(x_ptr, w_ptr, am_ptr, am2_ptr, code2_ptr, off_ptr, code_ptr, lut_ptr,
                               bias_ptr, part_ptr, cnt_ptr, y_ptr, N, K, ITERS, HALF_K, WORDS, BLOCKS,
                               NESTED: tl.constexpr, HAS_BIAS: tl.constexpr, LOOKUP: tl.constexpr,
                               BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr,
                               BITS: tl.constexpr, STAGES: tl.constexpr, PREFETCH: tl.constexpr):
        """The same product with the codebook lookup in registers, no memory gather per weight.

        Per (row, 64-block) the 16 possible weights bf16(code[i] * absmax) are computed once (16
        fp32 multiplies, 8 packed conversions: the exact values bitsandbytes dequantizes to) and
        held as byte planes; each int32 word of the packed weight (8 codes) is looked up with
        `prmt` (_word_weights). Tiles (BLOCK_N rows, 64-blocks, 8 words); w_ptr: int32 (N*K/8,).
        PREFETCH: the next tile's loads are issued before this tile's arithmetic (registers
        double-buffered), so HBM latency overlaps work instead of stalling each warp."""
        NB: tl.constexpr = BLOCK_K // 64
        pid_n = tl.program_id(0)
        pid_k = tl.program_id(1)
        rows = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        rmask = rows < N
        rows = tl.where(rmask, rows, 0).to(tl.int64)
        kb = tl.arange(0, NB)
        jw = tl.arange(0, 8)
        words_per_row = WORDS
        blocks_per_row = BLOCKS
        off = tl.load(off_ptr)
        cb = _codebook(code_ptr)
        acc = tl.zeros((BLOCK_N, NB, 8), dtype=tl.float32)
        k_first = pid_k * ITERS * BLOCK_K
        if PREFETCH:
            tile = _table_tile(w_ptr, am_ptr, am2_ptr, x_ptr, rows, k_first, kb, jw, words_per_row,
                               blocks_per_row, NESTED)
            for i in range(0, ITERS):
                k_next = k_first + tl.minimum(i + 1, ITERS - 1) * BLOCK_K  # the last one reloads itself
                nxt = _table_tile(w_ptr, am_ptr, am2_ptr, x_ptr, rows, k_next, kb, jw, words_per_row,
                                  blocks_per_row, NESTED)
                acc = _table_tile_dot(acc, tile, code2_ptr, off, cb, NESTED, BITS)
                tile = nxt
        else:
            for i in tl.range(0, ITERS, num_stages=STAGES):
                tile = _table_tile(w_ptr, am_ptr, am2_ptr, x_ptr, rows, k_first + i * BLOCK_K, kb, jw,
                                   words_per_row, blocks_per_row, NESTED)
                acc = _table_tile_dot(acc, tile, code2_ptr, off, cb, NESTED, BITS)
        _finish(tl.sum(tl.sum(acc, axis=2), axis=1), pid_n, pid_k, rmask, bias_ptr, part_ptr, cnt_ptr, y_ptr, N,
                HAS_BIAS, BLOCK_N, SPLIT_K, BITS)

    @triton.jit
    def _bf16_halves(p):
        """An int32 of two bf16 as two bf16 tensors (high half, low half): a register view on the GPU."""
        if _INTERP:
            return ((p & -65536).to(tl.float32, bitcast=True).to(tl.bfloat16),
                    (p << 16).to(tl.float32, bitcast=True).to(tl.bfloat16))
        else:
            lo, hi = tl.inline_asm_elementwise("mov.b32 {$0, $1}, $2;", "=h,=h,r", [p],
                                               dtype=(tl.bfloat16, tl.bfloat16), is_pure=True, pack=1)
            return hi, lo

    @triton.jit
    def _word_order(e0, e1, e2, e3, e4, e5, e6, e7, BN: tl.constexpr, BLOCK_K: tl.constexpr):
        """(BN, NB, 8) tensors for a word's elements 0..7 → (BN, BLOCK_K) in one fixed order;
        applied to weights and to element indices alike, so products pair up whatever it is."""
        a = tl.join(tl.join(e0, e1), tl.join(e2, e3))
        b = tl.join(tl.join(e4, e5), tl.join(e6, e7))
        return tl.reshape(tl.join(a, b), (BN, BLOCK_K))

    @triton.jit
    def _nf4_gemv_mma_kernel(x_ptr, w_ptr, am_ptr, am2_ptr, code2_ptr, off_ptr, code_ptr, lut_ptr,
                             bias_ptr, part_ptr, cnt_ptr, y_ptr, N, K, ITERS, HALF_K, WORDS, BLOCKS,
                             NESTED: tl.constexpr, HAS_BIAS: tl.constexpr, LOOKUP: tl.constexpr,
                             BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr,
                             BITS: tl.constexpr, STAGES: tl.constexpr):
        """Kernel 2's lookups with the products on the tensor cores: the bf16 pairs `prmt` makes
        are already mma operands, so the integer pipe (the limit of kernels 2-4) only looks up.
        x is the first of 16 rows of the A operand (the rest zero), the weight tile the B
        operand, fp32 accumulation (mma m16n8k16); the K order inside a tile is _word_order's."""
        NB: tl.constexpr = BLOCK_K // 64
        pid_n = tl.program_id(0)
        pid_k = tl.program_id(1)
        rows = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        rmask = rows < N
        rows = tl.where(rmask, rows, 0).to(tl.int64)
        kb = tl.arange(0, NB)
        jw = tl.arange(0, 8)
        words_per_row = WORDS
        blocks_per_row = BLOCKS
        off = tl.load(off_ptr)
        cb = _codebook(code_ptr)
        e = (kb[:, None] * 64 + jw[None, :] * 8)[None, :, :]  # element 0 of each word in the tile
        order = _word_order(e, e + 1, e + 2, e + 3, e + 4, e + 5, e + 6, e + 7, 1, BLOCK_K)  # (1, BLOCK_K)
        first_row = (tl.arange(0, 16) == 0)[:, None]
        acc = tl.zeros((16, BLOCK_N), dtype=tl.float32)
        for i in tl.range(0, ITERS, num_stages=STAGES):
            k0 = (pid_k * ITERS + i) * BLOCK_K
            word = k0 // 8 + kb[:, None] * 8 + jw[None, :]
            w = tl.load(w_ptr + rows[:, None, None] * words_per_row + word[None, :, :])  # (BN, NB, 8)
            blk = rows[:, None] * blocks_per_row + k0 // 64 + kb[None, :]
            s = _block_scale(am_ptr, am2_ptr, code2_ptr, off, blk, NESTED)
            p01, p23, p45, p67 = _word_weights(w, _block_tables(s, cb, BITS))
            e0, e1 = _bf16_halves(p01)
            e2, e3 = _bf16_halves(p23)
            e4, e5 = _bf16_halves(p45)
            e6, e7 = _bf16_halves(p67)
            wt = _word_order(e0, e1, e2, e3, e4, e5, e6, e7, BLOCK_N, BLOCK_K)  # (BN, BLOCK_K) bf16
            xk = k0 + order  # (1, BLOCK_K) element index of x; x read as int32 pairs, even element low
            xv = ((tl.load(x_ptr + xk // 2) >> ((xk % 2) * 16)) << 16).to(tl.float32, bitcast=True)
            xa = tl.where(first_row, xv, 0.0).to(tl.bfloat16)  # (16, BLOCK_K), x in row 0
            if _INTERP:  # the interpreter's dot mishandles bf16; the same sum in fp32
                acc += tl.sum(wt.to(tl.float32)[None, :, :] * xa.to(tl.float32)[:, None, :], axis=2)
            else:
                acc = tl.dot(xa, tl.trans(wt), acc)
        _finish(tl.sum(tl.where(first_row, acc, 0.0), axis=0), pid_n, pid_k, rmask, bias_ptr, part_ptr, cnt_ptr,
                y_ptr, N, HAS_BIAS, BLOCK_N, SPLIT_K, BITS)

    @triton.jit
    def _nf4_gemv_paired_kernel(x_ptr, w_ptr, am_ptr, am2_ptr, code2_ptr, off_ptr, code_ptr, lut_ptr,
                                bias_ptr, part_ptr, cnt_ptr, y_ptr, N, K, ITERS, HALF_K, WORDS, BLOCKS,
                                NESTED: tl.constexpr, HAS_BIAS: tl.constexpr, LOOKUP: tl.constexpr,
                                BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr,
                                BITS: tl.constexpr, STAGES: tl.constexpr):
        """Kernel 2 with each thread on two rows (even and odd of the tile) over the same words:
        x is converted to fp32 once for both, a quarter fewer integer instructions per weight."""
        NB: tl.constexpr = BLOCK_K // 64
        HALF: tl.constexpr = BLOCK_N // 2
        pid_n = tl.program_id(0)
        pid_k = tl.program_id(1)
        rows_a = pid_n * BLOCK_N + 2 * tl.arange(0, HALF)
        rows_b = rows_a + 1
        mask_a, mask_b = rows_a < N, rows_b < N
        rows_a = tl.where(mask_a, rows_a, 0).to(tl.int64)
        rows_b = tl.where(mask_b, rows_b, 0).to(tl.int64)
        kb = tl.arange(0, NB)
        jw = tl.arange(0, 8)
        words_per_row = WORDS
        blocks_per_row = BLOCKS
        off = tl.load(off_ptr)
        cb = _codebook(code_ptr)
        acc_a = tl.zeros((HALF, NB, 8), dtype=tl.float32)
        acc_b = tl.zeros((HALF, NB, 8), dtype=tl.float32)
        for i in tl.range(0, ITERS, num_stages=STAGES):
            k0 = (pid_k * ITERS + i) * BLOCK_K
            word = k0 // 8 + kb[:, None] * 8 + jw[None, :]
            w_a = tl.load(w_ptr + rows_a[:, None, None] * words_per_row + word[None, :, :])
            w_b = tl.load(w_ptr + rows_b[:, None, None] * words_per_row + word[None, :, :])
            s_a = _block_scale(am_ptr, am2_ptr, code2_ptr, off, rows_a[:, None] * blocks_per_row + k0 // 64
                               + kb[None, :], NESTED)
            s_b = _block_scale(am_ptr, am2_ptr, code2_ptr, off, rows_b[:, None] * blocks_per_row + k0 // 64
                               + kb[None, :], NESTED)
            a01, a23, a45, a67 = _word_weights(w_a, _block_tables(s_a, cb, BITS))
            b01, b23, b45, b67 = _word_weights(w_b, _block_tables(s_b, cb, BITS))
            xw = (word * 4)[None, :, :]
            xe, xo = _x_pairs(x_ptr, xw)
            acc_a = _pair_dot(acc_a, a01, xe, xo)
            acc_b = _pair_dot(acc_b, b01, xe, xo)
            xe, xo = _x_pairs(x_ptr, xw + 1)
            acc_a = _pair_dot(acc_a, a23, xe, xo)
            acc_b = _pair_dot(acc_b, b23, xe, xo)
            xe, xo = _x_pairs(x_ptr, xw + 2)
            acc_a = _pair_dot(acc_a, a45, xe, xo)
            acc_b = _pair_dot(acc_b, b45, xe, xo)
            xe, xo = _x_pairs(x_ptr, xw + 3)
            acc_a = _pair_dot(acc_a, a67, xe, xo)
            acc_b = _pair_dot(acc_b, b67, xe, xo)
        sums = tl.reshape(tl.join(tl.sum(tl.sum(acc_a, axis=2), axis=1), tl.sum(tl.sum(acc_b, axis=2), axis=1)),
                          (BLOCK_N,))  # rows in order: a0, b0, a1, b1, ...
        rows = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        _finish(sums, pid_n, pid_k, rows < N, bias_ptr, part_ptr, cnt_ptr, y_ptr, N, HAS_BIAS, BLOCK_N, SPLIT_K, BITS)

    @triton.jit
    def _nf4_gemv_xstationary_kernel(x_ptr, w_ptr, am_ptr, am2_ptr, code2_ptr, off_ptr, code_ptr, lut_ptr,
                                     bias_ptr, part_ptr, cnt_ptr, y_ptr, N, K, ITERS, HALF_K, WORDS, BLOCKS,
                                     NESTED: tl.constexpr, HAS_BIAS: tl.constexpr, LOOKUP: tl.constexpr,
                                     BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr,
                                     BITS: tl.constexpr, STAGES: tl.constexpr):
        """Kernel 2's arithmetic with x held still: program (g, s) converts its BLOCK_K slice s of
        x to fp32 once and walks ITERS row tiles (g*ITERS ...), so no weight pays for unpacking x.
        SPLIT_K = K / BLOCK_K slices, added by _finish in a fixed order."""
        NB: tl.constexpr = BLOCK_K // 64
        pid_g = tl.program_id(0)
        pid_k = tl.program_id(1)
        kb = tl.arange(0, NB)
        jw = tl.arange(0, 8)
        words_per_row = WORDS
        blocks_per_row = BLOCKS
        off = tl.load(off_ptr)
        cb = _codebook(code_ptr)
        k0 = pid_k * BLOCK_K
        word = k0 // 8 + kb[:, None] * 8 + jw[None, :]  # (NB, 8)
        xw = (word * 4)[None, :, :]
        xe0, xo0 = _x_pairs(x_ptr, xw)
        xe1, xo1 = _x_pairs(x_ptr, xw + 1)
        xe2, xo2 = _x_pairs(x_ptr, xw + 2)
        xe3, xo3 = _x_pairs(x_ptr, xw + 3)
        for i in tl.range(0, ITERS, num_stages=STAGES):
            pid_n = pid_g * ITERS + i
            rows = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
            rmask = rows < N
            rows = tl.where(rmask, rows, 0).to(tl.int64)
            w = tl.load(w_ptr + rows[:, None, None] * words_per_row + word[None, :, :])  # (BN, NB, 8)
            blk = rows[:, None] * blocks_per_row + k0 // 64 + kb[None, :]
            s = _block_scale(am_ptr, am2_ptr, code2_ptr, off, blk, NESTED)
            p01, p23, p45, p67 = _word_weights(w, _block_tables(s, cb, BITS))
            acc = tl.zeros((BLOCK_N, NB, 8), dtype=tl.float32)
            acc = _pair_dot(acc, p01, xe0, xo0)
            acc = _pair_dot(acc, p23, xe1, xo1)
            acc = _pair_dot(acc, p45, xe2, xo2)
            acc = _pair_dot(acc, p67, xe3, xo3)
            if pid_n * BLOCK_N < N:
                _finish(tl.sum(tl.sum(acc, axis=2), axis=1), pid_n, pid_k, rmask, bias_ptr, part_ptr, cnt_ptr,
                        y_ptr, N, HAS_BIAS, BLOCK_N, SPLIT_K, BITS)


def launch(x: torch.Tensor, t: Nf4Tensors, plan: Plan, bias: torch.Tensor | None = None) -> torch.Tensor:
    """Run the Triton kernel: x (K,) bf16 contiguous → (N,) bf16. Needs Triton (raises
    RuntimeError without it); K must be a multiple of plan.block_k * plan.split_k."""
    if triton is None:
        raise RuntimeError("Triton is not installed")
    tiles = -(-t.n // plan.block_n)
    grid, iters, split = (tiles, plan.split_k), t.k // (plan.block_k * plan.split_k), plan.split_k
    if plan.kernel == 3:  # x-stationary: one K slice per program, row tiles in its loop
        split, iters = t.k // plan.block_k, plan.row_tiles
        grid = (-(-tiles // iters), split)
    if t.k % (plan.block_k * split):
        raise ValueError(f"K={t.k} not a multiple of block_k*split_k={plan.block_k * split}")
    x = x.reshape(-1)
    if x.storage_offset() % 2:  # read as int32 pairs: needs 4-byte alignment
        x = x.clone()
    y = torch.empty(t.n, dtype=torch.bfloat16, device=x.device)
    part = torch.empty(split * t.n if split > 1 else 1, dtype=torch.float32, device=x.device)
    kernel = (_nf4_gemv_kernel, _nf4_gemv_words_kernel, _nf4_gemv_table_kernel,
              _nf4_gemv_xstationary_kernel, _nf4_gemv_table_kernel, _nf4_gemv_mma_kernel,
              _nf4_gemv_paired_kernel)[plan.kernel]
    extra = {"PREFETCH": plan.kernel == 4} if plan.kernel in (2, 4) else {}
    packed = t.packed if plan.kernel == 0 else t.packed.view(torch.int32)
    kernel[grid](
        x.view(torch.int32), packed, t.absmax, t.absmax2, t.code2, t.offset, t.code,
        t.pair_lut, bias if bias is not None else y, part, t.counters, y, t.n, t.k,
        iters, t.k // 2, t.k // 8, t.k // 64,
        NESTED=t.nested, HAS_BIAS=bias is not None, LOOKUP=plan.lookup, BLOCK_N=plan.block_n,
        BLOCK_K=plan.block_k, SPLIT_K=split, BITS=INTERPRETED or plan.bits, STAGES=plan.stages,
        num_warps=plan.num_warps, **extra,
        enable_fp_fusion=True)  # only acc += w·x contracts (exact products); the absmax multiply is mul.rn
    return y
