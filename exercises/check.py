# SPDX-License-Identifier: MIT
"""Check the functions of one rung's exercise file: the hand-worked cases first, then the
script's own function on random inputs of train()'s contract, values and gradients.

    python exercises/check.py reinforce                        # exercises/reinforce.py
    python exercises/check.py ppo_gae --file alice/ppo_gae.py  # a copy handed in
    python exercises/check.py ppo_gae --file exercises.ipynb   # a notebook's functions
    python exercises/check.py all                              # every rung: "7 of 10 functions"
    python exercises/check.py ppo_gae --folder handed_in --csv grades.csv  # a row per student
    python exercises/check.py --doctor                         # before a class: this machine

One line per function: passed (with the number of cases), not written yet, or failed (the case,
what was expected, what came back, and the mistake in words where a known one explains every
case), then the total. Exit status: 0 when all pass; 1 when any fails or is not written yet; 2
for an unknown rung or a file that cannot be read, in one line.

The grader builds every case, its inputs and what it expects, in its own process. The student's
file runs in a child (exercises/runner.py) inside a bubblewrap sandbox that holds the runner,
the system's libraries and Python's, read-only: no repository, no reference script, no case, no
other student, no network, no socket, no keyring, a PID namespace of its own; never the host's
root, no capability, nothing of the teacher's environment. The file reaches the child as text,
which the child parses and compiles on the student's time. The child gets a case's inputs as
data and sends back what the function returned and its inputs after the call; the comparison,
the in-place check, the mistake named and the exit status are decided here, on the grader's
clock, within a memory limit per student that the kernel counts where the grader may make a
cgroup, and never from an answer larger than its case could need.

This file is the command alone; the grader lies in exercises/grading/, a file a part: the limits
(base.py), one case and its verdict (verdicts.py), the sandbox (sandbox.py: bubblewrap's view,
the seccomp filter), the kernel's accounting (accounting.py: cgroups, CPU time), hand-ins read
by descriptors (handins.py), the session with the child (session.py), a class's folder
(classroom.py: names, the CSV), the command line (command_line.py: main, --doctor) and the
helpers of exercise files and exercises.ipynb (notebook.py).
"""

import gc
import os
import sys
from pathlib import Path


def class_on_the_path(argv):
    """The folder given to --folder where Python's path holds it or an entry of it (a PYTHONPATH
    of "." or of an empty entry, as `export PYTHONPATH=$PYTHONPATH:/x` leaves, run from the
    class's folder), else None. A student's torch.py there would be imported by the grader
    itself, outside the sandbox, so this is looked at before anything is imported."""
    for i, word in enumerate(argv):
        name, equals, value = word.partition("=")
        if len(name) > 3 and "--folder".startswith(name):  # argparse takes --fold too
            folder = value if equals else (argv[i + 1] if i + 1 < len(argv) else "")
            top = os.path.realpath(folder or ".")
            for entry in sys.path[1:]:  # [0]: exercises/, this file's folder
                real = os.path.realpath(entry or ".")
                # the class's folder, or a student's entry in it: where their files lie
                if folder and top in (real, os.path.dirname(real)):
                    return folder
    return None


if __name__ == "__main__" and (folder := class_on_the_path(sys.argv[1:])) is not None:
    print(
        f"check.py: error: Python's path holds the class's folder {folder} (PYTHONPATH, or a '.' "
        "or empty entry of it run from there), so a student's torch.py would run here, outside "
        "the sandbox: unset PYTHONPATH, or grade from another folder",
        file=sys.stderr,
    )
    sys.exit(2)
sys.path.insert(0, str(Path(__file__).resolve().parent))  # exercises/: grading/, cases, runner
from grading.command_line import main  # noqa: E402
from grading.notebook import notebook_check, notebook_train, train_with  # noqa: E402

# What code outside the grader imports from check: the exercise files (`from check import
# train_with`, written by make.py), the cells of exercises.ipynb (`from check import
# notebook_check, notebook_train`) and this command. Everything else is imported from where it
# lies in grading/.
__all__ = ["main", "notebook_check", "notebook_train", "train_with"]

if __name__ == "__main__":
    # torch's objects and the grader's (some 290,000) live as long as this process: frozen, the
    # garbage collector never looks at them again, here or as Python ends (0.5 s of each
    # check cell of exercises.ipynb, which runs this file once a function)
    gc.freeze()
    sys.exit(main())
