"""Log files: rotating, owner-only, in the folder HEADROOM_LOG_DIR names; never fatal."""

import errno
import io
import logging
import os
import sys
import warnings

import pytest

from app.core import logs
from app.core.paths import log_dir


@pytest.fixture
def clean_root():
    """configure_logging changes the process's root logger: put it back afterwards."""
    root = logging.getLogger()
    handlers, level, hook = list(root.handlers), root.level, sys.excepthook
    yield root
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
        handler.close()
    root.setLevel(level)
    logging.captureWarnings(False)
    sys.excepthook = hook


def test_log_dir_follows_the_environment_override(monkeypatch, tmp_path):
    monkeypatch.setenv("HEADROOM_LOG_DIR", str(tmp_path / "logs"))
    assert log_dir() == tmp_path / "logs"


def test_lines_go_to_an_owner_only_rotating_file(clean_root, tmp_path):
    path = logs.configure_logging(directory=tmp_path / "logs")
    assert path == tmp_path / "logs" / "headroom.log" == logs.current_log_file()
    logging.getLogger("headroom.test").info("model opened in %.1f s", 1.25)
    logging.getLogger("headroom.test").debug("not at INFO")
    text = path.read_text(encoding="utf-8")
    assert "INFO headroom.test [MainThread]: model opened in 1.2 s" in text
    assert "not at INFO" not in text
    assert path.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "logs").stat().st_mode & 0o777 == 0o700
    handler = next(h for h in clean_root.handlers if isinstance(h, logs.RotatingFileHandler))
    assert (handler.maxBytes, handler.backupCount) == (1_000_000, 5)


def test_rotation_keeps_five_old_files_owner_only(clean_root, tmp_path):
    path = logs.configure_logging(directory=tmp_path)
    handler = next(h for h in clean_root.handlers if isinstance(h, logs.RotatingFileHandler))
    handler.maxBytes = 2_000  # the real limit is 1 MB; the mechanism is the same
    for i in range(200):
        logging.getLogger("headroom.test").warning("line %03d %s", i, "x" * 60)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["headroom.log", *(f"headroom.log.{n}" for n in range(1, 6))]
    assert all(p.stat().st_size <= 2_000 for p in tmp_path.iterdir())
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in tmp_path.iterdir())
    assert "line 199" in path.read_text()


def test_configuring_twice_does_not_double_lines_and_verbose_logs_debug(clean_root, tmp_path, capsys):
    logs.configure_logging(directory=tmp_path)
    path = logs.configure_logging(verbose=True, directory=tmp_path)
    logging.getLogger("headroom.test").debug("one debug line")
    assert path.read_text().count("one debug line") == 1
    assert capsys.readouterr().err.count("one debug line") == 1  # --verbose: stderr too


def test_stderr_gets_warnings_only_and_python_warnings_are_logged(clean_root, tmp_path, capsys):
    path = logs.configure_logging(directory=tmp_path)
    logging.getLogger("headroom.test").info("quiet on stderr")
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("a cast loses precision", UserWarning, stacklevel=1)
    err = capsys.readouterr().err
    assert "quiet on stderr" not in err and "a cast loses precision" in err
    assert "WARNING py.warnings" in path.read_text()


def test_an_unwritable_folder_falls_back_to_stderr_said_in_one_plain_line(clean_root, tmp_path, capsys):
    """New-user re-trial: HEADROOM_LOG_DIR=/etc/passwd/x printed the raw log line "2026-12-06 11:49:20,244
    WARNING app.core.logs [MainThread]: cannot write log files to …"; now as the full disk's line is said."""
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert logs.configure_logging(directory=blocker / "logs") is None
    assert logs.current_log_file() is None
    assert capsys.readouterr().err.splitlines() == [
        f"headroom: log files cannot be written to {blocker / 'logs'} (Not a directory); no log file this run, "
        "only warnings and errors here (--verbose for all)."]


class _FailingFile(io.StringIO):
    """The log file's stream on a disk that refuses every write (a full tmpfs, a yanked USB stick)."""

    def __init__(self, code: int):
        super().__init__()
        self.code, self.writes = code, 0

    def write(self, text: str) -> int:
        self.writes += 1
        raise OSError(self.code, os.strerror(self.code))


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO, errno.EROFS])
def test_a_log_file_that_cannot_be_written_is_said_once_and_turned_off(clean_root, tmp_path, capsys, code):
    """New-user trial: a full disk under the log folder printed Python's "--- Logging error ---" and
    an ~20-line traceback of OSError for every record (7 a chat turn in the window)."""
    path = logs.configure_logging(directory=tmp_path)
    handler = next(h for h in clean_root.handlers if isinstance(h, logs.RotatingFileHandler))
    handler.stream.close()
    handler.stream = full = _FailingFile(code)
    for n in range(3):
        logging.getLogger("headroom.test").warning("turn %d failed", n)
    err = capsys.readouterr().err
    assert "Logging error" not in err and "Traceback" not in err
    said = [line for line in err.splitlines() if line.startswith("headroom:")]
    assert said == [f"headroom: the log file cannot be written ({os.strerror(code)}); "
                    "logging to it is off for this run."]
    assert [line.split(": ", 1)[1] for line in err.splitlines() if "headroom.test" in line] == [
        "turn 0 failed", "turn 1 failed", "turn 2 failed"]  # stderr logging goes on
    assert full.writes == 1  # no retry per record
    assert path.read_text() == ""  # and no reopening of the file behind the failed stream
    assert logs.current_log_file() is None  # nothing says "the details are in" a file no longer written


def test_uncaught_exceptions_are_logged_with_their_traceback(clean_root, tmp_path):
    path = logs.configure_logging(directory=tmp_path)
    logs.log_uncaught_exceptions()

    def replay_turn():
        raise ValueError("bad turn")

    try:
        replay_turn()
    except ValueError:
        sys.excepthook(*sys.exc_info())
    text = path.read_text()
    assert "CRITICAL headroom.crash" in text and "uncaught exception" in text
    assert "Traceback (most recent call last)" in text and "in replay_turn" in text
    assert "ValueError: bad turn" in text


def test_a_traceback_is_one_line_on_stderr_and_whole_in_the_file(clean_root, tmp_path, capsys):
    path = logs.configure_logging(directory=tmp_path)
    try:
        raise RuntimeError("probability tensor contains nan")
    except RuntimeError:
        logging.getLogger("headroom.test").exception("generation failed")
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "generation failed" in err and "Traceback" not in err
    text = path.read_text()
    assert "Traceback (most recent call last)" in text and "probability tensor contains nan" in text
