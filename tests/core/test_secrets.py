"""API keys: the OS keyring when one is usable, else an owner-only file; never settings.json,
never a log line; and each conversation keeps its backend choice."""

import json
import logging
import stat

import keyring
import pytest
from keyring.backend import KeyringBackend

from app.core import secrets
from app.core.backend_settings import LOCAL, REMOTE, BackendSettings, RemoteSettings, conversation_settings
from app.core.settings import GenerationSettings, Settings, load_settings, save_settings
from app.core.store import Store
from tests.helpers.unreadable import deny_reading

URL = "http://gpu-box:8000/v1"
KEY = "sk-test-0123456789abcdef"


class MemoryKeyring(KeyringBackend):
    """An in-memory keyring backend (what Secret Service / Keychain would be on a desktop)."""

    priority = 1

    def __init__(self):
        super().__init__()
        self.store = {}

    def get_password(self, service, username):
        return self.store.get((service, username))

    def set_password(self, service, username, password):
        self.store[(service, username)] = password

    def delete_password(self, service, username):
        self.store.pop((service, username), None)


@pytest.fixture
def memory_keyring():
    previous, ring = keyring.get_keyring(), MemoryKeyring()
    keyring.set_keyring(ring)
    yield ring
    keyring.set_keyring(previous)


def test_without_a_keyring_the_key_goes_to_an_owner_only_file(no_keyring, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    path = tmp_path / "config" / "api_keys.json"
    assert secrets.save_api_key(URL + "/", KEY, path) == ("file", None)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == {URL: KEY}
    assert secrets.load_api_key(URL, path) == KEY and secrets.load_api_key("http://other/v1", path) == ""
    assert secrets.save_api_key(URL, "", path).where == "file"  # forget it
    assert secrets.load_api_key(URL, path) == "" and json.loads(path.read_text()) == {}
    assert KEY not in caplog.text and "api_keys.json" in caplog.text



def test_a_key_file_saved_with_a_bom_is_read(no_keyring, tmp_path):
    """Notepad writes a BOM: the file was read as empty and its keys vanished from the user's view."""
    path = tmp_path / "api_keys.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({URL: KEY}).encode("utf-8"))
    assert secrets.load_api_key(URL, path) == KEY
    assert secrets.save_api_key("http://other/v1", "sk-other", path) == ("file", None)
    assert json.loads(path.read_text(encoding="utf-8")) == {URL: KEY, "http://other/v1": "sk-other"}


@pytest.mark.parametrize("content", [
    b"[" * 100_000 + b"]" * 100_000,  # raised RecursionError out of every lookup
    b'{"http://gpu-box:8000/v1": "sk-',  # cut short
    b"\xff\xfe{\x00}\x00",  # UTF-16
    b'["sk-not-an-object"]',
])
def test_a_key_file_that_cannot_be_parsed_is_kept_aside_not_overwritten(no_keyring, tmp_path, caplog, content):
    """It was read as {} and the next key save wrote over it: the keys in it were lost."""
    path = tmp_path / "api_keys.json"
    path.write_bytes(content)
    path.chmod(0o644)  # a file the user wrote by hand (trial 14: kept aside, it stayed readable by all)
    assert secrets.load_api_key(URL, path) == ""  # a lookup never raises (worker threads, every turn)
    assert path.read_bytes() == content  # a lookup changes nothing
    stored = secrets.save_api_key(URL, KEY, path)
    [kept] = tmp_path.glob("api_keys.unreadable-*.json")
    assert stored == ("file", kept) and kept.read_bytes() == content
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600  # it may hold keys: owner-only
    assert json.loads(path.read_text()) == {URL: KEY} and KEY not in caplog.text


def test_a_key_file_that_cannot_be_read_is_left_and_nothing_is_saved(no_keyring, tmp_path, monkeypatch):
    """No read permission: what it holds is unknown, so a save must not replace it (os.replace
    needs only the folder's permission)."""
    path = tmp_path / "api_keys.json"
    path.write_text(json.dumps({URL: KEY}), encoding="utf-8")
    allow_reading = deny_reading(monkeypatch, path)  # chmod 000 does not stop root, who runs some test boxes
    assert secrets.load_api_key(URL, path) == ""
    with pytest.raises(PermissionError):
        secrets.save_api_key("http://other/v1", "sk-other", path)
    allow_reading()
    assert json.loads(path.read_text(encoding="utf-8")) == {URL: KEY}
    assert list(tmp_path.iterdir()) == [path]

def test_a_usable_keyring_holds_the_key_and_the_file_does_not(memory_keyring, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    path = tmp_path / "api_keys.json"
    secrets._write_file(path, {URL: "old-key-from-the-file"})
    assert secrets.save_api_key(URL, KEY, path) == ("keyring", None)
    assert memory_keyring.store == {("headroom", URL): KEY}
    assert json.loads(path.read_text()) == {}  # one place only
    assert secrets.load_api_key(URL, path) == KEY
    assert KEY not in caplog.text and "OS keyring" in caplog.text


def test_settings_json_never_holds_the_key(no_keyring, tmp_path):
    backend = BackendSettings(REMOTE, RemoteSettings(URL, "meta-llama/Llama-3.1-8B-Instruct"))
    settings_file = tmp_path / "settings.json"
    save_settings(Settings(backend=backend), settings_file)
    secrets.save_api_key(URL, KEY, tmp_path / "api_keys.json")
    assert KEY not in settings_file.read_text()
    assert load_settings(settings_file).backend == backend


def test_backend_settings_read_back_and_malformed_values_give_way_one_by_one():
    remote = BackendSettings(REMOTE, RemoteSettings(URL, "m", read_timeout_s=9999, retries=-3))
    assert remote.validated().remote.read_timeout_s == 600.0 and remote.validated().remote.retries == 0
    assert BackendSettings.from_json(remote.to_json()) == remote.validated()
    assert BackendSettings.from_json(None) == BackendSettings(LOCAL)
    assert BackendSettings.from_json({"kind": "quantum", "remote": {"base_url": URL}}).kind == LOCAL
    # one bad value cost the whole object, and the next save wrote the server's URL away
    assert BackendSettings.from_json({"kind": REMOTE, "remote": {"base_url": URL, "retries": "many"}}) == \
        BackendSettings(REMOTE, RemoteSettings(URL))
    assert BackendSettings.from_json({"kind": REMOTE, "remote": {"base_url": URL, "model": "m", "retries": 2.5,
                                      "read_timeout_s": float("nan"), "backoff_s": True}}) == \
        BackendSettings(REMOTE, RemoteSettings(URL, "m"))  # NaN reached httpx as the read timeout
    assert RemoteSettings(URL, "org/Model-7B").display == "Model-7B @ gpu-box:8000"


def test_bad_remote_settings_are_explained():
    from app.core.backend_settings import BackendSettingsError

    with pytest.raises(BackendSettingsError, match="'gpu-box:8000' is not an http"):
        RemoteSettings("gpu-box:8000", "m").check()
    with pytest.raises(BackendSettingsError, match="no model name"):
        RemoteSettings(URL, "").check()
    for url in ("http://bob:sk-URLSECRET@gpu-box:8000/v1", "https://sk-URLSECRET@gpu-box/v1"):
        with pytest.raises(BackendSettingsError, match="user name or password before '@'") as info:
            RemoteSettings(url, "m").check()
        assert "URLSECRET" not in str(info.value)  # the message is logged: it must not repeat the secret


def test_a_key_written_into_settings_jsons_url_reaches_no_conversation_and_is_not_repeated(tmp_path):
    """New-user trial: "http://bob:sk-secret@host/v1" written into settings.json by hand (the Settings
    dialog refuses it) went into every conversation's stored settings and its JSON export. It is
    read without what stands before "@", said without repeating it, and the next save writes the
    URL without it."""
    from app.core.backend_settings import without_credentials
    from app.core.settings import read_settings

    settings_file = tmp_path / "settings.json"
    settings_file.write_text(json.dumps({"backend": {"kind": "remote", "remote": {
        "base_url": "http://bob:sk-URLSECRET@gpu-box:8000/v1", "model": "m"}}}), encoding="utf-8")
    settings, note = read_settings(settings_file)
    assert settings.backend == BackendSettings(REMOTE, RemoteSettings(URL, "m"))
    assert str(note) == ('Settings: backend.remote.base_url "http://…@gpu-box:8000/v1" holds a user name or password '
                         f"before '@'; \"{URL}\" is used: put the key in Settings, API key.")
    save_settings(settings, settings_file)
    assert "URLSECRET" not in settings_file.read_text()
    stored_row = {"kind": "remote", "remote": {"base_url": "https://sk-URLSECRET@gpu-box/v1", "model": "m"}}
    assert BackendSettings.from_json(stored_row).remote.base_url == "https://gpu-box/v1"  # a row written before
    with Store(tmp_path / "h.sqlite3") as store:  # a row written before: read, and exported, without the key
        cid = store.create_conversation("old", {"max_new_tokens": 64, "backend": stored_row})
        exported = json.loads(store.export_json(cid))
        assert exported["settings"]["backend"]["remote"]["base_url"] == "https://gpu-box/v1"
    assert without_credentials("http://[::1") == "http://[::1" and without_credentials("") == ""


@pytest.mark.parametrize("url", ["http://bob:pa/ss@gpu-box:8000/v1", "http://bob:hun#ter2@gpu-box:8000/v1",
                                 "http://bob:hun?ter2@gpu-box:8000/v1", "bob:hunter2@gpu-box:8000/v1",
                                 "http://bob:x@[::1:9/v1", "bob:pa://ss@gpu-box:8000/v1"])
def test_a_password_with_a_slash_or_no_scheme_is_still_a_password(url):
    """New-user re-trial: urlsplit ends the host at "/", "#" or "?", so "bob:pa/ss@…" passed the check,
    stayed in settings.json, and its port "pa" raised in the status bar's label at every start."""
    from app.core.backend_settings import BackendSettingsError, without_credentials

    assert "@" not in without_credentials(url) and "ss" not in without_credentials(url).split("gpu-box")[0]
    with pytest.raises(BackendSettingsError, match="user name or password before '@'"):
        RemoteSettings(url, "m").check()
    assert "bob" not in RemoteSettings(url, "m").display
    assert "bob" not in BackendSettings.from_json({"kind": REMOTE, "remote": {"base_url": url}}).remote.base_url


def test_an_unusable_port_is_refused_by_the_check_not_raised_by_the_label():
    """New-user re-trial: "http://127.0.0.1:99999/v1" (a port typo in Settings) was saved, and the status
    bar's label raised ValueError at every start: Headroom ended before its window."""
    from app.core.backend_settings import BackendSettingsError

    for url in ("http://127.0.0.1:99999/v1", "http://gpu-box:80000/v1", "http://gpu-box:port/v1", "http://[::1:9/v1"):
        remote = RemoteSettings(url, "m")
        assert remote.display == f"m @ {url}"
        with pytest.raises(BackendSettingsError, match="is not an http"):
            remote.check()
    # what httpx refuses later, once a second from the metrics poller (re-trial)
    for url in ("http://[::1]x:80/v1", "http://127.0.0.1\n:9/v1", "http://127.0.0.1\t:9/v1", "http://:8000/v1",
                "http://[zz]:8000/v1", "http://999.1.1.1:80/v1", "http://h:8000/v\x1b1", "http://h:8000/v1\x00",
                "http://h\x7f:8/v1"):
        with pytest.raises(BackendSettingsError, match="is not an http"):
            RemoteSettings(url, "m").check()
    for url, shown in (("http://[::1]:8000/v1", "[::1]:8000"), ("http://10.0.0.2/v1", "10.0.0.2"),
                       ("https://gpu-box.lan:8443/v1", "gpu-box.lan:8443")):
        RemoteSettings(url, "m").check()
        assert RemoteSettings(url, "m").display == f"m @ {shown}"


def test_each_conversation_keeps_its_backend(tmp_path):
    remote = BackendSettings(REMOTE, RemoteSettings(URL, "m"))
    with Store(tmp_path / "h.sqlite3") as store:
        new = store.create_conversation("remote chat", conversation_settings(GenerationSettings(), remote))
        old = store.create_conversation("from before remote backends", {"max_new_tokens": 64})
        stored = store.load_conversation(new).settings
        assert BackendSettings.from_json(stored.get("backend")) == remote
        assert stored["max_new_tokens"] == 512 and KEY not in json.dumps(stored)
        assert BackendSettings.from_json(store.load_conversation(old).settings.get("backend")).kind == LOCAL
