"""Pinned notes: per-conversation facts kept in every prompt (issue 17, item 5; KoboldAI's
"Memory", Open WebUI #13568). They ride in the system message after the system prompt, so the
history policy counts them in the token budget like the prompt itself and never evicts them."""

NOTES_HEADER = "Pinned notes (always keep these in mind):"


def with_pinned_notes(system_prompt: str, notes: str) -> str:
    """The system prompt followed by the notes under NOTES_HEADER; `system_prompt` unchanged
    when the notes are blank."""
    notes = notes.strip()
    if not notes:
        return system_prompt
    return "\n\n".join(part for part in (system_prompt, f"{NOTES_HEADER}\n{notes}") if part)


def without_pinned_notes(system_prompt: str) -> str:
    """`system_prompt` less the notes `with_pinned_notes` put after it (its inverse); unchanged
    when it holds none."""
    at = 0 if system_prompt.startswith(NOTES_HEADER + "\n") else system_prompt.find("\n\n" + NOTES_HEADER + "\n")
    return system_prompt if at < 0 else system_prompt[:at]


def add_note(notes: str, text: str) -> str:
    """`notes` with `text` added as a paragraph of its own (a pinned message)."""
    return "\n\n".join(part for part in (notes.strip(), text.strip()) if part)


def estimate_tokens(text: str) -> int:
    """A quick count for the meter before the model counts it: ~4/3 tokens per word (OpenAI,
    "What are tokens and how to count them"), plus the header when there are notes."""
    words = len(text.split())
    return 0 if not words else (words + len(NOTES_HEADER.split())) * 4 // 3
