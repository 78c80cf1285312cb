"""Cancel for model loads that run in the generation worker's thread.

Loads are served one at a time in the order they were asked for, and Cancel is pressed in the
GUI thread while the worker's event loop is busy loading, so Cancel cannot be a queued slot. A
threading.Event set from the GUI thread would do for one load, but a newer open queued behind
a load that is still winding down must not inherit its Cancel, and a Cancel pressed while the
newer open waits in the queue must still reach it. So each load gets a ticket number as it is
asked for (in the GUI thread) and as it starts (in the worker thread), in the same order;
Cancel cancels every ticket asked for so far.
"""

import threading


class LoadTickets:
    """Thread-safe numbering of load requests. No signals."""

    def __init__(self):
        self._lock = threading.Lock()
        self._asked = 0             # tickets handed out as loads were requested (GUI thread)
        self._started = 0           # loads the worker has begun (worker thread)
        self._cancelled_through = 0  # every ticket up to this one is cancelled

    def ask(self, *_request) -> None:
        """A load was requested (connect directly to the request signal, in the emitting thread)."""
        with self._lock:
            self._asked += 1

    def start(self) -> "LoadTicket":
        """The worker begins the next load: its ticket, whose is_set() says Cancel was pressed."""
        with self._lock:
            self._started += 1
            return LoadTicket(self, self._started)

    def cancel(self) -> None:
        """Cancel every load asked for so far, running or queued (not those asked for later)."""
        with self._lock:
            self._cancelled_through = self._asked

    def is_cancelled(self, number: int) -> bool:
        with self._lock:
            return number <= self._cancelled_through


class LoadTicket:
    """One load's cancel flag, shaped like threading.Event for app.engine.loading.loader."""

    def __init__(self, tickets: LoadTickets, number: int):
        self._tickets = tickets
        self.number = number

    def is_set(self) -> bool:
        return self._tickets.is_cancelled(self.number)
