# SPDX-License-Identifier: MIT
"""What every part of the grader uses: its limits (CPU time, the wall-clock backstop, memory, the
size of a hand-in), the names of this project's modules that the sandbox hides, a student's text
made printable on one line (clean, one_line), the one line of bad input (fail), quiet() for what
a function prints, and Stop, the end of a function's child.

It relies on exercises/runner.py alone (the largest file the child reads)."""

import contextlib
import io
import re
import sys
import unicodedata
import warnings
from pathlib import Path

import runner  # exercises/runner.py: the child, and the data both sides read

HERE = Path(__file__).resolve().parent.parent  # exercises/, which holds this package
TIME_LIMIT = 5.0  # seconds of CPU time a function's sandbox may use for all its cases
WALL_TIMES = 10  # the wall-clock backstop: this many times the time limit, on the grader's
WALL_MORE = 5.0  # clock, and this many seconds more (what sleeps or waits uses no CPU time)
START_LIMIT = 60.0  # seconds a child gets to start python and torch, before any student code
MEMORY_LIMIT = 1024  # MiB a student's code may allocate, beyond what python and torch hold
FILE_LIMIT = runner.CODE_LIMIT  # bytes: a larger .py hand-in is not read (a notebook: 64
# times that, outputs included, and as much code as a .py)
RECEIVED_LIMIT = 1 << 25  # bytes a student's children may send in all (the grader keeps them)
PROJECT = (  # the modules and packages the sandbox hides, wherever a library folder holds them
    "reinforce", "vpg", "ppo", "ppo_gae", "ppo_continuous", "long_runs", "cases", "check",
    "grading",
)  # fmt: skip


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


class Stop(Exception):
    """The child cannot go on with this function: it ran past its time, ended its process, or
    sent what is not an answer. Never a case's failure: the function's."""


IGNORABLE = (  # Unicode's default-ignorable code points, and the blank braille pattern: unseen
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x2800, 0x2800),
    (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)  # fmt: skip
