"""Documents attached to a turn reach its prompt (app.engine.documents.turn through the TurnRunner):
whole when they fit what the turn leaves, retrieved when they do not, and said before the plan."""

import threading

import pytest

from app.core.conversation import Message, Role
from app.core.history import SummaryState
from app.core.settings import GenerationSettings
from app.engine.documents.fit import RETRIEVED, WHOLE
from app.engine.documents.source import ExtractedDocument
from app.engine.events import DocumentsFitted, TurnCompleted, TurnFailed, TurnPlanned
from app.engine.local.turn_runner import TurnRunner
from app.engine.memory.probe import CpuProbe

SETTINGS = GenerationSettings(max_new_tokens=4, temperature=0.0)


def run(tiny_loaded, documents, question="What is the pass code?"):
    runner = TurnRunner(tiny_loaded, CpuProbe())
    events = list(runner.run_turn([Message(Role.USER, question)], SummaryState(), SETTINGS, threading.Event(),
                                  documents=documents))
    fitted = next(e for e in events if isinstance(e, DocumentsFitted))
    plan = next(e for e in events if isinstance(e, TurnPlanned)).plan
    assert events.index(fitted) < events.index(next(e for e in events if isinstance(e, TurnPlanned)))
    assert isinstance(events[-1], TurnCompleted)
    return fitted.fits, tiny_loaded.tokenizer.decode(list(plan.prompt_ids)), plan


def test_a_small_document_goes_into_the_prompt_whole(tiny_loaded):
    note = ExtractedDocument("note.txt", "text", "The pass code is 4711.\nKeep it safe.\n")
    (fit,), prompt, plan = run(tiny_loaded, (note,))
    assert fit.mode == WHOLE and fit.name == "note.txt" and 10 < fit.tokens < 60
    assert 'Attached document "note.txt" (whole):\nThe pass code is 4711.\nKeep it safe.' in prompt
    assert "Question: What is the pass code?" in prompt and plan.admitted


def test_a_document_with_control_token_text_is_counted_as_the_prompt_sends_it(tiny_loaded):
    """A pasted chat log's "<|im_end|>" is text in the prompt (chat_format.encode_messages): the
    document's count is its characters', and the prompt holds the template's control tokens only."""
    from app.engine.documents.turn import whole_tokens

    log_text = "user said hi<|im_end|>\n<|im_start|>assistant\nThe pass code is 4711.<|im_end|>\n"
    note = ExtractedDocument("chat.log", "text", log_text)
    (fit,), prompt, plan = run(tiny_loaded, (note,))
    assert fit.mode == WHOLE and log_text.strip() in prompt
    im_end = tiny_loaded.tokenizer.convert_tokens_to_ids("<|im_end|>")
    plain = run(tiny_loaded, (ExtractedDocument("chat.log", "text", "user said hi\n"),))[2]
    assert list(plan.prompt_ids).count(im_end) == list(plain.prompt_ids).count(im_end)
    runner = TurnRunner(tiny_loaded, CpuProbe())
    assert whole_tokens(runner.foresight, note) > len(tiny_loaded.tokenizer.encode(
        log_text, add_special_tokens=False)) + 3 * 4  # three literals, ~7 tokens each rather than 1


def test_a_document_larger_than_the_turn_leaves_is_retrieved_within_the_budget(tiny_loaded):
    filler = "".join(f"Section {i}\n\nThe weather report for day {i} says rain and wind.\n\n" for i in range(60))
    text = filler + "Vault\n\nThe pass code is 4711.\n\n" + filler
    manual = ExtractedDocument("manual.md", "markdown", text)
    (fit,), prompt, plan = run(tiny_loaded, (manual,))
    # the tiny model's 512-token context: 512 − 4 new − 64 summary reserve = 444 prompt tokens,
    # at most 3/4 of them for the document
    assert fit.mode == RETRIEVED and fit.whole_tokens > 444 and 0 < fit.tokens <= 444 * 3 // 4
    assert "The pass code is 4711." in prompt and "(chosen for this question)" in prompt
    assert len(plan.prompt_ids) <= 444 and plan.admitted



def test_a_document_of_one_stopword_or_one_letter_does_not_fail_the_turn(tiny_loaded):
    """New-user trial 11: "the.txt" (only "the") or "x.txt" attached failed the whole answer, alone
    or beside other files ("reply failed: max() arg is an empty sequence"). They go whole."""
    note = ExtractedDocument("note.txt", "text", "The pass code is 4711.\n")
    for tiny in ("the", "x"):
        (fit,), prompt, _ = run(tiny_loaded, (ExtractedDocument(f"{tiny}.txt", "text", tiny),),
                                "What does the file say?")
        assert fit.mode == WHOLE and f'Attached document "{tiny}.txt" (whole):\n{tiny}' in prompt
    fits, prompt, _ = run(tiny_loaded, (ExtractedDocument("the.txt", "text", "the"), note,
                                        ExtractedDocument("x.txt", "text", "x")))
    assert [f.mode for f in fits] == [WHOLE] * 3 and "The pass code is 4711." in prompt


def test_documents_that_cannot_be_fitted_fail_the_turn_with_their_traceback_in_the_log(
        tiny_loaded, monkeypatch, caplog):
    """New-user trial 11: an unexpected ValueError while fitting the documents was taken for
    "nothing left to answer": the turn failed with its bare message and no traceback anywhere,
    though the window said the details were in the log."""
    from app.engine.documents import turn

    def broken(*_args):
        raise ValueError("max() arg is an empty sequence")

    monkeypatch.setattr(turn, "fit_documents", broken)
    runner = TurnRunner(tiny_loaded, CpuProbe())
    with caplog.at_level("ERROR", logger="app.engine.local.turn_runner"):
        events = list(runner.run_turn([Message(Role.USER, "What does the file say?")], SummaryState(), SETTINGS,
                                      threading.Event(), documents=(ExtractedDocument("x.txt", "text", "x"),)))
    assert isinstance(events[-1], TurnFailed) and len(events) == 1
    assert events[-1].reason == "ValueError: max() arg is an empty sequence"
    [record] = caplog.records
    assert record.exc_info[0] is ValueError and "broken" in caplog.text  # the traceback


def vault_manual(sections: int = 300) -> ExtractedDocument:
    """~100 KB of look-alike sections with one that holds the pass code, in the middle."""
    parts = [f"## Section {i}\n\nThe weather report for day {i} says rain and wind over the hills, "
             f"with {i % 17} millimetres by the evening and a cold night after.\n\n" for i in range(sections)]
    parts.insert(sections // 2, "## Vault\n\nThe pass code for the vault is 4711.\n\n")
    return ExtractedDocument("manual.md", "markdown", "".join(parts))


def planned(runner, messages, documents, settings=None):
    """The DocumentsFitted and TurnPlanned of a turn; nothing is generated."""
    fitted = None
    turn = runner.run_turn(messages, SummaryState(), settings or GenerationSettings(), threading.Event(),
                           documents=documents)
    for event in turn:
        if isinstance(event, DocumentsFitted):
            fitted = event.fits
        if isinstance(event, TurnPlanned):
            turn.close()
            return fitted, event.plan
    raise AssertionError("no plan")


def test_the_excerpt_that_matches_brings_its_surroundings_on_the_default_model(real_loaded):
    """New-user trial: a question whose words one chunk holds sent 1 excerpt of 118 while the
    turn had room for far more; the chunks around it now fill that room, up to EXCERPTS_MAX_TOKENS."""
    from app.core.document_prompt import EXCERPTS_MAX_TOKENS

    ((fit,), plan) = planned(TurnRunner(real_loaded, CpuProbe()),
                             [Message(Role.USER, "What is the pass code for the vault?")], (vault_manual(),))
    ids = [c.id for c in fit.chunks]
    vault = next(c.id for c in fit.chunks if "4711" in c.text)
    assert fit.mode == RETRIEVED and len(ids) >= 12 and fit.total_chunks > 100
    assert ids == list(range(ids[0], ids[-1] + 1)) and ids[0] < vault < ids[-1]  # one run around it
    assert EXCERPTS_MAX_TOKENS - 2 * max(c.tokens for c in fit.chunks) < fit.tokens <= EXCERPTS_MAX_TOKENS
    assert plan.admitted and len(plan.prompt_ids) <= plan.window.limit_tokens


def test_excerpts_take_the_room_the_window_leaves_and_push_no_turn_out(real_loaded):
    """Before, every chunk sharing a word with the recent turns ("day") was a hit, and the
    excerpts took 3/4 of the prompt, pushing 9 of 11 turns out of a long chat."""
    runner = TurnRunner(real_loaded, CpuProbe())
    answer = "It rained, and the wind was strong over the hills all day long. " * 40  # ~560 tokens
    history = [m for n in range(9) for m in (Message(Role.USER, f"Tell me about day {n}."),
                                               Message(Role.ASSISTANT, answer))]
    messages = [*history, Message(Role.USER, "What is the pass code for the vault?")]
    alone = runner.foresight.plan(messages, SummaryState(), "", GenerationSettings().max_new_tokens, 0)
    room = alone.window.limit_tokens - alone.window.prompt_tokens
    assert alone.window.fits and not alone.window.evicted and 1100 < room < 2000
    ((fit,), plan) = planned(runner, messages, (vault_manual(),))
    assert "4711" in fit.block and len(fit.chunks) > 5 and room - 300 < fit.tokens <= room
    assert not plan.window.evicted and len(plan.window.kept) == 10  # the excerpts took only the room left


def test_the_next_prompt_is_counted_with_the_attached_documents_as_the_turn_sends_them(tiny_loaded, monkeypatch):
    """Trial 5: the context meter left out the files attached to the message being written.
    count_window counts ≈ what the turn adds for them (a small note whole, a long manual as the
    excerpts it may take), each document tokenized once."""
    from app.engine.documents import turn as documents_turn

    history = [Message(Role.USER, "Capital of France?"), Message(Role.ASSISTANT, "Paris.")]
    note = ExtractedDocument("note.txt", "text", "The pass code is 4711.\nKeep it safe.\n")
    filler = "".join(f"Section {i}\n\nThe weather report for day {i} says rain and wind.\n\n" for i in range(60))
    manual = ExtractedDocument("manual.md", "markdown", filler + "Vault\n\nThe pass code is 4711.\n\n" + filler)
    runner = TurnRunner(tiny_loaded, CpuProbe())
    counted_calls = []
    whole = documents_turn.whole_tokens
    monkeypatch.setattr(documents_turn, "whole_tokens", lambda f, d: (counted_calls.append(d.name), whole(f, d))[1])
    plain = runner.count_window(history, SummaryState(), SETTINGS)
    rows = []
    for documents in ((note,), (manual,)):
        counted = runner.count_window(history, SummaryState(), SETTINGS, documents=documents)
        fits, plan = planned(runner, [*history, Message(Role.USER, "?")], documents, SETTINGS)
        sent = plan.window.prompt_tokens  # the turn: its documents, the question "?" and the turns kept
        rows.append((counted.prompt_tokens, sent, fits[0].mode))
        assert counted.limit_tokens == plain.limit_tokens and counted.prompt_tokens <= counted.limit_tokens
    (note_counted, note_sent, note_mode), (manual_counted, manual_sent, manual_mode) = rows
    assert note_mode == WHOLE and manual_mode == RETRIEVED
    assert note_counted > plain.prompt_tokens + 10
    assert abs(note_counted - note_sent) <= 12, rows  # the question and its template are not written yet
    assert manual_counted > plain.prompt_tokens + 100 and abs(manual_counted - manual_sent) <= 40, rows
    runner.count_window(history, SummaryState(), SETTINGS, documents=(note, manual))
    assert sorted(counted_calls) == ["manual.md", "note.txt"]  # once each: the meter recounts often


def test_a_new_chats_first_message_is_counted_with_its_documents(tiny_loaded):
    """A tester: in a new chat the token line left out the file attached to the first message.
    count_window counts an empty chat as its first turn with the documents (the question not
    written yet), close to what that turn sends; with no documents there is still no turn."""
    note = ExtractedDocument("note.txt", "text", "The pass code is 4711.\nKeep it safe.\n" * 8)
    runner = TurnRunner(tiny_loaded, CpuProbe())
    counted = runner.count_window([], SummaryState(), SETTINGS, documents=(note,))
    fits, plan = planned(runner, [Message(Role.USER, "?")], (note,), SETTINGS)
    assert fits[0].mode == WHOLE and counted.prompt_tokens > 100
    assert abs(counted.prompt_tokens - plan.window.prompt_tokens) <= 6, (counted.prompt_tokens,
                                                                        plan.window.prompt_tokens)
    with pytest.raises(ValueError):
        runner.count_window([], SummaryState(), SETTINGS)


def test_a_turn_that_cannot_be_planned_leaves_its_traceback_in_the_log(tiny_loaded, monkeypatch, caplog):
    """A ValueError while planning ends the turn as "nothing left to answer" does; the window then
    says the details are in the log, so the log has the traceback too (new-user trial 11), from
    the local model and from a server alike."""
    from app.core.backend_settings import RemoteSettings
    from app.engine.remote.backend import RemoteBackend

    runner = TurnRunner(tiny_loaded, CpuProbe())
    with caplog.at_level("WARNING"):
        events = list(runner.run_turn([], SummaryState(), SETTINGS, threading.Event()))
    assert isinstance(events[-1], TurnFailed) and len(events) == 1
    assert [r.exc_info[0] for r in caplog.records if r.exc_info] == [ValueError]

    remote = RemoteBackend(RemoteSettings("http://127.0.0.1:9", "model"))
    remote.report = object()  # connected
    monkeypatch.setattr(remote, "plan", lambda *_args: (_ for _ in ()).throw(ValueError("bad count")))
    caplog.clear()
    with caplog.at_level("WARNING"):
        events = list(remote.run_turn([Message(Role.USER, "hi")], SummaryState(), SETTINGS, threading.Event()))
    assert [e.reason for e in events] == ["bad count"]
    assert [r.exc_info[0] for r in caplog.records if r.exc_info] == [ValueError]
