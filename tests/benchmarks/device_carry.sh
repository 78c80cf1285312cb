#!/usr/bin/env bash
# Pack what an H200 benchmark run needs under the device's 64 MiB carry limit (issue 15), from the
# project root, into two ignored folders:
#   .whlslim/  bitsandbytes without the CUDA libraries the device's torch (cu130) does not load
#              (bnb.tar.xz, 3.9 MB against a 43 MB wheel), and the platformdirs, gguf, psutil wheels;
#   .gpu3/site25.tar.xz  this venv's transformers and its Python dependencies for the device's
#              CPython 3.12 (what a fresh install of Headroom gets; the device has an older one), its
#              models pruned to the ones the benchmarks build, ~14 MB.
# Usage: bash tests/benchmarks/device_carry.sh [wheel folder of ../shared/gpu/fetch_wheels.sh platformdirs gguf psutil]
# On the device (carry [".whlslim", ".gpu3", ...]):
#   python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whlslim/*.whl
#   tar -C /tmp/site -xJf .whlslim/bnb.tar.xz; tar -C /tmp -xJf .gpu3/site25.tar.xz
#   export PYTHONPATH=/tmp/site25:/tmp/site:$PWD
# With llama.cpp's source (6.9 MB) and the tracked files (~8 MB) this stays just under the limit.
set -euo pipefail
WHL=${1:-.whl}
VENV=${VENV:-.venv}
for folder in .whlslim .gpu3; do
  mkdir -p "$folder"; grep -qxF "/$folder/" .git/info/exclude || echo "/$folder/" >> .git/info/exclude
done
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

unzip -q "$WHL"/bitsandbytes-*.whl -d "$work/bnb"
find "$work/bnb/bitsandbytes" -name 'libbitsandbytes_*.so' ! -name '*cuda130*' ! -name '*_cpu.so' -delete
tar -C "$work/bnb" -cJf .whlslim/bnb.tar.xz .
cp "$WHL"/platformdirs-*.whl "$WHL"/gguf-*.whl "$WHL"/psutil-*.whl .whlslim/

# transformers and what it needs, at this venv's versions; numpy, PyYAML, fsspec, pygments are on the
# device already, hf_xet and kernels only download (never at run time), tomlkit is kernels'
"$VENV/bin/python" - > "$work/closure.txt" <<'PY'
import importlib.metadata as md, re
seen, todo = {}, ["transformers"]
while todo:
    name = todo.pop()
    key = name.lower().replace("_", "-")
    if key in seen:
        continue
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        seen[key] = None
        continue
    seen[key] = dist.version
    todo += [re.split(r"[ ;<>=!~\[(]", r)[0] for r in dist.requires or [] if "extra ==" not in r]
skip = {"numpy", "pyyaml", "fsspec", "pygments", "hf-xet", "kernels", "tomlkit"}
print("\n".join(f"{k}=={v}" for k, v in sorted(seen.items()) if v and k not in skip))
PY
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$work/wheels" -r "$work/closure.txt"
mkdir -p "$work/site25"
for wheel in "$work"/wheels/*.whl; do unzip -q -o "$wheel" -d "$work/site25"; done
keep="__init__.py auto llama mistral qwen2 qwen3 gpt2 encoder_decoder"
for entry in "$work"/site25/transformers/models/*; do
  case " $keep " in *" $(basename "$entry") "*) ;; *) rm -rf "$entry" ;; esac
done
tar -C "$work" -cJf .gpu3/site25.tar.xz site25
du -sh .whlslim .gpu3
