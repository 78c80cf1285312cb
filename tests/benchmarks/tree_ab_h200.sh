#!/usr/bin/env bash
# A/B of two source trees on the app path in one device call (issue 15): decode_anatomy at 1k and 4k
# (a chat's second turn, sampled; then greedy) with the app/ of BASE (a folder holding another
# commit's app/, e.g. the commit before a change) and with this tree's, alternating, ROUNDS rounds
# (default 3). Both runs use this tree's tests/ (the benchmark itself), the same random 8B model
# (/tmp/llama8b) and the same compile caches. TESTS: pytest files run first (GPU tests, bounded).
# Make BASE here, then carry it with what tests/benchmarks/device_carry.sh packs:
#   mkdir -p .gpu/base && git archive HEAD app | tar -x -C .gpu/base
#   TESTS="tests/engine/test_nucleus_kernel.py" bash tests/benchmarks/tree_ab_h200.sh .gpu/base
# About 25-40 s a run after the first (~60-90 s: the model is built and the step compiled).
set -u
BASE=$(cd "${1:?folder holding the base tree app/}" && pwd)
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whlslim/*.whl
tar -C /tmp/site -xJf .whlslim/bnb.tar.xz; tar -C /tmp -xJf .gpu3/site25.tar.xz
SITE=/tmp/site25:/tmp/site
rm -rf /tmp/ab_base && mkdir -p /tmp/ab_base && cp -r "$BASE/app" /tmp/ab_base/ && cp -r tests /tmp/ab_base/
SECONDS=0
if [ -n "${TESTS:-}" ]; then
  # shellcheck disable=SC2086  # TESTS is a pytest command line
  PYTHONPATH=$SITE:$PWD timeout 200 python3 -m pytest -c /dev/null -q -p no:cacheprovider $TESTS 2>&1 | tail -6
  echo "tests ${SECONDS}s"
fi
for round in $(seq 1 "${ROUNDS:-3}"); do
  for arm in base new; do
    tree=$PWD; [ $arm = base ] && tree=/tmp/ab_base
    tag=${arm}_r${round}
    left=$(( ${LIMIT_S:-540} - SECONDS ))
    [ "$left" -lt 45 ] && { echo "$tag not run: ${SECONDS}s spent"; continue; }
    ( cd "$tree" && PYTHONPATH=$SITE:$tree timeout $(( left < 200 ? left : 200 )) python3 -m tests.benchmarks.decode_anatomy \
        --kv8-depths '' --depths 1024,4096 --out "$OUT/$tag" > "/tmp/$tag.log" 2>&1 ) \
      || { echo "$tag failed or timed out: $(tail -3 "/tmp/$tag.log")"; continue; }
    grep -iE "check|not used|set aside|Error" "/tmp/$tag.log" | head -3
    python3 - "$OUT/$tag" "$tag" <<'PY'
import json, sys
d = json.load(open(f"{sys.argv[1]}/decode_anatomy_h200.json"))
for r in d["kv16"]:
    s, g = r["second"], r["greedy"]
    print(sys.argv[2], r["depth"], "2nd", round(s["tok_s"], 1), round(1e3 / s["tok_s"], 4), "ms; greedy", round(g["tok_s"], 1),
          g["text_sha1"], "; step", round(r["step_ms"], 4), "; stalls", s.get("gaps", {}).get("stalls"))
PY
    echo "$tag ${SECONDS}s"
  done
done
