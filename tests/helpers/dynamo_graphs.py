"""A torch.compile stand-in that counts Dynamo traces (one graph per trace, none per replay)."""

import torch


def counting_compiler(graphs: list):
    """A ``compiler=`` for compiled_decode.warm_up: torch.compile with a backend that appends
    each traced GraphModule to ``graphs`` and runs it eagerly (no Inductor, CPU-fast). Each graph's
    ``compiled_function`` names the function traced (``_layer_step``, ``_outer_step``, ``_final_norm``)."""
    def compiler(fn):
        def backend(gm, example_inputs):
            gm.compiled_function = fn.__name__
            graphs.append(gm)
            return gm.forward
        return torch.compile(fn, backend=backend, dynamic=None)
    return compiler


def layer_graphs(graphs: list) -> list:
    """The graphs of the regional step's decoder layer among ``graphs`` (counting_compiler's): the
    whole-forward fallback's too, not the modules around the layers (``_outer_step``, ``_final_norm``, and
    the folded norm's ``first_input``)."""
    return [gm for gm in graphs if gm.compiled_function not in ("_outer_step", "_final_norm", "first_input")]


def one_layer_graph_ops(loaded, capacity: int = 64) -> list:
    """The call_function targets of the regional step's one decoder-layer graph, as compiled_decode.warm_up
    traces it for ``loaded`` (CPU, counting_compiler) after asserting the step is ready, layer-at-a-time
    and traced once for all layers. Dynamo is reset before and after."""
    from app.engine.local.compiled_decode import warm_up

    graphs = []
    torch._dynamo.reset()
    try:
        decoder = warm_up(loaded, (capacity,), compiler=counting_compiler(graphs), require_cuda=False)
        assert decoder.status.state == "ready" and decoder.regional, decoder.status.reason
        assert len(layer_graphs(graphs)) == 1
        return [n.target for gm in layer_graphs(graphs) for n in gm.graph.nodes if n.op == "call_function"]
    finally:
        torch._dynamo.reset()
