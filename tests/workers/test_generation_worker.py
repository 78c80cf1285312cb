"""The worker in its own QThread: streaming, stop, failure, unload."""

import gc
import threading
import weakref

import pytest
from PySide6.QtCore import QThread

from app.core.settings import GenerationSettings
from app.workers.generation_worker import GenerationRequest, GenerationWorker

QUESTION = ({"role": "user", "content": "What is the capital of France?"},)


@pytest.fixture
def worker(qtbot):
    worker = GenerationWorker()
    thread = QThread()
    worker.moveToThread(thread)
    thread.start()
    yield worker
    worker.request_stop()
    thread.quit()
    assert thread.wait(5000)


def adopt(qtbot, worker, loaded):
    with qtbot.waitSignal(worker.model_changed, timeout=10000) as blocker:
        worker.model_change_requested.emit(loaded)
    return blocker.args[0]


def test_streams_tokens_then_finishes_off_the_gui_thread(qtbot, worker, real_loaded):
    report = adopt(qtbot, worker, real_loaded)
    assert report is real_loaded.report
    pieces, threads = [], set()
    worker.token_streamed.connect(lambda rid, text: (pieces.append(text),
                                                     threads.add(threading.get_ident())))
    settings = GenerationSettings(system_prompt="", max_new_tokens=40, temperature=0.0)
    with qtbot.waitSignal(worker.reply_finished, timeout=30000) as blocker:
        worker.generate_requested.emit(GenerationRequest(1, QUESTION, settings))
    request_id, finished = blocker.args
    assert request_id == 1 and "Paris" in finished.text
    qtbot.waitUntil(lambda: "".join(pieces) == finished.text, timeout=2000)


def test_stop_keeps_the_partial_answer(qtbot, worker, tiny_loaded):  # case C20
    adopt(qtbot, worker, tiny_loaded)
    seen = []

    def on_token(_rid, text):
        seen.append(text)
        if len(seen) == 3:
            worker.request_stop()  # called from the GUI thread, like the Stop button

    worker.token_streamed.connect(on_token)
    settings = GenerationSettings(system_prompt="", max_new_tokens=2048, temperature=1.0)
    with qtbot.waitSignal(worker.reply_finished, timeout=30000) as blocker:
        worker.generate_requested.emit(GenerationRequest(2, QUESTION, settings))
    finished = blocker.args[1]
    assert finished.stop_reason == "stopped"
    assert finished.new_tokens < 100  # would be 2048 without Stop


def test_failure_travels_on_its_own_signal_with_partial_text(qtbot, worker, tiny_loaded, monkeypatch):
    adopt(qtbot, worker, tiny_loaded)
    from app.engine import generation

    def exploding(*args, **kwargs):
        yield generation.TextDelta("partial ")
        raise RuntimeError("CUDA error: device-side assert triggered\nmore detail")

    monkeypatch.setattr(generation, "stream_chat_reply", exploding)
    streamed = []
    worker.token_streamed.connect(lambda _rid, text: streamed.append(text))
    with qtbot.waitSignal(worker.generation_failed, timeout=10000) as blocker:
        worker.generate_requested.emit(GenerationRequest(3, QUESTION, GenerationSettings()))
    assert blocker.args == [3, "RuntimeError: CUDA error: device-side assert triggered", "partial "]
    assert streamed == ["partial "]  # the error text never enters the token stream


def test_unload_releases_the_model(qtbot, worker, tiny_model_dir):
    from app.engine.loader import load_model

    loaded = load_model(tiny_model_dir)
    ref = weakref.ref(loaded.model)
    adopt(qtbot, worker, loaded)
    del loaded
    assert adopt(qtbot, worker, None) is None
    gc.collect()
    assert ref() is None  # case C05: nothing keeps the model alive after unload
