"""A real OpenAI-compatible server for the remote-backend tests: `transformers serve` (the
`transformers[serving]` extra: fastapi, uvicorn, openai) serving the default SmolLM2 model from
its local HF folder, on the CPU, offline, on a free 127.0.0.1 port.

`transformers serve <folder>` pins the server to that model and loads it before uvicorn starts
listening, so the first 200 from /health means the model is in memory. Start-up takes ~8 s on
two idle cores; the readiness poll allows READY_TIMEOUT_S for a busy CI box.
"""

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

READY_TIMEOUT_S = 240.0
# The child asks Linux to SIGTERM it when the test process dies (PR_SET_PDEATHSIG = 1): a CI
# time-out kills pytest without fixture teardown and must not leave a server behind. Set in the
# child itself, not by preexec_fn, which is unsafe in a process with threads (Qt's).
_SERVE = """
import ctypes, os, signal, sys
if sys.platform.startswith("linux"):
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)
    if os.getppid() != int(os.environ["HEADROOM_TEST_PARENT_PID"]):
        sys.exit("the test process is gone")
from transformers.cli.transformers import main
main()
"""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class ServerProcess:
    """A running `transformers serve`. base_url ends in /v1; model is the name it serves."""

    process: subprocess.Popen
    port: int
    model: str
    log_path: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def kill(self) -> None:
        """SIGKILL, as a crash would: no goodbye on open connections."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()


def start_server(model_folder: Path, log_path: Path, timeout_s: float = READY_TIMEOUT_S) -> ServerProcess:
    """Start `transformers serve` on `model_folder` and wait until /health answers 200.
    Raises RuntimeError with the server's log tail when it exits or is not ready in time."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
           "HF_HUB_DISABLE_UPDATE_CHECK": "1", "TOKENIZERS_PARALLELISM": "false",
           "HEADROOM_TEST_PARENT_PID": str(os.getpid())}
    for _attempt in range(3):  # a port taken between free_port() and bind: try another
        port = free_port()
        log_file = open(log_path, "w")  # the child writes to it for its lifetime
        process = subprocess.Popen(
            [sys.executable, "-c", _SERVE, "serve", str(model_folder), "--host", "127.0.0.1",
             "--port", str(port), "--device", "cpu", "--log-level", "warning"],
            stdout=log_file, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        log_file.close()
        server = ServerProcess(process, port, str(model_folder), log_path)
        if _wait_ready(server, timeout_s):
            return server
        server.stop()
        if "address already in use" not in server.log_tail().lower():
            break
    raise RuntimeError(f"transformers serve did not become ready:\n{server.log_tail()}")


def _wait_ready(server: ServerProcess, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            return False
        try:
            if httpx.get(f"http://127.0.0.1:{server.port}/health", timeout=2.0).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    return False
