"""A stand-in for the `flash_attn` package on the CPU (no CUDA here): `flash_attn_with_kvcache`
computed in float32 the way FA2 defines it, with every call recorded.

FA2's layout is (batch, seqlen, heads, head_dim) with only the last dimension contiguous;
queries are the last ``c`` of ``cache_seqlens`` positions (causal aligned bottom-right); the
query heads of one KV head are ``Hq / Hkv`` consecutive heads (GQA); keys at or beyond
``cache_seqlens`` are never read.
"""

from __future__ import annotations

import sys
import types

import torch


class FakeFlashAttn(types.ModuleType):
    """Install with `install(monkeypatch)`; ``calls`` lists (q, k_cache, v_cache, cache_seqlens,
    causal) of each call, tensors as received. ``return_softmax_lse`` adds FA2's (B, Hq, c)
    float32 log-sum-exp of the scaled scores."""

    def __init__(self, version: str = "2.8.3.post2", head_dims=None):
        super().__init__("flash_attn")
        self.__version__ = version
        self.calls: list[dict] = []
        self.bert_padding = types.ModuleType("flash_attn.bert_padding")  # what transformers imports too
        if head_dims is not None:
            build = types.ModuleType("flash_attn.headroom_build")
            build.HEAD_DIMS, build.DTYPES, build.CUDA_ARCHS = tuple(head_dims), ("bf16", "fp16"), ("90",)
            self.headroom_build = build

    def flash_attn_with_kvcache(self, q, k_cache, v_cache, cache_seqlens=None, softmax_scale=None,
                                causal=False, return_softmax_lse=False, **_):
        assert q.stride(-1) == 1 and k_cache.stride(-1) == 1 and v_cache.stride(-1) == 1
        assert cache_seqlens.dtype == torch.int32
        self.calls.append({"q": q, "k_cache": k_cache, "v_cache": v_cache, "cache_seqlens": cache_seqlens,
                           "causal": causal})
        b, c, hq, d = q.shape
        groups = hq // k_cache.shape[2]
        scale = softmax_scale if softmax_scale is not None else d ** -0.5
        out = torch.empty(b, c, hq, d, dtype=q.dtype)
        lse = torch.empty(b, hq, c, dtype=torch.float32)  # FA2: (batch, heads, seqlen_q), float32
        for i in range(b):
            n = int(cache_seqlens[i])
            k = k_cache[i, :n].float().repeat_interleave(groups, dim=1)  # (n, Hq, d)
            v = v_cache[i, :n].float().repeat_interleave(groups, dim=1)
            scores = torch.einsum("chd,nhd->hcn", q[i].float(), k) * scale
            if causal:  # query j sits at position n - c + j
                allowed = torch.arange(n).view(1, -1) <= (n - c + torch.arange(c)).view(-1, 1)
                scores = scores.masked_fill(~allowed, float("-inf"))
            out[i] = torch.einsum("hcn,nhd->chd", scores.softmax(-1), v).to(q.dtype)
            lse[i] = scores.logsumexp(-1)
        return (out, lse) if return_softmax_lse else out

    def install(self, monkeypatch) -> FakeFlashAttn:
        monkeypatch.setitem(sys.modules, "flash_attn", self)
        monkeypatch.setitem(sys.modules, "flash_attn.bert_padding", self.bert_padding)
        if hasattr(self, "headroom_build"):
            monkeypatch.setitem(sys.modules, "flash_attn.headroom_build", self.headroom_build)
        return self
