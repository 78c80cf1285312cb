"""Test doubles for files and key stores that cannot be read, on boxes where chmod 000 does not stop the
tests (root runs some of them)."""

from collections.abc import Callable
from pathlib import Path

import pytest


def deny_reading(monkeypatch, path: Path) -> Callable[[], None]:
    """Path.read_text of `path` raises PermissionError (errno 13), as for a file without read permission;
    every other file reads as usual. Returns what makes `path` readable again."""
    read_text = Path.read_text

    def denied(self, *args, **kwargs):
        if self == path:
            raise PermissionError(13, "Permission denied", str(self))
        return read_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", denied)
    return lambda: monkeypatch.setattr(Path, "read_text", read_text)


@pytest.fixture
def no_keyring():
    """No usable system keyring (keyring's fail backend) for the test; the previous one afterwards.
    keyring is imported here, not at the top: tests/conftest.py imports this module, and the GPU
    machine's benchmark runs have no keyring (its first fold test run stopped at the conftest)."""
    import keyring
    from keyring.backends import fail

    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    yield
    keyring.set_keyring(previous)
