# SPDX-License-Identifier: MIT
"""Check the functions of one rung's exercise file: the hand-worked cases first, then the
script's own function on random inputs of train()'s contract, values and gradients.

    python exercises/check.py reinforce                        # exercises/reinforce.py
    python exercises/check.py ppo_gae --file alice/ppo_gae.py  # a copy handed in
    python exercises/check.py ppo_gae --file exercises.ipynb   # a notebook's functions
    python exercises/check.py all                              # every rung: "7 of 10 functions"
    python exercises/check.py ppo_gae --folder handed_in --csv grades.csv  # a row per student
    python exercises/check.py --doctor                         # before a class: this machine

One line per function: passed (with the number of cases), not written yet, or failed (the case,
what was expected, what came back, and the mistake in words where a known one explains every
case), then the total. Exit status: 0 when all pass; 1 when any fails or is not written yet; 2
for an unknown rung or a file that cannot be read, in one line.

The grader builds every case, its inputs and what it expects, in its own process. The student's
file runs in a child (exercises/runner.py) inside a bubblewrap sandbox that holds the runner,
the system's libraries and Python's, read-only: no repository, no reference script, no case, no
other student, no network, no socket, no keyring, a PID namespace of its own; never the host's
root, no capability, nothing of the teacher's environment. The file reaches the child as text,
which the child parses and compiles on the student's time. The child gets a case's inputs as
data and sends back what the function returned and its inputs after the call; the comparison,
the in-place check, the mistake named and the exit status are decided here, on the grader's
clock, within a memory limit per student that the kernel counts where the grader may make a
cgroup, and never from an answer larger than its case could need.
"""

import argparse
import ast
import contextlib
import csv
import errno
import inspect
import io
import json
import math
import os
import platform
import re
import select
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import types
import unicodedata
import warnings
import zipfile
from functools import cache
from multiprocessing.connection import Connection
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cases  # noqa: E402  (exercises/cases.py, beside this file)
import runner  # noqa: E402  (exercises/runner.py: the child, and the data both sides read)
from runner import find, unwritten  # noqa: E402

HERE = Path(__file__).resolve().parent
TIME_LIMIT = 5.0  # seconds of CPU time a function's sandbox may use for all its cases
WALL_TIMES = 10  # the wall-clock backstop: this many times the time limit, on the grader's
WALL_MORE = 5.0  # clock, and this many seconds more (what sleeps or waits uses no CPU time)
START_LIMIT = 60.0  # seconds a child gets to start python and torch, before any student code
MEMORY_LIMIT = 1024  # MiB a student's code may allocate, beyond what python and torch hold
FILE_LIMIT = runner.CODE_LIMIT  # bytes: a larger .py hand-in is not read (a notebook: 64
# times that, outputs included, and as much code as a .py)
RECEIVED_LIMIT = 1 << 25  # bytes a student's children may send in all (the grader keeps them)
PROJECT = ("reinforce", "vpg", "ppo", "ppo_gae", "ppo_continuous", "long_runs", "cases", "check")


def fail(message):
    print(f"check.py: error: {one_line(message)}", file=sys.stderr)
    sys.exit(2)


MARKS = 2  # combining marks one letter may carry as printed (Vietnamese's, decomposed, need 2)


def clean(text):
    """A string from a student, printable on one line: control characters (newlines, escape
    codes, carriage returns, bidirectional overrides), those that show nothing (a zero-width
    joiner, a Hangul filler) and a combining mark past the second on one letter (a stack of
    them draws over the rows around it) escaped as Python writes them."""
    shown, marks = [], 0
    for character in str(text):
        marks = marks + 1 if unicodedata.category(character) in ("Mn", "Me") else 0
        kept = character.isprintable() and not unseen(character) and marks <= MARKS
        shown.append(character if kept else ascii(character)[1:-1])
    return "".join(shown)


def unseen(character):
    code = ord(character)
    return any(first <= code <= last for first, last in IGNORABLE)


def one_line(message, limit=300):
    """message on one line, its runs of spaces one, cut to `limit` characters: escaping only
    lengthens it, so the first `limit` + 1 characters decide what shows, and a student's
    4 MiB string costs the grader no more than a short one."""
    text = re.sub(" {2,}", " ", str(message)).strip(" ")  # after clean(), the only whitespace
    text = clean(text[: limit + 1])
    return text if len(text) <= limit else text[: limit - 3] + "..."


@contextlib.contextmanager
def quiet():
    """What a function prints or warns stays out of the grader's lines."""
    with (
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")
        yield


# ---- one case: what a function gives, as data ----------------------------------------------
def form(value):
    """What a function returned, in words, as far as train() cares: a tensor and its shape, a
    float...; for a tuple, a list of its parts' forms."""
    if isinstance(value, torch.Tensor):
        kind = "" if value.is_floating_point() else f" of {str(value.dtype)[6:]}"
        return f"a tensor{kind} of shape {tuple(value.shape)}"
    if isinstance(value, (np.ndarray, runner.Array)):
        return f"a numpy array of shape {value.shape}"
    if isinstance(value, (tuple, list)) and len(value) > PARTS:
        return f"a {type(value).__name__} of {len(value):,} values"
    if isinstance(value, (tuple, list)):
        return [form(v) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return {type(None): "None", bool: "a bool", int: "an int"}.get(type(value), "a float")
    name = value.name if isinstance(value, runner.Opaque) else type(value).__name__
    return f"a {one_line(name, 60)}"


PARTS = 8  # parts of a tuple or list form() names one by one (train()'s have at most 4)
ROOM = 16  # times as many lists and numbers as a case's expected value an answer may make


def beyond(value, expected):
    """Whether cases.as_lists(value) would make more than ROOM times the lists and numbers
    of expected's and 64 more, or nest 2 deeper: what no case needs (a named mistake's
    answers are at most twice the size, one deeper). Counted from tensors' shapes and the
    lengths of lists, stopping once past, so that nothing is built: a tensor of shape
    (2,) * 20 + (0,) holds no number but would make 2 ** 21 lists."""
    nodes, depth = size(expected)
    nodes, depth = ROOM * nodes + 64, depth + 2
    todo, count = [(value, 0)], 0
    while todo:
        item, level = todo.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, (torch.Tensor, np.ndarray)):
            shape = tuple(item.shape)
            level += len(shape)
            count += sum(math.prod(shape[:k]) for k in range(len(shape) + 1))
        elif isinstance(item, (list, tuple)):
            count += 1
            if count + len(item) > nodes:  # each part at least a number: a long list not walked
                return True
            todo += [(part, level + 1) for part in item]
        else:
            count += 1
        if count > nodes or level > depth:
            return True
    return False


def size(value):
    """(the lists and numbers cases.as_lists(value) holds, how deep they nest): a value the
    grader built, small."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (torch.Tensor, np.ndarray)):
        shape = tuple(value.shape)
        return sum(math.prod(shape[:k]) for k in range(len(shape) + 1)), len(shape)
    if isinstance(value, (list, tuple)):
        parts = [size(part) for part in value]
        return 1 + sum(n for n, _ in parts), 1 + max([d for _, d in parts], default=0)
    return 1, 0


class Beyond:
    """An answer larger or deeper than any its case needs: its form in words, never its
    numbers (no list of it is made, no mistake explains it)."""

    def __init__(self, value):
        self.words = words(form(value))

    def __repr__(self):
        return self.words


class Stop(Exception):
    """The child cannot go on with this function: it ran past its time, ended its process, or
    sent what is not an answer. Never a case's failure: the function's."""


def answer(case, fn):
    """(kind, value, forms, changed): "ok" and what the case got, as lists, or "raised" and the
    error in one line, or "unwritten"; the form of what each call of fn returned; and the
    inputs that a call changed in place. Every call starts from the same random state."""
    forms, changed = [], []

    def guarded(*args, **kwargs):
        # The function gets copies of the case's tensors (which every student's call shares):
        # what it does to them is seen here, and undone for the next call.
        args = [x.clone() if isinstance(x, torch.Tensor) else x for x in args]
        kwargs = {k: x.clone() if isinstance(x, torch.Tensor) else x for k, x in kwargs.items()}
        try:
            named = inspect.signature(fn).bind(*args, **kwargs).arguments.items()
        except (TypeError, ValueError):
            named = [(f"argument {i + 1}", a) for i, a in enumerate(args)]
        before = {}
        modules = []
        for n, x in named:
            if isinstance(x, torch.Tensor):
                before[n] = (x, x.detach().clone())
            if isinstance(x, torch.nn.Module):  # an Agent, a RunningNorm: its every tensor
                state = x.state_dict(keep_vars=True)
                before |= {f"{n}.{k}": (v, v.detach().clone()) for k, v in state.items()}
                modules.append((n, x))
        result = fn(*args, **kwargs)
        after = {n: x for n, (x, _) in before.items()}
        for n, module in modules:
            after |= {f"{n}.{k}": v for k, v in module.state_dict(keep_vars=True).items()}
        for n, (_, old) in before.items():
            x = after.get(n)
            if not isinstance(x, torch.Tensor) or not same_tensor(x, old):
                changed.append(n)
        forms.append(form(result))
        return result

    try:
        with cases.seeded(0):
            value = case.call(guarded)
        if beyond(value, case.expected):
            return "ok", Beyond(value), forms, changed
        return "ok", cases.as_lists(value), forms, changed
    except (Stop, KeyboardInterrupt):  # the grader's, or the teacher's Ctrl-C: not the case's
        raise
    except NotImplementedError:
        return "unwritten", None, forms, changed
    except BaseException as error:  # SystemExit, GeneratorExit... a failed case, too
        why = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        return "raised", one_line(why), forms, changed


def attempt(case, fn):
    """("ok", what fn gave, as lists) or ("raised", the error in one line)."""
    return answer(case, fn)[:2]


def passes(case, answer):
    return answer[0] == "ok" and cases.close(
        answer[1], case.expected, scale=case.scale, tolerance=case.tolerance
    )


# ---- the sandbox: what the child can reach -----------------------------------------------------
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
    return sorted({f for f in folders if f.is_dir() and not f.is_symlink()})


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
    """Whether a zip archive holds one of this project's modules at its top (or cannot be read)."""
    try:
        with zipfile.ZipFile(archive) as files:
            tops = {Path(name).stem for name in files.namelist() if "/" not in name}
    except (OSError, zipfile.BadZipFile):
        return True
    return bool(tops & set(PROJECT))


def emptied(place):
    return ["--tmpfs", str(place), "--remount-ro", str(place)]


def view(*programs):
    """bwrap's arguments for what a child sees: the shown folders, read-only; in them, every
    Python library folder that the child's interpreter does not import from emptied, and in
    those it does, this project's modules (and their bytecode) /dev/null; this repository
    emptied, wherever it lies in them; the programs (the interpreter's) and its venv's
    pyvenv.cfg. The folders above them that bwrap makes are made readable by all first (bwrap
    0.8 makes them 0700, its root's where it runs as root)."""
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


# ---- memory: the kernel's own accounting, where the grader may make a cgroup -----------------
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


# ---- the child: the student's file, run by exercises/runner.py ---------------------------------
POLL = 0.02  # seconds between two looks at the CPU time a sandbox has used


class Deadline:
    """When the grader stops waiting for a child: once its sandbox has used `cpu` seconds of
    CPU time as Session.cpu() counts them (None: not counted), or at `wall` on the grader's
    clock (time.monotonic()), whichever comes first; `late`: what the Stop says at the wall.
    The time limit counts what the student's code used, not how busy the machine is: a right
    answer passes beside other work; a loop that never ends is ended within its CPU time; what
    sleeps or waits, using none, is ended by the wall."""

    def __init__(self, cpu, wall, late):
        self.cpu = cpu
        self.wall = wall
        self.late = late


def backstop(limit):
    """The wall-clock seconds a function may take, whatever CPU time it used."""
    return WALL_TIMES * limit + WALL_MORE


class Session:
    """One student's child, in the sandbox (or, where none can start, as a plain process of its
    own), answering the grader's requests. Each request waits until its Deadline: the CPU time
    the sandbox used (cpu()), or the grader's clock as a backstop; past it, or at close(), the
    child and everything it started are killed."""

    def __init__(self, limit, memory, bwrap, budget):
        seconds = int(START_LIMIT + 100 * limit)  # CPU time: a backstop, should the grader die
        program = "/grading/runner.py" if bwrap else str(HERE / "runner.py")
        sandboxed = str(int(bwrap is not None))  # then the child checks it holds no privilege
        runs = [sys.executable, "-I", program, str(memory << 20), str(seconds), sandboxed]
        self.killed = None
        self.spent = None  # the CPU time the sandbox had used when its time limit killed it
        self.pid1 = None  # the sandbox's init, which adopts every orphan in it
        self.runner = None  # the child's process, as the grader sees it
        self.threads = None  # its threads, once it is ready
        self.memory = memory
        self.rung = None
        self.budget = budget  # [bytes the student's children may still send]
        self.cgroup = None
        streams = dict(stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        if bwrap:
            if cgroup_home() is not None:
                with contextlib.suppress(OSError):
                    self.cgroup = Cgroup(cgroup_home())
            try:
                self.process, self.pid1 = bwrap.start(runs, self.cgroup, **streams)
            except OSError:
                if self.cgroup is not None:
                    self.cgroup.remove()
                raise Stop("its sandbox could not start") from None
        else:
            self.process = subprocess.Popen(runs, cwd="/", start_new_session=True, **streams)
        self.requests = Connection(os.dup(self.process.stdin.fileno()), readable=False)
        self.answers = Connection(os.dup(self.process.stdout.fileno()), writable=False)
        self.process.stdin.close()
        self.process.stdout.close()
        started = f"its sandbox did not start within {START_LIMIT:g} s"
        self.ask(None, Deadline(None, time.monotonic() + START_LIMIT, started), "ready")
        below = tree(self.pid1) if self.pid1 else [self.process.pid]
        if len(below) == (2 if self.pid1 else 1):  # else it cannot tell: a new child each time
            self.runner = below[-1]
            self.threads = threads(self.runner)
        if bwrap and not (self.runner and privileges_dropped(self.runner)):
            self.close()  # as the host sees it: never a student's code as root, or with a right
            raise Stop("its sandbox would not drop the host's privileges")
        if self.cgroup is not None:  # what python and torch hold, and the student's share
            try:
                self.cgroup.limit(self.cgroup.usage() + (memory << 20))
            except (OSError, ValueError):
                self.close()
                raise Stop("its memory could not be limited") from None
        with contextlib.suppress(OSError, TypeError):  # short of memory, the kernel ends the
            Path(f"/proc/{self.runner}/oom_score_adj").write_text("1000")  # student's first

    def busy(self):
        """Whether anything of the student's runs beside the child: a thread of its own, or
        any other process in the sandbox, whatever its parent (orphans go to its init)."""
        if self.runner is None or threads(self.runner) != self.threads:
            return True
        alone = sorted([self.pid1, self.runner] if self.pid1 else [self.runner])
        return sorted(tree(self.pid1 or self.runner)) != alone

    def cpu(self):
        """The CPU time, in seconds, that the child and all it started have used: its cgroup's
        count (cgroup v2's cpu.stat), else the kernel's count of each process in the sandbox,
        with the processes each waited for (those ended: the sandbox's init waits for every
        orphan). Without a cgroup, a process that ends unwaited for (SIGCHLD ignored) is not
        counted: the wall-clock backstop still ends what it does."""
        used = self.cgroup.cpu() if self.cgroup is not None else None
        if used is None:
            used = sum(cpu_time(pid) for pid in tree(self.process.pid))
        return used

    def deadline(self, limit, wall, late):
        """A Deadline `limit` seconds of CPU time from now, or at `wall` (time.monotonic()):
        past the wall, the Stop says `late`."""
        return Deadline(self.cpu() + limit, wall, late)

    def watch(self, deadline, answered):
        """Until answered is set: look at the deadline every POLL seconds; past it, kill the
        child, saying which ("time" for the CPU time, "wall" for the clock). Once the kernel
        has ended a process of its cgroup for its memory, the verdict is known: no wait for a
        process that waits for the one ended."""
        while True:
            if time.monotonic() >= deadline.wall:
                self.kill("wall")
                return
            if self.cgroup is not None and self.cgroup.out_of_memory():
                self.kill("memory")
                return
            used = None if deadline.cpu is None else self.cpu()
            if used is not None and used >= deadline.cpu:
                self.spent = used
                self.kill("time")
                return
            if answered.wait(POLL):
                return

    def kill(self, why=None):
        self.killed = self.killed or why
        if self.cgroup is not None:  # every process in it, whatever its parent
            self.cgroup.kill()
        if self.pid1 is not None:  # the sandbox's init: its PID namespace ends with it
            with contextlib.suppress(OSError):
                os.kill(self.pid1, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            self.process.kill()

    def close(self):
        """Kill the child, and all it started; its exit status."""
        self.kill()
        code = self.process.wait()
        for end in (self.requests, self.answers):
            end.close()
        if self.cgroup is not None:
            self.cgroup.remove()
        return code

    def ask(self, message, deadline, *kinds):
        """The child's answer to message, [kind, ...] with kind one of kinds; Stop where none
        comes back by the deadline, or what comes back is not one."""
        answered = threading.Event()
        watchdog = threading.Thread(target=self.watch, args=(deadline, answered), daemon=True)
        watchdog.start()
        try:
            if message is not None:
                self.requests.send_bytes(runner.dumps(message))
            data = self.answers.recv_bytes(runner.MESSAGE_LIMIT)
            self.budget[0] -= len(data)
            if self.budget[0] < 0:
                raise ValueError("more than the grader reads")
            reply = runner.loads(data)
            if not (isinstance(reply, list) and len(reply) >= 2 and reply[0] in kinds):
                if reply != ["ready"] or kinds != ("ready",):
                    raise ValueError("an answer of another kind")
            return reply
        except (OSError, EOFError, ValueError, TypeError, RecursionError) as error:
            starved = self.cgroup is not None and self.cgroup.out_of_memory()
            code = self.close()
            if starved:  # the kernel ended a process of it: past the limit, all counted
                raise Stop(f"held more memory than its limit ({self.memory} MiB)") from None
            if self.killed == "time":
                raise Stop("time") from None
            if self.killed == "wall":
                raise Stop(deadline.late) from None
            ended = isinstance(error, OSError) and str(error) != "bad message length"
            if ended or isinstance(error, EOFError):  # the child ended: how
                raise Stop(f"ended its process (exit status {code})") from None
            raise Stop("sent what the grader cannot read") from None
        finally:
            answered.set()
            watchdog.join()


class RemoteCall(torch.autograd.Function):
    """A call of the student's function in the child, as a step of the grader's autograd graph:
    its backward asks the child for the gradient of each input, through the student's graph."""

    @staticmethod
    def forward(ctx, call, *leaves):
        ctx.call = call
        outputs = call.run(leaves) or [(torch.zeros(()), False)]
        ctx.mark_non_differentiable(*[t for t, grad in outputs if not grad])
        return tuple(t for t, _ in outputs)

    @staticmethod
    def backward(ctx, *grads):
        return (None, *ctx.call.grad(grads))


class Remote:
    """The student's function NAME in the child, called as the grader's cases call a function:
    its arguments go as data, tensors and modules (an Agent, a RunningNorm) included; what it
    returns comes back as tensors, numbers and names; what it did to its inputs is done to the
    grader's copies, so the in-place check and a method's effect on its module are seen here."""

    def __init__(self, session, name, deadline, signature):
        self.session = session
        self.name = name
        self.deadline = deadline
        self.__signature__ = signature  # the script's own: names the inputs a call changed

    def __call__(self, *args, **kwargs):
        call = types.SimpleNamespace(leaves=[], owners=[])
        call.args = self.flatten(list(args), call)
        call.kwargs = {k: self.flatten(v, call) for k, v in kwargs.items()}
        call.run = lambda leaves: self.run(call)
        call.grad = lambda grads: self.grad(call, grads)
        call.grad_enabled = torch.is_grad_enabled()
        if call.grad_enabled and any(t.requires_grad for t in call.leaves):
            outputs = RemoteCall.apply(call, *call.leaves)
        else:
            outputs = [t for t, _ in self.run(call)]
        if isinstance(outputs, torch.Tensor):
            outputs = [outputs]
        return self.rebuild(call.result, iter(outputs))

    def flatten(self, value, call):
        """An argument as the child reads it, each tensor a leaf: {"leaf": i}."""
        if isinstance(value, torch.Tensor):
            if not any(value is t for t in call.leaves):
                call.leaves.append(value)
            return {"leaf": next(i for i, t in enumerate(call.leaves) if t is value)}
        if isinstance(value, torch.nn.Module):
            origin = (
                "nn" if getattr(torch.nn, type(value).__name__, None) is type(value) else "file"
            )
            parts = []
            for items in (value._parameters, value._buffers):
                parts.append({})
                for key, tensor in items.items():
                    if tensor is not None:
                        parts[-1][key] = self.flatten(tensor, call)["leaf"]
                        call.owners.append((value, key, parts[-1][key]))
            children = {
                k: self.flatten(m, call) for k, m in value._modules.items() if m is not None
            }
            plain = {
                k: v
                for k, v in vars(value).items()
                if not k.startswith("_") and k != "training" and type(v) in (bool, int, float, str)
            }
            return {
                "module": [origin, type(value).__name__, value.training, *parts, children, plain]
            }
        if isinstance(value, list):
            return [self.flatten(v, call) for v in value]
        if isinstance(value, tuple):
            return {"tuple": [self.flatten(v, call) for v in value]}
        return runner.encode(value)

    def run(self, call):
        """The call, in the child: [(each tensor of the result, whether it carries a graph)]."""
        leaves = [runner.encode(t.detach()) for t in call.leaves]
        for spec, t in zip(leaves, call.leaves, strict=True):
            spec["tensor"][3] = t.requires_grad
        message = ["call", self.name, call.args, call.kwargs, leaves, call.grad_enabled]
        message.append(runner.encode(torch.get_rng_state()))
        kind, *reply = self.session.ask(message, self.deadline, "returned", "raised")
        reply = self.check(kind, reply)
        if kind == "raised":
            raise student_error(*reply)
        result, after, rng = reply
        self.apply(call, after)
        try:
            call.result = runner.decode(result)
        except (ValueError, TypeError, KeyError):
            self.session.kill()
            raise Stop("sent what the grader cannot read") from None
        outputs = [t for t in flat(call.result) if isinstance(t, torch.Tensor)]
        torch.set_rng_state(rng)
        return [(t.detach().requires_grad_(False), t.requires_grad) for t in outputs]

    def check(self, kind, reply):
        """The reply's parts, decoded; Stop where they are not what the child sends."""
        try:
            if kind == "raised":
                name, message, rng = reply
                if rng is not None:
                    torch.set_rng_state(runner.decode_tensor(rng["tensor"]))
                return [str(name)[:200], str(message)[:2000]]
            result, after, rng = reply
            rng = runner.decode_tensor(rng["tensor"])
            if rng.dtype != torch.uint8 or not isinstance(after, list):
                raise ValueError("not a random state")
            return [result, [runner.decode(a) for a in after], rng]
        except (ValueError, TypeError, KeyError, IndexError, RuntimeError):
            self.session.kill()
            raise Stop("sent what the grader cannot read") from None

    def apply(self, call, after):
        """What the call did to its inputs, done to the grader's: a changed tensor takes the
        child's values, a module's parameter or buffer the child's (another tensor, another
        dtype) where the method replaced it."""
        if len(after) != len(call.leaves):
            self.session.kill()
            raise Stop("sent what the grader cannot read")
        owned = {i: (module, key) for module, key, i in call.owners}
        for i, (mine, theirs) in enumerate(zip(call.leaves, after, strict=True)):
            if i in owned and not isinstance(theirs, torch.Tensor):
                module, key = owned[i]
                with contextlib.suppress(TypeError, KeyError, AttributeError):
                    setattr(module, key, None)
                continue
            if not isinstance(theirs, torch.Tensor) or same_tensor(mine, theirs):
                continue
            if i in owned and key_is_buffer(*owned[i]):
                setattr(*owned[i], theirs.detach())
                continue
            with torch.no_grad():
                mine.data = theirs.detach().to(mine.dtype) if theirs.shape == mine.shape else theirs

    def grad(self, call, grads):
        message = ["grad", [None if g is None else runner.encode(g) for g in grads]]
        kind, *reply = self.session.ask(message, self.deadline, "grads", "raised")
        if kind == "raised":
            raise student_error(*self.check(kind, [*reply[:2], None]))
        try:
            (found,) = reply
            found = [None if g is None else runner.decode(g) for g in found]
            ok = len(found) == len(call.leaves) and all(
                g is None or (isinstance(g, torch.Tensor) and g.shape == t.shape)
                for g, t in zip(found, call.leaves, strict=True)
            )
        except (ValueError, TypeError):
            ok = False
        if not ok:
            self.session.kill()
            raise Stop("sent what the grader cannot read")
        return [
            None if g is None or not t.requires_grad else g.to(t.dtype)
            for g, t in zip(found, call.leaves, strict=True)
        ]

    def rebuild(self, value, outputs):
        """The result, its tensors those of the graph (RemoteCall's outputs)."""
        if isinstance(value, torch.Tensor):
            return next(outputs)
        if isinstance(value, list):
            return [self.rebuild(v, outputs) for v in value]
        if isinstance(value, tuple):
            return tuple(self.rebuild(v, outputs) for v in value)
        if isinstance(value, dict):
            return {k: self.rebuild(v, outputs) for k, v in value.items()}
        return value


def flat(value):
    return runner.flat(value)


def same_tensor(one, other):
    """Whether two tensors are the same, bit for bit: NaN, inf and -0.0 included."""
    return (
        one.shape == other.shape
        and one.dtype == other.dtype
        and torch.equal(bits(one), bits(other))
    )


def bits(tensor):
    tensor = tensor.detach().contiguous().reshape(-1)
    return tensor.view(torch.uint8) if tensor.is_floating_point() or tensor.is_complex() else tensor


def key_is_buffer(module, key):
    return key in module._buffers


def student_error(name, message):
    """The student's exception, as one the grader can raise: its name and message alone."""
    if name == "NotImplementedError":
        return NotImplementedError(message)
    return type(one_line(name, 80) or "Exception", (Exception,), {})(message)


# ---- the verdict: from the data that came back, in the grader's own process -----------------
def shown(value):
    """A value to print: floats to 6 significant digits."""
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, dict):
        return {key: shown(v) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(shown(v) for v in value)
    return value


def short(value, limit=160):
    text = " ".join(repr(shown(cases.as_lists(value))).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def difference(got, expected, scale):
    """Where got and expected differ, in words: many numbers, the first that differs."""
    want, have = cases.numbers(expected), cases.numbers(got)
    if want is not None and have is not None and want[1] != have[1]:
        return f"expected shape {want[1]}, got shape {have[1]}: {short(got)}"
    if want is not None and have is not None and len(want[0]) > 4:
        floor = cases.FLOOR * max([scale, *(abs(e) for e in want[0] if math.isfinite(e))])
        wrong = [
            i
            for i, (g, e) in enumerate(zip(have[0], want[0], strict=True))
            if not (math.isfinite(g) and abs(g - e) <= cases.RTOL * abs(e) + floor)
        ]
        where = [int(i) for i in np.unravel_index(wrong[0], want[1])]
        first = f"expected {shown(want[0][wrong[0]])}, got {shown(have[0][wrong[0]])}"
        return f"{len(wrong)} of {len(want[0])} values differ; the first, at {where}: {first}"
    return f"expected {short(expected)}, got {short(got)}"


def describe(case, got):
    """What came back against what was expected, part by part where the case names them."""
    expected = case.expected
    if case.parts and isinstance(got, tuple) and len(got) == len(expected) == len(case.parts):
        for part, g, e in zip(case.parts, got, expected, strict=True):
            if not cases.close(g, e, scale=case.scale):
                return f"{part}: {difference(g, e, case.scale)}"
    return difference(got, expected, case.scale)


@cache
def own_answers(rung, name):
    """The cases of an exercise, and the script's own answer to each (the forms train() needs)."""
    with quiet(), torch.random.fork_rng(devices=[]):
        case_list = cases.EXERCISES[rung][name][0]()
        return case_list, [answer(case, cases.own(rung, name)) for case in case_list]


def words(form):
    return (
        f"a tuple of {len(form)} ({', '.join(map(words, form))})"
        if isinstance(form, list)
        else form
    )


FORM = ("changed its input",)  # a line of wrong() that no known mistake explains


def wrong(case, got, own):
    """What is wrong with the answer got to case, in words (own: the script's), or None."""
    kind, value, forms, changed = got
    changed = [n for n in changed if n not in own[3]]  # RunningNorm.update's job: its self
    if changed:
        return f"changed its input {', '.join(map(str, changed))} in place (train() uses it again)"
    for given, needed in zip(forms, own[2], strict=False):
        if given == needed or needed == "None":  # what train() ignores may be anything
            continue
        if isinstance(given, list) and isinstance(needed, list) and len(given) == len(needed):
            i = next(i for i, (g, n) in enumerate(zip(given, needed, strict=True)) if g != n)
            given, needed = given[i], needed[i]
            return f"returned {words(given)} as part {i + 1}, where train() needs {words(needed)}"
        hint = " (a missing return?)" if given == "None" else ""
        return f"returned {words(given)}, where train() needs {words(needed)}{hint}"
    if kind == "raised":
        return f"raised {value}"
    if not passes(case, (kind, value)):
        return describe(case, value)
    return None


def verdict(rung, name, answers, how):
    """(passed, the line to print) for one function, from its answers and how they stopped."""
    if how == "missing":
        return False, f"✗ {name}: not found in the file (keep its name)"
    if how == "unwritten" or any(a[0] == "unwritten" for a in answers):
        return False, f"· {name}: not written yet"
    case_list, own = own_answers(rung, name)
    for i, (case, got) in enumerate(zip(case_list, answers, strict=False)):
        why = wrong(case, got, own[i])
        if why is None:
            continue
        words = None  # a known mistake, where its answers are the student's on every case
        known = not why.startswith(FORM) and len(why) <= 1000  # a mistake has train()'s forms
        if how == "done" and len(answers) == len(case_list) and known:
            with quiet():
                words = mistake(name, case_list, [a[:2] for a in answers])
        line = f"✗ {name}: {case.label}: {case.inputs}: {why}"
        return False, line + (f": {words}" if words else "")
    if how != "done":
        case = case_list[min(len(answers), len(case_list) - 1)]
        hint = " (a loop that never ends?)" if "time limit" in str(how) else ""
        return False, f"✗ {name}: {case.label}: {how}{hint}"
    if len(answers) < len(case_list):
        return False, f"✗ {name}: {case_list[len(answers)].label}: no answer came back"
    counts = [(sum(c.kind == k for c in case_list), k) for k in ("hand", "course", "random")]
    course = [c.course for c in case_list if c.kind == "course"]
    return True, (
        f"✓ {name}: {len(case_list)} cases passed ({counts[0][0]} worked by hand, "
        + "".join(f"1 {words}, " for words in course)
        + f"{counts[2][0]} on random inputs against {rung}.py's own)"
    )


def mistake(name, case_list, answers):
    """cases.mistake(): the known mistake whose answers equal the student's on every case, in
    words; but a NaN or an inf of the student's is explained only by the same there, never
    through the tolerance, to which inf is close to anything."""
    for words, wrong in cases.MISTAKES.get(name, []):
        if all(
            explains(attempt(case, wrong), answer, case.scale)
            for case, answer in zip(case_list, answers, strict=True)
        ):
            return words
    return None


def explains(theirs, answer, scale):
    return cases.same(theirs, answer, scale) and unfinite(theirs) == unfinite(answer)


def unfinite(answer):
    """Where an answer's numbers are NaN or inf, and which."""
    numbers = []

    def walk(value):
        if isinstance(value, float):
            numbers.append(value)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)

    walk(answer[1])
    return [(i, repr(v)) for i, v in enumerate(numbers) if not math.isfinite(v)]


def judged(rung, name, answers, how):
    """verdict(), or a failed line where what came back is not what a child sends."""
    try:
        passed, line = verdict(rung, name, answers, how)
    except Exception:  # noqa: BLE001  (data forged in the child: no answer, then)
        return False, f"✗ {name}: what came back from its process cannot be read"
    return passed, line if len(line) <= 1000 else line[:997] + "..."


def check(rung, name, fn):
    """(passed, the line to print) for a function of this process: the grader's own (the
    script's, a known mistake), never a student's, which runs in a child (grade)."""
    if fn is None:
        return verdict(rung, name, [], "missing")
    if unwritten(fn):
        return verdict(rung, name, [], "unwritten")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small tensors: one thread is faster, and fair on a busy machine
    try:
        with torch.random.fork_rng(devices=[]), quiet():
            answers = [answer(case, fn) for case in own_answers(rung, name)[0]]
        return verdict(rung, name, answers, "done")
    finally:
        torch.set_num_threads(threads)


def answers_of(texts, limit, memory, bwrap):
    """A student's answers: ({rung: None if its file loaded, else why not}, {(rung, name): (its
    answers, how they stopped: "done", "missing", "unwritten", or why)}). texts: {rung: the
    file's text, or a Notebook}. Their files run in one child at a time, which reads, parses and
    compiles each on the student's time; a function that runs past its time, ends its child, or
    leaves a thread or a process running beside it, is ended with it, and a new child goes on
    with the functions after it. Nothing the child does moves a deadline: each function has
    `limit` seconds of CPU time, and backstop(limit) on the clock; the student a sum fixed
    before the first, on the clock."""
    loads, results = {}, {}
    count = sum(len(cases.EXERCISES[rung]) for rung in texts)
    wall = backstop(limit)
    student_deadline = time.monotonic() + START_LIMIT + wall * (3 * count + len(texts))
    late = (
        f"still running after {wall:g} s on the clock, having used less than {limit:g} s of "
        "CPU time (a sleep, or a wait that never ends?)"
    )
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small tensors: one thread is faster, and fair on a busy machine
    session = None
    budget = [RECEIVED_LIMIT]  # what all of the student's children may send
    try:
        for rung, text in texts.items():
            for name in cases.EXERCISES[rung]:
                try:
                    if session is not None and session.rung == rung and session.busy():
                        session.close()  # what it left would share the next function's time
                        session = None
                    if session is None or session.rung != rung:
                        if session is not None:
                            session.close()
                        session = Session(limit, memory, bwrap, budget)
                        session.rung = rung
                        deadline = session.deadline(
                            limit, min(time.monotonic() + wall, student_deadline), late
                        )
                        why = session.ask(["load", hand_in(rung, text)], deadline, "loaded")[1]
                        loads[rung] = None if why is None else one_line(why)
                    if loads[rung] is not None:
                        break
                    deadline = session.deadline(
                        limit, min(time.monotonic() + wall, student_deadline), late
                    )
                    results[rung, name] = grade_function(session, rung, name, deadline)
                except Stop as stop:
                    why = str(stop)
                    if why == "time":
                        why = f"still running after {limit:g} s of CPU time, the time limit"
                    if time.monotonic() >= student_deadline:
                        why = "still running when the student's time ran out"
                    if session is not None:
                        session.close()
                    session = None
                    if loads.get(rung, "") == "":  # while loading
                        loads[rung] = one_line(why)
                        break
                    results[rung, name] = (getattr(stop, "answers", []), why)
    finally:
        if session is not None:
            session.close()
        torch.set_num_threads(threads)
    return loads, results


def hand_in(rung, text):
    """What the child's "load" reads: a file's text, or a notebook's and what reading its
    functions out of it needs."""
    notebook = None
    if isinstance(text, Notebook):
        tops = {name.partition(".")[0]: None for name in cases.EXERCISES[rung]}
        others = {n.partition(".")[0] for exercise in cases.EXERCISES.values() for n in exercise}
        notebook = dict(rung=rung, tops=list(tops), others=sorted(others), template=template(rung))
    return {"name": f"{rung}.py", "text": str(text), "notebook": notebook}


def grade_function(session, rung, name, deadline):
    """(the answers of NAME in the child to its cases, "done", "missing" or "unwritten")."""
    how = session.ask(["find", name], deadline, "found")[1]
    if how != "ok":
        return [], "missing" if how == "missing" else "unwritten"
    fn = Remote(session, name, deadline, inspect.signature(cases.own(rung, name)))
    answers = []
    for case in own_answers(rung, name)[0]:
        try:
            with quiet():
                answers.append(answer(case, fn))
        except Stop as stop:
            raise Partial(str(stop), answers) from None
        if answers[-1][0] == "unwritten":
            break
    return answers, "done"


class Partial(Stop):
    """A Stop part way through a function's cases: the answers before it."""

    def __init__(self, why, answers):
        super().__init__(why)
        self.answers = answers


def grade(rung, path, limit=TIME_LIMIT, strict=True, only=None, memory=MEMORY_LIMIT):
    """[(name, passed, line)] for the functions of one rung in the file at path, run in a
    child from its text read now. A file that cannot be read: exit 2 (strict), or a failed line
    per function."""
    names = [n for n in cases.EXERCISES[rung] if only in (None, n)]
    text = read_file(path)
    why = text if isinstance(text, Unreadable) else None
    if why is None:
        bwrap = sandbox()
        if bwrap is None:
            warn_once()
        loads, results = answers_of({rung: text}, limit, memory, bwrap)
        why = loads.get(rung) and f"cannot load {path}: {loads[rung]}"
    if why is not None:
        if strict:
            fail(why)
        return [(name, False, f"✗ {name}: {one_line(why)}") for name in names]
    return [
        (name, *judged(rung, name, *results.get((rung, name), ([], "no answer came back"))))
        for name in names
    ]


@cache
def warn_once():
    print(
        "check.py: note: not sandboxed (bubblewrap cannot start here): your file runs as you, "
        "with what you can reach",
        file=sys.stderr,
    )


def total(results):
    passed = sum(ok for _, _, ok, _ in results)
    return f"{passed} of {len(results)} function{'s' * (len(results) > 1)} passed"


# ---- hand-ins: regular files, read whole before any student's code runs ------------------------
class Unreadable(str):
    """Why a hand-in cannot be read, in one line: the student's row says it."""


class Notebook(str):
    """The text of a notebook handed in: the child reads its functions out of it."""


def read_hand_in(path, limit=FILE_LIMIT):
    """The text of the regular file at path (a symbolic link, a FIFO or a device is refused
    without being opened for reading, a file over `limit` bytes without being read), or
    Unreadable(why). Nothing here parses or compiles it: the child does, on the student's
    time."""
    try:
        folder = os.open(os.path.dirname(path) or ".", os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return Unreadable(f"{path}: no such file")
    except OSError as error:
        return Unreadable(f"cannot read {path}: {error.strerror}")
    try:
        return read_at(folder, os.path.basename(path), path, limit)
    finally:
        os.close(folder)


BY_PATH_DESCRIPTOR = hasattr(os, "O_PATH") and os.path.isdir("/proc/self/fd")  # Linux's way


def entry_at(folder, name):
    """(a descriptor of the entry `name` of the open folder `folder`, open for reading, or None
    where it is neither a regular file nor a folder; its status). The name is looked up once,
    its last link not followed: what is read is what was looked at. Where the kernel has O_PATH
    (Linux), the entry is opened for no reading, its status read from that descriptor, then
    that same file opened for reading through /proc: a symbolic link, a FIFO (whose writer
    would wake), a device or a socket is looked at, never opened. Elsewhere (macOS) it is
    looked at, opened without following, and refused if the two differ."""
    if BY_PATH_DESCRIPTOR:
        look = os.open(name, os.O_PATH | os.O_NOFOLLOW, dir_fd=folder)
        try:
            status = os.fstat(look)
            if not (stat.S_ISREG(status.st_mode) or stat.S_ISDIR(status.st_mode)):
                return None, status
            return os.open(f"/proc/self/fd/{look}", os.O_RDONLY | os.O_NONBLOCK), status
        finally:
            os.close(look)
    status = os.stat(name, dir_fd=folder, follow_symlinks=False)
    if not (stat.S_ISREG(status.st_mode) or stat.S_ISDIR(status.st_mode)):
        return None, status
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
    opened = os.open(name, flags | os.O_DIRECTORY * stat.S_ISDIR(status.st_mode), dir_fd=folder)
    now = os.fstat(opened)
    if (now.st_dev, now.st_ino) != (status.st_dev, status.st_ino):
        os.close(opened)
        raise OSError(errno.ESTALE, "changed while it was read")
    return opened, status


def read_at(folder, name, shown, limit=FILE_LIMIT):
    """The text of the regular file `name` of the open folder `folder` (shown as `shown`), or
    Unreadable(why)."""
    try:
        descriptor, status = entry_at(folder, name)
    except FileNotFoundError:
        return Unreadable(f"{shown}: no such file")
    except OSError as error:
        return Unreadable(f"cannot read {shown}: {error.strerror}")
    return text_of(descriptor, status, shown, limit)


def text_of(descriptor, status, shown, limit):
    """The text of the regular file entry_at() gave (descriptor, status), read from that
    descriptor, which is closed here, or Unreadable(why)."""
    if descriptor is not None and not stat.S_ISREG(status.st_mode):  # a folder
        os.close(descriptor)
        descriptor = None
    if descriptor is None:
        why = "a symbolic link" if stat.S_ISLNK(status.st_mode) else "not a regular file"
        return Unreadable(f"cannot read {shown}: {why}")
    with os.fdopen(descriptor, "rb") as file:
        if status.st_size > limit:
            return Unreadable(f"cannot read {shown}: {status.st_size:,} bytes, over {limit:,}")
        data = file.read(limit + 1)
    if len(data) > limit:
        return Unreadable(f"cannot read {shown}: over {limit:,} bytes")
    try:
        return data.decode()
    except UnicodeDecodeError as error:
        return Unreadable(f"cannot read {shown}: {type(error).__name__}: {error}")


def read_file(path):
    """A hand-in named by its path: a notebook (a .ipynb file, read as Notebook, up to 64 times
    FILE_LIMIT) or a .py file's text, or Unreadable(why)."""
    if Path(path).suffix != ".ipynb":
        return read_hand_in(path)
    text = read_hand_in(path, 64 * FILE_LIMIT)
    return text if isinstance(text, Unreadable) else Notebook(text)


@cache
def template(rung):
    """exercises/RUNG.py as make.py writes it: blank, whatever the copy on disk holds. Built
    without ruff, which a teacher's install has not (make.py's test keeps the two texts one)."""
    import make  # exercises/make.py, beside this file

    return make.exercise(rung)


# ---- for teachers: a folder of students, one row each ------------------------------------------
IGNORABLE = (  # Unicode's default-ignorable code points, and the blank braille pattern: unseen
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x2800, 0x2800),
    (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)  # fmt: skip


def alike(names):
    """The places of the names that may look the same as another as printed: those that share
    a confusable skeleton (Unicode's UTS #39), within one script too (a Latin ɡ, U+0261, for a
    g; a ǀ, U+01C0, for an l) as across scripts (a Cyrillic а for an a); two different Chinese
    names do not. Grouped by skeleton in one pass, one skeleton a name."""
    groups = {}  # skeleton: the places of the names that have it
    for place, name in enumerate(names):
        groups.setdefault(skeleton(name), []).append(place)
    return {place for places in groups.values() if len(places) > 1 for place in places}


def skeleton(text):
    """UTS #39's skeleton of text: its NFD, without default-ignorable code points, each
    character replaced by its prototype, in NFD again. Two strings that print alike share it."""
    text = "".join(c for c in unicodedata.normalize("NFD", text) if not unseen(c))
    table = prototypes()
    return unicodedata.normalize("NFD", "".join(table.get(c, c) for c in text))


@cache
def prototypes():
    """{character: its prototype}, from Unicode's confusables.txt (UTS #39) as the package
    confusable-homoglyphs ships it (requirements.txt): a JSON in which each line of the file,
    "source → prototype", is listed both ways, each side as the file's comment prints it
    (right-to-left text between LRM marks, dropped here). A source is one character and lists
    one entry, its prototype; the other side is the prototype where it is longer than one
    character, lists more sources, is part of a longer prototype, or where the source changes
    under NFD (prototypes are in NFD). Where none of these tells (two characters that list
    only each other), either is taken: the two share a skeleton either way."""
    from importlib import resources

    source = resources.files("confusable_homoglyphs").joinpath("confusables.json")
    sides = {}  # each side of a line: the other sides of its lines
    for side, others in json.loads(source.read_text(encoding="utf-8")).items():
        sides.setdefault(side.replace("\u200e", ""), []).extend(
            other["c"].replace("\u200e", "") for other in others
        )
    within = {character for side in sides if len(side) > 1 for character in side}
    table = {}
    for side, others in sides.items():
        if len(side) > 1 or len(others) > 1 or side in within:
            continue  # a prototype
        (other,) = others
        unsure = len(other) == 1 and len(sides.get(other, ())) == 1 and other not in within
        taken = max(side, other, key=lambda c: (unicodedata.is_normalized("NFD", c), c))
        if unsure and taken == side:
            continue  # a pair that says no direction: its one in NFD, else its larger, is taken
        table[side] = other
    return table


def submissions(rung, folder):
    """[(student, {rung: the text of their file, a Notebook, or Unreadable(why)})], read now,
    before any student's code runs: FOLDER/NAME/RUNG.py (for all, FOLDER/NAME/), FOLDER/NAME.py
    or FOLDER/NAME.ipynb, and what looks handed in but is not read, with why. The folder is
    opened once; each entry is found by its name in it, and each file by its name in its
    entry's folder, none followed (entry()): a student who swaps their entry for a symbolic
    link after the listing gets a row that says so, never the file it reaches. Each student's
    name as the table prints it: escaped, cut to 80 characters; where two would still look
    alike, each their entry's whole name, every character past ASCII escaped."""
    try:
        top = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as error:
        fail(f"cannot read {folder}: {error.strerror}")
    try:
        found = [each for name in sorted(os.listdir(top)) if (each := entry(rung, top, name))]
    finally:
        os.close(top)
    names = [one_line(name, 80) for name, _, _ in found]
    while True:  # until no mark looks like another's name (nor two marks alike: m.py, rn.py)
        marked = alike(names)
        shown = [ascii(found[i][1]) if i in marked else name for i, name in enumerate(names)]
        if shown == names:
            return [(name, texts) for name, (_, _, texts) in zip(names, found, strict=True)]
        names = shown


def entry(rung, top, name):
    """(student, the entry's name, {rung: text, Notebook or Unreadable(why)}) for the entry
    `name` of the open class folder `top`, or None where it is no hand-in (a folder without
    RUNG.py, a file of another kind). Any error reading it is this student's alone."""
    rungs = list(cases.EXERCISES) if rung == "all" else [rung]
    stem, suffix = os.path.splitext(name)
    handed_in = suffix == ".ipynb" or (rung != "all" and suffix == ".py")
    try:
        descriptor, status = entry_at(top, name)
    except FileNotFoundError:  # gone since the listing
        return (stem, name, dict.fromkeys(rungs, Unreadable(f"{name}: no such file")))
    except OSError as error:  # a folder the teacher cannot read, say
        return (name, name, dict.fromkeys(rungs, Unreadable(f"{name}: {error.strerror}")))
    if stat.S_ISLNK(status.st_mode):
        return (stem, name, dict.fromkeys(rungs, Unreadable(f"{name}: a symbolic link, not read")))
    try:
        if stat.S_ISDIR(status.st_mode):
            inside = os.listdir(descriptor)
            if rung == "all" or f"{rung}.py" in inside:
                texts = {r: read_at(descriptor, f"{r}.py", f"{name}/{r}.py") for r in rungs}
                return (name, name, texts)
        if not handed_in:
            return None
        limit = 64 * FILE_LIMIT if suffix == ".ipynb" else FILE_LIMIT
        held, descriptor = descriptor, None  # text_of() closes it
        text = text_of(held, status, name, limit)
        if suffix == ".ipynb" and not isinstance(text, Unreadable):
            text = Notebook(text)
        return (stem, name, dict.fromkeys(rungs, text))
    except Exception as error:  # noqa: BLE001  (whatever it was, this student's row says it)
        why = Unreadable(f"the grader could not read it: {type(error).__name__}")
        return (name, name, dict.fromkeys(rungs, why))
    finally:
        if descriptor is not None:
            os.close(descriptor)


def grade_student(texts, limit, memory, bwrap):
    """A student's results: [(key, status, line)], their files run in a child of their own,
    which holds their text alone."""
    key = (lambda r, name: f"{r}.{name}") if len(texts) > 1 else (lambda r, name: name)
    readable = {r: text for r, text in texts.items() if not isinstance(text, Unreadable)}
    try:
        loads, results = answers_of(readable, limit, memory, bwrap) if readable else ({}, {})
    except Exception as error:  # noqa: BLE001  (whatever happened, this student's row says it)
        why = Unreadable(f"the grader could not grade it: {type(error).__name__}: {error}")
        texts = {r: why for r in texts}
        loads, results = {}, {}
    rows = []
    for r, text in texts.items():
        why = text if isinstance(text, Unreadable) else loads.get(r) and f"cannot load: {loads[r]}"
        for name in cases.EXERCISES[r]:
            passed, line = (
                (False, f"✗ {name}: {one_line(why)}")
                if why
                else judged(r, name, *results.get((r, name), ([], "no answer came back")))
            )
            rows.append((key(r, name), line[0], line))
    return rows


def cell(text):
    """A CSV cell that no spreadsheet reads as a formula (OWASP: a quote before = + - @)."""
    text = str(text)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def table_file(csv_path, folder):
    """(an empty file beside csv_path, which replaces it at the end; the entry it replaces;
    whether that entry was made now, empty, to be removed if the table is not written), made
    before anyone is graded. Deny by default: the entry must be absent or a regular file of
    the grader's user (not a link, a device, a FIFO: /dev/stdout, /dev/null; not another user's
    in a shared folder, which the grader could not replace), in a folder it may write, outside
    the class's folder (whose entries are the students'); else one line and exit 2. An absent
    one is made at once, so that no other user takes the name while the class is graded."""
    entry = Path(csv_path).parent.resolve() / Path(csv_path).name  # the entry replaced
    if entry.is_dir():
        fail(f"--csv {csv_path} is a folder: give the path of a file to write")
    if any(place.is_relative_to(Path(folder).resolve()) for place in (entry, entry.resolve())):
        fail(f"--csv {csv_path} lies in the class's folder {folder}: write the grades elsewhere")
    if not entry.parent.is_dir():
        fail(f"cannot write {csv_path}: no folder {entry.parent}")
    if not os.access(entry.parent, os.W_OK | os.X_OK):
        fail(f"cannot write {csv_path}: this user may not write in {entry.parent}")
    try:
        status = os.lstat(entry)
    except FileNotFoundError:
        status = None
    except OSError as error:
        fail(f"cannot write {csv_path}: {error.strerror}")
    if status is not None and not stat.S_ISREG(status.st_mode):
        fail(f"--csv {csv_path} is not a regular file (a link, a device, a FIFO): name a file")
    if status is not None and status.st_uid != os.geteuid():
        fail(f"--csv {csv_path} is another user's file: name one of this user's, or a new one")
    made = False
    try:
        if status is None:  # O_EXCL: this user's, or none
            os.close(os.open(entry, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666))
            made = True
        file = tempfile.NamedTemporaryFile(
            "w", newline="", dir=entry.parent, prefix=f".{entry.name}-", delete=False
        )
    except OSError as error:
        if made:
            os.unlink(entry)
        fail(f"cannot write {csv_path}: {error.strerror}")
    return file, entry, made


NO_TABLE = (
    "the folder mode needs confusable-homoglyphs, Unicode's table of names that print alike "
    "(pip install -r requirements.txt)"
)


def grade_folder(rung, folder, csv_path, limit, memory, trusted):
    if not Path(folder).is_dir():
        fail(f"no folder {folder}")
    try:
        prototypes()
    except ImportError:
        fail(NO_TABLE)
    for place in [folder, *([Path(csv_path).resolve().parent] if csv_path else [])]:
        if shown_folder(place):  # the hand-ins or grades beside them: every student's to read
            why = f"{shown_folder(place)}, which every student's sandbox shows, read-only"
            fail(f"{place} lies in {why}: keep the class and its grades elsewhere")
    bwrap = sandbox()
    if bwrap is None and not trusted:
        fail(
            "no sandbox: bubblewrap is not installed or cannot start here, and a class's files "
            "must not run as you (sudo apt-get install bubblewrap; in a container, run it with "
            "--security-opt seccomp=unconfined, as exercises/README.md shows), or pass "
            "--trusted if you trust every file in the folder"
        )
    students = submissions(rung, folder)
    if not students:
        where = "NAME/ folders" if rung == "all" else f"NAME.py files or NAME/{rung}.py"
        fail(f"no submissions in {folder}: it should hold {where}, one a student")
    file, entry, made = table_file(csv_path, folder) if csv_path else (None, None, False)
    try:
        rows = graded(rung, students, limit, memory, bwrap)
        if file is not None:
            try:
                write_table(file, rows)
                os.replace(file.name, entry)  # whole, at once, from this process's results
            except OSError as error:
                fail(f"cannot write {csv_path}: {error.strerror}")
            file = made = None
    finally:
        if file is not None:  # interrupted, or not written: nothing of it left behind
            file.close()
            with contextlib.suppress(OSError):
                os.unlink(file.name)
        if made:  # the empty entry made at the start
            with contextlib.suppress(OSError):
                os.unlink(entry)
    return 0 if all(passed == len(results) for _, passed, results in rows) else 1


def graded(rung, students, limit, memory, bwrap):
    """The table's rows, printed: (student, functions passed, [(key, status, line)])."""
    rows = []
    for student, texts in students:  # each read whole by submissions(), before any runs
        results = grade_student(texts, limit, memory, bwrap)
        rows.append((student, sum(s == "✓" for _, s, _ in results), results))
    width = max(len("student"), *(len(student) for student, _, _ in rows))
    print(f"{'student':<{width}}  {'passed':<10}  not passed")
    for student, passed, results in rows:
        missed = ", ".join(f"{status} {key}" for key, status, _ in results if status != "✓")
        print(f"{student:<{width}}  {f'{passed} of {len(results)}':<10}  {missed}".rstrip())
    return rows


def write_table(file, rows):
    with file:
        writer = csv.writer(file)
        writer.writerow(["student", "passed", "functions", *(k for k, _, _ in rows[0][2])])
        for student, passed, results in rows:
            lines = [cell(line) for *_, line in results]
            writer.writerow([cell(student), passed, len(results), *lines])
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(file.name, 0o666 & ~umask)  # as open() would make it


# ---- the command line --------------------------------------------------------------------------
def seconds(text):
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text!r}")
    return value


def mebibytes(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of MiB, not {text!r}")
    return value


def setting(name):
    """A kernel setting under /proc/sys (name as sysctl writes it), or None where it is absent."""
    try:
        return Path("/proc/sys", *name.split(".")).read_text().strip()
    except OSError:
        return None


def doctor():
    """What this machine gives grading, one line an item (✓ or ✗), before a class is graded:
    0 where a class can be graded in the sandbox, else 1 (no sandbox: the folder mode refuses
    without --trusted; no table of names: it refuses)."""
    lines, root = [], os.geteuid() == 0
    versions = f"torch {torch.__version__}, numpy {np.__version__}"
    lines.append(f"✓ python: {platform.python_version()} at {sys.executable}, {versions}")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        lines.append("✗ bubblewrap: not installed (sudo apt-get install bubblewrap)")
    else:
        try:
            done = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=60)
            version = done.stdout.strip() or "its version unknown"
        except (OSError, subprocess.SubprocessError):
            version = "its version unknown"
        lines.append(f"✓ bubblewrap: {version} at {bwrap}")
    userns = {
        name: setting(name)
        for name in (
            "user.max_user_namespaces",
            "kernel.unprivileged_userns_clone",  # Debian's switch
            "kernel.apparmor_restrict_unprivileged_userns",  # Ubuntu's, from 23.10
        )
    }
    shut = [
        f"{name} {value}"
        for name, value in userns.items()
        if value == ("1" if "apparmor" in name else "0")
    ]
    if not shut:
        given = ", ".join(f"{name} {value}" for name, value in userns.items() if value)
        lines.append(f"✓ user namespaces: a user may make them ({given or 'no setting says no'})")
    elif root:
        lines.append(f"✓ user namespaces: off for users ({', '.join(shut)}), not needed as root")
    else:
        lines.append(f"✗ user namespaces: off ({', '.join(shut)}): bubblewrap needs them")
    way = sandbox()
    if way is not None:
        how = "as root, the child nobody (setpriv)" if way.wrap else "in a user namespace"
        how += ", as nobody" if way.user else ""
        lines.append(f"✓ sandbox: bubblewrap starts here {how}, no capability")
    elif bwrap is not None:
        lines.append(
            "✗ sandbox: bubblewrap cannot start here (in a container: docker run --security-opt "
            "seccomp=unconfined, as exercises/README.md shows): --folder refuses without --trusted"
        )
    else:
        lines.append("✗ sandbox: none (no bubblewrap): --folder refuses without --trusted")
    seccomp = setting("kernel.seccomp.actions_avail")
    bpf = sandbox_filter()
    if bpf is None:
        lines.append(f"✗ seccomp filter: none for this machine ({platform.machine()})")
    elif seccomp is None:
        lines.append("✗ seccomp filter: this kernel says no seccomp (no kernel.seccomp)")
    else:
        size = f"{len(bpf) // 8} instructions"
        lines.append(f"✓ seccomp filter: {platform.machine()}'s ({size}), on every child")
    places = [  # (version, this process's cgroup, whether memory is a controller of it)
        (version, folders[0], version == 1 or "memory" in read(folders[-1] / "cgroup.controllers"))
        for version, folders in cgroup_places()
    ]
    found = ", ".join(
        f"v{version} at {folder}{'' if memory else ' (no memory controller)'}"
        for version, folder, memory in places
    )
    mark = "✓" if any(memory for *_, memory in places) else "✗"
    lines.append(f"{mark} cgroup: {found or 'no cgroup v2, nor v1 memory controller, mounted'}")
    home = cgroup_home()
    if home is not None:
        lines.append(
            f"✓ memory accounting: the kernel's, a cgroup each child made in {home[1]} "
            f"(cgroup v{home[0]}), and the limits of each process"
        )
    else:
        lines.append(
            "✗ memory accounting: the limits of each process alone, no cgroup this user may "
            "make (what they miss: exercises/README.md, Memory)"
        )
    try:
        from importlib.metadata import version

        table = f"{len(prototypes()):,} characters"
        package = f"confusable-homoglyphs {version('confusable-homoglyphs')}"
        lines.append(f"✓ names: Unicode's table of those that print alike, {table} ({package})")
    except ImportError:
        lines.append(f"✗ names: {NO_TABLE}")
        way = None
    for line in lines:
        print(line)
    return 0 if way is not None else 1


def main(argv=None):
    parser = argparse.ArgumentParser(
        "check.py",
        description=__doc__.split("\n")[0] + " " + __doc__.split("\n")[1],
        epilog=f"Each function gets {TIME_LIMIT:g} s for all its cases (--time-limit), of the "
        "CPU time its code uses, however busy the machine: one that runs past it fails with a "
        "line that says so, and the grader goes on to the next; one that sleeps or waits is "
        f"ended after {WALL_TIMES} times its limit and {WALL_MORE:g} s on the clock.",
    )
    rungs = list(cases.EXERCISES)
    parser.add_argument("rung", nargs="?", help=f"one of: {', '.join(rungs)}; or all, every rung")
    parser.add_argument(
        "--file",
        metavar="PATH",
        help="the exercise file to check, RUNG.py or a notebook (.ipynb; default "
        "exercises/RUNG.py); for all, a notebook or a folder that holds the RUNG.py files",
    )
    parser.add_argument(
        "--folder",
        metavar="DIR",
        help="grade every student in DIR, a file DIR/NAME.py or DIR/NAME.ipynb or a folder "
        "DIR/NAME/ each (holding RUNG.py), each in a process of its own: one row per student",
    )
    parser.add_argument("--csv", metavar="PATH", help="with --folder: the table as CSV too")
    parser.add_argument(
        "--time-limit",
        type=seconds,
        default=TIME_LIMIT,
        metavar="SECONDS",
        help=f"the CPU time a function gets for all its cases (default {TIME_LIMIT:g})",
    )
    parser.add_argument(
        "--memory-limit",
        type=mebibytes,
        default=MEMORY_LIMIT,
        metavar="MIB",
        help=f"the memory a student's code may take, beyond python's and torch's (default "
        f"{MEMORY_LIMIT}): past it, a line that says so",
    )
    parser.add_argument(
        "--trusted",
        action="store_true",
        help="with --folder where no sandbox can start (no bubblewrap): grade anyway, each "
        "file running as you; only for a folder whose every file you trust",
    )
    parser.add_argument(
        "--doctor",
        action="store_true",
        help="say what this machine gives grading (sandbox, seccomp filter, cgroup, memory "
        "accounting) and what is missing, one line each; exit 0 where the sandbox can start",
    )
    parser.add_argument("--only", help=argparse.SUPPRESS)  # one function: a notebook's check
    args = parser.parse_args(argv)
    if args.doctor:
        return doctor()
    if args.rung is None:
        parser.error("the following arguments are required: rung")
    if args.rung not in rungs and args.rung != "all":
        fail(f"unknown rung {args.rung!r}: one of {', '.join(rungs)}")
    if args.folder and args.file:
        parser.error("--folder grades a folder; --file checks one file: give one of them")
    if args.csv and not args.folder:
        parser.error("--csv writes the table of --folder")
    if args.folder:
        return grade_folder(
            args.rung, args.folder, args.csv, args.time_limit, args.memory_limit, args.trusted
        )
    results = []  # (rung, name, passed, line)
    if args.rung == "all":
        where = Path(args.file) if args.file else HERE
        for rung in rungs:
            path = where if where.suffix == ".ipynb" else where / f"{rung}.py"
            print(f"== {rung}: {path}")
            for name, passed, line in grade(
                rung, path, args.time_limit, False, None, args.memory_limit
            ):
                print(line)
                results.append((rung, name, passed, line))
    else:
        path = args.file or HERE / f"{args.rung}.py"
        for name, passed, line in grade(
            args.rung, path, args.time_limit, True, args.only, args.memory_limit
        ):
            print(line)
            results.append((args.rung, name, passed, line))
    print(total(results))
    return 0 if all(passed for _, _, passed, _ in results) else 1


def students(rung, student):
    """The student's functions of a rung, from their namespace (or a dict such as globals()):
    {name: fn or None}."""
    namespace = types.SimpleNamespace(**student) if isinstance(student, dict) else student
    return {name: find(namespace, name) for name in cases.EXERCISES[rung]}


def install(module, functions):
    """The functions in place of the script's own: module.NAME, or module.Class.method."""
    for name, fn in functions.items():
        *owner, attribute = name.split(".")
        setattr(getattr(module, owner[0]) if owner else module, attribute, fn)


def train_with(rung, student):
    """python exercises/RUNG.py [flags]: RUNG.py's own train(), with the student's functions
    (from the globals `student`) in place of the script's; an unwritten one stops it first."""
    module = cases.script(rung)
    args = module.parse_args()  # --help, and a wrong flag, before anything else
    functions = students(rung, student)
    for name, fn in functions.items():
        if fn is None or unwritten(fn):
            command = f"python exercises/check.py {rung}"
            print(
                f"{rung}.py: error: write {name} first, then check it: {command}", file=sys.stderr
            )
            sys.exit(1)
    install(module, functions)
    try:
        result = module.train(args)
    except Exception as error:  # a function of the student's that breaks on train()'s inputs
        if isinstance(error, module.Refusal):  # the script's own refusal of bad input
            print(one_line(error), file=sys.stderr)  # its one line, and its exit status (2)
            sys.exit(error.status)
        why = one_line(f"{type(error).__name__}: {error}", 200)
        print(
            f"{rung}.py: error: training stopped: {why}; check your functions: "
            f"python exercises/check.py {rung}",
            file=sys.stderr,
        )
        sys.exit(1)
    if result["interrupted"]:  # Ctrl-C or SIGTERM: the run stopped cleanly, and says so
        sys.exit(130 if result["interrupted"] == "SIGINT" else 143)
    return result


# ---- in a notebook (exercises.ipynb) -----------------------------------------------------------
NOTEBOOK_RUNS = {  # rung: the flags of its run in exercises.ipynb, in full and in quick mode (CI)
    "reinforce": ("--total-timesteps 100000", "--total-timesteps 30000"),
    "vpg": ("--total-timesteps 30000", "--total-timesteps 12288"),
    "ppo": ("--total-timesteps 30000", "--total-timesteps 12288"),
    "ppo_gae": ("--total-timesteps 40000", "--total-timesteps 12288"),
    "ppo_continuous": ("--total-timesteps 100000", "--total-timesteps 40960"),
}


def exported(fn, skip):
    """Lines that give fn, in a file of its own, what it uses from its notebook's globals:
    modules, what they define, functions and classes of the notebook, plain constants."""
    lines, seen, todo = {}, set(skip), [fn]
    while todo:
        code, names = [todo.pop().__code__], set()
        while code:  # the names its code and the code inside it use
            c = code.pop()
            names |= set(c.co_names)
            code += [k for k in c.co_consts if isinstance(k, types.CodeType)]
        for name in sorted(names - seen):
            seen.add(name)
            if name not in fn.__globals__:
                continue
            value = fn.__globals__[name]
            where, what = getattr(value, "__module__", None), getattr(value, "__qualname__", "")
            if isinstance(value, types.ModuleType):
                lines[name] = f"import {value.__name__} as {name}"
            elif where not in (None, "__main__") and what.isidentifier():
                lines[name] = f"from {where} import {what} as {name}"
            elif value is None or isinstance(value, (bool, int, float, str)):
                lines[name] = f"{name} = {value!r}"
            elif inspect.isfunction(value) or inspect.isclass(value):
                with contextlib.suppress(OSError, TypeError):
                    lines[name] = textwrap.dedent(inspect.getsource(value))
                    todo += [value] if inspect.isfunction(value) else []  # and what it uses
    return list(lines.values())


def notebook_source(rung, functions):
    """exercises/RUNG.py with the notebook's functions in place of its blanks, then what they
    use from the notebook's globals."""
    text = (HERE / f"{rung}.py").read_text()
    lines, tops = text.splitlines(), ast.parse(text).body
    spots, extra = [], []
    for name, fn in functions.items():
        top, _, method = name.partition(".")
        (node,) = [n for n in tops if getattr(n, "name", None) == top]
        if method:
            (node,) = [n for n in node.body if getattr(n, "name", None) == method]
        source = textwrap.indent(textwrap.dedent(inspect.getsource(fn)), " " * node.col_offset)
        spots.append((node.lineno - 1 - len(node.decorator_list), node.end_lineno, source))
        extra += exported(fn, {getattr(n, "name", None) for n in tops})
    for first, last, source in sorted(spots, reverse=True):
        lines[first:last] = source.splitlines()
    return "\n".join(lines + ["", *dict.fromkeys(extra)]) + "\n"


def notebook_line(rung, name, fn):
    """(passed, line) for a function of the notebook: its source, with what it uses, checked
    by a grader process of its own, so nothing run in the notebook decides the verdict."""
    if fn is None:
        return False, f"✗ {name}: not found (keep its name, and the cell's last line)"
    if unwritten(fn):  # a verdict that can only fail may come from here
        return False, f"· {name}: not written yet"
    try:
        text = notebook_source(rung, {name: fn})
    except (OSError, TypeError, ValueError) as error:
        return False, f"✗ {name}: its source cannot be read: {one_line(error)}"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{rung}.py"
        path.write_text(text)
        command = [sys.executable, str(HERE / "check.py"), rung, "--file", str(path)]
        try:
            done = subprocess.run(
                [*command, "--only", name], capture_output=True, text=True, cwd=folder, timeout=600
            )
        except subprocess.TimeoutExpired:
            return False, f"✗ {name}: the grader did not finish in 600 s"
    lines = (done.stdout + done.stderr).strip().splitlines() or [f"✗ {name}: no verdict"]
    return done.returncode == 0, lines[0].replace(str(path), f"{name}'s cell")


def notebook_check(rung, name, answers):
    """A check cell: the grader's line for one function of the rung's namespace `answers`, and
    nothing else. Under nbgrader (its autograder or validator), a line that is not a pass
    raises AssertionError: the cell scores 0."""
    passed, line = notebook_line(rung, name, students(rung, answers)[name])
    print(line)
    if not passed and os.environ.get("NBGRADER_EXECUTION"):
        raise AssertionError(line)


def fresh_run_dir(rung):
    """runs/exercises/RUNG-N, the first N free: each training cell's run a folder of its own."""
    n = 1
    while Path(f"runs/exercises/{rung}-{n}").exists():
        n += 1
    return f"runs/exercises/{rung}-{n}"


def notebook_train(rung, answers, quick=False, argv=()):
    """A training cell: RUNG.py's own train(), in a fresh copy of the script, with the
    functions of the rung's namespace `answers` (argv: flags added to the run's); prints how
    the returns moved. Unwritten functions: one line, no run. A run that breaks: one line,
    and the grader's for them."""
    functions = students(rung, answers)
    missing = [name for name, fn in functions.items() if fn is None or unwritten(fn)]
    if missing:
        print(f"Write {', '.join(missing)} first (and check it): then this cell trains {rung}.py.")
        return None
    module = cases.script(rung, fresh=True)
    install(module, functions)
    argv = [*NOTEBOOK_RUNS[rung][quick].split(), "--eval-episodes", "0", *argv]
    try:
        result = module.train(module.parse_args([*argv, "--run-dir", fresh_run_dir(rung)]))
    except Exception as error:
        print(f"{rung}.py stopped: {one_line(f'{type(error).__name__}: {error}', 200)}")
        for name, fn in functions.items():
            passed, line = notebook_line(rung, name, fn)
            if not passed:
                print(line)
        return None
    returns = [episode_return for _, episode_return in result["episode_returns"]]
    first, last = sum(returns[:20]) / 20, sum(returns[-20:]) / 20
    print(f"{rung}.py with your functions: mean return, first 20 episodes {first:.1f}", end="")
    print(f", last 20 {last:.1f}")
    return result


if __name__ == "__main__":
    sys.exit(main())
