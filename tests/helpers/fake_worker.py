"""A stand-in for GenerationWorker that lives in the test's (GUI) thread: the same signals in and
out, no model, no thread. Commands are recorded; a test plays the worker's part by emitting its
out-signals (`fake.token_streamed.emit(rid, "Par")`), in the style of nanochat's MockModel.
"""

from PySide6.QtCore import QObject, Signal

from app.engine.memory.probe import FakeProbe
from app.engine.memory.units import GiB


class FakeWorker(QObject):
    """GenerationWorker's signals. requests: TurnRequests received; loads: (path, permissions,
    device) received; activations: (conversation key, kept MiB) received; forgotten: keys
    received; kv_precisions: the open chat's KV precisions received (kv_precision_chosen);
    counts: the TurnRequests of window_requested; stops / cancels: how often
    request_stop / request_cancel_load ran; cancelled_turns: the request ids of
    request_cancel_turn."""

    load_requested = Signal(str, object, str)
    model_change_requested = Signal(object)
    turn_requested = Signal(object)
    window_requested = Signal(object)
    conversation_activated = Signal(str, int)
    conversation_forgotten = Signal(str)
    kv_precision_chosen = Signal(str)

    load_progressed = Signal(str, float)
    model_loaded = Signal(object)
    load_failed = Signal(str)
    load_cancelled = Signal()
    model_changed = Signal(object)
    probe_changed = Signal(object)
    decode_status_changed = Signal(object)
    foresight_changed = Signal(object)
    backend_chosen = Signal(int, object)
    documents_fitted = Signal(int, object)
    turn_planned = Signal(int, object)
    window_counted = Signal(int, object)
    turn_refused = Signal(int, object)
    prefill_progressed = Signal(int, int, int)
    token_streamed = Signal(int, str)
    reply_finished = Signal(int, object, object)
    generation_failed = Signal(int, str, str)
    summary_started = Signal(int, int)
    summary_finished = Signal(int, object, str)
    summary_failed = Signal(int, str)

    def __init__(self, probe=None):
        super().__init__()
        self.probe = probe or FakeProbe(total=8 * GiB, kind="cpu", device_name="fake")
        self.requests: list = []
        self.loads: list = []
        self.stops = 0
        self.cancels = 0
        self.cancelled_turns: list[int] = []
        self.turn_requested.connect(self.requests.append)
        self.counts: list = []
        self.window_requested.connect(self.counts.append)
        self.load_requested.connect(lambda *args: self.loads.append(args))
        self.activations: list = []
        self.forgotten: list = []
        self.conversation_activated.connect(lambda *args: self.activations.append(args))
        self.conversation_forgotten.connect(self.forgotten.append)
        self.kv_precisions: list = []
        self.kv_precision_chosen.connect(self.kv_precisions.append)

    def request_stop(self) -> None:
        self.stops += 1

    def request_cancel_turn(self, request_id: int) -> None:
        self.cancelled_turns.append(request_id)

    def request_cancel_load(self) -> None:
        self.cancels += 1

    @property
    def last_id(self) -> int:
        """The request id of the last TurnRequest received."""
        return self.requests[-1].request_id
