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
"""

import argparse
import ast
import contextlib
import csv
import importlib.util
import inspect
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import types
import warnings
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cases  # noqa: E402  (exercises/cases.py, beside this file)

HERE = Path(__file__).resolve().parent
TIME_LIMIT = 5.0  # seconds a function gets for all its cases


def fail(message):
    print(f"check.py: error: {one_line(message)}", file=sys.stderr)
    sys.exit(2)


def one_line(message, limit=300):
    text = " ".join(str(message).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class OutOfTime(BaseException):  # not an Exception: a student's `except Exception` lets it by
    pass


@contextlib.contextmanager
def time_limit(seconds):
    """Raise OutOfTime in the code inside once `seconds` have passed (again every half second,
    should it be caught). Where signals cannot serve (Windows, a thread other than the main
    one), no limit."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not seconds or not usable:
        yield
        return

    def stop(signum, frame):
        raise OutOfTime

    previous = signal.signal(signal.SIGALRM, stop)
    delay, interval = signal.setitimer(signal.ITIMER_REAL, seconds, 0.5)
    start = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if delay:  # a timer of someone else's: on again, less the time spent here
            left = max(delay - (time.monotonic() - start), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, left, interval)


@contextlib.contextmanager
def quiet():
    """What a student's function prints or warns stays out of the grader's lines."""
    with (
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")
        yield


def loaded(path, limit=TIME_LIMIT):
    """(the student's file as a module, None), or (None, why it cannot be read or run)."""
    path = Path(path)
    try:
        source = path.read_text()
        compile(source, str(path), "exec")
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as error:
        return None, f"cannot read {path}: {type(error).__name__}: {error}"
    spec = importlib.util.spec_from_file_location(f"_student_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        with time_limit(limit), quiet():
            spec.loader.exec_module(module)
    except OutOfTime:
        return None, f"cannot load {path}: still running after {limit:g} s"
    except BaseException as error:  # an import that fails, code that raises at the top level
        return None, f"cannot load {path}: {type(error).__name__}: {error}"
    return module, None


def load(path, limit=TIME_LIMIT):
    """The student's file as a module; one line and exit 2 if it cannot be read or run."""
    module, why = loaded(path, limit)
    if module is None:
        fail(why)
    return module


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


# ---- one function, its cases, and the line that says how it did ------------------------------
def attempt(case, fn):
    """("ok", what fn gave, as lists) or ("raised", the error in one line). Every call starts
    from the same random state, so that the same code gives the same answer."""
    try:
        with cases.seeded(0):
            return "ok", cases.as_lists(case.call(fn))
    except NotImplementedError:
        raise
    except Exception as error:
        return "raised", one_line(f"{type(error).__name__}: {error}")


def passes(case, answer):
    return answer[0] == "ok" and cases.close(
        answer[1], case.expected, scale=case.scale, tolerance=case.tolerance
    )


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
        floor = cases.FLOOR * max([scale, *(abs(e) for e in want[0])])
        wrong = [
            i
            for i, (g, e) in enumerate(zip(have[0], want[0], strict=True))
            if not (np.isfinite(g) and abs(g - e) <= cases.RTOL * abs(e) + floor)
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


def check(rung, name, fn, limit=TIME_LIMIT):
    """(passed, the line to print) for one function."""
    if fn is None:
        return False, f"✗ {name}: not found in the file (keep its name)"
    if unwritten(fn):
        return False, f"· {name}: not written yet"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small tensors: one thread is faster, and fair on a busy machine
    try:
        return checked(rung, name, fn, limit)
    finally:
        torch.set_num_threads(threads)


def checked(rung, name, fn, limit):
    with torch.random.fork_rng(devices=[]):  # the caller's random state, left as it was
        with quiet():
            case_list = cases.EXERCISES[rung][name][0]()
        answers, case = [], case_list[0]
        try:
            with time_limit(limit), quiet():
                for case in case_list:
                    answers.append(attempt(case, fn))
        except NotImplementedError:
            return False, f"· {name}: not written yet"
        except OutOfTime:
            return False, (
                f"✗ {name}: {case.label}: still running after {limit:g} s, the time limit"
                " (a loop that never ends?)"
            )
        failed = [i for i, answer in enumerate(answers) if not passes(case_list[i], answer)]
        if not failed:
            hand, random_ = (sum(c.kind == kind for c in case_list) for kind in ("hand", "random"))
            course = len(case_list) - hand - random_
            return True, (
                f"✓ {name}: {len(case_list)} cases passed ({hand} worked by hand, "
                + (f"{course} the CartPole course's own test, " if course else "")
                + f"{random_} on random inputs against {rung}.py's own)"
            )
        with quiet():
            words = cases.mistake(name, case_list, answers, attempt)
    case, (kind, got) = case_list[failed[0]], answers[failed[0]]
    what = f"raised {got}" if kind == "raised" else describe(case, got)
    return False, f"✗ {name}: {case.label}: {case.inputs}: {what}" + (f": {words}" if words else "")


def grade(rung, path, limit=TIME_LIMIT, strict=True):
    """[(name, passed, line)] for the functions of one rung in the file at path. A file that
    cannot be read: exit 2 (strict), or a failed line per function."""
    module, why = loaded(path, limit) if strict or Path(path).exists() else (None, "no such file")
    if module is None:
        if strict:
            fail(why)
        why = f"{path}: {why}" if why == "no such file" else why
        return [(name, False, f"✗ {name}: {one_line(why)}") for name in cases.EXERCISES[rung]]
    return [(name, *check(rung, name, find(module, name), limit)) for name in cases.EXERCISES[rung]]


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


def grade_student(rung, path, limit):
    """The student's results, graded in a process of their own (a file that hangs or breaks
    the interpreter stops only itself): [(key, status, line)]."""
    names = [
        (r, name)
        for r in (cases.EXERCISES if rung == "all" else [rung])
        for name in cases.EXERCISES[r]
    ]
    key = (lambda r, name: f"{r}.{name}") if rung == "all" else (lambda r, name: name)
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "results.json"
        command = [sys.executable, str(HERE / "check.py"), rung, "--file", str(path)]
        command += ["--time-limit", str(limit), "--json", str(out)]
        seconds = 120 + 2 * limit * len(names)
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=seconds)
            why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        except subprocess.TimeoutExpired:
            why = f"did not finish in {seconds:g} s"
        if out.exists():
            return [(key(r, name), line[0], line) for r, name, line in json.loads(out.read_text())]
    return [(key(r, name), "✗", f"✗ {name}: {one_line(why)}") for r, name in names]


def grade_folder(rung, folder, csv_path, limit):
    if not Path(folder).is_dir():
        fail(f"no folder {folder}")
    students = submissions(rung, folder)
    if not students:
        where = "NAME/ folders" if rung == "all" else f"NAME.py files or NAME/{rung}.py"
        fail(f"no submissions in {folder}: it should hold {where}, one a student")
    rows = []
    for student, path in students:
        results = grade_student(rung, path, limit)
        passed = sum(status == "✓" for _, status, _ in results)
        rows.append((student, passed, results))
    width = max(len("student"), *(len(student) for student, _, _ in rows))
    print(f"{'student':<{width}}  {'passed':<10}  not passed")
    for student, passed, results in rows:
        missed = ", ".join(f"{status} {key}" for key, status, _ in results if status != "✓")
        print(f"{student:<{width}}  {f'{passed} of {len(results)}':<10}  {missed}".rstrip())
    if csv_path:
        try:
            with open(csv_path, "w", newline="") as file:
                writer = csv.writer(file)
                writer.writerow(["student", "passed", "functions", *(k for k, _, _ in rows[0][2])])
                for student, passed, results in rows:
                    writer.writerow(
                        [student, passed, len(results), *(line for *_, line in results)]
                    )
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
    parser.add_argument("--json", help=argparse.SUPPRESS)  # for --folder's own use
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
        for name, passed, line in grade(args.rung, path, args.time_limit):
            print(line)
            results.append((args.rung, name, passed, line))
    print(total(results))
    if args.json:
        Path(args.json).write_text(json.dumps([(r, n, line) for r, n, _, line in results]))
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


def notebook_check(rung, name, answers):
    """A check cell: the grader's line for one function of the rung's namespace `answers`, and
    nothing else. Under nbgrader (its autograder or validator), a line that is not a pass
    raises AssertionError: the cell scores 0."""
    passed, line = check(rung, name, students(rung, answers)[name])
    print(line)
    if not passed and os.environ.get("NBGRADER_EXECUTION"):
        raise AssertionError(line)


def notebook_train(rung, answers, quick=False):
    """A training cell: RUNG.py's own train(), in a fresh copy of the script, with the
    functions of the rung's namespace `answers`; prints how the returns moved. Unwritten
    functions: one line, no run. A run that breaks: one line, and the grader's for them."""
    functions = students(rung, answers)
    missing = [name for name, fn in functions.items() if fn is None or unwritten(fn)]
    if missing:
        print(f"Write {', '.join(missing)} first (and check it): then this cell trains {rung}.py.")
        return None
    module = cases.script(rung, fresh=True)
    install(module, functions)
    argv = [*NOTEBOOK_RUNS[rung][quick].split(), "--eval-episodes", "0"]
    try:
        result = module.train(module.parse_args([*argv, "--run-dir", f"runs/exercises/{rung}"]))
    except Exception as error:
        print(f"{rung}.py stopped: {one_line(f'{type(error).__name__}: {error}', 200)}")
        for name, fn in functions.items():
            passed, line = check(rung, name, fn)
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
