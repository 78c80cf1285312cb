"""Opening a model through the worker: request, progress, success, failure, Cancel, a newer
open replacing an older one, and reopening the previous model after a failed or cancelled load."""

from dataclasses import replace

import pytest

from app.core.settings import ModelPermissions
from tests.chat.conftest import finished, model_folder, record, report


def test_a_missing_path_is_refused_before_anything_is_unloaded(chat, tmp_path):
    seen = chat.recorded
    chat.models.open_model(tmp_path / "nowhere")
    assert chat.worker.loads == [] and chat.worker.stops == 0
    assert seen.of("load_failed") == [(f"no model at {tmp_path / 'nowhere'}",)]
    assert seen.of("notice") == [(f"There is no model at {tmp_path / 'nowhere'}. Pick another one in Open model.",
                                  "load")]


@pytest.mark.parametrize("name, content, said", [
    # trial 9: a file with no GGUF magic bytes (a text file renamed .gguf) was "damaged; download it again"
    ("corrupt.gguf", bytes(range(256)) * 64, "corrupt.gguf: This file is not a GGUF file (it does not start with "
                                             "GGUF's magic bytes). Pick a .gguf model file, or a model folder with "
                                             "a config.json."),
    ("empty.gguf", b"", "empty.gguf: This file is empty (0 bytes): there is no model in it."),
    ("notes.txt", b"hello", "notes.txt: There is no config.json next to this file, and it is not a .gguf file."),
])
def test_a_file_that_is_no_model_is_refused_before_the_open_model_is_unloaded(chat, tmp_path, name, content, said):
    """Trial 6: random bytes picked in Open model unloaded the working model, failed, and reloaded it."""
    (tmp_path / name).write_bytes(content)
    chat.models.open_model(tmp_path / name)
    assert chat.worker.loads == [] and chat.worker.stops == 0 and not chat.models.loading
    [(reason,)] = chat.recorded.of("load_failed")
    assert reason.startswith(name)
    [(text, kind)] = chat.recorded.of("notice")
    assert text.startswith(said) and kind == "load"


def test_a_gguf_of_an_unsupported_version_is_said_with_its_version_and_name(chat, tmp_path):
    """Trial 9: "x.gguf is GGUF version 0; supported: 2 and 3" was said as a damaged file to
    download again, and the notices named no file."""
    (tmp_path / "old.gguf").write_bytes(b"GGUF" + b"\0" * 96)
    chat.models.open_model(tmp_path / "old.gguf")  # the magic bytes: the worker reads the header
    chat.worker.load_failed.emit("cannot convert old.gguf: old.gguf is GGUF version 0; supported: 2 and 3")
    assert chat.recorded.of("notice")[-1] == (
        "old.gguf: This file is GGUF version 0; Headroom reads versions 2 and 3. Pick a GGUF file of version 2 "
        "or 3 (what current tools write).", "load")


def test_a_damaged_default_model_names_install_model(chat, tmp_path, monkeypatch):
    """Trial 9: a truncated default model in its usual place said "download it again", but not
    how, unlike the missing default model's notice: `python -m app.install_model` repairs it."""
    from app.core.paths import default_model_path

    monkeypatch.setenv("HEADROOM_DATA_DIR", str(tmp_path / "data"))
    default = default_model_path()
    default.parent.mkdir(parents=True)
    default.write_bytes(b"GGUF\3\0\0\0" + b"\0" * 40)
    chat.models.open_model(default)
    chat.worker.load_failed.emit(f"cannot convert {default.name}: {default.name}: damaged GGUF file (it ends before "
                                 "its own tensors do: 48 of 94,000,000 bytes); the file is probably incomplete or "
                                 "corrupted — download it again")
    assert chat.recorded.of("notice")[-1] == (
        f"{default.name}: This GGUF file is cut short: it has 48 B of the 90 MiB its header lists. This is the "
        "default model: run `python -m app.install_model`, which installs it again.", "load")
    default.write_bytes(b"")  # refused before the worker is asked: the same advice
    chat.models.open_model(default)
    assert chat.recorded.of("notice")[-1][0].endswith("run `python -m app.install_model`, which installs it again.")
    other = tmp_path / "elsewhere.gguf"  # another damaged file: downloaded again, as before
    other.write_bytes(b"")
    chat.models.open_model(other)
    assert "install_model" not in chat.recorded.of("notice")[-1][0]


def test_open_loads_in_the_worker_with_the_models_permissions_and_adopts_the_report(chat, tmp_path):
    worker, seen = chat.worker, chat.recorded
    model = tmp_path / "tiny"
    model_folder(model)
    chat.models.open_chosen(str(model), ModelPermissions(str(model), allow_pickle=True))
    [(path, permissions, device)] = worker.loads
    assert path == str(model) and permissions.allow_pickle and device == "auto"
    assert worker.stops == 1  # a reply in flight ends before the model goes
    assert seen.of("can_send_changed")[-1] == (False,)
    # a phase from the start (trial 5: the first seconds named none)
    assert seen.of("load_progressed") == [("Loading tiny… · Opening the model file", 0.0)] and chat.models.loading
    worker.load_progressed.emit("Loading weights (cpu, sdpa)", 0.85)
    assert seen.of("load_progressed")[-1] == ("Loading tiny… · Loading weights (cpu, sdpa)", 0.85)
    worker.model_changed.emit(None)  # the worker freed the old model first
    loaded = report()
    worker.load_progressed.emit("Ready", 1.0)  # the loader is done, the worker not yet
    assert seen.of("load_progressed")[-1] == ("Loading tiny…", 1.0)
    worker.model_changed.emit(loaded)
    worker.model_loaded.emit(loaded)
    assert chat.report is loaded and seen.of("model_loaded") == [(loaded,)]
    assert seen.of("load_ended") == [()] and not chat.models.loading
    assert seen.of("can_send_changed")[-1] == (True,)
    assert chat.settings.last_model_path == str(model) and chat.settings.recent_models[0].endswith("tiny")
    assert not [text for text, _kind in seen.of("notice") if "chat template" in text]


@pytest.mark.parametrize("problem, said", [
    # trial 7 (C14): only the words "no chat template" at the end of the status bar's model line said it,
    # cut off in an 800 px window
    ("", "{0} has no chat template (a base model?): its prompts are written as a plain User / Assistant "
         "transcript, and its answers may ramble or carry on as the user. A chat (instruct) model answers better."),
    # new-user trial 12: the loader set a template that cannot render aside (LoadReport.template_problem)
    ("TemplateSyntaxError: Expected an expression",
     "The chat template of {0} is broken, so Headroom set it aside: its prompts are written as a plain User / "
     "Assistant transcript, and its answers may be worse than they should be. A fixed copy of the model answers "
     "better. (TemplateSyntaxError: Expected an expression)"),
], ids=["missing", "broken"])
def test_a_model_without_a_usable_chat_template_is_said_in_the_chat(chat, tmp_path, problem, said):
    base = model_folder(tmp_path / "base")
    chat.models.open_model(base)
    loaded = report(name="base")
    loaded.has_chat_template = False
    loaded.template_problem = problem
    chat.worker.model_changed.emit(loaded)
    chat.worker.model_loaded.emit(loaded)
    assert [(text, kind) for text, kind in chat.recorded.of("notice") if "chat template" in text] == [
        (said.format("base"), "info")]


def two_models(chat, tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    model_folder(old)
    model_folder(new)
    chat.settings = replace(chat.settings, last_model_path=str(old))
    return old, new


def test_a_failed_load_says_why_and_reopens_the_previous_model(chat, tmp_path):
    worker, seen = chat.worker, chat.recorded
    old, new = two_models(chat, tmp_path)
    chat.models.open_model(new)
    worker.load_failed.emit("cannot convert new: not a GGUF file.")
    # a plain line (what happened, what to do); the loader's own words stay in the log
    assert seen.of("notice") == [("new: This GGUF file could not be read. The file may be incomplete or damaged; "
                                  "download it again. Reopening old.", "load")]
    assert seen.of("load_failed") == [("cannot convert new: not a GGUF file.",)]
    assert [load[0] for load in worker.loads] == [str(new), str(old)]


def test_why_a_model_did_not_open_is_withdrawn_once_another_opens_not_when_the_previous_reopens(chat, tmp_path):
    """New-user trial: after a failed open, the error stayed at the top of the next chat although
    a different model had opened since."""
    worker, seen = chat.worker, chat.recorded
    old, new = two_models(chat, tmp_path)
    chat.models.open_model(new)
    worker.load_failed.emit("cannot load new: model.safetensors: damaged safetensors file (it ends before its "
                            "own tensors do); the file is probably incomplete or corrupted — download it again")
    assert seen.of("notice") == [("new: The weights file model.safetensors could not be read. The file may be "
                                  "incomplete or damaged; download it again. Reopening old.", "load")]
    worker.model_loaded.emit(report("old"))  # the previous model, reopened: the notice stays to be read
    assert seen.of("model_loaded") == [(report("old"),)] and seen.of("load_notices_withdrawn") == []
    other = tmp_path / "other"
    model_folder(other)
    chat.models.open_model(other)  # the user opens another model, and it opens
    worker.model_loaded.emit(report("other"))
    assert seen.of("load_notices_withdrawn") == [()]
    assert seen.names()[-2:] == ["load_notices_withdrawn", "model_loaded"]


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
    model_folder(first)
    model_folder(second)
    chat.models.open_model(first)
    chat.models.open_model(second)
    assert worker.cancels == 1 and len(worker.loads) == 2
    worker.load_progressed.emit("Loading the tokenizer", 0.8)  # the replaced load's: not shown
    assert seen.of("load_progressed")[-1] == ("Loading second… · Opening the model file", 0.0)
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
    model_folder(short)
    model_folder(other)
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
    model_folder(asked)
    model_folder(last)
    chat.settings = chat.settings.with_recent_model(last)
    chat.models.open_at_start(asked, tmp_path / "default.gguf")
    assert [load[0] for load in chat.worker.loads] == [str(asked)]

    chat.settings = replace(chat.settings, last_model_path="")
    chat.models.open_at_start(None, tmp_path / "not-installed.gguf")
    assert len(chat.worker.loads) == 1
    assert "The default model is not installed yet" in chat.recorded.of("notice")[-1][0]


def test_start_up_says_once_that_the_default_model_used_last_is_missing(chat, tmp_path):
    # new-user trial: "no longer at X; opening the default model" and then "not installed yet (X)";
    # trial 8: it was installed and moved away, so "not installed yet" was wrong too
    default = tmp_path / "default.gguf"
    chat.settings = chat.settings.with_recent_model(default)
    chat.models.open_at_start(None, default)
    assert chat.worker.loads == []
    assert chat.recorded.of("notice") == [
        (f"The default model is no longer at {default}. Run `python -m app.install_model` to install it again, "
         "or open a model with Open model…", "error")]


def test_start_up_says_in_one_notice_that_another_model_used_last_and_the_default_are_missing(chat, tmp_path):
    last, default = tmp_path / "deleted.gguf", tmp_path / "default.gguf"
    chat.settings = chat.settings.with_recent_model(last)
    chat.models.open_at_start(None, default)
    assert chat.worker.loads == []
    assert chat.recorded.of("notice") == [
        (f"The model used last is no longer at {last}. The default model is not installed yet ({default}). Run "
         "`python -m app.install_model`, or open a model with Open model…", "error")]


# ----- max new tokens held to what the open model's context allows ---------------------------------
def open_sized(chat, tmp_path, max_positions=2048, name="model"):
    """Open a model (a folder) whose LoadReport says `max_positions`."""
    path = tmp_path / name
    model_folder(path)
    chat.models.open_model(path)
    loaded = report(max_positions=max_positions)
    chat.worker.model_changed.emit(loaded)
    chat.worker.model_loaded.emit(loaded)
    return path


# the conversation keeps 2,048 − 512 new − 256 summary reserve, as the token meter says
LOWERED_1755 = ("Max new tokens (1,755) is more than this model's 2,048-token context can hold beside a message, "
                "so its answers get at most 512 tokens and the conversation keeps 1,280. Your setting stays "
                "1,755 for models with more context.", "limit")


def test_a_saved_max_new_tokens_the_context_cannot_hold_is_limited_for_that_model(make_chat, tmp_path):
    """New-user trial: 1,755 new tokens saved, a 2,048-token model, every message refused ("37 /
    37 tokens") with only a warning in Open model. Its turns get what fits; the setting stays."""
    from app.core.settings import load_settings

    chat = make_chat(max_new_tokens=1755)
    open_sized(chat, tmp_path)
    assert chat.settings.generation.max_new_tokens == 1755 and load_settings().generation.max_new_tokens == 1755
    assert chat.recorded.of("notice") == [LOWERED_1755]
    chat.turns.send("Hello")
    assert chat.worker.requests[-1].settings.max_new_tokens == 512
    open_sized(chat, tmp_path, name="again")  # the same limit again: nothing more to say
    assert chat.recorded.of("notice") == [LOWERED_1755]


def test_a_small_manual_context_does_not_lower_the_saved_max_new_tokens(make_chat, tmp_path):
    """New-user trial: a model opened with a 256-token context saved max new tokens 128 to
    settings.json; reopened with automatic context (8,192) its answers still stopped at 128."""
    from app.core.settings import load_settings

    chat = make_chat(max_new_tokens=512)
    path = tmp_path / "model"
    model_folder(path)
    chat.models.open_chosen(str(path), ModelPermissions(str(path)), 256)  # Open model, context 256
    loaded = report(max_positions=8192)
    chat.worker.model_changed.emit(loaded)
    chat.worker.model_loaded.emit(loaded)
    assert chat.settings.generation.max_new_tokens == 512 and load_settings().generation.max_new_tokens == 512
    assert "at most 128 tokens" in chat.recorded.of("notice")[-1][0]
    chat.turns.send("Hello")
    assert chat.worker.requests[-1].settings.max_new_tokens == 128  # this model, this context only
    chat.worker.reply_finished.emit(chat.worker.last_id, finished(), record())
    stored = chat.store.load_conversation(chat.conversation_id).settings
    assert stored["max_new_tokens"] == 512  # nor with the conversation
    assert chat.recorded.of("limit_notices_withdrawn") == []
    said = len(chat.recorded.of("notice"))
    chat.models.open_chosen(str(path), ModelPermissions(str(path)), 0)  # again, automatic context
    chat.worker.model_changed.emit(loaded)
    chat.worker.model_loaded.emit(loaded)
    # regression trial: "at most 128 tokens" stayed in the chat while answers got 512 again
    assert chat.recorded.of("limit_notices_withdrawn") == [()]
    assert not any("at most" in text for text, _ in chat.recorded.of("notice")[said:])  # nothing new to say
    chat.turns.send("Again")
    assert chat.worker.requests[-1].settings.max_new_tokens == 512
    assert load_settings().generation.max_new_tokens == 512


@pytest.mark.parametrize(("saved", "max_positions", "own_context", "kept"), [
    (32768, 8192, 0, 2048),   # more than the whole context
    (1755, 8192, 0, 1755),    # fits beside a message: kept
    (7168, 8192, 0, 7168),    # the most an 8,192-token context allows (512 reserve, 512 prompt)
    (7169, 8192, 0, 2048),
    (1755, 8192, 1024, 256),  # the context set for this model decides, not the trained one
    (64, 512, 0, 64),
])
def test_the_limit_follows_the_context_the_model_runs_with(make_chat, tmp_path, saved, max_positions, own_context,
                                                          kept):
    chat = make_chat(max_new_tokens=saved)
    path = tmp_path / "model"
    chat.settings = chat.settings.with_context(path, own_context)
    open_sized(chat, tmp_path, max_positions)
    assert chat.models.turn_settings().max_new_tokens == kept
    assert chat.settings.generation.max_new_tokens == saved  # the user's own value stays
    assert bool(chat.recorded.of("notice")) is (kept != saved)


def test_settings_a_preset_or_a_stored_chat_keep_their_value_and_turns_get_what_fits(make_chat, tmp_path):
    chat = make_chat(max_new_tokens=256)
    open_sized(chat, tmp_path)
    generation = replace(chat.settings.generation, max_new_tokens=4000)
    chat.backend.apply_settings(generation, chat.settings.backend)  # the Settings dialog
    assert chat.settings.generation.max_new_tokens == 4000 and "(4,000)" in chat.recorded.of("notice")[-1][0]
    chat.presets.apply("Code")  # 2,048 new tokens
    assert chat.settings.generation.max_new_tokens == 2048 and "(2,048)" in chat.recorded.of("notice")[-1][0]
    chat.turns.send("Hello")
    assert chat.worker.requests[-1].settings.max_new_tokens == 512
    chat.worker.reply_finished.emit(chat.worker.last_id, finished(), record())
    stored = chat.conversation_id
    assert chat.store.load_conversation(stored).settings["max_new_tokens"] == 2048  # kept with the chat
    chat.store.update_settings(stored, {**chat.store.load_conversation(stored).settings, "max_new_tokens": 3000})
    chat.conversations.new_conversation()
    chat.conversations.open_conversation(stored)
    assert chat.settings.generation.max_new_tokens == 3000 and "(3,000)" in chat.recorded.of("notice")[-1][0]
    chat.turns.send("Again")
    assert chat.worker.requests[-1].settings.max_new_tokens == 512


def test_a_turn_never_runs_with_more_new_tokens_than_the_context_allows(make_chat, tmp_path):
    chat = make_chat(max_new_tokens=256)
    open_sized(chat, tmp_path)
    chat.settings = replace(chat.settings, generation=replace(chat.settings.generation, max_new_tokens=9000))
    chat.turns.send("Hello")  # set behind every check: the turn still gets what fits
    assert chat.worker.requests[-1].settings.max_new_tokens == 512


def test_the_lowered_notice_says_the_budget_the_token_meter_shows(make_chat, tmp_path):
    """New-user trial: "…now 2,048 (Settings), so the conversation keeps 6,144 tokens" while the
    token line under the composer said "… / 5,632": the summary reserve was left out."""
    from app.core.history import TokenBudget, summary_reserve

    chat = make_chat(max_new_tokens=256)
    open_sized(chat, tmp_path, max_positions=8192)
    generation = replace(chat.settings.generation, max_new_tokens=32768)
    chat.backend.apply_settings(generation, chat.settings.backend)  # Settings → OK
    meter = TokenBudget.for_model(8192, None, 2048, summary_reserve(8192)).prompt_tokens  # the engine's budget
    assert meter == 5632
    assert chat.recorded.of("notice")[-1] == (
        "Max new tokens (32,768) is more than this model's 8,192-token context can hold beside a message, so its "
        "answers get at most 2,048 tokens and the conversation keeps 5,632. Your setting stays 32,768 for models "
        "with more context.", "limit")
