"""What the 8-bit lm_head (HEADROOM_LM_HEAD_INT8, app.engine.local.int8_head) costs in answers, on a real
model (issue 15: logits "within bf16 noise" of bitsandbytes'): teacher-forced logits of SmolLM2-135M-Instruct
(the default model, real weights) with every decoder linear in NF4 as the app computes it, on the CPU.

Arms (the decoder's linears as nf4_int8_quality's, the logits float32 as the compiled step writes them):

- ``nf4`` (the reference): the lm_head's 16-bit weight, logits = x · Wᵀ in float32 (compiled_decode's
  ``_logits_fp32``);
- ``nf4_exact`` and ``nf4_split``: the bf16 noise floor (nf4_int8_quality: the same NF4 weights, each
  linear's sum in float64 or in split float32 partials, carried through the layers);
- ``head_int8``: the reference's layers, the lm_head read as int8_head reads it (per-row absmax int8,
  scale · Σ q x in float32).

SmolLM2's lm_head is tied to its embeddings (49152 x 576) and 576 is not a multiple of the kernel's 512
columns, so the app would keep it 16-bit; its numerics are the kernel's all the same (`int8_head.rows_int8`).

    python -m tests.benchmarks.int8_head_quality      # two cores: minutes; results/int8_head_quality_cpu.json
"""

from __future__ import annotations

import json
import platform

from tests.benchmarks.nf4_int8_quality import Nf4Linears, quality_setup, teacher_forced_rows

ARMS = ("nf4", "nf4_exact", "nf4_split", "head_int8")


def main(argv=None) -> None:
    import torch

    from app.engine.local import int8_head

    args, loaded = quality_setup(argv, __doc__.split("\n\n")[0], "int8_head_quality_cpu.json")
    model, tokenizer = loaded.model, loaded.tokenizer
    linears = Nf4Linears(model)
    head = model.lm_head
    weight = head.weight.detach()
    q, scale = int8_head.rows_int8(weight)
    state = {"int8": False}

    def logits(hidden):
        flat = hidden.reshape(-1, hidden.shape[-1]).float()
        out = (flat @ q.t()) * scale if state["int8"] else flat @ weight.float().t()
        return out.view(*hidden.shape[:-1], -1)

    head.forward = logits

    def use(arm):
        state["int8"] = arm == "head_int8"
        linears.arm = "nf4" if arm == "head_int8" else arm

    rows = teacher_forced_rows(model, tokenizer, ARMS, use, args.texts, args.tokens)
    error = float((q * scale[:, None] - weight.float()).norm() / weight.float().norm())
    args.out.write_text(json.dumps(dict(
        benchmark="int8_head_quality", model=loaded.report.name, machine=platform.machine(),
        torch=torch.__version__, dtype="bfloat16", tokens=args.tokens, head_weight_rel_error=round(error, 6),
        command="python -m tests.benchmarks.int8_head_quality", rows=rows), indent=2) + "\n")
    print(f"lm_head weight relative error {error:.2e}; wrote {args.out}")


if __name__ == "__main__":
    main()
