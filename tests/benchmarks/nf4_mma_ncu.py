"""The NF4 mma GEMV as Nsight Compute's target (issue 15): three launches of each of gate/up (14336 x
4096) and down (4096 x 14336) on random bitsandbytes NF4 weights, the launch shapes install picks.

    ncu --target-processes all -k regex:nf4_mma --launch-skip 2 --launch-count 2 --set full \\
        -o $OUT/gemv python3 -m tests.benchmarks.nf4_mma_ncu
    ncu --import $OUT/gemv.ncu-rep --page details > $OUT/details.txt
    ncu --import $OUT/gemv.ncu-rep --page raw --csv > $OUT/raw.csv
    ncu --import $OUT/gemv.ncu-rep --page source --print-source sass --csv > $OUT/sass.csv

The H200 device machine has ncu at /usr/local/cuda/bin/ncu and lets users read the counters
(RmProfilingAdminOnly: 0). What it showed: results/ncu_nf4_mma_h200.json (the stall reasons a
warp's issued instruction waits on, and the instructions holding the most samples).
"""

import torch

import app  # noqa: F401  (offline, allocator settings before torch)
from app.engine.local import nf4_gemv, nf4_mma
from tests.benchmarks.nf4_gemv import make_layer


def main() -> int:
    for n, k in ((14336, 4096), (4096, 14336)):
        t = nf4_gemv.tensors_of(make_layer(n, k, 0))
        x = torch.randn(k, device="cuda").to(torch.bfloat16)
        for _ in range(3):
            nf4_mma.launch(x, t)
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
