"""The KV caches of recently used conversations, kept while the user switches chats (issue 12,
item 5).

One `KVSession` is active: its cache lives on the model's device and the next turn reuses it.
When another conversation becomes active, the previous session is *parked*: its keys and values
move to host memory (page-locked on CUDA, so the copy back runs at PCIe speed) and the device
memory is freed before the next turn is planned, so admission sees exactly the active chat's
cache. Parked sessions are kept least-recently-used first within a byte budget of host memory
(``GenerationSettings.kept_chat_cache_mib``; 0 keeps none) and never past what the OS reports
available minus `HOST_RESERVE_BYTES`. Switching back restores the cache to the device — the
chat flow asks for that when the user opens the conversation, so the copy is usually done before
the next message is sent — and the turn then prefills only its new tokens.

Keys are opaque strings from the chat layer ("" = the conversation has no key: the active
session is used as it is, as before issue 12). No Qt, no module state.
"""

from __future__ import annotations

import logging
from collections import OrderedDict

import torch

from app.core.settings import GenerationSettings
from app.engine.local.kv_session import KVSession

log = logging.getLogger(__name__)

DEFAULT_KEPT_MIB = GenerationSettings.kept_chat_cache_mib
"""Host memory for parked chat caches when the caller gives no budget: 4 GiB, ~32k tokens of
Llama-3-8B KV in bf16 (128 KiB per token), a few long chats."""

HOST_RESERVE_BYTES = 2 * 2**30
"""Available host memory a parked cache never eats into (the OS, the app, a model on the CPU)."""


def session_tensors(session: KVSession):
    """(layer, name, tensor) for every key/value tensor the session's cache holds."""
    cache = session.cache
    for layer in getattr(cache, "layers", ()) if cache is not None else ():
        for name in ("keys", "values"):
            tensor = getattr(layer, name, None)
            if isinstance(tensor, torch.Tensor) and tensor.numel():
                yield layer, name, tensor


def park(session: KVSession) -> None:
    """Move the session's keys and values to host memory (page-locked when they were on CUDA),
    freeing their device memory; a CPU cache stays where it is. Synchronous. Raises what the
    allocation raises (RuntimeError when pinned memory runs out); the session then still holds
    whatever was not moved, on either side, and stays usable."""
    moved = False
    for layer, name, tensor in list(session_tensors(session)):
        if tensor.device.type == "cpu":
            continue
        host = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=tensor.device.type == "cuda")
        host.copy_(tensor)
        setattr(layer, name, host)
        moved = True
    if moved and torch.cuda.is_available():
        torch.cuda.synchronize()


def restore(session: KVSession, device: torch.device) -> None:
    """Move a parked session's keys and values back to ``device`` (in place, layer by layer).
    The new tensors are marked as static addresses (as transformers' StaticLayer does, so the
    compiled decode step keeps its CUDA graphs) and, for span layers, as having a dynamic capacity.
    torch.cuda.OutOfMemoryError propagates; the caller drops the session then."""
    from app.engine.local.static_cache import _mark_capacity_dynamic

    if device.type == "cpu":
        return
    touched = []
    for layer, name, tensor in list(session_tensors(session)):
        if tensor.device == device:
            continue
        on_device = tensor.to(device, non_blocking=True)
        setattr(layer, name, on_device)
        torch._dynamo.mark_static_address(on_device)
        if layer not in touched:
            touched.append(layer)
    for layer in touched:
        _mark_capacity_dynamic(layer)
    if touched and device.type == "cuda":
        torch.cuda.synchronize(device)


def parked_bytes(session: KVSession) -> int:
    """Bytes the session's cache holds in host memory."""
    return sum(t.numel() * t.element_size() for _, _, t in session_tensors(session) if t.device.type == "cpu")


def available_host_bytes() -> int:
    """Host memory the OS can hand out without swapping (psutil), bytes."""
    import psutil

    return int(psutil.virtual_memory().available)


class SessionPool:
    """The active KVSession and the parked ones, by conversation key. Use from one thread.

    active: the session the next turn uses (the model's device). parked_count / parked_total:
    sessions and bytes held in host memory. notes: one line per park, restore or drop (why).
    """

    def __init__(self, budget_bytes: int = DEFAULT_KEPT_MIB * 2**20, host_available=available_host_bytes):
        self.budget_bytes = budget_bytes
        self.active = KVSession()
        self.active_key = ""
        self._parked: OrderedDict[str, KVSession] = OrderedDict()  # least recently used first
        self._host_available = host_available
        self.notes: list[str] = []

    @property
    def parked_count(self) -> int:
        return len(self._parked)

    @property
    def parked_total(self) -> int:
        return sum(parked_bytes(s) for s in self._parked.values())

    def is_parked(self, key: str) -> bool:
        return key in self._parked

    def activate(self, key: str, device: torch.device, budget_bytes: int | None = None) -> KVSession:
        """Make ``key``'s session the active one and return it: the previous active session is
        parked (or dropped when the budget or the host cannot hold it), ``key``'s parked session
        is restored to ``device`` (dropped, re-prefilled by the next turn, when the device has no
        room), or a new empty session starts. "" keeps the active session whatever it is.
        budget_bytes: a new host budget (the turn's settings), applied before parking."""
        if budget_bytes is not None:
            self.budget_bytes = max(int(budget_bytes), 0)
        if not key or key == self.active_key:
            self.active_key = key or self.active_key
            return self.active
        previous, previous_key = self.active, self.active_key
        self.active, self.active_key = self._parked.pop(key, None) or KVSession(), key
        if previous_key and previous.cache is not None and previous.cached_tokens:
            self._park(previous_key, previous)
        else:
            previous.invalidate()
        del previous
        if self.active.cache is not None:
            try:
                restore(self.active, device)
                self.notes.append(f"{key}: {self.active.cached_tokens} cached tokens restored")
            except torch.cuda.OutOfMemoryError:
                self.active.invalidate()
                self.notes.append(f"{key}: no device memory to restore the cache; re-prefilled")
        self._evict()
        return self.active

    def forget(self, key: str) -> None:
        """The conversation is gone (deleted): drop its cache, parked or active."""
        session = self._parked.pop(key, None)
        if session is not None:
            session.invalidate()
        if key and key == self.active_key:
            self.active.invalidate()
            self.active_key = ""

    def clear(self) -> None:
        """Drop every parked cache and the active one (model change)."""
        for session in self._parked.values():
            session.invalidate()
        self._parked.clear()
        self.active.invalidate()

    def _park(self, key: str, session: KVSession) -> None:
        size = session.cache_bytes
        room = min(self.budget_bytes, self._host_available() - HOST_RESERVE_BYTES)
        if size > room:
            session.invalidate()
            self.notes.append(f"{key}: cache of {size / 2**20:,.0f} MiB not kept "
                              f"(room {max(room, 0) / 2**20:,.0f} MiB)")
            return
        try:
            park(session)
        except RuntimeError as exc:  # pinned host memory exhausted
            log.warning("parking the KV cache of %s failed: %s", key, exc)
            session.invalidate()
            self.notes.append(f"{key}: cache not kept ({exc})")
            return
        self._parked[key] = session
        self.notes.append(f"{key}: {session.cached_tokens} cached tokens parked ({size / 2**20:,.0f} MiB)")

    def _evict(self) -> None:
        while self._parked and self.parked_total > self.budget_bytes:
            key, session = self._parked.popitem(last=False)
            session.invalidate()
            self.notes.append(f"{key}: dropped, least recently used")
