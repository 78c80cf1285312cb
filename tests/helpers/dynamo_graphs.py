"""A torch.compile stand-in that counts Dynamo traces (one graph per trace, none per replay)."""

import torch


def counting_compiler(graphs: list):
    """A ``compiler=`` for compiled_decode.warm_up: torch.compile with a backend that appends
    each traced GraphModule to ``graphs`` and runs it eagerly (no Inductor, CPU-fast)."""
    def compiler(fn):
        def backend(gm, example_inputs):
            graphs.append(gm)
            return gm.forward
        return torch.compile(fn, backend=backend, dynamic=None)
    return compiler
