"""The window's catalogues as fixtures, for the widget tests (tests/ui) and the chat's own texts
(tests/chat): English with its singular forms ("1 turn"), as the app installs it, and Korean.
tests/conftest.py imports both; tests/ui and tests/chat turn English on for each of their tests
(one session translator, which `korean` takes away while it lasts)."""

from importlib import resources

import pytest

# Qt is imported inside the fixtures: tests/conftest.py imports this module, and the GPU machine
# runs the engine's tests without PySide6.


@pytest.fixture(scope="session")
def english_plurals(qapp):
    """The English catalogue the app installs for English (singular forms: "1 turn"), one for the
    session. Not parented to the application, so a test that removes
    its translators keeps it."""
    from PySide6.QtCore import QTranslator

    translator = QTranslator()
    with resources.as_file(resources.files("app.resources").joinpath("translations", "headroom_en.qm")) as path:
        assert translator.load(str(path))
    qapp.installTranslator(translator)
    yield translator
    qapp.removeTranslator(translator)


@pytest.fixture
def korean(qapp, english_plurals):
    """The window's language set to Korean as at start-up (Qt's and Headroom's catalogues, the
    Korean default QLocale); everything is put back afterwards."""
    from PySide6.QtCore import QLocale, QTranslator

    from app.ui.translations import install_translators

    locale, before = QLocale(), set(qapp.findChildren(QTranslator))
    qapp.removeTranslator(english_plurals)
    assert install_translators(qapp, "ko") == "ko"
    yield
    for translator in set(qapp.findChildren(QTranslator)) - before:
        qapp.removeTranslator(translator)
        translator.deleteLater()
    qapp.installTranslator(english_plurals)
    QLocale.setDefault(locale)
