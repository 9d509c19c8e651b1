# SPDX-License-Identifier: MIT
"""Throughput of ppo_gae.py against --num-envs: gymnasium's CartPole-v1 and CartPoleTorch-v1.

Each point is a short ppo_gae.py run (--num-steps 64 --update-epochs 1, so the rollout weighs
as much as it can) in this process, timed per iteration: the rollout (stepping the envs, the
policy's forward pass, storing, logging the episodes) and the update (GAE, one epoch of
backward passes). The first iteration is a warm-up and is left out. SPS is env steps per second.

    python benchmarks/sps.py --out benchmarks/results/sps  # this CPU, ~10 minutes
    python benchmarks/sps.py --cuda --min-steps 131072 --out benchmarks/results/sps_cuda  # GPU

With --mujoco it times ppo_continuous.py with the MuJoCo recipe's batches (8 envs x 256 steps,
32 minibatches, 10 epochs; 64-unit networks, as in the comparison with SB3) on HalfCheetah-v5,
Hopper-v5 and Humanoid-v5: the rollout and the update apart, the rollout alone again with 1
epoch of 1 minibatch, and beside them the raw rate of the same 8 envs in a SyncVectorEnv with
random actions, no learning: how far from the simulator's own speed the script runs. With --compile
the same runs again with ppo_continuous.py --compile, side by side (compiling is in the first
iteration, which is left out: the 1M-step runs of docs/results.md count it).

    python benchmarks/sps.py --mujoco --compile --iterations 10 --out benchmarks/results/sps_mujoco
"""

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import ppo_continuous  # noqa: E402
import ppo_gae  # noqa: E402

ENV_IDS = (
    "CartPole-v1",
    "envs.cartpole_torch:CartPoleTorch-v1",
)  # gymnasium's "module:EnvId"


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument(
        "--num-envs",
        nargs="+",
        type=int,
        default=[16, 64, 256, 1024, 4096, 16384, 65536],
    )
    p.add_argument("--num-steps", type=int, default=64)
    p.add_argument("--update-epochs", type=int, default=1)
    p.add_argument(
        "--minibatch-size",
        type=int,
        default=16384,
        help="samples per minibatch (--num-minibatches = batch / this); 0: the whole batch",
    )
    p.add_argument(
        "--min-steps", type=int, default=2**19, help="env steps timed per point, at least"
    )
    p.add_argument("--cuda", action="store_true", help="train on the GPU")
    p.add_argument("--threads", type=int, default=1, help="the scripts' --threads")
    p.add_argument("--out", required=True, help="folder for raw.json, table.md, sps.png")
    p.add_argument("--replot", action="store_true", help="redo table and plot from raw.json")
    p.add_argument("--mujoco", action="store_true", help="ppo_continuous's recipe on MuJoCo")
    p.add_argument("--iterations", type=int, default=5, help="timed iterations per --mujoco run")
    p.add_argument("--envs", nargs="+", default=MUJOCO_ENVS, help="--mujoco: the envs timed")
    p.add_argument("--compile", action="store_true", help="--mujoco: eager, then --compile too")
    return p.parse_args(argv)


def timed(module, flags, cuda=False):
    """Seconds of rollout and of update for each iteration after the first, of a run of
    `module` with `flags` in this process: a rollout ends where GAE starts (compute_gae), an
    update where its log starts (Log.update)."""
    marks = []  # (what, time) at the end of each rollout and of each update
    compute_gae, log_update = module.compute_gae, module.Log.update

    def mark(what):
        if cuda:
            torch.cuda.synchronize()
        marks.append((what, time.perf_counter()))

    def end_of_rollout(*a, **k):
        mark("rollout")
        return compute_gae(*a, **k)

    def end_of_update(*a, **k):
        mark("update")
        return log_update(*a, **k)

    module.compute_gae, module.Log.update = end_of_rollout, end_of_update
    try:
        with tempfile.TemporaryDirectory() as run_dir:
            module.train(module.parse_args([*flags, "--eval-episodes", "0", "--run-dir", run_dir]))
    finally:
        module.compute_gae, module.Log.update = compute_gae, log_update
    times = [t for _, t in marks]
    rollouts = [b - a for a, b in zip(times[1::2], times[2::2], strict=False)]
    updates = [b - a for a, b in zip(times[2::2], times[3::2], strict=False)]
    return rollouts, updates


def measure(env_id, num_envs, args):
    """Seconds of rollout and of update for each iteration after the first."""
    batch = num_envs * args.num_steps
    iterations = 1 + max(3, -(-args.min_steps // batch))
    flags = ["--env-id", env_id, "--num-envs", str(num_envs), "--num-steps", str(args.num_steps)]
    minibatches = max(1, batch // args.minibatch_size) if args.minibatch_size else 1
    flags += ["--update-epochs", str(args.update_epochs), "--num-minibatches", str(minibatches)]
    flags += ["--total-timesteps", str(iterations * batch)]
    flags += ["--cuda"] if args.cuda else []
    rollouts, updates = timed(ppo_gae, flags + ["--threads", str(args.threads)], args.cuda)
    return {
        "minibatches": minibatches,
        "env_id": env_id.split(":")[-1],  # CartPoleTorch-v1
        "num_envs": num_envs,
        "batch": batch,
        "rollouts": rollouts,
        "updates": updates,
    }


MUJOCO_ENVS = ("HalfCheetah-v5", "Hopper-v5", "Humanoid-v5")
RECIPE = "--num-envs 8 --num-steps 256 --num-minibatches 32 --learning-rate 3e-4 --gamma 0.99"
RECIPE += " --log-std-init -0.5"  # R's batches, 64-unit networks: the SB3 comparison's


def raw_rate(env_id, num_envs=8, steps=2000):
    """Env steps per second of num_envs envs in a SyncVectorEnv with random actions."""
    import gymnasium as gym

    envs = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="sync")
    envs.reset(seed=0)
    envs.action_space.seed(0)
    actions = [envs.action_space.sample() for _ in range(64)]
    for i in range(100):  # warm-up
        envs.step(actions[i % 64])
    start = time.perf_counter()
    for i in range(steps):
        envs.step(actions[i % 64])
    envs.close()
    return steps * num_envs / (time.perf_counter() - start)


def measure_mujoco(env_id, args):
    total = ["--total-timesteps", str((args.iterations + 1) * 2048), "--env-id", env_id]
    total += ["--threads", str(args.threads)]
    rollouts, updates = timed(ppo_continuous, RECIPE.split() + total)
    one = "--update-epochs 1 --num-minibatches 1".split()
    rollouts_one, updates_one = timed(ppo_continuous, RECIPE.split() + total + one)
    return dict(
        env_id=env_id,
        batch=2048,
        raw_sps=raw_rate(env_id),
        rollouts=rollouts,
        updates=updates,
        rollouts_one=rollouts_one,
        updates_one=updates_one,
    ) | (compiled(total) if args.compile else {})


def compiled(total):
    """The same timed run with --compile (its first iteration, compiling, left out)."""
    rollouts, updates = timed(ppo_continuous, RECIPE.split() + total + ["--compile"])
    return dict(rollouts_compiled=rollouts, updates_compiled=updates)


def make_mujoco_table(raw):
    lines = [
        f"ppo_continuous.py with the MuJoCo recipe (8 envs x 256 steps, 32 minibatches of 64, "
        f"10 epochs, 64-unit networks) on {raw['device']}, one torch thread, alone on the "
        "machine. SPS: env steps per second, median over the timed iterations. Raw: the same "
        "8 envs in a SyncVectorEnv with random actions and no learning. Compiled: the same runs "
        "with --compile (compiling, in the first iteration, is left out).",
        "",
        "| env | raw SPS | rollout SPS | rollout / raw | update SPS | SPS, rollout + update | "
        "SPS with 1 epoch of 1 minibatch |",
        "|---|---|---|---|---|---|---|",
    ]
    compiled_rows = [
        "",
        "| env | update SPS: eager, compiled | speed-up of the update | "
        "SPS: eager, compiled | compiled / raw |",
        "|---|---|---|---|---|",
    ]
    for r in raw["results"]:
        rollout, update = statistics.median(r["rollouts"]), statistics.median(r["updates"])
        pairs = zip(r["rollouts_one"], r["updates_one"], strict=False)
        one = statistics.median([a + b for a, b in pairs])
        row = [r["env_id"], f"{r['raw_sps']:,.0f}", f"{r['batch'] / rollout:,.0f}"]
        row += [f"{r['batch'] / rollout / r['raw_sps']:.0%}", f"{r['batch'] / update:,.0f}"]
        row += [f"{r['batch'] / (rollout + update):,.0f}", f"{r['batch'] / one:,.0f}"]
        lines.append("| " + " | ".join(row) + " |")
        if "updates_compiled" in r:
            fast = statistics.median(r["updates_compiled"])
            both = fast + statistics.median(r["rollouts_compiled"])
            cells = [r["env_id"], f"{r['batch'] / update:,.0f}, {r['batch'] / fast:,.0f}"]
            cells += [f"{update / fast:.2f}x", f"{r['batch'] / (rollout + update):,.0f}, "]
            cells[-1] += f"{r['batch'] / both:,.0f}"
            cells += [f"{r['batch'] / both / r['raw_sps']:.0%}"]
            compiled_rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines + (compiled_rows if len(compiled_rows) > 3 else [])) + "\n"


def make_mujoco_plot(raw, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    bars = (("raw env", None), ("rollout", "rollouts"), ("update", "updates"), ("both", None))
    for j, r in enumerate(raw["results"]):
        rollout, update = statistics.median(r["rollouts"]), statistics.median(r["updates"])
        values = (r["raw_sps"], 2048 / rollout, 2048 / update, 2048 / (rollout + update))
        for i, ((label, _), value) in enumerate(zip(bars, values, strict=True)):
            ax.bar(j + 0.2 * i - 0.3, value, 0.2, color=f"C{i}", label=label if j == 0 else None)
    ax.set_xticks(range(len(raw["results"])), [r["env_id"] for r in raw["results"]])
    ax.set_ylabel("env steps per second")
    ax.set_title(f"ppo_continuous.py, MuJoCo recipe, on {raw['device']}", fontsize=9)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def make_table(raw):
    if raw["minibatch_size"]:
        size = f"minibatches of {raw['minibatch_size']:,} samples, or the whole batch if smaller"
    else:
        size = "one minibatch: the whole batch"
    lines = [
        f"ppo_gae.py, --num-steps {raw['num_steps']} --update-epochs {raw['update_epochs']}, "
        f"{size} (the last column), on {raw['device']}. SPS: env steps per second, median "
        "over the timed iterations. With 32,768 or more steps per rollout the scripts use "
        "every core torch sees, below that one thread.",
        "",
        "| env | --num-envs | SPS, rollout + update | rollout SPS | update SPS | "
        "rollout share of the time | --num-minibatches |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in raw["results"]:
        rollout, update = statistics.median(r["rollouts"]), statistics.median(r["updates"])
        row = [r["env_id"], f"{r['num_envs']:,}", f"{r['batch'] / (rollout + update):,.0f}"]
        row += [f"{r['batch'] / rollout:,.0f}", f"{r['batch'] / update:,.0f}"]
        row += [f"{rollout / (rollout + update):.0%}", str(r.get("minibatches", 1))]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def make_plot(raw, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for i, env_id in enumerate(name.split(":")[-1] for name in ENV_IDS):
        rs = [r for r in raw["results"] if r["env_id"] == env_id]
        if not rs:
            continue
        n = [r["num_envs"] for r in rs]
        for what, style in (("total", "-"), ("rollout", ":")):
            sps = []
            for r in rs:
                rollouts, updates = r["rollouts"], r["updates"]
                both = [a + b for a, b in zip(rollouts, updates, strict=True)]
                seconds = both if what == "total" else rollouts
                sps.append([r["batch"] / s for s in seconds])
            mid = [statistics.median(s) for s in sps]
            label = f"{env_id}, {'rollout + update' if what == 'total' else 'rollout only'}"
            ax.plot(n, mid, style, marker="o", color=f"C{i}", label=label)
            ax.fill_between(
                n, [min(s) for s in sps], [max(s) for s in sps], color=f"C{i}", alpha=0.15
            )
    ax.set_xscale("log", base=2)
    ticks = sorted({r["num_envs"] for r in raw["results"]})
    ax.set_xticks(ticks, [f"{n:,}" for n in ticks])
    ax.set_yscale("log")
    ax.set_xlabel("--num-envs")
    ax.set_ylabel("env steps per second")
    ax.set_title(
        f"ppo_gae.py throughput on {raw['device']}\n(--num-steps {raw['num_steps']}, "
        f"--update-epochs {raw['update_epochs']}; median, min–max over iterations)",
        fontsize=9,
    )
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main_mujoco(args, out):
    if args.replot:
        raw = json.loads((out / "raw.json").read_text())
    else:
        device = f"{platform.machine()} CPU, {args.threads} of {os.cpu_count()} cores"
        raw = {"device": device, "results": []}
        for env_id in args.envs:
            raw["results"].append(measure_mujoco(env_id, args))
            print(make_mujoco_table(raw).splitlines()[-1], flush=True)
        (out / "raw.json").write_text(json.dumps(raw, indent=1))
    table = make_mujoco_table(raw)
    (out / "table.md").write_text(table)
    make_mujoco_plot(raw, out / "sps.png")
    print(table)


def main(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.mujoco:
        return main_mujoco(args, out)
    if args.replot:
        raw = json.loads((out / "raw.json").read_text())
    else:
        if args.cuda:
            device = torch.cuda.get_device_name()
        else:
            device = f"{platform.machine()} CPU, {args.threads} of {os.cpu_count()} cores"
        raw = {"num_steps": args.num_steps, "update_epochs": args.update_epochs}
        raw["minibatch_size"] = args.minibatch_size
        raw |= {"device": device, "results": []}
        for env_id in ENV_IDS:
            for num_envs in args.num_envs:
                r = measure(env_id, num_envs, args)
                raw["results"].append(r)
                print(make_table({**raw, "results": [r]}).splitlines()[-1], flush=True)
        (out / "raw.json").write_text(json.dumps(raw, indent=1))
    table = make_table(raw)
    (out / "table.md").write_text(table)
    make_plot(raw, out / "sps.png")
    print(table)
    print(f"wrote {out / 'raw.json'}, {out / 'table.md'}, {out / 'sps.png'}")


if __name__ == "__main__":
    main(parse_args())
