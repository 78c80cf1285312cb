"""Which memory the panel samples for a model on each device (issue 11, one probe).

Builds a tiny random-weight Llama (2 layers, a 64-token word-level tokenizer, no download),
opens it through the app's own loader with device preference "cpu" and "auto", and prints, per
preference, the device the LoadReport names, the probe `probe_for(report.device)` picks (what
the worker now shares with the memory panel), and the probe the old zero-argument
`pick_probe()` picked for the same model. On a CUDA machine the old choice sampled GPU 0 for a
model that `--cpu` had put in RAM.

    python -m tests.benchmarks.probe_choice        # prints one JSON line per preference
"""

import json
import sys
import tempfile
from pathlib import Path

import app  # noqa: F401  (offline mode and allocator settings, before torch loads)


def build_tiny(folder: Path) -> Path:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    words = ["<unk>", "<s>", "</s>"] + [f"w{i}" for i in range(61)]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>",
                            eos_token="</s>").save_pretrained(folder)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(words), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         bos_token_id=1, eos_token_id=2, pad_token_id=2)
    LlamaForCausalLM(config).save_pretrained(folder)
    return folder


def main() -> int:
    import torch

    from app.engine.loading.loader import load_model
    from app.engine.memory.probe import pick_probe, probe_for

    with tempfile.TemporaryDirectory() as tmp:
        folder = build_tiny(Path(tmp) / "tiny-llama")
        for preference in ("cpu", "auto"):
            loaded = load_model(folder, device_preference=preference)
            device = loaded.report.device
            now, before = probe_for(device), pick_probe()
            print(json.dumps({"cuda_available": torch.cuda.is_available(), "preference": preference,
                              "model_device": device, "probe_now": now.kind, "probe_device_now": now.device_name,
                              "probe_before": before.kind, "sample_now_allocated": now.sample().allocated}))
            del loaded
    return 0


if __name__ == "__main__":
    sys.exit(main())
