"""The Settings dialog edits what it shows and keeps every other setting as it was."""

import os
from pathlib import Path

import pytest
from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import QFocusEvent
from PySide6.QtWidgets import QApplication, QDialogButtonBox, QWidget

from app.core.backend_settings import BackendSettings
from app.core.settings import (
    MAX_CONTEXT_TOKENS,
    MAX_KEEP_TURNS,
    MAX_NEW_TOKENS,
    MAX_SEED,
    MAX_TOP_K,
    GenerationSettings,
    Settings,
    load_settings,
)
from app.ui.fonts import install_hangul_fallback
from app.ui.settings_dialog import SettingsDialog
from tests.helpers.palettes import fusion_palette


def test_fields_without_a_control_are_kept_and_samplers_round_trip(qtbot, monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 8)  # 3 threads are allowed on any machine here
    before = GenerationSettings(top_k=40, min_p=0.05, repetition_penalty=1.1, seed=7, cpu_threads=3,
                                presence_penalty=0.5, frequency_penalty=-0.25)
    dialog = SettingsDialog(before, language="ko")
    qtbot.addWidget(dialog)
    assert dialog.result_settings() == before.validated()  # nothing edited: nothing changes
    assert dialog.result_language() == "ko"
    dialog.top_k.setValue(0)
    dialog.seed.setValue(-1)
    after = dialog.result_settings()
    assert (after.top_k, after.seed) == (0, None)  # "off" and "random"
    assert (after.presence_penalty, after.frequency_penalty, after.cpu_threads) == (0.5, -0.25, 3)
    assert dialog.result_language() == "ko"  # kept: no language control until a catalogue exists


def test_the_largest_seed_and_top_k_the_settings_allow_open_and_round_trip(qtbot):
    """New-user trial: a preset with seed 3,000,000,000 was accepted, and Settings then failed to
    open (OverflowError: the field is 32-bit); top-k stopped at 100,000 while 1,000,000 is allowed,
    so OK lowered it silently."""
    before = GenerationSettings(top_k=10**9, seed=3_000_000_000).validated()
    assert (before.top_k, before.seed) == (MAX_TOP_K, MAX_SEED)
    dialog = SettingsDialog(before)
    qtbot.addWidget(dialog)
    assert (dialog.result_settings().top_k, dialog.result_settings().seed) == (MAX_TOP_K, MAX_SEED)


def test_a_settings_file_s_seed_of_minus_one_opens_as_random(qtbot, tmp_path):
    """New-user trial 10: settings.json's "seed": -1 opened as "Seed 0", a fixed seed. It is random,
    shown as the field's "random" (its -1), and typing -1 there says random too."""
    path = tmp_path / "settings.json"
    path.write_text('{"generation": {"temperature": 0.7, "seed": -1}}')
    dialog = SettingsDialog(load_settings(path).generation)
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.seed.text() == "random" and dialog.result_settings().seed is None
    dialog.seed.setValue(7)
    dialog.seed.setFocus()
    dialog.seed.selectAll()
    qtbot.keyClicks(dialog.seed, "-1")
    qtbot.keyClick(dialog.seed, Qt.Key.Key_Return)
    assert dialog.seed.text() == "random" and dialog.result_settings().seed is None


def test_cpu_threads_stop_at_the_logical_cores(qtbot, monkeypatch):
    """New-user trial: 1,024 typed on a 2-core machine; the spin box now ends at the core count."""
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    dialog = SettingsDialog(GenerationSettings())
    qtbot.addWidget(dialog)
    assert (dialog.cpu_threads.minimum(), dialog.cpu_threads.maximum()) == (0, 2)
    assert dialog.cpu_threads.text() == "automatic"  # still the default
    dialog.cpu_threads.lineEdit().selectAll()
    qtbot.keyClicks(dialog.cpu_threads.lineEdit(), "1024")
    dialog.cpu_threads.interpretText()
    assert dialog.cpu_threads.value() <= 2 and dialog.result_settings().cpu_threads <= 2
    dialog.cpu_threads.setValue(1024)
    assert dialog.cpu_threads.value() == 2 and dialog.result_settings().cpu_threads == 2


def test_a_negative_count_is_undone_not_turned_into_its_digits(qtbot):
    """New-user trial: -5 typed into Max new tokens silently became 5 (QSpinBox drops the '-');
    the regression trial: becoming the minimum (1 token) was no better. It goes back to 512."""
    dialog = SettingsDialog(GenerationSettings(max_new_tokens=512))
    qtbot.addWidget(dialog)
    dialog.show()
    box = dialog.max_new_tokens
    box.setFocus()
    box.selectAll()
    qtbot.keyClicks(box, "-5")
    assert box.lineEdit().text() == "-5 tokens" and box.value() == 512  # the sign stays on screen
    box.interpretText()  # Enter
    assert (box.value(), box.lineEdit().text()) == (512, "512 tokens")
    assert dialog.result_settings().max_new_tokens == 512
    box.setValue(300)
    box.selectAll()
    qtbot.keyClicks(box, "-5")
    QApplication.sendEvent(box, QFocusEvent(QEvent.Type.FocusOut, Qt.FocusReason.TabFocusReason))  # leaving it
    assert (box.value(), box.lineEdit().text()) == (300, "300 tokens")
    threads = dialog.cpu_threads
    threads.selectAll()
    qtbot.keyClicks(threads, "-3")
    assert dialog.result_settings().cpu_threads == 0 and threads.text() == "automatic"


def _type_and_press_ok(qtbot, dialog, typed: dict[str, str]) -> dict[str, str]:
    """Select each field's text, type into it as a user does, then click OK; what each field
    showed after the typing."""
    shown = {}
    for name, keys in typed.items():
        box = getattr(dialog, name)
        box.setFocus()
        box.selectAll()
        qtbot.keyClicks(box, keys)
        shown[name] = box.lineEdit().text()
    qtbot.mouseClick(dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok),
                     Qt.MouseButton.LeftButton)
    return shown


@pytest.mark.parametrize(("field", "keys"), [
    ("repetition_penalty", "-2"), ("top_p", "-0.5"), ("min_p", "-0.2"), ("temperature", "-1"), ("seed", "-5"),
])
def test_a_typed_minus_sign_in_a_decimal_or_seed_field_puts_its_value_back(qtbot, field, keys):
    """New-user trial: the floating-point fields dropped the '-' as the count fields once did:
    Repetition penalty -2 was saved as 2.00 (the strongest penalty), Top-p -0.5 as 0.50, Min-p
    -0.2 as -0.0 (the field read "-."), and the preset became "Custom settings". They go back to
    their value, as Max new tokens does with -5."""
    before = GenerationSettings(top_p=0.9, min_p=0.05, repetition_penalty=1.1, seed=7)
    dialog = SettingsDialog(before)
    qtbot.addWidget(dialog)
    dialog.show()
    shown = getattr(dialog, field).text()
    typing = _type_and_press_ok(qtbot, dialog, {field: keys})
    assert dialog.result_settings() == before.validated()
    assert typing[field] == keys  # the sign stayed on screen while typing
    assert getattr(dialog, field).text() == shown  # and the value is put back where the user sees it


def test_a_number_above_the_maximum_becomes_the_maximum_not_its_first_digits(qtbot):
    """New-user trial: Max new tokens 999999999 became 9999, Keep verbatim 999 became 9, Seed
    3000000000 became 300000000 (Qt dropped every key past the maximum); Temperature 99 was not
    taken at all. Each is the field's maximum now, shown in the field."""
    dialog = SettingsDialog(GenerationSettings())
    qtbot.addWidget(dialog)
    dialog.show()
    typed = {"max_new_tokens": "999999999", "summary_keep_turns": "999", "seed": "3000000000",
             "temperature": "99", "top_k": "99999999"}
    typing = _type_and_press_ok(qtbot, dialog, typed)
    after = dialog.result_settings()
    assert (after.max_new_tokens, after.summary_keep_turns, after.seed) == (MAX_NEW_TOKENS, MAX_KEEP_TURNS, MAX_SEED)
    assert (after.temperature, after.top_k) == (2.0, MAX_TOP_K)
    assert dialog.max_new_tokens.text() == f"{MAX_NEW_TOKENS:,} tokens" and dialog.temperature.text() == "2.00"
    assert all(keys in typing[name] for name, keys in typed.items())  # no key was dropped while typing


def test_the_context_window_field_ends_where_the_settings_do(qtbot):
    """One bound (MAX_CONTEXT_TOKENS) for the field and GenerationSettings.validated: an imported
    preset's 10**12 was kept, and Settings would not open on it (OverflowError, a 32-bit field)."""
    dialog = SettingsDialog(GenerationSettings(context_tokens=10**12).validated())
    qtbot.addWidget(dialog)
    assert dialog.context_tokens.maximum() == MAX_CONTEXT_TOKENS == dialog.result_settings().context_tokens


def test_typed_settings_are_saved_as_settled_and_the_preset_stays(qtbot, make_window):
    """The whole way a user goes: Settings from the menu, typed fields, OK; settings.json holds the
    values the fields settled on and the chat is still on its preset (new-user trial: -2 saved a
    repetition penalty of 2.00 and the preset became "Custom settings")."""
    window = make_window(settings=Settings())
    assert window.chat.presets.current() == "Balanced"

    def edit():
        dialog = QApplication.activeModalWidget()
        try:
            _type_and_press_ok(qtbot, dialog, {"repetition_penalty": "-2", "top_p": "-0.5",
                                               "max_new_tokens": "999999"})
        finally:  # a failed step must not leave exec() waiting
            if dialog.isVisible():
                dialog.reject()

    QTimer.singleShot(0, edit)  # Settings runs modal (exec): typed from its own loop
    window.settings_action.trigger()
    saved = load_settings().generation
    assert (saved.repetition_penalty, saved.top_p, saved.max_new_tokens) == (1.0, 0.95, MAX_NEW_TOKENS)
    assert window.chat.settings.generation == saved and window.chat.presets.current() == "Balanced"


def test_the_window_is_titled_settings(qtbot):
    """New-user trial: "Generation settings" titled a window that also holds Language, Appearance
    and Backend; the menu calls it Settings."""
    dialog = SettingsDialog(GenerationSettings(), backend=BackendSettings())
    qtbot.addWidget(dialog)
    assert dialog.windowTitle() == "Settings"


def test_summary_controls_round_trip(qtbot):
    dialog = SettingsDialog(GenerationSettings(summary_fold_at=0.8, summary_keep_turns=3))
    qtbot.addWidget(dialog)
    assert (dialog.summary_fold_at.value(), dialog.summary_keep_turns.value()) == (80, 3)
    dialog.summary_fold_at.setValue(65)
    dialog.summary_keep_turns.setValue(5)
    after = dialog.result_settings()
    assert (after.summary_fold_at, after.summary_keep_turns) == (0.65, 5)
    dialog.summary_fold_at.setValue(10)  # below the range: the spin box stops at 50 %
    assert dialog.result_settings().summary_fold_at == 0.5


@pytest.mark.parametrize("language", ["en", "ko"])
def test_counts_group_their_digits_as_the_window_does(qtbot, request, language):
    """New-user trial 10: Settings said "32768 tokens" and "4096 MiB of RAM" while the rest of
    the window says "8,192"; typed with or without the separator, a count reads the same."""
    if language == "ko":
        request.getfixturevalue("korean")
    dialog = SettingsDialog(GenerationSettings(max_new_tokens=32_768, context_tokens=16_384, top_k=1_000,
                                               kept_chat_cache_mib=4_096))
    qtbot.addWidget(dialog)
    dialog.show()
    fields = (dialog.max_new_tokens, dialog.context_tokens, dialog.top_k, dialog.kept_chat_cache)
    shown = [box.cleanText() for box in fields]
    assert shown == ["32,768", "16,384", "1,000", "4,096"]
    assert dialog.max_new_tokens.text() == ("32,768 tokens" if language == "en" else "32,768 토큰")
    _type_and_press_ok(qtbot, dialog, {"max_new_tokens": "20000", "context_tokens": "8,192"})
    after = dialog.result_settings()
    assert (after.max_new_tokens, after.context_tokens) == (20_000, 8_192)
    assert (dialog.max_new_tokens.cleanText(), dialog.context_tokens.cleanText()) == ("20,000", "8,192")


def test_the_kept_chat_caches_are_a_setting(qtbot):
    dialog = SettingsDialog(GenerationSettings(kept_chat_cache_mib=1024))
    qtbot.addWidget(dialog)
    assert dialog.kept_chat_cache.value() == 1024
    dialog.kept_chat_cache.setValue(0)
    assert dialog.kept_chat_cache.text() == "keep none" and dialog.result_settings().kept_chat_cache_mib == 0


def test_the_open_models_own_context_is_said_beside_context_window(qtbot):
    """New-user trial: Settings showed "Context window: auto" while the model ran with its own 2,048."""
    dialog = SettingsDialog(GenerationSettings(context_tokens=0), model_context=2048)
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.context_note.isVisible()
    assert dialog.context_note.text() == ("The open model uses its own context: 2,048 tokens (Open model). This "
                                          "setting applies to models without their own.")
    assert dialog.result_settings().context_tokens == 0  # the global setting is not changed by showing it
    plain = SettingsDialog(GenerationSettings(context_tokens=0))
    qtbot.addWidget(plain)
    plain.show()
    assert not plain.context_note.isVisible()


@pytest.mark.parametrize("language,palette_name", [("en", "light"), ("ko", "dark")])
def test_the_context_note_shows_all_its_lines_at_the_default_size(qtbot, qapp, request, tmp_path,
                                                                  language, palette_name):
    """Product trial: the word-wrapped note lost its first and last lines, squeezed by the form."""
    if language == "ko":
        request.getfixturevalue("korean")
    with fusion_palette(qapp, palette_name):
        install_hangul_fallback(qapp)  # Hangul, not boxes, in the PNG
        parent = QWidget()  # as Edit → Settings opens it: over the window, with the backend form
        qtbot.addWidget(parent)
        dialog = SettingsDialog(GenerationSettings(context_tokens=0), parent, BackendSettings(),
                                model_context=2048)
        dialog.show()
        qtbot.waitExposed(dialog)
        folder = Path(os.environ.get("HEADROOM_SCREENSHOT_DIR") or tmp_path)
        folder.mkdir(parents=True, exist_ok=True)
        dialog.grab().save(str(folder / f"settings-context-note-{language}-{palette_name}.png"))
        for note in (dialog.context_note, dialog.language_note):
            lines = note.heightForWidth(note.contentsRect().width()) // note.fontMetrics().lineSpacing()
            assert lines >= 1
            assert note.height() >= note.heightForWidth(note.width()), note.text()  # every line, whole
        assert "2,048" in dialog.context_note.text()


def test_a_taller_dialog_puts_its_room_below_the_fields_not_into_the_language_note(qtbot):
    """Trial 14: resized to 900x1000, the extra height all went to the wrapped "A new language applies"
    row, a ~300 px gap between Language and Appearance (643 px at 1400 here before the fix)."""
    dialog = SettingsDialog(GenerationSettings(), backend=BackendSettings())
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.resize(900, 1400)
    QApplication.processEvents()
    note = dialog.language_note
    assert note.height() <= note.sizeHint().height() + 4
    assert dialog.appearance.geometry().top() - note.geometry().bottom() < 40
