"""Benchmark: convert a Llama-3-8B-shaped Q4_0 GGUF (~4.5 GB, random data) on this CPU.

    python tests/benchmarks/gguf_convert.py [--gguf /tmp/headroom-bench/llama3-8b-synthetic.Q4_0.gguf]

Steps, each in its own child process so every peak RSS is that step's alone:

1. write the synthetic GGUF with the ``gguf`` package (once; kept in /tmp, never in git):
   Llama-3-8B shapes (32 layers, hidden 4096, FFN 14336, 32 heads, 8 KV heads, 128,256 vocab,
   8,192 positions), Q4_0 blocks of random nibbles with a 0.01 scale, F32 norms, a byte-level
   BPE vocabulary of 128,256 tokens with 60,000 merges and a chat template;
2. the fit plan (app.engine.loading.fit_plan.plan_model), printed before conversion;
3. the conversion with the app's own converter (app.engine.loading.loader.convert_gguf, bf16,
   user cache) — wall time, peak RSS (getrusage ru_maxrss and a 50 ms psutil sampler), bytes
   written;
4. load the result and answer one token. The app's CPU placement is float32 (32 GB for 8B), which
   the plan refuses on a 24 GB machine; the check loads the bf16 shards as saved (memory-mapped
   by safetensors, so the weights are file pages, not process memory) and runs one greedy step.

Prints a table and writes tests/benchmarks/results/gguf_convert_cpu.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "benchmarks" / "results" / "gguf_convert_cpu.json"
DEFAULT_GGUF = Path("/tmp/headroom-bench/llama3-8b-synthetic.Q4_0.gguf")
SHAPE = {"layers": 32, "hidden": 4096, "ffn": 14336, "heads": 32, "kv_heads": 8, "vocab": 128256,
         "context": 8192}


def write_synthetic_gguf(path: Path) -> None:
    """Write the Llama-3-8B-shaped Q4_0 GGUF tensor by tensor (never the whole model in memory)."""
    import gguf
    import numpy as np

    from tests.helpers.tiny_gguf import TEMPLATE, _byte_tokens

    s, rng = SHAPE, np.random.default_rng(0)
    head_dim = s["hidden"] // s["heads"]
    byte_tokens = _byte_tokens()
    pairs = [a + b for a in byte_tokens[:245] for b in byte_tokens[:245]][:60000]
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|im_start|>", "<|im_end|>"]
    filler = [f"<|reserved_{i}|>" for i in range(s["vocab"] - len(byte_tokens) - len(pairs) - len(specials))]
    tokens = byte_tokens + pairs + filler + specials
    merges = [f"{p[0]} {p[1]}" for p in pairs]
    path.parent.mkdir(parents=True, exist_ok=True)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("llama3-8b-synthetic")
    w.add_block_count(s["layers"])
    w.add_context_length(s["context"])
    w.add_embedding_length(s["hidden"])
    w.add_feed_forward_length(s["ffn"])
    w.add_head_count(s["heads"])
    w.add_head_count_kv(s["kv_heads"])
    w.add_rope_freq_base(500000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(head_dim)
    w.add_vocab_size(s["vocab"])
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_0)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("llama-bpe")
    w.add_token_list(tokens)
    w.add_token_types([1] * (len(tokens) - len(specials) - len(filler)) + [3] * (len(filler) + len(specials)))
    w.add_token_merges(merges)
    w.add_bos_token_id(len(tokens) - 4)
    w.add_eos_token_id(len(tokens) - 1)
    w.add_chat_template(TEMPLATE)
    q4 = gguf.GGMLQuantizationType.Q4_0
    f32 = gguf.GGMLQuantizationType.F32
    kv = s["kv_heads"] * head_dim
    plan = [("token_embd.weight", (s["vocab"], s["hidden"]), q4)]
    for i in range(s["layers"]):
        plan += [(f"blk.{i}.attn_norm.weight", (s["hidden"],), f32),
                 (f"blk.{i}.attn_q.weight", (s["hidden"], s["hidden"]), q4),
                 (f"blk.{i}.attn_k.weight", (kv, s["hidden"]), q4),
                 (f"blk.{i}.attn_v.weight", (kv, s["hidden"]), q4),
                 (f"blk.{i}.attn_output.weight", (s["hidden"], s["hidden"]), q4),
                 (f"blk.{i}.ffn_norm.weight", (s["hidden"],), f32),
                 (f"blk.{i}.ffn_gate.weight", (s["ffn"], s["hidden"]), q4),
                 (f"blk.{i}.ffn_up.weight", (s["ffn"], s["hidden"]), q4),
                 (f"blk.{i}.ffn_down.weight", (s["hidden"], s["ffn"]), q4)]
    plan += [("output_norm.weight", (s["hidden"],), f32), ("output.weight", (s["vocab"], s["hidden"]), q4)]
    for name, shape, kind in plan:
        if kind == f32:
            w.add_tensor_info(name, shape, np.dtype(np.float32), int(np.prod(shape)) * 4, raw_dtype=kind)
        else:  # quantized: the writer takes the byte shape and derives the element shape
            byte_shape = (shape[0], shape[1] // 32 * 18)
            w.add_tensor_info(name, byte_shape, np.dtype(np.uint8), int(np.prod(byte_shape)), raw_dtype=kind)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    scale = np.frombuffer(np.float16(0.01).tobytes(), dtype=np.uint8)
    for _name, shape, kind in plan:
        if kind == f32:
            w.write_tensor_data(np.ones(shape, dtype=np.float32))
            continue
        rows, cols = shape
        blocks = rng.integers(0, 256, size=(rows, cols // 32, 18), dtype=np.uint8)
        blocks[:, :, :2] = scale
        w.write_tensor_data(blocks.reshape(rows, cols // 32 * 18))
    w.close()


def _child(code: str) -> dict:
    """Run `code` in a fresh interpreter at the repo root; it prints one JSON line last."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    sys.stderr.write(proc.stderr[-4000:])
    if proc.returncode != 0:
        raise SystemExit(f"child failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


_PEAK = """
import json, resource, threading, time, psutil
_proc, _peak, _stop = psutil.Process(), [0], threading.Event()
def _sample():
    while not _stop.is_set():
        _peak[0] = max(_peak[0], _proc.memory_info().rss); time.sleep(0.05)
threading.Thread(target=_sample, daemon=True).start()
def peaks():
    _stop.set()
    return {"peak_rss_sampled": _peak[0], "ru_maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
"""

_PLAN = """
import json, app
from pathlib import Path
from app.engine.loading.fit_plan import plan_model
p = plan_model(Path({gguf!r}))
print(json.dumps(p.to_json() | {{"summary": p.summary()}}))
"""

_CONVERT = """
import app, json, time
from pathlib import Path
from app.engine.loading.loader import convert_gguf, conversion_dtype
t0 = time.perf_counter(); stages = []
def progress(text, frac):
    stages.append((round(time.perf_counter() - t0, 1), text))
folder = convert_gguf(Path({gguf!r}), progress, dtype="bfloat16")
wall = time.perf_counter() - t0
tokenizer_s = next((t for t, text in stages if text.startswith("Converting")), None)
written = sum(f.stat().st_size for f in folder.iterdir())
print(json.dumps({{"folder": str(folder), "wall_s": wall, "tokenizer_and_config_s": tokenizer_s,
                  "bytes_written": written, **peaks()}}))
"""

_ANSWER = """
import json, time, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
folder = {folder!r}
t0 = time.perf_counter()
tok = AutoTokenizer.from_pretrained(folder)
model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16).eval()
load_s = time.perf_counter() - t0
ids = tok.apply_chat_template([{{"role": "user", "content": "Hi"}}], add_generation_prompt=True,
                              return_tensors="pt")["input_ids"]
t1 = time.perf_counter()
with torch.inference_mode():
    logits = model(ids, logits_to_keep=1).logits[0, -1].float()
answer_s = time.perf_counter() - t1
token = int(logits.argmax())
print(json.dumps({{"load_s": load_s, "answer_s": answer_s, "prompt_tokens": ids.shape[1], "token_id": token,
                  "token": tok.decode([token]), "logits_finite": bool(torch.isfinite(logits).all()),
                  "parameters": sum(p.numel() for p in model.parameters()), **peaks()}}))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, default=DEFAULT_GGUF)
    parser.add_argument("--write-only", action="store_true", help="only write the synthetic GGUF")
    args = parser.parse_args(argv)
    if not args.gguf.is_file():
        t0 = time.perf_counter()
        write_synthetic_gguf(args.gguf)
        print(f"wrote {args.gguf} ({args.gguf.stat().st_size / 1e9:.2f} GB) in {time.perf_counter() - t0:.0f} s")
    if args.write_only:
        return 0
    plan = _child(_PLAN.format(gguf=str(args.gguf)))
    print("plan before conversion:", plan["summary"], flush=True)
    convert = _child(_PEAK + _CONVERT.format(gguf=str(args.gguf)))
    print(f"converted in {convert['wall_s']:.0f} s, peak RSS {convert['ru_maxrss'] / 2**30:.2f} GiB", flush=True)
    answer = _child(_PEAK + _ANSWER.format(folder=convert["folder"]))
    rows = [("GGUF size", f"{args.gguf.stat().st_size / 1e9:.2f} GB"),
            ("plan (CPU placement)", plan["verdict_text"]),
            ("conversion wall time", f"{convert['wall_s']:.0f} s"),
            ("  of which tokenizer + config", f"{convert['tokenizer_and_config_s']} s"),
            ("conversion peak RSS (ru_maxrss)", f"{convert['ru_maxrss'] / 2**30:.2f} GiB"),
            ("conversion peak RSS (sampled)", f"{convert['peak_rss_sampled'] / 2**30:.2f} GiB"),
            ("bytes written", f"{convert['bytes_written'] / 1e9:.2f} GB"),
            ("load (bf16, mmap) + one token", f"{answer['load_s']:.0f} s + {answer['answer_s']:.0f} s"),
            ("answer token", repr(answer["token"]))]
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    result = {
        "command": "python tests/benchmarks/gguf_convert.py",
        "machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                    "cpus": os.cpu_count(), "ram_bytes": _ram()},
        "model": SHAPE | {"quantization": "Q4_0", "gguf_bytes": args.gguf.stat().st_size},
        "plan": plan, "convert": convert, "answer": answer,
        "done_when": {"peak_rss_limit_bytes": int(2.5e9),
                      "peak_rss_ok": max(convert["ru_maxrss"], convert["peak_rss_sampled"]) <= 2.5e9},
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0


def _ram() -> int:
    import psutil

    return psutil.virtual_memory().total


if __name__ == "__main__":
    sys.exit(main())
