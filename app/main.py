"""Entry point: CLI flags, then either headless mode or QApplication + qasync loop + wiring."""

import argparse
import logging
import os
import select
import signal
import sys
import time
from pathlib import Path

import app  # noqa: F401  (sets offline mode and the CUDA allocator before torch loads)
from app.core.interrupts import defer_interrupts, note_interrupts
from app.core.logs import configure_logging, log_uncaught_exceptions
from app.core.settings import (
    MAX_NEW_TOKENS,
    MAX_SEED,
    MAX_TOP_K,
    REPETITION_PENALTY_RANGE,
    GenerationSettings,
    read_settings,
)


def positive_int(text: str) -> int:
    """argparse type: an integer ≥ 1 (a bad value exits 2 with a usage line, not silently)."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def temperature(text: str) -> float:
    """argparse type: a sampling temperature in [0, 2] (the settings' range)."""
    value = float(text)
    if not 0 <= value <= 2:
        raise argparse.ArgumentTypeError(f"must be between 0 and 2, got {value:g}")
    return value


def bounded(low: float, high: float, kind=float):
    """argparse type: a number of ``kind`` in [low, high] (the settings' range for that sampler)."""
    def parse(text: str):
        value = kind(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {_number(low)} and {_number(high)}, "
                                             f"got {_number(value)}")
        return value
    return parse


def _number(value: float) -> str:
    """`value` as typed: a whole number in full ("2147483647"; :g said "2.14748e+09"), else :g."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def seed(text: str) -> int:
    """argparse type: a seed in 0–MAX_SEED, or a negative one (-1 in llama.cpp, LM Studio and
    Ollama) for a fresh draw every turn, as the setting reads it; returned as -1, which
    GenerationSettings.validated() makes None (the saved seed is then not used either)."""
    value = int(text)
    if value < 0:
        return -1
    return bounded(0, MAX_SEED, int)(text)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="headroom", description="Chat with a local LLM.")
    parser.add_argument("--model", type=Path, help="HF model folder or .gguf file to open")
    one_run = parser.add_mutually_exclusive_group()  # each answers and exits: both at once is a usage error
    one_run.add_argument("--ask", metavar="QUESTION",
                         help="answer one question on stdout and exit; - reads it from stdin (a long text, a file)")
    one_run.add_argument("--replay", type=Path, metavar="TURNS.txt",
                        help="play one user message per line through the history policy and exit")
    parser.add_argument("--context", type=positive_int, help="context window in tokens (default: the model's)")
    parser.add_argument("--max-new-tokens", type=bounded(1, MAX_NEW_TOKENS, int),
                        help=f"tokens to generate at most (1–{MAX_NEW_TOKENS:,})")
    parser.add_argument("--temperature", type=temperature, help="0–2; 0 = greedy (default for --ask)")
    parser.add_argument("--top-p", type=bounded(0.01, 1),
                        help="keep the likeliest tokens that make up this share of the probability; 1 = off")
    parser.add_argument("--top-k", type=bounded(0, MAX_TOP_K, int), help="keep the k likeliest tokens; 0 = off")
    parser.add_argument("--min-p", type=bounded(0, 1), help="drop tokens below this fraction of the top one; 0 = off")
    parser.add_argument("--repetition-penalty", type=bounded(*REPETITION_PENALTY_RANGE),
                        help="> 1 discourages repeating tokens; 1 = off")
    parser.add_argument("--seed", type=seed,
                        help=f"0–{MAX_SEED}: make sampled answers repeat exactly; -1 (any negative) = a fresh "
                             "draw each turn")
    one_run.add_argument("--plan", action="store_true",  # new-user trial: --plan --ask ignored --ask in silence
                         help="print the model's fit plan on this machine as JSON (nothing is loaded) and exit")
    parser.add_argument("--cpu", action="store_true", help="run on the CPU even where CUDA exists")
    one_run.add_argument("--self-test", action="store_true",
                         help="check the install or bundle (model answer, architectures, 4-bit layer) and exit")
    one_run.add_argument("--desktop-entry", choices=("install", "uninstall", "show"),
                         help="add or remove the application-menu entry and icons for this user, and exit")
    parser.add_argument("--verbose", action="store_true", help="log debug messages to stderr")
    return parser.parse_args(argv)


def quiet_transformers() -> None:
    """Our own progress goes to the status bar / stderr: no tqdm bars from transformers. Before
    transformers is imported this costs nothing: it sets HF_HUB_DISABLE_PROGRESS_BARS, which
    transformers reads when it is imported (transformers/utils/logging.py, `_tqdm_active`), so
    the GUI path calls it before the splash without importing transformers (1–2 s)."""
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    else:
        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"


def main(argv: list[str] | None = None) -> int:
    """The `headroom` command and `python -m app`; the process's exit code."""
    started = time.perf_counter()
    note_interrupts()  # a Ctrl+C a library swallows is still seen (app.core.interrupts)
    try:
        return _main(argv, started)
    except KeyboardInterrupt:  # Ctrl+C: a one-run command stops as a shell tool does, not with a traceback
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # pressed again while exiting: "Exception ignored…" (re-trial)
        print("\nheadroom: interrupted", file=sys.stderr)
        return 130  # 128 + SIGINT, what shells report


def _main(argv: list[str] | None, started: float) -> int:
    args = parse_args(argv)
    if args.desktop_entry:  # before logging and torch: a file copy needs neither
        from app import desktop_entry

        return desktop_entry.main([args.desktop_entry])
    log_file = configure_logging(args.verbose)  # rotating files in the user log folder + stderr
    log_uncaught_exceptions()  # headless too; the window installs its own hook with a dialog
    logging.getLogger("headroom").info("Headroom %s starting; log file %s", app.__version__, log_file)
    quiet_transformers()
    if args.self_test or args.plan or args.ask is not None or args.replay is not None:
        return _run_filtered(args)
    # The window: Ctrl+C is only remembered while it starts (raised inside PySide6's import it is a fatal
    # error, inside the window's construction it leaves QThreads running and Qt aborts), then closes it.
    defer_interrupts()
    from app.ui.display_check import display_problem

    problem = display_problem()  # else Qt aborts (core dump) blaming libxcb-cursor0 (new-user trial)
    if problem:
        logging.getLogger("headroom").info("no window: %s", problem)  # the log file; stderr below
        print(f"headroom: {problem}", file=sys.stderr)
        return 1
    from app.ui.application import run_gui  # the splash shows before torch is imported

    return run_gui(args, *read_settings(), started)


def _run_filtered(args) -> int:
    """`_run_headless`, ended as a Unix filter ends when the reader of its output goes (`| head`,
    `ollama run … | head`): at the first write that fails, with no traceback and no crash record,
    exit status 141 (128 + SIGPIPE, what shells report; new-user trial: "uncaught exception …
    BrokenPipeError" in the log, exit 1). Python ignores SIGPIPE, so the write raises instead. Run with
    stdout closed (`>&-`, sys.stdout None) it says so and exits 1 before anything loads (new-user
    re-trial: "AttributeError: 'NoneType' object has no attribute 'write'" after the load, a crash record)."""
    if sys.stdout is None:
        logging.getLogger("headroom").info("standard output is closed: stopped")
        print("headroom: standard output is closed; nothing to write the output to.", file=sys.stderr)
        return 1
    try:
        code = _run_headless(args)
        sys.stdout.flush()  # what is still buffered (--plan's JSON) fails here, not at interpreter exit
        return code
    except BrokenPipeError:
        _drop_closed_output()
        logging.getLogger("headroom").info("the reader of the output closed it (broken pipe): stopped")
        return 141


def _drop_closed_output() -> None:
    """Point the streams whose reader is gone (stdout, and stderr too with `2>&1 | head`) at
    os.devnull: the flush at interpreter exit then has nowhere to fail ("Exception ignored …
    BrokenPipeError"). From Python's docs, signal module, "Note on SIGPIPE"; a pipe whose reader
    closed polls as POLLERR (Linux, macOS); where that cannot be told, stdout, as the docs do."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        streams = [fd for fd in (sys.stdout.fileno(), sys.stderr.fileno()) if _reader_gone(fd)]
        for fd in streams or [sys.stdout.fileno()]:
            os.dup2(devnull, fd)
    except (OSError, ValueError):  # a stream without a file descriptor (replaced by a caller)
        pass
    finally:
        os.close(devnull)


def _reader_gone(fd: int) -> bool:
    """Whether `fd` is a pipe whose reading end is closed (False where poll is missing: Windows)."""
    if not hasattr(select, "poll"):
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(revents & select.POLLERR for _fd, revents in poller.poll(0))


def _run_headless(args) -> int:
    """--self-test, --plan, --ask or --replay; their exit code."""
    if args.self_test:
        from app import self_test

        return self_test.main(args.model, "cpu" if args.cpu else "auto")
    from app import headless  # --plan / --ask / --replay

    settings, unread = read_settings()
    if unread is not None:  # said once, in the window's English words (re-trial: raw WARNING log lines, twice)
        print(f"headroom: {unread}", file=sys.stderr)
    if args.plan:
        return headless.plan(args.model, "cpu" if args.cpu else "auto")

    from app.core.paths import default_model_path

    model_context = settings.context_for(args.model or default_model_path())  # its own, else the global one
    generation = GenerationSettings(
        system_prompt=settings.generation.system_prompt,
        max_new_tokens=args.max_new_tokens or settings.generation.max_new_tokens,
        temperature=0.0 if args.temperature is None else args.temperature,
        context_tokens=args.context or model_context,
        **{name: getattr(args, name) if getattr(args, name) is not None else getattr(settings.generation, name)
           for name in ("top_p", "top_k", "min_p", "repetition_penalty", "seed")},
    ).validated()
    fit = args.max_new_tokens is None  # the saved setting: limited to the model's context, as the window does
    if args.replay is not None:
        return headless.replay(args.replay, args.model, generation, fit_new_tokens=fit)
    question = args.ask
    if question == "-":  # piped, as `ollama run` takes it: no argument-length limit (~128 KB on Linux)
        if sys.stdin.isatty():  # typed: say how it ends (new-user re-trial: it waited in silence)
            end = "Ctrl+Z, Enter" if sys.platform == "win32" else "Ctrl+D"
            print(f"headroom: type the question, then {end} on a line of its own", file=sys.stderr)
        try:
            question = sys.stdin.buffer.read().decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            print(f"headroom: the question on stdin is not UTF-8 text (byte {exc.start:,})", file=sys.stderr)
            return 2
    return headless.ask(question, args.model, generation, fit_new_tokens=fit)
