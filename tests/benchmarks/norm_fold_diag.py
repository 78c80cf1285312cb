"""Which bits of test_pdl's folded chain (two NF4 GEMVs whose epilogues fold the RMSNorm, issue 15's
norm_fold) differ, and between which runs: plain and PDL launches, eager and CUDA-graph replays, and
the second writer alone against `norm_fold.tile_ssq` of its own output. Prints one line a run.

Why: on an H100 (2026-12-05) test_pdl's folded chain saw the low bits of ssq2[45] vary between eager
calls while h2 stayed bit-equal. On an H200 (2026-12-06 01:53 UTC, `python3 -m
tests.benchmarks.norm_fold_diag`) every run was bit-equal to the first and every tile_ssq matched: the
defect did not come back there (this code, run as a loose script before it was put here). Run it on
the card where it is seen. CUDA only; ~20 s.
"""
import torch

from app.engine.local import nf4_mma, norm_fold, nvrtc
from tests.engine.test_pdl import _layers


def _bits(t: torch.Tensor) -> torch.Tensor:
    """`t`'s bits as integers (bf16 as int16, float32 as int32): equal exactly when bit-equal."""
    return t.view(torch.int16 if t.dtype == torch.bfloat16 else torch.int32)


def main() -> None:
    norm_fold.FOLD = True

    layers = _layers(1024, 4)
    counters = torch.zeros(256, dtype=torch.int32, device="cuda")
    g = torch.Generator(device="cuda").manual_seed(2)
    x, residual, weight, weight2 = (torch.randn(1024, generator=g, device="cuda").to(torch.bfloat16) for _ in range(4))
    print("launch shapes", [nf4_mma.choose_launch(1024, 1024), nf4_mma.choose_launch(2048, 1024)])

    def chain(parts=False):
        h, normed, ssq = nf4_mma.launch(x, layers[0], fold_out=(residual, weight))
        y = nf4_mma.launch_group(normed, layers[1:3], [None, None], counters, fold_in=(ssq, 1e-5))[:1024]
        h2, normed2, ssq2 = nf4_mma.launch(y, layers[3], fold_out=(h, weight2))
        out4 = nf4_mma.launch_group(normed2, layers[1:3], [None, None], counters, fold_in=(ssq2, 1e-5))
        if parts:
            return dict(h=h, normed=normed, ssq=ssq, y=y, h2=h2, normed2=normed2, ssq2=ssq2, out4=out4)
        return torch.cat([h2, out4, ssq2.view(torch.bfloat16)])

    def parts_of(tensors):
        return {k: v.clone() for k, v in tensors.items()}

    runs = {}
    for label, pdl in (("plain", False), ("pdl", True), ("pdl2", True)):
        nvrtc.PDL = pdl
        chain()
        eager = [parts_of(chain(True)) for _ in range(3)]
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = chain(True)
        for _ in range(3):
            graph.replay()
        torch.cuda.synchronize()
        runs[label + "_graph"] = parts_of(out)
        for i, e in enumerate(eager):
            runs[f"{label}_eager{i}"] = e
    ref = runs["plain_eager0"]
    for label, r in runs.items():
        diffs = {k: int((_bits(r[k]) != _bits(ref[k])).sum()) for k in ref}
        bad = {k: v for k, v in diffs.items() if v}
        print(label, "differs from plain_eager0 in", bad or "nothing")
        for k in bad:
            idx = (r[k] != ref[k]).nonzero().flatten()[:4].tolist()
            print("   ", k, idx, [float(r[k][i]) for i in idx], [float(ref[k][i]) for i in idx])
    print("counters", int(counters.abs().sum()))

    # the second writer alone, on the chain's own inputs, 20 times; and against tile_ssq of its h
    nvrtc.PDL = False
    p = chain(True)
    torch.cuda.synchronize()
    ref_ssq = norm_fold.tile_ssq(p["h2"])
    print("chain ssq2 vs tile_ssq(h2): differing tiles", (p["ssq2"] != ref_ssq).nonzero().flatten().tolist())
    outs = []
    for _ in range(20):
        h2, n2, s2 = nf4_mma.launch(p["y"], layers[3], fold_out=(p["h"], weight2))
        outs.append(s2.clone())
    torch.cuda.synchronize()
    print("writer 2 alone: distinct ssq2", len({tuple(o.view(torch.int32).tolist()) for o in outs}),
          "vs tile_ssq(h2) differing tiles", (outs[0] != norm_fold.tile_ssq(h2)).nonzero().flatten().tolist())
    outs = []
    for _ in range(20):
        h2, n2, s2 = nf4_mma.launch(p["y"].clone(), layers[3], fold_out=(p["h"].clone(), weight2.clone()))
        outs.append(s2.clone())
    torch.cuda.synchronize()
    print("writer 2 on fresh copies: distinct ssq2", len({tuple(o.view(torch.int32).tolist()) for o in outs}),
          "vs tile_ssq differing", (outs[0] != norm_fold.tile_ssq(h2)).nonzero().flatten().tolist())
    print("tile 45 rows h2", p["h2"][720:736].float().tolist())
    print("ssq2[45] chain", p["ssq2"][45].item(), "tile_ssq", ref_ssq[45].item())


if __name__ == "__main__":
    main()
