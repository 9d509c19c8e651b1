# SPDX-License-Identifier: MIT
"""--compile against eager, side by side: recipe R's 1M-step runs of race.py, two queues at once.

race.py --core puts one queue on one core: one eager (OUT_EAGER), one with --compile (OUT), the
same envs and seeds in the same order, so each pair ran at the same time on the same machine.
This reads both raw.json files and writes OUT/table.md: per env and seed, the seconds from
launch to the last training episode (compiling included) and the mean return of the 10 greedy
evaluation episodes; per return level (race.py's), the seconds of each side and the ratio
compiled / eager. With the race of another day (RACE, whose peer is rl-zoo3), it also gives the
ratio to rl-zoo3 that the compile would make of that race's: that race's ratio times the
compiled / eager ratio of the same seed and level (its eager runs ran on another day).

    python benchmarks/compile_race.py --out benchmarks/results/mujoco_vs_sb3/race_compile \\
        --eager benchmarks/results/mujoco_vs_sb3/race_eager \\
        --race benchmarks/results/mujoco_vs_sb3/race
"""

import argparse
import bisect
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import race  # noqa: E402  (levels, crossings, the published figures)
import run as runs  # noqa: E402  (TensorBoard events)


def evaluation(record, folder):
    """The mean of the run's greedy evaluation episodes, if it has them: race.py keeps their
    returns in the record; for a run of before, they are read from its TensorBoard events."""
    if "evaluation" not in record and folder.exists():
        events = runs.read_scalars(folder / "ours").get("eval/episodic_return", [])
        record["evaluation"] = [value for _, _, value in events]
    returns = record.get("evaluation")
    return statistics.mean(returns) if returns else None


def ahead_from(eager, fast):
    """The env step from which the compiled run's clock stays at or below the eager run's: where
    compiling has paid for itself (None if it never does). Each run's clock at a step is read at
    its first episode end from that step on (past the eager run's last, there is none)."""
    steps, start = [step for step, _, _ in eager], None
    for step, seconds, _ in fast:
        i = bisect.bisect_left(steps, step)
        if i < len(steps):
            start = None if seconds > eager[i][1] else start or step
    return start


def median(values):
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def table(env_id, pairs, old, folders):
    """Markdown for one env: per seed, then per level."""
    lines = [f"### {env_id} (published figure {race.FIGURES[env_id]})", ""]
    lines += ["| seed | seconds to 1M: eager, compiled (ratio) | compiled ahead from step | "]
    lines[-1] += "evaluation: eager, compiled |"
    lines += ["|---|---|---|---|"]
    for seed, (eager, fast) in pairs.items():
        ends = [record["episodes"][-1][1] for record in (eager, fast)]
        runs_of = [Path(folder) / "runs" / f"{env_id}__seed{seed}" for folder in folders]
        pairs_of = zip((eager, fast), runs_of, strict=True)
        evals = [evaluation(record, folder) for record, folder in pairs_of]
        shown = ", ".join(f"{e:.0f}" if e is not None else "—" for e in evals)
        ahead = ahead_from(eager["episodes"], fast["episodes"])
        ahead = f"{ahead:,}" if ahead else "never"
        seconds = f"{ends[0]:.0f}, {ends[1]:.0f} ({ends[1] / ends[0]:.2f})"
        lines.append(f"| {seed} | {seconds} | {ahead} | {shown} |")
    lines += ["", "| level | compiled / eager, time: median (range) | ours / rl-zoo3 then | "]
    lines[-1] += "with the compile |"
    lines += ["|---|---|---|---|"]
    seeds = {s: dict(ours=p[0], peer=p[0]) for s, p in pairs.items()}
    for level in race.levels(race.FIGURES[env_id], seeds):
        factors, before, after = [], [], []
        for seed, (eager, fast) in pairs.items():
            e, c = (race.crossing(record["episodes"], level) for record in (eager, fast))
            if e and c:
                factors.append(c[1] / e[1])
            record = old.get(env_id, {}).get(seed, {})  # both sides, or none
            o, z = (race.crossing(record.get(s, {}).get("episodes", []), level) for s in race.SIDES)
            if e and c and o and z:
                before.append(o[1] / z[1])
                after.append(o[1] / z[1] * c[1] / e[1])
        cells = [median(x) if x else "—" for x in (factors, before, after)]
        lines.append(f"| {level:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="race.py --compile's folder; table.md goes here")
    p.add_argument("--eager", required=True, help="race.py's folder of the eager queue beside it")
    p.add_argument("--race", help="a race against rl-zoo3 (its raw.json), for the ratios")
    args = p.parse_args(argv)
    fast, eager = (json.loads((Path(d) / "raw.json").read_text()) for d in (args.out, args.eager))
    old = json.loads((Path(args.race) / "raw.json").read_text()) if args.race else {}
    text = []
    for env_id in fast:
        pairs = {
            seed: (eager[env_id][seed]["ours"], record["ours"])
            for seed, record in fast[env_id].items()
            if "ours" in record and "ours" in eager.get(env_id, {}).get(seed, {})
        }
        if pairs:
            text.append(table(env_id, pairs, old, (args.eager, args.out)))
    intro = (
        f"ppo_continuous.py, recipe R, 1M steps: --compile ({args.out}) and eager ({args.eager}) "
        "side by side, a queue a core (race.py --core). Seconds from launch to the last training "
        "episode; the evaluation is the mean of 10 greedy episodes. Levels as in race.py; "
        f"rl-zoo3's times are those of {args.race or 'no race'}, another day's.\n"
    )
    (Path(args.out) / "table.md").write_text("\n".join([intro, *text]))
    for folder, raw in ((args.out, fast), (args.eager, eager)):  # with the evaluations read
        (Path(folder) / "raw.json").write_text(json.dumps(raw))
    print("\n".join(text))


if __name__ == "__main__":
    main()
