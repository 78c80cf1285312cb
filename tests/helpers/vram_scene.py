"""A realistic VRAM panel scene for tests and the README screenshot: a Llama-3-8B-shaped NF4 model
on a simulated 12 GiB card — 5.3 GiB of weights, 1.2 GiB of KV cached from earlier turns, and a
pending turn that pastes a ~21.6k-token document (KV 3.9 GiB at the end of the turn).

    QT_QPA_PLATFORM=offscreen python -m tests.helpers.vram_scene resources/vram_panel.png
"""

import dataclasses
import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from transformers import LlamaConfig

from app.engine.memory.admission import TurnProjection, project_turn_peak
from app.engine.memory.calibration import Calibration
from app.engine.memory.kv_layout import kv_cache_bytes
from app.engine.memory.prefill_spike import PrefillModel
from app.engine.memory.probe import FakeProbe
from app.engine.memory.units import GiB, MiB

WEIGHTS = int(5.3 * GiB)
KV_PER_TOKEN = 131_072  # Llama-3-8B, bf16 cache: 32 layers × 2 × 8 KV heads × 128 × 2 B
RESIDENT_TOKENS = 9_830  # 1.2 GiB of KV
PROMPT_TOKENS = 21_606  # resident + prompt + 512 new = 31,948 tokens → 3.9 GiB of KV
MAX_NEW_TOKENS = 512
CONTEXT_LIMIT = 32_768


def llama3_8b_nf4() -> PrefillModel:
    config = LlamaConfig(vocab_size=128_256, hidden_size=4_096, intermediate_size=14_336,
                         num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                         max_position_embeddings=131_072)
    return PrefillModel.from_config(config, 2, quantized_4bit=True)


def calibration() -> Calibration:
    """As after a few measured turns: correction 1.02, recent errors 2-4 % (22-45 MiB)."""
    measured = {"correction": 1.02, "samples": 6, "recent_errors": (0.021, 0.04, 0.033),
                "recent_abs_errors": (22 * MiB, 45 * MiB, 31 * MiB)}
    names = {f.name for f in dataclasses.fields(Calibration)}  # the byte errors are newer
    return Calibration(**{k: v for k, v in measured.items() if k in names})


def project(now_allocated: int, prompt_tokens: int = PROMPT_TOKENS,
            resident_tokens: int = RESIDENT_TOKENS, max_new_tokens: int = MAX_NEW_TOKENS,
            chunk_size: int | None = 1_024) -> TurnProjection:
    return project_turn_peak(llama3_8b_nf4(), calibration(), now_allocated=now_allocated,
                             prompt_tokens=prompt_tokens, max_new_tokens=max_new_tokens,
                             resident_tokens=resident_tokens, chunk_size=chunk_size,
                             full_context_tokens=CONTEXT_LIMIT)


class _Clock:
    def __init__(self, t: float = 1_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def card(clock=None) -> FakeProbe:
    """The simulated 12 GiB card with the model loaded and 1.2 GiB of KV resident."""
    probe = FakeProbe(12 * GiB, allocated=WEIGHTS, other_processes=310 * MiB,
                      context_overhead=470 * MiB, device_name="NVIDIA GeForce RTX 3060 (simulated)",
                      clock=clock or _Clock())
    return probe


def replay(panel, seconds: float = 300.0, hz: float = 4.0):
    """Feed ``panel`` five minutes of a plausible session ending with the pending turn; returns
    (probe, clock, pending projection). Earlier turns: prefill spikes and KV growth, reserved
    ratcheting up, projections shown while each turn was pending."""
    clock = _Clock()
    probe = card(clock)
    panel.show_projection(None, WEIGHTS)
    # (start s, prompt tokens, new tokens): 9,830 tokens resident at the end
    turns = [(40.0, 3_000, 400), (120.0, 4_200, 512), (210.0, 1_418, 300)]
    resident = 0
    steps = int(seconds * hz)
    for i in range(steps):
        t = i / hz
        clock.t = 1_000.0 + t
        for start, prompt, new in turns:
            if start - 8 <= t < start:  # the user is typing: the pending turn is projected
                panel.show_projection(project(probe.sample().allocated, prompt, resident, new, 1_024),
                                      WEIGHTS)
            elif t == start:  # the turn runs: prefill spike, then the KV stays
                panel.show_projection(None, WEIGHTS)
                spike = project(probe.sample().allocated, prompt, resident, new, 1_024).prefill_spike
                grown = kv_cache_bytes(llama3_8b_nf4().layout, resident + prompt + new) \
                    - kv_cache_bytes(llama3_8b_nf4().layout, resident)
                probe.allocate(grown + spike)
            elif t == start + 3:
                probe.release(spike)
                resident += prompt + new
        if t >= seconds - 20:  # the pending turn
            panel.show_projection(project(probe.sample().allocated), WEIGHTS)
        panel.show_sample(probe.sample())
    return probe, clock, project(probe.sample().allocated)


def grab_panel(panel):
    from PySide6.QtCore import QRect

    """The panel's whole body as a pixmap (the scroll area may show only part of it)."""
    body = panel.widget().widget()
    body.resize(body.width(), 2_000)
    body.layout().activate()
    return body.grab(QRect(0, 0, body.width(), panel.diagnostics_button.geometry().bottom() + 9))


def main(out: str, width: int = 420) -> int:
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication, QMainWindow, QTextEdit

    from app.ui.application import load_stylesheet
    from app.ui.vram_panel import VramPanel

    app = QApplication.instance() or QApplication(sys.argv)
    app.setStyleSheet(load_stylesheet())
    window = QMainWindow()
    window.setCentralWidget(QTextEdit())
    panel = VramPanel(window)
    window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, panel)
    panel.set_what_if_limits(CONTEXT_LIMIT, 4_096)
    window.resize(1000, 960)
    window.show()
    window.resizeDocks([panel], [width], Qt.Orientation.Horizontal)
    replay(panel)
    panel.timeline.redraw()
    app.processEvents()
    grab_panel(panel).save(out)
    print(out, panel.breakdown.state)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/vram_panel.png",
                  int(sys.argv[2]) if len(sys.argv) > 2 else 420))
