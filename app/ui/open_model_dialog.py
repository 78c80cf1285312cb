"""Open model: the models this machine already has, with their size and whether they fit.

Lists recent models, the installed default and the local Hugging Face cache
(app.engine.loading.catalog), each with its projected memory against what this machine has free
(app.engine.loading.fit); "Browse…" adds any folder or .gguf file. The per-model permissions
(run the model's own code, load pickle weights) are set here, for the selected model only.
"""

from pathlib import Path

from PySide6.QtCore import QSize, Qt, Signal, Slot
from PySide6.QtGui import QBrush
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
)

from app.core.paths import default_model_path
from app.core.settings import ModelPermissions, Settings, model_key
from app.engine.loading.catalog import CHOSEN, Catalog, CatalogEntry
from app.engine.loading.fit import FITS, NO_FIT, TIGHT, gib
from app.engine.loading.folder_trust import ENABLE_CODE, ENABLE_PICKLE
from app.ui.theme import pick

COLUMNS = ("Model", "Found in", "On disk", "Needs", "Fit")
_MODEL, _ORIGIN, _DISK, _NEEDS, _FIT = range(len(COLUMNS))
VERDICT_PAIRS = {FITS: "success", TIGHT: "warning", NO_FIT: "error"}  # colour pairs, app/ui/theme.py
_ENTRY_ROLE = Qt.ItemDataRole.UserRole
ROW_HEIGHT = 26  # px


class OpenModelDialog(QDialog):
    """Pick a model to open; nothing is loaded here.

    Signals:
        model_chosen(str path, object ModelPermissions): the model to open and the permissions
        the user set for it, emitted as the dialog accepts (Open, double-click, Enter).
    """

    model_chosen = Signal(str, object)

    def __init__(self, catalog: Catalog, settings: Settings, parent=None,
                 default_path: Path | None = None):
        super().__init__(parent)
        self.setObjectName("openModelDialog")
        self.setWindowTitle("Open model")
        self.resize(820, 420)
        self.catalog = catalog
        self._permissions: dict[str, ModelPermissions] = {}
        self._settings = settings

        machine = QLabel(f"This machine: {catalog.machine.describe()} "
                         f"({'GPU' if catalog.machine.device == 'cuda' else 'CPU'})")
        machine.setObjectName("openModelMachine")
        machine.setWordWrap(True)
        hint = QLabel("Needs = the weights as they would load here + the KV cache of a full context. "
                      "“tight” leaves too little room for long prompts; “does not fit” will not load "
                      "or will run out of memory.")
        hint.setObjectName("openModelHint")
        hint.setWordWrap(True)
        self.tree = QTreeWidget()
        self.tree.setObjectName("openModelList")
        self.tree.setHeaderLabels(COLUMNS)
        self.tree.setRootIsDecorated(False)
        self.tree.setUniformRowHeights(True)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        header = self.tree.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(_MODEL, QHeaderView.ResizeMode.Stretch)
        for column in (_ORIGIN, _DISK, _NEEDS, _FIT):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        self.empty = QLabel("No models found on this machine yet. Use “Browse…” to pick a model "
                            "folder or a .gguf file.")
        self.empty.setObjectName("openModelEmpty")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.detail = QLabel()
        self.detail.setObjectName("openModelDetail")
        self.detail.setWordWrap(True)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.trust_code = QCheckBox(f"{ENABLE_CODE} (trust_remote_code)")
        self.trust_code.setToolTip("Runs Python files shipped with this model when it loads. "
                                   "Only for models from a source you trust.")
        self.allow_pickle = QCheckBox(f"{ENABLE_PICKLE} (.bin / .pt) for this model")
        self.allow_pickle.setToolTip("Pickle files can run arbitrary code when loaded. Safetensors are "
                                     "always used when the folder has them.")
        self.browse_button = QPushButton("Browse…")
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.open_button = self.buttons.button(QDialogButtonBox.StandardButton.Open)

        row = QHBoxLayout()
        row.addWidget(self.browse_button)
        row.addStretch(1)
        row.addWidget(self.buttons)
        layout = QVBoxLayout(self)
        layout.addWidget(machine)
        layout.addWidget(hint)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.empty, 1)
        layout.addWidget(self.detail)
        layout.addWidget(self.trust_code)
        layout.addWidget(self.allow_pickle)
        layout.addLayout(row)

        self.tree.currentItemChanged.connect(self._on_current_item_changed)
        self.tree.itemDoubleClicked.connect(self._on_item_double_clicked)
        self.trust_code.toggled.connect(self._on_permission_toggled)
        self.allow_pickle.toggled.connect(self._on_permission_toggled)
        self.browse_button.clicked.connect(self._on_browse_clicked)
        self.buttons.accepted.connect(self._on_open_clicked)
        self.buttons.rejected.connect(self.reject)

        default = default_model_path() if default_path is None else default_path
        for entry in catalog.entries(settings.recent_models, default):
            self._append(entry)
        if self.tree.topLevelItemCount():
            self.tree.setCurrentItem(self.tree.topLevelItem(0))
        self._show(self.current_entry())

    # ----- rows --------------------------------------------------------------------------------
    def entries(self) -> list[CatalogEntry]:
        """The listed entries, top to bottom."""
        return [self.tree.topLevelItem(i).data(_MODEL, _ENTRY_ROLE)
                for i in range(self.tree.topLevelItemCount())]

    def current_entry(self) -> CatalogEntry | None:
        item = self.tree.currentItem()
        return item.data(_MODEL, _ENTRY_ROLE) if item is not None else None

    def add_path(self, path: Path) -> CatalogEntry:
        """Describe `path` (folder, config.json or .gguf), list it first and select it."""
        entry = self.catalog.describe(Path(path), CHOSEN)
        for i in range(self.tree.topLevelItemCount()):
            if model_key(self.tree.topLevelItem(i).data(_MODEL, _ENTRY_ROLE).path) == model_key(entry.path):
                self.tree.takeTopLevelItem(i)
                break
        item = self._item(entry)
        self.tree.insertTopLevelItem(0, item)
        self.tree.setCurrentItem(item)
        self.open_button.setFocus()
        return entry

    def _append(self, entry: CatalogEntry) -> None:
        self.tree.addTopLevelItem(self._item(entry))

    def _item(self, entry: CatalogEntry) -> QTreeWidgetItem:
        fit = entry.fit
        needs = gib(fit.needed) if fit else "—"
        verdict = f"● {fit.verdict}" if fit else "unknown"
        item = QTreeWidgetItem([entry.name, " · ".join(entry.origins), gib(entry.disk_bytes), needs, verdict])
        item.setData(_MODEL, _ENTRY_ROLE, entry)
        item.setSizeHint(_MODEL, QSize(0, ROW_HEIGHT))
        for column in (_DISK, _NEEDS):
            item.setTextAlignment(column, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if fit:
            item.setForeground(_FIT, QBrush(pick(VERDICT_PAIRS[fit.verdict], self.palette())))
        plan = entry.plan.summary() if entry.plan is not None else ""
        tip = "\n".join(t for t in (str(entry.path), fit.detail() if fit else "", plan, entry.note) if t)
        for column in range(len(COLUMNS)):
            item.setToolTip(column, tip)
        return item

    def _show(self, entry: CatalogEntry | None) -> None:
        has_rows = self.tree.topLevelItemCount() > 0
        self.tree.setVisible(has_rows)
        self.empty.setVisible(not has_rows)
        self.open_button.setEnabled(entry is not None)
        for box in (self.trust_code, self.allow_pickle):
            box.setEnabled(entry is not None)
        if entry is None:
            self.detail.setText("")
            return
        lines = [str(entry.path)]
        lines.append(entry.fit.detail() if entry.fit else self.tr("Memory fit not known yet."))
        if entry.plan is not None:  # app.engine.loading.fit_plan: verdict, context that fits, disk
            lines.append(self.tr("Plan: {0}").format(entry.plan.summary()))
        if entry.note:
            lines.append(f"Note: {entry.note}.")
        self.detail.setText("\n".join(lines))
        permissions = self.permissions_for(entry)
        for box, value in ((self.trust_code, permissions.trust_remote_code),
                           (self.allow_pickle, permissions.allow_pickle)):
            box.blockSignals(True)
            box.setChecked(value)
            box.blockSignals(False)

    def permissions_for(self, entry: CatalogEntry) -> ModelPermissions:
        """What the dialog will open `entry` with: as ticked here, else as saved in settings."""
        key = model_key(entry.path)
        return self._permissions.get(key) or self._settings.permissions_for(key)

    # ----- slots -------------------------------------------------------------------------------
    @Slot(QTreeWidgetItem, QTreeWidgetItem)
    def _on_current_item_changed(self, current, _previous) -> None:
        self._show(current.data(_MODEL, _ENTRY_ROLE) if current is not None else None)

    @Slot(QTreeWidgetItem, int)
    def _on_item_double_clicked(self, item, _column) -> None:
        self.tree.setCurrentItem(item)
        self._on_open_clicked()

    @Slot(bool)
    def _on_permission_toggled(self, _checked: bool) -> None:
        entry = self.current_entry()
        if entry is not None:
            key = model_key(entry.path)
            self._permissions[key] = ModelPermissions(key, self.trust_code.isChecked(),
                                                      self.allow_pickle.isChecked())

    @Slot()
    def _on_browse_clicked(self) -> None:
        dialog = QFileDialog(self, "Open model — an HF folder's config.json, or a .gguf file")
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.setNameFilter("GGUF models (*.gguf);;Model config (config.json)")
        if dialog.exec():
            self.add_path(Path(dialog.selectedFiles()[0]))

    @Slot()
    def _on_open_clicked(self) -> None:
        entry = self.current_entry()
        if entry is None:
            return
        self.model_chosen.emit(str(entry.path), self.permissions_for(entry))
        self.accept()
