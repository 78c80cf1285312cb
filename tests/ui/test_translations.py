"""The window's language (issue 14, item 4): chosen from the system locale unless Settings says
otherwise; Korean installs Qt's catalogue and Headroom's, which is complete, matches the sources
and keeps every placeholder; the main window and the settings dialog then speak Korean.

Set HEADROOM_SCREENSHOT_DIR to keep the Korean screenshots (tests/ui/screenshots/ holds the
committed ones: ko-main-light.png, ko-main-dark.png, ko-settings-light.png, ko-settings-dark.png)."""

import ast
import os
import re
import sys
import time
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path

import pytest
from PySide6.QtCore import QCoreApplication, Qt, QTranslator
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtWidgets import QAbstractButton, QLabel, QStyleFactory

from app.chat.error_text import plain_failure
from app.core.backend_settings import BackendSettings
from app.core.conversation import MessageStatus, ReplyStats, Role
from app.core.settings import GenerationSettings
from app.core.store import ConversationInfo
from app.engine.loading.startup_notices import startup_notices
from app.engine.local.compiled_decode import DecodeStatus
from app.ui.fonts import install_hangul_fallback
from app.ui.settings_dialog import SettingsDialog
from app.ui.theme import stylesheet
from app.ui.translations import choose_language, install_translators
from tests.ui.test_theme import dark_palette

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "packaging"))
import update_translations  # noqa: E402  (packaging/ is not a package)

PLACEHOLDER = re.compile(r"\{\d+\}|%L?n")


@pytest.mark.parametrize(("setting", "system", "expected"), [
    ("auto", ["ko-KR", "en-US"], "ko"),
    ("auto", ["en-GB", "ko-KR"], "en"),
    ("auto", ["de-DE", "ko-KR"], "ko"),   # first language Headroom has
    ("auto", ["fr-FR"], "en"),
    ("auto", ["ko_KR"], "ko"),
    ("en", ["ko-KR"], "en"),
    ("ko", ["en-US"], "ko"),
])
def test_choose_language(setting, system, expected):
    assert choose_language(setting, system) == expected


def test_korean_installs_qt_own_catalogue_and_headrooms(korean):
    # a string from Qt's qtbase_ko catalogue (QPlatformTheme's standard button), and one of ours
    assert QCoreApplication.translate("QPlatformTheme", "Cancel") == "취소"
    assert QCoreApplication.translate("WindowMenus", "&New chat") == "새 채팅(&N)"
    assert QCoreApplication.translate("TokenMeter", "%n turns in window", None, 3) == "창 안의 턴 3개"


def test_english_keeps_the_sources_with_singular_forms(qapp):
    assert QCoreApplication.translate("WindowMenus", "&New chat") == "&New chat"
    assert QCoreApplication.translate("TokenMeter", "%n turns in window", None, 1) == "1 turn in window"
    assert QCoreApplication.translate("TokenMeter", "%n turns in window", None, 2) == "2 turns in window"


# ----- the catalogue ---------------------------------------------------------------------------
def _messages(ts: Path) -> dict[tuple[str, str], list[str]]:
    """(context, source) → translations (one per plural form); "" entries for unfinished ones."""
    found = {}
    for context in ET.parse(ts).getroot().iter("context"):
        name = context.find("name").text
        for message in context.iter("message"):
            translation = message.find("translation")
            forms = [f.text or "" for f in translation.iter("numerusform")] or [translation.text or ""]
            if translation.get("type") in ("unfinished", "obsolete", "vanished"):
                forms = [""]
            found[(name, message.find("source").text)] = forms
    return found


def _catalogue(code: str) -> Path:
    return ROOT / "resources" / "translations" / f"headroom_{code}.ts"


def test_the_korean_catalogue_is_complete_and_keeps_every_placeholder():
    messages = _messages(_catalogue("ko"))
    assert len(messages) > 300
    unfinished = [key for key, forms in messages.items() if not all(f.strip() for f in forms)]
    assert unfinished == []
    for (context, source), forms in messages.items():
        for form in forms:
            assert sorted(PLACEHOLDER.findall(form)) == sorted(PLACEHOLDER.findall(source)), (context, source)
            assert re.search(r"[가-힣]", form) or not re.search(r"[a-z]{3}", source) or \
                source in {"VRAM", "Top-p", "Top-k", "Min-p"}, (context, source)


def test_every_translatable_string_in_the_sources_is_in_the_catalogue(tmp_path):
    """lupdate over app/ui and app/chat into a fresh file finds exactly the catalogue's entries."""
    fresh = tmp_path / "fresh.ts"
    update_translations.lupdate(fresh, "ko_KR", [])
    assert set(_messages(fresh)) == set(_messages(_catalogue("ko")))
    plurals = tmp_path / "plurals.ts"
    update_translations.lupdate(plurals, "en_US", ["-pluralonly"])
    assert set(_messages(plurals)) == set(_messages(_catalogue("en")))
    assert all(len(forms) == 2 and all(forms) for forms in _messages(_catalogue("en")).values())


def test_the_compiled_catalogues_are_up_to_date(tmp_path):
    """The committed .qm is what lrelease makes of the committed .ts (rerun
    packaging/update_translations.py after editing a translation)."""
    for code in ("ko", "en"):
        ts = tmp_path / f"headroom_{code}.ts"
        ts.write_bytes(_catalogue(code).read_bytes())
        shipped = resources.files("app.resources").joinpath("translations", f"headroom_{code}.qm")
        assert update_translations.lrelease(ts).read_bytes() == shipped.read_bytes()


def test_the_code_never_hides_a_string_from_lupdate():
    """lupdate reads literal arguments of tr / translate / QT_TRANSLATE_NOOP only: a wrapper such as
    _tr("text") or a call inside an f-string would never reach the catalogue; and it reads a plural
    only from tr(text, disambiguation, n) (self.tr, or Class.tr for module-level text as in
    app.ui.reply_stats_text), never from translate(context, text, None, n)."""
    for path in update_translations.sources():
        text = (ROOT / path).read_text(encoding="utf-8")
        assert not re.search(r"\b_tr\(\s*[\"']", text), path
        assert not re.search(r"f\"[^\"\n]*\{[^}\n]*\btr(anslate)?\(", text), path
        for call in ast.walk(ast.parse(text)):  # a count in translate() drops or unplurals the string:
            name = getattr(call, "func", None)  # lupdate reads a name there as Qt 4's encoding argument
            if isinstance(call, ast.Call) and getattr(name, "id", getattr(name, "attr", "")) == "translate":
                assert len(call.args) + len(call.keywords) <= 3, (path, call.lineno)


# ----- the window in Korean ---------------------------------------------------------------------
def _hangul_font_ok(widget, family: str) -> bool:
    """The widget's font falls back to a Hangul family, and two syllables draw differently
    (missing glyphs are identical boxes)."""
    def render(text):
        image = QImage(48, 32, QImage.Format.Format_ARGB32)
        image.fill(QColor("white"))
        painter = QPainter(image)
        painter.setFont(widget.font())
        painter.setPen(QColor("black"))
        painter.drawText(image.rect(), Qt.AlignmentFlag.AlignCenter, text)
        painter.end()
        return image

    return family in widget.font().families() and render("채") != render("팅") != render("")


def test_the_main_window_speaks_korean(korean, make_window, qtbot):
    window = make_window()
    assert window.new_chat_action.text() == "새 채팅(&N)"
    assert window.open_action.text() == "모델 열기(&O)…"
    assert window.settings_action.text() == "설정(&S)…"
    assert window.composer.send_button.text() == "보내기"
    assert window.composer.editor.placeholderText().startswith("Headroom에 메시지")
    assert window.sidebar.search_edit.placeholderText() == "대화 검색"
    assert window.sidebar.empty_label.text().startswith("아직 대화가 없습니다")
    assert window.status.model_label.text() == "불러온 모델 없음"
    qtbot.waitUntil(lambda: window.vram_panel.breakdown is not None, timeout=5000)
    assert window.vram_panel.windowTitle() in ("VRAM", "메모리 — RSS / 시스템 메모리")
    assert window.vram_panel.legend.name_text("free") in ("여유", "사용 가능")
    window.token_meter.set_counts(812, 1536, 4, 3)
    assert window.token_meter.text() == "컨텍스트 812 / 1,536 토큰 · 창 안의 턴 4개 · 3개 요약으로 접힘"


def test_conversion_stages_are_korean_with_the_percentage_first(korean):
    from app.chat.error_text import load_stage_text

    assert load_stage_text("Converting model.layers.23.mlp.up_proj.weight (69%)") == (
        "변환 중 69%: model.layers.23.mlp.up_proj.weight")
    assert load_stage_text("Waiting for another Headroom converting this file") == (
        "다른 Headroom이 이 파일을 변환하는 중이라 기다리는 중")


def test_plain_errors_and_startup_notices_are_korean(korean, make_window, tmp_path):
    assert plain_failure("the GPU ran out of memory during this reply").line() == (
        "답변하는 도중 모델의 메모리가 부족해졌습니다. 더 짧은 메시지를 보내거나, 설정에서 최대 새 토큰 수를 "
        "낮추거나, 새 채팅을 시작하세요.")
    from app.engine.loading.environment import Environment

    env = Environment("0", "3", "2", None, None, None, torch_cuda=None, cuda_available=False)
    window = make_window()
    (notice,) = startup_notices(env)
    assert window.help_menu.notice_text(notice).startswith("NVIDIA GPU를 찾지 못했습니다. 대신 Headroom은")
    # trial 6: a broken settings.json was said in English in the Korean window
    from app.core.settings import UnreadSettings, read_settings
    from app.ui.application import unread_settings_text

    assert unread_settings_text(UnreadSettings("nested too deeply", "settings.unreadable-1.json")) == (
        "설정을 읽을 수 없습니다(nested too deeply). 파일은 settings.unreadable-1.json(으)로 보관했고 기본값을 "
        "사용합니다.")
    # broken JSON by where it broke, not in the parser's English; the whole path kept as (new-user trial)
    _settings, note = read_settings(write_broken_settings(tmp_path))
    assert unread_settings_text(note) == (
        f"설정을 읽을 수 없습니다(1행 17열에서 JSON 형식이 올바르지 않음). 파일은 {note.kept_as}(으)로 보관했고 "
        "기본값을 사용합니다.")
    assert note.kept_as.startswith(str(tmp_path)) and "Expecting" not in unread_settings_text(note)
    # a settings file that could not be opened: its reason in Korean too, not the OS's English
    import errno

    folder = tmp_path / "settings.json"
    folder.mkdir()  # a folder where the file belongs: IsADirectoryError, nothing moved aside
    _settings, note = read_settings(folder)
    assert note.error is not None and note.error.errno == errno.EISDIR
    text = unread_settings_text(note)
    assert text.startswith("설정을 읽을 수 없습니다(") and str(folder) in text
    assert "Is a directory" not in text and "directory" not in text
    # a summary verdict with the clauses app.core.history adds: an earlier summary cut, turns that left the history
    from app.chat.error_text import summary_verdict_text

    assert summary_verdict_text("model summary rejected (empty summary); kept the first and last 1 of 2 messages; "
                                "the earlier summary cut to 13 of 16 sentences: history 121 → 77 tokens") == (
        "모델이 쓴 요약을 쓸 수 없어 메시지 2개 중 처음과 마지막 1개의 내용을 남겼습니다 (기록 121 → 77 토큰); "
        "자리를 내려고 이전 요약을 16문장 중 13문장으로 줄였습니다")
    assert summary_verdict_text("empty summary; the folded turns were left out") == (
        "모델이 아무것도 쓰지 않아 이전 요약을 유지했습니다; 요약에 넣으려던 대화는 기록에서 빠졌습니다")
    # a language or appearance that is none of its choices is said too, in the window's language
    from app.ui.application import settings_note_text

    (tmp_path / "choices.json").write_text('{"appearance": "darkk"}', encoding="utf-8")
    assert settings_note_text(read_settings(tmp_path / "choices.json")[1]) == (
        '설정: appearance 값 "darkk"은(는) 고를 수 있는 값이 아니어서 기본값 "system"을(를) 사용합니다.')


def test_korean_screenshots_light_and_dark(korean, make_window, qapp, qtbot):
    """The main window and the settings dialog in Korean, light and dark, with the Hangul font
    fallback the app installs: every button wide enough for its text, Hangul glyphs present."""
    old_style, old_palette, old_sheet, old_font = qapp.style().name(), qapp.palette(), qapp.styleSheet(), qapp.font()
    family = install_hangul_fallback(qapp)
    qapp.setStyle("Fusion")
    try:
        for name, palette in (("light", QStyleFactory.create("Fusion").standardPalette()), ("dark", dark_palette())):
            qapp.setPalette(palette)
            qapp.setStyleSheet(stylesheet(palette))
            window = _korean_window(make_window, qtbot)
            dialog = SettingsDialog(GenerationSettings(), window, BackendSettings(), language="ko")
            qtbot.addWidget(dialog)
            dialog.show()
            qtbot.waitExposed(dialog)
            for widget, shot in ((window, f"ko-main-{name}"), (dialog, f"ko-settings-{name}")):
                assert _hangul_font_ok(widget, family)
                _assert_no_clipped_buttons(widget)
                image = widget.grab().toImage()
                assert not image.isNull() and image.width() >= 300
                folder = os.environ.get("HEADROOM_SCREENSHOT_DIR")
                if folder:
                    image.save(str(Path(folder) / f"{shot}.png"))
            assert dialog.language.currentText() == "한국어"
            assert dialog.windowTitle() == "설정"  # the menu's word, not "생성 설정" (new-user trial)
            assert dialog.language_note.text() == "새 언어는 Headroom을 다시 시작한 뒤 적용됩니다."
            dialog.close()
            window.close()
    finally:
        qapp.setStyle(old_style)
        qapp.setPalette(old_palette)
        qapp.setStyleSheet(old_sheet)
        qapp.setFont(old_font)


def _korean_window(make_window, qtbot):
    window = make_window()
    window.resize(1100, 720)
    now = time.time()
    window.sidebar.set_conversations([ConversationInfo(1, "KV 캐시 질문", now, now, 4),
                                      ConversationInfo(2, "GPU 메모리", now - 90_000, now - 90_000, 2)], 1, now)
    view = window.chat_view
    view.add_message(Role.USER, "8 GiB GPU에서 7B 모델의 KV 캐시는 얼마나 차지하나요?")
    view.add_message(Role.ASSISTANT, "컨텍스트 4,096 토큰이면 약 **0.5 GiB**입니다.\n\n```python\n"
                                     "kv = 2 * layers * kv_heads * head_dim * tokens * 2\n```")
    view.add_message(Role.USER, "32k 토큰이면요?")
    view.add_message(Role.ASSISTANT, "약 4 GiB로 늘어나", MessageStatus.STOPPED)
    # trial 5: the decode path said "eager-static" in English under the answer
    view.show_reply_stats(ReplyStats(40, 40, 0, 12, 0.26, 10.4, "eager-static (8-bit KV step not compiled yet)",
                                     "bfloat16", "cpu"))
    view.add_notice(plain_failure("no model is loaded").line(), "error")
    window.token_meter.set_counts(812, 1536, 4, 3)
    window.status.show_speed(0.26, 10.4, 42)
    window.status.show_decode_status(DecodeStatus("eager", "not warmed up yet"))
    qtbot.waitUntil(lambda: window.vram_panel.breakdown is not None, timeout=5000)
    qtbot.wait(400)  # the transcript lays its bubbles out after the show
    return window


def _assert_no_clipped_buttons(top):
    """Every visible button is at least as wide as its text needs, and no one-line label is cut."""
    for button in top.findChildren(QAbstractButton):
        if button.isVisible() and button.text():
            assert button.width() >= button.minimumSizeHint().width(), button.text()
    for label in top.findChildren(QLabel):
        if label.isVisible() and label.text() and not label.wordWrap() and "<" not in label.text():
            needed = label.fontMetrics().horizontalAdvance(label.text().split("\n")[0])
            assert label.contentsRect().width() >= needed or label.objectName() == "modelLabel", label.text()


def test_install_translators_for_english_installs_only_the_plural_catalogue(qapp):
    before = set(qapp.findChildren(QTranslator))
    try:
        assert install_translators(qapp, "en") == "en"
        added = set(qapp.findChildren(QTranslator)) - before
        assert len(added) == 1
        assert QCoreApplication.translate("QPlatformTheme", "Cancel") == "Cancel"
    finally:
        for translator in set(qapp.findChildren(QTranslator)) - before:
            qapp.removeTranslator(translator)


@pytest.mark.parametrize("env", [
    dict(torch_cuda=None, cuda_available=False),
    dict(torch_cuda=None, cuda_available=False, nvidia_gpus=("RTX 4090",)),
    dict(torch_cuda="12.4", cuda_available=False, nvidia_gpus=("RTX 4090",), driver_version="470.1"),
    dict(torch_cuda="12.4", cuda_available=False, nvidia_gpus=("RTX 4090",), driver_version="550.1"),
    dict(torch_cuda="12.4", cuda_available=True, cuda_devices=("RTX 4090",), bitsandbytes_problem="missing"),
    dict(torch_cuda="12.4", cuda_available=True, cuda_devices=("RTX 4090",), bitsandbytes="0.49",
         bitsandbytes_problem="no GPU kernels"),
])
def test_startup_notices_in_english_say_exactly_the_engines_text(env, make_window):
    from app.engine.loading.environment import Environment

    window = make_window()
    fields = dict(headroom="0", python="3", torch="2", transformers=None, pyside6=None, bitsandbytes=None) | env
    (notice,) = startup_notices(Environment(**fields))
    assert window.help_menu.notice_text(notice) == notice.text


def test_korean_file_dialog_labels_that_qtbase_ko_lacks(korean):
    from PySide6.QtWidgets import QFileDialog, QLabel

    dialog = QFileDialog(None, "Open", "", "Text (*.txt)")
    dialog.setOption(QFileDialog.Option.DontUseNativeDialog, True)  # Qt's own, as on most Linux desktops
    labels = {label.objectName(): label.text() for label in dialog.findChildren(QLabel)}
    assert labels["lookInLabel"] == "다음에서 찾기(&L):"  # Qt 6.11's "&Look in:" (qtbase_ko has "Look in:")
    assert labels["fileTypeLabel"] == "파일 형식(&T):"
    assert labels["fileNameLabel"] == "파일 이름(&N):"  # this one from qtbase_ko itself
    dialog.deleteLater()


def test_korean_file_dialog_type_column_is_korean(qtbot, korean, tmp_path):
    """Product trial: the Korean file dialog's Type column said "Folder". Qt's
    QAbstractFileIconProvider::type strings (context and disambiguation as Qt's) come from
    Headroom's catalogue, qtbase_ko lacking them; a .txt file's type is its MIME comment, which
    the system's shared-mime-info translates. The list is grabbed."""
    from PySide6.QtCore import QMimeDatabase
    from PySide6.QtWidgets import QApplication, QFileDialog, QFileSystemModel, QTreeView

    from app.ui.fonts import install_hangul_fallback
    from app.ui.translations import file_type_names

    assert file_type_names() == ("폴더", "드라이브", "바로 가기", "알 수 없음")
    (tmp_path / "notes").mkdir()
    (tmp_path / "readme.txt").write_text("hello", encoding="utf-8")
    install_hangul_fallback(QApplication.instance())
    dialog = QFileDialog(None, "Open", str(tmp_path), "")
    dialog.setOption(QFileDialog.Option.DontUseNativeDialog, True)  # Qt's own, as on most Linux desktops
    dialog.setViewMode(QFileDialog.ViewMode.Detail)
    qtbot.addWidget(dialog)
    dialog.resize(720, 360)
    dialog.show()
    model = dialog.findChild(QFileSystemModel)
    root = model.index(str(tmp_path))
    qtbot.waitUntil(lambda: model.rowCount(root) == 2, timeout=5000)
    types = {model.fileName(model.index(row, 0, root)): model.type(model.index(row, 0, root)) for row in range(2)}
    assert types["notes"] == "폴더"
    if QMimeDatabase().mimeTypeForName("text/plain").comment() != "text/plain":  # a system MIME database
        assert types["readme.txt"] == "일반 텍스트 문서"
    assert model.headerData(2, Qt.Orientation.Horizontal) == "형식"
    qtbot.wait(100)
    folder = Path(os.environ.get("HEADROOM_SCREENSHOT_DIR") or tmp_path)
    dialog.findChild(QTreeView).window().grab().save(str(folder / "ko-file-dialog-types.png"))


@pytest.mark.parametrize("palette", ["light", "dark"])
def test_korean_file_dialog_sizes_and_dates_are_korean(qtbot, qapp, korean, tmp_path, palette):
    """Trial 5: Qt's file dialog Size column said "118 bytes" in Korean. QFileSystemModel writes
    sizes and dates with QLocale::system() (English or C here), not with a translation; the
    pickers' dialogs write them with the window's QLocale (app.ui.file_dialog_locale). The
    dialog is opened the way the window opens it (file_pickers.open_path, Qt's static function,
    modal) and read and grabbed from a timer while it runs."""
    from PySide6.QtCore import QDateTime, QLocale
    from PySide6.QtWidgets import QWidget

    from app.ui.file_pickers import open_path
    from tests.helpers.file_dialog import read_modal_file_dialog
    from tests.ui.test_theme import PALETTES

    assert QLocale.system().language() != QLocale.Language.Korean  # what the trial's machine had
    (tmp_path / "notes").mkdir()
    (tmp_path / "short.txt").write_bytes(b"x" * 118)
    (tmp_path / "long.txt").write_bytes(b"x" * 5000)
    install_hangul_fallback(qapp)
    old = qapp.style().name(), qapp.palette()
    qapp.setStyle(QStyleFactory.create("Fusion"))
    qapp.setPalette(PALETTES[palette]())
    window = QWidget()
    qtbot.addWidget(window)
    window.show()
    seen = {}

    class Folders:  # the chat's FileFolders, starting in tmp_path
        start = staticmethod(lambda _kind: tmp_path)
        remember = staticmethod(lambda _kind, _path: None)

    def read(dialog, tree):
        dialog.resize(820, 320)
        model, root = tree.model(), tree.rootIndex()
        if model.rowCount(root) < 3 or "short.txt" not in {model.index(r, 0, root).data() for r in range(3)}:
            return False
        seen.update({model.index(r, 0, root).data(): [model.index(r, c, root).data() for c in (1, 3)]
                     for r in range(model.rowCount(root))})
        metrics = tree.fontMetrics()  # the Korean size and date are not cut off (Qt sizes them for English)
        seen["fits"] = [tree.header().sectionSize(c) > metrics.horizontalAdvance(seen["short.txt"][i])
                        for i, c in enumerate((1, 3))]
        folder = Path(os.environ.get("HEADROOM_SCREENSHOT_DIR") or tmp_path)
        dialog.grab().save(str(folder / f"ko-file-dialog-sizes-{palette}.png"))
        return True

    try:
        assert read_modal_file_dialog(window, lambda: open_path(window, Folders(), "attach", "열기"), read) == ""
    finally:
        qapp.setPalette(old[1])
        qapp.setStyle(old[0])
    stamp = QDateTime.fromSecsSinceEpoch(int((tmp_path / "short.txt").stat().st_mtime))
    assert seen["short.txt"] == ["118 바이트", QLocale().toString(stamp, QLocale.FormatType.ShortFormat)]
    assert seen["long.txt"][0] == "4.88 KiB" and seen["notes"][0] == ""  # a folder has no size, as in Qt
    assert seen["fits"] == [True, True]
    assert "오후" in seen["short.txt"][1] or "오전" in seen["short.txt"][1]


def test_korean_attachment_refusal_reads_as_one_korean_sentence(korean, tmp_path):
    from app.chat.document_refusal import refusal_reason
    from app.engine.documents.extract import extract_file
    from app.engine.documents.source import DocumentError

    blob = tmp_path / "broken.gguf"
    blob.write_bytes(b"\x00\x01" * 100)
    try:
        extract_file(blob)
    except DocumentError as error:
        line = QCoreApplication.translate("Attachments", "Could not attach {0}: {1}").format(
            error.name, refusal_reason(error))
    assert line == "broken.gguf 첨부 실패: 텍스트 파일이 아닙니다(바이너리 데이터인 것 같습니다)"
    try:
        extract_file(blob, max_bytes=100)
    except DocumentError as error:
        assert refusal_reason(error) == "파일 크기가 200 B입니다. 100 B까지 첨부할 수 있습니다"


def test_korean_builtin_presets_have_korean_names_and_descriptions(korean):
    from app.chat.presets import display_description, display_name
    from app.core.presets import BUILTIN_PRESETS

    for preset in BUILTIN_PRESETS:  # every built-in is marked for the catalogue and translated
        assert display_description(preset) != preset.description, preset.name
        assert any("\uac00" <= c <= "\ud7a3" for c in display_name(preset) + display_description(preset))
    assert display_description(BUILTIN_PRESETS[0]) == "기본 설정: 다양하지만 주제를 벗어나지 않습니다."
    assert display_name(BUILTIN_PRESETS[0]) == "균형"


def test_a_file_in_another_encoding_is_refused_in_korean_words_a_person_can_act_on(korean, tmp_path):
    """New-user trial: "UTF-8 텍스트가 아닙니다(cp949인 것 같습니다, 0번째 바이트)": no byte offset, the
    language the file looks like, and what to do."""
    from app.chat.document_refusal import refusal_reason
    from app.engine.documents.source import NOT_UTF8, SINGLE_BYTE, DocumentError

    # what is still refused: text whose encoding cannot be told with confidence (e.g. garbled cp949)
    reasons = [refusal_reason(DocumentError(NOT_UTF8, "회의록.txt", "not UTF-8 text", "cp949", byte=0)),
               refusal_reason(DocumentError(NOT_UTF8, "notes.txt", "not UTF-8 text", SINGLE_BYTE, byte=6))]
    assert reasons == [
        "cp949 인코딩으로 저장된 한국어 텍스트라 UTF-8이 아닙니다. "
        "텍스트 편집기에서 열어 UTF-8로 저장한 뒤 다시 첨부하세요",
        "예전 단일 바이트 인코딩(Latin-1이나 Windows 코드 페이지 등)으로 저장된 텍스트라 UTF-8이 아닙니다. "
        "텍스트 편집기에서 열어 UTF-8로 저장한 뒤 다시 첨부하세요"]


def test_a_file_read_from_an_older_encoding_and_a_paste_attached_as_a_file_are_said_in_korean(korean, qtbot, tmp_path):
    """New-user trial: a cp949 file is read and attached with a line that says so; a long paste
    can be attached as a file: the dialog, its button and the file's name are in Korean."""
    from app.chat.document_refusal import legacy_note
    from app.engine.documents.extract import extract_file
    from app.engine.memory.admission import AdmissionDecision
    from app.ui.admission_dialog import AdmissionDialog

    minutes = tmp_path / "회의록.txt"
    minutes.write_bytes(("안녕하세요, 회의록입니다." * 50).encode("cp949"))
    assert legacy_note(extract_file(minutes)) == ("회의록.txt 파일은 UTF-8이 아니어서 cp949 인코딩의 한국어 텍스트로 "
                                                  "읽었습니다. 글자가 깨져 보이면 UTF-8로 저장한 뒤 다시 첨부하세요.")
    russian = tmp_path / "протокол.txt"
    russian.write_bytes("Протокол собрания: выручка выросла.\n".encode("cp1251") * 20)
    assert legacy_note(extract_file(russian)).startswith(
        "протокол.txt 파일은 UTF-8이 아니어서 cp1251 인코딩의 키릴 문자 텍스트로 읽었습니다.")
    decision = AdmissionDecision(False, "positions", "too long", context_limit=8_192, reason_kind="message",
                                 facts=dict(message=40_020, context=8_192, max_new_tokens=512, summary_reserve=512,
                                            room=7_168, shorten_by=32_852))
    dialog = AdmissionDialog(decision)
    qtbot.addWidget(dialog)
    assert dialog.buttons["attach"].text() == "파일로 첨부"
    assert dialog.findChild(QLabel, "admissionAttachHint").text().startswith("긴 텍스트는 파일로 첨부할 수도 있습니다.")


def write_broken_settings(folder):
    path = folder / "broken" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"generation": {x', encoding="utf-8")  # the parser stops at line 1, column 17
    return path
