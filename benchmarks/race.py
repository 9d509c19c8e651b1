# SPDX-License-Identifier: MIT
"""Time to a return: ppo_continuous.py (recipe R) against rl-zoo3's tuned PPO, side by side.

Two queues run at once, each pinned to a core of its own (Linux's sched_setaffinity; on a machine
with fewer than 2 cores, or elsewhere, they share): ours on the first core, the peer on the second,
each going through the envs and seeds in order. So both cores are busy throughout, and a side that
is done sooner does not leave the other an idle machine. Every training episode is kept as (env
step, seconds since its process was launched, return). A run reaches a level when the mean of its
last 20 episodes first reaches it; the table gives the time and steps to each level, per seed and
as a median, with the ratio ours / peer (below 1: ours is there sooner), and the picture the mean
return against wall-clock.

The peer is Stable-Baselines3 PPO with rl-zoo3's own hyperparameters, read from the installed
rl_zoo3 package's hyperparams/ppo.yml: the entry of the env's v4, applied to v5, with its own
settings kept (normalize, n_envs, schedules, policy_kwargs); the tool prints the entry it used.
The levels are 25, 50, 75 and 100% of the env's best published figure (benchmarks/mujoco_suite.py),
and on in steps of 25% while either run reaches them.

    pip install "gymnasium[mujoco]"
    python benchmarks/race.py --env-id Hopper-v5 --seeds 1 --total-timesteps 50000 --out runs/race
    python benchmarks/race.py --env-id Hopper-v5 Walker2d-v5 HalfCheetah-v5 --seeds 1 2 3
    python benchmarks/race.py --env-id Hopper-v5 --table     # the table and picture again

`--variants DIR...` races nothing: it sets R's runs in the race (OUT/raw.json) beside those of
its variants, each run by benchmarks/run.py with a setting of the peer's into a folder (or kept in
an OUT/variants.json written before), and writes OUT/variants.md, .json and .png: the steps and
seconds to each level and the mean return at the end, which docs/lessons.md's lesson 7 cites.

`--sides peer` runs only the peer's queue: a second one, under `taskset -c 0` and with an --out
of its own, beside a race whose own side is done. Runs already in OUT/raw.json are kept (one that
failed is run again); a peer that fails says so in one line and the others go on.

`--compile` races ppo_continuous.py --compile. With `--sides ours`, our runs go in two queues, a
core each (both cores busy, as in a race), against the peer's runs kept in OUT/raw.json: copy a
race's raw.json there without its own side's runs, and the peer need not run again. `--core N`
puts one queue on core N: two such, eager and compiled, time the two side by side.

    python benchmarks/race.py --env-id HalfCheetah-v5 Hopper-v5 Walker2d-v5 --seeds 1 2 3 \
        --compile --eval-episodes 10 --sides ours --core 0 \
        --out benchmarks/results/mujoco_vs_sb3/race_compile &
    python benchmarks/race.py --env-id HalfCheetah-v5 Hopper-v5 Walker2d-v5 --seeds 1 2 3 \
        --eval-episodes 10 --sides ours --core 1 --out benchmarks/results/mujoco_vs_sb3/race_eager
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import mujoco_suite  # noqa: E402  (the recipe R and the published figures)
import run as runs  # noqa: E402  (benchmarks/run.py: reading TensorBoard events)

SIDES = ("ours", "peer")
WINDOW = 20  # episodes in the mean that reaches a level
FIGURES = {env_id: figure for env_id, figure, _, _ in mujoco_suite.SUITE}
FIGURES["Ant-v4"] = FIGURES["Ant-v5"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.formatter_class = argparse.ArgumentDefaultsHelpFormatter
    p.add_argument("--env-id", nargs="+", default=["Hopper-v5"], help="MuJoCo envs to race on")
    p.add_argument("--seeds", type=int, nargs="+", default=[1], help="seeds, one race each")
    p.add_argument("--total-timesteps", type=int, default=1_000_000, help="env steps per run")
    out = HERE / "results" / "mujoco_vs_sb3" / "race"  # where the docs' race lives
    p.add_argument("--out", default=str(out), help="raw.json, table, png")
    p.add_argument("--table", action="store_true", help="only the table and picture, from raw.json")
    p.add_argument("--python", default=sys.executable, help="the interpreter of both runs")
    p.add_argument("--sides", nargs="+", choices=SIDES, default=SIDES, help="the queues to run")
    p.add_argument("--compile", action="store_true", help="ours with --compile")
    p.add_argument("--eval-episodes", default="0", help="ours: greedy episodes after training")
    p.add_argument("--core", type=int, help="one queue of the sides given, on this core")
    p.add_argument(
        "--variants",
        nargs="+",
        metavar="DIR",
        help="no race: benchmarks/run.py folders of R's variants, tabulated against the race's R "
        "(OUT/raw.json) in OUT/variants.md, .json and .png",
    )
    return p.parse_args(argv)


# ---- the peer: SB3 PPO with rl-zoo3's entry ----------------------------------------------------
def zoo_entry(env_id):
    """rl-zoo3's ppo.yml entry for the env's v4 (for a v5 id), as in the installed package."""
    import rl_zoo3
    import yaml

    path = Path(rl_zoo3.__file__).parent / "hyperparams" / "ppo.yml"
    table = yaml.safe_load(path.read_text())
    name = env_id.rsplit("-v", 1)[0] + "-v4"
    if name not in table:
        raise KeyError(f"rl-zoo3's ppo.yml has no {name}")
    return name, dict(table[name])


def zoo_model_kwargs(entry):
    """SB3 PPO's keyword arguments from an entry, as rl-zoo3's ExperimentManager makes them:
    lin_X schedules, policy_kwargs evaluated with torch.nn in scope; n_envs, normalize,
    n_timesteps and policy taken out (the caller uses them)."""
    import torch.nn as nn

    kwargs = {k: v for k, v in entry.items() if k not in ("n_envs", "normalize", "n_timesteps")}
    for key in ("learning_rate", "clip_range"):
        if isinstance(kwargs.get(key), str) and kwargs[key].startswith("lin_"):
            start = float(kwargs[key][4:])
            kwargs[key] = lambda progress, start=start: progress * start
    if isinstance(kwargs.get("policy_kwargs"), str):
        kwargs["policy_kwargs"] = eval(kwargs["policy_kwargs"], {"nn": nn, "dict": dict})
    return kwargs


def peer(env_id, seed, total_timesteps, log):
    """Train the peer; append one JSON line per finished episode: [step, time.time(), return]."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.vec_env import VecNormalize

    torch.set_num_threads(1)  # one core each
    name, entry = zoo_entry(env_id)
    print(f"race.py: the peer on {env_id} runs rl-zoo3's {name} entry: {entry}", flush=True)
    envs = make_vec_env(env_id, n_envs=entry.get("n_envs", 1), seed=seed)
    if entry.get("normalize"):
        envs = VecNormalize(envs, gamma=entry.get("gamma", 0.99))  # as rl-zoo3 does
    kwargs = zoo_model_kwargs(entry)
    policy = kwargs.pop("policy")

    class Episodes(BaseCallback):
        def _on_step(self):
            for info in self.locals["infos"]:
                if "episode" in info:
                    row = [self.num_timesteps, time.time(), float(info["episode"]["r"])]
                    out.write(json.dumps(row) + "\n")
            return True

    with open(log, "w") as out:
        model = PPO(policy, envs, seed=seed, device="cpu", **kwargs)
        model.set_logger(Logger(None, []))  # else SB3 makes an empty folder in /tmp each run
        model.learn(total_timesteps=total_timesteps, callback=Episodes())


def read_peer_log(path, t0):
    """[[step, seconds since t0, return], ...] from the peer's JSON lines."""
    rows = []
    for line in Path(path).read_text().splitlines():
        step, wall, episode_return = json.loads(line)
        rows.append([step, round(wall - t0, 3), episode_return])
    return rows


# ---- the race ----------------------------------------------------------------------------------
def pinned(core):
    """preexec_fn: the child on one core, where the OS allows and there are two."""
    if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
        return None
    cores = sorted(os.sched_getaffinity(0))
    return lambda: os.sched_setaffinity(0, {cores[core % len(cores)]})


def command(args, env_id, seed, side, folder):
    """The command line of one side's run."""
    if side == "peer":  # this file again, as one peer run writing its episodes to peer.jsonl
        cmd = [args.python, str(Path(__file__).resolve()), "--peer", env_id, str(seed)]
        return cmd + [str(args.total_timesteps), str(folder / "peer.jsonl")]
    cmd = [args.python, str(HERE.parent / "ppo_continuous.py"), "--env-id", env_id]
    cmd += ["--seed", str(seed), "--total-timesteps", str(args.total_timesteps)]
    cmd += ["--run-dir", str(folder / "ours"), "--eval-episodes", args.eval_episodes]
    return cmd + shlex.split(mujoco_suite.R) + (["--compile"] if args.compile else [])


def run_side(args, env_id, seed, side, core):
    """One side's run on its core; its record: command, exit code, wall_s and episodes."""
    folder = Path(args.out) / "runs" / f"{env_id}__seed{seed}"
    folder.mkdir(parents=True, exist_ok=True)
    cmd = command(args, env_id, seed, side, folder)
    with open(folder / f"{side}.log", "w") as log:
        t0 = time.time()
        done = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, preexec_fn=pinned(core))
    wall = round(time.time() - t0, 1)
    evaluation = []  # ours with --eval-episodes: the greedy episodes' returns
    if side == "ours":
        scalars = runs.read_scalars(folder / "ours")
        events = scalars.get("charts/episodic_return", [])
        episodes = [[step, round(wt - t0, 3), value] for wt, step, value in events]
        evaluation = [value for _, _, value in scalars.get("eval/episodic_return", [])]
    else:
        peer_log = folder / "peer.jsonl"
        episodes = read_peer_log(peer_log, t0) if peer_log.exists() else []
    if done.returncode != 0:
        last = (folder / f"{side}.log").read_text().strip().splitlines()[-1:] or ["no output"]
        print(
            f"race.py: {side} on {env_id}, seed {seed} failed ({done.returncode}): {last[0][:200]}"
        )
    record = dict(cmd=shlex.join(cmd), returncode=done.returncode, wall_s=wall, episodes=episodes)
    return record | dict(evaluation=evaluation)


def crossing(episodes, level):
    """(step, seconds) of the first episode where the mean of the last WINDOW reaches level."""
    returns = [r for _, _, r in episodes]
    for i in range(WINDOW - 1, len(episodes)):
        if sum(returns[i + 1 - WINDOW : i + 1]) / WINDOW >= level:
            return episodes[i][0], episodes[i][1]
    return None


def best_mean(episodes):
    returns = [r for _, _, r in episodes]
    means = [sum(returns[i - WINDOW : i]) / WINDOW for i in range(WINDOW, len(returns) + 1)]
    return max(means, default=float("-inf"))


def levels(figure, seeds):
    """25, 50, 75, 100% of the figure, and on by 25% while a run of these seeds reaches one."""
    reached = max((best_mean(r[s]["episodes"]) for r in seeds.values() for s in r), default=0)
    out, k = [], 1
    while k <= 4 or figure * k / 4 <= reached:
        out.append(round(figure * k / 4, 1))
        k += 1
    return out


def table(env_id, seeds, figure):
    """A markdown table: per level, each seed's seconds and steps, ours / peer, and the median."""
    head = f"### {env_id}: time (steps) to a mean return of 20 episodes; published figure {figure}"
    lines = [
        head,
        "",
        "| level | " + " | ".join(f"seed {s}: ours / rl-zoo3 (ratio)" for s in seeds),
    ]
    lines[-1] += " | median ratio (range) |"
    lines.append("|---" * (len(seeds) + 2) + "|")
    for level in levels(figure, seeds):
        cells, ratios = [], []
        for record in seeds.values():
            ours, peer = (crossing(record[side]["episodes"], level) for side in ("ours", "peer"))
            show = [f"{c[1]:.0f} s ({c[0]:,})" if c else "—" for c in (ours, peer)]
            ratio = ours[1] / peer[1] if ours and peer else None
            ratios += [ratio] if ratio is not None else []
            cells.append(f"{show[0]} / {show[1]}" + (f" ({ratio:.2f})" if ratio else ""))
        spread = ratios and f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"
        lines.append(f"| {level:g} | " + " | ".join(cells) + f" | {spread or '—'} |")
    return "\n".join(lines) + "\n"


def picture(raw, path):
    """The mean of the last 20 returns against seconds since launch, a panel per env."""
    names = {"ours": "ppo_continuous.py, R", "peer": "rl-zoo3 PPO"}
    panels = {
        env_id: [
            (None if k else names[side], color, record[side]["episodes"])
            for side, color in (("ours", "C0"), ("peer", "C1"))
            for k, record in enumerate(seeds.values())
        ]
        for env_id, seeds in raw.items()
    }
    draw(panels, 1, "seconds since launch", path)


def draw(panels, x_column, xlabel, path):
    """{env: [(label or None, colour, episodes)]}: a panel per env, a line per run, the mean of
    the last 20 returns against a column of the (env step, seconds, return) episodes: 0 or 1."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.6), squeeze=False)
    for ax, (env_id, lines) in zip(axes[0], panels.items(), strict=True):
        for label, color, episodes in lines:
            curve = runs.rolling(episodes)
            ax.plot(
                [c[x_column] for c in curve], [c[2] for c in curve], color=color, lw=1, label=label
            )
        ax.axhline(FIGURES[env_id], color="gray", ls=":", lw=1)
        ax.set(title=env_id, xlabel=xlabel, ylabel=f"mean of the last {WINDOW} returns")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def report(raw, out):
    text = "".join(table(env_id, seeds, FIGURES[env_id]) + "\n" for env_id, seeds in raw.items())
    (out / "table.md").write_text(text)
    picture(raw, out / "curves.png")
    print(text)


# ---- R against R with one of the peer's settings (run.py's folders): what buys the start -----


def read_variants(paths):
    """{env: {label: {seed: episodes}}} of the finished runs in benchmarks/run.py's folders, or
    in a variants.json that this wrote before; returns to 2 decimals."""
    out = {}
    for path in map(Path, paths):
        if path.suffix == ".json":
            for env_id, labels in json.loads(path.read_text()).items():
                for label, seeds in labels.items():
                    out.setdefault(env_id, {}).setdefault(label, {}).update(seeds)
            continue
        raw = json.loads((path / "raw.json").read_text())
        for run in raw["runs"]:
            if run["returncode"] == 0:
                episodes = [[s, t, round(r, 2)] for s, t, r in run["episodes"]]
                labels = out.setdefault(raw["env_id"], {})
                labels.setdefault(run["script"], {})[str(run["seed"])] = episodes
    return out


def spread(values, show):
    """median (min-max) of values, each as show() writes it."""
    if len(values) == 1:
        return show(values[0])
    return f"{show(statistics.median(values))} ({show(min(values))}-{show(max(values))})"


def variants_table(env_id, labels, figure):
    """Per run: steps and seconds to each level (median over the seeds there, and how many got
    there), and the mean of the last 20 episodes at the end."""
    head = [figure * k / 4 for k in range(1, 5)]
    lines = [f"### {env_id}: steps and seconds to a mean return of {WINDOW} episodes", ""]
    lines.append(
        "| run | " + " | ".join(f"{level:.0f} ({25 * k}%)" for k, level in enumerate(head, 1))
    )
    lines[-1] += f" | last {WINDOW} at the end |"
    lines.append("|---" * (len(head) + 2) + "|")
    for label, seeds in labels.items():
        cells = []
        for level in head:
            there = [c for c in (crossing(e, level) for e in seeds.values()) if c]
            steps = spread([c[0] for c in there], lambda x: f"{x:,.0f}") if there else "never"
            seconds = spread([c[1] for c in there], lambda x: f"{x:.0f}") if there else ""
            cells.append(f"{steps}{seconds and ', ' + seconds + ' s'} ({len(there)}/{len(seeds)})")
        last = [sum(r for _, _, r in e[-WINDOW:]) / WINDOW for e in seeds.values()]
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {spread(last, '{:.0f}'.format)} |")
    return "\n".join(lines) + "\n"


def variants_picture(variants, path):
    """The mean of the last 20 returns against env steps: a line per seed, a colour per run."""
    panels = {
        env_id: [
            (None if k else label, f"C{n}", episodes)
            for n, (label, seeds) in enumerate(labels.items())
            for k, episodes in enumerate(seeds.values())
        ]
        for env_id, labels in variants.items()
    }
    draw(panels, 0, "env steps", path)


def variants(args, out, raw):
    """--variants: R's runs in the race against those of its variants, for the envs raced."""
    found = read_variants(args.variants)
    (out / "variants.json").write_text(json.dumps(found))
    every = {}
    for env_id in [e for e in args.env_id if e in raw and e in found]:
        ours = {s: r["ours"]["episodes"] for s, r in sorted(raw[env_id].items()) if "ours" in r}
        every[env_id] = {"R": ours} | found[env_id]
    text = "".join(variants_table(e, labels, FIGURES[e]) + "\n" for e, labels in every.items())
    (out / "variants.md").write_text(text)
    variants_picture(every, out / "variants.png")
    print(text)
    return 0


def main(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    raw_path = out / "raw.json"
    raw = json.loads(raw_path.read_text()) if raw_path.exists() else {}
    if args.variants:
        return variants(args, out, raw)
    for env_id in args.env_id:
        if env_id not in FIGURES:
            print(f"race.py: error: no published figure for {env_id}: one of {', '.join(FIGURES)}")
            return 2
    if not args.table:
        lock = threading.Lock()

        def queue(side, core, runs):  # one side's runs, one after another, on its own core
            for env_id, seed in runs:
                if raw.get(env_id, {}).get(seed, {}).get(side, {}).get("returncode") == 0:
                    continue  # kept
                record = run_side(args, env_id, seed, side, core)
                with lock:
                    raw.setdefault(env_id, {}).setdefault(seed, {})[side] = record
                    raw_path.write_text(json.dumps(raw))

        runs = [(env_id, str(seed)) for env_id in args.env_id for seed in args.seeds]
        queues = [(side, SIDES.index(side), runs) for side in args.sides]
        if args.sides == ["ours"]:  # our side alone: two queues of it, a core each
            queues = [("ours", core, runs[core::2]) for core in (0, 1)]
        if args.core is not None:  # beside another queue of ours (eager against --compile)
            queues = [(side, args.core, runs) for side in args.sides]
        sides = [threading.Thread(target=queue, args=q) for q in queues]
        for thread in sides:
            thread.start()
        for thread in sides:
            thread.join()
    raw = {e: {s: r for s, r in raw[e].items() if set(SIDES) <= set(r)} for e in raw}
    report({e: seeds for e, seeds in raw.items() if seeds}, out)  # every env raw.json holds
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--peer"]:  # one peer run, as run_side() launches it
        env, seed, steps, log = sys.argv[2:6]
        sys.exit(peer(env, int(seed), int(steps), log))
    sys.exit(main(parse_args()))
