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
from app.engine.memory.host_memory import host_memory

log = logging.getLogger(__name__)

DEFAULT_KEPT_MIB = GenerationSettings.kept_chat_cache_mib
"""Host memory for parked chat caches when the caller gives no budget: 4 GiB, ~32k tokens of
Llama-3-8B KV in bf16 (128 KiB per token), a few long chats."""

HOST_RESERVE_BYTES = 2 * 2**30
"""Available host memory a parked cache never eats into (the OS, the app, a model on the CPU)."""


def park(session: KVSession, pinned: bool = True) -> None:
    """Move the session's keys and values to host memory (page-locked when they were on CUDA and
    ``pinned``), freeing their device memory; a CPU cache stays where it is. Synchronous. Raises
    what the allocation raises (RuntimeError when pinned memory runs out); the session then still
    holds whatever was not moved, on either side, and stays usable."""
    moved = False
    for layer, name, tensor in list(session.tensors()):
        if tensor.device.type == "cpu":
            continue
        setattr(layer, name, to_host(tensor, pinned and tensor.device.type == "cuda"))
        moved = True
    if moved and torch.cuda.is_available():
        torch.cuda.synchronize()


def restore(session: KVSession, device: torch.device) -> None:
    """Move a parked session's keys and values back to ``device`` (in place, layer by layer),
    as `to_device` makes them; span layers get their dynamic capacity marked again.
    torch.cuda.OutOfMemoryError propagates; the caller drops the session then."""
    from app.engine.local.static_cache import mark_capacity_dynamic

    if device.type == "cpu":
        return
    touched = []
    for layer, name, tensor in list(session.tensors()):
        if tensor.device == device:
            continue
        setattr(layer, name, to_device(tensor, device))
        if layer not in touched:
            touched.append(layer)
    for layer in touched:
        mark_capacity_dynamic(layer)
    if touched and device.type == "cuda":
        torch.cuda.synchronize(device)


def swap(outgoing: KVSession, incoming: KVSession) -> bool:
    """Park ``outgoing`` and restore ``incoming`` through the same device tensors: each of
    outgoing's device tensors is copied to page-locked host memory and then overwritten with
    incoming's parked copy, and incoming keeps that device tensor. The compiled decode step
    then sees the addresses its CUDA graph was recorded for (a restore into fresh memory
    re-records it, ~1 s on the 8B), and no device memory is allocated. Only when the two caches
    pair up exactly (same tensors, shapes and dtypes; outgoing on the device, incoming parked);
    returns False, touching nothing, otherwise."""
    from app.engine.local.static_cache import mark_capacity_dynamic

    pairs = list(zip(outgoing.tensors(), incoming.tensors(), strict=False))
    if not pairs or len(pairs) != len(list(incoming.tensors())) or len(pairs) != len(list(outgoing.tensors())):
        return False
    for (_, name_out, dev), (_, name_in, host) in pairs:
        if (name_out != name_in or dev.shape != host.shape or dev.dtype != host.dtype
                or dev.device.type == "cpu" or host.device.type != "cpu"):
            return False
    with torch.inference_mode():
        for (layer_out, name, dev), (layer_in, _, host) in pairs:
            setattr(layer_out, name, to_host(dev, dev.device.type == "cuda"))  # blocking copy out
            dev.copy_(host, non_blocking=True)  # then in, at the same address
            setattr(layer_in, name, dev)
    for layer in dict.fromkeys(layer for (_, _, _), (layer, _, _) in pairs):
        mark_capacity_dynamic(layer)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return True


# Both copies run under inference mode, as the prefill that made the cache did: an ordinary
# tensor where the compiled decode step was traced with inference tensors fails its guards and
# the whole step recompiles (H200, 8B: a 20 s stall on the first turn after a switch).
@torch.inference_mode()
def to_host(tensor: torch.Tensor, pinned: bool) -> torch.Tensor:
    """A host copy of ``tensor`` (page-locked when ``pinned``, so the copy back is fast)."""
    host = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=pinned)
    host.copy_(tensor)
    return host


@torch.inference_mode()
def to_device(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A copy of ``tensor`` on ``device``, marked as a static address as transformers'
    StaticLayer marks its cache (the compiled step does not copy it; its CUDA graph is recorded
    once more for the new address)."""
    moved = tensor.to(device, non_blocking=True, copy=True)
    torch._dynamo.mark_static_address(moved)
    return moved


def parked_bytes(session: KVSession) -> int:
    """Bytes the session's cache holds in host memory."""
    return sum(t.numel() * t.element_size() for _, _, t in session.tensors() if t.device.type == "cpu")


def available_host_bytes() -> int:
    """Host memory the OS can hand out to this process without swapping, bytes (the machine's,
    capped by its control group's limit: app.engine.memory.host_memory)."""
    return host_memory().available


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
        keep = bool(previous_key and previous.cache is not None and previous.cached_tokens
                    and self._room_for(previous_key, previous))
        if keep and self.active.cache is not None and swap(previous, self.active):
            self._parked[previous_key] = previous
            self.notes.append(f"{previous_key}: parked; {key}: {self.active.cached_tokens} cached tokens "
                              "restored into the same device memory")
            self._evict()
            return self.active
        if keep:
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

    def _room_for(self, key: str, session: KVSession) -> bool:
        """Whether host memory may hold the session's cache; says why not in notes."""
        size = session.cache_bytes
        room = min(self.budget_bytes, self._host_available() - HOST_RESERVE_BYTES)
        if size > room:
            self.notes.append(f"{key}: cache of {size / 2**20:,.0f} MiB not kept "
                              f"(room {max(room, 0) / 2**20:,.0f} MiB)")
        return size <= room

    def _park(self, key: str, session: KVSession) -> None:
        size = session.cache_bytes
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
