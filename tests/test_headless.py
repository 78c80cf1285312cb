"""`python -m app --ask` as a script would use it."""

import signal
import subprocess
import sys
from dataclasses import replace

import pytest


def run_app(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_ask_prints_paris_and_exits_zero(real_model_folder):
    result = run_app("--ask", "What is the capital of France?")
    assert result.returncode == 0, result.stderr
    assert "Paris" in result.stdout
    assert "tok/s" in result.stderr  # speed line goes to stderr, the answer alone to stdout


def test_a_saved_max_new_tokens_above_the_context_is_limited_not_refused(tiny_model_dir, tmp_path, monkeypatch):
    """The saved setting is kept for every model (a bigger one may take it): `--ask` limits it to
    this model's context as the window does, instead of refusing ("lower max_new_tokens")."""
    from app.core.settings import GenerationSettings, Settings, save_settings

    monkeypatch.setenv("HEADROOM_CONFIG_DIR", str(tmp_path))
    save_settings(Settings(generation=GenerationSettings(max_new_tokens=32768)))
    result = run_app("--ask", "hi", "--model", str(tiny_model_dir))
    assert result.returncode == 0, result.stderr
    assert "tok/s" in result.stderr
    given = run_app("--ask", "hi", "--model", str(tiny_model_dir), "--max-new-tokens", "32768")
    assert given.returncode == 1 and "lower max new tokens" in given.stderr  # asked for: said, not changed


def test_unreadable_settings_are_said_once_in_words_not_as_log_lines(tiny_model_dir, tmp_path, monkeypatch):
    """New-user re-trial: with HEADROOM_CONFIG_DIR naming a file, `--ask` printed the raw log line
    "… WARNING app.core.settings …: settings file … unreadable ([Errno 20] …)" twice, and answered."""
    (tmp_path / "cfg").write_text("a file, not a folder")
    monkeypatch.setenv("HEADROOM_CONFIG_DIR", str(tmp_path / "cfg"))
    result = run_app("--ask", "hi", "--model", str(tiny_model_dir))
    assert result.returncode == 0, result.stderr
    said = [line for line in result.stderr.splitlines() if "settings" in line.lower()]
    assert said == [f"headroom: Settings could not be read ({tmp_path / 'cfg' / 'settings.json'}: Not a directory); "
                    "the defaults are used."]
    assert "WARNING" not in result.stderr


def test_unusable_settings_values_are_said_once_in_words_not_as_log_lines(tiny_model_dir, tmp_path, monkeypatch):
    """New-user trial: `"temperature": "hot"` printed "… WARNING app.core.settings …: settings:
    temperature='hot' unusable (could not convert string to float: 'hot'); using the default" twice
    (app.main and app.headless each read the file). Now one line names the field and the value used."""
    (tmp_path / "settings.json").write_text('{"generation": {"temperature": "hot", "kept_chat_cache_mib": NaN}}')
    monkeypatch.setenv("HEADROOM_CONFIG_DIR", str(tmp_path))
    result = run_app("--ask", "hi", "--model", str(tiny_model_dir))
    assert result.returncode == 0, result.stderr
    said = [line for line in result.stderr.splitlines() if "settings" in line.lower() or "temperature" in line]
    assert said == ['headroom: Settings: temperature "hot" is not a number; the default 0.7 is used. '
                    "kept_chat_cache_mib NaN is not a number; the default 4096 is used."]
    assert "WARNING" not in result.stderr


def test_ctrl_c_mid_answer_stops_quietly_with_exit_130(real_model_folder):
    """New-user trial: Ctrl+C during `--ask` printed ~90 lines of traceback ending in
    KeyboardInterrupt; a shell tool (ollama run, llama-cli) stops with a line and 128 + SIGINT."""
    # SIGINT's default restored in the child: a shell ignores it in background jobs (a CI runner started with
    # `&`), and Python then keeps it ignored instead of raising KeyboardInterrupt
    process = subprocess.Popen([sys.executable, "-m", "app", "--ask", "Write a very long story about a dragon.",
                                "--max-new-tokens", "2000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert process.stdout.read(1)  # the answer has begun (headless flushes every piece)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130, err.decode()
    assert err.decode().rstrip().endswith("headroom: interrupted")
    assert "Traceback" not in err.decode() and "KeyboardInterrupt" not in err.decode()


@pytest.mark.parametrize("run", [
    ["--ask", "Write a long story about a dragon.", "--max-new-tokens", "2000"],
    ["--replay", "tests/helpers/replay_10_turns.txt", "--max-new-tokens", "16"],
    ["--plan"],
    ["--self-test"],
], ids=["ask", "replay", "plan", "self-test"])
def test_output_whose_reader_is_gone_ends_as_a_unix_filter_with_141(real_model_folder, tmp_path, run):
    """New-user trial: `--ask … | head -c 20` logged "CRITICAL headroom.crash: uncaught exception"
    and a traceback ending in BrokenPipeError, exit 1. As `ollama run … | head`: stop at once,
    nothing said, 128 + SIGPIPE; no "Exception ignored … BrokenPipeError" at interpreter exit."""
    import os
    from pathlib import Path

    read_end, write_end = os.pipe()
    os.close(read_end)  # `| head` that has already read what it wanted and gone
    try:
        result = subprocess.run([sys.executable, "-m", "app", *run], stdout=write_end, stderr=subprocess.PIPE,
                                text=True, timeout=300, cwd=Path(__file__).parent.parent,
                                env={**os.environ, "HEADROOM_LOG_DIR": str(tmp_path)})
    finally:
        os.close(write_end)
    assert result.returncode == 141, result.stderr[-2000:]
    for word in ("Traceback", "BrokenPipeError", "uncaught", "Exception ignored", "Logging error"):
        assert word not in result.stderr
    assert "tok/s" not in result.stderr  # generating stopped at the first piece, not at the end of 2,000 tokens
    log = (tmp_path / "headroom.log").read_text(encoding="utf-8")
    assert "headroom.crash" not in log and "broken pipe" in log


@pytest.mark.parametrize("run", [["--ask", "hello", "--max-new-tokens", "30"], ["--plan"], ["--self-test"],
                                 ["--replay", "tests/helpers/replay_10_turns.txt"]], ids=lambda run: run[0])
def test_closed_standard_output_is_said_before_anything_loads(tmp_path, run):
    """New-user re-trial: `headroom --ask hello >&-` loaded the model, then exited 1 with "CRITICAL
    headroom.crash … uncaught exception" and "AttributeError: 'NoneType' object has no attribute
    'write'" in the log (sys.stdout is None). Now one plain line, exit 1, nothing loaded."""
    import os
    from pathlib import Path

    result = subprocess.run([sys.executable, "-m", "app", *run], stderr=subprocess.PIPE, text=True, timeout=300,
                            cwd=Path(__file__).parent.parent, preexec_fn=lambda: os.close(1),
                            env={**os.environ, "HEADROOM_LOG_DIR": str(tmp_path)})
    assert result.returncode == 1
    assert result.stderr.splitlines() == ["headroom: standard output is closed; nothing to write the output to."]
    assert "headroom.crash" not in (tmp_path / "headroom.log").read_text(encoding="utf-8")


@pytest.fixture
def ctrl_c_noted(monkeypatch):
    """app.main's SIGINT handler, put back afterwards (a CI runner may start pytest with SIGINT ignored)."""
    from app.core import interrupts

    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield interrupts
    finally:
        signal.signal(signal.SIGINT, before)
        interrupts.forget()


def _swallow_ctrl_c() -> None:
    """Ctrl+C arriving inside a library that turns it into something else (an import that fails)."""
    import os

    try:
        os.kill(os.getpid(), signal.SIGINT)  # Python's handler runs right after this call
    except BaseException:  # noqa: BLE001 - what the library does
        pass


@pytest.mark.parametrize("load_then", ["fails", "goes_on"])
def test_a_ctrl_c_some_library_swallowed_still_ends_as_interrupted(tiny_model_dir, ctrl_c_noted, monkeypatch,
                                                                    capsys, load_then):
    """New-user trial: Ctrl+C 0.3 s after --ask left accelerate half-imported; the next import failed as a
    circular import and was said as "This GGUF file could not be read … installs it again" (exit 1)."""
    from app.engine.loading import loader
    from app.main import main

    def load_model(path, progress=None, **_):
        _swallow_ctrl_c()
        if load_then == "fails":
            raise loader.ModelLoadError(f"cannot load {path.name}: ImportError: cannot import name "
                                        "'dispatch_model' from partially initialized module")
        progress("Loading the weights", 0.5)
        raise AssertionError("the load went on after Ctrl+C")

    monkeypatch.setattr(loader, "load_model", load_model)
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # main installs its own
    assert main(["--ask", "hi", "--model", str(tiny_model_dir)]) == 130
    err = capsys.readouterr().err
    assert err.rstrip().endswith("headroom: interrupted") and "cannot" not in err and "Loading the weights" not in err


def test_a_context_beyond_the_model_is_said_as_capped(tiny_model_dir):
    """New-user trial: --context 999999 was accepted and capped without a word."""
    import re

    result = run_app("--ask", "hi", "--model", str(tiny_model_dir), "--context", "999999", "--max-new-tokens", "2")
    assert result.returncode == 0, result.stderr
    assert re.search(r"^\[context 999,999 tokens is more than this model's [\d,]+ positions: [\d,]+ are used\]$",
                     result.stderr, re.MULTILINE), result.stderr
    quiet = run_app("--ask", "hi", "--model", str(tiny_model_dir), "--context", "64", "--max-new-tokens", "2")
    assert quiet.returncode == 0 and "positions" not in quiet.stderr


def test_model_flag_opens_an_hf_folder(tiny_model_dir):
    result = run_app("--ask", "hi", "--model", str(tiny_model_dir), "--max-new-tokens", "4")
    assert result.returncode == 0, result.stderr
    assert "4 tokens" in result.stderr
    assert "no chat template" not in result.stderr


def test_a_model_without_a_chat_template_is_said_as_the_window_says_it(tiny_model_dir, tmp_path):
    """New-user trial: a base model answered through the plain transcript with no word of it; the window's
    status bar says "no chat template"."""
    import json
    import shutil

    base = shutil.copytree(tiny_model_dir, tmp_path / "base")
    (base / "chat_template.jinja").unlink(missing_ok=True)
    config = json.loads((base / "tokenizer_config.json").read_text())
    config.pop("chat_template", None)
    (base / "tokenizer_config.json").write_text(json.dumps(config))
    result = run_app("--ask", "hi", "--model", str(base), "--max-new-tokens", "4")
    assert result.returncode == 0, result.stderr
    assert "[no chat template (a base model?): prompts use a plain User / Assistant transcript]" in result.stderr


@pytest.mark.parametrize("make_bad, reason", [
    (lambda d: d / "nope.gguf", "headroom: There is no model at"),
    (lambda d: (d / "x.gguf").write_bytes(b"junk" * 10) and d / "x.gguf",
     "headroom: x.gguf: This file is not a GGUF file (it does not start with GGUF's magic bytes)."),
])
def test_bad_model_exits_non_zero_with_one_line(tmp_path, make_bad, reason):
    result = run_app("--ask", "hi", "--model", str(make_bad(tmp_path)))
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("headroom:")]
    assert len(errors) == 1 and errors[0].startswith(reason)
    assert "Traceback" not in result.stderr


def test_a_load_failure_gives_command_line_advice_not_the_windows():
    """Trial 14: `--ask --model /nonexistent.gguf` ended "Pick another one in Open model." (a dialog
    headless mode has not got)."""
    from pathlib import Path

    from app.headless import load_failure_line

    gone = load_failure_line("no model at /models/gone.gguf", Path("/models/gone.gguf"))
    assert gone == "There is no model at /models/gone.gguf. Give another one with --model."
    pickle = load_failure_line("/m/x has only pickle weights (.bin / .pt)", Path("/m/x"))
    assert pickle.startswith("x: This model has only pickle weights") and pickle.endswith(
        "(Open model is in the window: run headroom without --ask.)")


def test_a_damaged_tokenizer_config_is_named_with_what_to_do(tiny_model_dir, tmp_path):
    """New-user trial: `{"bos_token": ` as tokenizer_config.json was "badtok: The model could not be
    opened (JSONDecodeError). The details are in the log (Help → About shows its folder)."."""
    import shutil

    folder = shutil.copytree(tiny_model_dir, tmp_path / "badtok")
    (folder / "tokenizer_config.json").write_text('{"bos_token": ')
    for run in (["--ask", "hi"], ["--plan"]):  # refused before anything loads, the plan too
        result = run_app(*run, "--model", str(folder))
        assert result.returncode == 1
        assert [line for line in result.stderr.splitlines() if line.startswith("headroom:")] == [
            "headroom: badtok: The tokenizer_config.json of this model folder could not be read. It may be "
            "incomplete or damaged; download the model again, or fix its tokenizer_config.json."]


def test_damage_inside_a_large_tokenizer_json_is_named_with_what_to_do(tiny_model_dir, tmp_path):
    """New-user re-trial: 4 KiB zeroed mid-file in a 3.5 MB tokenizer.json passed the check of its
    ends and failed as "The model could not be opened (JSONDecodeError)"."""
    import shutil

    folder = shutil.copytree(tiny_model_dir, tmp_path / "badtok")
    data = (folder / "tokenizer.json").read_bytes()
    (folder / "tokenizer.json").write_bytes(data[:len(data) // 2] + bytes(4096) + data[len(data) // 2 + 4096:])
    for run in (["--ask", "hi"], ["--plan"]):
        result = run_app(*run, "--model", str(folder))
        assert result.returncode == 1
        assert [line for line in result.stderr.splitlines() if line.startswith("headroom:")] == [
            "headroom: badtok: The tokenizer.json of this model folder could not be read. It may be "
            "incomplete or damaged; download the model again, or fix its tokenizer.json."]


@pytest.mark.parametrize("log_file", [None, "/var/log/headroom/headroom.log"])
def test_an_unknown_load_failure_names_the_log_file_not_a_menu(monkeypatch, log_file):
    """A command line has no Help → About: the details are named by the log file's path, or by
    --verbose where no log file is written."""
    from pathlib import Path

    from app.core import logs
    from app.headless import load_failure_line

    monkeypatch.setattr(logs, "current_log_file", lambda: log_file and Path(log_file))
    line = load_failure_line("cannot load x: RuntimeError: something new", Path("/m/x"))
    assert "Help" not in line and line.startswith("x: The model could not be opened (RuntimeError). ")
    assert line.endswith(f"The details are in the log ({log_file})." if log_file else
                         "Run it again with --verbose for the details.")


def test_replay_summarizes_a_10_turn_chat_at_1024_tokens(real_model_folder):
    """Issue 4: every turn answered, evicted turns folded into a summary within its cap."""
    import re
    from pathlib import Path

    turns = Path(__file__).parent / "helpers" / "replay_10_turns.txt"
    result = run_app("--replay", str(turns), "--context", "1024", "--max-new-tokens", "96", timeout=1500)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = re.findall(r"^turn (\d+): prompt (\d+) tokens? · window (\d+) turns? · summary (.*)$",
                      result.stdout, re.MULTILINE)
    assert [int(r[0]) for r in rows] == list(range(1, 11))
    assert result.stdout.count("assistant [complete]") == 10
    budget = 1024 - 96 - 128  # context − max_new_tokens − summary reserve (1024 // 8)
    assert all(int(prompt) <= budget + 128 for _, prompt, _, _ in rows)
    made = [int(m) for m in re.findall(r"summary yes \((\d+) tokens", result.stdout)]
    assert made, "no summary was made although the chat outgrew the window"
    assert all(tokens <= 128 for tokens in made)
    assert int(rows[-1][2]) < 10  # the window no longer holds every turn


@pytest.mark.parametrize("flags,message", [
    (["--context", "-5"], "--context: must be at least 1, got -5"),
    (["--max-new-tokens", "0"], "--max-new-tokens: must be between 1 and 32768, got 0"),
    (["--max-new-tokens", "100000"], "--max-new-tokens: must be between 1 and 32768, got 100000"),
    (["--temperature", "5"], "--temperature: must be between 0 and 2, got 5"),
    (["--replay", "turns.txt"], "argument --replay: not allowed with argument --ask"),
    # the bound in full: ":g" said "must be between 0 and 2.14748e+09"
    (["--seed", "2147483648"], "--seed: must be between 0 and 2147483647, got 2147483648"),
    (["--top-p", "0"], "--top-p: must be between 0.01 and 1, got 0"),
])
def test_bad_cli_values_are_usage_errors_not_silently_changed(flags, message, capsys):
    from app.main import parse_args

    with pytest.raises(SystemExit) as exit_:
        parse_args(["--ask", "hi", *flags])
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_seed_minus_one_is_a_fresh_draw_each_turn_as_in_settings(monkeypatch):
    """Settings take seed -1 as random (other tools write it so); `--seed -1` was a usage error
    ("must be between 0 and 2.14748e+09, got -1"). It also overrides a saved fixed seed."""
    from app import headless
    from app.core.settings import GenerationSettings, Settings, save_settings
    from app.main import main

    save_settings(Settings(generation=GenerationSettings(seed=7)))
    asked = []
    monkeypatch.setattr(headless, "ask", lambda _question, _model, generation, **_: asked.append(generation) or 0)
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # main installs its own
    for flags in (["--seed", "-1"], ["--seed=-1"], ["--seed", "-5"], ["--seed", "5"], []):
        assert main(["--ask", "hi", *flags]) == 0
    assert [generation.seed for generation in asked] == [None, None, None, 5, 7]


def test_ask_dash_reads_the_question_from_stdin(monkeypatch, capsys):
    """New-user trial: a long paste stopped at the OS's argument limit (~128 KB); `ollama run` takes
    piped input. Bytes that are not UTF-8 are a usage error, as an argument's are."""
    import io

    from app import headless
    from app.main import main

    asked = []
    monkeypatch.setattr(headless, "ask", lambda question, *_a, **_k: asked.append(question) or 0)
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # main installs its own
    long = "요약해 주세요. " + "긴 문서의 한 줄입니다. " * 20_000  # ~480 KB of UTF-8
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\xef\xbb\xbf" + long.encode())))
    assert main(["--ask", "-"]) == 0 and asked == [long]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"ok \xff\xfe")))
    assert main(["--ask", "-"]) == 2 and len(asked) == 1
    assert "the question on stdin is not UTF-8 text (byte 3)" in capsys.readouterr().err

    class Terminal(io.TextIOWrapper):  # typed at a terminal: it says how the question ends (re-trial)
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdin", Terminal(io.BytesIO("안녕\n".encode())))
    assert main(["--ask", "-"]) == 0 and asked[-1] == "안녕\n"
    assert "type the question, then Ctrl+D on a line of its own" in capsys.readouterr().err


def test_top_p_is_a_flag_like_the_other_samplers(monkeypatch):
    """Trial 15: the README names top-p among the samplers, --help had no --top-p, and --ask used the
    saved value in silence. The flag overrides it; without it the saved value stays."""
    from app import headless
    from app.core.settings import GenerationSettings, Settings, save_settings
    from app.main import main

    save_settings(Settings(generation=GenerationSettings(top_p=0.8)))
    asked = []
    monkeypatch.setattr(headless, "ask", lambda _question, _model, generation, **_: asked.append(generation) or 0)
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # main installs its own
    assert main(["--ask", "hi", "--top-p", "0.5"]) == 0 and main(["--ask", "hi"]) == 0
    assert [generation.top_p for generation in asked] == [0.5, 0.8]

def test_input_that_is_not_text_is_refused_before_a_model_loads(tmp_path, capsys, monkeypatch):
    """New-user trial: --replay of a CP949 file crashed with only "uncaught exception"; an empty one
    loaded the model for 10 s and printed nothing; --ask with bytes the locale could not decode
    crashed in the tokenizer after loading the model."""
    from app import headless
    from app.core.settings import GenerationSettings

    monkeypatch.setattr(headless, "_load", lambda _path: pytest.fail("a model was loaded"))
    cp949 = tmp_path / "korean.txt"
    cp949.write_bytes("안녕하세요\n".encode("cp949"))
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n", encoding="utf-8")
    assert headless.replay(cp949, None, GenerationSettings()) == 1
    assert f"{cp949} is not UTF-8 text (byte 0); save it as UTF-8" in capsys.readouterr().err
    assert headless.replay(empty, None, GenerationSettings()) == 1
    assert f"{empty} has no messages (one per line)" in capsys.readouterr().err
    assert headless.ask(b"caf\xe9".decode("utf-8", "surrogateescape"), None, GenerationSettings()) == 2
    assert "not valid text" in capsys.readouterr().err


def test_ask_prints_a_base_model_s_answer_without_its_leading_space(monkeypatch, capsys):
    """New-user trial: a base model (no chat template) answered " The capital of France is Paris."."""
    from types import SimpleNamespace

    from app import headless
    from app.core.settings import GenerationSettings
    from app.engine import events
    from app.engine.local import turn_runner
    from tests.chat.conftest import finished, record

    class Runner:
        def __init__(self, *_args):
            pass

        def run_turn(self, *_args):
            yield from (events.TextDelta(" "), events.TextDelta(" The capital"), events.TextDelta(" is Paris."),
                        events.TurnCompleted(finished(), record()))

    monkeypatch.setattr(headless, "_load", lambda _path: SimpleNamespace(report=SimpleNamespace(device="cpu")))
    monkeypatch.setattr(turn_runner, "TurnRunner", Runner)
    assert headless.ask("What is the capital of France?", None, GenerationSettings()) == 0
    assert capsys.readouterr().out == "The capital is Paris.\n"


@pytest.mark.parametrize("pieces, out, err", [
    (["<thi", "nk>\nThe user", " asks.\n</thi", "nk>\n\nParis", "."], "Paris.\n", "[reasoning] The user asks.\n"),
    (["<think>\nHm, let me", " see"], "\n",
     "[reasoning] Hm, let me see\n[no answer: the reply ended inside its reasoning]\n"),
    (["Use </think> to close it."], "Use </think> to close it.\n", ""),
], ids=["reasoning-then-answer", "reasoning-only", "no-reasoning"])
def test_ask_prints_the_answer_and_a_reasoning_model_s_reasoning_apart(monkeypatch, capsys, pieces, out, err):
    """New-user trial 13: --ask printed "<think>…" to stdout as the answer; the window folds it."""
    from types import SimpleNamespace

    from app import headless
    from app.core.settings import GenerationSettings
    from app.engine import events
    from app.engine.local import turn_runner
    from tests.chat.conftest import finished, record

    class Runner:
        def __init__(self, *_args):
            pass

        def run_turn(self, *_args):
            yield from (*(events.TextDelta(p) for p in pieces), events.TurnCompleted(finished(), record()))

    monkeypatch.setattr(headless, "_load", lambda _path: SimpleNamespace(report=SimpleNamespace(device="cpu")))
    monkeypatch.setattr(turn_runner, "TurnRunner", Runner)
    assert headless.ask("What is the capital of France?", None, GenerationSettings()) == 0
    said = capsys.readouterr()
    assert said.out == out and said.err.startswith(err)  # then the "[N tokens, TTFT …]" line
    assert said.err.count("[reasoning]") == (1 if err else 0)


def test_ask_and_the_window_say_the_same_refusal_for_the_same_message(real_loaded, monkeypatch, capsys):
    """New-user trial 10: context 16 and "hi": `--ask` said "the new message needs 2 more: shorten the
    system prompt by 16 tokens", the window "… by 15 tokens" with the meter at 21 / 6. The window
    sends what the composer holds stripped; `--ask` sent the question as given, a newline and all
    (one token more). Both send "hi" now, and say the same numbers: here that no shorter system
    prompt fits (its 6 tokens are less than the 15 over)."""
    import threading

    from app import headless
    from app.chat.refusal_text import refusal_line
    from app.core.conversation import Message, Role
    from app.core.history import SummaryState
    from app.core.new_tokens import fitted_new_tokens, model_context
    from app.core.settings import GenerationSettings
    from app.engine import events
    from app.engine.local.turn_runner import TurnRunner
    from app.engine.memory.probe import probe_for

    saved = GenerationSettings(max_new_tokens=32768, context_tokens=16, temperature=0.0)
    monkeypatch.setattr(headless, "_load", lambda _path: real_loaded)
    assert headless.ask("hi\n", None, saved, fit_new_tokens=True) == 1
    cli = capsys.readouterr().err.strip().splitlines()[-1]
    # the window: the composer's "hi", the turn settings ModelFlow.turn_settings gives this model
    context = model_context(saved.context_tokens, real_loaded.report.max_positions)
    turn = replace(saved, max_new_tokens=fitted_new_tokens(saved.max_new_tokens, context))
    runner = TurnRunner(real_loaded, probe_for(real_loaded.report.device))
    [decision] = [e.decision for e in runner.run_turn([Message(Role.USER, "hi")], SummaryState(), turn,
                                                        threading.Event()) if isinstance(e, events.TurnRefused)]
    assert "the new message needs 1 more: shortening the system prompt cannot make it fit" in decision.reason
    assert cli == f"headroom: {refusal_line(decision)}"  # the window's words (trial 15: the engine's were hard to read)
    assert refusal_line(decision) == (
        "This turn was not started. The system prompt takes 20 tokens, but the context of 16 tokens minus max "
        "new tokens (8) and the summary reserve (2) leaves 6 for it and the new message. Shortening the system "
        "prompt cannot make it fit: use a larger context.")


def test_ask_and_the_window_say_the_same_for_a_message_no_shortening_can_fit(real_loaded, monkeypatch, capsys):
    """New-user trial 11: context 16 and "What is the capital of France? Please answer briefly.": both
    said "needs 31 tokens … leaves 6. Shorten it by 25 tokens" (the window also offered "Attach as a
    file"), but the system message alone takes 20 of the 6: no shorter message fits. Both say so now."""
    import threading

    from app import headless
    from app.chat.refusal_text import refusal_line
    from app.core.conversation import Message, Role
    from app.core.history import SummaryState
    from app.core.new_tokens import fitted_new_tokens, model_context
    from app.core.settings import GenerationSettings
    from app.engine import events
    from app.engine.local.turn_runner import TurnRunner
    from app.engine.memory.probe import probe_for

    question = "What is the capital of France? Please answer briefly."
    saved = GenerationSettings(max_new_tokens=32768, context_tokens=16, temperature=0.0)
    monkeypatch.setattr(headless, "_load", lambda _path: real_loaded)
    assert headless.ask(question, None, saved, fit_new_tokens=True) == 1
    cli = capsys.readouterr().err.strip().splitlines()[-1]
    context = model_context(saved.context_tokens, real_loaded.report.max_positions)
    turn = replace(saved, max_new_tokens=fitted_new_tokens(saved.max_new_tokens, context))
    runner = TurnRunner(real_loaded, probe_for(real_loaded.report.device))
    [decision] = [e.decision for e in runner.run_turn([Message(Role.USER, question)], SummaryState(), turn,
                                                        threading.Event()) if isinstance(e, events.TurnRefused)]
    assert decision.reason.endswith("leaves 6: even an empty message needs 20, so shortening it cannot make it "
                                    "fit: use a larger context") and "shorten it by" not in decision.reason
    assert cli == f"headroom: {refusal_line(decision)}"
    assert refusal_line(decision) == (
        "This turn was not started. The new message needs 31 tokens with the system prompt, but the context of 16 "
        "tokens minus max new tokens (8) and the summary reserve (2) leaves 6. Even an empty message needs 20 "
        "tokens with the system prompt, so shortening the message cannot make it fit: use a larger context.")


def test_a_damaged_gguf_is_said_as_the_window_says_it(tmp_path):
    """New-user trial: "cannot convert heads0.gguf: ZeroDivisionError: integer modulo by zero"."""
    from gguf import GGUFReader

    from tests.helpers.tiny_gguf import write_tiny_gguf

    path = tmp_path / "heads0.gguf"
    write_tiny_gguf(path, "F32")
    reader = GGUFReader(path, "r+")
    field = reader.fields["llama.attention.head_count"]
    field.parts[field.data[0]][0] = 0
    reader.data.flush()
    del reader
    result = run_app("--ask", "hi", "--model", str(path))
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("headroom:")]
    assert errors == ["headroom: heads0.gguf: This GGUF file could not be read. The file may be incomplete or "
                      "damaged; download it again."]
    assert "Error" not in result.stderr


def test_nan_weights_exit_one_with_one_plain_line(tiny_model_dir, tmp_path):
    """New-user trial: greedy decoding of NaN logits printed an empty 512-token answer, exit 0."""
    import shutil

    from safetensors.torch import load_file, save_file

    folder = tmp_path / "nan-model"
    shutil.copytree(tiny_model_dir, folder)
    weights = load_file(folder / "model.safetensors")
    weights["model.norm.weight"].fill_(float("nan"))
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    result = run_app("--ask", "hi", "--model", str(folder))
    assert result.returncode == 1
    assert result.stdout.strip() == ""
    lines = [line for line in result.stderr.splitlines() if line.strip() and not line.startswith("[")]
    assert lines == ["headroom: the model produced invalid numbers (NaN or infinity) — its weights may be "
                     "damaged, or its compute dtype overflows"]


def test_a_conversions_tensor_lines_are_said_at_each_tenth_only(capsys):
    """Trial 15: a first --ask of a GGUF printed ~280 "[Converting model.layers.N…]" lines."""
    from app.headless import _StageLines

    say = _StageLines()
    say("Reading the GGUF tokenizer and chat template", 0.0)
    for done in range(300):
        say(f"Converting model.layers.{done}.weight ({done / 300:.0%})", 0.05 + 0.9 * done / 300)
    say("Converted", 0.95)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "[Reading the GGUF tokenizer and chat template]" and lines[-1] == "[Converted]"
    assert 9 <= len(lines) - 2 <= 11 and lines[1] == "[Converting model.layers.0.weight (0%)]"


def test_no_display_is_said_not_a_qt_abort(monkeypatch, capsys):
    """New-user trial: `headroom` over ssh printed Qt's "xcb-cursor0 … is needed" and dumped core."""
    from app.main import main

    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # main installs its own
    assert main([]) == 1
    err = capsys.readouterr().err
    assert "no display to show the window on" in err and "QT_QPA_PLATFORM=offscreen" in err
