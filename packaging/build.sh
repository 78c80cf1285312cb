#!/usr/bin/env bash
# Build the one-folder bundle dist/headroom/ with PyInstaller, then run its --self-test.
#
#   packaging/build.sh            # build + self-test
#   packaging/build.sh --no-test  # build only
#
# Uses the project venv (.venv at the repo root, or $VENV): the bundle freezes exactly the
# torch/transformers the app runs and is tested with, and a second multi-GB venv is not
# downloaded. The PyInstaller pins (packaging/requirements.txt) are installed into it.
# Needs the default model for the self-test: .venv/bin/python -m app.install_model
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
cd "$ROOT"
if [[ ! -x "$VENV/bin/python" ]]; then
  echo "build.sh: no venv at $VENV; create it as the README says (pip install torch==2.13.0 -e .)" >&2
  exit 1
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r packaging/requirements.txt
started=$(date +%s)
"$VENV/bin/python" -m PyInstaller --noconfirm --log-level WARN \
  --distpath "$ROOT/dist" --workpath "$ROOT/build/pyinstaller" packaging/headroom.spec
echo "build.sh: built $ROOT/dist/headroom in $(( $(date +%s) - started )) s, $(du -sh "$ROOT/dist/headroom" | cut -f1)"
if [[ "${1:-}" != "--no-test" ]]; then
  "$ROOT/dist/headroom/headroom" --self-test
fi
