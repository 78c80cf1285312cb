"""The refusal dialog of admission control: why a turn was not started, in numbers, and what to
do about it. It decides nothing itself: the caller applies the remedy read from ``choice()``.
"""

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
)

from app.chat.refusal_text import other_remedies, refusal_advice, refusal_reason, remedy_labels
from app.engine.memory.admission import AdmissionDecision, TurnProjection
from app.engine.memory.units import format_bytes

CHOICES = ("trim", "lower_max_new_tokens", "kv8", "chunked", "attach", "override", "cancel")
"""What ``AdmissionDialog.choice()`` can return."""


class AdmissionDialog(QDialog):
    """Shows a refused :class:`AdmissionDecision` and offers its remedies as buttons.

    Signals:
        remedy_chosen(str): one of CHOICES, as the dialog closes ("cancel" for Esc / close).

    ``projection`` (optional, the refused turn's TurnProjection) adds the error bar and the
    token counts. A refusal for positions (prompt + max_new_tokens beyond the context, transformers #530)
    offers no override: the model cannot attend past its positions. A refusal of the message
    alone (reason_kind "message": a long paste) also says that long text can be attached as a file
    and offers "Attach as a file" (choice "attach"; the chat flow acts on it) — only when a shorter
    message can fit (facts "shorten_by"): a question in its place would not fit either when an empty
    message already takes the room (new-user trial 11: 20 of the 6 tokens left).
    """

    remedy_chosen = Signal(str)

    def __init__(self, decision: AdmissionDecision, projection: TurnProjection | None = None,
                 parent=None):
        super().__init__(parent)
        self.setObjectName("admissionDialog")
        self.decision = decision
        self._choice = "cancel"
        self.buttons: dict[str, QPushButton] = {}
        self.value_labels: dict[str, QLabel] = {}
        memory = decision.cause == "memory"
        self.setWindowTitle(self.tr("Not enough memory for this turn") if memory
                            else self.tr("This turn does not fit the context"))
        title = QLabel(self.tr("This turn would run out of memory") if memory
                       else self.tr("This turn does not fit the model's context"))
        title.setObjectName("admissionTitle")
        reason = QLabel(f"{refusal_reason(decision)} {refusal_advice(decision)}".strip())
        reason.setObjectName("admissionReason")
        reason.setWordWrap(True)
        reason.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout = QVBoxLayout(self)
        layout.addWidget(title)
        layout.addLayout(self._memory_numbers(projection) if memory
                         else self._position_numbers(projection))
        layout.addWidget(reason)
        others = other_remedies(decision)
        if others:
            hint = QLabel(self.tr("Also: {0}").format(" ".join(others)))
            hint.setObjectName("admissionHint")
            hint.setWordWrap(True)
            layout.addWidget(hint)
        if self._attach_offered():  # the message alone is too long (new-user trial: a long paste)
            attach = QLabel(self.tr("Long text can go in as an attached file instead: an attached file is "
                                    "searched for the passages each question needs, so only those take room "
                                    "in the context."))
            attach.setObjectName("admissionAttachHint")
            attach.setWordWrap(True)
            layout.addWidget(attach)
        layout.addLayout(self._remedy_buttons(memory))
        self.setMinimumWidth(480)
        self.resize(480, self.heightForWidth(480) if self.hasHeightForWidth() else 0)

    # ----- numbers ----------------------------------------------------------------------------
    def _grid(self, rows: list[tuple[str, str, str]]) -> QGridLayout:
        """rows: (name, value, object name of the value label)."""
        grid = QGridLayout()
        grid.setHorizontalSpacing(12)
        for i, (name, value, key) in enumerate(rows):
            name_label, value_label = QLabel(name), QLabel(value)
            value_label.setObjectName(key)
            value_label.setWordWrap(True)
            value_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            grid.addWidget(name_label, i, 0, Qt.AlignmentFlag.AlignTop)
            grid.addWidget(value_label, i, 1)
            self.value_labels[key] = value_label
        grid.setColumnStretch(1, 1)
        return grid

    def _memory_numbers(self, projection: TurnProjection | None) -> QGridLayout:
        d = self.decision
        needed = format_bytes(d.needed_bytes)
        rows = []
        if projection is not None:
            margin = d.needed_bytes - projection.growth - projection.error_bar_bytes
            needed += "\n" + self.tr("= KV {0} + prefill spike {1} + error bar {2} + margin {3}").format(
                format_bytes(projection.kv_for_turn), format_bytes(projection.prefill_spike),
                format_bytes(projection.error_bar_bytes), format_bytes(margin))
        rows.append((self.tr("Needed"), needed, "admissionNeeded"))
        rows.append((self.tr("Free"), self.tr("{0}  (driver-free; cached memory not counted)").format(
            format_bytes(d.free_bytes)), "admissionFree"))
        rows.append((self.tr("Short by"), format_bytes(d.shortfall_bytes), "admissionShortfall"))
        if projection is not None:
            share = projection.error_bar_bytes / max(projection.growth, 1)
            rows.append((self.tr("Error bar"), self.tr("± {0}  (± {1} of the turn: how far recent projections "
                                                       "were off)").format(
                format_bytes(projection.error_bar_bytes), f"{share:.0%}"), "admissionErrorBar"))
        return self._grid(rows)

    def _position_numbers(self, projection: TurnProjection | None) -> QGridLayout:
        d = self.decision
        rows = []
        if projection is not None:
            b = projection.basis
            prompt = b.resident_tokens + b.prompt_tokens
            total = prompt + b.max_new_tokens
            rows.append((self.tr("Prompt + max new tokens"), self.tr("{0} + {1} = {2} tokens").format(
                f"{prompt:,}", f"{b.max_new_tokens:,}", f"{total:,}"), "admissionTokens"))
        limit = d.context_limit
        rows.append((self.tr("Context limit"), self.tr("{0} tokens", "", limit).format(f"{limit:,}"), "admissionLimit"))
        if projection is not None:
            over = total - d.context_limit
            rows.append((self.tr("Over by"), self.tr("{0} tokens", "", over).format(f"{over:,}"),
                         "admissionShortfall"))
        return self._grid(rows)

    # ----- remedies ---------------------------------------------------------------------------
    def _remedy_buttons(self, memory: bool) -> QVBoxLayout:
        d = self.decision
        column = QVBoxLayout()
        offers = list(remedy_labels(d).items())
        for i, (key, text) in enumerate(offers):
            button = self._button(key, text)
            button.setObjectName("remedyButton")
            button.setDefault(i == 0)
            if key == "kv8":
                button.setToolTip(self.tr("From now on this chat keeps its keys and values in 8 bits: about half "
                                          "the memory of 16-bit, with a small loss of precision. Its cached "
                                          "history is dropped: this answer reads the whole history again once. "
                                          "Change it back in the chat bar (KV cache)."))
            column.addWidget(button)
        if self._attach_offered():
            button = self._button("attach", self.tr("Attach as a file"))
            button.setObjectName("remedyButton")
            button.setDefault(not offers)
            button.setToolTip(self.tr("Take the message out of the chat and attach its text to the next "
                                      "message as a text file; then write your question about it."))
            column.addWidget(button)
        row = QHBoxLayout()
        row.addStretch(1)
        if memory:
            risky = self._button("override", self.tr("Send anyway"))
            risky.setObjectName("riskyButton")
            risky.setAutoDefault(False)
            risky.setToolTip(self.tr("Start the turn although it is projected not to fit. It may fail with "
                                     "an out-of-memory error mid-answer; Headroom then frees the memory and "
                                     "keeps the partial answer."))
            row.addWidget(risky)
        cancel = self._button("cancel", self.tr("Cancel"))
        cancel.setAutoDefault(not offers and not self._attach_offered())
        row.addWidget(cancel)
        column.addLayout(row)
        return column

    def _attach_offered(self) -> bool:
        """Whether the message can go in as a file instead: it alone is too long and a shorter one
        fits (not when even an empty message leaves no room for the question)."""
        return self.decision.reason_kind == "message" and bool(self.decision.facts.get("shorten_by"))

    def _button(self, key: str, text: str) -> QPushButton:
        button = QPushButton(text)
        button.setProperty("choice", key)
        button.clicked.connect(self._on_clicked)
        self.buttons[key] = button
        return button

    def choice(self) -> str:
        """The remedy picked: "trim", "lower_max_new_tokens", "kv8", "chunked", "attach" (the
        message too long: its text as an attached file), "override" or "cancel" (also for Esc or
        closing the window)."""
        return self._choice

    @Slot()
    def _on_clicked(self) -> None:
        self._choice = self.sender().property("choice")
        if self._choice == "cancel":
            self.reject()
        else:
            self.accept()

    def done(self, result: int) -> None:
        if int(getattr(result, "value", result)) == QDialog.DialogCode.Rejected.value:
            self._choice = "cancel"  # Esc and the window's close button reject
        super().done(result)
        self.remedy_chosen.emit(self._choice)
