"""Build an inference-only FlashAttention-2 wheel for one GPU architecture (issue 19).

flash-attn ships as a source distribution only, and its full build compiles 72 CUDA files
(forward, split-KV forward and backward kernels, 6 head dimensions × 2 dtypes × causal or not),
each instantiating every combination of dropout, ALiBi, softcap, local window, uneven head
dimension and "return softmax" — hours of nvcc on one machine. Headroom needs only inference on
the models it serves, so this script unpacks the sdist, applies a patch that keeps only that, and
builds the wheel with ``pip wheel --no-build-isolation --no-deps`` (offline: no build-time
downloads, the installed torch is the one compiled against).

The patch (every edit anchored: a source that differs from flash-attn 2.8.3.post2 is refused,
never half-patched; the exact diff is written beside the wheel and into the record, and the
default one is committed as packaging/flash_attn-2.8.3.post2-headroom-inference.patch to read):

* setup.py — sources: ``flash_api.cpp`` plus the forward and split-KV forward kernels of the
  chosen head dimensions and dtypes, causal and not (16 of 72 files for 64/128 × bf16/fp16);
  no backward kernels. Defines, for both g++ and nvcc (upstream passes none to g++):
  ``FLASHATTENTION_DISABLE_BACKWARD`` (inference only), ``_DROPOUT`` (inference never drops),
  ``_ALIBI`` (no served model uses ALiBi), ``_SOFTCAP`` (only Gemma 2, head dim 256, caps
  logits), ``_UNEVEN_K`` (the head dimensions built are exact). Local (sliding-window) attention
  is kept: Mistral and Qwen2 with sliding windows use it. ``setup_requires`` is dropped (an
  offline machine cannot fetch psutil / ninja at build time; the script checks them itself) and
  ``wheel.bdist_wheel`` falls back to setuptools' own when the ``wheel`` package is absent.
* csrc/flash_attn/src/static_switch.h — two dispatch macros, ``HEADROOM_FWD_DTYPE_SWITCH`` and
  ``HEADROOM_FWD_HEADDIM_SWITCH``, that reach only the kernels compiled in and refuse anything
  else with a clear ``RuntimeError`` (exact head dimensions: with ``_UNEVEN_K`` a head dim of
  96 must not run the 128 kernel).
* csrc/flash_attn/flash_api.cpp — ``run_mha_fwd`` dispatches through those macros, so the
  module references no kernel that is not built; ``run_mha_bwd`` becomes a stub that raises
  "This flash attention build does not support backward" (upstream's own
  ``FLASHATTENTION_DISABLE_BACKWARD`` check in ``mha_bwd`` still references every backward
  kernel, and the module would then fail to import with an undefined symbol). ``fwd``,
  ``varlen_fwd`` and ``fwd_kvcache`` are untouched; ``bwd`` / ``varlen_bwd`` raise.
* csrc/flash_attn/src/flash_fwd_launch_template.h — "return softmax" switches like dropout
  (``DROPOUT_SWITCH``): upstream returns the softmax only with dropout (``mha_fwd`` checks it),
  but its ``BOOL_SWITCH`` still instantiated a second set of kernels for it.
* flash_attn/headroom_build.py — new: what this build holds (head dims, dtypes, archs, features
  off), read by Headroom's placement so a model this build cannot run falls back to SDPA before
  loading (app.engine.loading.placement).

Run on the GPU machine (nvcc, CUDA torch, ninja), detached when a command has a time limit::

    setsid nohup python3 packaging/build_flash_attn.py --sdist .gpu/fa2/flash_attn-2.8.3.post2.tar.gz \\
        --out .gpu/fa2/dist --record $OUT/fa2_build.json > $OUT/fa2_build.log 2>&1 < /dev/null &

Progress goes to stdout one timestamped line at a time (ninja's ``[k/n]`` lines included) and
the record (JSON) is rewritten at every stage: ``stage`` is "unpacking", "patching",
"building", "verifying", then "done" or "failed" (with ``error`` and the log's tail), so a
second command can poll it. ``--patch-only`` stops after patching (used on machines without
CUDA to check the patch and count sources); ``--check-host`` also compiles ``flash_api.cpp``
with g++ against torch's and CUDA's headers and lists the kernel symbols it needs.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

FLASH_VERSION = "2.8.3.post2"
HEAD_DIMS = (64, 128)
DTYPES = ("bf16", "fp16")
ARCHS = ("90",)
DISABLED = ("BACKWARD", "DROPOUT", "ALIBI", "SOFTCAP", "UNEVEN_K")
ALL_HEAD_DIMS = (32, 64, 96, 128, 192, 256)
LOCAL_VERSION = "headroom.fwd"  # wheel version 2.8.3.post2+headroom.fwd.sm90
TAIL_LINES = 60


class PatchError(RuntimeError):
    """The sdist does not look like the one this patch was written for."""


# ----------------------------------------------------------------------------- the patch
def kernel_sources(head_dims, dtypes) -> list[str]:
    """Forward and split-KV forward kernel files for ``head_dims`` × ``dtypes`` × causal or not,
    paths relative to the sdist root, in upstream's naming."""
    out = []
    for kind in ("fwd", "fwd_split"):
        for causal in ("", "_causal"):
            for dim in head_dims:
                for dtype in dtypes:
                    out.append(f"csrc/flash_attn/src/flash_{kind}_hdim{dim}_{dtype}{causal}_sm80.cu")
    return out


def _replace_once(text: str, old: str, new: str, where: str) -> str:
    count = text.count(old)
    if count != 1:
        raise PatchError(f"{where}: expected one occurrence of {old[:60]!r}, found {count}")
    return text.replace(old, new)


def patch_setup(text: str, sources: list[str], defines: list[str]) -> str:
    """setup.py: only ``sources`` (plus flash_api.cpp), ``defines`` for g++ and nvcc, no
    setup_requires, a bdist_wheel that does not need the ``wheel`` package."""
    block = re.compile(r'sources=\[\s*"csrc/flash_attn/flash_api\.cpp",.*?\],', re.S)
    if len(block.findall(text)) != 1:
        raise PatchError("setup.py: the CUDA extension's source list was not found")
    listed = "".join(f'\n                "{s}",' for s in ["csrc/flash_attn/flash_api.cpp", *sources])
    text = block.sub(lambda _m: f"sources=[{listed}\n            ],", text, count=1)
    ext = '    ext_modules.append(\n        CUDAExtension(\n            name="flash_attn_2_cuda",'
    flags = ", ".join(f'"{d}"' for d in defines)
    text = _replace_once(text, ext, (
        "    # Headroom inference-only build (packaging/build_flash_attn.py): the same switches for\n"
        "    # g++ (flash_api.cpp) and nvcc, so the host checks and the kernels agree\n"
        f"    headroom_defines = [{flags}]\n"
        "    nvcc_flags = nvcc_flags + headroom_defines\n"
        "    compiler_c17_flag = compiler_c17_flag + headroom_defines\n" + ext), "setup.py")
    text = _replace_once(
        text, '    setup_requires=[\n        "packaging",\n        "psutil",\n        "ninja",\n    ],\n',
        "    # setup_requires dropped: an offline build machine cannot fetch them (checked by the script)\n",
        "setup.py")
    return _replace_once(
        text, "from wheel.bdist_wheel import bdist_wheel as _bdist_wheel",
        "try:\n    from wheel.bdist_wheel import bdist_wheel as _bdist_wheel\n"
        "except ImportError:  # no `wheel` package: setuptools >= 70.1 carries its own\n"
        "    from setuptools.command.bdist_wheel import bdist_wheel as _bdist_wheel", "setup.py")


def switch_macros(head_dims, dtypes) -> str:
    """The two dispatch macros appended to static_switch.h (C++ source text)."""
    dims = ", ".join(map(str, head_dims))
    built = " and ".join(dtypes)
    lines = ["", "// Headroom inference-only build (packaging/build_flash_attn.py): dispatch only to the",
             "// kernels compiled into this wheel; anything else is refused, never run on a wrong kernel.",
             "#define HEADROOM_FWD_DTYPE_SWITCH(IS_FP16, ...) \\", "  [&] { \\"]
    if "fp16" in dtypes and "bf16" in dtypes:
        lines += ["    if (IS_FP16) { using elem_type = cutlass::half_t; return __VA_ARGS__(); } \\",
                  "    using elem_type = cutlass::bfloat16_t; return __VA_ARGS__(); \\"]
    else:
        kept, other = ("cutlass::half_t", "bf16") if "fp16" in dtypes else ("cutlass::bfloat16_t", "fp16")
        cond = "!(IS_FP16)" if "fp16" in dtypes else "(IS_FP16)"
        lines += [f'    TORCH_CHECK(!{cond}, "This FlashAttention build (Headroom, inference only) has no {other} '
                  f'kernels, only {built}"); \\',
                  f"    using elem_type = {kept}; return __VA_ARGS__(); \\"]
    lines += ["  }()", "", "#define HEADROOM_FWD_HEADDIM_SWITCH(HEADDIM, ...) \\", "  [&] { \\"]
    for dim in head_dims:
        lines.append(f"    if (HEADDIM == {dim}) {{ constexpr static int kHeadDim = {dim}; return __VA_ARGS__(); }} \\")
    lines += [f'    TORCH_CHECK(false, "This FlashAttention build (Headroom, inference only) has head dimensions '
              f'{dims}; got ", HEADDIM); \\', "  }()", ""]
    return "\n".join(lines)


RUN_FWD = ("void run_mha_fwd(Flash_fwd_params &params, cudaStream_t stream, bool force_split_kernel=false) {\n"
           "    FP16_SWITCH(!params.is_bf16, [&] {\n        HEADDIM_SWITCH(params.d, [&] {\n")
RUN_BWD = ("void run_mha_bwd(Flash_bwd_params &params, cudaStream_t stream) {\n"
           "    FP16_SWITCH(!params.is_bf16, [&] {\n        HEADDIM_SWITCH(params.d, [&] {\n"
           "            BOOL_SWITCH(params.is_causal, Is_causal, [&] {\n"
           "                run_mha_bwd_<elem_type, kHeadDim, Is_causal>(params, stream);\n"
           "            });\n        });\n    });\n}\n")


def patch_flash_api(text: str) -> str:
    """flash_api.cpp: forward dispatch through the Headroom macros; backward launch stubbed."""
    text = _replace_once(text, RUN_FWD, RUN_FWD.replace("FP16_SWITCH", "HEADROOM_FWD_DTYPE_SWITCH").replace(
        "HEADDIM_SWITCH", "HEADROOM_FWD_HEADDIM_SWITCH"), "flash_api.cpp")
    stub = ("void run_mha_bwd(Flash_bwd_params &params, cudaStream_t stream) {\n"
            "#ifdef FLASHATTENTION_DISABLE_BACKWARD\n"
            "    // Headroom inference-only build: no backward kernel is compiled or referenced\n"
            '    TORCH_CHECK(false, "This flash attention build does not support backward.");\n'
            "#else\n" + RUN_BWD.split("{\n", 1)[1].rsplit("}\n", 1)[0] + "#endif\n}\n")
    return _replace_once(text, RUN_BWD, stub, "flash_api.cpp")


def patch_launch_template(text: str) -> str:
    """flash_fwd_launch_template.h: "return softmax" instantiated only where dropout is."""
    return _replace_once(text, "BOOL_SWITCH(return_softmax, ReturnSoftmaxConst, [&] {",
                         "DROPOUT_SWITCH(return_softmax, ReturnSoftmaxConst, [&] {  // Headroom: only with dropout",
                         "flash_fwd_launch_template.h")


def build_info(head_dims, dtypes, archs, disabled) -> str:
    """flash_attn/headroom_build.py: what this wheel can run (read by Headroom's placement)."""
    return (f'"""What this inference-only FlashAttention-2 build holds (written by Headroom\'s\n'
            f'packaging/build_flash_attn.py; the upstream package has no such module)."""\n\n'
            f"HEAD_DIMS = {tuple(head_dims)!r}\nDTYPES = {tuple(dtypes)!r}\n"
            f"CUDA_ARCHS = {tuple(archs)!r}\nDISABLED = {tuple(disabled)!r}\n"
            f"BACKWARD = False\nENTRY_POINTS = ('fwd', 'varlen_fwd', 'fwd_kvcache')\n")


def apply_patch(root: Path, head_dims, dtypes, archs, disabled=DISABLED) -> str:
    """Patch the unpacked sdist at ``root`` in place; returns the unified diff of every change.
    Raises PatchError when a file does not match flash-attn FLASH_VERSION."""
    bad = sorted(set(head_dims) - set(ALL_HEAD_DIMS))
    if bad or not head_dims or not set(dtypes) <= {"bf16", "fp16"} or not dtypes:
        raise PatchError(f"head dims must be among {ALL_HEAD_DIMS} and dtypes bf16/fp16; got {head_dims} {dtypes}")
    defines = [f"-DFLASHATTENTION_DISABLE_{name}" for name in disabled]
    edits = {
        "setup.py": lambda t: patch_setup(t, kernel_sources(head_dims, dtypes), defines),
        "csrc/flash_attn/src/static_switch.h": lambda t: t + switch_macros(head_dims, dtypes),
        "csrc/flash_attn/flash_api.cpp": patch_flash_api,
        "csrc/flash_attn/src/flash_fwd_launch_template.h": patch_launch_template,
        "flash_attn/headroom_build.py": lambda _t: build_info(head_dims, dtypes, archs, disabled),
    }
    version = re.search(r'__version__ = "([^"]+)"', (root / "flash_attn/__init__.py").read_text())
    if not version or version.group(1) != FLASH_VERSION:
        raise PatchError(f"flash_attn/__init__.py: version {version and version.group(1)}, "
                         f"this patch is for {FLASH_VERSION}")
    diff = []
    for rel, edit in edits.items():
        path = root / rel
        before = path.read_text() if path.exists() else ""
        after = edit(before)
        path.write_text(after)
        diff += difflib.unified_diff(before.splitlines(True), after.splitlines(True),
                                     f"a/{rel}" if before else "/dev/null", f"b/{rel}")
    for source in kernel_sources(head_dims, dtypes):
        if not (root / source).is_file():
            raise PatchError(f"{source} is not in the sdist")
    return "".join(diff)


def count_sources(setup_text: str) -> int:
    """CUDA kernel files (.cu) the CUDA extension of a setup.py compiles."""
    block = re.search(r'sources=\[\s*"csrc/flash_attn/flash_api\.cpp",.*?\],', setup_text, re.S)
    return len(re.findall(r'"[^"]+\.cu"', block.group(0))) if block else 0


# ----------------------------------------------------------------------------- running it
class Run:
    """The build record: stages, versions, timings; rewritten to ``path`` at every change."""

    def __init__(self, path: Path | None):
        self.path = path
        self.started = time.time()
        self.data: dict = {"stage": "starting", "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                           "command": " ".join([Path(sys.executable).name, *sys.argv]), "stages": {}}

    def log(self, *parts) -> None:
        print(f"[{time.strftime('%H:%M:%S')} +{time.time() - self.started:6.0f}s]", *parts, flush=True)

    def stage(self, name: str, **fields) -> None:
        self.data["stage"] = name
        self.data["stages"][name] = round(time.time() - self.started, 1)
        self.data.update(fields)
        self.save()
        self.log("stage:", name)

    def save(self) -> None:
        self.data["elapsed_s"] = round(time.time() - self.started, 1)
        if self.path is not None:
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.data, indent=1, default=str))
            tmp.replace(self.path)  # a poller never reads half a file


def _output(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unavailable ({exc})"


def toolchain(cuda_home: str | None) -> dict:
    """Versions of everything the build depends on (missing ones said as such)."""
    out: dict = {"python": platform.python_version(), "machine": platform.node(), "cpus": os.cpu_count()}
    try:
        import torch

        out.update(torch=torch.__version__, torch_cuda=torch.version.cuda,
                   cxx11_abi=bool(torch._C._GLIBCXX_USE_CXX11_ABI))
        if torch.cuda.is_available():
            out["gpu"] = torch.cuda.get_device_name(0)
            out["capability"] = ".".join(map(str, torch.cuda.get_device_capability(0)))
    except Exception as exc:  # noqa: BLE001 - recorded, the build step then fails with its own error
        out["torch"] = f"not importable ({exc})"
    for name in ("setuptools", "wheel", "ninja", "psutil", "packaging", "einops", "pip"):
        try:
            from importlib.metadata import version

            out[name] = version(name)
        except Exception:  # noqa: BLE001
            out[name] = None
    nvcc = Path(cuda_home or "", "bin", "nvcc") if cuda_home else shutil.which("nvcc")
    out["cuda_home"] = cuda_home
    out["nvcc"] = _output([str(nvcc), "--version"]).splitlines()[-1] if nvcc else None
    out["gcc"] = _output(["gcc", "--version"]).splitlines()[0] if shutil.which("gcc") else None
    out["ninja_binary"] = _output(["ninja", "--version"]) if shutil.which("ninja") else None
    return out


def cuda_home() -> str | None:
    try:
        from torch.utils.cpp_extension import CUDA_HOME

        return CUDA_HOME
    except Exception:  # noqa: BLE001
        return os.environ.get("CUDA_HOME")


def unpack(sdist: Path, work: Path) -> Path:
    """Extract ``sdist`` into a fresh ``work`` folder; returns the source root."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    with tarfile.open(sdist) as tar:
        try:
            tar.extractall(work, filter="data")
        except TypeError:  # a Python without extraction filters (< 3.11.4)
            tar.extractall(work)
    roots = [p for p in work.iterdir() if p.is_dir()]
    if len(roots) != 1 or not (roots[0] / "setup.py").is_file():
        raise PatchError(f"{sdist.name} does not unpack to one folder with a setup.py")
    return roots[0]


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def build_wheel(root: Path, dist: Path, run: Run, jobs: int, archs, timeout: float) -> Path:
    """``pip wheel --no-build-isolation --no-deps`` in ``root``; stdout streamed to the log
    (ninja's progress lines included), its tail kept in the record. Returns the wheel path."""
    env = dict(os.environ, MAX_JOBS=str(jobs), FLASH_ATTN_CUDA_ARCHS=";".join(archs),
               TORCH_CUDA_ARCH_LIST=";".join(f"{int(a) // 10}.{int(a) % 10}" for a in archs),  # not the GPU's
               FLASH_ATTENTION_FORCE_BUILD="TRUE",  # no attempt to download a prebuilt wheel
               FLASH_ATTENTION_SKIP_CUDA_BUILD="FALSE", NVCC_THREADS=os.environ.get("NVCC_THREADS", "1"),
               FLASH_ATTN_LOCAL_VERSION=f"{LOCAL_VERSION}.sm{'.sm'.join(archs)}", PYTHONUNBUFFERED="1")
    dist.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index", "-v",
           "-w", str(dist), str(root)]
    run.data["build_command"] = " ".join(cmd)
    run.data["build_env"] = {k: env[k] for k in ("MAX_JOBS", "FLASH_ATTN_CUDA_ARCHS", "TORCH_CUDA_ARCH_LIST",
                                                 "NVCC_THREADS", "FLASH_ATTENTION_FORCE_BUILD",
                                                 "FLASH_ATTN_LOCAL_VERSION")}
    run.save()
    tail: list[str] = []
    before = set(dist.glob("flash_attn-*.whl"))
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, bufsize=1)
    deadline = time.time() + timeout
    for line in proc.stdout:
        line = line.rstrip()
        tail = (tail + [line])[-TAIL_LINES:]
        if re.match(r"\[\d+/\d+\]", line):  # ninja progress: one line per compiled unit
            run.data["ninja_progress"] = line.split(" ", 1)[0]
            unit = re.findall(r"[\w.-]+\.(?:cu|cpp|so)\b", line)
            run.log(run.data["ninja_progress"], unit[-1] if unit else line[:160])
            run.save()
        elif "error" in line.lower() or "warning: " not in line and line.startswith(("Building", "Created", "Saved")):
            run.log(line[:300])
        if time.time() > deadline:
            proc.kill()
            raise TimeoutError(f"build still running after {timeout:.0f} s")
    rc = proc.wait()
    run.data["log_tail"] = tail
    if rc != 0:
        raise RuntimeError(f"pip wheel exited {rc}")
    wheels = sorted(set(dist.glob("flash_attn-*.whl")) - before) or sorted(dist.glob("flash_attn-*.whl"))
    if not wheels:
        raise RuntimeError(f"pip wheel succeeded but left no flash_attn wheel in {dist}")
    return wheels[-1]


VERIFY = r"""
import json, torch
import flash_attn, flash_attn.headroom_build as hb
from flash_attn import flash_attn_func, flash_attn_with_kvcache

def sdpa(q, k, v, mask=None):  # FA2 layout (B, S, H, d) in and out
    t = lambda x: x.transpose(1, 2)
    return t(torch.nn.functional.scaled_dot_product_attention(t(q), t(k), t(v), attn_mask=mask, enable_gqa=True))

out = {"version": flash_attn.__version__, "file": flash_attn.__file__, "head_dims": hb.HEAD_DIMS}
torch.manual_seed(0)
bf16 = dict(device="cuda", dtype=torch.bfloat16)
for d in hb.HEAD_DIMS:
    q, k, v = torch.randn(1, 300, 32, d, **bf16), torch.randn(1, 700, 8, d, **bf16), torch.randn(1, 700, 8, d, **bf16)
    causal = torch.ones(300, 700, dtype=torch.bool, device="cuda").tril(400)  # bottom-right aligned
    got, ref = flash_attn_func(q, k, v, causal=True), sdpa(q, k, v, causal)
    out[f"hdim{d}_prefill_max_abs_diff"] = float((got.float() - ref.float()).abs().max())
    filled = torch.tensor([650], dtype=torch.int32, device="cuda")
    got, ref = flash_attn_with_kvcache(q[:, -1:], k, v, cache_seqlens=filled), sdpa(q[:, -1:], k[:, :650], v[:, :650])
    out[f"hdim{d}_decode_max_abs_diff"] = float((got.float() - ref.float()).abs().max())
print(json.dumps(out), flush=True)  # first: the probe below may abort the process
try:
    x = torch.randn(1, 8, 4, 96, **bf16)
    flash_attn_func(x, x, x)
    print(json.dumps({"hdim96": "ran (unexpected)"}))
except RuntimeError as exc:
    print(json.dumps({"hdim96": "refused: " + str(exc).splitlines()[0]}))
"""


def verify(wheel: Path, run: Run) -> dict:
    """Unzip the wheel into a scratch folder and run FA2's forward and kv-cache entry points
    against SDPA on the GPU (head dims built, bf16), plus one head dim not built (must refuse)."""
    import zipfile

    target = wheel.parent / "verify-site"
    shutil.rmtree(target, ignore_errors=True)
    with zipfile.ZipFile(wheel) as z:
        z.extractall(target)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", VERIFY], capture_output=True, text=True, env=env, timeout=300,
                          cwd=str(target))
    shutil.rmtree(target, ignore_errors=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:  # the comparisons themselves failed
        return {"ok": False, "returncode": proc.returncode, "error": (proc.stderr or proc.stdout)[-2000:]}
    result = json.loads(lines[0])
    # a head dim not built must not run: refused with FA2's error, or the process ended there
    result.update(json.loads(lines[1]) if len(lines) > 1 else
                  {"hdim96": f"aborted the process (return code {proc.returncode})"})
    result["returncode"] = proc.returncode
    diffs = [v for k, v in result.items() if k.endswith("max_abs_diff")]
    result["ok"] = bool(diffs) and max(diffs) < 0.05 and "unexpected" not in result["hdim96"]
    return result


def check_host(root: Path, cuda: str, run: Run) -> dict:
    """Compile the patched flash_api.cpp with g++ (torch + CUDA headers, the build's defines) and
    list the kernel entry points it leaves undefined: they must be exactly the kernels built."""
    import sysconfig

    import torch.utils.cpp_extension as ext

    obj = root / "flash_api.o"
    defines = [f"-DFLASHATTENTION_DISABLE_{name}" for name in DISABLED]
    shim = root / "host-check-include"
    if not any(Path(p, "c10/cuda/impl/cuda_cmake_macros.h").exists() for p in ext.include_paths()):
        # a CPU torch lacks this generated header; its CUDA build defines only this macro
        (shim / "c10/cuda/impl").mkdir(parents=True, exist_ok=True)
        (shim / "c10/cuda/impl/cuda_cmake_macros.h").write_text("#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n")
    includes = [*ext.include_paths(), str(shim), f"{cuda}/include", sysconfig.get_paths()["include"],
                str(root / "csrc/flash_attn"), str(root / "csrc/flash_attn/src"), str(root / "csrc/cutlass/include")]
    cmd = ["g++", "-std=c++17", "-O0", "-fPIC", "-c", "-DTORCH_EXTENSION_NAME=flash_attn_2_cuda",
           "-DTORCH_API_INCLUDE_EXTENSION_H", *defines, *[f"-I{p}" for p in includes],
           str(root / "csrc/flash_attn/flash_api.cpp"), "-o", str(obj)]
    started = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    out: dict = {"command": " ".join(cmd), "rc": proc.returncode, "seconds": round(time.time() - started, 1)}
    if proc.returncode != 0:
        out["error"] = proc.stderr[-3000:]
        return out
    symbols = _output(["nm", "-C", "--undefined-only", str(obj)]).splitlines()
    needed = sorted({re.sub(r"\(.*", "", s.split(" U ", 1)[-1].strip()) for s in symbols
                     if "run_mha_" in s})
    out["kernel_entry_points_needed"] = needed
    run.log(f"flash_api.cpp compiled in {out['seconds']} s; it needs {len(needed)} kernel entry points")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sdist", type=Path, required=True, help=f"flash_attn-{FLASH_VERSION}.tar.gz")
    ap.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "fa2-build")
    ap.add_argument("--out", type=Path, default=None,
                    help="folder for the wheel and the patch (default: beside the sdist)")
    ap.add_argument("--record", type=Path, default=None, help="JSON record (default: <out>/fa2_build.json)")
    ap.add_argument("--head-dims", default=",".join(map(str, HEAD_DIMS)))
    ap.add_argument("--dtypes", default=",".join(DTYPES))
    ap.add_argument("--archs", default=",".join(ARCHS), help="CUDA archs, e.g. 90 (sm_90 SASS only)")
    ap.add_argument("--jobs", type=int, default=None,
                    help="parallel compile units (default: all of them at once when the cores are within one of "
                         "that, else one per core; about 4.2 GB of memory each)")
    ap.add_argument("--timeout", type=float, default=3000, help="seconds before the build is killed")
    ap.add_argument("--patch-only", action="store_true", help="unpack and patch, no build")
    ap.add_argument("--check-host", action="store_true",
                    help="also compile flash_api.cpp with g++ (needs CUDA headers)")
    ap.add_argument("--no-verify", action="store_true", help="skip the GPU check of the built wheel")
    args = ap.parse_args(argv)
    out = args.out or args.sdist.parent / "dist"
    out.mkdir(parents=True, exist_ok=True)
    run = Run(args.record or out / "fa2_build.json")
    head_dims = tuple(int(d) for d in args.head_dims.split(","))
    dtypes = tuple(args.dtypes.split(","))
    archs = tuple(args.archs.split(","))
    if args.jobs is None:  # one wave: 16 cores take the 17 units (flash_api.cpp is short) at once
        units, cores = len(kernel_sources(head_dims, dtypes)) + 1, os.cpu_count() or 4
        args.jobs = units if cores >= units - 1 else cores
    run.data.update(flash_attn=FLASH_VERSION, head_dims=head_dims, dtypes=dtypes, archs=archs,
                    disabled=DISABLED, jobs=args.jobs)
    try:
        cuda = cuda_home()
        run.data["toolchain"] = toolchain(cuda)
        run.log("toolchain", json.dumps(run.data["toolchain"]))
        run.stage("unpacking", sdist=str(args.sdist), sdist_sha256=sha256(args.sdist))
        root = unpack(args.sdist, args.work)
        sources_before = count_sources((root / "setup.py").read_text())
        run.stage("patching", source_root=str(root))
        diff = apply_patch(root, head_dims, dtypes, archs)
        patch_file = out / f"flash_attn-{FLASH_VERSION}-headroom-inference.patch"
        patch_file.write_text(diff)
        run.data.update(patch=diff, patch_file=str(patch_file), cu_files_before=sources_before,
                        cu_files_after=count_sources((root / "setup.py").read_text()))
        run.log(f".cu files compiled: {sources_before} upstream, {run.data['cu_files_after']} here; "
                f"patch written to {patch_file}")
        if args.check_host:
            run.data["host_check"] = check_host(root, cuda or os.environ.get("CUDA_HOME", "/usr/local/cuda"), run)
        if args.patch_only:
            run.stage("done", result="patched only")
            return 0
        missing = [m for m in ("torch", "setuptools") if not run.data["toolchain"].get(m)]
        if not run.data["toolchain"].get("ninja_binary"):
            missing.append("ninja binary on PATH")
        if missing or not run.data["toolchain"].get("nvcc"):
            raise RuntimeError(f"cannot build here: missing {', '.join(missing) or 'nvcc'}")
        run.stage("building")
        began = time.time()
        wheel = build_wheel(root, out, run, args.jobs, archs, args.timeout)
        run.data.update(build_seconds=round(time.time() - began, 1), wheel=str(wheel),
                        wheel_bytes=wheel.stat().st_size, wheel_sha256=sha256(wheel))
        if not args.no_verify:
            run.stage("verifying")
            run.data["verify"] = verify(wheel, run)
            run.log("verify", json.dumps(run.data["verify"]))
        run.stage("done", result="built")
        return 0
    except BaseException as exc:  # noqa: BLE001 - every failure is recorded for the poller
        run.data["error"] = f"{type(exc).__name__}: {exc}"
        run.stage("failed")
        return 1


if __name__ == "__main__":
    sys.exit(main())
