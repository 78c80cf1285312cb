"""The window's file dialogs start where the user last went for that kind of file, never in the
working directory (product trial: a double-clicked app's cwd is meaningless)."""

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog

from app.chat.file_folders import documents_folder
from app.core.last_folders import start_folder
from app.core.settings import load_settings


def test_attach_diagnostics_and_presets_each_start_in_their_last_folder(qtbot, make_window, monkeypatch, tmp_path):
    window = make_window()
    first = start_folder("", documents_folder(), Path.home())  # nothing remembered yet: Documents
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("alpha", encoding="utf-8")
    opened = []
    monkeypatch.setattr(QFileDialog, "getOpenFileNames",
                        lambda _p, _t, start, _f: (opened.append(start), ([str(notes / "a.txt")], ""))[1])
    for _ in range(2):
        qtbot.mouseClick(window.attachment_bar.attach_button, Qt.MouseButton.LeftButton)
    assert opened == [str(first), str(notes)]
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *_a: ([], ""))  # cancelled: remembered as it was
    qtbot.mouseClick(window.attachment_bar.attach_button, Qt.MouseButton.LeftButton)
    assert window.chat.settings.last_folders.attach == str(notes)

    reports = tmp_path / "reports"
    reports.mkdir()
    saved = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda _p, _t, proposed, _f="": (
        saved.append(Path(proposed)), (str(reports / "d.md"), ""))[1])
    window.dialogs.diagnostics()
    window.dialogs.diagnostics()
    assert saved == [first / "headroom-diagnostics.md", reports / "headroom-diagnostics.md"]
    assert (reports / "d.md").is_file()

    window.dialogs.presets()
    dialog = window.dialogs.presets_dialog
    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)  # presets keep a folder of their own
    assert saved[-1] == first / "presets.json"
    dialog.reject()
    remembered = load_settings().last_folders  # in settings.json: the next run starts there too
    assert (remembered.attach, remembered.diagnostics, remembered.presets) == (str(notes), str(reports),
                                                                                str(reports))


def test_the_model_pickers_start_in_the_models_folder_the_first_time(qtbot, make_window, monkeypatch, tmp_path):
    """Product trial: "Model folder…" and "Model file…" first opened in Documents, not where
    `python -m app.install_model` keeps models; after a pick they start where the user went."""
    from app.core.last_folders import MODEL
    from app.core.paths import models_dir

    monkeypatch.setenv("HEADROOM_DATA_DIR", str(tmp_path / "data"))
    window = make_window()
    folders = window.dialogs.folders
    assert folders.start(MODEL) == start_folder("", documents_folder(), Path.home())  # no models folder yet: as before
    models_dir().mkdir(parents=True)
    assert folders.start(MODEL) == models_dir() == tmp_path / "data" / "models"
    assert folders.start("attach") != models_dir()  # only the model pickers
    elsewhere = tmp_path / "my-models"
    elsewhere.mkdir()
    folders.remember(MODEL, elsewhere)
    assert folders.start(MODEL) == elsewhere and load_settings().last_folders.model == str(elsewhere)
