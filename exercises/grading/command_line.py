# SPDX-License-Identifier: MIT
"""The command line, `python exercises/check.py ...` (exercises/check.py calls main()): the flags
and their parsers, grade() of one file, the total, and --doctor (doctor(): the sandbox, filter,
cgroup, memory accounting and table of names that this machine gives).

It relies on every file above it: base.py, verdicts.py, sandbox.py, accounting.py, handins.py,
session.py and classroom.py."""

import argparse
import os
import platform
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import cases  # exercises/cases.py: the cases, the scripts' own functions, the known mistakes
import numpy as np
import torch

from .accounting import cgroup_home, cgroup_places, read
from .base import HERE, MEMORY_LIMIT, TIME_LIMIT, WALL_MORE, WALL_TIMES, fail, one_line
from .classroom import NO_TABLE, grade_folder, prototypes
from .handins import Unreadable, read_file
from .sandbox import sandbox, sandbox_filter
from .session import answers_of
from .verdicts import judged


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
        loads, results = answers_of({rung: text}, limit, memory, bwrap, only)
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


DESCRIPTION = (  # the first two lines of exercises/check.py's docstring
    "Check the functions of one rung's exercise file: the hand-worked cases first, then the "
    "script's own function on random inputs of train()'s contract, values and gradients."
)


def main(argv=None):
    parser = argparse.ArgumentParser(
        "check.py",
        description=DESCRIPTION,
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
