"""A conversation end to end in the window against a real OpenAI-compatible server (`transformers
serve` on the default model, 127.0.0.1): streaming, Stop, a summary of evicted turns, the
backend kept per conversation, the status bar and the memory panel saying what answered."""

from PySide6.QtCore import Qt

from app.core.backend_settings import LOCAL, REMOTE, BackendSettings, RemoteSettings
from app.core.conversation import MessageStatus, Role
from app.core.settings import GenerationSettings


def send(qtbot, window, text):
    qtbot.keyClicks(window.composer.editor, text)
    qtbot.keyClick(window.composer.editor, Qt.Key.Key_Return)


def go_remote(window, server, **generation):
    settings = GenerationSettings(**{"system_prompt": "You are a helpful assistant.", "temperature": 0.0,
                                     "max_new_tokens": 64, **generation})
    window.apply_settings(settings, BackendSettings(REMOTE, RemoteSettings(server.base_url, server.model)))


def test_a_remote_conversation_without_a_local_model(qtbot, make_window, openai_server):
    window = make_window()
    assert not window.composer.send_button.isEnabled()  # local backend, no model yet
    go_remote(window, openai_server)
    assert window.composer.send_button.isEnabled() and window.chat.report is None
    assert window.vram_panel.server.isVisibleTo(window.vram_panel)
    with qtbot.waitSignal(window.turn_finished, timeout=60000) as blocker:
        send(qtbot, window, "What is the capital of France?")
    assert blocker.args == ["complete"]
    bubbles = window.chat_view.bubbles()
    assert [b.role for b in bubbles] == [Role.USER, Role.ASSISTANT]
    assert bubbles[1].text == "The capital of France is Paris."
    # the first label (not the squeezable "answered by …") names the server (trial 14)
    label = window.status.model_label.text()
    assert label.startswith(f"Remote: SmolLM2-135M-Instruct.Q4_1.gguf.hf @ 127.0.0.1:{openai_server.port} · context ")
    assert "local tokenizer" in window.status.model_label.toolTip() and window.status.backend_label.text() == ""
    assert "tok/s" in window.status.speed_label.text()
    # transformers serve has no /metrics: the panel says so in words
    qtbot.waitUntil(lambda: "no memory figures" in window.vram_panel.server.status_text(), timeout=10000)
    assert window.vram_panel.server.status_text() == ("The server reports no memory figures "
                                                      "(it has no /metrics endpoint).")
    # the conversation keeps its backend: a local chat in between, then reopening restores it
    conversation_id = window.chat.conversation_id
    assert window.chat.store.load_conversation(conversation_id).settings["backend"]["kind"] == REMOTE
    window.new_chat_action.trigger()
    window.apply_settings(window.chat.settings.generation, BackendSettings(LOCAL))  # for the new chat only
    assert not window.composer.send_button.isEnabled()
    window.sidebar.open_requested.emit(conversation_id)
    assert window.chat.settings.backend.kind == REMOTE and window.composer.send_button.isEnabled()
    assert window.chat.settings.backend.remote.base_url == openai_server.base_url


def test_stop_keeps_the_partial_answer_and_the_next_turn_is_answered(qtbot, make_window, openai_server):
    window = make_window()
    go_remote(window, openai_server, max_new_tokens=1000)
    send(qtbot, window, "Tell me a very long story about a dragon and a knight.")
    qtbot.waitUntil(lambda: len(window.chat.conversation.messages[-1].content) > 20, timeout=60000)
    with qtbot.waitSignal(window.turn_finished, timeout=10000) as blocker:
        qtbot.mouseClick(window.composer.stop_button, Qt.MouseButton.LeftButton)
    assert blocker.args == ["stopped"]
    stopped = window.chat.conversation.messages[-1]
    assert stopped.status is MessageStatus.STOPPED and len(stopped.content) > 20
    stored = window.chat.store.load_conversation(window.chat.conversation_id).conversation.messages[-1]
    assert (stored.content, stored.status) == (stopped.content, MessageStatus.STOPPED)
    go_remote(window, openai_server, max_new_tokens=8)
    with qtbot.waitSignal(window.turn_finished, timeout=60000):
        send(qtbot, window, "Thanks!")
    assert len(window.chat.conversation.messages) == 4 and window.chat.conversation.messages[-1].content


def test_evicted_turns_are_summarized_by_the_server(qtbot, make_window, openai_server):
    """A 384-token context: the window holds ~2 of these ~113-token turns, so the third evicts
    the first, which the server then folds into the summary (after the reply, in the worker)."""
    window = make_window()
    go_remote(window, openai_server, max_new_tokens=16, context_tokens=384)
    summaries = []
    window.chat.worker.summary_finished.connect(lambda _rid, state, verdict: summaries.append((state, verdict)))
    for topic in ("my cat Tom", "my garden in Lyon", "the bakery on Rue Cler"):
        with qtbot.waitSignal(window.turn_finished, timeout=120000):
            send(qtbot, window, f"Let me tell you about {topic}. " + "It is lovely. " * 25)
    qtbot.waitUntil(lambda: bool(summaries), timeout=120000)
    state, verdict = summaries[0]
    qtbot.waitUntil(lambda: window.chat.summary == state, timeout=5000)
    assert state.content and state.folded_through == 1 and 0 < state.tokens <= 48  # reserve: 384 // 8
    assert window.chat_view.summary_block.text() == state.content
    assert window.chat.store.load_conversation(window.chat.conversation_id).summary == state
    assert [m.status for m in window.chat.conversation.messages].count(MessageStatus.FAILED) == 0


def test_the_servers_missing_figures_are_said_in_korean(qtbot, korean):
    """Trial 15: "The server reports no memory figures (it has no /metrics endpoint)." stood in English
    in the Korean memory panel; a failed reading keeps the client's error after a Korean lead."""
    from app.engine.remote.server_metrics import ServerMetrics, metrics_from_text
    from app.ui.server_metrics_view import ServerMetricsView

    view = ServerMetricsView()
    qtbot.addWidget(view)
    view.show_metrics(metrics_from_text(None))
    assert view.status_text() == "서버가 메모리 수치를 알려 주지 않습니다 (/metrics 엔드포인트가 없음)."
    view.show_metrics(metrics_from_text("# nothing\nprocess_cpu_seconds_total 3\n"))
    assert view.status_text().startswith("서버의 /metrics에 KV 캐시나 대기열 수치가 없습니다")
    view.show_metrics(ServerMetrics.unavailable("no reading: connection refused", "no-reading"))
    assert view.status_text() == "읽지 못함: connection refused."
