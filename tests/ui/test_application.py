"""app.ui.application's own words: what read_settings' note says in the window."""

from app.core.settings import (
    HOLDS_CREDENTIALS,
    NOT_A_CHOICE,
    NOT_A_NUMBER,
    NOT_AN_OBJECT,
    NOT_FINITE,
    NOT_TEXT,
    NOT_WHOLE,
    OUT_OF_RANGE,
    OUT_OF_RANGE_DEFAULT,
    RANDOM_SEED,
    UnreadSettings,
    UnusableSettings,
    UnusableValue,
    read_settings,
)
from app.ui.application import settings_note_text


def test_values_not_used_are_said_in_english_exactly_as_on_the_command_line(qapp, tmp_path):
    """New-user trial: `"temperature": "hot"` was said as raw log lines and not in the window. The
    window's English is the line `--ask` prints (UnusableSettings' str), every kind of problem."""
    note = UnusableSettings((
        UnusableValue("temperature", NOT_A_NUMBER, '"hot"', "0.7"),
        UnusableValue("top_p", NOT_FINITE, "Infinity", "0.95"),
        UnusableValue("top_k", NOT_WHOLE, "1.5", "0"),
        UnusableValue("system_prompt", NOT_TEXT, "42", '"You are a helpful assistant."'),
        UnusableValue("min_p", OUT_OF_RANGE, "7", "1.0"),
        UnusableValue("repetition_penalty", OUT_OF_RANGE_DEFAULT, "0", "1.0"),
        UnusableValue("seed", NOT_A_NUMBER, '"soon"', RANDOM_SEED),
        UnusableValue("generation", NOT_AN_OBJECT, "[]"),
        UnusableValue("language", NOT_A_CHOICE, '"kr"', '"auto"'),
        UnusableValue("backend.remote.base_url", HOLDS_CREDENTIALS, '"http://…@h/v1"', '"http://h/v1"'),
    ))
    assert settings_note_text(note) == str(note)
    path = tmp_path / "settings.json"
    path.write_text('{"generation": {"temperature": "hot"}}', encoding="utf-8")
    _settings, read = read_settings(path)
    assert settings_note_text(read) == 'Settings: temperature "hot" is not a number; the default 0.7 is used.'
    unread = UnreadSettings("nested too deeply", "settings.unreadable-1.json")  # the other note, as before
    assert settings_note_text(unread) == str(unread)
