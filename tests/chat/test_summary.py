"""The summary of earlier turns: adopted from the worker, saved, edited, failures said."""

from app.core.history import SummaryState
from tests.chat.conftest import finished, record, report


def test_a_finished_summary_is_adopted_saved_shown_and_said_in_the_status_bar(chat):
    worker, seen = chat.worker, chat.recorded
    chat.turns.send("hello")
    worker.reply_finished.emit(worker.last_id, finished("Hi!"), record())
    worker.model_changed.emit(report(max_positions=512))
    worker.summary_started.emit(worker.last_id, 1)
    state = SummaryState("The user said hello.", 1, 6)
    worker.summary_finished.emit(worker.last_id, state, "history 30 → 6 tokens")
    assert chat.summary == state
    assert chat.store.load_conversation(chat.conversation_id).summary == state
    assert seen.of("summarizing_changed") == [(True,), (False,)]
    assert seen.of("summary_changed")[-1] == ("The user said hello.", 1, 6, 512 // 8)
    assert seen.of("notice")[-1] == ("Summary: history 30 → 6 tokens", "status")


REJECTED = [  # the engine's verdicts when the model's summary was not used (app.core.history)
    ("model summary rejected (the model repeated the conversation instead of summarizing it (4 of 4 lines)); "
     "kept an extract: history 120 → 40 tokens",
     "Summary: the model's summary was not usable; kept an extract (history 120 → 40 tokens)"),
    ("the model repeated the conversation instead of summarizing it (4 of 4 lines)",
     "Summary: the model copied the conversation instead of summarizing it; kept the previous one"),
    ("empty summary", "Summary: the model wrote nothing; kept the previous one"),
    ("summary is 900 tokens, cap is 256", "Summary: too long (900 tokens, cap 256); kept the previous one"),
]


def test_a_verdict_that_the_models_summary_was_not_used_is_a_line_in_the_transcript(chat):
    """New-user trial 9: the verdict was said only in the status bar, where it showed as
    "Summary: t"; that the model's summary was not used changes what the assistant remembers, so
    it is a transcript line, readable in full. Routine verdicts stay in the status bar."""
    worker, seen = chat.worker, chat.recorded
    chat.turns.send("hello")
    worker.reply_finished.emit(worker.last_id, finished("Hi!"), record())
    for verdict, said in REJECTED:
        worker.summary_finished.emit(worker.last_id, SummaryState("The user said hello.", 1, 6), verdict)
        assert seen.of("notice")[-1] == (said, "info")
    for verdict in ("history 30 → 6 tokens (left out 2 repeated sentences)", "summary cancelled",
                    "nothing to fold: the last 2 turns stay as they are"):
        worker.summary_finished.emit(worker.last_id, SummaryState("The user said hello.", 1, 6), verdict)
        assert seen.of("notice")[-1][1] == "status", verdict


def test_another_chats_verdict_stays_out_of_the_transcript_shown(chat):
    worker, seen = chat.worker, chat.recorded
    chat.turns.send("hello")
    worker.reply_finished.emit(worker.last_id, finished("Hi!"), record())
    chat.summaries.expect(worker.last_id)  # the summary was asked for this chat…
    chat.conversations.new_conversation()  # …and the user went to another
    worker.summary_finished.emit(worker.last_id, SummaryState("The user said hello.", 1, 6), "empty summary")
    assert seen.of("notice")[-1] == ("Summary: the model wrote nothing; kept the previous one", "status")


def test_a_failed_summary_is_an_error_notice(chat):
    chat.worker.summary_started.emit(1, 2)
    chat.worker.summary_failed.emit(1, "no model is loaded")
    assert chat.recorded.of("summarizing_changed") == [(True,), (False,)]
    assert chat.recorded.of("notice") == [("No model is loaded. Open a model first (Open model…).", "error")]


def test_an_edited_summary_is_saved_and_an_emptied_one_folds_nothing(chat):
    worker = chat.worker
    chat.turns.send("hello")
    worker.reply_finished.emit(worker.last_id, finished("Hi!"), record())
    chat.summary = SummaryState("old", 1, 2)
    chat.summaries.edit("The user greeted me warmly")
    assert chat.summary == SummaryState("The user greeted me warmly", 1, 5 * 4 // 3)
    assert chat.store.load_conversation(chat.conversation_id).summary == chat.summary
    chat.summaries.edit("")
    assert chat.summary.folded_through == -1 and chat.recorded.of("summary_changed")[-1][:2] == ("", 0)


def test_regenerating_a_folded_turn_drops_the_summary(chat):
    worker = chat.worker
    chat.turns.send("hello")
    worker.reply_finished.emit(worker.last_id, finished("Hi!"), record())
    chat.summary = SummaryState("The user said hello.", 1, 6)
    chat.turns.regenerate(1)
    assert chat.summary == SummaryState() and chat.recorded.of("summary_changed")[-1][0] == ""


def test_summarize_now_asks_the_worker_for_a_summary_only(make_chat):
    from dataclasses import replace

    chat = make_chat()
    worker, seen = chat.worker, chat.recorded
    chat.settings = replace(chat.settings, generation=replace(chat.settings.generation, summary_keep_turns=1))
    chat.turns.summarize_now()
    assert worker.requests == [] and "Nothing to summarize yet" in seen.of("notice")[-1][0]
    chat.turns.send("q1")
    chat.turns.summarize_now()  # a reply in flight: refused
    assert len(worker.requests) == 1 and seen.of("notice")[-1][0].startswith("Wait for the reply")
    worker.reply_finished.emit(worker.last_id, finished("a1"), record())
    chat.turns.send("q2")
    worker.reply_finished.emit(worker.last_id, finished("a2"), record())
    chat.notes.edit("Ada")
    chat.turns.summarize_now()
    request = worker.requests[-1]
    assert request.summarize_only and not chat.turns.active
    assert [m.role.value for m in request.messages] == ["user", "assistant", "user", "assistant"]
    assert request.settings.summary_keep_turns == 1 and "Ada" in request.settings.system_prompt
    worker.summary_started.emit(request.request_id, 1)
    worker.summary_finished.emit(request.request_id, SummaryState("q1 was asked.", 1, 5), "history 30 → 9 tokens")
    assert chat.summary == SummaryState("q1 was asked.", 1, 5)
    assert seen.of("summary_changed")[-1][:2] == ("q1 was asked.", 1)


def test_a_new_summary_proposes_notes_that_are_pinned_only_when_accepted(chat):
    worker, seen = chat.worker, chat.recorded
    chat.turns.send("My name is Ada and I live in Lisbon. My budget is 1,200 euros.")
    worker.reply_finished.emit(worker.last_id, finished("Noted!"), record())
    summary = "Her name is Ada and she lives in Lisbon. The budget is 1,200 euros. They said hello."
    worker.summary_finished.emit(worker.last_id, SummaryState(summary, 1, 20), "kept 20 tokens")
    assert seen.of("notes_proposed")[-1] == (["Her name is Ada and she lives in Lisbon.",
                                              "The budget is 1,200 euros."],)
    assert chat.pinned_notes == ""  # nothing is pinned silently
    chat.notes.accept("The budget is 1,200 euros.")
    assert chat.pinned_notes == "The budget is 1,200 euros."
    assert chat.store.load_conversation(chat.conversation_id).pinned_notes == "The budget is 1,200 euros."
    chat.notes.dismiss("Her name is Ada and she lives in Lisbon.")
    assert seen.of("notes_proposed")[-1] == ([],) and chat.pinned_notes == "The budget is 1,200 euros."
    chat.turns.send("And flights?")
    worker.reply_finished.emit(worker.last_id, finished("Sure."), record())
    worker.summary_finished.emit(worker.last_id, SummaryState(summary + " Flights leave at 9.", 3, 24), "kept")
    assert seen.of("notes_proposed")[-1] == (["Flights leave at 9."],)  # neither the pinned nor the dismissed
    first = chat.conversation_id
    chat.conversations.new_conversation()
    assert seen.of("notes_proposed")[-1] == ([],)  # they were that chat's
    chat.conversations.open_conversation(first)  # back to it: the undecided one is offered again
    assert seen.of("notes_proposed")[-1] == (["Flights leave at 9."],)
    worker.summary_finished.emit(worker.last_id, SummaryState(summary + " Flights leave at 9.", 3, 24), "kept")
    assert seen.of("notes_proposed")[-1] == (["Flights leave at 9."],)  # the dismissed one stays dismissed


def test_undecided_note_proposals_are_offered_again_after_a_restart_until_decided(make_chat):
    """Trial: a proposal the user had not accepted or dismissed was gone once the app restarted.
    The undecided ones and the dismissed ones are kept with the conversation; a decided one is not
    offered again."""
    chat = make_chat()
    worker = chat.worker
    chat.turns.send("My name is Ada and I live in Lisbon. My budget is 1,200 euros.")
    worker.reply_finished.emit(worker.last_id, finished("Noted!"), record())
    summary = "Her name is Ada and she lives in Lisbon. The budget is 1,200 euros. Flights leave at 9."
    worker.summary_finished.emit(worker.last_id, SummaryState(summary, 1, 20), "kept 20 tokens")
    offered = ["Her name is Ada and she lives in Lisbon.", "The budget is 1,200 euros.", "Flights leave at 9."]
    assert chat.recorded.of("notes_proposed")[-1] == (offered,)
    chat.notes.dismiss("Flights leave at 9.")
    first = chat.conversation_id
    chat.close()

    again = make_chat()  # a restart: a new Chat (and Conversations) on the same database
    assert again.conversations.reopen(first)
    assert again.recorded.of("notes_proposed")[-1] == (offered[:2],)
    again.notes.accept("The budget is 1,200 euros.")
    again.notes.dismiss("Her name is Ada and she lives in Lisbon.")
    assert again.recorded.of("notes_proposed")[-1] == ([],)
    again.worker.summary_finished.emit(1, SummaryState(summary, 1, 20), "kept")  # the same facts again
    assert again.recorded.of("notes_proposed")[-1] == ([],)  # pinned or dismissed: not offered again
    again.close()

    third = make_chat()
    third.conversations.reopen(first)
    assert third.notes.proposals == [] and third.pinned_notes == "The budget is 1,200 euros."
    assert third.store.note_proposals(first) == ([], {"Flights leave at 9.",
                                                      "Her name is Ada and she lives in Lisbon."})


def test_summarize_now_folds_the_answered_turns_before_a_refused_message_left_at_the_end(chat):
    """New-user trial: 4 answered turns, then a paste too long for the context, refused and left
    in the chat. Back in that chat "Summarize now" counted 3 turns to fold, then folded nothing
    ("the last 2 turns stay as they are"): the paste was sent as the newest turn, too long for
    any window. It is no history (the next Send withdraws it): the count leaves it out, and so does
    the request, so the two oldest turns fold and the two newest answered turns stay."""
    from tests.chat.test_turns import LONG_PASTE, answered, refusal

    worker, seen = chat.worker, chat.recorded
    questions = ["q1", "q2", "q3", "q4"]
    for question in questions:
        answered(chat, question, f"a{question[1]}")
    assert seen.of("foldable_changed")[-1] == (2, 0, 2)
    chat.turns.send(LONG_PASTE)
    worker.turn_refused.emit(worker.last_id, refusal(cause="positions", reason_kind="message", max_new_tokens_fit=None,
                                                     facts=dict(message=40_020, context=8_192, max_new_tokens=512,
                                                                summary_reserve=512, room=7_168, shorten_by=32_852)))
    home = chat.conversation_id
    chat.conversations.new_conversation()
    chat.conversations.open_conversation(home)  # come back: the refused paste is still at the end
    assert chat.conversation.messages[-1].content == LONG_PASTE
    assert seen.of("foldable_changed")[-1] == (2, 0, 2)  # the paste is not one of the turns kept

    chat.turns.summarize_now()
    request = worker.requests[-1]
    assert request.summarize_only
    assert [m.content for m in request.messages] == ["q1", "a1", "q2", "a2", "q3", "a3", "q4", "a4"]
    worker.summary_started.emit(request.request_id, 2)
    worker.summary_finished.emit(request.request_id, SummaryState("q1 and q2 were asked.", 3, 6),
                                 "history 60 → 6 tokens")
    assert chat.summary == SummaryState("q1 and q2 were asked.", 3, 6)
    assert chat.store.load_conversation(home).summary == chat.summary
    assert seen.of("foldable_changed")[-1] == (0, 2, 2)  # the two newest answered turns stay
    chat.turns.summarize_now()  # nothing left to fold: said, not asked
    assert worker.requests[-1] is request and "Nothing to summarize yet" in seen.of("notice")[-1][0]
    chat.turns.send("q5")  # the paste is withdrawn, as before
    assert [m.content for m in worker.requests[-1].messages][-3:] == ["q4", "a4", "q5"]


NO_ROOM_VERDICT = ("no room for a summary: the request takes more than the context of 64 tokens less the "
                   "summary's cap of 8")


def test_no_room_for_a_summary_is_said_once_per_chat_never_as_an_error(chat):
    """New-user trial: a 64-token model said "The summary of earlier turns could not be written"
    as an error after every turn. No room for a summary request is a limit of the context: said
    once in the transcript, then only in the status bar; the summary is neither changed nor saved."""
    worker, seen = chat.worker, chat.recorded
    said = ("Older turns leave the window without a summary: this model's context is too small to write one.")
    chat.turns.send("hello")
    worker.reply_finished.emit(worker.last_id, finished("Hi!"), record())
    worker.summary_finished.emit(worker.last_id, SummaryState(), NO_ROOM_VERDICT)
    assert seen.of("notice")[-1] == (said, "info")
    chat.turns.send("ok")
    worker.reply_finished.emit(worker.last_id, finished("Fine."), record())
    worker.summary_finished.emit(worker.last_id, SummaryState(), NO_ROOM_VERDICT)
    assert seen.of("notice")[-1] == (said, "status")
    assert not [n for n in seen.of("notice") if n[1] == "error"]
    assert chat.summary == SummaryState() and seen.of("summarizing_changed")[-1] == (False,)
    assert chat.store.load_conversation(chat.conversation_id).summary == SummaryState()
    chat.conversations.new_conversation()  # another chat is told once too
    chat.turns.send("hi again")
    worker.reply_finished.emit(worker.last_id, finished("Hello."), record())
    worker.summary_finished.emit(worker.last_id, SummaryState(), NO_ROOM_VERDICT)
    assert seen.of("notice")[-1] == (said, "info")
