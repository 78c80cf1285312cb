"""decode_anatomy (the app path: `TurnRunner`, default settings, 8B NF4 shape) with a kernel's CUDA
source patched before it is compiled: an A/B of a kernel change on the path the user takes, without a
switch in the app for it (issue 15).

    python3 -m tests.benchmarks.anatomy_patched PATCH [decode_anatomy's arguments]
    python3 -m tests.benchmarks.anatomy_patched late_release --kv8-depths '' --depths 1024 --critical-path --out $OUT/x

PATCH is one of PATCHES (``base``: none). Each is (module, [(text, replacement), ...]) on that module's
SOURCE; a text that is not found exactly once stops the run. A patched kernel still meets its module's
self-check at load (a wrong result falls back to the slower path, which the step then shows).

Measured on the H200 (2026-12-04, second session; tests/benchmarks/results/
decode_experiments_h200_patched.json), step ms at 1k / 4k, each against ``base`` in the same call;
none adopted:

- ``one_trip_merge``: kv16_mma's last block of a head loads its splits' output rows (cp.async into the
  free sm_o) with their maxima and sums, one trip instead of two, and orders the tickets with
  ``fence.acq_rel.gpu``: 2.973 / 3.056 against 2.958 / 3.033 (with ``__threadfence()`` kept: 2.976 /
  3.053). The attention kernel added 380.6 against ~362-373 µs a step.
- ``late_release``: the attention kernel lets the o_proj GEMV launch only when it ends (no
  ``griddepcontrol.launch_dependents`` after its wait): attention 351.0 against 362.4 µs a step (the GEMV's
  early blocks cost it ~0.35 µs a layer), but o_proj 251.7 against 193.7 (its weights no longer in
  flight under the attention): 2.985 / 2.981 against 2.948 / 2.945 at 1k, 3.062 against 3.021 at 4k.
- ``prefetch2``: every NF4 GEMV warp has its first two super-tiles in flight before
  ``griddepcontrol.wait``, the loop loading step i + 2 after step i instead of i + 1 before it (107
  registers against 116): every GEMV slower, gate/up 39.9 against 36.0 µs, down 21.6 against 18.7;
  the step 3.197 / 3.259 against 2.951 / 3.024.

Diagnostics (``diag_*``: something else computed, self-checks skipped; same file, call 4, 1k): without
the split merge (each head's split 0 alone) the step takes 2.843 against 2.960 ms, 351.8 against 339.0
tok/s, the attention kernel 8.36 against 11.69 µs a layer: the merge (a fence, the ticket, the last
block's two reads) is ~3.3 µs a layer, ~105 µs a step, more than the 1k bar's remaining ~90. With the
attention reduced to its launch and zeros, 2.657 ms: attention as a whole costs ~300 µs a step at 1k.

Against that ~3.3 µs, not yet measured (no device time left, then none lent): two other merges are now
kv16_mma.MERGE values ("launch": a merge kernel of its own under PDL; "poll": split 0 adds the splits
once their flags are set), to A/B with HEADROOM_KV16_MERGE beside llama.cpp in one call
(llama_cpp_same_run_h200.sh); and three patches here:

- ``kv_prefetch``: not the merge, the trips before it. The span's marks, the position, cos and sin read
  before griddepcontrol.wait (they are earlier kernels'), and every key and value row a warp's steps
  read prefetched into L2 (no registers: 168 against 167) while the q/k/v GEMV finishes; after the
  wait, the query's trip, then steps whose loads hit L2 (sm_90 SASS: the 98 loads, 24 prefetches and
  the marks' barriers above ACQBULK). Loading the first step into registers with the query instead
  took 251 registers, the whole register file with 256 threads (no room for o_proj's early blocks).

- ``merge_cluster``: a head's splits as one thread-block cluster that merges by pushing each block's
  partial into the shared memory of the block that adds that share of the output (no global partials,
  ticket or reload: one cluster barrier), 8 splits of 256 keys at 2,048 slots; checked against the
  shipped kernels on the GPU first (`_merge_cluster_check`).
- ``splits_256``: the same 8 splits with the ticket, merge_cluster's control. At the chat's 1k fill
  (~1,565-1,821 of 2,048 slots on its second turn) a warp then takes 2 steps of 16 keys instead of 1,
  ~1.2-2.4 µs a layer more by decode_attention.py's standalone figures (8.42 / 10.83 µs at 1 / 2 steps
  a warp), which the cluster's merge has to win back: a portable cluster holds 8 blocks, 1,024 keys a
  round (the 16-block cluster took 13.6 µs there, against 8.19).

In one call (~9 min, the last arms' second round cut by LIMIT_S; an arm NAME=VALUE runs the shipped
kernels with that switch set):

    A=HEADROOM_KV16_MERGE
    bash tests/benchmarks/anatomy_patched_h200.sh $A=launch $A=poll kv_prefetch merge_cluster splits_256
"""

from __future__ import annotations

import importlib
import sys


def _copy_async() -> str:
    """nf4_mma's cp.async helpers (copy_async, copies_done), for a patch of another kernel's SOURCE."""
    from app.engine.local import nf4_mma

    source = nf4_mma.SOURCE
    first = source.index("__device__ __forceinline__ void copy_async(")
    last = source.index("\n", source.index("__device__ __forceinline__ void copies_done()")) + 1
    return source[first:last]


def _prologue() -> str:
    """kv16_mma's attention prologue as shipped: from the PDL wait to the end of the steps' loop."""
    from app.engine.local import kv16_mma

    source = kv16_mma.SOURCE
    first = source.index("    // Programmatic dependent launch (nvrtc.PDL): everything read below")
    last = source.index("    l_run += __shfl_xor_sync(0xffffffffu, l_run, 1);", first)
    return source[first:last]


_PREFETCH_STEP = r"""// kv_prefetch: the rows load_step reads, into L2 (a hint: no registers, nothing waited for)
__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" :: "l"(p)); }
template <int D>
__device__ __forceinline__ void prefetch_step(const u16* kh, const u16* vh, int sks, int svs, int base, int end,
                                              int g, int c) {
    const int last = end - 1;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const u16* row = kh + (long long)min(base + g + 8 * i, last) * sks + c * (D / 4);
#pragma unroll
        for (int j = 0; j < D / 32; j += 2) prefetch_l2(row + 8 * j);  // 32 bytes a sector
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int key = base + 2 * c + (i & 1) + 8 * (i >> 1);
        prefetch_l2(vh + (long long)min(key, last) * svs + g * (D / 8));
    }
}
"""


def _shipped(first: str, last: str) -> str:
    """The lines of kv16_mma's SOURCE from the one starting with ``first`` to the one holding ``last``
    (each found once): a patch reuses the shipped text instead of a copy of it."""
    from app.engine.local import kv16_mma

    source = kv16_mma.SOURCE
    assert source.count(first) == 1, first
    begin = source.index(first)
    end = source.index("\n", source.index(last, begin)) + 1
    return source[begin:end]


def _kv_prefetch_prologue() -> str:
    """kv_prefetch's prologue: the shipped one's pieces in another order (the PATCHES comment)."""
    return ("    // (kv_prefetch) Before the wait: the position, cos and sin, the span's marks (hence `end`), and\n"
            "    // an L2 prefetch of every key and value row this warp's steps read.\n"
            + _shipped("    int slot = -1;", "sf[j] = ld_nc(sin_d + c * (D / 4) + 8 * j);")
            + r"""        }
        if (tid < D / 2) {
            cx = to_f<BF16>(cos_d[tid]), cy = to_f<BF16>(cos_d[tid + D / 2]);
            sx = to_f<BF16>(sin_d[tid]), sy = to_f<BF16>(sin_d[tid + D / 2]);
        }
    }
"""
            + _shipped("    const bool own = ROPE && slot >= start", "mine = max(mine, __shfl_xor_sync(")
            + _shipped("    if (lane == 0) atomicMax(&last_valid, mine);", "const int steps = (end - start + 15) / 16;")
            + "    for (int s = warp; s < steps; s += WARPS)"
              " prefetch_step<D>(kh, vh, sks, svs, start + 16 * s, end, g, c);\n"
            + _shipped("#if __CUDA_ARCH__ >= 900\n    asm volatile(\"griddepcontrol.wait;\"", "#endif")
            + _shipped("    uint4 qf[D / 32];\n", "qf[j] = ld_nc(q_row + 8 * j);")
            + r"""    if (ROPE) {
        if (tid < D / 2) {
            const u16* kn = k_new + (long long)bh * D;
            kx = to_f<BF16>(kn[tid]), ky = to_f<BF16>(kn[tid + D / 2]);
        } else if (tid < D / 2 + D) {
            v_mine = v_new[(long long)bh * D + tid - D / 2];
        }
"""
            + _shipped("        rotate_row<D, BF16>(qf, cf, sf, c);", "sm_v[tid - D / 2] = to_f<BF16>(v_mine);")
            + "        }\n        __syncthreads();  // sm_k, sm_v before warp 0 weighs this token\n    }\n"
            + _shipped("    if (g >= groups) {", "step<D, BF16>(cur, qf, marks, start + 16 * s,") + "    }\n")


DIAGNOSTIC = "diag_"  # a patch that computes something else: the kernels' self-checks are skipped for it

def _splits_256() -> None:
    from app.engine.local import kv16_mma

    kv16_mma.MIN_SPLIT_KEYS = 256


CLUSTER_SLOTS = 2048  # merge_cluster: the most slots whose splits run as one cluster (past it, 8 splits
# would give each warp 6 steps at the 4k chat's fill, against 3 with 16 splits)


def _merge_cluster() -> None:
    """kv16_mma as ``splits_256``, and a head's splits launched as one thread-block cluster of at most
    nvrtc.PORTABLE_CLUSTER (the patch's rx buffers hold 8) up to CLUSTER_SLOTS slots: Llama-3-8B on the
    H200 takes 8 clusters of 8 splits of 256 keys at 2,048 slots (the chat at 1k; as splits_256), the
    self-checks' 2 heads over 300 keys 2 splits; beyond CLUSTER_SLOTS the ticket (16 splits of 384 at
    6,144, the chat at 4k)."""
    from app.engine.local import kv16_mma, nvrtc

    kv16_mma.MIN_SPLIT_KEYS = 256
    kv16_mma.MERGE = "ticket"  # beyond a cluster's reach (the cluster merge leaves no partials to launch on)
    launch = kv16_mma._launch

    def clustered(query, key, value, valid, scale, rope, kernels=None, waves=kv16_mma.SPLIT_WAVES, cluster=0):
        if not cluster:
            sms = kv16_mma.torch.cuda.get_device_properties(query.device).multi_processor_count
            splits, _ = kv16_mma.launch_split(key.shape[2], query.shape[0] * query.shape[1], sms, waves)
            fits = splits > 1 and key.shape[2] <= CLUSTER_SLOTS
            fits = fits and kv16_mma.torch.cuda.get_device_capability(query.device) >= (9, 0)  # clusters: sm_90+
            cluster = min(splits, nvrtc.PORTABLE_CLUSTER) if fits else 0
        return launch(query, key, value, valid, scale, rope, kernels, waves, cluster)

    kv16_mma._launch = clustered


CLUSTER_CASES = ([(300, n) for n in range(2, 9)], [(300, 3), (300, 8)])
"""merge_cluster's check: (keys, splits a cluster) of the plain and the RoPE kernel: 2-8 splits over 300
keys (splits past the keys empty, output shares that straddle rows)."""
SPAN_CASES = ([(8, 0), (300, 0), (2048, 0), (5000, 0)], [(300, 0), (2048, 0)])
"""kv_prefetch's check: spans of 1, 3, 16 and 40 splits (2 heads on 132 SMs), the kernel's own split."""


def _same_bits_check(shipped_source: str, device: str = "cuda", cases=CLUSTER_CASES, name="merge_cluster") -> str:
    """The patched kernels against the shipped ones on the GPU, launched alike (as a cluster the shipped
    kernels still take the ticket): each (keys, cluster) of ``cases`` for the plain kernel, masked and not,
    and for decode_rope's (this token's key and value written, at slot keys - 37), 1, 4 and 8 query heads a
    KV head, head_dim 64 and 128, bf16 and fp16; every mask made launches before the kernel reads it. ""
    when every output and cache agrees bit for bit (where not, within 1e-2 relative L2, printed), else the
    first that does not. The self-checks at load are looser (2e-2) and try fewer shapes."""
    import torch

    from app.engine.local import kv16_mma

    if device == "cuda" and not torch.cuda.is_available():
        return "no CUDA device"
    index = torch.cuda.current_device() if device == "cuda" else 0
    shipped = kv16_mma.load_kernels(index, shipped_source, "kv16_shipped.cu")
    patched = kv16_mma._kernels(index)
    g = torch.Generator(device=device).manual_seed(0)
    inexact = []
    plain, rope = cases
    most = max(keys for keys, _ in plain + rope)

    def differs(label: str, want: torch.Tensor, got: torch.Tensor) -> str:
        if torch.equal(want, got):
            return ""
        error = float((got.float() - want.float()).norm() / want.float().norm().clamp_min(1e-30))
        inexact.append(f"{label} {error:.1e}")
        return f"{label}: relative error {error:.2g}" if error > 1e-2 else ""  # a bf16 step, not a wrong share

    for dtype in (torch.bfloat16, torch.float16):
        for d in kv16_mma.HEAD_DIMS:
            for groups in (1, 4, 8):
                query = torch.randn(1, 2, groups, d, generator=g, device=device).to(dtype)
                key, value = (torch.randn(1, 2, most, d, generator=g, device=device).to(dtype) for _ in range(2))
                valid = (torch.rand(1, most, generator=g, device=device) > 0.2)
                for keys, cluster in plain:
                    for mask in (None, valid[:, :keys]):
                        label = f"{str(dtype)[6:]} d{d} g{groups} {keys} keys {cluster} splits" + (
                            "" if mask is None else " masked")
                        runs = [kv16_mma.decode(query, key[:, :, :keys], value[:, :, :keys], mask, d**-0.5, kernels=k,
                                                cluster=cluster) for k in (shipped, patched)]
                        problem = differs(label, *runs)
                        if problem:
                            return problem
                new = [torch.randn(1, 2, 1, d, generator=g, device=device).to(dtype) for _ in range(2)]
                cos, sin = (torch.rand(d, generator=g, device=device).to(dtype) for _ in range(2))
                for keys, cluster in rope:
                    position = torch.tensor(keys - 37, dtype=torch.int64, device=device)
                    runs, caches = [], []
                    for kernels in (shipped, patched):
                        cache = (key[:, :, :keys].clone(), value[:, :, :keys].clone())
                        token = (*new, cos, sin, position)
                        runs.append(kv16_mma._launch(query, *cache, valid[:, :keys], d**-0.5, token, kernels,
                                                     kv16_mma.SPLIT_WAVES, cluster))
                        caches.append(torch.cat(cache))
                    label = f"rope {str(dtype)[6:]} d{d} g{groups} {keys} keys {cluster} splits"
                    problem = differs(label, *runs) or differs(label + " cache", *caches)
                    if problem:
                        return problem
    if inexact:
        print(f"{name} check: not bit for bit in " + ", ".join(inexact[:4]))
    return ""


def _merge_cluster_check(shipped_source: str, device: str = "cuda") -> str:
    return _same_bits_check(shipped_source, device, CLUSTER_CASES, "merge_cluster")


def _kv_prefetch_check(shipped_source: str, device: str = "cuda") -> str:
    return _same_bits_check(shipped_source, device, SPAN_CASES, "kv_prefetch")


CHECKS = {"merge_cluster": _merge_cluster_check, "kv_prefetch": _kv_prefetch_check}
"""A patch's own check on the GPU before the anatomy runs: "" or why not (the run stops)."""

HOOKS = {"splits_256": _splits_256, "merge_cluster": _merge_cluster}
"""Python-side changes a patch needs, run before the first launch."""

PATCHES = {
    "base": ("app.engine.local.kv16_mma", []),
    "one_trip_merge": ("app.engine.local.kv16_mma", [
        ("template <bool BF16> __device__ __forceinline__ u32 pack2(",
         _copy_async() + "template <bool BF16> __device__ __forceinline__ u32 pack2("),
        ("        __threadfence();\n        is_last = atomicAdd(counters + bh, 1) == splits - 1;\n"
         "        if (is_last) __threadfence();\n",
         '        asm volatile("fence.acq_rel.gpu;" ::: "memory");\n'
         "        is_last = atomicAdd(counters + bh, 1) == splits - 1;\n"
         '        if (is_last) asm volatile("fence.acq_rel.gpu;" ::: "memory");\n'),
        ("    for (int e = tid; e < splits * groups; e += WARPS * 32) {\n",
         "    const int parts = splits * groups;\n    float* rows_s = &sm_o[0][0][0];\n"
         "    const bool staged = parts <= WARPS * 8;  // the splits' rows fit in sm_o (free now)\n"
         "    if (staged)\n        for (int e = tid; e < parts * (D / 4); e += WARPS * 32)\n"
         "            copy_async(rows_s + 4 * e, part_o + first_part * D + 4 * e);\n"
         "    for (int e = tid; e < splits * groups; e += WARPS * 32) {\n"),
        ("        sm_wl[e] = ld_cg(part_ml + 2 * (first_part + e) + 1);\n    }\n    __syncthreads();\n",
         "        sm_wl[e] = ld_cg(part_ml + 2 * (first_part + e) + 1);\n    }\n    if (staged) copies_done();\n"
         "    __syncthreads();\n"),
        ("            acc += sm_w[sp * groups + r] * ld_cg(part_o + (first_part + sp * groups + r) * D + d);\n",
         "            acc += sm_w[sp * groups + r] * (staged ? rows_s[(sp * groups + r) * D + d]\n"
         "                : ld_cg(part_o + (first_part + sp * groups + r) * D + d));\n"),
    ]),
    "late_release": ("app.engine.local.kv16_mma", [
        ('    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");\n#endif\n\n    // In flight',
         "#endif\n\n    // In flight"),
    ]),
    # Diagnostics: wrong outputs, the kernels' self-checks skipped (DIAGNOSTIC prefix); what a part of the
    # attention kernel adds to the step where the app runs it.
    "diag_attention_no_merge": ("app.engine.local.kv16_mma", [  # each head's split 0 alone is its output
        ("        if (splits == 1) {\n            out[", "        if (split == 0) {\n            out["),
        ("    if (splits == 1) return;\n", "    return;\n"),
    ]),
    "diag_attention_no_steps": ("app.engine.local.kv16_mma", [  # no key or value read (but this token's)
        ("    for (int s = warp; s < steps; s += WARPS) {", "    for (int s = warp; s < 0; s += WARPS) {"),
    ]),
    "diag_attention_no_marks": ("app.engine.local.kv16_mma", [  # every key valid, no mark read
        ("        if (!has_valid) {", "        if (true) {"),
    ]),
    "diag_attention_zeros": ("app.engine.local.kv16_mma", [  # the launch, its wait, zeros written
        ("#endif\n\n    // In flight together",
         "#endif\n    if (span > 0) {\n        if (split == 0)\n"
         "            for (int e = threadIdx.x; e < groups * D; e += WARPS * 32)\n"
         "                out[(long long)bh * groups * D + e] = 0;\n"
         "        return;\n    }\n\n    // In flight together"),
    ]),
    # Fewer, longer splits: at 2,048 slots 8 of 256 keys a head (each warp two steps), 64 blocks, the
    # merge over 8 partials, half the SMs free for o_proj's early blocks (4,096 slots and more: as base).
    "splits_256": ("app.engine.local.kv16_mma", []),
    # The splits of a head as one thread-block cluster (`_merge_cluster`), merged by pushing: each block
    # stores its partial rows straight into the shared memory of the block that adds that part of the
    # output (st.shared::cluster, no round trip), one cluster barrier, then every block adds its share
    # from its own shared memory in the ticket merge's order. No global partials, ticket or reload (the
    # barrier's release arrive is still a MEMBAR.ALL.GPU in each thread's SASS).
    # (CLUSTER_PATCHES in decode_attention.py, measured slower, pulled every split's values through
    # dependent distributed-shared-memory loads instead, and took two cluster barriers.)
    "merge_cluster": ("app.engine.local.kv16_mma", [
        ("template <int D, bool BF16, bool ROPE>\n__device__ void attend(",
         "__device__ __forceinline__ void st_rank(float* local, u32 rank, float v) {  // into block `rank`'s copy\n"
         "#if __CUDA_ARCH__ >= 900\n"
         "    u32 a, r;\n"
         '    asm("{ .reg .u64 p; cvta.to.shared.u64 p, %1; cvt.u32.u64 %0, p; }" : "=r"(a) : "l"(local));\n'
         '    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));\n'
         '    asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(r), "f"(v) : "memory");\n'
         "#endif\n"
         "}\n"
         "template <int D, bool BF16, bool ROPE>\n__device__ void attend("),
        ("    __shared__ float sm_w[MAX_SPLITS * 8];\n    __shared__ float sm_wl[MAX_SPLITS * 8], sm_total[8];\n",
         "    // the ticket merge's weights, or in a cluster the maxima, sums and output rows pushed to this block\n"
         "    __shared__ __align__(16) float sm_mg[2 * MAX_SPLITS * 8 > 8 * D + 136 ? 2 * MAX_SPLITS * 8\n"
         "                                         : 8 * D + 136];\n"
         "    __shared__ float sm_total[8];\n"
         "    float* const sm_w = sm_mg;\n    float* const sm_wl = sm_mg + MAX_SPLITS * 8;\n"
         "    float* const rx_m = sm_mg;  // [split][row], at most 8 x 8\n"
         "    float* const rx_l = sm_mg + 64;\n"
         "    float* const rx_o = sm_mg + 128;  // [split][chunk]: this block's share of the output elements\n"),
        ('    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");\n#endif\n\n    // In flight together',
         '    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");\n#endif\n'
         "#if __CUDA_ARCH__ >= 900\n"
         "    u32 ranks;\n"
         '    asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(ranks));\n'
         "    // the head's splits are one cluster (rank = split); past 8 the rx rows would overlap: the ticket\n"
         "    const bool clustered = ranks > 1 && ranks == splits && splits <= 8;\n"
         "    // arrived here, waited for before the first push: no store into a block that has not started\n"
         '    if (clustered) asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");\n'
         "#else\n"
         "    const bool clustered = false;\n"
         "#endif\n"
         "    const int chunk = (groups * D + splits - 1) / splits;  // output elements a block of a cluster adds\n"
         "\n    // In flight together"),
        ("    __syncthreads();\n    for (int e = tid; e < groups * D; e += WARPS * 32) {\n"
         "        const int r = e / D, d = e % D;\n        float top = NONE;\n",
         "    __syncthreads();\n"
         "#if __CUDA_ARCH__ >= 900\n"
         '    if (clustered) asm volatile("barrier.cluster.wait.aligned;" ::: "memory");\n'
         "#endif\n"
         "    for (int e = tid; e < groups * D; e += WARPS * 32) {\n"
         "        const int r = e / D, d = e % D;\n        float top = NONE;\n"),
        ("        } else {\n            const long long at = ((long long)bh * splits + split) * groups + r;\n",
         "        } else if (clustered) {  // to the block that adds element e, and this row's max and sum to all\n"
         "            const int owner = e / chunk;\n"
         "            st_rank(&rx_o[split * chunk + e - owner * chunk], owner, acc);\n"
         "            if (d == 0)\n"
         "                for (int to = 0; to < splits; ++to) {\n"
         "                    st_rank(&rx_m[split * 8 + r], to, top);\n"
         "                    st_rank(&rx_l[split * 8 + r], to, total);\n"
         "                }\n"
         "        } else {\n            const long long at = ((long long)bh * splits + split) * groups + r;\n"),
        ("    if (splits == 1) return;\n",
         "    if (splits == 1) return;\n"
         "#if __CUDA_ARCH__ >= 900\n"
         "    if (clustered) {  // every push seen, then this block's share added as the ticket merge adds it\n"
         '        asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");\n'
         '        asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");\n'
         "        const int first = split * chunk, last = min(first + chunk, groups * D);\n"
         "        for (int e = first + tid; e < last; e += WARPS * 32) {\n"
         "            const int r = e / D, d = e % D;\n"
         "            float top = NONE, total = 0.f, acc = 0.f;\n"
         "            for (int sp = 0; sp < splits; ++sp) top = fmaxf(top, rx_m[sp * 8 + r]);\n"
         "            for (int sp = 0; sp < splits; ++sp) {\n"
         "                const float f = ex2(rx_m[sp * 8 + r] - top);\n"
         "                total += f * rx_l[sp * 8 + r];\n"
         "                acc += f * rx_o[sp * chunk + e - first];\n"
         "            }\n"
         "            out[((long long)bh * groups + r) * D + d] = pack1<BF16>(acc / fmaxf(total, 1.0e-30f));\n"
         "        }\n"
         "        return;\n"
         "    }\n"
         "#endif\n"),
    ]),
    # The span's marks, the position, cos and sin read before griddepcontrol.wait (earlier kernels' data:
    # the mask and the fill counter from the step's start, cos and sin from its rotary kernel), and every
    # key and value row the warp's steps will read prefetched into L2 (no registers), all while the q/k/v
    # GEMV before finishes: after the wait the query's trip, then steps whose loads hit L2 instead of
    # HBM (at 4k a warp takes 3 steps, each a trip). Loading the first step into registers with the query
    # instead took 251 registers (the whole register file with 256 threads: no room left for o_proj's
    # early blocks), so not that. Safe where the mask and the position are not written by the launch just
    # before (the app's step; the self-checks too): shipping it needs that in decode's and decode_rope's
    # contract, and test_replays_in_a_cuda_graph_as_the_cache_fills's eager call (its mask written just
    # before) changed. `_kv_prefetch_check` compares it with the shipped kernels bit for bit first.
    "kv_prefetch": ("app.engine.local.kv16_mma", [
        ("template <int D>\n__device__ __forceinline__ void load_step(", _PREFETCH_STEP
         + "template <int D>\n__device__ __forceinline__ void load_step("),
        (_prologue(), _kv_prefetch_prologue()),
    ]),
    "prefetch2": ("app.engine.local.nf4_mma", [
        ("    Loads cur = load<NESTED>(r, absmax2, st0), nxt;\n",
         "    Loads cur = load<NESTED>(r, absmax2, st0);\n"
         "    Loads nxt = iters > 1 ? load<NESTED>(r, absmax2, st0 + 1) : cur;\n"),
        ("__syncthreads_or(loaded(cur, off, cb) == 0x9e3779b9u);",
         "__syncthreads_or((loaded(cur, off, cb) ^ loaded(nxt, off, cb)) == 0x9e3779b9u);"),
        ("        if (i + 1 < iters) nxt = load<NESTED>(r, absmax2, st0 + i + 1);\n"
         "        step<NESTED>(d, cur, x_s + 32 * (warp * iters + i) + 8 * c, code2_s, off, cb, kc, off_b);\n"
         "        cur = nxt;\n",
         "        step<NESTED>(d, cur, x_s + 32 * (warp * iters + i) + 8 * c, code2_s, off, cb, kc, off_b);\n"
         "        cur = nxt;\n        if (i + 2 < iters) nxt = load<NESTED>(r, absmax2, st0 + i + 2);\n"),
    ]),
}


def patched_source(name: str) -> tuple[object, str]:
    """(the module PATCH ``name`` changes, its SOURCE with the patch applied). Raises KeyError for an
    unknown name, ValueError when a patch's text is not in SOURCE exactly once (the kernel moved on)."""
    module_name, patches = PATCHES[name]
    module = importlib.import_module(module_name)
    source = module.SOURCE
    for text, replacement in patches:
        if source.count(text) != 1:
            raise ValueError(f"{name}: {text[:60]!r} is in {module_name}.SOURCE {source.count(text)} times")
        source = source.replace(text, replacement)
    return module, source


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in PATCHES:
        print(f"usage: anatomy_patched {{{','.join(PATCHES)}}} [decode_anatomy's arguments]", file=sys.stderr)
        return 2
    module, source = patched_source(argv[0])
    shipped, module.SOURCE = module.SOURCE, source  # before the first launch compiles it (cached per process)
    if argv[0] in HOOKS:
        HOOKS[argv[0]]()
    if argv[0] in CHECKS:
        problem = CHECKS[argv[0]](shipped)
        print(f"{argv[0]} check: {problem or 'agrees with the shipped kernels'}")
        if problem:
            return 1
    if argv[0].startswith(DIAGNOSTIC):
        from app.engine.local import rope_attention, split_kv_attention

        split_kv_attention.mma_self_check = lambda *args: 0.0
        rope_attention.self_check = lambda *args: ""
    from tests.benchmarks import decode_anatomy

    return decode_anatomy.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
