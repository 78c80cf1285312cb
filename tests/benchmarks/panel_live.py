"""The VRAM panel live on a GPU (issue 3: "the panel runs live on CPU and GPU").

Opens the real main window offscreen on the machine's GPU, loads a random-init model of the
Llama-3.2-1B shape through Headroom's own loader (NF4 when bitsandbytes is importable, else
bf16, as the loader decides), sends one turn with a long paste, and records what the panel
drew from the real CUDA probe at 4 Hz: every sample's kind, allocated, reserved, free and
total bytes, the panel's labels, and the cost of drawing a sample on the UI thread. Writes
panel_live_<gpu>.json and panel_live_<gpu>.png (the window) under --out.

    QT_QPA_PLATFORM=offscreen python3 -m tests.benchmarks.panel_live --out $OUT
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import torch  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402
from qasync import QEventLoop  # noqa: E402

import app  # noqa: E402, F401  (offline mode, allocator settings)
from app.core.settings import GenerationSettings, Settings  # noqa: E402
from app.core.store import Store  # noqa: E402
from app.ui.application import create_window, load_stylesheet  # noqa: E402
from tests.benchmarks.speed import save_random_model, words  # noqa: E402

PASTE_TOKENS = 6_000
MAX_NEW_TOKENS = 128


def build_model(folder: Path) -> None:
    """Llama-3.2-1B shape (16 layers, 32 query / 8 KV heads, head_dim 64), random bf16 weights."""
    from transformers import LlamaConfig

    cfg = LlamaConfig(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                      num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=131072,
                      rope_theta=500000.0, tie_word_embeddings=True, bos_token_id=128000,
                      eos_token_id=128009)
    save_random_model(folder, cfg, torch.bfloat16)


def signal_future(signal) -> asyncio.Future:
    future = asyncio.get_event_loop().create_future()

    def done(*args):
        if not future.done():
            future.set_result(args)
    signal.connect(done)
    return future


async def drive(window, samples: list, out: dict, paste_tokens: int) -> None:
    loaded = await asyncio.wait_for(signal_future(window.model_ready), 300)
    report = loaded[0]
    out["load_report"] = {k: str(v) for k, v in report.__dict__.items()}
    await asyncio.sleep(2.0)  # a few idle samples after load
    out["idle_sample"] = samples[-1] if samples else None
    finished = signal_future(window.turn_finished)
    window.composer.editor.setPlainText("Summarize this: " + words(paste_tokens, 5, 128000))
    window.composer.send_button.click()
    out["turn_status"] = (await asyncio.wait_for(finished, 300))[0]
    await asyncio.sleep(1.5)
    out["after_turn_sample"] = samples[-1] if samples else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
    parser.add_argument("--model-dir", default="/tmp/llama1b-panel",
                        help="built here when missing; an existing HF folder is used as it is")
    parser.add_argument("--paste-tokens", type=int, default=PASTE_TOKENS)
    args = parser.parse_args(argv)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    folder = Path(args.model_dir)
    build_model(folder)

    qapp = QApplication.instance() or QApplication(sys.argv)
    qapp.setStyleSheet(load_stylesheet())
    loop = QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    settings = Settings(GenerationSettings(max_new_tokens=MAX_NEW_TOKENS, temperature=0.0))
    window = create_window(settings, model=folder, device_preference="auto",
                           store=Store(out_dir / "panel_live.sqlite3"))
    window.resize(1500, 900)
    window.show()

    samples: list[dict] = []
    draw_ms: list[float] = []
    real_show = window.vram_panel.show_sample

    def timed_show(sample):  # the UI-thread cost of drawing one sample, as the monitor calls it
        started = time.perf_counter()
        real_show(sample)
        draw_ms.append((time.perf_counter() - started) * 1e3)
        samples.append({k: getattr(sample, k) for k in ("timestamp", "kind", "device_name", "allocated",
                                                        "reserved", "peak", "free", "total",
                                                        "other_processes", "context_overhead")})
    window.chat.monitor.sample_taken.disconnect(window.vram_panel.show_sample)
    window.chat.monitor.sample_taken.connect(timed_show)

    out: dict = {"command": "python3 -m tests.benchmarks.panel_live " + " ".join(argv or sys.argv[1:]),
                 "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
                 "torch": torch.__version__, "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    with loop:
        loop.run_until_complete(drive(window, samples, out, args.paste_tokens))
    name = "h200" if out["gpu"] and "H200" in out["gpu"] else "local"
    window.grab().save(str(out_dir / f"panel_live_{name}.png"))
    kinds = sorted({s["kind"] for s in samples})
    span = samples[-1]["timestamp"] - samples[0]["timestamp"] if len(samples) > 1 else 0.0
    draw = sorted(draw_ms)
    out.update({
        "sample_kinds": kinds, "samples": len(samples), "sample_rate_hz": (len(samples) - 1) / span if span else 0,
        "draw_ms_p50": draw[len(draw) // 2] if draw else None,
        "draw_ms_p95": draw[int(len(draw) * 0.95)] if draw else None,
        "peak_allocated": max((s["allocated"] for s in samples), default=0),
        "panel_device": window.vram_panel.device_label.text(),
        "panel_readout": window.vram_panel.readout.lines(),
        "timeline": samples,
    })
    (out_dir / f"panel_live_{name}.json").write_text(json.dumps(out, indent=1, default=str))
    gib = 2 ** 30
    print(f"| figure | value |\n|---|---|\n| GPU | {out['gpu']} |\n| sample kinds | {kinds} |"
          f"\n| samples / rate | {len(samples)} / {out['sample_rate_hz']:.2f} Hz |"
          f"\n| turn | {out.get('turn_status')} |"
          f"\n| allocated idle / peak | {((out.get('idle_sample') or {}).get('allocated', 0)) / gib:.2f} / "
          f"{out['peak_allocated'] / gib:.2f} GiB |"
          f"\n| draw p50 / p95 | {out['draw_ms_p50']:.2f} / {out['draw_ms_p95']:.2f} ms |")
    window.close()
    return 0 if kinds == ["cuda"] and out.get("turn_status") in ("complete", "stopped") else 1


if __name__ == "__main__":
    sys.exit(main())
