"""The decode step's last link, the final norm then the bf16 lm_head and the float32 logits, timed as
the step's CUDA graph runs it (issue 15).

The app path's critical path on the H200 (results/decode_anatomy_h200_step_buffers.json) shows the
lm_head (cuBLAS's nvjet kernel, 128256 x 4096 bf16, ~4.3 TB/s) starting ~6 µs after the final norm
ends, where other kernels follow their predecessor within ~0.4 µs, and the ``.float()`` of its
logits as a kernel of its own (~3.9 µs and its gap). Here each way of computing the logits runs
after an RMSNorm of the hidden state, ITERATIONS times in one CUDA graph; per iteration:

- ``linear_float``: ``F.linear(h, W).float()``, what the model and the step do now;
- ``linear``: ``F.linear(h, W)`` alone (bf16 logits, no conversion);
- ``mm_fp32``: ``torch.mm(h, W.t(), out_dtype=torch.float32)`` (the logits not rounded to bf16);
- ``mv_float``: ``torch.mv(W, h).float()`` (cuBLAS's GEMV path);
- ``int8``: `int8_head.logits` over the weight's 8-bit copy (HEADROOM_LM_HEAD_INT8; float32 logits);
- ``norm``: the RMSNorm alone (subtracted from the others in ``minus_norm_us``).

    python3 -m tests.benchmarks.lm_head_step --out $OUT      # H200, ~15 s

Writes lm_head_step_h200.json to --out.

Measured on the H200, 2026-12-04 (results/lm_head_step_h200.json; µs after the norm's 4.4):
linear_float 252.5, linear 246.9, mm_fp32 247.9 (relative error to a float32 product 4.4e-6 against
1.7e-3), mv_float 252.5 (the same cuBLAS kernel). The step now takes ``mm_fp32``
(compiled_decode.LOGITS_FP32); the lm_head's late start stays, all three use cuBLAS's nvjet kernel.
On an H100, 2026-12-05 (results/lm_head_step_h100.json): mm_fp32 358.4, int8 170.4 µs after the norm
(3.0 TB/s of the 8-bit copy's bytes; relative error 8.7e-3 against the bf16 weight's float32 product).
"""

import argparse

import torch
import torch.nn.functional as F

import app  # noqa: F401  (offline, allocator settings before torch)
from app.engine.local import int8_head
from tests.benchmarks.nf4_gemv import graph_time_us
from tests.benchmarks.report import write_result

VOCAB, HIDDEN, ITERATIONS = 128256, 4096, 20


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=".")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    weight = (torch.randn(VOCAB, HIDDEN, device="cuda") * 0.02).to(torch.bfloat16)
    norm_weight = torch.ones(HIDDEN, device="cuda", dtype=torch.bfloat16)
    hidden = torch.randn(1, HIDDEN, device="cuda").to(torch.bfloat16)

    def norm():
        return F.rms_norm(hidden, (HIDDEN,), norm_weight, 1e-5)

    ways = {
        "norm": norm,
        "linear_float": lambda: F.linear(norm(), weight).float(),
        "linear": lambda: F.linear(norm(), weight),
        "mm_fp32": lambda: torch.mm(norm(), weight.t(), out_dtype=torch.float32),
        "mv_float": lambda: torch.mv(weight, norm()[0]).float(),
        "int8": lambda: int8_head.logits(head, norm()),  # HEADROOM_LM_HEAD_INT8's kernel, 1 byte a weight
    }
    head = int8_head.quantize(weight)
    want = F.linear(norm().float(), weight.float())
    rows = {}
    for name, fn in ways.items():
        try:
            us = graph_time_us([fn] * ITERATIONS, reps=10)  # µs a call, ITERATIONS calls a graph
            got = fn().float().reshape(want.shape) if name != "norm" else None
            rows[name] = {"us": us}
            if got is not None:
                rows[name]["rel_error"] = float((got - want).norm() / want.norm())
                rows[name]["tb_s"] = weight.numel() * (1 if name == "int8" else 2) / us / 1e6
        except Exception as exc:  # noqa: BLE001 - a way this torch lacks
            rows[name] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    base = rows["norm"].get("us", 0.0)
    print(f"{'way':<14} {'µs':>8} {'- norm':>8} {'TB/s':>6} {'rel err':>8}")
    for name, row in rows.items():
        if "us" in row:
            row["minus_norm_us"] = row["us"] - base
            print(f"{name:<14} {row['us']:8.2f} {row['minus_norm_us']:8.2f} {row.get('tb_s', 0):6.2f}"
                  f" {row.get('rel_error', 0):8.1e}")
        else:
            print(f"{name:<14} {row['error']}")
    write_result(args.out, "lm_head_step_h200.json", "python3 -m tests.benchmarks.lm_head_step --out $OUT",
                 iterations=ITERATIONS, rows=rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
