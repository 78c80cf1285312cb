"""Layering is enforced, not hoped for: import-linter contracts from pyproject.toml."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 2 kept, 0 broken" in result.stdout


def test_one_widget_per_ui_module():
    import ast

    for module in (ROOT / "app" / "ui").glob("*.py"):
        tree = ast.parse(module.read_text())
        widgets = [node.name for node in tree.body if isinstance(node, ast.ClassDef)
                   and not node.name.startswith("_")]
        assert len(widgets) <= 1, f"{module.name} defines {widgets}"
