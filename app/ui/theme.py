"""Colours from the palette: WCAG contrast, light/dark accent pairs, and the themed stylesheet.

Every colour the app draws comes from the widget palette (window, base, text, highlight …) or
from one of the light/dark pairs below, picked by the palette's lightness, so a dark desktop
palette never leaves dark text on a dark field or white text on white (issue 14, item 3).

`resources/style.qss` is a valid stylesheet by itself: neutral colours are ``palette(role)``
references, and each semantic colour is written as its light value followed by a marker
comment, e.g. ``color: #cf222e /*@error*/``. `stylesheet(palette)` swaps every marked value for
the pair's member that suits the palette.

Contrast ratio and relative luminance: WCAG 2.1, §1.4.3 and the "relative luminance" definition
(https://www.w3.org/TR/WCAG21/#dfn-contrast-ratio); 4.5:1 is the AA bar for normal text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QColor, QPalette

AA_TEXT = 4.5
"""WCAG 2.1 AA minimum contrast for normal-size text."""

# (light palette, dark palette); light values are GitHub Primer's, the dark ones their
# dark-theme counterparts, each ≥ 4.5:1 on the matching window/base colours of Fusion's palettes.
PAIRS: dict[str, tuple[str, str]] = {
    "accent": ("#0969da", "#4493f8"),
    "accentFill": ("#1f6feb", "#1f6feb"),  # button fill behind white text (4.6:1 either way)
    "accentFillDisabled": ("#8fb4f0", "#2f4f7f"),
    "error": ("#cf222e", "#ff7b72"),
    "errorStrong": ("#82071e", "#ffa198"),
    "errorFill": ("#d1242f", "#b62324"),
    "errorBackground": ("#ffebe9", "#3d1518"),
    "warning": ("#855800", "#d29922"),
    "success": ("#116329", "#3fb950"),
    "stopped": ("#d9a400", "#bb8009"),
    "selection": ("#d5e3fa", "#1f3a63"),
    "selectionText": ("#0b2f6b", "#cae0ff"),
    "toastBackground": ("#24292f", "#e6edf3"),
    "toastText": ("#ffffff", "#1f2328"),
    "toastLink": ("#79c0ff", "#0550ae"),
    "onFill": ("#ffffff", "#ffffff"),
    # disabled controls: text and border well below their enabled contrast (WCAG exempts them;
    # Primer's fg.disabled / border.muted)
    "disabledText": ("#8c959f", "#6e7681"),
    "disabledBorder": ("#d0d7de", "#30363d"),
    "muted": ("#4d5560", "#a8b1bb"),  # light: 4.5:1 in pixels on the user bubble too
    "userBubble": ("#e6f0ff", "#1b2a41"),
    "userBubbleBorder": ("#c9dcff", "#2d4a73"),
    "plotReserved": ("#8250df", "#a371f7"),
    "plotProjected": ("#d1600f", "#f0883e"),
    # memory panel: the terms of the stacked bar and legend (fills, ≥ 3:1 on base, WCAG 1.4.11)
    "termWeights": ("#0969da", "#4493f8"),
    "termKv": ("#8250df", "#a371f7"),
    "termKvTurn": ("#d1600f", "#f0883e"),
    "termPrefill": ("#bf3989", "#db61a2"),
    "termOther": ("#6e7781", "#8b949e"),
    "termContext": ("#afb8c1", "#545d68"),
    # the headroom meter's fill by verdict (its text uses success / warning / error / muted)
    "fillOk": ("#2da44e", "#2ea043"),
    "fillAmber": ("#d4a72c", "#bb8009"),
    "fillRed": ("#cf222e", "#da3633"),
    "fillNone": ("#8c959f", "#6e7681"),
}

STATE_PAIRS: dict[str, tuple[str, str]] = {
    "ok": ("success", "fillOk"), "amber": ("warning", "fillAmber"),
    "red": ("error", "fillRed"), "none": ("muted", "fillNone"),
}
"""Headroom verdict ("ok", "amber", "red", "none") → (text pair, fill pair)."""

_MARKED = re.compile(r"#[0-9a-fA-F]{6}\s*/\*@(\w+)\*/")


def luminance(colour: QColor) -> float:
    """WCAG relative luminance of an sRGB colour, 0 (black) … 1 (white)."""
    def channel(value: float) -> float:
        return value / 12.92 if value <= 0.04045 else ((value + 0.055) / 1.055) ** 2.4
    return (0.2126 * channel(colour.redF()) + 0.7152 * channel(colour.greenF())
            + 0.0722 * channel(colour.blueF()))


def contrast_ratio(first: QColor, second: QColor) -> float:
    """WCAG contrast ratio, 1 … 21 (order does not matter)."""
    high, low = sorted((luminance(first), luminance(second)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def is_dark(palette: QPalette) -> bool:
    """True when the palette's window is darker than its text (a dark desktop theme)."""
    return (luminance(palette.color(QPalette.ColorRole.Window))
            < luminance(palette.color(QPalette.ColorRole.WindowText)))


def pick(name: str, palette: QPalette) -> QColor:
    """The member of pair `name` that suits `palette`. Raises KeyError for an unknown name."""
    light, dark = PAIRS[name]
    return QColor(dark if is_dark(palette) else light)


def blend(base: QColor, over: QColor, amount: float) -> QColor:
    """`over` laid on `base` with opacity `amount` (0 … 1)."""
    return QColor.fromRgbF(*(b + (o - b) * amount for b, o in zip(
        (base.redF(), base.greenF(), base.blueF()), (over.redF(), over.greenF(), over.blueF()), strict=True)))


def readable(colour: QColor, background: QColor, minimum: float = AA_TEXT) -> QColor:
    """`colour`, moved towards black or white (whichever contrasts more with `background`)
    in small steps until it reaches `minimum` contrast on `background`; unchanged if it does."""
    target = QColor("#000000") if luminance(background) > 0.18 else QColor("#ffffff")
    step, result = 0.0, QColor(colour)
    while contrast_ratio(result, background) < minimum and step < 1.0:
        step = min(1.0, step + 0.05)
        result = blend(colour, target, step)
    return result


@dataclass(frozen=True)
class TextColours:
    """Colours of rendered markdown for one palette (hex strings, hashable for caches)."""

    text: str
    muted: str
    link: str
    code_background: str
    code_border: str
    dark: bool

    @classmethod
    def from_palette(cls, palette: QPalette) -> TextColours:
        base = palette.color(QPalette.ColorRole.Base)
        text = palette.color(QPalette.ColorRole.Text)
        code_background = blend(base, text, 0.06)
        return cls(
            text=text.name(),
            muted=readable(blend(text, base, 0.35), base).name(),
            link=readable(pick("accent", palette), code_background).name(),
            code_background=code_background.name(),
            code_border=blend(base, text, 0.18).name(),
            dark=is_dark(palette),
        )


def fallback_palette(dark: bool) -> QPalette:
    """The palette of the Appearance setting where the desktop cannot be asked for a colour
    scheme (a bare X session: Qt reports it Unknown): Fusion's own light palette, or a dark one
    with the colours of KDE's Breeze Dark. Disabled text is dimmed in both: a palette that set only
    the active colours left a disabled button looking like an enabled one (trial 9, dark)."""
    from PySide6.QtWidgets import QStyleFactory

    if not dark:
        return QStyleFactory.create("Fusion").standardPalette()
    palette = QPalette()
    roles = QPalette.ColorRole
    for role, colour in ((roles.Window, "#202326"), (roles.WindowText, "#fcfcfc"), (roles.Base, "#141618"),
                         (roles.AlternateBase, "#1d1f22"), (roles.Text, "#fcfcfc"), (roles.Button, "#292c30"),
                         (roles.ButtonText, "#fcfcfc"), (roles.BrightText, "#ffffff"), (roles.Highlight, "#3daee9"),
                         (roles.HighlightedText, "#fcfcfc"), (roles.Link, "#1d99f3"), (roles.LinkVisited, "#9b59b6"),
                         (roles.PlaceholderText, "#a1a9b1"), (roles.ToolTipBase, "#292c30"),
                         (roles.ToolTipText, "#fcfcfc"), (roles.Light, "#3b4045"), (roles.Midlight, "#33373b"),
                         (roles.Mid, "#5d6166"), (roles.Dark, "#0f1012"), (roles.Shadow, "#000000")):
        palette.setColor(role, QColor(colour))
    disabled = QPalette.ColorGroup.Disabled
    for role in (roles.WindowText, roles.Text, roles.ButtonText, roles.PlaceholderText):
        palette.setColor(disabled, role, QColor(PAIRS["disabledText"][1]))
    palette.setColor(disabled, roles.Button, QColor("#24272a"))
    palette.setColor(disabled, roles.Highlight, QColor("#2f4f7f"))
    return palette


class _DesktopLook(QObject):
    """The style the desktop gave the application, kept to return to when Appearance goes back to
    System after a fallback palette; a child of the application, found again by apply_theme."""

    NAME = "headroomDesktopLook"

    def __init__(self, app):
        super().__init__(app)
        self.setObjectName(self.NAME)
        self.style = app.style().name()
        if not self.style and app.styleSheet():  # wrapped by the stylesheet's style, which has no name
            sheet = app.styleSheet()
            app.setStyleSheet("")
            self.style = app.style().name()
            app.setStyleSheet(sheet)
        self.overridden = False  # a fallback palette (and Fusion) is set


def apply_theme(app, appearance: str = "system") -> str:
    """Light or dark as the Appearance setting says (core.settings.APPEARANCES), and the themed
    stylesheet on the QApplication `app`, now and again whenever the system switches between
    light and dark (Qt ≥ 6.5 `QStyleHints.colorSchemeChanged`).

    "system" follows the desktop (as before the setting). "light" / "dark" ask Qt for that colour
    scheme first (`QStyleHints.setColorScheme`, Qt ≥ 6.8: the platform theme repaints its own
    palette and style); where the platform does not take it (Qt still reports another scheme, or
    the palette stays the other lightness: a bare X session, the offscreen platform), Fusion with
    `fallback_palette`. Returns how it was applied: "system", "scheme" or "palette"."""
    hints = app.styleHints()
    look = app.findChild(_DesktopLook, _DesktopLook.NAME)
    if look is None:
        look = _DesktopLook(app)
        if hasattr(hints, "colorSchemeChanged"):
            hints.colorSchemeChanged.connect(lambda _scheme: app.setStyleSheet(stylesheet(app.palette())))
    if look.overridden:  # back to the desktop's style and palette before anything else
        if look.style:
            app.setStyle(look.style)
        app.setPalette(QPalette())  # a palette with nothing set: the platform's again
        look.overridden = False
    if appearance not in ("light", "dark"):
        if hasattr(hints, "unsetColorScheme"):
            hints.unsetColorScheme()
        how = "system"
    else:
        dark = appearance == "dark"
        wanted = Qt.ColorScheme.Dark if dark else Qt.ColorScheme.Light
        if hasattr(hints, "setColorScheme"):
            hints.setColorScheme(wanted)
        if hints.colorScheme() == wanted and is_dark(app.palette()) == dark:
            how = "scheme"
        else:
            if hasattr(hints, "unsetColorScheme"):
                hints.unsetColorScheme()  # not taken: leave nothing pending that could half-apply later
            app.setStyle("Fusion")
            app.setPalette(fallback_palette(dark))
            look.overridden = True
            how = "palette"
    app.setStyleSheet(stylesheet(app.palette()))
    return how


def stylesheet(palette: QPalette) -> str:
    """`resources/style.qss` with every marked colour taken from the pair that suits `palette`
    (set it on the application again when the palette changes)."""
    text = resources.files("app.resources").joinpath("style.qss").read_text(encoding="utf-8")
    dark = is_dark(palette)
    return _MARKED.sub(lambda m: PAIRS[m.group(1)][1 if dark else 0], text)
