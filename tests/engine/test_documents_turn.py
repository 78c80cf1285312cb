"""Documents attached to a turn reach its prompt (app.engine.documents.turn through the TurnRunner):
whole when they fit what the turn leaves, retrieved when they do not, and said before the plan."""

import threading

from app.core.conversation import Message, Role
from app.core.history import SummaryState
from app.core.settings import GenerationSettings
from app.engine.documents.fit import RETRIEVED, WHOLE
from app.engine.documents.source import ExtractedDocument
from app.engine.events import DocumentsFitted, TurnCompleted, TurnPlanned
from app.engine.local.turn_runner import TurnRunner
from app.engine.memory.probe import CpuProbe

SETTINGS = GenerationSettings(max_new_tokens=4, temperature=0.0)


def run(tiny_loaded, documents, question="What is the pass code?"):
    runner = TurnRunner(tiny_loaded, CpuProbe())
    events = list(runner.run_turn([Message(Role.USER, question)], SummaryState(), SETTINGS, threading.Event(),
                                  documents=documents))
    fitted = next(e for e in events if isinstance(e, DocumentsFitted))
    plan = next(e for e in events if isinstance(e, TurnPlanned)).plan
    assert events.index(fitted) < events.index(next(e for e in events if isinstance(e, TurnPlanned)))
    assert isinstance(events[-1], TurnCompleted)
    return fitted.fits, tiny_loaded.tokenizer.decode(list(plan.prompt_ids)), plan


def test_a_small_document_goes_into_the_prompt_whole(tiny_loaded):
    note = ExtractedDocument("note.txt", "text", "The pass code is 4711.\nKeep it safe.\n")
    (fit,), prompt, plan = run(tiny_loaded, (note,))
    assert fit.mode == WHOLE and fit.name == "note.txt" and 10 < fit.tokens < 60
    assert 'Attached document "note.txt" (whole):\nThe pass code is 4711.\nKeep it safe.' in prompt
    assert "Question: What is the pass code?" in prompt and plan.admitted


def test_a_document_larger_than_the_turn_leaves_is_retrieved_within_the_budget(tiny_loaded):
    filler = "".join(f"Section {i}\n\nThe weather report for day {i} says rain and wind.\n\n" for i in range(60))
    text = filler + "Vault\n\nThe pass code is 4711.\n\n" + filler
    manual = ExtractedDocument("manual.md", "markdown", text)
    (fit,), prompt, plan = run(tiny_loaded, (manual,))
    # the tiny model's 512-token context: 512 − 4 new − 64 summary reserve = 444 prompt tokens,
    # at most 3/4 of them for the document
    assert fit.mode == RETRIEVED and fit.whole_tokens > 444 and 0 < fit.tokens <= 444 * 3 // 4
    assert "The pass code is 4711." in prompt and "(chosen for this question)" in prompt
    assert len(plan.prompt_ids) <= 444 and plan.admitted
