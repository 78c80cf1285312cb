"""Split-KV attention kernels over the static cache: the 8-bit cache's decode and prefill, reading
each code once (issue 16, item 1), and the 16-bit cache's decode step (`kv16_decode`, issue 15).

The 8-bit cache keeps each key and value vector as ``head_dim`` int8 codes and its float32 scale
(app.engine.local.kv_quant). The first decode path cast the codes to bf16 and multiplied with
``torch.matmul``; Inductor lowers that to an ``aten.bmm`` on a materialized bf16 copy of the
whole cache (checked with ``torch._inductor.utils.run_and_get_code``: a (B, Hkv, S, d) bf16
buffer before ``extern_kernels.bmm``), so every step wrote and re-read 2 bytes per code besides
reading the byte itself — more traffic than a 16-bit cache, and a transient of
2 · Hkv · S · d bytes per layer (200 MB at 97.5k tokens for Llama-3-8B; the 8-bit card's peak
ran 160 MB over its projection, H200, 2026-12-02, tests/benchmarks/results/
memory_foresight_h200_kv8_run1.json). The first prefill path dequantized the past one block of
4,096 keys at a time and merged the blocks by log-sum-exp (attention.blockwise_8bit_prefill):
bounded memory, but ~20 launches per block; a 97.5k-token prompt in 128-token chunks took 137 s
to its first token on that card.

One Triton kernel serves both (CUDA, Triton, int8 codes): flash attention (Dao et al. 2022)
with the split-KV of Flash-Decoding (Dao et al. 2023) over packed rows. The g query heads that
share a KV head become g rows per query token (row r = query r // g, head r % g), so a KV head's
codes are read once for all its query heads; a program takes a tile of rows and a span of keys,
casts the codes to the compute dtype in registers (exact: |code| ≤ 127), folds each vector's
scale into the scores (keys) or the probabilities (values), keeps an online softmax in float32,
and writes its partial output, maximum and sum; `_merge_kernel` combines the spans by their
maxima. Row r of a chunk whose first query is at position ``first`` sees keys [0, first + r // g
+ 1) (causal); a decode step's one query sees its ``valid`` keys, and its programs read nothing past
their span's last valid key (VALID_SCAN: the cache's empty tail costs no bytes).

* ``headroom::kv8_decode`` (query (B, Hkv, g, d), valid (B, S) bool or None): the decode step,
  opaque to torch.compile and captured in its CUDA graph (compiled_decode). It rotates the query
  into the cache's basis in `_attend_kernel` and the output back out of it there too: each split's
  float32 partial output before it is stored, so the merge is the 16-bit cache's (ROTATE_AT says
  where; "merge" rotates each merged row in `_merge_kernel` instead).
* `kv8_prefill` (query (B, Hq, c, d) at positions [span − c, span)): a prefill chunk, eager.
* Anywhere the kernel does not apply (CPU, fp8 codes, no Triton): `reference`, the same math in
  torch over blocks of REFERENCE_BLOCK keys (decode; prefill keeps the blockwise path).

All take queries already rotated into the cache's basis and return outputs in that basis (the
caller rotates). key/value: (B, Hkv, S, d + 4) int8 or uint8. Outputs in the query's dtype. A
kernel that fails to build or launch (a Triton too old or too new) is not tried again:
`triton_failure` says why, and the torch paths run.
"""

from __future__ import annotations

import logging
import os

import torch

from app.engine.local import kv8_append, kv16_mma, kv_quant

log = logging.getLogger(__name__)

try:  # Triton ships with torch on CUDA; absent on CPU-only installs (CI)
    import triton
    import triton.language as tl
except Exception:  # noqa: BLE001 - any import failure means "no Triton"
    triton = tl = None

REFERENCE_BLOCK = 8192
"""Keys per block of the torch path: its transient is 2 · g · REFERENCE_BLOCK · d bytes."""
BLOCK_N = 64
"""Keys per tile of the Triton kernel (rows per tile: 16 for a decode step, whose g query rows
are padded for ``tl.dot``, 64 for a prefill chunk)."""


def reference(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, valid: torch.Tensor | None,
              scale: float) -> torch.Tensor:
    """The attention of `kv8_decode` in torch, block by block (see the module docstring for the
    shapes). Scores in float32 for every key (g · S floats), the codes cast one block at a time."""
    b, h, g, d = query.shape
    span = key.shape[2]
    scores = torch.empty((b, h, g, span), dtype=torch.float32, device=query.device)
    for start in range(0, span, REFERENCE_BLOCK):
        codes, key_scale = _unpacked(key[:, :, start:start + REFERENCE_BLOCK])
        part = torch.matmul(query, codes.to(query.dtype).transpose(2, 3)).float()
        scores[..., start:start + codes.shape[2]] = part * (key_scale.transpose(2, 3) * scale)
    if valid is not None:
        scores = scores.masked_fill(~valid[:, None, None, :], float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    value_dim = value.shape[-1] - (kv_quant.SCALE_BYTES if kv_quant.is_packed(value) else 0)
    out = torch.zeros((b, h, g, value_dim), dtype=torch.float32, device=query.device)
    for start in range(0, span, REFERENCE_BLOCK):
        codes, value_scale = _unpacked(value[:, :, start:start + REFERENCE_BLOCK])
        weights = probs[..., start:start + codes.shape[2]] * value_scale.transpose(2, 3)
        out += torch.matmul(weights.to(query.dtype), codes.to(query.dtype)).float()
    return out.to(query.dtype)


def _unpacked(block: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(codes, scale (…, n, 1)) of a packed block; a 16-bit block is its own codes, scale 1."""
    if kv_quant.is_packed(block):
        return kv_quant.unpack(block)
    return block, torch.ones(1, 1, 1, 1, dtype=torch.float32, device=block.device)


def triton_applies(query: torch.Tensor, key: torch.Tensor) -> bool:
    """The Triton kernel takes these inputs: CUDA, Triton present and not failed, int8 codes, a
    power-of-two head_dim of 16-256, bf16 or fp16 queries, packed rows it can read in 4-byte
    words (`word_aligned`)."""
    d = query.shape[-1]
    return (triton is not None and not triton_failure and query.is_cuda and key.dtype == torch.int8
            and 16 <= d <= 256 and d & (d - 1) == 0 and query.dtype in (torch.bfloat16, torch.float16)
            and word_aligned(key))


def kernel_runs_on(device) -> bool:
    """An 8-bit prefill chunk on ``device`` (a torch.device or "cuda" / "cpu") goes to this
    module's kernel: CUDA, Triton importable and not failed. Its memory is that path's
    (app.engine.memory.prefill_spike, PrefillModel.kv8_kernel)."""
    return getattr(device, "type", device) == "cuda" and triton is not None and not triton_failure


def word_aligned(packed: torch.Tensor) -> bool:
    """Rows contiguous, each starting on a 4-byte boundary: what the kernel's word loads and its
    float32 scale loads assume (a misaligned load is a sticky CUDA error)."""
    return packed.stride(-1) == 1 and packed.stride(2) % 4 == 0 and packed.data_ptr() % 4 == 0


triton_failure = ""
"""Why the Triton kernel failed once (then only the torch paths run), or ""."""


PREFILL_ROWS = 64
PREFILL_BLOCK_N = 64
PREFILL_WARPS = 4
"""Query rows and keys per tile, and warps per program, of a prefill chunk (more than 16 rows).
``kv8_kernel.py --prefill-sweep`` on the H200 (results/kv8_kernel_h200_run2_sweeps.json, 2026-12-02, a 4,096-token
chunk): 1.07 / 13.4 / 41.4 ms per layer at 4k / 32k / 97.5k keys; the best of 8 choices, 128 rows,
64 keys, 8 warps, 1.01 / 11.8 / 36.5 (6-12 % less), kept out because 128-row tiles double the
partials a short chunk splits into (kv_layout.KV8_SPLIT_PARTIAL_ROWS), which the 12 GiB card pays
at its limit; torch's flash SDPA over the same span in bf16 takes 0.33 / 5.9 / 18.2."""
ROTATE_COLUMNS = 32
"""Columns of the ±1 Hadamard signs a decode kernel holds at once while rotating (ROTATE_COLUMNS × d
of the query's dtype)."""
MERGE_SPLITS = 32
"""Splits the merge reads at once per row (a power of two; more splits loop): 32 × d float32 per
program. Always this many (masked beyond the real ones), not the next power of two of the splits:
each power of two was another Triton compile on the first decode step at a new cache size, inside
the turn (a 0.3-0.5 s pause in the first answer at 4k and at each growth to a new one, H200,
results/decode_anatomy_h200_groups.json: first turn 163 against 239 tok/s)."""
VALID_SCAN = 1024
"""Keys of the ``valid`` mask a program of a masked decode step reads at once, before any key or
value, to find its span's last valid key and read no further (0: no scan; every key of the span is
read and the mask applied to the scores). The static cache grows in steps, so its tail is empty:
on the H200 (2026-12-03, tests/benchmarks/decode_attention.py, results/decode_attention_h200.json;
32 layers of 8 KV heads, bf16, with the merge launch) a layer's attention took 9.37 / 12.51 / 16.07
/ 36.29 µs with 1,600 / 3,000 / 4,600 / 17,000 of 2,048 / 4,096 / 8,192 / 32,768 slots filled,
against 9.49 / 12.99 / 19.25 / 49.79 without the scan; on the app path (decode_anatomy,
results/decode_anatomy_h200_scan.json) the step at 4k / 16k took 3.860 / 4.271 ms against 3.912 /
4.394. Masking each key and value load by the mask instead (no scan) makes every tile wait on the
mask's load: slower at 4,096 slots than reading them all."""
SPLIT_WAVES = 2
"""Programs per streaming multiprocessor the key splits aim at (`splits_for`)."""
MIN_SPLIT_TILES = 2
"""Fewest tiles of BLOCK_N keys one split takes (`splits_for`). Measured on the H200 for both
formats (``kv8_kernel.py --sweep``, results/kv8_kernel_h200_sweep.json, 2026-12-02; 12 choices of
SPLIT_WAVES × 1/2/4 tiles): at 4k keys 32 splits of 2 tiles took 16.3 µs per layer over an 8-bit
cache and 10.5 over a 16-bit one, against 17.4 and 11.8 for the 16 splits of 4 tiles chosen
before; at 32k keys SPLIT_WAVES bounds the splits first (33 for every choice of tiles). One tile
each (33 or 64 splits at 4k) was slower: more splits than MERGE_SPLITS loop in the merge."""


ROTATE_AT = os.environ.get("HEADROOM_KV8_ROTATE_AT", "attend")
"""Where a decode step whose keys are split over programs rotates its output back to the model's
basis (env HEADROOM_KV8_ROTATE_AT, read once at import; `_attend` reads this name at each call,
so a benchmark may set it):

* "attend" (the default): each split's float32 partial output, (ROWS, d), times H in
  `_attend_kernel` before it is stored (PARTIAL_DOT), and the merge runs as for a 16-bit cache.
  H is linear and the merge a weighted sum, so Σ w_s·(acc_s·H) / Σ w_s·l_s = (Σ w_s·acc_s / Σ
  w_s·l_s)·H: the same output, rounded to the output dtype once (after the merge) instead of twice
  (before and after the rotation).
* "merge": the merge rotates each merged row (`_merge_kernel`'s ROTATE: a float32 broadcast-and-sum
  over d × d signs per row). The first version: on the H200 (Llama-3-8B, 4k keys) 169 µs per step
  of 32 layers against 93 µs for the same merge without rotation
  (tests/benchmarks/results/decode_anatomy_h200.json).

Anything else is taken as "merge"."""
PARTIAL_DOT = "tf32x3" if os.environ.get("TRITON_INTERPRET") == "1" else "bf16x3"
"""``tl.dot`` input precision of the partials' rotation (float32 partials times float32 ±1 signs).
"bf16x3" (Triton ≥ 3.5 on CUDA) splits each partial into bf16 high and low parts, three bf16
products summed in float32 (the signs are exact in bf16, their low part zero): ~17 bits of each
partial kept, a relative error ≲ 2^-17, against plain tf32's 2^-11, too lossy ahead of a bf16
output's own 2^-9. Compiled for sm_90 (16 rows, d = 128, 4 warps) it keeps the kernel at 195
registers; "tf32x3" (~22 bits) took it to 255 with three tf32 products at half bf16's rate.
Triton's interpreter refuses "bf16x3", and its ``tl.dot`` is a float32 numpy product whatever the
precision: "tf32x3" there."""


def splits_for(span: int, programs: int, sms: int = 132) -> int:
    """Key spans per row tile: enough programs for about SPLIT_WAVES per each of ``sms`` streaming
    multiprocessors, each span at least MIN_SPLIT_TILES tiles of keys."""
    most = max(1, -(-span // (MIN_SPLIT_TILES * BLOCK_N)))
    return max(1, min(most, -(-SPLIT_WAVES * sms // max(programs, 1))))


if triton is not None:
    _ROTATE_COLUMNS = tl.constexpr(ROTATE_COLUMNS)

    # The integers that change with every prefill chunk and span are not specialized on (Triton's
    # default: equal to 1, divisible by 16): that compiled a new kernel for each of the first
    # chunks of a chat, ~1 s each inside the TTFT (H200: 1.65-1.9 s for the first two turns at 4k
    # at 8-bit, 0.19 / 0.11 s at 16-bit, results/decode_anatomy_h200_kv8.json). They bound loops
    # and masks; the strides, fixed for a model, stay specialized.
    @triton.jit(do_not_specialize=["rows", "first", "span", "split_len", "splits", "row_tiles"])
    def _attend_kernel(q_ptr, k_ptr, v_ptr, valid_ptr, out_ptr, acc_ptr, max_ptr, sum_ptr, signs_ptr,
                       rows, first, span, split_len, heads, splits, row_tiles, scale, rot_scale,
                       stride_qb, stride_qh, stride_qr,
                       stride_kb, stride_kh, stride_ks,
                       stride_vb, stride_vh, stride_vs, stride_valid,
                       G: tl.constexpr, ROWS: tl.constexpr, D: tl.constexpr, BLOCK: tl.constexpr,
                       HAS_VALID: tl.constexpr, DIRECT: tl.constexpr, ROTATE: tl.constexpr,
                       QUANT: tl.constexpr, ROTATE_PARTIALS: tl.constexpr, PARTIAL_DOT: tl.constexpr,
                       SCAN: tl.constexpr):
        bh = tl.program_id(0)
        tile = tl.program_id(1)
        split = tl.program_id(2)
        b = bh // heads
        h = bh % heads
        r = tile * ROWS + tl.arange(0, ROWS)
        dims = tl.arange(0, D)
        q_rows = q_ptr + b * stride_qb + h * stride_qh + r[:, None] * stride_qr
        if ROTATE:  # the query into the cache's basis here, not in a kernel of its own (`_rotated`)
            q = _rotated(q_rows, signs_ptr, rot_scale, (r < rows)[:, None], ROWS, D)
        else:
            q = tl.load(q_rows + dims[None, :], mask=(r < rows)[:, None], other=0.0)
        limit = first + r // G + 1  # row r sees keys [0, limit)
        last = tl.minimum(tile * ROWS + ROWS, rows) - 1
        start = split * split_len
        end = tl.minimum(tl.minimum(start + split_len, span), first + last // G + 1)
        if HAS_VALID and SCAN > 0:  # stop at this span's last valid key: the cache's empty tail is not read
            last_valid = start - 1
            for c0 in tl.range(start, end, SCAN):
                marks_at = tl.multiple_of(c0, BLOCK) + tl.arange(0, SCAN)  # split_len: a multiple of BLOCK
                marks = tl.load(valid_ptr + b * stride_valid + marks_at, mask=marks_at < end, other=0)
                last_valid = tl.maximum(last_valid, tl.max(tl.where(marks != 0, marks_at, -1), 0))
            end = tl.minimum(end, last_valid + 1)
        m_i = tl.full([ROWS], -1.0e30, tl.float32)
        l_i = tl.zeros([ROWS], tl.float32)
        acc = tl.zeros([ROWS, D], tl.float32)
        # a packed row is head_dim + 4 bytes, a multiple of 4: written as one (an exact identity
        # here), Triton's alignment analysis sees it and reads codes four bytes at a time (a row
        # stride of unknown alignment means one byte per load) and each scale as one float32
        if QUANT:
            stride_ks = (stride_ks // 4) * 4
            stride_vs = (stride_vs // 4) * 4
        k_base = k_ptr + b * stride_kb + h * stride_kh
        v_base = v_ptr + b * stride_vb + h * stride_vh
        # only the tiles of keys some row of this tile sees: a causal prefill tile stops at its
        # last row's position instead of loading the rest of the span masked (about half the
        # work of a chunk that starts the cache; not yet measured)
        for n0 in tl.range(0, tl.minimum(split_len, end - start), BLOCK):  # split_len: a multiple of BLOCK
            keys = start + n0 + tl.arange(0, BLOCK)
            inside = keys < end
            codes = tl.load(k_base + keys[:, None] * stride_ks + dims[None, :], mask=inside[:, None], other=0)
            s = tl.dot(q, tl.trans(codes.to(q.dtype)))  # (ROWS, BLOCK) float32
            if QUANT:
                s = s * (_scale(k_base + keys * stride_ks + D, inside) * scale)[None, :]
            else:  # a 16-bit cache: the keys themselves
                s = s * scale
            seen = inside[None, :] & (keys[None, :] < limit[:, None])
            if HAS_VALID:
                seen = seen & (tl.load(valid_ptr + b * stride_valid + keys, mask=inside, other=0) != 0)[None, :]
            s = tl.where(seen, s, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, 1))
            alpha = tl.exp(m_i - m_new)
            p = tl.exp(s - m_new[:, None])
            l_i = l_i * alpha + tl.sum(p, 1)
            v_codes = tl.load(v_base + keys[:, None] * stride_vs + dims[None, :], mask=inside[:, None], other=0)
            if QUANT:
                p = p * _scale(v_base + keys * stride_vs + D, inside)[None, :]
            acc = acc * alpha[:, None] + tl.dot(p.to(q.dtype), v_codes.to(q.dtype))
            m_i = m_new
        if DIRECT:  # one span of keys: the output itself, (B, Hkv, rows, D) contiguous
            done = (acc / tl.maximum(l_i, 1.0e-30)[:, None]).to(q.dtype)
            out_rows = out_ptr + (bh * rows + r[:, None]) * D
            if ROTATE:  # back out of the cache's basis, a slice of output columns at a time
                for c in tl.static_range(0, D, _ROTATE_COLUMNS):
                    cols = c + tl.arange(0, _ROTATE_COLUMNS)
                    signs = tl.load(signs_ptr + dims[:, None] * D + cols[None, :])
                    part = tl.dot(done, signs) * rot_scale
                    tl.store(out_rows + cols[None, :], part.to(q.dtype), mask=(r < rows)[:, None])
            else:
                tl.store(out_rows + dims[None, :], done, mask=(r < rows)[:, None])
        else:
            part = ((bh * row_tiles + tile) * splits + split) * ROWS + tl.arange(0, ROWS)
            if ROTATE_PARTIALS:  # the merge is linear in the partials: they go out in the model's basis
                for c in tl.static_range(0, D, _ROTATE_COLUMNS):
                    cols = c + tl.arange(0, _ROTATE_COLUMNS)
                    signs = tl.load(signs_ptr + dims[:, None] * D + cols[None, :]).to(tl.float32)  # ±1: exact
                    part_cols = tl.dot(acc, signs, input_precision=PARTIAL_DOT) * rot_scale
                    tl.store(acc_ptr + part[:, None] * D + cols[None, :], part_cols)
            else:
                tl.store(acc_ptr + part[:, None] * D + dims[None, :], acc)
            tl.store(max_ptr + part, m_i)
            tl.store(sum_ptr + part, l_i)

    @triton.jit(do_not_specialize=["rows", "row_tiles", "splits"])
    def _merge_kernel(acc_ptr, max_ptr, sum_ptr, out_ptr, signs_ptr, rows, row_tiles, splits, rot_scale,
                      ROWS: tl.constexpr, D: tl.constexpr, SPLITS: tl.constexpr, ROTATE: tl.constexpr):
        """The split partials into the output: program (bh, row) takes one real row of one
        (batch, KV head) and SPLITS of its splits at a time (all of them in one pass when
        ``splits`` ≤ SPLITS), weights each split's partial row by exp(its max − the overall
        max), divides by the weighted sum and stores the row in the output's dtype. One program
        per row, not per tile of rows looping over the splits: that one was latency-bound,
        12.7 µs per layer for 8 programs at 4k keys, more than the attention itself (H200,
        results/decode_anatomy_h200_whole_forward_kernels.json). ROTATE (ROTATE_AT "merge" only): the
        row goes back out of the cache's basis before it is stored; with "attend" the partials
        come already rotated and the merge is the 16-bit cache's."""
        bh = tl.program_id(0)
        row = tl.program_id(1)
        tile = row // ROWS
        dims = tl.arange(0, D)
        first_part = (bh * row_tiles + tile) * splits * ROWS + row % ROWS
        top = tl.full([], -1.0e30, tl.float32)
        total = tl.zeros([], tl.float32)
        merged = tl.zeros([D], tl.float32)
        for start in tl.range(0, splits, SPLITS):
            s = start + tl.arange(0, SPLITS)
            inside = s < splits
            part = first_part + s * ROWS
            maxima = tl.load(max_ptr + part, mask=inside, other=-1.0e30)
            new_top = tl.maximum(top, tl.max(maxima, 0))
            rescale = tl.exp(top - new_top)
            weight = tl.where(inside, tl.exp(maxima - new_top), 0.0)
            total = total * rescale + tl.sum(tl.load(sum_ptr + part, mask=inside, other=0.0) * weight, 0)
            acc = tl.load(acc_ptr + part[:, None] * D + dims[None, :], mask=inside[:, None], other=0.0)
            merged = merged * rescale + tl.sum(acc * weight[:, None], 0)
            top = new_top
        done = (merged / tl.maximum(total, 1.0e-30)).to(out_ptr.dtype.element_ty)
        out_row = out_ptr + (bh * rows + row) * D
        if ROTATE:  # x·H for one row: a product-and-sum over a slice of H's columns at a time
            done = done.to(tl.float32)
            for c in tl.static_range(0, D, _ROTATE_COLUMNS):
                cols = c + tl.arange(0, _ROTATE_COLUMNS)
                signs = tl.load(signs_ptr + dims[:, None] * D + cols[None, :]).to(tl.float32)
                part = tl.sum(done[:, None] * signs, 0) * rot_scale
                tl.store(out_row + cols, part.to(out_ptr.dtype.element_ty))
        else:
            tl.store(out_row + dims, done)

    @triton.jit
    def _rotated(q_rows, signs_ptr, rot_scale, mask, ROWS: tl.constexpr, D: tl.constexpr):
        """(ROWS, D) queries at ``q_rows + dims`` times H = signs · rot_scale (`rotation_signs`),
        rounded to the queries' dtype as `kv_quant.rotate` rounds: the ±1 products are exact on
        the tensor cores, summed in float32, then scaled. ROTATE_COLUMNS inputs at a time keep the
        signs tile small (ROTATE_COLUMNS × D)."""
        dims = tl.arange(0, D)
        rotated = tl.zeros([ROWS, D], tl.float32)
        for c in tl.static_range(0, D, _ROTATE_COLUMNS):
            cols = c + tl.arange(0, _ROTATE_COLUMNS)
            part = tl.load(q_rows + cols[None, :], mask=mask, other=0.0)
            rotated += tl.dot(part, tl.load(signs_ptr + cols[:, None] * D + dims[None, :]))
        return (rotated * rot_scale).to(q_rows.dtype.element_ty)

    @triton.jit
    def _scale(ptr, inside):
        """The float32 scale whose 4 little-endian bytes start at ``ptr`` (one per key; 4-byte
        aligned: the packed rows are a multiple of 4 bytes from an aligned allocation)."""
        return tl.load(ptr.to(tl.pointer_type(tl.float32)), mask=inside, other=0.0)


def _attend(q_rows: torch.Tensor, key: torch.Tensor, value: torch.Tensor, valid, first: int, span: int,
            groups: int, scale: float, rotate: bool = False) -> torch.Tensor:
    """q_rows (B, Hkv, R, d) contiguous: row r is query r // groups (at position first + r //
    groups) of the head r % groups of its KV head; keys [0, span), and ``valid`` (B, S) bool when
    given. Returns (B, Hkv, R, d) in the queries' dtype. Memory: the output, plus, when the keys
    are split, float32 partial outputs of (B·Hkv, row tiles, splits, tile rows, d).
    rotate (a decode step, R ≤ 16): the queries come in the model's basis and the output goes
    back to it (`kv_quant.rotate` on each side, done inside the kernels: two launches per layer
    fewer); otherwise both are in the cache's basis. Where the output goes back: one span of keys,
    in `_attend_kernel` before its store; split keys, where ROTATE_AT says (read at each call)."""
    b, h, rows, d = q_rows.shape
    decode = rows <= 16
    assert decode or not rotate, "only a decode step's rows are rotated in the kernel"
    signs, rot_scale = rotation_signs(d, q_rows.device, q_rows.dtype) if rotate else (q_rows, 1.0)
    tile_rows, block = (16, BLOCK_N) if decode else (PREFILL_ROWS, PREFILL_BLOCK_N)
    row_tiles = -(-rows // tile_rows)
    splits = splits_for(span, b * h * row_tiles)
    split_len = -(-span // splits)
    split_len = -(-split_len // block) * block
    direct = splits == 1
    out = torch.empty(q_rows.shape, dtype=q_rows.dtype, device=q_rows.device)  # contiguous, as stored
    acc = maxima = sums = out  # the split partials, when there are splits (unused pointers otherwise)
    if not direct:
        shape = (b * h, row_tiles, splits, tile_rows)
        acc = torch.empty((*shape, d), dtype=torch.float32, device=q_rows.device)
        maxima = torch.empty(shape, dtype=torch.float32, device=q_rows.device)
        sums = torch.empty_like(maxima)
    has_valid = valid is not None
    if has_valid and valid.dtype == torch.bool:
        valid = valid.view(torch.uint8)  # the same bytes, no copy (Triton loads bool as bytes)
    if has_valid and valid.stride(-1) != 1:
        valid = valid.contiguous()
    valid = valid if has_valid else out  # any pointer when unused
    rotate_partials = rotate and not direct and ROTATE_AT == "attend"
    _attend_kernel[(b * h, row_tiles, splits)](
        q_rows, key, value, valid, out, acc, maxima, sums, signs, rows, first, span, split_len, h, splits,
        row_tiles, float(scale), rot_scale, q_rows.stride(0), q_rows.stride(1), q_rows.stride(2),
        key.stride(0), key.stride(1), key.stride(2),
        value.stride(0), value.stride(1), value.stride(2), valid.stride(0) if has_valid else 0,
        G=groups, ROWS=tile_rows, D=d, BLOCK=block, HAS_VALID=has_valid, DIRECT=direct, ROTATE=rotate,
        QUANT=kv_quant.is_packed(key), ROTATE_PARTIALS=rotate_partials, PARTIAL_DOT=PARTIAL_DOT, SCAN=VALID_SCAN,
        num_warps=4 if decode else PREFILL_WARPS)
    if not direct:
        _merge_kernel[(b * h, rows)](acc, maxima, sums, out, signs, rows, row_tiles, splits, rot_scale,
                                     ROWS=tile_rows, D=d, SPLITS=MERGE_SPLITS,
                                     ROTATE=rotate and not rotate_partials, num_warps=2)
    return out


rotation_signs = kv8_append.rotation_signs  # the ±1 pattern of H and its scale, shared with the cache write


def _guarded(query: torch.Tensor, *args) -> torch.Tensor | None:
    """`_attend`, or None when the kernel fails to build or launch, or disagrees with `reference`
    on its first use on a device (`self_check`): then it is never tried again."""
    global triton_failure
    try:
        if query.device not in _checked and not _capturing(query.device):
            _checked.add(query.device)
            error = self_check(query.device, query.dtype, query.shape[-1])
            if error > SELF_CHECK_TOLERANCE:
                triton_failure = f"self-check: relative error {error:.2g} against the torch path"
                log.warning("8-bit KV attention kernel disagrees with torch (%s); torch paths from now on",
                            triton_failure)
                return None
        return _attend(query, *args)
    except Exception as exc:  # a Triton that cannot build it: the torch paths answer instead
        if _capturing(query.device):
            raise  # a capture that cannot take the launch fails; the kernel itself may be fine
        triton_failure = f"{type(exc).__name__}: {str(exc).strip()[:200]}"
        log.warning("8-bit KV attention kernel failed; torch paths from now on", exc_info=exc)
        return None


SELF_CHECK_TOLERANCE = 2e-2
"""Largest relative L2 error of the kernel against `reference` (half-precision outputs: ~1e-3)."""
_checked: set = set()  # devices whose kernel was checked


def _capturing(device: torch.device) -> bool:
    return device.type == "cuda" and torch.cuda.is_current_stream_capturing()


def self_check(device: torch.device, dtype: torch.dtype, head_dim: int) -> float:
    """Worst relative L2 error of the kernel against `reference` on ``device`` over the six
    launches a chat makes: a decode step (rotating in the kernel; and over a 16-bit cache) over
    300 keys with some masked (keys split over programs) and over 8 (one span), a prefill chunk of
    8 tokens after 292 keys (split) and of 8 tokens alone (one span). Each compiles a variant of
    the kernel (tile rows, mask, merge, codes or 16-bit), here at load rather than inside a turn's
    TTFT. 2 KV heads of 4 query heads; raises what the kernel raises."""
    g = torch.Generator().manual_seed(0)
    groups, scale = 4, head_dim ** -0.5
    key = kv_quant.quantize(torch.randn(1, 2, 300, head_dim, generator=g) * 2).to(device)
    value = kv_quant.quantize(torch.randn(1, 2, 300, head_dim, generator=g)).to(device)
    worst = 0.0
    for span in (300, 8):
        keys, values = key[:, :, :span], value[:, :, :span]
        query = torch.randn(1, 2, groups, head_dim, generator=g).to(device, dtype)  # a decode step
        valid = (torch.arange(span) < span - 37 * (span > 37)).view(1, span).to(device)
        got = _attend(query, keys, values, valid, span - 1, span, groups, scale, True)
        want = kv_quant.rotate(reference(kv_quant.rotate(query), keys, values, valid, scale))
        worst = max(worst, _relative_error(got, want))
        keys16, values16 = kv_quant.dequantize(keys, dtype), kv_quant.dequantize(values, dtype)  # a 16-bit cache
        got = _attend(query, keys16, values16, valid, span - 1, span, groups, scale)
        worst = max(worst, _relative_error(got, reference(query, keys16, values16, valid, scale)))
        chunk = torch.randn(1, 2, 8 * groups, head_dim, generator=g).to(device, dtype)  # 8 tokens
        got = _attend(chunk, keys, values, None, span - 8, span, groups, scale)
        for t in range(8):  # token t sees keys [0, span - 8 + t]
            rows = slice(t * groups, (t + 1) * groups)
            seen = (torch.arange(span) <= span - 8 + t).view(1, span).to(device)
            want = reference(chunk[:, :, rows], keys, values, seen, scale)
            worst = max(worst, _relative_error(got[:, :, rows], want))
    return worst


def _relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    want = want.float()
    return float((got.float() - want).norm() / want.norm().clamp_min(1e-30))


def kv8_prefill(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, span: int,
                scale: float) -> torch.Tensor | None:
    """A prefill chunk: query (B, Hq, c, d) rotated, at positions [span − c, span), causal over
    keys [0, span) of the packed cache (the chunk's own keys already written). Returns (B, c,
    Hq, d) in the rotated basis, or None where the kernel does not apply (the caller's blockwise
    path runs). Transient: the packed rows and the output (2 · c·Hq·d bytes each), plus the
    split partials when c is small (float32, a few MB)."""
    if not (triton_applies(query, key) and word_aligned(value)):
        return None
    b, hq, c, d = query.shape
    h = key.shape[1]
    groups = hq // h
    rows = query.reshape(b, h, groups, c, d).transpose(2, 3).reshape(b, h, c * groups, d)
    out = _guarded(rows, key, value, None, span - c, span, groups, scale)
    del rows  # before the permuted copy: query, output and that copy are the transient
    if out is None:
        return None
    return out.reshape(b, h, c, groups, d).permute(0, 2, 1, 3, 4).reshape(b, c, hq, d)


@torch.library.custom_op("headroom::kv8_decode", mutates_args=())
def kv8_decode(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, valid: torch.Tensor | None,
               scale: float) -> torch.Tensor:
    """(B, Hkv, g, d) attention output of one query token per sequence over the packed 8-bit
    cache (module docstring), query and output in the model's basis: the Triton kernel, which
    rotates both itself, where `triton_applies`, else `reference` between two `kv_quant.rotate`."""
    query = query.contiguous()
    if triton_applies(query, key) and word_aligned(value):
        g = query.shape[2]  # one query token: its g rows see every valid key
        out = _guarded(query, key, value, valid, key.shape[2] - 1, key.shape[2], g, scale, True)
        if out is not None:
            return out
    return kv_quant.rotate(reference(kv_quant.rotate(query), key, value, valid, scale))


@kv8_decode.register_fake
def _(query, key, value, valid, scale):
    return torch.empty_like(query, memory_format=torch.contiguous_format)


KV16_KERNEL = os.environ.get("HEADROOM_KV16_DECODE", "kernel") != "torch"
"""Whether a 16-bit decode step goes to the split-KV kernel (`kv16_decode`) where it applies;
HEADROOM_KV16_DECODE=torch keeps torch's products (benchmarks compare the two)."""


def kv16_applies(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> bool:
    """`kv16_decode`'s kernel takes these: CUDA, Triton present and not failed, a 16-bit cache of the
    query's dtype (bf16 or fp16), one power-of-two head_dim of 16-256 for queries, keys and values,
    rows contiguous."""
    d = query.shape[-1]
    return (KV16_KERNEL and triton is not None and not triton_failure and query.is_cuda
            and query.dtype in (torch.bfloat16, torch.float16) and key.dtype == value.dtype == query.dtype
            and 16 <= d <= 256 and d & (d - 1) == 0 and key.shape[-1] == value.shape[-1] == d
            and key.stride(-1) == 1 and value.stride(-1) == 1)


@torch.library.custom_op("headroom::kv16_decode", mutates_args=())
def kv16_decode(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, valid: torch.Tensor | None,
                scale: float) -> torch.Tensor:
    """(B, Hkv, g, d) attention output of one query token per sequence over a 16-bit cache (B, Hkv,
    S, d): the CUDA kernel (`kv16_mma`: one launch, merge included; 1.04-1.14× faster than the
    Triton one on the H200, its docstring) where it applies, else the split-KV kernel of
    `kv8_decode` reading the keys and values as they are (no scales, no rotation), where
    `kv16_applies`; else `reference`. Why: torch's products (two batched GEMMs
    and a softmax, attention._packed_decode) cost three launches per layer and read the cache at
    ~1.5 TB/s. On the H200 (Llama-3-8B shapes, results/kv8_kernel_h200_run3.json, 2026-12-02) a
    layer's 16-bit decode attention took 11.0 / 47.8 / 117.4 µs at 4k / 32k / 97.5k keys here against
    24.8 / 92.5 / 236.5 for torch's products."""
    query = query.contiguous()
    out = _mma_guarded(query, key, value, valid, scale)
    if out is not None:
        return out
    if kv16_applies(query, key, value):
        out = _guarded(query, key, value, valid, key.shape[2] - 1, key.shape[2], query.shape[2], scale)
        if out is not None:
            return out
    return reference(query, key, value, valid, scale)


@kv16_decode.register_fake
def _(query, key, value, valid, scale):
    return torch.empty_like(query, memory_format=torch.contiguous_format)


mma_failure = ""
"""Why the CUDA kernel (kv16_mma) is not used for 16-bit decode steps, once known: it could not be built,
failed to launch, or disagreed with `reference` in its check; "" while it is used or not yet tried."""
_mma_checked: set = set()  # (device, dtype, head_dim) whose CUDA kernel passed its check


def _mma_guarded(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, valid: torch.Tensor | None,
                 scale: float) -> torch.Tensor | None:
    """`kv16_mma.decode`, or None where it does not apply (then the Triton kernel or torch answers):
    switched off, not CUDA, a shape it does not take, or failed once (`mma_failure`; never tried
    again). Its first use on a device, outside a capture, is checked against `reference`
    (`mma_self_check`)."""
    global mma_failure
    if not query.is_cuda or kv16_mma.shape_reason(query, key, value, valid):
        return None
    if (query.device, query.dtype, query.shape[-1]) not in _mma_checked and _capturing(query.device):
        return None  # checked only outside a capture; the Triton kernel serves this one
    if not mma_ready(query.device, query.dtype, query.shape[-1]):
        return None
    try:
        return kv16_mma.decode(query, key, value, valid, scale)
    except Exception as exc:  # noqa: BLE001 - a kernel that cannot launch here: the Triton kernel answers
        if _capturing(query.device):
            raise
        mma_failure = f"{type(exc).__name__}: {str(exc).strip()[:200]}"
        log.warning("16-bit decode attention (CUDA) failed; Triton from now on", exc_info=exc)
        return None


def mma_ready(device: torch.device, dtype: torch.dtype, head_dim: int) -> bool:
    """Whether `kv16_mma` serves 16-bit decode steps on ``device``: built here and checked against
    `reference` (`mma_self_check`, once per device, dtype and head_dim; a failure is kept in `mma_failure`
    and the kernel is not tried again, for any of them). Raises nothing."""
    global mma_failure
    if mma_failure or not KV16_KERNEL or not kv16_mma.ENABLED:
        return False
    if (device, dtype, head_dim) in _mma_checked:
        return True
    try:
        reason = kv16_mma.unavailable_reason(device)
        if reason:
            mma_failure = reason
            return False
        error = mma_self_check(device, dtype, head_dim)
    except Exception as exc:  # noqa: BLE001 - a kernel that cannot launch here: the Triton kernel answers
        mma_failure = f"{type(exc).__name__}: {str(exc).strip()[:200]}"
        log.warning("16-bit decode attention (CUDA) failed its check; Triton from now on", exc_info=exc)
        return False
    if error > SELF_CHECK_TOLERANCE:
        mma_failure = f"self-check: relative error {error:.2g} against the torch path"
        log.warning("16-bit decode attention (CUDA) disagrees with torch (%s); Triton from now on", mma_failure)
        return False
    _mma_checked.add((device, dtype, head_dim))
    return True


MERGED_BY = {"ticket": "in the same launch", "launch": "by a launch of their own",
             "poll": "by split 0 once their flags are set (else the ticket)"}  # kv16_mma.MERGE, for the load report


def decode_kernel(device: torch.device, dtype: torch.dtype, head_dim: int, groups: int) -> tuple[str, str]:
    """(kernel, why): what a decode step's attention over the 16-bit cache runs on ``device`` for a
    model of this compute dtype, head_dim and query heads per KV head, for the load report. On CUDA
    this builds and checks the CUDA kernel (`mma_ready`: a few small launches, once per device)."""
    if getattr(device, "type", device) != "cuda" or not KV16_KERNEL:
        return ("packed GQA matmul (Headroom)", "one query: two batched matmuls, fused when compiled")
    shape = kv16_mma.model_reason(groups, head_dim, dtype)
    if not shape and mma_ready(torch.device(device), dtype, head_dim):
        launches = "two CUDA launches" if kv16_mma.MERGE == "launch" else "one CUDA launch"
        return (f"split-KV decode, {launches} (Headroom)",
                f"keys split over every SM, the splits merged {MERGED_BY[kv16_mma.MERGE]} (kv16_mma); "
                "an 8-bit cache: the Triton split-KV kernel")
    if triton is not None and not triton_failure:
        return ("split-KV decode, Triton (Headroom)",
                f"the CUDA kernel does not apply: {shape or mma_failure or 'not checked'}")
    return ("packed GQA matmul (Headroom)", f"no split-KV kernel here ({triton_failure or 'no Triton'})")


def mma_self_check(device: torch.device, dtype: torch.dtype, head_dim: int) -> float:
    """Worst relative L2 error of `kv16_mma.decode` against `reference` on ``device``: 2 KV heads of 4
    query heads over 300 keys with the last 37 masked (three splits: the merge in the launch), over 8
    keys (one split), and over 300 keys with no mask."""
    g = torch.Generator().manual_seed(0)
    key = (torch.randn(1, 2, 300, head_dim, generator=g) * 2).to(device, dtype)
    value = torch.randn(1, 2, 300, head_dim, generator=g).to(device, dtype)
    query = torch.randn(1, 2, 4, head_dim, generator=g).to(device, dtype)
    scale, worst = head_dim ** -0.5, 0.0
    for span, masked in ((300, 37), (8, 0), (300, None)):
        keys, values = key[:, :, :span], value[:, :, :span]
        valid = None if masked is None else (torch.arange(span) < span - masked).view(1, span).to(device)
        got = kv16_mma.decode(query, keys, values, valid, scale)
        worst = max(worst, _relative_error(got, reference(query, keys, values, valid, scale)))
    return worst

