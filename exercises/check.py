# SPDX-License-Identifier: MIT
"""Check the functions of one rung's exercise file: the hand-worked cases first, then the
script's own function on random inputs of train()'s contract, values and gradients.

    python exercises/check.py reinforce                        # exercises/reinforce.py
    python exercises/check.py ppo_gae --file alice/ppo_gae.py  # a copy handed in
    python exercises/check.py all                              # every rung: "7 of 10 functions"
    python exercises/check.py ppo_gae --folder handed_in --csv grades.csv  # a row per student

One line per function: passed (with the number of cases), not written yet, or failed (the case,
what was expected, what came back, and the mistake in words where a known one explains every
case), then the total. Exit status: 0 when all pass; 1 when any fails or is not written yet; 2
for an unknown rung or a file that cannot be read, in one line.

The student's code runs in a process of its own (the child), which sends back data alone: each
case's values, the form of what the function returned, which inputs it changed, or the error it
raised. The comparison, the mistake named and the exit status are decided here, in the grader's
own process, where no student code ever ran.
"""

import argparse
import ast
import contextlib
import csv
import importlib.util
import inspect
import io
import json
import math
import multiprocessing
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import types
import warnings
from functools import cache
from multiprocessing.connection import Connection
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cases  # noqa: E402  (exercises/cases.py, beside this file)

HERE = Path(__file__).resolve().parent
TIME_LIMIT = 5.0  # seconds a function gets for all its cases
START_LIMIT = 120.0  # seconds a child gets to start (python and torch) and build its cases
MESSAGE_LIMIT = 1 << 24  # bytes: a longer message from a child is not read
# Where Linux allows it, a class's students run in namespaces of their own: no network, a PID
# namespace whose processes all end with it, and a /proc that shows no process outside it.
UNSHARE = ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc", "--net"]
UNSHARE += ["--kill-child"]


def fail(message):
    print(f"check.py: error: {one_line(message)}", file=sys.stderr)
    sys.exit(2)


def one_line(message, limit=300):
    text = " ".join(str(message).split())
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


def find(module, name):
    """module.NAME, or module.Class.method for "Class.method"; None if it is not there."""
    found = module
    for part in name.split("."):
        found = getattr(found, part, None)
    return found if callable(found) else None


def unwritten(fn):
    """Whether fn's body is still only its docstring and `raise NotImplementedError(...)`."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    body = tree.body[0].body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    exc = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


# ---- one case: what a function gives, as data ----------------------------------------------
def form(value):
    """What a function returned, in words, as far as train() cares: a tensor and its shape, a
    float...; for a tuple, a list of its parts' forms."""
    if isinstance(value, torch.Tensor):
        kind = "" if value.is_floating_point() else f" of {str(value.dtype)[6:]}"
        return f"a tensor{kind} of shape {tuple(value.shape)}"
    if isinstance(value, np.ndarray):
        return f"a numpy array of shape {value.shape}"
    if isinstance(value, (tuple, list)):
        return [form(v) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return {type(None): "None", bool: "a bool", int: "an int"}.get(type(value), "a float")
    return f"a {type(value).__name__}"


def answer(case, fn):
    """(kind, value, forms, changed): "ok" and what the case got, as lists, or "raised" and the
    error in one line, or "unwritten"; the form of what each call of fn returned; and the
    inputs that a call changed in place. Every call starts from the same random state."""
    forms, changed = [], []

    def guarded(*args, **kwargs):
        try:
            named = inspect.signature(fn).bind(*args, **kwargs).arguments.items()
        except (TypeError, ValueError):
            named = [(f"argument {i + 1}", a) for i, a in enumerate(args)]
        before = [(n, x, x.detach().clone()) for n, x in named if isinstance(x, torch.Tensor)]
        result = fn(*args, **kwargs)
        for n, x, old in before:
            if x.shape != old.shape or not torch.equal(x.nan_to_num(0.5), old.nan_to_num(0.5)):
                changed.append(n)
        forms.append(form(result))
        return result

    try:
        with cases.seeded(0):
            value = cases.as_lists(case.call(guarded))
        return "ok", value, forms, changed
    except NotImplementedError:
        return "unwritten", None, forms, changed
    except BaseException as error:  # SystemExit, KeyboardInterrupt... a failed case, too
        why = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        return "raised", one_line(why), forms, changed


def attempt(case, fn):
    """("ok", what fn gave, as lists) or ("raised", the error in one line)."""
    return answer(case, fn)[:2]


def passes(case, answer):
    return answer[0] == "ok" and cases.close(
        answer[1], case.expected, scale=case.scale, tolerance=case.tolerance
    )


# ---- the child: the student's file, run in a process of its own ------------------------------
def loaded(path):
    """(the file at path as a module, None), or (None, why it cannot be read or run)."""
    path = Path(path)
    try:
        compile(path.read_text(), str(path), "exec")
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as error:
        return None, f"{type(error).__name__}: {error}"
    spec = importlib.util.spec_from_file_location(f"_student_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        with quiet():
            spec.loader.exec_module(module)
    except BaseException as error:  # an import that fails, code that raises at the top level
        return None, f"{type(error).__name__}: {error}"
    return module, None


def pack(value):
    """A value as JSON can carry it, tuples kept apart from lists."""
    if isinstance(value, tuple):
        return {"tuple": [pack(v) for v in value]}
    if isinstance(value, list):
        return [pack(v) for v in value]
    if isinstance(value, dict):
        return {"dict": {str(k): pack(v) for k, v in value.items()}}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return f"<a {type(value).__name__}>"


def unpack(value):
    if isinstance(value, list):
        return [unpack(v) for v in value]
    if isinstance(value, dict) and "tuple" in value:
        return tuple(unpack(v) for v in value["tuple"])
    if isinstance(value, dict) and "dict" in value:
        return {k: unpack(v) for k, v in value["dict"].items()}
    return value


def child(jobs, conn, limit):
    """Run in the child: each (rung, path, names) of jobs, each function's cases in order,
    every step sent through conn as it happens. What the student's code does here changes
    only what this process sends: data, which the grader judges."""
    with contextlib.suppress(OSError):
        os.setsid()  # a session of its own: the grader ends all of it at once
    cpu = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    seconds = int(cpu + START_LIMIT + limit * (2 + sum(len(names) for *_, names in jobs)))
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))  # a loop in C ends too
    torch.set_num_threads(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)  # what the student prints goes nowhere
    os.dup2(devnull, 2)

    def send(*message):
        conn.send_bytes(json.dumps(pack(message)).encode())

    for rung, path, names in jobs:
        send("loading", rung)
        module, why = loaded(path)
        send("loaded", rung, why)
        for name in names if module else []:
            fn = find(module, name)
            if fn is None or unwritten(fn):
                send("end", rung, name, "missing" if fn is None else "unwritten")
                continue
            with quiet():
                case_list = cases.EXERCISES[rung][name][0]()
            send("begin", rung, name)
            for case in case_list:
                with quiet():
                    got = answer(case, fn)
                send("answer", got)
                if got[0] == "unwritten":
                    break
            send("end", rung, name, "done")
    send("finished")


def child_main():
    """python check.py --child: a child started as a command (in namespaces of its own); its
    jobs come on stdin, its messages go out on what was stdout."""
    jobs, limit = json.loads(sys.stdin.read())
    child(jobs, Connection(os.dup(1), readable=False), limit)


@cache
def isolation():
    """The command that starts a child in namespaces of its own, where this machine allows it."""
    if sys.platform != "linux" or shutil.which("unshare") is None:
        return []
    try:
        done = subprocess.run([*UNSHARE, "true"], capture_output=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return []
    return UNSHARE if done.returncode == 0 else []


def launch(jobs, limit, isolate, cwd):
    """Start a child on jobs: (the connection its messages come on, kill(), its exit status()).
    isolate: a fresh interpreter, in namespaces of its own where the OS allows; else a fork of
    a clean server process (multiprocessing's forkserver), which is quicker."""
    if isolate:
        command = [*isolation(), sys.executable, str(HERE / "check.py"), "--child"]
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            cwd=cwd, start_new_session=True,
        )  # fmt: skip
        conn = Connection(os.dup(process.stdout.fileno()), writable=False)
        process.stdout.close()
        with contextlib.suppress(OSError):
            process.stdin.write(json.dumps([jobs, limit]).encode())
            process.stdin.close()
        status = process.wait
    else:
        context = multiprocessing.get_context("forkserver")
        # imported once, in the server; torch by name too: the server may not find check
        context.set_forkserver_preload(["check", "torch", "gymnasium"])
        conn, end = context.Pipe(duplex=False)
        process = context.Process(target=child, args=(jobs, end, limit), daemon=True)
        process.start()
        end.close()

        def status():
            process.join()
            return process.exitcode

    def kill():
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)  # the child and all it started
        with contextlib.suppress(OSError, ValueError):
            process.kill()

    return conn, kill, status


def run(jobs, limit, isolate=False, cwd=None):
    """The student's answers, from as many children as it takes: a function that runs past
    its time limit, or ends its process, is ended with it, and a new child goes on with the
    functions after it. ({rung: None if its file loaded, else why not},
    {(rung, name): (its answers, how they stopped: "done", "missing", "unwritten", or why)})."""
    loads, results = {}, {}
    while jobs:
        conn, kill, status = launch(jobs, limit, isolate, cwd)
        killer = threading.Timer(START_LIMIT + limit * (2 + sum(len(j[2]) for j in jobs)), kill)
        killer.start()
        at, why, finished = None, None, False  # at: ("loading", rung) or (rung, name) running
        deadline = time.monotonic() + START_LIMIT
        try:
            while not finished:
                if not conn.poll(max(deadline - time.monotonic(), 0)):
                    why = f"still running after {limit:g} s, the time limit"
                    break
                try:
                    kind, *rest = unpack(json.loads(conn.recv_bytes(MESSAGE_LIMIT)))
                    if kind == "loading":
                        at, deadline = ("loading", rest[0]), time.monotonic() + limit
                    elif kind == "loaded":
                        loads[rest[0]], at = rest[1], None
                        deadline = time.monotonic() + START_LIMIT  # the grader's own work
                    elif kind == "begin":
                        at, deadline = tuple(rest), time.monotonic() + limit
                        results[at] = ([], None)
                    elif kind == "answer":
                        results[at][0].append(rest[0])
                    elif kind == "end":
                        results[rest[0], rest[1]] = (results.get(at, ([], None))[0], rest[2])
                        at, deadline = None, time.monotonic() + START_LIMIT
                    else:
                        finished = kind == "finished"
                        why = None if finished else "sent what the grader cannot read"
                        break
                except EOFError:
                    break
                except (OSError, ValueError, TypeError, KeyError, IndexError):
                    why = "sent what the grader cannot read"
                    break
        finally:
            killer.cancel()
            kill()
            code = status()
        why = why or (None if finished else f"ended its process (exit status {code})")
        if at and at[0] == "loading":
            loads[at[1]] = why
        elif at:
            results[at] = (results[at][0], why)
        left = [
            (rung, path, [name for name in names if (rung, name) not in results])
            for rung, path, names in jobs
            if loads.get(rung, None) is None
        ]
        left = [job for job in left if job[2]]
        if left == jobs:  # no step forward: the child could not start
            loads |= {rung: why for rung, *_ in jobs}
            left = []
        jobs = left
    return loads, results


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
        if how == "done" and len(answers) == len(case_list) and not why.startswith(FORM):
            with quiet():
                words = cases.mistake(name, case_list, [a[:2] for a in answers], attempt)
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


def judged(rung, name, answers, how):
    """verdict(), or a failed line where what came back is not what a child sends."""
    try:
        return verdict(rung, name, answers, how)
    except Exception:  # noqa: BLE001  (data forged in the child: no answer, then)
        return False, f"✗ {name}: what came back from its process cannot be read"


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


def grade(rung, path, limit=TIME_LIMIT, strict=True, only=None):
    """[(name, passed, line)] for the functions of one rung in the file at path, run in a
    child from a copy taken now. A file that cannot be read: exit 2 (strict), or a failed line
    per function."""
    names = [n for n in cases.EXERCISES[rung] if only in (None, n)]
    try:
        text = Path(path).read_text()
        compile(text, str(path), "exec")
        why = None
    except FileNotFoundError:
        why = f"{path}: no such file"
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as error:
        why = f"cannot read {path}: {type(error).__name__}: {error}"
    if why is None:
        with tempfile.TemporaryDirectory() as folder:
            copy = Path(folder) / Path(path).name
            copy.write_text(text)
            loads, results = run([(rung, str(copy), names)], limit, cwd=folder)
        why = loads.get(rung) and f"cannot load {path}: {loads[rung]}"
    if why is not None:
        if strict:
            fail(why)
        return [(name, False, f"✗ {name}: {one_line(why)}") for name in names]
    return [
        (name, *judged(rung, name, *results.get((rung, name), ([], "no answer came back"))))
        for name in names
    ]


def total(results):
    passed = sum(ok for _, _, ok, _ in results)
    return f"{passed} of {len(results)} function{'s' * (len(results) > 1)} passed"


# ---- for teachers: a folder of students, one row each ------------------------------------------
def submissions(rung, folder):
    """[(student, path)]: FOLDER/NAME/RUNG.py, or FOLDER/NAME.py (for all: FOLDER/NAME/)."""
    found = []
    for entry in sorted(Path(folder).iterdir()):
        if entry.is_dir() and (rung == "all" or (entry / f"{rung}.py").is_file()):
            found.append((entry.name, entry if rung == "all" else entry / f"{rung}.py"))
        elif rung != "all" and entry.is_file() and entry.suffix == ".py":
            found.append((entry.stem, entry))
    return found


def snapshot(rung, path):
    """{rung: the text of the student's file, or why it cannot be read}, read before any
    student's code runs."""
    texts = {}
    for r in cases.EXERCISES if rung == "all" else [rung]:
        file = Path(path) / f"{r}.py" if rung == "all" else Path(path)
        try:
            texts[r] = file.read_text()
            compile(texts[r], str(file), "exec")
        except FileNotFoundError:
            texts[r] = OSError(f"{file}: no such file")
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as error:
            texts[r] = OSError(f"cannot read {file}: {type(error).__name__}: {error}")
    return texts


def grade_student(texts, limit):
    """A student's results: [(key, status, line)], their files run in a child of their own,
    in a folder of its own that holds their files alone."""
    key = (lambda r, name: f"{r}.{name}") if len(texts) > 1 else (lambda r, name: name)
    with tempfile.TemporaryDirectory() as folder:
        jobs = []
        for r, text in texts.items():
            if isinstance(text, str):
                (Path(folder) / f"{r}.py").write_text(text)
                jobs.append((r, str(Path(folder) / f"{r}.py"), list(cases.EXERCISES[r])))
        loads, results = run(jobs, limit, isolate=True, cwd=folder)
    rows = []
    for r, text in texts.items():
        why = (
            str(text) if not isinstance(text, str) else loads.get(r) and f"cannot load: {loads[r]}"
        )
        for name in cases.EXERCISES[r]:
            passed, line = (
                (False, f"✗ {name}: {one_line(why)}")
                if why
                else judged(r, name, *results.get((r, name), ([], "no answer came back")))
            )
            rows.append((key(r, name), line[0], line))
    return rows


def grade_folder(rung, folder, csv_path, limit):
    if not Path(folder).is_dir():
        fail(f"no folder {folder}")
    students = submissions(rung, folder)
    if not students:
        where = "NAME/ folders" if rung == "all" else f"NAME.py files or NAME/{rung}.py"
        fail(f"no submissions in {folder}: it should hold {where}, one a student")
    texts = {student: snapshot(rung, path) for student, path in students}  # before any runs
    rows = []  # no PID namespace: a student's process could signal this one; Ctrl-C stops it
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if isolation():  # a student in a PID namespace of their own cannot reach this process
        signal.signal(signal.SIGTERM, previous)
    try:
        for student, _ in students:
            results = grade_student(texts[student], limit)
            rows.append((student, sum(status == "✓" for _, status, _ in results), results))
    finally:
        signal.signal(signal.SIGTERM, previous)
    width = max(len("student"), *(len(student) for student, _, _ in rows))
    print(f"{'student':<{width}}  {'passed':<10}  not passed")
    for student, passed, results in rows:
        missed = ", ".join(f"{status} {key}" for key, status, _ in results if status != "✓")
        print(f"{student:<{width}}  {f'{passed} of {len(results)}':<10}  {missed}".rstrip())
    if csv_path:
        try:
            with tempfile.NamedTemporaryFile(
                "w", newline="", dir=Path(csv_path).resolve().parent, delete=False
            ) as file:
                writer = csv.writer(file)
                writer.writerow(["student", "passed", "functions", *(k for k, _, _ in rows[0][2])])
                for student, passed, results in rows:
                    writer.writerow(
                        [student, passed, len(results), *(line for *_, line in results)]
                    )
            os.replace(file.name, csv_path)  # whole, at once, from this process's results
        except OSError as error:
            fail(f"cannot write {csv_path}: {error}")
    return 0 if all(passed == len(results) for _, passed, results in rows) else 1


# ---- the command line --------------------------------------------------------------------------
def seconds(text):
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text!r}")
    return value


def main(argv=None):
    if argv is None and sys.argv[1:] == ["--child"]:
        return child_main()
    parser = argparse.ArgumentParser(
        "check.py",
        description=__doc__.split("\n")[0] + " " + __doc__.split("\n")[1],
        epilog=f"Each function gets {TIME_LIMIT:g} s for all its cases (--time-limit): one that "
        "runs past it fails with a line that says so, and the grader goes on to the next.",
    )
    rungs = list(cases.EXERCISES)
    parser.add_argument("rung", help=f"one of: {', '.join(rungs)}; or all, every rung")
    parser.add_argument(
        "--file",
        metavar="PATH",
        help="the exercise file to check (default exercises/RUNG.py); "
        "for all, a folder that holds the RUNG.py files",
    )
    parser.add_argument(
        "--folder",
        metavar="DIR",
        help="grade every student in DIR, a file DIR/NAME.py or a folder DIR/NAME/ each "
        "(holding RUNG.py), each in a process of its own: one row per student",
    )
    parser.add_argument("--csv", metavar="PATH", help="with --folder: the table as CSV too")
    parser.add_argument(
        "--time-limit",
        type=seconds,
        default=TIME_LIMIT,
        metavar="SECONDS",
        help=f"the time a function gets for all its cases (default {TIME_LIMIT:g})",
    )
    parser.add_argument("--only", help=argparse.SUPPRESS)  # one function: a notebook's check
    args = parser.parse_args(argv)
    if args.rung not in rungs and args.rung != "all":
        fail(f"unknown rung {args.rung!r}: one of {', '.join(rungs)}")
    if args.folder and args.file:
        parser.error("--folder grades a folder; --file checks one file: give one of them")
    if args.csv and not args.folder:
        parser.error("--csv writes the table of --folder")
    if args.folder:
        return grade_folder(args.rung, args.folder, args.csv, args.time_limit)
    results = []  # (rung, name, passed, line)
    if args.rung == "all":
        where = Path(args.file) if args.file else HERE
        for rung in rungs:
            path = where / f"{rung}.py"
            print(f"== {rung}: {path}")
            for name, passed, line in grade(rung, path, args.time_limit, strict=False):
                print(line)
                results.append((rung, name, passed, line))
    else:
        path = args.file or HERE / f"{args.rung}.py"
        for name, passed, line in grade(args.rung, path, args.time_limit, only=args.only):
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
        return module.train(args)
    except Exception as error:  # a function of the student's that breaks on train()'s inputs
        why = one_line(f"{type(error).__name__}: {error}", 200)
        print(
            f"{rung}.py: error: training stopped: {why}; check your functions: "
            f"python exercises/check.py {rung}",
            file=sys.stderr,
        )
        sys.exit(1)


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
        result = module.train(module.parse_args([*argv, "--run-dir", f"runs/exercises/{rung}"]))
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
