"""Host RAM under a control group's limit (app.engine.memory.host_memory): a container limited
to less than the machine's RAM is planned and admitted against its limit, not /proc/meminfo."""

from collections import namedtuple
from pathlib import Path

import pytest

from app.engine.loading.fit import machine_memory
from app.engine.memory import host_memory as host
from app.engine.memory.probe import CpuProbe
from app.engine.memory.units import GiB, MiB

VirtualMemory = namedtuple("VirtualMemory", "total available")


@pytest.fixture
def machine(monkeypatch, tmp_path):
    """A 64 GiB machine with 60 GiB available and an empty cgroup tree under tmp_path."""
    monkeypatch.setattr(host.psutil, "virtual_memory", lambda: VirtualMemory(64 * GiB, 60 * GiB))
    monkeypatch.setattr(host, "CGROUP_ROOT", tmp_path / "cgroup")
    monkeypatch.setattr(host, "PROC_SELF_CGROUP", tmp_path / "proc_self_cgroup")
    return tmp_path


def group(folder: Path, limit: str, usage: int, stat: str = "", v1: bool = False) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ("memory.limit_in_bytes" if v1 else "memory.max")).write_text(limit + "\n")
    (folder / ("memory.usage_in_bytes" if v1 else "memory.current")).write_text(f"{usage}\n")
    (folder / "memory.stat").write_text(stat)


def test_v2_limit_less_working_set_caps_available_and_total(machine):
    (machine / "proc_self_cgroup").write_text("0::/user.slice/app.scope\n")
    group(machine / "cgroup/user.slice/app.scope", "max", 3 * GiB)
    group(machine / "cgroup/user.slice", str(8 * GiB), 5 * GiB, f"anon 1\ninactive_file {1 * GiB}\nactive_file 7\n")
    seen = host.host_memory()
    # the slice binds: 8 GiB − (5 GiB used − 1 GiB reclaimable cache) = 4 GiB
    assert seen == host.HostMemory(4 * GiB, 8 * GiB, "/user.slice")
    assert (machine_memory("cpu").free, machine_memory("cpu").total) == (4 * GiB, 8 * GiB)
    sample = CpuProbe().sample()  # what the panel and turn admission read on the CPU
    assert (sample.free, sample.total) == (4 * GiB, 8 * GiB)


def test_the_tightest_of_nested_limits_wins(machine):
    (machine / "proc_self_cgroup").write_text("0::/a/b\n")
    group(machine / "cgroup/a", str(16 * GiB), 2 * GiB)
    group(machine / "cgroup/a/b", str(12 * GiB), 11 * GiB)
    assert host.host_memory() == host.HostMemory(1 * GiB, 12 * GiB, "/a/b")


def test_v1_inside_a_container_reads_the_mount_root_when_the_host_path_is_absent(machine):
    # as in Docker without a cgroup namespace: /proc/self/cgroup names the host's path
    (machine / "proc_self_cgroup").write_text("12:pids:/docker/abc\n4:memory:/docker/abc\n0::/\n")
    group(machine / "cgroup/memory", str(6 * GiB), 2 * GiB, f"cache 9\ntotal_inactive_file {512 * MiB}\n",
          v1=True)
    assert host.host_memory() == host.HostMemory(6 * GiB - (2 * GiB - 512 * MiB), 6 * GiB, "/")


def test_no_limit_or_unreadable_files_leave_the_machine_figures(machine):
    unlimited = host.HostMemory(60 * GiB, 64 * GiB)
    assert host.host_memory() == unlimited  # no /proc/self/cgroup (not Linux)
    (machine / "proc_self_cgroup").write_text("4:memory:/\n0::/\n")
    group(machine / "cgroup/memory", "9223372036854771712", 2 * GiB, v1=True)  # v1's "no limit"
    group(machine / "cgroup", "max", 2 * GiB)
    assert host.host_memory() == unlimited
    (machine / "cgroup/memory.max").write_text("garbage")
    (machine / "cgroup/memory/memory.usage_in_bytes").unlink()
    assert host.host_memory() == unlimited


def test_a_group_over_its_limit_has_nothing_available(machine):
    (machine / "proc_self_cgroup").write_text("0::/\n")
    group(machine / "cgroup", str(4 * GiB), 5 * GiB)
    assert host.host_memory() == host.HostMemory(0, 4 * GiB, "/")


def test_this_machine_reads_without_error():
    seen = host.host_memory()
    assert 0 <= seen.available <= seen.total
