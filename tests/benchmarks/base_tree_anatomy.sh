#!/usr/bin/env bash
# decode_anatomy at 1k and 4k with another tree's app/ (BASE: e.g. `git archive <commit> app | tar -x -C .gpu/base`),
# this tree's tests/: the "before" arm of a change, as EXTRA of llama_cpp_same_run_h200.sh (its environment set):
#   EXTRA='bash tests/benchmarks/base_tree_anatomy.sh .gpu/base' ARMS="HEADROOM_LM_HEAD_INT8=1" \
#       bash tests/benchmarks/llama_cpp_same_run_h200.sh .gpu
# Results in $OUT/base_before_change/. About 35-50 s (the step's compile caches are shared with the other arms).
BASE=$(cd "${1:?folder holding the base tree app/}" && pwd)
rm -rf /tmp/ab_base && mkdir -p /tmp/ab_base && cp -r "$BASE/app" tests /tmp/ab_base/
(cd /tmp/ab_base && PYTHONPATH=/tmp/site25:/tmp/site:/tmp/ab_base timeout 150 python3 -m tests.benchmarks.decode_anatomy \
  --kv8-depths "" --depths 1024,4096 --out "$OUT/base_before_change" > /tmp/base.log 2>&1; echo "base rc=$?")
python3 - "$OUT/base_before_change/decode_anatomy_h200.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["kv16"]:
    print("base", r["depth"], "2nd", round(r["second"]["tok_s"], 1), "greedy", round(r["greedy"]["tok_s"], 1),
          "step", round(r["step_ms"], 4))
PY
