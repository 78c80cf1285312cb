"""Plain-language error lines (app/ui/error_text.py) for the failures users actually meet."""

import errno

import pytest

from app.engine.loading.loader import ModelLoadError
from app.engine.remote.errors import RemoteError
from app.ui.error_text import plain_error


class OutOfMemoryError(RuntimeError):  # same name as torch's, without importing torch
    pass


@pytest.mark.parametrize("exc,what,todo", [
    (ModelLoadError("GGUF magic invalid"), "This GGUF file could not be read: GGUF magic invalid.",
     "download it again"),
    (ModelLoadError("Sorry, file appears to be version 9 which we cannot handle"), "GGUF file could not be read",
     "download it again"),
    (ModelLoadError("GGUF model with architecture mamba9 is not supported yet."), "architecture is not supported",
     "supported family"),
    (ValueError("The checkpoint you are trying to load has model type `zeta` but Transformers does not "
                "recognize this architecture."), "architecture is not supported", "supported family"),
    (OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"), "ran out of memory", "smaller model"),
    (RemoteError("cannot connect to gpu-box:8000 (Connection refused): is the server running?", "unreachable"),
     "The server could not answer: cannot connect to gpu-box:8000", "Start the server"),
    (RemoteError("gpu-box:8000 refused the API key (HTTP 401)", "auth", 401), "refused the API key", "API key"),
    (FileNotFoundError(errno.ENOENT, "No such file", "/models/x.gguf"), "missing: /models/x.gguf", "folder or drive"),
    (OSError(errno.ENOSPC, "No space left on device"), "The disk is full.", "Free some space"),
])
def test_expected_failures_say_what_happened_and_what_to_do(exc, what, todo):
    plain = plain_error(exc)
    assert what in plain.what and todo in plain.todo
    assert "\n" not in plain.line() and "Error:" not in plain.line()


def test_anything_else_names_the_type_and_points_to_the_log_never_the_raw_message():
    plain = plain_error(ValueError("cannot reshape array of size 12 into shape (5,)"))
    assert plain.what == "Something went wrong (ValueError)."
    assert "reshape" not in plain.line() and "log" in plain.todo
