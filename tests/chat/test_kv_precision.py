"""The per-chat KV cache precision (issue 16): chosen, stored with the conversation, sent with
every turn, offered as a remedy of a memory refusal, and back when the chat is opened again."""

from app.core.kv_precision import KV_8, KV_16, KV_AUTO
from app.core.store import Store
from app.engine.memory.admission import AdmissionDecision
from tests.chat.test_turns import plan


def test_the_choice_goes_with_each_turn_and_is_stored_with_the_chat(chat, tmp_path):
    worker, seen = chat.worker, chat.recorded
    chat.kv_precision_changed.connect(lambda p: seen.events.append(("kv_precision_changed", (p,))))
    assert chat.kv_precision == KV_16
    chat.conversations.set_kv_precision(KV_AUTO)  # before the first message: kept for it
    assert seen.of("kv_precision_changed") == [(KV_AUTO,)]
    assert seen.of("notice")[-1] == ("KV cache for this chat: auto (8-bit only when 16-bit does not fit).",
                                     "status")
    chat.turns.send("hello")
    assert worker.requests[-1].kv_precision == KV_AUTO
    first = chat.conversation_id
    assert chat.store.load_conversation(first).kv_precision == KV_AUTO
    chat.conversations.set_kv_precision(KV_8)
    assert "reads the whole history again once" in seen.of("notice")[-1][0]
    assert chat.store.load_conversation(first).kv_precision == KV_8
    chat.conversations.set_kv_precision("4-bit")  # not a precision: the default, said and stored
    assert chat.kv_precision == KV_16
    chat.conversations.set_kv_precision(KV_8)
    chat.conversations.new_conversation()
    assert chat.kv_precision == KV_16 and seen.of("kv_precision_changed")[-1] == (KV_16,)
    chat.conversations.open_conversation(first)
    assert chat.kv_precision == KV_8 and seen.of("kv_precision_changed")[-1] == (KV_8,)
    with Store(chat.store.path) as again:  # on disk, for the next launch
        assert again.load_conversation(first).kv_precision == KV_8
    # the worker hears each change: the open chat's precision decides what the warm-up compiles
    assert worker.kv_precisions == [KV_AUTO, KV_8, KV_16, KV_8, KV_16, KV_16, KV_8]  # opening: reset, then its own


def test_switching_to_8bit_is_a_remedy_of_a_memory_refusal(chat):
    worker = chat.worker
    chat.turns.send("a long paste")
    worker.turn_planned.emit(worker.last_id, plan())
    decision = AdmissionDecision(False, "memory", "short by 2 GiB", max_new_tokens_fit=100,
                                 kv8_needed_bytes=5 << 30)
    worker.turn_refused.emit(worker.last_id, decision)
    chat.turns.apply_remedy("kv8", decision)
    request = worker.requests[-1]
    assert request.kv_precision == KV_8 and chat.kv_precision == KV_8
    assert [m.content for m in request.messages] == ["a long paste"]
    assert chat.store.load_conversation(chat.conversation_id).kv_precision == KV_8


def test_each_memory_remedy_says_what_it_would_need(qapp):
    from app.chat.refusal_text import other_remedies, remedy_labels

    decision = AdmissionDecision(
        False, "memory", "short", trim_tokens=500, max_new_tokens_fit=100, reason_kind="memory",
        facts=dict(needed=7 << 30, free=6 << 30, shortfall=1 << 30, trim_needed=5 << 29, lower_needed=11 << 29),
        kv8_needed_bytes=9 << 29, remedies=("trim …", "lower …", "switch this chat to 8-bit KV …", "close …"))
    labels = remedy_labels(decision)
    assert list(labels) == ["trim", "lower_max_new_tokens", "kv8"]
    assert labels["trim"] == "Trim older turns (drop at least 500 tokens) — needs 2.50 GiB"
    assert labels["lower_max_new_tokens"] == "Lower max new tokens to 100 — needs 5.50 GiB"
    assert labels["kv8"] == "Switch this chat to 8-bit KV cache — needs 4.50 GiB"
    assert other_remedies(decision) == ["Close other programs using this device, or load a smaller model."]
