# SPDX-License-Identifier: MIT
"""Run training scripts over seeds, then tabulate and plot time-to-threshold.

Each run is `PYTHON SCRIPT --env-id E --seed S --run-dir DIR [--total-timesteps T] [extra]`,
launched as a subprocess. Its TensorBoard events are read afterwards. Time is measured from
t0 = time.time() just before launch to the event's wall_time, so it includes interpreter start
and imports. The threshold is reached at the first `charts/episodic_return` event where the mean
of the last 20 episodic returns (that one included) is >= the threshold. A seed is solved when
it reached the threshold in training AND the final greedy evaluation's mean is >= the threshold
too (without evaluation episodes: the mean of the last 20 training returns): a policy that got
there and then wandered off is not solved at the end. The table gives the solve rate over seeds
and names every seed that is not solved, with its figures.

    python benchmarks/run.py --scripts reinforce.py vpg.py ppo.py --env-id CartPole-v1 \\
        --seeds 1 2 3 --threshold 475 --out benchmarks/results/cartpole_ladder
    python benchmarks/run.py --scripts ppo_gae.py benchmarks/sb3_ppo.py --env-id CartPole-v1 \\
        --seeds 1 2 3 4 5 --threshold 475 --baseline benchmarks/sb3_ppo.py \\
        --out benchmarks/results/cartpole_vs_sb3
    python benchmarks/run.py --replot --out benchmarks/results/cartpole_vs_sb3

A script can also run under a label with flags of its own, to compare settings of one script:

    python benchmarks/run.py --variant "vpg, 1 step" vpg.py "--train-pi-iters 1" \
        --variant "vpg, 10 steps" vpg.py "--train-pi-iters 10" --seeds 1 2 3 4 5 \
        --threshold 475 --out /tmp/vpg_steps
"""

import argparse
import json
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

WINDOW = 20  # episodes in the rolling mean


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--scripts", nargs="+", default=[], help="training scripts to compare")
    p.add_argument(
        "--variant",
        nargs=3,
        action="append",
        default=[],
        metavar=("LABEL", "SCRIPT", "FLAGS"),
        help='SCRIPT with FLAGS, shown as LABEL, e.g. "lambda 1" ppo_gae.py "--gae-lambda 1" '
        "(repeatable)",
    )
    p.add_argument("--title", help="title of the plot (default: the env id)")
    p.add_argument(
        "--panels",
        action="store_true",
        help="plot one panel per script or variant, with every seed drawn, over env steps",
    )
    p.add_argument("--env-id", default="CartPole-v1")
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    p.add_argument("--threshold", type=float, help="return that counts as solved")
    p.add_argument("--out", required=True, help="folder for runs/, raw.json, table.md, PNGs")
    p.add_argument("--total-timesteps", type=int, help="passed to every script if given")
    p.add_argument("--extra", default="", help='flags passed to every run, e.g. "--num-envs 8"')
    p.add_argument(
        "--script-extra",
        nargs=2,
        action="append",
        default=[],
        metavar=("SCRIPT", "FLAGS"),
        help="flags passed to one script only (repeatable)",
    )
    p.add_argument(
        "--script-seeds",
        nargs=2,
        action="append",
        default=[],
        metavar=("SCRIPT", "SEEDS"),
        help='seeds for one script only, e.g. "1 2 3 4 5" for a slow baseline (repeatable)',
    )
    p.add_argument("--baseline", help="script whose median time-to-threshold is the ratio's 1")
    p.add_argument("--jobs", type=int, default=1, help="parallel runs (timings fair only at 1)")
    p.add_argument("--python", default=sys.executable, help="interpreter for the scripts")
    p.add_argument("--replot", action="store_true", help="redo table and plots from raw.json")
    p.add_argument(
        "--append",
        action="store_true",
        help="keep the runs already in OUT/raw.json and run only the script-seed pairs it lacks "
        "(the same --env-id, --total-timesteps and --extra), e.g. to add seeds",
    )
    args = p.parse_args(argv)
    if not args.replot and (not (args.scripts or args.variant) or args.threshold is None):
        p.error("--scripts or --variant, and --threshold, are required unless --replot")
    labels = args.scripts + [label for label, _, _ in args.variant]
    if len(set(labels)) < len(labels):
        p.error(f"every script and variant label must be different, got {labels}")
    if args.jobs < 1:
        p.error("--jobs must be >= 1")
    return args


def pick_baseline(baseline, scripts):
    """The script named by --baseline (its path or its file name), or None."""
    if baseline is None:
        return None
    match = [s for s in scripts if baseline in (s, Path(s).name)]
    if not match:
        print(f"run.py: error: --baseline {baseline} is not one of {scripts}", file=sys.stderr)
        sys.exit(2)
    return match[0]


def read_scalars(run_dir):
    """{tag: [(wall_time, step, value), ...]} from every event file under run_dir."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    scalars = {}
    for d in sorted({f.parent for f in Path(run_dir).rglob("events.out.tfevents*")}):
        acc = EventAccumulator(str(d), size_guidance={"scalars": 0}, purge_orphaned_data=False)
        acc.Reload()
        for tag in acc.Tags()["scalars"]:
            events = [(e.wall_time, e.step, e.value) for e in acc.Scalars(tag)]
            scalars.setdefault(tag, []).extend(events)
    return scalars


def run_one(args, label, script, flags, seed):
    """Launch one training run of `script` (shown as `label`, with its own `flags` last), wait
    for it, and return its raw record."""
    slug = re.sub(r"[^\w.=-]+", "_", Path(label).stem if label == script else label)
    run_dir = Path(args.out) / "runs" / f"{slug}__seed{seed}"
    shutil.rmtree(run_dir, ignore_errors=True)  # stale event files would mix into this run
    run_dir.mkdir(parents=True)
    cmd = [args.python, script, "--env-id", args.env_id, "--seed", str(seed)]
    cmd += ["--run-dir", str(run_dir)]
    if args.total_timesteps:
        cmd += ["--total-timesteps", str(args.total_timesteps)]
    cmd += shlex.split(args.extra)
    for name, extra in args.script_extra:  # matched by path as given or by file name
        cmd += shlex.split(extra) if name in (script, Path(script).name) else []
    cmd += shlex.split(flags)
    with open(run_dir / "stdout.log", "w") as log:
        t0 = time.time()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        returncode = proc.wait()
        wall_s = time.time() - t0
    scalars = read_scalars(run_dir)
    episodes = [
        [step, round(wt - t0, 3), value]
        for wt, step, value in scalars.get("charts/episodic_return", [])
    ]
    sps = scalars.get("charts/SPS", [])
    return {
        "script": label,
        "seed": seed,
        "run_dir": str(run_dir),
        "cmd": shlex.join(cmd),
        "returncode": returncode,
        "wall_s": round(wall_s, 3),
        "episodes": episodes,  # [env step, seconds since launch, episodic return]
        "eval_returns": [v for _, _, v in scalars.get("eval/episodic_return", [])],
        "sps": sps[-1][2] if sps else None,
    }


def rolling(episodes):
    """[(step, seconds, mean of the last WINDOW returns)] from the WINDOW-th episode on."""
    returns = [r for _, _, r in episodes]
    return [
        (step, t, sum(returns[i + 1 - WINDOW : i + 1]) / WINDOW)
        for i, (step, t, _) in enumerate(episodes)
        if i >= WINDOW - 1
    ]


def summarize(run, threshold):
    """Per-run metrics derived from the raw record (so --replot can use a new threshold)."""
    curve = rolling(run["episodes"])
    hit = next((c for c in curve if c[2] >= threshold), None)
    final_train_mean = curve[-1][2] if curve else None
    eval_mean = statistics.fmean(run["eval_returns"]) if run["eval_returns"] else None
    at_the_end = eval_mean if eval_mean is not None else final_train_mean
    return {
        "reached": hit is not None,
        "solved": hit is not None and at_the_end is not None and at_the_end >= threshold,
        "steps_to_threshold": hit[0] if hit else None,
        "seconds_to_threshold": hit[1] if hit else None,
        "final_train_mean": final_train_mean,
        "eval_mean": eval_mean,
        "sps": run["sps"],
        "wall_s": run["wall_s"],
    }


def not_solved(raw):
    """One line per seed that is not solved: why, and its final figures."""
    lines = []
    for run in raw["runs"]:
        m = summarize(run, raw["threshold"])
        if m["solved"]:
            continue
        why = f"reached it at step {m['steps_to_threshold']}" if m["reached"] else "never reached"
        figures = ", ".join(
            f"{name} {m[key]:.4g}"
            for name, key in (("final train mean", "final_train_mean"), ("eval", "eval_mean"))
            if m[key] is not None
        )
        lines.append(f"- {Path(run['script']).name} seed {run['seed']}: {why}; {figures}")
    return lines


def spread(values, fmt="{:.0f}"):
    """'median (min–max)' over the values that are not None; '—' if there are none."""
    values = [v for v in values if v is not None]
    if not values:
        return "—"
    med, lo, hi = (fmt.format(v) for v in (statistics.median(values), min(values), max(values)))
    return med if len(values) == 1 else f"{med} ({lo}–{hi})"


def make_table(raw):
    scripts, threshold, baseline = raw["scripts"], raw["threshold"], raw.get("baseline")
    stats = {s: [summarize(r, threshold) for r in raw["runs"] if r["script"] == s] for s in scripts}
    med_time = {}
    for s, ms in stats.items():
        times = [m["seconds_to_threshold"] for m in ms if m["reached"]]
        med_time[s] = statistics.median(times) if times else None
    head = ["script", "solved", "reached", "steps to thr.", "seconds to thr.", "final train mean"]
    head += ["eval mean", "SPS", "wall s"]
    show_ratio = baseline in scripts and len(scripts) > 1
    if show_ratio:
        head.append(f"time to thr. / {Path(baseline).name}")
    lines = [
        f"{raw['env_id']}, threshold {threshold:g}. Reached: the mean of the last {WINDOW} "
        "training returns got there; solved: reached, and the final greedy evaluation is there "
        "too. Median (min–max) over seeds; steps and seconds over the seeds that reached it.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for s, ms in stats.items():
        row = [Path(s).name, f"{sum(m['solved'] for m in ms)}/{len(ms)}"]
        row += [f"{sum(m['reached'] for m in ms)}/{len(ms)}"]
        row += [spread([m["steps_to_threshold"] for m in ms])]
        row += [spread([m["seconds_to_threshold"] for m in ms], "{:.1f}")]
        # 4 significant digits: 500.0 and -153.9 as before, and FrozenLake's 0.736 as well
        row += [spread([m[k] for m in ms], "{:.4g}") for k in ("final_train_mean", "eval_mean")]
        row += [spread([m["sps"] for m in ms]), spread([m["wall_s"] for m in ms], "{:.1f}")]
        if show_ratio:
            ok = med_time[s] is not None and med_time[baseline]
            row.append(f"{med_time[s] / med_time[baseline]:.2f}" if ok else "—")
        lines.append("| " + " | ".join(row) + " |")
    failures = not_solved(raw)
    lines += ["", "Not solved:", *failures] if failures else ["", "Every seed solved."]
    return "\n".join(lines) + "\n"


def band(curves, x_index, grid):
    """Mean, min and max over seeds of the rolling mean, interpolated onto grid.

    Before a seed's first full window it counts as missing; after its last episode it holds
    its final value."""
    ys = np.array(
        [
            np.interp(grid, [c[x_index] for c in cv], [c[2] for c in cv], left=np.nan)
            for cv in curves
        ]
    )
    return np.nanmean(ys, 0), np.nanmin(ys, 0), np.nanmax(ys, 0)


def make_plot(raw, path):
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    for x_index, label in enumerate(("environment steps", "wall seconds since launch")):
        ax = axes[x_index]
        for script in raw["scripts"]:
            curves = [
                cv for r in raw["runs"] if r["script"] == script if (cv := rolling(r["episodes"]))
            ]
            if not curves:
                continue
            grid = np.linspace(0, max(cv[-1][x_index] for cv in curves), 300)
            with warnings.catch_warnings():  # all-NaN columns before the first full window
                warnings.simplefilter("ignore", RuntimeWarning)
                mean, lo, hi = band(curves, x_index, grid)
            runs = [r for r in raw["runs"] if r["script"] == script]
            solved = sum(summarize(r, raw["threshold"])["solved"] for r in runs)
            name = f"{Path(script).name} (solved {solved}/{len(runs)})"
            (line,) = ax.plot(grid, mean, label=name)
            ax.fill_between(grid, lo, hi, color=line.get_color(), alpha=0.2, linewidth=0)
        ax.axhline(raw["threshold"], color="grey", linestyle="--", linewidth=1, label="threshold")
        ax.set_xlabel(label)
        ax.set_xlim(left=0)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"return, mean of last {WINDOW} episodes")
    axes[0].legend(loc="best", fontsize=8)
    fig.suptitle(f"{raw.get('title') or raw['env_id']}: mean and min–max over seeds")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def make_panels(raw, path):
    """One panel per script or variant: every seed thin, their mean bold, min–max shaded."""
    import math
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = raw["scripts"]
    cols = 4 if len(labels) == 4 else min(3, len(labels))
    rows = math.ceil(len(labels) / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(4.2 * cols, 3.3 * rows), squeeze=False, sharey=True
    )
    end = max(r["episodes"][-1][0] for r in raw["runs"] if r["episodes"])
    grid = np.linspace(0, end, 300)
    for i, (ax, label) in enumerate(zip(axes.flat, labels, strict=False)):
        runs = [r for r in raw["runs"] if r["script"] == label]
        curves = [cv for r in runs if (cv := rolling(r["episodes"]))]
        color = f"C{i}"
        for cv in curves:
            ax.plot([c[0] for c in cv], [c[2] for c in cv], color=color, alpha=0.4, linewidth=0.7)
        if curves:
            with warnings.catch_warnings():  # all-NaN columns before the first full window
                warnings.simplefilter("ignore", RuntimeWarning)
                mean, lo, hi = band(curves, 0, grid)
            ax.plot(grid, mean, color=color, linewidth=2, label="mean over seeds")
            ax.fill_between(grid, lo, hi, color=color, alpha=0.15, linewidth=0, label="min–max")
        ax.axhline(raw["threshold"], color="grey", linestyle="--", linewidth=1, label="threshold")
        solved = sum(summarize(r, raw["threshold"])["solved"] for r in runs)
        ax.set_title(f"{Path(label).name}: solved {solved}/{len(runs)}", fontsize=10)
        ax.set_xlabel("environment steps")
        ax.xaxis.set_major_formatter(lambda x, _: f"{x / 1000:g}k")
        ax.set_ylabel(f"return, mean of last {WINDOW}")
        ax.set_xlim(0, end)
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(labels) :]:
        ax.axis("off")
    axes.flat[0].legend(loc="best", fontsize=7)
    title = raw.get("title") or raw["env_id"]
    fig.suptitle(f"{title}\neach seed (thin), their mean (bold) and min–max (shaded)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def report(raw, out):
    table = make_table(raw)
    (out / "table.md").write_text(table)
    (make_panels if raw.get("panels") else make_plot)(raw, out / "curves.png")
    print(table)
    print(f"wrote {out / 'raw.json'}, {out / 'table.md'}, {out / 'curves.png'}")


def appended_to(args, out):
    """--append: the runs of OUT/raw.json, if it exists and was made with the same settings."""
    path = out / "raw.json"
    if not path.exists():
        return []
    raw = json.loads(path.read_text())
    same = (raw["env_id"], raw["total_timesteps"], raw["extra"].split())
    if same != (args.env_id, args.total_timesteps, args.extra.split()):
        sys.exit(
            f"run.py: error: --append: {path} was made with other --env-id, --total-timesteps "
            f"or --extra ({raw['env_id']}, {raw['total_timesteps']}, {raw['extra'].strip()!r})"
        )
    return raw["runs"]


def main(args):
    out = Path(args.out)
    if args.replot:
        raw = json.loads((out / "raw.json").read_text())
        raw["threshold"] = raw["threshold"] if args.threshold is None else args.threshold
        raw["baseline"] = pick_baseline(args.baseline, raw["scripts"]) or raw.get("baseline")
        raw["title"] = args.title or raw.get("title")
        raw["panels"] = args.panels or raw.get("panels")
        return report(raw, out)
    # A series is (label, script, its own flags); a plain script is its own label.
    series = [(s, s, "") for s in args.scripts] + [tuple(v) for v in args.variant]
    labels = [label for label, _, _ in series]
    baseline = pick_baseline(args.baseline, labels)
    out.mkdir(parents=True, exist_ok=True)
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    # Alternate: seed 1 of every script, then seed 2 of every script, ...
    own_seeds = {name: [int(x) for x in seeds.split()] for name, seeds in args.script_seeds}

    def seeds_of(label, script):  # matched by label, path as given or file name
        names = (label, script, Path(script).name)
        return next((own_seeds[n] for n in names if n in own_seeds), args.seeds)

    kept = appended_to(args, out) if args.append else []
    done = {(r["script"], r["seed"]) for r in kept}
    everyone = sorted({seed for label, script, _ in series for seed in seeds_of(label, script)})
    order = [(s, seed) for seed in everyone for s in series if seed in seeds_of(*s[:2])]
    order = [(s, seed) for s, seed in order if (s[0], seed) not in done]

    def job(i_item):
        i, ((label, script, flags), seed) = i_item
        run = run_one(args, label, script, flags, seed)
        m = summarize(run, args.threshold)
        result = "never reached the threshold"
        if m["reached"]:
            result = (
                f"reached at step {m['steps_to_threshold']} ({m['seconds_to_threshold']:.1f} s)"
            )
            result += "" if m["solved"] else ", NOT solved at the end"
        if run["returncode"] != 0:
            result += f"; EXIT {run['returncode']}, see {run['run_dir']}/stdout.log"
        print(
            f"[{i + 1}/{len(order)}] {label} seed {seed}: {run['wall_s']:.1f} s, {result}",
            flush=True,
        )
        return run

    with ThreadPoolExecutor(args.jobs) as pool:
        runs = list(pool.map(job, enumerate(order)))
    labels += [label for label in dict.fromkeys(r["script"] for r in kept) if label not in labels]
    runs = sorted(kept + runs, key=lambda r: (r["seed"], labels.index(r["script"])))
    raw = {
        "env_id": args.env_id,
        "threshold": args.threshold,
        "scripts": labels,
        "variants": {label: [script, flags] for label, script, flags in args.variant},
        "title": args.title,
        "panels": args.panels,
        "seeds": sorted({r["seed"] for r in runs} | set(args.seeds)),
        "script_seeds": args.script_seeds,
        "baseline": baseline,
        "total_timesteps": args.total_timesteps,
        "extra": args.extra,
        "script_extra": args.script_extra,
        "jobs": args.jobs,
        "python": args.python,
        "started": started,
        "runs": [{**r, "summary": summarize(r, args.threshold)} for r in runs],
    }
    (out / "raw.json").write_text(json.dumps(raw, indent=1))
    report(raw, out)
    failed = [f"{r['script']} seed {r['seed']}" for r in runs if r["returncode"] != 0]
    if failed:
        print(f"{len(failed)} run(s) exited non-zero: {', '.join(failed)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main(parse_args())
