"""The non-fatal error dialog of the excepthook: what failed, that nothing was lost, the
traceback, and "Copy details" for a bug report. It never blocks: it is shown with show(), and
errors that arrive while it is open are added to it instead of stacking dialogs.
"""

from PySide6.QtCore import Qt, QTimer, Slot
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout


class CrashDialog(QDialog):
    """Lists unexpected errors (a summary line each) with their tracebacks. No signals.

    log_file: where the same tracebacks are logged (shown so the user can attach it), or None.
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
        self.title = QLabel()
        self.title.setObjectName("crashTitle")
        self.summary = QLabel()
        self.summary.setObjectName("crashSummary")
        self.summary.setTextFormat(Qt.TextFormat.PlainText)  # exception text shows literally
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        text = self.tr("Headroom keeps running and your conversations are saved. If this keeps happening, "
                       "please report it with the details below.")
        if log_file:
            text += " " + self.tr("The details are also in the log: {0}").format(log_file)
        reassure = QLabel(text)
        reassure.setObjectName("crashHint")
        reassure.setWordWrap(True)
        reassure.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
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
        for widget in (self.title, self.summary, reassure):
            layout.addWidget(widget)
        layout.addWidget(self.details, 1)
        layout.addLayout(buttons)
        self.resize(640, 420)

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
