"""A whole Headroom session with the network cut off, for tests/test_offline.py.

    python -m tests.helpers.offline_session OUT.json WORK_DIR

Blocks sockets *before* `import app` (so the import order is the real one): socket.socket.connect
and connect_ex, socket.create_connection and socket.getaddrinfo record the attempt and raise.
Then: open the default model, answer one turn whose history outgrows a 320-token context (so
the runner folds the evicted turns into a summary written by the model), store and export the
conversation. Writes what happened to OUT.json.
"""

import socket
import sys

ATTEMPTS: list[str] = []
HEAVY = ("torch", "transformers", "huggingface_hub", "tokenizers", "safetensors")


def _refuse(name: str):
    def refuse(*args, **kwargs):
        ATTEMPTS.append(f"{name}{args!r}"[:300])
        raise OSError(f"network blocked by the offline test: {name}")

    return refuse


socket.socket.connect = _refuse("socket.connect")
socket.socket.connect_ex = _refuse("socket.connect_ex")
socket.create_connection = _refuse("socket.create_connection")
socket.getaddrinfo = _refuse("socket.getaddrinfo")
LOADED_BEFORE_APP = sorted(m for m in sys.modules if m.partition(".")[0] in HEAVY)

import json  # noqa: E402
import threading  # noqa: E402
from dataclasses import asdict  # noqa: E402
from pathlib import Path  # noqa: E402

import app  # noqa: E402, F401  (offline settings, as in the real app)
from app.engine import events as ev  # noqa: E402

# Earlier turns that a 320-token context cannot keep beside the new one: the turn evicts them.
HISTORY = [
    ("My name is Ada and I live in Lisbon. I keep bees on my roof and sell the honey at a "
     "market every Saturday morning.",
     "Nice to meet you, Ada! Keeping bees on a roof in Lisbon sounds lovely. Selling honey at a "
     "Saturday market is a great way to meet neighbours and share what your bees make."),
    ("I have three hives. The strongest one is called Marta and it made twelve kilograms of "
     "honey last summer, which is a lot for a city hive.",
     "Twelve kilograms from one city hive is impressive. Marta must have plenty of flowers "
     "nearby, and good weather helps a colony build up stores during the summer."),
    ("This spring I want to add a fourth hive and plant lavender and rosemary on the roof so "
     "the bees have food close to home.",
     "Lavender and rosemary are excellent choices: both flower for a long time, tolerate sun "
     "and wind on a roof, and bees love them. A fourth hive should do well with them nearby."),
    ("My neighbour is worried about stings, so I told her the bees are calm and I will give "
     "her a jar of honey every month.",
     "That is a kind way to keep good relations. Calm colonies rarely sting people who leave "
     "them alone, and a monthly jar of honey is a generous thank-you for her patience."),
]


def main(out: Path, work: Path) -> int:
    from app.core.conversation import Conversation, Role
    from app.core.history import SummaryState
    from app.core.paths import default_model_path
    from app.core.settings import GenerationSettings
    from app.core.store import Store
    from app.engine.loading.loader import load_model
    from app.engine.local import turn_runner as tr
    from app.engine.memory.probe import pick_probe

    loaded = load_model(default_model_path())
    runner = tr.TurnRunner(loaded, pick_probe())
    conversation = Conversation()
    for question, answer in HISTORY:
        conversation.add(Role.USER, question)
        conversation.add(Role.ASSISTANT, answer)
    conversation.add(Role.USER, "What is the capital of France?")
    settings = GenerationSettings(max_new_tokens=32, temperature=0.0, context_tokens=320)
    answer, summary, events = "", SummaryState(), []
    for event in runner.run_turn(conversation.messages, summary, settings, threading.Event()):
        events.append(type(event).__name__)
        if isinstance(event, ev.TurnCompleted):
            answer = event.finished.text
        elif isinstance(event, ev.SummaryFinished):
            summary = event.state
    conversation.add(Role.ASSISTANT, answer)

    with Store(work / "offline.sqlite3") as store:
        conversation_id = store.create_conversation("offline session", asdict(settings))
        for message in conversation.messages:
            store.append_message(conversation_id, message)
        store.save_summary(conversation_id, summary)
        (work / "offline.json").write_text(store.export_json(conversation_id), encoding="utf-8")
        (work / "offline.md").write_text(store.export_markdown(conversation_id), encoding="utf-8")

    out.write_text(json.dumps({
        "attempts": ATTEMPTS, "loaded_before_app": LOADED_BEFORE_APP, "answer": answer,
        "summary": summary.content, "summary_tokens": summary.tokens, "events": events,
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
