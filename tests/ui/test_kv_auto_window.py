"""KV cache precision "auto" in the window, with the tiny model on the CPU (trial 9): a chat that
ran 8-bit, switched to "auto" with memory to spare, answers at full precision, and the answer's
tooltip says so: float32, the whole prompt read again, nothing reused from the 8-bit cache."""

from app.core.kv_precision import KV_8, KV_AUTO
from app.ui.reply_stats_text import stats_tooltip


def test_auto_after_8bit_answers_at_full_precision_and_the_tooltip_says_so(qtbot, make_window, tiny_model_dir):
    window = make_window(max_new_tokens=4)
    with qtbot.waitSignal(window.model_ready, timeout=60000):
        window.open_model(tiny_model_dir)
    assert window.chat_bar.kv_combo.model().item(window.chat_bar.kv_combo.findData(KV_8)).isEnabled()

    def answer(text: str):
        with qtbot.waitSignal(window.turn_finished, timeout=60000):
            window.chat.turns.send(text)
        qtbot.waitUntil(lambda: window.chat_view.bubbles()[-1].stats is not None, timeout=5000)
        return window.chat_view.bubbles()[-1]

    window.chat_bar.kv_precision_chosen.emit(KV_8)  # as the combo does
    eight = answer("Hello there")
    assert eight.stats.kv_precision == "int8"
    window.chat_bar.kv_precision_chosen.emit(KV_AUTO)
    assert window.chat_bar.kv_combo.currentData() == KV_AUTO
    auto = answer("And once more?")
    stats = auto.stats
    assert stats.kv_precision == "float32"  # trial 9: "int8", 1,650 tokens reused
    assert stats.reused_tokens == 0 and stats.prefilled_tokens == stats.prompt_tokens > eight.stats.prompt_tokens
    tip = auto.stats_label.toolTip()
    assert tip == stats_tooltip(stats)
    assert "KV cache precision: float32" in tip
    tokens = f"{stats.prompt_tokens:,}"
    assert f"Prompt: {tokens} tokens ({tokens} prefilled, 0 reused from the KV cache)" in tip
