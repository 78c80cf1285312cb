"""Headless mode for scripts and checks: `python -m app --ask "..." [--model PATH]`,
`python -m app --replay turns.txt [--context N] [--max-new-tokens N]` and
`python -m app --plan [--model PATH] [--cpu]` (the fit plan as JSON, nothing loaded).

Loads the model, streams to stdout, exits 0. A bad path or a broken model exits 1 with a
one-line reason on stderr. No Qt is imported, but for QtCore to word a load failure as the
window does (`load_failure_line`).
"""

import json
import logging
import sys
import threading
from dataclasses import replace
from pathlib import Path

from app.core.interrupts import interrupted
from app.core.paths import default_model_path
from app.core.plural import counted
from app.core.settings import GenerationSettings, load_settings
from app.engine import events as ev


def _fail(line: str) -> None:
    """Print a one-line failure on stderr; raise KeyboardInterrupt instead when Ctrl+C came first
    (the failure is its after-effect, app.core.interrupts; app.main says "interrupted")."""
    if interrupted():
        raise KeyboardInterrupt
    print(line, file=sys.stderr)


def _model_path(model_path: Path | None) -> Path | None:
    """The path to open, or None after printing why the default model is missing."""
    path = Path(model_path) if model_path else default_model_path()
    if model_path is None and not path.exists():
        print(f"headroom: the default model is not installed ({path}); "
              "run: python -m app.install_model", file=sys.stderr)
        return None
    return path


def plan(model_path: Path | None, device_preference: str = "auto") -> int:
    """Print the fit plan (app.engine.loading.fit_plan) of the model as JSON on stdout and its
    one-line summary on stderr; no weights are read. Exit 0, or 1 with a one-line reason."""
    from app.engine.loading.fit_plan import plan_model
    from app.engine.loading.gguf_header import UnsupportedGguf
    from app.engine.loading.loader import ModelLoadError, preflight

    path = _model_path(model_path)
    if path is None:
        return 1
    allowed = load_settings().permissions_for(path)
    try:  # what --ask would refuse, refused here too (new-user trial: a folder of config.json alone was
        # planned from its config's defaults, "does not fit: weights 25.10 GiB")
        preflight(path, allowed.trust_remote_code, allowed.allow_pickle)
    except ModelLoadError as exc:
        _fail(f"headroom: {load_failure_line(str(exc), path)}")
        return 1
    try:
        result = plan_model(path, device_preference)
    except (UnsupportedGguf, ValueError, OSError) as exc:
        _fail(f"headroom: cannot plan {path.name}: {exc}")
        return 1
    print(json.dumps(result.to_json(), indent=2))
    print(f"[plan] {result.summary()}", file=sys.stderr)
    return 0


def _load(model_path: Path | None):
    """The loaded model, or None after printing a one-line reason."""
    from transformers.utils import logging as hf_logging

    from app.engine.loading.loader import ModelLoadError, load_model

    hf_logging.disable_progress_bar()  # stderr carries our own one-line stages instead
    path = _model_path(model_path)
    if path is None:
        return None
    allowed = load_settings().permissions_for(path)  # the per-model opt-ins set in Open model…
    try:
        loaded = load_model(path, progress=_StageLines(), trust_remote_code=allowed.trust_remote_code,
                            allow_pickle=allowed.allow_pickle)
    except ModelLoadError as exc:
        _fail(f"headroom: {load_failure_line(str(exc), path)}")
        return None
    print(f"[{loaded.report.summary()}]", file=sys.stderr)
    if loaded.report.template_problem:  # as the window says it (a bracketed line, not a log record)
        print(f"[its chat template is broken ({loaded.report.template_problem}): prompts use a plain "
              "User / Assistant transcript]", file=sys.stderr)
    elif not loaded.report.has_chat_template:  # the window's status bar says "no chat template" (new-user trial)
        print("[no chat template (a base model?): prompts use a plain User / Assistant transcript]", file=sys.stderr)
    return loaded


class _StageLines:
    """The loader's progress (text, fraction) as "[text]" lines on stderr, a GGUF conversion's
    per-tensor lines only at each tenth of the way (trial 15: ~280 "[Converting model.layers.N…]"
    lines on a first --ask)."""

    def __init__(self):
        self._tenth = -1

    def __call__(self, text: str, fraction: float) -> None:
        if interrupted():  # a Ctrl+C some library swallowed: the load stops at its next stage
            raise KeyboardInterrupt
        if text.startswith("Converting "):
            tenth = int(fraction * 10)
            if tenth == self._tenth:
                return
            self._tenth = tenth
        print(f"[{text}]", file=sys.stderr)


def load_failure_line(reason: str, path: Path) -> str:
    """Why `path` did not open, in the plain English line the window's notice gives
    (app.chat.error_text.plain_failure; ModelFlow names the file the same way), not the loader's
    words (new-user trial: "cannot convert x.gguf: OverflowError: Python int too large …"); those go
    to the log (on stderr with --verbose). The one Qt import of headless mode, on a failure only:
    QtCore's translate gives the source text where no QCoreApplication exists."""
    from app.chat.error_text import plain_failure

    logging.getLogger(__name__).info("cannot open %s: %s", path, reason)
    plain = plain_failure(reason, "load", path)
    line = f"{plain.what} {command_line_todo(plain.todo)}".strip()
    return line if str(path) in line else f"{path.name or path}: {line}"


def command_line_todo(todo: str) -> str:
    """The window's advice said for the command line (new-user trial 14: `--ask` told the user to "Pick
    another one in Open model", a dialog it has not got): another path is given with --model; a choice made
    in Open model (running a model's own code, pickle weights) is made in the window, once; the log is
    named by its file, not by Help → About (new-user trial: a menu a command line has not got)."""
    if todo == "Pick another one in Open model.":
        return "Give another one with --model."
    if "Help → About" in todo:  # "The details are in the log (Help → About shows its folder)." (a menu
        # headless mode has not got): the log file's own path, or --verbose when no file is written
        from app.core.logs import current_log_file

        log_file = current_log_file()
        return (f"The details are in the log ({log_file})." if log_file else
                "Run it again with --verbose for the details.")
    if "Open model" in todo:
        return f"{todo} (Open model is in the window: run headroom without --ask.)"
    return todo


def fitted_to_model(settings: GenerationSettings, report) -> GenerationSettings:
    """`settings` with max new tokens limited to what the loaded model's context allows
    (app.core.new_tokens.fitted_new_tokens), as the window's turns get it (ModelFlow.turn_settings):
    the saved setting is the user's for every model, so one larger than this model's context (kept
    for a bigger one) must not refuse every question. report: the LoadReport (max_positions)."""
    from app.core.new_tokens import fitted_new_tokens, model_context

    context = model_context(settings.context_tokens, report.max_positions)
    return replace(settings, max_new_tokens=fitted_new_tokens(settings.max_new_tokens, context))


def _say_context_cap(settings: GenerationSettings, report) -> None:
    """A context setting beyond the model's trained positions, said as the bracketed line of what
    is used (new-user trial: --context 999999 was capped in silence)."""
    trained = getattr(report, "max_positions", None)  # None: the config does not say
    if trained and settings.context_tokens > trained:
        print(f"[context {settings.context_tokens:,} tokens is more than this model's {trained:,} positions: "
              f"{trained:,} are used]", file=sys.stderr)


def ask(question: str, model_path: Path | None, settings: GenerationSettings, fit_new_tokens: bool = False) -> int:
    """Answer one question on stdout through the same turn runner as the window (history
    policy, admission, the position check of transformers #530); return the process exit code.
    fit_new_tokens: max new tokens is the saved setting, limited to the model (`fitted_to_model`);
    a value given on the command line is used as it is."""
    from app.core.conversation import Message, Role
    from app.core.history import SummaryState
    from app.engine.events import TextDelta
    from app.engine.local import turn_runner as tr
    from app.engine.memory.probe import probe_for

    if not question.strip():
        print("headroom: the question is empty", file=sys.stderr)
        return 2
    try:
        question.encode("utf-8")
    except UnicodeEncodeError:  # bytes the terminal's locale could not decode (surrogate escapes)
        print("headroom: the question is not valid text in this terminal's encoding (UTF-8 expected)",
              file=sys.stderr)
        return 2
    loaded = _load(model_path)
    if loaded is None:
        return 1
    _say_context_cap(settings, loaded.report)
    if fit_new_tokens:
        settings = fitted_to_model(settings, loaded.report)
    runner = tr.TurnRunner(loaded, probe_for(loaded.report.device))
    out = _AnswerOut()
    # sent as the window's composer sends it (Composer: stripped), so both count the same prompt
    # and a refusal says the same numbers (new-user trial: "hi" and a newline, one token more)
    question = question.strip()
    for event in runner.run_turn([Message(Role.USER, question)], SummaryState(), settings, threading.Event()):
        match event:
            case TextDelta(text=text):
                out.add(text)
            case ev.TurnRefused(decision=decision):  # in the window's words (trial 15: the engine's were
                # "takes 20 of the 4 prompt tokens that the context of 10 tokens minus … leaves")
                from app.chat.refusal_text import refusal_line

                print(f"headroom: {refusal_line(decision)}", file=sys.stderr)
                return 1
            case ev.TurnFailed(reason=reason):
                _fail(f"\nheadroom: {reason}")
                return 1
            case ev.TurnCompleted(finished=f):
                out.end()
                sys.stdout.write("\n")
                print(f"[{counted(f.new_tokens, 'token')}, TTFT {f.ttft_s * 1000:,.0f} ms, "
                      f"{f.decode_tokens_per_s:.1f} tok/s, {f.stop_reason}]", file=sys.stderr)
    return 0


class _AnswerOut:
    """The reply of --ask as it streams: the answer to stdout, a reasoning model's "<think>…"
    (app.core.reasoning) to stderr after "[reasoning] ", as the window folds it (new-user trial
    13: a script read the reasoning as the answer). Leading whitespace of the answer is not
    printed (a base model's completion starts with the space after the question)."""

    def __init__(self):
        self.text = ""
        self.reasoning_shown = self.answer_shown = 0
        self.settled = False  # the answer has begun: the rest of the reply is answer, passed straight on

    def add(self, text: str, streaming: bool = True) -> None:
        from app.core.reasoning import split_reasoning

        if self.settled:  # no split of the whole reply per token (quadratic in its length)
            sys.stdout.write(text)
            sys.stdout.flush()
            return
        self.text += text
        reasoning, answer, _state = split_reasoning(self.text, streaming=streaming)
        answer = answer.lstrip()
        if len(reasoning) > self.reasoning_shown:
            sys.stderr.write(("" if self.reasoning_shown else "[reasoning] ") + reasoning[self.reasoning_shown:])
            sys.stderr.flush()
            self.reasoning_shown = len(reasoning)
        if len(answer) > self.answer_shown:
            if self.reasoning_shown and not self.answer_shown:
                sys.stderr.write("\n")
            sys.stdout.write(answer[self.answer_shown:])
            sys.stdout.flush()
            self.answer_shown = len(answer)
            self.settled = True  # split_reasoning holds back nothing once an answer has begun

    def end(self) -> None:
        """The reply ended: what streaming held back, and a line when it ended inside its reasoning."""
        self.add("", streaming=False)
        if self.reasoning_shown and not self.answer_shown:
            sys.stderr.write("\n[no answer: the reply ended inside its reasoning]\n")


def replay(turns_file: Path, model_path: Path | None, settings: GenerationSettings,
           fit_new_tokens: bool = False) -> int:
    """Play one user message per line through the real model with the history policy; print,
    per turn, the prompt tokens, the window's turn count, whether a summary was made, and the
    answer. Exit 0 when every turn was answered, 1 otherwise. fit_new_tokens: as in `ask`."""
    from app.core.conversation import Conversation, MessageStatus, Role
    from app.core.history import NO_ROOM, SummaryState
    from app.engine.local import turn_runner as tr
    from app.engine.memory.probe import probe_for

    try:
        lines = [line.strip() for line in Path(turns_file).read_text(encoding="utf-8").splitlines()]
    except OSError as exc:
        print(f"headroom: cannot read {turns_file}: {exc.strerror}", file=sys.stderr)
        return 1
    except UnicodeDecodeError as exc:
        print(f"headroom: {turns_file} is not UTF-8 text (byte {exc.start:,}); save it as UTF-8", file=sys.stderr)
        return 1
    if not any(lines):
        print(f"headroom: {turns_file} has no messages (one per line)", file=sys.stderr)
        return 1
    loaded = _load(model_path)
    if loaded is None:
        return 1
    _say_context_cap(settings, loaded.report)
    if fit_new_tokens:
        settings = fitted_to_model(settings, loaded.report)
    runner = tr.TurnRunner(loaded, probe_for(loaded.report.device))
    conversation, summary, failures = Conversation(), SummaryState(), 0
    stop = threading.Event()
    for number, text in enumerate((line for line in lines if line), start=1):
        conversation.add(Role.USER, text)
        reply = conversation.add(Role.ASSISTANT, "", MessageStatus.STREAMING)
        row = {"turn": number, "prompt_tokens": 0, "window_turns": 0, "summary": "no"}
        for event in runner.run_turn(conversation.messages[:-1], summary, settings, stop):
            match event:
                case ev.TurnPlanned(plan=plan):
                    row["prompt_tokens"], row["window_turns"] = len(plan.prompt_ids), len(plan.window.kept)
                case ev.TurnRefused(decision=decision) | ev.TurnFailed(reason=decision):
                    reply.status, failures = MessageStatus.FAILED, failures + 1
                    reply.content = getattr(decision, "reason", decision)
                case ev.TurnCompleted(finished=finished):
                    reply.content, reply.status = finished.text, MessageStatus.COMPLETE
                case ev.SummaryFinished(state=state, verdict=verdict) if verdict.reason.startswith(NO_ROOM):
                    row["summary"] = f"no ({verdict.reason})"  # a limit of the context: the turns just left
                case ev.SummaryFinished(state=state, verdict=verdict):
                    said = f"{counted(state.tokens, 'token')}: {verdict.reason}"
                    row["summary"] = f"{'yes' if verdict else 'rejected'} ({said})"
                    summary = state
                case ev.SummaryFailed(reason=reason):
                    row["summary"] = f"failed ({reason})"
        print(f"turn {row['turn']}: prompt {counted(row['prompt_tokens'], 'token')} · window "
              f"{counted(row['window_turns'], 'turn')} · summary {row['summary']}")
        print(f"  user: {text}")
        print(f"  assistant [{reply.status.value}]: {reply.content}", flush=True)
    if summary.content:
        print(f"final summary ({counted(summary.tokens, 'token')}, through message {summary.folded_through}): "
              f"{summary.content}")
    return 0 if failures == 0 else 1
