"""What the tests of the NVRTC kernels share: ptxas's report of a source built for sm_90 without a GPU,
and a module's switch read at import in a fresh interpreter."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest


def ptxas_log(source: str, name: str) -> str:
    """NVRTC's log of ``source`` built for sm_90 with ptxas's report (registers, spills, shared memory per
    entry function). Skips the test where NVRTC is not found (pip nvidia-cuda-nvrtc, HEADROOM_NVRTC)."""
    from app.engine.local import nvrtc

    try:
        library = nvrtc.nvrtc_library()
    except nvrtc.CompileError as exc:
        pytest.skip(f"no NVRTC here ({exc}); pip nvidia-cuda-nvrtc and set HEADROOM_NVRTC")
    return nvrtc.compile_cubin("90", source, name, ("--ptxas-options=-v",), library)[1]


def entry_report(log: str, kernel: str) -> dict[str, int]:
    """{"registers", "spill_stores", "smem"} (bytes) of one entry function in a `ptxas_log`."""
    props = log.split(f"Compiling entry function '{kernel}'")[1].split("Compile time")[0]

    def number(pattern: str) -> int:
        found = re.search(pattern, props)
        return int(found.group(1)) if found else 0

    return {"registers": number(r"Used (\d+) registers"), "spill_stores": number(r"(\d+) bytes spill stores"),
            "smem": number(r"(\d+) bytes smem")}


def switch_at_import(module: str, attribute: str, variable: str, value: str | None) -> str:
    """str(module.attribute) as a fresh interpreter imports it with the environment ``variable`` set to
    ``value`` (None: unset)."""
    env = {k: v for k, v in os.environ.items() if k != variable}
    if value is not None:
        env[variable] = value
    code = f"import {module} as m; print(m.{attribute})"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()
