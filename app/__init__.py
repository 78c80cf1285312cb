"""Headroom: a desktop chat app for local LLMs that sees an out-of-memory coming.

Importing the package configures the process before torch or transformers load:
offline by construction (no hub downloads, no hub kernels, no telemetry) and the CUDA caching allocator
set to expandable segments, which must happen before the first CUDA allocation
(https://pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf).
A value the user already exported wins.
"""

import os

__version__ = "0.1.0"

_PROCESS_DEFAULTS = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",
    # transformers' `kernels` integration (integrations/hub_kernels.py) fetches layer and
    # attention kernels from the hub when the `kernels` package is installed; read at import.
    "USE_HUB_KERNELS": "NO",
    "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
    "TOKENIZERS_PARALLELISM": "false",
}
for _name, _value in _PROCESS_DEFAULTS.items():
    os.environ.setdefault(_name, _value)
