"""User text (chat titles, file names, server errors) shown literally in Qt's text widgets.

QLabel and tooltips guess rich text (Qt.mightBeRichText): a chat titled `a &amp; b <div> *x*`
would show `a & b`, a line break and `*x*`. Labels that hold user text set
Qt.TextFormat.PlainText; tooltips have no format switch, so theirs go through `plain_tooltip`.
"""

from PySide6.QtGui import Qt


def plain_tooltip(text: str) -> str:
    """`text` as a tooltip shows it: unchanged when Qt would take it for plain text, else
    escaped into a `<p>…</p>` paragraph (newlines kept as line breaks)."""
    if not Qt.mightBeRichText(text):
        return text
    return Qt.convertFromPlainText(text)
