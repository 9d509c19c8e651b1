# SPDX-License-Identifier: MIT
"""The session with a student's child (exercises/runner.py, in the sandbox). Session starts it
and asks it, each request within a Deadline of CPU time and a wall-clock backstop; Remote is a
function of the child as the grader's cases call it (tensors and modules as data, gradients
through RemoteCall); answers_of() runs a student's files, one child at a time, and gives their
answers.

It relies on base.py (the limits), verdicts.py (answer(), the scripts' own answers),
accounting.py (the cgroup, the CPU time), handins.py (a notebook's template), exercises/runner.py
(the messages both sides read), and on the Sandbox that sandbox.py makes, which it is given."""

import contextlib
import inspect
import os
import signal
import subprocess
import sys
import threading
import time
import types
from multiprocessing.connection import Connection
from pathlib import Path

import cases  # exercises/cases.py: the cases, the scripts' own functions, the known mistakes
import runner  # exercises/runner.py: the child, and the data both sides read
import torch

from .accounting import Cgroup, cgroup_home, cpu_time, privileges_dropped, threads, tree
from .base import HERE, RECEIVED_LIMIT, START_LIMIT, WALL_MORE, WALL_TIMES, Stop, one_line, quiet
from .handins import Notebook, template
from .verdicts import answer, own_answers, same_tensor

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


def plain(runs, **streams):
    """The child where no sandbox starts: a process of its own, in a session of its own."""
    return subprocess.Popen(runs, cwd="/", start_new_session=True, **streams)


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
            self.process = plain(runs, **streams)
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
        # The stream after the call, as the child sends it: one torch refuses is not the
        # student's error but the child's reply
        try:
            torch.set_rng_state(rng)
        except RuntimeError:
            self.session.kill()
            raise Stop("sent what the grader cannot read") from None
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


def key_is_buffer(module, key):
    return key in module._buffers


def student_error(name, message):
    """The student's exception, as one the grader can raise: its name and message alone."""
    if name == "NotImplementedError":
        return NotImplementedError(message)
    return type(one_line(name, 80) or "Exception", (Exception,), {})(message)


def answers_of(texts, limit, memory, bwrap, only=None):
    """A student's answers: ({rung: None if its file loaded, else why not}, {(rung, name): (its
    answers, how they stopped: "done", "missing", "unwritten", or why)}). texts: {rung: the
    file's text, or a Notebook}; only: the one function to grade (a notebook's check cell), or
    None for all. Their files run in one child at a time, which reads, parses and compiles each
    on the student's time; a function that runs past its time, ends its child, or leaves a
    thread or a process running beside it, is ended with it, and a new child goes on with the
    functions after it. Nothing the child does moves a deadline: each function has
    `limit` seconds of CPU time, and backstop(limit) on the clock; the student a sum fixed
    before the first, on the clock."""
    loads, results = {}, {}
    graded = {rung: [n for n in cases.EXERCISES[rung] if only in (None, n)] for rung in texts}
    count = sum(len(names) for names in graded.values())
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
            for name in graded[rung]:
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
