"""A full disk for a test: writes past a size fail midway, part of the data written."""

import contextlib

import pytest


@pytest.fixture
def file_size_limit():
    """limited(n): a context in which this process cannot write a file past n bytes; the write
    that crosses it fails with EFBIG after writing what fits, as on a full disk (RLIMIT_FSIZE,
    which binds root too; SIGXFSZ ignored, else it ends the process). Skipped where there is no
    `resource` module (Windows)."""
    resource = pytest.importorskip("resource")
    import signal

    @contextlib.contextmanager
    def limited(limit: int):
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
        try:
            yield
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
            signal.signal(signal.SIGXFSZ, handler)

    return limited
