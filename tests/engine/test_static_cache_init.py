"""A new chat's static cache allocates its layers inside the first prefill without copying from
the host (issue 12, item 4): transformers' StaticLayer moves its CPU fill counter with a blocking
``.to(device)``, a stream sync per layer on CUDA. Checked on the "meta" device, where a host to
device copy shows as an aten op taking a CPU tensor."""

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from transformers import LlamaConfig

from app.engine.local.static_cache import counter_on_device, new_static_cache


class HostInputs(TorchDispatchMode):
    """Records every aten op that moves data from the host: a CPU tensor in, a tensor on another
    device out (reading a CPU scalar on the host is no transfer)."""

    def __init__(self):
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = [*args, *(kwargs or {}).values()]
        outputs = out if isinstance(out, (tuple, list)) else (out,)
        if (any(isinstance(a, torch.Tensor) and a.device.type == "cpu" for a in inputs)
                and any(isinstance(o, torch.Tensor) and o.device.type != "cpu" for o in outputs)):
            self.ops.append(str(func))
        return out


def tiny_config() -> LlamaConfig:
    return LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)


@pytest.mark.parametrize("kv_bits", [16, 8])
def test_first_prefill_allocates_every_layer_without_a_host_copy(kv_bits):
    cache = new_static_cache(tiny_config(), 128, kv_bits)
    keys = torch.empty((1, 2, 5, 8), device="meta", dtype=torch.bfloat16)
    with HostInputs() as seen:
        for layer in cache.layers:
            layer.lazy_initialization(keys, keys)
    assert seen.ops == []
    for layer in cache.layers:
        assert layer.cumulative_length.device.type == "meta"
        assert layer.cumulative_length.dtype == torch.int64 and layer.cumulative_length.dim() == 0
        assert layer.keys.device.type == "meta" and layer.keys.shape[2] == 128


def test_the_counter_keeps_its_value_and_a_counter_in_place_is_untouched():
    cache = new_static_cache(tiny_config(), 128)
    layer = cache.layers[0]
    layer.cumulative_length.fill_(7)
    counter_on_device(layer, torch.device("cpu"))
    assert int(layer.cumulative_length) == 7
    same = layer.cumulative_length
    counter_on_device(layer, torch.device("cpu"))
    assert layer.cumulative_length is same  # already there: no new tensor
    counter_on_device(layer, torch.device("meta"))
    assert layer.cumulative_length.device.type == "meta" and layer.cumulative_length.dtype == torch.int64


def test_a_static_cache_on_the_cpu_still_fills_and_counts():
    cache = new_static_cache(tiny_config(), 16)
    keys = torch.randn(1, 2, 5, 8)
    out_k, _ = cache.layers[0].update(keys, keys)
    assert int(cache.layers[0].cumulative_length) == 5
    assert torch.equal(out_k[:, :, :5], keys) and out_k.shape[2] == 16


def test_a_new_chat_builds_its_cache_when_activated_not_in_its_turn(tiny_loaded, monkeypatch):
    """TurnRunner.activate on a new conversation prepares its empty cache object; the turn
    that follows builds none between "turn sent" and its first text."""
    import threading

    from app.core.conversation import Message, Role
    from app.core.history import SummaryState
    from app.core.settings import GenerationSettings
    from app.engine.local import kv_session
    from app.engine.local.turn_runner import TurnRunner
    from app.engine.memory.probe import CpuProbe

    built = []
    dynamic = kv_session.DynamicCache
    monkeypatch.setattr(kv_session, "DynamicCache", lambda *a, **k: built.append("dynamic") or dynamic(*a, **k))
    runner = TurnRunner(tiny_loaded, CpuProbe())
    runner.activate("new chat")
    assert built == ["dynamic"]
    order = []
    for event in runner.run_turn([Message(Role.USER, "Hello there")], SummaryState(),
                                 GenerationSettings(max_new_tokens=4, temperature=0), threading.Event(),
                                 conversation_key="new chat"):
        order.append(type(event).__name__)
    assert built == ["dynamic"] and runner.session.cache is not None
    assert order[0] == "TurnPlanned" and order[-1] == "TurnCompleted"
