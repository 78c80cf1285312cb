"""The decode step's residual add and RMSNorm as one hand-written kernel under programmatic dependent
launch, against Inductor's fused kernel, each between the NF4 GEMVs as the step runs them (issue 15).

On the H200's critical path (results/decode_anatomy_h200_step_buffers.json) a layer's two norms add
~2.1 µs each to the 8B step, 133 µs of ~3,010. The kernel (app/engine/local/add_rms_norm.py, used by
the step by default, HEADROOM_FUSED_NORM=0 off) reads the norm weight before ``griddepcontrol.wait`` and lets the
next launch go before its writes; Inductor's waits ahead of every load ("wait_first").

Timed: LAYERS links of [norm → the q/k/v group GEMV of its output (nf4_mma.launch_group, 6144 x 4096,
rotating over distinct weights)], the GEMV's first 4096 outputs the next link's delta, in one CUDA
graph, µs a link (median of 20 replays), with the norm as

- ``inductor``: compiled_decode._inductor of add_rms_norm.reference (the app's options: combo kernels,
  PDL with its waits first);
- ``nvrtc``: add_rms_norm's kernel through nvrtc.launch (PDL where the device has it);
- ``none``: the GEMV alone (the norm's output left as it was), a floor.

    python3 -m tests.benchmarks.add_rms_norm --out $OUT      # H200, ~1 min (Inductor's compile)

Writes add_rms_norm_h200.json to --out: µs a link for each, and the kernel's outputs against
add_rms_norm.reference (hidden bit for bit; normed: largest difference in bf16 steps).
"""

import argparse

import torch

import app  # noqa: F401  (offline, allocator settings before torch)
from app.engine.local import add_rms_norm, compiled_decode, nf4_mma, nvrtc
from app.engine.local import nf4_gemv as k
from tests.benchmarks.nf4_gemv import graph_time_us, make_layer
from tests.benchmarks.report import write_result

HIDDEN, QKV = 4096, (4096, 1024, 1024)
LAYERS, WEIGHT_COPIES = 32, 8


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=".")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    eps = 1e-5
    reference_norm, nvrtc_norm = add_rms_norm.reference, add_rms_norm._launch
    weight = (1 + 0.1 * torch.randn(HIDDEN, device="cuda")).to(torch.bfloat16)
    residual = torch.randn(HIDDEN, device="cuda").to(torch.bfloat16)
    delta = torch.randn(HIDDEN, device="cuda").to(torch.bfloat16)
    want_hidden, want_normed = reference_norm(residual, delta, weight, eps)
    hidden, normed = torch.empty_like(residual), torch.empty_like(residual)
    nvrtc_norm(residual, delta, weight, eps, hidden, normed)
    steps = (normed.view(torch.int16).int() - want_normed.view(torch.int16).int()).abs().max().item()
    check = {"hidden_bitwise": bool(torch.equal(hidden, want_hidden)), "normed_max_bf16_steps": int(steps)}
    print("check", check)

    groups = [[k.tensors_of(make_layer(n, HIDDEN, seed=100 * c + i)) for i, n in enumerate(QKV)]
              for c in range(WEIGHT_COPIES)]
    counters = torch.zeros(sum(-(-n // nf4_mma.ROWS_PER_WARP) for n in QKV), dtype=torch.int32, device="cuda")
    inductor = compiled_decode._inductor(reference_norm)
    state = {"residual": residual.clone(), "delta": delta.clone()}
    out = {"hidden": torch.empty_like(residual), "normed": torch.empty_like(residual)}

    def link(layer: int, how: str) -> None:
        if how == "inductor":
            out["hidden"], out["normed"] = inductor(state["residual"], state["delta"], weight, eps)
        elif how == "nvrtc":
            nvrtc_norm(state["residual"], state["delta"], weight, eps, out["hidden"], out["normed"])
        y = nf4_mma.launch_group(out["normed"], groups[layer % WEIGHT_COPIES], [None] * len(QKV), counters)
        if how != "none":
            state["residual"], state["delta"] = out["hidden"], y[:HIDDEN]

    for how in ("inductor", "nvrtc", "none"):  # Inductor compiles (and autotunes) outside the capture
        link(0, how)
    torch.cuda.synchronize()
    rows = {how: graph_time_us([lambda i=i, how=how: link(i, how) for i in range(LAYERS)])
            for how in ("inductor", "nvrtc", "none")}
    print(f"{'norm':<10} {'µs a link':>10} {'norm adds':>10}")
    for how, us in rows.items():
        print(f"{how:<10} {us:10.2f} {us - rows['none']:10.2f}")
    write_result(args.out, "add_rms_norm_h200.json", "python3 -m tests.benchmarks.add_rms_norm --out $OUT",
                 pdl=nvrtc.PDL, layers=LAYERS, check=check, us_per_link=rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
