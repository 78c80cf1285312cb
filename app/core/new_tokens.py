"""How many new tokens a turn may ask for in a given context: the rule a saved max_new_tokens is
held to when a model opens or settings are adopted, and what an over-large one is lowered to for
that model's turns (the setting itself stays).

A context of C tokens holds the prompt, the answer (max_new_tokens) and the summary reserve
(app.core.history.summary_reserve). A max_new_tokens that leaves less than MIN_PROMPT_TOKENS
for the prompt cannot work: every message is refused before it runs (new-user trial: 1,755 new
tokens saved, a 2,048-token context, "37 / 37 tokens" left for the conversation). Pure Python.
"""

from __future__ import annotations

from app.core.history import DEFAULT_MODEL_CONTEXT, TokenBudget, summary_reserve

MIN_PROMPT_TOKENS = 512
"""Prompt tokens a turn needs besides its answer, at most: a system prompt, a message of a few
paragraphs and the turn before it (a quarter of a context smaller than 2,048 tokens)."""


def model_context(context_setting: int, max_positions: int | None) -> int:
    """The context (tokens) a model's turns run with: its setting (0 = automatic) within its trained
    length (LoadReport.max_positions; DEFAULT_MODEL_CONTEXT when the config does not say)."""
    trained = max_positions or DEFAULT_MODEL_CONTEXT
    return min(context_setting, trained) if context_setting > 0 else trained


def max_new_tokens_allowed(context_tokens: int) -> int:
    """The largest max_new_tokens (tokens, ≥ 1) a context of `context_tokens` allows: what is
    left after the summary reserve and min(MIN_PROMPT_TOKENS, a quarter of the context)."""
    prompt = min(MIN_PROMPT_TOKENS, context_tokens // 4)
    return max(1, context_tokens - summary_reserve(context_tokens) - prompt)


def lowered_new_tokens(context_tokens: int) -> int:
    """What an over-large max_new_tokens is lowered to (tokens, ≥ 1): a quarter of the context, at
    least min(256, half of it), so the history keeps most of the room (2,048 → 512, 8,192 →
    2,048, 512 → 256)."""
    return max(1, context_tokens // 4, min(256, context_tokens // 2))


def fitted_new_tokens(max_new_tokens: int, context_tokens: int) -> int:
    """`max_new_tokens` when a context of `context_tokens` allows it, else lowered_new_tokens."""
    if max_new_tokens <= max_new_tokens_allowed(context_tokens):
        return max_new_tokens
    return min(lowered_new_tokens(context_tokens), max_new_tokens_allowed(context_tokens))


def conversation_tokens(max_new_tokens: int, context_tokens: int) -> int:
    """Tokens left for the system prompt and the conversation (may be ≤ 0) when a context of
    `context_tokens` keeps `max_new_tokens` for the answer and the summary reserve: the engine's
    TokenBudget.prompt_tokens, the budget the token meter under the composer shows."""
    return TokenBudget(context_tokens, max_new_tokens, summary_reserve(context_tokens)).prompt_tokens
