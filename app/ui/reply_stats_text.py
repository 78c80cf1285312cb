"""How an answer was made, in words (issue 17, item 6): one short line under the answer and the
details for its tooltip. Text only, no widget."""

from PySide6.QtCore import QCoreApplication

from app.core.conversation import ReplyStats
from app.ui.duration_text import duration_text

translate = QCoreApplication.translate  # lupdate reads translate("Context", "source") calls


def stats_line(stats: ReplyStats) -> str:
    """"12 tokens · TTFT 250 ms · 10.0 tok/s · compiled"; "no tokens" for an answer stopped
    or failed before its first token (it has no TTFT or speed to show). An answer extended with
    Continue counts all its tokens and says that its TTFT and speed are the last part's:
    "120 tokens · last part: 40 tokens, TTFT 250 ms, 10.0 tok/s · compiled"."""
    if stats.new_tokens <= 0:
        return translate("ReplyStats", "no tokens")
    total = translate("ReplyStats", "{0} tokens").format(f"{stats.new_tokens:,}")
    ttft = translate("ReplyStats", "TTFT {0}").format(duration_text(stats.ttft_s))
    speed = translate("ReplyStats", "{0} tok/s").format(f"{stats.tokens_per_s:.1f}")
    if stats.continued_tokens:
        parts = [total, translate("ReplyStats", "last part: {0} tokens, {1}, {2}").format(
            f"{stats.continued_tokens:,}", ttft, speed)]
    else:
        parts = [total, ttft, speed]
    if stats.decode_path:
        parts.append(stats.decode_path)
    return " · ".join(parts)


def stats_tooltip(stats: ReplyStats) -> str:
    """Every field, one per line; for a continued answer, which of them are its last part's."""
    lines = [
        translate("ReplyStats", "Prompt: {0} tokens ({1} prefilled, {2} reused from the KV cache)").format(
            f"{stats.prompt_tokens:,}", f"{stats.prefilled_tokens:,}", f"{stats.reused_tokens:,}"),
        translate("ReplyStats", "Answer: {0} new tokens").format(f"{stats.new_tokens:,}"),
        translate("ReplyStats", "Time to first token: {0}").format(duration_text(stats.ttft_s)),
        translate("ReplyStats", "Decode: {0} tokens/s").format(f"{stats.tokens_per_s:.1f}")
        + (f" ({stats.decode_path})" if stats.decode_path else ""),
    ]
    if stats.continued_tokens:  # the whole answer first, then its last part
        lines[0:2] = [translate("ReplyStats", "Answer: {0} new tokens, {1} of them in the last part (Continue)")
                      .format(f"{stats.new_tokens:,}", f"{stats.continued_tokens:,}"),
                      translate("ReplyStats", "Last part:"), lines[0]]
    if stats.kv_precision:
        lines.append(translate("ReplyStats", "KV cache precision: {0}").format(stats.kv_precision))
    if stats.backend:
        lines.append(translate("ReplyStats", "Answered by: {0}").format(stats.backend))
    return "\n".join(lines)
