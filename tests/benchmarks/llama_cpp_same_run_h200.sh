#!/usr/bin/env bash
# The decode comparison of issue 15 in one command on the H200: llama.cpp built and benched beside
# Headroom's app path in the same run. Cores 4-15 build llama.cpp and prepare its GGUF
# (shared/anchors/lc_build_and_prep.sh's model step) while Headroom's GPU tests, the decode-attention
# benchmark and decode_anatomy at 1k / 4k / 16k run pinned to cores 0-3, alternating the arms of an A/B
# switch (AB_VAR, each of AB_VALUES; default HEADROOM_KV16_MMA 1 0; or ARMS, each NAME=VALUE[,NAME2=VALUE2]
# setting one or more switches together; POST_ARMS the same, run after llama.cpp's bench), ROUNDS rounds (default 1; the first
# arm's first run also at 16k and with the critical path), after TESTS (pytest files; default the
# attention kernels') and EXTRA (a command line, e.g. another benchmark); then llama.cpp is quantized to Q4_K_M and benched on the idle GPU.
# Usage, from the project copy on the device ($OUT set), carrying either the wheels of
# ../shared/gpu/fetch_wheels.sh bitsandbytes platformdirs gguf psutil in .whl/, or what
# tests/benchmarks/device_carry.sh packs (.whlslim/, .gpu3/: a newer transformers too):
#   [AB_VAR=HEADROOM_FUSED_NORM AB_VALUES="1 0" ROUNDS=2 EXTRA='python3 -m tests.benchmarks.add_rms_norm --out $OUT'] \
#       bash tests/benchmarks/llama_cpp_same_run_h200.sh \
#       <folder holding llama.cpp-src.tar.xz and lc_build_and_prep.sh>
#   ATTN=0 ARMS="HEADROOM_NORM_FOLD=1 HEADROOM_NORM_FOLD=1,HEADROOM_KV16_MERGE=launch HEADROOM_NORM_FOLD=0" bash ... .gpu
# Device time: about 400-500 s (the llama.cpp build, 330-400 s on 12 cores, is the long pole).
# Run on 2026-12-03 18:27 UTC: results/decode_anatomy_h200_kv16_mma.json, results/decode_attention_h200_mma.json.
LC=${1:?folder holding llama.cpp-src.tar.xz and lc_build_and_prep.sh}
REPO=$PWD
AB_VAR=${AB_VAR:-HEADROOM_KV16_MMA}; AB_VALUES=${AB_VALUES:-1 0}; ROUNDS=${ROUNDS:-1}
ARMS=${ARMS:-$(for v in $AB_VALUES; do printf '%s=%s ' "$AB_VAR" "$v"; done)}
if [ -d .whlslim ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whlslim/*.whl
  tar -C /tmp/site -xJf .whlslim/bnb.tar.xz
else
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
fi
SITE=/tmp/site
if [ -f .gpu3/site25.tar.xz ]; then tar -C /tmp -xJf .gpu3/site25.tar.xz; SITE=/tmp/site25:/tmp/site; fi
export PYTHONPATH=$SITE:$PWD
python3 -c "import transformers, torch; print('transformers', transformers.__version__, 'torch', torch.__version__)"
SECONDS=0
rm -rf /tmp/lc && mkdir -p /tmp/lc && tar -xJf "$LC/llama.cpp-src.tar.xz" -C /tmp/lc
sed -n '/^cat > \/tmp\/prep.sh/,/^EOS/p' "$LC/lc_build_and_prep.sh" | sed '1d;$d' > /tmp/prep.sh
setsid nohup taskset -c 4-15 bash /tmp/prep.sh > /tmp/prep.log 2>&1 < /dev/null &
( cd /tmp/lc/llama.cpp && cmake -G Ninja -B build -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_BUILD_SERVER=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF > /tmp/cfg.log 2>&1 \
  && taskset -c 4-15 cmake --build build -j 14 --target llama-bench llama-quantize > /tmp/build.log 2>&1; echo "build rc=$? at ${SECONDS}s" > /tmp/build.done ) &
TESTS=${TESTS:-tests/engine/test_kv16_mma.py tests/engine/test_split_kv_attention.py}
# bounded: a kernel that hangs (a spinning merge) must not take the whole call
timeout 300 taskset -c 0-3 python3 -m pytest -c /dev/null -q -p no:cacheprovider $TESTS 2>&1 | grep -E "Error|assert|passed|failed" | head -20
echo "tests ${SECONDS}s"; until [ -f /tmp/m8b/config.json ] || [ $SECONDS -gt 150 ]; do sleep 2; done; echo "prep model saved ${SECONDS}s"
if [ "${ATTN:-1}" = 1 ]; then  # ATTN=0 leaves the decode-attention benchmark out (a call short of seconds)
  taskset -c 0-3 python3 -m tests.benchmarks.decode_attention --out $OUT 2>&1 | tail -5
  echo "attn ${SECONDS}s"
fi
if [ -n "${EXTRA:-}" ]; then taskset -c 0-3 bash -c "$EXTRA" 2>&1 | tail -12; echo "extra ${SECONDS}s"; fi
# one arm's decode_anatomy: run_arm ARM TAG DECODE_ANATOMY_ARGS...
run_arm() {
  local arm=$1 tag=$2; shift 2
  # bounded: an arm whose kernel hangs must not take the call (llama.cpp's bench comes after)
  # shellcheck disable=SC2086  # one env argument per switch
  timeout 200 env ${arm//,/ } taskset -c 0-3 python3 -m tests.benchmarks.decode_anatomy --kv8-depths '' "$@" \
    --out $OUT/$tag > /tmp/$tag.log 2>&1 || { echo "$tag failed or timed out: $(tail -2 /tmp/$tag.log)"; return; }
  grep -iE "check|not used|set aside|Error" /tmp/$tag.log | head -3
  python3 - "$OUT/$tag" "$tag" <<'PY'
import json, sys
d = json.load(open(f"{sys.argv[1]}/decode_anatomy_h200.json"))
print(sys.argv[2], "norms folded:", d.get("warm_up", {}).get("norms_folded"))
for r in d["kv16"]:
    s = r["second"]
    print(sys.argv[2], r["depth"], "2nd", round(s["tok_s"], 1), "greedy", round(r["greedy"]["tok_s"], 1),
          "step", round(r["step_ms"], 4), "stalls", s.get("gaps", {}).get("stalls"),
          round(s.get("gaps", {}).get("stall_ms", 0), 1), "ms, gc",
          {g: v["count"] for g, v in s.get("gc", {}).items()}, "load", round(s.get("gaps", {}).get("load_1min", 0), 1))
PY
  rm -rf "$OUT/$tag"/trace_*
  echo "anatomy $tag ${SECONDS}s"
}
first=1
for round in $(seq 1 "$ROUNDS"); do
  for arm in $ARMS; do
    tag=${arm//=/_}; tag=${tag//,/+}_r${round}
    if [ $first = 1 ]; then first=0; run_arm "$arm" "$tag" --depths 1024,4096,16384 --critical-path
    else run_arm "$arm" "$tag" --depths 1024,4096; fi
  done
done
until [ -f /tmp/build.done ] && [ -f /tmp/prep.done ] || [ $SECONDS -gt 480 ]; do sleep 3; done
cat /tmp/build.done; tail -2 /tmp/prep.log; tail -3 /tmp/build.log
cd /tmp/lc/llama.cpp
build/bin/llama-quantize /tmp/m8b-bf16.gguf /tmp/m8b-q4km.gguf Q4_K_M 16 > /tmp/q.log 2>&1; echo "quantized ${SECONDS}s"
build/bin/llama-bench -m /tmp/m8b-q4km.gguf -ngl 99 -fa 1 -p 0 -n 128 -d 1024,4096,16384 -r 3 -o json > $OUT/llama_bench.json 2>/tmp/lb.err
python3 -c "
import json; rows = json.load(open('$OUT/llama_bench.json'))
for r in rows: print('llama.cpp', r.get('n_depth'), round(r['avg_ts'], 1), 'tok/s', r.get('model_type'), r.get('gpu_info'))"
# POST_ARMS: arms run again once llama.cpp is done, the host idle as it was for llama.cpp's bench (the
# arms above share the machine with the llama.cpp build on cores 4-15)
cd "$REPO"
for arm in ${POST_ARMS:-}; do
  tag=${arm//=/_}; tag=${tag//,/+}_idle
  run_arm "$arm" "$tag" --depths 1024,4096
done
echo "done ${SECONDS}s"
