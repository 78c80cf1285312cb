"""What the int8 NF4 GEMV's numerics would cost in answers, on a real model (issue 15's planning, not used by
the app): teacher-forced logits of SmolLM2-135M-Instruct (the default model, real weights) with every
decoder linear in NF4, computed as the app computes it and as tests/benchmarks/nf4_int8_gemv.py's kernel
would (8-bit codebook, x quantized to int8 per 64 inputs, as llama.cpp's q8_1), on the CPU.

Why: that kernel is ~1.4× the app's on the long gate/up GEMV (H200, results/nf4_int8_gemv_h200.json), but
its relative error to float32 W x is 8.7e-3 against 1.7e-3, and issue 15 asks for logits "within bf16
noise" of bitsandbytes'. A relative error of one GEMV says little about answers; this measures them.

Arms, each linear of every decoder layer (q, k, v, o, gate, up, down; the lm_head stays 16-bit, as in the
app), with NF4 weights quantized once from the model's bf16 weights (64-blocks, nearest of bitsandbytes'
codebook, float32 absmax; the app's nested absmax moves every arm alike):

- ``nf4`` (the reference): W = bf16(code · absmax), y = bf16(Σ W x) summed in float32: the app's GEMV
  and bitsandbytes', bit for bit up to the order of the sum.
- ``nf4_exact`` and ``nf4_split``: the same weights, y = bf16 of the sum in float64, or of SPLIT float32
  partial sums added (a split-K kernel's order): what the order of a correct sum moves, the "bf16 noise"
  floor. Each rounding of y to bf16 that flips is carried through 30 layers, so even two float64 forms
  of one sum give other logits: the floor is a spread, not a number.
- ``int8``: the int8 kernel: T = round(127 · code), xq = round(127 · x / max|x|) per 64 inputs,
  y = bf16(Σ_blocks absmax · xs / 127 · Σ T xq).
- ``int8_codebook`` and ``int8_x``: its two roundings alone (the codebook in 8 bits with x in bf16; exact
  NF4 weights with x in 8 bits), to see which one costs.

Texts: tests/benchmarks/kv8_texts (English prose and Korean sentences, as kv8_quality), ``--tokens`` each,
one forward pass of the model in bfloat16 (the GPU's compute dtype), every position's logits. Reported
against ``nf4``: next-token agreement (argmax), perplexity change, the largest logit difference, and the
mean per-position correlation of the logits.

    python -m tests.benchmarks.nf4_int8_quality      # two cores: minutes; results/nf4_int8_quality_cpu.json

Measured (2026-12-04, this machine: x86_64, 2 cores, torch 2.13.0 CPU; results/nf4_int8_quality_cpu.json),
1,000 tokens a text, against ``nf4``:

    | text | arm           | agreement | perplexity | max logit diff | 1 - correlation |
    |------|---------------|-----------|------------|----------------|-----------------|
    | en   | nf4_exact     | 97.1 %    | -0.31 %    | 1.31           | 1.9e-4          |
    | en   | nf4_split     | 96.8 %    | -0.20 %    | 1.25           | 1.9e-4          |
    | en   | int8          | 94.7 %    | +0.39 %    | 2.63           | 1.2e-3          |
    | en   | int8_codebook | 96.3 %    | +0.51 %    | 2.11           | 4.7e-4          |
    | en   | int8_x        | 95.9 %    | +0.18 %    | 2.72           | 9.3e-4          |
    | ko   | nf4_exact     | 97.5 %    | +0.14 %    | 1.64           | 3.2e-4          |
    | ko   | nf4_split     | 97.3 %    | +0.25 %    | 1.70           | 3.3e-4          |
    | ko   | int8          | 94.3 %    | +0.91 %    | 7.70           | 2.4e-3          |
    | ko   | int8_codebook | 95.4 %    | +1.01 %    | 5.59           | 9.5e-4          |
    | ko   | int8_x        | 94.2 %    | +0.46 %    | 9.44           | 2.0e-3          |

Reading: the int8 kernel's numerics are outside bf16 noise on this model. Its next token differs from
the reference's about twice as often as the floor's (5.3-5.7 % of positions against 2.5-3.2 %), its
logits are 6-8× further in correlation, and Korean moves most (perplexity +0.91 % against +0.14-0.25 %,
a logit 7.7 away against 1.7). x's 8-bit rounding makes the largest single differences, the 8-bit
codebook most of the perplexity. A 135M model is not the 8B, but nothing here says the 8B would
stay within its floor. Issue 15's bar ("within bf16 noise") rules the int8 GEMV out as it stands.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import app  # noqa: F401  (offline settings before transformers)
from tests.benchmarks.kv8_quality import RESULTS, TEXTS, compare
from tests.benchmarks.nf4_int8_gemv import NF4

BLOCK = 64  # inputs a block: the NF4 absmax's and the int8 x scale's
LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
ARMS = ("nf4", "nf4_exact", "nf4_split", "int8", "int8_codebook", "int8_x")
SPLIT = 4  # nf4_split: K summed in this many float32 parts, then the parts added (a split-K GEMV's order)


def nf4_quantize(weight):
    """(codes (N, K) int64 indices into NF4, absmax (N, K / BLOCK) float32) of a (N, K) weight: each
    64-block scaled by its largest magnitude, each value the nearest code (bitsandbytes' rule)."""
    import torch

    n, k = weight.shape
    blocks = weight.float().reshape(n, k // BLOCK, BLOCK)
    absmax = blocks.abs().amax(-1).clamp_min(1e-12)
    code = torch.tensor(NF4)
    codes = ((blocks / absmax[..., None])[..., None] - code).abs().argmin(-1)
    return codes.reshape(n, k), absmax


def nf4_linear(x, codes, absmax, arm: str):
    """y (..., N) in x's dtype for x (..., K) through NF4 weights (`nf4_quantize`) as ``arm`` computes it
    (the module's docstring). Blocks of BLOCK inputs."""
    import torch

    code = torch.tensor(NF4)
    n, k = codes.shape
    rows = x.reshape(-1, k)
    if arm in ("nf4", "nf4_exact", "nf4_split", "int8_x"):  # bf16(code · absmax), as bitsandbytes dequantizes
        scale = absmax.repeat_interleave(BLOCK, dim=1)
        weight = (code[codes] * scale).to(torch.bfloat16)
        if arm == "nf4":
            y = rows.float() @ weight.float().T
        elif arm == "nf4_exact":
            y = rows.double() @ weight.double().T
        elif arm == "nf4_split":
            parts = [rows[:, i::SPLIT].float() @ weight[:, i::SPLIT].float().T for i in range(SPLIT)]
            y = sum(parts[1:], parts[0])
        else:  # x in 8 bits per block, the exact weights
            xq, xs = _quantize_x(rows)
            y = ((xq * xs[..., None]).reshape(-1, k).double() / 127) @ weight.double().T
    else:  # the 8-bit codebook: T = round(127 code), each block's integer sum scaled once
        table = torch.round(code * 127)
        t = table[codes].reshape(n, k // BLOCK, BLOCK).double()
        if arm == "int8":
            xq, xs = _quantize_x(rows)
            dots = torch.einsum("mbk,nbk->mnb", xq.double(), t)  # exact: integers under 2^53
            y = torch.einsum("mnb,nb,mb->mn", dots, absmax.double(), xs.double()) / (127 * 127)
        else:  # int8_codebook: x in bf16 (the same sum as a float64 matmul)
            y = rows.double() @ (t * absmax.double()[..., None] / 127).reshape(n, k).T
    return y.to(x.dtype).reshape(*x.shape[:-1], n)


def _quantize_x(rows):
    """(xq (M, K / BLOCK, BLOCK) float holding integers in [-127, 127], xs (M, K / BLOCK) float32 scales):
    x ≈ xq · xs / 127 per block (llama.cpp's q8_1 rounding: to nearest)."""
    import torch

    blocks = rows.float().reshape(rows.shape[0], -1, BLOCK)
    xs = blocks.abs().amax(-1).clamp_min(1e-30)
    return torch.round(blocks / xs[..., None] * 127), xs


class Nf4Linears:
    """Every decoder layer's LINEARS of ``model`` computed by `nf4_linear` while ``arm`` is set (None: the
    model's own 16-bit forward). Quantizes once."""

    def __init__(self, model):
        self.arm = None
        self.weights = {}
        for layer in model.model.layers:
            for part in (layer.self_attn, layer.mlp):
                for name in LINEARS:
                    linear = getattr(part, name, None)
                    if linear is not None:
                        self.weights[linear] = nf4_quantize(linear.weight.detach())
                        linear.forward = self._forward(linear)

    def _forward(self, linear):
        plain = type(linear).forward

        def forward(x):
            if self.arm is None:
                return plain(linear, x)
            y = nf4_linear(x, *self.weights[linear], self.arm)
            return y if linear.bias is None else y + linear.bias
        return forward


def correlation(reference, other) -> float:
    """Mean over positions of the Pearson correlation of two (positions, vocab) logit rows."""
    a = reference - reference.mean(-1, keepdim=True)
    b = other - other.mean(-1, keepdim=True)
    return float(((a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1)).clamp_min(1e-30)).mean())


def teacher_forced_rows(model, tokenizer, arms: tuple[str, ...], use, texts: str, tokens: int,
                        models: dict | None = None) -> list[dict]:
    """For each of ``texts`` (comma-separated names of kv8_texts), its first ``tokens`` tokens through
    ``model`` (or ``models[arm]``) once per arm (``use(arm)`` selects it; ``use(None)`` after), every
    position's logits compared with the first arm's: a row per other arm (agreement, perplexities, largest
    logit difference, correlation), printed as it comes."""
    import torch

    rows = []
    for lang in texts.split(","):
        text = (TEXTS / f"{lang}.txt").read_text(encoding="utf-8")
        ids = torch.tensor([tokenizer.encode(text, add_special_tokens=False)[:tokens]])
        logits = {}
        for arm in arms:
            use(arm)
            start = time.perf_counter()
            with torch.inference_mode():
                logits[arm] = (models or {}).get(arm, model)(input_ids=ids).logits[0, :-1].float()
            print(f"{lang} {arm}: {time.perf_counter() - start:.1f} s", flush=True)
        reference = arms[0]
        for arm in arms[1:]:
            found = compare(logits[reference], logits[arm], ids[0, 1:])
            row = dict(text=lang, tokens=ids.shape[1], arm=arm, against=reference, agreement=found["agreement"],
                       perplexity_nf4=found["perplexity_16"], perplexity=found["perplexity_8"],
                       perplexity_change=found["perplexity_change"], max_abs_logit_diff=found["max_abs_logit_diff"],
                       correlation=round(correlation(logits[reference], logits[arm]), 6))
            rows.append(row)
            print(f"{lang} {arm:14} vs {reference}: agreement {row['agreement']:.4f} ppl {row['perplexity_nf4']:.3f}"
                  f" -> {row['perplexity']:.3f} ({row['perplexity_change']:+.2%}) max |dlogit| "
                  f"{row['max_abs_logit_diff']:.3f} corr {row['correlation']:.6f}", flush=True)
    use(None)
    return rows


def quality_setup(argv, description: str, out_name: str):
    """(args: --tokens, --texts, --out; the loaded default model, SmolLM2-135M-Instruct, in bfloat16) for a
    teacher-forced quality benchmark of this kind (results/``out_name`` by default)."""
    import torch

    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--tokens", type=int, default=1000)
    ap.add_argument("--texts", default="en,ko")
    ap.add_argument("--out", type=Path, default=RESULTS / out_name)
    args = ap.parse_args(argv)
    from app.core.paths import default_model_path
    from app.engine.loading.loader import load_model, resolve_model_folder

    torch.manual_seed(0)
    loaded = load_model(resolve_model_folder(default_model_path()))
    loaded.model.to(torch.bfloat16).eval()
    return args, loaded


def main(argv=None) -> None:
    import torch

    args, loaded = quality_setup(argv, __doc__.split("\n\n")[0], "nf4_int8_quality_cpu.json")
    model, tokenizer = loaded.model, loaded.tokenizer
    linears = Nf4Linears(model)
    rows = teacher_forced_rows(model, tokenizer, ARMS, lambda arm: setattr(linears, "arm", arm), args.texts,
                               args.tokens)
    args.out.write_text(json.dumps(dict(
        benchmark="nf4_int8_quality", model=loaded.report.name, machine=platform.machine(),
        torch=torch.__version__, dtype="bfloat16", block=BLOCK, tokens=args.tokens,
        command="python -m tests.benchmarks.nf4_int8_quality", rows=rows), indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
