"""Turn chat messages into prompt token ids, and find the ids that end a turn.

Handles templates that reject a system role or demand strict alternation (Gemma and Mistral templates), models
without a chat template (no chat template, transformers #33246), and continuing a stopped answer (continue after Stop,
text-generation-webui #7565).
"""

import logging
import re
from dataclasses import dataclass

from app.core.history import normalize_roles
from app.core.reasoning import OPEN_TAG

log = logging.getLogger(__name__)

PROBE_REPLY = "Q7x9zReply"  # an unlikely string to locate the assistant turn's end marker


@dataclass(frozen=True)
class PromptFormat:
    """How this tokenizer's prompts are rendered.

    kind: "template" (the model's chat template) or "transcript" (plain text for base models).
    system_role: whether the template accepts a system message.
    stop_strings: text that ends a reply where no special token does (transcript format).
    reasoning_opening: the text that ends the template's generation prompt when the template
    opens the model's reasoning itself ("<think>\n": DeepSeek-R1 distills, QwQ); the reply then
    begins inside it, and is stored as if the model had written it (app.core.reasoning).
    """

    kind: str
    system_role: bool
    stop_strings: tuple[str, ...] = ()
    reasoning_opening: str = ""


def detect_format(tokenizer) -> PromptFormat:
    """Probe the tokenizer once after load: template present? system role accepted?"""
    if not getattr(tokenizer, "chat_template", None):
        return PromptFormat("transcript", True, ("\nUser:", "\nuser:"))
    probe = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    try:
        text = tokenizer.apply_chat_template(probe, tokenize=False, add_generation_prompt=True)
        system_role = "S" in text
    except Exception as exc:  # jinja raise_exception(): the template refuses a system role
        log.info("chat template rejects a system role (%s); folding it into the first user turn", exc)
        text, system_role = None, False
    return PromptFormat("template", system_role, reasoning_opening=_reasoning_opening(tokenizer, text))


def template_problem(tokenizer) -> str:
    """Why the tokenizer's chat template cannot render a plain exchange (user, assistant, user),
    as "TemplateSyntaxError: …"; "" when it can or there is none. A template that is broken
    (a typo in its Jinja, a GGUF's damaged tokenizer.chat_template) failed every turn of a model
    that loaded as healthy (new-user trial 12); the loader then drops it for the plain transcript
    format, as for a model without one. A system role a template refuses is no problem here
    (detect_format folds it)."""
    if not getattr(tokenizer, "chat_template", None):
        return ""
    probe = [{"role": "user", "content": "U"}, {"role": "assistant", "content": "A"},
             {"role": "user", "content": "V"}]
    try:
        text = tokenizer.apply_chat_template(probe, tokenize=False, add_generation_prompt=True)
    except Exception as exc:  # jinja2's errors, and whatever a template's own code raises
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    return "" if isinstance(text, str) and "V" in text else "it renders no messages"


def _reasoning_opening(tokenizer, prompt: str | None) -> str:
    """The "<think>…" the generation prompt ends with ("" when it opens no reasoning, or closes
    it again: Qwen3 with thinking off ends with "<think>\n\n</think>\n\n"). `prompt`: a rendered
    generation prompt, or None to render one for a lone user message."""
    if prompt is None:
        try:
            prompt = tokenizer.apply_chat_template([{"role": "user", "content": "U"}], tokenize=False,
                                                   add_generation_prompt=True)
        except Exception:  # a template that refuses even this fails at the first turn, with its reason
            return ""
    start = prompt.rfind(OPEN_TAG)
    return prompt[start:] if start >= 0 and not prompt[start + len(OPEN_TAG):].strip() else ""


def render_prompt(tokenizer, fmt: PromptFormat, messages: list[dict],
                  continue_final: bool = False) -> str:
    """Prompt text for `messages` ({"role", "content"} dicts, oldest first).

    With continue_final, the last message is a partial assistant answer and the prompt ends
    inside it, so a continuation joins seamlessly (`continue_final_message`, continue after Stop,
    text-generation-webui #7565).
    Raises ValueError if the template still refuses the messages.
    """
    messages = normalize_roles(messages, fmt.system_role)
    if fmt.kind == "transcript":
        return _render_transcript(messages, continue_final)
    return tokenizer.apply_chat_template(
        messages, tokenize=False,
        add_generation_prompt=not continue_final, continue_final_message=continue_final)


def _render_transcript(messages: list[dict], continue_final: bool) -> str:
    names = {"system": "System", "user": "User", "assistant": "Assistant"}
    text = "\n\n".join(f"{names[m['role']]}: {m['content']}" for m in messages)
    return text if continue_final else f"{text}\n\nAssistant:"


def encode_prompt(tokenizer, text: str) -> list[int]:
    """Token ids of rendered prompt text. The template already placed BOS and other special
    tokens, so none are added again. Special tokens' text anywhere in `text` becomes those
    tokens: for messages, use encode_messages."""
    return tokenizer(text, add_special_tokens=False)["input_ids"]


# Marks a special token's text inside a message while the template renders it: a private-use
# character, which no template writes and which is taken out of the messages beforehand.
_LITERAL = "\ue000"


def encode_messages(tokenizer, fmt: PromptFormat, messages: list[dict], continue_final: bool = False) -> list[int]:
    """Token ids of the prompt for `messages` (render_prompt, then encode_prompt), where only the
    template writes special tokens: "<|im_end|>" or "<|eot_id|>" inside a message (a pasted log,
    a prompt being discussed) is text, tokenized as its characters. Encoded whole, it would end
    the user's turn in the middle of their message, or open a system turn the user never wrote.

    Messages without a special token's text (nearly all) are encoded exactly as
    encode_prompt(render_prompt(...)). Raises ValueError as render_prompt does."""
    literals = _special_texts(tokenizer)
    if literals is None or not any(literals.search(m["content"]) for m in messages):
        return encode_prompt(tokenizer, render_prompt(tokenizer, fmt, messages, continue_final))
    marked = [{**m, "content": literals.sub(lambda found: f"{_LITERAL}{found[0]}{_LITERAL}",
                                            m["content"].replace(_LITERAL, ""))} for m in messages]
    pieces = render_prompt(tokenizer, fmt, marked, continue_final).split(_LITERAL)
    if len(pieces) % 2 == 0:  # the template cut a marked literal in two: its marks no longer pair up
        log.warning("chat template split a message's special-token text; encoding it as the template wrote it")
        return encode_prompt(tokenizer, "".join(pieces))
    ids: list[int] = []
    for i, piece in enumerate(pieces):  # even pieces: the template's text; odd: a message's literal
        if piece:
            ids += tokenizer(piece, add_special_tokens=False, split_special_tokens=bool(i % 2))["input_ids"]
    return ids


def _special_texts(tokenizer) -> re.Pattern | None:
    """A pattern matching the text of any special token, longest first (so a special token's text
    wins over a shorter one inside it); None for a tokenizer without any."""
    texts = set(getattr(tokenizer, "all_special_tokens", ()))
    texts |= {str(t) for t in getattr(tokenizer, "added_tokens_decoder", {}).values() if getattr(t, "special", False)}
    texts.discard("")
    if not texts:
        return None
    return re.compile("|".join(re.escape(t) for t in sorted(texts, key=len, reverse=True)))  # re caches it


def _as_set(value) -> set[int]:
    if value is None:
        return set()
    if isinstance(value, int):
        return {value}
    return {int(v) for v in value}


def end_of_turn_ids(tokenizer, fmt: PromptFormat) -> set[int]:
    """The special token(s) the template writes right after an assistant message
    (`<|im_end|>`, `<|eot_id|>`, `<end_of_turn>`…), found by rendering a probe turn."""
    if fmt.kind != "template":
        return set()
    probe = [{"role": "user", "content": "U"}, {"role": "assistant", "content": PROBE_REPLY}]
    try:
        text = tokenizer.apply_chat_template(probe, tokenize=False)
    except Exception as exc:  # a template that rejects the probe: fall back to the EOS ids only
        log.info("could not find the template's end-of-turn token: %s", exc)
        return set()
    tail = text.split(PROBE_REPLY, 1)[-1]
    ids = tokenizer(tail, add_special_tokens=False)["input_ids"]
    special = set(getattr(tokenizer, "all_special_ids", []))
    special |= {int(i) for i in getattr(tokenizer, "added_tokens_decoder", {})}
    return {ids[0]} if ids and ids[0] in special else set()


def stop_token_ids(tokenizer, generation_config, fmt: PromptFormat) -> frozenset[int]:
    """Union of the generation config's EOS list, the tokenizer's EOS and the template's
    end-of-turn token (replies that never stop, text-generation-webui #5885: Llama-3 ends turns with `<|eot_id|>`, not
    its EOS)."""
    ids = _as_set(getattr(generation_config, "eos_token_id", None))
    ids |= _as_set(getattr(tokenizer, "eos_token_id", None))
    ids |= end_of_turn_ids(tokenizer, fmt)
    return frozenset(ids)
