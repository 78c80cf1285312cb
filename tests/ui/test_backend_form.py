"""The backend chooser in the settings dialog, and the server's view in the memory panel."""

from PySide6.QtWidgets import QDialog

from app.core.backend_settings import LOCAL, REMOTE, BackendSettings, RemoteSettings
from app.core.settings import GenerationSettings
from app.engine.remote.server_metrics import metrics_from_text
from app.ui.settings_dialog import SettingsDialog
from app.ui.vram_panel import VramPanel


def test_remote_backend_is_chosen_and_an_unusable_one_is_explained(qtbot):
    dialog = SettingsDialog(GenerationSettings(), backend=BackendSettings(LOCAL))
    qtbot.addWidget(dialog)
    form = dialog.backend_form
    assert not form.base_url.isEnabled()  # local: the server fields are off
    form.kind.setCurrentIndex(form.kind.findData(REMOTE))
    assert form.base_url.isEnabled() and not form.forget_key.isVisibleTo(dialog)
    form.base_url.setText("gpu-box:8000")
    form.model.setText("meta-llama/Llama-3.1-8B-Instruct")
    dialog.show()
    dialog.accept()
    assert dialog.isVisible() and dialog.result() != QDialog.DialogCode.Accepted
    assert form.problem_label.text() == ("The server URL gpu-box:8000 is not an http(s) URL such as "
                                         "http://gpu-box:8000/v1.")
    # a key in the URL (trial 14: it reached settings.json and the log, and went out as Basic auth)
    form.base_url.setText("http://bob:sk-URLSECRET@gpu-box:8000/v1")
    dialog.accept()
    assert dialog.isVisible() and dialog.result() != QDialog.DialogCode.Accepted
    assert form.problem_label.text() == ("The server URL holds a name or password before “@”. Put the key in the "
                                         "API key field instead.")
    form.base_url.setText(" http://gpu-box:8000/v1 ")
    form.api_key.setText("sk-abc")
    dialog.accept()
    assert dialog.result() == QDialog.DialogCode.Accepted and form.problem_label.text() == ""
    assert dialog.result_backend() == BackendSettings(
        REMOTE, RemoteSettings("http://gpu-box:8000/v1", "meta-llama/Llama-3.1-8B-Instruct"))
    assert dialog.entered_api_key() == "sk-abc"


def test_a_stored_key_is_never_shown_and_can_be_forgotten(qtbot):
    backend = BackendSettings(REMOTE, RemoteSettings("http://gpu-box:8000/v1", "m"))
    dialog = SettingsDialog(GenerationSettings(), backend=backend, key_stored=True)
    qtbot.addWidget(dialog)
    form = dialog.backend_form
    assert form.api_key.text() == "" and form.api_key.placeholderText() == "Stored — type to replace"
    assert dialog.entered_api_key() is None  # untouched: keep it
    form.forget_key.setChecked(True)
    assert dialog.entered_api_key() == ""


def test_the_memory_panel_shows_what_the_server_reports(qtbot):
    panel = VramPanel()
    qtbot.addWidget(panel)
    assert not panel.server.isVisibleTo(panel)
    panel.show_remote("Llama-3.1-8B-Instruct @ gpu-box:8000")
    assert panel.server.isVisibleTo(panel)
    assert panel.server.title.text() == "<b>Remote server</b> · Llama-3.1-8B-Instruct @ gpu-box:8000"
    panel.show_server_metrics(metrics_from_text(
        'vllm:kv_cache_usage_perc{engine="0"} 0.375\nvllm:num_requests_running 3\nvllm:num_requests_waiting 4\n'))
    assert panel.server.status_text() == "KV cache 37.5% in use (vllm:kv_cache_usage_perc) · 3 running · 4 waiting"
    assert panel.server.kv_bar.value() == 375 and panel.server.kv_bar.isVisibleTo(panel)
    panel.show_server_metrics(metrics_from_text(None))
    assert panel.server.status_text() == "The server reports no memory figures (it has no /metrics endpoint)."
    assert not panel.server.kv_bar.isVisibleTo(panel)
    panel.show_remote(None)
    assert not panel.server.isVisibleTo(panel)
