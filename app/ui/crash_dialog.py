"""The non-fatal error dialog of the excepthook: what failed, whether the conversations are
saved, the traceback, and "Copy details" for a bug report. It never blocks: it is shown with
show(), and errors that arrive while it is open are added to it instead of stacking dialogs.

"Your conversations are saved" is said only while they are: while the window says "not saving"
(a full disk, a read-only or locked database: app.chat.saving), the dialog says that changes since
then may be lost (new-user trial: it reassured over a session none of which was kept).
"""

from PySide6.QtCore import Qt, QTimer, Slot
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout

DATABASE_DAMAGED = "database damaged"
"""set_not_saving's reason when an error showed the conversation database damaged (app.ui.excepthook)."""


class CrashDialog(QDialog):
    """Lists unexpected errors (a summary line each) with their tracebacks. No signals.

    log_file: where the same tracebacks are logged (shown so the user can attach it), or None.
    `set_not_saving(why)` tells it whether the conversations are being saved (why "": they are).
    """

    def __init__(self, log_file=None, parent=None):
        super().__init__(parent)
        self.setObjectName("crashDialog")
        self.setWindowTitle(self.tr("Headroom hit an unexpected error"))
        self.setModal(False)  # a window-modal or exec()'d box would block the event loop
        # parentless, so it must not keep the app running after the main window closes
        self.setAttribute(Qt.WidgetAttribute.WA_QuitOnClose, False)
        self._summaries: list[str] = []
        self._details: list[str] = []
        self._log_file = log_file
        self.title = QLabel()
        self.title.setObjectName("crashTitle")
        self.summary = QLabel()
        self.summary.setObjectName("crashSummary")
        self.summary.setTextFormat(Qt.TextFormat.PlainText)  # exception text shows literally
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.hint = QLabel()
        self.hint.setObjectName("crashHint")
        self.hint.setWordWrap(True)
        self.hint.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.set_not_saving("")
        self.details = QPlainTextEdit()
        self.details.setObjectName("crashDetails")
        self.details.setReadOnly(True)
        self.details.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.details.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.copy_button = QPushButton(self.tr("Copy details"))
        self.copy_button.setObjectName("crashCopy")
        self.close_button = QPushButton(self.tr("Close"))
        self.close_button.setDefault(True)
        self.copy_button.clicked.connect(self._on_copy_clicked)
        self.close_button.clicked.connect(self.accept)
        buttons = QHBoxLayout()
        buttons.addWidget(self.copy_button)
        buttons.addStretch(1)
        buttons.addWidget(self.close_button)
        layout = QVBoxLayout(self)
        for widget in (self.title, self.summary, self.hint):
            layout.addWidget(widget)
        layout.addWidget(self.details, 1)
        layout.addLayout(buttons)
        self.resize(640, 420)

    @Slot(str)
    def set_not_saving(self, why: str) -> None:
        """Say that the conversations are saved (why "") or that they are not being saved now
        (why: the reason the window's "Not saving" mark gives, Chat.saving_changed; DATABASE_DAMAGED:
        the database was found damaged, which the window's mark does not know)."""
        if why == DATABASE_DAMAGED:  # re-trial: "…your conversations are saved" under "database is damaged"
            text = self.tr("Headroom keeps running, but your conversations may not be saved until it restarts: "
                           "changes since the damage may be lost.")
        elif why:
            text = self.tr("Headroom keeps running, but your conversations are not being saved now: changes "
                           "since saving stopped may be lost (“Not saving” in the status bar says why). If this "
                           "keeps happening, please report it with the details below.")
        else:
            text = self.tr("Headroom keeps running and your conversations are saved. If this keeps happening, "
                           "please report it with the details below.")
        if self._log_file:
            text += " " + self.tr("The details are also in the log: {0}").format(self._log_file)
        self.hint.setText(text)

    def add_error(self, summary: str, details: str) -> None:
        """Add one error: `summary` is "ExceptionType: message", `details` its traceback."""
        self._summaries.append(summary)
        self._details.append(details.rstrip())
        count = len(self._summaries)
        self.title.setText(self.tr("Something went wrong inside Headroom") if count == 1
                           else self.tr("%n unexpected errors inside Headroom", "", count))
        self.summary.setText("\n".join(self._summaries[-3:]))
        self.details.setPlainText(self.details_text())

    def clear(self) -> None:
        """Forget the errors shown before (the dialog was closed; a new error starts afresh)."""
        self._summaries.clear()
        self._details.clear()

    def details_text(self) -> str:
        """Every traceback, oldest first, separated by a blank line."""
        return "\n\n".join(self._details)

    @Slot()
    def _on_copy_clicked(self) -> None:
        QGuiApplication.clipboard().setText(self.details_text())
        self.copy_button.setText(self.tr("Copied"))
        QTimer.singleShot(1500, self.copy_button, lambda: self.copy_button.setText(self.tr("Copy details")))
