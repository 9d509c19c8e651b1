# SPDX-License-Identifier: MIT
"""When do env processes (--async-envs) pay? Sync against async on MuJoCo, as env steps per
second: the envs alone (random actions), the rollout of ppo_continuous.py (one epoch of one
minibatch, so the update is nearly free), and ppo_continuous.py with the MuJoCo recipe.

    python benchmarks/async_envs.py --envs HalfCheetah-v5 Humanoid-v5 --num-envs 8 16 \\
        --out benchmarks/results/async_envs

Run it alone on the machine: every other process takes cores from the env processes.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import ppo_continuous  # noqa: E402

RECIPE = "--num-steps 256 --num-minibatches 32 --update-epochs 10 --learning-rate 3e-4"
RECIPE += " --gamma 0.99 --gae-lambda 0.95 --log-std-init -0.5"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--envs", nargs="+", default=["HalfCheetah-v5", "Humanoid-v5"])
    p.add_argument("--num-envs", nargs="+", type=int, default=[8, 16])
    p.add_argument("--raw-steps", type=int, default=40_000, help="env steps timed, envs alone")
    p.add_argument("--iterations", type=int, default=4, help="rollouts per training run")
    p.add_argument("--out", required=True, help="folder for raw.json and table.md")
    return p.parse_args(argv)


def raw_rate(env_id, num_envs, processes, steps):
    """Env steps per second with random actions, through the scripts' own make_env."""
    argv = ["--env-id", env_id, "--num-envs", str(num_envs), "--gamma", "0.99"]
    argv += ["--async-envs"] if processes else []
    envs = ppo_continuous.make_env(ppo_continuous.parse_args(argv), torch.device("cpu"))
    envs.reset(seed=1)
    low = torch.as_tensor(envs.single_action_space.low)
    high = torch.as_tensor(envs.single_action_space.high)
    start = time.perf_counter()
    for _ in range(steps // num_envs):
        envs.step(low + (high - low) * torch.rand(num_envs, len(low)))
    rate = steps / (time.perf_counter() - start)
    envs.close()
    return rate


def training_rate(env_id, num_envs, processes, iterations, rollout_only):
    """SPS of ppo_continuous.py with the recipe (or one epoch of one minibatch)."""
    argv = [*RECIPE.split(), "--env-id", env_id, "--num-envs", str(num_envs)]
    argv += ["--total-timesteps", str(iterations * num_envs * 256), "--eval-episodes", "0"]
    argv += ["--update-epochs", "1", "--num-minibatches", "1"] if rollout_only else []
    argv += ["--async-envs"] if processes else []
    with tempfile.TemporaryDirectory() as run_dir:
        return ppo_continuous.train(ppo_continuous.parse_args([*argv, "--run-dir", run_dir]))["sps"]


def main(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for env_id in args.envs:
        for num_envs in args.num_envs:
            for processes in (False, True):
                row = dict(env_id=env_id, num_envs=num_envs, mode="async" if processes else "sync")
                row["raw"] = raw_rate(env_id, num_envs, processes, args.raw_steps)
                row["rollout"] = training_rate(env_id, num_envs, processes, args.iterations, True)
                row["recipe"] = training_rate(env_id, num_envs, processes, args.iterations, False)
                rows.append(row)
                print(row, flush=True)
    (out / "raw.json").write_text(json.dumps(rows, indent=1))
    lines = [f"Env steps per second on {os.cpu_count()} cores; per-machine figures.", ""]
    lines += ["| env | envs | mode | envs alone | rollout (1 epoch, 1 minibatch) | recipe R |"]
    lines += ["|---|---|---|---|---|---|"]
    for r in rows:
        cells = f"{r['raw']:,.0f} | {r['rollout']:,} | {r['recipe']:,}"
        lines.append(f"| {r['env_id']} | {r['num_envs']} | {r['mode']} | {cells} |")
    (out / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(parse_args())
