"""What this machine offers Headroom: library versions, CUDA, the NVIDIA driver, bitsandbytes.

The About dialog shows it and the start-up notices explain it (app.engine.loading.startup_notices).
`read_environment()` is fast (versions from package metadata, torch.cuda); with
`probe_gpu=True` it also asks the NVIDIA driver directly and imports bitsandbytes, which can
take seconds — call that off the GUI thread. No Qt.
"""

import importlib.metadata
import importlib.util
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import torch

from app import __version__

HEADROOM_LICENCE = "Apache-2.0"  # as declared in pyproject.toml [project].license
# (component, licence): the default model and the main libraries shipped with Headroom
LICENCES = (
    ("SmolLM2-135M-Instruct", "Apache-2.0"),  # the default model
    ("PySide6 / Qt for Python", "LGPL-3.0"),
    ("PyTorch", "BSD-3-Clause"),
    ("transformers", "Apache-2.0"),
    ("bitsandbytes", "MIT"),
)
NVIDIA_SMI_TIMEOUT_S = 5.0  # nvidia-smi can hang on a wedged driver; never wait longer


@dataclass(frozen=True)
class Environment:
    """Versions are strings; None means "not installed". torch_cuda: the CUDA version torch was
    built for (`torch.version.cuda`; None for a CPU-only build). cuda_devices: names of the
    devices torch can use. nvidia_gpus / driver_version: what the NVIDIA driver itself reports
    (NVML, nvidia-smi or /proc), read only by `read_environment(probe_gpu=True)` when torch
    sees no device. bitsandbytes_problem: why 4-bit NF4 cannot be used (checked only when CUDA
    works; None = usable or not checked)."""

    headroom: str
    python: str
    torch: str
    transformers: str | None
    pyside6: str | None
    bitsandbytes: str | None
    torch_cuda: str | None
    cuda_available: bool
    cuda_devices: tuple[str, ...] = ()
    nvidia_gpus: tuple[str, ...] = ()
    driver_version: str | None = None
    bitsandbytes_problem: str | None = None

    def cuda_summary(self) -> str:
        """One line: "12.4 · NVIDIA H200", or why there is no CUDA device."""
        if self.cuda_available and self.cuda_devices:
            return f"{self.torch_cuda} · {', '.join(self.cuda_devices)}"
        if self.torch_cuda is None:
            return "no CUDA device (this PyTorch is a CPU-only build)"
        return f"no CUDA device (PyTorch built for CUDA {self.torch_cuda})"

    def version_rows(self) -> list[tuple[str, str | None]]:
        """(label, value) rows for the About dialog and bug reports; value None: the package is not
        installed (the window says so in its own language)."""
        return [
            ("Headroom", self.headroom),
            ("Python", self.python),
            ("PyTorch", self.torch),
            ("transformers", self.transformers),
            ("PySide6", self.pyside6),
            ("bitsandbytes", self.bitsandbytes),
            ("CUDA", self.cuda_summary()),
        ]


def read_environment(probe_gpu: bool = False) -> Environment:
    """Read this machine. probe_gpu: where torch sees no CUDA device, ask the driver whether an
    NVIDIA GPU exists anyway (NVML, else `nvidia-smi`, else /proc/driver/nvidia; up to
    NVIDIA_SMI_TIMEOUT_S seconds); where CUDA works, import bitsandbytes to check 4-bit."""
    cuda = torch.cuda.is_available()
    devices = tuple(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())) if cuda else ()
    gpus, driver, bnb_problem = (), None, None
    if probe_gpu and not cuda:
        gpus, driver = read_nvidia_driver()
    if probe_gpu and cuda:
        from app.engine.loading.placement import bitsandbytes_usable

        usable, why = bitsandbytes_usable()
        bnb_problem = None if usable else why
    return Environment(
        headroom=__version__,
        python=platform.python_version(),
        torch=torch.__version__,
        transformers=package_version("transformers"),
        pyside6=package_version("PySide6-Essentials") or package_version("PySide6"),
        bitsandbytes=package_version("bitsandbytes"),
        torch_cuda=torch.version.cuda,
        cuda_available=cuda,
        cuda_devices=devices,
        nvidia_gpus=gpus,
        driver_version=driver,
        bitsandbytes_problem=bnb_problem,
    )


def package_version(distribution: str) -> str | None:
    """The installed version of `distribution` from its metadata (nothing is imported); None
    when it is not installed."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def read_nvidia_driver() -> tuple[tuple[str, ...], str | None]:
    """(GPU names, driver version) as the NVIDIA driver reports them, whatever torch thinks;
    ((), None) when no NVIDIA driver answers. Tries NVML (nvidia-ml-py), then nvidia-smi, then
    /proc/driver/nvidia (Linux; names unknown there, so each GPU is "NVIDIA GPU")."""
    found = _from_nvml()
    if found is None and shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT_S)
            found = parse_nvidia_smi(out.stdout) if out.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired):
            found = None
    if found is None:
        found = _from_proc(Path("/proc/driver/nvidia"))
    return found or ((), None)


def parse_nvidia_smi(text: str) -> tuple[tuple[str, ...], str | None] | None:
    """Parse `nvidia-smi --query-gpu=name,driver_version --format=csv,noheader` output
    ("NVIDIA GeForce RTX 3060, 470.182.03" per line); None when it lists no GPU."""
    rows = [line.rsplit(",", 1) for line in text.splitlines() if "," in line]
    if not rows:
        return None
    return tuple(name.strip() for name, _ in rows), rows[0][1].strip() or None


def parse_proc_driver_version(text: str) -> str | None:
    """The driver version from /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX x86_64
    Kernel Module  535.104.05  Sat Aug 19 …"); None when absent."""
    match = re.search(r"Kernel Module\s+(?:for \S+\s+)?(\d+(?:\.\d+)+)", text)
    return match.group(1) if match else None


def _from_proc(root: Path) -> tuple[tuple[str, ...], str | None] | None:
    try:
        driver = parse_proc_driver_version((root / "version").read_text())
        count = len(list((root / "gpus").iterdir()))
    except OSError:
        return None
    return (("NVIDIA GPU",) * count, driver) if count else None


def _from_nvml() -> tuple[tuple[str, ...], str | None] | None:
    if importlib.util.find_spec("pynvml") is None:
        return None
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            driver = pynvml.nvmlSystemGetDriverVersion()
            names = tuple(_text(pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i)))
                          for i in range(pynvml.nvmlDeviceGetCount()))
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - NVMLError_LibraryNotFound, DriverNotLoaded, …: no answer
        return None
    return (names, _text(driver)) if names else None


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
