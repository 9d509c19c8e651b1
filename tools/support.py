# SPDX-License-Identifier: MIT
"""The support code, one text: the same bytes below the divider in all five scripts.

Each script is a lesson, one divider line, then the support code a run needs (flags, envs,
logs, checks), which is the same in every script so that each file runs alone. What differs
between rungs is in the lessons, as named pieces the support code reads (ACTIONS,
flag_conflict, greedy_action). Edit the support code in one script, then write it into the
other four:

    python tools/support.py ppo_gae.py     # ppo_gae.py's support code into the other four
    python tools/support.py                # check: exit 1, naming each copy that differs

test_all.py runs the check, so a copy edited by hand fails the tests.
"""

import argparse
import collections
import sys
from itertools import zip_longest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ("reinforce.py", "vpg.py", "ppo.py", "ppo_gae.py", "ppo_continuous.py")
RULE = "=" * 8
DIVIDER = (
    f"# {RULE} End of the lesson. Below: support code (flags, envs, logs, checks); skip it. "
    f"{RULE}\n"
)


def split(text, script):
    """(lesson, support): the support code is the divider line and all after it."""
    if text.count(DIVIDER) != 1:
        raise ValueError(f"{script} has {text.count(DIVIDER)} divider lines, not one")
    lesson, support = text.split(DIVIDER)
    return lesson, DIVIDER + support


def read(path):  # the bytes as they are: a "\r\n" is not a "\n"
    return path.read_bytes().decode("utf-8")


def differences(root=ROOT):
    """One line for each script whose support code is not the one text (the most common
    copy): the script, the first line that differs, and the two versions of it."""
    texts = {script: read(root / script) for script in SCRIPTS}
    supports = {script: split(text, script)[1] for script, text in texts.items()}
    common = collections.Counter(supports.values()).most_common(1)[0][0]
    found = []
    for script, support in supports.items():
        if support == common:
            continue
        first = len(split(texts[script], script)[0].splitlines()) + 1  # the divider's line
        lines = support.splitlines(keepends=True)
        pairs = zip_longest(lines, common.splitlines(keepends=True), fillvalue="(the end)")
        offset, (line, expected) = next((i, p) for i, p in enumerate(pairs) if p[0] != p[1])
        found.append(f"{script}:{first + offset}: {line!r}, where the others have {expected!r}")
    return found


def write_from(source, root=ROOT):
    """The support code of `source` into the other scripts; their lessons stay as they are."""
    support = split(read(root / source), source)[1]
    for script in SCRIPTS:
        path = root / script
        lesson = split(read(path), script)[0]
        if lesson + support != read(path):
            path.write_bytes((lesson + support).encode("utf-8"))
            print(f"wrote {source}'s support code into {script}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("source", nargs="?", choices=SCRIPTS, help="the copy to write into all")
    args = parser.parse_args(argv)
    if args.source:
        write_from(args.source)
    try:
        found = differences()
    except ValueError as error:  # a script without its divider line (or with two)
        found = [str(error)]
    for line in found:
        print(line, file=sys.stderr)
    if found:
        print("edit one copy, then: python tools/support.py THAT_SCRIPT", file=sys.stderr)
        return 1
    print(f"the support code is one text in {', '.join(SCRIPTS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
