# SPDX-License-Identifier: MIT
"""Check the functions of one rung's exercise file against the hand-worked cases.

    python exercises/check.py reinforce                      # exercises/reinforce.py
    python exercises/check.py ppo_gae --file alice/ppo_gae.py  # a copy handed in

One line per function: passed (with the number of cases), not written yet, or failed (the case,
what was expected, what came back, and the mistake in words where it is a known one).
Exit status: 0 when all pass; 1 when any fails or is not written yet; 2 for an unknown rung or
a file that cannot be read, in one line.
"""

import argparse
import ast
import contextlib
import importlib.util
import inspect
import io
import os
import sys
import textwrap
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cases  # noqa: E402  (exercises/cases.py, beside this file)

HERE = Path(__file__).resolve().parent


def fail(message):
    print(f"check.py: error: {' '.join(str(message).split())}", file=sys.stderr)
    sys.exit(2)


def load(path):
    """The student's file as a module; one line and exit 2 if it cannot be read or run."""
    path = Path(path)
    try:
        source = path.read_text()
        compile(source, str(path), "exec")
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as error:
        fail(f"cannot read {path}: {type(error).__name__}: {error}")
    spec = importlib.util.spec_from_file_location(f"_student_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            spec.loader.exec_module(module)
    except BaseException as error:  # an import that fails, code that raises at the top level
        fail(f"cannot load {path}: {type(error).__name__}: {error}")
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


def short(value, limit=160):
    text = " ".join(repr(cases.as_lists(value)).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check(rung, name, fn):
    """(passed, the line to print) for one function."""
    if fn is None:
        return False, f"✗ {name}: not found in the file (keep its name)"
    if unwritten(fn):
        return False, f"· {name}: not written yet"
    all_cases = cases.EXERCISES[rung][name][0]()
    for case in all_cases:
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                got = case.call(fn)
        except NotImplementedError:
            return False, f"· {name}: not written yet"
        except Exception as error:
            what = f"raised {type(error).__name__}: {' '.join(str(error).split())}"
            return False, f"✗ {name}: {case.label}: {case.inputs}: {what[:300]}"
        if not cases.close(got, case.expected):
            words = cases.mistake(name, case, got)
            line = f"✗ {name}: {case.label}: {case.inputs}: expected {short(case.expected)}, "
            return False, line + f"got {short(got)}" + (f": {words}" if words else "")
    return True, f"✓ {name}: {len(all_cases)} case{'s' * (len(all_cases) > 1)} passed"


def main(argv=None):
    parser = argparse.ArgumentParser("check.py", description=__doc__.split("\n")[0])
    parser.add_argument("rung", help=f"one of: {', '.join(cases.EXERCISES)}")
    parser.add_argument("--file", help="the exercise file to check (default exercises/RUNG.py)")
    args = parser.parse_args(argv)
    if args.rung not in cases.EXERCISES:
        fail(f"unknown rung {args.rung!r}: one of {', '.join(cases.EXERCISES)}")
    module = load(args.file or HERE / f"{args.rung}.py")
    results = [check(args.rung, name, find(module, name)) for name in cases.EXERCISES[args.rung]]
    for _, line in results:
        print(line)
    return 0 if all(passed for passed, _ in results) else 1


def students(rung, student):
    """The student's functions of a rung, from the globals `student`: {name: fn or None}."""
    namespace = types.SimpleNamespace(**student)
    return {name: find(namespace, name) for name in cases.EXERCISES[rung]}


def install(module, functions):
    """The functions in place of the script's own: module.NAME, or module.Class.method."""
    for name, fn in functions.items():
        *owner, attribute = name.split(".")
        setattr(getattr(module, owner[0]) if owner else module, attribute, fn)


def train_with(rung, student):
    """python exercises/RUNG.py [flags]: RUNG.py's own train(), with the student's functions
    (from the globals `student`) in place of the script's; an unwritten one stops it first."""
    functions = students(rung, student)
    for name, fn in functions.items():
        if fn is None or unwritten(fn):
            command = f"python exercises/check.py {rung}"
            print(
                f"{rung}.py: error: write {name} first, then check it: {command}", file=sys.stderr
            )
            sys.exit(1)
    module = cases.script(rung)
    install(module, functions)
    return module.train(module.parse_args())


# ---- in a notebook (exercises.ipynb) -----------------------------------------------------------
NOTEBOOK_RUNS = {  # rung: the flags of its run in exercises.ipynb, in full and in quick mode (CI)
    "reinforce": ("--total-timesteps 100000", "--total-timesteps 30000"),
    "vpg": ("--total-timesteps 30000", "--total-timesteps 12288"),
    "ppo": ("--total-timesteps 30000", "--total-timesteps 12288"),
    "ppo_gae": ("--total-timesteps 40000", "--total-timesteps 12288"),
    "ppo_continuous": ("--total-timesteps 100000", "--total-timesteps 40960"),
}


def notebook_check(rung, name, student):
    """A check cell: the grader's line for one function. Under nbgrader (its autograder or
    validator), a line that is not a pass raises AssertionError: the cell scores 0."""
    passed, line = check(rung, name, students(rung, student)[name])
    print(line)
    if not passed and os.environ.get("NBGRADER_EXECUTION"):
        raise AssertionError(line)
    return passed


def notebook_train(rung, student, quick=False):
    """A training cell: RUNG.py's own train(), in a fresh copy of the script, with the student's
    functions; prints how the returns moved. Unwritten functions: one line, no run."""
    functions = students(rung, student)
    missing = [name for name, fn in functions.items() if fn is None or unwritten(fn)]
    if missing:
        print(f"Write {', '.join(missing)} first (and check it): then this cell trains {rung}.py.")
        return None
    module = cases.script(rung, fresh=True)
    install(module, functions)
    argv = [*NOTEBOOK_RUNS[rung][quick].split(), "--eval-episodes", "0"]
    result = module.train(module.parse_args([*argv, "--run-dir", f"runs/exercises/{rung}"]))
    returns = [episode_return for _, episode_return in result["episode_returns"]]
    first, last = sum(returns[:20]) / 20, sum(returns[-20:]) / 20
    print(f"{rung}.py with your functions: mean return, first 20 episodes {first:.1f}", end="")
    print(f", last 20 {last:.1f}")
    return result


if __name__ == "__main__":
    sys.exit(main())
