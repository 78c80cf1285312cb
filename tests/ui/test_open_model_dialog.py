"""Open model… as a person uses it: see what is on the machine and whether it fits, open one."""

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from transformers import BertConfig, LlamaConfig

from app.core.settings import model_key
from app.engine.loading.catalog import Catalog, folder_disk_bytes
from app.engine.loading.fit import MachineMemory
from app.engine.loading.placement import choose_placement
from app.ui.open_model_dialog import OpenModelDialog
from tests.engine.test_folder_trust import save_pickle_model
from tests.helpers.fake_hf_cache import add_folder, add_repo, config_bytes

GiB = 1 << 30
SCREENSHOT = Path("/tmp/headroom_open_model_dialog.png")
LLAMA3_8B = LlamaConfig(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                        num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192,
                        tie_word_embeddings=False, architectures=["LlamaForCausalLM"])


@pytest.fixture
def machine_cache(tmp_path, monkeypatch, tiny_model_dir, real_model_folder):
    """An HF cache with a tiny model, a pickle-only tiny model, an 8B model (weights as a 16 GB
    sparse file: only its size is read) and an encoder; a 4 GiB machine with 1 GiB free."""
    cache = tmp_path / "hub"
    snapshots = {"tiny": add_folder(cache, "HuggingFaceTB/tiny-llama", tiny_model_dir)}
    save_pickle_model(tmp_path / "pickle", real_model_folder)
    snapshots["pickle"] = add_folder(cache, "org/tiny-pickle", tmp_path / "pickle")
    snapshots["big"] = add_repo(cache, "meta-llama/Meta-Llama-3-8B-Instruct", {
        "config.json": config_bytes(LLAMA3_8B), "model.safetensors": 16_060_522_496}, commit="c" * 40)
    add_repo(cache, "google-bert/bert-base-uncased",
             {"config.json": config_bytes(BertConfig(architectures=["BertForMaskedLM"]))})
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))

    def placement_for(already_quantized):
        return choose_placement(False, None, False, (False, "no CUDA"), already_quantized)

    machine = MachineMemory("cpu", free=1 * GiB, total=4 * GiB)
    monkeypatch.setattr(Catalog, "for_this_machine",
                        classmethod(lambda cls, *_a, **_k: cls(machine, placement_for)))
    return snapshots


def open_dialog(qtbot, window) -> OpenModelDialog:
    window.open_action.trigger()
    dialog = next(d for d in window.findChildren(OpenModelDialog) if d.isVisible())
    qtbot.waitExposed(dialog)
    return dialog


def rows(dialog):
    tree = dialog.tree
    return [[tree.topLevelItem(i).text(c) for c in range(tree.columnCount())]
            for i in range(tree.topLevelItemCount())]


def double_click(qtbot, dialog, row):
    item = dialog.tree.topLevelItem(row)
    dialog.tree.scrollToItem(item)
    center = dialog.tree.visualItemRect(item).center()
    # QTest's double click alone carries no press; an item view only reports a double click on
    # the item the press landed on, as a real double click has
    qtbot.mouseClick(dialog.tree.viewport(), Qt.MouseButton.LeftButton, pos=center)
    qtbot.mouseDClick(dialog.tree.viewport(), Qt.MouseButton.LeftButton, pos=center)


def gib(n):
    return f"{n / GiB:.2f} GiB"


def test_dialog_lists_the_machines_models_with_fit_and_opens_one(qtbot, make_window, machine_cache,
                                                                 real_model_path, tiny_model_dir):
    window = make_window()
    dialog = open_dialog(qtbot, window)
    tiny_size = folder_disk_bytes(tiny_model_dir)
    assert rows(dialog) == [
        # 134.5 M parameters in float32 + KV at 8,192 tokens on 1 GiB free of 4 GiB: less than
        # the margin (256 MiB + 10 %) is left
        ["SmolLM2-135M-Instruct.Q4_1.gguf", "default", gib(real_model_path.stat().st_size), "0.85 GiB", "● tight"],
        ["HuggingFaceTB/tiny-llama", "HF cache", gib(tiny_size), "0.01 GiB", "● fits"],
        # 8.03 B parameters × 4 B + 32 layers × 8 heads × 256 × 4 B × 8,192 tokens
        ["meta-llama/Meta-Llama-3-8B-Instruct", "HF cache", "14.96 GiB", "31.92 GiB", "● does not fit"],
        ["org/tiny-pickle", "HF cache", gib(folder_disk_bytes(machine_cache["pickle"])), "0.01 GiB", "● fits"],
    ]  # the encoder is not a causal LM: not listed
    assert "1.00 GiB of 4.00 GiB RAM available" in dialog.findChild(type(dialog.detail), "openModelMachine").text()
    dialog.tree.setCurrentItem(dialog.tree.topLevelItem(2))
    assert "weights 29.92 GiB (float32) + KV 2.00 GiB at 8,192 tokens = 31.92 GiB" in dialog.detail.text()
    dialog.tree.setCurrentItem(dialog.tree.topLevelItem(3))
    assert "pickle weights only" in dialog.detail.text()
    dialog.tree.setCurrentItem(dialog.tree.topLevelItem(0))
    dialog.grab().save(str(SCREENSHOT))

    with qtbot.waitSignal(window.model_ready, timeout=60000) as ready:
        double_click(qtbot, dialog, 1)
    assert ready.args[0].source == str(machine_cache["tiny"])
    qtbot.waitUntil(lambda: window.chat.settings.recent_models == (model_key(machine_cache["tiny"]),))


def test_pickle_model_is_refused_until_allowed_for_it_in_the_dialog(qtbot, make_window, machine_cache):
    window = make_window()
    with qtbot.waitSignal(window.load_failed, timeout=60000) as failed:
        double_click(qtbot, open_dialog(qtbot, window), 3)
    assert "only pickle weights" in failed.args[0] and "Allow pickle weights" in failed.args[0]
    assert "Traceback" not in failed.args[0]

    dialog = open_dialog(qtbot, window)
    dialog.tree.setCurrentItem(dialog.tree.topLevelItem(3))
    assert not dialog.allow_pickle.isChecked()
    dialog.allow_pickle.click()
    with qtbot.waitSignal(window.model_ready, timeout=60000):
        dialog.open_button.click()
    pickle_key = model_key(machine_cache["pickle"])
    qtbot.waitUntil(lambda: window.chat.settings.recent_models == (pickle_key,))
    assert window.chat.settings.permissions_for(pickle_key).allow_pickle
    assert not window.chat.settings.permissions_for(machine_cache["tiny"]).allow_pickle  # per model only

    dialog = open_dialog(qtbot, window)  # the permission and the recent model are remembered
    assert rows(dialog)[0][:2] == ["org/tiny-pickle", "recent · HF cache"]
    assert dialog.allow_pickle.isChecked()
    dialog.reject()


def test_browse_adds_a_folder_first_and_selected(qtbot, make_window, machine_cache, tiny_model_dir):
    window = make_window()
    dialog = open_dialog(qtbot, window)
    entry = dialog.add_path(tiny_model_dir / "config.json")  # what the file picker returns
    assert entry.path == tiny_model_dir and entry.origins == ("chosen",)
    assert rows(dialog)[0][:2] == [tiny_model_dir.name, "chosen"]
    assert dialog.current_entry() == entry
    dialog.reject()


def test_nothing_found_says_how_to_pick_a_model(qtbot, tmp_path):
    from app.core.settings import Settings

    def placement_for(already_quantized):
        return choose_placement(False, None, False, (False, "no CUDA"), already_quantized)

    catalog = Catalog(MachineMemory("cpu", 8 * GiB, 16 * GiB), placement_for, cache_dir=tmp_path / "none")
    dialog = OpenModelDialog(catalog, Settings(), default_path=tmp_path / "not-installed.gguf")
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.entries() == []
    assert dialog.empty.isVisible() and not dialog.tree.isVisible()
    assert "Browse…" in dialog.empty.text()
    assert not dialog.open_button.isEnabled() and not dialog.allow_pickle.isEnabled()
