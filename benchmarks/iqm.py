# SPDX-License-Identifier: MIT
"""The spread over seeds of a benchmark folder: mean ± std, and the interquartile mean (IQM)
with a 95% stratified-bootstrap interval (rliable; Agarwal et al. 2021, arXiv:2108.13264).

For each script (or --variant label) in each folder's raw.json, as benchmarks/run.py wrote it,
the score of a seed is the mean of its final greedy evaluation episodes. The table gives the
seeds, the mean ± std over them (population std, as CleanRL and mujoco_suite.py report it), and
the IQM, the mean of the middle half of the seeds' scores (scipy's 25% trimmed mean: with 5
seeds it drops the best and the worst seed), with the 95% percentile interval of 50,000
bootstrap resamples of the seeds (rliable.library.get_interval_estimates with
rliable.metrics.aggregate_iqm; one task, so the stratified bootstrap resamples the seeds).
The resampling is seeded (--seed), so the interval is the same every time. With 3 to 10 seeds
the interval is wide: that is what so few seeds can say.

--peak adds the figure as Tianshou scores its MuJoCo benchmark: every 30,720 env steps (its
PPO epoch, 15 of our 2,048-step rollouts) each seed's score is the mean return of its last 10
training episodes that ended by then (Tianshou tests 10 episodes per epoch), the curve is the
mean of that over seeds, and the figure is the curve's highest point up to 1M steps. Ours are
training episodes of the sampled policy, where Tianshou plays separate test episodes.

    python benchmarks/iqm.py benchmarks/results/hopper benchmarks/results/acrobot
    python benchmarks/iqm.py --peak benchmarks/results/inverteddoublependulum
"""

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

REPS = 50_000  # bootstrap resamples, rliable's default
EPOCH = 30_720  # Tianshou's PPO epoch on MuJoCo: 30,000 steps in 2,048-step collects
TEST_EPISODES = 10  # Tianshou's test episodes per epoch
UNTIL = 1_000_000  # the published figures are the peak over the first 1M steps


def final_evaluations(raw):
    """{script or variant label: {seed: mean of its final greedy evaluation}}, in run order."""
    scores = {}
    for run in raw["runs"]:
        if run.get("eval_returns"):
            scores.setdefault(run["script"], {})[run["seed"]] = float(np.mean(run["eval_returns"]))
    return scores


def iqm_interval(scores, reps=REPS, seed=0, size=0.95):
    """(IQM, low, high): the interquartile mean of the scores (one per seed) and its
    `size` stratified-bootstrap percentile interval, by rliable."""
    from rliable import library, metrics

    matrix = np.asarray(scores, dtype=np.float64).reshape(-1, 1)  # (runs, tasks=1)
    state = np.random.get_state()
    np.random.seed(seed)  # rliable 1.2 draws its resamples from numpy's global generator
    try:
        points, intervals = library.get_interval_estimates(
            {"x": matrix},
            lambda x: np.array([metrics.aggregate_iqm(x)]),
            reps=reps,
            confidence_interval_size=size,
        )
    finally:
        np.random.set_state(state)
    return float(points["x"][0]), float(intervals["x"][0, 0]), float(intervals["x"][1, 0])


def places(values):
    """Decimals that show a difference of about 1% of the largest value, and the std over the
    values to one significant digit (at most 3 decimals)."""
    m = max((abs(v) for v in values), default=0)
    d = 0 if m >= 100 else 1 if m >= 10 else 2 if m >= 1 else 3
    std = float(np.std(values)) if len(values) else 0.0
    return max(d, min(3, -math.floor(math.log10(std)))) if std > 0 else d


def spread(scores, reps=REPS, seed=0, decimals=None):
    """'mean ± std' and 'IQM [low, high]' of one score per seed, formatted."""
    values = np.asarray(scores, dtype=np.float64)
    d = places(values) if decimals is None else decimals
    iqm, low, high = iqm_interval(values, reps, seed)
    return (
        f"{values.mean():.{d}f} ± {values.std():.{d}f}",
        f"{iqm:.{d}f} [{low:.{d}f}, {high:.{d}f}]",
    )


def peak_of_mean_curve(raw, label=None, every=EPOCH, episodes=TEST_EPISODES, until=UNTIL):
    """(peak, step, curve): Tianshou's score from the training episodes of raw.json's runs of
    `label` (default: the first script). At each multiple of `every` env steps up to `until`, a
    seed's point is the mean return of its last `episodes` training episodes that ended by then;
    the curve is the mean over seeds up to the runs' --total-timesteps; the peak is its maximum."""
    runs = [r for r in raw["runs"] if r["script"] == (label or raw["runs"][0]["script"])]
    end = min(until, raw.get("total_timesteps", until))  # no point past the runs' end
    steps = np.arange(every, end + 1, every)
    points = []
    for run in runs:
        ends = np.array([e[0] for e in run["episodes"]])
        returns = np.array([e[2] for e in run["episodes"]])
        done = np.searchsorted(ends, steps, side="right")  # episodes ended by each step
        points.append([returns[max(0, n - episodes) : n].mean() if n else np.nan for n in done])
    curve = np.mean(points, axis=0)
    best = int(np.nanargmax(curve))
    return (
        float(curve[best]),
        int(steps[best]),
        list(zip(steps.tolist(), curve.tolist(), strict=True)),
    )


def table(folders, peak=False, reps=REPS, seed=0):
    head = "| folder | script | seeds | final greedy eval, mean ± std | IQM [95% CI] |"
    rule = "|---|---|---|---|---|"
    if peak:
        head += " peak of the mean training curve (Tianshou's way), at step |"
        rule += "---|"
    lines = [head, rule]
    for path in folders:
        raw = json.loads((Path(path) / "raw.json").read_text())
        for label, by_seed in final_evaluations(raw).items():
            mean_std, iqm = spread(list(by_seed.values()), reps, seed)
            seeds = ",".join(map(str, sorted(by_seed)))
            row = f"| {Path(path).name} | {label} | {seeds} | {mean_std} | {iqm} |"
            if peak:
                top, step, _ = peak_of_mean_curve(raw, label)
                row += f" {top:.{places([top])}f} at {step:,} |"
            lines.append(row)
    return "\n".join(lines)


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("folders", nargs="+", help="folders with a raw.json from benchmarks/run.py")
    p.add_argument("--peak", action="store_true", help="add Tianshou's peak of the mean curve")
    p.add_argument("--reps", type=int, default=REPS, help="bootstrap resamples")
    p.add_argument("--seed", type=int, default=0, help="seeds the bootstrap's resampling")
    args = p.parse_args(argv)
    for folder in args.folders:
        if not (Path(folder) / "raw.json").is_file():
            p.error(f"{folder}: no raw.json there")
    if args.reps <= 0:
        p.error("--reps must be positive")
    return args


if __name__ == "__main__":
    args = parse_args()
    print(table(args.folders, args.peak, args.reps, args.seed))
    sys.exit(0)
