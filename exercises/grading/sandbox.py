# SPDX-License-Identifier: MIT
"""The sandbox: what a student's child can reach. view() gives bubblewrap's view (the system's
libraries and Python's, read-only; this repository, this package and the reference scripts
hidden), sandbox_filter() the seccomp filter (deny by default on x86_64), Sandbox how a child
starts in bwrap, and sandbox() the way that works on this machine (as root with setpriv, or in a
user namespace), or None.

It relies on base.py (the repository's place, the project's names) and on exercises/runner.py
(the program the child runs, and its check that it holds no privilege)."""

import contextlib
import errno
import inspect
import json
import os
import platform
import select
import shutil
import struct
import subprocess
import sys
import time
import zipfile
from functools import cache
from pathlib import Path

import runner  # exercises/runner.py: the child, and the data both sides read

from .base import HERE, PROJECT, START_LIMIT

NOBODY = 65534  # the host's user and group a child runs as where the grader is root
INIT_MEMORY = ("/proc/1/mem", "/proc/1/task/1/mem")  # bwrap's init's memory, by /proc: hidden
SYSTEM = ("/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libx32", "/lib", "/lib32", "/lib64")
LIBRARIES = ("python*/*-packages", "*/python*/*-packages", "local/lib*/python*/*-packages")


@cache
def interpreter():
    """(the folders the child's interpreter imports from, as it finds them itself (isolated,
    its .pth files read); the files it maps as it starts: its program and shared libraries,
    libpython where its RUNPATH names its first prefix); ([], []) where it cannot say."""
    code = "import json, sys; print(json.dumps([sys.path, open('/proc/self/maps').read()]))"
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-c", code], capture_output=True, text=True, env={}, timeout=60
        )
        path, maps = json.loads(done.stdout)
    except (OSError, ValueError, TypeError, subprocess.SubprocessError):
        return [], []
    mapped = {line.split(maxsplit=5)[-1] for line in maps.splitlines() if " /" in line}
    return [Path(p) for p in path if os.path.exists(p)], sorted(Path(f) for f in mapped)


def shown_folders():
    """The folders every sandbox shows, read-only: the system's libraries, and the lib folder of
    each of Python's prefixes (its standard library, its site-packages, libpython); not the rest
    of /usr, not a prefix's bin or share."""
    prefixes = {Path(sys.prefix), Path(sys.base_prefix)}
    prefixes.add(Path(os.path.realpath(sys.executable)).parent.parent)
    folders = [Path(top) for top in SYSTEM]
    folders += [prefix / lib for prefix in prefixes for lib in ("lib", "lib64")]
    # os.path's isdir and islink say False where the folder cannot be looked at (a prefix under a
    # folder this user may not read): a folder the grader cannot see is not shown
    return sorted({f for f in folders if os.path.isdir(f) and not os.path.islink(f)})


def shown_folder(path):
    """The folder every sandbox shows that holds path where a child can read it (this
    repository is hidden, but for a venv in it), or None: no class's hand-ins or grades there."""
    path, repo = Path(path).resolve(), HERE.parent
    for folder in shown_folders():
        real = folder.resolve()
        hidden = repo.is_relative_to(real) and path.is_relative_to(repo)  # the repository's tmpfs
        if path.is_relative_to(real) and not hidden:
            return folder
    return None


def program(path):
    """{place: bwrap's arguments} that show the program at path by that path: each symbolic
    link on the way to it, then its file, read-only."""
    mounts, path = {}, os.path.abspath(path)
    for _ in range(40):
        if not os.path.islink(path):
            break
        target = os.readlink(path)
        mounts[Path(path)] = ["--symlink", target, path]
        path = os.path.normpath(os.path.join(os.path.dirname(path), target))
    return mounts | {Path(path): ["--ro-bind", path, path]}


def holds_project(archive):
    """Whether a zip archive holds one of this project's modules or packages at its top (or
    cannot be read)."""
    try:
        with zipfile.ZipFile(archive) as files:
            tops = {Path(Path(name).parts[0]).stem for name in files.namelist() if name}
    except (OSError, zipfile.BadZipFile):
        return True
    return bool(tops & set(PROJECT))


def emptied(place):
    return ["--tmpfs", str(place), "--remount-ro", str(place)]


def view(*programs):
    """bwrap's arguments for what a child sees: the shown folders, read-only; in them, every
    Python library folder that the child's interpreter does not import from emptied, and in
    those it does, this project's modules (and their bytecode) /dev/null and its packages (this
    grader's) emptied; this repository emptied, wherever it lies in them; the programs (the
    interpreter's) and its venv's pyvenv.cfg. The folders above them that bwrap makes are made
    readable by all first (bwrap 0.8 makes them 0700, its root's where it runs as root)."""
    folders, (path, mapped) = shown_folders(), interpreter()
    mounts = {}  # place: its arguments, mounted parents first
    for top in SYSTEM:
        if os.path.islink(top):  # /lib -> usr/lib
            mounts[Path(top)] = ["--symlink", os.readlink(top), top]
    for folder in folders:
        mounts[folder] = ["--ro-bind", str(folder), str(folder)]
        for library in {p for pattern in LIBRARIES for p in folder.glob(pattern)}:
            if library.is_dir() and not any(p.is_relative_to(library) for p in path):
                mounts[library] = emptied(library)  # another Python's, or the base's
        repo = HERE.parent
        if repo.is_relative_to(folder.resolve()):  # by the path the child would see it by
            place = folder / repo.relative_to(folder.resolve())
            mounts[place] = emptied(place)
    for place in path:
        if not any(place.is_relative_to(folder) for folder in folders):
            continue
        if place.is_file() and holds_project(place):  # an egg, a zip Python imports from
            mounts[place] = ["--ro-bind", "/dev/null", str(place)]
        for name in PROJECT:
            for copy in [*place.glob(f"{name}.py"), *place.glob(f"__pycache__/{name}.*")]:
                mounts[copy] = ["--ro-bind", "/dev/null", str(copy)]
            if (place / name).is_dir():  # a package (this one, grading/): emptied
                mounts[place / name] = emptied(place / name)
    config = Path(sys.prefix) / "pyvenv.cfg"
    for file in [config, *mapped]:
        if file.is_file() and not any(file.is_relative_to(folder) for folder in folders):
            mounts[file] = ["--ro-bind", str(file), str(file)]
    for name in programs:
        mounts |= program(name)
    made = {parent for place in mounts for parent in place.parents}
    made = {p for p in made if not any(p.is_relative_to(folder) for folder in folders)}
    arguments = []
    for folder in sorted(made - {Path("/")}, key=lambda place: len(place.parts)):
        arguments += ["--perms", "0755", "--dir", str(folder)]
    for place in sorted(mounts, key=lambda place: len(place.parts)):
        arguments += mounts[place]
    return arguments


MACHINES = {"x86_64": (0, 0xC000003E), "aarch64": (1, 0xC00000B7)}  # its column, its audit arch
SYSCALLS = {  # name: its number on x86_64, on aarch64
    "unshare": (272, 97), "clone": (56, 220), "clone3": (435, 435),
    "add_key": (248, 217), "request_key": (249, 218), "keyctl": (250, 219),
    "socket": (41, 198), "socketpair": (53, 199),
    "io_uring_setup": (425, 425), "io_uring_enter": (426, 426), "io_uring_register": (427, 427),
    "ptrace": (101, 117), "process_vm_readv": (310, 270), "process_vm_writev": (311, 271),
    "pidfd_getfd": (438, 438),
}  # fmt: skip
REFUSED = (  # what no runner needs, refused whatever it is asked for (EPERM):
    "add_key", "request_key", "keyctl",  # every kernel keyring: the teacher's session keyring,
    # which every process inherits, and nobody's user keyring, which outlives the sandbox
    "socket", "socketpair",  # the runner talks over pipes; a socket's buffers are memory
    # that no limit of a process counts, where no cgroup does
    "io_uring_setup", "io_uring_enter", "io_uring_register",  # the kernel's work, not a call's
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",  # another process's
    # memory or files: bwrap's init, which no filter holds and which keeps the keyrings
)  # fmt: skip


ALLOWED = {  # x86_64: what the child may call, by name and number. Traced: what the runner,
    # setpriv before it and right answers of all five rungs called in the sandbox (strace -f,
    # Debian's strace 6.1, of `check.py all` on the scripts, of their exercises solved, of
    # test_exercises.py's right forms and of a notebook, counting each process from bwrap's
    # seccomp() on; the README says how to trace again).
    "read": 0, "write": 1, "open": 2, "close": 3, "fstat": 5, "lseek": 8, "mmap": 9,
    "mprotect": 10, "munmap": 11, "brk": 12, "rt_sigaction": 13, "ioctl": 16, "pread64": 17,
    "access": 21, "dup2": 33, "getpid": 39, "execve": 59, "wait4": 61, "uname": 63,
    "fcntl": 72, "getcwd": 79, "readlink": 89, "sysinfo": 99, "getuid": 102,
    "setgroups": 116, "setresuid": 117, "getresuid": 118, "setresgid": 119, "getresgid": 120,
    "capget": 125, "capset": 126, "fstatfs": 138, "prctl": 157, "arch_prctl": 158,
    "gettid": 186, "futex": 202, "sched_setaffinity": 203, "sched_getaffinity": 204,
    "getdents64": 217, "set_tid_address": 218, "clock_nanosleep": 230, "exit_group": 231,
    "mbind": 237, "openat": 257, "newfstatat": 262, "set_robust_list": 273,
    "epoll_create1": 291, "prlimit64": 302, "getrandom": 318, "rseq": 334,
    # Not traced, but what Python, glibc and torch call on a path a right answer in another
    # form may take, each about the process itself: a thread's start and end (clone, whose
    # flags are looked at, exit), signals to itself, time, sleep, pipes, polling, process
    # groups and sessions (inside the sandbox's own), the older and newer forms of the calls
    # above.
    "stat": 4, "lstat": 6, "poll": 7, "rt_sigprocmask": 14, "rt_sigreturn": 15,
    "pwrite64": 18, "readv": 19, "writev": 20, "pipe": 22, "select": 23, "sched_yield": 24,
    "mremap": 25, "madvise": 28, "dup": 32, "nanosleep": 35, "clone": 56, "exit": 60,
    "kill": 62, "getdents": 78, "gettimeofday": 96, "getrusage": 98, "times": 100,
    "getgid": 104, "geteuid": 107, "getegid": 108, "setpgid": 109, "getppid": 110,
    "getpgrp": 111, "setsid": 112, "getpgid": 121, "getsid": 124, "sigaltstack": 131,
    "sched_getparam": 143, "sched_getscheduler": 145,
    "time": 201, "restart_syscall": 219, "clock_gettime": 228, "clock_getres": 229,
    "epoll_wait": 232, "epoll_ctl": 233, "tgkill": 234, "waitid": 247, "faccessat": 269,
    "pselect6": 270, "ppoll": 271, "epoll_pwait": 281, "eventfd2": 290, "dup3": 292,
    "pipe2": 293, "statx": 332, "close_range": 436, "faccessat2": 439,
}  # fmt: skip
# Refused on x86_64 because unlisted (ENOSYS), among others: shmget (29), semget (64), msgget
# (68) and the rest of System V IPC, mq_open (240) and POSIX message queues, memfd_create
# (319), whose memory no limit of a process counts; mount, bpf, perf_event_open,
# userfaultfd, fork (57: glibc forks by clone), unshare (272), setns.


KILL = 0x80000000  # SECCOMP_RET_KILL_PROCESS: what the tests give an unlisted call


def sandbox_filter(unlisted=None):
    """A seccomp filter, classic BPF as bwrap --seccomp reads it, for the child's program and
    all it starts. On x86_64, deny by default: ALLOWED's calls pass, clone() too but with
    CLONE_NEWUSER (EPERM: no user namespace, in which a student would mount a tmpfs of their
    own); REFUSED's get EPERM (what the runner meets and goes on without: glibc's look for nscd
    is a socket); clone3() ENOSYS (glibc falls back to clone()); any other call ENOSYS, or
    `unlisted` (KILL, in the test that a right answer meets none), System V IPC (shmget, msgget,
    semget) and POSIX message queues (mq_open) among them, whose memory no limit of a process
    counts. On aarch64, where no list was traced, the filter refuses a list: REFUSED's calls,
    unshare() and clone() with CLONE_NEWUSER, clone3(); the rest passes, System V IPC and
    message queues too (their memory is bounded there by a cgroup only; README's table). Any
    call of another ABI (i386's or x32's on x86_64) is ENOSYS. None on another machine."""
    if platform.machine() not in MACHINES:
        return None
    column, arch = MACHINES[platform.machine()]
    number = {name: numbers[column] for name, numbers in SYSCALLS.items()}
    listed = ALLOWED if platform.machine() == "x86_64" else None
    allow, refuse, absent = 0x7FFF0000, 0x50000 | errno.EPERM, 0x50000 | errno.ENOSYS
    load, equal, at_least, any_bit, give = 0x20, 0x15, 0x35, 0x45, 0x06
    program = [  # (code, where to go if true, if false, k): a label, or None for the next line
        (load, None, None, 4),  # its ABI
        (equal, None, "absent", arch),  # another's: absent
        (load, None, None, 0),  # the system call's number
        (at_least, "absent", None, 0x40000000),  # x32's: absent
        (equal, "absent", None, number["clone3"]),
        *[(equal, "refused", None, number[name]) for name in REFUSED],
        (equal, "flags", None, number["clone"]),
    ]
    if listed is None:
        program += [(equal, "flags", None, number["unshare"]), (give, None, None, allow)]
    else:
        program += [(equal, "allowed", None, k) for name, k in listed.items() if name != "clone"]
        program.append((give, None, None, absent if unlisted is None else unlisted))
    labels = {"flags": len(program)}
    program += [
        (load, None, None, 16),  # its first argument, the flags
        (any_bit, "refused", None, 0x10000000),  # CLONE_NEWUSER
    ]
    labels |= {"allowed": len(program), "refused": len(program) + 1, "absent": len(program) + 2}
    program += [(give, None, None, allow), (give, None, None, refuse), (give, None, None, absent)]

    def to(label, here):  # a jump counts the lines it skips, at most 255
        return 0 if label is None else labels[label] - here - 1

    lines = [(code, to(t, i), to(f, i), k) for i, (code, t, f, k) in enumerate(program)]
    assert all(0 <= jump <= 255 for _, t, f, _ in lines for jump in (t, f))
    return b"".join(struct.pack("=HBBI", *line) for line in lines)


class Sandbox:
    """How a child starts in bubblewrap: bwrap's program and its options, what runs the child's
    program inside (setpriv, where bwrap runs as root), and the user that runs bwrap (None: the
    grader's)."""

    def __init__(self, bwrap, options, wrap, user):
        self.bwrap = bwrap
        self.options = options
        self.wrap = wrap
        self.user = user

    def start(self, program, cgroup=None, **kwargs):
        """program in a sandbox of its own, its standard streams as kwargs say: (the process,
        the process id of the sandbox's init, or None where bwrap did not say). bwrap reads
        its options and the runner from file descriptors: its command line, which every
        process in the sandbox can read, holds no host path but Python's. Its init waits until
        it and bwrap are in cgroup, so that all it starts is too."""
        runner_file = data_fd((HERE / "runner.py").read_bytes())
        info, info_end = os.pipe()
        block, block_end = os.pipe()
        options = [*self.options, "--perms", "0444", "--ro-bind-data", str(runner_file)]
        options += ["/grading/runner.py", "--info-fd", str(info_end), "--block-fd", str(block)]
        options += ["--remount-ro", "/"]  # nothing left to write
        fds = [runner_file, info_end, block]
        if sandbox_filter() is not None:
            fds.append(data_fd(sandbox_filter()))
            options += ["--seccomp", str(fds[-1])]
        options_file = data_fd(b"".join(f"{option}\0".encode() for option in options))
        fds.append(options_file)
        if self.user is not None:
            kwargs |= dict(user=self.user, group=self.user, extra_groups=[])
        try:
            process = subprocess.Popen(  # umask: the folders bwrap makes, readable by all
                [self.bwrap, "--args", str(options_file), *self.wrap, *program],
                pass_fds=fds, env={}, umask=0o022, start_new_session=True, **kwargs,
            )  # fmt: skip
        finally:
            for fd in fds:
                os.close(fd)
        pid1 = None
        try:
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                pid1 = int(json.loads(read_all(info, time.monotonic() + START_LIMIT))["child-pid"])
            if cgroup is not None:  # else it runs outside its limit: not at all
                try:
                    cgroup.join(process.pid, *([pid1] if pid1 else []))
                except OSError:
                    cgroup.kill()
                    process.kill()
                    process.wait()
                    raise
            with contextlib.suppress(OSError):  # bwrap ended: the caller hears no answer
                os.write(block_end, b"1")  # go on
        finally:
            os.close(info)
            os.close(block_end)
        return process, pid1


def trial_code():
    """What a trial child runs: the runner's own check that it holds no privilege of the host's,
    and a look at numpy and torch, which it must be able to read."""
    return "\n".join(
        [
            "import importlib.util, sys",
            inspect.getsource(runner.unprivileged),
            "for name in ('numpy', 'torch'):",
            "    open(importlib.util.find_spec(name).origin, 'rb').close()",
            "sys.exit(0 if unprivileged() else 3)",
        ]
    )


def works(way):
    """Whether a child starts in this sandbox and holds no privilege there."""
    try:
        process, _ = way.start(
            [sys.executable, "-I", "-c", trial_code()],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return False
    try:
        return process.wait(timeout=60) == 0
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return False


@cache
def sandbox():
    """A Sandbox, or None where bubblewrap is missing or no way of it starts here. The child
    sees what view() shows, in namespaces of its own (no network, no other process: bwrap's
    init is its PID 1), its environment fixed, bwrap's own empty. It never runs as the host's
    root: as root, bwrap mounts as root (Python may lie where only root reads, a pyenv in
    /root), then setpriv makes its program nobody, with no capability; where root may not
    mount (a container), bwrap runs as nobody in a user namespace. As a plain user, bwrap
    makes a user namespace and the child is that user, with no capability. Either way
    sandbox_filter() holds the child and all it starts."""
    bwrap = shutil.which("bwrap")
    if sys.platform != "linux" or bwrap is None:
        return None
    common = ["--unshare-pid", "--unshare-ipc", "--unshare-net", "--unshare-uts"]
    common += ["--unshare-cgroup-try", "--die-with-parent", "--new-session"]
    common += ["--proc", "/proc"]
    for listing in ("/proc/keys", "/proc/key-users"):  # the keyrings the child inherits: the
        common += ["--ro-bind", "/dev/null", listing]  # names of the teacher's keys
    for memory in INIT_MEMORY:  # bwrap's init, run as the child's user where bwrap is: its
        common += ["--ro-bind", "/dev/null", memory]  # options, host paths, in its memory
    common += ["--remount-ro", "/proc"]  # no kernel setting to write
    common += ["--dev", "/dev", *emptied("/dev/pts"), "--remount-ro", "/dev"]  # no /dev/shm to
    # fill, no pseudo-terminal to open (the kernel's count of them is the machine's)
    common += ["--hostname", "grading"]  # not the machine's
    common += ["--clearenv", "--setenv", "OMP_NUM_THREADS", "1", "--chdir", "/"]
    userns = ["--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY), "--disable-userns"]
    userns += ["--cap-drop", "ALL", *view(sys.executable)]
    ways = [Sandbox(bwrap, [*common, *userns], [], None)]
    if os.geteuid() == 0:
        ways = [Sandbox(bwrap, [*common, *userns], [], NOBODY)]
        setpriv = shutil.which("setpriv")
        if setpriv is not None:
            become = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
            become += ["--inh-caps=-all", "--bounding-set=-all", "--"]
            keep = ["--cap-drop", "ALL"]
            keep += [
                x for cap in ("SETUID", "SETGID", "SETPCAP") for x in ("--cap-add", f"CAP_{cap}")
            ]
            keep += view(sys.executable, setpriv)
            ways.insert(0, Sandbox(bwrap, [*common, *keep], become, None))
    return next((way for way in ways if works(way)), None)


def read_all(fd, deadline):
    """What a pipe holds once its writer closes it (bwrap writes its info in parts, and ends
    if its reader is gone), or what came by the deadline."""
    data = b""
    while select.select([fd], [], [], max(deadline - time.monotonic(), 0))[0]:
        part = os.read(fd, 4096)
        if not part:
            break
        data += part
    return data


def data_fd(data):
    """A file descriptor that reads data from its start."""
    fd = os.memfd_create("check")
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
