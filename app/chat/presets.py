"""Presets for the open chat (issue 17, item 2): pick one and the chat takes its system prompt and
sampling; the user's own library (app.core.presets) grows by "save these settings", import and
export. The pick is the conversation's own: stored with it ("preset" in its settings), never made
the default for other chats.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication, QObject, Slot

from app.chat import saving
from app.chat.error_text import os_error_line, os_error_text
from app.core import presets as core
from app.core.backend_settings import conversation_settings
from app.core.presets import (
    BUILTIN_PRESETS,
    PRESET_FIELDS,
    ChangedValue,
    IgnoredKey,
    Preset,
    PresetError,
    PresetLibrary,
    export_presets,
    import_presets,
    name_key,
    presets_path,
    read_presets,
    save_presets,
)

if TYPE_CHECKING:
    from app.chat.chat import Chat

# a preset is about the conversation, not the machine: the CPU threads stay the user's
_SAVED_FIELDS = tuple(name for name in PRESET_FIELDS if name != "cpu_threads")


_RENAMES_SAID = 3
"""How many renamed presets an import names in its status line; the rest are counted."""
_NOTES_SAID = 2
"""How many of an import's notes (unknown settings and fields ignored) its status line says."""
_NOTE_CHARS = 100  # a note quotes the file's key, which may be any length
_CHANGED_SAID = 2
"""How many presets an import names the changed (clamped) values of; the rest are counted."""

translate = QCoreApplication.translate  # lupdate reads translate("Context", "source") calls


class Presets(QObject):
    """The translation context "Presets" for counted words ("Imported 1 preset"): lupdate reads
    Presets.tr(text, "", n) as a plural message, never translate(context, text, None, n).
    Never instantiated; no signals."""

# The built-ins' names and descriptions (app.core.presets.BUILTIN_PRESETS, stored in English, no
# Qt there), marked here so lupdate puts them in the catalogue; display_* translate them.
BUILTIN_TEXTS = (
    QT_TRANSLATE_NOOP("Presets", "Balanced"), QT_TRANSLATE_NOOP("Presets", "Today's defaults: varied but on topic."),
    QT_TRANSLATE_NOOP("Presets", "Precise"),
    QT_TRANSLATE_NOOP("Presets", "Nearly greedy: facts, extraction, short exact answers."),
    QT_TRANSLATE_NOOP("Presets", "Creative"),
    QT_TRANSLATE_NOOP("Presets", "Stories and brainstorming: more varied words, fewer repeats."),
    QT_TRANSLATE_NOOP("Presets", "Code"),
    QT_TRANSLATE_NOOP("Presets", "Programming: low temperature, long replies, no penalty on repeated tokens."),
    QT_TRANSLATE_NOOP("Presets", "한국어 도우미"),
    QT_TRANSLATE_NOOP("Presets", "Answers in natural Korean whatever the question's language."),
)


# the settings a preset sets, named as the Settings dialog names them (its translations: trial 4
# read "temperature 0.7 · top p 0.95" in English in the Korean window); the others by their field
FIELD_LABELS = {
    "max_new_tokens": QT_TRANSLATE_NOOP("SettingsDialog", "Max new tokens"),
    "temperature": QT_TRANSLATE_NOOP("SettingsDialog", "Temperature"),
    "top_p": QT_TRANSLATE_NOOP("SettingsDialog", "Top-p"),
    "top_k": QT_TRANSLATE_NOOP("SettingsDialog", "Top-k"),
    "min_p": QT_TRANSLATE_NOOP("SettingsDialog", "Min-p"),
    "repetition_penalty": QT_TRANSLATE_NOOP("SettingsDialog", "Repetition penalty"),
    "seed": QT_TRANSLATE_NOOP("SettingsDialog", "Seed"),
    "context_tokens": QT_TRANSLATE_NOOP("SettingsDialog", "Context window"),
    "cpu_threads": QT_TRANSLATE_NOOP("SettingsDialog", "CPU threads"),
    "summary_fold_at": QT_TRANSLATE_NOOP("SettingsDialog", "Summarize from"),
    "summary_keep_turns": QT_TRANSLATE_NOOP("SettingsDialog", "Keep verbatim"),
}


def setting_label(field: str) -> str:
    """A GenerationSettings field as the Settings dialog names it, in the window's language; one
    it has no control for by its field name ("presence penalty")."""
    label = FIELD_LABELS.get(field)
    return translate("SettingsDialog", label) if label else field.replace("_", " ")


def display_name(preset: Preset) -> str:
    """A built-in's name in the window's language (stored in English); a user's as written."""
    return translate("Presets", preset.name) if preset.builtin else preset.name


def display_description(preset: Preset) -> str:
    """A built-in's description in the window's language; a user's as written."""
    return translate("Presets", preset.description) if preset.builtin else preset.description


class PresetFlow(QObject):
    """The preset library and the open chat's pick (chat.preset_name, "" for none). No signals of
    its own: the Chat's presets_changed is emitted here. Every expected failure (an unreadable
    file, a clashing name) is said on the notice funnel and changes nothing."""

    def __init__(self, chat: Chat, presets_path: Path | None = None):
        """presets_path: the user's presets.json (default: in the config folder)."""
        super().__init__(chat)
        self._chat = chat
        self._path = presets_path
        self.library, self._load_error = PresetLibrary(), ""
        self._left_unread = False  # presets.json is still there, unread: saving would replace it
        try:
            self.library, kept = read_presets(presets_path)
        except PresetError as exc:  # a folder, no permission, not movable: work without it, say so at start
            self._left_unread = True
            self._load_error = translate("Presets", "Your presets could not be read: {0}").format(_reason(exc))
        else:
            if kept is not None:  # broken JSON, a bad preset: moved aside, said like a broken settings.json
                self._load_error = translate(
                    "Presets", "Your presets could not be read: {0}. The file was kept as {1}, and the built-in "
                    "presets are used.").format(_reason(kept.error) if kept.error else kept.reason, kept.kept_as)

    def current(self) -> str:
        """The chat's preset when its settings still hold that preset's values, else the built-in
        whose values they hold, else "" (custom). So settings never given a preset (a fresh
        install's defaults, a chat from before presets) show the built-in they are: the defaults
        are Balanced's (trial 8: a fresh install said "Custom settings"). User presets are not
        guessed: one that sets a field or two would match most settings."""
        chat = self._chat
        generation = chat.settings.generation.validated()
        picked = self.library.get(chat.preset_name) if chat.preset_name else None
        candidates = (picked, *BUILTIN_PRESETS) if picked is not None else BUILTIN_PRESETS
        return next((p.name for p in candidates if p.apply(generation) == generation), "")

    def show_presets(self) -> None:
        """Emit presets_changed with every preset and the chat's current pick."""
        self._chat.presets_changed.emit(list(self.library.all), self.current())
        if self._load_error:  # once, at the first showing
            self._chat.announce(self._load_error, "error")
            self._load_error = ""

    @Slot(str)
    def apply(self, name: str) -> None:
        """Give the open chat the preset `name`'s settings (kept with the conversation)."""
        chat = self._chat
        preset = self.library.get(name)
        if preset is None:
            chat.announce(translate("Presets", "There is no preset named {0}.").format(name), "error")
            return
        chat.settings = replace(chat.settings, generation=preset.apply(chat.settings.generation))
        chat.preset_name = preset.name
        self.save_pick()
        self.show_presets()
        chat.announce(translate("Presets", "Preset: {0}").format(display_name(preset)), "status")
        chat.models.say_new_tokens_limit()  # e.g. Code's 2,048 on a 2,048-token model

    def settings_edited(self) -> None:
        """After the Settings dialog: keep the pick with the conversation and show whether the
        edited settings are still the preset's."""
        self.save_pick()
        self.show_presets()

    def save_pick(self) -> None:
        """Write the open conversation's settings with its preset (none yet: when it is made)."""
        chat = self._chat
        if chat.conversation_id is not None:
            chat.save(lambda: chat.store.update_settings(chat.conversation_id, self.conversation_settings()),
                      saving.not_kept())

    def conversation_settings(self) -> dict:
        """What the conversation row stores: its settings, backend and preset name."""
        chat = self._chat
        stored = conversation_settings(chat.settings.generation, chat.settings.backend)
        return stored | ({"preset": chat.preset_name} if chat.preset_name else {})

    def save_current(self, name: str, description: str = "") -> bool:
        """Add the chat's settings to the library as `name` (a user preset); says why not."""
        try:
            preset = Preset.from_settings(name, self._chat.settings.generation, description, only=_SAVED_FIELDS)
            self._commit(self.library.with_preset(preset))
        except (PresetError, OSError) as exc:
            self._chat.announce(translate("Presets", "The preset was not saved: {0}").format(_reason(exc)), "error")
            return False
        self._chat.preset_name = preset.name
        self.save_pick()
        self.show_presets()
        return True

    def delete(self, name: str) -> None:
        """Remove a user preset from the library (built-ins cannot be removed)."""
        try:
            self._commit(self.library.without(name))
        except (PresetError, OSError) as exc:
            self._chat.announce(translate("Presets", "The preset was not removed: {0}").format(_reason(exc)), "error")
            return
        if name_key(self._chat.preset_name) == name_key(name):  # the chat keeps the settings, not the name
            self._chat.preset_name = ""
            self.save_pick()
        self.show_presets()

    def import_file(self, path: Path) -> bool:
        """Add the presets in the JSON file `path` (a name taken gets " (2)"); all or nothing."""
        try:
            library, result = import_presets(self.library, Path(path))
            self._commit(library)
        except (PresetError, OSError) as exc:
            self._chat.announce(translate("Presets", "Nothing was imported: {0}").format(_reason(exc)), "error")
            return False
        renamed = _first_few([f"{old} → {new}" for old, new in result.renamed], _RENAMES_SAID)
        text = Presets.tr("Imported {0} presets", "", len(result.added)).format(f"{len(result.added):,}")
        text += f" ({renamed})" if renamed else ""
        if result.changed:  # new-user trial: max new tokens -5 became 1 in silence, 1-token answers
            text += "; " + translate("Presets", "values outside their range were changed: {0}").format(
                _changed_text(result.changed, named=len(result.added) > 1))
        # what was dropped is said, not dropped in silence: a preset from a newer Headroom or
        # another app may lose a setting the user counts on
        notes = [_ignored_text(note) for note in result.notes]
        text += f"; {_first_few(notes, _NOTES_SAID, _NOTE_CHARS)}" if notes else ""
        self._chat.announce(text, "status")
        self.show_presets()
        return True

    def export_file(self, path: Path, names: list[str] | None = None) -> bool:
        """Write the presets `names` (default: the user's own) to the JSON file `path`."""
        presets = self.library.user if names is None else [p for p in self.library.all if p.name in names]
        if not presets:  # trial 7: an empty file and "Exported 0 presets"
            self._chat.announce(translate("Presets", "Nothing to export: you have no presets of your own yet. "
                                                     "Select a preset to export it, or save these settings as "
                                                     "one first."), "error")
            return False
        try:
            export_presets(presets, Path(path))
        except OSError as exc:
            self._chat.announce(translate("Presets", "Could not export to {0}: {1}").format(path, os_error_text(exc)),
                                "error")
            return False
        # said, so a user knows the click did something and where the file went (third trial)
        text = Presets.tr("Exported {0} presets to {1}", "", len(presets))
        self._chat.announce(text.format(f"{len(presets):,}", Path(path).name), "status")
        return True

    def _commit(self, library) -> None:
        """Save `library` as the user's and keep it. PresetError while the presets file that could
        not be read at start is still in place: `library` lacks what it holds, and writing would
        replace it (a file without read permission was replaced at the first save)."""
        path = self._path or presets_path()
        if self._left_unread and os.path.lexists(path):
            raise PresetError(translate(
                "Presets", "{0} could not be read when Headroom started and is left as it is; move it away, "
                "or fix it and restart Headroom, to save presets").format(path))
        save_presets(library, self._path)
        self.library, self._left_unread = library, False


def _changed_text(changed: Sequence[ChangedValue], named: bool) -> str:
    """"Max new tokens -5 → 1, Seed 0.5 → random" for the changed values, each preset's after its name
    when `named` ("Wild: Top-p -1 → 0.01; Calm: …"); the first _CHANGED_SAID presets, the rest counted."""
    by_preset: dict[str, list[str]] = {}
    for change in changed:
        by_preset.setdefault(change.preset, []).append(
            f"{setting_label(change.setting)} {_value_text(change.given)} → {_value_text(change.kept)}")
    return _first_few([f"{name}: {', '.join(parts)}" if named else ", ".join(parts)
                       for name, parts in by_preset.items()], _CHANGED_SAID)


def _ignored_text(note: IgnoredKey) -> str:
    """An unknown key the import dropped, in the window's language (trial 8: English in Korean)."""
    text = (translate("Presets", "preset “{0}”: unknown field “{1}” ignored") if note.field
            else translate("Presets", "preset “{0}”: unknown setting “{1}” ignored"))
    return text.format(note.preset, note.key)


def _value_text(value: object) -> str:
    """A setting's value as the import message shows it: 1,048,576, 0.01, 2 (not 2.0), random."""
    if value is None:  # only a seed: a fractional one is no seed
        return translate("SettingsDialog", "random")
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,g}" if isinstance(value, float) else str(value)


def _first_few(items: Sequence[str], said: int, longest: int | None = None) -> str:
    """The first `said` of `items` joined with "; " (each cut to `longest` characters, if given) and
    "… +n" for the rest: one status line, not thousands of names."""
    shown = [item if longest is None or len(item) <= longest else item[:longest - 1] + "…" for item in items[:said]]
    return "; ".join(shown) + (f"; … +{len(items) - said:,}" if len(items) > said else "")


# PresetError kinds (app.core.presets) in the window's language, the settings by their labels
# (trial 9: "preset 'NaNs': temperature = nan is not a usable value" in the Korean window)
_ERROR_TEXTS = {
    core.NO_NAME: QT_TRANSLATE_NOOP("Presets", "a preset needs a name"),
    core.LONG_NAME: QT_TRANSLATE_NOOP("Presets", "the preset name “{preset}…” is longer than {value} characters"),
    core.NOT_A_PRESET: QT_TRANSLATE_NOOP("Presets", "preset {value} is not a preset (an object with a name and "
                                                    "values)"),
    core.VALUES_NOT_AN_OBJECT: QT_TRANSLATE_NOOP("Presets", "preset “{preset}”: its “values” must be an object of "
                                                            "settings"),
    core.NOT_TEXT: QT_TRANSLATE_NOOP("Presets", "preset “{preset}”: {setting} is not a text ({value})"),
    core.NOT_A_NUMBER: QT_TRANSLATE_NOOP("Presets", "preset “{preset}”: {setting} is not a number ({value})"),
    core.UNUSABLE: QT_TRANSLATE_NOOP("Presets", "preset “{preset}”: {setting} is not a usable number ({value})"),
    core.MISPLACED: QT_TRANSLATE_NOOP("Presets", "preset “{preset}”: its settings ({value}) belong under “values”, "
                                                 "as Headroom exports them"),
    core.NO_SETTINGS: QT_TRANSLATE_NOOP("Presets", "preset “{preset}” has no setting Headroom knows under “values”"),
    core.OTHER_FORMAT: QT_TRANSLATE_NOOP("Presets", "this is not a Headroom presets file (format {value})"),
    core.NAME_TAKEN: QT_TRANSLATE_NOOP("Presets", "a preset named “{preset}” already exists"),
    core.BUILTIN_NAME: QT_TRANSLATE_NOOP("Presets", "“{preset}” is a built-in preset; choose another name"),
    core.NO_SUCH_PRESET: QT_TRANSLATE_NOOP("Presets", "there is no preset named “{preset}”"),
    core.BUILTIN_KEPT: QT_TRANSLATE_NOOP("Presets", "“{preset}” is a built-in preset and cannot be removed"),
    core.NOT_A_TEXT_FILE: QT_TRANSLATE_NOOP("Presets", "{file} is not a text file"),
    core.NOT_JSON: QT_TRANSLATE_NOOP("Presets", "{file} is not valid JSON (line {line}, column {column})"),
    core.TOO_DEEP: QT_TRANSLATE_NOOP("Presets", "{file} is not valid JSON (nested too deeply)"),
    core.NOT_MOVABLE: QT_TRANSLATE_NOOP("Presets", "the presets file {file} cannot be read or moved aside"),
    core.NO_PRESETS: QT_TRANSLATE_NOOP("Presets", "{file} holds no presets"),
}
_VALUE_CHARS = 40  # a value quoted from the file may be any length


def preset_error_text(exc: PresetError) -> str:
    """Why a preset change or an import was refused, in the window's language: the settings named
    as Settings names them, a value as the file wrote it (NaN, true, "hot"). A PresetError without
    a kind is said as it is (its text is the chat's own, already translated)."""
    if exc.kind == core.FILE_UNREADABLE:
        return f"{exc.file}: {os_error_text(exc.value)}"
    template = _ERROR_TEXTS.get(exc.kind)
    if template is None:
        return str(exc)
    value = exc.value
    if exc.kind in (core.NOT_TEXT, core.NOT_A_NUMBER, core.UNUSABLE, core.OTHER_FORMAT):
        value = _file_value(value)
    elif exc.kind == core.MISPLACED:
        value = ", ".join(value)
    line, column = exc.value if exc.kind == core.NOT_JSON else (0, 0)
    # a built-in's name in the window's language (its stored name is English)
    preset = translate("Presets", exc.preset) if exc.kind in (core.BUILTIN_NAME, core.BUILTIN_KEPT) else exc.preset
    return translate("Presets", template).format(preset=preset, setting=setting_label(exc.setting), value=value,
                                                 file=exc.file, line=line, column=column)


def _file_value(value: object) -> str:
    """`value` as the JSON file wrote it (NaN, true, "hot", [1, 2]), cut to _VALUE_CHARS."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _VALUE_CHARS else text[:_VALUE_CHARS - 1] + "…"


def _reason(exc: Exception) -> str:
    """Why a preset could not be saved, removed, imported or read, in the window's language."""
    return preset_error_text(exc) if isinstance(exc, PresetError) else os_error_line(exc)
