"""Why an answer stopped, in words, for the header of a stopped answer ("stopped: max new tokens
reached"): said when the answer ends (app.chat.turns) and again when its conversation is opened
(app.ui.chat_view), from the stop reason kept in its stats (ReplyStats.stop_reason)."""

from PySide6.QtCore import QCoreApplication

from app.core.conversation import ReplyStats

translate = QCoreApplication.translate  # lupdate reads translate("Context", "source") calls


def stop_detail(stats: ReplyStats | None) -> str:
    """"max new tokens reached" for an answer whose stop_reason is "length"; "" otherwise (Stop
    needs no more words, and answers stored before the reason was kept have none)."""
    if stats is not None and stats.stop_reason == "length":
        return translate("Turns", "max new tokens reached")  # the context it had in app.chat.turns
    return ""
