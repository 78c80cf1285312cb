"""Entry script of the PyInstaller bundle: the same as `python -m app` / the `headroom` command."""

import sys

from app.main import main

if __name__ == "__main__":
    sys.exit(main())
