"""`Chat` driven with a FakeWorker (tests/helpers/fake_worker.py) and no widgets: the tests play
the worker's part by emitting its signals and read what the chat says on its own signals."""

import functools
from types import SimpleNamespace

import pytest

from app.chat import open_chat
from app.core.settings import GenerationSettings, Settings
from app.core.store import Store
from app.engine.events import ReplyFinished, TurnRecord
from tests.helpers.fake_worker import FakeWorker

CHAT_SIGNALS = ("notice", "message_added", "reply_started", "reply_prefill_progressed", "reply_streamed",
                "reply_ended", "reply_measured", "reply_unmeasured",
                "turn_ended", "turn_planned", "context_counted", "turn_refused", "text_withdrawn",
                "messages_truncated",
                "conversation_cleared", "conversation_loaded", "conversations_listed", "conversation_deleted",
                "versions_changed", "notes_changed", "presets_changed", "summary_changed", "summarizing_changed",
                "load_progressed", "load_ended", "model_changed", "model_loaded", "load_failed",
                "load_notices_withdrawn", "limit_notices_withdrawn",
                "decode_status_changed", "can_send_changed", "backend_changed", "backend_reported", "reply_stats",
                "attachment_changed", "reply_sources", "message_documents", "document_noted", "message_sources",
                "notes_proposed", "reply_waiting", "reply_elsewhere",
                "context_cleared", "foldable_changed")


class Recorder:
    """Every signal the chat emits, in order, as (name, args)."""

    def __init__(self, chat):
        self.events: list[tuple[str, tuple]] = []
        for name in CHAT_SIGNALS:
            getattr(chat, name).connect(functools.partial(self._record, name))

    def _record(self, name, *args):
        self.events.append((name, args))

    def of(self, name) -> list[tuple]:
        return [args for n, args in self.events if n == name]

    def names(self) -> list[str]:
        return [n for n, _ in self.events]

    def clear(self) -> None:
        self.events.clear()


def model_folder(path):
    """`path` made a folder Open model accepts (a config.json in it: app.engine.loading.model_path);
    the FakeWorker loads nothing from it."""
    path.mkdir(exist_ok=True)
    (path / "config.json").write_text("{}")
    return path


def finished(text="Paris.", stop_reason="eos", new_tokens=3):
    return ReplyFinished(text, stop_reason, prompt_tokens=12, prefill_tokens=12, new_tokens=new_tokens,
                         ttft_s=0.25, decode_tokens_per_s=10.0)


def record(outcome="eos"):
    return TurnRecord(prompt_tokens=12, prefill_tokens=12, new_tokens=3, projected_peak=2 << 20,
                      measured_peak=1 << 20, outcome=outcome)


def report(name="tiny", max_positions=512, weight_bytes=10 << 20):
    """The LoadReport fields a chat reads."""
    return SimpleNamespace(name=name, max_positions=max_positions, weight_bytes=weight_bytes, device="cpu",
                           compute_dtype="float32")


@pytest.fixture(autouse=True)
def english(english_plurals):
    """Every test here reads English as the app shows it: "1 token", not "1 tokens"."""
    return english_plurals


@pytest.fixture
def make_chat(qapp, tmp_path):
    chats = []

    def make(max_new_tokens=16, worker=None, db="chat.sqlite3", settings=None):
        settings = settings or Settings(GenerationSettings(max_new_tokens=max_new_tokens, temperature=0.0))
        chat = open_chat(settings, Store(tmp_path / db), worker=worker or FakeWorker())
        chat.recorded = Recorder(chat)
        chat.start()
        chats.append(chat)
        return chat

    yield make
    for chat in chats:
        chat.close()


@pytest.fixture
def chat(make_chat):
    return make_chat()
