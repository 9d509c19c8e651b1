# SPDX-License-Identifier: MIT
"""Tests of the docs (README.md, docs/, benchmarks/README.md) and the notebook ladder.ipynb.

Run: python -m pytest -q docs/test_docs.py

  1. every relative link resolves (files, and headings by GitHub's anchors), every results
     folder is cited, the results stay small, no link points at a placeholder; ruff format and
     lint;
  2. the notebook ladder.ipynb, run in quick mode and as committed;
  3. what README promises: each figure of its results table is the one in docs/results.md and
     in the committed table, each row's flags those its runs were given; README at most 300
     lines, docs/results.md 500; `pip install -e .` makes the scripts, long_runs and envs
     importable, and packages nothing else.
"""

import ast
import importlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import zipfile

import pytest

from conftest import HANG, ROOT, notebook_problems

# ----------------------------------------------------------------------------------------------
# 1. The docs: every relative link resolves, every results folder is cited; format and lint
# ----------------------------------------------------------------------------------------------


RESULTS = ROOT / "benchmarks" / "results"


def docs_pages():
    """The pages a visitor reads: README.md, docs/*.md, benchmarks/README.md, and the notes kept
    beside the results (benchmarks/results/**/*.md)."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return pages + [ROOT / "benchmarks" / "README.md", *sorted(RESULTS.rglob("*.md"))]


def prose(text):
    """The markdown outside fenced code blocks, with inline code spans emptied."""
    text = re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", text, flags=re.S | re.M)
    return re.sub(r"(`+)(?:(?!\1).)+?\1", "``", text)


def github_slug(heading):
    """The anchor GitHub gives a heading: its text as rendered (code marks, emphasis and link
    syntax gone), lower-cased, every character that is not a letter, digit, '_', '-' or space
    dropped, and each space made a '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[`*]", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path):
    """The anchors of a markdown file's headings, with GitHub's -1, -2 for repeated ones."""
    seen, found = {}, set()
    text = re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", path.read_text(), flags=re.S | re.M)
    for match in re.finditer(r"^#{1,6}\s+(.*?)\s*#*\s*$", text, flags=re.M):
        slug = github_slug(match.group(1))
        found.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return found


def broken_links(page):
    """(target, why) for each relative link of a markdown page that does not resolve."""
    broken, checked = [], 0
    for target in re.findall(
        r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", prose(page.read_text())
    ):
        if re.match(r"[a-z][a-z0-9+.-]*:|//", target, flags=re.I):
            continue  # https:, mailto: ...: not relative
        checked += 1
        file, _, anchor = target.partition("#")
        path = (page.parent / file).resolve() if file else page
        if not path.exists():
            broken.append((target, "no such file"))
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append((target, f"no heading with anchor #{anchor} in {path.name}"))
    return broken, checked


def test_github_slugs_and_the_link_check_on_a_hand_made_page(tmp_path):
    # Headings of this repository's pages, with the anchors GitHub gave them
    assert github_slug("Scaling up: CartPole in torch, and when `--cuda` helps") == (
        "scaling-up-cartpole-in-torch-and-when---cuda-helps"
    )
    assert github_slug("ppo_gae.py against Stable-Baselines3 on CartPole-v1 (SB3: 1-5)") == (
        "ppo_gaepy-against-stable-baselines3-on-cartpole-v1-sb3-1-5"
    )
    assert github_slug("Why CartPoleTorch lives in benchmarks/") == (
        "why-cartpoletorch-lives-in-benchmarks"
    )
    assert github_slug("Greedy eval: 7358 ± 1809, **bold** [a link](x.md)") == (
        "greedy-eval-7358--1809-bold-a-link"
    )
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "there.md").write_text("# Two words\n\n## Two words\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Top\n\n[ok](sub/there.md#two-words) [ok](sub/there.md#two-words-1) [ok](#top)\n"
        "[web](https://example.com/x) ![img](sub/there.md)\n"
        "[gone](sub/gone.md) [bad anchor](sub/there.md#three-words) [bad](#bottom)\n"
        "`[in code](nowhere.md)`\n```bash\n[in a block](nowhere.md)\n```\n"
    )
    broken, checked = broken_links(page)
    assert checked == 7  # the web link and the two in code are not relative links to check
    assert [target for target, _ in broken] == [
        "sub/gone.md",
        "sub/there.md#three-words",
        "#bottom",
    ]


def test_every_relative_link_of_the_docs_resolves():
    total, broken = 0, []
    for page in docs_pages():
        found, checked = broken_links(page)
        total += checked
        broken += [(str(page.relative_to(ROOT)), *item) for item in found]
    assert not broken, broken
    assert total > 100  # the pages do link to their tables, plots and sections


def test_results_stay_within_36_folders_and_60_mb():
    """benchmarks/results/ keeps the tables the docs cite; finished tries live in git history."""
    results = ROOT / "benchmarks" / "results"
    folders = [path for path in results.iterdir() if path.is_dir()]
    size = sum(path.stat().st_size for path in results.rglob("*") if path.is_file())
    assert len(folders) <= 36 and size <= 60e6, (len(folders), size)


def test_every_results_folder_is_cited_and_every_cited_one_exists():
    text = "\n".join(
        page.read_text()
        for page in [
            ROOT / "README.md",
            *(ROOT / "docs").glob("*.md"),
            ROOT / "benchmarks" / "README.md",
        ]
    )
    name = r"([a-z0-9_.-]*[a-z0-9_])"  # a folder's name; NAME in a command is a placeholder
    cited = set(re.findall(r"\bbenchmarks/results/" + name, text))
    cited |= set(re.findall(r"(?<![\w/])results/" + name, text))  # benchmarks/README's own
    kept = {entry.name for entry in RESULTS.iterdir()}
    assert not cited - kept, f"cited, not in benchmarks/results: {sorted(cited - kept)}"
    assert not kept - cited, f"in benchmarks/results, cited nowhere: {sorted(kept - cited)}"


@pytest.mark.parametrize("argv", [("format", "--check", "."), ("check", ".")])
def test_ruff_format_and_lint_pass(argv):
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *argv], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_no_test_file_imports_another_and_conftest_holds_what_they_share():
    # A newcomer opens one test file and finds its helpers there or in conftest.py, which pytest
    # loads first; importing another test file would run its module-level set-up too.
    files = [ROOT / "test_all.py", *sorted(ROOT.glob("*/test_*.py"))]
    files = [path for path in files if path.parent.name != "site"]  # a built site's copies
    assert len(files) == 5
    for path in files:
        tree = ast.parse(path.read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not [name for name in names if name.split(".")[-1].startswith("test_")], path
        assert "conftest" in names, path


def test_no_link_points_at_a_placeholder():
    """The Colab badges pointed at github.com/OWNER/REPO: no page or notebook may lead nowhere."""
    pages = [ROOT / "README.md", *ROOT.glob("*.ipynb"), *ROOT.glob("*/*.md")]
    for path in pages:
        text = path.read_text()
        assert not re.search(r"OWNER/REPO|github\.com/(owner|user|USERNAME|OWNER)/", text), path


# ----------------------------------------------------------------------------------------------
# 2. The notebook ladder.ipynb
# ----------------------------------------------------------------------------------------------


NOTEBOOK = ROOT / "ladder.ipynb"


def test_notebook_runs_top_to_bottom_in_quick_mode_without_errors(monkeypatch):
    """What CI runs: a fresh kernel of this interpreter, NOTEBOOK_QUICK=1, within 3 minutes."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from jupyter_client.manager import KernelManager

    class ThisInterpreter(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
            return KernelSpec(argv=argv, display_name="this", language="python")

    monkeypatch.setenv("NOTEBOOK_QUICK", "1")  # the kernel inherits the environment
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:  # start from nothing, whatever the committed file holds
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    km = KernelManager(kernel_spec_manager=ThisInterpreter(), kernel_name="python3")
    client = nbclient.NotebookClient(
        nb, km=km, timeout=HANG, resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    with client.setup_kernel():  # client.execute(), and then one cell run again
        for index, cell in enumerate(nb.cells):  # raises CellExecutionError on a failing cell
            client.execute_cell(cell, index)
        assert notebook_problems(nb) == []
        # A student runs a training cell again (its folder holds a run: the script refuses it)
        (again,) = [k for k, cell in enumerate(nb.cells) if "cartpole = train(" in cell.source]
        client.execute_cell(nb.cells[again], again)
    assert notebook_problems(nb) == []
    assert "Quick mode" in nb.cells[1].outputs[0].text


def test_committed_notebook_was_one_full_run_top_to_bottom():
    """ladder.ipynb as committed: every code cell run once, in order, in one kernel (counts 1, 2,
    3, ...), not in quick mode, with no error output, and its pictures."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
    assert notebook_problems(nb) == []
    assert nb.cells[1].outputs[0].text.startswith("Full run.")
    outputs = [output for cell in code for output in cell.outputs]
    assert sum("image/png" in output.get("data", {}) for output in outputs) >= 3
    for cell in code:  # each output's count, where it has one, is its cell's
        for output in cell.outputs:
            assert output.get("execution_count", cell.execution_count) == cell.execution_count


# ----------------------------------------------------------------------------------------------
# 3. What README promises: its results against docs/results.md and the committed tables; its
#    length; `pip install -e .`
# ----------------------------------------------------------------------------------------------


RESULTS_MD = ROOT / "docs" / "results.md"


def cells(line):
    """A markdown table row's cells, stripped (a cell's `\\|` is no border)."""
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def plain(text):
    """Text as figures are compared: link targets, bold and thousands commas gone."""
    text = re.sub(r"\]\([^)]*\)", "]", text).replace("**", "")
    return re.sub(r"\s+", " ", re.sub(r"(?<=\d),(?=\d{3})", "", text))


def has(text, figure):
    """Whether the figure stands whole in the text: 7.2 is not in 17.25."""
    return re.search(rf"(?<![\w.]){re.escape(plain(figure))}(?!\w|\.\d)", plain(text)) is not None


def numbers(text):
    """The numbers of a text as written there: '0.55x' gives 0.55, 'v3' and '1M' none."""
    return set(re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?(?=x?(?!\w))", plain(text)))


def sections(path):
    """[(line, level, anchor)] of a markdown file's headings, outside fenced code."""
    found, fenced = [], False
    for number, line in enumerate(path.read_text().splitlines()):
        fenced ^= line.startswith("```")
        heading = re.match(r"(#{1,6})\s+(.*?)\s*$", line)
        if heading and not fenced:
            found.append((number, len(heading.group(1)), github_slug(heading.group(2))))
    return found


def section(path, anchor, level=None):
    """The lines under the heading with that anchor, to the next heading of its level or above;
    level 2: from the level-2 heading it falls under, to the next one."""
    lines, heads = path.read_text().splitlines(), sections(path)
    (start,) = [k for k, (_, _, slug) in enumerate(heads) if slug == anchor]
    if level is not None:
        start = max(k for k in range(start + 1) if heads[k][1] <= level)
    top = heads[start][1]
    end = next((line for line, deep, _ in heads[start + 1 :] if deep <= top), len(lines))
    return lines[heads[start][0] : end]


def rows(lines):
    """A table's rows, as cells: its header first, its separator left out."""
    return [cells(line) for line in lines if line.startswith("|") and "---|" not in line]


def committed_tables(lines):
    """The committed table.md of every benchmarks/results folder that the lines link to."""
    found = []
    for target in re.findall(r"\]\(([^)#\s]+)", "\n".join(lines)):
        path = (RESULTS_MD.parent / target).resolve()
        table = path if path.name == "table.md" else path.parent / "table.md"
        if RESULTS in table.parents and table.exists() and table not in found:
            found.append(table)
    return found


def script_flags(cmd):
    """(script, its flags) of a command that raw.json keeps; env, seed and run dir left out."""
    argv = shlex.split(cmd) if isinstance(cmd, str) else list(cmd)
    start = next(k for k, arg in enumerate(argv) if arg.endswith(".py")) + 1
    flags, k = [], start
    while k < len(argv):
        skip = argv[k] in ("--env-id", "--seed", "--run-dir")
        flags += [] if skip else [argv[k]]
        k += 2 if skip else 1
    return argv[start - 1].removesuffix(".py"), tuple(flags)


def readme_results():
    """README's results table: [{column: cell}], and the flags **R** stands for."""
    text = (ROOT / "README.md").read_text().split("\n## Results\n")[1].split("\n## ")[0]
    table = rows(re.search(r"^\|.*?(?=\n\n)", text, flags=re.M | re.S).group(0).splitlines())
    recipe = re.search(r"^\*\*R\*\*[^`]*`([^`]+)`", text, flags=re.M)
    return [dict(zip(table[0], row, strict=True)) for row in table[1:]], recipe and recipe.group(1)


def result_problems(row, recipe):
    """What in one README results row is not what docs/results.md and the committed table hold."""
    where = re.search(r"\]\(docs/results\.md#([^)]+)\)", row["env (threshold)"])
    if where is None:
        return ["links no section of docs/results.md"]
    anchor, problems = where.group(1), []
    whole = section(RESULTS_MD, anchor, level=2)
    solved = row["solved"]
    steps, _, seconds = row["steps · seconds to threshold"].partition(" · ")
    figures = [row["greedy eval, mean ± std"], row["IQM [95% CI]"]]
    figures = [figure for figure in figures if figure != "—"]
    matched = [cells for cells in rows(whole) if all(has(" | ".join(cells), f) for f in figures)]
    if figures and not matched:
        problems.append(f"{figures} are in no row of docs/results.md#{anchor}'s tables")
    tables = committed_tables(section(RESULTS_MD, anchor))
    tables += [t for cells in matched for t in committed_tables(cells) if t not in tables]
    sources = "\n".join(whole) + "".join(table.read_text() for table in tables)
    missing = numbers(row["against its peer"]) - numbers(sources)
    if missing:
        problems.append(f"its peer's figures {sorted(missing)} are not in #{anchor}")
    if solved == "—":
        return problems
    found = []  # (table, its label): the committed rows with the same solved, steps, seconds
    for table in tables:
        header, *data = rows(table.read_text().splitlines())
        column = {name: k for k, name in enumerate(header)}
        if not {"solved", "steps to thr.", "seconds to thr."} <= set(column):
            continue  # a table of speeds, say
        for line in data:
            same = line[column["solved"]] == solved
            same &= plain(line[column["steps to thr."]]).split(" (")[0] == plain(steps)
            if seconds:
                same &= line[column["seconds to thr."]].split(" (")[0] == seconds.removesuffix(" s")
            found += [(table, line[0])] if same else []
    if not found:
        return problems + [f"{solved}, {steps} {seconds} are in no committed table of #{anchor}"]
    table, label = found[0]
    threshold = re.findall(r"\((-?[\d.]+)\)", plain(row["env (threshold)"]))
    if not threshold or not has(table.read_text().splitlines()[0], f"threshold {threshold[-1]}"):
        problems.append(f"its threshold is not {table.relative_to(ROOT)}'s")
    named = re.sub(r"^R\b", f"`{recipe}`", row["flags beyond the defaults"])
    named = " ".join(span for span in re.findall(r"`([^`]*)`", named) if span.startswith("--"))
    raw = json.loads((table.parent / "raw.json").read_text())
    ran = {script_flags(run["cmd"]) for run in raw["runs"] if run["script"] == label}
    if not ran:
        problems.append(f"no run of {table.parent.relative_to(ROOT)}/raw.json is {label}'s")
    for script, flags in ran:
        parse = importlib.import_module(script).parse_args
        if vars(parse(shlex.split(named))) != vars(parse(list(flags))):
            problems.append(f"names the flags `{named}`; its runs had `{shlex.join(flags)}`")
        if not row["script"].startswith(f"{script}.py"):
            problems.append(f"names the script {row['script']}; its runs ran {script}.py")
    return problems


def test_every_figure_of_readmes_results_is_the_one_measured_with_the_flags_it_ran_with():
    """Each README results row links its section of docs/results.md: its greedy evaluation and
    IQM stand in one row of that section's tables, its solve rate, steps, seconds and threshold
    in the committed table.md the section links, every number against its peer in the section,
    and its flags, R spelled out, parse as those of its runs in raw.json."""
    results, recipe = readme_results()
    assert "flags beyond the defaults" in results[0], list(results[0])
    assert recipe and "--lr-target-kl" in recipe  # README says which flags R stands for
    problems = [
        f"{row['env (threshold)'].split('](')[0]}] {row['script']}: {problem}"
        for row in results
        for problem in result_problems(row, recipe)
    ]
    assert problems == [], "\n".join(problems)
    assert len(results) >= 20


def test_the_results_check_finds_a_wrong_figure_flag_and_peer():
    results, recipe = readme_results()
    (acrobot,) = [
        row
        for row in results
        if "tune.py" not in row["flags beyond the defaults"]
        and row["env (threshold)"].startswith("[Acrobot-v1]")
    ]
    assert result_problems(acrobot, recipe) == []
    slower = dict(acrobot, **{"steps · seconds to threshold": "26,744 · 4.4 s"})
    assert result_problems(slower, recipe) == [
        "10/10, 26,744 4.4 s are in no committed table of #acrobot-v1"
    ]
    defaults = dict(acrobot, **{"flags beyond the defaults": "`--total-timesteps 100000`"})
    assert result_problems(defaults, recipe) == [
        "names the flags `--total-timesteps 100000`;"
        " its runs had `--total-timesteps 100000 --ent-coef 0.01`"
    ]
    peer = dict(acrobot, **{"against its peer": "0.49x the steps of the defaults"})
    assert result_problems(peer, recipe) == ["its peer's figures ['0.49'] are not in #acrobot-v1"]


@pytest.mark.parametrize("page, most", [("README.md", 300), ("docs/results.md", 500)])
def test_readme_and_results_md_stay_within_their_lengths(page, most):
    """README is the front page; the detail is in docs/ (results.md: every table, in 500 lines)."""
    lines = (ROOT / page).read_text().count("\n")
    assert lines <= most, f"{page} has {lines} lines, more than {most}: move detail to docs/"


def test_pip_install_e_makes_the_scripts_long_runs_and_envs_importable_and_nothing_else(tmp_path):
    """`pip install -e .` on a copy of the repository as a clone has it (benchmarks/results left
    out), offline: this environment's setuptools builds it (--no-build-isolation), without the
    dependencies (--no-deps: requirements.txt's, already here), into a prefix of its own. From
    another folder the scripts, long_runs and envs then import from the copy, and nothing else
    of it does; its wheel holds those files alone, and requires requirements.txt's pins."""
    pytest.importorskip("setuptools", minversion="77")  # pyproject.toml's build-system needs it
    clone, prefix = tmp_path / "clone", tmp_path / "prefix"
    skip = (
        ".git",
        ".venv",
        "venv",
        "runs",
        "results",
        "wandb",
        "videos",
        "__pycache__",
        ".*_cache",
    )
    shutil.copytree(ROOT, clone, ignore=shutil.ignore_patterns(*skip, "*.egg-info", "build"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    offline = ["--no-deps", "--no-build-isolation", "--no-index"]
    done = subprocess.run(
        [*pip, "install", *offline, "--prefix", str(prefix), "-e", str(clone)],
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    modules = ["reinforce", "vpg", "ppo", "ppo_gae", "ppo_continuous", "long_runs"]
    others = ["exercises", "benchmarks", "docs", "test_all", "cases", "check", "make"]
    site_packages = sysconfig.get_path("purelib", vars={"base": str(prefix)})
    probe = "\n".join(
        [
            "import importlib.util, site",
            f"site.addsitedir({site_packages!r})",
            f"import {', '.join(modules)}, envs.line_world, envs.cartpole_torch",
            f"for module in [{', '.join(modules)}, envs.line_world]:",
            "    print(module.__file__)",
            f"print([name for name in {others!r} if importlib.util.find_spec(name)])",
        ]
    )
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    ran = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    files = [str(clone / f"{name}.py") for name in modules] + [
        str(clone / "envs" / "line_world.py")
    ]
    assert ran.stdout.splitlines() == [*files, "[]"]
    done = subprocess.run(
        [*pip, "wheel", *offline, "--wheel-dir", str(tmp_path / "wheel"), str(clone)],
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = (tmp_path / "wheel").glob("minimal_policy_gradients-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    envs = [f"envs/{path.name}" for path in (clone / "envs").glob("*.py")]
    assert sorted(n for n in names if ".dist-info/" not in n) == sorted(
        [f"{name}.py" for name in modules] + envs
    )
    (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
    requires = re.findall(
        r"^Requires-Dist: (.+)$", zipfile.ZipFile(wheel).read(metadata).decode(), re.M
    )
    pins = [
        line.split("#")[0].strip() for line in (ROOT / "requirements.txt").read_text().splitlines()
    ]
    assert requires == [pin for pin in pins if pin]
