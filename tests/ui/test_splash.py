"""A double-click shows something at once (issue 6, item 4): the real entry point paints the
splash before torch or transformers is imported (3–4 s of imports on two cores)."""

import json
import os
import subprocess
import sys

PROBE = r"""
import json, os, sys, time
started = time.perf_counter()
from app.ui.splash import Splash
real_show = Splash.show
def show(self):
    real_show(self)
    print(json.dumps({"torch": "torch" in sys.modules, "transformers": "transformers" in sys.modules,
                      "visible": self.isVisible(), "message": self.message(),
                      "seconds": time.perf_counter() - started}), flush=True)
    os._exit(0)
Splash.show = show
from app.main import main
main([])
"""


def test_splash_is_painted_before_torch_is_imported(tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HEADROOM_CONFIG_DIR": str(tmp_path / "config"),
           "HEADROOM_DATA_DIR": str(tmp_path / "data"), "HEADROOM_LOG_DIR": str(tmp_path / "log")}
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["visible"] and seen["message"] == "Starting Headroom…"
    assert not seen["torch"] and not seen["transformers"], seen
    print(f"splash painted {seen['seconds']:.2f} s after start")  # shown with -s; not a timed test
