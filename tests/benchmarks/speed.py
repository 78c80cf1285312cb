"""Speed benchmark (issue 5): decode tok/s, TTFT, 10-turn chat TTFT ratio, compile warm-up and
preallocated-cache memory, measured through Headroom's own generation path
(`stream_reply` / `stream_chat_reply` with a `KVSession` and the compiled decoder).

On the H200 (random-init Llama-3-8B shape, NF4 + double quant via Headroom's loader), run
right after ../shared/gpu/plain_recipe_baseline.py in the same command, so the plain recipe's
figures sit beside ours:

    python3 -m tests.benchmarks.speed --baseline $OUT/baseline.json --out $OUT

`--tiny` runs the same code on a 2-layer model on the CPU in a few seconds (smoke test).

`--kv-dtype bf16,int8` (issue 16) measures only decode at 4k and 32k depth (256 new tokens, the
second reply of a session, compiled path) for each KV cache precision in the same process, then
stops: writes speed_h200_kv8.json (speed_cpu_tiny_kv8.json with --tiny). The warm-up compiles the
decode step for each KV precision asked for (as the app does for an 8-bit chat: a step compiled for
16-bit KV does not serve an 8-bit cache), so no reply compiles: ``first_run_s`` is the first
reply at that depth (CUDA-graph recording only), the second is measured.
Prints a table and writes speed_<machine>.json (machine, command, versions, figures).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import threading
import time
from pathlib import Path

import torch

import app  # noqa: F401  (offline, allocator settings before torch)
from app.engine.events import ReplyFinished
from app.engine.loading.loader import load_model
from app.engine.local.compiled_decode import warm_up
from app.engine.local.generation import SamplingParams, default_prefill_chunk, stream_chat_reply, stream_reply
from app.engine.local.kv_session import KVSession, round_capacity
from app.engine.memory.admission import project_turn_peak
from app.engine.memory.calibration import Calibration
from app.engine.memory.kv_layout import kv_cache_bytes
from app.engine.memory.prefill_spike import PrefillModel

H200_BANDWIDTH = 4.8e12  # bytes/s, HBM3e, NVIDIA H200 datasheet
SPECIALS = {128000: "<|begin_of_text|>", 128001: "<|end_of_text|>", 128006: "<|start_header_id|>",
            128007: "<|end_header_id|>", 128009: "<|eot_id|>"}
TEMPLATE = ("{{ '<|begin_of_text|>' }}{% for m in messages %}<|start_header_id|> {{ m['role'] }} "
            "<|end_header_id|> {{ m['content'] }} <|eot_id|> {% endfor %}"
            "{% if add_generation_prompt %}<|start_header_id|> assistant <|end_header_id|>{% endif %}")


def log(*args):
    print(*args, flush=True)


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


# ----------------------------------------------------------------------------- model + tokenizer
def write_word_tokenizer(folder: Path, vocab_size: int) -> None:
    """A word-level tokenizer with one token per id ("t17" -> 17) and Llama-3-like special
    tokens and chat template: the H200 is offline, and speed depends on shapes, not words."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {f"t{i}": i for i in range(vocab_size)}
    for i in range(min(128000, vocab_size), vocab_size):
        vocab[SPECIALS.get(i, f"<|reserved_{i}|>")] = i
        del vocab[f"t{i}"]
    tok = Tokenizer(models.WordLevel(vocab, unk_token="t0"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    specials = [s for i, s in SPECIALS.items() if i < vocab_size]
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="t0")
    if specials:
        fast.add_special_tokens({"additional_special_tokens": specials,
                                 "eos_token": "<|eot_id|>", "bos_token": "<|begin_of_text|>"})
    fast.chat_template = TEMPLATE
    fast.save_pretrained(folder)


def build_model(folder: Path, tiny: bool) -> None:
    from transformers import LlamaConfig

    if tiny:
        cfg = LlamaConfig(vocab_size=1024, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32768,
                          tie_word_embeddings=True)
    else:  # the same config as plain_recipe_baseline.py
        cfg = LlamaConfig(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                          num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=131072,
                          rope_theta=500000.0, tie_word_embeddings=False, bos_token_id=128000,
                          eos_token_id=128001)
    save_random_model(folder, cfg, torch.bfloat16 if not tiny else torch.float32)


def save_random_model(folder: Path, cfg, dtype: torch.dtype) -> None:
    """Random-init weights of ``cfg`` (built on the GPU when there is one) and a word tokenizer,
    saved to ``folder``; parts already there are kept."""
    from transformers import AutoModelForCausalLM

    if not (folder / "config.json").exists():
        with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
            model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
        model.save_pretrained(folder, max_shard_size="5GB")
        del model
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    if not (folder / "tokenizer.json").exists():
        write_word_tokenizer(folder, cfg.vocab_size)


def random_ids(n: int, vocab: int, seed: int) -> list[int]:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(1000 % vocab, min(vocab, 128000) - 1, (n,), generator=g).tolist()


def words(n: int, seed: int, vocab: int) -> str:
    return " ".join(f"t{i}" for i in random_ids(n, vocab, seed))


# ----------------------------------------------------------------------------- measurements
def finish(events) -> ReplyFinished:
    last = None
    for event in events:
        last = event
    assert isinstance(last, ReplyFinished), last
    return last


def reply(loaded, prompt_ids, new, session=None, decoder=None, chunk=None, temperature=0.0) -> ReplyFinished:
    params = SamplingParams(max_new_tokens=new, temperature=temperature, top_p=0.95, seed=1 if temperature else None)
    return finish(stream_reply(loaded.model, loaded.tokenizer, prompt_ids, params, frozenset(),
                               threading.Event(), (), chunk, session=session, decoder=decoder))


def decode_speed(loaded, decoder, context: int, new: int, vocab: int, temperature: float = 0.0,
                 kv_bits: int = 16, static: bool | None = None) -> dict:
    """Decode tok/s of the second of two replies on one session (the first records the graph);
    temperature 0 = greedy, else top-p 0.95 sampling on the device (the app's default path);
    kv_bits 8: the session's KV cache in 8 bits (issue 16)."""
    prompt = random_ids(context, vocab, seed=context)
    session = KVSession(capacity_tokens=round_capacity(context + new), static=static, kv_bits=kv_bits)
    first = reply(loaded, prompt, new, session, decoder, temperature=temperature)
    second = reply(loaded, prompt, new, session, decoder, temperature=temperature)
    return {"context": context, "temperature": temperature, "new_tokens": second.new_tokens,
            "capacity": session.capacity_tokens,
            "tok_s": second.decode_tokens_per_s, "first_run_tok_s": first.decode_tokens_per_s,
            "path": second.decode_path, "cache_bytes": session.cache_bytes, "kv_bits": kv_bits,
            "first_run_s": first.ttft_s + first.new_tokens / max(first.decode_tokens_per_s, 1e-9)}


def kv_depths(loaded, decoder, dtypes: list[str], tiny: bool) -> list[dict]:
    """Decode at 4k and 32k depth (tokens already in the cache) for each KV dtype ("bf16" = the
    compute dtype, "int8" = 8-bit KV), one after the other on the same compiled decoder."""
    depths, new = ((4096, 32768), 256) if not tiny else ((256, 1024), 16)
    rows = []
    for dtype in dtypes:
        for depth in depths:
            row = decode_speed(loaded, decoder, depth, new, loaded.model.config.vocab_size,
                               kv_bits=8 if dtype == "int8" else 16, static=True)  # as on CUDA, also --tiny
            row["kv_dtype"] = dtype
            rows.append(row)
            log("kv depth", dtype, depth, f"{row['tok_s']:.1f} tok/s", row["path"])
            gc.collect()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
    for row in rows:
        same = [r for r in rows if r["context"] == row["context"] and r["kv_bits"] == 16]
        if same and row["kv_bits"] == 8:
            row["vs_16bit"] = row["tok_s"] / max(same[0]["tok_s"], 1e-9)
    return rows


def eager_speed(loaded, context: int, new: int, vocab: int, static: bool) -> dict:
    prompt = random_ids(context, vocab, seed=context)
    session = KVSession(capacity_tokens=round_capacity(context + new), static=static)
    done = reply(loaded, prompt, new, session)
    return {"context": context, "tok_s": done.decode_tokens_per_s, "path": done.decode_path}


def ttft(loaded, context: int, vocab: int, layout_model, chunk=None) -> dict:
    prompt = random_ids(context, vocab, seed=context + 1)
    reply(loaded, prompt[:256], 1)  # warm kernels for this path
    gc.collect()
    before = torch.cuda.memory_allocated() if torch.cuda.is_available() else 0
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    session = KVSession()
    sync()
    done = reply(loaded, prompt, 1, session, chunk=chunk)
    peak = torch.cuda.max_memory_allocated() - before if torch.cuda.is_available() else 0
    capacity = session.capacity_tokens or context + 1
    proj = project_turn_peak(layout_model, Calibration(), now_allocated=before, prompt_tokens=context,
                             max_new_tokens=capacity - context,
                             chunk_size=chunk or default_prefill_chunk(loaded.model.device))
    out = {"context": context, "ttft_s": done.ttft_s, "prefill_tokens": done.prefill_tokens,
           "capacity": capacity, "cache_bytes": session.cache_bytes,
           "measured_peak_over_before": peak, "projected_growth": proj.growth,
           "projected_kv": proj.kv_for_turn, "projected_spike": proj.prefill_spike}
    session.invalidate()
    return out


def plain_ttft(model, ids: list[int]) -> float:
    """The plain recipe's TTFT: `generate(max_new_tokens=1)` on the whole prompt."""
    x = torch.tensor([ids], device=model.device)
    sync()
    t = time.perf_counter()
    with torch.inference_mode():
        model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=1, do_sample=False,
                       pad_token_id=0)
    sync()
    return time.perf_counter() - t


def chat_turns(loaded, decoder, turns: int, user_tokens: int, new: int, vocab: int,
               capacity: int) -> dict:
    from app.engine.local.chat_format import encode_prompt, render_prompt

    session = KVSession(capacity_tokens=capacity)
    messages = [{"role": "system", "content": "t5 t6 t7 t8"}]
    rows, plain = [], []
    for turn in range(turns):
        messages.append({"role": "user", "content": words(user_tokens, 100 + turn, vocab)})
        params = SamplingParams(max_new_tokens=new, temperature=0)
        done = finish(stream_chat_reply(loaded, messages, params, threading.Event(), session=session,
                                        decoder=decoder))
        prompt_ids = encode_prompt(loaded.tokenizer, render_prompt(loaded.tokenizer, loaded.prompt_format,
                                                                   messages))
        plain.append(plain_ttft(loaded.model, prompt_ids))
        rows.append({"turn": turn + 1, "prompt_tokens": done.prompt_tokens, "prefill_tokens": done.prefill_tokens,
                     "reused_tokens": done.reused_tokens, "new_tokens": done.new_tokens,
                     "ttft_s": done.ttft_s, "decode_tok_s": done.decode_tokens_per_s,
                     "path": done.decode_path, "plain_ttft_s": plain[-1]})
        messages.append({"role": "assistant", "content": done.text})
    return {"turns": rows, "ttft_ratio_10_1": rows[-1]["ttft_s"] / rows[0]["ttft_s"],
            "plain_ttft_ratio_10_1": plain[-1] / plain[0], "session_notes": session.notes,
            "cache_bytes": session.cache_bytes, "cached_tokens": session.cached_tokens}


def profile_decode(loaded, decoder, context: int, vocab: int, compiled: bool) -> list[dict]:
    """Top ops (by device time) of 24 decode steps: compiled graph replays or eager-static."""
    from torch.profiler import ProfilerActivity, profile

    prompt = random_ids(context, vocab, seed=7)
    session = KVSession(capacity_tokens=round_capacity(context + 64))
    reply(loaded, prompt, 8, session, decoder if compiled else None)
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    with profile(activities=acts) as prof:
        reply(loaded, prompt, 24, session, decoder if compiled else None)
    key = "device_time_total" if torch.cuda.is_available() else "cpu_time_total"
    rows = []
    for e in sorted(prof.key_averages(), key=lambda e: getattr(e, key, 0), reverse=True)[:12]:
        rows.append({"op": e.key[:80], "calls": e.count, "device_ms": getattr(e, key, 0) / 1e3,
                     "cpu_ms": e.cpu_time_total / 1e3})
    session.invalidate()
    return rows


# ----------------------------------------------------------------------------- main
def versions() -> dict:
    import transformers

    out = {"python": platform.python_version(), "torch": torch.__version__,
           "transformers": transformers.__version__, "machine": platform.node()}
    try:
        import bitsandbytes

        out["bitsandbytes"] = bitsandbytes.__version__
    except Exception as exc:
        out["bitsandbytes"] = repr(exc)[:80]
    if torch.cuda.is_available():
        out["gpu"] = torch.cuda.get_device_name(0)
        out["sdpa_flash_enabled"] = torch.backends.cuda.flash_sdp_enabled()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--baseline", default=None)
    ap.add_argument("--out", default=os.environ.get("OUT", "tests/benchmarks/results"))
    ap.add_argument("--model-dir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "llama8b"))
    ap.add_argument("--kv-dtype", default=None,
                    help="comma list of bf16,int8: only decode at 4k/32k depth per KV dtype (issue 16)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    R: dict = {"command": "python3 -m tests.benchmarks.speed " + " ".join(argv or sys.argv[1:]),
               "versions": versions(), "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    name = "speed_cpu_tiny.json" if args.tiny else "speed_h200.json"
    if args.kv_dtype:
        name = name.replace(".json", "_kv8.json")

    def save():
        (out_dir / name).write_text(json.dumps(R, indent=1, default=str))

    folder = Path(args.model_dir + ("-tiny" if args.tiny else ""))
    build_model(folder, args.tiny)
    t = time.perf_counter()
    loaded = load_model(folder)
    R["load_s"] = time.perf_counter() - t
    R["load_report"] = loaded.report.__dict__
    vocab = loaded.model.config.vocab_size
    R["weights_allocated"] = torch.cuda.memory_allocated() if torch.cuda.is_available() else 0
    log("loaded", loaded.report.summary(), f"{time.perf_counter() - t0:.0f}s")
    save()

    caps = (2048, 4096)
    statuses = []
    t = time.perf_counter()
    kwargs = {} if torch.cuda.is_available() else {"compiler": lambda fn: fn, "require_cuda": False}
    kv_bits = (16, 8) if args.kv_dtype and "int8" in args.kv_dtype.split(",") else (16,)
    decoder = warm_up(loaded, caps, on_status=statuses.append, kv_bits=kv_bits, **kwargs)
    R["warm_up"] = {"seconds": time.perf_counter() - t, "status": decoder.status.__dict__,
                    "statuses": [s.state for s in statuses], "kv_bits": kv_bits}
    log("warm-up", R["warm_up"])
    save()

    if args.kv_dtype:
        R["decode_kv"] = kv_depths(loaded, decoder, args.kv_dtype.split(","), args.tiny)
        R["total_s"] = time.perf_counter() - t0
        save()
        for row in R["decode_kv"]:
            print(f"{row['kv_dtype']:>5} depth {row['context']:>6}: {row['tok_s']:7.1f} tok/s  {row['path']:<8} "
                  f"cache {row['cache_bytes'] / 2**30:.2f} GiB  vs 16-bit {row.get('vs_16bit', 1.0):.3f}")
        return 0

    ctx1, ctx4, new = (1024, 3840, 256) if not args.tiny else (64, 200, 16)
    R["decode"] = [decode_speed(loaded, decoder, c, new, vocab) for c in (ctx1, ctx4)]
    log("decode", R["decode"])
    R["decode_sampled"] = [decode_speed(loaded, decoder, ctx1, new, vocab, temperature=0.7)]
    log("decode sampled", R["decode_sampled"])
    R["decode_eager"] = [eager_speed(loaded, ctx1, 48, vocab, static=True),
                         eager_speed(loaded, ctx1, 32, vocab, static=False)]
    log("eager", R["decode_eager"])
    save()

    layout_model = PrefillModel.from_config(loaded.model.config, 2 if not args.tiny else 4,
                                            quantized_4bit=not args.tiny, dynamic_cache=False)
    ctxs = (1024, 4096, 16384) if not args.tiny else (64, 256, 1024)
    R["ttft"] = [ttft(loaded, c, vocab, layout_model) for c in ctxs]
    R["plain_ttft_s"] = {c: plain_ttft(loaded.model, random_ids(c, vocab, c + 1)) for c in ctxs}
    log("ttft", R["ttft"], R["plain_ttft_s"])
    save()

    turns = (10, 150, 150) if not args.tiny else (10, 12, 12)
    R["chat"] = chat_turns(loaded, decoder, *turns, vocab=vocab, capacity=4096 if not args.tiny else 2048)
    log("chat", {k: v for k, v in R["chat"].items() if k != "turns"})
    save()

    layout = layout_model.layout
    R["kv_bytes_per_token_formula"] = layout.bytes_per_token
    R["cache_vs_projection"] = {"capacity": 4096, "measured_cache_bytes": R["chat"]["cache_bytes"],
                                "projected_kv_bytes": kv_cache_bytes(layout, 4096)}
    footprint = loaded.report.weight_bytes
    embed = loaded.model.get_input_embeddings().weight
    read_weights = footprint - embed.numel() * embed.element_size()
    for row in R["decode"]:
        per_token = read_weights + layout.bytes_per_token * row["capacity"]
        row["bytes_per_token"] = per_token
        row["roofline_tok_s"] = H200_BANDWIDTH / per_token
        row["roofline_fraction"] = row["tok_s"] / row["roofline_tok_s"]
    save()

    if time.perf_counter() - t0 < 400:
        R["profile_compiled"] = profile_decode(loaded, decoder, ctx1, vocab, compiled=True)
        R["profile_eager_static"] = profile_decode(loaded, decoder, ctx1, vocab, compiled=False)
    if args.baseline and Path(args.baseline).exists():
        R["baseline"] = json.loads(Path(args.baseline).read_text())
    R["total_s"] = time.perf_counter() - t0
    save()
    print_table(R)
    return 0


def print_table(R: dict) -> None:
    b = R.get("baseline", {})
    log("\n| figure | Headroom | plain recipe | ratio |\n|---|---|---|---|")
    for row in R["decode"]:
        base = b.get(f"base_decode_tok_s_{1024 if row['context'] <= 1024 else 4096}")
        ratio = f"{row['tok_s'] / base:.1f}x" if base else ""
        log(f"| decode tok/s @{row['context']} ({row['path']}, cache {row['capacity']}) | {row['tok_s']:.1f} "
            f"({100 * row.get('roofline_fraction', 0):.0f}% of roofline) | {base or ''} | {ratio} |")
    for row in R.get("decode_sampled", []):
        base = b.get("base_decode_tok_s_1024")
        ratio = f"{row['tok_s'] / base:.1f}x" if base else ""
        log(f"| decode tok/s @{row['context']} sampled T={row['temperature']} top-p 0.95 ({row['path']}) | "
            f"{row['tok_s']:.1f} | {base or ''} (greedy) | {ratio} |")
    for row in R["decode_eager"]:
        log(f"| decode tok/s @{row['context']} ({row['path']}) | {row['tok_s']:.1f} | | |")
    for row in R["ttft"]:
        plain = R["plain_ttft_s"].get(row["context"])
        log(f"| TTFT @{row['context']} | {row['ttft_s'] * 1e3:.0f} ms | {plain * 1e3:.0f} ms | |")
    c = R["chat"]
    log(f"| 10-turn TTFT turn10/turn1 | {c['ttft_ratio_10_1']:.2f} | {c['plain_ttft_ratio_10_1']:.2f} | |")
    log(f"| compile warm-up | {R['warm_up']['seconds']:.1f} s ({R['warm_up']['status']['state']}) | | |")
    m = R["cache_vs_projection"]
    log(f"| static cache {m['capacity']} tokens | {m['measured_cache_bytes'] / 2**20:.0f} MiB | "
        f"projection {m['projected_kv_bytes'] / 2**20:.0f} MiB | |")
    for row in R["ttft"]:
        log(f"| peak over pre-turn @{row['context']} | {row['measured_peak_over_before'] / 2**20:.0f} MiB | "
            f"projection {row['projected_growth'] / 2**20:.0f} MiB | |")


if __name__ == "__main__":
    sys.exit(main())
