# SPDX-License-Identifier: MIT
"""What the five test files share: the repository on the path, and the helpers each may use.

pytest reads this file before any test module. Test modules import from it (`from conftest
import ROOT, flags`), never from each other: test_all.py tests the scripts,
benchmarks/test_benchmarks.py the benchmark tools, exercises/test_exercises.py the exercises
and their grader, docs/test_docs.py the docs and the notebooks, docs/test_site.py the site.
"""

import os
import re
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
# worker a core, and every core for each backfires beside the others (docs/results.md, threads).
# The scripts take theirs from --threads; a test that needs more sets them.
os.environ.setdefault("OMP_NUM_THREADS", "1")
# The five scripts, long_runs.py and envs/ first (import ppo_gae), then exercises/ (import cases,
# the hand-worked case table that test_all.py and the grader both read), whose blank ppo_gae.py
# must never stand in for the script
sys.path.insert(0, str(ROOT / "exercises"))
sys.path.insert(0, str(ROOT))


def flags(text):
    """Command-line flags from one string: flags("--num-envs 2") == ("--num-envs", "2")."""
    return tuple(text.split())


def cli(args, cwd):
    """`python ARGS` in cwd, with nothing of this repository on the path."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=HANG
    )


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
