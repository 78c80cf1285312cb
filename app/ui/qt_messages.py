"""Qt's own messages (qWarning from Qt itself, platform plugins, QThread) go to Python logging,
so they reach the log file beside Headroom's lines instead of only a terminal nobody sees."""

import logging

from PySide6.QtCore import QtMsgType, qInstallMessageHandler

_LEVELS = {
    QtMsgType.QtDebugMsg: logging.DEBUG,
    QtMsgType.QtInfoMsg: logging.INFO,
    QtMsgType.QtWarningMsg: logging.WARNING,
    QtMsgType.QtCriticalMsg: logging.ERROR,
    QtMsgType.QtFatalMsg: logging.CRITICAL,
}

log = logging.getLogger("headroom.qt")


def install_qt_message_handler():
    """Install a Qt message handler that logs each message on logger "headroom.qt" at the
    matching level (qDebug → DEBUG … qFatal → CRITICAL), prefixed with its category when it is
    not "default". Returns the handler it replaced (None: Qt's own), for restoring it."""

    def handler(mode, context, message):
        category = context.category if context is not None else None
        prefix = f"[{category}] " if category and category != "default" else ""
        log.log(_LEVELS.get(mode, logging.WARNING), "%s%s", prefix, message)

    return qInstallMessageHandler(handler)
