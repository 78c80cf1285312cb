#!/usr/bin/env bash
# The committed chat-path run on the H200 (issue 12, item 7), one command. Headroom loads and
# warms up first on an idle machine with Inductor's cache cold (the figure a first launch sees);
# then llama.cpp builds and its model is prepared in the background on cores 4-15
# (shared/anchors/lc_build_and_prep.sh) while Headroom's chat path goes on pinned to cores 0-3;
# a second launch measures the warm-up with Inductor's caches warm; llama.cpp is quantized and
# benched on the idle GPU; the figures are merged.
# Usage, from the project copy on the device (PYTHONPATH with bitsandbytes set, $OUT set):
#   bash tests/benchmarks/chat_path_h200.sh <folder holding llama.cpp-src.tar.xz and lc_build_and_prep.sh>
# platformdirs (imported by app.core.paths) is not installed on the H200: put a copy of the package
# on PYTHONPATH too (e.g. cp -r .venv/lib/python3.*/site-packages/platformdirs <copy>/.vendor/).
# Device time: about 10 minutes (llama.cpp build ≈ 300 s on 12 cores and its quantization overlap the
# chat); it can outlast one device call: run it detached and collect $OUT in a second call. WITH_LLAMA=0
# leaves llama.cpp out (about 5 minutes).
# WITH_FA2=1 installs the FlashAttention-2 wheel that attention_backends_h200.sh brought back
# (.gpu/fa2/fa2_wheel.tar, carried) first, so the chat runs as a user with FA2 installed would
# (FA2 prefill and split-KV decode).
set -u
G=${1:?folder with llama.cpp-src.tar.xz and lc_build_and_prep.sh}
# Bytecode: pip compiles a user's packages to .pyc at install (a PyInstaller bundle ships it), so a
# user's launch imports without compiling. The H200's environment has no .pyc and sets
# PYTHONDONTWRITEBYTECODE=1: each launch compiled ~2,400 modules (7.2 s under cProfile,
# 2026-12-02). Bytecode is written (to a folder of its own), so the second launch imports as a
# user's does.
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX=${PYTHONPYCACHEPREFIX:-/tmp/pycache}
: "${OUT:?}"
T0=$SECONDS
export PYTHONUNBUFFERED=1
if [ "${WITH_FA2:-0}" = 1 ]; then
  mkdir -p /tmp/fa2whl && tar -C /tmp/fa2whl -xf .gpu/fa2/fa2_wheel.tar \
    && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site /tmp/fa2whl/flash_attn-*.whl \
    && python3 -c "import flash_attn; print('flash_attn', flash_attn.__version__)" || exit 1
fi
rm -rf "${HOME}/.cache/headroom/torchinductor" /tmp/torchinductor_* /tmp/warm.done
timeout "${HEADROOM_LIMIT:-420}" python3 -m tests.benchmarks.chat_path --out "$OUT" --warm-up-done /tmp/warm.done \
  > "$OUT/chat_path_log.txt" 2>&1 &
HR=$!
while kill -0 $HR 2> /dev/null && [ ! -f /tmp/warm.done ]; do sleep 1; done
echo "headroom warm-up over at $((SECONDS - T0)) s"
if command -v taskset > /dev/null; then
  for pid in $(pgrep -f tests.benchmarks.chat_path); do taskset -a -p -c 0-3 "$pid" > /dev/null; done
  PIN_LC="taskset -c 4-15"
else
  PIN_LC=""
fi
B=/tmp/lc/llama.cpp/build/bin
rm -f /tmp/quant.done
if [ "${WITH_LLAMA:-1}" = 1 ]; then
  LLAMA_SRC=$G/llama.cpp-src.tar.xz setsid nohup $PIN_LC bash "$G/lc_build_and_prep.sh" \
    > /tmp/lc_build.log 2>&1 < /dev/null &
  # Quantize on llama.cpp's cores as soon as the build and the bf16 GGUF exist (CPU work, so it
  # overlaps Headroom's chat; only the bench needs the GPU to itself).
  ( until [ -f /tmp/prep.done ] && grep -q "build rc=" /tmp/lc_build.log; do sleep 2; done
    if [ -x $B/llama-quantize ]; then
      rm -rf /tmp/m8b
      $PIN_LC $B/llama-quantize /tmp/m8b-bf16.gguf /tmp/m8b-q4km.gguf Q4_K_M 12 > /tmp/quant.log 2>&1
      echo "quantized rc=$? at $((SECONDS - T0)) s" >> /tmp/quant.log
    fi
    touch /tmp/quant.done ) &
fi
wait $HR
echo "headroom rc=$? at $((SECONDS - T0)) s"
timeout 90 python3 -m tests.benchmarks.chat_path --warm-up-only > "$OUT/second_launch.txt" 2>&1
echo "second launch rc=$? at $((SECONDS - T0)) s"
while [ "${WITH_LLAMA:-1}" = 1 ] && [ $((SECONDS - T0)) -lt "${LLAMA_WAIT:-700}" ] && [ ! -f /tmp/quant.done ]; do
  sleep 2
done
echo "llama.cpp wait ended at $((SECONDS - T0)) s"; tail -4 /tmp/lc_build.log; tail -2 /tmp/quant.log 2> /dev/null
if [ "${WITH_LLAMA:-1}" = 1 ] && [ -f /tmp/m8b-q4km.gguf ] && grep -q "quantized rc=0" /tmp/quant.log; then
  $B/llama-bench -m /tmp/m8b-q4km.gguf -ngl 99 -fa 1 -p 0 -n 128 -d 1024,4096,16384 -r 3 -o json > "$OUT/lc_decode.json" 2> /tmp/lcb1.log
  $B/llama-bench -m /tmp/m8b-q4km.gguf -ngl 99 -fa 1 -p 1024,4096,16384 -n 0 -r 2 -o json > "$OUT/lc_prefill.json" 2> /tmp/lcb2.log
  echo "llama-bench done at $((SECONDS - T0)) s"
fi
{ cat /tmp/lc_build.log; tail -5 /tmp/prep.log; tail -3 /tmp/quant.log; tail -n 5 /tmp/lcb1.log /tmp/lcb2.log; } > "$OUT/lc_log.txt" 2>&1
python3 -m tests.benchmarks.chat_path --merge "$OUT/chat_path_h200.json" --llama-decode "$OUT/lc_decode.json" \
  --llama-prefill "$OUT/lc_prefill.json" --second-launch "$OUT/second_launch.txt"
echo "total $((SECONDS - T0)) s"
