"""The preset combo above the composer and the Presets dialog (issue 17, item 2)."""

from PySide6.QtCore import Qt

from app.core.presets import BUILTIN_PRESETS, Preset
from app.ui.chat_bar import ChatBar
from app.ui.presets_dialog import PresetsDialog

MINE = Preset("Pirate", {"temperature": 0.33, "system_prompt": "Talk like a pirate."}, "Arr.")


def test_the_combo_offers_every_preset_and_manage(qtbot):
    bar = ChatBar()
    qtbot.addWidget(bar)
    bar.set_presets([*BUILTIN_PRESETS, MINE], "")
    combo = bar.preset_combo
    texts = [combo.itemText(i) for i in range(combo.count())]
    assert texts[0] == "Custom settings" and combo.currentIndex() == 0
    assert texts[1:7] == ["Balanced", "Precise", "Creative", "Code", "한국어 도우미", "Pirate"]
    assert texts[-1] == "Manage presets…"
    with qtbot.waitSignal(bar.preset_chosen) as blocker:
        combo.activated.emit(combo.findData("Pirate"))
    assert blocker.args == ["Pirate"]
    bar.set_presets([*BUILTIN_PRESETS, MINE], "Pirate")
    assert combo.currentText() == "Pirate" and combo.findText("Custom settings") == -1
    with qtbot.waitSignal(bar.presets_requested):
        combo.activated.emit(combo.count() - 1)
    assert combo.currentText() == "Pirate"  # "Manage presets…" is not a pick
    with qtbot.assertNotEmitted(bar.preset_chosen):
        combo.activated.emit(combo.findData("Pirate"))  # already the chat's


def test_the_dialog_lists_describes_and_sends_commands(qtbot, tmp_path, monkeypatch):
    dialog = PresetsDialog([*BUILTIN_PRESETS, MINE], "Precise")
    qtbot.addWidget(dialog)
    assert dialog.selected() == "Precise" and "✓" in dialog.list.currentItem().text()
    assert "Nearly greedy" in dialog.description.text()
    assert "Temperature 0.2 · Top-p 1.0 · Top-k 20 · Min-p 0.1 · Repetition penalty 1.0" in dialog.description.text()
    assert not dialog.delete_button.isEnabled()  # a built-in
    dialog.list.setCurrentRow(5)
    assert dialog.selected() == "Pirate" and dialog.delete_button.isEnabled()
    assert "“Talk like a pirate.”" in dialog.description.text()
    with qtbot.waitSignal(dialog.apply_requested) as blocker:
        qtbot.mouseClick(dialog.apply_button, Qt.MouseButton.LeftButton)
    assert blocker.args == ["Pirate"]
    with qtbot.waitSignal(dialog.delete_requested) as blocker:
        qtbot.mouseClick(dialog.delete_button, Qt.MouseButton.LeftButton)
    assert blocker.args == ["Pirate"]
    from PySide6.QtWidgets import QFileDialog, QInputDialog

    monkeypatch.setattr(QInputDialog, "getText", lambda *a, **k: ("  Mine  ", True))
    with qtbot.waitSignal(dialog.save_requested) as blocker:
        qtbot.mouseClick(dialog.save_button, Qt.MouseButton.LeftButton)
    assert blocker.args == ["Mine"]
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(tmp_path / "p.json"), ""))
    with qtbot.waitSignal(dialog.export_requested) as blocker:
        qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    assert blocker.args == [str(tmp_path / "p.json"), ["Pirate"]]
    dialog.set_presets(list(BUILTIN_PRESETS), "Pirate")  # removed: the list follows the library
    assert dialog.list.count() == len(BUILTIN_PRESETS)


def test_a_fresh_install_shows_the_preset_its_defaults_are(qtbot, make_window, tmp_path):
    """Trial 8: with no settings file the combo said "Custom settings", though the defaults are
    Balanced's values; a value changed by hand is custom again, and a stored chat whose settings
    are a preset's shows that preset too."""
    from dataclasses import replace

    from app.core.settings import Settings
    from tests.ui.test_chat_switch_states import shot

    window = make_window(settings=Settings())  # what load_settings gives without a file
    window.resize(1000, 640)
    combo, chat = window.chat_bar.preset_combo, window.chat
    assert combo.currentText() == "Balanced" and combo.findText("Custom settings") == -1
    shot(qtbot, window, tmp_path, "fresh-install-preset")

    chat.settings = replace(chat.settings, generation=replace(chat.settings.generation, temperature=0.3))
    chat.presets.settings_edited()  # what Edit → Settings does after OK
    assert combo.currentText() == "Custom settings" and combo.currentIndex() == 0

    chat.settings = replace(chat.settings, generation=replace(chat.settings.generation, temperature=0.7))
    chat.presets.settings_edited()  # put back by hand: the values are Balanced's again
    assert combo.currentText() == "Balanced"
    window.chat_bar.preset_combo.activated.emit(combo.findData("Precise"))
    assert combo.currentText() == "Precise" and chat.preset_name == "Precise"


def test_a_user_preset_is_not_guessed_from_settings_it_happens_to_match(qtbot, make_window):
    """Only a built-in is recognised in settings never given a preset: a user preset that sets
    just a few fields would match most settings and say more than the user chose."""
    from app.core.presets import PresetLibrary
    from app.core.settings import GenerationSettings, Settings

    window = make_window(settings=Settings(GenerationSettings(temperature=0.33)))
    chat = window.chat
    chat.presets.library = PresetLibrary((Preset("Cool", {"temperature": 0.33}),))
    chat.presets.show_presets()
    assert window.chat_bar.preset_combo.currentText() == "Custom settings"


def test_a_huge_system_prompt_is_described_by_its_start_and_the_dialog_keeps_its_size(qtbot):
    """New-user trial: an imported prompt of 200,000 characters without a space hung the dialog
    21 s and made it 1.4 million pixels wide."""
    from app.ui.presets_dialog import PROMPT_SHOWN_CHARS

    huge = Preset("Wall", {"system_prompt": "x" * 200_000}, "")
    dialog = PresetsDialog([*BUILTIN_PRESETS, huge], "")
    qtbot.addWidget(dialog)
    dialog.list.setCurrentRow(len(BUILTIN_PRESETS))
    assert dialog.selected() == "Wall"
    shown = dialog.description.text().replace("\u200b", "")
    assert shown == f"“{'x' * PROMPT_SHOWN_CHARS}…”"
    dialog.show()
    assert dialog.width() < 1200 and dialog.description.sizeHint().width() < 1200


def test_a_presets_settings_are_named_in_the_windows_language(qtbot, korean):
    """Trial 4: "temperature 0.7 · top p 0.95 · …" stayed English in the Korean window."""
    dialog = PresetsDialog(list(BUILTIN_PRESETS), "Balanced")
    qtbot.addWidget(dialog)
    assert "온도 0.7 · Top-p 0.95 · Top-k 0 · Min-p 0.0 · 반복 페널티 1.0" in dialog.description.text()


def test_the_same_presets_again_only_move_the_pick(qtbot):
    """Every chat opened offers the library again: 20,000 presets took 0.1 s to re-add."""
    bar = ChatBar()
    qtbot.addWidget(bar)
    presets = [*BUILTIN_PRESETS, MINE]
    bar.set_presets(presets, "Precise")
    combo = bar.preset_combo
    count = combo.count()
    bar.set_presets(list(presets), "Pirate")  # the same objects in a new list
    assert combo.currentText() == "Pirate" and combo.count() == count
    bar.set_presets(list(presets), "")  # the chat's own settings: "Custom settings" comes back
    assert combo.currentText() == "Custom settings" and combo.count() == count + 1
    renamed = Preset("Pirate 2", MINE.values, MINE.description)
    bar.set_presets([*BUILTIN_PRESETS, renamed], "Pirate 2")  # a changed library is drawn anew
    assert combo.currentText() == "Pirate 2" and combo.findText("Pirate") == -1
