# SPDX-License-Identifier: MIT
"""Greedy or sampled: how the way a trained agent is evaluated changes its score.

Every script ends with a greedy evaluation: the most likely action (ppo_gae.py) or the mean
action (ppo_continuous.py). Training returns come from sampled actions. This trains each
script for a few budgets on seeds 1-5 and evaluates every agent both ways, on the same
episode seeds. The sampled evaluation runs the script's own evaluate() and greedy_action()
with the noise put back: argmax(logits + Gumbel noise) is a draw from Categorical(logits)
(the Gumbel-max trick), and mu + sigma * N(0, 1) one from the Gaussian policy.

    python benchmarks/eval_modes.py --out benchmarks/results/eval_modes
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import ppo_continuous  # noqa: E402
import ppo_gae  # noqa: E402

CASES = {  # env id: (script module, training budgets in env steps)
    "CartPole-v1": (ppo_gae, [10_000, 20_000, 40_000, 60_000]),
    "Pendulum-v1": (ppo_continuous, [50_000, 100_000, 150_000]),
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3, 4, 5])
    p.add_argument("--episodes", type=int, default=20, help="evaluation episodes per mode")
    p.add_argument("--out", required=True, help="folder for raw.json, table.md, eval_modes.png")
    p.add_argument("--replot", action="store_true", help="redo table and plot from raw.json")
    p.add_argument(
        "--budgets", nargs="+", type=int, help="training steps, every env; default: CASES'"
    )
    return p.parse_args(argv)


class Sampled:
    """An Agent whose greedy_action, the lesson's, draws from its policy instead: the action
    the evaluation takes reads the Agent's actor (or actor_mean), the lesson's names, and these
    put the noise back. Every other attribute (obs_norm, say) is the Agent's own."""

    def __init__(self, agent, seed):
        self.agent = agent
        self.generator = torch.Generator().manual_seed(seed)

    def __getattr__(self, name):
        return getattr(self.agent, name)

    def actor(self, x):  # argmax of this is a sample of Categorical(logits)
        logits = self.agent.actor(x)
        uniform = torch.rand(logits.shape, generator=self.generator).clamp(min=1e-20)
        return logits - torch.log(-torch.log(uniform))

    def actor_mean(self, x):  # a sample of Normal(mu, sigma)
        mean = self.agent.actor_mean(x)
        noise = torch.randn(mean.shape, generator=self.generator)
        return mean + self.agent.actor_logstd.exp() * noise


def measure(module, env_id, budget, seed, episodes):
    """Train `module` for `budget` steps; its greedy and its sampled evaluation returns."""
    with tempfile.TemporaryDirectory() as run_dir:
        flags = ["--env-id", env_id, "--seed", str(seed), "--total-timesteps", str(budget)]
        flags += ["--eval-episodes", str(episodes), "--run-dir", run_dir]
        result = module.train(module.parse_args(flags))
    agent, device = result["agent"].cpu(), torch.device("cpu")
    env = module.make_eval_env(env_id)
    # the same episode seeds as the script's own (greedy) evaluation
    sampled = module.evaluate(Sampled(agent, seed), env, episodes, seed + 10_000, device)
    env.close()
    return {"greedy": result["eval_returns"], "sampled": sampled}


def spread(values, fmt="{:.1f}"):
    med, lo, hi = statistics.median(values), min(values), max(values)
    return f"{fmt.format(med)} ({fmt.format(lo)} to {fmt.format(hi)})"


def make_table(raw):
    lines = [
        f"Mean return over {raw['episodes']} evaluation episodes (the same episode seeds for "
        f"both), median (min to max) over seeds {', '.join(map(str, raw['seeds']))}.",
        "",
        "| env, script | trained for | greedy | sampled | sampled minus greedy |",
        "|---|---|---|---|---|",
    ]
    for env_id, script in raw["scripts"].items():
        for budget in raw["budgets"][env_id]:
            rs = [r for r in raw["results"] if r["env_id"] == env_id and r["budget"] == budget]
            greedy = [statistics.fmean(r["greedy"]) for r in rs]
            sampled = [statistics.fmean(r["sampled"]) for r in rs]
            diff = [s - g for s, g in zip(sampled, greedy, strict=True)]
            row = [f"{env_id}, {script}", f"{budget:,} steps", spread(greedy), spread(sampled)]
            lines.append("| " + " | ".join(row + [spread(diff)]) + " |")
    return "\n".join(lines) + "\n"


def make_plot(raw, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(raw["scripts"]), figsize=(12, 4.5))
    for ax, (env_id, script) in zip(axes, raw["scripts"].items(), strict=True):
        budgets = raw["budgets"][env_id]
        for mode in ("greedy", "sampled"):
            per_seed = np.array(
                [
                    [
                        statistics.fmean(r[mode])
                        for r in raw["results"]
                        if r["env_id"] == env_id and r["budget"] == b
                    ]
                    for b in budgets
                ]
            )
            (line,) = ax.plot(budgets, per_seed.mean(1), marker="o", label=f"{mode} actions")
            ax.fill_between(
                budgets, per_seed.min(1), per_seed.max(1), color=line.get_color(), alpha=0.2
            )
        ax.set_title(f"{env_id}, {script}")
        ax.set_xlabel("environment steps of training (each budget is its own run)")
        ax.set_ylabel(f"evaluation return, mean of {raw['episodes']} episodes")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    seeds = len(raw["seeds"])
    fig.suptitle(f"Greedy versus sampled evaluation: mean and min–max over {seeds} seeds")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.replot:
        raw = json.loads((out / "raw.json").read_text())
    else:
        raw = {"seeds": args.seeds, "episodes": args.episodes, "results": []}
        raw["scripts"] = {env_id: f"{m.__name__}.py" for env_id, (m, _) in CASES.items()}
        raw["budgets"] = {env_id: args.budgets or b for env_id, (_, b) in CASES.items()}
        for env_id, (module, _) in CASES.items():
            budgets = raw["budgets"][env_id]
            for seed in args.seeds:
                for budget in budgets:
                    t0 = time.time()
                    r = measure(module, env_id, budget, seed, args.episodes)
                    raw["results"].append({"env_id": env_id, "seed": seed, "budget": budget, **r})
                    print(
                        f"{env_id} seed {seed}, {budget} steps: greedy "
                        f"{statistics.fmean(r['greedy']):.1f}, sampled "
                        f"{statistics.fmean(r['sampled']):.1f} ({time.time() - t0:.0f} s)",
                        flush=True,
                    )
        (out / "raw.json").write_text(json.dumps(raw, indent=1))
    table = make_table(raw)
    (out / "table.md").write_text(table)
    make_plot(raw, out / "eval_modes.png")
    print(table)
    print(f"wrote {out / 'raw.json'}, {out / 'table.md'}, {out / 'eval_modes.png'}")


if __name__ == "__main__":
    main(parse_args())
