# SPDX-License-Identifier: MIT
"""Write exercises/RUNG.py for every rung from the scripts themselves: never edit them by hand.

    python exercises/make.py           # write them
    python exercises/make.py --check   # exit 1 if a committed file differs (test_all.py does)

Each exercise keeps the script's name, signature and docstring, and its body becomes
`raise NotImplementedError("a one-line hint")`. A method stays in its class, written out with
the class's other methods; what the code needs from the script (imports, helpers such as
layer_init) is copied in with it.
"""

import ast
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cases  # noqa: E402

HERE = Path(__file__).resolve().parent

HEADER = '''# SPDX-License-Identifier: MIT
"""{rung}.py as exercises: write the body of each function that raises NotImplementedError.
Generated from {rung}.py by exercises/make.py; the equations are in the docstrings.

    python exercises/check.py {rung}    # check what you wrote, a line per function
    python exercises/{rung}.py          # then train {rung}.py with it
"""
'''
FOOTER = """

# {rung}.py's own train(), with these functions in place of its own:
if __name__ == "__main__":
    from check import train_with  # exercises/check.py

    train_with("{rung}", globals())
"""


def blank(lines, node, hint):
    """The source of a def with its body replaced by the hint, docstring kept."""
    indent = " " * (node.body[0].col_offset)
    first = node.lineno - 1 - len(node.decorator_list)
    doc = node.body[0]
    keep = (
        doc.end_lineno
        if isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
        else doc.lineno - 1
    )
    return lines[first:keep] + [f'{indent}raise NotImplementedError("{hint}")']


def names_used(tree):
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def exercise(rung, solved=False):
    """The text of exercises/RUNG.py; solved: with the script's own bodies in the blanks."""
    source = (cases.ROOT / f"{rung}.py").read_text()
    lines, tree = source.splitlines(), ast.parse(source)
    tops = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    parts = {}  # top-level name: its lines in the exercise
    for name, (_, hint) in cases.EXERCISES[rung].items():
        top, _, method = name.partition(".")
        node = tops[top]
        if not method:
            parts[top] = (
                lines[node.lineno - 1 : node.end_lineno] if solved else blank(lines, node, hint)
            )
            continue
        (item,) = [i for i in node.body if isinstance(i, ast.FunctionDef) and i.name == method]
        before, after = (
            lines[node.lineno - 1 : item.lineno - 1],
            lines[item.end_lineno : node.end_lineno],
        )
        middle = lines[item.lineno - 1 : item.end_lineno] if solved else blank(lines, item, hint)
        parts[top] = before + middle + after  # one blank method a class
    todo = names_used(ast.parse("\n".join(sum(parts.values(), []))))
    while todo:  # what the code calls from the lesson (layer_init, say): copied in full
        name = todo.pop()
        if name in tops and name not in parts and tops[name].lineno < tops["train"].lineno:
            parts[name] = lines[tops[name].lineno - 1 : tops[name].end_lineno]
            todo |= names_used(tops[name])
    used = set().union(*(names_used(tops[n]) for n in parts))  # what the answers need too
    imports = [
        ast.get_source_segment(source, node)
        for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom))
        and {(a.asname or a.name).split(".")[0] for a in node.names} & used
    ]
    body = ["\n".join(parts[n]) for n in sorted(parts, key=lambda n: tops[n].lineno)]
    code = "\n".join(imports) + "\n\n\n" + "\n\n\n".join(body) + "\n"
    text = HEADER.format(rung=rung) + "\n" + code + FOOTER.format(rung=rung)
    ruff = [sys.executable, "-m", "ruff", "format", "--stdin-filename", f"{rung}.py", "-"]
    return subprocess.run(ruff, input=text, capture_output=True, text=True, check=True).stdout


def main(argv):
    stale = []
    for rung in cases.EXERCISES:
        path, text = HERE / f"{rung}.py", exercise(rung)
        if "--check" in argv:
            if not path.exists() or path.read_text() != text:
                stale.append(path.name)
        else:
            path.write_text(text)
    if stale:
        stale = ", ".join(stale)
        print(f"make.py: {stale} differ from the scripts; run python exercises/make.py")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
