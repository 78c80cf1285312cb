"""Peak bytes of tensors alive at once while a piece of code runs (CPU tests of memory claims).

A TorchDispatchMode sees every tensor an op returns; each new storage is counted until the last
tensor seen on it is gone (weak references). Tensors made before the mode (inputs) are not
counted, as a transient is what a call adds."""

import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


class LiveBytes(TorchDispatchMode):
    """``with LiveBytes() as live: ...`` then ``live.peak`` (bytes)."""

    def __init__(self):
        super().__init__()
        self.live = 0
        self.peak = 0
        self._holders: dict[int, list] = {}  # storage address -> weak refs of tensors on it
        self._nbytes: dict[int, int] = {}  # storage address -> its size

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        before = {t.untyped_storage().data_ptr() for t in tree_flatten((args, kwargs or {}))[0]
                  if isinstance(t, torch.Tensor)}
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor):
                continue
            ptr = t.untyped_storage().data_ptr()
            if ptr in self._holders:
                self._holders[ptr].append(weakref.ref(t, lambda _, p=ptr: self._release(p)))
            elif ptr not in before and t.untyped_storage().nbytes():
                self._holders[ptr] = [weakref.ref(t, lambda _, p=ptr: self._release(p))]
                self._nbytes[ptr] = t.untyped_storage().nbytes()
                self.live += self._nbytes[ptr]
                self.peak = max(self.peak, self.live)
        return out

    def _release(self, ptr: int) -> None:
        holders = self._holders.get(ptr)
        if holders is None or any(ref() is not None for ref in holders):
            return
        del self._holders[ptr]
        self.live -= self._nbytes.pop(ptr)
