"""Why an answer stopped, in words, for the header of a stopped answer ("stopped: max new tokens
reached"): said when the answer ends (app.chat.turns), again when its conversation is opened
(app.ui.chat_view), and in a Markdown export (app.chat.conversations), all from the stop reason
kept in its stats (ReplyStats.stop_reason)."""

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication

from app.core.conversation import ReplyStats

translate = QCoreApplication.translate  # lupdate reads translate("Context", "source") calls

STOP_DETAILS = {"length": QT_TRANSLATE_NOOP("Turns", "max new tokens reached")}  # the context it had in turns
"""The words for a stop reason that Stop does not explain, by ReplyStats.stop_reason, in English
(the source text): the window says them translated (stop_detail), an export as they are (its
other words are English too). Stop itself ("stopped") needs no more words."""


def stop_detail(stats: ReplyStats | None) -> str:
    """"max new tokens reached" (translated) for an answer whose stop_reason is "length"; ""
    otherwise (Stop needs no more words, and answers stored before the reason was kept have none)."""
    source = STOP_DETAILS.get(stats.stop_reason, "") if stats is not None else ""
    return translate("Turns", source) if source else ""
