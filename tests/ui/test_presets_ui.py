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
    assert "Nearly greedy" in dialog.description.text() and "top k 20" in dialog.description.text()
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
