"""The splash window: shown before torch and transformers are imported (issue 6, item 4).

Importing torch and transformers takes 3–4 s on a 2-core machine (packaging/README.md), and the
main window cannot be built without them; a double-click must still show something at once.
A plain frameless widget rather than QSplashScreen: QSplashScreen.show() waits up to 1 s for
the window to be reported exposed (measured: exactly 1.0 s offscreen and under Xvfb).
"""

from PySide6.QtCore import Qt
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QLabel, QVBoxLayout, QWidget

SPLASH_ICON_PX = 128


class Splash(QWidget):
    """Frameless window with the app icon and one line of text; ``finish(window)`` closes it."""

    def __init__(self, icon: QIcon):
        super().__init__(None, Qt.WindowType.SplashScreen | Qt.WindowType.FramelessWindowHint)
        self.setObjectName("splash")
        picture = QLabel()
        picture.setPixmap(icon.pixmap(SPLASH_ICON_PX, SPLASH_ICON_PX))
        picture.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message_label = QLabel(self.tr("Starting Headroom…"))
        self.message_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(32, 24, 32, 20)
        layout.addWidget(picture)
        layout.addWidget(self.message_label)

    def message(self) -> str:
        return self.message_label.text()

    def finish(self, _window: QWidget) -> None:
        self.close()


def show_splash(app: QApplication, icon: QIcon) -> Splash:
    """Show the splash, centred on the primary screen, and paint it now."""
    splash = Splash(icon)
    splash.adjustSize()
    screen = app.primaryScreen()
    if screen is not None:
        splash.move(screen.availableGeometry().center() - splash.rect().center())
    splash.show()
    app.processEvents()  # paint before the long imports block the event loop
    return splash
