#!/usr/bin/env bash
# The 16-bit KV attention's three merges (kv16_mma.MERGES: ticket, the default; poll; launch) on the
# window's own path, one decode_anatomy run each at 1k / 4k with the lm_head in 8 bits (the default),
# then the merge kernels' GPU tests. No llama.cpp: for a call with too few device seconds for its build
# (llama_cpp_same_run_h200.sh takes that comparison, ARMS="HEADROOM_KV16_MERGE=poll ...").
# Usage, from the project copy on the device ($OUT set), carrying what tests/benchmarks/device_carry.sh
# packs (.whlslim/, .gpu3/):  bash tests/benchmarks/kv16_merge_ab.sh
# Device time: ~230 s (the first run builds the random-init 8B model).
# Run on 2026-12-06 01:50 UTC on an H200: results/decode_anatomy_h200_int8_head_merge_{ticket,poll,launch}.json
# (as a loose script with this same loop, norm_fold_diag.py and the tests after it; put here afterwards).
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whlslim/*.whl
tar -C /tmp/site -xJf .whlslim/bnb.tar.xz
tar -C /tmp -xJf .gpu3/site25.tar.xz
export PYTHONPATH=/tmp/site25:/tmp/site:$PWD HEADROOM_LM_HEAD_INT8=1
nvidia-smi --query-gpu=name --format=csv,noheader
SECONDS=0
for merge in ticket poll launch; do
  dir=$OUT/merge_${merge}_$SECONDS
  timeout 170 env HEADROOM_KV16_MERGE=$merge python3 -m tests.benchmarks.decode_anatomy --kv8-depths '' \
    --depths 1024,4096 --out "$dir" > /tmp/a.log 2>&1 || { echo "$merge failed: $(tail -2 /tmp/a.log)"; continue; }
  python3 - "$dir" "$merge" <<'PY'
import json, sys
d = json.load(open(sys.argv[1] + "/decode_anatomy_h200.json"))
for r in d["kv16"]:
    print(sys.argv[2], r["depth"], "2nd", round(r["second"]["tok_s"], 1), "greedy", round(r["greedy"]["tok_s"], 1),
          "step", round(r["step_ms"], 4))
PY
  rm -rf "$dir"/trace_*; echo "t=${SECONDS}s"
done
timeout 60 python3 -m pytest -c /dev/null -q -p no:cacheprovider tests/engine/test_kv16_mma.py 2>&1 | tail -3
