# SPDX-License-Identifier: MIT
"""ppo_continuous.py on the nine MuJoCo v5 envs with one recipe, against the best published PPO.

`run` trains each env over seeds with benchmarks/run.py (threshold: the best published figure)
into benchmarks/results/<env in lower case>/, adding to the seeds already there (run.py
--append). `table` (also the end of `run`) reads those folders' raw.json and writes the suite's
table: each seed's final greedy evaluation (10 episodes), their mean ± std over seeds
(CleanRL's format) and their interquartile mean with its 95% bootstrap interval (benchmarks/iqm.py,
rliable), the best published figure with its source and how that source scores, and
how many seeds are at or above it. An idea is tried against R with --extra (flags after R's,
so they win) or --script (a copy of the script), into a folder of its own (--results):

    python benchmarks/mujoco_suite.py run --seeds 1 2 3 4 5 --jobs 2     # hours on 2 cores
    python benchmarks/mujoco_suite.py run --envs Ant-v5 --seeds 1 2 3
    python benchmarks/mujoco_suite.py table          # the IQM's interval: ~10 s per env
    python benchmarks/mujoco_suite.py run --envs Ant-v5 HalfCheetah-v5 Humanoid-v5 --seeds 1 2 3 \
        --extra "--lr-target-kl 0.01" --results benchmarks/results/kl001
"""

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.resolve()))
import iqm  # noqa: E402  (benchmarks/iqm.py, run as a script or imported from the repository)

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


def folder(env_id, results=None):
    return Path(results or RESULTS) / env_id.split("-v")[0].lower()


def run(args):
    for env_id, best, _, flags in SUITE:
        if args.envs and env_id not in args.envs:
            continue
        cmd = [sys.executable, str(HERE / "run.py"), "--scripts", args.script]
        cmd += ["--env-id", env_id, "--seeds", *map(str, args.seeds), "--threshold", str(best)]
        cmd += ["--total-timesteps", str(args.total_timesteps), "--jobs", str(args.jobs)]
        cmd += ["--extra", " " + " ".join(f"{R} {flags} {args.extra}".split())]  # " --": a value
        cmd += ["--out", str(folder(env_id, args.results)), "--append"]
        print("+", shlex.join(cmd), flush=True)
        subprocess.run(cmd, check=True, cwd=HERE.parent)
    table(args.results, args.reps)


def read(env_id, results=None):
    """The env's raw.json as benchmarks/run.py wrote it, or None."""
    path = folder(env_id, results) / "raw.json"
    return json.loads(path.read_text()) if path.exists() else None


def evaluations(raw):
    """{seed: mean of its final greedy evaluation}."""
    return {r["seed"]: float(np.mean(r["eval_returns"])) for r in raw["runs"] if r["eval_returns"]}


def recipe(raws):
    """What the runs were: R, or R plus the flags (and the script) that differ from it."""
    made = []
    for raw in raws:
        flags = " ".join(raw.get("extra", R).split()).replace(SWIMMER, "").strip()
        beside = flags.replace(R, "").strip()
        steps = raw.get("total_timesteps") or 1_000_000
        steps = "1M" if steps == 1_000_000 else f"{steps:,}"
        what = f"{Path((raw.get('scripts') or ['ppo_continuous.py'])[0]).name}, {steps} steps, "
        if R not in flags:  # runs made before R was what it is now
            what += f"flags `{flags}`"
        else:
            what += "recipe R" + (f" + `{beside}`" if beside else "")
        made += [what] if what not in made else []
    return "; ".join(made) or "ppo_continuous.py, 1M steps, recipe R"


def table(results=None, reps=iqm.REPS):
    decimals = {"Reacher-v5": 2}  # its returns are a few units, the others thousands
    raws = {env_id: read(env_id, results) for env_id, *_ in SUITE}
    lines = [
        recipe([raw for raw in raws.values() if raw]) + " (Swimmer: R + `" + SWIMMER + "`). "
        "Ours: each seed's final greedy evaluation (10 episodes), their mean ± std over the "
        "seeds, and their interquartile mean (IQM) with its 95% stratified-bootstrap interval "
        "(`benchmarks/iqm.py`; 5 seeds are few, so the interval is wide). The published figures "
        "are not scored the same way: Tianshou's is the peak of a curve averaged over seeds, "
        "ours the policy at the end, so ours is the stricter test.",
        "",
        "| env | seeds | ours, mean ± std | IQM [95% CI] | at or above | best published | its "
        "source, how it scores | per seed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for env_id, best, source, _ in SUITE:
        evals = evaluations(raws[env_id]) if raws[env_id] else None
        if not evals:
            lines.append(f"| {env_id} | 0 | not run | | | {best} | {source} | |")
            continue
        places = decimals.get(env_id, 0)
        values = np.array([evals[s] for s in sorted(evals)])
        mean, interval = iqm.spread(values, reps, decimals=places)
        mean = f"**{mean}**" if values.mean() >= best else mean
        per_seed = ", ".join(f"{v:.{places}f}" for v in values)
        link = f"[{env_id}]({folder(env_id).name}/table.md)"
        above = f"{int((values >= best).sum())}/{len(values)}"
        lines.append(
            f"| {link} | {len(values)} | {mean} | {interval} | {above} | {best} | {source} "
            f"| {per_seed} |"
        )
    lines += ["", "Bold: the mean over seeds is at or above the best published figure."]
    text = "\n".join(lines) + "\n"
    out = Path(results or RESULTS) / "mujoco_suite.md"
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
    r.add_argument("--script", default="ppo_continuous.py", help="the script, or a copy of it")
    r.add_argument("--extra", default="", help="flags after R's (and Swimmer's): an idea to try")
    for command in (r, sub.add_parser("table", help="the table from the results on disk")):
        command.add_argument("--results", default=str(RESULTS), help="the envs' folders are here")
        command.add_argument("--reps", type=int, default=iqm.REPS, help="bootstrap resamples")
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
        table(args.results, args.reps)
