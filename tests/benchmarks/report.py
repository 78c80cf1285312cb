"""What a GPU benchmark writes: its figures as JSON with the date, the GPU, torch and the command."""

from __future__ import annotations

import json
import os
import time

import torch


def write_result(out: str, name: str, command: str, **figures) -> str:
    """Write {"date", "gpu", "torch", "command", **figures} to ``out``/``name`` (the folder made if
    missing); returns the file's path."""
    result = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "gpu": torch.cuda.get_device_name(),
              "torch": torch.__version__, "command": command, **figures}
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, name)
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    return path
