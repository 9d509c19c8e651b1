# SPDX-License-Identifier: MIT
"""For teachers: a folder of students, one row each. submissions() reads every hand-in of the
folder by descriptors (handins.py) and names each student as printed, marked where two names
look alike (alike(): UTS #39's confusable skeleton, from confusable-homoglyphs); grade_student()
grades one in a child of their own (session.py); grade_folder() prints the table and writes the
CSV (table_file, write_table: whole at the end, never over what it may not replace).

It relies on base.py, handins.py, session.py, verdicts.py (judged) and sandbox.py (sandbox(),
and the folders every sandbox shows, where no class may lie)."""

import contextlib
import csv
import json
import os
import stat
import tempfile
import unicodedata
from functools import cache
from pathlib import Path

import cases  # exercises/cases.py: the cases, the scripts' own functions, the known mistakes

from .base import FILE_LIMIT, fail, one_line, unseen
from .handins import Notebook, Unreadable, entry_at, read_at, text_of
from .sandbox import sandbox, shown_folder
from .session import answers_of
from .verdicts import judged


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
