# SPDX-License-Identifier: MIT
"""Torch's CPU threads: one against every core, alone, two runs at once, beside a CPU burner.

ppo_gae.py on CartPole-v1 at its defaults but the rollout's size: 64 steps of 32, 512 and
2,048 envs (2,048, 32,768 and 131,072 steps a rollout), each with --threads 1 and with
--threads N, N the cores. Each run is timed three ways: alone; two of the same at once (as
benchmarks/run.py --jobs 2 runs seeds); and beside one process that keeps a core busy (a
machine with other work). The figure is the run's own SPS (steps over training seconds),
the median of --repeats runs; "two at once" gives the mean of the pair's. The table is what
--threads' default (one thread) follows from: docs/results.md#threads-and-processes-on-2-cores.

    python benchmarks/threads.py --out benchmarks/results/sps/threads    # ~5 minutes on 2 cores
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import json, sys, tempfile
sys.path.insert(0, ".")
import ppo_gae
with tempfile.TemporaryDirectory() as run_dir:
    args = ppo_gae.parse_args(sys.argv[1:] + ["--eval-episodes", "0", "--run-dir", run_dir])
    print(json.dumps(ppo_gae.train(args)["sps"]))
"""
BURNER = "while True: pass"
HOW = ("alone", "two at once", "beside a burner")


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--num-envs", nargs="+", type=int, default=[32, 512, 2048])
    p.add_argument("--num-steps", type=int, default=64)
    p.add_argument("--iterations", type=int, default=6, help="rollouts and updates a run")
    p.add_argument("--cores", type=int, default=os.cpu_count(), help="N of --threads N")
    p.add_argument("--repeats", type=int, default=2, help="runs a point; the median is shown")
    p.add_argument("--out", required=True, help="folder for raw.json and table.md")
    return p.parse_args(argv)


def start(num_envs, threads, args):
    """A run of ppo_gae.py in a process of its own, as a user starts one."""
    flags = ["--num-envs", str(num_envs), "--num-steps", str(args.num_steps)]
    flags += ["--total-timesteps", str(args.iterations * num_envs * args.num_steps)]
    flags += ["--threads", str(threads)]
    command = [sys.executable, "-c", CHILD, *flags]
    return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)


def sps(proc):
    out, _ = proc.communicate()
    if proc.returncode != 0:
        sys.exit(f"threads.py: a run failed with status {proc.returncode}")
    return json.loads(out.strip().splitlines()[-1])


def measure(num_envs, threads, how, args):
    """The SPS of one point: alone, two at once (their mean), or beside a burner."""
    burner = subprocess.Popen([sys.executable, "-c", BURNER]) if how == HOW[2] else None
    try:
        runs = [start(num_envs, threads, args) for _ in range(2 if how == HOW[1] else 1)]
        return statistics.fmean(sps(proc) for proc in runs)
    finally:
        if burner:
            burner.kill()
            burner.wait()


def table(raw):
    cores = raw["cores"]
    lines = [
        f"SPS of ppo_gae.py on CartPole-v1 (median of {raw['repeats']} runs) on {cores} cores."
    ]
    lines += ["", "| rollout (steps) | threads | " + " | ".join(HOW) + " |"]
    lines += ["|---|---|" + "---|" * len(HOW)]
    for num_envs in raw["num_envs"]:
        for threads in dict.fromkeys((1, cores)):
            row = [
                r for r in raw["results"] if (r["num_envs"], r["threads"]) == (num_envs, threads)
            ]
            figures = [
                f"{statistics.median(r['sps']):,.0f}" for how in HOW for r in row if r["how"] == how
            ]
            batch = num_envs * raw["num_steps"]
            lines.append(f"| {batch:,} | {threads} | " + " | ".join(figures) + " |")
    return "\n".join(lines) + "\n"


def main(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    raw = dict(cores=args.cores, num_steps=args.num_steps, repeats=args.repeats, results=[])
    raw |= dict(num_envs=args.num_envs, iterations=args.iterations)
    for num_envs in args.num_envs:
        for threads in dict.fromkeys((1, args.cores)):
            for how in HOW:
                figures = [measure(num_envs, threads, how, args) for _ in range(args.repeats)]
                raw["results"].append(
                    dict(num_envs=num_envs, threads=threads, how=how, sps=figures)
                )
                print(f"{num_envs} envs, {threads} threads, {how}: {figures}", flush=True)
    (out / "raw.json").write_text(json.dumps(raw, indent=1))
    (out / "table.md").write_text(table(raw))
    print(table(raw))


if __name__ == "__main__":
    main(parse_args())
