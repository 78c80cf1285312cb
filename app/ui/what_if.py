"""The "what if" control: drag the context length or max_new_tokens and see the projected peak.

It only asks (``changed``) and shows what it is given (``show_result``); the projection itself is
made by whoever listens (``app.engine.memory.admission.reproject`` on the pending turn's projection).
"""

from PySide6.QtCore import QEvent, Qt, Signal, Slot
from PySide6.QtWidgets import QGridLayout, QLabel, QPushButton, QSlider, QWidget

from app.ui.panel_colours import PanelColours


class WhatIfControl(QWidget):
    """Two sliders, context tokens and max_new_tokens, and a result line.

    Signals:
        changed(int context_tokens, int max_new_tokens): a slider moved (by the user or
            :meth:`set_values`).
        follow_requested(): "Reset" clicked: go back to the pending turn's own sizes.

    ``touched`` is True once the user moved a slider since the last :meth:`sync_to`; a touched
    control is not moved by new projections of the pending turn.
    """

    changed = Signal(int, int)
    follow_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("whatIf")
        self.touched = False
        self.result_state = "none"
        self._shown: tuple[str, str] = ("", "")
        self.context_slider = self._slider(self.tr("Context length (history + prompt), tokens: what if the "
                                                   "conversation held this many tokens when the turn starts"))
        self.new_tokens_slider = self._slider(self.tr("max_new_tokens: what if the answer could run this long"))
        self.context_value = QLabel()
        self.new_tokens_value = QLabel()
        for label in (self.context_value, self.new_tokens_value):
            label.setObjectName("whatIfValue")
            label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            label.setMinimumWidth(64)
        self.result_label = QLabel(self.tr("Load a model to try other sizes."))
        self.result_label.setObjectName("whatIfResult")
        self.result_label.setWordWrap(True)
        self.reset_button = QPushButton(self.tr("Reset"))
        self.reset_button.setToolTip(self.tr("Back to the pending turn's context and max_new_tokens"))
        self.reset_button.setEnabled(False)
        title = QLabel(self.tr("What if…"))
        title.setObjectName("panelSection")
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setVerticalSpacing(2)
        grid.addWidget(title, 0, 0, 1, 2)
        grid.addWidget(self.reset_button, 0, 2, Qt.AlignmentFlag.AlignRight)
        grid.addWidget(QLabel(self.tr("Context")), 1, 0)
        grid.addWidget(self.context_slider, 1, 1)
        grid.addWidget(self.context_value, 1, 2)
        grid.addWidget(QLabel(self.tr("New tokens")), 2, 0)
        grid.addWidget(self.new_tokens_slider, 2, 1)
        grid.addWidget(self.new_tokens_value, 2, 2)
        grid.addWidget(self.result_label, 3, 0, 1, 3)
        grid.setColumnStretch(1, 1)
        for slider in (self.context_slider, self.new_tokens_slider):
            slider.valueChanged.connect(self._on_value_changed)
            slider.sliderPressed.connect(self._on_slider_pressed)
            slider.actionTriggered.connect(self._on_action_triggered)
        self.reset_button.clicked.connect(self._on_reset_clicked)
        self.set_limits(0, 0)

    def _slider(self, tip: str) -> QSlider:
        slider = QSlider(Qt.Orientation.Horizontal)
        slider.setToolTip(tip)
        slider.setMinimum(1)
        return slider

    def set_limits(self, max_context: int, max_new_tokens_max: int) -> None:
        """Slider ranges, tokens; a limit below 1 disables the control."""
        enabled = max_context >= 1 and max_new_tokens_max >= 1
        for slider, top in ((self.context_slider, max_context),
                            (self.new_tokens_slider, max_new_tokens_max)):
            slider.blockSignals(True)
            slider.setMaximum(max(top, 1))
            slider.setPageStep(max(top // 16, 1))
            slider.setSingleStep(max(top // 256, 1))
            slider.blockSignals(False)
            slider.setEnabled(enabled)
        self._show_values()
        if not enabled:
            self.show_result(self.tr("Load a model to try other sizes."), "none")

    def set_values(self, context_tokens: int, max_new_tokens: int) -> None:
        """Move both sliders as the user would (clamped to their ranges; marks the control
        touched); emits ``changed`` once if they moved."""
        self._mark_touched()
        before = self.values()
        self._place(context_tokens, max_new_tokens)
        if self.values() != before:
            self.changed.emit(*self.values())

    def sync_to(self, context_tokens: int, max_new_tokens: int) -> None:
        """Follow the pending turn's sizes without emitting, unless the user has touched it."""
        if self.touched:
            return
        self._place(context_tokens, max_new_tokens)

    def _place(self, context_tokens: int, max_new_tokens: int) -> None:
        """Set both sliders without their valueChanged signals, then show the values."""
        for slider, value in ((self.context_slider, context_tokens),
                              (self.new_tokens_slider, max_new_tokens)):
            slider.blockSignals(True)
            slider.setValue(value)
            slider.blockSignals(False)
        self._show_values()

    def values(self) -> tuple[int, int]:
        return self.context_slider.value(), self.new_tokens_slider.value()

    def show_result(self, text: str, state: str) -> None:
        """The projected peak of the what-if sizes, coloured like the headroom gauge."""
        if (text, state) == self._shown:
            return  # restyling a label costs a style recomputation: only on change
        self._shown = (text, state)
        self.result_label.setText(text)
        self.result_state = state
        self._colour_result()

    def _colour_result(self) -> None:
        colour = PanelColours.from_palette(self.palette()).state_text(
            self.result_state if self.result_state in ("ok", "amber", "red") else "none")
        self.result_label.setStyleSheet(f"color: {colour.name()};")

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt override)
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._colour_result()

    def _show_values(self) -> None:
        enabled = self.context_slider.isEnabled()
        self.context_value.setText(f"{self.context_slider.value():,}" if enabled else "—")
        self.new_tokens_value.setText(f"{self.new_tokens_slider.value():,}" if enabled else "—")

    def _mark_touched(self) -> None:
        self.touched = True
        self.reset_button.setEnabled(True)

    @Slot()
    def _on_slider_pressed(self) -> None:
        self._mark_touched()

    @Slot(int)
    def _on_action_triggered(self, _action: int) -> None:
        self._mark_touched()

    @Slot(int)
    def _on_value_changed(self, _value: int) -> None:
        self._show_values()
        self.changed.emit(*self.values())

    @Slot()
    def _on_reset_clicked(self) -> None:
        self.touched = False
        self.reset_button.setEnabled(False)
        self.follow_requested.emit()
