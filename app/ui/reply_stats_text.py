"""How an answer was made, in words (issue 17, item 6): one short line under the answer and the
details for its tooltip. Text only, no widget."""

from PySide6.QtCore import QCoreApplication

from app.core.conversation import ReplyStats


def _tr(text: str) -> str:
    return QCoreApplication.translate("ReplyStats", text)


def stats_line(stats: ReplyStats) -> str:
    """"12 tokens · TTFT 250 ms · 10.0 tok/s · compiled"."""
    parts = [_tr("{0} tokens").format(f"{stats.new_tokens:,}"),
             _tr("TTFT {0} ms").format(f"{stats.ttft_s * 1000:,.0f}"),
             _tr("{0} tok/s").format(f"{stats.tokens_per_s:.1f}")]
    if stats.decode_path:
        parts.append(stats.decode_path)
    return " · ".join(parts)


def stats_tooltip(stats: ReplyStats) -> str:
    """Every field, one per line."""
    lines = [
        _tr("Prompt: {0} tokens ({1} prefilled, {2} reused from the KV cache)").format(
            f"{stats.prompt_tokens:,}", f"{stats.prefilled_tokens:,}", f"{stats.reused_tokens:,}"),
        _tr("Answer: {0} new tokens").format(f"{stats.new_tokens:,}"),
        _tr("Time to first token: {0} ms").format(f"{stats.ttft_s * 1000:,.0f}"),
        _tr("Decode: {0} tokens/s").format(f"{stats.tokens_per_s:.1f}")
        + (f" ({stats.decode_path})" if stats.decode_path else ""),
    ]
    if stats.kv_precision:
        lines.append(_tr("KV cache precision: {0}").format(stats.kv_precision))
    if stats.backend:
        lines.append(_tr("Answered by: {0}").format(stats.backend))
    return "\n".join(lines)
