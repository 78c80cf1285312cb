"""Opening a model through the worker: request, progress, success, failure, Cancel, a newer
open replacing an older one, and reopening the previous model after a failed or cancelled load."""

from dataclasses import replace

from app.core.settings import ModelPermissions
from tests.chat.conftest import finished, record, report


def test_a_missing_path_is_refused_before_anything_is_unloaded(chat, tmp_path):
    seen = chat.recorded
    chat.models.open_model(tmp_path / "nowhere")
    assert chat.worker.loads == [] and chat.worker.stops == 0
    assert seen.of("load_failed") == [(f"no model at {tmp_path / 'nowhere'}",)]
    assert seen.of("notice") == [(f"There is no model at {tmp_path / 'nowhere'}. Pick another one in Open model.",
                                  "error")]


def test_open_loads_in_the_worker_with_the_models_permissions_and_adopts_the_report(chat, tmp_path):
    worker, seen = chat.worker, chat.recorded
    model = tmp_path / "tiny"
    model.mkdir()
    chat.models.open_chosen(str(model), ModelPermissions(str(model), allow_pickle=True))
    [(path, permissions, device)] = worker.loads
    assert path == str(model) and permissions.allow_pickle and device == "auto"
    assert worker.stops == 1  # a reply in flight ends before the model goes
    assert seen.of("can_send_changed")[-1] == (False,)
    assert seen.of("load_progressed") == [("Opening tiny…", 0.0)] and chat.models.loading
    worker.load_progressed.emit("Loading weights (cpu, sdpa)", 0.85)
    worker.model_changed.emit(None)  # the worker freed the old model first
    loaded = report()
    worker.model_changed.emit(loaded)
    worker.model_loaded.emit(loaded)
    assert chat.report is loaded and seen.of("model_loaded") == [(loaded,)]
    assert seen.of("load_progressed")[-1] == ("Loading weights (cpu, sdpa)", 0.85)
    assert seen.of("load_ended") == [()] and not chat.models.loading
    assert seen.of("can_send_changed")[-1] == (True,)
    assert chat.settings.last_model_path == str(model) and chat.settings.recent_models[0].endswith("tiny")


def two_models(chat, tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    chat.settings = replace(chat.settings, last_model_path=str(old))
    return old, new


def test_a_failed_load_says_why_and_reopens_the_previous_model(chat, tmp_path):
    worker, seen = chat.worker, chat.recorded
    old, new = two_models(chat, tmp_path)
    chat.models.open_model(new)
    worker.load_failed.emit("cannot convert new: not a GGUF file.")
    # a plain line (what happened, what to do); the loader's own words stay in the log
    assert seen.of("notice") == [("This GGUF file could not be read. The file may be incomplete or damaged; "
                                  "download it again. Reopening old.", "error")]
    assert seen.of("load_failed") == [("cannot convert new: not a GGUF file.",)]
    assert [load[0] for load in worker.loads] == [str(new), str(old)]


def test_cancel_stops_the_load_and_reopens_the_previous_model(chat, tmp_path):
    worker, seen = chat.worker, chat.recorded
    old, new = two_models(chat, tmp_path)
    assert not chat.models.cancel_load()  # nothing loading: nothing to cancel
    chat.models.open_model(new)
    worker.load_progressed.emit("Converting", 0.4)
    assert chat.models.cancel_load() and worker.cancels == 1
    assert seen.of("load_progressed")[-1] == ("Cancelling after the current step…", 0.4)
    worker.load_cancelled.emit()
    assert seen.of("notice") == [("Loading cancelled. Reopening old.", "info")]
    assert [load[0] for load in worker.loads] == [str(new), str(old)]


def test_a_newer_open_replaces_the_load_in_progress(chat, tmp_path):
    worker, seen = chat.worker, chat.recorded
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    chat.models.open_model(first)
    chat.models.open_model(second)
    assert worker.cancels == 1 and len(worker.loads) == 2
    worker.load_progressed.emit("Loading the tokenizer", 0.8)  # the replaced load's: not shown
    assert seen.of("load_progressed")[-1] == ("Opening second…", 0.0)
    worker.load_cancelled.emit()  # the first one, replaced: no notice, no reopen
    assert seen.of("notice") == [] and seen.of("load_ended") == [] and len(worker.loads) == 2
    loaded = report("second")
    worker.model_changed.emit(loaded)
    worker.model_loaded.emit(loaded)
    assert seen.of("model_loaded") == [(loaded,)] and chat.settings.last_model_path == str(second)


# ----- the context set for a model; the model opened at start-up ---------------------------------
def opened(chat, path):
    """Play the worker's part of a successful open of `path`."""
    chat.models.open_model(path)
    loaded = report(path.name)
    chat.worker.model_changed.emit(loaded)
    chat.worker.model_loaded.emit(loaded)


def test_turns_run_with_the_context_set_for_the_open_model(chat, tmp_path):
    from app.core.backend_settings import REMOTE, BackendSettings, RemoteSettings

    worker = chat.worker
    short, other = tmp_path / "short", tmp_path / "other"
    short.mkdir()
    other.mkdir()
    chat.models.open_chosen(str(short), ModelPermissions(str(short)), 3072)
    worker.model_changed.emit(report("short"))
    worker.model_loaded.emit(report("short"))
    assert chat.settings.own_context(short) == 3072 and chat.model_path == short
    chat.turns.send("Hi")
    assert worker.requests[-1].settings.context_tokens == 3072
    assert chat.settings.generation.context_tokens == 0  # the conversation's own settings are untouched
    worker.reply_finished.emit(worker.last_id, finished(), record())

    opened(chat, other)  # no context of its own: auto
    chat.turns.send("Hi again")
    assert worker.requests[-1].settings.context_tokens == 0
    worker.reply_finished.emit(worker.last_id, finished(), record())

    opened(chat, short)
    chat.settings = replace(chat.settings, backend=BackendSettings(REMOTE, RemoteSettings("http://127.0.0.1:9", "m")))
    chat.turns.send("Remote")  # a server's context is its own, not the local model's
    assert worker.requests[-1].settings.context_tokens == 0


def test_start_up_reopens_the_last_model_used(chat, tmp_path):
    last, default = tmp_path / "last.gguf", tmp_path / "default.gguf"
    last.write_bytes(b"GGUF")
    default.write_bytes(b"GGUF")
    chat.settings = chat.settings.with_recent_model(last)
    chat.models.open_at_start(None, default)
    assert [load[0] for load in chat.worker.loads] == [str(last)] and chat.recorded.of("notice") == []


def test_start_up_opens_the_default_with_a_notice_when_the_last_model_is_gone(chat, tmp_path):
    default = tmp_path / "default.gguf"
    default.write_bytes(b"GGUF")
    chat.settings = chat.settings.with_recent_model(tmp_path / "deleted.gguf")
    chat.models.open_at_start(None, default)
    assert [load[0] for load in chat.worker.loads] == [str(default)]
    assert chat.recorded.of("notice") == [
        (f"The model used last is no longer at {tmp_path / 'deleted.gguf'}; opening the default model.", "error")]


def test_start_up_opens_the_model_asked_for_and_says_when_there_is_none(chat, tmp_path):
    asked, last = tmp_path / "asked", tmp_path / "last"
    asked.mkdir()
    last.mkdir()
    chat.settings = chat.settings.with_recent_model(last)
    chat.models.open_at_start(asked, tmp_path / "default.gguf")
    assert [load[0] for load in chat.worker.loads] == [str(asked)]

    chat.settings = replace(chat.settings, last_model_path="")
    chat.models.open_at_start(None, tmp_path / "not-installed.gguf")
    assert len(chat.worker.loads) == 1
    assert "The default model is not installed yet" in chat.recorded.of("notice")[-1][0]
