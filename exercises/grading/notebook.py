# SPDX-License-Identifier: MIT
"""The student's functions in the script's own train(): train_with() for an exercise file
(`python exercises/RUNG.py`), and for exercises.ipynb a check cell (notebook_check(): the
function's source, graded by exercises/check.py in a process of its own) and a training cell
(notebook_train()).

It relies on base.py and on exercises/cases.py (the scripts)."""

import ast
import contextlib
import inspect
import os
import subprocess
import sys
import tempfile
import textwrap
import types
from pathlib import Path

import cases  # exercises/cases.py: the cases, the scripts' own functions, the known mistakes
from runner import find, unwritten

from .base import HERE, one_line


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
