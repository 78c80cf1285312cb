"""The memory panel and the status bar's headroom gauge, kept in step with the open chat.

The chat's memory events go to the panel (samples from the monitor, each turn's projected peak,
the loaded model's weights, a remote server's metrics), the panel's breakdown to the compact
gauge, and the gauge's clicks and the View menu's toggle open and close the panel. The what-if
sliders ask the chat for a projection. Nothing here decides anything: the panel and the gauge
draw what they receive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Slot

from app.core.history import DEFAULT_MODEL_CONTEXT
from app.core.kv_precision import KV_8, kv8_supported
from app.core.settings import MAX_NEW_TOKENS

if TYPE_CHECKING:
    from PySide6.QtGui import QAction

    from app.chat.chat import Chat
    from app.ui.headroom_badge import HeadroomBadge
    from app.ui.vram_panel import VramPanel


class MemoryWiring(QObject):
    """Connects `chat` to `panel` (the memory dock) and `badge` (the gauge in the status bar);
    `toggle` is the panel's View-menu action. No signals."""

    def __init__(self, chat: Chat, panel: VramPanel, badge: HeadroomBadge, toggle: QAction):
        super().__init__(panel)
        self._chat, self._panel, self._badge = chat, panel, badge
        self._planned_kv_bits = 0  # the last turn plan's KV bits for this chat; 0 before one
        self._counted = 0  # the open chat's last context count, tokens
        chat.turn_planned.connect(self._on_turn_planned)
        chat.model_changed.connect(self._on_model_changed)
        chat.turn_ended.connect(self._on_turn_ended)
        chat.context_counted.connect(self._on_context_counted)
        chat.kv_precision_changed.connect(self._on_kv_precision_changed)
        chat.backend_changed.connect(self._on_backend_changed)
        chat.monitor.sample_taken.connect(panel.show_sample)
        chat.server_monitor.metrics_sampled.connect(panel.show_server_metrics)
        panel.what_if_changed.connect(self._on_what_if_changed)
        panel.breakdown_changed.connect(badge.set_breakdown)
        toggle.toggled.connect(badge.setChecked)
        badge.clicked.connect(self._on_badge_clicked)

    @Slot(object)
    def _on_turn_planned(self, plan) -> None:
        report = self._chat.report
        self._panel.show_projection(plan.projection, report.weight_bytes if report else 0)
        self._planned_kv_bits = getattr(plan, "kv_bits", 16)
        self._show_kv_dtype()

    @Slot(int, int, int, int)
    def _on_context_counted(self, used: int, _limit: int, _window_turns: int, _folded: int) -> None:
        """The what-if sliders start from the chat as it stands (its prompt so far and the max new
        tokens its next turn gets), not at 1 and 1 (trial 4); a user's own sizes are kept."""
        self._counted = used  # kept for a model that loads after the count (a chat restored at start)
        if self._chat.report is None or self._chat.turns.active:
            return
        self._sync_what_if()

    def _sync_what_if(self) -> None:
        self._panel.what_if.sync_to(max(self._counted, 1), self._chat.models.turn_settings().max_new_tokens)

    @Slot(str)
    def _on_turn_ended(self, status: str) -> None:
        """The turn ran (or stopped, or failed): its KV cache is in the memory sampled now, so its
        projection would count it twice; "Headroom now" from here on. A refused turn's projection
        stays: it shows why."""
        if status != "refused":
            report = self._chat.report
            self._panel.show_projection(None, report.weight_bytes if report else 0)

    @Slot(object)
    def _on_model_changed(self, report) -> None:
        self._panel.show_projection(None, report.weight_bytes if report else 0)
        self._planned_kv_bits = 0
        self._show_kv_dtype()
        if report is not None:
            positions = report.max_positions or DEFAULT_MODEL_CONTEXT
            self._panel.set_what_if_limits(positions, min(MAX_NEW_TOKENS, positions))
            # the chat restored at start was counted while its model loaded (new-user trial: "Context 1 ·
            # New tokens 1" after a restart)
            self._sync_what_if()

    @Slot(str)
    def _on_kv_precision_changed(self, _precision: str) -> None:
        """Another chat opened (a restored one at start too) or the chat's KV precision changed:
        its next turn runs with it, so the panel says it now, not after that turn."""
        self._planned_kv_bits = 0
        self._show_kv_dtype()

    def _show_kv_dtype(self) -> None:
        """The KV dtype of the open chat: the last turn plan's bits, else its chosen precision
        ("8-bit" → int8 where the model supports it; "16-bit" and "auto" start in the compute
        dtype), as the chat bar's KV combo says."""
        report = self._chat.report
        if report is None:
            self._panel.show_kv_dtype("")
            return
        bits = self._planned_kv_bits or (8 if self._chat.kv_precision == KV_8 and kv8_supported(report.attention)
                                         else 16)
        self._panel.show_kv_dtype("int8" if bits == 8 else report.compute_dtype)

    @Slot(object)
    def _on_backend_changed(self, display) -> None:
        """A remote server ("model @ host") or the local model (None) answers from now on."""
        self._panel.show_remote(display)
        self._badge.set_remote(display is not None)

    @Slot(int, int)
    def _on_what_if_changed(self, context_tokens: int, max_new_tokens: int) -> None:
        limit = self._chat.models.context_limit()  # the context setting may have changed since
        if limit is not None and context_tokens + max_new_tokens > limit:
            self._panel.show_what_if_beyond(context_tokens, max_new_tokens, limit)
            return
        projection = self._chat.memory.what_if(context_tokens, max_new_tokens)
        if projection is not None:
            self._panel.show_what_if(projection)

    @Slot()
    def _on_badge_clicked(self) -> None:
        """The status bar's gauge opens or closes the memory panel (the badge follows the
        panel's visibility, whichever way it changed)."""
        self._panel.setVisible(not self._panel.isVisible())
        self._badge.setChecked(self._panel.isVisible())
