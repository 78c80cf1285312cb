"""GPU smoke check of the layer-at-a-time decode step (issue 12, item 3) before a long benchmark:
a 6-layer random Llama in real bitsandbytes NF4 (with nf4_hook and nf4_prefill installed as the
loader does), warmed up for 16- and 8-bit KV; prints the decoder's status (regional or the reason
it fell back), Dynamo's graph and recompile counts, whether `prepare` captured a restored-size
cache, and per step the relative error of two caches of other capacities against the model's own
eager forward. About a minute on an H200.

    python3 -m tests.benchmarks.regional_gpu_check      # CUDA, bitsandbytes
"""

from __future__ import annotations

import types

import torch

import app  # noqa: F401  (offline, allocator settings before torch)
from app.engine.local import compiled_decode, nf4_hook, nf4_prefill
from app.engine.local.attention import register_packed_sdpa
from app.engine.local.generation import cache_kwarg
from app.engine.local.static_cache import new_static_cache


def nf4_llama(layers: int = 6):
    import bitsandbytes as bnb
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=512, hidden_size=512, intermediate_size=1024, num_hidden_layers=layers,
                         num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=4096)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    for layer in model.model.layers:
        for block in (layer.self_attn, layer.mlp):
            for name, linear in list(block.named_children()):
                if isinstance(linear, torch.nn.Linear):
                    quantized = bnb.nn.Linear4bit(linear.in_features, linear.out_features, bias=False,
                                                  compute_dtype=torch.bfloat16, quant_type="nf4")
                    quantized.weight = bnb.nn.Params4bit(linear.weight.data, requires_grad=False, quant_type="nf4")
                    setattr(block, name, quantized)
    model = model.cuda().eval()
    model.set_attn_implementation(register_packed_sdpa())
    return model


def main() -> int:
    from torch._dynamo.utils import counters

    torch._logging.set_logs(recompiles=True, graph_breaks=True)
    model = nf4_llama()
    print("nf4_hook:", nf4_hook.install(model, require_faster=False).label())
    print("nf4_prefill:", nf4_prefill.install(model, budget=1 << 16))
    decoder = compiled_decode.warm_up(types.SimpleNamespace(model=model), (256,), kv_bits=(16, 8))
    print("status:", decoder.status.state, "regional" if decoder.regional else "whole forward",
          f"{decoder.status.seconds:.1f} s |", decoder.status.reason)
    print("dynamo:", dict(counters["stats"]))
    kw = cache_kwarg(type(model))
    prompt = torch.arange(1, 40, device="cuda").view(1, -1)
    worst = 0.0
    for bits in (16, 8):
        with torch.inference_mode():
            caches = []
            for capacity in (512, 1024, 512):  # the last: the eager reference
                cache = new_static_cache(model.config, capacity, bits)
                model(input_ids=prompt, use_cache=True, logits_to_keep=1, **{kw: cache})
                caches.append(cache)
            print(f"{bits}-bit prepare:", decoder.prepare(caches[1]))
            token = torch.full((1, 1), 5, device="cuda")
            for i in range(4):
                a = decoder.step(token, caches[0]).clone()
                b = decoder.step(token, caches[1]).clone()
                want = model(input_ids=token, use_cache=True, logits_to_keep=1, **{kw: caches[2]}).logits[0, -1].float()
                errors = [float((x - want).norm() / want.norm()) for x in (a, b)]
                worst = max([worst, *errors])
                print(f"{bits}-bit step {i}: relative error {errors[0]:.2e} / {errors[1]:.2e}")
    print("dynamo:", dict(counters["stats"]), "| capture failed:", repr(decoder._capture_failed),
          f"| worst {worst:.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
