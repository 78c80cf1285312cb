"""headroom::kv16_rope_decode (app/engine/local/rope_attention.py, kv16_mma.decode_rope): the rotary
embedding, the cache write and the attention of a decode step as one launch. On the CPU: its torch path
is transformers' rotary embedding (in float32, rounded once), writes this token's slot and attends over
it; the compiled step stands it in only where it fits and then gives the model's own logits and cache;
the CUDA source builds. On a GPU: the kernel against the torch path, bit for bit in the cache."""

import pytest
import torch
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from app.engine.local import compiled_decode, kv16_mma
from app.engine.local import rope_attention as ra
from app.engine.local import split_kv_attention as kd
from app.engine.local.compiled_decode import CompiledDecode
from app.engine.local.generation import cache_kwarg
from app.engine.local.static_cache import new_static_cache
from tests.engine.test_captured_step import _prefilled
from tests.helpers.kernels import entry_report, ptxas_log, switch_at_import


def _inputs(dtype=torch.float32, d=64, heads=2, groups=4, span=40, slot=29, device="cpu", seed=0):
    g = torch.Generator(device=device).manual_seed(seed)

    def rand(*shape):
        return torch.randn(*shape, generator=g, device=device).to(dtype)

    angles = torch.rand(d // 2, generator=g, device=device) * 6.3
    cos, sin = (torch.cat((f(angles), f(angles))).to(dtype) for f in (torch.cos, torch.sin))
    return dict(query=rand(1, heads, groups, d), key_new=rand(1, heads, 1, d), value_new=rand(1, heads, 1, d),
                cos=cos, sin=sin, key=rand(1, heads, span, d), value=rand(1, heads, span, d),
                position=torch.tensor(slot, device=device), valid=(torch.arange(span, device=device) <= slot)[None],
                scale=d ** -0.5)


def _attend(query, key, value, valid, scale):
    scores = (query.float() @ key.float().transpose(2, 3)) * scale
    return torch.softmax(scores.masked_fill(~valid[:, None, None, :], float("-inf")), -1) @ value.float()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_rotate_is_transformers_rotary_embedding_rounded_once(dtype):
    x = _inputs(dtype)
    q, k = x["query"], x["key_new"]
    want_q, want_k = apply_rotary_pos_emb(q.float(), k.float(), x["cos"].float(), x["sin"].float(), unsqueeze_dim=0)
    assert torch.equal(ra.rotate(q, x["cos"], x["sin"]), want_q.to(dtype))
    assert torch.equal(ra.rotate(k, x["cos"], x["sin"]), want_k.to(dtype))
    if dtype == torch.float32:  # the model's own float32 forward, bit for bit
        own_q, _ = apply_rotary_pos_emb(q, k, x["cos"], x["sin"], unsqueeze_dim=0)
        assert torch.equal(ra.rotate(q, x["cos"], x["sin"]), own_q)


def test_the_torch_path_writes_the_slot_and_sees_it_whatever_the_mask_says():
    x = _inputs()
    x["valid"][0, [3, 10, 29]] = False  # holes, and this token's own slot marked not valid
    key_before, value_before = x["key"].clone(), x["value"].clone()
    out = ra.torch_path(**x)
    key_rot = ra.rotate(x["key_new"], x["cos"], x["sin"])
    assert torch.equal(x["key"][:, :, 29:30], key_rot) and torch.equal(x["value"][:, :, 29:30], x["value_new"])
    others = torch.arange(40) != 29
    assert torch.equal(x["key"][:, :, others], key_before[:, :, others])
    assert torch.equal(x["value"][:, :, others], value_before[:, :, others])
    seen = x["valid"].clone()
    seen[0, 29] = True
    want = _attend(ra.rotate(x["query"], x["cos"], x["sin"]), x["key"], x["value"], seen, x["scale"])
    torch.testing.assert_close(out.float(), want, rtol=1e-5, atol=1e-5)
    assert x["valid"][0, 29].item() is False  # the caller's mask is left as it was


def test_the_op_on_the_cpu_is_the_torch_path():
    mine, theirs = _inputs(), _inputs()
    got = torch.ops.headroom.kv16_rope_decode(*mine.values())
    want = ra.torch_path(**theirs)
    assert torch.equal(got, want)
    assert torch.equal(mine["key"], theirs["key"]) and torch.equal(mine["value"], theirs["value"])


def _cpu_fits(monkeypatch):
    """The CPU's float32 tiny Llama (head_dim 16) through the op: its torch path."""
    monkeypatch.setattr(ra, "FUSED_ROPE", True)
    monkeypatch.setattr(ra, "failure", "")
    monkeypatch.setattr(ra, "DEVICE_TYPES", ("cuda", "cpu"))
    monkeypatch.setattr(ra, "DTYPES", (torch.bfloat16, torch.float16, torch.float32))
    monkeypatch.setattr(kv16_mma, "model_reason", lambda *a: "")


def _layer_kwargs(model, cache, tokens=1):
    positions = cache.layers[0].cumulative_length.reshape(1, 1) + torch.arange(tokens).view(1, -1)
    hidden = torch.zeros(1, tokens, model.config.hidden_size)
    mask = (torch.arange(cache.layers[0].keys.shape[2]).view(1, 1, 1, -1) <= positions.view(1, 1, -1, 1))
    return hidden, {"position_embeddings": model.model.rotary_emb(hidden, positions), "attention_mask": mask}


def test_the_fused_rope_is_on_unless_switched_off():
    def fused(value):
        return switch_at_import("app.engine.local.rope_attention", "FUSED_ROPE", "HEADROOM_FUSED_ROPE", value)

    assert (fused(None), fused("0"), fused("1")) == ("True", "False", "True")


def test_the_step_takes_it_only_where_it_fits(tiny_loaded, monkeypatch):
    model = tiny_loaded.model
    attn, cache = model.model.layers[0].self_attn, _prefilled(model)
    hidden, kwargs = _layer_kwargs(model, cache)
    assert not ra.applies(attn, cache.layers[0], hidden, kwargs)  # the CPU
    _cpu_fits(monkeypatch)
    assert ra.applies(attn, cache.layers[0], hidden, kwargs)
    assert not ra.applies(attn, cache.layers[0], *_layer_kwargs(model, cache, tokens=2))  # a prefill
    assert not ra.applies(attn, cache.layers[0], hidden, {**kwargs, "attention_mask": kwargs["attention_mask"].float()})
    assert not ra.applies(model.model.layers[0].mlp, cache.layers[0], hidden, kwargs)
    kv8 = new_static_cache(model.config, 64, 8)
    with torch.inference_mode():
        model(input_ids=torch.arange(1, 6).view(1, -1), use_cache=True, **{cache_kwarg(type(model)): kv8})
    assert not ra.applies(attn, kv8.layers[0], hidden, kwargs)  # 8-bit keys: kv8_decode's
    monkeypatch.setattr(ra, "failure", "self-check: the cache written otherwise than the torch path")
    assert not ra.applies(attn, cache.layers[0], hidden, kwargs)
    monkeypatch.setattr(ra, "failure", "")
    monkeypatch.setattr(ra, "FUSED_ROPE", False)
    assert not ra.applies(attn, cache.layers[0], hidden, kwargs)


def _fake_cuda_layer(model, dtype=torch.bfloat16):
    from torch._subclasses.fake_tensor import FakeTensorMode

    from app.engine.local.static_cache import SpanLayer

    layer = SpanLayer(max_cache_len=64)
    with FakeTensorMode():  # a CUDA cache's metadata without a GPU
        layer.keys = torch.empty(1, model.config.num_key_value_heads, 64, 128, dtype=dtype, device="cuda")
    layer.is_initialized = True
    return layer


def test_the_kernel_is_checked_before_the_step_is_traced(tiny_loaded, monkeypatch):
    """`check` (eager, before tracing) runs the kernel's self-check once per device, dtype and head_dim; where
    the 16-bit decode kernel cannot serve (a GPU before Ampere) or the check fails, it sets `failure`, so the
    step keeps Inductor's kernel instead of tracing the op that would run its torch path."""
    model = tiny_loaded.model
    attn = model.model.layers[0].self_attn
    cache, own_head_dim = _prefilled(model), attn.head_dim
    hidden, kwargs = _layer_kwargs(model, cache)
    monkeypatch.setattr(attn, "head_dim", 128)  # a head the kernel takes (the tiny model's is 16)
    monkeypatch.setattr(ra, "FUSED_ROPE", True)
    monkeypatch.setattr(ra, "failure", "")
    monkeypatch.setattr(ra, "_checked", set())
    monkeypatch.setattr(ra, "_capturing", lambda device: False)  # no CUDA runtime on the CPU build
    checks = []
    monkeypatch.setattr(ra, "self_check", lambda device, dtype, d: checks.append((dtype, d)) or "")
    monkeypatch.setattr(kd, "mma_ready", lambda device, dtype, d: True)
    layer = _fake_cuda_layer(model)
    ra.check(attn, layer)
    ra.check(attn, layer)
    assert checks == [(torch.bfloat16, 128)] and ra.failure == ""
    ra.check(attn, _fake_cuda_layer(model, torch.float16))
    assert checks == [(torch.bfloat16, 128), (torch.float16, 128)]
    monkeypatch.setattr(kd, "mma_ready", lambda device, dtype, d: False)
    monkeypatch.setattr(kd, "mma_failure", "a GPU before Ampere (sm_75)")
    monkeypatch.setattr(ra, "_checked", set())
    ra.check(attn, layer)
    assert "sm_75" in ra.failure
    _cpu_fits(monkeypatch)  # the tiny CPU model stands in for the step that would be traced next
    monkeypatch.setattr(kd, "mma_failure", "")  # `failure` alone keeps the step off the op
    monkeypatch.setattr(attn, "head_dim", own_head_dim)
    assert ra.applies(attn, cache.layers[0], hidden, kwargs)
    monkeypatch.setattr(ra, "failure", "the 16-bit decode kernel does not serve here: a GPU before Ampere")
    assert not ra.applies(attn, cache.layers[0], hidden, kwargs)
    monkeypatch.setattr(attn, "head_dim", 128)
    monkeypatch.setattr(ra, "failure", "")
    monkeypatch.setattr(kd, "mma_ready", lambda device, dtype, d: True)
    monkeypatch.setattr(ra, "self_check", lambda device, dtype, d: "self-check: relative error 0.5")
    ra.check(attn, layer)
    assert ra.failure.startswith("self-check")


def test_the_step_through_it_gives_the_models_own_logits_and_cache(tiny_loaded, monkeypatch):
    """Each layer's attention through the op (one call a layer), the regional step's logits the model's
    own (the packed attention's sums in another order: within 1e-5) and the new slot of every layer's
    cache written as the model writes it."""
    _cpu_fits(monkeypatch)
    model = tiny_loaded.model
    calls = []
    original = ra.torch_path
    monkeypatch.setattr(ra, "torch_path", lambda *a: calls.append(1) or original(*a))
    dec = CompiledDecode(model, lambda fn: fn)
    dec._layer_compiled = compiled_decode._layer_step
    dec._outer_compiled = {"rotary_emb": compiled_decode._outer_step, "norm": compiled_decode._final_norm}
    mine, theirs = _prefilled(model), _prefilled(model)
    token = torch.tensor([[7]])
    with torch.inference_mode():
        got = dec._regional_forward(token, mine)
        want = dec._forward(token, theirs)
    assert len(calls) == model.config.num_hidden_layers
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    for a, b in zip(mine.layers, theirs.layers, strict=True):
        assert int(a.cumulative_length) == int(b.cumulative_length) == 6
        torch.testing.assert_close(a.keys[:, :, :6], b.keys[:, :, :6], rtol=0, atol=1e-6)
        assert torch.equal(a.values[:, :, :6], b.values[:, :, :6])


def test_the_step_compiles_through_the_op_as_one_layer_graph(tiny_loaded, monkeypatch):
    """Dynamo traces the layer step through the op (its fake; the cache it mutates) as one graph for all
    layers, and the warm-up's check against the model's own forward passes."""
    from tests.helpers.dynamo_graphs import one_layer_graph_ops

    _cpu_fits(monkeypatch)
    ops = one_layer_graph_ops(tiny_loaded)
    assert ops.count(torch.ops.headroom.kv16_rope_decode) == 1
    assert torch.ops.headroom.kv16_decode not in ops


def test_the_rope_kernels_compile_for_sm90_without_spills():
    log = ptxas_log(kv16_mma.SOURCE, "kv16_mma.cu")
    for name in kv16_mma.ROPE_KERNEL_NAMES:
        report = entry_report(log, name)
        assert report["spill_stores"] == 0, (name, report)
        assert report["registers"] <= 255, (name, report)  # 256 threads fit an SM
        assert report["smem"] + kv16_mma.MAX_SPLIT_KEYS <= 48 * 1024, (name, report)  # with the marks: no opt-in


def test_decode_rope_refuses_what_it_does_not_take():
    x = _inputs(torch.bfloat16)
    assert kv16_mma.rope_reason(x["query"], x["key_new"], x["value_new"], x["cos"], x["sin"], x["key"],
                                x["position"]) == ""
    two = x["query"].expand(2, -1, -1, -1)
    assert "one sequence" in kv16_mma.rope_reason(two, x["key_new"], x["value_new"], x["cos"], x["sin"], x["key"],
                                                  x["position"])
    assert "cos" in kv16_mma.rope_reason(x["query"], x["key_new"], x["value_new"], x["cos"][:32], x["sin"], x["key"],
                                         x["position"])
    assert "position" in kv16_mma.rope_reason(x["query"], x["key_new"], x["value_new"], x["cos"], x["sin"], x["key"],
                                              x["position"].int())


# ----------------------------------------------------------------------------- on a GPU
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (run on the GPU machine)")


@cuda
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("groups,d,span,slot,holes", [
    (4, 128, 2048, 1600, False), (4, 128, 300, 263, True), (8, 64, 4096, 4095, False), (1, 128, 8, 0, False),
    (7, 128, 33000, 17000, True), (3, 64, 130, 0, False), (4, 128, 2048, 128, False), (4, 128, 2048, 127, True),
])
def test_the_kernel_is_the_torch_path_on_cuda(dtype, groups, d, span, slot, holes):
    mine = _inputs(dtype, d=d, groups=groups, span=span, slot=slot, device="cuda", seed=span + slot)
    if holes:
        g = torch.Generator(device="cuda").manual_seed(slot)
        mine["valid"] &= torch.rand(1, span, generator=g, device="cuda") > 0.3
    theirs = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in mine.items()}
    got = kv16_mma.decode_rope(**mine)
    want = ra.torch_path(**theirs)
    assert torch.equal(mine["key"], theirs["key"]) and torch.equal(mine["value"], theirs["value"])
    error = float((got.float() - want.float()).norm() / want.float().norm())
    assert error < 5e-3, error


@cuda
def test_the_self_check_passes_and_a_captured_launch_follows_the_counter():
    device = torch.device("cuda")
    assert ra.self_check(device, torch.bfloat16, 128) == ""
    x = _inputs(torch.bfloat16, d=128, span=256, slot=100, device="cuda")
    x["valid"] = torch.ones(1, 256, dtype=torch.bool, device="cuda")
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = kv16_mma.decode_rope(**x)
    for slot in (101, 200):
        x["position"].fill_(slot)
        x["key_new"].normal_()
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(x["key"][:, :, slot:slot + 1], ra.rotate(x["key_new"], x["cos"], x["sin"]))
    assert torch.isfinite(out).all()
    assert kd.mma_failure == ""
