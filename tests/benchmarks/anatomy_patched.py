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
"""

from __future__ import annotations

import importlib
import sys

_COPY_ASYNC = """// 16 bytes global (L2) → shared without a register; a thread issues its copies, then waits once.
__device__ __forceinline__ void copy_async(void* shared, const void* global) {
    u32 s;
    asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(s) : "l"(shared));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(s), "l"(global) : "memory");
}
__device__ __forceinline__ void copies_done() { asm volatile("cp.async.wait_all;" ::: "memory"); }
"""

PATCHES = {
    "base": ("app.engine.local.kv16_mma", []),
    "one_trip_merge": ("app.engine.local.kv16_mma", [
        ("template <bool BF16> __device__ __forceinline__ u32 pack2(",
         _COPY_ASYNC + "template <bool BF16> __device__ __forceinline__ u32 pack2("),
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
    module.SOURCE = source  # before the first launch compiles it (the kernels are cached per process)
    from tests.benchmarks import decode_anatomy

    return decode_anatomy.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
