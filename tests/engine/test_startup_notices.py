"""Start-up notices from injected machine facts (C11): what is not used, why, what still works."""

import importlib.metadata
import importlib.util
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from app.engine.loading import environment as envmod
from app.engine.loading.environment import Environment, read_environment
from app.engine.loading.startup_notices import driver_branch, required_driver_branch, startup_notices

ROOT = Path(__file__).resolve().parents[2]

CPU_BOX = Environment(headroom="0.1.0", python="3.11.7", torch="2.13.0+cpu", transformers="5.24.0",
                      pyside6="6.11.3", bitsandbytes=None, torch_cuda=None, cuda_available=False)
GPU_BOX = replace(CPU_BOX, torch="2.13.0+cu124", torch_cuda="12.4", cuda_available=True,
                  cuda_devices=("NVIDIA GeForce RTX 3060",), bitsandbytes="0.45.5")


def keys(env, preference="auto"):
    return [n.key for n in startup_notices(env, preference)]


def test_no_gpu_says_the_cpu_still_works_and_what_4bit_needs():
    [notice] = startup_notices(CPU_BOX)
    assert notice.key == "no-gpu"
    assert notice.text.startswith("No NVIDIA GPU was found.")
    assert "runs models on the CPU" in notice.text and "more slowly" in notice.text
    assert "4-bit models need an NVIDIA GPU with CUDA and the bitsandbytes package" in notice.text
    assert "Traceback" not in notice.text and "Error" not in notice.text


def test_a_gpu_behind_a_cpu_only_torch_build_is_named():
    env = replace(CPU_BOX, nvidia_gpus=("NVIDIA GeForce RTX 3060",), driver_version="550.54.14")
    [notice] = startup_notices(env)
    assert notice.key == "cpu-only-torch"
    assert "(NVIDIA GeForce RTX 3060) is not used" in notice.text and "CPU-only build" in notice.text


@pytest.mark.parametrize("torch_cuda, driver, needed", [("12.4", "470.182.03", 525), ("11.8", "440.33", 450),
                                                        ("13.0", "575.57.08", 580)])
def test_an_old_driver_is_explained_with_both_versions(torch_cuda, driver, needed):
    env = replace(CPU_BOX, torch_cuda=torch_cuda, nvidia_gpus=("Tesla T4",), driver_version=driver)
    [notice] = startup_notices(env)
    assert notice.key == f"driver-too-old:{driver}"
    assert f"driver ({driver}) is too old" in notice.text
    assert f"CUDA {torch_cuda} and needs driver {needed} or newer" in notice.text
    assert "runs models on the CPU" in notice.text


def test_a_new_enough_driver_that_still_fails_is_not_called_old():
    env = replace(CPU_BOX, torch_cuda="12.4", nvidia_gpus=("Tesla T4",), driver_version="535.104.05")
    [notice] = startup_notices(env)
    assert notice.key == "cuda-unavailable"
    assert "(Tesla T4) was found (driver 535.104.05), but CUDA could not start" in notice.text


def test_gpu_without_bitsandbytes_explains_the_memory_cost():
    [notice] = startup_notices(replace(GPU_BOX, bitsandbytes=None,
                                       bitsandbytes_problem="bitsandbytes is not installed"))
    assert notice.key == "no-bitsandbytes"
    assert "Your GPU is used, but bitsandbytes is not installed" in notice.text
    assert "16-bit instead of 4-bit" in notice.text and "pip install 'headroom[cuda]'" in notice.text


def test_a_broken_bitsandbytes_build_quotes_its_reason():
    [notice] = startup_notices(replace(GPU_BOX, bitsandbytes_problem="bitsandbytes does not import: libcudart"))
    assert notice.key == "broken-bitsandbytes"
    assert "bitsandbytes 0.45.5 does not work here (bitsandbytes does not import: libcudart)" in notice.text


def test_nothing_to_say_when_everything_works_or_the_cpu_was_asked_for():
    assert keys(GPU_BOX) == []
    assert keys(CPU_BOX, "cpu") == []
    assert keys(replace(GPU_BOX, bitsandbytes_problem="x"), "cpu") == []


def test_driver_tables():
    assert [required_driver_branch(v) for v in ("11.8", "12.1", "13.0", "10.2", "rocm")] == [450, 525, 580, None, None]
    assert [driver_branch(v) for v in ("470.182.03", "550", None, "n/a")] == [470, 550, None, None]


def test_nvidia_smi_and_proc_outputs_are_parsed(tmp_path):
    smi = "NVIDIA GeForce RTX 3060, 470.182.03\nTesla T4, 470.182.03\n"
    assert envmod.parse_nvidia_smi(smi) == (("NVIDIA GeForce RTX 3060", "Tesla T4"), "470.182.03")
    assert envmod.parse_nvidia_smi("") is None
    closed = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
    open_ = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  560.35.03  Release Build\n"
    assert envmod.parse_proc_driver_version(closed) == "535.104.05"
    assert envmod.parse_proc_driver_version(open_) == "560.35.03"
    (tmp_path / "version").write_text(closed)
    (tmp_path / "gpus" / "0000:01:00.0").mkdir(parents=True)
    assert envmod._from_proc(tmp_path) == (("NVIDIA GPU",), "535.104.05")


def test_the_driver_is_asked_through_nvidia_smi_when_nvml_is_missing(monkeypatch, tmp_path):
    calls = []

    class Done:
        returncode, stdout = 0, "Tesla T4, 470.182.03\n"

    monkeypatch.setattr(envmod, "_from_nvml", lambda: None)
    monkeypatch.setattr(envmod.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(envmod.subprocess, "run", lambda cmd, **kw: calls.append((cmd, kw)) or Done())
    assert envmod.read_nvidia_driver() == (("Tesla T4",), "470.182.03")
    assert calls[0][1]["timeout"] == envmod.NVIDIA_SMI_TIMEOUT_S


def test_this_machine_is_read_without_importing_bitsandbytes():
    env = read_environment(probe_gpu=False)
    assert env.torch == torch.__version__ and env.torch_cuda == torch.version.cuda
    assert env.cuda_available == torch.cuda.is_available()
    installed = importlib.util.find_spec("bitsandbytes") is not None
    assert (env.bitsandbytes is not None) == installed
    rows = dict(env.version_rows())
    assert rows["bitsandbytes"] == (env.bitsandbytes if installed else None)
    if not env.cuda_available:
        assert rows["CUDA"].startswith("no CUDA device")
    assert rows["transformers"] == importlib.metadata.version("transformers")


def test_headroom_licence_matches_pyproject():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    assert envmod.HEADROOM_LICENCE == declared == "Apache-2.0"
    assert dict(envmod.LICENCES)["SmolLM2-135M-Instruct"] == "Apache-2.0"
