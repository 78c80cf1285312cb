"""Headless mode for scripts and checks: `python -m app --ask "..." [--model PATH]`.

Loads the model, streams the answer to stdout, exits 0. A bad path or a broken model exits 1
with a one-line reason on stderr. No Qt is imported.
"""

import sys
import threading
from pathlib import Path

from app.core.paths import default_model_path
from app.core.settings import GenerationSettings


def ask(question: str, model_path: Path | None, settings: GenerationSettings) -> int:
    """Answer one question on stdout; return the process exit code."""
    from transformers.utils import logging as hf_logging

    from app.engine.generation import ReplyFinished, SamplingParams, TextDelta, stream_chat_reply
    from app.engine.loader import ModelLoadError, load_model

    hf_logging.disable_progress_bar()  # stderr carries our own one-line stages instead

    path = Path(model_path) if model_path else default_model_path()
    if model_path is None and not path.exists():
        print(f"headroom: the default model is not installed ({path}); "
              "run: python -m app.install_model", file=sys.stderr)
        return 1
    try:
        loaded = load_model(path, progress=lambda text, _f: print(f"[{text}]", file=sys.stderr))
    except ModelLoadError as exc:
        print(f"headroom: {exc}", file=sys.stderr)
        return 1
    print(f"[{loaded.report.summary()}]", file=sys.stderr)
    messages = [{"role": "system", "content": settings.system_prompt}] if settings.system_prompt else []
    messages.append({"role": "user", "content": question})
    params = SamplingParams(settings.max_new_tokens, settings.temperature, settings.top_p)
    for event in stream_chat_reply(loaded, messages, params, threading.Event()):
        if isinstance(event, TextDelta):
            sys.stdout.write(event.text)
            sys.stdout.flush()
        elif isinstance(event, ReplyFinished):
            sys.stdout.write("\n")
            print(f"[{event.new_tokens} tokens, TTFT {event.ttft_s * 1000:.0f} ms, "
                  f"{event.decode_tokens_per_s:.1f} tok/s, {event.stop_reason}]", file=sys.stderr)
    return 0
