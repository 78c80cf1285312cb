"""The turn flow: send → plan → stream → finished, stopped, failed or refused, with the
worker played by the test."""

from dataclasses import replace
from types import SimpleNamespace

import pytest

from app.core.conversation import MessageStatus, Role
from app.core.store import Store
from app.engine.memory.admission import AdmissionDecision
from tests.chat.conftest import finished, record


def plan(prompt_tokens=40, limit=400, kept=1, prompt_ids=(1,) * 40, projection="projection"):
    window = SimpleNamespace(prompt_tokens=prompt_tokens, limit_tokens=limit, kept=(None,) * kept)
    return SimpleNamespace(window=window, projection=projection, prompt_ids=prompt_ids)


def stored(chat):
    return chat.store.load_conversation(chat.conversation_id).conversation.messages


def test_a_turn_streams_into_the_conversation_and_is_saved(chat):
    worker, seen = chat.worker, chat.recorded
    chat.turns.send("What is the capital of France?")
    [request] = worker.requests
    assert [m.content for m in request.messages] == ["What is the capital of France?"]
    assert request.settings.max_new_tokens == 16 and not request.continue_final
    assert chat.turns.active and seen.of("reply_started") == [(False,)]
    assert seen.of("message_added") == [(Role.USER, "What is the capital of France?")]
    request.messages[0].content = "changed by the worker"  # the worker only ever has copies
    assert chat.conversation.messages[0].content == "What is the capital of France?"

    worker.turn_planned.emit(request.request_id, plan())
    assert chat.turns.last_plan.window.prompt_tokens == 40 and len(seen.of("turn_planned")) == 1
    for piece in ("The capital", " is Paris."):
        worker.token_streamed.emit(request.request_id, piece)
    worker.token_streamed.emit(request.request_id + 99, "stale")  # another request's: ignored
    assert chat.conversation.messages[-1].content == "The capital is Paris."
    worker.reply_finished.emit(request.request_id, finished(), record())

    assert seen.of("reply_ended") == [(MessageStatus.COMPLETE, "")]
    assert seen.of("turn_ended") == [("complete",)]
    assert seen.of("reply_measured") == [(0.25, 10.0, 3)]
    assert not chat.turns.active and len(chat.turns.turn_records) == 1
    assert [(m.role, m.content, m.status) for m in stored(chat)] == [
        (Role.USER, "What is the capital of France?", MessageStatus.COMPLETE),
        (Role.ASSISTANT, "The capital is Paris.", MessageStatus.COMPLETE)]


def test_the_answer_being_written_is_saved_as_it_comes_so_a_crash_keeps_it(chat, monkeypatch):
    """New-user trial: kill -9 mid-answer lost the answer and left its question unanswered. The
    first piece is saved at once, later ones at most every PROGRESS_SAVE_S; what a crash leaves
    streaming shows, at the next start, as a failed answer with its text (Retry)."""
    from app.chat import turns

    worker = chat.worker
    chat.turns.send("Write a long story")
    worker.token_streamed.emit(worker.last_id, "Once upon")
    assert [(m.role, m.content, m.status) for m in stored(chat)][-1] == (
        Role.ASSISTANT, "Once upon", MessageStatus.STREAMING)
    worker.token_streamed.emit(worker.last_id, " a time")  # within the second: not saved yet
    assert stored(chat)[-1].content == "Once upon"
    monkeypatch.setattr(turns, "PROGRESS_SAVE_S", 0.0)
    worker.token_streamed.emit(worker.last_id, " there")
    assert stored(chat)[-1].content == "Once upon a time there"
    assert len(stored(chat)) == 2  # one row, updated: no second answer

    assert chat.store.mark_interrupted() == 1  # the next start, after a crash here
    assert [(m.role, m.content, m.status) for m in stored(chat)] == [
        (Role.USER, "Write a long story", MessageStatus.COMPLETE),
        (Role.ASSISTANT, "Once upon a time there", MessageStatus.FAILED)]


def test_stop_and_a_message_sent_while_stopping_starts_right_after(chat):
    worker, seen = chat.worker, chat.recorded
    chat.turns.send("Tell me a long story")
    first = worker.last_id
    worker.token_streamed.emit(first, "Once upon")
    chat.turns.stop()
    assert worker.stops == 1
    chat.turns.send("Shorter, please")  # while the stop takes effect: queued, not started
    assert len(worker.requests) == 1 and worker.stops == 2
    worker.reply_finished.emit(first, finished("Once upon", "stopped"), record("stopped"))
    assert seen.of("turn_ended") == [("stopped",)]
    assert len(worker.requests) == 2  # the queued message went out at once
    # the stopped answer's figures come before its turn ends, so before the queued one's bubble
    # (new-user trial: its stats line went to the new answer)
    assert [n for n in seen.names() if n in ("reply_ended", "reply_stats", "turn_ended", "reply_started")] == [
        "reply_started", "reply_ended", "reply_stats", "turn_ended", "reply_started"]
    assert seen.of("reply_stats")[0][0].new_tokens == 3
    assert [m.content for m in worker.requests[1].messages] == ["Tell me a long story", "Once upon",
                                                                "Shorter, please"]
    assert chat.conversation.messages[1].status is MessageStatus.STOPPED


def test_max_new_tokens_is_said_in_the_reply_and_continue_extends_it(chat):
    worker, seen = chat.worker, chat.recorded
    chat.turns.send("Write a poem")
    worker.token_streamed.emit(worker.last_id, "Roses")
    worker.reply_finished.emit(worker.last_id, finished("Roses", "length"), record("length"))
    assert seen.of("reply_ended")[-1] == (MessageStatus.STOPPED, "max new tokens reached")
    chat.turns.continue_reply(1)
    assert seen.of("reply_started")[-1] == (True,) and worker.requests[-1].continue_final
    assert [m.content for m in worker.requests[-1].messages] == ["Write a poem", "Roses"]
    worker.token_streamed.emit(worker.last_id, " are red")
    worker.reply_finished.emit(worker.last_id, finished(" are red"), record())
    assert len(chat.conversation.messages) == 2 and stored(chat)[-1].content == "Roses are red"


def test_a_failure_is_a_notice_and_the_reply_is_kept_as_failed(chat):
    worker, seen = chat.worker, chat.recorded
    chat.turns.send("hi")
    worker.token_streamed.emit(worker.last_id, "Hel")
    worker.generation_failed.emit(worker.last_id, "the GPU ran out of memory", "Hel")
    assert seen.of("notice") == [("The model ran out of memory during this answer. Send a shorter message, lower "
                                  "max new tokens in Settings, or start a new chat.", "retry")]
    assert seen.of("reply_ended") == [(MessageStatus.FAILED, "The model ran out of memory during this answer.")]
    assert seen.of("turn_ended") == [("failed",)]
    assert stored(chat)[-1].status is MessageStatus.FAILED and "Hel" not in seen.of("notice")[0][0]


@pytest.mark.parametrize("reason", [
    # app.engine.local.samplers.NonFiniteLogits, through describe_failure
    "the model produced invalid numbers (NaN or infinity) — its weights may be damaged, or its compute dtype "
    "overflows",
    # torch.multinomial's own words, should a draw meet NaN unwrapped (new-user trial: "(RuntimeError)")
    "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0",
])
def test_nan_logits_fail_the_turn_in_plain_words_with_retry(chat, reason):
    worker, seen = chat.worker, chat.recorded
    chat.turns.send("hi")
    worker.generation_failed.emit(worker.last_id, reason, "")
    assert seen.of("notice") == [("The model produced invalid numbers (NaN or infinity). Its weights may be "
                                  "damaged, or its compute dtype overflows; download the model again, or open "
                                  "another one.", "retry")]
    assert seen.of("reply_ended") == [(MessageStatus.FAILED, "The model produced invalid numbers (NaN or infinity).")]


def refusal(**kwargs):
    fields = dict(admitted=False, cause="memory", reason="short by 120 MiB", max_new_tokens_fit=100)
    return AdmissionDecision(**(fields | kwargs))


def test_a_refused_turn_offers_remedies_and_lowering_max_new_tokens_sends_it_again(chat):
    worker, seen = chat.worker, chat.recorded
    chat.turns.send("What is the capital of France?")
    worker.turn_planned.emit(worker.last_id, plan(projection="the projection"))
    decision = refusal()
    worker.turn_refused.emit(worker.last_id, decision)
    assert [m.role for m in chat.conversation.messages] == [Role.USER]  # nothing ran, nothing lost
    assert seen.of("messages_truncated") == [(1,)]
    assert seen.of("notice") == [("This turn was not started: short by 120 MiB", "refused")]
    assert seen.of("turn_ended") == [("refused",)]
    assert seen.of("turn_refused") == [(decision, "the projection")]
    chat.turns.apply_remedy("lower_max_new_tokens", decision)
    assert worker.requests[-1].settings.max_new_tokens == 100
    assert [m.role for m in chat.conversation.messages] == [Role.USER, Role.ASSISTANT]


def test_lowering_max_new_tokens_for_the_context_sticks_for_memory_it_does_not(chat):
    """New-user trial: a 2,048-token context with max new tokens 2,048 was refused turn after
    turn, because the remedy lowered it for one turn only."""
    worker = chat.worker
    chat.turns.send("Hi")
    worker.turn_refused.emit(worker.last_id, refusal(cause="positions", max_new_tokens_fit=1753))
    chat.turns.apply_remedy("lower_max_new_tokens", refusal(cause="positions", max_new_tokens_fit=1753))
    assert worker.requests[-1].settings.max_new_tokens == chat.settings.generation.max_new_tokens == 1753
    worker.reply_finished.emit(worker.last_id, finished(), record())
    chat.turns.send("Again")
    assert worker.requests[-1].settings.max_new_tokens == 1753
    worker.turn_refused.emit(worker.last_id, refusal(max_new_tokens_fit=100))  # memory: this turn only
    chat.turns.apply_remedy("lower_max_new_tokens", refusal(max_new_tokens_fit=100))
    assert worker.requests[-1].settings.max_new_tokens == 100 and chat.settings.generation.max_new_tokens == 1753


def test_lowering_max_new_tokens_for_the_context_leaves_the_conversation_room(chat):
    """New-user trial: 2,048-token context, max new tokens 2,048; "hi" fit with 1,755, and keeping 1,755
    left every chat a 37-token history budget. The chat keeps a quarter of the context instead and says so."""
    worker, seen = chat.worker, chat.recorded
    decision = refusal(cause="positions", max_new_tokens_fit=1755, context_limit=2048)
    chat.turns.send("hi")
    worker.turn_refused.emit(worker.last_id, decision)
    chat.turns.apply_remedy("lower_max_new_tokens", decision)
    assert worker.requests[-1].settings.max_new_tokens == chat.settings.generation.max_new_tokens == 512
    assert seen.of("notice")[-1] == ("Max new tokens is now 512 (Settings), so the conversation keeps 1,280 "
                                     "tokens of the 2,048-token context.", "status")
    long_message = refusal(cause="positions", max_new_tokens_fit=300, context_limit=2048)
    worker.turn_refused.emit(worker.last_id, long_message)
    chat.turns.apply_remedy("lower_max_new_tokens", long_message)  # a long message: its fit is lower still
    assert chat.settings.generation.max_new_tokens == 300


def test_trim_and_override_remedies(chat):
    worker = chat.worker
    chat.turns.send("x")
    worker.turn_planned.emit(worker.last_id, plan(prompt_ids=(1,) * 300))
    decision = refusal(trim_tokens=100)
    worker.turn_refused.emit(worker.last_id, decision)
    chat.turns.apply_remedy("trim", decision)
    assert worker.requests[-1].settings.context_tokens == 300 - 100 + 16
    worker.turn_refused.emit(worker.last_id, decision)
    chat.turns.apply_remedy("override", decision)
    assert worker.requests[-1].override_memory


def test_giving_up_on_a_refused_message_puts_it_back_for_the_composer(chat):
    worker, seen = chat.worker, chat.recorded
    chat.turns.send("Tell me about cats.")
    worker.turn_refused.emit(worker.last_id, refusal(cause="positions", max_new_tokens_fit=None))
    chat.turns.apply_remedy("cancel", None)
    assert chat.conversation.messages == [] and seen.of("text_withdrawn") == [("Tell me about cats.",)]
    assert len(worker.requests) == 1
    # it was a new chat's first message: no empty chat is left behind in the store or the list
    assert chat.conversation_id is None and chat.store.list_conversations(include_deleted=True) == []
    assert seen.of("conversations_listed")[-1] == ([], None)
    chat.turns.send("Tell me about cats, briefly.")  # sent again: a chat of its own again
    assert [i.title for i in chat.store.list_conversations()] == ["Tell me about cats, briefly."]


# ----- a refused message left unanswered (new-user trial: a 180,000-character paste, refused, stayed in
# the chat, was sent with every later prompt and folded into the summary) -----------------------------
LONG_PASTE = "lorem ipsum " * 15_000


def answered(chat, text, answer="Paris."):
    worker = chat.worker
    chat.turns.send(text)
    worker.token_streamed.emit(worker.last_id, answer)
    worker.reply_finished.emit(worker.last_id, finished(answer), record())


def test_a_refused_message_left_unanswered_is_withdrawn_when_another_is_sent(chat):
    worker, seen = chat.worker, chat.recorded
    answered(chat, "What is the capital of France?")
    chat.turns.send(LONG_PASTE)
    decision = refusal(cause="positions", reason_kind="message", max_new_tokens_fit=None, facts=dict(
        message=40_020, context=8_192, max_new_tokens=512, summary_reserve=512, room=7_168, shorten_by=32_852))
    worker.turn_refused.emit(worker.last_id, decision)
    assert seen.of("turn_refused") == [(decision, None)]  # the remedies dialog is offered; not answered
    chat.turns.send("And of Italy?")
    # the new prompt holds no trace of the refused paste, nor does the chat or the Store
    assert [m.content for m in worker.requests[-1].messages] == ["What is the capital of France?", "Paris.",
                                                                 "And of Italy?"]
    assert [m.content for m in chat.conversation.messages] == ["What is the capital of France?", "Paris.",
                                                               "And of Italy?", ""]
    assert [m.content for m in stored(chat)] == ["What is the capital of France?", "Paris.", "And of Italy?"]
    assert seen.of("text_withdrawn") == [(LONG_PASTE,)]  # back in the composer: nothing typed is lost
    assert seen.of("notice")[-1] == ("Your earlier message got no answer, so it was taken out of the chat; its "
                                     "text is back in the message box.", "warning")
    # the dialog answered late acts on nothing: the refused message is gone, another answer is written
    chat.turns.apply_remedy("lower_max_new_tokens", refusal(cause="positions", max_new_tokens_fit=100))
    assert len(worker.requests) == 3 and chat.turns.active
    worker.token_streamed.emit(worker.last_id, "Rome.")
    worker.reply_finished.emit(worker.last_id, finished("Rome."), record())
    assert [m.content for m in stored(chat)] == ["What is the capital of France?", "Paris.", "And of Italy?",
                                                 "Rome."]


def test_a_message_sent_while_stopping_a_refused_turn_goes_without_it(chat):
    worker, seen = chat.worker, chat.recorded
    chat.turns.send(LONG_PASTE)
    worker.turn_planned.emit(worker.last_id, plan())  # begun: admission refuses it next
    chat.turns.stop()
    chat.turns.send("Summarize this instead: cats purr.")  # queued while the stop takes effect
    worker.turn_refused.emit(worker.last_id, refusal(cause="positions", max_new_tokens_fit=None))
    assert [m.content for m in worker.requests[-1].messages] == ["Summarize this instead: cats purr."]
    assert [m.content for m in stored(chat)] == ["Summarize this instead: cats purr."]
    assert [i.title for i in chat.store.list_conversations()] == ["Summarize this instead: cats purr."]
    assert seen.of("text_withdrawn") == [(LONG_PASTE,)]


def test_a_refused_message_found_when_its_chat_is_opened_again_is_withdrawn_at_the_next_send(chat):
    worker, seen = chat.worker, chat.recorded
    answered(chat, "Hi")
    chat.turns.send(LONG_PASTE)
    home = chat.conversation_id
    chat.conversations.new_conversation()  # refused while another chat is shown: no dialog, it stays
    worker.turn_refused.emit(worker.last_id, refusal(cause="positions", max_new_tokens_fit=None))
    assert seen.of("turn_refused") == []
    chat.conversations.open_conversation(home)
    assert [m.content for m in chat.conversation.messages] == ["Hi", "Paris.", LONG_PASTE]
    chat.turns.send("Hello again")
    assert [m.content for m in worker.requests[-1].messages] == ["Hi", "Paris.", "Hello again"]
    assert [m.content for m in stored(chat)] == ["Hi", "Paris.", "Hello again"]
    assert seen.of("text_withdrawn") == [(LONG_PASTE,)]


def test_edit_and_regenerate_forget_what_followed(chat):
    worker, seen = chat.worker, chat.recorded
    chat.turns.send("hello")
    worker.reply_finished.emit(worker.last_id, finished("Hi!"), record())
    chat.conversation.messages[1].content = "Hi!"
    chat.turns.regenerate(1)
    assert seen.of("messages_truncated")[-1] == (1,) and [m.content for m in worker.requests[-1].messages] == ["hello"]
    worker.reply_finished.emit(worker.last_id, finished("Hey."), record())
    chat.turns.edit(0, "good evening")
    assert [m.content for m in worker.requests[-1].messages] == ["good evening"]
    assert stored(chat)[0].content == "good evening" and len(stored(chat)) == 1


def test_each_answer_keeps_how_it_was_made(chat):
    from app.core.conversation import ReplyStats
    from app.engine.events import ReplyFinished
    from tests.chat.conftest import report

    worker, seen = chat.worker, chat.recorded
    worker.model_changed.emit(report(name="SmolLM2"))
    chat.turns.send("hi")
    done = ReplyFinished("Hello!", "eos", prompt_tokens=40, prefill_tokens=8, new_tokens=3, ttft_s=0.125,
                         decode_tokens_per_s=12.5, reused_tokens=32, decode_path="eager-static")
    worker.reply_finished.emit(worker.last_id, done, record())
    stats = ReplyStats(40, 8, 32, 3, 0.125, 12.5, "eager-static", "float32", "SmolLM2 · cpu", stop_reason="eos")
    assert seen.of("reply_stats") == [(stats,)] and chat.conversation.messages[-1].stats == stats
    assert stored(chat)[-1].stats == stats and stored(chat)[0].stats is None


def test_a_continued_answer_counts_all_its_tokens_and_keeps_the_last_parts_speed(chat):
    from app.core.conversation import ReplyStats
    from app.engine.events import ReplyFinished
    from tests.chat.conftest import report

    worker, seen = chat.worker, chat.recorded
    worker.model_changed.emit(report(name="SmolLM2"))
    chat.turns.send("Write a poem")
    worker.reply_finished.emit(worker.last_id, ReplyFinished(
        "Roses", "length", prompt_tokens=40, prefill_tokens=40, new_tokens=80, ttft_s=0.5,
        decode_tokens_per_s=9.0, decode_path="eager"), record("length"))
    chat.turns.continue_reply(1)
    worker.reply_finished.emit(worker.last_id, ReplyFinished(
        " are red", "eos", prompt_tokens=120, prefill_tokens=1, new_tokens=30, ttft_s=0.125,
        decode_tokens_per_s=12.5, reused_tokens=119, decode_path="eager-static"), record())
    whole = ReplyStats(120, 1, 119, 110, 0.125, 12.5, "eager-static", "float32", "SmolLM2 · cpu",
                       continued_tokens=30, stop_reason="eos")
    assert seen.of("reply_stats")[-1] == (whole,) and stored(chat)[-1].stats == whole
    chat.turns.continue_reply(1)  # a second Continue adds to the total; one stopped at once changes nothing
    worker.reply_finished.emit(worker.last_id, ReplyFinished(
        "", "stopped", prompt_tokens=150, prefill_tokens=1, new_tokens=0, ttft_s=0.0,
        decode_tokens_per_s=0.0, reused_tokens=149), record())
    assert chat.conversation.messages[-1].stats == replace(whole, stop_reason="stopped")
    chat.turns.continue_reply(1)
    worker.reply_finished.emit(worker.last_id, ReplyFinished(
        " and blue", "eos", prompt_tokens=150, prefill_tokens=1, new_tokens=5, ttft_s=0.25,
        decode_tokens_per_s=11.0, reused_tokens=149, decode_path="eager-static"), record())
    stats = chat.conversation.messages[-1].stats
    assert (stats.new_tokens, stats.continued_tokens, stats.tokens_per_s) == (115, 5, 11.0)


def test_a_long_prefill_reports_its_progress_to_the_chat_shown_only(chat):
    """Product trial: a 5,200-token file showed "…" for 2.5 minutes; the worker's progress reaches
    the chat shown, on its own signal."""
    from tests.chat.test_conversations import seed

    worker, seen = chat.worker, chat.recorded
    chat.turns.send("Summarize the attached file")
    rid = worker.last_id
    worker.prefill_progressed.emit(rid, 1200, 5200)
    worker.prefill_progressed.emit(rid + 99, 10, 20)  # another request's: ignored
    assert seen.of("reply_prefill_progressed") == [(1200, 5200)]
    assert chat.conversation.messages[-1].content == ""  # not in the reply's text
    chat.conversations.open_conversation(seed(chat.store, "cats"))  # another chat shown: not told
    worker.prefill_progressed.emit(rid, 2400, 5200)
    assert seen.of("reply_prefill_progressed") == [(1200, 5200)]


def test_a_refusal_is_said_again_when_its_chat_is_opened_and_forgotten_once_its_turn_runs(chat):
    """New-user trial: after a restart the refused message showed no reason. The Store keeps it
    with the message; a remedy that runs the turn forgets it."""
    worker, seen = chat.worker, chat.recorded
    decision = refusal(cause="positions", reason_kind="message", max_new_tokens_fit=None, facts=dict(
        message=40_020, context=8_192, max_new_tokens=512, summary_reserve=512, room=7_168, shorten_by=32_852))
    chat.turns.send("Hi")
    worker.turn_refused.emit(worker.last_id, decision)
    chat.turns.apply_remedy("override", decision)  # the turn runs after all: nothing more to say
    worker.reply_finished.emit(worker.last_id, finished("Hello."), record())
    assert chat.store.load_conversation(chat.conversation_id).refusals == {}

    chat.turns.send(LONG_PASTE)
    worker.turn_refused.emit(worker.last_id, decision)
    line = ("This turn was not started. The new message needs 40,020 tokens with the system prompt, but the context "
            "of 8,192 tokens minus max new tokens (512) and the summary reserve (512) leaves 7,168. Shorten it by "
            "32,852 tokens.")
    assert seen.of("notice")[-1] == (line, "refused")
    home = chat.conversation_id
    chat.conversations.new_conversation()
    seen.clear()
    chat.conversations.open_conversation(home)
    assert seen.of("notice") == [(line, "refused")]  # under the refused message, as before


def test_a_remedy_picked_after_the_chat_closed_does_nothing(chat):
    """New-user trial: Ctrl+C over the remedies dialog closed the chat (and its Store) first; Qt's
    quit then closed the dialog, whose Cancel raised sqlite3.ProgrammingError (closed database).
    The refused message stays stored, refused, as any refusal left unanswered."""
    worker = chat.worker
    chat.turns.send("A very long paste")
    decision = refusal(cause="positions", reason="too long", max_new_tokens_fit=None)
    worker.turn_refused.emit(worker.last_id, decision)
    cid, [question] = chat.conversation_id, stored(chat)
    chat.close()
    chat.recorded.clear()
    chat.turns.apply_remedy("cancel", decision)
    assert chat.recorded.events == []  # nothing withdrawn, nothing put back
    with Store(chat.store.path) as store:
        again = store.load_conversation(cid)
    assert [m.content for m in again.conversation.messages] == ["A very long paste"]
    assert again.refusals[question.id]["reason"] == "too long"
