"""Teacher-forced logits of the app's compiled decode step against bitsandbytes (issue 15, item 3).

The 8B NF4 shape (random init, speed.build_model into --model-dir): the compiled step the window
decodes with (`compiled_decode.warm_up`: one decoder layer compiled for all, a CUDA graph per
cache, Headroom's NF4 GEMV and attention) against the model's eager forward with bitsandbytes'
own GEMV (Headroom's NF4 hooks off) and the model's own 16-bit lm_head (the app's is int8_head's unless
HEADROOM_LM_HEAD_INT8=0), on the same 64-token prompt and 64 forced tokens; and the
eager forward with Headroom's kernels against the same reference. Per path: argmax agreement,
per-step correlation and relative L2 error of the logits. Needs CUDA (about 60 s on an H200 with
the model saved). Prints one JSON line.

    python3 -m tests.benchmarks.compiled_step_logits [--model-dir /tmp/llama8b]
"""
import argparse
import json
from pathlib import Path

import torch

import app  # noqa: F401
from app.engine.loading.loader import load_model
from app.engine.local import int8_head
from app.engine.local import nf4_hook as hook
from app.engine.local.compiled_decode import warm_up
from app.engine.local.generation import cache_kwarg
from app.engine.local.static_cache import new_static_cache
from tests.benchmarks.speed import build_model


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model-dir", default="/tmp/llama8b")
    args = ap.parse_args()
    folder = Path(args.model_dir)
    if not (folder / "config.json").exists():
        build_model(folder, False)
    swap, int8_head.ENABLED = int8_head.ENABLED, False  # loaded 16-bit: the reference keeps bitsandbytes' head
    loaded = load_model(folder)
    model = loaded.model
    bf16_head = model.lm_head
    int8_head.ENABLED = swap
    head = int8_head.install(model) or "int8"  # as the loader does (HEADROOM_LM_HEAD_INT8)
    dec = warm_up(loaded, (2048,))
    g = torch.Generator().manual_seed(0)
    prompt, steps = 64, 64
    ids = torch.randint(1000, 120000, (1, prompt + steps), generator=g).cuda()
    kw = cache_kwarg(type(model))

    def run(compiled: bool):
        cache = new_static_cache(model.config, 2048)
        out = []
        with torch.inference_mode():
            model(input_ids=ids[:, :prompt], use_cache=True, logits_to_keep=1, **{kw: cache})
            for i in range(prompt, prompt + steps):
                tok = ids[:, i:i + 1].contiguous()
                if compiled:
                    out.append(dec.step(tok, cache).clone())
                else:
                    logits = model(input_ids=tok, use_cache=True, logits_to_keep=1, **{kw: cache}).logits
                    out.append(logits[0, -1].float())
        return torch.stack(out)

    ours = run(True)
    saved = {m: m.__dict__["forward"] for m in hook.nf4_layers(model) if "forward" in m.__dict__}
    for m in saved:
        del m.forward
    ours_head, model.lm_head = model.lm_head, bf16_head
    theirs = run(False)
    model.lm_head = ours_head
    for m, f in saved.items():
        m.forward = f
    eager_ours = run(False)
    corr = [float(torch.corrcoef(torch.stack([a, b]))[0, 1]) for a, b in zip(ours, theirs, strict=True)]
    rel = [float((a - b).norm() / b.norm()) for a, b in zip(ours, theirs, strict=True)]
    rel_eager = [float((a - b).norm() / b.norm()) for a, b in zip(eager_ours, theirs, strict=True)]
    R = {"status": dec.status.reason, "regional": dec.regional, "steps": steps, "lm_head": head,
         "argmax_agreement": float((ours.argmax(-1) == theirs.argmax(-1)).float().mean()),
         "min_corr": min(corr), "mean_corr": sum(corr) / len(corr),
         "max_rel_l2": max(rel), "mean_rel_l2": sum(rel) / len(rel),
         "eager_kernel_vs_bnb": {"argmax_agreement": float((eager_ours.argmax(-1) == theirs.argmax(-1)).float().mean()),
                                 "mean_rel_l2": sum(rel_eager) / len(rel_eager), "max_rel_l2": max(rel_eager)},
         "logit_std": float(theirs.std())}
    print(json.dumps(R))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
