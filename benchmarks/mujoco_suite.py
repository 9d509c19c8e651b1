# SPDX-License-Identifier: MIT
"""ppo_continuous.py on the nine MuJoCo v5 envs with one recipe, against the best published PPO.

`run` trains each env over seeds with benchmarks/run.py (threshold: the best published figure)
into benchmarks/results/<env in lower case>/, adding to the seeds already there (run.py
--append). `table` (also the end of `run`) reads those folders' raw.json and writes the suite's
table: each seed's final greedy evaluation (10 episodes), their mean ± std over seeds
(CleanRL's format), the best published figure with its source and how that source scores, and
how many seeds are at or above it.

    python benchmarks/mujoco_suite.py run --seeds 1 2 3 4 5 --jobs 2     # hours on 2 cores
    python benchmarks/mujoco_suite.py run --envs Ant-v5 --seeds 1 2 3
    python benchmarks/mujoco_suite.py table
"""

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
RESULTS = HERE / "results"
# The recipe R: the same flags for every env but Swimmer (docs/results.md says why it differs).
# Its learning rate starts at 3e-4 and follows each update's KL instead of decaying to 0.
R = (
    "--num-envs 8 --num-steps 256 --num-minibatches 32 --update-epochs 10 --learning-rate 3e-4 "
    "--gamma 0.99 --gae-lambda 0.95 --log-std-init -0.5 --critic-hidden 256 "
    "--no-anneal-lr --lr-target-kl 0.02"
)
SWIMMER = "--gamma 0.9999 --gae-lambda 0.98 --log-std-init 0"
TIANSHOU = "Tianshou, {}: peak of the test curve averaged over 10 seeds"
ZOO = "rl-zoo, {}, tuned for it: one agent's deterministic policy, ~150k steps of evaluation"
# env id, best published PPO figure at 1M steps, its source and how it scores, flags beside R
SUITE = [
    ("HalfCheetah-v5", 5819, ZOO.format("v3") + " (Tianshou 5784)", ""),
    ("Hopper-v5", 2609, TIANSHOU.format("v3"), ""),
    ("Walker2d-v5", 3589, TIANSHOU.format("v3"), ""),
    ("Ant-v5", 3258, TIANSHOU.format("v3"), ""),
    ("Humanoid-v5", 787, TIANSHOU.format("v3"), ""),
    ("Swimmer-v5", 282, ZOO.format("v3"), SWIMMER),
    ("InvertedPendulum-v5", 1000, TIANSHOU.format("v2"), ""),
    ("InvertedDoublePendulum-v5", 9231, TIANSHOU.format("v2"), ""),
    ("Reacher-v5", -4.1, TIANSHOU.format("v2"), ""),
]


def folder(env_id):
    return RESULTS / env_id.split("-v")[0].lower()


def run(args):
    for env_id, best, _, flags in SUITE:
        if args.envs and env_id not in args.envs:
            continue
        cmd = [sys.executable, str(HERE / "run.py"), "--scripts", "ppo_continuous.py"]
        cmd += ["--env-id", env_id, "--seeds", *map(str, args.seeds), "--threshold", str(best)]
        cmd += ["--total-timesteps", str(args.total_timesteps), "--jobs", str(args.jobs)]
        cmd += ["--extra", f" {R} {flags}".rstrip(), "--out", str(folder(env_id)), "--append"]
        print("+", shlex.join(cmd), flush=True)
        subprocess.run(cmd, check=True, cwd=HERE.parent)
    table()


def evaluations(env_id):
    """{seed: mean of its final greedy evaluation} from the env's raw.json, or None."""
    path = folder(env_id) / "raw.json"
    if not path.exists():
        return None
    raw = json.loads(path.read_text())
    return {r["seed"]: float(np.mean(r["eval_returns"])) for r in raw["runs"] if r["eval_returns"]}


def table():
    decimals = {"Reacher-v5": 2}  # its returns are a few units, the others thousands
    lines = [
        "ppo_continuous.py, 1M steps, recipe R (Swimmer: R + `" + SWIMMER + "`). Ours: each "
        "seed's final greedy evaluation (10 episodes), and their mean ± std over the seeds. "
        "The published figures are not scored the same way: Tianshou's is the peak of a curve "
        "averaged over seeds, ours the policy at the end, so ours is the stricter test.",
        "",
        "| env | seeds | ours, mean ± std | at or above | best published | its source, how it "
        "scores | per seed |",
        "|---|---|---|---|---|---|---|",
    ]
    for env_id, best, source, _ in SUITE:
        evals = evaluations(env_id)
        if not evals:
            lines.append(f"| {env_id} | 0 | not run | | {best} | {source} | |")
            continue
        places = decimals.get(env_id, 0)
        values = np.array([evals[s] for s in sorted(evals)])
        mean = f"{values.mean():.{places}f} ± {values.std():.{places}f}"
        mean = f"**{mean}**" if values.mean() >= best else mean
        per_seed = ", ".join(f"{v:.{places}f}" for v in values)
        link = f"[{env_id}]({folder(env_id).name}/table.md)"
        above = f"{int((values >= best).sum())}/{len(values)}"
        lines.append(
            f"| {link} | {len(values)} | {mean} | {above} | {best} | {source} | {per_seed} |"
        )
    lines += ["", "Bold: the mean over seeds is at or above the best published figure."]
    text = "\n".join(lines) + "\n"
    out = RESULTS / "mujoco_suite.md"
    out.write_text(text)
    print(text + f"wrote {out}")


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="train the suite, then write the table")
    r.add_argument("--envs", nargs="+", help="only these env ids (default: all nine)")
    r.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3, 4, 5])
    r.add_argument("--total-timesteps", type=int, default=1_000_000)
    r.add_argument("--jobs", type=int, default=2, help="runs side by side")
    sub.add_parser("table", help="the table from the results on disk")
    args = p.parse_args(argv)
    known = [env_id for env_id, *_ in SUITE]
    for env_id in getattr(args, "envs", None) or []:
        if env_id not in known:
            p.error(f"--envs: {env_id} is not in the suite ({', '.join(known)})")
    return args


if __name__ == "__main__":
    args = parse_args()
    if args.command == "run":
        run(args)
    else:
        table()
