#!/usr/bin/env bash
# Issue 19 on the H200: build the inference-only FlashAttention-2 wheel, then measure FA2 / SDPA /
# eager through Headroom (tests/benchmarks/attention_backends.py). Two device commands, each
# under the 10-minute limit; the build runs detached (setsid nohup) so it outlives the first.
#
# Here, once: the sdist in .gpu/fa2/ (see packaging/build_flash_attn.py), bitsandbytes in .whl/
# (../shared/gpu/fetch_wheels.sh), platformdirs in .gpu/vendor/ (einops, ninja, setuptools,
# wheel are in the device image). Then, with carry [".whl", ".gpu/fa2", ".gpu/vendor"]:
#   run: bash tests/benchmarks/attention_backends_h200.sh build    (timeout_s 600)
#   run: bash tests/benchmarks/attention_backends_h200.sh bench    (timeout_s 600)
# `build` starts the wheel build, writes the 8B model folder meanwhile and waits for the build up
# to BUILD_WAIT seconds; `bench` waits for a build still running, installs the wheel, runs the
# CLI self-test's FA2 check and the benchmark. Each copies its records to $OUT (the wheel too when
# it is under 16 MiB, as fa2_wheel.tar: keep that in .gpu/fa2/ and a later session's `bench` alone installs it).
# The machine goes back 30 s after a call: send `bench` right after `build` (a build still running
# and the 8B folder in /tmp are lost with the machine; on a fresh one `bench` rebuilds the folder).
set -u
: "${OUT:?}"
MODE=${1:?build or bench}
T0=$SECONDS
export PYTHONUNBUFFERED=1
W=/tmp/fa2          # survives between the two commands while the machine is warm
mkdir -p $W
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || exit 1
export PYTHONPATH=/tmp/site:$PWD/.gpu/vendor

wait_build() {  # $1: seconds at most; returns 0 once the record says done
  while [ $((SECONDS - T0)) -lt "$1" ]; do
    stage=$(python3 -c "import json;print(json.load(open('$W/fa2_build.json'))['stage'])" 2>/dev/null)
    case "$stage" in done) return 0;; failed) return 1;; esac
    sleep 5
  done
  return 2
}

collect() {
  cp $W/fa2_build.json $W/fa2_build.log "$OUT/" 2>/dev/null
  cp $W/dist/*.patch "$OUT/" 2>/dev/null
  for whl in $W/dist/flash_attn-*.whl; do  # bring the wheel back when it fits (16 MiB a file), in a
    # tar: its name has a '+' (local version), which the device's return path leaves out
    [ -f "$whl" ] && [ "$(stat -c %s "$whl")" -le 16000000 ] && tar -C "$(dirname "$whl")" -cf "$OUT/fa2_wheel.tar" "$(basename "$whl")"
  done
  python3 -c "import json;d=json.load(open('$W/fa2_build.json'));print({k:d.get(k) for k in
    ('stage','error','elapsed_s','build_seconds','cu_files_before','cu_files_after','wheel_bytes','ninja_progress','verify')})"
}

if [ "$MODE" = build ]; then
  nvcc --version | tail -2; nproc; free -g | head -2
  rm -rf $W/src $W/dist $W/fa2_build.json
  setsid nohup python3 packaging/build_flash_attn.py --sdist .gpu/fa2/flash_attn-2.8.3.post2.tar.gz \
    --work $W/src --out $W/dist --record $W/fa2_build.json ${MAX_JOBS:+--jobs $MAX_JOBS} > $W/fa2_build.log 2>&1 < /dev/null &
  # the benchmark's model folder meanwhile (GPU + disk; the build takes the CPUs)
  python3 -c "from pathlib import Path; from tests.benchmarks.speed import build_model; build_model(Path('/tmp/llama8b'), False)" \
    > "$OUT/model_build.txt" 2>&1
  echo "model folder written at $((SECONDS - T0)) s"
  wait_build "${BUILD_WAIT:-560}"; echo "build wait ended rc=$? at $((SECONDS - T0)) s"
  tail -5 $W/fa2_build.log
  collect
  exit 0
fi

WHEEL=
if [ -f $W/fa2_build.json ]; then  # this machine built it (the `build` command)
  wait_build 400; rc=$?
  echo "build rc=$rc at $((SECONDS - T0)) s"; collect
  [ $rc = 0 ] && WHEEL=$(ls $W/dist/flash_attn-*.whl | head -1)
else  # a fresh machine: a wheel brought back by an earlier `build` and carried in .gpu/fa2/
  [ -f .gpu/fa2/fa2_wheel.tar ] && mkdir -p $W/dist && tar -C $W/dist -xf .gpu/fa2/fa2_wheel.tar
  WHEEL=$(ls .gpu/fa2/flash_attn-*.whl $W/dist/flash_attn-*.whl 2>/dev/null | head -1)
  echo "no build on this machine; carried wheel: ${WHEEL:-none}"
fi
if [ -n "$WHEEL" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$WHEEL"
  python3 -c "import flash_attn, flash_attn.headroom_build as b; print(flash_attn.__version__, b.HEAD_DIMS, b.CUDA_ARCHS)"
  timeout 120 python3 -m app --self-test --model /tmp/llama8b > "$OUT/self_test.txt" 2>&1  # random weights: no Paris
  grep -E "FlashAttention-2|self-test" "$OUT/self_test.txt"
fi
LEFT=$((590 - (SECONDS - T0)))
# BENCH_ARGS, e.g. "--no-compile" (saves ≈160 s) or "--backends fa2,sdpa"
timeout $((LEFT - 10)) python3 -m tests.benchmarks.attention_backends --out "$OUT" --deadline $((LEFT - 40)) \
  ${BENCH_ARGS:-} > "$OUT/attention_backends_log.txt" 2>&1
echo "benchmark rc=$? at $((SECONDS - T0)) s"
tail -25 "$OUT/attention_backends_log.txt"
