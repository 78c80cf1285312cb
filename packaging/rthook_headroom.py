"""PyInstaller runtime hook: runs in the frozen app before the entry script imports anything.

Applies the process defaults of `app/__init__.py` (offline hub and transformers, no hub
kernels, no telemetry, `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`, ...) with
os.environ.setdefault, so a value the user exported wins and the CUDA allocator is configured
before torch loads (fragmentation: reserved is not free, dolly #79). The dict is imported from the package, so there
is one list;
importing `app` applies it already, the loop below makes that explicit.
"""

import os

from app import _PROCESS_DEFAULTS

for _name, _value in _PROCESS_DEFAULTS.items():
    os.environ.setdefault(_name, _value)
