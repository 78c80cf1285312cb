"""The window's language: Korean or English, from the system locale unless Settings says otherwise.

Two catalogues are installed for Korean: Qt's own (`qtbase_ko.qm`, shipped in the PySide6 wheel:
standard buttons, dialogs, context menus) and Headroom's (`resources/translations/headroom_ko.qm`,
compiled from `headroom_ko.ts` with `pyside6-lrelease`; the source strings are English and go
through `tr()` / `QCoreApplication.translate`). Any other locale keeps English, with
`headroom_en.qm` for the singular forms. `python packaging/update_translations.py` regenerates
and compiles the catalogues.
Qt docs: QTranslator, QLocale::uiLanguages, "Internationalization with Qt".
"""

from __future__ import annotations

import logging
from importlib import resources

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication, QLibraryInfo, QLocale, QTranslator

log = logging.getLogger(__name__)

TRANSLATED = ("ko",)  # languages with a catalogue; the setting's values are core.settings.LANGUAGES

# Qt's own strings that qtbase_ko lacks: Qt 6.11's non-native file dialog gave these labels
# mnemonics ("Look in:" became "&Look in:"); the Korean Qt catalogue still has only the old
# sources. Headroom's catalogue carries them; installed after Qt's, it is asked first.
QT_GAPS = (QT_TRANSLATE_NOOP("QFileDialog", "&Look in:"), QT_TRANSLATE_NOOP("QFileDialog", "Files of &type:"))


def file_type_names() -> tuple[str, ...]:
    """The non-native file dialog's Type column for what is not a file (Qt's
    QAbstractFileIconProvider::type: a folder, a drive, a link, anything else), in the window's
    language. qtbase_ko has none of them, so Headroom's catalogue carries them under Qt's context
    and disambiguation (pyside6-lupdate reads the third argument of translate() as the
    disambiguation; QT_TRANSLATE_NOOP3 it does not read). A file's type is its MIME comment,
    which the system's shared-mime-info translates ("일반 텍스트 문서")."""
    translate = QCoreApplication.translate
    return (translate("QAbstractFileIconProvider", "Folder", "All other platforms"),
            translate("QAbstractFileIconProvider", "Drive"),
            translate("QAbstractFileIconProvider", "Shortcut", "All other platforms"),
            translate("QAbstractFileIconProvider", "Unknown"))


def choose_language(setting: str, ui_languages: list[str] | None = None) -> str:
    """The language to show: `setting` when it names one ("en", "ko"), else the first of the
    system's UI languages (QLocale.uiLanguages, e.g. ["ko-KR", "en-US"]) that Headroom
    translates, else "en"."""
    if setting in TRANSLATED or setting == "en":
        return setting
    for tag in ui_languages if ui_languages is not None else QLocale.system().uiLanguages():
        code = tag.replace("_", "-").split("-")[0].lower()
        if code in TRANSLATED:
            return code
        if code == "en":
            return "en"
    return "en"


def install_translators(app: QCoreApplication, setting: str = "auto") -> str:
    """Install the catalogues for the chosen language and make it the default QLocale (month
    names, number grouping); returns its code. Korean: Qt's own qtbase_ko and headroom_ko.
    English: headroom_en, which holds only the singular forms of the plural strings (the sources
    are written in the plural: "%n turns"). The translators are parented to `app`, so they live
    as long as it does."""
    language = choose_language(setting)
    if QLocale().language() != QLocale(language).language():  # an override of the system's
        QLocale.setDefault(QLocale(language))
    if language != "en":
        qt = QTranslator(app)
        if qt.load(f"qtbase_{language}", QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)):
            app.installTranslator(qt)
    ours = QTranslator(app)
    catalogue = resources.files("app.resources").joinpath("translations", f"headroom_{language}.qm")
    # loaded from a file, not from bytes: QTranslator.load(data) keeps a pointer into the bytes,
    # which Python may free while the translator is still in use
    with resources.as_file(catalogue) as path:
        loaded = path.is_file() and ours.load(str(path))
    if loaded:
        app.installTranslator(ours)
    else:
        log.warning("no Headroom catalogue for %s: the window stays in English", language)
    return language
