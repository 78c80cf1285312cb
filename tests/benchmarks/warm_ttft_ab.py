"""Warm turns' TTFT with the CUDA sampler and with transformers' steps, alternated in one chat.

The chat-path run of 2026-12-03 (after the CUDA sampler moved to `samplers.draw_from_nucleus`)
showed warm turns' TTFT at 59-104 ms against 47-87 the day before, while the paired single turns
moved the plain recipe's TTFT with Headroom's. This settles whether the sampler is the cause: one
growing chat through the window's `TurnRunner` (default settings, ~300-token messages, 64-token
answers), its turns alternating between the app's draw and transformers' (`process`, softmax,
multinomial: what `samplers.sample` ran on CUDA before), so both see the same device state.

    python3 -m tests.benchmarks.warm_ttft_ab --out $OUT    # H200: 8B NF4 (built by speed.build_model)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

from app.core.conversation import Message, Role
from app.core.settings import GenerationSettings
from app.engine.loading.loader import load_model
from app.engine.local import samplers
from app.engine.local.turn_runner import TurnRunner
from app.engine.memory.probe import pick_probe
from tests.benchmarks.chat_path import run_turn
from tests.benchmarks.speed import build_model, log, versions, words

APP_SAMPLE = samplers.sample


def transformers_sample(scores, settings, generator, seen=None):
    """`samplers.sample` as it ran on CUDA until 2026-12-03: transformers' steps on any device."""
    processed = samplers.process(scores, settings, seen).reshape(-1)
    if settings.temperature <= 0:
        token = torch.argmax(processed).view(1)
    else:
        token = torch.multinomial(torch.softmax(processed, -1), 1, generator=generator)
    if seen is not None:
        seen.index_fill_(0, token, True)
    return token


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "tests/benchmarks/results"))
    ap.add_argument("--model-dir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "llama8b"))
    ap.add_argument("--turns", type=int, default=24)
    ap.add_argument("--tiny", action="store_true", help="CPU smoke test on a 2-layer model")
    args = ap.parse_args(argv)
    R: dict = {"command": "python3 -m tests.benchmarks.warm_ttft_ab " + " ".join(argv or sys.argv[1:]),
               "versions": versions(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "turns": []}
    folder = Path(args.model_dir + ("-tiny" if args.tiny else ""))
    build_model(folder, args.tiny)
    loaded = load_model(folder)
    runner = TurnRunner(loaded, pick_probe())
    R["warm_up_state"] = runner.warm_up(lambda s: None).state
    vocab = loaded.model.config.vocab_size
    settings = replace(GenerationSettings(), max_new_tokens=8 if args.tiny else 64)
    messages: list[Message] = []
    for turn in range(args.turns):
        variant = "app" if turn % 2 else "transformers"
        samplers.sample = APP_SAMPLE if variant == "app" else transformers_sample
        try:
            messages.append(Message(Role.USER, words(40 if args.tiny else 300, 500 + turn, vocab)))
            row = run_turn(runner, messages, settings, "ab")
        finally:
            samplers.sample = APP_SAMPLE
        messages.append(Message(Role.ASSISTANT, row.pop("text", "")))
        R["turns"].append({"turn": turn + 1, "sampler": variant, **row})
        log(json.dumps(R["turns"][-1], default=str))
    for variant in ("app", "transformers"):
        rows = [r for r in R["turns"][2:] if r["sampler"] == variant and "ttft_s" in r]  # turns 3 on: warm
        R[variant] = {"ttft_ms_median": 1e3 * statistics.median(r["ttft_s"] for r in rows),
                      "tok_s_median": statistics.median(r["tok_s"] for r in rows), "turns": len(rows)}
    print("\n| sampler | warm turns | TTFT ms, median | decode tok/s, median |\n|---|---|---|---|")
    for variant in ("app", "transformers"):
        v = R[variant]
        print(f"| {variant} | {v['turns']} | {v['ttft_ms_median']:.1f} | {v['tok_s_median']:.1f} |")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = "warm_ttft_ab_cpu_tiny.json" if args.tiny else "warm_ttft_ab_h200.json"
    (out / name).write_text(json.dumps(R, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
