"""The status bar (trial findings of issue 14): long texts are cut with "…" and never widen the
window past the screen; a turn without a token shows no TTFT."""

import pytest
from PySide6.QtWidgets import QApplication, QWidget

LONG_PATH = "/home/user/models/" + "very-long-folder-name/" * 60 + "Llama-3.1-8B-Instruct-Q4_K_M.gguf"


def test_long_texts_are_cut_and_the_window_keeps_its_width(qtbot, make_window):
    window = make_window()
    QApplication.processEvents()
    width, screen = window.width(), window.screen().availableGeometry().width()
    status = window.status
    status.model_label.setText(f"Loading {LONG_PATH}")
    status.backend_label.setText("answered by remote: " + "my-org/" * 40 + "model @ gpu-box:8000")
    status.showMessage("Could not reach the server: " + "connection refused; " * 80, 8000)
    qtbot.wait(50)
    assert window.width() == width
    assert window.minimumSizeHint().width() <= screen and window.minimumWidth() <= screen
    shown = status.model_label.shown_text()
    assert shown.endswith("…") and len(shown) < len(status.model_label.text())
    assert LONG_PATH in status.model_label.toolTip()  # the whole text, one hover away
    assert status.model_label.text() == f"Loading {LONG_PATH}"


def test_a_short_text_is_shown_whole_with_only_its_details_as_tooltip(qtbot, make_window):
    window = make_window()
    window.resize(1200, 700)
    label = window.status.decode_label
    label.setText("eager decode")
    label.setToolTip("CUDA not available")
    qtbot.wait(20)
    assert label.shown_text() == "eager decode" and label.toolTip() == "CUDA not available"


def test_a_turn_without_a_token_shows_no_ttft(make_window):
    window = make_window()
    window.status.show_speed(0.0, 0.0, 0)
    assert window.status.speed_label.text() == "no tokens"
    window.status.show_speed(0.25, 10.04, 12)
    assert window.status.speed_label.text() == "TTFT 250 ms · 10.0 tok/s · 12 tokens"
    window.status.show_speed(0.536, 0.0, 1)  # one token: no decode speed (trial 8: "0.0 tok/s")
    assert window.status.speed_label.text() == "TTFT 536 ms · 1 token"
    window.chat.reply_started.emit(False)  # the next answer: the last one's speed is not its own
    assert window.status.speed_label.text() == ""


def test_the_last_speed_goes_with_the_model_or_server_that_gave_it(make_window):
    """Re-trial: after another model loaded, or one failed to load, the status bar still said the
    old model's "TTFT 250 ms · 10.0 tok/s"."""
    from app.engine.loading.loader import LoadReport

    report = LoadReport(name="m", source="/models/m", device="cpu", attention="sdpa", quantization="none",
                        weight_dtype="float32", compute_dtype="float32", weight_bytes=1, max_positions=64,
                        has_chat_template=True, load_seconds=1.0, fallbacks=())
    window = make_window()
    status = window.status
    window.chat.model_changed.emit(report)
    status.show_speed(0.25, 10.04, 12)
    window.chat.model_changed.emit(report)  # the same model said again: its speed stays
    assert status.speed_label.text() == "TTFT 250 ms · 10.0 tok/s · 12 tokens"
    window.chat.model_changed.emit(None)  # unloaded, or a failed load freed it
    assert status.speed_label.text() == ""
    status.show_speed(0.25, 10.04, 12)
    status.show_remote("llama3 @ localhost:11434")  # a server answers this chat now
    assert status.speed_label.text() == ""
    status.show_speed(0.5, 20.0, 30)
    status.show_remote("llama3 @ localhost:11434")  # the same server: its own speed stays
    assert status.speed_label.text() == "TTFT 500 ms · 20.0 tok/s · 30 tokens"


def test_the_model_tooltip_names_the_kernel_of_each_attention_phase(qtbot, make_window):
    """Issue 19: which kernel runs prefill and decode, and why, one hover away."""
    from app.engine.loading.loader import LoadReport
    from app.engine.local.fa2_attention import choose_phases

    phases = choose_phases("fa2").lines()
    report = LoadReport(name="llama8b", source="/models/llama8b", device="cuda:0",
                        attention="flash_attention_2 (flash-attn 2.8.3.post2)", quantization="NF4 4-bit + double quant",
                        weight_dtype="bfloat16", compute_dtype="bfloat16", weight_bytes=5_700_000_000,
                        max_positions=131072, has_chat_template=True, load_seconds=4.2, fallbacks=(),
                        attention_phases=phases)
    status = make_window().status
    status.show_report(report)
    assert "flash_attention_2 (flash-attn 2.8.3.post2)" in status.model_label.text()
    tip = status.model_label.toolTip()
    assert f"attention: flash_attention_2 (flash-attn 2.8.3.post2)\n    {phases[0]}\n    {phases[1]}\n" in tip
    assert phases[0].startswith("prefill: FlashAttention-2") and phases[1].startswith("decode: FlashAttention-2")


def test_a_chat_template_set_aside_as_broken_is_said_so_not_as_missing(make_window):
    """New-user trial 13: the status bar said "no chat template", a base model's words."""
    from app.engine.loading.loader import LoadReport

    def report(problem):
        return LoadReport(name="m", source="/models/m", device="cpu", attention="sdpa", quantization="none",
                          weight_dtype="float32", compute_dtype="float32", weight_bytes=1, max_positions=64,
                          has_chat_template=False, load_seconds=1.0, fallbacks=(), template_problem=problem)

    status = make_window().status
    status.show_report(report("TemplateSyntaxError: unexpected '}'"))
    assert status.model_label.text().endswith(" · chat template broken")
    status.show_report(report(""))
    assert status.model_label.text().endswith(" · no chat template")


def test_the_decode_status_names_the_kv_precisions_being_compiled(make_window):
    """Issue 16 meets issue 12: a compile of the 8-bit KV step after a turn is named as such."""
    from app.engine.local.compiled_decode import DecodeStatus

    # no resize + wait here: with them, test_korean_screenshots_light_and_dark later segfaulted
    # in QWidget.grab() when run after tests/workers and tests/chat (a Qt crash, not this code)
    status = make_window().status
    status.show_decode_status(DecodeStatus("compiling", "optimizing decode for 8-bit KV (2048 tokens)",
                                           kv_bits=(16,), compiling_kv_bits=(8,)))
    assert status.decode_label.text() == "optimizing decode for 8-bit KV…"
    assert "optimizing decode for 8-bit KV (2048 tokens)" in status.decode_label.toolTip()
    status.show_decode_status(DecodeStatus("compiling", compiling_kv_bits=(8, 16)))
    assert status.decode_label.text() == "optimizing decode for 8-bit + 16-bit KV…"
    status.show_decode_status(DecodeStatus("ready", "compiled decode for 16-bit and 8-bit KV", kv_bits=(16, 8)))
    assert status.decode_label.text() == "compiled decode"


DECODES = [  # (ReplyStats.decode_path, the DecodeStatus state shown before such a turn)
    ("compiled", "ready"), ("eager-static", "eager"), ("eager", "eager"),
    ("eager-static (8-bit KV step not compiled yet)", "eager")]


def decode_names(status):
    """For each of DECODES: the path's name in an answer's stats line, the status bar's label, and
    the path's name in the stats tooltip."""
    from app.core.conversation import ReplyStats
    from app.engine.local.compiled_decode import DecodeStatus
    from app.ui.reply_stats_text import stats_line, stats_tooltip

    names = []
    for path, state in DECODES:
        stats = ReplyStats(40, 40, 0, 12, 0.25, 10.0, path, "bfloat16", "cpu")
        status.show_decode_status(DecodeStatus(state, "why"))
        decode = next(line for line in stats_tooltip(stats).splitlines() if "10.0" in line)
        names.append((stats_line(stats).split(" · ")[-1], status.decode_label.text(), decode))
    return names


def test_a_decode_path_has_one_name_in_the_answers_and_the_status_bar(make_window):
    """Trial 5: the answer said "eager-static" while the status bar said "eager decode"."""
    names = decode_names(make_window().status)
    assert [line for line, _, _ in names] == ["compiled decode", "eager decode", "eager decode",
                                             "eager decode (8-bit KV step not compiled yet)"]
    assert [bar for _, bar, _ in names] == ["compiled decode", "eager decode", "eager decode", "eager decode"]
    assert [tip for _, _, tip in names] == [  # the tooltip says which KV cache the eager decode wrote
        "Decode: 10.0 tokens/s (compiled decode)", "Decode: 10.0 tokens/s (eager decode, static KV cache)",
        "Decode: 10.0 tokens/s (eager decode, growing KV cache)",
        "Decode: 10.0 tokens/s (eager decode, static KV cache (8-bit KV step not compiled yet))"]


def test_in_korean_the_decode_paths_are_named_in_korean(make_window, korean):
    """A tester: "즉시 실행 디코드" (TensorFlow's word for eager execution) read oddly; the eager
    path is named as the opposite of the compiled one."""
    names = decode_names(make_window().status)
    assert names[0][:2] == ("컴파일된 디코드", "컴파일된 디코드")
    assert names[1][:2] == names[2][:2] == ("컴파일되지 않은 디코드", "컴파일되지 않은 디코드")
    assert names[3][0] == "컴파일되지 않은 디코드 (8비트 KV 단계가 아직 컴파일되지 않음)"
    assert names[1][2] == "디코드: 초당 10.0 토큰 (컴파일되지 않은 디코드, 고정 크기 KV 캐시)"
    for shown in names:
        assert "eager" not in " ".join(shown) and "static" not in " ".join(shown) and "즉시" not in " ".join(shown)


def test_while_a_model_loads_the_status_bar_says_which(qtbot, make_window, tmp_path):
    """New-user trial: the first start showed "Ready" (or "No model loaded") beside a bare bar."""
    from app.engine.loading.loader import LoadReport

    window = make_window()
    window.resize(1000, 700)
    chat, status = window.chat, window.status
    chat.load_progressed.emit("Loading SmolLM2-135M-Instruct.Q4_1.gguf…", 0.0)
    chat.model_changed.emit(None)  # the worker frees the old model first: not "No model loaded"
    assert status.model_label.text() == "Loading SmolLM2-135M-Instruct.Q4_1.gguf…"
    assert status.progress.maximum() == 0  # busy, not an empty box (trial 5)
    chat.load_progressed.emit("Loading SmolLM2-135M-Instruct.Q4_1.gguf… · Reading the GGUF tokenizer", 0.02)
    assert status.progress.maximum() == 0  # 2 % for seconds: still busy
    chat.load_progressed.emit("Loading SmolLM2-135M-Instruct.Q4_1.gguf… · Loading the tokenizer", 0.3)
    qtbot.wait(20)
    assert status.model_label.text() == "Loading SmolLM2-135M-Instruct.Q4_1.gguf… · Loading the tokenizer"
    assert status.progress.isVisible() and status.cancel_button.isVisible()
    assert (status.progress.maximum(), status.progress.value()) == (100, 30)
    status.grab().save(str(tmp_path / "status_loading.png"))
    report = LoadReport(name="SmolLM2-135M-Instruct.Q4_1.gguf", source="/m", device="cpu", attention="sdpa",
                        quantization="none", weight_dtype="float32", compute_dtype="float32", weight_bytes=10 ** 8,
                        max_positions=8192, has_chat_template=True, load_seconds=1.0, fallbacks=())
    chat.model_changed.emit(report)  # adopted; the load ends right after
    assert status.model_label.text().startswith("Loading SmolLM2")
    chat.load_ended.emit()
    assert status.model_label.text().startswith("SmolLM2-135M-Instruct.Q4_1.gguf · cpu · sdpa")
    assert not status.progress.isVisible()


def test_the_loading_line_is_korean_in_korean(qtbot, korean, make_window, tmp_path):
    from pathlib import Path

    from app.chat.models import ModelFlow

    line = ModelFlow._loading_line(Path("/m/SmolLM2-135M-Instruct.Q4_1.gguf"), "Loading the tokenizer")
    assert line == "SmolLM2-135M-Instruct.Q4_1.gguf 불러오는 중… · 토크나이저를 불러오는 중"
    assert ModelFlow._loading_line(Path("/m/tiny"), "Ready") == "tiny 불러오는 중…"
    window = make_window()
    window.resize(1000, 700)
    window.chat.load_progressed.emit(line, 0.3)
    qtbot.wait(20)
    window.status.grab().save(str(tmp_path / "status_loading_ko.png"))


@pytest.mark.parametrize("palette_name", ["light", "dark"])
def test_a_load_says_its_first_phase_at_once_with_a_moving_bar_in_korean(qtbot, qapp, korean, make_window,
                                                                           tmp_path, palette_name):
    """Trial 5: early in the first load the status bar said only "Loading …gguf…" beside an
    empty box, for seconds."""
    import os
    from pathlib import Path

    from app.chat.models import OPENING, ModelFlow
    from app.ui.fonts import install_hangul_fallback
    from tests.helpers.palettes import fusion_palette

    line = ModelFlow._loading_line(Path("/m/SmolLM2-135M-Instruct.Q4_1.gguf"), OPENING)
    assert line == "SmolLM2-135M-Instruct.Q4_1.gguf 불러오는 중… · 모델 파일을 여는 중"
    with fusion_palette(qapp, palette_name):
        install_hangul_fallback(qapp)
        window = make_window()
        window.resize(1000, 700)
        window.show()
        window.chat.load_progressed.emit(line, 0.0)
        status = window.status
        assert status.model_label.text() == line and status.progress.maximum() == 0
        qtbot.wait(120)  # the busy bar moves
        folder = Path(os.environ.get("HEADROOM_SCREENSHOT_DIR") or tmp_path)
        status.grab().save(str(folder / f"ko-status-loading-{palette_name}.png"))


def test_the_backend_is_named_whenever_a_model_is_loaded_restart_included(qtbot, make_fake_window, tmp_path):
    """Trial 9: "answered by local model" showed in a new empty chat (a reply had set it) but not
    after a restart until a reply was written. It names what will answer: shown once a model is
    loaded, in every chat, gone with the model; a remote server's name comes with its first answer."""
    from app.core.backend_settings import REMOTE, BackendSettings, RemoteSettings
    from app.core.conversation import Message, Role
    from app.core.store import Store
    from tests.ui.test_memory_wiring import REPORT

    db = tmp_path / "chats.sqlite3"
    with Store(db) as store:
        cid = store.create_conversation("Before the restart")
        store.append_message(cid, Message(Role.USER, "Hello"))
        store.append_message(cid, Message(Role.ASSISTANT, "Hi!"))
    window = make_fake_window(store_path=db)
    window.sidebar.open_requested.emit(cid)
    window.close()

    again = make_fake_window(store_path=db)  # the restart: the chat comes back, then the model loads
    again.resize(1400, 700)  # room for every label whole
    label = again.status.backend_label
    assert again.chat.conversation_id == cid and label.text() == ""  # no model: nothing answers yet
    again.chat.worker.model_changed.emit(REPORT)
    qtbot.wait(20)
    assert label.shown_text() == "answered by local model" and label.toolTip() == REPORT.source
    again.new_chat_action.trigger()  # a new, empty chat: the same model answers it
    assert label.text() == "answered by local model"
    again.apply_settings(again.chat.settings.generation,
                         BackendSettings(REMOTE, RemoteSettings("http://gpu-box:8000/v1", "llama")))
    assert label.text() == ""  # a server that has not answered yet: its model and context are not known
    again.apply_settings(again.chat.settings.generation, BackendSettings())
    assert label.text() == "answered by local model"
    again.chat.worker.model_changed.emit(None)  # the model went (unloaded, or freed for another)
    assert label.text() == ""


def shown_on_the_right(status) -> list:
    """The status bar's shown widgets right of the model's name (labels that stepped aside for a
    long message are hidden: it may run where they were)."""
    return [w for w in status.findChildren(QWidget) if w.parent() is status and w.isVisible()
            and w is not status.model_label]


def test_a_long_message_stops_short_of_the_labels_on_the_right(qtbot, make_window, tmp_path):
    """New-user trial: a long status line was painted under the decode path and speed labels
    ("…or stop it.answered by local model"); it runs under none of them (they step aside for it,
    trial 9) and one longer than the bar is cut, whole in the tooltip."""
    import os

    window = make_window()
    window.resize(1100, 700)
    window.show()
    status = window.status
    status.backend_label.setText("answered by local model")
    status.decode_label.setText("eager decode")
    status.speed_label.setText("TTFT 8,903 ms · 0.3 tok/s · 3 tokens")
    qtbot.wait(50)
    text = "An answer is still being written in “" + "a long chat title " * 10 + "”; send when it finishes, or stop it."
    status.showMessage(text, 8000)
    qtbot.wait(50)
    shown = super(type(status), status).currentMessage()
    right = min(w.geometry().left() for w in shown_on_the_right(status))
    assert shown.endswith("…") and status.fontMetrics().horizontalAdvance(shown) < right
    assert status.currentMessage() == text and status.toolTip() == text
    window.grab().save(os.path.join(os.environ.get("HEADROOM_SCREENSHOT_DIR", str(tmp_path)), "status-cut.png"))
    status.clearMessage()
    assert status.currentMessage() == "" and status.toolTip() == ""


def test_a_message_is_cut_again_when_the_labels_change_after_it(qtbot, make_window, korean):
    """New-user trial (Korean): the withdrawal notice was shown, then the answer's backend, decode
    path and speed labels filled in and the notice ran under "로컬 모델 답변"."""
    window = make_window()
    window.resize(1100, 700)
    window.show()
    status = window.status
    qtbot.wait(50)
    text = "앞서 보낸 메시지는 답변을 받지 못해 채팅에서 뺐습니다. 그 내용은 메시지 입력란에 다시 넣었습니다. " * 2
    status.showMessage(text, 8000)
    qtbot.wait(50)
    status.backend_label.setText("로컬 모델 답변")
    status.decode_label.setText("컴파일되지 않은 디코드")
    status.speed_label.setText("TTFT 206 ms · 초당 16.5 토큰 · 52 토큰")
    qtbot.wait(100)
    shown = super(type(status), status).currentMessage()
    right = min(w.geometry().left() for w in shown_on_the_right(status))
    assert shown.endswith("…") and status.fontMetrics().horizontalAdvance(shown) < right
    assert status.currentMessage() == text


def test_a_remote_chat_names_its_server_first_and_not_the_local_decode_path(qtbot, make_fake_window):
    """Trial 14: with a remote server answering, the status bar showed the local model's name and
    "eager decode", and "answered by remote" was the first label squeezed out at the default width.
    Now the first label (which keeps its room) names the server, its context once it has answered,
    and the local model only in its tooltip; back on the local backend all of it returns."""
    from app.core.backend_settings import REMOTE, BackendSettings, RemoteSettings
    from app.engine.local.compiled_decode import DecodeStatus
    from app.engine.remote.backend import RemoteReport
    from app.engine.remote.tokens import TokenCounting
    from tests.ui.test_memory_wiring import REPORT

    window = make_fake_window()
    status = window.status
    window.chat.worker.model_changed.emit(REPORT)
    window.chat.decode_status_changed.emit(DecodeStatus("eager", "no CUDA device"))
    qtbot.wait(20)
    local_text = status.model_label.text()
    assert local_text.startswith("SmolLM2-135M-Instruct · cpu") and status.decode_label.text() == "eager decode"

    window.apply_settings(window.chat.settings.generation,
                          BackendSettings(REMOTE, RemoteSettings("http://gpu-box:8000/v1", "llama")))
    assert status.model_label.text() == "Remote: llama @ gpu-box:8000"
    assert status.decode_label.text() == "" and status.backend_label.text() == ""
    assert "Local model (not answering here): SmolLM2-135M-Instruct" in status.model_label.toolTip()
    assert window.headroom_badge.toolTip().startswith("This computer's memory: turns go to the remote server")
    # the KV cache choice is the local model's (trial 15: a remote chat offered "KV cache 32-bit")
    assert not window.chat_bar.kv_combo.isEnabled()
    assert window.chat_bar.kv_combo.toolTip().startswith("The server keeps its own KV cache")
    window.chat.decode_status_changed.emit(DecodeStatus("ready", "compiled"))  # the local model's, meanwhile
    assert status.decode_label.text() == ""

    remote = RemoteReport(name="llama", base_url="http://gpu-box:8000/v1", display="llama @ gpu-box:8000",
                          context_tokens=32768, context_source="server max_model_len",
                          counting=TokenCounting("server /tokenize", "POST /tokenize"), served_models=("llama",),
                          connect_seconds=0.1)
    window.chat.backend_reported.emit(remote)  # its first answer
    window.resize(640, 500)  # narrow: the first label keeps the server's name
    qtbot.wait(20)
    assert status.model_label.text() == "Remote: llama @ gpu-box:8000 · context 32,768 tokens"
    assert status.model_label.shown_text().startswith("Remote: llama")
    tip = status.model_label.toolTip()
    assert "http://gpu-box:8000/v1" in tip and "32,768 tokens (server max_model_len)" in tip
    assert "server /tokenize" in tip and status.backend_label.text() == ""

    window.apply_settings(window.chat.settings.generation, BackendSettings())
    assert status.model_label.text() == local_text
    assert status.decode_label.text() == "compiled decode" and status.backend_label.text() == "answered by local model"
    assert window.headroom_badge.toolTip().startswith("Memory left for the next turn")
    assert window.chat_bar.kv_combo.isEnabled() and window.chat_bar.kv_combo.toolTip().startswith("How this chat")


def test_in_korean_the_models_tooltip_says_the_usual_fallbacks_in_korean(make_window, korean):
    """New-user trial: the Korean tooltip read "양자화: none" and "• no CUDA device: running on the CPU
    in float32". The reasons are the engine's own (a rewording there must reach the translation)."""
    from app.engine.loading.loader import LoadReport
    from app.engine.loading.placement import choose_placement

    cpu = choose_placement(False, None, None, (False, "no CUDA"))
    report = LoadReport(name="m.gguf", source="/m", device="cpu", attention="sdpa", quantization="none",
                        weight_dtype="float32", compute_dtype="float32", weight_bytes=10 ** 8, max_positions=8192,
                        has_chat_template=False, load_seconds=1.0,
                        fallbacks=(*cpu.reasons, "no chat template (a base model?): prompts use a plain "
                                   "User/Assistant transcript", "flash_attn not importable: SDPA attention"))
    status = make_window().status
    status.show_report(report)
    tip = status.model_label.toolTip()
    assert "양자화: 없음" in tip and "• CUDA 장치 없음: CPU에서 float32로 실행" in tip
    assert "• 채팅 템플릿 없음(기본 모델?)" in tip
    assert "• flash_attn not importable: SDPA attention" in tip  # a library's name: the loader's English
    assert "none" not in tip and "running on the CPU" not in tip
