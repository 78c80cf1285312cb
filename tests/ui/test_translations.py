"""The language follows the system unless the setting names one; Korean installs Qt's catalogue."""

import pytest
from PySide6.QtCore import QCoreApplication, QTranslator

from app.ui.translations import choose_language, install_translators


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


def test_korean_installs_qt_own_catalogue(qapp):
    try:
        assert install_translators(qapp, "ko") == "ko"
        # a string from Qt's qtbase_ko catalogue (QPlatformTheme's standard button)
        assert QCoreApplication.translate("QPlatformTheme", "Cancel") == "취소"
    finally:
        for translator in qapp.findChildren(QTranslator):
            qapp.removeTranslator(translator)
            translator.deleteLater()
    assert QCoreApplication.translate("QPlatformTheme", "Cancel") == "Cancel"
