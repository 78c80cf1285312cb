"""Regenerate Headroom's translation catalogues from the sources, then compile them.

    python packaging/update_translations.py          # update resources/translations/*.ts, compile *.qm

pyside6-lupdate reads every `self.tr(...)`, `QCoreApplication.translate("Context", ...)` /
`translate("Context", ...)` and `QT_TRANSLATE_NOOP("Context", ...)` in app/ui and app/chat
(the engine and core have no Qt and no user-facing translations) and merges them into
headroom_ko.ts, keeping the translations already there; new strings come in "unfinished"
until someone translates them (Qt Linguist, or any editor: the file is XML). headroom_en.ts holds
only the plural forms ("%n turns" → "1 turn"), the English source being written in the plural.
lupdate reads a plural only from tr(text, disambiguation, n): self.tr in a class, ClassName.tr for
module-level text (app/ui/reply_stats_text.py); translate(context, text, None, n) is read as a
plain string, or dropped, since its Python parser takes a name there for Qt 4's encoding argument.
pyside6-lrelease then compiles both into the .qm files the app loads (app/ui/translations.py);
the .qm files are committed, so a checkout and the bundle need no Qt tools at run time.
Both tools ship in the PySide6 wheel, next to this venv's python.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATALOGUES = ROOT / "resources" / "translations"
SOURCE_DIRS = ("app/ui", "app/chat")
LANGUAGES = {"ko": ("ko_KR", []), "en": ("en_US", ["-pluralonly"])}


def tool(name: str) -> str:
    """pyside6-lupdate / pyside6-lrelease beside this interpreter (the venv's bin folder)."""
    path = Path(sys.executable).parent / name
    return str(path) if path.exists() else name


def sources(root: Path = ROOT) -> list[str]:
    """The Python files lupdate reads, relative to `root`, sorted."""
    return sorted(str(p.relative_to(root)) for d in SOURCE_DIRS for p in (root / d).rglob("*.py"))


def lupdate(ts: Path, language: str, extra: list[str], root: Path = ROOT) -> None:
    """Merge the sources' strings into `ts` (created when missing); obsolete entries are dropped."""
    subprocess.run([tool("pyside6-lupdate"), "-silent", "-no-obsolete", "-locations", "none",
                    "-target-language", language, *extra, *sources(root), "-ts", str(ts)],
                   cwd=root, check=True)


def lrelease(ts: Path) -> Path:
    qm = ts.with_suffix(".qm")
    subprocess.run([tool("pyside6-lrelease"), "-silent", str(ts), "-qm", str(qm)], check=True)
    return qm


def main() -> int:
    CATALOGUES.mkdir(parents=True, exist_ok=True)
    for code, (language, extra) in LANGUAGES.items():
        ts = CATALOGUES / f"headroom_{code}.ts"
        lupdate(ts, language, extra)
        print(f"{ts.relative_to(ROOT)} -> {lrelease(ts).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
