"""Files attached to the next message: read off the GUI thread, taken by Send, refused in one
line when they cannot be read, and how each went into the turn said in the transcript."""

from app.core.chunking import chunk_document
from app.engine.documents.fit import fit_document


def attached(qtbot, chat, path):
    """Attach `path` and wait until it is read (or refused)."""
    chat.attachments.add([str(path)])
    qtbot.waitUntil(lambda: not chat.attachments.reading)


def test_an_attached_file_is_read_off_the_gui_thread_and_goes_with_the_next_message(qtbot, chat, tmp_path):
    note = tmp_path / "note.md"
    note.write_text("# Vault\n\nThe pass code is 4711.\n", encoding="utf-8")
    attached(qtbot, chat, note)
    [(ticket, name, status)] = [e for e in chat.recorded.of("attachment_changed") if e[2] != "reading…"][-1:]
    assert name == "note.md" and status == "32 characters"
    chat.turns.send("What is the pass code?")
    request = chat.worker.requests[-1]
    assert [d.text for d in request.documents] == ["# Vault\n\nThe pass code is 4711.\n"]
    assert request.messages[-1].content == "What is the pass code?"  # the document joins it in the worker
    assert chat.recorded.of("attachment_changed")[-1] == (ticket, "note.md", "")  # the chip goes
    chat.worker.reply_finished.emit(chat.worker.last_id, *finished_pair())
    chat.turns.send("And again?")
    assert chat.worker.requests[-1].documents == ()  # it went with that message only


def finished_pair():
    from tests.chat.conftest import finished, record

    return finished(), record()


def test_a_file_that_cannot_be_attached_is_said_in_one_line_and_nothing_changes(qtbot, chat, tmp_path):
    blob = tmp_path / "weights.bin"
    blob.write_bytes(bytes(range(256)) * 64)
    attached(qtbot, chat, blob)
    [(text, kind)] = chat.recorded.of("notice")
    assert kind == "error" and text.startswith("Could not attach weights.bin: ") and "\n" not in text
    assert chat.recorded.of("attachment_changed")[-1][2] == ""
    chat.turns.send("Hello")
    assert chat.worker.requests[-1].documents == ()


def test_a_damaged_pdf_is_said_in_the_windows_words_and_the_readers_own_go_to_the_log(qtbot, chat, tmp_path,
                                                                                     caplog):
    """New-user trial 10: "fake.pdf 첨부 실패: 이 PDF 파일을 읽을 수 없습니다(Stream has ended
    unexpectedly)", pypdf's English inside the Korean sentence. The sentence says what it means
    in the window's language; pypdf's words are in the log."""
    damaged = tmp_path / "fake.pdf"
    damaged.write_bytes(b"%PDF-1.4\ngarbage\n")
    with caplog.at_level("INFO", logger="app.chat.attachments"):
        attached(qtbot, chat, damaged)
    assert chat.recorded.of("notice") == [
        ("Could not attach fake.pdf: this PDF file cannot be read (it may be damaged or incomplete)", "error")]
    assert "fake.pdf: this PDF cannot be read (Stream has ended unexpectedly)" in caplog.text


def test_a_file_the_os_refuses_is_said_in_plain_words_not_the_oss(monkeypatch, tmp_path):
    """The OS's strerror ("Permission denied") was put in the sentence as it came, English in the
    Korean window too; it is said as a save failure says it."""
    import errno
    from pathlib import Path

    from app.chat.document_refusal import refusal_reason
    from app.engine.documents.extract import extract_file
    from app.engine.documents.source import UNREADABLE, DocumentError

    locked = tmp_path / "locked.txt"
    locked.write_text("secret", encoding="utf-8")

    def refuse(self, *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(self))

    monkeypatch.setattr(Path, "open", refuse)
    try:
        extract_file(locked)
    except DocumentError as error:
        assert (error.kind, error.facts) == (UNREADABLE, {"errno": errno.EACCES})
        assert refusal_reason(error) == "the file cannot be read (permission denied)"
        assert str(error) == "locked.txt: the file cannot be read (Permission denied)"  # the log's line
    else:
        raise AssertionError("no DocumentError")
    odd = DocumentError(UNREADABLE, "f", "the file cannot be read (Stale file handle)", "Stale file handle",
                        errno=errno.ESTALE)
    # an errno not known: plain words, the OS's own quoted as the detail (they alone were English)
    assert refusal_reason(odd) == "the file cannot be read (the system reported “Stale file handle”)"


def test_sending_while_a_file_is_read_keeps_the_message_in_the_composer(qtbot, chat, tmp_path, monkeypatch):
    import threading

    from app.chat import attachments

    release = threading.Event()
    real = attachments.extract_file
    monkeypatch.setattr(attachments, "extract_file", lambda *a, **k: (release.wait(10), real(*a, **k))[1])
    note = tmp_path / "slow.txt"
    note.write_text("slow to read", encoding="utf-8")
    chat.attachments.add([str(note)])
    chat.turns.send("Summarise it")
    assert chat.worker.requests == [] and chat.recorded.of("text_withdrawn") == [("Summarise it",)]
    assert chat.recorded.of("notice")[-1] == ("slow.txt is still being read: send again when it is ready", "warning")
    release.set()
    qtbot.waitUntil(lambda: not chat.attachments.reading)
    chat.turns.send("Summarise it")
    assert [d.name for d in chat.worker.requests[-1].documents] == ["slow.txt"]


def test_removing_an_attachment_cancels_its_read_and_drops_it(qtbot, chat, tmp_path):
    note = tmp_path / "note.txt"
    note.write_text("text", encoding="utf-8")
    attached(qtbot, chat, note)
    ticket = chat.recorded.of("attachment_changed")[-1][0]
    chat.attachments.remove(ticket)
    chat.turns.send("Hi")
    assert chat.worker.requests[-1].documents == ()


def test_how_each_document_went_in_is_said_on_its_question(chat):
    """Said on the question the files went with (the last user message of the path: the
    transcript drops a note when its file is removed, trial 5)."""
    from app.core.conversation import Message, Role

    def count(text):
        return len(text.split())

    small = chunk_document("The pass code is 4711.", count, max_tokens=16, overlap_tokens=0)
    large = chunk_document(" ".join(f"word{i}" for i in range(400)), count, max_tokens=40, overlap_tokens=0)
    fits = (fit_document("note.txt", small, 100, ["pass"], count),
            fit_document("manual.pdf", large, 100, ["word7"], count))
    chat.conversation.messages[:] = [Message(Role.USER, "Hi"), Message(Role.ASSISTANT, "Hello"),
                                     Message(Role.USER, "What is the code?")]
    chat.worker.documents_fitted.emit(1, fits)
    whole, retrieved = chat.recorded.of("document_noted")
    assert whole == (2, "note.txt", f"note.txt: whole file, {fits[0].tokens} tokens")
    assert retrieved == (2, "manual.pdf", f"manual.pdf: too large for this turn ({fits[1].whole_tokens} tokens): "
                         f"retrieving {len(fits[1].chunks)} of {len(large)} excerpts, {fits[1].tokens} tokens")
    assert chat.recorded.of("notice") == []
    assert fits[1].mode == "retrieved" and 0 < fits[1].tokens <= 100


def manual_fits(question_terms=("word7",)):
    """A small note sent whole and a long manual retrieved: DocumentFits as the worker reports them."""
    def count(text):
        return len(text.split())

    small = chunk_document("The pass code is 4711.", count, max_tokens=16, overlap_tokens=0)
    large = chunk_document(" ".join(f"word{i}" for i in range(400)), count, max_tokens=40, overlap_tokens=0)
    return (fit_document("note.txt", small, 100, ["pass"], count),
            fit_document("manual.txt", large, 100, list(question_terms), count))


def test_attachments_are_stored_with_their_message_and_shown_again_when_the_chat_reopens(qtbot, chat, tmp_path):
    note = tmp_path / "note.md"
    note.write_text("# Vault\n\nThe pass code is 4711.\n", encoding="utf-8")
    attached(qtbot, chat, note)
    chat.turns.send("What is the pass code?")
    assert chat.recorded.of("message_documents")[-1][0] == 0
    assert [d.name for d in chat.recorded.of("message_documents")[-1][1]] == ["note.md"]
    chat.worker.reply_finished.emit(chat.worker.last_id, *finished_pair())
    cid = chat.conversation_id
    chat.conversations.new_conversation()
    chat.conversations.open_conversation(cid)
    question = chat.recorded.of("conversation_loaded")[-1][0][0]
    assert [(d.name, d.kind, d.text) for d in question.documents] == [
        ("note.md", "markdown", "# Vault\n\nThe pass code is 4711.\n")]


def test_edit_and_regenerate_send_the_questions_documents_again(qtbot, chat, tmp_path):
    note = tmp_path / "note.txt"
    note.write_text("The pass code is 4711.", encoding="utf-8")
    attached(qtbot, chat, note)
    chat.turns.send("What is the pass code?")
    chat.worker.reply_finished.emit(chat.worker.last_id, *finished_pair())
    chat.turns.regenerate(1)
    assert [d.name for d in chat.worker.requests[-1].documents] == ["note.txt"]
    chat.worker.reply_finished.emit(chat.worker.last_id, *finished_pair())
    chat.turns.edit(0, "Which code opens the vault?")
    assert [d.name for d in chat.worker.requests[-1].documents] == ["note.txt"]
    chat.worker.reply_finished.emit(chat.worker.last_id, *finished_pair())
    stored = chat.store.load_conversation(chat.conversation_id).conversation.messages
    assert stored[0].content == "Which code opens the vault?" and [d.name for d in stored[0].documents] == ["note.txt"]


def test_a_sent_document_can_be_removed_and_is_not_sent_again(qtbot, chat, tmp_path):
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text(f"text of {name}", encoding="utf-8")
        attached(qtbot, chat, tmp_path / name)
    chat.turns.send("Compare them")
    chat.worker.reply_finished.emit(chat.worker.last_id, *finished_pair())
    offers = []
    chat.attachments.removal_undoable.connect(offers.append)
    chat.attachments.remove_sent(0, 0)
    assert [d.name for d in chat.recorded.of("message_documents")[-1][1]] == ["b.txt"]
    assert offers == ["a.txt"]  # the window says it, with Undo
    stored = chat.store.load_conversation(chat.conversation_id).conversation.messages[0]
    assert [d.name for d in stored.documents] == ["b.txt"]
    chat.turns.regenerate(1)
    assert [d.name for d in chat.worker.requests[-1].documents] == ["b.txt"]


def test_an_answer_keeps_the_excerpts_it_was_given_and_the_export_holds_them_and_the_documents(
        qtbot, chat, tmp_path):
    import json

    (tmp_path / "manual.txt").write_text(" ".join(f"word{i}" for i in range(400)), encoding="utf-8")
    attached(qtbot, chat, tmp_path / "manual.txt")
    chat.turns.send("What follows word7?")
    fits = manual_fits()
    chat.worker.documents_fitted.emit(chat.worker.last_id, fits)
    chat.worker.reply_finished.emit(chat.worker.last_id, *finished_pair())
    [(sources,)] = chat.recorded.of("reply_sources")
    assert [(s.name, s.chunk_id) for s in sources] == [("manual.txt", c.id) for c in fits[1].chunks]
    assert "word7" in "".join(s.text for s in sources)  # the excerpt's text, to show when clicked
    reloaded = chat.store.load_conversation(chat.conversation_id).conversation.messages[1]
    assert reloaded.sources == sources
    exported = json.loads(chat.store.export_json(chat.conversation_id))
    assert exported["messages"][0]["documents"][0]["name"] == "manual.txt"
    assert exported["messages"][0]["documents"][0]["text"].startswith("word0 word1")
    assert [s["chunk_id"] for s in exported["messages"][1]["sources"]] == [c.id for c in fits[1].chunks]
    markdown = chat.store.export_markdown(chat.conversation_id)
    assert "<summary>Attached: manual.txt</summary>" in markdown and "word399" in markdown
    assert f"Sources: manual.txt #{fits[1].chunks[0].id}" in markdown


def test_removing_a_sent_file_drops_its_excerpts_text_from_the_answer_shown_and_stored(qtbot, chat, tmp_path):
    """Product trial: a file removed for privacy still showed its words under the answer it fed.
    The answer's text stays; its sources only name the file as removed, shown and stored."""
    (tmp_path / "note.txt").write_text("The pass code is 4711.", encoding="utf-8")
    (tmp_path / "manual.txt").write_text(" ".join(f"word{i}" for i in range(400)), encoding="utf-8")
    attached(qtbot, chat, tmp_path / "note.txt")
    attached(qtbot, chat, tmp_path / "manual.txt")
    chat.turns.send("What follows word7?")
    fits = manual_fits()
    chat.worker.documents_fitted.emit(chat.worker.last_id, fits)
    chat.worker.token_streamed.emit(chat.worker.last_id, "word8.")
    chat.worker.reply_finished.emit(chat.worker.last_id, *finished_pair())
    assert "word12 word13" in chat.store.export_json(chat.conversation_id)  # before: the excerpt text is kept
    chat.attachments.remove_sent(0, 1)  # manual.txt
    [(index, sources)] = chat.recorded.of("message_sources")
    assert index == 1 and sources == chat.conversation.messages[1].sources
    assert [(s.name, s.chunk_id, s.removed, s.text, s.heading) for s in sources] == [
        ("manual.txt", c.id, True, "", "") for c in fits[1].chunks]
    stored = chat.store.load_conversation(chat.conversation_id).conversation.messages
    assert stored[1].content == "word8." and stored[1].sources == sources  # the answer stays
    assert "word12 word13" not in chat.store.export_json(chat.conversation_id)
    assert "word12 word13" not in chat.store.export_markdown(chat.conversation_id)
    chat.attachments.remove_sent(0, 0)  # note.txt was sent whole: no excerpt, nothing to change
    assert len(chat.recorded.of("message_sources")) == 1


def test_every_refusal_reason_has_its_own_words_not_the_engine_line(tmp_path):
    from app.chat.document_refusal import LOOKS_LIKE, refusal_reason
    from app.engine.documents import source
    from app.engine.documents.extract import extract_file
    from app.engine.documents.text import _MAGIC

    assert {what for _magic, what in _MAGIC} | {"binary data"} == set(LOOKS_LIKE)  # each one translatable
    big = tmp_path / "huge.txt"
    big.write_text("x" * 300, encoding="utf-8")
    try:
        extract_file(big, max_bytes=100)
    except source.DocumentError as error:
        assert refusal_reason(error) == "the file is 300 B; files up to 100 B can be attached"
        assert str(error) == "huge.txt: the file is 300 B; files up to 100 B can be attached"  # the log's line
    lines = {refusal_reason(source.DocumentError(kind, "f", "engine line", "x")) for kind in
             (source.BINARY, source.NOT_UTF8, source.ENCRYPTED, source.NO_TEXT_LAYER, source.DAMAGED, source.EMPTY,
              source.UNREADABLE, source.CANCELLED, source.MISNAMED)}
    assert len(lines) == 9 and "engine line" not in lines
    mixed = refusal_reason(source.DocumentError(source.NOT_UTF8, "f", "engine line", source.MIXED_UTF8))
    assert mixed == ("it is UTF-8 text with some bytes that are not: the file may be damaged or mix encodings; fix or "
                     "remove those bytes and attach it again")  # not "save it as UTF-8", which it is (new-user trial)


def test_a_latin1_file_is_read_and_a_text_named_pdf_is_refused_in_honest_words(qtbot, chat, tmp_path):
    """New-user trial: Latin-1 text was refused although it was plain Western text; a text file
    named .pdf went in as text, with no word that it was not a PDF."""
    latin1, fake_pdf = tmp_path / "notes.txt", tmp_path / "report.pdf"
    latin1.write_bytes("Die Größe der Straße ist schön.\n".encode("latin-1") * 20)
    fake_pdf.write_text("Quarterly figures: revenue up 4 %.\n", encoding="utf-8")
    attached(qtbot, chat, latin1)
    attached(qtbot, chat, fake_pdf)
    assert chat.recorded.of("notice") == [
        ("notes.txt is not UTF-8: it was read as Western European text in the cp1252 encoding. If its text looks "
         "wrong, save it as UTF-8 and attach it again.", "info"),
        ("Could not attach report.pdf: its name says PDF, but it is not a PDF file; if it holds text, rename it to "
         ".txt and attach it again", "error")]
    chat.turns.send("What do they say?")
    assert [(d.name, d.text, d.encoding) for d in chat.worker.requests[-1].documents] == [
        ("notes.txt", "Die Größe der Straße ist schön.\n" * 20, "cp1252")]


def test_a_russian_cp1251_file_is_read_and_says_so(qtbot, chat, tmp_path):
    """A Russian file from old Windows Notepad (cp1251) was refused while cp949 and cp1252 were read."""
    russian = tmp_path / "протокол.txt"
    russian.write_bytes("Протокол собрания: выручка выросла.\r\n".encode("cp1251") * 20)
    attached(qtbot, chat, russian)
    assert chat.recorded.of("notice") == [
        ("протокол.txt is not UTF-8: it was read as Cyrillic text in the cp1251 encoding. If its text looks "
         "wrong, save it as UTF-8 and attach it again.", "info")]


def sent_with_two_files(qtbot, chat, tmp_path):
    """note.txt (whole) and manual.txt (excerpts) attached, "What follows word7?" sent and answered;
    returns how the files went in."""
    for name in ("note.txt", "manual.txt"):
        text = "The pass code is 4711." if name == "note.txt" else " ".join(f"word{i}" for i in range(400))
        (tmp_path / name).write_text(text, encoding="utf-8")
        attached(qtbot, chat, tmp_path / name)
    chat.turns.send("What follows word7?")
    fits = manual_fits()
    chat.worker.documents_fitted.emit(chat.worker.last_id, fits)
    chat.worker.reply_finished.emit(chat.worker.last_id, *finished_pair())
    return fits


def test_undo_puts_a_removed_file_back_exactly_on_screen_in_the_store_and_the_export(qtbot, chat, tmp_path):
    """Product trial: ✕ on a sent file removed it with no way back. Undo (offered by the window
    for a few seconds) restores its place among the message's documents, its excerpts' words
    under the answer (shown and stored), the export, and what Regenerate sends; opening another
    chat ends the offer, and an Undo then does nothing."""
    sent_with_two_files(qtbot, chat, tmp_path)
    question, answer = chat.conversation.messages
    documents, sources = question.documents, answer.sources
    exported = chat.store.export_json(chat.conversation_id)
    assert [d.name for d in documents] == ["note.txt", "manual.txt"] and "word12 word13" in exported
    ended = []
    chat.attachments.removal_final.connect(lambda: ended.append(True))
    chat.attachments.remove_sent(0, 0)
    chat.attachments.remove_sent(0, 0)  # both gone; the last one (manual.txt) can be undone
    assert question.documents == () and all(s.removed for s in answer.sources)
    assert "word12 word13" not in chat.store.export_json(chat.conversation_id)
    chat.attachments.undo_remove()
    assert question.documents == documents[1:] and answer.sources == sources
    assert chat.recorded.of("message_documents")[-1] == (0, documents[1:])
    assert chat.recorded.of("message_sources")[-1] == (1, sources)
    assert chat.recorded.of("notice")[-1] == ("manual.txt is back in this chat", "status")
    stored = chat.store.load_conversation(chat.conversation_id).conversation.messages
    assert stored[0].documents == documents[1:] and stored[1].sources == sources
    assert "word12 word13" in chat.store.export_json(chat.conversation_id)
    assert ended == [True]
    chat.attachments.undo_remove()  # once only: note.txt stays removed
    assert question.documents == documents[1:]
    chat.turns.regenerate(1)
    assert [d.name for d in chat.worker.requests[-1].documents] == ["manual.txt"]
    chat.worker.reply_finished.emit(chat.worker.last_id, *finished_pair())
    chat.attachments.remove_sent(0, 0)
    chat.conversations.new_conversation()  # another chat: the offer ends
    assert ended == [True, True]
    chat.attachments.undo_remove()
    assert chat.conversation.messages == []


def test_how_a_file_went_in_is_said_again_after_a_restart_and_goes_with_the_file(qtbot, make_chat, tmp_path):
    """Trial: "note.txt: whole file, 8 tokens" went with its file and came back with Undo, but
    was gone after a restart. It is kept with the file: said again on its question when the chat
    is reopened, not once the file is removed, again once the removal is undone."""
    chat = make_chat()
    fits = sent_with_two_files(qtbot, chat, tmp_path)
    said = chat.recorded.of("document_noted")
    assert [(index, name) for index, name, _ in said] == [(0, "note.txt"), (0, "manual.txt")]
    assert said[0][2] == f"note.txt: whole file, {fits[0].tokens} tokens"
    first = chat.conversation_id
    chat.close()

    again = make_chat()  # a restart on the same database
    again.conversations.reopen(first)
    assert again.recorded.of("document_noted") == said
    loaded = again.recorded.names()
    assert loaded.index("conversation_loaded") < loaded.index("document_noted")  # on the transcript shown
    again.attachments.remove_sent(0, 0)  # note.txt
    again.attachments.undo_remove()
    again.conversations.reopen(first)
    assert again.recorded.of("document_noted")[-2:] == said  # back with its file
    again.attachments.remove_sent(0, 0)
    again.close()

    third = make_chat()
    third.conversations.reopen(first)
    assert third.recorded.of("document_noted") == [said[1]]  # the removed file's note went with it


def test_files_of_a_refused_message_withdrawn_at_the_next_send_come_back_with_its_text(qtbot, chat, tmp_path):
    """New-user trial: the refused message's text came back to the composer, its files did not."""
    from tests.chat.test_turns import refusal

    note = tmp_path / "log.txt"
    note.write_text("ERROR disk full at 03:12\n", encoding="utf-8")
    attached(qtbot, chat, note)
    chat.turns.send("Why did it fail?")
    chat.worker.turn_refused.emit(chat.worker.last_id, refusal(cause="positions", max_new_tokens_fit=None))
    chat.recorded.clear()
    chat.turns.send("Hello")  # the refused message is withdrawn; the new one goes without its file
    assert chat.worker.requests[-1].documents == ()
    assert chat.recorded.of("text_withdrawn") == [("Why did it fail?",)]
    assert chat.recorded.of("notice")[-1] == ("Your earlier message got no answer, so it was taken out of the chat; "
                                              "its text and files are back in the message box.", "warning")
    assert [d.name for d in chat.attachments.ready] == ["log.txt"]  # attached again, read already
    assert chat.attachments.ready[0].text == "ERROR disk full at 03:12\n"
    [(ticket, name, status)] = chat.recorded.of("attachment_changed")
    assert (name, status) == ("log.txt", "25 characters")  # the composer shows its chip again
    chat.turns.send("Why did it fail?")  # sent again as it was: with its file
    assert [d.name for d in chat.worker.requests[-1].documents] == ["log.txt"]
    assert chat.recorded.of("attachment_changed")[-1] == (ticket, "log.txt", "")  # taken by Send


def test_files_of_a_refused_message_given_up_on_come_back_with_its_text(qtbot, chat, tmp_path):
    """Cancel in the remedies dialog: the message goes back to the composer with its files."""
    from tests.chat.test_turns import refusal

    note = tmp_path / "log.txt"
    note.write_text("ERROR disk full at 03:12\n", encoding="utf-8")
    attached(qtbot, chat, note)
    chat.turns.send("Why did it fail?")
    decision = refusal(cause="positions", max_new_tokens_fit=None)
    chat.worker.turn_refused.emit(chat.worker.last_id, decision)
    chat.turns.apply_remedy("cancel", decision)
    assert chat.recorded.of("text_withdrawn") == [("Why did it fail?",)]
    assert [d.name for d in chat.attachments.ready] == ["log.txt"]


def test_a_korean_file_in_cp949_is_attached_with_a_line_that_says_how_it_was_read(qtbot, chat, tmp_path):
    """New-user trial: a cp949 file from old Windows Notepad was refused ("save it as UTF-8") although
    its encoding was detected; it is read and attached, and a line and the chip say it was cp949."""
    minutes = tmp_path / "회의록.txt"
    minutes.write_bytes(("안녕하세요, 회의록입니다." * 50).encode("cp949"))
    attached(qtbot, chat, minutes)
    assert chat.recorded.of("notice") == [
        ("회의록.txt is not UTF-8: it was read as Korean text in the cp949 encoding. If its text looks wrong, "
         "save it as UTF-8 and attach it again.", "info")]
    assert chat.recorded.of("attachment_changed")[-1][1:] == ("회의록.txt", "700 characters, cp949")
    chat.turns.send("회의 날짜는?")
    assert chat.worker.requests[-1].documents[0].text == "안녕하세요, 회의록입니다." * 50


def test_a_utf8_file_gets_no_encoding_line(qtbot, chat, tmp_path):
    note = tmp_path / "note.txt"
    note.write_text("회의록입니다.\n", encoding="utf-8")
    attached(qtbot, chat, note)
    assert chat.recorded.of("notice") == []
    assert chat.recorded.of("attachment_changed")[-1][1:] == ("note.txt", "8 characters")


LONG_KOREAN = "회의록 내용을 붙여넣습니다. " * 1500  # 6,000 words: too long for the context


def refused_for_length(chat, text):
    from tests.chat.test_turns import refusal

    chat.turns.send(text)
    decision = refusal(cause="positions", reason_kind="message", max_new_tokens_fit=None, facts=dict(
        message=40_020, context=8_192, max_new_tokens=512, summary_reserve=512, room=7_168, shorten_by=32_852))
    chat.worker.turn_refused.emit(chat.worker.last_id, decision)
    chat.recorded.clear()
    return decision


def test_a_message_too_long_for_the_context_is_attached_as_a_file_when_asked(qtbot, chat, tmp_path):
    """New-user trial: ~6,000 pasted Korean words were refused with only Cancel; "Attach as a file"
    takes the message out of the chat and attaches its text (and its files) to the next message,
    where retrieval finds the passages the question needs; the message box stays empty."""
    note = tmp_path / "log.txt"
    note.write_text("ERROR disk full at 03:12\n", encoding="utf-8")
    attached(qtbot, chat, note)
    decision = refused_for_length(chat, LONG_KOREAN)
    chat.turns.apply_remedy("attach", decision)
    assert chat.conversation.messages == [] and not chat.turns.active
    assert [(d.name, d.kind, d.text, d.encoding) for d in chat.attachments.ready] == [
        ("log.txt", "text", "ERROR disk full at 03:12\n", "utf-8"),
        ("pasted text.txt", "text", LONG_KOREAN, "utf-8")]
    assert chat.recorded.of("text_withdrawn") == []  # not back in the box: it is the file now
    assert chat.recorded.of("notice") == [("Your message is attached as pasted text.txt. Write your question "
                                           "about it and send it.", "status")]
    assert [c[1:] for c in chat.recorded.of("attachment_changed")] == [("log.txt", "25 characters"),
                                                                     ("pasted text.txt", "24,000 characters")]
    chat.turns.send("다음 회의는 언제인가요?")
    request = chat.worker.requests[-1]
    assert [m.content for m in request.messages] == ["다음 회의는 언제인가요?"]
    assert [d.name for d in request.documents] == ["log.txt", "pasted text.txt"]


def test_a_second_paste_attached_as_a_file_gets_its_own_name(qtbot, chat):
    chat.turns.apply_remedy("attach", refused_for_length(chat, "first " * 10))
    chat.turns.apply_remedy("attach", refused_for_length(chat, "second " * 10))
    assert [d.name for d in chat.attachments.ready] == ["pasted text.txt", "pasted text 2.txt"]


def test_a_paste_over_what_a_file_may_bring_goes_back_to_the_box_with_the_reason(qtbot, chat, monkeypatch):
    from app.chat import attachments

    monkeypatch.setattr(attachments, "MAX_TEXT_CHARS", 100)
    chat.turns.apply_remedy("attach", refused_for_length(chat, "x" * 150))
    assert chat.attachments.ready == () and chat.conversation.messages == []
    assert chat.recorded.of("text_withdrawn") == [("x" * 150,)]
    assert chat.recorded.of("notice") == [("Could not attach pasted text.txt: its text is about 150 characters; "
                                           "up to 100 can be attached (split it, or attach the part you need)",
                                           "error")]


def test_a_file_attached_but_not_sent_stays_with_its_chat(qtbot, chat, tmp_path):
    """New-user trial: a file attached in one chat, then another chat opened, went out with that
    chat's next message. It is set aside with its chat and comes back with it."""
    from tests.chat.test_conversations import seed

    secret = tmp_path / "private.txt"
    secret.write_text("salary: 1234\n", encoding="utf-8")
    chat.turns.send("hello")  # chat 1 is stored
    chat.worker.reply_finished.emit(chat.worker.last_id, *finished_pair())
    first = chat.conversation_id
    attached(qtbot, chat, secret)
    [ticket] = {e[0] for e in chat.recorded.of("attachment_changed")}
    chat.conversations.open_conversation(seed(chat.store, "cats"))
    assert chat.recorded.of("attachment_changed")[-1] == (ticket, "private.txt", "")  # its chip goes
    assert chat.attachments.ready == ()
    chat.turns.send("Tell me more")
    assert chat.worker.requests[-1].documents == ()
    chat.worker.reply_finished.emit(chat.worker.last_id, *finished_pair())
    chat.conversations.new_conversation()
    assert chat.attachments.ready == ()
    chat.conversations.open_conversation(first)
    assert chat.recorded.of("attachment_changed")[-1] == (ticket, "private.txt", "13 characters")
    chat.turns.send("What is in it?")
    assert [d.name for d in chat.worker.requests[-1].documents] == ["private.txt"]


def test_a_remote_chat_refuses_attached_files_before_sending_and_keeps_text_and_files(qtbot, chat, tmp_path):
    """Trial 15: a remote chat sent the message with its file, then said only "The answer failed. The
    details are in the log" (the worker's "attached documents are read by the local model only"). Now
    nothing is sent: the text goes back to the composer, the file stays attached, and the notice says
    what to do; the worker's own refusal (a retry of such a message) is said in the same words."""
    from dataclasses import replace

    from app.chat.error_text import plain_failure
    from app.core.backend_settings import REMOTE, BackendSettings, RemoteSettings

    note = tmp_path / "note.md"
    note.write_text("The pass code is 4711.\n", encoding="utf-8")
    attached(qtbot, chat, note)
    chat.settings = replace(chat.settings, backend=BackendSettings(REMOTE, RemoteSettings("http://gpu-box:8000/v1",
                                                                                           "m")))
    sent_before = len(chat.worker.requests)
    chat.turns.send("What is the pass code?")
    assert len(chat.worker.requests) == sent_before and chat.conversation.messages == []
    assert chat.recorded.of("text_withdrawn")[-1] == ("What is the pass code?",)
    assert [d.name for d in chat.attachments.ready] == ["note.md"]
    said, kind = chat.recorded.of("notice")[-1]
    assert kind == "error" and said.startswith("Attached files are read by the local model only")
    assert plain_failure("attached documents are read by the local model only").what.startswith(
        "Attached files are read by the local model only")
