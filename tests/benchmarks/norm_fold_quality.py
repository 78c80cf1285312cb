"""What folding the RMSNorm's scale into the next GEMV would cost in answers, on a real model (issue 15's
planning, not used by the app): teacher-forced logits of SmolLM2-135M-Instruct (the default model, real
weights) with every decoder linear in NF4 (tests/benchmarks/nf4_int8_quality.py's weights and GEMV),
the norms computed as the app computes them and folded, on the CPU.

Why: on the H200's critical path the 8B step's 65 ``add_rms_norm`` launches add ~113 µs of ~2,950
(results/decode_experiments_h200_patched.json), more than the ~95 µs that 350 tok/s at 1k still needs.
A norm is a grid-wide dependency (one sum of squares over the whole hidden state) between two GEMVs, so
it costs a launch and a round trip of its own. Folded, it needs none: the GEMV that writes the hidden
state (o_proj, down) adds the residual in its last write, stores g = bf16(w · h) and each row tile's sum
of squares of h; the next GEMV (q/k/v, gate/up) reads g as its input and multiplies its float32 sums by
r = rsqrt(mean(h²) + eps) before the bf16 rounding. Exact arithmetic gives the same y; the roundings
differ: the app rounds bf16(h · r) and then bf16(w · that) (transformers' LlamaRMSNorm); the fold rounds
bf16(w · h) and never rounds the normalized input.

Arms (q, k, v, gate, up, o, down in NF4; the lm_head 16-bit; the final norm unfolded, as the step would
keep it):

- ``nf4`` (the reference): the app's norm, then y = bf16(Σ W x) summed in float32.
- ``nf4_exact`` and ``nf4_split``: the floor, as nf4_int8_quality measures it (y summed in float64, or in
  4 float32 parts then added).
- ``norm_exact``: the app's norm with its mean of squares in float64: what the order of that sum moves
  (add_rms_norm's kernel adds in its own order), another part of the floor.
- ``fold``: every decoder layer's two norms folded into q/k/v and gate/up: x = bf16(w · h), y =
  bf16(r · Σ W x) with the sum in float32. ``fold_exact``: the same with the sum in float64 (the fold's own
  spread, as nf4_exact is the reference's).

Reported against ``nf4`` as nf4_int8_quality reports: next-token agreement, perplexity change, the
largest logit difference, 1 − the mean correlation of the logits.

    python -m tests.benchmarks.norm_fold_quality --tokens 2000   # two cores: ~30 s; results/norm_fold_quality_cpu.json

Measured (2026-12-05, this machine: x86_64, 2 cores, torch 2.13.0 CPU), 2,000 tokens a text, against ``nf4``:

    | text | arm        | agreement | perplexity | max logit diff | 1 - correlation |
    |------|------------|-----------|------------|----------------|-----------------|
    | en   | nf4_exact  | 97.40 %   | +0.02 %    | 1.25           | 1.94e-4         |
    | en   | nf4_split  | 97.55 %   | +0.00 %    | 1.34           | 1.98e-4         |
    | en   | norm_exact | 97.80 %   | +0.05 %    | 1.38           | 1.92e-4         |
    | en   | fold       | 97.25 %   | +0.00 %    | 1.25           | 2.14e-4         |
    | en   | fold_exact | 97.45 %   | +0.07 %    | 1.25           | 2.14e-4         |
    | ko   | nf4_exact  | 97.15 %   | -0.19 %    | 1.64           | 3.04e-4         |
    | ko   | nf4_split  | 96.80 %   | +0.12 %    | 2.57           | 3.03e-4         |
    | ko   | norm_exact | 97.45 %   | -0.05 %    | 2.38           | 2.66e-4         |
    | ko   | fold       | 96.95 %   | -0.10 %    | 2.50           | 3.64e-4         |
    | ko   | fold_exact | 97.20 %   | -0.29 %    | 2.47           | 3.60e-4         |

Against exact arithmetic instead (``against_float64`` in the JSON: the same NF4 weights, the rest of the
model in float64, a deep copy), each bf16 path's distance from the true logits:

    | text | arm       | agreement | perplexity | max logit diff | 1 - correlation |
    |------|-----------|-----------|------------|----------------|-----------------|
    | en   | nf4 (app) | 96.85 %   | +0.00 %    | 1.23           | 1.58e-4         |
    | en   | fold      | 96.50 %   | +0.00 %    | 1.48           | 1.61e-4         |
    | en   | nf4_exact | 97.30 %   | +0.02 %    | 1.35           | 1.56e-4         |
    | en   | nf4_split | 96.70 %   | +0.01 %    | 1.73           | 1.70e-4         |
    | ko   | nf4 (app) | 97.15 %   | +0.03 %    | 2.82           | 2.70e-4         |
    | ko   | fold      | 97.00 %   | -0.07 %    | 1.91           | 2.50e-4         |
    | ko   | nf4_exact | 96.70 %   | -0.16 %    | 2.54           | 2.62e-4         |
    | ko   | nf4_split | 96.40 %   | +0.15 %    | 3.00           | 2.68e-4         |

Reading: against the app's own path the fold's agreement, perplexity and largest logit difference sit inside
the floor's spread (English agreement 0.15 points under its lowest arm) and its logits are 1.1× (English) and
1.2-1.4× (Korean) further in correlation: a different rounding, not a worse one. Against exact arithmetic it
is as close as the app's path and the other correct orders (correlation 1.61e-4 / 2.50e-4 against 1.56-1.70e-4
/ 2.62-2.70e-4; on Korean the closest of the four). Within bf16 noise; the int8 GEMV (nf4_int8_quality) was
6-8× the floor. A 135M model is not the 8B: the issue's GPU logits check decides there.
"""

from __future__ import annotations

import copy
import json
import platform

import app  # noqa: F401  (offline settings before transformers)
from tests.benchmarks.nf4_int8_quality import Nf4Linears, nf4_linear, quality_setup, teacher_forced_rows

ARMS = ("nf4", "nf4_exact", "nf4_split", "norm_exact", "fold", "fold_exact")
FOLDED = {"input_layernorm": ("q_proj", "k_proj", "v_proj"), "post_attention_layernorm": ("gate_proj", "up_proj")}


def folded_norm(norm, hidden):
    """(x, r) for a LlamaRMSNorm ``norm`` of ``hidden`` (..., H) in the compute dtype: x = bf16(w · h)
    (the dtype's rounding of the product), r (..., 1) float32 = rsqrt(mean(h²) + eps), so that the
    norm's output is w · h · r before its roundings."""
    import torch

    r = torch.rsqrt(hidden.float().pow(2).mean(-1, keepdim=True) + norm.variance_epsilon)
    return (norm.weight * hidden).to(hidden.dtype), r


def folded_linear(x, r, codes, absmax, gemv: str = "nf4", bias=None):
    """y = bf16(r · Σ W x + bias) for the NF4 weights (nf4_int8_quality.nf4_quantize), as the kernel rounds,
    the sum in float32 (``gemv`` "nf4") or float64 ("nf4_exact")."""
    y = nf4_linear(x.float() if gemv == "nf4" else x.double(), codes, absmax, gemv) * r  # x's bf16 values exactly
    return (y if bias is None else y + bias.to(y.dtype)).to(x.dtype)


def exact_norm(norm, hidden):
    """The app's norm, bf16(w · bf16(h · r)), with r from a float64 mean of squares: where another order of
    the sum of squares (add_rms_norm's kernel) moves the output."""
    import torch

    r = torch.rsqrt(hidden.double().pow(2).mean(-1, keepdim=True) + norm.variance_epsilon).float()
    return norm.weight * (hidden.float() * r).to(hidden.dtype)


class FoldedNorms:
    """While ``arm`` is "fold", each decoder layer's FOLDED norms return bf16(w · h) and the linears that
    read them scale their float32 sums by that norm's r. Wraps `Nf4Linears` (its own arm the GEMV)."""

    def __init__(self, model, linears: Nf4Linears):
        self.arm = None
        self.linears = linears
        for layer in model.model.layers:
            for norm_name, names in FOLDED.items():
                norm, r = getattr(layer, norm_name), {}
                norm.forward = self._norm(norm, r)
                part = layer.self_attn if norm_name == "input_layernorm" else layer.mlp
                for name in names:
                    linear = getattr(part, name)
                    linear.forward = self._linear(linear, linear.forward, r)

    def _norm(self, norm, r):
        plain = type(norm).forward

        def forward(hidden):
            if self.arm == "norm_exact":
                return exact_norm(norm, hidden)
            if not self.folded:
                return plain(norm, hidden)
            x, r["r"] = folded_norm(norm, hidden)
            return x
        return forward

    def _linear(self, linear, unfolded, r):
        def forward(x):
            if not self.folded:
                return unfolded(x)
            return folded_linear(x, r["r"], *self.linears.weights[linear], "nf4" if self.arm == "fold" else "nf4_exact",
                                 linear.bias)
        return forward

    @property
    def folded(self) -> bool:
        return self.arm in ("fold", "fold_exact")

    def set(self, arm: str | None) -> None:
        self.arm = arm
        self.linears.arm = {"fold": "nf4", "fold_exact": "nf4_exact", "norm_exact": "nf4",
                            "float64": "nf4_exact"}.get(arm, arm)


def main(argv=None) -> None:
    import torch

    args, loaded = quality_setup(argv, __doc__.split("\n\n")[0], "norm_fold_quality_cpu.json")
    model, tokenizer = loaded.model, loaded.tokenizer
    folds = FoldedNorms(model, Nf4Linears(model))
    rows = teacher_forced_rows(model, tokenizer, ARMS, folds.set, args.texts, args.tokens)
    # against exact arithmetic: the same NF4 weights, everything else in float64 (a copy: its rotary buffers
    # would not come back to float32 from a round trip through bf16)
    exact = copy.deepcopy(model).to(torch.float64)
    to_exact = teacher_forced_rows(model, tokenizer, ("float64", "nf4", "fold", "nf4_exact", "nf4_split"), folds.set,
                                   args.texts, args.tokens, models={"float64": exact})
    args.out.write_text(json.dumps(dict(
        benchmark="norm_fold_quality", model=loaded.report.name, machine=platform.machine(),
        torch=torch.__version__, dtype="bfloat16", tokens=args.tokens,
        command="python -m tests.benchmarks.norm_fold_quality --tokens 2000", rows=rows,
        against_float64=to_exact), indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
