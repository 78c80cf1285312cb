"""Opening and resizing a long chat in the product's ChatView (issue 14, items 1 and 5), offscreen
on the CPU: N stored message pairs, each answer ~2.1 kB of markdown with a 40-line Python block
and a list, loaded with `ChatView.load_messages` (what restoring a conversation does), then the
first layout, then one resize of the window, then one page of earlier messages (a chat opens
with its last messages built: app.ui.chat_view.SHOWN_AT_OPEN).

    QT_QPA_PLATFORM=offscreen python -m tests.benchmarks.transcript_render [--pairs 100] [--out DIR]

Prints one line per phase (seconds on the GUI thread) and writes transcript_render.json to DIR.
"""

import argparse
import json
import time
from pathlib import Path

ANSWER = ("Here is code:\n\n```python\n"
          + "\n".join(f"def f{i}(x):\n    return x < {i} and x > -{i}  # & more" for i in range(40))
          + "\n```\n\nAnd a list:\n1. one\n2. two\n\nDone.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    from PySide6.QtWidgets import QApplication

    app = QApplication([])
    from app.core.conversation import Message, Role
    from app.ui.chat_view import ChatView

    messages = []
    for i in range(args.pairs):
        messages += [Message(Role.USER, f"question {i}"), Message(Role.ASSISTANT, ANSWER)]
    view = ChatView()
    view.resize(800, 700)
    view.show()
    app.processEvents()
    started = time.perf_counter()
    view.load_messages(messages)
    loaded = time.perf_counter()
    app.processEvents()
    laid_out = time.perf_counter()
    view.resize(600, 700)
    app.processEvents()
    resized = time.perf_counter()
    shown = len(view.bubbles())
    view.show_earlier()  # one page of older messages, as "Show earlier messages" builds it
    app.processEvents()
    earlier = time.perf_counter()
    result = {"messages": len(messages), "answer_chars": len(ANSWER), "built_at_open": shown,
              "load_s": round(loaded - started, 2), "first_layout_s": round(laid_out - loaded, 2),
              "resize_s": round(resized - laid_out, 2),
              "earlier_page_s": round(earlier - resized, 2), "earlier_page": len(view.bubbles()) - shown}
    for key, value in result.items():
        print(f"{key:>16}: {value}")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "transcript_render.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
