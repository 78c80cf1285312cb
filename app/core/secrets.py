"""API keys for remote servers: the OS keyring when one is usable, else an owner-only file.

Keys are looked up by the server's base URL (trailing "/" ignored). The keyring is the optional
`keyring` package (`pip install -e ".[keyring]"`): Secret Service / KWallet on Linux, Keychain
on macOS, Credential Locker on Windows. Without it, or when it has no usable backend (a
headless Linux session has none), keys go to `api_keys.json` in the config folder, created with
mode 0o600 before anything is written to it (the same rule as the conversation store), and
never to settings.json. A file that cannot be parsed is moved aside (api_keys.unreadable-<time>.json)
by the next save rather than overwritten. Keys are never logged: log lines here name the base URL and where the
key went, nothing else.
"""

import contextlib
import json
import logging
from pathlib import Path
from typing import NamedTuple

from app.core.json_files import keep_aside, write_atomically
from app.core.paths import config_dir

log = logging.getLogger(__name__)

KEYRING_SERVICE = "headroom"
KEY_FILE_NAME = "api_keys.json"


def key_file_path() -> Path:
    return config_dir() / KEY_FILE_NAME


def _account(base_url: str) -> str:
    return base_url.strip().rstrip("/")


def _keyring():
    """The keyring module when it has a usable backend, else None (never raises)."""
    try:
        import keyring
        from keyring.backends import fail
    except ImportError:
        return None
    try:
        backend = keyring.get_keyring()
    except Exception as exc:  # noqa: BLE001 - a broken keyring set-up means "use the file"
        log.info("keyring unavailable (%s); API keys go to %s", type(exc).__name__, KEY_FILE_NAME)
        return None
    if isinstance(backend, fail.Keyring) or getattr(backend, "priority", 1) <= 0:
        return None
    return keyring


def _read_file(path: Path) -> dict[str, str]:
    """The keys in the file for a lookup: {} when there is none or it cannot be read or parsed
    (logged). Never raises: lookups run at every turn and server poll, from worker threads."""
    try:
        return _parse_file(path)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("API key file %s unreadable (%s); treating it as empty", path, type(exc).__name__)
        return {}


def _parse_file(path: Path) -> dict[str, str]:
    """URL → key from the file (entries that are not text → text are skipped). Raises OSError
    (FileNotFoundError included) when it cannot be read, ValueError when it is not a key file:
    not UTF-8, not JSON, nested too deeply for json.loads, or not an object."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8-sig"))  # Notepad writes a BOM: not "empty"
    except RecursionError:  # [[[…]]] 100,000 deep: a parse failure, not a crash
        raise ValueError("nested too deeply") from None
    if not isinstance(raw, dict):
        raise ValueError(f"a JSON {type(raw).__name__}, not an object")
    return {k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, str)}


def _keys_to_update(path: Path) -> tuple[dict[str, str], Path | None]:
    """The keys in the file before a save, and where a file that cannot be parsed was moved (None
    when none was). Raises OSError when the file cannot be read at all (no permission, a folder)
    or cannot be moved aside: nothing is then written over it."""
    # Kept aside, not refused, as settings.json and presets.json are (app.core.json_files): the
    # key just typed is stored and the app goes on, and the old keys stay on disk for the user
    # (they were read as {} and overwritten by this save). Refusing would leave remote servers
    # keyless until the user fixed a hidden file by hand. A file that cannot be read at all may
    # hold anything, so it is left as it is, like an unreadable presets.json.
    try:
        return _parse_file(path), None
    except FileNotFoundError:
        return {}, None
    except ValueError as exc:
        aside = keep_aside(path)
        with contextlib.suppress(OSError):  # it may hold keys: owner-only whatever mode it had (trial 14: 0644)
            aside.chmod(0o600)
        log.warning("API key file %s unreadable (%s); moved to %s", path, type(exc).__name__, aside)
        return {}, aside


def _write_file(path: Path, keys: dict[str, str]) -> None:
    """The key file written whole or not at all, owner-only from its creation (json_files.write_atomically)."""
    write_atomically(path, json.dumps(keys, indent=2), private=True)


class KeyStored(NamedTuple):
    """Where `save_api_key` put the key: "keyring" or "file"; kept_as: where an api_keys.json that
    could not be parsed was moved before the file was written (None when none was)."""

    where: str
    kept_as: Path | None = None


_SESSION_KEYS: dict[str, str] = {}
"""Keys that could not be stored (a read-only config folder, a full disk), by account: `load_api_key`
finds them until Headroom closes, as settings that cannot be saved still apply (new-user trial 14: the
key just typed was not sent, and the server's refusal pointed at a key that was right)."""


def save_api_key(base_url: str, key: str, path: Path | None = None) -> KeyStored:
    """Store `key` for `base_url` (an empty key deletes it). Returns where it went. Raises OSError
    when the file cannot be written, or read (then it is left as it was; see `_keys_to_update`);
    the key is then kept in memory for this session (`_SESSION_KEYS`), an empty key forgets it there."""
    account, path = _account(base_url), path or key_file_path()
    try:
        stored = _store(account, key, path)
    except OSError:
        if key:
            _SESSION_KEYS[account] = key
        else:
            _SESSION_KEYS.pop(account, None)
        raise
    _SESSION_KEYS.pop(account, None)  # stored: the keyring or the file answers from now on
    return stored


def _store(account: str, key: str, path: Path) -> KeyStored:
    ring = _keyring()
    if ring is not None:
        try:
            if key:
                ring.set_password(KEYRING_SERVICE, account, key)
            else:
                _delete_from_keyring(ring, account)
            _drop_from_file(path, account)  # one place only
            log.info("API key for %s %s in the OS keyring", account, "stored" if key else "removed")
            return KeyStored("keyring")
        except Exception as exc:  # noqa: BLE001 - a locked or failing keyring: use the file
            log.warning("keyring refused the API key for %s (%s); using %s", account,
                        type(exc).__name__, path.name)
    keys, kept_as = _keys_to_update(path)
    if key:
        keys[account] = key
    else:
        keys.pop(account, None)
    _write_file(path, keys)
    log.info("API key for %s %s in %s (owner-only)", account, "stored" if key else "removed", path)
    return KeyStored("file", kept_as)


def load_api_key(base_url: str, path: Path | None = None) -> str:
    """The key stored for `base_url`, or "" when none is (this session's unstored key first, then the
    keyring, then the file)."""
    account = _account(base_url)
    if account in _SESSION_KEYS:
        return _SESSION_KEYS[account]
    ring = _keyring()
    if ring is not None:
        try:
            key = ring.get_password(KEYRING_SERVICE, account)
        except Exception as exc:  # noqa: BLE001
            log.warning("keyring lookup failed for %s (%s)", account, type(exc).__name__)
            key = None
        if key:
            return key
    return _read_file(path or key_file_path()).get(account, "")


def _delete_from_keyring(ring, account: str) -> None:
    from keyring.errors import PasswordDeleteError

    try:
        ring.delete_password(KEYRING_SERVICE, account)
    except PasswordDeleteError:
        pass


def _drop_from_file(path: Path, account: str) -> None:
    keys = _read_file(path)
    if account in keys:
        del keys[account]
        _write_file(path, keys)
