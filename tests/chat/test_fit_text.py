"""The engine's fit data said by the window (app.chat.fit_text): in English the lines read as
the engine's own (MemoryFit.detail, FitPlan.summary, EntryNote.text), so nothing is lost in the
translation's source; Korean is checked in tests/ui/test_open_model_dialog.py."""

from dataclasses import replace

import pytest
from transformers import LlamaConfig

from app.chat import fit_text
from app.engine.loading.catalog import (
    CONVERSION,
    GGUF,
    NO_WEIGHTS,
    PICKLE_ONLY,
    REMOTE_CODE,
    UNREADABLE,
    CatalogEntry,
    EntryNote,
)
from app.engine.loading.fit import MachineMemory, project_fit
from app.engine.loading.fit_plan import build_plan
from app.engine.loading.placement import choose_placement
from app.engine.memory.units import GiB, MiB

CPU = choose_placement(False, None, False, (False, "no CUDA"))
NF4 = choose_placement(True, (9, 0), False, (True, ""))  # an H200 with bitsandbytes
LLAMA = LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                    num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=2048)


@pytest.mark.parametrize(("placement", "machine", "saved"), [
    (CPU, MachineMemory("cpu", 6 * GiB, 16 * GiB), None),
    (NF4, MachineMemory("cuda", 3 * GiB, 80 * GiB, reclaimable=GiB), None),
    (NF4, MachineMemory("cuda", GiB // 2, 80 * GiB), None),
    (CPU, MachineMemory("cpu", 6 * GiB, 16 * GiB), "bitsandbytes"),
])
def test_the_fit_line_says_what_the_engine_says(placement, machine, saved):
    fit = project_fit(LLAMA, placement, machine, 1024, saved, 700_000_000)
    assert fit_text.fit_line(fit) == fit.detail()
    assert fit_text.machine_text(machine) == machine.describe()


@pytest.mark.parametrize("free", [80 * GiB, 2 * GiB, GiB // 4])
def test_the_plan_line_says_what_the_engine_says_without_the_name(free):
    plan = build_plan("/models/tiny-llama", "hf", {}, LLAMA, NF4, free=free, total=80 * GiB)
    assert plan.summary() == f"tiny-llama: {fit_text.plan_line(plan)}"
    converted = replace(plan, conversion={"output_bytes": 2 * GiB, "needed_disk_bytes": 2 * GiB + 64 * MiB,
                                          "free_disk_bytes": GiB, "enough_disk": False, "folder": "/cache"})
    assert converted.summary() == f"tiny-llama: {fit_text.plan_line(converted)}"
    # the figure the refusal gives (re-trial: the plan said "writes 257 MiB" with 300 MiB free, the refusal
    # "needs 321 MiB")
    assert ("; conversion writes 2.00 GiB, 1.00 GiB disk free — NOT ENOUGH DISK (needs 2.06 GiB)"
            in fit_text.plan_line(converted))


def test_the_plan_line_speaks_of_the_chosen_context():
    """Trial 5: a Custom context was chosen and the plan line still said "fits at full context"."""
    roomy = build_plan("/models/tiny-llama", "hf", {}, LLAMA, NF4, free=80 * GiB, total=80 * GiB)
    assert roomy.verdict == "fits at full context" and roomy.trained_context == 2048
    assert fit_text.plan_line(roomy, 1024).startswith("fits at the chosen context (1,024 of 2,048 tokens) on cuda: ")
    for own in (None, 0, 2048):  # auto, or the whole trained context: the plan's own words
        assert fit_text.plan_line(roomy, own) == fit_text.plan_line(roomy)
        assert fit_text.plan_line(roomy, own).startswith("fits at full context (2,048 of 2,048 tokens) on cuda: ")
    tight = build_plan("/m", "hf", {}, LLAMA, NF4, free=2 * GiB + 13 * GiB // 32, total=80 * GiB)
    assert tight.verdict == "fits with context" and 256 < tight.context_fit < 2000
    fit = f"{tight.context_fit:,}"
    assert fit_text.plan_line(tight, 2000).startswith(f"the chosen 2,000 tokens do not fit ({fit} of 2,048 tokens fit)")
    assert fit_text.plan_line(tight, 256).startswith("fits at the chosen context (256 of 2,048 tokens)")
    # auto opens a partial fit at the context that fits: the plan's own words
    assert fit_text.plan_line(tight, tight.context_fit) == fit_text.plan_line(tight)
    assert fit_text.plan_line(tight).startswith(f"fits with context {fit} ({fit} of 2,048 tokens) on cuda: ")


def test_at_a_custom_context_every_figure_of_the_plan_line_is_about_it():
    """A trial: the fit line said "KV 90 MiB at 2,048 tokens" and the plan line below it "KV
    45 KiB/token (360 MiB at full context) … with 8-bit KV 8,192 tokens fit"."""
    roomy = build_plan("/m", "hf", {}, LLAMA, NF4, free=80 * GiB, total=80 * GiB)
    fit = project_fit(LLAMA, NF4, MachineMemory("cuda", 80 * GiB, 80 * GiB), 1024, None, 700_000_000)
    assert roomy.context_fit_kv8 == 2048 and f"{fit.kv_bytes:,}" == f"{roomy.kv_bytes_per_token * 1024:,}"
    line = fit_text.plan_line(roomy, 1024, fit.kv_bytes)
    assert f"KV {fit.kv_bytes // 1024 // 1024} MiB at 1,024 tokens" in fit_text.fit_line(fit)
    assert "+ KV 22 KiB/token (22 MiB at 1,024 tokens) + prefill at most " in line
    assert "full context" not in line and "8-bit" not in line  # it fits at 16-bit: 8-bit changes nothing
    assert fit_text.plan_line(roomy, 1024) == line  # the per-token bytes times the tokens
    assert "(44 MiB at full context)" in fit_text.plan_line(roomy) and "with 8-bit KV 2,048 tokens fit" in (
        fit_text.plan_line(roomy))
    long = LlamaConfig(**{**LLAMA.to_dict(), "max_position_embeddings": 32768})
    tight = build_plan("/m", "hf", {}, long, NF4, free=2 * GiB + 16 * GiB // 32, total=80 * GiB)
    assert (tight.context_fit, tight.context_fit_kv8) == (5471, 9918)
    line = fit_text.plan_line(tight, 8192)
    assert line.startswith("the chosen 8,192 tokens do not fit (5,471 of 32,768 tokens fit)")
    assert "(176 MiB at 8,192 tokens)" in line and line.endswith("; with 8-bit KV the chosen 8,192 tokens fit")
    assert fit_text.plan_line(tight, 16384).endswith("; with 8-bit KV 9,918 tokens fit")
    assert "8-bit" not in fit_text.plan_line(tight, 4096)
    # auto opens at the context that fits: the plan's own full-context figures
    assert "at full context" in fit_text.plan_line(tight, 5471) and "9,918" in fit_text.plan_line(tight, 5471)


def test_notes_say_what_the_engine_says():
    notes = (EntryNote(REMOTE_CODE), EntryNote(PICKLE_ONLY), EntryNote(NO_WEIGHTS), EntryNote(GGUF, "Q4_1"),
             EntryNote(CONVERSION, 3 * GiB))
    entry = CatalogEntry("m", "/m", ("chosen",), 0, notes=notes)
    assert fit_text.notes_line(entry) == entry.note
    # an unreadable config's reason is the reader's English: the window says what it means
    assert fit_text.note_text(EntryNote(UNREADABLE, "Expecting value: line 1 column 1")) == (
        "its config.json could not be read")


def test_a_refusal_is_said_in_plain_words():
    # trial 9: a text file renamed .gguf was "damaged; download it again"
    assert fit_text.refusal_text("notes.gguf is not a GGUF file (no GGUF magic bytes)") == (
        "This file is not a GGUF file (it does not start with GGUF's magic bytes). Pick a .gguf model file, or a "
        "model folder with a config.json.")
    assert fit_text.refusal_text("no config.json: not a model folder").startswith(
        "This folder has no config.json.")


def test_a_weights_file_without_config_json_is_said_so_not_a_damaged_gguf(tmp_path):
    """New-user trial: typing model.safetensors (weights, no config.json beside it) said "This GGUF file
    could not be read ... download it again"."""
    from app.engine.loading.catalog import Catalog
    from app.engine.loading.fit import MachineMemory

    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"\0" * 64)
    entry = Catalog(MachineMemory("cpu", 1 << 30, 1 << 30), None).describe(weights)  # refused before placement
    line = fit_text.refusal_text(entry.refusal)
    assert line.startswith("There is no config.json next to this file, and it is not a .gguf file.")
    assert "GGUF file could not be read" not in line and "download" not in line


def test_an_empty_gguf_is_said_to_be_empty(tmp_path):
    """Trial 7: Open model said "The model could not be opened. The details are in the log" (mmap's
    "cannot mmap an empty file") for a 0-byte .gguf."""
    from app.engine.loading.catalog import Catalog
    from app.engine.loading.fit import MachineMemory

    empty = tmp_path / "empty.gguf"
    empty.touch()
    entry = Catalog(MachineMemory("cpu", 1 << 30, 1 << 30), None).describe(empty)
    assert fit_text.refusal_text(entry.refusal) == (
        "This file is empty (0 bytes): there is no model in it. The download may not have finished; download it "
        "again, or pick another file.")
