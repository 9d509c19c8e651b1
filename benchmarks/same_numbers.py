# SPDX-License-Identifier: MIT
"""Same numbers: the same flags and seed give the same returns in two checkouts of the repo.

A change that only moves code (as the reshaping of issue 59 did) must leave what the agent
learns alone. This runs each script at its defaults and on its other code paths (minibatches,
the entropy bonus, value clipping, target KL, normalization, checkpoints) in a checkout, on the
CPU, and keeps every training episode's return and the evaluation's; --compare then says, for
each run, whether two checkouts gave the same numbers.

    git worktree add /tmp/before HEAD~1
    python benchmarks/same_numbers.py --checkout /tmp/before --out before.json
    python benchmarks/same_numbers.py --checkout . --out after.json
    python benchmarks/same_numbers.py --compare before.json after.json --table table.md
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHORT = ["--total-timesteps", "30000"]
RUNS = {  # script: the flag sets, each a code path; [] is the script's defaults
    "reinforce.py": [[], ["--no-normalize-returns", *SHORT]],
    "vpg.py": [[], ["--train-pi-iters", "3", "--no-bootstrap-truncation", *SHORT]],
    "ppo.py": [[], ["--clip-coef", "1e9", "--train-v-iters", "5", *SHORT]],
    "ppo_gae.py": [
        [],
        ["--num-minibatches", "4", "--ent-coef", "0.01", "--anneal-ent", "--clip-vloss", *SHORT],
        ["--target-kl", "0.01", "--no-anneal-lr", "--no-normalize-advantages", *SHORT],
        ["--checkpoint-every", "4096", *SHORT],
    ],
    "ppo_continuous.py": [
        [],
        ["--clip-vloss", "--ent-coef", "0.01", "--critic-hidden", "32", *SHORT],
        ["--target-kl", "0.02", "--lr-target-kl", "0.01", "--no-anneal-lr", *SHORT],
        ["--log-std-init", "-0.5", "--no-normalize-advantages", "--num-minibatches", "4", *SHORT],
        ["--checkpoint-every", "4096", *SHORT],
    ],
}

# Run in the checkout: train(parse_args(argv)), then the returns as JSON on the last line.
CHILD = """
import json, sys
sys.path.insert(0, ".")
module = __import__(sys.argv[1])
result = module.train(module.parse_args(sys.argv[2:]))
episodes = [[int(step), float(ret)] for step, ret in result["episode_returns"]]
print(json.dumps(dict(episodes=episodes, eval=[float(r) for r in result["eval_returns"]])))
"""


def measure(checkout):
    """Every run of RUNS in `checkout`: {"script flags": {"episodes", "eval", "seconds"}}."""
    results = {}
    for script, flag_sets in RUNS.items():
        for flags in flag_sets:
            with tempfile.TemporaryDirectory() as run_dir:
                argv = [Path(script).stem, *flags, "--run-dir", run_dir]
                start = time.time()
                out = subprocess.run(
                    [sys.executable, "-c", CHILD, *argv],
                    cwd=checkout,
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
            key = " ".join([script, *flags])
            results[key] = json.loads(out.strip().splitlines()[-1])
            results[key]["seconds"] = round(time.time() - start, 1)
            print(f"{key}: {len(results[key]['episodes'])} episodes, {results[key]['seconds']} s")
    return results


def compare(before, after):
    """A markdown table: per run, episodes and their last return, the evaluation, same or not."""
    rows = ["| run | episodes | last return | evaluation mean | same returns |"]
    rows.append("|---|---|---|---|---|")
    for key, old in before.items():
        new = after.get(key)
        same = new is not None and (old["episodes"], old["eval"]) == (new["episodes"], new["eval"])
        mean = sum(old["eval"]) / max(1, len(old["eval"]))
        last = old["episodes"][-1][1] if old["episodes"] else float("nan")
        rows.append(f"| `{key}` | {len(old['episodes'])} | {last:.1f} | {mean:.1f} | {same} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkout", default=".", help="the repository to run the scripts of")
    parser.add_argument("--out", help="JSON file for the returns")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="two --out files")
    parser.add_argument("--table", help="with --compare: the markdown table to this file too")
    args = parser.parse_args()
    if args.compare:
        before, after = (json.loads(Path(path).read_text()) for path in args.compare)
        table = compare(before, after)
        print(table)
        if args.table:
            Path(args.table).write_text(table)
        sys.exit(0 if "| False |" not in table else 1)
    Path(args.out).write_text(json.dumps(measure(args.checkout), indent=1))
