"""A decode step's attention alone, as the compiled step runs it (issue 15): the split-KV kernel and
its merge launch (`split_kv_attention._attend`, what ``headroom::kv16_decode`` runs) with and without
the scan for each span's last valid key (VALID_SCAN), and an experiment that merges in the same
launch (`_variant_kernel`, measured slower, not adopted).

Llama-3-8B shapes (8 KV heads × 4 query heads, head_dim 128, bf16), 32 layers of distinct caches
(nothing served from L2 between layers), each a static cache of ``capacity`` slots of which the
first ``filled`` are valid (a chat at that depth in the app's cache). Each path is recorded as one
CUDA graph of the 32 layers' calls and replayed (GPU time, as inside the compiled step's graph);
µs per layer, the valid K and V bytes over that time, and the relative L2 error against
`split_kv_attention.reference`.

    python3 -m tests.benchmarks.decode_attention --out $OUT               # H200, ~20 s
    python3 -m tests.benchmarks.decode_attention --out $OUT --variants    # + the one-launch experiment, ~40 s

Measured on the H200, 2026-12-03 (results/decode_attention_h200.json, --variants): with the scan
9.37 / 12.51 / 16.07 / 36.29 µs a layer at 1,600 / 3,000 / 4,600 / 17,000 of 2,048 / 4,096 / 8,192
/ 32,768 slots filled, without it 9.49 / 12.99 / 19.25 / 49.79 (1.01-1.37×).

The experiment (`_variant_kernel`'s switches, VARIANTS): the last program of a head to finish (an
atomic ticket) merges the head's partials instead of a merge launch. Measured on the H200,
2026-12-03 (results/decode_attention_h200.json), 2,048 slots with 1,600 filled: the launch
alone 1.0 µs a layer, the attention without any merge 6.3, with the merge launch 9.4, merging in the
launch 14.3 (row by row) and 19.9 (all partials loaded first); the tail behind the ticket costs more
than the launch it saves. Its GATE 1 (each key and value load masked by the valid mask, so it waits
on the mask's load) was slower than scanning the mask first (GATE 2, adopted as VALID_SCAN).

Beside them, "mma": the CUDA kernel (app.engine.local.kv16_mma) that ``headroom::kv16_decode`` now
runs, one launch with its merge. Measured on the H200, 2026-12-03 (results/
decode_attention_h200_mma.json, .gpu/final.sh): 8.58 / 10.89 / 14.14 / 34.91 µs a layer against the
Triton path's 9.32 / 12.33 / 16.17 / 36.28 in the same run. ``MMA_VARIANTS=1`` also times its SOURCE
patched (MMA_PATCHES: two blocks an SM, an empty launch, no merge, no marks; results of an earlier
build in the kernel's docstring), and with the splits of a head merged in a thread-block cluster
(CLUSTER_PATCHES, clusters of 8 and 16 blocks). Measured on the H200, 2026-12-04 (results/
decode_attention_h200_cluster.json): slower at every depth, 8.73 / 11.83 / 17.55 / 52.35 µs a layer in
clusters of 8 and 13.6 / 17.0 / 22.9 / 58.2 in clusters of 16 against the ticket merge's 8.19 / 10.25 /
13.38 / 34.39; not adopted. The merge itself costs ~3 µs a layer (no merge, partials only: 5.22 /
7.09 / 10.25 / 29.82).

Writes decode_attention_h200.json to --out.
"""

from __future__ import annotations

import argparse
import os

import torch

import app  # noqa: F401  (offline, allocator settings before torch)
from app.engine.local import kv16_mma
from app.engine.local import split_kv_attention as kd
from tests.benchmarks import kv8_kernel
from tests.benchmarks.report import write_result

try:
    import triton
    import triton.language as tl
except Exception:  # noqa: BLE001 - the benchmark needs CUDA and Triton; the module still imports
    triton = tl = None

LAYERS, KV_HEADS, GROUPS, HEAD_DIM = 32, 8, 4, 128
CASES = [(2048, 1600), (4096, 3000), (8192, 4600), (32768, 17000)]  # (capacity, filled)


if triton is not None:
    @triton.jit(do_not_specialize=["span", "split_len", "splits"])
    def _variant_kernel(q_ptr, k_ptr, v_ptr, valid_ptr, out_ptr, acc_ptr, max_ptr, sum_ptr, count_ptr,
                        span, split_len, heads, splits, scale,
                        stride_kb, stride_kh, stride_ks, stride_vb, stride_vh, stride_vs, stride_valid,
                        G: tl.constexpr, GP: tl.constexpr, ROWS: tl.constexpr, D: tl.constexpr,
                        BLOCK: tl.constexpr, SPLITS: tl.constexpr, GATE: tl.constexpr, MERGE: tl.constexpr,
                        SCAN: tl.constexpr, CH: tl.constexpr, EMPTY: tl.constexpr):
        """`split_kv_attention._decode_kernel` with its choices as switches (for the experiment):
        GATE 0 reads keys [start, end) and masks scores by ``valid``; 1 reads only the keys ``valid``
        marks (the load waits on the mask); 2 first scans the split's mask for its last valid key
        and reads up to it. MERGE 0: partials only (no ticket); 1: the last program merges row by
        row; 2: it loads all maxima, then the partials chunk by chunk, then stores once. EMPTY: the
        launch alone (stores the query)."""
        bh = tl.program_id(0)
        split = tl.program_id(1)
        b = bh // heads
        h = bh % heads
        r = tl.arange(0, ROWS)
        dims = tl.arange(0, D)
        real = r < G
        q = tl.load(q_ptr + (bh * G + r[:, None]) * D + dims[None, :], mask=real[:, None], other=0.0)
        if EMPTY:
            if split == 0:
                tl.store(out_ptr + (bh * G + r[:, None]) * D + dims[None, :], q, mask=real[:, None])
            return
        start = split * split_len
        end = tl.minimum(start + split_len, span)
        if GATE == 2:
            last = start - 1
            for c0 in tl.range(start, end, SCAN):
                ks = c0 + tl.arange(0, SCAN)
                vv = tl.load(valid_ptr + b * stride_valid + ks, mask=ks < end, other=0)
                last = tl.maximum(last, tl.max(tl.where(vv != 0, ks, -1), 0))
            end = tl.minimum(end, last + 1)
        k_base = k_ptr + b * stride_kb + h * stride_kh
        v_base = v_ptr + b * stride_vb + h * stride_vh
        m_i = tl.full([ROWS], -1.0e30, tl.float32)
        l_i = tl.zeros([ROWS], tl.float32)
        acc = tl.zeros([ROWS, D], tl.float32)
        for n0 in tl.range(start, end, BLOCK):
            keys = n0 + tl.arange(0, BLOCK)
            inside = keys < end
            seen = tl.load(valid_ptr + b * stride_valid + keys, mask=inside, other=0) != 0
            reads = inside & seen if GATE == 1 else inside
            k = tl.load(k_base + keys[:, None] * stride_ks + dims[None, :], mask=reads[:, None], other=0.0)
            s = tl.where((inside & seen)[None, :], tl.dot(q, tl.trans(k)) * scale, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, 1))
            alpha = tl.exp(m_i - m_new)
            p = tl.exp(s - m_new[:, None])
            l_i = l_i * alpha + tl.sum(p, 1)
            v = tl.load(v_base + keys[:, None] * stride_vs + dims[None, :], mask=reads[:, None], other=0.0)
            acc = acc * alpha[:, None] + tl.dot(p.to(q.dtype), v)
            m_i = m_new
        part = (bh * splits + split) * G + r
        tl.store(acc_ptr + part[:, None] * D + dims[None, :], acc, mask=real[:, None])
        tl.store(max_ptr + part, m_i, mask=real)
        tl.store(sum_ptr + part, l_i, mask=real)
        if MERGE > 0:
            tl.debug_barrier()
            ticket = tl.atomic_add(count_ptr + bh, 1, sem="acq_rel", scope="gpu")
            if ticket == splits - 1:
                if MERGE == 1:
                    s_idx = tl.arange(0, SPLITS)
                    inside_s = s_idx < splits
                    for row in tl.static_range(G):
                        at = (bh * splits + s_idx) * G + row
                        maxima = tl.load(max_ptr + at, mask=inside_s, other=-1.0e30, cache_modifier=".cg")
                        top = tl.max(maxima, 0)
                        weight = tl.where(inside_s, tl.exp(maxima - top), 0.0)
                        sums = tl.load(sum_ptr + at, mask=inside_s, other=0.0, cache_modifier=".cg")
                        total = tl.sum(sums * weight, 0)
                        parts = tl.load(acc_ptr + at[:, None] * D + dims[None, :], mask=inside_s[:, None],
                                        other=0.0, cache_modifier=".cg")
                        merged = tl.sum(parts * weight[:, None], 0) / tl.maximum(total, 1.0e-30)
                        tl.store(out_ptr + (bh * G + row) * D + dims, merged.to(out_ptr.dtype.element_ty))
                else:
                    s_idx = tl.arange(0, SPLITS)
                    g_idx = tl.arange(0, GP)
                    m2 = (s_idx < splits)[:, None] & (g_idx < G)[None, :]
                    at = (bh * splits + s_idx[:, None]) * G + g_idx[None, :]
                    maxima = tl.load(max_ptr + at, mask=m2, other=-1.0e30, cache_modifier=".cg")
                    top = tl.max(maxima, 0)  # (GP,)
                    weight = tl.where(m2, tl.exp(maxima - top[None, :]), 0.0)
                    total = tl.sum(tl.load(sum_ptr + at, mask=m2, other=0.0, cache_modifier=".cg") * weight, 0)
                    merged = tl.zeros([GP, D], tl.float32)
                    for c in tl.static_range(0, SPLITS, CH):
                        sc = c + tl.arange(0, CH)
                        mc = (sc < splits)[:, None] & (g_idx < G)[None, :]
                        atc = (bh * splits + sc[:, None]) * G + g_idx[None, :]
                        wc = tl.where(mc, tl.exp(tl.load(max_ptr + atc, mask=mc, other=-1.0e30,
                                                         cache_modifier=".cg") - top[None, :]), 0.0)
                        parts = tl.load(acc_ptr + atc[:, :, None] * D + dims[None, None, :], mask=mc[:, :, None],
                                        other=0.0, cache_modifier=".cg")
                        merged += tl.sum(parts * wc[:, :, None], 0)
                    done = merged / tl.maximum(total, 1.0e-30)[:, None]
                    tl.store(out_ptr + (bh * G + g_idx[:, None]) * D + dims[None, :],
                             done.to(out_ptr.dtype.element_ty), mask=(g_idx < G)[:, None])
                tl.atomic_xchg(count_ptr + bh, 0)


_tickets: dict = {}


def tickets(device: torch.device, heads: int) -> torch.Tensor:
    """`_variant_kernel`'s int32 tickets, one per head, zero between launches (its last program of
    a head resets them), allocated outside the capture."""
    if device not in _tickets or _tickets[device].numel() < heads:
        _tickets[device] = torch.zeros(max(heads, 1024), dtype=torch.int32, device=device)
    return _tickets[device]


def variant(query, key, value, valid, scale, gate=0, merge=2, block=64, warps=4, stages=3, min_keys=128,
            empty=False, splits_most=64):
    """`_variant_kernel` with these switches over query (B, Hkv, g, d), key and value (B, Hkv, S, d),
    valid (B, S) bool: about 2 programs per SM, at least ``min_keys`` keys each."""
    b, h, g, d = query.shape
    span = key.shape[2]
    splits = max(1, min(-(-span // min_keys), splits_most, -(-2 * 132 // (b * h))))
    per_split = -(-span // splits)
    split_len = -(-per_split // block) * block
    splits = -(-span // split_len)
    out = torch.empty_like(query)
    acc = torch.empty((b * h, splits, g, d), dtype=torch.float32, device=query.device)
    maxima = torch.empty((b * h, splits, g), dtype=torch.float32, device=query.device)
    sums = torch.empty_like(maxima)
    _variant_kernel[(b * h, splits)](
        query, key, value, valid.view(torch.uint8), out, acc, maxima, sums, tickets(query.device, b * h),
        span, split_len, h, splits, float(scale),
        key.stride(0), key.stride(1), key.stride(2), value.stride(0), value.stride(1), value.stride(2), valid.stride(0),
        G=g, GP=triton.next_power_of_2(g), ROWS=max(16, triton.next_power_of_2(g)), D=d, BLOCK=block, SPLITS=64,
        GATE=gate, MERGE=merge, SCAN=1024, CH=8, EMPTY=empty, num_warps=warps, num_stages=stages)
    return out  # merge 0: partials only (the output is not written)


VARIANTS = {
    "empty": dict(empty=True),
    "gate0_merge0": dict(gate=0, merge=0),
    "gate0_merge1": dict(gate=0, merge=1),
    "gate0_merge2": dict(gate=0, merge=2),
    "gate1_merge2": dict(gate=1, merge=2),
    "gate2_merge2": dict(gate=2, merge=2),
    "gate2_merge0": dict(gate=2, merge=0),
    "gate2_merge2_block32": dict(gate=2, merge=2, block=32),
    "gate2_merge2_warps2": dict(gate=2, merge=2, warps=2),
    "gate2_merge2_warps8": dict(gate=2, merge=2, warps=8),
    "gate2_merge2_stages2": dict(gate=2, merge=2, stages=2),
    "gate2_merge2_stages4": dict(gate=2, merge=2, stages=4),
    "gate2_merge2_keys64": dict(gate=2, merge=2, min_keys=64),
    "gate2_merge2_keys256": dict(gate=2, merge=2, min_keys=256),
    "gate0_merge2_keys64": dict(gate=0, merge=2, min_keys=64),
    "gate2_merge0_warps2": dict(gate=2, merge=0, warps=2),
    "gate2_merge0_block128": dict(gate=2, merge=0, block=128),
    "gate2_merge0_keys64": dict(gate=2, merge=0, min_keys=64),
}


def graph_us(calls) -> float:
    """GPU µs per call: the calls recorded in one CUDA graph, replayed (kv8_kernel.graph_us)."""
    return kv8_kernel.graph_us(lambda: [call() for call in calls], repeat=1, replays=20) / len(calls)


def no_scan(fn, *args):
    """``fn(*args)`` with split_kv_attention.VALID_SCAN 0: every key of each span read."""
    kept = kd.VALID_SCAN
    kd.VALID_SCAN = 0
    try:
        return fn(*args)
    finally:
        kd.VALID_SCAN = kept


MMA_VARIANTS = os.environ.get("MMA_VARIANTS") == "1"
MMA_PATCHES = {
    "lb2": [("__launch_bounds__(256, 1)", "__launch_bounds__(256, 2)")],  # two blocks an SM: 128 registers, spills
    "empty": [("    const int bh = blockIdx.x, split = blockIdx.y, splits = gridDim.y;\n",
               "    if (span > 0) return;\n    const int bh = blockIdx.x, split = blockIdx.y, splits = gridDim.y;\n")],
    "nomerge": [("    if (splits == 1) return;\n", "    return;\n")],  # partials only (wrong output)
    "nomarks": [("if (!has_valid) {", "if (true) {")],  # every key valid (wrong output)
}


# The splits of a head as one thread-block cluster (kv16_mma.decode's ``cluster``): each block leaves its
# partial in its own shared memory and, after one cluster barrier, the cluster's threads add the splits of
# each output element through distributed shared memory, in the shipped kernel's order (the same bits at
# the same splits), instead of storing partials, a fence, an atomic ticket and the last block's reloads.
CLUSTER_PATCHES = [
    ("template <int D, bool BF16, bool ROPE>\n__device__ void attend(",
     "__device__ __forceinline__ void cluster_sync() {\n"
     "    asm volatile(\"barrier.cluster.arrive.release.aligned;\" ::: \"memory\");\n"
     "    asm volatile(\"barrier.cluster.wait.acquire.aligned;\" ::: \"memory\");\n"
     "}\n"
     "__device__ __forceinline__ float ld_rank(const float* local, u32 rank) {  // that address in block `rank`\n"
     "    u32 a, r;\n"
     "    asm(\"{ .reg .u64 p; cvta.to.shared.u64 p, %1; cvt.u32.u64 %0, p; }\" : \"=r\"(a) : \"l\"(local));\n"
     "    asm volatile(\"mapa.shared::cluster.u32 %0, %1, %2;\" : \"=r\"(r) : \"r\"(a), \"r\"(rank));\n"
     "    float v;\n"
     "    asm volatile(\"ld.shared::cluster.f32 %0, [%1];\" : \"=f\"(v) : \"r\"(r) : \"memory\");\n"
     "    return v;\n"
     "}\n"
     "template <int D, bool BF16, bool ROPE>\n__device__ void attend("),
    ("    __shared__ int last_valid, is_last;\n",
     "    __shared__ int last_valid, is_last;\n    __shared__ float cl_o[8 * D], cl_m[8], cl_l[8];\n"),
    ("            part_o[at * D + d] = acc;\n"
     "            if (d == 0) { part_ml[2 * at] = top; part_ml[2 * at + 1] = total; }\n",
     "            cl_o[r * D + d] = acc;\n"
     "            if (d == 0) { cl_m[r] = top; cl_l[r] = total; }\n"),
    (kv16_mma.SOURCE[kv16_mma.SOURCE.index("    // The last block of this head to finish adds the splits"):
                     kv16_mma.SOURCE.index("    if (tid == 0) counters[bh] = 0;")]
     + "    if (tid == 0) counters[bh] = 0;  // ready for the next launch (and CUDA graph replay)\n",
     "    cluster_sync();\n"
     "    for (int e = split * WARPS * 32 + tid; e < groups * D; e += splits * WARPS * 32) {\n"
     "        const int r = e / D, d = e % D;\n"
     "        float top = NONE, total = 0.f, acc = 0.f;\n"
     "        for (int sp = 0; sp < splits; ++sp) top = fmaxf(top, ld_rank(&cl_m[r], sp));\n"
     "#pragma unroll 16\n"
     "        for (int sp = 0; sp < splits; ++sp) {\n"
     "            const float f = ex2(ld_rank(&cl_m[r], sp) - top);\n"
     "            total += f * ld_rank(&cl_l[r], sp);\n"
     "            acc += f * ld_rank(&cl_o[r * D + d], sp);\n"
     "        }\n"
     "        out[((long long)bh * groups + r) * D + d] = pack1<BF16>(acc / fmaxf(total, 1.0e-30f));\n"
     "    }\n"
     "    cluster_sync();  // no block leaves while another reads its shared memory\n"),
]
CLUSTERS = (8, 16)  # blocks a cluster (16: non-portable, allowed per kernel)


def mma_variant(*patches) -> dict:
    """kv16_mma's kernels built from its SOURCE with ``patches`` (old, new) applied."""

    source = kv16_mma.SOURCE
    for old, new in patches:
        assert old in source, old
        source = source.replace(old, new)
    return kv16_mma.load_kernels(torch.cuda.current_device(), source, "kv16_mma_variant.cu")


def measure(capacity: int, filled: int, g: torch.Generator, variants: bool) -> dict:
    shape = (1, KV_HEADS, capacity, HEAD_DIM)
    layers = []
    for _ in range(LAYERS):
        key = torch.randn(shape, generator=g, device="cuda", dtype=torch.bfloat16)
        value = torch.randn(shape, generator=g, device="cuda", dtype=torch.bfloat16)
        query = torch.randn(1, KV_HEADS, GROUPS, HEAD_DIM, generator=g, device="cuda", dtype=torch.bfloat16)
        layers.append((query, key, value))
    valid = (torch.arange(capacity) < filled).view(1, capacity).cuda()
    scale = HEAD_DIM ** -0.5
    paths = {
        "scan": lambda q, k, v: kd._attend(q, k, v, valid, capacity - 1, capacity, GROUPS, scale),
        "no_scan": lambda q, k, v: no_scan(kd._attend, q, k, v, valid, capacity - 1, capacity, GROUPS, scale),
        "mma": lambda q, k, v: kv16_mma.decode(q, k, v, valid, scale),
    }
    if MMA_VARIANTS:  # where the CUDA kernel's time goes: its SOURCE patched (MMA_PATCHES)
        if kv16_mma.MERGE != "ticket":  # the patches change (or replace) the ticket merge
            raise SystemExit("MMA_VARIANTS=1 needs HEADROOM_KV16_MERGE unset (the patches are of the ticket merge)")
        for name, patches in MMA_PATCHES.items():
            kernels = mma_variant(*patches)
            paths[f"mma_{name}"] = lambda q, k, v, kernels=kernels: kv16_mma.decode(q, k, v, valid, scale,
                                                                                    kernels=kernels)
        lb2 = mma_variant(*MMA_PATCHES["lb2"])
        paths["mma_lb2_waves2"] = lambda q, k, v: kv16_mma.decode(q, k, v, valid, scale, kernels=lb2, waves=2)
        clustered = mma_variant(*CLUSTER_PATCHES)
        for size in CLUSTERS:
            paths[f"mma_cluster{size}"] = lambda q, k, v, size=size: kv16_mma.decode(
                q, k, v, valid, scale, kernels=clustered, cluster=size)
    valid_bytes = 2 * filled * KV_HEADS * HEAD_DIM * 2
    row = {"capacity": capacity, "filled": filled, "splits": kd.splits_for(capacity, KV_HEADS)}
    q, k, v = layers[0]
    want = kd.reference(q, k, v, valid, scale)
    for name, path in paths.items():
        row[f"{name}_error"] = float((path(q, k, v).float() - want.float()).norm() / want.float().norm())
        us = graph_us([lambda q=q, k=k, v=v, path=path: path(q, k, v) for q, k, v in layers])
        row[f"{name}_us"] = us
        row[f"{name}_valid_tb_s"] = valid_bytes / us / 1e6
    row["ratio_no_scan_over_scan"] = row["no_scan_us"] / row["scan_us"]
    row["ratio_scan_over_mma"] = row["scan_us"] / row["mma_us"]
    if variants:
        row["variants"] = {}
        for name, options in VARIANTS.items():
            entry = {}
            if not options.get("empty") and options.get("merge", 2) > 0:
                got = variant(q, k, v, valid, scale, **options)
                entry["error"] = float((got.float() - want.float()).norm() / want.float().norm())
            entry["us"] = graph_us([lambda q=q, k=k, v=v, o=options: variant(q, k, v, valid, scale, **o)
                                    for q, k, v in layers])
            row["variants"][name] = entry
    del layers
    torch.cuda.empty_cache()
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=".")
    parser.add_argument("--variants", action="store_true", help="the experiment's kernel switches (VARIANTS)")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available() or kd.triton is None:
        print("needs CUDA and Triton")
        return 1
    g = torch.Generator(device="cuda").manual_seed(0)
    kd.self_check(torch.device("cuda"), torch.bfloat16, HEAD_DIM)  # the kernels built
    rows = [measure(capacity, filled, g, args.variants) for capacity, filled in CASES]
    print(f"{'capacity':>8} {'filled':>6} {'no scan µs':>10} {'scan µs':>8} {'ratio':>6} {'scan TB/s':>9} {'err':>8}"
          f" {'mma µs':>7} {'mma TB/s':>8} {'mma err':>8} {'scan/mma':>8}")
    for r in rows:
        print(f"{r['capacity']:>8} {r['filled']:>6} {r['no_scan_us']:>10.2f} {r['scan_us']:>8.2f} "
              f"{r['ratio_no_scan_over_scan']:>6.2f} {r['scan_valid_tb_s']:>9.2f} {r['scan_error']:>8.1e}"
              f" {r['mma_us']:>7.2f} {r['mma_valid_tb_s']:>8.2f} {r['mma_error']:>8.1e}"
              f" {r['ratio_scan_over_mma']:>8.2f}")
        names = [f"mma_{n}" for n in MMA_PATCHES] + ["mma_lb2_waves2"] + [f"mma_cluster{n}" for n in CLUSTERS]
        for name in names:
            if f"{name}_us" in r:
                print(f"    {name:<24} {r[name + '_us']:7.2f} µs  err {r[name + '_error']:.1e}")
        for name, v in r.get("variants", {}).items():
            print(f"    {name:<24} {v['us']:7.2f} µs  err {v.get('error', float('nan')):.1e}")
    write_result(args.out, "decode_attention_h200.json",
                 "python3 -m tests.benchmarks.decode_attention --out $OUT" + (" --variants" if args.variants else ""),
                 triton=kd.triton.__version__, layers=LAYERS, rows=rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
