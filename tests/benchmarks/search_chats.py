"""Search across chats (Store.list_conversations with a query, as the sidebar runs it) over three
histories of 2,000 chats, on this machine's CPU, in a temporary folder:

    ui_stalls   the ui_stalls benchmark's store: 2,000 short chats (200 titled "서울 여행") and
                one of 1,000 messages
    english     2,000 chats of 5 questions and 5 ~1 kB English-and-code answers
    korean      2,000 chats of 5 questions and 5 1,500-character Korean answers with a few
                Latin words ("Café Straße"), ~15 M characters

    python -m tests.benchmarks.search_chats [--out DIR]

Prints, per history and query, the chats found and the fastest and median of 15 searches (ms);
writes search_chats.json to DIR. Queries: Hangul ("서울", decided by SQLite's LIKE alone),
ASCII with and without letters that other letters fold into, and none found ("zzz").
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

QUERIES = ("서울", "über", "zzz", "strasse", "café", "python", "question 1999 4")
RUNS = 15
KOREAN = "서울의 날씨는 오늘 맑고, 내일은 비가 올 예정입니다. Café Straße 코드 예시는 아래와 같습니다. " * 25


def seed_chats(path: Path, title, answer: str) -> None:
    """2,000 chats `title(i)` of five questions, each answered with `answer`."""
    from app.core.conversation import Message, Role
    from app.core.store import Store

    with Store(path) as store:
        for i in range(2_000):
            cid = store.create_conversation(title(i))
            for j in range(5):
                store.append_message(cid, Message(Role.USER, f"question {i} {j}"))
                store.append_message(cid, Message(Role.ASSISTANT, answer))


def time_searches(path: Path) -> list[dict]:
    from app.core.store import Store

    rows = []
    with Store(path) as store:
        for query in QUERIES:
            times = []
            for _ in range(RUNS):
                started = time.perf_counter()
                found = store.list_conversations(query)
                times.append((time.perf_counter() - started) * 1000)
            rows.append({"query": query, "found": len(found), "min_ms": round(min(times), 1),
                         "median_ms": round(statistics.median(times), 1)})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    from tests.benchmarks.ui_stalls import ANSWER, seed_store

    work = Path(tempfile.mkdtemp(prefix="search_chats-"))
    seed_store(work / "ui_stalls.sqlite3")
    seed_chats(work / "english.sqlite3", lambda i: f"서울 여행 {i}" if i % 10 == 0 else f"chat {i}", ANSWER)
    seed_chats(work / "korean.sqlite3", lambda i: f"대화 {i}", KOREAN)
    results = {}
    print(f"{'history':<12}{'query':<18}{'found':>7}{'min ms':>9}{'median ms':>11}")
    for name in ("ui_stalls", "english", "korean"):
        results[name] = time_searches(work / f"{name}.sqlite3")
        for row in results[name]:
            print(f"{name:<12}{row['query']:<18}{row['found']:>7}{row['min_ms']:>9}{row['median_ms']:>11}")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "search_chats.json").write_text(json.dumps({
            "machine": f"{platform.node()} · {platform.processor() or platform.machine()} · {os.cpu_count()} CPUs",
            "command": "python -m tests.benchmarks.search_chats", "runs": RUNS, "histories": results,
        }, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
