"""CUDA C kernels built at run time: NVRTC from torch's CUDA wheels (nvidia-cuda-nvrtc), no CUDA
toolkit and no headers, compiled to a cubin for the device's sm and loaded with torch's own loader
(torch.cuda._utils._cuda_load_module, torch >= 2.8). The NF4 GEMV (nf4_mma) and the 16-bit decode
attention (kv16_mma) are built here."""

from __future__ import annotations

import ctypes
import glob
import os
import sys
from functools import cache

import torch

PDL = os.environ.get("HEADROOM_PDL", "1") != "0"
"""Launch the kernels built here with programmatic dependent launch on sm_90+ (HEADROOM_PDL=0: off): a
launch's blocks may start while the kernel before it finishes, load what no kernel writes (weights),
then wait (``griddepcontrol.wait``) for that kernel's results; compiled_decode turns on Inductor's own
PDL with it (``triton.enable_pdl``: its kernels wait before reading what the kernel before them
wrote). On the H200 the 8B decode step took 3.226 against 3.387 ms at 1k and 3.316 against 3.464 at
4k, in the same run as llama.cpp (310.1 / 298.1 tok/s against 295.6 / 285.8; results/
decode_anatomy_h200_pdl_on.json): the GEMVs' launches overlap the small kernels before them, and since
their first weight loads are pinned above the wait (nf4_mma's gemv) those loads too: 3.071 against
3.110 ms at 1k (results/decode_anatomy_h200_loads_in_flight.json). Headroom's
kernels alone with PDL gain nothing (Inductor's kernels then never let the next launch start early).
tests/benchmarks/pdl_logits.py checks the compiled step's logits bit for bit with and without."""

# cuda.h (CUDA 12+): CUlaunchAttribute is {id (4 bytes), pad (4), value (a 64-byte union)}; the union's
# first words hold an int (programmatic stream serialization: 1) or the cluster's x, y, z
_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4
_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6
_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14  # CUfunction_attribute: clusters above 8 blocks
PORTABLE_CLUSTER = 8  # blocks a cluster may hold on every GPU that has clusters (sm_90+)


class _LaunchAttribute(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_uint * 16)]


def _attributes(pdl: bool, cluster: tuple | None) -> list[_LaunchAttribute]:
    """The launch attributes: programmatic stream serialization (PDL), a thread-block cluster's dims."""
    out = []
    if pdl:
        out.append(_LaunchAttribute(id=_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
                                    value=(ctypes.c_uint * 16)(1)))
    if cluster:
        out.append(_LaunchAttribute(id=_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, value=(ctypes.c_uint * 16)(*cluster)))
    return out


class _LaunchConfig(ctypes.Structure):
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("shared", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(_LaunchAttribute)), ("count", ctypes.c_uint)]


class CompileError(RuntimeError):
    """NVRTC missing or rejecting the source; str(exc) says why (first line: the cause)."""


def nvrtc_library() -> ctypes.CDLL:
    """NVRTC: $HEADROOM_NVRTC (a path), else the one torch's CUDA build names (libnvrtc.so.<major>,
    already loaded by torch or on the loader path), else a pip wheel's (site-packages/nvidia/*/lib).
    Raises CompileError when there is none."""
    major = (torch.version.cuda or "").split(".")[0]
    candidates = [os.environ.get("HEADROOM_NVRTC", "")] + ([f"libnvrtc.so.{major}"] if major else [])
    for base in sys.path:
        candidates += sorted(glob.glob(os.path.join(base, "nvidia", "*", "lib", "libnvrtc.so.*")))
    tried = []
    for name in filter(None, candidates):
        if "builtins" in name or ".alt." in name:
            continue
        try:
            for builtins in sorted(glob.glob(os.path.join(os.path.dirname(name), "libnvrtc-builtins.so.*"))):
                if ".alt." not in builtins:  # NVRTC opens it by name at compile time: load it first
                    ctypes.CDLL(builtins)
            return ctypes.CDLL(name)
        except OSError as exc:
            tried.append(str(exc))
    raise CompileError(f"NVRTC not found ({'; '.join(tried[:2]) or 'no libnvrtc'})")


def compile_cubin(arch: str, source: str, name: str, options: tuple[str, ...] = (),
                  library: ctypes.CDLL | None = None) -> tuple[bytes, str]:
    """(cubin for sm_<arch>, NVRTC's log) of ``source`` (C++17; ``name`` labels it in the log and in
    errors). arch: "90" for the H100/H200. options: more NVRTC flags (e.g. "--ptxas-options=-v" puts
    registers and spills in the log). Raises CompileError with NVRTC's log when it does not compile."""
    lib = library or nvrtc_library()
    prog = ctypes.c_void_p()
    check = _nvrtc_check(lib)
    check(lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None))
    try:
        opts = [f"--gpu-architecture=sm_{arch}", "-std=c++17", *options]
        arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        res = lib.nvrtcCompileProgram(prog, len(opts), arr)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, buf)
        log = buf.value.decode(errors="replace")
        if res != 0:
            raise CompileError(f"NVRTC could not compile {name}: {log.strip()}")
        check(lib.nvrtcGetCUBINSize(prog, ctypes.byref(size)))
        cubin = ctypes.create_string_buffer(size.value)
        check(lib.nvrtcGetCUBIN(prog, cubin))
        return cubin.raw, log
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def load(device_index: int, source: str, name: str, kernels: list[str], options: tuple[str, ...] = ()) -> dict:
    """{kernel name: callable kernel} of ``source`` compiled for and loaded on one CUDA device. Raises
    CompileError (NVRTC) or what torch's loader raises."""
    from torch.cuda._utils import _cuda_load_module

    major, minor = torch.cuda.get_device_capability(device_index)
    cubin, _ = compile_cubin(f"{major}{minor}", source, name, options)
    with torch.cuda.device(device_index):
        return _cuda_load_module(cubin, kernels)


@cache
def _pdl_device(index: int) -> bool:
    """Hopper or newer, and a driver with cuLaunchKernelEx (CUDA 12.0+)."""
    from torch.cuda._utils import _get_gpu_runtime_library

    return torch.cuda.get_device_capability(index)[0] >= 9 and hasattr(_get_gpu_runtime_library(), "cuLaunchKernelEx")


def launch(kernel, grid: tuple, block: tuple, args: list, shared_mem: int = 0, cluster: tuple | None = None) -> None:
    """kernel(grid, block, args, shared_mem) on the current stream, as torch's loader launches it (tensors as
    pointers, ints as C int, floats as double); with `PDL` on an sm_90+ device through cuLaunchKernelEx
    and the programmatic-stream-serialization attribute (captured into CUDA graphs as a programmatic
    edge). The kernel must then execute ``griddepcontrol.wait`` before it reads what an earlier kernel
    wrote. Dynamic shared memory above 48 KB must have been allowed first (set_shared_memory_config).
    cluster (x, y, z): the blocks as thread-block clusters of that shape (sm_90+; each grid dimension a
    multiple of it; above PORTABLE_CLUSTER blocks the kernel is allowed non-portable sizes first)."""
    pdl = PDL and _pdl_device(torch.cuda.current_device())
    if not (pdl or cluster):
        kernel(grid=grid, block=block, args=args, shared_mem=shared_mem)
        return
    from torch.cuda._utils import _check_cuda, _get_gpu_runtime_library

    library = _get_gpu_runtime_library()
    if cluster and cluster[0] * cluster[1] * cluster[2] > PORTABLE_CLUSTER and not getattr(kernel, "_non_portable", 0):
        _check_cuda(library.cuFuncSetAttribute(kernel.func, _FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1))
        kernel._non_portable = 1  # once per loaded kernel
    keep = [ctypes.c_void_p(a.data_ptr()) if isinstance(a, torch.Tensor)
            else ctypes.c_double(a) if isinstance(a, float) else ctypes.c_int(a) for a in args]
    params = (ctypes.c_void_p * len(keep))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in keep])
    attrs = _attributes(pdl, cluster)
    array = (_LaunchAttribute * len(attrs))(*attrs)
    config = _LaunchConfig((ctypes.c_uint * 3)(*grid), (ctypes.c_uint * 3)(*block), shared_mem,
                           ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), array, len(attrs))
    _check_cuda(library.cuLaunchKernelEx(ctypes.byref(config), kernel.func, params, None))


def unavailable_reason(device: torch.device, build, label: str) -> str:
    """"" when a kernel of this module's kind can run on ``device``, else why not (one line): no CUDA,
    a GPU before Ampere (bf16 mma needs sm_80), torch without its NVRTC loader, NVRTC missing, a
    compile error. build(device_index) compiles and loads it (cached by the caller); label names it
    in the reason ("CUDA mma kernel")."""
    if device.type != "cuda":
        return "no CUDA device"
    try:
        import torch.cuda._utils as cu

        if not hasattr(cu, "_cuda_load_module"):
            return f"torch {torch.__version__} has no torch.cuda._utils._cuda_load_module (torch >= 2.8 has)"
        if torch.cuda.get_device_capability(device) < (8, 0):
            return "GPU older than Ampere (bf16 mma needs sm_80)"
        build(device.index if device.index is not None else torch.cuda.current_device())
    except Exception as exc:  # noqa: BLE001 - any failure to build the kernel is a reason, not a crash
        first = str(exc).strip().splitlines()
        return f"{label} unavailable: {type(exc).__name__}: {' '.join(first[:3])[:200]}"
    return ""


def _nvrtc_check(lib):
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p

    def check(result: int) -> None:
        if result != 0:
            raise CompileError(f"NVRTC error {result}: {(lib.nvrtcGetErrorString(result) or b'').decode()}")

    return check
