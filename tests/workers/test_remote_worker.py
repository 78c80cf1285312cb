"""The worker picks the backend per request: a real `transformers serve` peer answers remote
turns through the same signals as the local model, a server killed mid-answer is an error on
generation_failed (never text in the token stream), and the API key never reaches a log."""

import logging

import pytest
from PySide6.QtCore import QThread

from app.core.backend_settings import LOCAL, REMOTE, BackendSettings, RemoteSettings
from app.core.conversation import Message, Role
from app.core.history import SummaryState
from app.core.settings import GenerationSettings
from app.workers.generation_worker import GenerationWorker, TurnRequest
from tests.helpers.openai_server import start_server

QUESTION = (Message(Role.USER, "What is the capital of France?"),)
API_KEY = "sk-headroom-test-7f3a9c2e51d84b60"
GREEDY = GenerationSettings(system_prompt="You are a helpful assistant.", max_new_tokens=40, temperature=0.0)


def remote(server) -> BackendSettings:
    return BackendSettings(REMOTE, RemoteSettings(server.base_url, server.model))


@pytest.fixture
def make_worker(qtbot):
    started = []

    def make(**kwargs):
        worker = GenerationWorker(**kwargs)
        thread = QThread()
        worker.moveToThread(thread)
        thread.start()
        started.append((worker, thread))
        return worker

    yield make
    for worker, thread in started:
        worker.request_stop()
        thread.quit()
        assert thread.wait(10000)


def test_remote_turn_streams_through_the_same_signals_without_a_local_model(qtbot, make_worker, openai_server):
    worker = make_worker(api_key_lookup=lambda _url: "")
    pieces, chosen = [], []
    worker.token_streamed.connect(lambda _rid, text: pieces.append(text))
    worker.backend_chosen.connect(lambda rid, report: chosen.append((rid, report)))
    with qtbot.waitSignal(worker.reply_finished, timeout=60000) as blocker:
        worker.turn_requested.emit(TurnRequest(1, QUESTION, SummaryState(), GREEDY, backend=remote(openai_server)))
    rid, finished, record = blocker.args
    assert rid == 1 and finished.text == "The capital of France is Paris."
    assert record.outcome == "eos" and record.prompt_tokens == 27 and record.projected_peak is None
    qtbot.waitUntil(lambda: "".join(pieces) == finished.text, timeout=2000)
    assert len(pieces) > 3
    (rid, report), = chosen
    assert rid == 1 and report.kind == "remote" and report.counting.method == "local tokenizer"


def test_each_request_picks_its_backend(qtbot, make_worker, openai_server, tiny_loaded):
    worker = make_worker(api_key_lookup=lambda _url: "")
    with qtbot.waitSignal(worker.model_changed, timeout=10000):
        worker.model_change_requested.emit(tiny_loaded)
    kinds = []
    worker.backend_chosen.connect(lambda _rid, report: kinds.append(getattr(report, "kind", "local")))
    short = GenerationSettings(max_new_tokens=4, temperature=0.0)
    for rid, backend in enumerate([BackendSettings(LOCAL), remote(openai_server), BackendSettings(LOCAL)], 1):
        with qtbot.waitSignal(worker.reply_finished, timeout=60000) as blocker:
            worker.turn_requested.emit(TurnRequest(rid, QUESTION, SummaryState(), short, backend=backend))
        assert (blocker.args[1].decode_path == "remote") is backend.is_remote
    assert kinds == ["local", "remote", "local"]


def test_server_killed_mid_answer_keeps_the_partial_and_fails_on_its_own_signal(qtbot, make_worker,
                                                                                real_model_folder, tmp_path):
    server = start_server(real_model_folder, tmp_path / "doomed.log")  # its own: this one dies
    try:
        worker = make_worker(api_key_lookup=lambda _url: "")
        streamed, finished = [], []
        worker.reply_finished.connect(lambda *args: finished.append(args))

        def on_token(_rid, text):
            streamed.append(text)
            if len(streamed) == 5:
                server.kill()  # SIGKILL while the answer streams

        worker.token_streamed.connect(on_token)
        story = (Message(Role.USER, "Tell me a very long story about a dragon and a knight."),)
        settings = GenerationSettings(max_new_tokens=1000, temperature=0.0)
        with qtbot.waitSignal(worker.generation_failed, timeout=60000) as blocker:
            worker.turn_requested.emit(TurnRequest(9, story, SummaryState(), settings, backend=remote(server)))
        rid, reason, partial = blocker.args
        assert rid == 9 and finished == []
        assert partial == "".join(streamed) and len(streamed) >= 5  # the partial answer is kept
        assert reason.startswith(f"the connection to 127.0.0.1:{server.port} broke mid-answer")
        assert "\n" not in reason and not any(reason in piece for piece in streamed)
        # the next request to the dead server is a one-line failure, not a hang
        with qtbot.waitSignal(worker.generation_failed, timeout=30000) as again:
            worker.turn_requested.emit(TurnRequest(10, QUESTION, SummaryState(), GREEDY, backend=remote(server)))
        assert again.args[1].startswith(f"cannot connect to 127.0.0.1:{server.port}")
    finally:
        server.stop()


def test_the_api_key_never_reaches_a_log(qtbot, make_worker, openai_server, caplog):
    looked_up = []

    def lookup(url):
        looked_up.append(url)
        return API_KEY

    worker = make_worker(api_key_lookup=lookup)
    caplog.set_level(logging.DEBUG)  # everything: ours, httpx, httpcore, transformers
    with qtbot.waitSignal(worker.reply_finished, timeout=60000):
        worker.turn_requested.emit(TurnRequest(1, QUESTION, SummaryState(), GREEDY, backend=remote(openai_server)))
    bad = BackendSettings(REMOTE, RemoteSettings(openai_server.base_url, "no-such-model"))
    with qtbot.waitSignal(worker.generation_failed, timeout=30000) as failed:
        worker.turn_requested.emit(TurnRequest(2, QUESTION, SummaryState(), GREEDY, backend=bad))
    assert looked_up == [openai_server.base_url, openai_server.base_url]
    assert "HTTP Request: POST" in caplog.text and "remote backend ready" in caplog.text  # capture was live
    assert API_KEY not in caplog.text and API_KEY[-8:] not in caplog.text
    assert all(API_KEY not in repr(r.args) and API_KEY not in r.getMessage() for r in caplog.records)
    assert API_KEY not in failed.args[1]
