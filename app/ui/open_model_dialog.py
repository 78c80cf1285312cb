"""Open model: the models this machine already has, with their size and whether they fit.

Lists recent models, the installed default and the local Hugging Face cache
(app.engine.loading.catalog), each with its projected memory against what this machine has free
(app.engine.loading.fit) and its fit plan; "Model file…" adds a .gguf file (or, picked inside a
model folder, that folder: config.json, *.safetensors) and "Model folder…" a model folder, each
in the platform's own dialog (no native dialog picks files and folders at once). Finding the
models and reading each one's config or GGUF header run on BackgroundJobs (the first header
takes seconds): a row says "reading…" until its plan arrives, and an answer for a row that
changed since it was asked (browsed again, another context) is dropped. A file that cannot be
opened (not a GGUF, an unsupported architecture) keeps Open disabled and says why. The
per-model permissions (run the model's own code, load pickle weights) and the context length
(auto or custom) are set here, for the selected model only.
"""

from pathlib import Path

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication, QSize, Qt, Signal, Slot
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

from app.chat.fit_text import (
    fit_line,
    is_damaged,
    machine_text,
    notes_line,
    plan_line,
    plan_verdict_text,
    refusal_text,
    verdict_text,
)
from app.core.last_folders import MODEL
from app.core.paths import default_model_path
from app.core.settings import AUTO_CONTEXT, ModelPermissions, Settings, model_key
from app.engine.loading.catalog import CHOSEN, Candidate, Catalog, CatalogEntry
from app.engine.loading.fit import FITS, NO_FIT, TIGHT
from app.engine.loading.fit_plan import PARTIAL
from app.engine.memory.units import format_bytes
from app.ui.context_choice import ContextChoice
from app.ui.file_dialog_locale import file_dialogs_in_window_language
from app.ui.theme import pick
from app.workers.background_jobs import BackgroundJobs

COLUMNS = (QT_TRANSLATE_NOOP("OpenModelDialog", "Model"), QT_TRANSLATE_NOOP("OpenModelDialog", "Found in"),
           QT_TRANSLATE_NOOP("OpenModelDialog", "On disk"), QT_TRANSLATE_NOOP("OpenModelDialog", "Needs"),
           QT_TRANSLATE_NOOP("OpenModelDialog", "Fit"))
_MODEL, _ORIGIN, _DISK, _NEEDS, _FIT = range(len(COLUMNS))
VERDICT_PAIRS = {FITS: "success", TIGHT: "warning", NO_FIT: "error"}  # colour pairs, app/ui/theme.py
# where a model was found (catalog origins), as shown
ORIGIN_TEXTS = {"recent": QT_TRANSLATE_NOOP("OpenModelDialog", "recent"),
                "default": QT_TRANSLATE_NOOP("OpenModelDialog", "default"),
                "HF cache": QT_TRANSLATE_NOOP("OpenModelDialog", "HF cache"),
                "chosen": QT_TRANSLATE_NOOP("OpenModelDialog", "chosen")}
_ENTRY_ROLE = Qt.ItemDataRole.UserRole          # the CatalogEntry, None while reading
_CANDIDATE_ROLE = Qt.ItemDataRole.UserRole + 1  # the Candidate the row was made from
ROW_HEIGHT = 26  # px


def model_path_for(picked: Path) -> Path:
    """What a picked path opens as: a file inside a model folder (config.json, a .safetensors
    shard, its tokenizer…) opens that folder; a .gguf file, a folder, or a file with no
    config.json beside it stays as picked (the catalog then says why it cannot open)."""
    picked = Path(picked)
    if picked.is_file() and picked.suffix.lower() != ".gguf" and (picked.parent / "config.json").is_file():
        return picked.parent
    return picked


class OpenModelDialog(QDialog):
    """Pick a model to open; nothing is loaded here.

    Signals:
        model_chosen(str path, object ModelPermissions, int context_tokens): the model to open,
        the permissions and the context (AUTO_CONTEXT = auto) the user set for it, emitted as
        the dialog accepts (Open, double-click, Enter).
    """

    model_chosen = Signal(str, object, int)

    def __init__(self, catalog: Catalog, settings: Settings, parent=None,
                 default_path: Path | None = None, jobs: BackgroundJobs | None = None, folders=None):
        """jobs: where listing and describing run (the chat's; default: the dialog's own, whose
        running job is waited for when the dialog closes). folders: the chat's FileFolders
        (app.chat.file_folders), where the pickers start; None: the home folder."""
        super().__init__(parent)
        self.setObjectName("openModelDialog")
        self.setWindowTitle(self.tr("Open model"))
        self.resize(820, 460)
        self.catalog = catalog
        self._permissions: dict[str, ModelPermissions] = {}
        self._contexts: dict[str, int] = {}   # model key → context chosen here
        self._asked: dict[int, str] = {}      # ticket → model key of a description awaited
        self._settings = settings
        self._folders = folders
        self._own_jobs = jobs is None
        self._jobs = jobs or BackgroundJobs(parent=self)

        machine = QLabel(self.tr("This machine: {0} ({1})").format(
            machine_text(catalog.machine), "GPU" if catalog.machine.device == "cuda" else "CPU"))
        machine.setObjectName("openModelMachine")
        machine.setWordWrap(True)
        hint = QLabel(self.tr("Needs = the weights as they would load here + the KV cache of the model's "
                              "context (auto: the largest that fits). “tight” leaves too little room for "
                              "long prompts; “does not fit” will not load or will run out of memory."))
        hint.setObjectName("openModelHint")
        hint.setWordWrap(True)
        self.tree = QTreeWidget()
        self.tree.setObjectName("openModelList")
        self.tree.setHeaderLabels([QCoreApplication.translate("OpenModelDialog", c) for c in COLUMNS])
        self.tree.setRootIsDecorated(False)
        self.tree.setUniformRowHeights(True)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        header = self.tree.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(_MODEL, QHeaderView.ResizeMode.Stretch)
        for column in (_ORIGIN, _DISK, _NEEDS, _FIT):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        self.empty = QLabel(self.tr("Looking for models on this machine…"))
        self.empty.setObjectName("openModelEmpty")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setWordWrap(True)
        self.detail = QLabel()
        self.detail.setObjectName("openModelDetail")
        self.detail.setTextFormat(Qt.TextFormat.PlainText)  # model paths show literally
        self.detail.setWordWrap(True)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.context = ContextChoice()
        self.context.set_max_new_tokens(settings.generation.max_new_tokens)
        # the same words as ENABLE_CODE / ENABLE_PICKLE, which the loader's refusals quote
        self.trust_code = QCheckBox(self.tr("Run this model's own code") + " (trust_remote_code)")
        self.trust_code.setToolTip(self.tr("Runs Python files shipped with this model when it loads. "
                                           "Only for models from a source you trust."))
        self.allow_pickle = QCheckBox(self.tr("Allow pickle weights (.bin / .pt) for this model"))
        self.allow_pickle.setToolTip(self.tr("Pickle files can run arbitrary code when loaded. Safetensors are "
                                             "always used when the folder has them."))
        self.file_button = QPushButton(self.tr("Model file…"))
        self.file_button.setToolTip(self.tr("A .gguf file, or any file inside a model folder (config.json, "
                                            "*.safetensors): that folder is added."))
        self.folder_button = QPushButton(self.tr("Model folder…"))
        self.folder_button.setToolTip(self.tr("A Hugging Face model folder: config.json with its "
                                              "*.safetensors weights."))
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.open_button = self.buttons.button(QDialogButtonBox.StandardButton.Open)
        # Enter opens the model selected, never a file picker: the pickers are no default button
        # even with focus (third new-user trial: Enter right after Ctrl+O opened "Model file…")
        self.open_button.setDefault(True)
        for button in (self.file_button, self.folder_button):
            button.setAutoDefault(False)

        row = QHBoxLayout()
        row.addWidget(self.file_button)
        row.addWidget(self.folder_button)
        row.addStretch(1)
        row.addWidget(self.buttons)
        layout = QVBoxLayout(self)
        layout.addWidget(machine)
        layout.addWidget(hint)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.empty, 1)
        layout.addWidget(self.detail)
        layout.addWidget(self.context)
        layout.addWidget(self.trust_code)
        layout.addWidget(self.allow_pickle)
        layout.addLayout(row)

        self.tree.currentItemChanged.connect(self._on_current_item_changed)
        self.tree.itemDoubleClicked.connect(self._on_item_double_clicked)
        self.context.changed.connect(self._on_context_changed)
        self.trust_code.toggled.connect(self._on_permission_toggled)
        self.allow_pickle.toggled.connect(self._on_permission_toggled)
        self.file_button.clicked.connect(self._on_file_clicked)
        self.folder_button.clicked.connect(self._on_folder_clicked)
        self.buttons.accepted.connect(self._on_open_clicked)
        self.buttons.rejected.connect(self.reject)
        self._jobs.job_finished.connect(self._on_job_finished)
        self._jobs.job_failed.connect(self._on_job_failed)

        default = default_model_path() if default_path is None else default_path
        self._listing: int | None = self._jobs.submit(catalog.candidates, settings.recent_models, default)
        self._show(None)

    # ----- rows --------------------------------------------------------------------------------
    def entries(self) -> list[CatalogEntry]:
        """The described entries, top to bottom (rows still reading are left out)."""
        return [e for e in (self._items_entry(i) for i in self._items()) if e is not None]

    def reading(self) -> bool:
        """Whether the list or a row's plan is still on its way."""
        return self._listing is not None or bool(self._asked)

    def current_entry(self) -> CatalogEntry | None:
        """The selected row's entry; None when nothing is selected or its plan is on its way."""
        item = self.tree.currentItem()
        return self._items_entry(item) if item is not None else None

    def current_candidate(self) -> Candidate | None:
        item = self.tree.currentItem()
        return item.data(_MODEL, _CANDIDATE_ROLE) if item is not None else None

    def add_path(self, path: Path) -> Candidate:
        """List `path` (a folder, a file inside a model folder, or a .gguf) first and select it;
        its plan follows (model_path_for)."""
        path = model_path_for(Path(path))
        candidate = Candidate(path.name, path, (CHOSEN,))
        for item in self._items():
            if model_key(item.data(_MODEL, _CANDIDATE_ROLE).path) == model_key(path):
                self.tree.takeTopLevelItem(self.tree.indexOfTopLevelItem(item))
                break
        item = self._reading_item(candidate)
        self.tree.insertTopLevelItem(0, item)
        self.tree.setCurrentItem(item)
        self._describe(candidate)
        self.open_button.setFocus()
        return candidate

    def _items(self) -> list[QTreeWidgetItem]:
        return [self.tree.topLevelItem(i) for i in range(self.tree.topLevelItemCount())]

    @staticmethod
    def _items_entry(item: QTreeWidgetItem) -> CatalogEntry | None:
        return item.data(_MODEL, _ENTRY_ROLE)

    def _item_for(self, key: str) -> QTreeWidgetItem | None:
        return next((i for i in self._items() if model_key(i.data(_MODEL, _CANDIDATE_ROLE).path) == key), None)

    def _describe(self, candidate: Candidate) -> None:
        """Ask for `candidate`'s entry at its context; an answer still awaited for it is dropped."""
        key = model_key(candidate.path)
        self._asked = {t: k for t, k in self._asked.items() if k != key}
        # no context of its own: the catalog's (the Settings dialog's) sizes the KV term
        ticket = self._jobs.submit(self.catalog.describe_candidate, candidate, self.context_for(key) or None)
        self._asked[ticket] = key

    def _reading_item(self, candidate: Candidate) -> QTreeWidgetItem:
        size = format_bytes(candidate.disk_bytes) if candidate.disk_bytes is not None else "…"
        origins = " · ".join(QCoreApplication.translate("OpenModelDialog", ORIGIN_TEXTS.get(o, o))
                             for o in candidate.origins)
        item = QTreeWidgetItem([candidate.name, origins, size, "…", self.tr("reading…")])
        item.setData(_MODEL, _CANDIDATE_ROLE, candidate)
        item.setData(_MODEL, _ENTRY_ROLE, None)
        item.setSizeHint(_MODEL, QSize(0, ROW_HEIGHT))
        for column in (_DISK, _NEEDS):
            item.setTextAlignment(column, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        item.setToolTip(_MODEL, str(candidate.path))
        return item

    def _fill(self, item: QTreeWidgetItem, entry: CatalogEntry) -> None:
        """Show `entry` in its row (the plan arrived)."""
        fit = entry.fit
        item.setData(_MODEL, _ENTRY_ROLE, entry)
        item.setText(_DISK, format_bytes(entry.disk_bytes))
        # what a model that cannot open would need is no figure to go by (re-trial: a config.json alone
        # "needs 873 MiB", planned from that config's defaults)
        item.setText(_NEEDS, format_bytes(fit.needed) if fit and not entry.refusal else "—")
        if entry.refusal:
            item.setText(_FIT, self.tr("✕ damaged") if is_damaged(entry) else self.tr("✕ cannot open"))
            item.setForeground(_FIT, QBrush(pick(VERDICT_PAIRS[NO_FIT], self.palette())))
        elif fit is None:
            item.setText(_FIT, self.tr("unknown"))
        else:
            plan = entry.plan
            partial = plan is not None and plan.verdict == PARTIAL and fit.context_tokens == plan.context_fit
            item.setText(_FIT, f"● {plan_verdict_text(plan) if partial else verdict_text(fit.verdict)}")
            item.setForeground(_FIT, QBrush(pick(VERDICT_PAIRS[TIGHT if partial else fit.verdict], self.palette())))
        plan = (plan_line(entry.plan, fit.context_tokens, fit.kv_bytes) if fit else plan_line(entry.plan)
                if entry.plan is not None else "")
        tip = "\n".join(t for t in (str(entry.path), fit_line(fit) if fit else "", plan, notes_line(entry)) if t)
        for column in range(len(COLUMNS)):
            item.setToolTip(column, tip)

    # ----- the selected model --------------------------------------------------------------------
    def _show(self, item: QTreeWidgetItem | None) -> None:
        has_rows = self.tree.topLevelItemCount() > 0
        if has_rows and self.tree.isHidden() and self.focusWidget() in (None, self.file_button):
            self.tree.setFocus()  # the list arrived: the keys move in it (the pickers had the first focus)
        self.tree.setVisible(has_rows)
        self.empty.setVisible(not has_rows)
        candidate = item.data(_MODEL, _CANDIDATE_ROLE) if item is not None else None
        entry = self._items_entry(item) if item is not None else None
        refusal = entry.refusal if entry is not None else ""
        self.open_button.setEnabled(candidate is not None and not refusal)
        self.open_button.setToolTip(refusal_text(refusal, entry.path) if refusal else "")
        for box in (self.trust_code, self.allow_pickle):
            box.setEnabled(candidate is not None and not refusal)
        self.context.setEnabled(entry is not None and not refusal)
        if candidate is None:
            self.detail.setText("")
            self.context.show_model(None, None, AUTO_CONTEXT, self._settings.generation.context_tokens)
            return
        key = model_key(candidate.path)
        self._show_detail(candidate, entry)
        plan = entry.plan if entry is not None and not refusal else None  # a damaged file: no plan to speak of
        self.context.show_model(plan.context_fit if plan else None, plan.trained_context if plan else None,
                                self.context_for(key), self._settings.generation.context_tokens,
                                reading=entry is None, fits_kv8=plan.context_fit_kv8 if plan else None)
        permissions = self.permissions_for(candidate)
        for box, value in ((self.trust_code, permissions.trust_remote_code),
                           (self.allow_pickle, permissions.allow_pickle)):
            box.blockSignals(True)
            box.setChecked(value)
            box.blockSignals(False)

    def _show_detail(self, candidate: Candidate, entry: CatalogEntry | None) -> None:
        lines = [str(candidate.path)]
        if entry is None:
            lines.append(self.tr("Reading the model's header and planning its fit…"))
        elif entry.refusal:
            lines.append(refusal_text(entry.refusal, entry.path))
        else:
            lines.append(fit_line(entry.fit) if entry.fit else self.tr("Memory fit not known."))
            if entry.plan is not None:  # app.engine.loading.fit_plan: verdict, context that fits, disk
                fit = entry.fit  # the plan line speaks of the context and KV cache the fit line sizes
                plan = plan_line(entry.plan, fit.context_tokens, fit.kv_bytes) if fit else plan_line(entry.plan)
                lines.append(self.tr("Plan: {0}").format(plan))
            if entry.notes:
                lines.append(self.tr("Note: {0}.").format(notes_line(entry)))
        self.detail.setText("\n".join(lines))

    def permissions_for(self, entry: CatalogEntry | Candidate) -> ModelPermissions:
        """What the dialog will open `entry` with: as ticked here, else as saved in settings."""
        key = model_key(entry.path)
        return self._permissions.get(key) or self._settings.permissions_for(key)

    def context_for(self, key: str) -> int:
        """The context the dialog will open this model with: as chosen here, else its own saved
        one (AUTO_CONTEXT when it has none: the Settings dialog's context then applies)."""
        if key in self._contexts:
            return self._contexts[key]
        return self._settings.own_context(key)

    # ----- slots -------------------------------------------------------------------------------
    @Slot(int, object)
    def _on_job_finished(self, ticket: int, result) -> None:
        if ticket == self._listing:
            self._listing = None
            for candidate in result:
                self.tree.addTopLevelItem(self._reading_item(candidate))
                self._describe(candidate)
            if self.tree.currentItem() is None and self.tree.topLevelItemCount():
                self.tree.setCurrentItem(self.tree.topLevelItem(0))
            self.empty.setText(self.tr("No models found on this machine yet. Use “Model file…” to pick a "
                                       ".gguf file, or “Model folder…” to pick a model folder."))
            self._show(self.tree.currentItem())
            return
        key = self._asked.pop(ticket, None)
        item = self._item_for(key) if key is not None else None
        if item is None:  # stale: the row changed or went since this was asked
            return
        if result is None:  # only in the HF cache, and not a causal LM after all
            self.tree.takeTopLevelItem(self.tree.indexOfTopLevelItem(item))
            self._show(self.tree.currentItem())
            return
        self._fill(item, result)
        if item is self.tree.currentItem():
            self._show(item)

    @Slot(int, str)
    def _on_job_failed(self, ticket: int, reason: str) -> None:
        if ticket == self._listing:
            self._listing = None
            self.empty.setText(self.tr("Could not look for models: {0}").format(reason))
            return
        key = self._asked.pop(ticket, None)
        item = self._item_for(key) if key is not None else None
        if item is not None:
            item.setText(_FIT, self.tr("unknown"))
            item.setToolTip(_FIT, reason)

    @Slot(QTreeWidgetItem, QTreeWidgetItem)
    def _on_current_item_changed(self, current, _previous) -> None:
        self._show(current)

    @Slot(QTreeWidgetItem, int)
    def _on_item_double_clicked(self, item, _column) -> None:
        self.tree.setCurrentItem(item)
        self._on_open_clicked()

    @Slot(bool)
    def _on_permission_toggled(self, _checked: bool) -> None:
        candidate = self.current_candidate()
        if candidate is not None:
            key = model_key(candidate.path)
            self._permissions[key] = ModelPermissions(key, self.trust_code.isChecked(),
                                                      self.allow_pickle.isChecked())

    @Slot(int)
    def _on_context_changed(self, tokens: int) -> None:
        candidate = self.current_candidate()
        if candidate is None:
            return
        self._contexts[model_key(candidate.path)] = tokens
        self._describe(candidate)  # "Needs" follows the context; an older answer is dropped

    @Slot()
    def _on_file_clicked(self) -> None:
        with file_dialogs_in_window_language(self):
            path, _ = QFileDialog.getOpenFileName(
                self, self.tr("Open model file"), str(self._start_folder()),
                self.tr("Models (*.gguf config.json *.safetensors);;GGUF models (*.gguf);;All files (*)"))
        if path:
            self._add_picked(Path(path))

    @Slot()
    def _on_folder_clicked(self) -> None:
        with file_dialogs_in_window_language(self):
            path = QFileDialog.getExistingDirectory(self, self.tr("Open model folder"), str(self._start_folder()))
        if path:
            self._add_picked(Path(path))

    def _start_folder(self) -> Path:
        return self._folders.start(MODEL) if self._folders is not None else Path.home()

    def _add_picked(self, picked: Path) -> None:
        """List a picked file or folder; the next picker starts where its siblings are (a GGUF's
        folder, a model folder's parent)."""
        candidate = self.add_path(picked)
        if self._folders is not None:
            self._folders.remember(MODEL, candidate.path.parent)

    @Slot()
    def _on_open_clicked(self) -> None:
        candidate, entry = self.current_candidate(), self.current_entry()
        if candidate is None or (entry is not None and entry.refusal):
            return
        key = model_key(candidate.path)
        self.model_chosen.emit(str(candidate.path), self.permissions_for(candidate), self.context_for(key))
        self.accept()

    def done(self, result: int) -> None:
        """Closing: the dialog's own jobs are dropped or waited for (each is short)."""
        if self._own_jobs:
            self._jobs.shutdown()
        super().done(result)
