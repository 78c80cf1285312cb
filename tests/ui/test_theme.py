"""Light and dark palettes (issue 14, item 3): offscreen screenshots of the sidebar, the chat view
with its bubbles, and the composer, in Fusion's light palette and a typical dark desktop
palette, with the themed stylesheet; every text-bearing widget is checked on its pixels: the
colour that contrasts most with the widget's background (its text) must reach WCAG AA 4.5:1.

Set HEADROOM_SCREENSHOT_DIR to keep the PNGs (tests/ui/screenshots/ holds the committed ones)."""

import os
import time
from collections import Counter
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, QRect
from PySide6.QtGui import QColor, QImage, QPalette
from PySide6.QtWidgets import QHBoxLayout, QStyleFactory, QVBoxLayout, QWidget

from app.core.conversation import MessageStatus, Role
from app.core.store import ConversationInfo
from app.ui.chat_view import ChatView
from app.ui.code_highlight import STYLES, token_style
from app.ui.composer import Composer
from app.ui.conversation_list import ConversationList
from app.ui.memory_timeline import MemoryTimeline
from app.ui.theme import AA_TEXT, PAIRS, TextColours, contrast_ratio, is_dark, stylesheet

ANSWER = """Here is the check:

```python
def fits(a, b):
    return a < b and b > 0  # <ok> & done
```

| model | VRAM |
|---|---:|
| 7B | 4.1 GiB |

1. Load it
2. See [the docs](https://example.org)"""


def dark_palette() -> QPalette:
    """A dark desktop palette as KDE Breeze Dark / GNOME dark set them (window, base, text …)."""
    palette = QPalette()
    roles = QPalette.ColorRole
    for role, colour in ((roles.Window, "#202326"), (roles.WindowText, "#fcfcfc"), (roles.Base, "#141618"),
                         (roles.AlternateBase, "#1d1f22"), (roles.Text, "#fcfcfc"), (roles.Button, "#292c30"),
                         (roles.ButtonText, "#fcfcfc"), (roles.Highlight, "#3daee9"),
                         (roles.HighlightedText, "#fcfcfc"), (roles.Link, "#1d99f3"),
                         (roles.PlaceholderText, "#a1a9b1"), (roles.ToolTipBase, "#292c30"),
                         (roles.ToolTipText, "#fcfcfc"), (roles.Light, "#3b4045"), (roles.Midlight, "#33373b"),
                         (roles.Mid, "#5d6166"), (roles.Dark, "#0f1012"), (roles.Shadow, "#000000")):
        palette.setColor(role, QColor(colour))
    return palette


PALETTES = {"light": lambda: QStyleFactory.create("Fusion").standardPalette(), "dark": dark_palette}


@pytest.fixture(params=sorted(PALETTES))
def themed(request, qapp, qtbot):
    """A window-like widget (sidebar | chat view over composer) in the palette `request.param`."""
    from app.ui.fonts import install_hangul_fallback

    install_hangul_fallback(qapp)  # as the app does at start: "KV cache 질문" must not show boxes
    palette = PALETTES[request.param]()
    old_style, old_palette, old_sheet = qapp.style().name(), qapp.palette(), qapp.styleSheet()
    qapp.setStyle("Fusion")
    qapp.setPalette(palette)
    qapp.setStyleSheet(stylesheet(palette))
    top = QWidget()
    qtbot.addWidget(top)
    sidebar = ConversationList()
    now = time.time()
    sidebar.set_conversations([ConversationInfo(1, "GPU memory", now, now, 4),
                               ConversationInfo(2, "KV cache 질문", now - 90_000, now - 90_000, 2)], 1, now)
    sidebar.search_edit.setText("memory")
    chat = ChatView()
    chat.add_message(Role.USER, "Does a 7B model fit in `8 GiB`?")
    chat.add_message(Role.ASSISTANT, ANSWER)
    chat.add_message(Role.USER, "And with 32k tokens?")
    chat.add_message(Role.ASSISTANT, "It stopped here", MessageStatus.STOPPED)
    chat.add_notice("The model could not be loaded.", "error")
    composer = Composer()
    composer.editor.setPlainText("What I type must stay readable")
    right = QVBoxLayout()
    right.addWidget(chat, 1)
    right.addWidget(composer)
    layout = QHBoxLayout(top)
    layout.addWidget(sidebar)
    layout.addLayout(right, 1)
    top.resize(900, 820)
    top.show()
    qtbot.wait(50)
    yield request.param, top, sidebar, chat, composer
    qapp.setStyleSheet(old_sheet)
    qapp.setPalette(old_palette)
    qapp.setStyle(old_style)


def pixel_contrast(image: QImage) -> float:
    """Contrast between the most common colour (the background) and the colour that contrasts
    most with it (the text's strokes)."""
    colours = Counter(image.pixel(x, y) for x in range(0, image.width()) for y in range(0, image.height()))
    background = QColor.fromRgb(colours.most_common(1)[0][0])
    return max(contrast_ratio(background, QColor.fromRgb(rgb)) for rgb in colours)


def crop(shot: QImage, top: QWidget, widget: QWidget) -> QImage:
    return shot.copy(QRect(widget.mapTo(top, QPoint(0, 0)), widget.size()))


def test_text_reads_on_its_background_in_both_palettes(themed):
    name, top, sidebar, chat, composer = themed
    shot = top.grab().toImage()
    if folder := os.environ.get("HEADROOM_SCREENSHOT_DIR"):
        Path(folder).mkdir(parents=True, exist_ok=True)
        shot.save(str(Path(folder) / f"chat-{name}.png"))
    bubbles = chat.bubbles()
    texts = {"composer": composer.editor, "search": sidebar.search_edit,
             "notice": chat.widget().findChild(QWidget, "notice")}
    for index, bubble in enumerate(bubbles):
        texts[f"header {index}"] = bubble._header
        for part_index, part in enumerate(bubble._body.parts()):
            texts[f"body {index}.{part_index}"] = getattr(part, "text_view", part)
    ratios = {key: pixel_contrast(crop(shot, top, widget)) for key, widget in texts.items()}
    assert len(ratios) >= 10
    failing = {key: round(ratio, 2) for key, ratio in ratios.items() if ratio < AA_TEXT}
    assert failing == {}, f"{name}: text below {AA_TEXT}:1 on its background: {failing}"


def test_the_palette_decides_light_or_dark(themed):
    name, top, *_ = themed
    assert is_dark(top.palette()) is (name == "dark")
    assert TextColours.from_palette(top.palette()).dark is (name == "dark")


@pytest.mark.parametrize("dark", [False, True])
def test_every_code_token_colour_reaches_aa_on_the_code_background(qapp, dark):
    from pygments.styles import get_style_by_name

    palette = dark_palette() if dark else QStyleFactory.create("Fusion").standardPalette()
    colours = TextColours.from_palette(palette)
    assert colours.dark is dark
    background = QColor(colours.code_background)
    checked = 0
    for token_type, _style in get_style_by_name(STYLES[dark]):
        css = token_style(token_type, colours)
        for rule in css.split("; "):
            if rule.startswith("color: "):
                assert contrast_ratio(QColor(rule[len("color: "):]), background) >= AA_TEXT, token_type
                checked += 1
    assert checked > 20
    assert contrast_ratio(QColor(colours.text), background) >= AA_TEXT
    assert contrast_ratio(QColor(colours.link), background) >= AA_TEXT


def test_text_pairs_reach_aa_on_their_palette(qapp):
    """Each text colour pair against the window and base colours of its palette."""
    text_pairs = ("accent", "error", "errorStrong", "warning", "muted", "success")
    for dark, palette in ((False, QStyleFactory.create("Fusion").standardPalette()), (True, dark_palette())):
        for role in (QPalette.ColorRole.Window, QPalette.ColorRole.Base):
            for name in text_pairs:
                ratio = contrast_ratio(QColor(PAIRS[name][dark]), palette.color(role))
                assert ratio >= AA_TEXT, (name, dark, role, round(ratio, 2))


def test_the_timeline_draws_on_the_palette(qtbot, qapp):
    timeline = MemoryTimeline()
    qtbot.addWidget(timeline)
    timeline.setPalette(dark_palette())
    assert timeline.plot.backgroundBrush().color().name() == "#141618"
    allocated = timeline.curves["allocated"].opts["pen"].color()
    assert contrast_ratio(allocated, QColor("#141618")) >= 3.0  # WCAG 1.4.11 graphics
    assert PAIRS["accent"][1] in timeline.legend.text()


def test_the_raw_stylesheet_parses_and_sizes_follow_the_system_font(qapp, qtbot):
    """resources/style.qss is valid on its own (light values; the markers are comments) and
    sets no font size, so text follows the user's system font."""
    from importlib import resources

    from app.ui.message_bubble import MessageBubble

    raw = resources.files("app.resources").joinpath("style.qss").read_text(encoding="utf-8")
    assert "font-size" not in raw and "/*@" in raw
    old = qapp.styleSheet()
    qapp.setStyleSheet(raw)
    try:
        bubble = MessageBubble(Role.USER, "hi")
        qtbot.addWidget(bubble)
        bubble.resize(300, 80)
        bubble.show()
        qtbot.wait(20)
        centre = bubble.grab().toImage().pixel(250, 40)
        assert QColor.fromRgb(centre).name() == PAIRS["userBubble"][0]  # parsed: the bubble is styled
        assert bubble._body.parts()[0].font().pointSizeF() == qapp.font().pointSizeF()
    finally:
        qapp.setStyleSheet(old)


def test_a_message_redraws_in_a_new_palette(qtbot):
    from app.ui.markdown_view import MarkdownView

    view = MarkdownView()
    qtbot.addWidget(view)
    view.setPalette(QStyleFactory.create("Fusion").standardPalette())
    view.set_markdown("Text `code`\n\n```python\nx = 1\n```")
    light = TextColours.from_palette(view.palette())
    assert light.code_background in view.code_blocks()[0].styleSheet()
    view.setPalette(dark_palette())
    dark = TextColours.from_palette(dark_palette())
    assert dark.dark and dark.code_background != light.code_background
    assert dark.code_background in view.code_blocks()[0].styleSheet()
    assert dark.code_background in view.parts()[0].fragments()[0]  # inline code background
    assert view.plain_text() == "Text code\nx = 1"


@pytest.fixture(params=sorted(PALETTES))
def themed_panel(request, qapp, qtbot):
    """The VRAM panel after five minutes of a session (tests.helpers.vram_scene), docked beside
    a text field, in the palette `request.param` with the themed stylesheet."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QMainWindow, QTextEdit

    from app.ui.fonts import install_hangul_fallback
    from app.ui.vram_panel import VramPanel
    from tests.helpers import vram_scene

    install_hangul_fallback(qapp)  # as the app does at start: "KV cache 질문" must not show boxes
    palette = PALETTES[request.param]()
    old_style, old_palette, old_sheet = qapp.style().name(), qapp.palette(), qapp.styleSheet()
    qapp.setStyle("Fusion")
    qapp.setPalette(palette)
    qapp.setStyleSheet(stylesheet(palette))
    window = QMainWindow()
    window.setCentralWidget(QTextEdit())
    panel = VramPanel(window)
    window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, panel)
    window.resize(1000, 1100)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    window.resizeDocks([panel], [420], Qt.Orientation.Horizontal)
    *_rest, projection = vram_scene.replay(panel, seconds=60)
    panel.set_what_if_limits(32_768, 4_096)
    panel.what_if.set_values(24_000, 2_048)
    panel.show_what_if(projection)
    panel.timeline.redraw()
    yield request.param, panel
    window.close()
    qapp.setStyleSheet(old_sheet)
    qapp.setPalette(old_palette)
    qapp.setStyle(old_style)


def test_the_memory_panel_reads_in_both_palettes(themed_panel):
    """Every painted part of the panel fills with the palette's base colour, and each
    text-bearing part reaches AA on it (issue 14, item 3: the panel was hard-coded light)."""
    from tests.helpers.vram_scene import grab_panel

    name, panel = themed_panel
    shot = grab_panel(panel).toImage()
    if folder := os.environ.get("HEADROOM_SCREENSHOT_DIR"):
        Path(folder).mkdir(parents=True, exist_ok=True)
        shot.save(str(Path(folder) / f"vram-panel-{name}.png"))
    body = panel.widget().widget()
    base = panel.palette().color(QPalette.ColorRole.Base)
    assert QColor.fromRgb(shot.pixel(2, 2)) == base  # the body's background
    texts = {"device": panel.device_label, "gauge": panel.gauge, "legend": panel.legend,
             "readout": panel.readout, "what-if result": panel.what_if.result_label,
             "timeline legend": panel.timeline.legend}
    ratios = {key: pixel_contrast(crop(shot, body, widget)) for key, widget in texts.items()}
    failing = {key: round(ratio, 2) for key, ratio in ratios.items() if ratio < AA_TEXT}
    assert failing == {}, f"{name}: text below {AA_TEXT}:1 on its background: {failing}"
    for widget in (panel.gauge, panel.bar, panel.legend, panel.readout):  # opaque painters: no light box
        colours = Counter(crop(shot, body, widget).pixel(x, 1) for x in range(widget.width()))
        assert QColor.fromRgb(colours.most_common(1)[0][0]) == base, widget.objectName()


def test_the_gauge_text_and_verdict_colours_reach_aa_in_both_palettes(qapp):
    from app.ui.panel_colours import PanelColours

    for dark, palette in ((False, QStyleFactory.create("Fusion").standardPalette()), (True, dark_palette())):
        colours = PanelColours.from_palette(palette)
        assert colours.dark is dark
        background = QColor(colours.background)
        for state in ("ok", "amber", "red", "none"):
            assert contrast_ratio(colours.state_text(state), background) >= AA_TEXT, (dark, state)
            assert contrast_ratio(colours.state_fill(state), background) >= 2.0, (dark, state)
        for text in (colours.text, colours.muted, colours.error):
            assert contrast_ratio(QColor(text), background) >= AA_TEXT, (dark, text)
