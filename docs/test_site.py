# SPDX-License-Identifier: MIT
"""The site (mkdocs.yml, docs/hooks.py), built once and read in a real browser.

Run: python -m pytest -n 0 docs/test_site.py

`mkdocs build --strict` writes the site to a temporary folder (a warning fails the build, and
mkdocs checks every link and anchor); then Debian's chromium, headless and driven over the
DevTools protocol, opens every page from that folder (file://, no server) and checks that no
page logs an error to the console or asks for anything outside the folder, that every image
loaded, that no raw TeX shows, that every link leads to a file of the site, and that nothing
overflows sideways at a phone's 390 px; on each rung's page, that the code is the script's own
lines, every line of the lesson shown once (as a note or as code), and that the notes stand
beside their code at 1280 px and above it at 390 px. It keeps screenshots of one rung's page at
both widths in site-shots/ (git-ignored) and prints their paths. Without chromium
(`apt-get install chromium`; .ci/run installs it) the browser tests skip, saying so.
"""

import base64
import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlparse
from urllib.request import urlopen

import pytest
import yaml

from conftest import ROOT

RUNGS = ["reinforce", "vpg", "ppo", "ppo_gae", "ppo_continuous"]
SHOTS = ROOT / "site-shots"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site as `mkdocs build --strict` writes it (.github/workflows/pages.yml runs the same)."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


class Browser:
    """Headless chromium over the DevTools protocol: one tab, its console and its requests."""

    def __init__(self, profile):
        from websockets.sync.client import connect

        self.process = subprocess.Popen(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",  # as root, chromium's own sandbox cannot start
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = Path(profile) / "DevToolsActivePort"
        for _ in range(600):  # a minute for a first start on a busy machine
            if port_file.exists() and len(port_file.read_text().split()) == 2:
                break
            time.sleep(0.1)
        port, path = port_file.read_text().split()
        self.socket = connect(f"ws://127.0.0.1:{port}{path}", max_size=None)
        self.ids = itertools.count(1)
        self.session = None
        self.events = []
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")

    def send(self, method, **params):
        """Run one DevTools command and return its result; events met meanwhile are kept."""
        message = {"id": next(self.ids), "method": method, "params": params}
        if self.session:
            message["sessionId"] = self.session
        self.socket.send(json.dumps(message))
        while True:
            reply = json.loads(self.socket.recv(timeout=60))
            if reply.get("id") == message["id"]:
                assert "error" not in reply, (method, reply["error"])
                return reply["result"]
            if "method" in reply:
                self.events.append(reply)

    def open(self, url, width):
        """Load url at this width; the console's errors and the requests it made on the way."""
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=900,
                  deviceScaleFactor=1, mobile=width < 600)  # fmt: skip
        self.events = []
        self.send("Page.navigate", url=url)
        while not any(e["method"] == "Page.loadEventFired" for e in self.events):
            reply = json.loads(self.socket.recv(timeout=60))
            if "method" in reply:
                self.events.append(reply)
        self.evaluate("new Promise(r => requestAnimationFrame(() => setTimeout(r, 50)))")
        errors = [
            e["params"]
            for e in self.events
            if e["method"] == "Runtime.exceptionThrown"
            or e["method"] == "Runtime.consoleAPICalled"
            and e["params"]["type"] == "error"
            or e["method"] == "Log.entryAdded"
            and e["params"]["entry"]["level"] == "error"
        ]
        requests = [
            e["params"]["request"]["url"]
            for e in self.events
            if e["method"] == "Network.requestWillBeSent"
        ]
        return errors, requests

    def evaluate(self, expression):
        result = self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def screenshot(self, path, most=5000):
        """The page as a PNG, from its top down to `most` pixels."""
        height = min(most, self.evaluate("document.documentElement.scrollHeight"))
        shot = self.send(
            "Page.captureScreenshot",
            format="png",
            captureBeyondViewport=True,
            clip={"x": 0, "y": 0, "width": self.evaluate("innerWidth"), "height": height,
                  "scale": 1},
        )  # fmt: skip
        path.write_bytes(base64.b64decode(shot["data"]))

    def close(self):
        self.socket.close()
        self.process.terminate()
        self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if CHROMIUM is None:
        pytest.skip("no chromium: `apt-get install chromium` (.ci/run installs it)")
    browser = Browser(tmp_path_factory.mktemp("chromium-profile"))
    yield browser
    browser.close()


# What a page tells about itself: its images, its text outside code and math, its links, and
# whether it is wider than the window.
LOOK = """(() => {
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const text = [];
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (!node.parentElement.closest("pre, code, math, script, style")) text.push(node.data);
  }
  return {
    images: [...document.images].map(i => [i.src.slice(0, 80), i.complete && i.naturalWidth]),
    text: text.join(" "),
    links: [...document.querySelectorAll("a[href]")].map(a => a.href),
    wide: document.documentElement.scrollWidth - document.documentElement.clientWidth,
    math: document.querySelectorAll("math").length,
  };
})()"""


def test_every_page_opens_offline_without_errors_raw_tex_broken_links_or_overflow(site, browser):
    pages = sorted(set(site.rglob("*.html")) - {site / "404.html"})  # a server's, absolute links
    assert len(pages) > 20
    problems = []
    for page in pages:
        name = page.relative_to(site).as_posix()
        errors, requests = browser.open(page.as_uri(), 390)
        look = browser.evaluate(LOOK)
        problems += [(name, "console error", e) for e in errors]
        problems += [
            (name, "fetched from outside the site", url)
            for url in requests
            if not url.startswith((site.as_uri(), "data:"))
        ]
        problems += [
            (name, "image did not load", src) for src, width in look["images"] if not width
        ]
        problems += [(name, "raw TeX", s) for s in ("\\frac", "$$", "\\(", "\\text{", "_{")
                     if s in look["text"]]  # fmt: skip
        if look["wide"] > 0:
            problems.append((name, "overflows sideways at 390 px by", look["wide"]))
        for href in look["links"]:
            url = urlparse(href)
            if url.scheme == "file":
                target = Path(unquote(url.path))
                if not target.is_file() or not target.is_relative_to(site):
                    problems.append((name, "link to no file of the site", href))
    assert not problems, "\n".join(map(str, problems))


def script_lines(rung, ranges):
    """The script's lines that data-lines='3-5,9-9' names (1-based, inclusive)."""
    lines = (ROOT / f"{rung}.py").read_text().splitlines()
    numbers = []
    for part in filter(None, ranges.split(",")):
        first, last = map(int, part.split("-"))
        numbers += range(first - 1, last)
    return numbers, [lines[n] for n in numbers]


ROWS = """[...document.querySelectorAll(".lesson-row[data-notes]")].map(row => {
  const notes = row.querySelector(".notes").getBoundingClientRect();
  const code = row.querySelector(".code").getBoundingClientRect();
  return {notes: row.dataset.notes, lines: row.querySelector(".code").dataset.lines,
          code: row.querySelector(".code code").textContent,
          math: row.querySelectorAll("math").length,
          beside: code.left >= notes.right - 1 && code.top < notes.bottom,
          below: code.top >= notes.bottom - 1, noted: notes.height > 0, coded: code.height > 0};
})"""


@pytest.mark.parametrize("rung", RUNGS)
def test_a_rungs_page_shows_the_scripts_own_lines_notes_beside_code_and_stacked_on_a_phone(
    site, browser, rung
):
    page = site / "rungs" / f"{rung}.html"
    lines = (ROOT / f"{rung}.py").read_text().splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith("# ======== End of the lesson"))
    browser.open(page.as_uri(), 1280)
    wide = browser.evaluate(ROWS)
    browser.open(page.as_uri(), 390)
    narrow = browser.evaluate(ROWS)
    assert len(wide) == len(narrow) > 10
    shown = []
    for row, phone in zip(wide, narrow, strict=True):
        numbers, code = script_lines(rung, row["lines"])
        assert row["code"] == "\n".join(code)  # the script's own lines, as they are
        shown += numbers + script_lines(rung, row["notes"])[0]
        if row["noted"] and row["coded"]:
            assert row["beside"] and not phone["beside"] and phone["below"], row
    assert len(shown) == len(set(shown))  # no line twice
    blank = {n for n in range(end) if not lines[n].strip()}
    assert set(shown) | blank == set(range(end))  # and every line of the lesson
    assert sum(row["math"] for row in wide) >= 3  # its equations typeset
    if rung == "ppo":
        SHOTS.mkdir(exist_ok=True)
        for width in (1280, 390):
            browser.open(page.as_uri(), width)
            browser.screenshot(SHOTS / f"ppo-{width}.png")
            print(f"screenshot: {SHOTS / f'ppo-{width}.png'}")


def test_mkdocs_serve_serves_the_site():
    """README's `mkdocs serve`: the site at http://127.0.0.1:PORT, a rung's page among it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    serve = subprocess.Popen(
        [sys.executable, "-m", "mkdocs", "serve", "--dev-addr", f"127.0.0.1:{port}"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
    )
    try:
        for _ in range(600):
            try:
                with urlopen(f"http://127.0.0.1:{port}/rungs/ppo.html", timeout=5) as reply:
                    page = reply.read().decode()
                break
            except OSError:
                assert serve.poll() is None, "mkdocs serve ended"
                time.sleep(0.2)
        assert 'class="lesson-row"' in page and "<math" in page
    finally:
        serve.terminate()
        serve.wait(timeout=30)


def test_the_pages_workflow_runs_the_build_this_file_tests():
    steps = yaml.safe_load((ROOT / ".github/workflows/pages.yml").read_text())["jobs"]["build"]
    runs = [step.get("run", "") for step in steps["steps"]]
    assert "python -m pip install -r docs/requirements.txt" in runs
    assert "mkdocs build --strict --site-dir site" in runs
    assert "-r docs/requirements.txt" in (ROOT / "requirements-dev.txt").read_text()
