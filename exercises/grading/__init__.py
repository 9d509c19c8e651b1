# SPDX-License-Identifier: MIT
"""The grader of the exercises, whose command is exercises/check.py. Its files, each read alone,
each importing only those listed above it:

    base.py          the limits, the project's names, a student's text on one line, Stop
    verdicts.py      one case as data, the bounds on an answer, the verdict, the named mistakes
    sandbox.py       bubblewrap's view, the seccomp filter, Sandbox, and sandbox(): the way here
    accounting.py    cgroups v1 and v2, memory and CPU time as the kernel counts them
    handins.py       hand-ins read by descriptors: a file, a notebook, what is refused unread
    session.py       the child (Session, Deadline, Remote) and a student's answers
    classroom.py     a folder of students: entries, names by UTS #39's skeleton, the table, CSV
    command_line.py  main(), grade() of one file, --doctor
    notebook.py      train_with() for an exercise file, the cells of exercises.ipynb

The sandbox hides this folder as it hides check.py (base.PROJECT, sandbox.view()): a student's
code never reads the grader. Nothing is imported here: `import grading.base` loads base.py alone.
"""
