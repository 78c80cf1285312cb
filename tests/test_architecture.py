"""Layering is enforced, not hoped for: import-linter contracts from pyproject.toml."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 5 kept, 0 broken" in result.stdout


def test_one_widget_per_ui_module():
    import ast

    for module in (ROOT / "app" / "ui").glob("*.py"):
        tree = ast.parse(module.read_text())
        widgets = [node.name for node in tree.body if isinstance(node, ast.ClassDef)
                   and not node.name.startswith("_")]
        assert len(widgets) <= 1, f"{module.name} defines {widgets}"


def test_remote_backend_and_turn_events_import_without_torch():
    """The HTTP backend, the turn vocabulary and the memory arithmetic never need torch: a machine
    that only talks to a vLLM server, and the VRAM panel's maths, import with torch blocked."""
    code = (
        "import sys\n"
        "sys.modules['torch'] = None  # any 'import torch' now raises ImportError\n"
        "import app.engine.events, app.engine.summary_flow, app.engine.backend\n"
        "import app.engine.remote.backend, app.engine.remote.openai_client, app.engine.remote.server_metrics\n"
        "import app.engine.memory.admission, app.engine.memory.sample\n"
        "from app.engine.backend import RemoteBackends\n"
        "print(sorted(m for m in sys.modules if m.startswith(('torch', 'transformers'))))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['torch']"  # only the blocking None entry
