"""CPU decode against intra-op threads (issue 12, item 6), on the default model (SmolLM2-135M).

For each thread count (1, every usable core, and the automatic choice of
`app.engine.local.cpu_threads`), the window's `TurnRunner` answers one question (greedy, 64 new
tokens) and plain `generate()` answers it too, same process, same weights, so the turn path is
compared with plain `generate()` under the same conditions. Optionally a busy process is
started first (``--busy N``: N spinning processes), to see what one busy core does to decode.

    python3 -m tests.benchmarks.cpu_threads --busy 1 --out tests/benchmarks/results
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import torch

import app  # noqa: F401
from app.core.conversation import Message, Role
from app.core.history import SummaryState
from app.core.settings import GenerationSettings
from app.engine import events as ev
from app.engine.loading.loader import load_model, resolve_model_folder
from app.engine.local.cpu_threads import usable_cores
from app.engine.local.turn_runner import TurnRunner
from app.engine.memory.probe import pick_probe

QUESTION = "Explain in a few sentences why the sky is blue."
NEW = 64


def _spin(stop_at: float) -> None:
    while time.time() < stop_at:
        pass


def turn(runner: TurnRunner, settings: GenerationSettings) -> dict:
    for event in runner.run_turn([Message(Role.USER, QUESTION)], SummaryState(), settings, threading.Event()):
        if isinstance(event, ev.TurnCompleted):
            f = event.finished
            return {"tok_s": f.decode_tokens_per_s, "ttft_s": f.ttft_s, "new_tokens": f.new_tokens,
                    "threads": runner.cpu_threads}
    return {"error": "no reply"}


def plain(loaded, threads: int) -> float:
    """Plain generate(): greedy NEW tokens; tok/s = (NEW - 1) / (t_NEW - t_1)."""
    torch.set_num_threads(threads)
    text = loaded.tokenizer.apply_chat_template([{"role": "user", "content": QUESTION}], tokenize=False,
                                                add_generation_prompt=True)
    x = loaded.tokenizer(text, return_tensors="pt").input_ids
    times = []
    for new in (1, NEW):
        t = time.perf_counter()
        with torch.inference_mode():
            loaded.model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=new, min_new_tokens=new,
                                  do_sample=False, pad_token_id=0)
        times.append(time.perf_counter() - t)
    return (NEW - 1) / (times[1] - times[0])


def main(argv=None) -> int:
    from app.core.paths import default_model_path

    ap = argparse.ArgumentParser()
    ap.add_argument("--busy", type=int, default=0, help="spinning processes started first")
    ap.add_argument("--out", default="tests/benchmarks/results")
    args = ap.parse_args(argv)
    loaded = load_model(resolve_model_folder(default_model_path()))
    runner = TurnRunner(loaded, pick_probe())
    base = GenerationSettings(max_new_tokens=NEW, temperature=0.0)
    spinners = [multiprocessing.Process(target=_spin, args=(time.time() + 600,)) for _ in range(args.busy)]
    for p in spinners:
        p.start()
    time.sleep(1.0)
    R = {"command": "python3 -m tests.benchmarks.cpu_threads " + " ".join(argv or sys.argv[1:]),
         "machine": platform.node(), "cores": usable_cores(), "busy_processes": args.busy,
         "loadavg_before": os.getloadavg(), "rows": []}
    try:
        turn(runner, base)  # warm
        for setting in sorted({1, usable_cores()}) + [0]:
            row = {"setting": setting, **turn(runner, replace(base, cpu_threads=setting))}
            row["plain_tok_s"] = plain(loaded, row["threads"])
            R["rows"].append(row)
            print(json.dumps(row), flush=True)
    finally:
        for p in spinners:
            p.terminate()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    out = Path(args.out) / f"cpu_threads_{platform.node()}_busy{args.busy}.json"
    out.write_text(json.dumps(R, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
