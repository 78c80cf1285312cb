"""Host RAM this process may still use: the system's available memory, capped by the memory
limit of the control group the process runs in (Docker ``--memory``, a systemd slice's
``MemoryMax=``, Kubernetes limits).

``psutil.virtual_memory()`` reads /proc/meminfo, which describes the whole machine: inside a
container limited to 8 GiB on a 64 GiB host it reports ~60 GiB available, and a load planned on
that figure is killed by the kernel's OOM killer, with no message, past 8 GiB. The control
group's headroom is ``limit − working set``, where the working set is usage less the inactive
file cache the kernel reclaims before it kills (the same working set ``docker stats``,
cAdvisor and the kubelet report):

- cgroup v2: ``memory.max`` − (``memory.current`` − ``inactive_file`` of ``memory.stat``)
- cgroup v1: ``memory.limit_in_bytes`` − (``memory.usage_in_bytes`` − ``total_inactive_file``)

Every ancestor group up to the mount's root counts (a slice's limit binds the services under
it); the tightest wins. A limit at or above the machine's RAM ("max", v1's 2^63 − 4096) is no
limit. See https://docs.kernel.org/admin-guide/cgroup-v2.html#memory-interface-files.
Linux only; elsewhere, and wherever a file cannot be read, the system figure stands.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import psutil

CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_SELF_CGROUP = Path("/proc/self/cgroup")


@dataclass(frozen=True)
class HostMemory:
    """Bytes. available: what the process can still take without swapping or being killed.
    total: the machine's RAM, or the control group's limit when smaller. limited_by: "" for the
    machine, else the control group's path (for logs and the diagnostics report)."""

    available: int
    total: int
    limited_by: str = ""


@dataclass(frozen=True)
class _GroupLimit:
    limit: int
    headroom: int
    path: str


def host_memory() -> HostMemory:
    """The system's available RAM and total (psutil), capped by the tightest control-group
    limit above this process (module docstring). Never raises for a missing or odd cgroup file."""
    vm = psutil.virtual_memory()
    system = HostMemory(int(vm.available), int(vm.total))
    group = _tightest_group(CGROUP_ROOT, PROC_SELF_CGROUP, system.total)
    if group is None:
        return system
    return HostMemory(max(min(group.headroom, system.available), 0), group.limit, group.path)


def _tightest_group(root: Path, proc_self_cgroup: Path, machine_total: int) -> _GroupLimit | None:
    try:
        lines = proc_self_cgroup.read_text().splitlines()
    except OSError:
        return None
    found = []
    for line in lines:
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":  # v2 unified hierarchy
            found += _walk(root, path, "memory.max", "memory.current", "inactive_file", machine_total)
        elif "memory" in controllers.split(","):  # v1 memory controller
            found += _walk(root / "memory", path, "memory.limit_in_bytes", "memory.usage_in_bytes",
                           "total_inactive_file", machine_total)
    return min(found, key=lambda group: group.headroom, default=None)


def _walk(mount: Path, path: str, limit_file: str, usage_file: str, inactive_key: str,
          machine_total: int) -> list[_GroupLimit]:
    """Limits from the process's group up to the mount's root. Inside a container the path in
    /proc/self/cgroup is often the host's and absent from the container's mount: then only the
    mount's root (the container's own group) is read."""
    if not mount.is_dir():
        return []
    parts = [part for part in path.strip("/").split("/") if part and part != ".."]
    groups = []
    for depth in range(len(parts), -1, -1):
        folder = mount.joinpath(*parts[:depth])
        if not folder.is_dir():
            continue
        limit = _read_int(folder / limit_file)
        usage = _read_int(folder / usage_file)
        if limit is None or usage is None or limit >= machine_total:
            continue
        working_set = max(usage - _stat_value(folder / "memory.stat", inactive_key), 0)
        groups.append(_GroupLimit(limit, limit - working_set, "/" + "/".join(parts[:depth])))
    return groups


def _read_int(file: Path) -> int | None:
    """An integer file's value; "max" (v2's no limit) and unreadable files are None."""
    try:
        text = file.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _stat_value(file: Path, key: str) -> int:
    try:
        for line in file.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key and value.strip().isdigit():
                return int(value)
    except OSError:
        pass
    return 0
