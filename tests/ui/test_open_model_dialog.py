"""Open model… as a person uses it: see what is on the machine and whether it fits, open one."""

import os
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
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
    qtbot.waitUntil(lambda: not dialog.reading(), timeout=30000)  # every row's plan arrived
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
    """A size as the dialog shows it (app.engine.memory.units.format_bytes)."""
    from app.engine.memory.units import format_bytes

    return format_bytes(n)


def test_dialog_lists_the_machines_models_with_fit_and_opens_one(qtbot, make_window, machine_cache,
                                                                 real_model_path, tiny_model_dir):
    window = make_window()
    dialog = open_dialog(qtbot, window)
    tiny_size = folder_disk_bytes(tiny_model_dir)
    assert rows(dialog) == [
        # 134.5 M parameters in float32 + KV at 8,192 tokens + the prefill spike + the margin
        # (256 MiB) need more than the 1 GiB free of 4 GiB: auto lists it at the 5,301 tokens that fit
        ["SmolLM2-135M-Instruct.Q4_1.gguf", "default", "94 MiB", "746 MiB",
         "● fits with context 5,301"],
        ["HuggingFaceTB/tiny-llama", "HF cache", gib(tiny_size), "13 MiB", "● fits"],
        # 8.03 B parameters × 4 B + 32 layers × 8 heads × 256 × 4 B × 8,192 tokens
        ["meta-llama/Meta-Llama-3-8B-Instruct", "HF cache", "14.96 GiB", "31.92 GiB", "● does not fit"],
        ["org/tiny-pickle", "HF cache", gib(folder_disk_bytes(machine_cache["pickle"])), "13 MiB", "● fits"],
    ]  # the encoder is not a causal LM: not listed
    assert not [cell for row in rows(dialog) for cell in row if cell.startswith("0.")]  # never "0.00 GiB"
    assert "1.00 GiB of 4.00 GiB RAM available" in dialog.findChild(type(dialog.detail), "openModelMachine").text()
    dialog.tree.setCurrentItem(dialog.tree.topLevelItem(2))
    assert "weights 29.92 GiB (float32) + KV 2.00 GiB at 8,192 tokens = 31.92 GiB" in dialog.detail.text()
    dialog.tree.setCurrentItem(dialog.tree.topLevelItem(3))
    assert "pickle weights only" in dialog.detail.text()
    dialog.tree.setCurrentItem(dialog.tree.topLevelItem(0))
    # auto opens it at what fits: the plan says so in its own words, not "the chosen context"
    assert "\nPlan: fits with context 5,301 (5,301 of 8,192 tokens) on cpu: " in dialog.detail.text()
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
    chosen = dialog.add_path(tiny_model_dir / "config.json")  # what the file picker returns
    assert chosen.path == tiny_model_dir and chosen.origins == ("chosen",)
    assert rows(dialog)[0][:2] == [tiny_model_dir.name, "chosen"]
    assert dialog.current_candidate() == chosen
    qtbot.waitUntil(lambda: dialog.current_entry() is not None)
    assert dialog.current_entry().path == tiny_model_dir and rows(dialog)[0][4] == "● fits"
    dialog.reject()


class FakeFolders:
    """FileFolders' two calls: the start folder asked for and each folder remembered."""

    def __init__(self, start: Path):
        self.started, self.remembered, self._start = [], [], start

    def start(self, kind):
        self.started.append(kind)
        return self._start

    def remember(self, kind, picked):
        self.remembered.append((kind, Path(picked)))


def test_a_model_folder_can_be_picked_as_a_folder_or_by_a_file_inside_it(qtbot, monkeypatch, tmp_path,
                                                                         tiny_model_dir, real_model_path):
    """Product trial: the picker took files only, while a transformers model is a folder."""
    import shutil

    from PySide6.QtWidgets import QFileDialog

    models = tmp_path / "models"
    folder = shutil.copytree(tiny_model_dir, models / "tiny-llama")
    folders = FakeFolders(models)
    dialog = standalone(qtbot, tiny_catalog(tmp_path, tiny_model_dir), folders=folders)
    qtbot.waitUntil(lambda: not dialog.reading(), timeout=30000)
    asked = []
    monkeypatch.setattr(QFileDialog, "getExistingDirectory",
                        lambda _parent, _title, start: (asked.append(start), str(folder))[1])
    qtbot.mouseClick(dialog.folder_button, Qt.MouseButton.LeftButton)
    assert asked == [str(models)] and folders.started == ["model"]
    assert dialog.current_candidate().path == folder and rows(dialog)[0][:2] == ["tiny-llama", "chosen"]
    assert folders.remembered == [("model", models)]  # next time: where its sibling models are
    qtbot.waitUntil(lambda: dialog.current_entry() is not None, timeout=30000)
    assert rows(dialog)[0][4] == "● fits" and dialog.open_button.isEnabled()

    weights = next(folder.glob("*.safetensors"))
    for picked, listed in ((weights, folder), (folder / "config.json", folder), (real_model_path, real_model_path)):
        monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *_a, p=picked: (str(p), ""))
        qtbot.mouseClick(dialog.file_button, Qt.MouseButton.LeftButton)
        assert dialog.current_candidate().path == listed  # a file inside a model folder: that folder
    assert folders.remembered[-1] == ("model", real_model_path.parent)  # a GGUF's own folder
    qtbot.waitUntil(lambda: not dialog.reading(), timeout=30000)
    dialog.reject()


def test_a_picked_file_or_folder_that_is_no_model_says_why_and_cannot_be_opened(qtbot, monkeypatch, tmp_path,
                                                                               tiny_model_dir):
    from PySide6.QtWidgets import QFileDialog

    from app.ui.open_model_dialog import model_path_for

    weights_only = tmp_path / "weights-only"
    weights_only.mkdir()
    (weights_only / "model.safetensors").write_bytes(b"\0" * 64)
    dialog = standalone(qtbot, tiny_catalog(tmp_path, tiny_model_dir))
    qtbot.waitUntil(lambda: not dialog.reading(), timeout=30000)
    for picked, why in ((weights_only / "model.safetensors", "There is no config.json next to this file"),
                        (weights_only, "This folder has no config.json.")):
        assert model_path_for(picked) == picked  # no config.json beside it: kept as picked, refused
        monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *_a, p=picked: str(p))
        monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *_a, p=picked: (str(p), ""))
        qtbot.mouseClick(dialog.folder_button if picked.is_dir() else dialog.file_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: dialog.current_entry() is not None, timeout=30000)
        assert rows(dialog)[0][4] == "✕ cannot open" and not dialog.open_button.isEnabled()
        assert why in dialog.detail.text()
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *_a: "")  # cancelled: nothing changes
    qtbot.mouseClick(dialog.folder_button, Qt.MouseButton.LeftButton)
    assert dialog.current_candidate().path == weights_only
    dialog.reject()


def test_nothing_found_says_how_to_pick_a_model(qtbot, tmp_path):
    from app.core.settings import Settings

    def placement_for(already_quantized):
        return choose_placement(False, None, False, (False, "no CUDA"), already_quantized)

    catalog = Catalog(MachineMemory("cpu", 8 * GiB, 16 * GiB), placement_for, cache_dir=tmp_path / "none")
    dialog = OpenModelDialog(catalog, Settings(), default_path=tmp_path / "not-installed.gguf")
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitUntil(lambda: not dialog.reading())
    assert dialog.entries() == []
    assert dialog.empty.isVisible() and not dialog.tree.isVisible()
    assert "Model file…" in dialog.empty.text() and "Model folder…" in dialog.empty.text()
    assert not dialog.open_button.isEnabled() and not dialog.allow_pickle.isEnabled()


# ----- plans off the GUI thread, refusals, context per model ------------------------------------
def tiny_catalog(tmp_path, tiny_model_dir) -> Catalog:
    """A CPU machine with 8 GiB free whose HF cache holds the tiny model only."""
    def placement_for(already_quantized):
        return choose_placement(False, None, False, (False, "no CUDA"), already_quantized)

    cache = tmp_path / "hub"
    add_folder(cache, "HuggingFaceTB/tiny-llama", tiny_model_dir)
    return Catalog(MachineMemory("cpu", 8 * GiB, 16 * GiB), placement_for, cache_dir=cache)


def standalone(qtbot, catalog, settings=None, **kwargs) -> OpenModelDialog:
    from app.core.settings import Settings

    dialog = OpenModelDialog(catalog, settings or Settings(), default_path=Path("/no/default.gguf"), **kwargs)
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def test_in_korean_the_fit_lines_speak_korean(qtbot, tmp_path, tiny_model_dir, real_model_path, korean):
    """The engine's fit data said in the window's language: the machine, the fit, the plan, the
    notes and a refusal; only units, dtype and format names stay as they are."""
    import re

    from app.core.settings import Settings
    from app.ui.fonts import install_hangul_fallback

    install_hangul_fallback(QApplication.instance())  # as the app does at start: Hangul, not boxes
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model" * 40)
    dialog = standalone(qtbot, tiny_catalog(tmp_path, tiny_model_dir),
                        Settings(recent_models=(str(real_model_path), str(broken))))
    qtbot.waitUntil(lambda: not dialog.reading() and dialog.tree.topLevelItemCount() == 3, timeout=30000)
    machine = dialog.findChild(type(dialog.detail), "openModelMachine").text()
    assert machine == "이 컴퓨터: 16.00 GiB 중 8.00 GiB RAM 사용 가능 (CPU)"
    allowed = {"GiB", "MiB", "KiB", "RAM", "CPU", "cpu", "GGUF", "float32", "trust_remote_code",
               "gguf", "config", "json"}  # file names: ".gguf", "config.json"

    def english(text: str) -> set[str]:
        return set(re.findall(r"[A-Za-z_]{3,}\d*", text)) - allowed

    names = {row[0]: i for i, row in enumerate(rows(dialog))}
    dialog.tree.setCurrentItem(dialog.tree.topLevelItem(names[real_model_path.name]))
    path, fit, plan, note = dialog.detail.text().splitlines()
    assert path == str(real_model_path)
    assert fit.startswith("들어감: 가중치 513 MiB (float32) + KV ") and "토큰" in fit and not english(fit)
    assert plan.startswith("계획: 전체 컨텍스트에서 들어감 (8,192 / 8,192 토큰), cpu: ") and not english(plan)
    assert note == "참고: GGUF Q4_1." and dialog.tree.topLevelItem(names[real_model_path.name]).text(4) == "● 들어감"
    tip = dialog.tree.topLevelItem(names[real_model_path.name]).toolTip(0)
    assert not english(tip.replace(str(real_model_path), ""))
    folder = os.environ.get("HEADROOM_SCREENSHOT_DIR")
    if folder:
        qtbot.wait(20)  # the layout settles as a person would see it
        dialog.grab().save(str(Path(folder) / "ko-open-model-light.png"))
    dialog.context.custom.click()  # a custom context: the plan line speaks of it (trial 5)
    dialog.context.tokens.setValue(4096)
    qtbot.waitUntil(lambda: not dialog.reading(), timeout=30000)
    plan = dialog.detail.text().splitlines()[2]
    assert plan.startswith("계획: 선택한 컨텍스트에서 들어감 (4,096 / 8,192 토큰), cpu: ") and not english(plan)
    if folder:
        qtbot.wait(20)
        dialog.grab().save(str(Path(folder) / "ko-open-model-custom-light.png"))
    dialog.tree.setCurrentItem(dialog.tree.topLevelItem(names["broken.gguf"]))
    refusal = dialog.detail.text().splitlines()[1]
    assert refusal == dialog.open_button.toolTip() and "GGUF" in refusal and not english(refusal)


class Gate:
    """Catalog.describe_candidate held until released, call by call; records the thread of each."""

    def __init__(self, monkeypatch):
        import threading

        self.threads, self.contexts, self._gates = [], [], [threading.Event() for _ in range(8)]
        describe = Catalog.describe_candidate

        def held(catalog, candidate, context_setting=None):
            call = len(self.threads)
            self.threads.append(threading.get_ident())
            self.contexts.append(context_setting)
            self._gates[call].wait(30)
            return describe(catalog, candidate, context_setting)

        monkeypatch.setattr(Catalog, "describe_candidate", held)

    def release(self, call: int) -> None:
        self._gates[call].set()

    def release_all(self) -> None:
        for gate in self._gates:
            gate.set()


def test_plans_are_read_off_the_gui_thread_while_rows_say_reading(qtbot, monkeypatch, tmp_path, tiny_model_dir):
    import threading

    gate = Gate(monkeypatch)
    dialog = standalone(qtbot, tiny_catalog(tmp_path, tiny_model_dir))
    qtbot.waitUntil(lambda: dialog.tree.topLevelItemCount() == 1 and len(gate.threads) == 1)
    ticks = []
    from PySide6.QtCore import QTimer

    QTimer.singleShot(0, lambda: ticks.append(1))
    qtbot.waitUntil(lambda: ticks == [1])  # the event loop runs while the plan is being read
    assert rows(dialog) == [["HuggingFaceTB/tiny-llama", "HF cache", gib(folder_disk_bytes(tiny_model_dir)),
                             "…", "reading…"]]
    assert dialog.reading() and dialog.current_entry() is None
    assert "Reading the model's header" in dialog.detail.text() and dialog.open_button.isEnabled()
    assert gate.threads[0] != threading.get_ident()
    gate.release_all()
    qtbot.waitUntil(lambda: not dialog.reading())
    assert rows(dialog)[0][3:] == ["13 MiB", "● fits"]
    assert dialog.context.auto.text() == "Auto: fits 512 tokens"  # the tiny model's whole context


def test_an_answer_for_a_row_that_changed_is_dropped(qtbot, monkeypatch, tmp_path, tiny_model_dir):
    gate = Gate(monkeypatch)
    dialog = standalone(qtbot, tiny_catalog(tmp_path, tiny_model_dir))
    qtbot.waitUntil(lambda: len(gate.threads) == 1)
    snapshot = dialog.current_candidate().path
    dialog.add_path(snapshot)  # browsed to while its plan is read: the row is replaced, asked again
    with qtbot.waitSignal(dialog._jobs.job_finished):  # the first answer, for the replaced row
        gate.release(0)
    qtbot.wait(50)
    assert rows(dialog)[0][1:] == ["chosen", "…", "…", "reading…"] and dialog.entries() == []
    gate.release(1)
    qtbot.waitUntil(lambda: not dialog.reading())
    assert rows(dialog)[0][3:] == ["13 MiB", "● fits"] and len(gate.threads) == 2
    assert [e.origins for e in dialog.entries()] == [("chosen",)]


def test_a_file_that_cannot_be_opened_keeps_open_disabled_and_says_why(qtbot, tmp_path, tiny_model_dir):
    dialog = standalone(qtbot, tiny_catalog(tmp_path, tiny_model_dir))
    qtbot.waitUntil(lambda: not dialog.reading())
    chosen = []
    dialog.model_chosen.connect(lambda *args: chosen.append(args))
    broken = tmp_path / "notes.gguf"
    broken.write_bytes(b"these are my notes, not a model" * 10)
    dialog.add_path(broken)
    qtbot.waitUntil(lambda: not dialog.reading())
    assert rows(dialog)[0][0] == "notes.gguf" and rows(dialog)[0][4] == "✕ cannot open"
    assert not dialog.open_button.isEnabled()
    # trial 9: a text file renamed .gguf was "damaged; download it again"
    said = ("This file is not a GGUF file (it does not start with GGUF's magic bytes). Pick a .gguf model file, or "
            "a model folder with a config.json.")
    assert dialog.open_button.toolTip() == said
    assert dialog.detail.text().splitlines()[1:] == [said]  # under the path, in plain words
    double_click(qtbot, dialog, 0)
    assert chosen == [] and dialog.isVisible()
    dialog.tree.setCurrentItem(dialog.tree.topLevelItem(1))  # the tiny model still opens
    assert dialog.open_button.isEnabled()
    dialog.open_button.click()
    assert chosen and chosen[0][0] == str(dialog.entries()[1].path) and chosen[0][2] == 0


def test_a_cut_safetensors_folder_is_listed_as_damaged_and_cannot_be_opened(qtbot, tmp_path, tiny_model_dir):
    """New-user trial: a working folder whose model.safetensors was cut short (`truncate -s`) was
    listed as "● fits", and opening it failed with "(SafetensorError)". It is listed as damaged,
    in the words a damaged GGUF gets, with the file named, and Open stays off."""
    import shutil

    dialog = standalone(qtbot, tiny_catalog(tmp_path, tiny_model_dir))
    qtbot.waitUntil(lambda: not dialog.reading())
    cut = tmp_path / "cut-model"
    shutil.copytree(tiny_model_dir, cut)
    with open(cut / "model.safetensors", "r+b") as file:
        file.truncate((cut / "model.safetensors").stat().st_size // 2)
    dialog.add_path(cut)
    qtbot.waitUntil(lambda: not dialog.reading())
    assert rows(dialog)[0][0] == "cut-model" and rows(dialog)[0][4] == "✕ damaged"
    assert rows(dialog)[1][4] == "● fits"  # the whole folder it was copied from
    said = ("The weights file model.safetensors could not be read. "
            "The file may be incomplete or damaged; download it again.")
    assert not dialog.open_button.isEnabled() and dialog.open_button.toolTip() == said
    assert dialog.detail.text().splitlines()[1:] == [said]


@pytest.mark.parametrize("files, said", [
    ({"config.json": "tiny"}, "This model folder has no weights files (.safetensors or .bin). The download may be "
                              "incomplete; download the model again, or pick another folder."),
    ({"config.json": "{not json", "model.safetensors": ""},
     "The config.json of this model folder could not be read. It may be incomplete or damaged; download the model "
     "again, or fix its config.json."),
])
def test_a_folder_the_loader_would_refuse_keeps_open_disabled_and_says_why(qtbot, tmp_path, tiny_model_dir,
                                                                            files, said):
    """Trial 9: a folder with only config.json was listed as "● fits", one whose config.json is not
    JSON as "Memory fit not known", with Open enabled; Open then failed "no weights files"."""
    folder = tmp_path / "half-model"
    folder.mkdir()
    for name, text in files.items():
        text = (tiny_model_dir / "config.json").read_text() if text == "tiny" else text
        (folder / name).write_text(text, encoding="utf-8")
    dialog = standalone(qtbot, tiny_catalog(tmp_path, tiny_model_dir))
    qtbot.waitUntil(lambda: not dialog.reading())
    dialog.add_path(folder)
    qtbot.waitUntil(lambda: not dialog.reading())
    assert rows(dialog)[0][0] == "half-model" and rows(dialog)[0][4] == "✕ cannot open"
    assert rows(dialog)[0][3] == "—"  # no need from its config's defaults (re-trial: "873 MiB")
    assert not dialog.open_button.isEnabled() and dialog.open_button.toolTip() == said
    assert dialog.detail.text().splitlines()[1:] == [said]


def test_the_default_models_damaged_file_says_to_run_install_model(qtbot, tmp_path, tiny_model_dir, monkeypatch):
    """Trial 9: the default model cut short in its usual place said "download it again", and not
    how; `python -m app.install_model` finds and repairs it."""
    from app.core.paths import default_model_path
    from tests.helpers.tiny_gguf import write_tiny_gguf

    monkeypatch.setenv("HEADROOM_DATA_DIR", str(tmp_path / "data"))
    default = default_model_path()
    default.parent.mkdir(parents=True)
    write_tiny_gguf(default, "Q8_0")
    with open(default, "r+b") as file:
        file.truncate(default.stat().st_size // 2)
    dialog = standalone(qtbot, tiny_catalog(tmp_path, tiny_model_dir))
    qtbot.waitUntil(lambda: not dialog.reading())
    dialog.add_path(default)
    qtbot.waitUntil(lambda: not dialog.reading())
    said = "This GGUF file is cut short: it has 59 KiB of the 118 KiB its header lists. This is the default model: " \
           "run `python -m app.install_model`, which installs it again."
    assert rows(dialog)[0][4] == "✕ damaged" and dialog.detail.text().splitlines()[1:] == [said]
    assert "download it again" not in dialog.tree.topLevelItem(0).toolTip(0)


def test_in_korean_a_damaged_folder_says_so_in_korean(qtbot, tmp_path, tiny_model_dir, korean):
    import shutil

    cut = tmp_path / "cut-model"
    shutil.copytree(tiny_model_dir, cut)
    with open(cut / "model.safetensors", "r+b") as file:
        file.truncate(100)  # inside its header
    dialog = standalone(qtbot, tiny_catalog(tmp_path, tiny_model_dir))
    dialog.add_path(cut)
    qtbot.waitUntil(lambda: not dialog.reading() and dialog.tree.topLevelItemCount() == 2)
    assert rows(dialog)[0][4] == "✕ 손상됨"
    assert dialog.detail.text().splitlines()[1:] == [
        "가중치 파일(model.safetensors)을 읽지 못했습니다. "
        "파일이 불완전하거나 손상되었을 수 있습니다. 다시 내려받으세요."]


def test_a_context_that_cannot_hold_max_new_tokens_is_warned_about(qtbot, tmp_path, tiny_model_dir):
    """New-user trial: a custom 2,048 context with the Code preset's 2,048 max new tokens left no room,
    and nothing said so before the first turn was refused."""
    from app.core.settings import GenerationSettings, Settings

    settings = Settings(GenerationSettings(max_new_tokens=300))
    dialog = standalone(qtbot, tiny_catalog(tmp_path, tiny_model_dir), settings)
    qtbot.waitUntil(lambda: not dialog.reading())
    assert dialog.context.note.text() == (
        "Trained for 512 tokens. The plan fits 512 here. Max new tokens (300) leaves the conversation 212 of "
        "these 512 tokens: lower it in Settings, or choose a larger context.")
    dialog.context.custom.click()
    dialog.context.tokens.setValue(384)
    qtbot.waitUntil(lambda: not dialog.reading())  # the fit at 384 tokens
    assert "leaves the conversation 84 of these 384 tokens" in dialog.context.note.text()
    dialog.context.set_max_new_tokens(128)  # half of 384 or less: room enough, no warning
    assert dialog.context.note.text() == "Trained for 512 tokens. The plan fits 512 here."


def test_a_custom_context_resizes_the_kv_need_and_goes_with_the_model(qtbot, tmp_path, tiny_model_dir):
    dialog = standalone(qtbot, tiny_catalog(tmp_path, tiny_model_dir))
    qtbot.waitUntil(lambda: not dialog.reading())
    full = dialog.current_entry()
    assert full.fit.context_tokens == 512 and not dialog.context.tokens.isEnabled()
    assert dialog.detail.text().splitlines()[2].startswith("Plan: fits at full context (512 of 512 tokens) on cpu: ")
    dialog.context.custom.click()
    dialog.context.tokens.setValue(384)
    assert dialog.context.tokens.isEnabled() and dialog.context.tokens.maximum() == 512
    qtbot.waitUntil(lambda: not dialog.reading())
    capped = dialog.current_entry()
    assert capped.fit.context_tokens == 384
    # trial 5: the plan line spoke of the full context while the fit line used the chosen one
    fit, plan = dialog.detail.text().splitlines()[1:3]
    assert " at 384 tokens = " in fit
    assert plan.startswith("Plan: fits at the chosen context (384 of 512 tokens) on cpu: ")
    assert "(384 of 512 tokens)" in dialog.tree.currentItem().toolTip(0)
    assert full.fit.needed - capped.fit.needed == 128 * full.plan.kv_bytes_per_token
    assert dialog.context.note.text() == (  # the default 512 max new tokens fill a 384-token context
        "Trained for 512 tokens. The plan fits 512 here. Max new tokens (512) leaves the conversation 0 of these "
        "384 tokens: lower it in Settings, or choose a larger context.")
    with qtbot.waitSignal(dialog.model_chosen) as chosen:
        dialog.open_button.click()
    assert chosen.args[0] == str(full.path) and chosen.args[2] == 384


def test_the_models_context_applies_when_it_opens(qtbot, make_window, machine_cache):
    window = make_window(max_new_tokens=64)
    dialog = open_dialog(qtbot, window)
    dialog.tree.setCurrentItem(dialog.tree.topLevelItem(1))  # the tiny model, 512 trained tokens
    dialog.context.custom.click()
    dialog.context.tokens.setValue(384)
    with qtbot.waitSignal(window.model_ready, timeout=60000):
        dialog.open_button.click()
    tiny = machine_cache["tiny"]
    assert window.chat.settings.own_context(tiny) == 384
    with qtbot.waitSignal(window.turn_finished, timeout=60000):
        window.chat.turns.send("Hello")
    # prompt budget = 384 context − 64 new tokens − 48 summary reserve (1/8 of the context)
    assert "/ 272 tokens in context" in window.token_meter.text()

    dialog = open_dialog(qtbot, window)  # back to auto: the whole 512 that fit here
    dialog.tree.setCurrentItem(dialog.tree.topLevelItem(0))
    assert dialog.current_entry().path == tiny and dialog.context.custom.isChecked()
    dialog.context.auto.click()
    with qtbot.waitSignal(window.model_ready, timeout=60000):
        dialog.open_button.click()
    assert window.chat.settings.own_context(tiny) == 0
    with qtbot.waitSignal(window.turn_finished, timeout=60000):
        window.chat.turns.send("Hello again")
    assert "/ 384 tokens in context" in window.token_meter.text()  # 512 − 64 − 64


LLAMA_1B_128K = LlamaConfig(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                            num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=131072,
                            tie_word_embeddings=True, architectures=["LlamaForCausalLM"])


@pytest.mark.parametrize("palette", ["light", "dark"])
def test_a_context_above_what_fits_is_said_beside_the_choice(qtbot, qapp, tmp_path, palette):
    """A 1B model trained for 128k tokens on 8 GiB free: the plan fits part of it; a custom context
    above that is allowed (the user's call) and the note says what happens. Screenshots in both
    palettes (kept in $HEADROOM_SCREENSHOT_DIR when set)."""
    import os

    from PySide6.QtWidgets import QStyleFactory

    from app.core.settings import Settings
    from app.ui.theme import stylesheet
    from tests.ui.test_theme import PALETTES

    cache = tmp_path / "hub"
    add_repo(cache, "meta-llama/Llama-3.2-1B-Instruct", {"config.json": config_bytes(LLAMA_1B_128K),
                                                         "model.safetensors": 2_471_645_608})
    broken = tmp_path / "half-downloaded.gguf"
    broken.write_bytes(b"\0" * 4096)

    def placement_for(already_quantized):
        return choose_placement(False, None, False, (False, "no CUDA"), already_quantized)

    # 7 GiB: 8-bit KV fits more than 16-bit but not the whole 128k (124,068 against 31,587 tokens)
    catalog = Catalog(MachineMemory("cpu", 7 * GiB, 16 * GiB), placement_for, cache_dir=cache)
    old = qapp.style().name(), qapp.palette(), qapp.styleSheet()
    qapp.setStyle(QStyleFactory.create("Fusion"))
    qapp.setPalette(PALETTES[palette]())
    qapp.setStyleSheet(stylesheet(qapp.palette()))
    try:
        dialog = standalone(qtbot, catalog, Settings(recent_models=(str(broken),)))
        qtbot.waitUntil(lambda: not dialog.reading())
        fit_column = [r[4] for r in rows(dialog)]
        assert fit_column[0] == "✕ cannot open" and fit_column[1].startswith("● fits with context ")
        dialog.tree.setCurrentItem(dialog.tree.topLevelItem(1))
        plan = dialog.current_entry().plan
        assert plan.verdict == "fits with context" and 256 < plan.context_fit < 131072
        fits = f"{plan.context_fit:,}"
        assert dialog.context.auto.text() == f"Auto: fits {fits} tokens"
        dialog.context.custom.click()
        dialog.context.tokens.setValue(65536)
        assert plan.context_fit < plan.context_fit_kv8 < 131072  # 8-bit KV: more fits (issue 16)
        assert dialog.context.note.text() == (
            f"Trained for 131,072 tokens. The plan fits {fits} here. With an 8-bit KV cache (chosen per chat) "
            f"{plan.context_fit_kv8:,} fit. A turn that fills more than {fits} "
            "tokens will be refused for memory (or sent anyway at your risk).")
        qtbot.waitUntil(lambda: not dialog.reading())
        assert dialog.current_entry().fit.context_tokens == 65536
        assert dialog.detail.text().splitlines()[2].startswith(
            f"Plan: the chosen 65,536 tokens do not fit ({fits} of 131,072 tokens fit) on cpu: ")
        folder = Path(os.environ.get("HEADROOM_SCREENSHOT_DIR") or tmp_path)
        folder.mkdir(parents=True, exist_ok=True)
        qtbot.wait(20)  # the layout settles as a person would see it
        dialog.grab().save(str(folder / f"open-model-{palette}.png"))
        dialog.tree.setCurrentItem(dialog.tree.topLevelItem(0))
        assert not dialog.open_button.isEnabled() and not dialog.context.isEnabled()
        qtbot.wait(20)
        dialog.grab().save(str(folder / f"open-model-refused-{palette}.png"))
    finally:
        qapp.setStyleSheet(old[2])
        qapp.setPalette(old[1])
        qapp.setStyle(old[0])


@pytest.mark.parametrize("palette", ["light", "dark"])
def test_the_model_file_pickers_size_and_date_columns_fit_their_text(qtbot, qapp, tmp_path, tiny_model_dir,
                                                                     palette):
    """Trial 5: "Model file…" showed "93.…MiB" in Qt's own file dialog: Qt sizes its Size column
    for "128.88 GB" and restores the widths the last dialog closed with. The column is widened to
    its content as the dialog shows, whatever was restored (a narrow one is saved first here)."""
    import os

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QFileDialog, QTreeView

    from tests.helpers.palettes import fusion_palette

    models = tmp_path / "models"
    models.mkdir()
    for name, size in (("SmolLM2-135M-Instruct.Q4_1.gguf", 98_000_000), ("qwen2.5-0.5b-q8_0.gguf", 537_000_000),
                       ("Meta-Llama-3-8B-Instruct.F16.gguf", 16_060_522_496)):
        with open(models / name, "wb") as file:
            file.truncate(size)  # sparse: only the size is read
    seen = []

    def look_and_close(narrow: bool):
        dialog = next((d for d in dialog_owner.findChildren(QFileDialog) if d.isVisible()), None)
        if dialog is None:
            return
        dialog.setViewMode(QFileDialog.ViewMode.Detail)
        tree = dialog.findChild(QTreeView)
        if tree.model().rowCount(tree.rootIndex()) < 3 and len(seen) < 50:
            seen.append(None)
            return
        header = tree.header()
        if narrow:  # as a dialog closed with a narrow Size column: Qt saves it and restores it next time
            header.resizeSection(1, 30)
            header.resizeSection(3, 40)
        else:
            seen.append({c: (header.sectionSize(c), tree.sizeHintForColumn(c)) for c in (1, 3)})
            folder = Path(os.environ.get("HEADROOM_SCREENSHOT_DIR") or tmp_path)
            dialog.grab().save(str(folder / f"model-file-picker-{palette}.png"))
        dialog.reject()

    with fusion_palette(qapp, palette):
        dialog_owner = standalone(qtbot, tiny_catalog(tmp_path, tiny_model_dir), folders=FakeFolders(models))
        for narrow in (True, False):
            timer = QTimer()
            timer.timeout.connect(lambda narrow=narrow: look_and_close(narrow))
            timer.start(100)
            try:
                dialog_owner.file_button.click()  # modal until look_and_close rejects it
            finally:
                timer.stop()
    widths = seen[-1]
    assert widths[1][1] > 30 and widths[3][1] > 40  # the content needs more than was restored
    for column, (width, needed) in widths.items():
        assert width >= needed, (column, width, needed)


def test_enter_after_the_list_arrives_opens_the_selected_model_not_a_picker(qtbot, tmp_path, tiny_model_dir,
                                                                            monkeypatch):
    """Third new-user trial: Ctrl+O, then Enter, opened the "Model file…" picker: the list was
    hidden until read, so the first focus and the default button were that picker's."""
    from PySide6.QtWidgets import QFileDialog

    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *_a, **_k: pytest.fail("a file picker opened"))
    dialog = standalone(qtbot, tiny_catalog(tmp_path, tiny_model_dir))
    qtbot.waitUntil(lambda: not dialog.reading(), timeout=30000)
    assert dialog.open_button.isDefault() and not dialog.file_button.autoDefault()
    assert dialog.focusWidget() is dialog.tree and dialog.open_button.isEnabled()
    with qtbot.waitSignal(dialog.accepted, timeout=5000):
        qtbot.keyClick(dialog.focusWidget(), Qt.Key.Key_Return)
