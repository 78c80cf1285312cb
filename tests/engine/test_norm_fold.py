"""The RMSNorms folded into the NF4 launches around them (issue 15, norm_fold; HEADROOM_NORM_FOLD) on the CPU:
the mirror's sums in the kernels' orders, the ops' folded rows against the model's norm, and a tiny NF4 Llama's
compiled decode step with its norms folded: the same logits as the model's own forward within bf16 noise, no
norm launch left but the final one, nothing left pending. The kernels themselves: tests/engine/test_nf4_mma.py
on a GPU."""

import types

import pytest
import torch

from app.engine.local import compiled_decode, norm_fold
from app.engine.local import nf4_gemv as k
from app.engine.local import nf4_hook as hook
from app.engine.local import nf4_mma as mma
from app.engine.local.compiled_decode import CompiledDecode
from app.engine.local.generation import cache_kwarg
from app.engine.local.static_cache import new_static_cache
from tests.engine.test_nf4_gemv import FakeLinear4bit, rel
from tests.helpers.dynamo_graphs import counting_compiler, layer_graphs


def butterfly(values: list[float]) -> float:
    """Lane 0 of a warp adding by shuffle-xor, one float32 add at a time (the kernels' loop)."""
    lanes = [torch.tensor(v, dtype=torch.float32) for v in values]
    step = len(lanes) // 2
    while step:
        lanes = [lanes[i] + lanes[i ^ step] for i in range(len(lanes))]
        step //= 2
    return float(lanes[0])


def test_lane0_sum_adds_in_the_kernels_butterfly_order():
    values = (torch.randn(3, 32) * torch.logspace(-4, 4, 32)).float()
    for row in values:
        assert float(norm_fold.lane0_sum(row)) == butterfly(row.tolist())
    # an order, not any order: lane 0 adds (a + c) + (b + d), left to right gives another float32 sum
    a, b, c, d = (torch.tensor(v, dtype=torch.float32) for v in (1e8, 1.0, -1e8, 1.0))
    assert float(norm_fold.lane0_sum(torch.stack([a, b, c, d]))) == 2.0 and float(((a + b) + c) + d) == 1.0


def test_the_norm_scale_is_rsqrt_of_the_mean_square_from_the_tiles_sums():
    hidden = (torch.randn(4096) * 3).bfloat16()
    ssq = norm_fold.tile_ssq(hidden)
    assert ssq.shape == (256,) and ssq.dtype == torch.float32
    torch.testing.assert_close(ssq, hidden.float().view(-1, 16).pow(2).sum(-1), rtol=1e-6, atol=0)
    r = norm_fold.norm_scale(ssq, 4096, 1e-5)
    want = torch.rsqrt(hidden.float().pow(2).mean() + 1e-5)
    assert abs(float(r) / float(want) - 1) < 1e-6
    # lane j adds tiles j, j + 32, ... then lane 0's butterfly, then 1 / sqrt(s / H + eps) in float32
    lanes = sum(ssq.view(-1, 32)[1:], ssq.view(-1, 32)[0])  # one float32 add per tile, in order
    total = torch.tensor(butterfly(lanes.tolist()), dtype=torch.float32)
    assert float(r) == float(1 / torch.sqrt(total / 4096 + torch.tensor(1e-5, dtype=torch.float32)))


def test_a_hidden_size_not_a_multiple_of_16_pads_its_last_tile_with_zeros():
    hidden = torch.randn(40).bfloat16()
    ssq = norm_fold.tile_ssq(hidden)
    assert ssq.shape == (3,)
    torch.testing.assert_close(ssq[2], hidden[32:].float().pow(2).sum(), rtol=1e-6, atol=0)


def test_the_writer_adds_the_residual_then_weighs_it():
    y, residual, weight = (torch.randn(64).bfloat16() for _ in range(3))
    h, g, ssq = norm_fold.written(y, residual, weight)
    assert torch.equal(h, residual + y)  # torch's bf16 add: float32 sum, one rounding
    assert torch.equal(g, weight * h)
    assert torch.equal(ssq, norm_fold.tile_ssq(h))


def test_the_folded_rows_are_the_models_norm_then_gemv_within_bf16_noise():
    """bf16(r · W bf16(w · h)) against W bf16(w · bf16(h · r)) (transformers' LlamaRMSNorm): the same values
    up to where each rounds, over a hidden state with outliers (as a residual stream has)."""
    g = torch.Generator().manual_seed(0)
    hidden = (torch.randn(4096, generator=g) * torch.where(torch.rand(4096, generator=g) < 0.01, 40.0, 1.0)).bfloat16()
    weight = (torch.rand(4096, generator=g) + 0.5).bfloat16()
    matrix = torch.randn(512, 4096, generator=g).bfloat16()
    r = torch.rsqrt(hidden.float().pow(2).mean() + 1e-5)
    model = (matrix.float() @ (weight * (hidden.float() * r).bfloat16()).float()).bfloat16()
    x, ssq = (weight.float() * hidden.float()).bfloat16(), norm_fold.tile_ssq(hidden)
    folded = norm_fold.folded_rows(matrix.float() @ x.float(), norm_fold.norm_scale(ssq, 4096, 1e-5), None)
    exact = matrix.double() @ (weight.double() * hidden.double() * r.double())
    model_error, folded_error = rel(model, exact), rel(folded, exact)
    assert model_error < 4e-3 and folded_error < 4e-3  # each ~bf16's rounding of the input and of y
    assert folded_error < 1.25 * model_error  # the fold errs no more than the model's own roundings
    assert not torch.equal(folded, model)  # the roundings do differ


def test_the_group_and_pair_ops_scale_their_rows_by_the_norm():
    layers = [FakeLinear4bit(64, 256, seed=s, bias=True) for s in (1, 2)]
    ts = [k.tensors_of(layer) for layer in layers]
    hidden = torch.randn(256).bfloat16()
    ssq = norm_fold.tile_ssq(hidden)
    r = norm_fold.norm_scale(ssq, 256, 1e-6)
    x = torch.randn(256).bfloat16()
    sums = [k.reference_dequantize(t).float() @ x.float() for t in ts]
    want = [norm_fold.folded_rows(s, r, layer.bias) for s, layer in zip(sums, layers, strict=True)]
    args = ([t.packed for t in ts], [t.absmax for t in ts], [t.absmax2 for t in ts], [t.code2 for t in ts],
            [t.offset for t in ts])
    biases = [layer.bias for layer in layers]
    got = torch.ops.headroom.nf4_gemv_group(x, *args, ts[0].code, biases, torch.zeros(8, dtype=torch.int32),
                                            [64, 64], 256, ts[0].nested, 0, 0, ssq, 1e-6)
    assert torch.equal(got, torch.cat(want))
    plain = torch.ops.headroom.nf4_gemv_group(x, *args, ts[0].code, biases, torch.zeros(8, dtype=torch.int32),
                                              [64, 64], 256, ts[0].nested, 0, 0)
    assert torch.equal(plain, torch.cat([k.reference_gemv(x, t, b) for t, b in zip(ts, biases, strict=True)]))
    paired = torch.ops.headroom.nf4_gemv_silu_mul(x, *args[:3], mma.pair_absmax2(*ts), *args[3:], ts[0].code, biases,
                                                  torch.zeros(8, dtype=torch.int32), 64, 256, ts[0].nested, 0, 0,
                                                  ssq, 1e-6)
    assert torch.equal(paired, torch.nn.functional.silu(want[0]) * want[1])


def test_the_writer_op_returns_h_g_and_the_tiles_sums():
    layer = FakeLinear4bit(96, 256, seed=3)
    t = k.tensors_of(layer)
    x, residual, weight = torch.randn(256).bfloat16(), torch.randn(96).bfloat16(), torch.randn(96).bfloat16()
    h, g, ssq = hook.run_fold_out(x, t, hook.Plan(16, 256, 1, 4, 0, hook.MMA_KERNEL), None, residual, weight)
    want = norm_fold.written(k.reference_gemv(x, t), residual, weight)
    assert all(torch.equal(a, b) for a, b in zip((h, g, ssq), want, strict=True)) and ssq.shape == (6,)


def test_a_pending_norm_no_launch_took_is_an_error_and_is_cleared():
    x, writer = torch.zeros(4), torch.nn.Linear(4, 4)
    norm_fold.expect(x, torch.zeros(1), 1e-5, writer, x, x)
    assert norm_fold.input_for(torch.zeros(4)) is None  # another tensor: not the expected g
    assert norm_fold.output_request(torch.nn.Linear(4, 4)) is None  # another module: not the writer asked
    with pytest.raises(RuntimeError, match="not taken"):
        norm_fold.made()
    assert norm_fold._PENDING == {}
    norm_fold.expect(x, torch.zeros(1), 1e-5, writer, x, x)
    assert norm_fold.input_for(x)[1] == 1e-5 and norm_fold.output_request(writer)[0] is x
    assert norm_fold._PENDING == {}


# ----------------------------------------------------------------------------- a tiny NF4 Llama's step
LINEARS = {"self_attn": ("q_proj", "k_proj", "v_proj", "o_proj"), "mlp": ("gate_proj", "up_proj", "down_proj")}


@pytest.fixture
def nf4_llama(monkeypatch):
    """A 3-layer Llama (hidden 256, MLP 512, 4 query heads of 64, 2 KV heads) in bf16 whose linears are NF4
    (FakeLinear4bit) with Headroom's launches swapped in (their CPU mirror), as the app installs them."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from app.engine.local.attention import PACKED_SDPA, enable_packed_sdpa

    monkeypatch.setattr(mma, "unavailable_reason", lambda device: "")
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=256, hidden_size=256, intermediate_size=512, num_hidden_layers=3,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    config._attn_implementation = "sdpa"
    model = LlamaForCausalLM(config).to(torch.bfloat16).eval()
    assert enable_packed_sdpa(model) == PACKED_SDPA  # the app's attention, as the loader switches it
    seed = 10
    for layer in model.model.layers:
        for part, names in LINEARS.items():
            module = getattr(layer, part)
            for name in names:
                linear = getattr(module, name)
                seed += 1
                fake = FakeLinear4bit(linear.out_features, linear.in_features, seed=seed)
                setattr(module, name, fake)
        for norm in (layer.input_layernorm, layer.post_attention_layernorm):
            norm.weight.data = (torch.rand(256) + 0.5).bfloat16()
    scale_outputs(model)
    status = hook.install(model, require_cuda=False, require_faster=False)
    assert status.active
    yield model
    hook.uninstall(model)


def scale_outputs(model):
    """Random NF4 weights of unit scale make a hidden state that grows ×16 a layer; scaled like a trained
    model's (o and down small) the residual stream stays in range."""
    for layer in model.model.layers:
        for writer in (layer.self_attn.o_proj, layer.mlp.down_proj):
            state = writer.weight.quant_state  # absmax = code2[q] · absmax2 + offset: both scaled
            state.state2.absmax, state.offset = state.state2.absmax * 0.02, state.offset * 0.02


def _decoder(model, monkeypatch, fold: bool, compiler=lambda fn: fn) -> CompiledDecode:
    monkeypatch.setattr(norm_fold, "FOLD", fold)
    decoder = CompiledDecode(model, compiler)
    decoder.compile_capacity(64)  # warm-up, then the regional check against the model's own forward
    assert decoder.regional and decoder.regional_failure == ""
    return decoder


def _step_logits(model, decoder, prompt, tokens, *seen: list):
    """The decode step's logits after ``prompt`` for each of ``tokens``; ``seen`` lists emptied after the prefill."""
    with torch.inference_mode():  # as the runner makes its caches (a tensor made outside is another guard)
        cache = new_static_cache(model.config, 64)
        model(input_ids=prompt, use_cache=True, **{cache_kwarg(type(model)): cache})
        for found in seen:
            found.clear()
        return [decoder.step(torch.tensor([[t]]), cache).clone() for t in tokens]


def _exact_logits(model, prompt, tokens):
    """The model's forward in float64 (NF4 weights dequantized, Headroom's launches uninstalled)."""
    hook.uninstall(model)
    model.to(torch.float64)
    for module in model.modules():
        if isinstance(module, FakeLinear4bit):
            module.forward = lambda x, m=module: torch.nn.functional.linear(
                x, k.reference_dequantize(k.tensors_of(m)).to(x.dtype))
    cache, kw = new_static_cache(model.config, 64), cache_kwarg(type(model))
    with torch.inference_mode():
        model(input_ids=prompt, use_cache=True, **{kw: cache})
        return [model(input_ids=torch.tensor([[t]]), use_cache=True, **{kw: cache}).logits[0, -1] for t in tokens]


def test_a_folded_step_runs_no_norm_launch_but_the_final_one_and_errs_as_the_unfolded_one(nf4_llama, monkeypatch):
    """The folded step's o_proj and down write the norms (no norm module runs but the final one), nothing is
    left pending, and its logits are as far from the model's float64 forward as the unfolded step's."""
    model = nf4_llama
    assert compiled_decode.fold_reason(model) == "HEADROOM_NORM_FOLD is not set"
    monkeypatch.setattr(norm_fold, "FOLD", True)
    assert hook.fold_reason(model.model.layers) == "" and compiled_decode.fold_reason(model) == ""
    writes, norms = [], []
    real_writer = hook.run_fold_out
    monkeypatch.setattr(hook, "run_fold_out", lambda *a: writes.append(a[1].n) or real_writer(*a))
    norm_class = type(model.model.norm)
    real_norm = norm_class.forward
    monkeypatch.setattr(norm_class, "forward", lambda self, h: norms.append(self) or real_norm(self, h))

    prompt, tokens = torch.arange(1, 9).view(1, -1), [3, 5, 7, 9]
    plain = _decoder(model, monkeypatch, fold=False)  # the switch is read at run time too: one at a time
    assert plain.fold_failure == "HEADROOM_NORM_FOLD is not set"
    want = _step_logits(model, plain, prompt, tokens, norms)
    assert len(norms) == (2 * 3 + 1) * len(tokens) and writes == []

    folded = _decoder(model, monkeypatch, fold=True)  # its regional check: within the tolerance of the model's
    assert folded.fold_failure == ""
    got = _step_logits(model, folded, prompt, tokens, writes, norms)
    assert writes == [256, 256] * 3 * len(tokens)  # o_proj and down of every layer wrote the folded norm
    assert norms == [model.model.norm] * len(tokens)  # the final norm is the only norm module run
    assert norm_fold._PENDING == {}
    assert not all(torch.equal(a, b) for a, b in zip(got, want, strict=True))  # the fold's roundings differ
    exact = _exact_logits(model, prompt, tokens)
    for folded_logits, plain_logits, reference in zip(got, want, exact, strict=True):
        plain_error = rel(plain_logits.double(), reference)
        assert 1e-3 < plain_error < 5e-2  # bf16 all through: three layers' roundings
        assert rel(folded_logits.double(), reference) < 1.25 * plain_error
        assert int(folded_logits.argmax()) == int(reference.argmax())


def test_the_decode_status_says_whether_the_norms_are_folded(nf4_llama, monkeypatch):
    loaded = types.SimpleNamespace(model=nf4_llama)
    monkeypatch.setattr(norm_fold, "FOLD", True)
    status = compiled_decode.warm_up(loaded, (64,), compiler=lambda fn: fn, require_cuda=False).status
    assert status.state == "ready" and "one decoder layer compiled for all, its norms folded" in status.reason
    monkeypatch.setattr(norm_fold, "made", lambda: (_ for _ in ()).throw(RuntimeError("not taken")))
    status = compiled_decode.warm_up(loaded, (64,), compiler=lambda fn: fn, require_cuda=False).status
    assert "norms not folded: set aside (RuntimeError: not taken)" in status.reason
    monkeypatch.setattr(norm_fold, "FOLD", False)
    status = compiled_decode.warm_up(loaded, (64,), compiler=lambda fn: fn, require_cuda=False).status
    assert "fold" not in status.reason  # not asked for: not said


def test_a_layer_without_its_launches_keeps_its_norms(nf4_llama, monkeypatch):
    model = nf4_llama
    monkeypatch.setattr(norm_fold, "FOLD", True)
    del model.model.layers[1].mlp.forward, model.model.layers[1].mlp._headroom_nf4_gate_up  # gate/up unpaired
    assert hook.fold_reason(model.model.layers) == "gate and up are not one paired NF4 launch"
    decoder = CompiledDecode(model, lambda fn: fn)
    decoder.compile_capacity(64)
    assert decoder.fold_failure == "gate and up are not one paired NF4 launch" and decoder.regional_failure == ""


def test_dynamo_traces_the_folded_layer_once_for_every_layer(nf4_llama, monkeypatch):
    """One graph serves all layers (the hand-offs through norm_fold._PENDING leave no guard that tells
    layers apart); it holds both writers and no norm, and runs what the uncompiled step runs."""
    graphs = []
    torch._dynamo.reset()
    try:
        compiled = _decoder(nf4_llama, monkeypatch, fold=True, compiler=counting_compiler(graphs))
        (layer,) = layer_graphs(graphs)
        assert layer.compiled_function == "_folded_layer_step"
        targets = [str(n.target) for n in layer.graph.nodes if n.op == "call_function"]
        assert targets.count("headroom.nf4_gemv_fold_out") == 2 and targets.count("headroom.nf4_gemv_silu_mul") == 1
        assert not any("rsqrt" in t or "add_rms_norm" in t for t in targets)
        prompt, tokens = torch.arange(1, 9).view(1, -1), [3, 5]
        got = _step_logits(nf4_llama, compiled, prompt, tokens)
        want = _step_logits(nf4_llama, _decoder(nf4_llama, monkeypatch, fold=True), prompt, tokens)
        assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True))
        assert len(layer_graphs(graphs)) == 1 and norm_fold._PENDING == {}
    finally:
        torch._dynamo.reset()


def test_a_step_that_raises_halfway_leaves_nothing_for_the_next_decode(nf4_llama, monkeypatch):
    """A folded layer step that raises after its q/k/v launch (o_proj's request still pending) leaves nothing
    behind: the model's own decode step afterwards is what it is without folding."""
    model = nf4_llama
    decoder = _decoder(model, monkeypatch, fold=True)
    attention = model.model.layers[1].self_attn
    real = type(attention).forward

    def broken(self, *args, **kwargs):
        self.q_proj(kwargs["hidden_states"])  # the group launch takes its folded input
        raise RuntimeError("out of memory, say")

    prompt = torch.arange(1, 9).view(1, -1)
    with torch.inference_mode():
        cache = new_static_cache(model.config, 64)
        model(input_ids=prompt, use_cache=True, **{cache_kwarg(type(model)): cache})
        monkeypatch.setattr(type(attention), "forward", broken)
        with pytest.raises(RuntimeError, match="out of memory"):
            decoder.step(torch.tensor([[3]]), cache)
        monkeypatch.setattr(type(attention), "forward", real)
    assert norm_fold._PENDING == {}
    monkeypatch.setattr(norm_fold, "FOLD", False)
    want = _step_logits(model, _decoder(model, monkeypatch, fold=False), prompt, [5])[0]
    monkeypatch.setattr(norm_fold, "FOLD", True)
    with torch.inference_mode():
        cache = new_static_cache(model.config, 64)
        model(input_ids=prompt, use_cache=True, **{cache_kwarg(type(model)): cache})
        eager = model(input_ids=torch.tensor([[5]]), use_cache=True,
                      **{cache_kwarg(type(model)): cache}).logits[0, -1].float()
    assert torch.equal(eager, want)


def test_a_folded_step_that_fails_its_warm_up_is_built_unfolded_not_set_aside(nf4_llama, monkeypatch):
    """The folded norms go first: the layer-at-a-time step stays, unfolded, and says why."""
    monkeypatch.setattr(norm_fold, "made", lambda: (_ for _ in ()).throw(RuntimeError("a launch did not take it")))
    decoder = _decoder(nf4_llama, monkeypatch, fold=True)
    assert decoder.fold_failure.startswith("set aside (RuntimeError: a launch did not take it")
    assert decoder.regional and decoder.regional_failure == "" and decoder.can_run(new_static_cache(
        nf4_llama.config, 64))
