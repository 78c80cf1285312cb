"""Rendering matrix of typical model outputs (issue 14, item 1), checked through what the
widgets show: the rendered documents' text and structure, the clipboard after Copy, and the
width of the chat column."""

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QDesktopServices, QGuiApplication, QTextCursor, QTextListFormat
from PySide6.QtWidgets import QApplication, QToolButton

from app.core.conversation import MessageStatus, Role
from app.ui.chat_view import ChatView
from app.ui.code_highlight import highlight_html
from app.ui.markdown_html import split_blocks, to_html
from app.ui.markdown_view import MarkdownView
from app.ui.prose_view import ProseView
from app.ui.theme import TextColours

C_CODE = "int main() {\n\tif (a < b && c > d) return 1;\n\treturn 0;\n}"


@pytest.fixture
def render(qtbot):
    def render(text: str, width: int = 500) -> MarkdownView:
        view = MarkdownView()
        qtbot.addWidget(view)
        view.resize(width, 400)
        view.set_markdown(text)
        view.show()
        return view
    return render


def documents(view: MarkdownView):
    return [part.document() for part in view.parts() if isinstance(part, ProseView)]


def list_items(view: MarkdownView) -> list[tuple[int, str, str]]:
    """(nesting level, item text, "ordered"/"bullet") of every list item, in order."""
    items = []
    for document in documents(view):
        block = document.begin()
        while block.isValid():
            text_list = block.textList()
            if text_list is not None:
                style = text_list.format().style()
                kind = "ordered" if style == QTextListFormat.Style.ListDecimal else "bullet"
                items.append((text_list.format().indent(), block.text(), kind))
            block = block.next()
    return items


def test_code_with_angle_brackets_and_ampersands_is_shown_and_copied_once_escaped(render, qtbot):
    view = render(f"Here:\n\n```c\n{C_CODE}\n```\n\nInline `a < b && c > d` too.")
    code = view.code_blocks()[0]
    assert code.plain_text() == C_CODE  # tabs kept, no &lt; / &amp;
    assert "Inline a < b && c > d too." in view.plain_text()
    assert "&lt;" not in view.plain_text() and "&amp;" not in view.plain_text()
    assert code.language_label.text() == "c"
    qtbot.mouseClick(code.copy_button, Qt.MouseButton.LeftButton)
    assert QGuiApplication.clipboard().text() == C_CODE
    assert code.copy_button.text() == "Copied"
    prose = view.parts()[-1]
    prose.selectAll()
    prose.copy()  # what Ctrl+C on a selection gives
    assert QGuiApplication.clipboard().text() == "Inline a < b && c > d too."
    code.text_view.selectAll()
    code.text_view.copy()
    assert QGuiApplication.clipboard().text() == C_CODE


def test_a_numbered_list_right_after_a_line_of_text(render):
    view = render("The steps:\n1. Load the model\n2. Send a prompt")
    assert list_items(view) == [(1, "Load the model", "ordered"), (1, "Send a prompt", "ordered")]
    assert view.plain_text().startswith("The steps:")


def test_two_space_nested_lists_nest(render):
    view = render("- fruit\n  - apple\n  - pear\n- bread")
    assert list_items(view) == [(1, "fruit", "bullet"), (2, "apple", "bullet"), (2, "pear", "bullet"),
                                (1, "bread", "bullet")]
    view = render("1. Install\n  - with pip\n2. Run")  # models nest under "1. " with two spaces
    assert list_items(view) == [(1, "Install", "ordered"), (2, "with pip", "bullet"), (1, "Run", "ordered")]


def test_a_table_becomes_a_table(render):
    view = render("| model | VRAM |\n|---|---:|\n| 7B | 4.1 GiB |\n| 13B | 7.9 GiB |")
    cursor = QTextCursor(documents(view)[0])
    cursor.movePosition(QTextCursor.MoveOperation.NextBlock)
    table = cursor.currentTable()
    assert table is not None and (table.rows(), table.columns()) == (3, 2)
    cells = [[table.cellAt(r, c).firstCursorPosition().block().text() for c in range(2)] for r in range(3)]
    assert cells == [["model", "VRAM"], ["7B", "4.1 GiB"], ["13B", "7.9 GiB"]]


def test_a_wide_table_scrolls_sideways_and_the_text_after_it_wraps(render, qtbot):
    """Trial 7: 25 columns in a narrow window got one letter a column, headers read down."""
    wide = ("| " + " | ".join(f"col{i}" for i in range(25)) + " |\n|" + "---|" * 25 + "\n| "
            + " | ".join(str(i) for i in range(25)) + " |\n\nAfter the table, " + "words that wrap " * 20)
    view = render(wide, width=500)
    qtbot.wait(50)
    table, after = view.parts()
    line = table.fontMetrics().lineSpacing()
    assert table.horizontalScrollBarPolicy() == Qt.ScrollBarPolicy.ScrollBarAlwaysOn
    assert table.horizontalScrollBar().maximum() > 0 and table.horizontalScrollBar().value() == 0  # first columns
    assert table.document().size().width() >= 25 * 8 * table.fontMetrics().averageCharWidth()
    assert table.height() < 5 * line + table.horizontalScrollBar().sizeHint().height()  # two rows, one line each
    assert after.horizontalScrollBarPolicy() == Qt.ScrollBarPolicy.ScrollBarAlwaysOff
    assert after.document().size().width() <= after.viewport().width()  # the text wraps in the view
    narrow = render("| model | VRAM |\n|---|---:|\n| 7B | 4.1 GiB |\n\nDone.", width=500)
    assert narrow.parts()[0].horizontalScrollBarPolicy() == Qt.ScrollBarPolicy.ScrollBarAlwaysOff


def test_strikethrough(render):
    view = render("It is ~~slow~~ fast.")
    document = documents(view)[0]
    assert document.toPlainText() == "It is slow fast."
    cursor = QTextCursor(document)
    cursor.setPosition(document.toPlainText().index("slow") + 1)
    assert cursor.charFormat().fontStrikeOut()
    cursor.setPosition(document.toPlainText().index("fast") + 1)
    assert not cursor.charFormat().fontStrikeOut()


def test_inline_html_is_shown_as_text_and_dollars_stay_literal(render):
    view = render('Use <b>bold</b> or <script>alert(1)</script>; it costs $5, not $x$.')
    assert view.plain_text() == 'Use <b>bold</b> or <script>alert(1)</script>; it costs $5, not $x$.'


def test_links_open_in_the_browser_only_for_web_schemes(render, qtbot, monkeypatch):
    opened = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url.toString()) or True)
    view = render("See [the docs](https://example.org/docs) or [this](file:///etc/passwd) "
                  "or [that](/home/user/.ssh/id_rsa).")
    prose = view.parts()[0]
    html = prose.toHtml()
    assert 'href="https://example.org/docs"' in html and "file:" not in html and ".ssh" not in html
    assert prose.toPlainText() == "See the docs or this or that."  # unsafe targets: text only
    document = prose.document()
    cursor = QTextCursor(document)
    cursor.setPosition(document.toPlainText().index("the docs") + 2)
    with qtbot.waitSignal(prose.link_opened):
        qtbot.mouseClick(prose.viewport(), Qt.MouseButton.LeftButton, pos=prose.cursorRect(cursor).center())
    assert opened == ["https://example.org/docs"]


def test_images_from_the_model_are_never_loaded(render, monkeypatch):
    loads = []
    monkeypatch.setattr(ProseView, "loadResource", lambda self, kind, url: loads.append(url) or None)
    view = render("![secret](file:///etc/passwd) ![cat](https://example.org/cat.png)")
    assert loads == []
    assert view.plain_text() == "[secret] [cat]"
    assert "<img" not in to_html("![cat](https://example.org/cat.png)", TextColours.from_palette(view.palette()))


def test_a_20k_character_line_does_not_widen_the_column(qtbot):
    chat = ChatView()
    qtbot.addWidget(chat)
    chat.resize(520, 600)
    chat.show()
    url = "https://example.org/" + "a" * 19_900  # one 20k-character line (MAX_SHOWN_CHARS)
    chat.add_message(Role.USER, url)
    bubble = chat.add_message(Role.ASSISTANT, "```\n" + "x = 1; " * 3000 + "\n```")
    QApplication.processEvents()
    qtbot.wait(20)
    column = chat.widget()
    assert column.width() <= chat.viewport().width()
    assert chat.horizontalScrollBar().maximum() == 0
    prose = chat.bubbles()[0]._body.parts()[0]
    assert prose.height() > 10 * prose.fontMetrics().lineSpacing()  # the URL wraps inside the column
    assert chat.bubbles()[0].shown_text() == url
    code = bubble._body.code_blocks()[0]
    assert code.width() < 520 and code.text_view.horizontalScrollBar().maximum() > 10_000  # scrolls inside


def test_streamed_and_final_render_agree(qtbot):
    text = "Intro line\n1. first\n\n2. second\n\n```python\nprint('<ok>')\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    chat = ChatView()
    qtbot.addWidget(chat)
    chat.resize(600, 600)
    streamed = chat.begin_stream()
    for end in range(1, len(text) + 1, 7):
        chat.append_stream(text[end - 1:end + 6])
        chat.flush()
    chat.end_stream()
    loaded = chat.add_message(Role.ASSISTANT, text, MessageStatus.COMPLETE)
    assert streamed.text == text
    assert streamed.shown_text() == loaded.shown_text()
    assert [type(p) for p in streamed._body.parts()] == [type(p) for p in loaded._body.parts()]
    assert [p.fragments() for p in streamed._body.parts() if isinstance(p, ProseView)] == \
        [p.fragments() for p in loaded._body.parts() if isinstance(p, ProseView)]


@pytest.mark.parametrize("language,code", [
    ("python", "def f(x):\n\treturn x < 1 and x > -1  # <ok> & done\n\n\n"),
    ("javascript", "if (a < b && c > d) { console.log('&amp;'); }"),
    ("bash", "echo \"$HOME\" > /tmp/x && cat <<EOF\nhi\nEOF"),
    ("no-such-language", "a < b"),
    ("", "\n\nleading blank lines"),
])
def test_highlighting_keeps_the_code_exactly(render, language, code):
    view = render(f"```{language}\n{code}\n```")
    view.code_blocks()[0].highlight_now()
    assert view.code_blocks()[0].plain_text() == code
    colours = TextColours.from_palette(view.palette())
    assert "<" not in highlight_html(code, language, colours).replace("<span", "").replace("</span>", "") \
        .replace("&lt;", "")


def test_split_blocks_keeps_nested_code_in_prose_and_open_fences_as_code():
    blocks = split_blocks("Text\n\n- item\n\n  ```\n  nested\n  ```\n\n```py\nopen")
    assert [(b.kind, b.language) for b in blocks] == [("prose", ""), ("code", "py")]
    assert blocks[1].text == "open"


def test_code_is_highlighted_when_first_painted_not_when_loaded(qtbot):
    from app.ui.code_block_view import CodeBlockView

    calls = []
    original = CodeBlockView.highlight_now

    def counting(self):
        calls.append(self)
        original(self)

    CodeBlockView.highlight_now = counting
    try:
        chat = ChatView()
        qtbot.addWidget(chat)
        chat.resize(600, 500)
        chat.show()
        answer = "Code:\n\n```python\nx = 1 < 2\n" + "y = 3\n" * 30 + "```"
        for _ in range(30):
            chat.add_message(Role.USER, "again?")
            chat.add_message(Role.ASSISTANT, answer)
        blocks = [b._body.code_blocks()[0] for b in chat.bubbles()[1::2]]
        qtbot.waitUntil(lambda: blocks[-1].is_highlighted(), timeout=10_000)  # the last one is on screen
        qtbot.wait(50)
        painted = [block for block in blocks if block.is_highlighted()]
        assert 1 <= len(painted) <= 5  # those on screen (the view follows the end), not all 30
        assert blocks[0].code == "x = 1 < 2\n" + "y = 3\n" * 29 + "y = 3"
        assert "color:" not in blocks[0].text_view.toHtml().split("<body")[1]  # never painted: plain
        blocks[0].highlight_now()
        assert "color:" in blocks[0].text_view.toHtml() and blocks[0].plain_text() == blocks[0].code
    finally:
        CodeBlockView.highlight_now = original


@pytest.mark.parametrize("language", ["python", ""])
def test_copy_sits_at_the_right_with_or_without_a_language(qtbot, language):
    """New-user trial: a code block without a language showed its Copy button centred."""
    from app.ui.code_block_view import CodeBlockView

    block = CodeBlockView()
    qtbot.addWidget(block)
    block.resize(500, 120)
    block.set_code("x = 1\n", language, TextColours.from_palette(block.palette()))
    block.show()
    qtbot.waitExposed(block)
    assert block.width() - block.copy_button.geometry().right() <= 8


@pytest.mark.parametrize("text", ["Answer:\n```", "Answer:\n```python\n", "Answer:\n```\n\n```",
                                  "Answer:\n```\n  \n\n```"])
def test_an_empty_or_just_opened_fence_draws_no_box_and_no_copy(render, text):
    view = render(text)
    assert view.code_blocks() == []
    assert view.findChildren(QToolButton) == []  # no Copy for nothing
    assert view.sizeHint().height() < 3 * view.fontMetrics().lineSpacing()  # the one line of prose


def test_a_fence_streamed_before_its_code_shows_the_box_only_once_code_comes(qtbot):
    chat = ChatView()
    qtbot.addWidget(chat)
    chat.resize(600, 600)
    bubble = chat.begin_stream()
    chat.append_stream("Here:\n```python\n")
    chat.flush()
    assert bubble._body.code_blocks() == []
    chat.append_stream("print(1)\n")
    chat.flush()
    [code] = bubble._body.code_blocks()
    assert code.plain_text() == "print(1)"
    chat.end_stream()


def test_an_empty_code_block_widget_is_one_line_tall(qtbot):
    from app.ui.code_block_view import CodeBlockView

    block = CodeBlockView()
    qtbot.addWidget(block)
    block.set_code("", "", TextColours.from_palette(block.palette()))
    line = block.text_view.fontMetrics().lineSpacing()
    assert block.text_view.height() < 2 * line + 2 * 6 + 4  # one line and the document margins


def test_the_code_scroll_bar_is_the_thin_styled_one(qtbot):
    """A scroll area with a stylesheet background draws Qt's fallback bar (a black handle, arrow
    buttons: trial 12); the app's stylesheet gives the code its own thin bar."""
    from app.ui.application import load_stylesheet

    chat = ChatView()
    qtbot.addWidget(chat)
    chat.setStyleSheet(load_stylesheet())
    chat.resize(460, 300)
    chat.show()
    bubble = chat.add_message(Role.ASSISTANT, "```python\n" + "x = 1; " * 40 + "\n```")
    QApplication.processEvents()
    qtbot.wait(20)
    bar = bubble._body.code_blocks()[0].text_view.horizontalScrollBar()
    assert bar.isVisible() and bar.maximum() > 0
    assert bar.height() == 8
