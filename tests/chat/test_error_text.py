"""Plain-language error lines (app/chat/error_text.py) for the failures users actually meet:
what happened and what to do, in one line, never the raw exception text."""

import errno

import pytest

from app.chat.error_text import load_stage_text, os_error_text, plain_error, plain_failure, summary_verdict_text
from app.engine.events import describe_failure
from app.engine.loading.folder_trust import remote_code_message
from app.engine.loading.loader import ModelLoadError
from app.engine.remote.errors import RemoteError, status_error


class OutOfMemoryError(RuntimeError):  # same name as torch's, without importing torch
    pass


def _one_line(plain):
    line = plain.line()
    assert "\n" not in line and "Error:" not in line and plain.todo
    return line


@pytest.mark.parametrize("exc,during,what,todo", [
    (ModelLoadError("GGUF magic invalid"), "load", "This GGUF file could not be read.", "download it again"),
    (ModelLoadError("Sorry, file appears to be version 9 which we cannot handle"), "load",
     "This file is GGUF version 9; Headroom reads versions 2 and 3.", "version 2 or 3"),
    # the architecture named (new-user trial: "superllama9" was not said)
    (ModelLoadError("GGUF model with architecture mamba9 is not supported yet."), "load",
     "architecture (mamba9) is not supported", "supported family"),
    (ValueError("The checkpoint you are trying to load has model type `zeta` but Transformers does not "
                "recognize this architecture."), "load", "architecture (zeta) is not supported", "supported family"),
    (ModelLoadError("cannot convert x.gguf: architecture 'superllama9' is not supported by transformers' GGUF "
                    "mapping"), "load", "This model's architecture (superllama9) is not supported", "supported family"),
    (OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"), "reply", "ran out of memory",
     "shorter message"),
    (OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"), "load", "not enough memory to load",
     "smaller or 4-bit model"),
    (RemoteError("cannot connect to gpu-box:8000 (Connection refused): is the server running?", "unreachable"),
     "reply", "could not reach the server", "Start the server"),
    (RemoteError("gpu-box:8000 refused the API key (HTTP 401)", "auth", 401), "reply", "refused the API key",
     "API key"),
    # trial 14: a server killed mid-answer read "could not reach the server. Start the server, or fix its
    # address", and the address was right
    (RemoteError("the connection to gpu-box:8000 broke mid-answer (RemoteProtocolError): the server stopped or "
                 "the network dropped", "lost"), "reply", "lost while it answered", "stopped or restarted"),
    (RemoteError("the connection to gpu-box:8000 closed before the answer ended", "lost"), "reply",
     "lost while it answered", "check it, then try again"),
    (RemoteError('gpu-box:8000 sent no answer stream (no "data:" lines): is it an OpenAI-compatible server?',
                 "protocol"), "reply", "was not understood", "OpenAI-compatible"),
    (FileNotFoundError(errno.ENOENT, "No such file", "/models/x.gguf"), "load", "missing: /models/x.gguf",
     "folder or drive"),
    (OSError(errno.ENOSPC, "No space left on device"), "load", "The disk is full.", "Free some space"),
    (MemoryError(), "load", "not enough memory to load", "Close other programs"),
    (OSError(errno.ENOMEM, "Cannot allocate memory"), "reply", "ran out of memory", "shorter message"),
])
def test_expected_failures_say_what_happened_and_what_to_do(exc, during, what, todo):
    plain = plain_error(exc, during)
    assert what in plain.what and todo in plain.todo
    _one_line(plain)


@pytest.mark.parametrize("reason,during,what,todo", [
    # the worker's load_failed reasons (app.engine.loading.loader)
    ("cannot convert bad.gguf: not a GGUF file", "load", "This GGUF file could not be read.", "download it again"),
    ("no model at /models/gone", "load", "There is no model at /models/gone.", "Open model"),
    # RAM exhausted while converting or loading (new-user trial: under a memory limit the default model's
    # load said "This GGUF file could not be read … installs it again")
    ("cannot convert SmolLM2-135M-Instruct.Q4_1.gguf: RuntimeError: DefaultCPUAllocator: can't allocate memory: "
     "you tried to allocate 117964800 bytes. Error code 12 (Cannot allocate memory)", "load",
     "not enough memory to load", "Close other programs"),
    ("cannot convert m.gguf: MemoryError: Unable to allocate 64.0 MiB for an array with shape (8, 2097152)",
     "load", "not enough memory to load", "smaller or 4-bit model"),
    ("notes.txt is not a .gguf file or a model folder", "load", "not a model Headroom can open", ".gguf file"),
    ("model.safetensors is not a .gguf file or a model folder (no config.json next to it)", "load",
     "no config.json next to this file", "model folder with a config.json"),
    ("/m/weights is not a Hugging Face model folder (no config.json)", "load", "This folder has no config.json.",
     ".gguf file"),
    (remote_code_message("phi-x"), "load", "needs to run Python code", "Run this model's own code"),
    ("cannot load weird: KeyError: 'lm_head'", "load", "The model could not be opened (KeyError).", "log"),
    # generation_failed reasons (app.engine.events.describe_failure, remote errors)
    (describe_failure(OutOfMemoryError("CUDA out of memory")), "reply", "ran out of memory", "new chat"),
    (str(status_error(404, '{"detail": "Not Found"}', "gpu-box:8000", "llama")), "reply",
     "does not know this model", "model name"),
    (str(status_error(400, '{"message": "This model\'s maximum context length is 4096 tokens"}', "h", "m")),
     "reply", "too long for its context", "shorter message"),
    ("no model is loaded", "summary", "No model is loaded.", "Open a model"),
    (describe_failure(ValueError("cannot reshape array of size 12 into shape (5,)")), "reply",
     "The answer failed (ValueError).", "log"),
    ("RuntimeError: boom", "summary", "The summary of earlier turns could not be written (RuntimeError).", "log"),
])
def test_worker_reasons_become_plain_lines(reason, during, what, todo):
    plain = plain_failure(reason, during)
    assert what in plain.what and todo in plain.todo
    assert "reshape" not in _one_line(plain) and "lm_head" not in plain.line()


def test_a_damaged_weights_file_is_named_in_the_words_of_a_damaged_gguf():
    """The new-user trial read "The model could not be opened (SafetensorError)"; a cut
    safetensors file is now said as a damaged GGUF is, with the file's name."""
    damaged = ("cannot load cut.gguf: model-00002-of-00004.safetensors: damaged safetensors file (it ends before "
               "its own tensors do); the file is probably incomplete or corrupted — download it again")
    assert plain_failure(damaged, "load").line() == (
        "The weights file model-00002-of-00004.safetensors could not be read. "
        "The file may be incomplete or damaged; download it again.")
    gguf = plain_failure("cannot convert bad.gguf: bad.gguf: damaged GGUF header (it ends before its own "
                         "tables do); the file is probably incomplete or corrupted — download it again", "load")
    assert plain_failure(damaged, "load").todo == gguf.todo
    # the load's own error, when no file could be named: still the damaged-file words
    raw = ("cannot load cut: SafetensorError: Error while deserializing header: incomplete metadata, "
           "file not fully covered")
    assert plain_failure(raw, "load").line() == (
        "A weights file of this model could not be read. The file may be incomplete or damaged; download it again.")


@pytest.mark.parametrize("reason, line", [
    ("text.gguf is not a GGUF file (no GGUF magic bytes)",
     "This file is not a GGUF file (it does not start with GGUF's magic bytes). Pick a .gguf model file, or a "
     "model folder with a config.json."),
    ("cannot convert old.gguf: old.gguf is GGUF version 0; supported: 2 and 3",
     "This file is GGUF version 0; Headroom reads versions 2 and 3. Pick a GGUF file of version 2 or 3 (what "
     "current tools write)."),
    ("cannot convert x.gguf: x.gguf: tensor type IQ4_NL cannot be dequantized by the gguf package",
     "This GGUF file stores weights as IQ4_NL, which Headroom cannot convert. Pick another quantization of this "
     "model (Q4_K_M, Q8_0 or F16, say)."),
    # trial 14: --ask said only "could not be read" where --plan gave the sizes
    ("cannot convert cut.gguf: cut.gguf: damaged GGUF file (it ends before its own tensors do: 290,474 of "
     "4,920,000,000 bytes); the file is probably incomplete or corrupted — download it again",
     "This GGUF file is cut short: it has 284 KiB of the 4.58 GiB its header lists. The download did not "
     "finish; download it again."),
])
def test_a_gguf_refused_for_what_it_is_says_so_not_damaged(reason, line):
    """Trial 9: a text file renamed .gguf and a GGUF of version 0 read "This GGUF file could not be
    read. The file may be incomplete or damaged; download it again"; the real reason was not said."""
    assert plain_failure(reason, "load").line() == line


def test_a_big_endian_gguf_is_said_as_that_not_as_a_byte_swapped_version(tmp_path):
    """A big-endian GGUF of version 3 read "This file is GGUF version 50331648; Headroom reads versions
    2 and 3": a version no file has, and nothing said of what the file is."""
    import struct

    from app.engine.loading.gguf_header import UnsupportedGguf, read_gguf_header

    path = tmp_path / "model-be.gguf"
    path.write_bytes(b"GGUF" + struct.pack(">IQQ", 3, 1, 1) + b"\0" * 96)
    with pytest.raises(UnsupportedGguf) as refused:
        read_gguf_header(path)
    assert plain_failure(f"cannot convert model-be.gguf: {refused.value}", "load").line() == (
        "This GGUF file is big-endian (made for IBM mainframes and similar machines); Headroom reads "
        "little-endian GGUF files only. Pick the ordinary (little-endian) GGUF of this model, as most downloads are.")

def test_the_default_models_damaged_file_is_repaired_by_install_model(tmp_path, monkeypatch):
    monkeypatch.setattr("app.chat.error_text.default_model_path", lambda: tmp_path / "default.gguf")
    damaged = ("cannot convert default.gguf: default.gguf: damaged GGUF header (it ends before its own tables do); "
               "the file is probably incomplete or corrupted — download it again")
    for reason in (damaged, "default.gguf is an empty file, not a GGUF model",
                   "default.gguf is not a GGUF file (no GGUF magic bytes)"):
        assert plain_failure(reason, "load", tmp_path / "default.gguf").todo == (
            "This is the default model: run `python -m app.install_model`, which installs it again.")
        assert "install_model" not in plain_failure(reason, "load", tmp_path / "other.gguf").todo
        assert "install_model" not in plain_failure(reason, "load").todo


@pytest.mark.parametrize("error, text", [
    (FileNotFoundError(errno.ENOENT, "No such file or directory"), "the file or its folder does not exist"),
    (PermissionError(errno.EACCES, "Permission denied"), "permission denied"),
    (OSError(errno.ENOSPC, "No space left on device"), "the disk is full"),
    (OSError(errno.EROFS, "Read-only file system"), "the disk or folder is read-only"),
    (IsADirectoryError(errno.EISDIR, "Is a directory"), "it is a folder, not a file"),
    (FileExistsError(errno.EEXIST, "File exists"), "a file of that name is in the way"),
    (OSError(errno.EFBIG, "File too large"), "the file is too large for this disk"),
    (OSError(errno.EMFILE, "Too many open files"), "too many files are open"),
    # any other: plain words, the OS's own (English whatever the window's language) quoted as the detail
    (OSError(errno.ECONNRESET, "Connection reset by peer"), "the system reported “Connection reset by peer”"),
    (OSError(errno.ESTALE, "Stale file handle", "/mnt/nfs/a.md"), "the system reported “Stale file handle”"),
    (OSError("the share went away"), "the system reported “the share went away”"),
    (OSError(None, None, "/tmp/a.md"), "the system reported an error"),  # was "[Errno None] None: '/tmp/a.md'"
])
def test_why_a_file_could_not_be_written_is_said_plainly(error, text):
    """Trial 9: a failed export said the OS's English ("No such file or directory") in the Korean window."""
    assert os_error_text(error) == text


def test_an_os_error_of_no_known_errno_is_said_in_the_window_s_language(qapp):
    """Trial 9's fix covered the errnos it listed: any other still said the OS's English alone
    ("…내보내지 못했습니다: Stale file handle"); now its words go through the translation too."""
    from tests.helpers.marking_translator import marking

    with marking("PlainError"):
        assert os_error_text(OSError(errno.ESTALE, "Stale file handle")) == "«the system reported “Stale file handle”»"
        assert os_error_text(OSError(None, None, "/tmp/a.md")) == "«the system reported an error»"


def test_a_line_that_names_no_file_gets_the_error_s_file():
    """The preset and settings notices said "permission denied" without the file it was about."""
    from app.chat.error_text import os_error_line

    assert os_error_line(PermissionError(errno.EACCES, "Permission denied", "/c/presets.json")) == (
        "/c/presets.json: permission denied")
    assert os_error_line(OSError(errno.EIO, "Input/output error")) == "the disk could not be read or written"


def test_anything_else_names_the_type_and_points_to_the_log_never_the_raw_message():
    plain = plain_error(ValueError("cannot reshape array of size 12 into shape (5,)"))
    assert plain.what == "The answer failed (ValueError)."
    assert "reshape" not in plain.line() and "log" in plain.todo


@pytest.mark.parametrize("stage,shown", [
    ("Loading weights (cpu, sdpa)", "Loading weights (cpu, sdpa)"),
    ("Converting token_embd.weight (42%)", "Converting 42%: token_embd.weight"),  # what eliding keeps first
    ("Waiting for another Headroom converting this file", "Waiting for another Headroom converting this file"),
    ("Something new", "Something new"),
])
def test_load_stages_pass_through_the_catalogue(stage, shown):
    assert load_stage_text(stage) == shown


def test_summary_verdicts_are_said_from_their_numbers():
    assert summary_verdict_text("history 812 → 410 tokens") == "history 812 → 410 tokens"
    assert summary_verdict_text("model summary rejected (empty summary); kept an extract: history 900 → 300 tokens"
                                ) == "the model's summary was not usable; kept an extract (history 900 → 300 tokens)"
    assert summary_verdict_text("summary is 300 tokens, cap is 200") == (
        "too long (300 tokens, cap 200); kept the previous one")
    # what the repetition guard left out (app.core.repetition) is said after the verdict
    verdict = "history 812 → 410 tokens (left out 2 repeated sentences and a loop of 61 characters)"
    assert summary_verdict_text(verdict) == (
        "history 812 → 410 tokens (repeated sentences left out: 2, a loop of 61 characters cut)")
    assert summary_verdict_text("history 812 → 410 tokens (left out 1 repeated sentence)") == (
        "history 812 → 410 tokens (repeated sentences left out: 1)")
    assert summary_verdict_text("model summary rejected (the model repeated itself (3 repeated sentences, 2 kept)); "
                                "kept the first and last 1 of 2 messages: history 256 → 43 tokens") == (
        "the model's summary was not usable; kept what the first and last 1 of 2 messages said "
        "(history 256 → 43 tokens)")
    assert summary_verdict_text("the model repeated itself (3 repeated sentences, 2 kept)") == (
        "the model repeated itself; kept the previous one")
    assert summary_verdict_text("model summary rejected (empty summary); kept 2 of 4 messages, what the user "
                                "stated first: history 72 → 16 tokens") == (
        "the model's summary was not usable; kept what 2 of 4 messages said, what the user stated before what "
        "they asked (history 72 → 16 tokens)")
    # the summary checks of the new-user re-trials (app.core.history), when no extract stands in
    assert summary_verdict_text("the model copied an answer instead of summarizing (32 of 32 words)") == (
        "the model copied an answer instead of summarizing; kept the previous one")
    assert summary_verdict_text("the model wrote back part of the earlier summary (17 of its 24 word 4-grams)") == (
        "the model wrote back only part of the earlier summary; kept the previous one")
    assert summary_verdict_text("the model dropped what the user said (lyon, tom)") == (
        "the model left out what the user said (lost: lyon, tom); kept the previous one")
    # a model summary at its cap that gave way by sentences, and turns that no extract could keep (app.core.history)
    assert summary_verdict_text("model summary rejected (empty summary); kept the first and last 1 of 2 messages; "
                                "the earlier summary cut to 13 of 16 sentences: history 121 → 77 tokens") == (
        "the model's summary was not usable; kept what the first and last 1 of 2 messages said "
        "(history 121 → 77 tokens); the earlier summary was cut to 13 of its 16 sentences to make room")
    assert summary_verdict_text("the model left out what the user said in the folded turns (renault, whiskers); "
                                "the folded turns were left out") == (
        "the model left out what the user said in the turns it folded (lost: renault, whiskers); kept the previous "
        "one; the turns it folded are no longer in the history")
    assert summary_verdict_text("summary is 40 tokens, cap is 6; the folded turns were left out") == (
        "too long (40 tokens, cap 6); kept the previous one; the turns it folded are no longer in the history")
    # "Summarize now" that folds nothing says why in the window's language (app.engine.summary_flow.fold_now)
    assert summary_verdict_text("nothing to fold: the last 2 turns stay as they are") == (
        "nothing to fold: the last 2 turns stay as they are")
    assert summary_verdict_text("nothing to fold: the last 1 turns stay as they are") == (
        "nothing to fold: the last turn stays as it is")
    assert summary_verdict_text("nothing to fold: the newest turn alone is 120 tokens over the context") == (
        "nothing to fold: the newest turn alone does not fit the context (120 tokens over)")


def test_rejected_summaries_without_an_extract_are_said_in_the_windows_language():
    """Two verdicts of app.core.history (a summary in another language than the user's, one that
    dropped most facts of the summary before) reached the Korean window in English when no extract
    stood in: each is said through the catalogue, as the other verdicts are."""
    from types import SimpleNamespace

    from app.core.history import _dropped_facts, _other_language
    from tests.helpers.marking_translator import marking

    turn = SimpleNamespace(messages=[{"role": "user", "content": "제 이름은 민수예요. 부산에 살아요."}])
    language = _other_language(SimpleNamespace(folded=[turn]), "The user is happy to chat about anything.")
    facts = _dropped_facts("Mina Park flies to Tokyo on March 14 with 1200 dollars.", "A story about a cat.")
    assert language and facts  # the core's own words, as the summarizer gives them
    assert summary_verdict_text(language) == (
        "the model did not write it in the conversation's language; kept the previous one")
    assert summary_verdict_text(facts) == ("the model left out most facts of the earlier summary (kept 0 of 6; "
                                           "lost: 1200, 14, march, mina, park); kept the previous one")
    with marking("PlainError"):
        assert summary_verdict_text(language).startswith("«") and summary_verdict_text(facts).startswith("«")


def _refusal(folder) -> str:
    """The loader's own reason for `folder` (app.engine.loading.folder_trust.check_folder)."""
    from app.engine.loading.folder_trust import check_folder

    with pytest.raises(ValueError) as refused:
        check_folder(folder)
    return str(refused.value)


@pytest.mark.parametrize("files,what,todo", [
    ({"config.json": "{not json"}, "The config.json of this model folder could not be read.", "download the model"),
    ({"config.json": "[1, 2]"}, "The config.json of this model folder could not be read.", "download the model"),
    # every JSON file the load reads, named as config.json is (new-user trial: "could not be opened (JSONDecodeError)")
    ({"config.json": "{}", "tokenizer_config.json": '{"bos_token": '},
     "The tokenizer_config.json of this model folder could not be read.", "or fix its tokenizer_config.json."),
    ({"config.json": "{}", "generation_config.json": "[]"},
     "The generation_config.json of this model folder could not be read.", "or fix its generation_config.json."),
    ({"config.json": "{}", "tokenizer.json": "{}"}, "This model folder has no weights files", "download the model"),
    ({"config.json": "{}", "pytorch_model.bin": ""}, "only pickle weights", "Allow pickle weights (.bin / .pt)"),
])
def test_a_folder_the_loader_refuses_is_said_with_its_reason_not_as_an_unknown_failure(tmp_path, files, what, todo):
    """New-user trial: a model folder whose config.json was not JSON, one without weights files and
    one with only pickle weights each read "The model could not be opened. The details are in the
    log", though the loader had said exactly what was wrong."""
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    plain = plain_failure(_refusal(tmp_path), "load")
    assert what in plain.what and todo in plain.todo, plain.line()
    assert "log" not in plain.line()
    _one_line(plain)


def test_nothing_to_fold_is_said_in_korean_with_its_count(korean):
    assert summary_verdict_text("nothing to fold: the last 1 turns stay as they are") == (
        "접을 내용이 없습니다: 마지막 1개 턴은 그대로 둡니다")


def test_a_model_whose_weights_lack_layers_is_said_plainly():
    """The loader's refusal from the safetensors headers (new-user trial 12), for a folder and a GGUF alike."""
    for name in ("tiny", "blocks1000.gguf"):
        said = plain_failure(f"cannot load {name}: damaged model: its config has 1,000 layers but its weights only "
                             "30; the files are incomplete or do not belong together — download the model again",
                             during="load")
        assert said.line() == ("This model's files do not match: its configuration names 1,000 layers, its weights "
                               "hold only 30. The files are incomplete or do not belong together; download the "
                               "model again.")


@pytest.mark.parametrize("reason, line", [
    ("the server URL holds a user name or password before '@': put the key in the API key field",
     "The server URL in Settings holds a name or password before “@”. Remove it from the URL and put the key in "
     "the API key field instead."),
    ("the server URL 'ftp://x' is not an http(s) URL such as http://gpu-box:8000/v1",
     "The server URL in Settings is not an http(s) URL such as http://gpu-box:8000/v1. Fix the server address in "
     "Settings."),
    ("no model name is set for the remote server",
     "No model name is set for the remote server. Enter the model name the server serves in Settings."),
])
def test_a_remote_backend_refused_by_its_settings_says_which_setting(reason, line):
    """Trial 15: a hand-edited settings.json with such a URL gave "The answer failed. The details are in
    the log" at each turn; the log had the reason (RemoteSettings.check, met by the turn)."""
    assert plain_failure(reason, "reply").line() == line


def test_a_model_without_attention_layers_is_said_unsupported_not_damaged():
    """Trial 15: a Mamba GGUF converted, then transformers refused SDPA for it, and the window said
    "This GGUF file could not be read … download it again"."""
    reason = ("cannot load tiny.gguf: ValueError: MambaForCausalLM does not support an attention implementation "
              "through torch.nn.functional.scaled_dot_product_attention yet. Please request the support")
    assert plain_failure(reason, "load").what == ("This model's architecture (Mamba) is not supported by the "
                                                  "installed transformers.")
