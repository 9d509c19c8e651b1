# SPDX-License-Identifier: MIT
"""The site's pages, made from the repository at build time (mkdocs.yml names this file).

`mkdocs build --strict` (or `mkdocs serve`) runs these hooks; nothing they make is committed.

- A page per rung, rungs/SCRIPT.md, from the script itself: its lesson (the top of the file down to
  the `End of the lesson` divider) as rows of notes beside code, as labml.ai's annotated pages
  are. A note is a docstring or a block of whole-line comments; its code is what follows it up to
  the next note. Each code cell says which lines of the script it shows (data-lines), so a test
  can compare it with the file. The support code below the divider is one link to the file.
- The scripts keep their equations in ASCII (`G_t = r_t + gamma * G_{t+1}`): tex() translates
  them to TeX, and latex2mathml typesets that as MathML at build time, so a page needs no script
  and no network. An equation is a docstring's or comment's line indented four spaces past its
  text, or a stretch of a sentence that math_spans() finds (a name with a subscript, a greek
  letter, a function of math such as log(...), and what joins them).
- "What this rung adds": difflib's diff from the rung below, each change beside its notes.
- Each rung's figures: the sections of docs/lessons.md and docs/results.md that MEASURED names,
  pulled by their headings, beside the function whose idea they measure; then its exercise.
- The quick start (docs/web/quickstart.md) gets its table from the committed results tables.
- The notebooks, with their committed outputs; README.md, docs/*.md, benchmarks/README.md,
  exercises/README.md, and every file they link to, at its own path, so their links hold.
"""

import ast
import difflib
import html
import inspect
import itertools
import json
import re
from pathlib import Path

from latex2mathml.converter import convert
from mkdocs.structure.files import File
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer, PythonLexer
from pymdownx.slugs import slugify

ROOT = Path(__file__).resolve().parent.parent
RUNGS = ["reinforce", "vpg", "ppo", "ppo_gae", "ppo_continuous"]
TITLES = dict(zip(RUNGS, ["REINFORCE", "VPG", "PPO", "PPO + GAE", "Continuous PPO"], strict=True))
DIVIDER = "# ======== End of the lesson."
PAGES = ["README.md", "docs/lessons.md", "docs/results.md", "docs/usage.md"]
PAGES += ["benchmarks/README.md", "exercises/README.md"]
NOTEBOOKS = {"ladder.ipynb": "notebooks/ladder.md", "exercises.ipynb": "notebooks/exercises.md"}
# Each rung's measurements: (page, the start of its section's heading, the function whose idea
# the section measures: the section follows that function on the rung's page)
LESSONS, RESULTS = "docs/lessons.md", "docs/results.md"
MEASURED = {
    "reinforce": [(RESULTS, "The ladder on CartPole", "reinforce_loss"), (LESSONS, "6.", "train")],
    "vpg": [(LESSONS, "1. Reward-to-go, then a baseline", "vpg_loss")],
    "ppo": [(LESSONS, "2. Many policy steps on one batch", "ppo_loss")],
    "ppo_gae": [(LESSONS, "3. lambda and gamma", "compute_gae"), (LESSONS, "5.", "greedy_action")],
    "ppo_continuous": [(LESSONS, "4. A time limit", "compute_gae"), (RESULTS, "Pendulum", "train")],
}

# ---- ASCII math to TeX, and TeX to MathML ----

GREEK = "alpha beta gamma delta epsilon lambda mu nu pi rho sigma tau theta phi psi omega".split()
GREEK = {name: "\\" + name for name in GREEK} | {"eps": r"\epsilon", "Delta": r"\Delta"}
FUNCTIONS = {name: "\\" + name for name in ("log", "exp", "min", "max", "ln")}
FUNCTIONS |= {
    name: rf"\operatorname{{{name}}}"
    for name in ("clip", "diag", "Var", "KL", "mean", "sqrt", "argmax")
}
FUNCTIONS |= {"sum": r"\sum", "grad": r"\nabla"}
TOKEN = re.compile(
    r"(?P<num>\d+(?:\.\d+)?(?:e-?\d+)?)"
    r"|(?P<name>[A-Za-z][A-Za-z0-9]*(?:_(?:\{[^{}]*\}|[A-Za-z0-9]+))*)"
    r"|(?P<op>->|<=|>=|!=|\.\.\.|[-+*/=<>^|~])"
    r"|(?P<open>[(\[{])|(?P<close>[)\]}])|(?P<space>\s+)|(?P<other>.)"
)
OPS = {"*": r"\cdot", "|": r"\mid", "->": r"\to", "<=": r"\le", ">=": r"\ge", "!=": r"\ne"}
OPS |= {"...": r"\ldots", "~": r"\sim", "{": r"\{", "}": r"\}"}


def tokens(text):
    return [(m.lastgroup, m.group()) for m in TOKEN.finditer(text)]


def is_index(sub):
    """Whether a subscript is an index (t, i, {t+1}, theta), not a word (value in last_value)."""
    return len(sub) == 1 or sub.isdigit() or sub.startswith("{") or sub in GREEK


def name_tex(name):
    """(TeX, is_math) of a name: pi_theta -> \\pi_{\\theta}, done_t -> \\text{done}_{t}."""
    base, *subs = re.findall(r"\{[^{}]*\}|[^_]+", name)
    if base in FUNCTIONS and subs and not is_index(subs[-1]):  # clip_coef: a Python name
        return rf"\text{{{name}}}", False
    if base not in GREEK and base not in FUNCTIONS and len(base) > 1:
        if subs and is_index(subs[-1]) and subs[-1] not in GREEK:  # episode_end_t: at t
            words = "_".join([base, *subs[:-1]])
            return rf"\text{{{words}}}_{{{sub_tex(subs[-1])}}}", True
        return rf"\text{{{name}}}", False  # a word, or a Python name such as last_value
    tex = GREEK.get(base) or FUNCTIONS.get(base) or base
    return tex + "".join(f"_{{{sub_tex(sub)}}}" for sub in subs), True


def sub_tex(sub):
    if sub.startswith("{"):
        return tex(sub[1:-1])
    return GREEK.get(sub) or (sub if is_index(sub) else rf"\text{{{sub}}}")


def tex(text):
    """TeX of an ASCII equation: grad log pi_theta(a_t|s_t) * G_t -> \\nabla \\log ..."""
    toks, out, i = tokens(text), [], 0
    while i < len(toks):
        kind, value = toks[i]
        after = toks[i + 1][1] if i + 1 < len(toks) else ""
        code = name_tex(value)[0] if kind == "name" else OPS.get(value, value)
        if value + after in ("E[", "N("):
            code = {"E": r"\mathbb{E}", "N": r"\mathcal{N}"}[value]
        elif kind == "num":  # 1e-8 -> 10^{-8}
            code = re.sub(r"^(?:1|(.+))e(.+)$", r"\1 10^{\2}", value).strip()
        elif value == "^":  # the power: a number, a name or a group in parentheses
            j, depth = i + 1, 0
            while j < len(toks) and (j == i + 1 or depth or toks[j - 1][1] == "-"):
                depth += (toks[j][0] == "open") - (toks[j][0] == "close")
                j += 1
            code, i = "^{" + tex("".join(v for _, v in toks[i + 1 : j])) + "}", j - 1
        elif kind == "other" and value in "%&#$_":
            code = "\\" + value
        out.append(code + (" " if code[:1] == "\\" and code[-1].isalpha() else ""))
        i += 1
    result = "".join(out)  # then words in a row as one \text{}, the spaces around it kept
    result = re.sub(r"\}(\s+)\\text\{", r"\1", result)
    result = re.sub(r"(?<=\S)\s+(\\text\{)", r"\\ \1", result)
    return re.sub(r"(\\text\{[^{}]*\})\s+(?=[^\s_^])", r"\1\\ ", result).strip()


def mathml(tex_code, block=False):
    """MathML of TeX; a long inline equation in a box that scrolls on a narrow screen."""
    math = convert(tex_code, display="block" if block else "inline")
    return f'<span class="wide-math">{math}</span>' if len(tex_code) > 60 and not block else math


def strong(toks, i):
    """Whether token i starts math in a sentence: G_t, gamma, log(, V(s)."""
    kind, value = toks[i]
    after = next((v for k, v in toks[i + 1 :] if k != "space"), "")
    if kind != "name":
        return False
    base = value.split("_")[0]
    if "_" in value:
        return name_tex(value)[1]
    return base in GREEK or (after in "([" and after and (base in FUNCTIONS or len(base) == 1))


def weak(toks, i):
    """Whether token i may join math that a strong token started: operators, numbers, x, pi."""
    kind, value = toks[i]
    if kind in ("num", "op", "space"):
        return True
    after = next((v for k, v in toks[i + 1 :] if k != "space"), "")
    if i and toks[i - 1][1] == "'":  # the s of "update's"
        return False
    if value in FUNCTIONS:  # log pi, min(...); but "the mean KL" is a word
        return value in ("log", "exp", "grad") or after == "("
    return kind == "name" and (strong(toks, i) or value not in "aAI" and len(value) == 1)


def math_spans(text):
    """(start, end) of each stretch of ASCII math in a sentence."""
    toks = tokens(text)
    starts = [0]
    for _, value in toks:
        starts.append(starts[-1] + len(value))
    spans, i, floor = [], 0, 0  # floor: the first token after the last span
    while i < len(toks):
        if not strong(toks, i):
            i += 1
            continue
        first = last = i
        depth, j = 0, i - 1
        while j >= floor and (
            weak(toks, j) or toks[j][0] == "close" or depth and toks[j][0] != "other"
        ):
            depth += (toks[j][0] == "close") - (toks[j][0] == "open")
            if depth < 0:
                break
            first = j if depth == 0 and toks[j][0] != "space" else first
            j -= 1
        depth, j = 0, i + 1
        while j < len(toks) and j - i < 60:
            kind, value = toks[j]
            depth += (kind == "open") - (kind == "close")
            stop = depth == 0 and kind != "close" and not weak(toks, j)
            before = next((k for k, _ in reversed(toks[i:j]) if k != "space"), "")
            stop = stop or kind == "num" and before in ("name", "close")  # eps 1e-5: a value
            if depth < 0 or stop or value in ":;":
                break
            last = j if depth == 0 and kind != "space" else last
            j += 1
        while last > i and toks[last][0] in ("op", "space") and toks[last][1] != "...":
            last -= 1
        while first < i and toks[first][0] in ("op", "space") and toks[first][1] != "-":
            first += 1
        power = toks[last + 2 : last + 4] if last + 3 < len(toks) else []
        if first and toks[first - 1][1] == "(" and toks[last + 1][1] == ")" and power:
            if power[0][1] == "^" and power[1][0] in ("num", "name"):  # (R_t - V)^2
                first, last = first - 1, last + 3
        if spans and not text[spans[-1][1] : starts[first]].strip(" +-*/=|"):
            spans[-1] = (spans[-1][0], starts[last + 1])  # one stretch, cut by the length limit
        else:
            spans.append((starts[first], starts[last + 1]))
        i = floor = last + 1
    return spans


PYTHON_NAME = re.compile(
    r"(?<![\w./&;-])(--[a-z][\w-]*|[A-Za-z]\w*_\w*(?:\[[^\]\s]*\])?|\w+\(\))(?!\.?[\w/])"
)
FILE_NAME = re.compile(r"(?<![\w/])((?:docs|benchmarks|exercises|envs)/[\w./-]*\w|(\w+)\.py)\b")


def prose_html(text):
    """Words of a note as HTML: Python names and flags as code, a rung or a page of the
    repository as a link to its page, -> as an arrow."""

    def link(found):
        rung = found[2] if found[2] in RUNGS else None
        path = found[1] if rung is None else None
        if rung:
            return f'<a href="{rung}.html">{found[0]}</a>'
        if path.endswith(".md") and (ROOT / path).is_file():
            return f'<a href="../{path[:-3]}.html">{found[0]}</a>'
        return found[0]

    text = PYTHON_NAME.sub(r"<code>\1</code>", html.escape(text))
    return FILE_NAME.sub(link, text).replace("-&gt;", "→")


def sentence_html(text):
    """A sentence as HTML: `code` as code, ASCII math as MathML, the rest escaped."""
    parts = []
    for k, piece in enumerate(re.split(r"(`[^`]+`|(?<![\w-])--[a-z][\w-]*\w)", text)):
        if k % 2:  # `code`, or a flag: --train-pi-iters holds no math
            parts.append(f"<code>{html.escape(piece.strip('`'))}</code>")
            continue
        done = 0
        for start, end in math_spans(piece):
            try:  # a stretch that only looked like math stays as it is
                math = mathml(tex(piece[start:end]))
            except Exception:
                math = html.escape(piece[start:end])
            parts.append(prose_html(piece[done:start]) + math)
            done = end
        parts.append(prose_html(piece[done:]))
    return "".join(parts)


COMMAND = re.compile(r"(python|tensorboard|pip|mkdocs|diff)\b")
EQUATION = re.compile(r"^[A-Za-z][\w{}]*(?:\([^()]*\))?\s*=\s*\S")


def indent_equations(text):
    """A paragraph of equations at the text's own indentation (`delta_t = ...` lines, none a
    sentence ending in a period), as a function's docstring writes them: indented as equations."""
    blocks = re.split(r"(\n[ \t]*\n)", text)
    for k, block in enumerate(blocks):
        lines = block.splitlines()
        if k % 2 == 0 and lines and all(EQUATION.match(line) for line in lines):
            if not any(line.rstrip().endswith(".") for line in lines):
                blocks[k] = "\n".join("    " + line for line in lines)
    return "".join(blocks)


def note_html(text):
    """A docstring's or comment block's text as HTML: paragraphs; lines indented four spaces
    past the text are display equations, or commands (python ...) shown as code."""
    out, paragraph, commands = [], [], []

    def flush():
        if paragraph:
            out.append("<p>" + sentence_html(" ".join(paragraph)) + "</p>")
            paragraph.clear()
        if commands:
            out.append(f"<pre><code>{html.escape(chr(10).join(commands))}</code></pre>")
            commands.clear()

    for line in indent_equations(text).splitlines():
        if not line.strip():
            flush()
        elif line.startswith("    ") and (COMMAND.match(line.strip()) or commands):
            paragraph and flush()
            commands.append(line[4:])
        elif line.startswith("    "):
            flush()
            equation = re.sub(r"\s{2,}", " ", line.strip())
            annotation = ""
            if found := re.match(r"(.*?)(?:,\s{2,}|\s{2,}(?=\())(.+)$", line.strip()):
                equation, annotation = found[1], found[2]
                equation = re.sub(r"\s{2,}", " ", equation)
            out.append(f'<div class="equation">{mathml(tex(equation), block=True)}')
            out.append(f'<span class="aside">{sentence_html(annotation)}</span></div>')
        else:
            paragraph.append(line.strip())
    flush()
    return "\n".join(out)


def tex_markdown(text, stash):
    """Markdown with $...$ and $$...$$ TeX (the notebooks') typeset as MathML, code untouched."""

    def typeset(found):
        block = found[0].startswith("$$")
        return stash(mathml(found[2] or found[3], block=block))

    parts = re.split(r"(```.*?```|`[^`\n]+`)", text, flags=re.S)
    math = re.compile(r"(\$\$(.+?)\$\$|\$(?!\s)([^$]+?)\$)", re.S)
    return "".join(part if k % 2 else math.sub(typeset, part) for k, part in enumerate(parts))


# ---- A rung's lesson as rows of notes beside code ----


def lesson(rung):
    """The script's lines down to the divider, and its rows: dicts of "note" (text), "notes"
    (the note's line numbers) and "code" (the code's line numbers, from 0)."""
    lines = (ROOT / f"{rung}.py").read_text().splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith(DIVIDER))
    docstrings, heads, inside = {}, {}, set()
    tree = ast.parse("\n".join(lines))
    # a function or class of the module's own starts a row, with or without a docstring: its
    # code goes beside its own note (none), not the note of the function above it
    starts = {
        min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef))
    }
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                first = body[0].lineno - 1
                text = ast.get_docstring(node, clean=True)
                source = "\n".join(lines[first : body[0].end_lineno])
                if re.search(r"\\$", source, re.M):  # a command's line continued: keep its \\
                    source = re.sub(r'^\s*[rR]?"""|"""\s*$', "", source)
                    text = inspect.cleandoc(source)
                docstrings[first] = (body[0].end_lineno, text)
                if hasattr(node, "decorator_list"):  # its def or class line goes beside it
                    start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
                    heads[start] = first
        if isinstance(node, ast.stmt) and not hasattr(node, "body"):
            inside.update(range(node.lineno, node.end_lineno))  # a statement's later lines
    rows, i = [], 0

    def new_row(note="", notes=()):
        if rows and not [n for n in rows[-1]["code"] if lines[n].strip()] and note:
            rows[-1]["note"] += "\n\n" + note  # two notes in a row: one
            rows[-1]["notes"] += list(notes)
        else:
            rows.append({"note": note, "notes": list(notes), "code": []})

    while i < end:
        stripped = lines[i].strip()
        if i in heads:
            new_row()
            rows[-1]["head"] = True
        elif i in starts and rows and [n for n in rows[-1]["code"] if lines[n].strip()]:
            new_row()
        if i in docstrings:
            stop, text = docstrings[i]
            if rows and rows[-1].pop("head", False):
                rows[-1]["note"], rows[-1]["notes"] = text, list(range(i, stop))
            else:
                new_row(text, range(i, stop))
            i = stop
        elif stripped.startswith("#") and i not in inside and "SPDX-License" not in stripped:
            indent, block = lines[i].index("#"), []
            while i < end and lines[i].strip().startswith("#") and lines[i].index("#") == indent:
                block.append(i)
                i += 1
            text = "\n".join(re.sub(r"^\s*# ?", "", lines[n]) for n in block)
            new_row(text, block)
        else:
            if not rows:
                new_row()
            rows[-1]["code"].append(i)
            i += 1
    return lines, end, rows


def ranges(numbers):
    """'3-5,9-9' of line numbers from 0 (as 1-based inclusive ranges)."""
    runs = itertools.groupby(enumerate(sorted(numbers)), lambda pair: pair[1] - pair[0])
    return ",".join(f"{r[0][1] + 1}-{r[-1][1] + 1}" for r in (list(run) for _, run in runs))


def code_html(lines, numbers):
    """The lines (blank ones at the ends dropped), highlighted, with data-lines naming them."""
    kept = [n for n in numbers if lines[n].strip()]
    numbers = [n for n in numbers if kept and kept[0] <= n <= kept[-1]]
    code = "\n".join(lines[n] for n in numbers)
    lexer = PythonLexer(stripnl=False, ensurenl=False)
    body = highlight(code, lexer, HtmlFormatter(nowrap=True)).rstrip("\n") if code else ""
    return (
        f'<div class="code highlight" data-lines="{ranges(numbers)}">'
        f"<pre><code>{body}</code></pre></div>"
    )


def row_html(note, code, kind="row"):
    return f'<div class="lesson-{kind}"><div class="notes">{note}</div>{code}</div>'


def diff_html(rung, lines, end, rows):
    """The diff from the rung below, each change beside the notes of the rows it touches."""
    below = RUNGS[RUNGS.index(rung) - 1]
    old_lines, old_end, _ = lesson(below)
    old, new = old_lines[:old_end], lines[:end]
    owner = {n: k for k, row in enumerate(rows) for n in row["notes"] + row["code"]}
    shown, out = set(), []
    for group in difflib.SequenceMatcher(None, old, new, autojunk=False).get_grouped_opcodes(2):
        text, touched = [], []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                text += [" " + line for line in old[i1:i2]]
                continue
            text += ["-" + line for line in old[i1:i2]] + ["+" + line for line in new[j1:j2]]
            touched += [owner[n] for n in range(j1, j2) if n in owner]
        i1, j1 = group[0][1], group[0][3]
        head = f"@@ {below}.py line {i1 + 1}, {rung}.py line {j1 + 1} @@"
        notes = []
        for k in dict.fromkeys(touched):
            if k not in shown and rows[k]["note"]:
                shown.add(k)
                if lines[rows[k]["notes"][0]].startswith('"""'):  # the page shows it once
                    notes.append("<p>The rung's introduction, the top of the lesson, changed.</p>")
                else:
                    notes.append(note_html(rows[k]["note"]))
        diff = highlight("\n".join([head, *text]), DiffLexer(), HtmlFormatter(nowrap=True))
        code = f'<div class="code highlight diff"><pre><code>{diff}</code></pre></div>'
        out.append(
            row_html("\n".join(notes) or "<p>(The notes of this change are above.)</p>", code)
        )
    return "\n".join(out)


def section(page, heading):
    """The heading that starts with `heading` in `page`, and its section's markdown."""
    lines, fenced, start, level = (ROOT / page).read_text().splitlines(), False, None, 0
    for i, line in enumerate(lines):
        fenced ^= line.startswith("```")
        found = not fenced and re.match(r"(#+) (.*?)\s*$", line)
        if found and start is not None and len(found[1]) <= level:
            break
        if found and start is None and found[2].startswith(heading):
            start, level, title = i + 1, len(found[1]), found[2]
    else:
        if start is None:
            raise ValueError(f"{page} has no heading {heading!r}... (docs/hooks.py's MEASURED)")
        i = len(lines)
    return title, "\n".join(lines[start:i])


def blocks_of(markdown):
    """A section's markdown blocks (paragraphs, figures, tables, fenced code), in order."""
    blocks, current, fenced = [], [], False
    for line in markdown.splitlines():
        if not line.strip() and not fenced:
            current and blocks.append("\n".join(current))
            current = []
            continue
        fenced ^= line.startswith("```")
        current.append(line)
    current and blocks.append("\n".join(current))
    return blocks


def rung_markdown(rung, stash):
    lines, end, rows = lesson(rung)
    blocks = {}  # function name -> the markdown of the sections that measure its idea
    for page, start, name in MEASURED[rung]:
        heading, body = section(page, start)
        body = re.sub(r"^#+ ", "#### ", rebase(body, page, "rungs"), flags=re.M)
        shown, folded = [], []  # the figures and what they show; the tables and commands folded
        for block in blocks_of(body):
            if block.startswith("!["):  # a figure, a link to itself: a phone's reader zooms it
                block = re.sub(r"^(!\[[^\]]*\]\(([^)\s]+)\))$", r"[\1](\2)", block, flags=re.M)
            table_or_code = block.startswith(("|", "```", "#"))
            (folded if table_or_code else shown).append(block)
        number, title = re.match(r"(?:(\d+)\. )?(.*)", heading).groups()
        where = "the lessons" if page == LESSONS else "the results"
        where += f", experiment {number}" if number else ""
        text = f"**Measured** ({where}): [{title}](../{page}#{slug(heading)})\n\n"
        text += "\n\n".join(shown)
        if folded:
            what = " and ".join(
                word
                for word, start in (("the tables", "|"), ("the commands", "```"))
                if any(b.startswith(start) for b in folded)
            )
            text += (
                f'\n\n<details markdown="1"><summary>{(what or "more").capitalize()}</summary>'
                f"\n\n{chr(10).join(chr(10) + b for b in folded)}\n\n</details>"
            )
        blocks.setdefault(name, []).append(text)
    index = RUNGS.index(rung)
    md = ["---\nhide:\n  - toc\n---\n", f"# {index + 1}. {TITLES[rung]}: `{rung}.py`\n"]
    md.append(
        f"The lesson of [`{rung}.py`](../{rung}.py), from its first line down to the divider: "
        "each note on the left is a docstring or a comment of the script, the code on the right "
        "is what it explains. Below the divider the script holds its support code (flags, envs, "
        f"logs, checks), the same in all five scripts: read it in [the file](../{rung}.py).\n"
    )
    md.append("## The lesson\n")
    placed, html_rows = set(), []
    license_line = []  # the license's line alone would open the lesson: it goes with the imports
    for row in rows:
        code = license_line + row["code"]
        if not row["note"] and all("SPDX-License" in lines[n] for n in code if lines[n].strip()):
            license_line = code
            continue
        license_line = []
        note = note_html(row["note"]) if row["note"] else ""
        attrs = f'<div data-notes="{ranges(row["notes"])}"'
        if lines[row["notes"][0]].startswith('"""') if row["notes"] else False:
            # the module's docstring introduces the whole rung: the page's width, no code beside
            # it (its empty code cell is hidden), then the code that follows it in a row of its own
            intro = row_html(note, code_html(lines, [])).replace("lesson-row", "lesson-row intro")
            html_rows.append(stash(intro.replace("<div", attrs, 1)))
            note, attrs = "", '<div data-notes=""'
        row_code = code_html(lines, code)
        html_rows.append(stash(row_html(note, row_code).replace("<div", attrs, 1)))
        code_text = "\n".join(lines[n] for n in code)
        for name, texts in blocks.items():
            if name not in placed and re.search(rf"^\s*def {name}\(", code_text, re.M):
                placed.add(name)
                html_rows += [
                    f'<div class="measured" markdown="1">\n\n{t}\n\n</div>' for t in texts
                ]
    missing = set(blocks) - placed
    if missing:
        raise ValueError(f"{rung}.py has no function {sorted(missing)} (docs/hooks.py's MEASURED)")
    md.append("\n\n".join(html_rows) + "\n")
    md.append("## What this rung adds\n")
    if index == 0:
        md.append("REINFORCE is the first rung: every line above is new.\n")
    else:
        below = RUNGS[index - 1]
        md.append(
            f"The lesson's lines that differ from [`{below}.py`]({below}.md)'s (`diff {below}.py "
            f"{rung}.py` shows the same), each change beside the notes of the code it changed: "
            f"a red line (`-`) is {below}.py's, a green line (`+`) is {rung}.py's, and the lines "
            "around them, unchanged, show where the change sits.\n"
        )
        md.append(stash(diff_html(rung, lines, end, rows)) + "\n")
    md.append("## The exercise\n")
    tree = ast.parse((ROOT / f"exercises/{rung}.py").read_text())
    defs = [(f"{c.name}.", m) for c in tree.body if isinstance(c, ast.ClassDef) for m in c.body]
    defs += [("", node) for node in tree.body]
    blanks = [
        (node.lineno, f"`{owner}{node.name}`")
        for owner, node in defs
        if isinstance(node, ast.FunctionDef) and "NotImplementedError" in ast.dump(node)
    ]
    names = [name for _, name in sorted(blanks)]
    names = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
    md.append(
        f"Write {names} yourself in [`exercises/{rung}.py`](../exercises/{rung}.py). The first "
        "command checks them; the second trains the script with yours in place of its own "
        "([the exercises' guide](../exercises/README.md) says more):\n\n"
        f"```bash\npython exercises/check.py {rung}\npython exercises/{rung}.py\n```\n"
    )
    return "\n".join(md)


# ---- Links, the notebooks, the quick start ----

LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)(\))")


def slug(heading):
    """GitHub's anchor of a heading, as mkdocs.yml's toc makes it."""
    return slugify(case="lower")(re.sub(r"[`*]", "", heading), "-")


def relative(target, here):
    """A link target of a page in folder `here` as a path from the repository root, or None."""
    if re.match(r"[a-z][a-z0-9+.-]*:|//|#", target, re.I):
        return None
    path = (ROOT / here / target.partition("#")[0]).resolve()
    path = path / "README.md" if (path / "README.md").exists() else path  # a folder's page
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else None


def rebase(text, source, there, move=lambda path: path):
    """Markdown of page `source`, its relative links made to work from folder `there` (and
    their targets' paths from the root changed by `move`)."""

    def link(found):
        target = found[2]
        path = source if target.startswith("#") else relative(target, Path(source).parent)
        if path is None or not (ROOT / path).exists():
            return found[0]
        anchor = "#" + target.partition("#")[2] if "#" in target else ""
        return f"{found[1]}{'../' * len(Path(there).parts)}{move(path)}{anchor}{found[3]}"

    return LINK.sub(link, text)


def notebook_markdown(name, stash):
    """A notebook as markdown: its markdown cells (TeX typeset), its code, its saved outputs."""
    out = []
    for cell in json.loads((ROOT / name).read_text())["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            out.append(rebase(tex_markdown(source, stash), name, "notebooks"))
            continue
        out.append(f"```python\n{source}\n```")
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            text = output.get("text") or data.get("text/plain") or output.get("traceback", "")
            html_output = "".join(data.get("text/html", ""))
            if image := data.get("image/png", "").strip():
                out.append(
                    stash(f'<img class="output" alt="" src="data:image/png;base64,{image}">')
                )
            elif html_output and "tensorboard-frame" not in html_output:
                out.append(stash(f'<div class="output">{offline(html_output)}</div>'))
            elif text:
                text = re.sub(r"\x1b\[[0-9;]*m", "", "".join(text))
                out.append(stash(f'<pre class="output">{html.escape(text)}</pre>'))
    return "\n\n".join(out)


ICONS = {"fast-backward": "⏮", "step-backward": "⏪", "play fa-flip-horizontal": "◀", "pause": "⏸"}
ICONS |= {"play": "▶", "step-forward": "⏩", "fast-forward": "⏭", "minus": "−", "plus": "+"}


def offline(output):
    """matplotlib's animation without its web font: the buttons' icons as characters."""
    output = re.sub(r"<link[^>]*font-awesome[^>]*>", "", output)
    return re.sub(r'<i class="fa fa-([^"]+)"></i>', lambda m: ICONS.get(m[1], m[1]), output)


def table_rows(path):
    """The rows of the first markdown table in a file, as dicts by column."""
    rows = [line for line in (ROOT / path).read_text().splitlines() if line.startswith("|")]
    cells = [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]
    return [dict(zip(cells[0], row, strict=True)) for row in cells[2:]]


def quick_start_table():
    """Each rung's default command, what it prints at the end, and how long it takes."""
    tables = ["cartpole_ladder/table.md", "pendulum_vs_sb3/table.md"]
    rows = {row["script"]: row for t in tables for row in table_rows(f"benchmarks/results/{t}")}
    out = ["| command | env | the evaluation's mean return | wall time |", "|---|---|---|---|"]
    for rung in RUNGS:
        row = rows.get(f"{rung}.py")
        if row is None:
            raise ValueError(f"no committed results row for {rung}.py")
        env = "Pendulum-v1" if rung == "ppo_continuous" else "CartPole-v1"
        mean, seconds = row["eval mean"].split()[0], row["wall s"].split()[0]
        out.append(f"| `python {rung}.py` | {env} | {mean} | {seconds} s |")
    return "\n".join(out)


# ---- mkdocs' events ----

STASH = {}  # marker -> HTML, put back after markdown (HTML with blank lines, MathML)


def stash(fragment):
    marker = f"@@STASH{len(STASH)}@@"
    STASH[marker] = fragment
    return marker


def linked(text, here):
    """The repository's files and folders that relative links of markdown in `here` name."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    paths = (relative(match[2], here) for match in LINK.finditer(prose))
    return [path for path in paths if path is not None and (ROOT / path).exists()]


def on_files(files, config):
    STASH.clear()
    made = {f"rungs/{rung}.md": rung_markdown(rung, stash) for rung in RUNGS}
    made |= {page: notebook_markdown(name, stash) for name, page in NOTEBOOKS.items()}
    for page, text in made.items():
        files.append(File.generated(config, page, content=text))
    todo = [(page, (ROOT / page).read_text()) for page in PAGES] + list(made.items())
    todo.append(("quickstart.md", (Path(config.docs_dir) / "quickstart.md").read_text()))
    seen = set(PAGES) | set(made) | set(NOTEBOOKS)
    for page in PAGES:
        files.append(File(page, str(ROOT), config.site_dir, config.use_directory_urls))
    while todo:
        page, text = todo.pop()
        for path in linked(text, Path(page).parent):
            if path in seen:
                continue
            seen.add(path)
            if (ROOT / path).is_dir():
                listing = folder_markdown(path)
                files.append(File.generated(config, f"{path}/index.md", content=listing))
                todo.append((f"{path}/index.md", listing))
                continue
            files.append(File(path, str(ROOT), config.site_dir, config.use_directory_urls))
            if path.endswith(".md"):
                todo.append((path, (ROOT / path).read_text()))
    return files


def folder_markdown(path):
    """A page listing a linked folder's pages, figures and notes (not its raw data)."""
    kept = sorted(p for p in (ROOT / path).rglob("*") if p.suffix in (".md", ".png", ".txt"))
    names = [p.relative_to(ROOT / path).as_posix() for p in kept]
    return f"# `{path}/`\n\n" + "".join(f"- [{name}]({name})\n" for name in names)


def on_page_markdown(markdown, page, config, files):
    """Links to a folder go to its listing, links to a notebook to its page."""

    def move(path):
        return NOTEBOOKS.get(path) or (f"{path}/index.md" if (ROOT / path).is_dir() else path)

    if page.file.src_uri == "quickstart.md":
        markdown = markdown.replace("<!-- the rungs' table -->", quick_start_table())
    here = Path(page.file.src_uri).parent
    return rebase(markdown, page.file.src_uri, here, move)


def on_page_content(content, page, config, files):
    """The stashed HTML back in place of its markers."""
    content = re.sub(r"<p>(@@STASH\d+@@)</p>", lambda m: STASH[m[1]], content)
    return re.sub(r"@@STASH\d+@@", lambda m: STASH[m[0]], content)
