"""The memory panel follows the open chat: its KV dtype is the chat's KV precision from the moment
the chat is open (a chat restored at start included), not only after a turn ran."""

from dataclasses import dataclass

from app.core.conversation import Message, Role
from app.core.store import Store
from app.engine.loading.loader import LoadReport
from app.engine.memory.probe import FakeProbe
from app.engine.memory.units import GiB

REPORT = LoadReport(name="SmolLM2-135M-Instruct", source="/m", device="cpu", attention="sdpa+gqa-packed",
                    quantization="none", weight_dtype="float32", compute_dtype="float32", weight_bytes=10 ** 8,
                    max_positions=8192, has_chat_template=True, load_seconds=1.0, fallbacks=())


@dataclass
class Plan:  # what MemoryWiring reads of a TurnPlanned
    kv_bits: int
    projection: object = None


def kv_shown(window) -> str:
    """The panel's device line, drawn from a sample: what a person reads ("… · KV cache int8")."""
    window.vram_panel.show_sample(FakeProbe(32 * GiB, allocated=GiB, kind="cpu", device_name="CPU").sample())
    return window.vram_panel.device_label.text()


def model_loaded(window, report=REPORT):
    window.chat.report = report
    window.chat.model_changed.emit(report)


def test_a_chat_restored_with_8bit_kv_shows_int8_in_the_panel(qtbot, make_window, tmp_path):
    db = tmp_path / "chats.sqlite3"
    with Store(db) as store:
        cid = store.create_conversation("Long one")
        store.append_message(cid, Message(Role.USER, "Hello"))
        store.set_kv_precision(cid, "8-bit")
    window = make_window(store_path=db)
    window.chat.conversations.open_conversation(cid)
    window.close()

    again = make_window(store_path=db)  # a restart: the chat comes back, then the model loads
    assert again.chat.conversation_id == cid and again.chat_bar.kv_combo.currentData() == "8-bit"
    model_loaded(again)
    assert kv_shown(again).endswith("KV cache int8")
    again.chat.conversations.set_kv_precision("16-bit")  # the combo changed: said at once
    assert kv_shown(again).endswith("KV cache float32")


def test_the_last_turn_plan_decides_and_a_new_chat_starts_from_its_precision(qtbot, make_window):
    window = make_window()
    model_loaded(window)
    assert kv_shown(window).endswith("KV cache float32")  # 16-bit by default: the compute dtype
    window.chat.conversations.set_kv_precision("auto")
    assert kv_shown(window).endswith("KV cache float32")  # auto starts in 16 bits
    window.memory_wiring._on_turn_planned(Plan(kv_bits=8))  # auto went to 8 bits for this turn
    assert kv_shown(window).endswith("KV cache int8")
    window.chat.conversations.new_conversation()  # back to the default precision
    assert kv_shown(window).endswith("KV cache float32")


def test_8bit_on_a_model_without_headrooms_attention_stays_in_the_compute_dtype(qtbot, make_window):
    from dataclasses import replace

    window = make_window()
    model_loaded(window, replace(REPORT, attention="eager"))
    window.chat.conversations.set_kv_precision("8-bit")
    assert kv_shown(window).endswith("KV cache float32")  # the turn runs 16-bit (kv_bits_choices)


def test_what_if_sizes_beyond_the_chats_context_are_said_not_projected(qtbot, make_window):
    window = make_window()
    window.chat.model_path = "/m"
    model_loaded(window)  # 8,192 positions: neither slider goes past them
    what_if = window.vram_panel.what_if
    assert what_if.context_slider.maximum() == 8_192 and what_if.new_tokens_slider.maximum() == 8_192
    kv_shown(window)  # a sample, so a projection could be drawn
    what_if.set_values(6_000, 2_192)  # exactly the context: projected (none here: no foresight yet)
    assert "more than" not in what_if.result_label.text()
    what_if.set_values(8_192, 8_192)
    assert what_if.result_label.text() == ("8,192 + 8,192 tokens is more than this chat's context of 8,192 tokens: "
                                           "no turn runs at this size.")
    assert what_if.result_state == "red"
    window.chat.settings = window.chat.settings.with_context("/m", 4_096)  # the chat's own context counts
    what_if.set_values(3_000, 1_500)
    assert "context of 4,096 tokens" in what_if.result_label.text()
    what_if.reset_button.click()  # back to the pending turn: none, so no verdict is left behind
    assert "more than" not in what_if.result_label.text()


def test_a_finished_turns_projection_goes_a_refused_ones_stays(qtbot, make_window):
    """After a turn its KV cache is in the memory sampled: its projection would count it twice
    (third trial: the badge said "after this turn" of a turn long finished)."""
    from tests.helpers import vram_scene

    window = make_window()
    model_loaded(window)
    kv_shown(window)
    badge, gauge = window.headroom_badge, window.vram_panel.gauge
    now = badge.text()
    assert gauge.text.startswith("Headroom now: ")
    for status, kept in (("complete", False), ("stopped", False), ("refused", True)):
        window.memory_wiring._on_turn_planned(Plan(kv_bits=16, projection=vram_scene.project(GiB)))
        assert gauge.text.startswith("Headroom after this turn: ") and badge.text() != now
        window.chat.turn_ended.emit(status)
        assert gauge.text.startswith("Headroom after this turn: ") is kept, status
        assert (badge.text() == now) is not kept, status


def test_the_what_if_sliders_start_from_the_chat_as_it_stands(qtbot, make_window):
    """Trial 4: with no turn pending they read "Context 1 · New tokens 1"."""
    window = make_window(max_new_tokens=300)
    window.chat.model_path = "/m"
    model_loaded(window)
    what_if = window.vram_panel.what_if
    window.chat.context_counted.emit(1_234, 7_000, 3, 0)
    assert what_if.values() == (1_234, 300) and what_if.context_value.text() == "1,234"
    what_if.set_values(4_000, 100)  # the user's sizes stay through the next count
    window.chat.context_counted.emit(1_500, 7_000, 4, 0)
    assert what_if.values() == (4_000, 100)


def test_a_chat_counted_before_its_model_loaded_starts_the_sliders_from_that_count(qtbot, make_window):
    """New-user trial: after a restart the sliders read "Context 1 · New tokens 1": the restored chat
    was counted while the model still loaded, and nothing synced them once it had."""
    window = make_window(max_new_tokens=300)
    window.chat.model_path = "/m"
    what_if = window.vram_panel.what_if
    window.chat.context_counted.emit(1_234, 7_000, 3, 0)  # no model yet
    model_loaded(window)
    assert what_if.values() == (1_234, 300) and what_if.new_tokens_value.text() == "300"
