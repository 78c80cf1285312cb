"""The compiled decode step with and without programmatic dependent launch, bit for bit (issue 15).

PDL (nvrtc.PDL: the NF4 GEMV and attention kernels launched with cuLaunchKernelEx's programmatic
stream serialization, Inductor's kernels with ``triton.enable_pdl``) changes when kernels start,
never what they compute: a kernel that read its predecessor's output before that predecessor was done
would show here as logits that differ from the run without PDL, or from one PDL run to the next. The
8B NF4 shape (random init, speed.build_model), the app's compiled step (`compiled_decode.warm_up`,
one CUDA graph per cache), 64 teacher-forced tokens after a 64-token prompt, three times: without
PDL twice, with PDL for Headroom's kernels only, with Inductor's own rule (compiled_decode.INDUCTOR_PDL
"as_is") and twice with the shipped rule ("wait_first"), a fresh compile each; and each one's step
time. Inductor is asked to run deterministic (``config.deterministic``: no reduction config chosen by
timing, which otherwise can change a compile's numerics; --autotune leaves the timing on). On torch 2.11
the setting reads back false (``inductor_deterministic`` in the output), and a compile that chose other
configs then differs from "plain" with or without PDL: compare it with "plain_again" before blaming PDL
(results/pdl_logits_h200.json, runs 1-2). Prints one JSON line; exit status 1 if a shipped mode differs
from the plain launch.

    python3 -m tests.benchmarks.pdl_logits [--model-dir /tmp/llama8b]
"""
import argparse
import json
from pathlib import Path

import torch

import app  # noqa: F401
from app.engine.loading.loader import load_model
from app.engine.local import compiled_decode, nvrtc
from app.engine.local.compiled_decode import warm_up
from app.engine.local.generation import cache_kwarg
from app.engine.local.static_cache import new_static_cache
from tests.benchmarks.speed import build_model


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model-dir", default="/tmp/llama8b")
    ap.add_argument("--autotune", action="store_true",
                    help="let Inductor pick reduction configs by timing (numerics may then differ per compile)")
    args = ap.parse_args()
    torch._inductor.config.deterministic = not args.autotune
    folder = Path(args.model_dir)
    if not (folder / "config.json").exists():
        build_model(folder, False)
    loaded = load_model(folder)
    model = loaded.model
    g = torch.Generator().manual_seed(0)
    prompt, steps = 64, 64
    ids = torch.randint(1000, 120000, (1, prompt + steps), generator=g).cuda()
    kw = cache_kwarg(type(model))

    def run(pdl: bool, inductor: str) -> dict:
        nvrtc.PDL, compiled_decode.INDUCTOR_PDL = pdl, inductor
        dec = warm_up(loaded, (2048,))
        cache = new_static_cache(model.config, 2048)
        out = []
        with torch.inference_mode():
            model(input_ids=ids[:, :prompt], use_cache=True, logits_to_keep=1, **{kw: cache})
            for i in range(prompt, prompt + steps):
                out.append(dec.step(ids[:, i:i + 1].contiguous(), cache).clone())
            token = ids[:, -1:].contiguous()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(100):  # the same position again: a step's time, not its text
                dec.step(token, cache)
            end.record()
            end.synchronize()
        return {"logits": torch.stack(out), "step_ms": start.elapsed_time(end) / 100}

    modes = [("plain", False, "off"), ("plain_again", False, "off"), ("ours_only", True, "off"),
             ("inductor_as_is", True, "as_is"), ("wait_first", True, "wait_first"),
             ("wait_first_again", True, "wait_first")]
    runs = {name: run(pdl, inductor) for name, pdl, inductor in modes}
    plain = runs["plain"]["logits"]
    R = {"steps": steps, "inductor_deterministic": bool(torch._inductor.config.deterministic),
         "step_ms": {name: round(r["step_ms"], 4) for name, r in runs.items()},
         "equal_to_plain": {name: bool(torch.equal(plain, r["logits"])) for name, r in runs.items()},
         "max_abs_diff_to_plain": {name: float((plain.float() - r["logits"].float()).abs().max())
                                   for name, r in runs.items()},
         "wait_first_repeatable": bool(torch.equal(runs["wait_first"]["logits"], runs["wait_first_again"]["logits"]))}
    print(json.dumps(R))
    shipped = ("plain_again", "ours_only", "wait_first", "wait_first_again")
    return 0 if all(R["equal_to_plain"][name] for name in shipped) else 1


if __name__ == "__main__":
    raise SystemExit(main())
