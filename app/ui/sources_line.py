"""Under an answer: the document excerpts its prompt held, each a link ("Sources: manual.pdf #17,
page 12 · #18"); clicking one opens it in a SourceDialog (issue 18, item 3). The excerpts of a
file the user removed since are only named: "vault.txt (removed attachment)"."""

import html
from collections.abc import Sequence

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import QLabel, QSizePolicy

from app.ui.source_dialog import SourceDialog


class SourcesLine(QLabel):
    """No signals: a link opens its excerpt here (`dialog`: the last one opened)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("bubbleSources")
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.LinksAccessibleByMouse
                                     | Qt.TextInteractionFlag.LinksAccessibleByKeyboard)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.sources: tuple = ()
        self.dialog: SourceDialog | None = None
        self.linkActivated.connect(self._on_link_activated)
        self.setVisible(False)

    def set_sources(self, sources: Sequence) -> None:
        """Citations, in the order the prompt held them (none: hidden). A document's name is
        written once, before its first excerpt. A removed document's excerpts (Citation.removed:
        their text is gone) are one plain "name (removed attachment)", not links."""
        self.sources = tuple(sources)
        links, named = [], set()
        for index, citation in enumerate(self.sources):
            if citation.removed:
                if citation.name not in named:
                    named.add(citation.name)
                    links.append(html.escape(self.tr("{0} (removed attachment)").format(citation.name)))
                continue
            text = f"#{citation.chunk_id}"
            if citation.name not in named:
                named.add(citation.name)
                text = f"{citation.name} {text}"
            if citation.page:
                text = self.tr("{0}, page {1}").format(text, citation.page)
            links.append(f'<a href="{index}">{html.escape(text)}</a>')
        self.setText(self.tr("Sources: {0}").format(" · ".join(links)) if links else "")
        self.setToolTip(self.tr("The document excerpts this answer was given; click one to read it"))
        self.setVisible(bool(self.sources))

    @Slot(str)
    def _on_link_activated(self, href: str) -> None:
        self.open_source(int(href))

    def open_source(self, index: int) -> SourceDialog:
        """Open the excerpt at `index` (window-modal, never blocks the event loop)."""
        self.dialog = SourceDialog(self.sources[index], self.window())
        self.dialog.open()
        return self.dialog
