"""headroom::add_rms_norm (app/engine/local/add_rms_norm.py): its torch path is the models' own RMSNorm
of residual + delta bit for bit, it stands in only for the norms it knows, the compiled decode step
with the fused norm gives the model's own logits through it, and its CUDA kernel builds for
sm_90 (with NVRTC). On the CPU the op answers with `reference`; the kernel itself is checked on the
GPU (`self_check`, tests/benchmarks/add_rms_norm.py)."""

import pytest
import torch
from transformers.models.llama.modeling_llama import LlamaRMSNorm
from transformers.models.mistral.modeling_mistral import MistralRMSNorm
from transformers.models.qwen2.modeling_qwen2 import Qwen2RMSNorm
from transformers.models.qwen3.modeling_qwen3 import Qwen3RMSNorm

from app.engine.local import add_rms_norm as arn
from app.engine.local import compiled_decode
from app.engine.local.compiled_decode import CompiledDecode
from app.engine.local.generation import cache_kwarg
from app.engine.local.static_cache import new_static_cache
from tests.engine.test_captured_step import _prefilled
from tests.helpers.kernels import entry_report, ptxas_log, switch_at_import


def _norm(cls, n=64, eps=1e-6, seed=0):
    norm = cls(n, eps=eps)
    with torch.no_grad():
        norm.weight.copy_(1 + torch.randn(n, generator=torch.Generator().manual_seed(seed)) / 4)
    return norm


@pytest.mark.parametrize("cls", [LlamaRMSNorm, MistralRMSNorm, Qwen2RMSNorm, Qwen3RMSNorm])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("rows", [1, 3])
def test_reference_is_the_models_own_norm_of_the_sum(cls, dtype, rows):
    norm = _norm(cls).to(dtype)
    g = torch.Generator().manual_seed(rows)
    residual, delta = ((torch.randn(1, rows, 64, generator=g) * 3).to(dtype) for _ in range(2))
    hidden, normed = arn.reference(residual, delta, norm.weight, norm.variance_epsilon)
    assert torch.equal(hidden, residual + delta)
    assert torch.equal(normed, norm(residual + delta)) and normed.dtype == dtype
    op_hidden, op_normed = torch.ops.headroom.add_rms_norm(residual, delta, norm.weight, norm.variance_epsilon)
    assert torch.equal(op_hidden, hidden) and torch.equal(op_normed, normed)  # the CPU answers with reference
    assert arn.takes(norm)


def test_it_stands_in_only_for_the_norms_it_knows():
    class GemmaLikeRMSNorm(torch.nn.Module):  # (1 + weight): not a norm of RMS_NORMS
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.zeros(8))
            self.variance_epsilon = 1e-6

    assert not arn.takes(torch.nn.RMSNorm(8)) and not arn.takes(torch.nn.LayerNorm(8))
    assert not arn.takes(GemmaLikeRMSNorm())
    broken = _norm(LlamaRMSNorm, 8)
    del broken.variance_epsilon
    assert not arn.takes(broken)


@pytest.mark.parametrize("weight_dtype", [torch.bfloat16, torch.float32])
def test_the_op_is_registered_with_a_fake_for_tracing(weight_dtype):
    """The fake's outputs have the real ones' dtypes, also where torch's path promotes (a float32 weight)."""
    norm = _norm(LlamaRMSNorm).to(weight_dtype)
    residual, delta = torch.randn(1, 1, 64).to(torch.bfloat16), torch.randn(1, 1, 64).to(torch.bfloat16)
    torch.library.opcheck(torch.ops.headroom.add_rms_norm, (residual, delta, norm.weight.detach(), 1e-6),
                          test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_static"))


def test_the_kernel_takes_bf16_cuda_rows_of_whole_warps_and_says_why_not(monkeypatch):
    w = torch.ones(64, dtype=torch.bfloat16)
    x = torch.zeros(2, 64, dtype=torch.bfloat16)
    assert arn.shape_reason(x, x, w) == "not bf16 on CUDA"
    assert not arn.kernel_ready(x, x, w)

    class OnCuda(torch.Tensor):  # shape_reason's view of a CUDA tensor, without a GPU
        @property
        def is_cuda(self):
            return True

    def cuda_like(n, rows=1):
        return torch.zeros(rows, n, dtype=torch.bfloat16).as_subclass(OnCuda), torch.ones(n, dtype=torch.bfloat16)

    for n, why in ((4096, ""), (8192, ""), (2048, ""), (576, "hidden size 576"), (16384, "hidden size 16384")):
        x, w = cuda_like(n, rows=3)
        reason = arn.shape_reason(x, x, w)
        assert reason.startswith(why) if why else reason == "", (n, reason)
    x, w = cuda_like(4096)
    assert arn.shape_reason(x, x[:, :2048], w) == "shapes"
    assert arn.shape_reason(x[:0], x[:0], w) == "shapes"  # no rows: no launch
    assert arn.shape_reason(x[:, ::2], x[:, ::2], w[:2048]) == "not contiguous and 16-byte aligned"


@pytest.mark.parametrize("kv_bits", [16, 8])
def test_the_step_with_the_fused_norm_gives_the_models_own_logits(tiny_loaded, monkeypatch, kv_bits):
    """HEADROOM_FUSED_NORM (FUSED_NORM on): each layer's two norms and the final one go through the op
    (2 x layers + 1 calls a step) and the regional step's logits are the model's own."""
    model = tiny_loaded.model
    calls = []
    original = arn.reference
    monkeypatch.setattr(arn, "serves", arn.takes)  # the CPU's float32 norms through the op (its torch path)
    monkeypatch.setattr(arn, "reference", lambda *a: calls.append(1) or original(*a))
    dec = CompiledDecode(model, lambda fn: fn)
    dec._layer_compiled = compiled_decode._layer_step
    dec._outer_compiled = {"rotary_emb": compiled_decode._outer_step, "norm": compiled_decode._final_norm}
    if kv_bits == 16:
        mine, theirs = _prefilled(model), _prefilled(model)
    else:
        mine, theirs = (new_static_cache(model.config, 64, 8) for _ in range(2))
        with torch.inference_mode():
            for cache in (mine, theirs):
                model(input_ids=torch.arange(1, 6).view(1, -1), use_cache=True, **{cache_kwarg(type(model)): cache})
    token = torch.tensor([[7]])
    with torch.inference_mode():
        got = dec._regional_forward(token, mine)
        want = dec._forward(token, theirs)
    assert torch.equal(got, want)
    assert len(calls) == 2 * model.config.num_hidden_layers + 1


def _norm_with_weight(weight: torch.Tensor) -> LlamaRMSNorm:
    norm = LlamaRMSNorm(weight.numel())
    norm.weight = torch.nn.Parameter(weight, requires_grad=False)
    return norm


def _fake_cuda(n: int, dtype=torch.bfloat16) -> torch.Tensor:
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():  # a CUDA tensor's metadata without a GPU
        return torch.empty(n, dtype=dtype, device="cuda")


def test_the_step_takes_the_kernel_only_where_it_runs(monkeypatch):
    """`serves`: bf16 norms on CUDA of a hidden size the kernel handles; not on the CPU, not fp16 (GPUs
    before Ampere), not 4,000 wide, not after the kernel failed here, not with HEADROOM_FUSED_NORM=0;
    there Inductor's fused kernel beats the op's torch path."""
    monkeypatch.setattr(arn, "failure", "")
    monkeypatch.setattr(arn, "FUSED_NORM", True)
    assert arn.serves(_norm_with_weight(_fake_cuda(4096)))
    assert not arn.serves(_norm_with_weight(torch.ones(4096, dtype=torch.bfloat16)))
    assert not arn.serves(_norm_with_weight(_fake_cuda(4096, torch.float16)))
    assert not arn.serves(_norm_with_weight(_fake_cuda(4000)))
    assert not arn.serves(_norm_with_weight(_fake_cuda(16384)))
    assert not arn.serves(torch.nn.LayerNorm(4096))
    monkeypatch.setattr(arn, "failure", "self-check: 3 bf16 steps from the torch path")
    assert not arn.serves(_norm_with_weight(_fake_cuda(4096)))
    monkeypatch.setattr(arn, "failure", "")
    monkeypatch.setattr(arn, "FUSED_NORM", False)
    assert not arn.serves(_norm_with_weight(_fake_cuda(4096)))


def test_the_fused_norm_is_on_unless_switched_off():
    def fused(value):
        return switch_at_import("app.engine.local.add_rms_norm", "FUSED_NORM", "HEADROOM_FUSED_NORM", value)

    assert (fused(None), fused("0"), fused("1")) == ("True", "False", "True")


def test_the_kernel_compiles_for_sm90_in_one_blocks_registers():
    report = entry_report(ptxas_log(arn.SOURCE, "add_rms_norm.cu"), "add_rms_norm")
    assert report["spill_stores"] == 0
    assert report["registers"] <= 64  # 1,024 threads a block


def test_the_step_compiles_through_the_op_as_one_layer_graph(tiny_loaded, monkeypatch):
    """With FUSED_NORM, Dynamo traces the layer step through the op (its fake) as one graph for all
    layers, and the warm-up's check against the model's own forward passes: the step is ready and
    layer-at-a-time."""
    from tests.helpers.dynamo_graphs import one_layer_graph_ops

    monkeypatch.setattr(arn, "serves", arn.takes)
    ops = one_layer_graph_ops(tiny_loaded)
    assert ops.count(torch.ops.headroom.add_rms_norm) == 2  # the layer's two norms (the packet, as traced)
