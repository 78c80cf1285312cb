"""How an answer was made, in words (issue 17, item 6): one short line under the answer and the
details for its tooltip. Text only, no widget.

The decode paths (ReplyStats.decode_path, the engine's ReplyFinished.decode_path: "compiled",
"eager-static", "eager" or "remote", then the engine's reason in parentheses) are named here,
and the status bar names its decode states with the same words (app.ui.status_bar): "compiled
decode", "eager decode". Whether an eager decode wrote a static or a growing KV cache is a
detail for the tooltip.
"""

import re

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication, QObject

from app.core.conversation import ReplyStats
from app.ui.duration_text import duration_text

translate = QCoreApplication.translate  # lupdate reads translate("Context", "source") calls


class ReplyStatsText(QObject):
    """The translation context of this module's counted words ("1 token", "2 tokens"): lupdate
    reads ReplyStatsText.tr("{0} tokens", "", n) as a plural message, which it does not do for
    translate("Context", "source", None, n) (its Python parser takes a name in the fourth place
    for Qt 4's encoding argument). Never instantiated; no signals."""

COMPILED, EAGER = QT_TRANSLATE_NOOP("DecodePath", "compiled decode"), QT_TRANSLATE_NOOP("DecodePath", "eager decode")
# decode path → (its name, its name with the detail the tooltip gives)
DECODE_PATHS = {"compiled": (COMPILED, COMPILED),
                "eager-static": (EAGER, QT_TRANSLATE_NOOP("DecodePath", "eager decode, static KV cache")),
                "eager": (EAGER, QT_TRANSLATE_NOOP("DecodePath", "eager decode, growing KV cache")),
                "remote": (QT_TRANSLATE_NOOP("DecodePath", "decoded by the server"),) * 2}
# app.engine.local.compiled_decode.CompiledDecode.eager_reason: "8-bit KV step not compiled yet"
_STEP_REASON = re.compile(r"(\d+)-bit KV step (not compiled yet|failed to compile)")


def decode_path_text(path: str, detail: bool = False) -> str:
    """A decode path in words: "compiled decode", "eager decode (8-bit KV step not compiled
    yet)"; detail: with the KV cache it wrote ("eager decode, static KV cache"). A path this
    window does not know is shown as it was recorded."""
    name, _, why = path.partition(" (")
    text = translate("DecodePath", DECODE_PATHS[name][detail]) if name in DECODE_PATHS else name
    why = why.removesuffix(")")
    if not why:
        return text
    step = _STEP_REASON.fullmatch(why)
    if step is not None:
        bits = translate("DecodePath", "{0}-bit").format(step.group(1))
        why = (translate("DecodePath", "{0} KV step not compiled yet") if step.group(2) == "not compiled yet"
               else translate("DecodePath", "{0} KV step failed to compile")).format(bits)
    return translate("DecodePath", "{0} ({1})").format(text, why)


def stats_line(stats: ReplyStats) -> str:
    """"12 tokens · TTFT 250 ms · 10.0 tok/s · compiled decode"; "no tokens" for an answer stopped
    or failed before its first token (it has no TTFT or speed to show); an answer of one token (or
    a last part of one) has a TTFT but no decode speed, so none is shown. An answer extended with
    Continue counts all its tokens and says that its TTFT and speed are the last part's:
    "120 tokens · last part: 40 tokens, TTFT 250 ms, 10.0 tok/s · compiled decode"."""
    if stats.new_tokens <= 0:
        return translate("ReplyStats", "no tokens")
    total = ReplyStatsText.tr("{0} tokens", "", stats.new_tokens).format(f"{stats.new_tokens:,}")
    ttft = translate("ReplyStats", "TTFT {0}").format(duration_text(stats.ttft_s))
    speed = translate("ReplyStats", "{0} tok/s").format(f"{stats.tokens_per_s:.1f}")
    timing = [ttft, speed] if stats.tokens_per_s > 0 else [ttft]  # one token has no decode speed (trial 8: 0.0)
    if stats.continued_tokens:
        parts = [total, ReplyStatsText.tr("last part: {0} tokens, {1}", "", stats.continued_tokens).format(
            f"{stats.continued_tokens:,}", ", ".join(timing))]
    else:
        parts = [total, *timing]
    if stats.decode_path:
        parts.append(decode_path_text(stats.decode_path))
    return " · ".join(parts)


def stats_tooltip(stats: ReplyStats) -> str:
    """Every field, one per line; for a continued answer, which of them are its last part's."""
    lines = [
        ReplyStatsText.tr("Prompt: {0} tokens ({1} prefilled, {2} reused from the KV cache)", "",
                          stats.prompt_tokens).format(
            f"{stats.prompt_tokens:,}", f"{stats.prefilled_tokens:,}", f"{stats.reused_tokens:,}"),
        ReplyStatsText.tr("Answer: {0} new tokens", "", stats.new_tokens).format(f"{stats.new_tokens:,}"),
        translate("ReplyStats", "Time to first token: {0}").format(duration_text(stats.ttft_s)),
        (translate("ReplyStats", "Decode: {0} tokens/s").format(f"{stats.tokens_per_s:.1f}") if stats.tokens_per_s > 0
         else translate("ReplyStats", "Decode: one token, no speed to measure"))
        + (f" ({decode_path_text(stats.decode_path, detail=True)})" if stats.decode_path else ""),
    ]
    if stats.continued_tokens:  # the whole answer first, then its last part
        lines[0:2] = [ReplyStatsText.tr("Answer: {0} new tokens, {1} of them in the last part (Continue)", "",
                                        stats.new_tokens).format(f"{stats.new_tokens:,}",
                                                                 f"{stats.continued_tokens:,}"),
                      translate("ReplyStats", "Last part:"), lines[0]]
    if stats.kv_precision:
        lines.append(translate("ReplyStats", "KV cache precision: {0}").format(stats.kv_precision))
    if stats.backend:
        lines.append(translate("ReplyStats", "Answered by: {0}").format(stats.backend))
    return "\n".join(lines)
