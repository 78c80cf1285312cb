"""Status bar: model, device, attention path, quantization, tok/s, TTFT, load progress, and
which backend answered the last turn (the local model or a remote server).

While a remote server answers the turns (`show_remote`), the first label names it and the local
model's details (its name, the decode path) step back into its tooltip: they do not say what
answers (trial 14: a remote chat showed the local model's name and "eager decode", and "answered by
remote" was the first label squeezed out at the default width).

Its labels elide (ElidedLabel): a long model path or server name shows cut, with the whole text
in the tooltip, and never makes the window wider than the screen.
"""

import time

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication, QEvent, Qt, Signal
from PySide6.QtWidgets import QProgressBar, QPushButton, QStatusBar, QWidget

from app.engine.memory.units import format_bytes
from app.ui.duration_text import duration_text
from app.ui.elided_label import ElidedLabel
from app.ui.reply_stats_text import decode_path_text

# A load's first steps (freeing the open model, the fit plan, a GGUF's tokenizer) report 0–2 %
# for seconds each: the bar moves (busy) until the loader's fraction says more (trial 5: an
# empty box early in the first load).
BUSY_BELOW = 0.05
MODEL_MIN_WIDTH = 200
"""Pixels the model's name keeps when the bar is narrow: the labels on the right elide first, then
step aside, the least useful first (`_fit_labels`; new-user trial: at 640 px the model's name was a
one-pixel sliver beside "answered by local model")."""


# The loader's fixed fallback reasons (app.engine.loading.placement, loader.inspect), said in the
# window's language (new-user trial: the Korean tooltip said them in English); reasons that carry
# versions or kernel names stay the loader's English.
_FIXED_REASONS = (
    QT_TRANSLATE_NOOP("ModelStatusBar", "no CUDA device: running on the CPU in float32"),
    QT_TRANSLATE_NOOP("ModelStatusBar", "no chat template (a base model?): prompts use a plain User/Assistant "
                                        "transcript"),
    QT_TRANSLATE_NOOP("ModelStatusBar", "folder carries its own quantization_config: honoured as saved"),
    QT_TRANSLATE_NOOP("ModelStatusBar", "flash_attention_2 loaded but Headroom's static-cache FA2 path is not "
                                        "active"),
)


def _reason_text(reason: str) -> str:
    return QCoreApplication.translate("ModelStatusBar", reason) if reason in _FIXED_REASONS else reason


class ModelStatusBar(QStatusBar):
    """Signals: cancel_load_requested()."""

    cancel_load_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.model_label = ElidedLabel(self.tr("No model loaded"), min_width=MODEL_MIN_WIDTH)
        self.model_label.setObjectName("modelLabel")
        self.speed_label = ElidedLabel("")
        self.speed_label.setObjectName("speedLabel")
        self.decode_label = ElidedLabel("")
        self.decode_label.setObjectName("decodeLabel")
        self.backend_label = ElidedLabel("")
        self.backend_label.setObjectName("backendLabel")
        self.progress = QProgressBar()
        self.progress.setRange(0, 100)
        self.progress.setMaximumWidth(180)
        self.progress.setTextVisible(False)
        self.progress.setAccessibleName(self.tr("Model loading progress"))
        self.cancel_button = QPushButton(self.tr("Cancel"))
        self.cancel_button.setToolTip(self.tr("Stop loading this model"))
        self.cancel_button.clicked.connect(self.cancel_load_requested)
        self.addWidget(self.model_label, 1)  # the one normal widget: temporary messages cover it
        self.addPermanentWidget(self.progress)
        self.addPermanentWidget(self.cancel_button)
        self.addPermanentWidget(self.backend_label)
        self.addPermanentWidget(self.decode_label)
        self.addPermanentWidget(self.speed_label)
        self.yielding = (self.backend_label, self.decode_label, self.speed_label)  # the first steps aside first
        self._fitting = False
        self._report = None
        self._remote = None  # "model @ host" while a remote server answers, else None
        self._remote_report = None  # that server's RemoteReport once it has answered
        self._decode_text = ("", "")  # the local decode path's text and tooltip, kept while remote
        self._message = ""  # the temporary message, whole
        self._message_until = 0.0  # time.monotonic() when it goes (0: stays until replaced)
        self.messageChanged.connect(self._on_message_changed)
        self.end_progress()

    def showMessage(self, text: str, timeout: int = 0) -> None:  # noqa: N802 - QStatusBar's name
        """A temporary message: the labels on the right step aside for it (`_fit_labels`), and one
        longer than the room left is elided, the whole of it in the tooltip: Qt paints it across
        the bar, so a long one ran under the decode path and speed labels (new-user trial: "…or
        stop it.answered by local model"). Fitted again when those labels change or the bar is
        resized while it shows (`event`)."""
        self._message = text
        self._message_until = time.monotonic() + timeout / 1000 if timeout > 0 else 0.0
        self._fit_labels(text)
        self._fit_message(timeout)

    def _on_message_changed(self, message: str) -> None:
        if not message:  # the message went: the labels that stepped aside for it come back
            self.setToolTip("")
            self._fit_labels()

    def _fit_message(self, timeout: int) -> None:
        text = self._message
        self.layout().activate()  # the labels' places for their current texts, not the last layout's
        lefts = [w.geometry().left() for w in self.findChildren(QWidget) if w.parent() is self and w.isVisible()
                 and w is not self.model_label and w.geometry().left() > self.model_label.geometry().left()]
        room = (min(lefts) if lefts else self.width()) - self.model_label.geometry().left() - 12
        shown = self.fontMetrics().elidedText(text, Qt.TextElideMode.ElideRight, max(room, 120))
        self.setToolTip(text if shown != text else "")
        if shown != super().currentMessage():
            super().showMessage(shown, timeout)

    def event(self, event) -> bool:
        """After a relayout (a label's text changed: the speed and decode path come after a message
        about the answer) or a resize, the message showing is cut again to the room now left
        (new-user trial, Korean: the withdrawal notice ran under "로컬 모델 답변"), keeping the
        rest of its time."""
        handled = super().event(event)
        if event.type() in (QEvent.Type.LayoutRequest, QEvent.Type.Resize):
            self._fit_labels(self.currentMessage())
        if event.type() in (QEvent.Type.LayoutRequest, QEvent.Type.Resize) and super().currentMessage():
            left_ms = 0
            if self._message_until:
                left_ms = max(1, int((self._message_until - time.monotonic()) * 1000))
            self._fit_message(left_ms)
        return handled

    def _fit_labels(self, message: str = "") -> None:
        """Hide the labels of `yielding` that leave the model's name less than MODEL_MIN_WIDTH (or
        its whole text, when shorter) at their narrowest ("Mmmmmm…"), the first of them first; show
        them again when the bar is wide enough. Their texts stay set: the answers' stats line says
        the same speed and decode path.

        While a temporary `message` shows (it covers the model's name), they step aside, in the
        same order, until it fits whole (new-user trial: at 800 px "Summary: t" ran into
        "answered by local model"), and come back when it goes; those that stay keep their
        places. One longer than the whole bar is then cut with "…" (`_fit_message`)."""
        if self._fitting:
            return
        self._fitting = True
        try:
            spacing = max(self.layout().spacing(), 0) + 6
            fixed = [w for w in self.findChildren(QWidget) if w.parent() is self and not w.isHidden()
                     and w is not self.model_label and w not in self.yielding and w.sizeHint().width() > 0]
            if message:  # measured as `_fit_message` measures its room, the grip among `fixed`
                spacing = max(self.layout().spacing(), 0)
                need = self.layout().contentsMargins().left() + self.fontMetrics().horizontalAdvance(message) + 18
            else:
                need = min(MODEL_MIN_WIDTH, self.model_label.sizeHint().width()) + spacing + 24  # margins, grip
            need += sum(w.sizeHint().width() + spacing for w in fixed)
            wanted = [label for label in self.yielding if label.text()]
            for label in self.yielding:
                if not label.text():
                    label.setVisible(True)  # empty: takes no room
            room = self.width()
            for label in reversed(wanted):  # the most useful first
                # beside a message a label keeps its whole width: the layout gives the message only
                # what the labels leave, so one squeezed to "Mmm…" would still cover it
                hint = label.sizeHint() if message else label.minimumSizeHint()
                width = hint.width() + spacing
                label.setVisible(need + width <= room)
                if need + width > room:
                    room = 0  # the less useful ones step aside with it: none takes its place
                need += width
        finally:
            self._fitting = False

    def currentMessage(self) -> str:  # noqa: N802 - QStatusBar's name
        """The temporary message shown, whole (not as elided), "" when none is."""
        return self._message if super().currentMessage() else ""

    def add_notice(self, widget) -> None:
        """``widget`` (an undo notice) first among the permanent widgets, right of the model's
        name, where temporary messages do not cover it. Qt counts the normal widgets first: the
        model label is index 0, so the first permanent slot is 1 (0 warned "Index out of range")."""
        self.insertPermanentWidget(1, widget)

    def show_progress(self, text: str, fraction: float) -> None:
        """A load runs: `text` (which model, which stage) beside the bar until end_progress;
        a report arriving meanwhile waits (the old model's None would say "No model loaded").
        Below BUSY_BELOW the bar runs busy instead of standing empty."""
        self._loading = True
        self.progress.setVisible(True)
        self.cancel_button.setVisible(True)
        busy = fraction < BUSY_BELOW
        self.progress.setRange(0, 0 if busy else 100)
        self.progress.setValue(0 if busy else int(fraction * 100))
        self.model_label.setText(text)
        self.model_label.setToolTip("")

    def end_progress(self) -> None:
        """No load runs: the bar goes and the label shows the model open now."""
        self._loading = False
        self.progress.setVisible(False)
        self.cancel_button.setVisible(False)
        self._show_report(self._report)

    def show_report(self, report) -> None:
        """report: an engine LoadReport, or None when no model is loaded (shown once no load runs).
        Another model (or none) drops the last answer's speed: it was not this model's."""
        if report is not self._report:
            self.clear_speed()
        self._report = report
        if not self._loading:
            self._show_report(report)

    def _show_report(self, report) -> None:
        if self._remote is not None:
            self._show_remote_label(report)
            return
        if report is None:
            self.model_label.setText(self.tr("No model loaded"))
            self.model_label.setToolTip("")
            return
        parts = [report.name, report.device, report.attention]  # LoadReport.summary(), said here
        if report.quantization != "none":
            parts.append(report.quantization)
        parts += [report.compute_dtype, self.tr("{0} weights").format(format_bytes(report.weight_bytes))]
        if getattr(report, "template_problem", ""):  # set aside as broken: not a base model
            parts.append(self.tr("chat template broken"))
        elif not report.has_chat_template:
            parts.append(self.tr("no chat template"))
        self.model_label.setText(" · ".join(parts))
        # the fixed fallback reasons translated (_FIXED_REASONS), the others the loader's English
        why = "\n".join(f"• {_reason_text(reason)}" for reason in report.fallbacks) or self.tr("• best path active")
        # the kernel of each phase and why (English from the loader, like the fallbacks)
        attention = "".join([report.attention, *(f"\n    {line}" for line in report.attention_phases)])
        self.model_label.setToolTip(self.tr(
            "{0}\nattention: {1}\nquantization: {2}\nweights: {3}, compute: {4}\nloaded in {5} s\n{6}").format(
            report.source, attention, self.tr("none") if report.quantization == "none" else report.quantization,
            report.weight_dtype, report.compute_dtype,
            f"{report.load_seconds:.1f}", why))

    def show_remote(self, display: str | None) -> None:
        """A remote server answers this chat's turns ("model @ host", connect Chat.backend_changed
        here), or the local model does (None). While remote, the first label names the server and
        the decode path (local) is not shown."""
        if display != self._remote:  # another server, or the local model: the last speed was not its
            self._remote_report = None
            self.clear_speed()
        self._remote = display
        text, tip = self._decode_text
        self.decode_label.setText("" if display is not None else text)  # empty takes no room
        self.decode_label.setToolTip("" if display is not None else tip)
        if not self._loading:
            self._show_report(self._report)

    def _show_remote_label(self, local) -> None:
        """The first label while remote: the server and, once it has answered, its context; the
        tooltip says where turns go and what the local model (`local`, a LoadReport or None) is."""
        remote = self._remote_report
        parts = [self.tr("Remote: {0}").format(self._remote)]
        if remote is not None:
            parts.append(self.tr("context {0} tokens").format(f"{remote.context_tokens:,}"))
        self.model_label.setText(" · ".join(parts))
        lines = [self.tr("This chat's turns are answered by {0}.").format(
            remote.base_url if remote is not None else self._remote)]
        if remote is not None:
            lines.append(self.tr("model: {0}").format(remote.name))
            lines.append(self.tr("context: {0} tokens ({1})").format(f"{remote.context_tokens:,}",
                                                                     remote.context_source))
            lines.append(self.tr("tokens counted by {0}: {1}").format(remote.counting.method,
                                                                       remote.counting.detail))
        lines.append(self.tr("Local model (not answering here): {0}").format(local.name) if local is not None
                     else self.tr("No local model loaded"))
        self.model_label.setToolTip("\n".join(lines))

    def show_backend(self, report) -> None:
        """What answers this chat's turns: a LoadReport (local model), a RemoteReport (server),
        or None (nothing loaded yet: no label)."""
        if report is None:
            self.backend_label.setText("")
            self.backend_label.setToolTip("")
        elif getattr(report, "kind", "local") == "remote":
            # the first label names the server (`show_remote`), with these details in its tooltip
            self._remote_report = report if self._remote is not None else None
            self.backend_label.setText("")
            self.backend_label.setToolTip("")
            if not self._loading:
                self._show_report(self._report)
        else:
            self.backend_label.setText(self.tr("answered by local model"))
            self.backend_label.setToolTip(report.source)

    def show_decode_status(self, status) -> None:
        """status: an engine DecodeStatus (eager / compiling / ready / failed, with a reason);
        while compiling, the KV precisions being compiled ("optimizing decode for 8-bit KV…")."""
        names = {16: self.tr("16-bit"), 8: self.tr("8-bit")}
        compiling = " + ".join(names.get(bits, f"{bits}-bit") for bits in status.compiling_kv_bits)
        eager = decode_path_text("eager")  # the names the answers' stats line uses
        text = {"compiling": self.tr("optimizing decode for {0} KV…").format(compiling),
                "ready": decode_path_text("compiled"), "failed": self.tr("{0} (compile failed)").format(eager),
                "eager": eager}.get(status.state, "")
        tip = (self.tr("no CUDA device: decode runs eagerly (CUDA graphs need a GPU)")
               if getattr(status, "cause", "") == "no-cuda" else status.reason)
        self._decode_text = (text, tip)
        if self._remote is None:  # the local decode path says nothing of a remote server's turns
            self.decode_label.setText(text)
            self.decode_label.setToolTip(tip)

    def show_speed(self, ttft_s: float, tokens_per_s: float, new_tokens: int) -> None:
        """The last turn's speed; a turn that produced no token has no TTFT to show, one of a single
        token no decode speed."""
        if new_tokens <= 0:
            self.speed_label.setText(self.tr("no tokens"))
            return
        if tokens_per_s <= 0:  # one token: decode speed is measured after the first (trial 8: "0.0 tok/s")
            self.speed_label.setText(self.tr("TTFT {0} · {1} tokens", "", new_tokens).format(
                duration_text(ttft_s), f"{new_tokens:,}"))
            return
        self.speed_label.setText(self.tr("TTFT {0} · {1} tok/s · {2} tokens", "", new_tokens).format(
            duration_text(ttft_s), f"{tokens_per_s:.1f}", f"{new_tokens:,}"))

    def clear_speed(self) -> None:
        """The chat shown has no answer with stats: no speed shown."""
        self.speed_label.setText("")
