# SPDX-License-Identifier: MIT
"""How much a baseline cuts the variance of the policy gradient: measured, not claimed.

Train vpg.py for a few budgets, freeze the agent, and sample many independent batches of
whole episodes from its policy. On every batch, compute the policy gradient
g = grad_theta mean_t log pi(a_t|s_t) * Psi_t with each weight Psi_t that the ladder uses:

    total return   R(tau) on every step                        (the first REINFORCE)
    reward-to-go   G_t                                          (reinforce.py)
    baseline       G_t - V(s_t)                                 (vpg.py)
    GAE lambda     sum_l (gamma lambda)^l delta_{t+l}           (ppo_gae.py; 1 gives G_t - V)

The estimator's variance is the mean over batches of ||g - mean g||^2. The first three
estimate the same gradient, so a smaller variance means fewer samples for the same accuracy.
GAE with lambda < 1 trades a little bias for less variance again; "cos to baseline" compares
its mean gradient's direction with the baseline's (1: the same direction). The weights are not
normalized here, so the estimators are compared as they are (the scripts normalize them).

    python benchmarks/grad_variance.py --out benchmarks/results/gradient_variance
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import ppo_gae  # noqa: E402  (compute_gae)
import vpg  # noqa: E402  (the agent, its training and discounted_returns)

GAES = ("GAE lambda 0.95", "GAE lambda 0")
ESTIMATORS = ("total return", "reward-to-go", "baseline", *GAES)


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--env-id", default="CartPole-v1")
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3, 4, 5])
    p.add_argument(
        "--budgets",
        nargs="+",
        type=int,
        default=[5_000, 15_000, 30_000],
        help="env steps of vpg.py training before each measurement",
    )
    p.add_argument("--batches", type=int, default=100, help="independent batches per measurement")
    p.add_argument("--episodes", type=int, default=2, help="whole episodes per batch")
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--out", required=True, help="folder for raw.json, table.md, variance.png")
    p.add_argument("--replot", action="store_true", help="redo table and plot from raw.json")
    return p.parse_args(argv)


def sample_batch(agent, env, episodes, rng):
    """`episodes` whole episodes of the stochastic policy, as tensors over their steps."""
    # "final" holds s_{t+1}, which bootstraps a truncated episode
    steps = {k: [] for k in ("obs", "actions", "rewards", "terminated", "truncated", "final")}
    returns = []
    for _ in range(episodes):
        obs, _ = env.reset(seed=int(rng.integers(2**31)))
        done, total = False, 0.0
        while not done:
            x = torch.as_tensor(obs, dtype=torch.float32)
            with torch.no_grad():
                action, _, _, _ = agent.get_action_and_value(x)
            next_obs, reward, terminated, truncated, _ = env.step(action.item())
            step = obs, action.item(), reward, terminated, truncated, next_obs
            for key, value in zip(steps, step, strict=True):
                steps[key].append(value)
            obs, total = next_obs, total + float(reward)
            done = terminated or truncated
        returns.append(total)
    batch = {k: torch.as_tensor(np.array(v), dtype=torch.float32) for k, v in steps.items()}
    batch["actions"] = batch["actions"].long()
    return batch, returns


def weights(agent, batch, gamma):
    """Psi_t of every estimator, over the batch's steps (no gradient)."""
    rewards, terminated, truncated = batch["rewards"], batch["terminated"], batch["truncated"]
    ended = torch.maximum(terminated, truncated)
    with torch.no_grad():
        values = agent.get_value(batch["obs"]).flatten()
        next_values = agent.get_value(batch["final"]).flatten()
    # Without a critic (REINFORCE) a truncated episode just stops; with one it is completed
    # with gamma * V(final observation), as vpg.py and ppo_gae.py do.
    reward_to_go = vpg.discounted_returns(rewards, ended, gamma)
    bootstrapped = vpg.discounted_returns(rewards + gamma * truncated * next_values, ended, gamma)
    episode = torch.cumsum(torch.cat([torch.zeros(1), ended[:-1]]), 0).long()  # index per step
    total_return = torch.zeros(int(episode[-1]) + 1).index_add_(0, episode, rewards)[episode]
    psi = {
        "total return": total_return,
        "reward-to-go": reward_to_go,
        "baseline": bootstrapped - values,
    }
    for lam in (0.95, 0.0):
        advantages, _ = ppo_gae.compute_gae(
            rewards, values, next_values, terminated, ended, gamma, lam
        )
        psi[f"GAE lambda {lam:g}"] = advantages
    return psi


def policy_gradient(agent, batch, psi):
    """Flattened grad_theta of mean_t log pi(a_t|s_t) * Psi_t over the actor's weights."""
    _, logprobs, _, _ = agent.get_action_and_value(batch["obs"], batch["actions"])
    grads = torch.autograd.grad((logprobs * psi).mean(), list(agent.actor.parameters()))
    return torch.cat([g.flatten() for g in grads])


def measure(args, seed, budget):
    """Train vpg.py for `budget` steps, then the estimators' variance on its frozen policy."""
    with tempfile.TemporaryDirectory() as run_dir:
        flags = ["--env-id", args.env_id, "--seed", str(seed), "--total-timesteps", str(budget)]
        flags += ["--eval-episodes", "0", "--run-dir", run_dir]
        agent = vpg.train(vpg.parse_args(flags))["agent"].cpu()
    env = gym.make(args.env_id)
    rng = np.random.default_rng(seed)
    grads = {name: [] for name in ESTIMATORS}
    episode_returns = []
    for _ in range(args.batches):
        batch, returns = sample_batch(agent, env, args.episodes, rng)
        episode_returns += returns
        for name, psi in weights(agent, batch, args.gamma).items():
            grads[name].append(policy_gradient(agent, batch, psi))
    env.close()
    reference = torch.stack(grads["baseline"]).mean(0)
    result = {"seed": seed, "budget": budget, "mean_return": statistics.fmean(episode_returns)}
    for name, gs in grads.items():
        gs = torch.stack(gs)
        mean = gs.mean(0)
        result[name] = {
            "variance": float(((gs - mean) ** 2).sum(1).mean()),
            "mean_norm": float(mean.norm()),
            "cos_to_baseline": float(torch.nn.functional.cosine_similarity(mean, reference, 0)),
        }
    return result


def make_table(raw):
    lines = [
        f"{raw['env_id']}: policy-gradient variance on batches of {raw['episodes']} whole "
        f"episodes, {raw['batches']} batches per measurement, gamma {raw['gamma']}. "
        "Median (min–max) over seeds of the ratio to the reward-to-go estimator's variance "
        "(measured on the same batches), and of the cosine between GAE's mean gradient and "
        "the baseline's.",
        "",
        "| vpg.py trained for | return of the policy | "
        + " | ".join(f"{n}: variance / reward-to-go's" for n in ESTIMATORS)
        + " | "
        + " | ".join(f"{n}: cos to baseline" for n in GAES)
        + " |",
        "|" + "---|" * (2 + len(ESTIMATORS) + len(GAES)),
    ]
    for budget in raw["budgets"]:
        rs = [r for r in raw["results"] if r["budget"] == budget]

        def cell(values, fmt):
            med, lo, hi = statistics.median(values), min(values), max(values)
            return f"{fmt.format(med)} ({fmt.format(lo)}–{fmt.format(hi)})"

        row = [f"{budget:,} steps", cell([r["mean_return"] for r in rs], "{:.0f}")]
        for name in ESTIMATORS:
            ratios = [r[name]["variance"] / r["reward-to-go"]["variance"] for r in rs]
            row.append(cell(ratios, "{:.3g}"))
        for name in GAES:
            row.append(cell([r[name]["cos_to_baseline"] for r in rs], "{:.2f}"))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def make_plot(raw, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / len(ESTIMATORS)
    labels = []
    for j, budget in enumerate(raw["budgets"]):
        rs = [r for r in raw["results"] if r["budget"] == budget]
        labels.append(
            f"vpg.py after {budget:,} steps\n(policy's return "
            f"{statistics.median([r['mean_return'] for r in rs]):.0f})"
        )
        for i, name in enumerate(ESTIMATORS):
            v = [r[name]["variance"] / r["reward-to-go"]["variance"] for r in rs]
            med = statistics.median(v)
            ax.bar(
                j + (i - (len(ESTIMATORS) - 1) / 2) * width,
                med,
                width,
                yerr=[[med - min(v)], [max(v) - med]],
                color=f"C{i}",
                label=name if j == 0 else None,
                capsize=2,
            )
    ax.set_yscale("log")
    ax.axhline(1, color="grey", linestyle="--", linewidth=1)
    ax.set_xticks(range(len(labels)), labels)
    ax.set_ylabel("variance of the gradient estimate\n/ reward-to-go's (log scale)")
    ax.set_title(
        f"{raw['env_id']}: variance of the policy gradient per weight Psi_t "
        f"(median, min–max over {len(raw['seeds'])} seeds)",
        fontsize=10,
    )
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.replot:
        raw = json.loads((out / "raw.json").read_text())
    else:
        torch.set_num_threads(1)
        raw = {k: v for k, v in vars(args).items() if k not in ("out", "replot")}
        raw["results"] = []
        for seed in args.seeds:
            for budget in args.budgets:
                t0 = time.time()
                raw["results"].append(r := measure(args, seed, budget))
                ratio = r["baseline"]["variance"] / r["reward-to-go"]["variance"]
                print(
                    f"seed {seed}, {budget} steps: return {r['mean_return']:.0f}, "
                    f"baseline / reward-to-go variance {ratio:.3f} ({time.time() - t0:.0f} s)",
                    flush=True,
                )
        (out / "raw.json").write_text(json.dumps(raw, indent=1))
    table = make_table(raw)
    (out / "table.md").write_text(table)
    make_plot(raw, out / "variance.png")
    print(table)
    print(f"wrote {out / 'raw.json'}, {out / 'table.md'}, {out / 'variance.png'}")


if __name__ == "__main__":
    main(parse_args())
