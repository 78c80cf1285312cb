"""Help → About Headroom: versions, CUDA, the active attention path, logs, licences."""

from dataclasses import replace

import torch
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QLabel

from app.engine.loading.environment import read_environment
from app.engine.loading.loader import LoadReport
from app.ui.about_dialog import AboutDialog, attention_text
from app.ui.application import load_stylesheet

REPORT = LoadReport(name="SmolLM2-135M-Instruct", source="/models/smollm2", device="cpu",
                    attention="sdpa+gqa-packed", quantization="none", weight_dtype="float32",
                    compute_dtype="float32", weight_bytes=538_060_288, max_positions=8192,
                    has_chat_template=True, load_seconds=0.8, fallbacks=())


def labels(dialog):
    return [label.text() for label in dialog.findChildren(QLabel, "aboutValue")]


def test_about_lists_versions_attention_logs_and_licences(qtbot, qapp, tmp_path):
    qapp.setStyleSheet(load_stylesheet())  # as the app shows it (for the screenshot)
    env = read_environment()
    dialog = AboutDialog(env, REPORT, tmp_path / "logs")
    qtbot.addWidget(dialog)
    rows = dict(dialog.rows)
    assert rows["Headroom"] == "0.1.0"
    assert rows["PyTorch"] == torch.__version__
    assert rows["transformers"] == env.transformers and rows["transformers"][0].isdigit()
    assert rows["PySide6"].startswith(env.pyside6 + " (Qt 6.")
    assert rows["bitsandbytes"] == (env.bitsandbytes or "not installed")
    assert rows["CUDA"] == env.cuda_summary()
    assert rows["Attention"] == "sdpa+gqa-packed (SmolLM2-135M-Instruct on cpu, float32)"
    assert rows["Logs"] == str(tmp_path / "logs")
    assert dict(dialog.licence_rows) == {
        "Headroom": "Apache-2.0", "SmolLM2-135M-Instruct": "Apache-2.0",
        "PySide6 / Qt for Python": "LGPL-3.0", "PyTorch": "BSD-3-Clause",
        "transformers": "Apache-2.0", "bitsandbytes": "MIT"}
    # every row is on screen (the version is in the title rather than in a row)
    assert labels(dialog) == [v for k, v in dialog.rows if k != "Headroom"] + [v for _, v in dialog.licence_rows]
    assert "0.1.0" in dialog.findChild(QLabel, "aboutTitle").text()
    dialog.show()
    assert dialog.grab().save("/tmp/headroom-about.png")
    qtbot.mouseClick(dialog.copy_button, Qt.MouseButton.LeftButton)
    copied = QGuiApplication.clipboard().text()
    assert copied == dialog.details_text()
    assert f"PyTorch: {torch.__version__}" in copied and "Attention: sdpa+gqa-packed" in copied
    assert dialog.copy_button.text() == "Copied"


def test_attention_text_names_the_fallback_reason():
    report = replace(REPORT, device="cuda", attention="sdpa", quantization="nf4", compute_dtype="float16",
                     fallbacks=("compute capability 7.5 < 8.0: fp16, not bf16",
                                "flash_attn not importable: SDPA attention"))
    assert attention_text(report) == ("sdpa (SmolLM2-135M-Instruct on cuda, float16, nf4) — "
                                      "flash_attn not importable: SDPA attention")
    assert attention_text(None) == "no model loaded"


def test_help_menu_opens_about_for_the_loaded_model(qtbot, make_window, tiny_model_dir):
    window = make_window()
    with qtbot.waitSignal(window.model_ready, timeout=60000):
        window.open_model(tiny_model_dir)
    [help_menu] = [a.menu() for a in window.menuBar().actions() if a.text() == "&Help"]
    [about] = [a for a in help_menu.actions() if a.text().replace("&", "") == "About Headroom"]
    about.trigger()
    dialog = window.about_dialog
    qtbot.waitUntil(dialog.isVisible, timeout=5000)  # open(): the event loop keeps running
    assert dict(dialog.rows)["Attention"].startswith(f"{window.chat.report.attention} (")
    assert window.chat.report.attention in dialog.details_text()
    dialog.close()


def test_what_the_rows_say_is_in_the_windows_language(qtbot, korean):
    """Trial 4: "not installed" and "no CUDA device (…)" stayed English in the Korean window."""
    env = replace(read_environment(), bitsandbytes=None, torch_cuda=None, cuda_available=False, cuda_devices=())
    dialog = AboutDialog(env, REPORT)
    qtbot.addWidget(dialog)
    rows = dict(dialog.rows)
    assert rows["bitsandbytes"] == "설치되지 않음"
    assert rows["CUDA"] == "CUDA 장치 없음 (이 PyTorch는 CPU 전용 빌드입니다)"
    assert rows["PyTorch"] == torch.__version__  # versions stay as they are


def test_the_no_gpu_decode_note_is_in_the_windows_language(qtbot, korean):
    from app.engine.local.compiled_decode import DecodeStatus
    from app.ui.status_bar import ModelStatusBar

    bar = ModelStatusBar()
    qtbot.addWidget(bar)
    bar.show_decode_status(DecodeStatus("eager", "no CUDA device: decode runs eagerly (CUDA graphs need a GPU)",
                                        cause="no-cuda"))
    assert bar.decode_label.toolTip().endswith("CUDA 장치 없음: 디코드는 컴파일되지 않은 채 실행됩니다 "
                                               "(CUDA 그래프에는 GPU가 필요합니다)")
    bar.show_decode_status(DecodeStatus("failed", "compiled decode unavailable, eager fallback (x)"))
    assert bar.decode_label.toolTip().endswith("compiled decode unavailable, eager fallback (x)")  # the engine's
