"""Offline by construction (issue 6 item 6): the offline settings are in place before anything
that could reach the network is imported, hub kernels are off, and a whole session — open the
real model, answer, summarize, export — never tries to connect.

Each check runs in a fresh interpreter so the import order is the real one, with the offline
variables removed from its environment (pytest's own `import app` has set them here).
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
           "USE_HUB_KERNELS": "NO"}

IMPORT_SPY = """
import importlib.abc, json, os, sys
WATCHED = ("torch", "transformers", "huggingface_hub", "tokenizers", "safetensors", "PySide6")
KEYS = KEYS_HERE
seen = {}
class Spy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in WATCHED and top not in seen:
            seen[top] = {k: os.environ.get(k) for k in KEYS}
        return None
sys.meta_path.insert(0, Spy())
import app.main, app.headless, app.engine.loading.loader, app.engine.loading.catalog, app.ui.main_window
print(json.dumps(seen))
""".replace("KEYS_HERE", repr(tuple(OFFLINE)))


def clean_env(**extra) -> dict:
    """This environment without the offline variables: the subprocess must set them itself."""
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE}
    return env | {"QT_QPA_PLATFORM": "offscreen"} | extra


def run_python(*args, timeout=300, **extra_env):
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=clean_env(**extra_env),
                          capture_output=True, text=True, timeout=timeout)


def test_offline_settings_precede_every_heavy_import():
    result = run_python("-c", IMPORT_SPY)
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert {"torch", "transformers", "huggingface_hub", "PySide6"} <= set(seen)
    for module, env in seen.items():
        assert env == OFFLINE, f"{module} was imported before app/__init__.py set {OFFLINE}: {env}"


def test_hub_kernels_are_switched_off_before_transformers_reads_the_switch():
    """transformers up to 5.24 reads USE_HUB_KERNELS once at import (a module flag); 5.25 at each
    use (`_kernels_enabled()`, with the `kernels` package now a dependency): off either way."""
    code = ("import os, app\nfrom transformers.integrations import hub_kernels as hk\n"
            "enabled = hk._kernels_enabled\n"
            "print(os.environ['USE_HUB_KERNELS'], enabled() if callable(enabled) else enabled)")
    result = run_python("-c", code)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["NO", "False"]


def test_a_whole_session_makes_no_connection(tmp_path, real_model_folder):
    """Python-level sockets are blocked from before `import app`; where strace exists it also
    watches the process's connect() system calls, which native code (Rust tokenizers, hf-xet)
    would make without going through Python's socket module."""
    out = tmp_path / "session.json"
    command = ["-m", "tests.helpers.offline_session", str(out), str(tmp_path)]
    trace = tmp_path / "connect.trace"
    strace = shutil.which("strace")
    if strace and subprocess.run([strace, "-o", os.devnull, "true"], capture_output=True).returncode == 0:
        command = ["-f", "--seccomp-bpf", "-e", "trace=connect", "-o", str(trace), sys.executable, *command]
        result = subprocess.run([strace, *command], cwd=ROOT, env=clean_env(), capture_output=True,
                                text=True, timeout=600)
    else:
        result = run_python(*command, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    session = json.loads(out.read_text())

    assert session["attempts"] == []  # not one connection tried, not one name looked up
    assert session["loaded_before_app"] == []
    if trace.exists():
        inet = [line for line in trace.read_text().splitlines() if re.search(r"AF_INET6?\b", line)]
        assert inet == []
    assert session["answer"].strip() == "The capital of France is Paris."
    assert session["events"][-2:] == ["SummaryStarted", "SummaryFinished"]
    assert session["summary"] and session["summary_tokens"] > 0
    exported = json.loads((tmp_path / "offline.json").read_text())
    assert [m["role"] for m in exported["messages"]][-2:] == ["user", "assistant"]
    assert exported["messages"][-1]["content"] == session["answer"]
    assert exported["summary"]["content"] == session["summary"]
    assert "The capital of France is Paris." in (tmp_path / "offline.md").read_text()
