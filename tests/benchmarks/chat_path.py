"""The window's own path, measured (issue 12, item 7): the same `TurnRunner` the generation worker
drives, with the app's settings, through a 20-turn chat on the Llama-3-8B shape in NF4 (random
init, `speed.save_random_model`) that grows past 16k tokens (256-token answers, long pastes at
turns 5, 10 and 15); then single 1k / 4k / 16k turns (9 / 5 / 3 new chats), each followed at
once by the plain transformers recipe's TTFT on as many tokens (`generate()`, SDPA, same weights,
same process: the pair's ratio is the TTFT comparison); then the plain recipe's own TTFT and decode
at the same lengths. llama.cpp's figures from the
same machine are merged in with ``--llama-decode`` / ``--llama-prefill`` (llama-bench JSON).

Per turn: decode path, decode tok/s, TTFT, prefilled / reused tokens, tokens the cache held that
were prefilled again (must be 0), cache capacity, growth, prefill chunk, projected vs measured
peak. Settings: `GenerationSettings()` defaults except max_new_tokens 256 (the answer length).

    python3 -m tests.benchmarks.chat_path --out $OUT            # H200: 8B NF4
    python3 -m tests.benchmarks.chat_path --tiny --out /tmp/cp  # CPU smoke test, 2-layer model

Prints a table and writes chat_path_<machine>.json (machine, command, versions, figures).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import torch

import app  # noqa: F401  (offline, allocator settings before torch)
from app.core.conversation import Message, Role
from app.core.history import SummaryState
from app.core.settings import GenerationSettings
from app.engine import events as ev
from app.engine.loading.loader import load_model
from app.engine.local.kv_session import common_prefix
from app.engine.local.turn_runner import TurnRunner
from app.engine.memory.probe import pick_probe
from tests.benchmarks.speed import build_model, log, plain_ttft, random_ids, sync, versions, words
from tests.benchmarks.ttft_host import sm_clock_mhz

ANSWER_TOKENS = 256
USER_TOKENS = 300
PASTES = {4: 3000, 9: 4000, 14: 4000}  # 0-based turn -> tokens of a long paste


def compile_breakdown() -> str:
    """torch.compile's own time per phase (dynamo tracing, AOT, Inductor, ...), as it prints it."""
    try:
        from torch._dynamo.utils import compile_times

        return compile_times(repr="str", aggregate=True)
    except Exception as exc:  # a torch without it
        return f"unavailable: {exc}"


def triton_compiled_since(started: float) -> list[str]:
    """Names of the Triton kernels compiled (written to a Triton cache) since ``started`` (time.time()):
    a launch whose caches are warm compiles none. Looks in every folder a kernel may be cached in:
    TRITON_CACHE_DIR, ~/.triton/cache and Inductor's triton folder."""
    roots = {os.environ.get("TRITON_CACHE_DIR", ""), os.path.expanduser("~/.triton/cache"),
             os.path.join(os.environ.get("TORCHINDUCTOR_CACHE_DIR", ""), "triton")}
    names = []
    for root in filter(os.path.isdir, roots - {"", "triton"}):
        for found in Path(root).rglob("*.json"):
            if not found.name.startswith("__grp__") and found.stat().st_mtime >= started:
                names.append(found.stem)
    return sorted(names)


def dynamo_graphs() -> int:
    from torch._dynamo.utils import counters

    return int(counters["stats"].get("unique_graphs", 0))


def run_turn(runner: TurnRunner, messages: list[Message], settings: GenerationSettings, key: str = "") -> dict:
    """One turn through TurnRunner.run_turn, as the window sends it (conversation ``key``);
    returns its row. wall_ttft_s: from the call to the first text (what the user waits: cache
    activation, window, tokenization, admission, prefill, first token); ttft_s: ReplyFinished's
    (from the start of generation)."""
    graphs = dynamo_graphs()
    row: dict = {"sm_clock_mhz": sm_clock_mhz()}  # at send: a lead for TTFT that moves between runs
    started = time.perf_counter()
    for event in runner.run_turn(messages, SummaryState(), settings, threading.Event(), conversation_key=key):
        if isinstance(event, ev.TextDelta) and "wall_ttft_s" not in row:
            row["wall_ttft_s"] = time.perf_counter() - started
        elif isinstance(event, ev.TurnPlanned):
            before = list(runner.session.token_ids)  # the conversation's cache, activated by now
            plan = event.plan
            row["prompt_tokens"] = len(plan.prompt_ids)
            row["cached_prefix"] = min(common_prefix(before, list(plan.prompt_ids)), len(plan.prompt_ids) - 1)
            if plan.projection is not None:
                row["chunk"] = plan.projection.basis.chunk_size
                row["projected_peak"] = plan.projection.peak
        elif isinstance(event, ev.TurnCompleted):
            f, rec = event.finished, event.record
            row.update(decode_path=f.decode_path, tok_s=f.decode_tokens_per_s, ttft_s=f.ttft_s,
                       prefill_tokens=f.prefill_tokens, reused_tokens=f.reused_tokens,
                       new_tokens=f.new_tokens, stop=f.stop_reason, measured_peak=rec.measured_peak,
                       text=f.text)
        elif isinstance(event, (ev.TurnRefused, ev.TurnFailed)):
            row["error"] = getattr(getattr(event, "decision", None), "reason", None) or event.reason
    session = runner.session
    row["reprefilled_cached"] = row.get("cached_prefix", 0) - row.get("reused_tokens", 0)
    row["capacity"] = session.capacity_tokens
    row["growth"] = session.last_growth
    row["new_dynamo_graphs"] = dynamo_graphs() - graphs
    return row


def chat(runner: TurnRunner, settings: GenerationSettings, vocab: int, turns: int, user: int,
         pastes: dict[int, int], rows: list[dict], on_row=lambda: None, messages=None) -> list[Message]:
    """The growing chat (conversation key "chat"); returns its messages."""
    messages = [] if messages is None else messages
    for turn in range(turns):
        messages.append(Message(Role.USER, words(pastes.get(turn, user), 100 + turn, vocab)))
        row = run_turn(runner, messages, settings, "chat")
        messages.append(Message(Role.ASSISTANT, row.pop("text", "")))
        rows.append({"turn": turn + 1, **row})
        log(json.dumps(rows[-1], default=str))
        on_row()
        if "error" in row:
            break
    return messages


def switch_back(runner: TurnRunner, settings: GenerationSettings, vocab: int, messages: list[Message],
                user: int, warm_rows: list[dict]) -> dict:
    """Issue 12, item 5: the user leaves the long chat for another one and comes back. Twice:
    opening the chat first (the window activates its cache when the conversation is opened, so
    the copy back is done before the message is sent), and sending straight away (the copy is
    inside the turn). Compared with the warm turns of the same chat (no switch)."""
    out: dict = {"warm_ttft_s_median": statistics.median(r["ttft_s"] for r in warm_rows),
                 "warm_wall_ttft_s_median": statistics.median(r["wall_ttft_s"] for r in warm_rows)}
    for mode in ("opened_first", "sent_straight"):
        t = time.perf_counter()
        runner.activate(f"other-{mode}", settings.kept_chat_cache_mib)
        sync()
        out[f"{mode}_park_s"] = time.perf_counter() - t
        other = [Message(Role.USER, words(1000, 5000 + len(mode), vocab))]
        out[f"{mode}_other_turn"] = {k: v for k, v in run_turn(runner, other, settings, f"other-{mode}").items()
                                     if k != "text"}
        if mode == "opened_first":
            t = time.perf_counter()
            runner.activate("chat", settings.kept_chat_cache_mib)
            sync()
            out["restore_s"] = time.perf_counter() - t
        messages.append(Message(Role.USER, words(user, 900 + len(mode), vocab)))
        row = run_turn(runner, messages, settings, "chat")
        messages.append(Message(Role.ASSISTANT, row.pop("text", "")))
        out[mode] = row
        out[f"{mode}_ttft_ratio"] = row["ttft_s"] / out["warm_ttft_s_median"]
        out[f"{mode}_wall_ttft_ratio"] = row["wall_ttft_s"] / out["warm_wall_ttft_s_median"]
    out["notes"] = list(runner.sessions.notes)
    log("switch", json.dumps({k: v for k, v in out.items() if not isinstance(v, dict)}, default=str))
    return out


def singles(runner: TurnRunner, settings: GenerationSettings, vocab: int, sizes, repeats,
            plain_model=None) -> list[dict]:
    """New chats of one message of about n tokens each (distinct, so nothing is reused), each
    its own conversation as the window makes it (a new cache; the previous chat's is parked when
    the chat is opened, before the message is sent). repeats: an int, or one per size.

    plain_model: the same weights under the plain recipe, timed right after each Headroom turn on
    a prompt of as many tokens (`plain_ttft_s` in its row): the pair shares the GPU's state of the
    moment, so their ratio is not moved by drift between sections of the run (the 1k TTFT of both
    moved 65-121 ms across the runs of 2026-12-02)."""
    out = []
    for i, n in enumerate(sizes):
        rows = []
        for r in range(repeats if isinstance(repeats, int) else repeats[i]):
            key = f"single-{n}-{r}"
            runner.activate(key, settings.kept_chat_cache_mib)  # "New chat", before the message is typed
            row = run_turn(runner, [Message(Role.USER, words(n - 40, 7000 + 17 * r + n, vocab))], settings, key)
            if plain_model is not None and "prompt_tokens" in row:
                row["plain_ttft_s"] = plain_sdpa_ttft(plain_model, random_ids(row["prompt_tokens"], vocab,
                                                                               9000 + r + n))
            rows.append(row)
        for row in rows:
            row.pop("text", None)
        out.append({"context": n, "ttft_s_median": statistics.median(r["ttft_s"] for r in rows),
                    "tok_s_median": statistics.median(r["tok_s"] for r in rows), "turns": rows})
        paired = [r for r in rows if "plain_ttft_s" in r]
        if paired:
            out[-1]["plain_ttft_s_median"] = statistics.median(r["plain_ttft_s"] for r in paired)
            out[-1]["ttft_ratio_median"] = statistics.median(r["ttft_s"] / r["plain_ttft_s"] for r in paired)
        log(json.dumps({k: v for k, v in out[-1].items() if k != "turns"}))
    return out


def plain_sdpa_ttft(model, ids: list[int]) -> float:
    """`plain_ttft` with transformers' SDPA attention, as the plain recipe runs (the app's own
    attention is put back after)."""
    active = model.config._attn_implementation
    model.set_attn_implementation("sdpa")
    try:
        return plain_ttft(model, ids)
    finally:
        model.set_attn_implementation(active)


def attention_check(model) -> dict:
    """The span prefill path against the packed masked path on this device, Llama-3-8B heads
    (32 query, 8 KV, head_dim 128) in the compute dtype: which kernel ran and the largest
    difference, for a first chunk (span = chunk) and a later one (span > chunk)."""
    from app.engine.local.attention import KV_SPAN_KWARG, _flash_span, gqa_packed_sdpa_forward

    dtype = next(p.dtype for p in model.parameters() if p.is_floating_point())
    device = model.device
    out = {}
    for name, (past, c) in {"first_chunk": (0, 512), "later_chunk": (1536, 512)}.items():
        gen = torch.Generator(device=device).manual_seed(0)
        q = torch.randn(1, 32, c, 128, device=device, dtype=dtype, generator=gen)
        k = torch.randn(1, 8, 4096, 128, device=device, dtype=dtype, generator=gen)
        v = torch.randn(1, 8, 4096, 128, device=device, dtype=dtype, generator=gen)
        pos = torch.arange(past, past + c, device=device).view(c, 1)
        mask = (torch.arange(4096, device=device).view(1, -1) <= pos).view(1, 1, c, 4096)
        module = torch.nn.Module()
        with torch.inference_mode():
            ref, _ = gqa_packed_sdpa_forward(module, q, k, v, mask, scaling=128 ** -0.5)
            got, _ = gqa_packed_sdpa_forward(module, q, k, v, mask, scaling=128 ** -0.5,
                                             **{KV_SPAN_KWARG: past + c})
            flash = _flash_span(q, k[:, :, :past + c], v[:, :, :past + c], 128 ** -0.5, 4) is not None
        out[name] = {"flash": flash, "max_abs_diff": float((got.float() - ref.float()).abs().max())}
    return out


def plain_recipe(model, vocab: int, sizes, decode_sizes, repeats: int, new: int) -> dict:
    """transformers `generate()` with SDPA on the same weights: TTFT (median of ``repeats``)
    and greedy decode tok/s = (new − 1) / (t_new − t_1)."""
    active = model.config._attn_implementation
    model.set_attn_implementation("sdpa")
    try:
        ttft = {n: statistics.median(plain_ttft(model, random_ids(n, vocab, 9000 + r + n)) for r in range(repeats))
                for n in sizes}
        decode = {}
        for n in decode_sizes:
            ids = random_ids(n, vocab, 9500 + n)
            x = torch.tensor([ids], device=model.device)
            t1 = plain_ttft(model, ids)
            sync()
            t = time.perf_counter()
            with torch.inference_mode():
                model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=new, min_new_tokens=new,
                               do_sample=False, pad_token_id=0)
            sync()
            decode[n] = (new - 1) / (time.perf_counter() - t - t1)
    finally:
        model.set_attn_implementation(active)
    return {"attention": "sdpa", "ttft_s_median": ttft, "decode_tok_s": decode, "decode_new_tokens": new}


def llama_cpp(decode_json: str | None, prefill_json: str | None) -> dict:
    """llama-bench -o json rows: decode tok/s by depth, prefill tok/s and implied TTFT by length."""
    out: dict = {}
    for key, path in (("decode", decode_json), ("prefill", prefill_json)):
        if not path or not Path(path).exists():
            continue
        try:
            rows = json.loads(Path(path).read_text())
        except ValueError as exc:
            out[key + "_error"] = str(exc)[:200]
            continue
        for r in rows:
            if key == "decode" and r.get("n_gen"):
                out.setdefault("decode_tok_s", {})[r.get("n_depth", 0)] = r["avg_ts"]
            elif key == "prefill" and r.get("n_prompt"):
                out.setdefault("prefill_tok_s", {})[r["n_prompt"]] = r["avg_ts"]
                out.setdefault("prefill_s", {})[r["n_prompt"]] = r["n_prompt"] / r["avg_ts"]
        out["model"] = rows[0].get("model_type") if rows else None
        out["build"] = rows[0].get("build_commit") if rows else None
    return out


def second_launch(path: str | None) -> dict | None:
    """The warm-up figures a second process printed (Inductor's caches warm), or None."""
    if not path or not Path(path).exists():
        return None
    for line in reversed(Path(path).read_text(errors="replace").splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                break
    return {"error": Path(path).read_text(errors="replace")[-400:]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--out", default=os.environ.get("OUT", "tests/benchmarks/results"))
    ap.add_argument("--model-dir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "llama8b"))
    ap.add_argument("--llama-decode", default=None)
    ap.add_argument("--llama-prefill", default=None)
    ap.add_argument("--merge", default=None, help="add llama.cpp figures to this result JSON and print")
    ap.add_argument("--second-launch", default=None, help="output of a --warm-up-only run to merge")
    ap.add_argument("--warm-up-only", action="store_true", help="load + warm up, print seconds (second launch)")
    ap.add_argument("--warm-up-done", default=None, help="write this file when the warm-up is over")
    args = ap.parse_args(argv)
    if args.merge:
        R = json.loads(Path(args.merge).read_text())
        R["llama_cpp"] = llama_cpp(args.llama_decode, args.llama_prefill)
        R["second_launch"] = second_launch(args.second_launch)
        Path(args.merge).write_text(json.dumps(R, indent=1, default=str))
        print_table(R)
        return 0
    t0 = time.perf_counter()
    R: dict = {"command": "python3 -m tests.benchmarks.chat_path " + " ".join(argv or sys.argv[1:]),
               "versions": versions(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / ("chat_path_cpu_tiny.json" if args.tiny else "chat_path_h200.json")

    def save():
        path.write_text(json.dumps(R, indent=1, default=str))

    folder = Path(args.model_dir + ("-tiny" if args.tiny else ""))
    build_model(folder, args.tiny)
    launched = time.time()
    t = time.perf_counter()
    loaded = load_model(folder)
    R["load_s"] = time.perf_counter() - t
    R["load_report"] = loaded.report.summary()
    runner = TurnRunner(loaded, pick_probe())
    statuses = []
    t = time.perf_counter()
    status = runner.warm_up(lambda s: statuses.append(s.state))
    R["warm_up"] = {"seconds_total": time.perf_counter() - t, "compile_seconds": status.seconds,
                    "state": status.state, "reason": status.reason, "statuses": statuses,
                    "inductor_cache": os.environ.get("TORCHINDUCTOR_CACHE_DIR"),
                    "phases_s": getattr(runner.decoder, "warm_up_phases", {}),
                    "compile_times": compile_breakdown(),
                    "triton_compiled": triton_compiled_since(launched)}
    if args.warm_up_done:
        Path(args.warm_up_done).write_text("done")
    log("warm-up", R["warm_up"])
    if args.warm_up_only:
        print(json.dumps(R["warm_up"] | {"load_s": R["load_s"]}))
        return 0
    save()
    vocab = loaded.model.config.vocab_size
    settings = GenerationSettings(max_new_tokens=ANSWER_TOKENS if not args.tiny else 16)
    R["settings"] = settings.__dict__ | {"system_prompt": settings.system_prompt}
    R["attention_check"] = attention_check(loaded.model)
    log("attention", R["attention_check"])
    R["chat"] = []
    if args.tiny:
        messages = chat(runner, settings, vocab, 6, 40, {2: 300}, R["chat"], save)
    else:
        messages = chat(runner, settings, vocab, 20, USER_TOKENS, PASTES, R["chat"], save)
    R["session_notes"] = list(runner.session.notes)
    save()
    R["switch"] = switch_back(runner, settings, vocab, messages, 40 if args.tiny else USER_TOKENS,
                              [r for r in R["chat"][-4:] if "ttft_s" in r])
    save()
    sizes = (1024, 4096, 16384) if not args.tiny else (128, 256, 512)
    R["single"] = singles(runner, replace(settings, max_new_tokens=128 if not args.tiny else 8), vocab, sizes,
                          (9, 5, 3), plain_model=loaded.model)
    if runner.foresight.prefill_models_whole:  # the same turns with the NF4 prefill always sliced, to compare
        whole, runner.foresight.prefill_models_whole = runner.foresight.prefill_models_whole, {}
        R["single_nf4_sliced"] = singles(runner, replace(settings, max_new_tokens=128 if not args.tiny else 8),
                                         vocab, sizes, 3)
        runner.foresight.prefill_models_whole = whole
    R["dynamo_graphs_total"] = dynamo_graphs()
    save()
    R["plain"] = plain_recipe(loaded.model, vocab, sizes, sizes[:2], 3, 64 if not args.tiny else 8)
    log("plain", R["plain"])
    R["llama_cpp"] = llama_cpp(args.llama_decode, args.llama_prefill)
    R["total_s"] = time.perf_counter() - t0
    save()
    print_table(R)
    return 0


def print_table(R: dict) -> None:
    log("\n| turn | prompt | capacity | prefilled / reused | re-prefilled cached | chunk | path | tok/s | TTFT ms "
        "| send-to-first-text ms |")
    log("|---|---|---|---|---|---|---|---|---|---|")
    for r in R.get("chat", []):
        log(f"| {r['turn']} | {r.get('prompt_tokens', '')} | {r.get('capacity')} | {r.get('prefill_tokens')} / "
            f"{r.get('reused_tokens')} | {r.get('reprefilled_cached')} | {r.get('chunk')} | {r.get('decode_path')} | "
            f"{r.get('tok_s', 0):.1f} | {1e3 * r.get('ttft_s', 0):.0f} | {1e3 * r.get('wall_ttft_s', 0):.0f} |")
    sw = R.get("switch")
    if sw:
        log(f"\nswitch back to the chat: warm turn TTFT {1e3 * sw['warm_ttft_s_median']:.0f} ms "
            f"(send-to-first-text {1e3 * sw['warm_wall_ttft_s_median']:.0f} ms); "
            f"park {1e3 * sw['opened_first_park_s']:.0f} ms, "
            f"restore on open {1e3 * sw.get('restore_s', 0):.0f} ms")
        for mode in ("opened_first", "sent_straight"):
            r = sw[mode]
            log(f"  {mode}: reused {r.get('reused_tokens')} prefilled {r.get('prefill_tokens')}, TTFT "
                f"{1e3 * r['ttft_s']:.0f} ms ({sw[mode + '_ttft_ratio']:.2f}x warm), send-to-first-text "
                f"{1e3 * r['wall_ttft_s']:.0f} ms ({sw[mode + '_wall_ttft_ratio']:.2f}x warm), "
                f"{r.get('tok_s', 0):.1f} tok/s")
    plain, lc = R.get("plain", {}), R.get("llama_cpp", {})
    sliced = {s["context"]: s["ttft_s_median"] for s in R.get("single_nf4_sliced", [])}
    log("\n| single turn | Headroom TTFT ms | plain TTFT ms, paired | ratio, paired | NF4 prefill always sliced ms | "
        "plain TTFT ms | llama.cpp prefill ms | Headroom tok/s | plain tok/s | llama.cpp tok/s |")
    log("|---|---|---|---|---|---|---|---|---|---|")
    for s in R.get("single", []):
        n = s["context"]
        p_ttft = _get(plain.get("ttft_s_median"), n)
        p_dec = _get(plain.get("decode_tok_s"), n)
        l_pre = _get(lc.get("prefill_s"), n)
        l_dec = _get(lc.get("decode_tok_s"), n)
        ratio = s.get("ttft_ratio_median")
        log(f"| {n} | {1e3 * s['ttft_s_median']:.0f} | {_fmt(s.get('plain_ttft_s_median'), 1e3)} | "
            f"{'' if ratio is None else f'{ratio:.2f}'} | {_fmt(sliced.get(n), 1e3)} | {_fmt(p_ttft, 1e3)} | "
            f"{_fmt(l_pre, 1e3)} | {s['tok_s_median']:.1f} | {_fmt(p_dec)} | {_fmt(l_dec)} |")
    w = R.get("warm_up", {})
    log(f"\nwarm-up {w.get('seconds_total', 0):.1f} s (compile {w.get('compile_seconds', 0):.1f} s, "
        f"{w.get('state')}); dynamo graphs {R.get('dynamo_graphs_total')}; load {R.get('load_s', 0):.1f} s")
    if w.get("compile_times"):
        log(w["compile_times"])
    second = R.get("second_launch") or {}
    if "seconds_total" in second:
        log(f"second launch: load {second.get('load_s', 0):.1f} s, warm-up {second['seconds_total']:.1f} s "
            f"(compile {second.get('compile_seconds', 0):.1f} s, {second.get('state')}); phases "
            f"{second.get('phases_s')}; Triton kernels compiled {len(second.get('triton_compiled', []))}")
    log(f"first launch: phases {w.get('phases_s')}; Triton kernels compiled {len(w.get('triton_compiled', []))}")


def _get(table, n):
    if not table:
        return None
    return table.get(n, table.get(str(n)))


def _fmt(value, scale: float = 1.0) -> str:
    return "" if value is None else f"{value * scale:.1f}" if scale == 1.0 else f"{value * scale:.0f}"


if __name__ == "__main__":
    sys.exit(main())
