"""8-bit KV quality on the CPU (issue 16, item 4): the real default model (SmolLM2-135M-Instruct)
read through Headroom's own static-cache attention with 16-bit and with 8-bit keys and values.

Texts (committed under tests/benchmarks/kv8_texts/, written by ``--write-texts``): English — the
module docstrings of prose-heavy standard-library modules (PSF licence); Korean — the Korean
sentences of Headroom's own translation catalogue (resources/translations/headroom_ko.ts). Each is
cut to ``--tokens`` tokens (2,000) of the model's tokenizer.

Protocol, per text and per cache: a static cache (app.engine.local.static_cache.new_static_cache)
under "sdpa+gqa-packed"; the first tokens are prefilled in chunks of ``--chunk`` (256) tokens,
each chunk attending to the filled span as `generation.prefill` does it (``kv_span``) but keeping
every position's logits; the last ``--decode`` (64) tokens go in one at a time as decode steps
(the packed decode path). Teacher-forced: the true next token is always fed. Reported:
next-token agreement (argmax of 8-bit logits == argmax of 16-bit logits, over every position),
perplexity of the text under each, and its relative change; for "int8" and "fp8" (e4m3), and
for the model in float32 (the app's CPU dtype) and bfloat16 (the GPU compute dtype).
Done when (issue 16): agreement ≥ 99 %, perplexity within 1 %.

``--floor`` measures instead what bfloat16 itself costs: the float32 model with a 16-bit (float32)
cache as the reference, against the bfloat16 model with its 16-bit (bf16) cache and with an int8
cache — how far the GPU's compute dtype alone moves the answer, beside what int8 adds to it.
(Prefilling in other chunk sizes changes no logit on the CPU: no floor there.)

    python -m tests.benchmarks.kv8_quality --floor --texts en --out results/kv8_quality_cpu_floor.json

    python -m tests.benchmarks.kv8_quality            # writes results/kv8_quality_cpu.json
    python -m tests.benchmarks.kv8_quality --write-texts
"""

from __future__ import annotations

import argparse
import html
import importlib
import inspect
import json
import math
import platform
import re
import time
from pathlib import Path

import app  # noqa: F401  (offline settings before transformers)

HERE = Path(__file__).parent
TEXTS = HERE / "kv8_texts"
RESULTS = HERE / "results"
ENGLISH_MODULES = ("turtle", "socketserver", "wave", "shelve", "statistics", "cmd", "argparse",
                   "json", "pydoc", "unittest", "heapq", "sched", "doctest", "struct", "inspect")


def english_text() -> str:
    """Module docstrings of prose-heavy stdlib modules, doctest lines and tables left out."""
    parts = []
    for name in ENGLISH_MODULES:
        doc = inspect.getdoc(importlib.import_module(name)) or ""
        lines = [line for line in doc.splitlines() if not line.lstrip().startswith((">>>", "...", "|", "-", "="))]
        parts.append("\n".join(lines).strip())
    return "\n\n".join(p for p in parts if p)


def korean_text() -> str:
    """The Korean translations of Headroom's catalogue that are sentences (≥ 20 characters)."""
    ts = (HERE.parent.parent / "resources" / "translations" / "headroom_ko.ts").read_text(encoding="utf-8")
    found = [html.unescape(t) for t in re.findall(r"<translation>(.*?)</translation>", ts, re.S)]
    sentences = [re.sub(r"\{\d\}", "3", t).strip() for t in found if len(t) >= 20]
    return "\n".join(dict.fromkeys(sentences))


def write_texts() -> None:
    TEXTS.mkdir(exist_ok=True)
    (TEXTS / "en.txt").write_text(english_text() + "\n", encoding="utf-8")
    (TEXTS / "ko.txt").write_text(korean_text() + "\n", encoding="utf-8")


def run_text(model, ids, kv_bits: int, kv_format: str, chunk: int, decode: int):
    """Logits (n − 1, vocab) float32 predicting ids[1:], through a static cache of kv_bits."""
    import torch

    from app.engine.local.attention import KV_SPAN_KWARG
    from app.engine.local.generation import forward_step
    from app.engine.local.static_cache import new_static_cache

    n = ids.shape[1]
    cache = new_static_cache(model.config, n + 8, kv_bits, kv_format)
    logits = []
    prefill_end = n - decode
    with torch.inference_mode():
        for start in range(0, prefill_end, chunk):  # as generation.prefill: span = filled so far
            end = min(start + chunk, prefill_end)
            out = forward_step(model, ids[:, start:end], cache, logits_to_keep=0, **{KV_SPAN_KWARG: end})
            logits.append(out.logits[0].float())
        for position in range(prefill_end, n):  # decode steps, teacher-forced
            out = forward_step(model, ids[:, position:position + 1], cache)
            logits.append(out.logits[0, -1:].float())
    return torch.cat(logits)[:-1]


def compare(reference, quantized, targets) -> dict:
    import torch

    def perplexity(logits):
        return math.exp(torch.nn.functional.cross_entropy(logits, targets).item())

    ref_ppl, q_ppl = perplexity(reference), perplexity(quantized)
    agree = (reference.argmax(-1) == quantized.argmax(-1)).float().mean().item()
    return dict(agreement=round(agree, 5), perplexity_16=round(ref_ppl, 4), perplexity_8=round(q_ppl, 4),
                perplexity_change=round(q_ppl / ref_ppl - 1, 5),
                max_abs_logit_diff=round((reference - quantized).abs().max().item(), 4))


def write_floor(args, model, tokenizer, name: str) -> None:
    """--floor: float32 16-bit logits against bfloat16 16-bit and bfloat16 int8, per text."""
    import torch

    rows = []
    for lang in args.texts.split(","):
        text = (TEXTS / f"{lang}.txt").read_text(encoding="utf-8")
        ids = torch.tensor([tokenizer.encode(text, add_special_tokens=False)[:args.tokens]])
        model.to(torch.float32)
        reference = run_text(model, ids, 16, "int8", args.chunk, args.decode)
        model.to(torch.bfloat16)
        for label, bits in (("bfloat16, 16-bit KV", 16), ("bfloat16, int8 KV", 8)):
            row = dict(text=lang, against="float32, 16-bit KV", run=label, tokens=ids.shape[1],
                       **compare(reference, run_text(model, ids, bits, "int8", args.chunk, args.decode), ids[0, 1:]))
            rows.append(row)
            print(f"{lang} {label:20} vs float32 16-bit: agreement {row['agreement']:.4f} "
                  f"ppl {row['perplexity_16']:.3f} -> {row['perplexity_8']:.3f}")
    args.out.write_text(json.dumps(dict(benchmark="kv8_quality --floor", model=name, torch=torch.__version__,
                                        chunk=args.chunk, decode_steps=args.decode, rows=rows), indent=2) + "\n")
    print(f"wrote {args.out}")


def verdicts(rows: list[dict]) -> dict:
    """"dtype/format" → whether every text meets the bars (agreement ≥ 99 %, perplexity within
    1 %)."""
    keys = dict.fromkeys(f"{r['dtype']}/{r['format']}" for r in rows)
    return {key: all(r["agreement"] >= 0.99 and abs(r["perplexity_change"]) <= 0.01
                     for r in rows if f"{r['dtype']}/{r['format']}" == key) for key in keys}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--chunk", type=int, default=256)
    parser.add_argument("--decode", type=int, default=64)
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--formats", default="int8,fp8")
    parser.add_argument("--texts", default="en,ko")
    parser.add_argument("--floor", action="store_true", help="bf16 16-bit and bf16 int8 against float32 16-bit")
    parser.add_argument("--write-texts", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS / "kv8_quality_cpu.json")
    args = parser.parse_args()
    if args.write_texts:
        write_texts()
    import torch

    from app.core.paths import default_model_path
    from app.engine.loading.loader import load_model, resolve_model_folder

    loaded = load_model(resolve_model_folder(default_model_path()))
    model, tokenizer = loaded.model, loaded.tokenizer
    print(f"model {loaded.report.name}, attention {model.config._attn_implementation}")
    rows = []
    if args.floor:
        return write_floor(args, model, tokenizer, loaded.report.name)
    for dtype_name in args.dtypes.split(","):
        model.to(getattr(torch, dtype_name))
        for lang in args.texts.split(","):
            text = (TEXTS / f"{lang}.txt").read_text(encoding="utf-8")
            ids = torch.tensor([tokenizer.encode(text, add_special_tokens=False)[:args.tokens]])
            targets = ids[0, 1:]
            began = time.perf_counter()
            reference = run_text(model, ids, 16, "int8", args.chunk, args.decode)
            seconds_16 = time.perf_counter() - began
            for fmt in args.formats.split(","):
                began = time.perf_counter()
                quantized = run_text(model, ids, 8, fmt, args.chunk, args.decode)
                row = dict(dtype=dtype_name, text=lang, format=fmt, tokens=ids.shape[1],
                           seconds_16=round(seconds_16, 2), seconds_8=round(time.perf_counter() - began, 2),
                           **compare(reference, quantized, targets))
                rows.append(row)
                print(f"{dtype_name:9} {lang} {fmt:5} agreement {row['agreement']:.4f}  ppl16 "
                      f"{row['perplexity_16']:.3f} ppl8 {row['perplexity_8']:.3f} "
                      f"({row['perplexity_change']:+.3%})  max|Δlogit| {row['max_abs_logit_diff']}")
    result = dict(benchmark="kv8_quality", model=loaded.report.name, machine=platform.machine(),
                  torch=torch.__version__, tokens=args.tokens, chunk=args.chunk, decode_steps=args.decode,
                  texts={lang: str((TEXTS / f"{lang}.txt").relative_to(HERE.parent.parent)) for lang in ("en", "ko")},
                  bars=dict(agreement=0.99, perplexity_change=0.01), rows=rows, passed=verdicts(rows))
    args.out.parent.mkdir(exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
