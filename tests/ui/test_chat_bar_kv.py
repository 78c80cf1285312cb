"""The chat bar's KV cache choice (issue 16): 16-bit / 8-bit / auto for the open chat."""

import pytest
from PySide6.QtGui import QPalette

from app.core.kv_precision import KV_8, KV_16, KV_AUTO
from app.ui.chat_bar import ChatBar


@pytest.fixture
def bar(qtbot):
    widget = ChatBar()
    qtbot.addWidget(widget)
    widget.resize(720, widget.sizeHint().height())
    widget.show()
    return widget


def test_the_choice_is_shown_and_picked(bar, qtbot):
    combo = bar.kv_combo
    assert [combo.itemText(i) for i in range(combo.count())] == ["16-bit", "8-bit", "auto"]
    assert combo.currentData() == KV_16 and combo.accessibleName() == "KV cache"
    bar.set_kv_precision(KV_AUTO)
    assert combo.currentText() == "auto"
    with qtbot.waitSignal(bar.kv_precision_chosen) as blocker:
        combo.activated.emit(combo.findData(KV_8))
    assert blocker.args == [KV_8]
    assert "half" in combo.toolTip() and "reads the whole history again" in combo.toolTip()


def test_full_precision_is_named_after_the_compute_dtype(bar):
    """On the CPU the KV cache is float32: the entry must not say 16-bit (new-user trial)."""
    bar.set_full_precision_bits(32)
    assert bar.kv_combo.itemText(0) == "32-bit" and bar.kv_combo.itemData(0) == KV_16
    bar.set_full_precision_bits(16)
    assert bar.kv_combo.itemText(0) == "16-bit"


def test_8bit_is_not_offered_for_a_model_that_cannot_read_it(bar):
    model = bar.kv_combo.model()
    bar.set_kv8_available(False)
    assert [model.item(i).isEnabled() for i in range(3)] == [True, False, False]
    bar.set_kv8_available(True)
    assert all(model.item(i).isEnabled() for i in range(3))


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_choice_reads_in_both_palettes(qapp, qtbot, scheme, tmp_path):
    """Grabbed in the app's stylesheet over Fusion's light and a dark desktop palette (the PNGs
    land beside the test's folder for a look); the combo's text keeps AA contrast."""
    from app.ui.theme import AA_TEXT, contrast_ratio
    from tests.helpers.palettes import fusion_palette

    with fusion_palette(qapp, scheme):
        bar = ChatBar()
        qtbot.addWidget(bar)
        bar.resize(720, bar.sizeHint().height())
        bar.set_kv_precision(KV_8)
        bar.show()
        bar.grab().save(str(tmp_path.parent / f"chat_bar_kv_{scheme}.png"))
        combo = bar.kv_combo.palette()
        assert contrast_ratio(combo.color(QPalette.ColorRole.ButtonText), combo.color(QPalette.ColorRole.Button)) \
            >= AA_TEXT


def test_the_full_precision_entry_is_right_before_any_model_loads(make_window, monkeypatch):
    """First start on the CPU: while the model loads the entry said "16-bit", then "32-bit" once
    loaded (product trial). The device is known before the load: float32 on the CPU."""
    window = make_window()
    assert window.chat.report is None and window.chat.worker.probe.kind == "cpu"
    assert window.chat_bar.kv_combo.itemText(0) == "32-bit"
    window.chat.model_changed.emit(None)  # a load starts: the open model is freed first
    assert window.chat_bar.kv_combo.itemText(0) == "32-bit"
    monkeypatch.setattr(window.chat.worker.probe, "kind", "cuda")  # bf16 / fp16 on a GPU
    window.chat.model_changed.emit(None)
    assert window.chat_bar.kv_combo.itemText(0) == "16-bit"
