"""The context length of one model, as the open-model dialog offers it: "auto" (the largest
context the fit plan says fits here, capped by the model's trained context) or a custom number of
tokens between MIN_USEFUL_CONTEXT and the trained context, with what the plan says beside it.

Max new tokens is reserved out of the context on every turn (app.core.history.TokenBudget), so a
context that leaves less than half of itself beside max new tokens gets a warning here; the value is
not clamped behind the user's back (the turn is refused, and its "Lower max new tokens" remedy keeps
at most a quarter of the context: app.chat.refusal_text.lowered_max_new_tokens).
"""

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QButtonGroup, QHBoxLayout, QLabel, QRadioButton, QVBoxLayout, QWidget

from app.core.settings import AUTO_CONTEXT
from app.engine.memory.context_fit import MIN_USEFUL_CONTEXT
from app.ui.count_spin_box import CountSpinBox

CONTEXT_STEP = 1024  # tokens per spin-box step: the sizes people type (4k, 8k, 32k …)


class ContextChoice(QWidget):
    """Auto or custom context for the selected model.

    Signals:
        changed(int tokens): the user picked auto (AUTO_CONTEXT, 0) or a custom context in tokens.
    """

    changed = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("contextChoice")
        self._fits: int | None = None
        self._trained: int | None = None
        self._default = AUTO_CONTEXT
        self._max_new_tokens = 0  # the chat's max new tokens, for the warning (0: none)
        self.caption = QLabel(self.tr("Context:"))
        self.auto = QRadioButton()
        self.auto.setObjectName("contextAuto")
        self.custom = QRadioButton(self.tr("Custom"))
        self.custom.setObjectName("contextCustom")
        self.tokens = CountSpinBox()
        self.tokens.setObjectName("contextTokens")
        self.tokens.setSingleStep(CONTEXT_STEP)
        self.tokens.set_counted_suffix(lambda n: ContextChoice.tr(" tokens", "", n))
        self.tokens.setGroupSeparatorShown(True)
        self.tokens.setAccessibleName(self.tr("Custom context length in tokens"))
        self.note = QLabel()
        self.note.setObjectName("contextNote")
        self.note.setWordWrap(True)
        group = QButtonGroup(self)
        group.addButton(self.auto)
        group.addButton(self.custom)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        for widget in (self.caption, self.auto, self.custom, self.tokens):
            row.addWidget(widget)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addWidget(self.note)
        self.auto.toggled.connect(self._on_mode_toggled)
        self.tokens.valueChanged.connect(self._on_tokens_changed)
        self.show_model(None, None, AUTO_CONTEXT)

    def value(self) -> int:
        """The chosen context: AUTO_CONTEXT (0) or the custom tokens."""
        return self.tokens.value() if self.custom.isChecked() else AUTO_CONTEXT

    def set_max_new_tokens(self, tokens: int) -> None:
        """The chat's max new tokens (tokens): a context that leaves the conversation less than
        half of itself beside it is warned about."""
        self._max_new_tokens = tokens
        self._show_note()

    def _effective(self) -> int | None:
        """The context the model would run with, tokens (None: not known yet)."""
        if self.custom.isChecked():
            return self.tokens.value()
        if self._default > 0:
            return min(self._default, self._trained) if self._trained else self._default
        return self._fits or self._trained

    def show_model(self, fits: int | None, trained: int | None, chosen: int, default_setting: int = AUTO_CONTEXT,
                   reading: bool = False, fits_kv8: int | None = None) -> None:
        """Show one model without emitting changed. fits_kv8: tokens that fit with an 8-bit KV cache
        (issue 16; None: unknown or not possible for this model). fits: tokens the fit plan says fit here (None:
        unknown); trained: the model's trained context (None: unknown, custom is offered once it
        is); chosen: this model's own setting (AUTO_CONTEXT or tokens); default_setting: the
        Settings dialog's context, which "auto" follows when it is set; reading: the plan is on
        its way."""
        self._fits, self._trained, self._default = fits, trained, default_setting
        self._fits_kv8 = fits_kv8
        for widget in (self.auto, self.custom, self.tokens):
            widget.blockSignals(True)
        if default_setting > 0:
            self.auto.setText(self.tr("As in Settings: {0} tokens", "", default_setting).format(f"{default_setting:,}"))
        elif fits is None:
            self.auto.setText(self.tr("Auto (reading…)") if reading else self.tr("Auto"))
        else:
            self.auto.setText(self.tr("Auto: fits {0} tokens", "", fits).format(f"{fits:,}"))
        known = bool(trained)
        if known:
            self.tokens.setRange(min(MIN_USEFUL_CONTEXT, trained), trained)
        start = chosen if chosen > 0 else (fits or trained or MIN_USEFUL_CONTEXT)
        self.tokens.setValue(start)
        (self.custom if chosen > 0 and known else self.auto).setChecked(True)
        self.custom.setEnabled(known)
        self.tokens.setEnabled(known and self.custom.isChecked())
        for widget in (self.auto, self.custom, self.tokens):
            widget.blockSignals(False)
        self._show_note()

    def _show_note(self) -> None:
        fits, trained = self._fits, self._trained
        if not trained:
            self.note.setText("")
            return
        lines = [self.tr("Trained for {0} tokens.", "", trained).format(f"{trained:,}")]
        if fits is not None:
            lines.append(self.tr("The plan fits {0} here.").format(f"{fits:,}") if fits
                         else self.tr("The plan fits no useful context here."))
            kv8 = getattr(self, "_fits_kv8", None)
            if kv8 and fits < trained and kv8 > fits:
                lines.append(self.tr("With an 8-bit KV cache (chosen per chat) {0} fit.").format(
                    f"{min(kv8, trained):,}"))
        if self.custom.isChecked() and fits is not None and self.tokens.value() > fits:
            lines.append(self.tr("A turn that fills more than {0} tokens will be refused for memory "
                                 "(or sent anyway at your risk).", "", fits).format(f"{fits:,}"))
        context = self._effective()
        if context and self._max_new_tokens * 2 > context:
            lines.append(self.tr("Max new tokens ({0}) leaves the conversation {1} of these {2} tokens: lower it "
                                 "in Settings, or choose a larger context.").format(
                f"{self._max_new_tokens:,}", f"{max(context - self._max_new_tokens, 0):,}", f"{context:,}"))
        self.note.setText(" ".join(lines))

    @Slot(bool)
    def _on_mode_toggled(self, _auto: bool) -> None:
        self.tokens.setEnabled(self.custom.isChecked() and bool(self._trained))
        self._show_note()
        self.changed.emit(self.value())

    @Slot(int)
    def _on_tokens_changed(self, _tokens: int) -> None:
        self._show_note()
        if self.custom.isChecked():
            self.changed.emit(self.value())
