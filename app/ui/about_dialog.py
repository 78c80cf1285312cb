"""Help → About Headroom: versions, the CUDA device, the attention path the loaded model really
uses, where the logs are, and the licences. "Copy details" puts the same facts on the clipboard
for a bug report. The facts come from app.engine.loading.environment (Qt-free, tested there).
"""

from PySide6.QtCore import QCoreApplication, Qt, QTimer, Slot, qVersion
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
)

from app.engine.loading.environment import HEADROOM_LICENCE, LICENCES, Environment
from app.ui.theme import pick


class AboutDialog(QDialog):
    """Shows `environment` (an Environment), the loaded model's LoadReport (None: no model) and
    the log folder. No signals. `rows` holds the (label, value) pairs shown, in order."""

    def _value(self, name: str, value: str | None, environment: Environment) -> str:
        """A version row's value in the window's language."""
        if name == "CUDA" and not (environment.cuda_available and environment.cuda_devices):
            return (self.tr("no CUDA device (this PyTorch is a CPU-only build)") if environment.torch_cuda is None
                    else self.tr("no CUDA device (PyTorch built for CUDA {0})").format(environment.torch_cuda))
        if value is None:
            return self.tr("not installed")
        return f"{value} (Qt {qVersion()})" if name == "PySide6" else value

    def __init__(self, environment: Environment, report=None, log_folder=None, parent=None):
        super().__init__(parent)
        self.setObjectName("aboutDialog")
        self.setWindowTitle(self.tr("About Headroom"))
        # the version rows are named after their packages (PySide6, torch, CUDA …): not translated;
        # what they say is (trial 4: "not installed" stayed English in the Korean window)
        rows = [(k, self._value(k, v, environment)) for k, v in environment.version_rows()]
        rows.append((self.tr("Attention"), attention_text(report)))
        rows.append((self.tr("Logs"), str(log_folder) if log_folder else self.tr("not written (stderr only)")))
        self.rows = rows
        self.licence_rows = [("Headroom", HEADROOM_LICENCE), *LICENCES]

        muted = pick("muted", self.palette()).name()  # the version, quieter than the name
        title = QLabel(f"Headroom <span style='color:{muted}; font-weight:400'>{environment.headroom}</span>")
        title.setTextFormat(Qt.TextFormat.RichText)
        title.setObjectName("aboutTitle")
        tagline = QLabel(self.tr("A desktop chat app for local LLMs that sees an out-of-memory coming before it "
                                 "happens."))
        tagline.setObjectName("aboutTagline")
        tagline.setWordWrap(True)
        self.copy_button = QPushButton(self.tr("Copy details"))
        self.copy_button.setObjectName("aboutCopy")
        close = QPushButton(self.tr("Close"))
        close.setDefault(True)
        self.copy_button.clicked.connect(self._on_copy_clicked)
        close.clicked.connect(self.accept)
        buttons = QHBoxLayout()
        buttons.addWidget(self.copy_button)
        buttons.addStretch(1)
        buttons.addWidget(close)

        # one grid for both sections, so their value columns line up; the version is in the title
        grid = QGridLayout()
        grid.setHorizontalSpacing(16)
        grid.setVerticalSpacing(3)
        grid.setColumnStretch(1, 1)
        _add_section(grid, self.tr("This installation"), [r for r in rows if r[0] != "Headroom"])
        _add_section(grid, self.tr("Licences"), self.licence_rows)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(20, 16, 20, 14)
        layout.setSpacing(4)
        layout.addWidget(title)
        layout.addWidget(tagline)
        layout.addLayout(grid)
        layout.addSpacing(12)
        layout.addLayout(buttons)
        self.setMinimumWidth(600)

    def details_text(self) -> str:
        """The installation rows as "label: value" lines (what Copy details copies)."""
        return "\n".join(f"{label}: {value}" for label, value in self.rows)

    @Slot()
    def _on_copy_clicked(self) -> None:
        QGuiApplication.clipboard().setText(self.details_text())
        self.copy_button.setText(self.tr("Copied"))
        QTimer.singleShot(1500, self.copy_button, lambda: self.copy_button.setText(self.tr("Copy details")))


def attention_text(report) -> str:
    """The active attention path from a LoadReport, with the model, device and the reason for
    an attention fallback when there was one; "no model loaded" for None."""
    if report is None:
        return QCoreApplication.translate("AboutDialog", "no model loaded")
    quant = "" if report.quantization == "none" else f", {report.quantization}"
    text = QCoreApplication.translate("AboutDialog", "{0} ({1} on {2}, {3})").format(
        report.attention, report.name, report.device, report.compute_dtype + quant)
    why = next((f for f in report.fallbacks if "attention" in f.lower() or "flash" in f.lower()), "")
    return f"{text} — {why}" if why else text


def _add_section(grid: QGridLayout, heading: str, rows: list[tuple[str, str]]) -> None:
    """A heading spanning both columns, then one name/value row per pair."""
    section = QLabel(heading)
    section.setObjectName("aboutSection")
    section.setContentsMargins(0, 14, 0, 2)
    grid.addWidget(section, grid.rowCount(), 0, 1, 2)
    for name, value in rows:
        row = grid.rowCount()
        name_label, value_label = QLabel(name), QLabel(value)
        name_label.setObjectName("aboutName")
        value_label.setObjectName("aboutValue")
        value_label.setTextFormat(Qt.TextFormat.PlainText)  # paths and versions show literally
        value_label.setWordWrap(True)
        value_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        grid.addWidget(name_label, row, 0, Qt.AlignmentFlag.AlignTop)
        grid.addWidget(value_label, row, 1)
