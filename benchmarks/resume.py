# SPDX-License-Identifier: MIT
"""Does a run stopped by SIGTERM halfway and resumed still solve? Each seed twice, with the
script's defaults: once never stopped, once sent SIGTERM as soon as a checkpoint at half of
--total-timesteps or later is on disk, then `--resume`d to the end. The score of a run is its
final greedy evaluation (the mean of its --eval-episodes episodes), solved at the threshold.

    python benchmarks/resume.py --scripts reinforce.py vpg.py ppo.py ppo_gae.py ppo_continuous.py \\
        --seeds 1 2 3 4 5 --out benchmarks/results/resume
"""

import argparse
import importlib
import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

ROOT = Path(__file__).resolve().parent.parent
THRESHOLD = {"CartPole-v1": 475.0, "Pendulum-v1": -200.0}  # as in the README's headline table


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scripts", nargs="+", default=["ppo_gae.py", "ppo_continuous.py"])
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3, 4, 5])
    p.add_argument("--total-timesteps", type=int, help="each run's; default: the script's own")
    p.add_argument("--out", required=True, help="folder for raw.json, table.md and the runs")
    return p.parse_args(argv)


def defaults(script):
    """The script's own default flags."""
    sys.path.insert(0, str(ROOT))
    return importlib.import_module(Path(script).stem).parse_args([])


def evaluation(run_dir):
    events = EventAccumulator(str(run_dir))
    events.Reload()
    return float(np.mean([e.value for e in events.Scalars("eval/episodic_return")]))


def checkpoint_step(path):
    try:
        return torch.load(path, map_location="cpu", weights_only=True)["global_step"]
    except FileNotFoundError:
        return -1


def one(script, seed, run_dir, stop, total=None):
    """One run, never stopped or stopped halfway: (wall seconds, step stopped at or None)."""
    total = total or defaults(script).total_timesteps
    command = [sys.executable, str(ROOT / script), "--seed", str(seed), "--run-dir", str(run_dir)]
    command += ["--checkpoint-every", str(total // 10), "--total-timesteps", str(total)]
    shutil.rmtree(run_dir, ignore_errors=True)  # this tool's own run of an earlier time
    start, stopped_at = time.time(), None
    with open(run_dir.parent / f"{run_dir.name}.log", "w") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        while stop and proc.poll() is None:
            if checkpoint_step(run_dir / "checkpoint.pt") >= total // 2:
                proc.send_signal(signal.SIGTERM)
                stopped_at = checkpoint_step(run_dir / "checkpoint.pt")
                break
            time.sleep(0.1)
        expected = -signal.SIGTERM if stopped_at is not None else 0  # ended by the signal itself
        if proc.wait() != expected:
            sys.exit(f"{command} exited with {proc.returncode}, not {expected}")
        if stopped_at is not None:
            resume = [sys.executable, str(ROOT / script), "--resume", str(run_dir)]
            subprocess.run(resume, stdout=log, stderr=subprocess.STDOUT, check=True)
    return time.time() - start, stopped_at


def main(args):
    out = Path(args.out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    rows = []
    for script in args.scripts:
        env_id = defaults(script).env_id
        for seed in args.seeds:
            for stop in (False, True):
                run_dir = (
                    out / "runs" / f"{Path(script).stem}__{seed}__{'stopped' if stop else 'whole'}"
                )
                wall, stopped_at = one(script, seed, run_dir, stop, args.total_timesteps)
                score = evaluation(run_dir)
                rows.append(
                    dict(
                        script=script,
                        env_id=env_id,
                        seed=seed,
                        stopped_at=stopped_at,
                        eval=score,
                        solved=score >= THRESHOLD[env_id],
                        wall=wall,
                    )
                )
                print(rows[-1], flush=True)
    (out / "raw.json").write_text(json.dumps(rows, indent=1))
    (out / "table.md").write_text(table(rows))
    print(table(rows))


def table(rows):
    lines = ["| script | env (threshold) | run | solved | final greedy eval, per seed | mean |"]
    lines += ["|---|---|---|---|---|---|"]
    for script in dict.fromkeys(r["script"] for r in rows):
        for stop in (False, True):
            runs = [
                r for r in rows if r["script"] == script and (r["stopped_at"] is not None) == stop
            ]
            env_id = runs[0]["env_id"]
            how = "SIGTERM halfway, resumed" if stop else "never stopped"
            scores = ", ".join(f"{r['eval']:.1f}" for r in runs)
            solved = f"{sum(r['solved'] for r in runs)}/{len(runs)}"
            mean = np.mean([r["eval"] for r in runs])
            env = f"{env_id} ({THRESHOLD[env_id]:g})"
            lines.append(f"| {script} | {env} | {how} | {solved} | {scores} | {mean:.1f} |")
    stops = [f"{r['stopped_at']:,}" for r in rows if r["stopped_at"] is not None]
    lines += ["", f"Stopped at the checkpoint of step: {', '.join(stops)} (seeds in order)."]
    lines += ["Per-seed figures are machine-specific: float results differ between CPUs."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main(parse_args())
