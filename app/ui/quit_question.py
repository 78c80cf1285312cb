"""The question before quitting while an answer is being written (Ctrl+Q, File → Quit, or the
window's close button): "An answer is still being written. Quit anyway?" with Quit / Cancel, as
LM Studio and Jan ask. Quit stops the answer (its partial text is kept, marked stopped, by
Chat.close) and quits; Cancel keeps the window and the answer going. An answer that ends while
the question is open changes its words.
"""

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QMessageBox, QWidget


class QuitQuestion(QMessageBox):
    """Window-modal over `parent`, opened with open() so the event loop (and the answer) runs on.

    Signals: quit_confirmed() — the user chose Quit. Cancel, Esc or closing the box says nothing.
    """

    quit_confirmed = Signal()

    def __init__(self, parent: QWidget):
        super().__init__(parent)
        self.setObjectName("quitQuestion")
        self.setIcon(QMessageBox.Icon.Question)
        self.setWindowTitle(self.tr("Quit Headroom"))
        self.setText(self.tr("An answer is still being written. Quit anyway?"))
        self.setInformativeText(self.tr("The answer so far is kept, marked as stopped."))
        self.quit_button = self.addButton(self.tr("Quit"), QMessageBox.ButtonRole.AcceptRole)
        self.cancel_button = self.addButton(QMessageBox.StandardButton.Cancel)
        self.setDefaultButton(self.quit_button)  # Ctrl+Q, Enter: the user asked to quit twice
        self.setEscapeButton(self.cancel_button)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.buttonClicked.connect(self._on_button_clicked)

    def answer_ended(self) -> None:
        """The answer ended while the question was open: ask again in words that are true now
        (trial 11: it still said "still being written" after the answer was done)."""
        self.setText(self.tr("The answer is finished. Quit now?"))
        self.setInformativeText(self.tr("Nothing is lost: the conversation is saved."))

    def _on_button_clicked(self, button) -> None:
        if button is self.quit_button:
            self.quit_confirmed.emit()
