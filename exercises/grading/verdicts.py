# SPDX-License-Identifier: MIT
"""One case and its verdict, in the grader's own process. answer() calls a function on a case
and gives what it returned as data, the form of each return and the inputs it changed in place;
beyond() bounds an answer by what its case could need. wrong() says what is wrong with an answer
in words, mistake() names the known mistake that explains every case, and verdict() and judged()
give the line printed for a function. check() grades a function of this process (the script's
own, a planted mistake), never a student's.

It relies on base.py, on exercises/cases.py (the cases, the scripts' own functions, the known
mistakes) and on exercises/runner.py (the forms of what a child sends back)."""

import inspect
import math
from functools import cache

import cases  # exercises/cases.py: the cases, the scripts' own functions, the known mistakes
import numpy as np
import runner  # exercises/runner.py: the child, and the data both sides read
import torch
from runner import unwritten

from .base import Stop, one_line, quiet


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
