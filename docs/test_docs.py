# SPDX-License-Identifier: MIT
"""Tests of the docs (README.md, docs/, benchmarks/README.md) and the notebook ladder.ipynb.

Run: python -m pytest -q docs/test_docs.py

  1. every relative link resolves (files, and headings by GitHub's anchors), every results
     folder is cited, the results stay small, no link points at a placeholder; ruff format and
     lint;
  2. the notebook ladder.ipynb, run in quick mode and as committed.
"""

import re
import subprocess
import sys

import pytest

from test_all import ROOT, notebook_problems

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
        nb, km=km, timeout=180, resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()  # raises CellExecutionError on the first cell that fails
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
