# SPDX-License-Identifier: MIT
"""What the kernel counts of a child. Where the grader may make one, a memory cgroup of its own
(cgroup v1 or v2: cgroup_home(), Cgroup) holds its limit and counts its memory and CPU time;
without one, /proc gives each process's CPU time (cpu_time, tree), its threads, and whether it
dropped the host's privileges.

It relies on exercises/runner.py alone (how a process's privileges are read)."""

import contextlib
import os
import signal
import time
from functools import cache
from pathlib import Path

import runner  # exercises/runner.py: the child, and the data both sides read


def cgroup_places():
    """[(version, [the folder of this process's cgroup, and each above it])]: cgroup v2's, and
    cgroup v1's memory controller's, where /proc says they are mounted."""
    mounts = {}  # version: (the hierarchy's path at the mount, where it is mounted)
    with open("/proc/self/mountinfo") as lines:
        for line in lines:
            fields = line.split()
            kind, options = fields[fields.index("-") + 1], fields[-1].split(",")
            if kind == "cgroup2" or (kind == "cgroup" and "memory" in options):
                mounts.setdefault(2 if kind == "cgroup2" else 1, (fields[3], fields[4]))
    places = []
    with open("/proc/self/cgroup") as lines:
        for number, controllers, path in (line.rstrip("\n").split(":", 2) for line in lines):
            version = 2 if number == "0" and not controllers else 1
            if (version == 2 or "memory" in controllers.split(",")) and version in mounts:
                root, mounted = mounts[version]
                inside = os.path.relpath(path, root)
                if not inside.startswith(".."):
                    folder = Path(os.path.normpath(Path(mounted) / inside))
                    above = [p for p in folder.parents if p.is_relative_to(mounted)]
                    places.append((version, [folder, *above]))  # up to the hierarchy's root
    return sorted(places, reverse=True)  # v2 first


@cache
def cgroup_home():
    """(version, folder): the deepest cgroup, this process's or above it, in which the grader
    may make a child cgroup with a memory limit (as root; or one delegated to the user), or
    None. In cgroup v2 the memory controller must be on for its children: the grader turns it
    on where the kernel lets it (the root cgroup, as root; a cgroup with no process). Each
    child of a student's then runs in a cgroup of its own: the kernel counts all the memory its
    processes hold, shared memory, memfds and tmpfs files included, and stops it past the
    limit."""
    with contextlib.suppress(OSError, ValueError):
        for version, places in cgroup_places():
            for place in places:
                if version == 2 and "memory" not in read(place / "cgroup.subtree_control").split():
                    with contextlib.suppress(OSError):  # on for its children, where it may be
                        (place / "cgroup.subtree_control").write_text("+memory")
                if version == 2 and "memory" not in read(place / "cgroup.subtree_control").split():
                    continue
                if os.access(place, os.W_OK):
                    with contextlib.suppress(OSError):
                        Cgroup((version, place)).remove()
                        for stale in place.glob("check-*-*"):  # a grader's that was killed
                            if not Path(f"/proc/{stale.name.split('-')[1]}").exists():
                                with contextlib.suppress(OSError):
                                    stale.rmdir()  # empty: its processes are gone
                        return version, place
    return None


def read(path):
    try:
        return Path(path).read_text()
    except OSError:
        return ""


class Cgroup:
    """A memory cgroup of one child: made in cgroup_home(), its limit set once the child is
    ready, its processes killed and the cgroup removed at the end."""

    made = 0

    def __init__(self, home):
        Cgroup.made += 1
        self.version, parent = home
        self.path = parent / f"check-{os.getpid()}-{Cgroup.made}"
        self.path.mkdir()
        if not self.file("memory.max" if self.version == 2 else "memory.limit_in_bytes").exists():
            self.path.rmdir()
            raise OSError(f"{parent} is no cgroup with a memory controller")

    def file(self, name):
        return self.path / name

    def join(self, *pids):
        for pid in pids:
            self.file("cgroup.procs").write_text(str(pid))

    def limit(self, size):
        """At most size bytes, swap included (where the kernel counts swap)."""
        names = ["memory.max", "memory.swap.max"] if self.version == 2 else []
        names = names or ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes"]
        for name, value in zip(names, [size, 0 if self.version == 2 else size], strict=True):
            if self.file(name).exists():
                self.file(name).write_text(str(value))

    def usage(self):
        return int(
            read(self.file("memory.current" if self.version == 2 else "memory.usage_in_bytes"))
        )

    def cpu(self):
        """The CPU time its processes used, in seconds, all of them (those ended included), or
        None where the kernel does not count it here (cgroup v1's memory hierarchy)."""
        stat = read(self.file("cpu.stat")) if self.version == 2 else ""
        counts = dict(line.split() for line in stat.splitlines() if len(line.split()) == 2)
        return int(counts["usage_usec"]) / 1e6 if counts.get("usage_usec", "").isdigit() else None

    def out_of_memory(self):
        """Whether the kernel ended a process of it for its memory."""
        events = read(self.file("memory.events" if self.version == 2 else "memory.oom_control"))
        counts = dict(line.split() for line in events.splitlines() if len(line.split()) == 2)
        return int(counts.get("oom_kill", 0)) > 0

    def kill(self):
        if self.file("cgroup.kill").exists():
            with contextlib.suppress(OSError):
                self.file("cgroup.kill").write_text("1")
        for pid in read(self.file("cgroup.procs")).split():
            with contextlib.suppress(OSError):
                os.kill(int(pid), signal.SIGKILL)

    def remove(self):
        """Once its processes are gone (they may take a moment to end)."""
        for _ in range(100):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                self.kill()
                time.sleep(0.01)


def tree(pid):
    """pid and every process below it, as the kernel lists each task's children."""
    found, todo = [], [pid]
    while todo:
        found.append(todo.pop())
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{found[-1]}/task"):
                children = read(f"/proc/{found[-1]}/task/{task}/children")
                todo += [int(child) for child in children.split()]
    return found


TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100  # /proc/PID/stat's unit


def cpu_time(pid):
    """The CPU time of pid and of every child it waited for (those children's own included),
    in seconds, as the kernel counts it: utime + stime + cutime + cstime of /proc/PID/stat;
    0 for a process gone."""
    stat = read(f"/proc/{pid}/stat")
    fields = stat[stat.rfind(")") + 2 :].split()  # after the name, which may hold anything
    try:
        return sum(int(tick) for tick in fields[11:15]) / TICKS
    except ValueError:
        return 0.0


def privileges_dropped(pid):
    try:
        return runner.unprivileged(f"/proc/{pid}/status")
    except (OSError, KeyError, ValueError):
        return False


def threads(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return None
