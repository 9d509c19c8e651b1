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


IDEAS = {  # rung: its section's text in exercises.ipynb (the equations are in the docstrings)
    "reinforce": (
        "1. REINFORCE: the policy gradient with reward-to-go",
        "Play whole episodes, then step along"
        " $\\nabla_\\theta J = \\mathbb{E}[\\sum_t \\nabla_\\theta"
        " \\log \\pi_\\theta(a_t|s_t)\\, G_t]$ with the reward-to-go $G_t = r_t + \\gamma G_{t+1}$,"
        " which starts again at 0 after each episode's end. Autograd gives the gradient of the loss"
        " $L = -\\frac{1}{T}\\sum_t \\log \\pi_\\theta(a_t|s_t)\\, G_t$.",
    ),
    "vpg": (
        "2. VPG: a learned baseline",
        "Subtract a critic's $V_\\phi(s_t)$ from $G_t$:"
        " the advantage $A_t = G_t - V_\\phi(s_t)$ leaves"
        " the gradient unbiased and cuts its variance. It must not train the critic through the"
        " policy loss (detach it); the critic learns from $L_V = \\frac{1}{T}\\sum_t (G_t -"
        " V_\\phi(s_t))^2$.",
    ),
    "ppo": (
        "3. PPO: the clipped surrogate",
        "Several steps on one batch, with the ratio $\\rho_t = \\pi_\\theta(a_t|s_t) /"
        " \\pi_{old}(a_t|s_t)$ kept from pulling far: $L = -\\frac{1}{T}\\sum_t \\min(\\rho_t A_t,"
        " \\mathrm{clip}(\\rho_t, 1-\\epsilon, 1+\\epsilon) A_t)$.",
    ),
    "ppo_gae": (
        "4. PPO + GAE: generalized advantage estimation",
        "$\\delta_t = r_t + \\gamma (1 - \\mathrm{terminated}_t) V(s_{t+1}) - V(s_t)$ and $A_t ="
        " \\delta_t + \\gamma\\lambda (1 - \\mathrm{end}_t) A_{t+1}$:"
        " a truncated step is bootstrapped,"
        " a terminated one is not, and no advantage crosses an episode's end. The value loss may be"
        " clipped around the old values, as PPO2 does.",
    ),
    "ppo_continuous": (
        "5. Continuous PPO: a diagonal Gaussian policy",
        "For `Box` actions the policy is $\\mathcal{N}(\\mu_\\theta(s), \\sigma)$,"
        " one $\\log\\sigma$ per"
        " action dimension: the log-probability and entropy of independent dimensions add up."
        " Observations are normalized with running statistics, and `--lr-target-kl` adapts the"
        " step size to how far each update moved the policy.",
    ),
}
INTRO = """# Exercises: write the ladder, then watch it learn

One section per rung of this repository's ladder. Fill in each function (its signature and
docstring are the script's own), run the check cell below it, then the training cell: it trains
the script's own `train()` with your function in place, and prints how the returns moved. A right
answer learns as the script does; a wrong one learns worse, or its run stops with one line that
says why, followed by the grader's line for your function. Each rung's functions live in a
namespace of their own (the last line of each cell you fill in, `ppo.value_loss = value_loss`, puts
yours there; keep it), so ppo's `value_loss` is never ppo_gae's.

- **Open it** from a clone of this repository in Jupyter (`pip install -r requirements.txt
  jupyter`, then `jupyter notebook exercises.ipynb`); or in Colab, by uploading the repository's
  folder (or a zip of it, unzipped) and then this notebook: the first cell finds the scripts
  (or set `LADDER_ROOT` to the repository's folder).
- **Check outside the notebook**: `python exercises/check.py RUNG` checks `exercises/RUNG.py`, the
  same exercises as plain files.
- **For teachers**: the cells carry nbgrader's metadata (solution cells, autograded check cells),
  so a course can release and autograde this notebook as it is.

Generated from the scripts by `exercises/make.py`: do not edit by hand."""
SETUP = """import os
import sys
from pathlib import Path

places = [Path.cwd(), *Path.cwd().parents, *Path("/content").glob("*")]  # /content: Colab
places.insert(0, Path(os.environ.get("LADDER_ROOT", ".")))  # or say where: a course's setup
root = next((p for p in places if (p / "exercises" / "check.py").exists()), None)
if root is None:
    print("The scripts are not here: open this notebook from the repository's folder.")
else:
    os.chdir(root)  # runs/ and the scripts' imports from the repository's folder
    sys.path[:0] = [str(root), str(root / "exercises")]
QUICK = os.environ.get("NOTEBOOK_QUICK") == "1"  # CI: every run cut short"""
IMPORTS = """%matplotlib inline
from types import SimpleNamespace

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
from check import notebook_check, notebook_train
from torch.distributions import Categorical, Normal

# Each rung's functions, in a namespace of their own: ppo.value_loss is not ppo_gae.value_loss
reinforce, vpg, ppo, ppo_gae, ppo_continuous = (SimpleNamespace() for _ in range(5))


def curve(result, title):
    # Each training episode's return, and the mean of the last 20
    if result is None:
        return
    steps, returns = np.array(result["episode_returns"], dtype=float).reshape(-1, 2).T
    mean = np.convolve(returns, np.ones(20) / 20, "valid")
    plt.figure(figsize=(7, 2.6))
    plt.plot(steps, returns, ".", ms=2, alpha=0.3)
    plt.plot(steps[19:], mean, label="mean of the last 20")
    plt.xlabel("environment steps")
    plt.ylabel("episode return")
    plt.title(title)
    plt.legend()
    plt.show()"""


def nbgrader(grade_id, solution=False, points=0):
    """nbgrader's cell metadata (schema 3): a solution cell, or an autograded test cell."""
    meta = dict(grade=points > 0, grade_id=grade_id, locked=not solution, schema_version=3)
    meta |= dict(solution=solution, task=False) | (dict(points=points) if points else {})
    return {"nbgrader": meta}


def marked(source):
    """A blank's body between nbgrader's solution markers, for nbgrader to swap for its stub."""
    lines = source.splitlines()
    i = next(k for k, line in enumerate(lines) if "raise NotImplementedError(" in line)
    j = next(k for k in range(i, len(lines)) if lines[k].rstrip().endswith(")"))
    indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
    body = [f"{indent}### BEGIN SOLUTION", *lines[i : j + 1], f"{indent}### END SOLUTION"]
    return "\n".join(lines[:i] + body + lines[j + 1 :])


def notebook():
    """exercises.ipynb, without outputs, as nbformat 4 JSON."""
    import json

    def cell(kind, text, **meta):
        cell = dict(cell_type=kind, metadata=meta, source=text.strip("\n").splitlines(True))
        return cell | (dict(execution_count=None, outputs=[]) if kind == "code" else {})

    cells = [cell("markdown", INTRO), cell("code", SETUP), cell("code", IMPORTS)]
    for rung, (title, idea) in IDEAS.items():
        cells.append(cell("markdown", f"## {title} (`{rung}.py`)\n\n{idea}"))
        parts = exercise(rung).split("\n\n\n")[1:]  # the code, one definition a part
        for part in parts:
            if part.startswith(("# ", "if __name__")):  # the footer
                continue
            name = part.split("(")[0].split()[-1]
            names = [n for n in cases.EXERCISES[rung] if n.split(".")[0] == name]
            if not names:  # a helper the exercises need, as in the script
                cells.append(cell("code", part.strip()))
                continue
            grade_id = f"{rung}-{name}"
            keep = f"{rung}.{name} = {name}  # yours, in {rung}'s namespace"
            solution = marked(part.strip()) + "\n\n\n" + keep
            cells.append(cell("code", solution, **nbgrader(grade_id, solution=True)))
            for exercise_name in names:
                check = f'notebook_check("{rung}", "{exercise_name}", {rung})'
                cells.append(
                    cell(
                        "code",
                        check,
                        **nbgrader(f"check-{rung}-{exercise_name.replace('.', '__')}", points=1),
                    )
                )
        train = f'result = notebook_train("{rung}", {rung}, QUICK)\ncurve(result, "{rung}.py")'
        cells.append(cell("code", train))
    for number, each in enumerate(cells):
        each["id"] = f"cell-{number}"
    meta = dict(kernelspec=dict(display_name="Python 3", language="python", name="python3"))
    meta |= dict(language_info=dict(name="python"))
    return (
        json.dumps(dict(cells=cells, metadata=meta, nbformat=4, nbformat_minor=5), indent=1) + "\n"
    )


def main(argv):
    stale = []
    targets = [(HERE / f"{rung}.py", exercise(rung)) for rung in cases.EXERCISES]
    for path, text in targets + [(HERE.parent / "exercises.ipynb", notebook())]:
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
