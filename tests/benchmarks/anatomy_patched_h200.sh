#!/usr/bin/env bash
# Kernel-source A/Bs on the app path in one device call (issue 15): tests/benchmarks/anatomy_patched.py for
# each PATCH given, alternating with the shipped kernels ("base"), ROUNDS rounds (default 2): the first at
# 1k with the critical path (what each kernel adds to the step), the others at 1k and 4k. About 40 s a
# run after the first (~85 s: the compile). From the project copy on the device ($OUT set), carrying
# what tests/benchmarks/device_carry.sh packs (.whlslim/, .gpu3/):
#   A=HEADROOM_KV16_MERGE; bash tests/benchmarks/anatomy_patched_h200.sh $A=launch $A=poll kv_prefetch merge_cluster splits_256
# An arm NAME=VALUE is the shipped kernels with that environment variable set (an app switch); NAME=VALUE,NAME2=VALUE2
# sets both (two switches together, e.g. HEADROOM_NORM_FOLD=1,HEADROOM_KV16_MERGE=launch).
# A patch that fails or runs past 150 s (a kernel that spins) is left out of the later rounds; no run
# starts past LIMIT_S (default 540 s of runs, inside a device call's 600 s), so give the patches in the
# order they matter. TESTS="file -k expr": those GPU tests first (bounded at 150 s, their seconds count
# against LIMIT_S), e.g. TESTS="tests/engine/test_nf4_mma.py -k fold" before the HEADROOM_NORM_FOLD=1 arm.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whlslim/*.whl
tar -C /tmp/site -xJf .whlslim/bnb.tar.xz; tar -C /tmp -xJf .gpu3/site25.tar.xz
export PYTHONPATH=/tmp/site25:/tmp/site:$PWD
SECONDS=0
if [ -n "${TESTS:-}" ]; then
  # shellcheck disable=SC2086  # TESTS is a pytest command line
  timeout 150 python3 -m pytest -q -p no:cacheprovider $TESTS 2>&1 | tail -6
  echo "tests ${SECONDS}s"
fi
failed=" "
for round in $(seq 1 "${ROUNDS:-2}"); do
  for patch in base "$@"; do
    case "$failed" in *" $patch "*) continue ;; esac
    tag=${patch//=/_}; tag=${tag//,/+}_r${round}
    arm=(python3 -m tests.benchmarks.anatomy_patched "$patch")
    # shellcheck disable=SC2206  # NAME=VALUE[,NAME=VALUE]: one env argument per switch
    case "$patch" in *=*) arm=(env ${patch//,/ } python3 -m tests.benchmarks.anatomy_patched base) ;; esac
    depths="--depths 1024,4096"
    [ "$round" = 1 ] && depths="--depths 1024 --critical-path"
    left=$(( ${LIMIT_S:-540} - SECONDS ))
    [ "$left" -lt 45 ] && { echo "$tag not run: ${SECONDS}s spent"; continue; }
    # a hung experiment (a kernel that spins) must not take the whole call
    timeout $(( left < 150 ? left : 150 )) "${arm[@]}" --kv8-depths '' $depths --out "$OUT/$tag" \
      > "/tmp/$tag.log" 2>&1 || { echo "$tag failed or timed out: $(tail -2 "/tmp/$tag.log")"; failed="$failed$patch "
                                  continue; }
    grep -iE "check|not used|set aside|Error" "/tmp/$tag.log" | head -3
    python3 - "$OUT/$tag" "$tag" <<'PY'
import json, sys
d = json.load(open(f"{sys.argv[1]}/decode_anatomy_h200.json"))
for r in d["kv16"]:
    print(sys.argv[2], r["depth"], "2nd", round(r["second"]["tok_s"], 1), "step", round(r["step_ms"], 4))
    for k, v in sorted((r.get("critical_path") or {"labels": {}})["labels"].items(), key=lambda kv: -kv[1]["adds_us"])[:9]:
        print(f"   {k[:40]:40s} adds {v['adds_us']:7.1f} dur {v['dur_us']:6.2f} start {v['start_after_us']:6.2f}")
PY
    rm -rf "$OUT/$tag"/trace_*
    echo "$tag ${SECONDS}s"
  done
done
