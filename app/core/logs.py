"""Log files: a rotating ``headroom.log`` in the user log folder, plus stderr.

`app.main` configures this once per process, for the window and for headless mode alike, so a
bug report can always attach the log (its folder is shown in Help → About). The files are
owner-only (0o600) like the conversation database: exception messages can quote paths.
Several Headroom processes at once share the file but rotation is not coordinated between
them (logging.handlers.RotatingFileHandler is single-process).
"""

import logging
import os
import sys
from logging.handlers import RotatingFileHandler
from pathlib import Path

from app.core.paths import log_dir

LOG_FILE_NAME = "headroom.log"
MAX_BYTES = 1_000_000  # per file; with BACKUP_COUNT at most ~6 MB of logs in all
BACKUP_COUNT = 5       # headroom.log.1 … headroom.log.5
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(threadName)s]: %(message)s"
_OURS = "_headroom_handler"  # marks the handlers configure_logging installed

log = logging.getLogger(__name__)


class _FirstLineFormatter(logging.Formatter):
    """One line per record (no traceback): a failed reply on the terminal reads as one line,
    as the README promises; the file keeps the whole record."""

    def format(self, record: logging.LogRecord) -> str:
        return super().format(record).splitlines()[0]


class _PrivateRotatingFileHandler(RotatingFileHandler):
    """RotatingFileHandler whose files are created owner-only (0o600), also after a rollover.

    The first write (or rollover) that fails with an OSError (a full disk, a removed folder, a
    read-only mount, quota) is said in one line on stderr and turns the file off for the rest of
    the run; the other handlers go on (new-user trial: a full disk printed Python's ~20-line
    "--- Logging error ---" traceback for every record, 7 times a chat turn in the window)."""

    def __init__(self, *args, **kwargs):
        self.failure: OSError | None = None  # set before the base class opens the file
        super().__init__(*args, **kwargs)

    def _open(self):
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        return os.fdopen(fd, self.mode, encoding=self.encoding, errors=self.errors)

    def emit(self, record: logging.LogRecord) -> None:
        if self.failure is None:  # off: no reopening, no retry per record
            super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:
        """Called by emit inside its except block (the handler's lock held): an OSError turns the
        file off, anything else (a bad format string) keeps logging's own report."""
        failure = sys.exc_info()[1]
        if not isinstance(failure, OSError):
            super().handleError(record)
            return
        self.failure = failure
        stream, self.stream = self.stream, None
        if stream is not None:
            try:
                stream.close()  # its flush of what is still buffered fails the same way; the file is closed anyway
            except OSError:
                pass
        _say(f"headroom: the log file cannot be written ({failure.strerror or failure}); "
             "logging to it is off for this run.")


def _say(line: str) -> None:
    """Print `line` on stderr, where there is one: None in a windowed bundle without a console;
    closed or broken as well, there is nowhere left to say it."""
    if sys.stderr is not None:
        try:
            print(line, file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass


def configure_logging(verbose: bool = False, directory: Path | None = None) -> Path | None:
    """Send the root logger to a rotating file and to stderr; returns the log file's path.

    File: INFO and up (DEBUG with `verbose`), MAX_BYTES per file, BACKUP_COUNT old files kept.
    stderr: WARNING and up (DEBUG with `verbose`). Python `warnings` are logged too. directory:
    default `log_dir()` (HEADROOM_LOG_DIR overrides it). When the folder cannot be written the
    result is None and only stderr is used, said in one plain line — logging never stops the app from starting.
    Calling again replaces the handlers installed before (no doubled lines).
    """
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, _OURS, False)]:
        root.removeHandler(handler)
        handler.close()
    formatter = logging.Formatter(LOG_FORMAT)
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setLevel(logging.DEBUG if verbose else logging.WARNING)
    handlers: list[logging.Handler] = [stderr]
    directory = Path(directory) if directory is not None else log_dir()
    path: Path | None = directory / LOG_FILE_NAME
    problem = None
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        handlers.append(_PrivateRotatingFileHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUP_COUNT,
                                                    encoding="utf-8"))
    except OSError as exc:
        path, problem = None, exc
    for handler in handlers:
        handler.setFormatter(formatter)
        setattr(handler, _OURS, True)
        root.addHandler(handler)
    if not verbose:  # tracebacks go to the log file; the terminal gets their first line
        stderr.setFormatter(_FirstLineFormatter(LOG_FORMAT))
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    logging.captureWarnings(True)
    if problem is not None:  # one plain line, as a file failing later is said (new-user re-trial: a raw
        # "… WARNING app.core.logs [MainThread]: cannot write log files …" line with its timestamp)
        # not "logging to stderr only": without --verbose, stderr gets only warnings (new-user trial)
        log.info("cannot write log files to %s (%s); no log file this run", directory, problem)
        _say(f"headroom: log files cannot be written to {directory} ({problem.strerror or problem}); "
             "no log file this run, only warnings and errors here (--verbose for all).")
    return path


def log_uncaught_exceptions() -> None:
    """Install a `sys.excepthook` that logs an uncaught exception with its traceback (CRITICAL,
    logger "headroom.crash") instead of only printing it. The window replaces it with its own
    hook, which also shows a dialog (app.ui.excepthook). Ctrl+C keeps Python's default."""

    def hook(exc_type, exc, tb):
        if issubclass(exc_type, KeyboardInterrupt):
            sys.__excepthook__(exc_type, exc, tb)
            return
        logging.getLogger("headroom.crash").critical("uncaught exception", exc_info=(exc_type, exc, tb))

    sys.excepthook = hook


def current_log_file() -> Path | None:
    """The file `configure_logging` is writing to, or None (not configured, stderr only, or its
    writes failed and it was turned off)."""
    for handler in logging.getLogger().handlers:
        if (getattr(handler, _OURS, False) and isinstance(handler, RotatingFileHandler)
                and getattr(handler, "failure", None) is None):
            return Path(handler.baseFilename)
    return None
