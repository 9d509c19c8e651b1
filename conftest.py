# SPDX-License-Identifier: MIT
"""What the five test files share: the repository on the path, and the helpers each may use.

pytest reads this file before any test module. Test modules import from it (`from conftest
import ROOT, flags`), never from each other: test_all.py tests the scripts,
benchmarks/test_benchmarks.py the benchmark tools, exercises/test_exercises.py the exercises
and their grader, docs/test_docs.py the docs and the notebooks, docs/test_site.py the site.
"""

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent
# How long a test waits for a process, a file or an answer before it calls it a hang. Every wait
# in the tests is for something that happens, so this is reached only by a hang, never by a slow
# machine: at a load of 5 on 2 cores (a laptop beside a browser and a build) a step of a few
# seconds takes five times as long, and a verdict must not depend on that.
HANG = 600
# One torch (OpenMP) thread a process, in the workers and all they start: pytest-xdist runs a
# worker a core and one more (below), and every core for each backfires beside the others
# (docs/results.md, threads).
# The scripts take theirs from --threads; a test that needs more sets them.
os.environ.setdefault("OMP_NUM_THREADS", "1")
# A shell starts a background job (`python -m pytest &`, nohup, a script's `&`) with Ctrl-C
# ignored, and every program the job starts inherits that: the scripts would never see the
# Ctrl-C the tests send them, and run on to exit 0. A Python handler here, not an ignored signal,
# is what each program the tests start gets back as the default (exec resets a handled signal).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
# The five scripts, long_runs.py and envs/ first (import ppo_gae), then exercises/ (import cases,
# the hand-worked case table that test_all.py and the grader both read), whose blank ppo_gae.py
# must never stand in for the script
sys.path.insert(0, str(ROOT / "exercises"))
sys.path.insert(0, str(ROOT))


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: a worker a core, and one more. Many tests wait on what they start (a sandbox, a
    kernel, a signal's effect, a wall clock that ends a sleep), and with a worker a core those
    waits left a core idle for a tenth of the run. The extra worker runs a test in them."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cores or 1) + 1


def flags(text):
    """Command-line flags from one string: flags("--num-envs 2") == ("--num-envs", "2")."""
    return tuple(text.split())


def cli(args, cwd, env=None):
    """`python ARGS` in cwd, with nothing of this repository on the path: a CompletedProcess."""
    env = {k: v for k, v in (os.environ if env is None else env).items() if k != "PYTHONPATH"}
    return python(args, cwd, env)


def python(args, cwd, env):
    """`python ARGS` in cwd with the environment env (PYTHONPATH as it says): a CompletedProcess,
    as subprocess.run(..., capture_output=True, text=True) gives it.

    A command-line test pays for its interpreter's start, and most of that is importing torch
    (about 2 s of a core). So the command runs in a fork of a python that has imported torch,
    numpy, gymnasium and TensorBoard once (zygote() below): a process of its own, which runs ARGS
    as `python ARGS` does (the script as __main__, its folder first on the path, then PYTHONPATH,
    its exit status, its output) and starts with those modules loaded. What only a fresh
    interpreter shows (an import's own errors, Ctrl-C while torch loads, a package hidden from
    the path, settings those modules read as they load) is run by subprocess: those tests start
    python themselves, and so does this where env changes such a setting, or where LADDER_FRESH=1
    asks it to (to compare)."""
    if Zygote.fits(env):
        return Zygote.run([sys.executable, *args], cwd, env)
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=HANG
    )


def zygote():
    """Runs as a process of its own (python -c, from a folder outside the repository). Imports
    what every script imports, then reads requests, a JSON line each: (argv, cwd, env, the
    files for stdout and stderr). For each it forks a child, writes the child's pid, waits for
    it, and writes its exit status as subprocess gives it (-N for a signal). The child returns
    the request, to be run at the top level as `python ARGV` runs, so that Python's own end of
    a program (SystemExit, an uncaught exception's traceback, Ctrl-C's status, atexit, threads
    joined, streams flushed) is what ends it."""
    import gc
    import json
    import os
    import sys

    import gymnasium  # noqa: F401
    import numpy  # noqa: F401
    import torch
    from torch.utils.tensorboard import SummaryWriter  # noqa: F401

    torch.optim.Adam([torch.zeros(1, requires_grad=True)]).step()  # its lazy imports: 1 s
    # What these modules made (some 290,000 objects) lives as long as the command; the garbage
    # collector need not look at it again. A fresh python's end collects them all, several
    # times over (0.8 s of a core a command); frozen, the collector skips them, and nothing
    # else of the command's end changes.
    gc.freeze()

    def line():  # one request, read by the byte: a child must inherit no read-ahead
        data = b""
        while not data.endswith(b"\n"):
            byte = os.read(0, 1)
            if not byte:
                sys.exit(0)
            data += byte
        return json.loads(data)

    while True:
        request = line()
        pid = os.fork()
        if pid == 0:
            return request
        os.write(1, f"{pid}\n".encode())
        _, status = os.waitpid(pid, 0)
        os.write(1, f"{os.waitstatus_to_exitcode(status)}\n".encode())


ZYGOTE_MAIN = """
import os, runpy, sys
argv, cwd, env, out, err = zygote()
os.chdir(cwd)
os.environ.clear()
os.environ.update(env)
import tempfile
tempfile.tempdir = None  # the zygote's, found as it loaded torch: the command's TMPDIR instead
os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
os.dup2(os.open(out, os.O_WRONLY), 1)
os.dup2(os.open(err, os.O_WRONLY), 2)
os.setpgid(0, 0)
sys.stdin = open(0, closefd=False)
del zygote
path = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
sys.path[1:1] = [os.path.abspath(p) for p in path]
if argv[0] == "-c":
    sys.argv = ["-c", *argv[2:]]
    sys.path[0] = ""
    exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
elif argv[0] == "-m":
    sys.argv = [argv[1], *argv[2:]]
    sys.path[0] = os.getcwd()
    runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
else:
    sys.argv = argv
    sys.path[0] = os.path.dirname(os.path.realpath(argv[0]))
    runpy.run_path(argv[0], run_name="__main__")
"""


class Zygote:
    """The worker's zygote: started at its first command, ended with the worker."""

    process = None
    env = None
    # Read by torch, numpy, gymnasium or TensorBoard as they load: a command whose env changes
    # one of these runs in a fresh interpreter.
    LOADED = ("torch", "numpy", "gymnasium", "tensorboard", "torch.py", "numpy.py", "gymnasium.py")
    LOADING = ("TORCH", "PYTORCH", "OMP", "MKL", "KMP", "OPENBLAS", "CUDA", "GYM", "NUMPY", "TF_")

    @classmethod
    def fits(cls, env):
        if "1" in (os.environ.get("LADDER_FRESH"), env.get("LADDER_FRESH")):
            return False
        if not hasattr(os, "fork"):
            return False
        start = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        names = {k for k in {*env, *start} if env.get(k) != start.get(k)} - {"PYTHONPATH"}
        folders = [Path(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        shadows = [f / n for f in folders for n in cls.LOADED if (f / n).exists()]
        return not any(k.startswith(cls.LOADING) for k in names) and not shadows

    @classmethod
    def start(cls):
        if cls.process is None or cls.process.poll() is not None:
            import inspect
            import tempfile

            source = inspect.getsource(zygote) + ZYGOTE_MAIN
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            cls.process = subprocess.Popen(
                [sys.executable, "-c", source],
                cwd=tempfile.gettempdir(),
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
        return cls.process

    @classmethod
    def run(cls, argv, cwd, env):
        import json
        import select
        import signal
        import tempfile

        process = cls.start()
        with tempfile.TemporaryDirectory() as folder:
            out, err = Path(folder, "out"), Path(folder, "err")
            out.touch()
            err.touch()
            request = [argv[1:], str(cwd), env, str(out), str(err)]
            process.stdin.write((json.dumps(request) + "\n").encode())
            process.stdin.flush()
            answer = process.stdout.readline()
            if not answer:  # the zygote could not start: say why, as the command would
                raise RuntimeError(f"the tests' zygote ended with status {process.wait()}")
            pid = int(answer)
            ready, _, _ = select.select([process.stdout], [], [], HANG)
            if not ready:  # a hang: as subprocess.run's timeout ends it
                os.killpg(pid, signal.SIGKILL)
                process.stdout.readline()
                raise subprocess.TimeoutExpired(argv, HANG)
            status = int(process.stdout.readline())
            stdout = out.read_text(errors="replace")
            stderr = err.read_text(errors="replace")
        return subprocess.CompletedProcess(argv, status, stdout, stderr)


def beside_python(monkeypatch):
    """Programs that a package starts by name (nbgrader's `alembic`) are found beside the
    Python that runs the tests, as when pytest was started as .venv/bin/python -m pytest
    without activating the virtualenv."""
    bin_dir = str(Path(sys.executable).parent)  # not resolved: the venv's bin, not the base's
    monkeypatch.setenv("PATH", os.pathsep.join([bin_dir, os.environ.get("PATH", "")]))


def notebook_problems(nb):
    """Error outputs, and stderr that reports an error or a traceback, cell by cell."""
    problems = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                problems.append(f"cell {index}: {output.ename}: {output.evalue}")
            elif output.output_type == "stream" and output.name == "stderr":
                if re.search("traceback|error", output.text, re.IGNORECASE):
                    problems.append(f"cell {index}: stderr: {output.text.strip()[:300]}")
    return problems


# The scripts themselves, imported now from the repository: a test module in exercises/ (which
# pytest puts first on the path to import it) gets these, not the blanks of the same names there.
import ppo  # noqa: E402, F401
import ppo_continuous  # noqa: E402, F401
import ppo_gae  # noqa: E402, F401
import reinforce  # noqa: E402, F401
import vpg  # noqa: E402, F401
