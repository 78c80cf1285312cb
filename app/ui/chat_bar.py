"""The bar above the composer with what shapes the whole chat (issue 17): its preset, its KV cache
precision (issue 16), its pinned notes and "Summarize now".

While a summary is being written its progress shows here, beside the button that asked for it,
with Stop: the "Earlier in this conversation" block that receives the summary sits at the top of
the transcript, out of view in a long chat (product trial), while this bar is always in view
above the composer. The seconds since it started count up beside it: on a CPU the model takes
one to two minutes to write one (trial 5: 65–120 s with nothing moving but the busy bar).
"""

from PySide6.QtCore import QCoreApplication, QElapsedTimer, Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QSizePolicy,
    QSpacerItem,
    QToolButton,
    QWidget,
)

from app.chat.presets import display_name
from app.core.kv_precision import KV_8, KV_16, KV_AUTO
from app.ui.wrap_row import WrapRow

_MANAGE = "\0manage"  # the combo's last item: not a preset name (names are printable text)


def _group(*parts) -> QWidget:
    """Widgets (and spacer items) side by side, kept together on one line of the bar."""
    group = QWidget()
    row = QHBoxLayout(group)
    row.setContentsMargins(0, 0, 0, 0)
    row.setSpacing(6)
    for part in parts:
        if isinstance(part, QSpacerItem):
            row.addSpacerItem(part)
        else:
            row.addWidget(part)
    return group


def _bar_button(text: str, tooltip: str) -> QToolButton:
    button = QToolButton()
    button.setObjectName("chatBarButton")
    button.setText(text)
    button.setToolTip(tooltip)
    return button


class ChatBar(QWidget):
    """Signals: preset_chosen(str name) — give the chat this preset; presets_requested() — open
    the presets dialog; notes_requested() — open the pinned notes; summarize_requested() — fold
    the older turns into the summary now; cancel_summary_requested() — stop the summary being
    written; kv_precision_chosen(str) — keep this chat's KV cache in "16-bit", "8-bit" or "auto"
    (app.core.kv_precision)."""

    preset_chosen = Signal(str)
    kv_precision_chosen = Signal(str)
    presets_requested = Signal()
    notes_requested = Signal()
    summarize_requested = Signal()
    cancel_summary_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("chatBar")
        self._current = ""
        self._offered: list | None = None  # the presets the combo holds now
        self.notes_button = _bar_button(self.tr("Notes"), self.tr("Pinned notes: kept in every prompt of this chat"))
        self.summarize_button = _bar_button(self.tr("Summarize now"), "")
        self.summarize_button.setEnabled(False)  # until the chat says a turn can be folded (set_foldable)
        self._foldable, self._answering = (0, 0, 0), False
        self.summary_stop_button = _bar_button(
            self.tr("Stop"), self.tr("Stop writing the summary; the turns stay in the window for now"))
        self.summary_busy = QProgressBar()
        self.summary_busy.setObjectName("chatBarBusy")
        self.summary_busy.setRange(0, 0)  # indeterminate: a summary's length is not known ahead
        self.summary_busy.setTextVisible(False)
        self.summary_busy.setAccessibleName(self.tr("Summarizing earlier turns…"))
        self.summary_busy_label = QLabel()
        self.summary_busy_label.setObjectName("chatBarBusyLabel")
        self.summary_busy_label.setToolTip(self.tr("The model writes the summary: on a CPU this takes a minute "
                                                   "or two, on a GPU seconds."))
        self._summary_clock = QElapsedTimer()
        self._summary_offset_ms = 0  # how long the summary had run when this chat was opened again
        self._summary_ticks = QTimer(self)
        self._summary_ticks.setInterval(1000)
        self._summary_ticks.timeout.connect(self._show_summary_seconds)
        em = self.fontMetrics().averageCharWidth()
        self.summary_busy.setFixedSize(8 * em, max(em // 2, 4))
        # the progress text's slot: the text plus this pad, as wide as the longest text (see
        # _summary_text_width); the pad gives way first where the bar is too narrow for both
        self._summary_pad = QSpacerItem(0, 0, QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        self._summary_slot = self._summary_text_width()
        self.preset_combo = QComboBox()
        self.preset_combo.setObjectName("presetCombo")
        self.preset_combo.setAccessibleName(self.tr("Preset"))
        self.preset_combo.setToolTip(self.tr("A preset sets this chat's system prompt and sampling"))
        self.preset_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.preset_combo.setMinimumContentsLength(12)
        label = QLabel(self.tr("Preset"))
        label.setBuddy(self.preset_combo)
        self.kv_combo = QComboBox()
        self.kv_combo.setObjectName("kvPrecisionCombo")
        self.kv_combo.setAccessibleName(self.tr("KV cache"))
        self._kv_tip = self.tr(
            "How this chat keeps its KV cache (the model's memory of the conversation). 8-bit takes about half "
            "the memory of 16-bit, so about twice the context fits, with a small loss of precision; auto uses "
            "8-bit only when a turn would not fit in 16-bit. A change drops the cache: the next answer reads "
            "the whole history again once.")
        self.kv_combo.setToolTip(self._kv_tip)
        for text, value in ((self.tr("16-bit"), KV_16), (self.tr("8-bit"), KV_8), (self.tr("auto"), KV_AUTO)):
            self.kv_combo.addItem(text, value)
        kv_label = QLabel(self.tr("KV cache"))
        kv_label.setBuddy(self.kv_combo)
        # one line when the bar is wide enough, else Notes and Summarize now wrap to a second
        # (and, while a summary is written, a third) line: each control keeps its whole text
        # (trial 9 at 640 px: "No···20", "Su···ow", "Balancec")
        self._layout = WrapRow(self, spacing=12)
        self._layout.setContentsMargins(12, 4, 12, 0)
        self._layout.add_widget(_group(label, self.preset_combo))
        self._layout.add_widget(_group(kv_label, self.kv_combo))
        self._layout.add_widget(self.notes_button, right=True)
        self._summary_group = _group(self.summary_busy, self.summary_busy_label, self._summary_pad,
                                     self.summarize_button, self.summary_stop_button)
        self._layout.add_widget(self._summary_group, right=True)
        self.preset_combo.activated.connect(self._on_preset_activated)
        self.kv_combo.activated.connect(self._on_kv_activated)
        self.notes_button.clicked.connect(self.notes_requested)
        self.summarize_button.clicked.connect(self.summarize_requested)
        self.summary_stop_button.clicked.connect(self.cancel_summary_requested)
        self.set_summarizing(False)

    @Slot(list, str)
    def set_presets(self, presets: list, current: str) -> None:
        """Offer `presets` (Preset objects) with `current` shown ("": the chat's own settings).
        The same presets again (every chat opened) only move the pick: 20,000 took 0.1 s."""
        combo = self.preset_combo
        same = (self._offered is not None and len(presets) == len(self._offered)
                and all(a is b for a, b in zip(presets, self._offered, strict=True)))
        if same and bool(current) == bool(self._current):  # "Custom settings" shown as it was
            combo.blockSignals(True)
            combo.setCurrentIndex(max(combo.findData(current), 0))
            combo.blockSignals(False)
            self._current = current
            return
        self._offered = list(presets)  # held: the objects' identity stands for "unchanged"
        combo.blockSignals(True)
        combo.clear()
        if not current:
            combo.addItem(self.tr("Custom settings"), "")
        for preset in presets:
            combo.addItem(display_name(preset), preset.name)
            if preset.description:
                combo.setItemData(combo.count() - 1, preset.description, Qt.ItemDataRole.ToolTipRole)
        combo.insertSeparator(combo.count())
        combo.addItem(self.tr("Manage presets…"), _MANAGE)
        combo.setCurrentIndex(max(combo.findData(current), 0))
        self._current = current
        combo.blockSignals(False)

    @Slot(int)
    def _on_preset_activated(self, index: int) -> None:
        name = self.preset_combo.itemData(index)
        if name == _MANAGE:
            self.preset_combo.setCurrentIndex(max(self.preset_combo.findData(self._current), 0))
            self.presets_requested.emit()
        elif name and name != self._current:
            self.preset_chosen.emit(name)

    @Slot(str)
    def set_kv_precision(self, precision: str) -> None:
        """Show the open chat's KV cache precision ("16-bit", "8-bit" or "auto")."""
        self.kv_combo.setCurrentIndex(max(self.kv_combo.findData(precision), 0))

    def set_full_precision_bits(self, bits: int) -> None:
        """Name the full-precision entry after the model's compute dtype: 16-bit (bf16 / fp16 on
        a GPU) or 32-bit (float32 on the CPU). The stored choice stays "16-bit" (full precision)."""
        self.kv_combo.setItemText(self.kv_combo.findData(KV_16), self.tr("{bits}-bit").format(bits=bits))

    @Slot(bool)
    def set_kv8_available(self, available: bool) -> None:
        """8-bit needs Headroom's own attention; a model without it keeps 16-bit (said in the tip)."""
        for index in (self.kv_combo.findData(KV_8), self.kv_combo.findData(KV_AUTO)):
            item = self.kv_combo.model().item(index)
            if item is not None:
                item.setEnabled(available)

    @Slot(object)
    def set_remote_backend(self, display: object) -> None:
        """A remote server ("model @ host") answers this chat, or the local model (None): the KV cache
        choice is the local model's, so it is off while a server answers (trial 15: a remote chat
        offered "KV cache 32-bit")."""
        remote = display is not None
        self.kv_combo.setEnabled(not remote)
        self.kv_combo.setToolTip(self.tr("The server keeps its own KV cache: this choice is for the local model.")
                                 if remote else self._kv_tip)

    @Slot(int)
    def _on_kv_activated(self, index: int) -> None:
        self.kv_precision_chosen.emit(self.kv_combo.itemData(index))

    @Slot(str, int)
    def show_notes(self, notes: str, tokens: int) -> None:
        """Say on the Notes button whether there are notes and about how many tokens they take."""
        self.notes_button.setText(self.tr("Notes · ≈{0}").format(f"{tokens:,}") if notes else self.tr("Notes"))
        self.notes_button.setProperty("active", bool(notes))
        self.notes_button.setToolTip(notes or self.tr("Pinned notes: kept in every prompt of this chat"))
        self.notes_button.style().unpolish(self.notes_button)
        self.notes_button.style().polish(self.notes_button)

    @Slot(int, int, int)
    def set_foldable(self, foldable_turns: int, folded_turns: int, keep_turns: int) -> None:
        """"Summarize now" is usable when it has turns to fold (trial 8: it was enabled in an
        empty chat) and no answer is being written (set_answering); its tooltip says why not when
        it is not."""
        self._foldable = (foldable_turns, folded_turns, keep_turns)
        self.summarize_button.setEnabled(foldable_turns > 0 and not self._answering)
        if self._answering:
            tip = self.tr("Wait for the reply to end before summarizing")
        elif foldable_turns > 0:
            tip = self.tr("Fold the older turns into the summary now; the last turns stay as they are "
                          "(Settings: keep the last turns verbatim)")
        elif folded_turns > 0:
            tip = self.tr("The turns before the last %n are already in the summary", "", keep_turns)
        else:
            tip = self.tr("Nothing to summarize yet: the last %n turns always stay as they are "
                          "(Settings: keep the last turns verbatim)", "", keep_turns)
        self.summarize_button.setToolTip(tip)

    @Slot(bool)
    def set_answering(self, answering: bool) -> None:
        """An answer is being written (in any chat: one turn at a time): "Summarize now" waits,
        disabled, as the transcript's Edit buttons do (trial 10: it looked usable and only said so
        in the status bar when clicked)."""
        self._answering = answering
        self.set_foldable(*self._foldable)

    @Slot(bool)
    def set_summarizing(self, summarizing: bool, elapsed_ms: int = 0) -> None:
        """While a summary of this chat is being written "Summarize now" gives way to a busy bar,
        what is happening and Stop. elapsed_ms: how long it has been written already (its chat
        opened again while it runs), counted on from there."""
        self.summarize_button.setVisible(not summarizing)
        for widget in (self.summary_busy, self.summary_busy_label, self.summary_stop_button):
            widget.setVisible(summarizing)
        if summarizing and not self._summary_ticks.isActive():
            self._summary_clock.start()
            self._summary_offset_ms = max(elapsed_ms, 0)
            self._summary_ticks.start()
        elif not summarizing:
            self._summary_ticks.stop()
        self._show_summary_seconds()

    def summary_seconds(self) -> int:
        """Whole seconds since the summary being written started (0 when none is)."""
        if not self._summary_ticks.isActive():
            return 0
        return (self._summary_clock.elapsed() + self._summary_offset_ms) // 1000

    def _summary_text_width(self) -> int:
        """Pixels of the longest progress text of the first ten minutes ("… 9 min 58 s", in this
        language and font; a summary takes one to two minutes on a CPU). The text's slot keeps
        this width so that the Notes button beside it stays put as the seconds count (a trial
        saw it jump left each time a digit was added)."""
        label = QLabel(self._summary_text(9 * 60 + 58))
        label.setFont(self.summary_busy_label.font())
        return max(label.sizeHint().width(), self.summary_busy_label.sizeHint().width())

    def _summary_text(self, seconds: int) -> str:
        if seconds <= 0:
            return self.tr("Summarizing earlier turns…")
        minutes, rest = divmod(seconds, 60)
        count = (QCoreApplication.translate("Duration", "{0} min {1} s").format(minutes, rest) if minutes
                 else QCoreApplication.translate("Duration", "{0} s").format(rest))
        return self.tr("Summarizing earlier turns… {0}").format(count)

    @Slot()
    def _show_summary_seconds(self) -> None:
        self.summary_busy_label.setText(self._summary_text(self.summary_seconds()))
        pad = self._summary_slot - self.summary_busy_label.sizeHint().width()
        self._summary_pad.changeSize(max(pad, 0) if self._summary_ticks.isActive() else 0, 0,
                                     QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        self._summary_group.layout().invalidate()
