# SPDX-License-Identifier: MIT
"""The course's line-world experiment: how often the trained greedy policy ends on the target.

The course trained once each: plain returns (REINFORCE) reached the target in 51% of episodes, a
value baseline (VPG) in 100%, the baseline at 4x the learning rate in 12%, and PPO at that 4x
rate in 100%. This redoes it over many seeds with each script's own train() (imported, with its
own flags), then plays the greedy policy (argmax of the logits) for --episodes episodes on reset
seeds that no training used, the same for every run, and counts info["is_success"] at the end
(the agent stands on the target after 20 steps).

    python benchmarks/line_world.py --out benchmarks/results/line_world --jobs 2
    python benchmarks/line_world.py --out benchmarks/results/line_world --replot
"""

import argparse
import contextlib
import io
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ENV_ID = "envs.line_world:LineWorld-v0"
EVAL_SEED = 1_000_000  # the evaluation's reset seeds: EVAL_SEED + episode, never used in training
# (label, script, flags, the course's figure from its one run: % of episodes at the target).
# The course's rates are unknown: two pairs, VPG's default 1e-2 and 2.5e-2, each also at 4x.
RUNS = [
    ("reinforce.py, plain returns", "reinforce", "--no-normalize-returns", 51),
    ("vpg.py, lr 1e-2", "vpg", "--learning-rate 1e-2", 100),
    ("vpg.py, lr 4e-2 (4x)", "vpg", "--learning-rate 4e-2", 12),
    ("ppo.py, lr 4e-2 (4x)", "ppo", "--learning-rate 4e-2", 100),
    ("vpg.py, lr 2.5e-2", "vpg", "--learning-rate 2.5e-2", 100),
    ("vpg.py, lr 1e-1 (4x)", "vpg", "--learning-rate 1e-1", 12),
    ("ppo.py, lr 1e-1 (4x)", "ppo", "--learning-rate 1e-1", 100),
    ("ppo_gae.py", "ppo_gae", "", None),
]


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--seeds", nargs="+", type=int, default=list(range(1, 11)))
    p.add_argument("--total-timesteps", type=int, default=100_000, help="env steps per run")
    p.add_argument("--episodes", type=int, default=100, help="greedy evaluation episodes per run")
    p.add_argument("--jobs", type=int, default=1, help="runs at a time, each in a process")
    p.add_argument("--out", required=True, help="folder for raw.json, table.md, success.png")
    p.add_argument("--replot", action="store_true", help="redo table and figure from raw.json")
    return p.parse_args(argv)


def greedy_successes(module, agent, episodes):
    """info["is_success"] at the end of each of `episodes` greedy episodes (seeds EVAL_SEED+i)."""
    env = module.make_eval_env(ENV_ID)  # the script's own evaluation env: gym.make, 20 steps
    successes = []
    for episode in range(episodes):
        obs, info = env.reset(seed=EVAL_SEED + episode)
        done = False
        while not done:
            with torch.no_grad():
                logits = agent.actor(torch.as_tensor(obs, dtype=torch.float32))
            obs, _, terminated, truncated, info = env.step(logits.argmax().item())
            done = terminated or truncated
        successes.append(bool(info["is_success"]))
    env.close()
    return successes


def one_run(label, script, flags, seed, total_timesteps, episodes):
    """Train `script` with its own train() on one seed; its greedy successes."""
    import importlib

    import envs.line_world  # noqa: F401  (registers LineWorld-v0)

    module = importlib.import_module(script)
    t0 = time.time()
    with tempfile.TemporaryDirectory() as run_dir, contextlib.redirect_stdout(io.StringIO()):
        argv = ["--env-id", ENV_ID, "--seed", str(seed), "--total-timesteps", str(total_timesteps)]
        argv += flags.split() + ["--eval-episodes", "0", "--run-dir", run_dir]
        result = module.train(module.parse_args(argv))
    agent = result["agent"].cpu()
    successes = greedy_successes(module, agent, episodes)
    last = [r for _, r in result["episode_returns"][-100:]]
    return dict(
        label=label,
        script=f"{script}.py",
        flags=flags,
        seed=seed,
        global_step=result["global_step"],
        seconds=round(time.time() - t0, 2),
        last_100_training_returns=round(statistics.fmean(last), 4),
        successes=successes,
        policy=greedy_policy(agent),
    )


def greedy_policy(agent):
    """The greedy action in every state, one row per target 0-9 of 11 positions 0-10:
    "<" move -1, "." stay, ">" move +1."""
    rows = []
    for target in range(10):
        obs = torch.tensor([[target, p] for p in range(11)], dtype=torch.float32) / 10 * 2 - 1
        with torch.no_grad():
            actions = agent.actor(obs).argmax(1).tolist()
        rows.append("".join("<.>"[a] for a in actions))
    return rows


def kind(policy):
    """What a greedy policy does: "one action" everywhere, "never stays" (walks to the target
    and past it: on the target at the end only when the distance was even), or "other"."""
    cells = "".join(policy)
    if len(set(cells)) == 1:
        return "one action"
    return "never stays" if "." not in cells else "other"


def rate(run):
    return 100 * statistics.fmean(run["successes"])


def summary(raw, label):
    rates = [rate(r) for r in raw["results"] if r["label"] == label]
    return rates, statistics.fmean(rates), statistics.median(rates)


def make_table(raw):
    lines = [
        f"LineWorld-v0: % of {raw['episodes']} greedy episodes that end on the target, after "
        f"{raw['total_timesteps']:,} env steps of training, over seeds "
        f"{raw['seeds'][0]}-{raw['seeds'][-1]} ({len(raw['seeds'])} seeds).",
        "",
        "| run | flags | course (1 run) | mean | median (min–max) | seeds at 100% | "
        "seeds whose greedy policy never stays / takes one action | "
        "training return (last 100 episodes) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, _, flags, course in raw["runs"]:
        rates, mean, median = summary(raw, label)
        mine = [r for r in raw["results"] if r["label"] == label]
        ret = statistics.median(r["last_100_training_returns"] for r in mine)
        course_cell = "—" if course is None else f"{course}%"
        kinds = [kind(r["policy"]) for r in mine]
        lines.append(
            f"| {label} | `{flags or 'defaults'}` | {course_cell} | {mean:.1f}% | "
            f"{median:.0f}% ({min(rates):.0f}–{max(rates):.0f}) | "
            f"{sum(r == 100 for r in rates)}/{len(rates)} | "
            f"{kinds.count('never stays')} / {kinds.count('one action')} | {ret:.2f} |"
        )
    seconds = sum(r["seconds"] for r in raw["results"])
    lines += ["", f"The runs' own times add up to {seconds / 60:.1f} minutes"]
    if "wall_seconds" in raw:
        lines[-1] += (
            f"; {raw['jobs']} at a time, {raw['wall_seconds'] / 60:.1f} minutes of wall time"
        )
    lines[-1] += "."
    return "\n".join(lines) + "\n"


def make_plot(raw, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(12, 4.8))
    rng = np.random.default_rng(0)  # horizontal jitter of the seed dots
    course_label = "the course (one run)"
    for i, (label, _, _, course) in enumerate(raw["runs"]):
        rates, mean, _ = summary(raw, label)
        ax.bar(i, mean, color="C0", alpha=0.35, width=0.6, label="ours: mean over seeds" * (i == 0))
        x = i + rng.uniform(-0.18, 0.18, len(rates))
        ax.scatter(x, rates, color="C0", s=18, zorder=3, label="ours: one seed" * (i == 0))
        if course is not None:
            ax.scatter(i, course, marker="X", s=110, color="C3", zorder=4, label=course_label)
            course_label = None
    ax.set_xticks(range(len(raw["runs"])))
    ax.set_xticklabels([label.replace(", ", ",\n") for label, *_ in raw["runs"]])
    ax.set_ylabel(f"% of {raw['episodes']} greedy episodes at the target")
    ax.set_ylim(-3, 105)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    ax.set_title(
        f"The course's line world, {raw['total_timesteps']:,} steps of training, "
        f"{len(raw['seeds'])} seeds"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.replot:
        raw = json.loads((out / "raw.json").read_text())
    else:
        raw = dict(
            seeds=args.seeds,
            total_timesteps=args.total_timesteps,
            episodes=args.episodes,
            runs=RUNS,
            command="python " + " ".join(sys.argv),
            jobs=args.jobs,
            results=[],
        )
        start = time.time()
        jobs = [(*run[:3], seed) for run in RUNS for seed in args.seeds]
        with ProcessPoolExecutor(args.jobs) as pool:
            futures = [
                pool.submit(one_run, *job, args.total_timesteps, args.episodes) for job in jobs
            ]
            for future in futures:
                r = future.result()
                raw["results"].append(r)
                print(
                    f"{r['label']}, seed {r['seed']}: {rate(r):.0f}% at the target "
                    f"({r['seconds']:.0f} s)",
                    flush=True,
                )
        raw["wall_seconds"] = round(time.time() - start, 1)
        (out / "raw.json").write_text(json.dumps(raw, indent=1))
    table = make_table(raw)
    (out / "table.md").write_text(table)
    make_plot(raw, out / "success.png")
    print(table)
    print(f"wrote {out / 'raw.json'}, {out / 'table.md'}, {out / 'success.png'}")


if __name__ == "__main__":
    main(parse_args())
