"""tests/benchmarks/norm_fold_quality.py's folded arm (issue 15's planning for norm_fold): the norm it folds is
transformers' LlamaRMSNorm up to where each rounds, and its GEMV scales the float32 sums as the kernels do."""

import torch
from transformers.models.llama.modeling_llama import LlamaRMSNorm

from app.engine.local import norm_fold
from tests.benchmarks import nf4_int8_quality as q
from tests.benchmarks import norm_fold_quality as fold


def test_the_folded_arm_is_the_models_norm_and_gemv_up_to_their_roundings():
    g = torch.Generator().manual_seed(0)
    norm = LlamaRMSNorm(512, eps=1e-6).to(torch.bfloat16)
    norm.weight.data = (torch.rand(512, generator=g) + 0.5).bfloat16()
    hidden = (torch.randn(1, 3, 512, generator=g) * 4).bfloat16()
    x, r = fold.folded_norm(norm, hidden)
    assert x.dtype == torch.bfloat16 and r.shape == (1, 3, 1)
    assert torch.equal(x, (norm.weight * hidden))  # bf16(w · h): the one rounding the fold keeps
    torch.testing.assert_close((x.float() * r).bfloat16(), norm(hidden), atol=0, rtol=2 ** -6)  # two bf16 steps
    codes, absmax = q.nf4_quantize(torch.randn(64, 512, generator=g))
    y = fold.folded_linear(x, r, codes, absmax)
    weight = (torch.tensor(q.NF4)[codes] * absmax.repeat_interleave(q.BLOCK, dim=1)).bfloat16()
    sums = x.float() @ weight.float().T
    assert torch.equal(y, norm_fold.folded_rows(sums, r, None))  # bf16(r · Σ W x), as FOLD_IN rounds
