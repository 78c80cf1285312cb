"""The splash screen: shown before torch and transformers are imported (issue 6, item 4).

Importing torch and transformers takes 3–4 s on a 2-core machine (packaging/README.md), and the
main window cannot be built without them; a double-click must still show something at once.
"""

from PySide6.QtCore import Qt
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QSplashScreen

SPLASH_ICON_PX = 256


def show_splash(app: QApplication, icon: QIcon) -> QSplashScreen:
    """Show the app icon with "Starting Headroom…" and paint it now; call ``finish(window)``
    on the returned splash once the main window is shown."""
    splash = QSplashScreen(icon.pixmap(SPLASH_ICON_PX, SPLASH_ICON_PX))
    splash.setObjectName("splash")
    splash.showMessage("Starting Headroom…", Qt.AlignmentFlag.AlignBottom | Qt.AlignmentFlag.AlignHCenter)
    splash.show()
    app.processEvents()  # paint before the long imports block the event loop
    return splash
