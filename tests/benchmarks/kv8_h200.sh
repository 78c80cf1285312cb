#!/usr/bin/env bash
# 8-bit KV on the H200 (issue 16, item 5), from the project copy on the device, environment as for
# the earlier runs (PYTHONPATH with the .whl packages: bitsandbytes …, and the checkout; $OUT set;
# FlashAttention-2 not installed, or the 16-bit rows measure FA2's decode). One part per device
# call (each fits a 10-minute call; `all` did not, 2026-12-02):
#   bash tests/benchmarks/kv8_h200.sh kernel                                    # ≈ 1 min
#   bash tests/benchmarks/kv8_h200.sh speed                                     # ≈ 6 min
#   bash tests/benchmarks/kv8_h200.sh card <path of plain_recipe_baseline.py>   # ≈ 6 min
# kernel: the 8-bit attention alone (kv8_kernel.py): agreement with the torch path, GPU µs per
#   layer inside CUDA graphs against the 16-bit decode attention, prefill chunk times.
# speed: the window's TurnRunner, default settings, chats at 4k and 32k tokens in 16-bit then in
#   8-bit KV, compiled path, same process, each step's kernels kept (target: 8-bit ≥ 0.95× 16-bit
#   at 4k): decode_anatomy.py, writes $OUT/decode_anatomy_h200.json. Last runs (2026-12-02, one
#   process, 4k only, NF4 GEMV on: results/decode_anatomy_h200.json and _repeat.json): 8-bit
#   0.949× and 0.953× 16-bit (200.0 against 210.7 / 209.8 tok/s).
# card: Llama-3-8B shape in NF4 on the simulated 12 GiB card with the KV cache in 8 bits, the
#   app's own chunk ladder and capacity rounding (--chunk 0): (a) projection error at 1k-32k
#   prompts (target ≤ 5 %), (b) largest prompt + 64-token answer admitted and completed, as a
#   multiple of the bf16 KV limit (target ≥ 1.8×, ≥ 98.6k tokens), the plain recipe beside it.
#   Writes $OUT/memory_foresight_h200_kv8_kv8.json. Last runs: 97,559 tokens = 1.78× (2026-12-02,
#   results/memory_foresight_h200_kv8_run1.json), then 93,184 = 1.70× with a 453 MB error bar
#   learnt on the 16k turn (results/memory_foresight_h200_kv8.json; the bar now scales with the
#   spike, app.engine.memory.calibration, not yet re-run). The bf16 figure of the same protocol:
#   results/memory_foresight_h200_app_settings_ladder128.json (91 %).
set -u
: "${OUT:?}"
export PYTHONUNBUFFERED=1
card() {
  timeout "${1:-420}" python3 -m tests.benchmarks.memory_foresight --models llama3-8b --phases ab --chunk 0 \
    --kv-dtype int8 --baseline "${2:?plain_recipe_baseline.py}" --tag kv8 --out "$OUT" --budget-s "$(( ${1:-420} - 30 ))"
}
speed() {
  timeout "${1:-420}" python3 -m tests.benchmarks.decode_anatomy --out "$OUT" --depths 4096,32768 \
    --kv8-depths 4096,32768 --kernels
}
case "${1:?kernel, speed or card}" in
  kernel) timeout 150 python3 -m tests.benchmarks.kv8_kernel --out "$OUT" --sweep --prefill-sweep ;;
  speed) speed 420 ;;
  card) card 420 "${2:-}" ;;
esac
