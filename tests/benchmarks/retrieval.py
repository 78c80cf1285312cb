"""Retrieval benchmark (issue 18, CPU): documents within the KV budget.

Builds documents from the standard library's own pydoc text (PSF licence, freely redistributable;
generated on the spot, nothing is downloaded): a 300-page reference
as plain text, as Markdown (pydoc's section names as headings), as a 300-page PDF (drawn with
pypdf, tests/helpers/pdf_files.py) and as a DOCX; and stdlib source code as a .py file. Twelve
invented facts are planted at known places, each with a distractor sentence about the same name
elsewhere, and asked about in other words; 8 natural questions about the stdlib text itself are
asked in a user's words. Everything runs through the product's own code with
its defaults: extract_file → chunk_document (128 tokens, 16 overlap) → fit_document at the budget
document_budget gives for the default model (SmolLM2-135M-Instruct: 8192-token context,
max_new_tokens 512, summary reserve 512), counted with the model's own tokenizer.

Reports: hit rate (the planted answer is in the text sent) at that budget and at a 2048-token
context setting, for 128/256/512-token chunks (overlap 1/8 of a chunk); rank of the fact's chunk
(MRR); extraction time per MB per format; chunking and ranking time; prompt tokens sent versus
pasting the whole file. `--answer PDF` asks the real model the planted questions instead.

    python -m tests.benchmarks.retrieval            # writes results/retrieval_cpu.json and .txt
    python -m tests.benchmarks.retrieval --keep DIR --answer DIR/stdlib-reference.pdf --budgets ctx2048
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import pydoc
import re
import statistics
import sys
import tempfile
import textwrap
import time
import zipfile
from pathlib import Path
from xml.sax.saxutils import escape

import app  # noqa: F401  (offline settings before transformers)
from app.core.chunking import DEFAULT_CHUNK_TOKENS, DEFAULT_OVERLAP_TOKENS, chunk_document
from app.core.document_prompt import document_budget, with_document
from app.core.history import TokenBudget, summary_reserve
from app.core.paths import default_model_path
from app.core.settings import GenerationSettings
from app.engine.documents.extract import extract_file
from app.engine.documents.fit import fit_document
from app.engine.documents.rank import ChunkIndex, query_terms
from tests.helpers.pdf_files import write_text_pdf

RESULTS = Path(__file__).parent / "results"
PAGES, LINES_PER_PAGE, WIDTH = 300, 60, 95
MODULES = ("collections", "itertools", "functools", "pathlib", "json", "re", "datetime", "threading",
           "subprocess", "argparse", "logging", "csv", "zipfile", "tarfile", "shutil", "tempfile",
           "textwrap", "string", "struct", "decimal", "fractions", "statistics", "random", "heapq",
           "bisect", "sqlite3", "urllib.parse", "http.client", "email.message", "typing", "dataclasses",
           "enum", "inspect", "ast", "socket", "selectors", "contextlib", "difflib", "codecs", "io")
SOURCE_MODULES = ("argparse", "textwrap", "shutil", "tempfile", "difflib", "csv", "json.decoder")

# (planted fact, question in other words, answer that must be in the text sent, distractor)
FACTS = (
    ("The Zephyrine reactor's maintenance code is 4471-KQ.",
     "Which maintenance code does the Zephyrine reactor use?", "4471-KQ",
     "The Zephyrine reactor's cooling loop was flushed in spring."),
    ("Orvald Tessing wrote the parser for the Kestrel config format in 1998.",
     "Who authored the Kestrel configuration parser?", "Orvald Tessing",
     "The Kestrel config format allows comments after a semicolon."),
    ("Batch jobs on the Harrowgate cluster are killed after 37 minutes of idle time.",
     "How long may a Harrowgate batch job sit idle before it is terminated?", "37 minutes",
     "The Harrowgate cluster has two login nodes."),
    ("The Mirelle archive keeps scanned invoices in the vault on level minus three.",
     "Where are Mirelle's scanned invoices stored?", "level minus three",
     "The Mirelle archive opens at nine on Saturdays."),
    ("Quillon's default timeout for the telemetry uplink is 820 milliseconds.",
     "What is the default telemetry uplink timeout in Quillon?", "820 milliseconds",
     "Quillon logs telemetry in a ring buffer."),
    ("The Ebbermoor dataset was collected from 312 weather stations.",
     "How many weather stations contributed to the Ebbermoor dataset?", "312 weather stations",
     "The Ebbermoor dataset is published every autumn."),
    ("Lanterne version 5.2 dropped support for the legacy Brisket protocol.",
     "Which Lanterne release removed the Brisket protocol?", "5.2",
     "Lanterne speaks the Brisket protocol over TCP port 7100."),
    ("Access to the Tamsin staging server requires the passphrase copper-heron-58.",
     "What passphrase opens the Tamsin staging server?", "copper-heron-58",
     "The Tamsin staging server is rebooted every Sunday night."),
    ("The Veldt pipeline compresses nightly snapshots with zstd level 19.",
     "Which compression level does Veldt use for the nightly snapshots?", "zstd level 19",
     "The Veldt pipeline writes its snapshots to tape on Fridays."),
    ("Professor Anwen Karsk measured the Dunmore glacier retreating 41 metres per year.",
     "How fast is the Dunmore glacier retreating each year?", "41 metres",
     "The Dunmore glacier feeds two mountain lakes."),
    ("The Saltmarsh ferry leaves the east pier at 06:40 on weekdays.",
     "At what time does the Saltmarsh ferry depart on weekdays?", "06:40",
     "The Saltmarsh ferry was repainted blue in 2016."),
    ("At Corvid Labs a P0 ticket must be acknowledged within 9 minutes.",
     "How quickly must Corvid Labs acknowledge a P0 ticket?", "9 minutes",
     "Corvid Labs files P3 tickets in a weekly digest."),
)

# Questions about the stdlib text itself, asked in a user's words (several avoid the docs' own
# phrasing); the answer is a phrase of the pydoc text (Python 3.11). Hit: that phrase is sent.
NATURAL = (
    ("What happens to lru_cache if maxsize is set to None?", "LRU features are disabled"),
    ("When does a Python program exit if daemon threads are still running?", "only daemon threads are left"),
    ("How do I remove the common indentation from a block of text?", "Remove any common leading whitespace"),
    ("How is the median computed when there is an even number of data points?", "median is interpolated"),
    ("How can I delete a directory and everything inside it?", "Recursively delete a directory tree"),
    ("How do I list the most common elements of a Counter with their counts?",
     "most common elements and their counts"),
    ("What error does check_output raise when the command fails?", "CalledProcessError"),
    ("How do I insert into a sorted list so that it stays sorted?", "keep it sorted"),
)


def reference_lines() -> list[str]:
    """pydoc text of MODULES wrapped to WIDTH, cut to PAGES × LINES_PER_PAGE lines."""
    lines: list[str] = []
    for name in MODULES:
        text = pydoc.render_doc(name, renderer=pydoc.plaintext)
        for line in text.splitlines():
            lines.extend(textwrap.wrap(line, WIDTH, subsequent_indent="    ") or [""])
        if len(lines) >= PAGES * LINES_PER_PAGE:
            break
    return lines[: PAGES * LINES_PER_PAGE - 2 * len(FACTS)]


def plant(lines: list[str]) -> list[str]:
    """Insert each fact at k/(n+1) of the text and its distractor a third of the way further."""
    out = list(lines)
    n = len(FACTS)
    places = [(int(len(lines) * (i + 1) / (n + 1)), f[0]) for i, f in enumerate(FACTS)]
    places += [(int(len(lines) * ((i + 1) / (n + 1) + 1 / 3)) % len(lines), f[3]) for i, f in enumerate(FACTS)]
    for at, sentence in sorted(places, reverse=True):
        out[at:at] = [sentence]
    return out


def to_markdown(lines: list[str]) -> str:
    """pydoc's "Python Library Documentation: …" → "# …", its upper-case section names → "## …"."""
    out = []
    for line in lines:
        if line.startswith("Python Library Documentation:"):
            out.append(f"# {line.split(':', 1)[1].strip()}")
        elif line.isupper() and line == line.strip() and len(line) < 40:
            out.append(f"## {line.title()}")
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def write_docx(path: Path, markdown: str) -> Path:
    """A minimal DOCX: "#"/"##" lines as Heading1/Heading2 paragraphs, other lines as paragraphs."""
    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    paras = []
    for line in markdown.splitlines():
        style = "Heading1" if line.startswith("# ") else "Heading2" if line.startswith("## ") else ""
        text = escape(line.lstrip("# ") if style else line)
        ppr = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
        paras.append(f'<w:p>{ppr}<w:r><w:t xml:space="preserve">{text}</w:t></w:r></w:p>')
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("word/document.xml", f"<w:document {w}><w:body>{''.join(paras)}</w:body></w:document>")
    return path


def source_text() -> str:
    import importlib
    import inspect

    lines = []
    for name in SOURCE_MODULES:
        lines.append(f"# ===== {name} =====")
        lines.extend(inspect.getsource(importlib.import_module(name)).splitlines())
    return "\n".join(plant(lines)) + "\n"


def make_documents(folder: Path) -> dict[str, Path]:
    lines = plant(reference_lines())
    pages = [lines[i:i + LINES_PER_PAGE] for i in range(0, len(lines), LINES_PER_PAGE)]
    markdown = to_markdown(lines)
    docs = {
        "txt": folder / "stdlib-reference.txt", "md": folder / "stdlib-reference.md",
        "pdf": folder / "stdlib-reference.pdf", "docx": folder / "stdlib-reference.docx",
        "py": folder / "stdlib-source.py",
    }
    docs["txt"].write_text("\n".join(lines) + "\n", encoding="utf-8")
    docs["md"].write_text(markdown, encoding="utf-8")
    write_text_pdf(docs["pdf"], pages)
    write_docx(docs["docx"], markdown)
    docs["py"].write_text(source_text(), encoding="utf-8")
    return docs


def load_tokenizer():
    from transformers import AutoTokenizer

    from app.engine.loading.loader import resolve_model_folder

    folder = resolve_model_folder(default_model_path())
    tok = AutoTokenizer.from_pretrained(folder)
    tok.model_context = json.loads((folder / "config.json").read_text())["max_position_embeddings"]
    return tok


def budgets(tok, question: str) -> dict[str, int]:
    """Document budget for this question on the default model at its full 8192-token context and
    at a 2048-token context setting (GenerationSettings defaults otherwise)."""
    settings = GenerationSettings()
    system = [{"role": "system", "content": settings.system_prompt}] if settings.system_prompt else []
    base = len(tok.apply_chat_template([*system, {"role": "user", "content": question}],
                                       add_generation_prompt=True, return_dict=False))
    out = {}
    for label, context in (("ctx8192", 0), ("ctx2048", 2048)):
        model_context = tok.model_context
        budget = TokenBudget.for_model(model_context, context, settings.max_new_tokens,
                                       summary_reserve(min(model_context, context or model_context)))
        out[label] = document_budget(budget, base)
    return out


def measure(docs: dict[str, Path], tok, chunk_sizes=(128, 256, 512)) -> dict:
    def count(text: str) -> int:
        return len(tok(text, add_special_tokens=False)["input_ids"])

    report = {"formats": {}, "runs": []}
    questions = {"planted": [(q, a) for _, q, a, _ in FACTS], "natural": list(NATURAL)}
    question_budgets = {q: budgets(tok, q) for qs in questions.values() for q, _ in qs}
    for fmt, path in docs.items():
        t0 = time.perf_counter()
        doc = extract_file(path)
        extract_s = time.perf_counter() - t0
        mb = path.stat().st_size / 1e6
        report["formats"][fmt] = {"file": path.name, "mb": round(mb, 3), "pages": doc.pages or None,
                                  "chars": len(doc.text), "extract_s": round(extract_s, 3),
                                  "extract_s_per_mb": round(extract_s / mb, 3)}
        sizes = chunk_sizes if fmt in ("txt", "pdf") else (DEFAULT_CHUNK_TOKENS,)
        for size in sizes:
            t0 = time.perf_counter()
            chunks = chunk_document(doc.text, count, max_tokens=size,
                                    overlap_tokens=DEFAULT_OVERLAP_TOKENS * size // DEFAULT_CHUNK_TOKENS,
                                    page_starts=doc.page_starts)
            chunk_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            index = ChunkIndex(chunks)
            index_s = time.perf_counter() - t0
            if size == DEFAULT_CHUNK_TOKENS:
                report["formats"][fmt] |= {"chunks": len(chunks), "chunk_s": round(chunk_s, 2),
                                           "index_s": round(index_s, 2),
                                           "doc_tokens": sum(c.tokens for c in chunks)}
            print(f"{fmt} {size}: extract {extract_s:.2f} s, chunk {chunk_s:.2f} s, index {index_s:.2f} s",
                  flush=True)
            for label in ("ctx8192", "ctx2048"):
                for kind, qs in questions.items():
                    if kind == "natural" and fmt == "py":
                        continue  # the source file is not the pydoc text
                    run = _run(fmt, size, label, doc, chunks, index, qs, question_budgets, count)
                    report["runs"].append({"questions": kind} | run)
    return report


def _run(fmt, size, label, doc, chunks, index, questions, question_budgets, count) -> dict:
    hits, ranks, sent, whole, fit_s, prompts = [], [], [], [], [], []
    for question, answer in questions:
        query = query_terms(question)
        budget = question_budgets[question][label]
        t0 = time.perf_counter()
        fit = fit_document(doc.name, chunks, budget, query, count, doc.pages, index, whole[0] if whole else None)
        fit_s.append(time.perf_counter() - t0)
        hits.append(answer in fit.block)
        scores = index.scores(query)
        order = sorted(range(len(chunks)), key=lambda i: (-scores[i], i))
        rank = next((r + 1 for r, i in enumerate(order) if answer in chunks[i].text), None)
        ranks.append(rank)
        sent.append(fit.tokens)
        whole.append(fit.whole_tokens)
        prompts.append(count(with_document(question, [fit.block])))
        assert fit.tokens <= budget, (fit.tokens, budget)
    return {
        "format": fmt, "chunk_tokens": size, "budget": label,
        "budget_tokens": statistics.median(question_budgets[q][label] for q, _ in questions),
        "hit_rate": sum(hits) / len(hits), "hits": hits,
        "mrr": round(statistics.mean(1 / r if r else 0 for r in ranks), 3), "fact_chunk_ranks": ranks,
        "tokens_sent_mean": round(statistics.mean(sent)), "whole_tokens": whole[0],
        "tokens_saved_fraction": round(1 - statistics.mean(sent) / whole[0], 4),
        "message_tokens_max": max(prompts), "fit_s_mean": round(statistics.mean(fit_s), 3),
    }


def print_table(report: dict) -> None:
    print(f"{'format':6} {'MB':>6} {'pages':>5} {'chunks':>6} {'doc tok':>8} {'extract s':>9} {'s/MB':>6} "
          f"{'chunk s':>7} {'index s':>7}")
    for fmt, f in report["formats"].items():
        print(f"{fmt:6} {f['mb']:6.2f} {f['pages'] or '':>5} {f['chunks']:6d} {f['doc_tokens']:8d} "
              f"{f['extract_s']:9.2f} {f['extract_s_per_mb']:6.2f} {f['chunk_s']:7.2f} {f['index_s']:7.2f}")
    print()
    print(f"{'questions':9} {'format':6} {'chunk':>5} {'budget':>8} {'budget tok':>10} {'hit rate':>8} {'MRR':>5} "
          f"{'sent tok':>8} {'whole tok':>9} {'saved':>6} {'fit s':>6}")
    for r in report["runs"]:
        print(f"{r['questions']:9} {r['format']:6} {r['chunk_tokens']:5d} {r['budget']:>8} {r['budget_tokens']:10.0f} "
              f"{r['hit_rate']:8.2f} {r['mrr']:5.2f} {r['tokens_sent_mean']:8d} {r['whole_tokens']:9d} "
              f"{r['tokens_saved_fraction']:6.1%} {r['fit_s_mean']:6.2f}")


def answer_questions(pdf: Path, tok, labels=("ctx2048", "ctx8192"), limit: int = len(FACTS),
                     save=lambda rows: None) -> list[dict]:
    """The issue's "done when": the 300-page PDF attached, each planted question asked of the real
    default model (greedy, CPU) through compose_message and the product's stream_chat_reply; the
    reply is right when it contains the planted answer."""
    import threading

    from app.engine.documents.attach import compose_message, prepare_attachment
    from app.engine.events import ReplyFinished, TextDelta
    from app.engine.loading.loader import load_model, resolve_model_folder
    from app.engine.local.generation import SamplingParams, stream_chat_reply

    def count(text: str) -> int:
        return len(tok(text, add_special_tokens=False)["input_ids"])

    loaded = load_model(resolve_model_folder(default_model_path()))
    attachment = prepare_attachment(extract_file(pdf), count)
    settings = GenerationSettings()
    rows = []
    for label in labels:
        for _fact, question, answer, _ in FACTS[:limit]:
            budget = budgets(tok, question)[label]
            prepared = compose_message(question, [attachment], budget, count)
            messages = [{"role": "system", "content": settings.system_prompt},
                        {"role": "user", "content": prepared.text}]
            t0 = time.perf_counter()
            reply, finished = "", None
            for event in stream_chat_reply(loaded, messages, SamplingParams(64, 0.0, 1.0), threading.Event()):
                if isinstance(event, TextDelta):
                    reply += event.text
                elif isinstance(event, ReplyFinished):
                    finished = event
            rows.append({
                "budget": label, "question": question, "answer": answer, "reply": reply.strip(),
                "retrieved_has_answer": answer in prepared.text, "reply_has_answer": answer.lower() in reply.lower(),
                "prompt_tokens": finished.prefill_tokens if finished else None,
                "citations": [c.label for c in prepared.citations if answer in attachment.chunks[c.chunk_id - 1].text],
                "seconds": round(time.perf_counter() - t0, 1),
            })
            save(rows)
            row = rows[-1]
            print(f"{label} {row['reply_has_answer']!s:5} {row['prompt_tokens']} {question} -> {row['reply'][:80]!r}")
    return rows


def dump(report: dict) -> str:
    """JSON with one level of indent per object and lists of numbers/booleans kept on one line."""
    text = json.dumps(report, indent=1)
    return re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + " ".join(m.group(1).split()) + "]", text) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS / "retrieval_cpu.json")
    parser.add_argument("--keep", type=Path, help="write the generated documents here and keep them")
    parser.add_argument("--answer", type=Path, metavar="PDF",
                        help="ask the real model the planted questions over this generated PDF instead")
    parser.add_argument("--budgets", default="ctx2048,ctx8192", help="with --answer: which budgets")
    parser.add_argument("--limit", type=int, default=len(FACTS), help="with --answer: the first N planted questions")
    args = parser.parse_args(argv)
    tok = load_tokenizer()
    if args.answer:
        out = args.out.with_name("retrieval_answers_cpu.json") if args.out.name == "retrieval_cpu.json" else args.out
        labels = tuple(args.budgets.split(","))

        def save(rows: list[dict]) -> None:  # after every question: a slow run still leaves its rows
            summary = {label: {"retrieved": sum(r["retrieved_has_answer"] for r in rows if r["budget"] == label),
                               "answered": sum(r["reply_has_answer"] for r in rows if r["budget"] == label),
                               "questions": sum(r["budget"] == label for r in rows)} for label in labels}
            out.write_text(dump({
                "command": f"python -m tests.benchmarks.retrieval --answer {args.answer.name} --budgets "
                           f"{args.budgets} --limit {args.limit}",
                "model": "SmolLM2-135M-Instruct (greedy, max_new_tokens 64, CPU)",
                "load_average_1_5_15": [round(x, 1) for x in os.getloadavg()],
                "summary": summary, "rows": rows}))

        answer_questions(args.answer, tok, labels, args.limit, save)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        docs = make_documents(folder)
        report = measure(docs, tok)
        report["generate_s"] = round(time.perf_counter() - t0, 1)
    import bm25s
    import pypdf
    import transformers

    report["meta"] = {
        "command": "python -m tests.benchmarks.retrieval", "machine": platform.machine(),
        "cpu_count": os.cpu_count(), "load_average_1_5_15": [round(x, 1) for x in os.getloadavg()],
        "python": sys.version.split()[0],
        "pypdf": pypdf.__version__, "bm25s": bm25s.__version__, "transformers": transformers.__version__,
        "tokenizer": "SmolLM2-135M-Instruct", "facts": len(FACTS), "natural_questions": len(NATURAL),
        "modules": list(MODULES),
        "defaults": {"chunk_tokens": DEFAULT_CHUNK_TOKENS, "overlap_tokens": DEFAULT_OVERLAP_TOKENS},
    }
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        print_table(report)
    print(buffer.getvalue(), end="")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(dump(report))
    args.out.with_suffix(".txt").write_text(buffer.getvalue())
    print(f"\nwrote {args.out} and {args.out.with_suffix('.txt').name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
