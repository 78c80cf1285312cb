"""A refused turn in the window's language: the reason with its numbers, one plain line for the
transcript (what happened and what to do), and the remedies' labels.

Admission (app.engine.memory.admission, app.engine.events.window_refusal) writes its reason and
remedies in English for the log and the headless CLI, and names the sentence (reason_kind) and
its numbers (facts, tokens or bytes) so they can be said here through Qt's translation. A
decision without a reason_kind (made by code that predates it) keeps its English reason.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QObject

from app.core.new_tokens import lowered_new_tokens
from app.engine.memory.admission import AdmissionDecision
from app.engine.memory.units import format_bytes

translate = QCoreApplication.translate  # lupdate reads translate("Context", "source") calls


class Refusal(QObject):
    """The translation context "Refusal" for counted words ("Shorten it by 1 token."): lupdate
    reads Refusal.tr(text, "", n) as a plural message, never translate(context, text, None, n).
    Never instantiated; no signals."""


def _n(value: int) -> str:
    return f"{value:,}"


def refusal_reason(decision) -> str:
    """Why `decision` (an AdmissionDecision) refused the turn, with its numbers. A sentence that
    names the context's size is counted by it ("the context of 1 token": Settings allows 1). Qt
    counts one number a message; the others are prompts with their chat template or sums, never 1."""
    f, kind = decision.facts, decision.reason_kind
    if kind == "memory":
        return translate(
            "Refusal", "This turn needs {0} of memory but {1} is free: short by {2}.").format(
            format_bytes(f["needed"]), format_bytes(f["free"]), format_bytes(f["shortfall"]))
    if kind == "positions":
        total = f["prompt"] + f["max_new_tokens"]
        text = Refusal.tr(
            "The prompt ({0} tokens) plus max new tokens ({1}) is {2} tokens, more than the "
            "context limit of {3} tokens; the prompt may use at most {4}.", "", f["limit"]).format(
            _n(f["prompt"]), _n(f["max_new_tokens"]), _n(total), _n(f["limit"]),
            _n(max(f["limit"] - f["max_new_tokens"], 0)))
        return text
    if kind == "message":
        return Refusal.tr(
            "The new message needs {0} tokens with the system prompt, but the context of {1} tokens "
            "minus max new tokens ({2}) and the summary reserve ({3}) leaves {4}.", "", f["context"]).format(
            _n(f["message"]), _n(f["context"]), _n(f["max_new_tokens"]), _n(f["summary_reserve"]),
            _n(f["room"]))
    if kind == "system":  # the system prompt, not the message, is too long (new-user trial: "hi")
        return Refusal.tr(
            "The system prompt takes {0} tokens, but the context of {1} tokens minus max new "
            "tokens ({2}) and the summary reserve ({3}) leaves {4} for it and the new message.", "",
            f["context"]).format(
            _n(f["system"]), _n(f["context"]), _n(f["max_new_tokens"]), _n(f["summary_reserve"]), _n(f["room"]))
    if kind == "notes":
        return Refusal.tr(
            "This chat's pinned notes take {0} tokens, but the context of {1} tokens minus max new "
            "tokens ({2}) and the summary reserve ({3}) leaves {4} for them, the system prompt and the new "
            "message.", "", f["context"]).format(
            _n(f["notes"]), _n(f["context"]), _n(f["max_new_tokens"]), _n(f["summary_reserve"]), _n(f["room"]))
    return decision.reason


def refusal_advice(decision) -> str:
    """What the user can do about `decision`, one sentence."""
    f, kind = decision.facts, decision.reason_kind
    if kind == "memory":
        return translate("Refusal", "Trim older turns or lower max new tokens; or close other programs, "
                         "or open a smaller model.")
    if kind == "positions":
        return translate("Refusal", "Trim older turns or lower max new tokens.")
    if kind == "message":
        if f.get("shorten_by") and decision.max_new_tokens_fit is None:
            # admission found no max new tokens that fits (trial 12: 1,852 over with 512 new tokens)
            return Refusal.tr("Shorten it by {0} tokens.", "", f["shorten_by"]).format(_n(f["shorten_by"]))
        if f.get("shorten_by"):
            return Refusal.tr("Shorten it by {0} tokens or lower max new tokens.", "", f["shorten_by"]).format(
                _n(f["shorten_by"]))
        if f.get("empty_message"):
            return _unshortenable_message_advice(f["empty_message"], bool(f.get("system_too")),
                                                 decision.max_new_tokens_fit is not None)
        return translate("Refusal", "Use a larger context or lower max new tokens.")
    if kind in ("system", "notes"):
        return _shorten_system_advice(kind, f.get("shorten_by", 0), decision.max_new_tokens_fit is not None)
    return ""


def _unshortenable_message_advice(empty: int, system_too: bool, can_lower: bool) -> str:
    """What can help when no shorter message fits: an empty one already needs `empty` tokens with
    the system prompt, more than the context leaves (app.engine.events.window_refusal; new-user
    trial 11: 20 of the 6 tokens left, and the question was told "Shorten it by 25 tokens").
    Shortening the system prompt as well when `system_too`, lowering max new tokens when
    `can_lower`, and a larger context always. `empty` is a prompt with its template, never 1."""
    if system_too and can_lower:
        text = translate("Refusal", "Even an empty message needs {0} tokens with the system prompt, so shortening "
                                    "the message cannot make it fit: shorten the system prompt (Edit → Settings → "
                                    "System prompt) as well, lower max new tokens or use a larger context.")
    elif system_too:
        text = translate("Refusal", "Even an empty message needs {0} tokens with the system prompt, so shortening "
                                    "the message cannot make it fit: shorten the system prompt (Edit → Settings → "
                                    "System prompt) as well or use a larger context.")
    elif can_lower:
        text = translate("Refusal", "Even an empty message needs {0} tokens with the system prompt, so shortening "
                                    "the message cannot make it fit: lower max new tokens or use a larger context.")
    else:
        text = translate("Refusal", "Even an empty message needs {0} tokens with the system prompt, so shortening "
                                    "the message cannot make it fit: use a larger context.")
    return text.format(_n(empty))


def _shorten_system_advice(kind: str, shorten_by: int, can_lower: bool) -> str:
    """Where to shorten the system prompt (kind "system") or the pinned notes ("notes"), and by
    how many tokens when that alone makes the turn fit (`shorten_by` > 0). A system prompt with no
    such count cannot be shortened enough (app.engine.events._system_refusal: the template's frame
    stays; new-user trial: "You are a helpful assistant." in a 16-token context was to be shortened
    by 15 tokens, more than its 6), nor pinned notes whose removal would not fit: what can help is
    said instead, lowering max new tokens when `can_lower`."""
    if kind == "notes":
        if shorten_by:
            return Refusal.tr("Shorten this chat's pinned notes (Notes, in the chat bar) by {0} tokens.", "",
                              shorten_by).format(_n(shorten_by))
        if can_lower:  # the engine's advice too (review: the window said to shorten notes that cannot help)
            return translate("Refusal", "Removing the pinned notes cannot make it fit: lower max new tokens or use a "
                                        "larger context.")
        return translate("Refusal", "Removing the pinned notes cannot make it fit: use a larger context.")
    if shorten_by:
        return Refusal.tr("Shorten the system prompt (Edit → Settings → System prompt) by {0} tokens.", "",
                          shorten_by).format(_n(shorten_by))
    if can_lower:
        return translate("Refusal", "Shortening the system prompt cannot make it fit: lower max new tokens or use "
                                    "a larger context.")
    return translate("Refusal", "Shortening the system prompt cannot make it fit: use a larger context.")


def refusal_line(decision) -> str:
    """One line for the transcript: the turn was not started, why, and what to do."""
    if not decision.reason_kind:
        return translate("Refusal", "This turn was not started: {0}").format(decision.reason)
    return translate("Refusal", "This turn was not started. {0} {1}").format(
        refusal_reason(decision), refusal_advice(decision)).strip()


def stored_refusal(decision) -> dict:
    """What the Store keeps of a refused turn's decision (Store.note_refusal): the facts that
    `refusal_line` is said from, so the line comes back, in the language of the day, when the
    chat is opened again."""
    return dict(cause=decision.cause, reason=decision.reason, reason_kind=decision.reason_kind,
                facts=dict(decision.facts), max_new_tokens_fit=decision.max_new_tokens_fit)


def refusal_line_stored(refusal: dict) -> str:
    """`refusal_line` of a refusal kept by the Store (`stored_refusal`); a damaged one is said
    as a refusal with no reason rather than not at all."""
    facts = refusal.get("facts")
    fit = refusal.get("max_new_tokens_fit")
    decision = AdmissionDecision(
        admitted=False, cause=str(refusal.get("cause", "")), reason=str(refusal.get("reason", "")),
        reason_kind=str(refusal.get("reason_kind", "")), facts=facts if isinstance(facts, dict) else {},
        max_new_tokens_fit=fit if isinstance(fit, int) else None)
    try:
        return refusal_line(decision)
    except (KeyError, TypeError, ValueError):  # facts missing for its reason_kind
        return translate("Refusal", "This turn was not started: {0}").format(decision.reason).strip()


def lowered_max_new_tokens(decision) -> int | None:
    """The max new tokens (tokens) that the "lower_max_new_tokens" remedy sets; None when it is not offered.

    Refused for memory: max_new_tokens_fit, for this turn only (free memory changes per turn).
    Refused because the context cannot hold the prompt plus max new tokens ("positions", "message",
    "system", "notes"):
    the chat keeps the value for every later turn, so it is at most a quarter of the context
    (at least min(256, half of it) on a small context): the fit alone (everything this one message
    leaves) would leave the history budget near zero and older turns would drop out silently
    (new-user trial: 2,048 context, Code preset's 2,048 new tokens, lowered to 1,755 → "37 / 37 tokens").
    """
    fit = decision.max_new_tokens_fit
    if not fit or decision.cause == "memory" or decision.context_limit <= 0:
        return fit
    return max(1, min(fit, lowered_new_tokens(decision.context_limit)))


def _needs(decision, key: str) -> str:
    """" — needs 5.20 GiB" when admission projected the remedy's memory (facts[key]), else ""."""
    needed = decision.facts.get(key)
    return " — " + translate("Refusal", "needs {0}").format(format_bytes(needed)) if needed else ""


def remedy_labels(decision) -> dict[str, str]:
    """The remedies offered as buttons, by choice key ("trim", "lower_max_new_tokens", "kv8",
    "chunked"), in the order offered; a memory remedy says what it would need."""
    offers = {}
    if decision.trim_tokens is not None:
        offers["trim"] = Refusal.tr("Trim older turns (drop at least {0} tokens)", "", decision.trim_tokens).format(
            _n(decision.trim_tokens)) + _needs(decision, "trim_needed")
    lowered = lowered_max_new_tokens(decision)
    if lowered is not None and lowered < decision.max_new_tokens_fit:  # kept below the fit: say why
        offers["lower_max_new_tokens"] = translate(
            "Refusal", "Lower max new tokens to {0}, leaving room for the chat").format(_n(lowered))
    elif lowered is not None:
        offers["lower_max_new_tokens"] = translate("Refusal", "Lower max new tokens to {0}").format(
            _n(lowered)) + _needs(decision, "lower_needed")
    if getattr(decision, "kv8_needed_bytes", None) is not None:
        offers["kv8"] = translate("Refusal", "Switch this chat to 8-bit KV cache — needs {0}").format(
            format_bytes(decision.kv8_needed_bytes))
    if decision.cause == "memory" and decision.facts.get("chunk_tokens"):
        offers["chunked"] = translate("Refusal", "Prefill in {0}-token chunks").format(
            _n(decision.facts["chunk_tokens"]))
    return offers


def other_remedies(decision) -> list[str]:
    """Advice with no button (e.g. close other programs), as sentences."""
    if decision.reason_kind == "memory":
        return [translate("Refusal", "Close other programs using this device, or load a smaller model.")]
    if decision.reason_kind:
        return []
    return [r for r in decision.remedies if not r.startswith(("trim", "lower", "prefill in", "switch this chat"))]
