"""A stand-in catalogue that proves a text went through Qt's translation: every source string of
the given contexts comes back as «source» (its placeholders kept, so .format still fills them),
whether or not the Korean catalogue has it yet. Text that reaches the window without passing
translate()/tr() keeps no «» marks. Use: `with marking("Saving"): ...`."""

from contextlib import contextmanager

from PySide6.QtCore import QCoreApplication, QTranslator


class MarkingTranslator(QTranslator):
    """Translates the messages of `contexts` to «source»; other contexts are left to the others."""

    def __init__(self, *contexts: str):
        super().__init__()
        self.contexts = set(contexts)

    def translate(self, context, source, disambiguation=None, n=-1):
        return f"«{source}»" if context in self.contexts else ""

    def isEmpty(self) -> bool:
        return False


@contextmanager
def marking(*contexts: str):
    """Install a MarkingTranslator for `contexts` (it wins over the catalogues installed before) while
    the block runs."""
    translator = MarkingTranslator(*contexts)
    app = QCoreApplication.instance()
    assert app.installTranslator(translator)
    try:
        yield translator
    finally:
        app.removeTranslator(translator)
