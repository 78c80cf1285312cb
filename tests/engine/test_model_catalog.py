"""Model discovery (issue 6 item 7): rows, sizes and fit labels from a fake HF cache, the
installed default model and recent models, with an injected free-memory figure."""

import json

import pytest
import torch
from transformers import BertConfig, LlamaConfig

from app.core.settings import model_key
from app.engine.loading.catalog import (
    DEFAULT,
    HF_CACHE,
    RECENT,
    Catalog,
    looks_like_causal_lm,
    scan_hf_cache,
)
from app.engine.loading.fit import FITS, NO_FIT, TIGHT, MachineMemory
from app.engine.loading.placement import choose_placement
from tests.helpers.fake_hf_cache import add_repo, config_bytes
from tests.helpers.tiny_models import tiny_llama_config

GiB = 1 << 30
# tiny_llama_config: 49,152 × 64 tied embedding + 2 × (attention 12,288 + MLP 24,576) + 5 norms × 64
TINY_PARAMS = 49_152 * 64 + 2 * (12_288 + 24_576) + 5 * 64  # 3,219,776
TINY_KV = 2 * 2 * (16 + 16) * 4 * 512  # layers × KV heads × (k + v dims) × fp32 × 512 positions
TINY_NEEDED = TINY_PARAMS * 4 + TINY_KV  # 13,141,248 bytes on the CPU (float32)


def cpu_catalog(free: int, total: int = 16 * GiB, cache_dir=None, context_setting: int = 0) -> Catalog:
    def placement_for(already_quantized):
        return choose_placement(False, None, False, (False, "no CUDA"), already_quantized)

    return Catalog(MachineMemory("cpu", free, total), placement_for, cache_dir, context_setting)


def cuda_catalog(free: int, total: int = 24 * GiB) -> Catalog:
    def placement_for(already_quantized):  # an Ampere card with bitsandbytes: NF4 + bf16
        return choose_placement(True, (8, 6), False, (True, ""), already_quantized)

    return Catalog(MachineMemory("cuda", free, total), placement_for)


@pytest.fixture
def fake_cache(tmp_path, monkeypatch):
    cache = tmp_path / "hub"
    tiny = add_repo(cache, "org/tiny-llama", {
        "config.json": config_bytes(tiny_llama_config()),
        "model.safetensors": 1000,  # a whole header, then zeros: only its size matters to the fit
        "tokenizer.json": b"{}",
    })
    add_repo(cache, "org/encoder", {"config.json": config_bytes(BertConfig(architectures=["BertForMaskedLM"]))})
    add_repo(cache, "org/broken-json", {"config.json": b"{not json", "model.safetensors": b"\0" * 10})
    add_repo(cache, "org/readme-only", {"README.md": b"# nothing"})
    add_repo(cache, "org/chat-data", {"config.json": config_bytes(tiny_llama_config())}, repo_type="dataset")
    (cache / "models--org--corrupt").mkdir()  # no snapshots folder: scan_cache_dir reports it
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    return tiny


def test_hf_cache_lists_causal_lms_with_size_and_fit(fake_cache):
    entries = cpu_catalog(free=8 * GiB).entries((), None)
    assert [e.name for e in entries] == ["org/tiny-llama"]  # encoder, broken, dataset, corrupt skipped
    entry = entries[0]
    assert entry.path == fake_cache and entry.origins == (HF_CACHE,)
    assert entry.disk_bytes == len(config_bytes(tiny_llama_config())) + 1000 + 2
    assert entry.model_type == "llama"
    fit = entry.fit
    assert fit.weights.bytes == TINY_PARAMS * 4 == 12_879_104 and fit.weights.form == "float32"
    assert fit.kv_bytes == TINY_KV == 262_144 and fit.context_tokens == 512
    assert fit.needed == TINY_NEEDED and fit.verdict == FITS
    # sizes in the unit they reach: a tiny model's KV is 256 KiB, not "0.00 GiB"
    assert fit.detail() == ("fits: weights 12 MiB (float32) + KV 256 KiB at 512 tokens = 13 MiB; "
                            "8.00 GiB of 16.00 GiB RAM available")


@pytest.mark.parametrize("free_over_needed, verdict", [
    (lambda margin: margin, FITS), (lambda margin: margin - 1, TIGHT),
    (lambda margin: 0, TIGHT), (lambda margin: -1, NO_FIT),
])
def test_fit_labels_follow_free_memory(fake_cache, free_over_needed, verdict):
    # margin = max(256 MiB, 2 % of 16 GiB) + 10 % of what the model needs
    margin = int(16 * GiB * 0.02) + round(0.10 * TINY_NEEDED)
    assert margin == 343_597_383 + 1_314_125
    free = TINY_NEEDED + free_over_needed(margin)
    (entry,) = cpu_catalog(free=free, context_setting=512).entries((), None)  # the whole context, asked for
    assert entry.fit.margin == margin
    assert entry.fit.verdict == verdict


def test_auto_context_lists_the_fit_at_the_context_the_plan_says_fits(fake_cache):
    (roomy,) = cpu_catalog(free=8 * GiB).entries((), None)  # the whole context fits: listed at it
    assert roomy.plan.verdict == "fits at full context" and roomy.fit.context_tokens == 512
    plan = roomy.plan
    # room for three quarters of the full context's KV + prefill spike, beside weights and margin
    full = plan.kv_bytes_full_context + plan.prefill_spike_full_context
    free = plan.weights_bytes + plan.margin_bytes + full * 3 // 4
    (entry,) = cpu_catalog(free=free).entries((), None)
    assert entry.plan.verdict == "fits with context" and 256 <= entry.plan.context_fit < 512
    assert entry.fit.context_tokens == entry.plan.context_fit
    assert entry.fit.kv_bytes == entry.plan.kv_bytes_per_token * entry.plan.context_fit


def test_context_setting_caps_the_kv_projection(fake_cache):
    catalog = cpu_catalog(free=8 * GiB)
    capped = Catalog(catalog.machine, catalog.placement_for, context_setting=128)
    (entry,) = capped.entries((), None)
    assert (entry.fit.context_tokens, entry.fit.kv_bytes) == (128, 512 * 128)


def test_default_and_recent_models_come_first_and_merge_with_the_cache(fake_cache, real_model_path, tmp_path):
    recent = (str(fake_cache), str(tmp_path / "gone"))  # a recent model since deleted is left out
    entries = cpu_catalog(free=8 * GiB).entries(recent, real_model_path)
    assert [(e.name, e.origins) for e in entries] == [
        ("org/tiny-llama", (RECENT, HF_CACHE)),
        ("SmolLM2-135M-Instruct.Q4_1.gguf", (DEFAULT,)),
    ]
    default = entries[1]
    assert default.disk_bytes == real_model_path.stat().st_size  # the GGUF file itself
    # projected from the converted folder's config: 134,515,008 parameters in float32 (C26:
    # dequantized), KV 30 layers × 3 heads × 128 × 4 B × 8,192 positions
    assert default.fit.weights.bytes == 134_515_008 * 4
    assert default.fit.kv_bytes == 30 * 3 * 128 * 4 * 8192 == 377_487_360
    assert default.fit.detail() == ("fits: weights 513 MiB (float32) + KV 360 MiB at 8,192 tokens = "
                                    "873 MiB; 8.00 GiB of 16.00 GiB RAM available")


def test_projected_weights_match_the_loaded_default_model(real_loaded, real_model_path):
    (entry,) = cpu_catalog(free=8 * GiB).entries((), real_model_path)
    measured = real_loaded.report.weight_bytes  # get_memory_footprint() of the loaded model
    assert abs(entry.fit.weights.bytes - measured) / measured < 0.001


def test_nf4_on_cuda_keeps_embeddings_in_bf16(real_model_path):
    (entry,) = cuda_catalog(free=20 * GiB).entries((), real_model_path)
    # 106,168,320 linear weights at 4.127 bits (QLoRA double quant) + 28,346,688 embedding and
    # norm parameters at 2 bytes; KV in bf16: 30 × 3 × 128 × 2 B × 8,192
    assert entry.fit.weights.form == "NF4 + bfloat16"
    assert entry.fit.weights.bytes == round(106_168_320 * (0.5 + 1 / 64 + 4 / 16384)) + 28_346_688 * 2
    assert entry.fit.kv_bytes == 188_743_680
    assert "GPU memory free" in entry.fit.detail()


def test_a_folder_quantized_as_saved_is_projected_at_its_file_size(tmp_path):  # case C13
    config = tiny_llama_config().to_dict()
    config["quantization_config"] = {"quant_method": "bitsandbytes", "load_in_4bit": True}
    folder = tmp_path / "tiny-nf4"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "model.safetensors").write_bytes(b"\0" * 4321)
    entry = cuda_catalog(free=20 * GiB).describe(folder)
    assert (entry.fit.weights.bytes, entry.fit.weights.form) == (4321, "as saved (bitsandbytes)")


def test_damaged_gguf_and_missing_config_say_why_there_is_no_fit(tmp_path):
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 96)
    entry = cpu_catalog(free=GiB).describe(gguf)
    assert entry.fit is None and entry.plan is None and entry.disk_bytes == 100
    assert entry.note == "model.gguf is GGUF version 0; supported: 2 and 3"
    assert "no config.json" in cpu_catalog(free=GiB).describe(tmp_path).note


@pytest.mark.parametrize("files, refusal", [
    ({"config.json": config_bytes(tiny_llama_config())},
     "{name} has no weight files (*.safetensors or pytorch_model.bin)"),
    ({"config.json": b"{not json", "model.safetensors": b"\0" * 10},
     "config.json of {name} is unreadable (Expecting property name enclosed in double quotes: line 1 column 2 "
     "(char 1))"),
    ({"config.json": b"[1, 2]", "model.safetensors": b"\0" * 10}, "config.json of {name} is not a JSON object"),
])
def test_a_folder_the_loader_would_refuse_is_refused_in_the_listing(tmp_path, files, refusal):
    """Trial 9: a folder with only config.json was listed as fitting, one whose config.json is not
    JSON as "Memory fit not known", both with Open enabled; Open then failed "no weights files" or
    on the config. The listing refuses them in the loader's words (folder_trust.folder_refusal)."""
    folder = tmp_path / "half"
    folder.mkdir()
    for name, content in files.items():
        (folder / name).write_bytes(content)
    entry = cpu_catalog(free=GiB).describe(folder)
    assert entry.refusal == refusal.format(name="half")
    assert cpu_catalog(free=GiB).describe(folder / "config.json").refusal == entry.refusal


def test_a_cut_safetensors_file_is_listed_as_damaged_not_as_fitting(tmp_path, tiny_model_dir):
    """The new-user trial: a working folder whose model.safetensors was cut short was listed as
    "fits"; it is refused, with the file named, as a damaged GGUF header is."""
    import shutil

    from app.engine.loading.catalog import DAMAGED

    folder = tmp_path / "cut"
    shutil.copytree(tiny_model_dir, folder)
    weights = folder / "model.safetensors"
    with open(weights, "r+b") as file:
        file.truncate(weights.stat().st_size // 2)
    entry = cpu_catalog(free=GiB).describe(folder)
    reason = ("model.safetensors: damaged safetensors file (it ends before its own tensors do); the file is "
              "probably incomplete or corrupted — download it again")
    assert (entry.refusal, entry.notes[0].kind, entry.note) == (reason, DAMAGED, reason)
    assert cpu_catalog(free=GiB).describe(tiny_model_dir).refusal == ""


def test_a_damaged_gguf_header_is_noted_as_damaged(tmp_path):
    from app.engine.loading.catalog import DAMAGED
    from tests.helpers.tiny_gguf import write_tiny_gguf

    gguf = tmp_path / "tiny.gguf"
    write_tiny_gguf(gguf, "Q8_0")
    with open(gguf, "r+b") as file:
        file.truncate(200)  # inside its metadata
    entry = cpu_catalog(free=GiB).describe(gguf)
    assert entry.notes[0].kind == DAMAGED and "damaged GGUF header" in entry.refusal


def test_a_gguf_cut_in_its_tensor_data_is_noted_as_damaged_from_its_header(tmp_path):
    """New-user trial: a download cut at 3 of 94 MB was only refused seconds into its conversion;
    the tensor table already says where the data ends."""
    from app.engine.loading.catalog import DAMAGED
    from app.engine.loading.gguf_header import read_gguf_header
    from tests.helpers.tiny_gguf import write_tiny_gguf

    gguf = tmp_path / "tiny.gguf"
    write_tiny_gguf(gguf, "Q8_0")
    end = max(t.offset + t.nbytes for t in read_gguf_header(gguf).tensors)
    with open(gguf, "r+b") as file:
        file.truncate(end)  # the writer's trailing padding gone: still whole
    assert cpu_catalog(free=GiB).describe(gguf).refusal == ""
    with open(gguf, "r+b") as file:
        file.truncate(end - 1)  # one byte short of the last tensor's end
    entry = cpu_catalog(free=GiB).describe(gguf)
    assert entry.notes[0].kind == DAMAGED
    assert entry.refusal == (f"tiny.gguf: damaged GGUF file (it ends before its own tensors do: {end - 1:,} of "
                             f"{end:,} bytes); the file is probably incomplete or corrupted — download it again")


def test_unconverted_gguf_is_planned_from_its_header(tmp_path, monkeypatch):
    from tests.helpers.tiny_gguf import write_tiny_gguf

    monkeypatch.setenv("HEADROOM_CACHE_DIR", str(tmp_path / "cache"))
    gguf = tmp_path / "tiny.gguf"
    write_tiny_gguf(gguf, "Q8_0")
    entry = cpu_catalog(free=GiB).describe(gguf)
    # 107,456 parameters in float32 + KV 2 layers × 2 heads × 32 × 4 B × 512 positions
    assert (entry.fit.weights.bytes, entry.fit.kv_bytes) == (107_456 * 4, 2 * 2 * 32 * 4 * 512)
    assert entry.plan.verdict == "fits at full context" and entry.plan.conversion["output_bytes"] == 107_456 * 2
    assert entry.note == "GGUF Q8_0; converted once on first open (210 KiB to the cache)"
    assert not (tmp_path / "cache").exists()  # listing converts nothing


def test_pickle_only_and_remote_code_folders_are_noted(tmp_path):
    config = tiny_llama_config().to_dict() | {
        "model_type": "tiny_custom", "auto_map": {"AutoModelForCausalLM": "modeling_tiny.TinyForCausalLM"}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "pytorch_model.bin").write_bytes(b"\0" * 10)
    entry = cpu_catalog(free=GiB).describe(tmp_path)
    assert entry.note == "needs its own code to load (trust_remote_code); pickle weights only (.bin/.pt)"
    assert entry.fit is not None  # projected from config.json alone, the code is never run


def test_missing_or_unreadable_cache_lists_nothing(tmp_path):
    assert scan_hf_cache(tmp_path / "no-such-cache") == []
    assert cpu_catalog(free=GiB, cache_dir=tmp_path / "no-such-cache").entries((), None) == []


def test_main_ref_wins_over_a_newer_detached_revision(tmp_path):
    cache = tmp_path / "hub"
    main = add_repo(cache, "org/m", {"config.json": config_bytes(tiny_llama_config())}, commit="1" * 40)
    other = add_repo(cache, "org/m", {"config.json": config_bytes(tiny_llama_config(vocab_size=100))},
                     commit="2" * 40)
    (cache / "models--org--m" / "refs" / "main").write_text("1" * 40)
    assert other.is_dir()
    assert [(repo, path) for repo, path, _size in scan_hf_cache(cache)] == [("org/m", main)]


@pytest.mark.parametrize("config, expected", [
    ({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}, True),
    ({"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2"}, True),
    ({"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3"}, True),
    ({"architectures": ["BertForMaskedLM"], "model_type": "bert"}, False),
    ({"architectures": ["LlavaForConditionalGeneration"], "model_type": "clip"}, False),
    ({"model_type": "mistral"}, True),
    ({"model_type": "t5"}, False),  # an encoder-decoder: not for AutoModelForCausalLM
])
def test_causal_lm_detection_reads_architectures_first(config, expected):
    assert looks_like_causal_lm(config) is expected


def test_listing_never_instantiates_a_model(fake_cache, monkeypatch):
    def refuse(*_a, **_k):
        raise AssertionError("a model was instantiated to list it")

    monkeypatch.setattr(torch.nn.Module, "__init__", refuse)
    (entry,) = cpu_catalog(free=8 * GiB).entries((), None)
    assert entry.fit.verdict == FITS
    assert model_key(entry.path) == model_key(fake_cache)


def test_parameter_estimate_matches_real_architectures():
    """Config-only count vs the parameters of the model built on the meta device (no memory)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    from app.engine.loading.fit import estimate_parameters

    configs = [
        LlamaConfig(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                    num_attention_heads=32, num_key_value_heads=8),  # Llama-3-8B: exact
        AutoConfig.for_model("qwen2", vocab_size=152064, hidden_size=3584, intermediate_size=18944,
                             num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=4),
        AutoConfig.for_model("gpt2"),  # learned positions, plain MLP
        AutoConfig.for_model("mixtral", num_hidden_layers=4),  # mixture of experts
        AutoConfig.for_model("qwen2_moe", num_hidden_layers=4),  # + shared expert
        AutoConfig.for_model("deepseek_v3", num_hidden_layers=5),  # MLA + dense first layers
        AutoConfig.for_model("gemma2"),
    ]
    for config in configs:
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config)
        real = sum(p.numel() for p in model.parameters())
        estimate = estimate_parameters(config).total
        assert abs(estimate - real) / real < 0.001, (config.model_type, estimate, real)
