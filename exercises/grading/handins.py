# SPDX-License-Identifier: MIT
"""Hand-ins, read whole by descriptors before any student's code runs. A path's folder is
opened, then its entry relative to it with no link followed (entry_at): a symbolic link, a FIFO
or a device is looked at, never opened for reading. read_file() gives a .py file's text or a
notebook's (Notebook); what cannot be read is Unreadable(why). template() is the blank exercise
file that a notebook's functions are read into.

It relies on base.py (FILE_LIMIT) and on exercises/make.py (the template)."""

import errno
import os
import stat
from functools import cache
from pathlib import Path

from .base import FILE_LIMIT


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
