"""The Settings window: system prompt, max_new_tokens, the samplers (temperature, top-p, top-k,
min-p, repetition penalty, seed), the context window, CPU threads, the window's language and
appearance (light or dark), and which backend answers (local model or a remote OpenAI-compatible server)."""

from dataclasses import replace

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QFrame,
    QGroupBox,
    QLabel,
    QPlainTextEdit,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from app.core.backend_settings import BackendSettings
from app.core.settings import (
    MAX_CONTEXT_TOKENS,
    MAX_KEEP_TURNS,
    MAX_KEPT_CHAT_CACHE_MIB,
    MAX_NEW_TOKENS,
    MAX_SEED,
    MAX_TOP_K,
    REPETITION_PENALTY_RANGE,
    SUMMARY_FOLD_AT_RANGE,
    GenerationSettings,
    logical_cores,
)
from app.ui.backend_form import BackendForm
from app.ui.count_spin_box import CountSpinBox
from app.ui.decimal_spin_box import DecimalSpinBox


class SettingsDialog(QDialog):
    """Edit a GenerationSettings snapshot; `result_settings()` returns the edited copy.

    backend: the conversation's BackendSettings (None: no backend section); `result_backend()`
    and `entered_api_key()` return the edits (see BackendForm). key_stored: a key is on file.
    model_context: the open model's own context in tokens (set in Open model; 0: none), which is
    in effect instead of Context window: said below it (new-user trial: "auto" was shown while
    the model ran with its own 2,048). appearance: "system", "light" or "dark"
    (core.settings.APPEARANCES), `result_appearance()` the choice.
    """

    def __init__(self, settings: GenerationSettings, parent=None, backend: BackendSettings | None = None,
                 key_stored: bool = False, language: str = "auto", model_context: int = 0,
                 appearance: str = "system"):
        super().__init__(parent)
        self._settings = settings  # fields without a control here are kept as they are
        self.setWindowTitle(self.tr("Settings"))
        self.system_prompt = QPlainTextEdit(settings.system_prompt)
        self.system_prompt.setFixedHeight(90)
        self.max_new_tokens = CountSpinBox()
        self.max_new_tokens.setRange(1, MAX_NEW_TOKENS)
        self.max_new_tokens.setValue(settings.max_new_tokens)
        self.max_new_tokens.set_counted_suffix(lambda n: SettingsDialog.tr(" tokens", "", n))
        self.max_new_tokens.setGroupSeparatorShown(True)  # "32,768 tokens", as the window says counts
        self.temperature = DecimalSpinBox()
        self.temperature.setRange(0.0, 2.0)
        self.temperature.setSingleStep(0.05)
        self.temperature.setValue(settings.temperature)
        self.temperature.setToolTip(self.tr("0 = greedy decoding (deterministic)"))
        self.top_p = DecimalSpinBox()
        self.top_p.setRange(0.01, 1.0)
        self.top_p.setSingleStep(0.05)
        self.top_p.setValue(settings.top_p)
        self.top_p.setToolTip(self.tr("Nucleus sampling: keep the smallest set of tokens with this total probability"))
        self.context_tokens = CountSpinBox()
        self.context_tokens.setRange(0, MAX_CONTEXT_TOKENS)
        self.context_tokens.setSingleStep(1024)
        self.context_tokens.setValue(settings.context_tokens)
        self.context_tokens.setSpecialValueText(self.tr("auto (the largest that fits)"))
        self.context_tokens.set_counted_suffix(lambda n: SettingsDialog.tr(" tokens", "", n))
        self.context_tokens.setGroupSeparatorShown(True)
        self.context_tokens.setToolTip(self.tr("Cap the context window below the model's own: older turns beyond "
                                               "it are folded into a summary. Smaller = less KV cache memory. Auto: "
                                               "the largest context whose KV cache fits this machine beside the "
                                               "model."))
        self.context_note = QLabel(self.tr("The open model uses its own context: {0} tokens (Open model). This "
                                           "setting applies to models without their own.").format(f"{model_context:,}"))
        self.context_note.setObjectName("modelContextNote")
        self.context_note.setWordWrap(True)
        self.context_note.setVisible(model_context > 0)
        self._build_sampler_controls(settings, language)
        self._build_appearance_control(appearance)
        self._build_summary_controls(settings)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form = QFormLayout()
        form.addRow(self.tr("System prompt"), self.system_prompt)
        form.addRow(self.tr("Max new tokens"), self.max_new_tokens)
        form.addRow(self.tr("Temperature"), self.temperature)
        form.addRow(self.tr("Top-p"), self.top_p)
        form.addRow(self.tr("Top-k"), self.top_k)
        form.addRow(self.tr("Min-p"), self.min_p)
        form.addRow(self.tr("Repetition penalty"), self.repetition_penalty)
        form.addRow(self.tr("Seed"), self.seed)
        form.addRow(self.tr("Context window"), self.context_tokens)
        if model_context > 0:
            form.addRow("", self.context_note)
        form.addRow(self.tr("CPU threads"), self.cpu_threads)
        form.addRow(self.tr("Recent chats' KV caches"), self.kept_chat_cache)
        form.addRow(self.tr("Summarize from"), self.summary_fold_at)
        form.addRow(self.tr("Keep verbatim"), self.summary_keep_turns)
        form.addRow(self.tr("Language"), self.language)
        form.addRow("", self.language_note)
        form.addRow(self.tr("Appearance"), self.appearance)
        self.backend_form = BackendForm(backend or BackendSettings(), key_stored)
        group = QGroupBox(self.tr("Backend (this conversation)"))
        QVBoxLayout(group).addWidget(self.backend_form)
        group.setVisible(backend is not None)
        page = QWidget()
        content = QVBoxLayout(page)
        content.setContentsMargins(0, 0, 0, 0)
        content.addLayout(form)
        content.addWidget(group)
        content.addStretch(1)  # a taller dialog's room goes below the fields, not into a wrapped note's row (trial 14)
        self._scroll = QScrollArea()  # on a short screen the fields scroll; OK and Cancel stay in view
        self._scroll.setFrameShape(QFrame.Shape.NoFrame)
        self._scroll.setWidgetResizable(True)
        self._scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._scroll.setWidget(page)
        self._scroll.setMinimumWidth(page.minimumSizeHint().width()  # the fields never scroll sideways
                                     + self._scroll.verticalScrollBar().sizeHint().width())
        self._buttons = buttons
        outer = QVBoxLayout(self)
        outer.addWidget(self._scroll)
        outer.addWidget(buttons)

    def showEvent(self, event) -> None:  # noqa: N802 (Qt override)
        """Open tall enough for every line of the word-wrapped notes (context, language, backend):
        Qt gives a layout no minimum height for word-wrapped labels and opens a window at most 2/3
        of the screen tall, so the form squeezed the notes' first and last lines away. At most
        9/10 of the screen; a shorter screen scrolls the fields."""
        if not event.spontaneous():
            outer = self.layout()
            margins = outer.contentsMargins()
            width = max(self.width(), self.minimumSizeHint().width())
            fields = self._scroll.widget().heightForWidth(width - margins.left() - margins.right())
            wanted = margins.top() + fields + outer.spacing() + self._buttons.sizeHint().height() + margins.bottom()
            self.resize(width, min(wanted, self.screen().availableGeometry().height() * 9 // 10))
        super().showEvent(event)

    def _build_sampler_controls(self, settings: GenerationSettings, language: str) -> None:
        self.top_k = CountSpinBox()
        self.top_k.setRange(0, MAX_TOP_K)
        self.top_k.setValue(settings.top_k)
        self.top_k.setSpecialValueText(self.tr("off"))
        self.top_k.setGroupSeparatorShown(True)
        self.top_k.setToolTip(self.tr("Keep only the k likeliest tokens (transformers' TopKLogitsWarper)"))
        self.min_p = DecimalSpinBox()
        self.min_p.setRange(0.0, 1.0)
        self.min_p.setSingleStep(0.01)
        self.min_p.setValue(settings.min_p)
        self.min_p.setSpecialValueText(self.tr("off"))
        self.min_p.setToolTip(self.tr("Drop tokens below this fraction of the top token's probability "
                                       "(MinPLogitsWarper)"))
        self.repetition_penalty = DecimalSpinBox()
        self.repetition_penalty.setRange(*REPETITION_PENALTY_RANGE)
        self.repetition_penalty.setSingleStep(0.05)
        self.repetition_penalty.setValue(settings.repetition_penalty)
        self.repetition_penalty.setToolTip(self.tr("> 1 discourages repeating tokens already in the prompt or "
                                                    "reply; 1 = off"))
        self.seed = CountSpinBox()
        self.seed.setRange(-1, MAX_SEED)
        self.seed.setValue(-1 if settings.seed is None else settings.seed)
        self.seed.setSpecialValueText(self.tr("random"))
        self.seed.setToolTip(self.tr("A fixed seed makes sampled answers repeat exactly"))
        self.cpu_threads = CountSpinBox()
        self.cpu_threads.setRange(0, logical_cores())  # more threads than cores crawl (new-user trial)
        self.cpu_threads.setValue(settings.cpu_threads)
        self.cpu_threads.setSpecialValueText(self.tr("automatic"))
        self.cpu_threads.setToolTip(self.tr("Threads for a model on the CPU, at most this computer's {0} logical "
                                            "cores; automatic uses the cores other programs leave idle, so one "
                                            "busy core does not stall every token").format(logical_cores()))
        self.kept_chat_cache = CountSpinBox()
        self.kept_chat_cache.setRange(0, MAX_KEPT_CHAT_CACHE_MIB)
        self.kept_chat_cache.setSingleStep(512)
        self.kept_chat_cache.setValue(settings.kept_chat_cache_mib)
        self.kept_chat_cache.setSuffix(self.tr(" MiB of RAM"))
        self.kept_chat_cache.setGroupSeparatorShown(True)
        self.kept_chat_cache.setSpecialValueText(self.tr("keep none"))
        self.kept_chat_cache.setToolTip(self.tr("The KV caches of recently used chats are kept in RAM, so going back "
                                                "to one reads only your new message; the oldest are dropped beyond "
                                                "this size"))
        self._build_language_control(language)

    def _build_language_control(self, language: str) -> None:
        """Automatic (the system's language) / English / 한국어; each language is named in itself.
        The catalogues are installed at start-up (app.ui.translations), so a change applies from
        the next start, and the note under the control says so."""
        self.language = QComboBox()
        self.language.addItem(self.tr("Automatic (the system's language)"), "auto")
        self.language.addItem("English", "en")
        self.language.addItem("한국어", "ko")
        self.language.setCurrentIndex(max(self.language.findData(language), 0))
        self.language_note = QLabel(self.tr("A new language applies after Headroom restarts."))
        self.language_note.setObjectName("languageNote")
        self.language_note.setWordWrap(True)

    def _build_appearance_control(self, appearance: str) -> None:
        """System (the desktop's light or dark) / Light / Dark, as LM Studio and Jan offer it: a
        bare X session has no colour scheme to follow, and no way to get dark without it."""
        self.appearance = QComboBox()
        self.appearance.addItem(self.tr("System (the desktop's)"), "system")
        self.appearance.addItem(self.tr("Light"), "light")
        self.appearance.addItem(self.tr("Dark"), "dark")
        self.appearance.setCurrentIndex(max(self.appearance.findData(appearance), 0))
        self.appearance.setToolTip(self.tr("Light or dark window; System follows the desktop's setting"))

    def _build_summary_controls(self, settings: GenerationSettings) -> None:
        """When older turns are folded into the summary, and how many newest turns never are."""
        self.summary_fold_at = CountSpinBox()
        self.summary_fold_at.setRange(*(round(100 * f) for f in SUMMARY_FOLD_AT_RANGE))
        self.summary_fold_at.setSingleStep(5)
        self.summary_fold_at.setValue(round(100 * settings.summary_fold_at))
        self.summary_fold_at.setSuffix(self.tr(" % of the context window"))
        self.summary_fold_at.setToolTip(self.tr(
            "Fold the oldest turns into the summary once the prompt fills this much of its budget; "
            "100 % = only what no longer fits"))
        self.summary_keep_turns = CountSpinBox()
        self.summary_keep_turns.setRange(1, MAX_KEEP_TURNS)
        self.summary_keep_turns.setValue(settings.summary_keep_turns)
        self.summary_keep_turns.set_counted_suffix(lambda n: SettingsDialog.tr(" newest turns", "", n))
        self.summary_keep_turns.setToolTip(self.tr(
            "These turns are never folded into the summary, not by \"Summarize now\" either"))

    def accept(self) -> None:
        """Stays open, with the reason under the backend form, while the backend is unusable."""
        if self.backend_form.isVisibleTo(self) and self.backend_form.problem():
            return
        super().accept()

    def result_backend(self) -> BackendSettings:
        return self.backend_form.result()

    def entered_api_key(self) -> str | None:
        """The API key typed (None: keep the stored one; "": forget it)."""
        return self.backend_form.entered_key()

    def result_settings(self) -> GenerationSettings:
        """The edited copy; settings without a control here keep their values. A number still
        being typed is taken as its spin box settles it at Enter (app.ui.typed_bounds: "-5" puts
        the value from before back, a number above the maximum is the maximum)."""
        for box in self.findChildren(QAbstractSpinBox):  # OK clicked with the field still focused
            box.interpretText()
        return replace(
            self._settings,
            system_prompt=self.system_prompt.toPlainText().strip(),
            max_new_tokens=self.max_new_tokens.value(),
            temperature=self.temperature.value(),
            top_p=self.top_p.value(),
            top_k=self.top_k.value(),
            min_p=self.min_p.value(),
            repetition_penalty=self.repetition_penalty.value(),
            seed=None if self.seed.value() < 0 else self.seed.value(),
            context_tokens=self.context_tokens.value(),
            cpu_threads=self.cpu_threads.value(),
            kept_chat_cache_mib=self.kept_chat_cache.value(),
            summary_fold_at=self.summary_fold_at.value() / 100,
            summary_keep_turns=self.summary_keep_turns.value(),
        ).validated()

    def result_language(self) -> str:
        """"auto", "en" or "ko" (core.settings.LANGUAGES)."""
        return self.language.currentData()

    def result_appearance(self) -> str:
        """"system", "light" or "dark" (core.settings.APPEARANCES)."""
        return self.appearance.currentData()
