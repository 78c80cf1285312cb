"""How an answer was made, in words (issue 17, item 6): one short line under the answer and the
details for its tooltip. Text only, no widget."""

from PySide6.QtCore import QCoreApplication

from app.core.conversation import ReplyStats

translate = QCoreApplication.translate  # lupdate reads translate("Context", "source") calls


def stats_line(stats: ReplyStats) -> str:
    """"12 tokens · TTFT 250 ms · 10.0 tok/s · compiled"; "no tokens" for an answer stopped
    or failed before its first token (it has no TTFT or speed to show)."""
    if stats.new_tokens <= 0:
        return translate("ReplyStats", "no tokens")
    parts = [translate("ReplyStats", "{0} tokens").format(f"{stats.new_tokens:,}"),
             translate("ReplyStats", "TTFT {0} ms").format(f"{stats.ttft_s * 1000:,.0f}"),
             translate("ReplyStats", "{0} tok/s").format(f"{stats.tokens_per_s:.1f}")]
    if stats.decode_path:
        parts.append(stats.decode_path)
    return " · ".join(parts)


def stats_tooltip(stats: ReplyStats) -> str:
    """Every field, one per line."""
    lines = [
        translate("ReplyStats", "Prompt: {0} tokens ({1} prefilled, {2} reused from the KV cache)").format(
            f"{stats.prompt_tokens:,}", f"{stats.prefilled_tokens:,}", f"{stats.reused_tokens:,}"),
        translate("ReplyStats", "Answer: {0} new tokens").format(f"{stats.new_tokens:,}"),
        translate("ReplyStats", "Time to first token: {0} ms").format(f"{stats.ttft_s * 1000:,.0f}"),
        translate("ReplyStats", "Decode: {0} tokens/s").format(f"{stats.tokens_per_s:.1f}")
        + (f" ({stats.decode_path})" if stats.decode_path else ""),
    ]
    if stats.kv_precision:
        lines.append(translate("ReplyStats", "KV cache precision: {0}").format(stats.kv_precision))
    if stats.backend:
        lines.append(translate("ReplyStats", "Answered by: {0}").format(stats.backend))
    return "\n".join(lines)
