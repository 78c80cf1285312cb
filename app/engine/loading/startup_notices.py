"""Plain-language start-up notices: why the GPU or 4-bit is not used, and what still works.

A pure decision over an `Environment` (app.engine.loading.environment), so every case is testable with
injected facts on a machine without a GPU (no CUDA or a CPU-only bitsandbytes, bitsandbytes #1062: a plain message, no
traceback, no hang).
Each notice has a stable `key`; the window remembers the keys it has shown so a notice appears
once, not at every start. No Qt, no torch calls.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field

from app.engine.loading.environment import Environment

# Oldest NVIDIA driver branch each CUDA major release runs on (minor version compatibility):
# https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html (Table 1)
MIN_DRIVER_BRANCH = {11: 450, 12: 525, 13: 580}

_CPU_STILL_WORKS = ("Headroom runs models on the CPU instead: chatting, the memory panel and your "
                    "conversations all work, only answers come more slowly and large models may not "
                    "fit in memory. 4-bit models need an NVIDIA GPU with CUDA and the bitsandbytes "
                    "package.")


@dataclass(frozen=True)
class StartupNotice:
    """key: stable id, remembered once shown; its part before ":" names the sentence ("no-gpu",
    "cpu-only-torch", "driver-too-old", "cuda-unavailable", "no-bitsandbytes",
    "broken-bitsandbytes"). text: what happened and what still works, in English. facts: the
    values in it by name (gpu, driver, cuda, needed_driver, version, problem), so a UI can say
    the same in another language."""

    key: str
    text: str
    facts: Mapping[str, str] = field(default_factory=dict, compare=False)


def startup_notices(env: Environment, device_preference: str = "auto") -> list[StartupNotice]:
    """Notices for `env`, most important first; [] when the GPU and 4-bit are usable, or when
    the user asked for the CPU (device_preference "cpu": nothing to explain)."""
    if device_preference == "cpu":
        return []
    if env.cuda_available:
        return _bitsandbytes_notice(env)
    gpu = env.nvidia_gpus[0] if env.nvidia_gpus else ""
    if not gpu:
        return [StartupNotice("no-gpu", f"No NVIDIA GPU was found. {_CPU_STILL_WORKS}")]
    if env.torch_cuda is None:
        return [StartupNotice("cpu-only-torch", (
            f"Your NVIDIA GPU ({gpu}) is not used: the installed PyTorch is a CPU-only build. "
            f"Install a CUDA build of PyTorch (pytorch.org) to use it. {_CPU_STILL_WORKS}"), dict(gpu=gpu))]
    needed = required_driver_branch(env.torch_cuda)
    branch = driver_branch(env.driver_version)
    if needed is not None and branch is not None and branch < needed:
        return [StartupNotice(f"driver-too-old:{env.driver_version}", (
            f"Your NVIDIA driver ({env.driver_version}) is too old for this PyTorch, which is built "
            f"for CUDA {env.torch_cuda} and needs driver {needed} or newer, so your GPU ({gpu}) is "
            f"not used. Update the NVIDIA driver to use it. {_CPU_STILL_WORKS}"),
            dict(gpu=gpu, driver=env.driver_version, cuda=env.torch_cuda, needed_driver=str(needed)))]
    driver = f" (driver {env.driver_version})" if env.driver_version else ""
    return [StartupNotice("cuda-unavailable", (
        f"An NVIDIA GPU ({gpu}) was found{driver}, but CUDA could not start, so it is not used. "
        "Restarting after a driver update often fixes this; check that `nvidia-smi` works. "
        f"{_CPU_STILL_WORKS}"), dict(gpu=gpu, driver=env.driver_version or ""))]


def _bitsandbytes_notice(env: Environment) -> list[StartupNotice]:
    if env.bitsandbytes_problem is None:
        return []
    key = "no-bitsandbytes" if env.bitsandbytes is None else "broken-bitsandbytes"
    why = ("bitsandbytes is not installed" if env.bitsandbytes is None
           else f"bitsandbytes {env.bitsandbytes} does not work here ({env.bitsandbytes_problem})")
    return [StartupNotice(key, (
        f"Your GPU is used, but {why}, so models load in 16-bit instead of 4-bit: they need about "
        "3–4× the memory (an 8B model about 16 GB instead of about 5 GB), and large ones may not "
        "fit. Install it with pip install 'headroom[cuda]' to load 4-bit models."),
        dict(version=env.bitsandbytes or "", problem=env.bitsandbytes_problem or ""))]


def required_driver_branch(torch_cuda: str) -> int | None:
    """The oldest driver branch (e.g. 525) for a torch CUDA version string ("12.4"); None when
    the major version is not in MIN_DRIVER_BRANCH or the string is not a version."""
    try:
        return MIN_DRIVER_BRANCH.get(int(torch_cuda.split(".")[0]))
    except ValueError:
        return None


def driver_branch(driver_version: str | None) -> int | None:
    """The branch of a driver version ("470.182.03" → 470); None when unknown or unparsable."""
    try:
        return int(driver_version.split(".")[0]) if driver_version else None
    except ValueError:
        return None
