"""Settings and the backend (app.chat.backend): what the chat says when it stores an API key."""

import json

from app.core.backend_settings import REMOTE, BackendSettings, RemoteSettings

URL = "http://gpu-box:8000/v1"


def test_an_unparseable_key_file_is_kept_aside_and_said(chat, scratch_config, no_keyring):
    """The next key save wrote over an api_keys.json it could not parse, in silence."""
    (scratch_config / "api_keys.json").write_text('{"http://old/v1": "sk-', encoding="utf-8")
    remote = BackendSettings(REMOTE, RemoteSettings(URL, "m"))
    chat.backend.apply_settings(chat.settings.generation, remote, api_key="sk-new")
    [kept] = scratch_config.glob("api_keys.unreadable-*.json")
    assert chat.recorded.of("notice")[-2:] == [
        (f"api_keys.json could not be read, so the keys in it were not used; it was kept as {kept}.", "error"),
        ("API key stored in api_keys.json (owner-only)", "status")]
    assert json.loads((scratch_config / "api_keys.json").read_text()) == {URL: "sk-new"}
    chat.backend.apply_settings(chat.settings.generation, remote, api_key="")  # a good file: nothing more said
    assert chat.recorded.of("notice")[-1] == ("API key forgotten", "status")
    assert len([n for n in chat.recorded.of("notice") if "could not be read" in n[0]]) == 1


def test_a_key_that_cannot_be_stored_says_why_in_the_windows_language(chat, scratch_config, no_keyring):
    """The OS's English strerror ("Is a directory") stood in the Korean window's notice: the reason
    is said in the plain words exports use (app.chat.error_text.os_error_text)."""
    from tests.helpers.marking_translator import marking

    (scratch_config / "api_keys.json").mkdir()  # a folder where the key file belongs: cannot be read
    remote = BackendSettings(REMOTE, RemoteSettings(URL, "m"))
    with marking("Backend", "PlainError"):
        chat.backend.apply_settings(chat.settings.generation, remote, api_key="sk-new")
    # the key file named, as other save failures name theirs
    assert (f"«Could not store the API key in {scratch_config / 'api_keys.json'}: «it is a folder, not a file». "
            "It is used until Headroom closes.»", "error") in chat.recorded.of("notice")
    # and it is: the turn's lookup finds it (trial 14: a read-only config folder sent the turn keyless, and
    # the server's refusal pointed at a key that was right)
    from app.core import secrets

    assert secrets.load_api_key(URL) == "sk-new"
    chat.backend.apply_settings(chat.settings.generation, remote, api_key="")  # forgotten, though not stored
    assert secrets.load_api_key(URL) == ""
