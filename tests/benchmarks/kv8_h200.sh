#!/usr/bin/env bash
# 8-bit KV on the H200 (issue 16, item 5), from the project copy on the device, in two calls
# (each well inside the 10-minute limit), environment as for the earlier runs (PYTHONPATH with the
# .whl packages: bitsandbytes, transformers 5.24 …; $OUT set):
#   bash tests/benchmarks/kv8_h200.sh card <path of plain_recipe_baseline.py>   # ≈ 5 min
#   bash tests/benchmarks/kv8_h200.sh speed                                     # ≈ 6 min
# card: Llama-3-8B shape in NF4 on the simulated 12 GiB card with the KV cache in 8 bits, the
#   app's own chunk ladder and capacity rounding (--chunk 0): (a) projection error at 1k-32k
#   prompts (target ≤ 5 %), (b) largest prompt + 64-token answer admitted and completed, as a
#   multiple of the bf16 KV limit (target ≥ 1.8×, ≥ 98k tokens), the plain recipe beside it.
#   Writes $OUT/memory_foresight_h200_kv8_kv8.json. The bf16 figure of the same protocol:
#   results/memory_foresight_h200_app_settings_ladder128.json (91 %).
# speed: decode tok/s at 4k and 32k depth, bf16 then int8 KV, compiled path, same process
#   (target: int8 ≥ 0.95× bf16 at 4k). Writes $OUT/speed_h200_kv8.json. The first int8 reply
#   recompiles the decode step (the cache dtype differs): its time is first_run_s.
set -u
: "${OUT:?}"
export PYTHONUNBUFFERED=1
case "${1:?card or speed}" in
  card)
    timeout 420 python3 -m tests.benchmarks.memory_foresight --models llama3-8b --phases ab --chunk 0 \
      --kv-dtype int8 --baseline "${2:?plain_recipe_baseline.py}" --tag kv8 --out "$OUT" --budget-s 400 ;;
  speed)
    timeout 540 python3 -m tests.benchmarks.speed --kv-dtype bf16,int8 --out "$OUT" ;;
esac
