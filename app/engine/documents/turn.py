"""Documents attached to a turn, fitted into the user's newest message before the turn runs.

    messages, prepared = fit_documents(foresight, messages, documents, plan, system_prompt)

The turn is first planned without them (app.engine.local.turn_planner.Foresight.plan). The
documents may then take app.core.document_prompt.document_budget of it: what the prompt budget
leaves after the system prompt and the user's message (older turns leave the window to make
room, as they always do), at most DOCUMENT_SHARE of it, and no more than admission lets the KV
cache take (app.engine.documents.kv_budget). Each goes in whole when it fits, else as the
excerpts BM25 ranks best for the message and the chunks around them, in the room the window
leaves (document_prompt.excerpt_budget; app.engine.documents.attach.compose_message). The
caller plans the turn again with the returned messages. Chunking runs here, in the worker's
thread, with the model's own tokenizer (about as long as tokenizing the document twice). No Qt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from app.core.conversation import Message, Role
from app.core.document_prompt import document_budget, excerpt_budget, whole_block
from app.core.reasoning import without_reasoning
from app.engine.documents.attach import PreparedMessage, compose_message, composed_tokens, prepare_attachment
from app.engine.documents.kv_budget import kv_document_tokens
from app.engine.documents.source import ExtractedDocument
from app.engine.events import TurnPlan

RECENT_TURN_MESSAGES = 4  # earlier messages whose words also rank the excerpts ("and the next step?")


def whole_tokens(foresight, document: ExtractedDocument) -> int:
    """Tokens of `document`'s whole block with the loaded model's tokenizer (what pasting it
    costs; prepare_attachment counts the same). Tokenizes the whole text: cache it."""
    return len(foresight.loaded.tokenizer.encode(whole_block(document.name, document.text, document.pages),
                                                 add_special_tokens=False, split_special_tokens=True))


def document_tokens(foresight, wholes: Sequence[int], window, system_prompt: str) -> int:
    """≈ the tokens fit_documents gives attached documents (their whole blocks take `wholes`
    tokens) in a turn whose window without them is `window` (a WindowResult): the same room and
    excerpt bounds, the user's message not written yet and no memory projected (admission may
    give them less). For the context meter between turns."""
    if not wholes:
        return 0
    base = foresight.count_tokens([{"role": "system", "content": system_prompt}, {"role": "user", "content": ""}])
    room = document_budget(window.budget, base)
    return composed_tokens(wholes, room, excerpt_budget(room, window.limit_tokens - window.prompt_tokens))


def fit_documents(foresight, messages: Sequence[Message], documents: Sequence[ExtractedDocument],
                  plan: TurnPlan, system_prompt: str) -> tuple[list[Message], PreparedMessage]:
    """`messages` with the last one (the user's) carrying `documents` whole or retrieved, and how
    each went in. `plan`: this turn planned without them (its budget and projection size the
    room). foresight: the loaded model's Foresight (tokenizer, prompt format, safety margin).
    Raises ValueError when the last message is not the user's."""
    if not messages or messages[-1].role is not Role.USER:
        raise ValueError("documents go with a user message")
    tokenizer = foresight.loaded.tokenizer

    def count_text(text: str) -> int:  # a document's "<|im_end|>" is text in the prompt too (encode_messages)
        return len(tokenizer.encode(text, add_special_tokens=False, split_special_tokens=True))

    question = messages[-1].content
    base = foresight.count_tokens([{"role": "system", "content": system_prompt},
                                   {"role": "user", "content": question}])
    budget = plan.window.budget
    room = document_budget(budget, base)
    if plan.projection is not None and room > 0:
        sample = plan.sample
        room = document_budget(budget, base, kv_tokens=kv_document_tokens(
            plan.projection, sample.free, sample.total, foresight.safety_margin(sample), room))
    attachments = [prepare_attachment(doc, count_text) for doc in documents]
    # what the recent turns said, as the prompt sends them: an answer without its reasoning
    recent = [without_reasoning(m.content) if m.role is Role.ASSISTANT else m.content
              for m in messages[-1 - RECENT_TURN_MESSAGES:-1]]
    excerpts = excerpt_budget(room, plan.window.limit_tokens - plan.window.prompt_tokens)
    prepared = compose_message(question, attachments, room, count_text, recent, excerpt_tokens=excerpts)
    return [*messages[:-1], replace(messages[-1], content=prepared.text)], prepared
