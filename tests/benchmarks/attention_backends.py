"""FlashAttention-2 vs SDPA vs eager on the Llama-3-8B shape in NF4, through Headroom's own path
(issue 19, item 4), one process, one loaded model.

The model (random init, `speed.build_model`) is opened by Headroom's loader, whose LoadReport
must say ``flash_attention_2 (flash-attn …)`` when the FA2 wheel is installed; its kernels are
checked in a profile (`app.self_test.check_flash_attention`). Then, for each backend —

* ``fa2``: Headroom's "fa2+static" (FA2 flash_attn_with_kvcache for prefill chunks and decode),
* ``sdpa``: Headroom's "sdpa+gqa-packed" (torch SDPA's flash kernel over the filled span for
  prefill, packed GQA matmuls for decode) — the path every earlier GPU figure used,
* ``eager``: transformers' eager attention —

the same model is switched to it and measured through the app's objects (memory_foresight.Bench:
`Foresight.admit` picks the prefill chunk and cache capacity, `stream_reply` runs the turn):

(a) TTFT and peak memory above the weights for 1k / 4k / 16k / 32k-token prompts (each turn
    projected first: the projection of the backend that runs, beside the measured peak);
(b) decode tok/s at 1k, 4k and 16k context: compiled CUDA-graph step (fa2, sdpa), eager-static at 1k;
(c) the simulated 12 GiB card (``set_per_process_memory_fraction``): the largest prompt + 64
    answer tokens admitted, run to completion, vs the physical KV limit.

    python3 -m tests.benchmarks.attention_backends --out $OUT                # H200
    python3 -m tests.benchmarks.attention_backends --tiny --fake-fa2 --out /tmp/ab   # CPU smoke

Prints a table and writes attention_backends_<machine>.json (command, versions, figures);
``--deadline`` (seconds) skips what would not finish, saving after every step.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

import app  # noqa: F401  (offline, allocator settings before torch)
from app.engine.loading.loader import LoadedModel, load_model
from app.engine.local import fa2_attention as fa
from app.engine.local.attention import enable_packed_sdpa
from tests.benchmarks.memory_foresight import CARD_BYTES, Bench, MiB
from tests.benchmarks.speed import build_model, decode_speed, eager_speed, log, versions

# fa2-packed: FA2 prefill with Headroom's packed decode (the app's default with FA2 installed)
BACKENDS = ("fa2", "fa2-packed", "sdpa", "eager")
PROMPTS = (1024, 4096, 16384, 32768)
TTFT_NEW = 16  # answer tokens of a TTFT turn (the first one is what TTFT measures)


def use_backend(model, backend: str, fa2_version: str | None, decode: str = "fa2") -> tuple[str, tuple[str, ...]]:
    """Switch the loaded model's attention; returns (LoadReport label, phase lines)."""
    if backend in ("fa2", "fa2-packed"):
        phases = fa.choose_phases("packed" if backend == "fa2-packed" else decode)
        fa.switch_to_fa2_static(model, phases)
    elif backend == "sdpa":
        model.set_attn_implementation("sdpa")
        phases = fa.sdpa_phases(enable_packed_sdpa(model))
    elif backend == "eager":
        model.set_attn_implementation("eager")
        phases = fa.sdpa_phases("eager")
    else:
        raise ValueError(backend)
    return fa.attention_label(model.config._attn_implementation, fa2_version), phases.lines()


def kernel_profile(loaded) -> dict:
    """FA2 / torch-flash kernel launches in one 1,024-token prefill and one decode step."""
    from app import self_test
    from app.engine.local.generation import forward_step, prefill
    from app.engine.local.kv_session import KVSession

    if loaded.model.device.type != "cuda":
        return {"skipped": "no CUDA"}
    session = KVSession()
    ids = torch.randint(1000, 120000, (1, 1024)).tolist()[0]
    cache, _ = session.begin_turn(loaded.model, ids, 4)
    x = torch.tensor([ids], device=loaded.model.device)
    step = torch.zeros((1, 1), dtype=torch.long, device=loaded.model.device)
    with torch.inference_mode():
        pre = self_test._profiled_kernels(lambda: prefill(loaded.model, x, cache, None))
        dec = self_test._profiled_kernels(lambda: forward_step(loaded.model, step, cache))
    session.invalidate()

    def attention_kernels(names):
        out: dict[str, int] = {}
        for n in names:
            if "flash" in n or "attention" in n.lower() or "fmha" in n:
                key = n.split("<", 1)[0].removeprefix("void ")[:80]
                out[key] = out.get(key, 0) + 1
        return out

    return {"prefill_fa2": self_test.fa2_kernels(pre), "decode_fa2": self_test.fa2_kernels(dec),
            "prefill_attention_kernels": attention_kernels(pre), "decode_attention_kernels": attention_kernels(dec)}


def ttft_rows(bench: Bench, prompts) -> list[dict]:
    rows = []
    for n in prompts:
        row = bench.turn(n, TTFT_NEW, admit=False)
        row["peak_above_weights"] = row.get("measured_peak", 0) - bench.weights_allocated
        rows.append({k: row.get(k) for k in (
            "prompt", "chunk", "capacity", "ttft_s", "measured_peak", "peak_above_weights", "measured_growth",
            "projected_growth", "projected_peak", "err_growth", "oom", "oom_message", "admitted")})
        log(bench.name, "ttft", json.dumps(rows[-1], default=str))
    return rows


def decode_rows(loaded, backend: str, compile_decode: bool, tiny: bool) -> dict:
    """Decode tok/s at 1k, 4k and 16k context (the compiled step: fa2 and sdpa) and eager-static at 1k.
    16k is where the attention's share of the step shows (issue 12: 130-136 tok/s at 16-21k)."""
    from app.engine.local.compiled_decode import warm_up

    vocab = loaded.model.config.vocab_size
    ctx, new = ((64, 200), 16) if tiny else ((1024, 3840, 16256), 128)
    out: dict = {"eager_static": eager_speed(loaded, ctx[0], 32 if not tiny else 8, vocab, static=True)}
    if compile_decode and backend != "eager":
        t = time.perf_counter()
        kwargs = {} if torch.cuda.is_available() else {"compiler": lambda fn: fn, "require_cuda": False}
        decoder = warm_up(loaded, (2048, 4096) if not tiny else (256,), **kwargs)
        out["compile_s"] = time.perf_counter() - t
        out["status"] = decoder.status.__dict__
        out["compiled"] = [decode_speed(loaded, decoder, c, new, vocab) for c in ctx]
        del decoder
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return out


def flash_attn_version(fake: bool) -> str:
    """The installed flash-attn's version ("not importable: …" when it does not import)."""
    if fake:
        from tests.helpers.fake_flash_attn import FakeFlashAttn

        return f"{FakeFlashAttn().__version__} (fake, CPU smoke)"
    try:
        import flash_attn
    except Exception as exc:  # noqa: BLE001 - recorded: the fa2 backend is then skipped
        return f"not importable: {exc}"
    return str(getattr(flash_attn, "__version__", "?"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tiny", action="store_true", help="2-layer model on the CPU (smoke test)")
    ap.add_argument("--fake-fa2", action="store_true", help="tiny only: tests/helpers' fake flash_attn")
    ap.add_argument("--out", default=os.environ.get("OUT", "tests/benchmarks/results"))
    ap.add_argument("--model-dir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "llama8b"))
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--no-compile", action="store_true", help="skip the compiled decode (≈80 s per backend cold)")
    ap.add_argument("--deadline", type=float, default=540, help="seconds; later steps are skipped past it")
    args = ap.parse_args(argv)
    t0 = time.time()
    deadline = t0 + args.deadline
    R: dict = {"command": "python3 -m tests.benchmarks.attention_backends " + " ".join(argv or sys.argv[1:]),
               "versions": versions(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "backends": {}}
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / ("attention_backends_cpu_tiny.json" if args.tiny else "attention_backends_h200.json")

    def save():
        R["elapsed_s"] = time.time() - t0
        path.write_text(json.dumps(R, indent=1, default=str))

    if args.fake_fa2 and not args.tiny:
        raise SystemExit("--fake-fa2 is for --tiny only")
    R["versions"]["flash_attn"] = flash_attn_version(args.fake_fa2)
    folder = Path(args.model_dir + ("-tiny" if args.tiny else ""))
    t = time.time()
    build_model(folder, args.tiny)
    R["build_s"] = time.time() - t
    t = time.time()
    loaded = load_model(folder)
    R["load_s"] = time.time() - t
    fa2_version = R["versions"]["flash_attn"] if not str(R["versions"]["flash_attn"]).startswith("not") else None
    if args.fake_fa2:  # the loader cannot load FA2 on the CPU: switch as it would
        from tests.helpers.fake_flash_attn import FakeFlashAttn

        sys.modules["flash_attn"] = FakeFlashAttn()
        loaded.model.config._attn_implementation = fa.FA2_LABEL
        phases = fa.enable_fa2_static(loaded.model)
        loaded.report = replace(loaded.report, attention=fa.attention_label(fa.FA2_STATIC, fa2_version),
                                attention_phases=phases.lines())
    R["load_report"] = loaded.report.__dict__
    log("loaded", loaded.report.summary(), loaded.report.attention_phases, loaded.report.fallbacks)
    if torch.cuda.is_available():
        from app import self_test

        R["self_test_fa2"] = self_test._guarded("FlashAttention-2",
                                                lambda: self_test.check_flash_attention(loaded)).line()
        log(R["self_test_fa2"])
    save()

    backends = [b for b in args.backends.split(",") if not b.startswith("fa2") or fa2_version]
    if "fa2" in args.backends and "fa2" not in backends:
        R["fa2_skipped"] = f"flash_attn {R['versions']['flash_attn']}"
    weights = torch.cuda.memory_allocated() if torch.cuda.is_available() else 0
    benches: dict[str, Bench] = {}
    for backend in backends:  # (a) TTFT and peak memory, then (b) decode, per backend
        label, phases = use_backend(loaded.model, backend, fa2_version)
        view = LoadedModel(loaded.model, loaded.tokenizer, replace(loaded.report, attention=label,
                                                                   attention_phases=phases),
                           loaded.prompt_format, loaded.stop_ids)
        res = R["backends"].setdefault(backend, {"attention": label, "phases": phases})
        bench = Bench(backend, view, 0, args.tiny)
        benches[backend] = bench
        res["weights_allocated"] = bench.weights_allocated
        res["warm_up"] = {k: bench.warm_up(64 if args.tiny else 1024).get(k) for k in ("ttft_s", "chunk", "oom")}
        if torch.cuda.is_available() and backend != "eager":
            res["kernels"] = kernel_profile(view)
        prompts = (64, 128, 256, 512) if args.tiny else PROMPTS
        res["ttft"] = ttft_rows(bench, [n for n in prompts if time.time() < deadline - 120])
        save()
        if time.time() < deadline - (200 if not args.no_compile else 60):
            res["decode"] = decode_rows(view, backend, not args.no_compile, args.tiny)
            log(backend, "decode", json.dumps(res["decode"], default=str)[:400])
        save()
    cap = 400 * MiB if args.tiny else CARD_BYTES
    torch._dynamo.reset()  # the compiled steps' CUDA-graph pools would count as reserved on the card
    gc.collect()
    for backend in backends:  # (c) the simulated card, last: the cap stays for the process
        if time.time() > deadline - 45:
            R["backends"][backend]["card"] = {"skipped": "deadline"}
            continue
        use_backend(loaded.model, backend, fa2_version)
        bench = benches[backend]
        bench.simulate_card(cap)
        card = bench.card(cap, deadline, 0)
        card["admitted_run"] = {k: (card["admitted_run"] or {}).get(k) for k in (
            "prompt", "chunk", "capacity", "ttft_s", "measured_peak", "projected_peak", "oom", "oom_message")}
        R["backends"][backend]["card"] = card
        save()
    R["weights_allocated_after_load"] = weights
    R["total_s"] = time.time() - t0
    save()
    print_table(R)
    return 0


def print_table(R: dict) -> None:
    log(f"\nLoadReport: {R['load_report']['attention']} · {' | '.join(R['load_report']['attention_phases'])}")
    if R.get("self_test_fa2"):
        log(R["self_test_fa2"])
    names = list(R["backends"])
    log("\n| figure | " + " | ".join(names) + " |\n|---|" + "---|" * len(names))

    def row(title, fn):
        cells = []
        for b in names:
            try:
                cells.append(fn(R["backends"][b]))
            except (KeyError, TypeError, IndexError, StopIteration):
                cells.append("")
        log(f"| {title} | " + " | ".join(cells) + " |")

    prompts = sorted({r["prompt"] for b in names for r in R["backends"][b].get("ttft", [])})
    for n in prompts:
        pick = lambda res, n=n: next(r for r in res["ttft"] if r["prompt"] == n)  # noqa: E731
        row(f"TTFT @{n} (chunk)", lambda res, p=pick: f"{p(res)['ttft_s'] * 1e3:.0f} ms ({p(res)['chunk']})"
            if not p(res)["oom"] else "OOM")
    for n in prompts:
        pick = lambda res, n=n: next(r for r in res["ttft"] if r["prompt"] == n)  # noqa: E731
        row(f"peak above weights @{n} (projected growth)",
            lambda res, p=pick: f"{p(res)['peak_above_weights'] / 2**30:.2f} GiB "
                                f"({p(res)['projected_growth'] / 2**30:.2f})")
    for i, ctx in enumerate(("1k", "4k")):
        row(f"decode tok/s @{ctx}, compiled", lambda res, i=i: f"{res['decode']['compiled'][i]['tok_s']:.1f}")
    row("decode tok/s @1k, eager-static", lambda res: f"{res['decode']['eager_static']['tok_s']:.1f}")
    row("12 GiB card: largest prompt admitted (+64)",
        lambda res: f"{res['card']['largest_admitted_prompt']:,} "
                    f"({100 * res['card'].get('admitted_vs_kv_limit', 0):.0f}% of KV limit, "
                    f"{'completed' if res['card']['admitted_completed'] else 'FAILED'})")


if __name__ == "__main__":
    sys.exit(main())
