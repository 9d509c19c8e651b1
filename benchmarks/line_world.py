# SPDX-License-Identifier: MIT
"""The course's line-world experiment: how often the trained greedy policy ends on the target.

The course trained once each: plain returns (REINFORCE) reached the target in 51% of episodes
(mean final reward -0.035), a value baseline (VPG) in 100% (0.0), the baseline at 4x the
learning rate in 12% (-0.318), and PPO at that 4x rate in 100% (0.0).

--course redoes its runs with its own settings (COURSE_RUNS, COURSE) over many seeds. What no
script's flag can say, course_train() builds from the script's own Agent, discounted_returns and
loss functions: batches of whole episodes, one hidden layer of ReLU units, 8 epochs of
minibatches, the critic's loss times 0.01 in the policy's step. Without --course, each script
trains through its own train() with its own flags (RUNS). Either way the trained policy plays
--episodes episodes on reset seeds that no training used, the same for every run, greedy (argmax
of the logits; --course also sampled), and info["is_success"] at the end counts (the agent
stands on the target after 20 steps).

    python benchmarks/line_world.py --course --out benchmarks/results/line_world/course
    python benchmarks/line_world.py --out benchmarks/results/line_world --jobs 2
    python benchmarks/line_world.py --out benchmarks/results/line_world --replot
"""

import argparse
import contextlib
import io
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Categorical

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ENV_ID = "envs.line_world:LineWorld-v0"
EVAL_SEED = 1_000_000  # the evaluation's reset seeds: EVAL_SEED + episode, never used in training
# The scripts with their own flags (label, script, flags, the course's % of episodes at the
# target): the rates that work with one policy step per batch of 1,024 steps, and 4x each.
RUNS = [
    ("reinforce.py, plain returns", "reinforce", "--no-normalize-returns", 51),
    ("vpg.py, lr 1e-2", "vpg", "--learning-rate 1e-2", 100),
    ("vpg.py, lr 4e-2 (4x)", "vpg", "--learning-rate 4e-2", 12),
    ("ppo.py, lr 4e-2 (4x)", "ppo", "--learning-rate 4e-2", 100),
    ("vpg.py, lr 2.5e-2", "vpg", "--learning-rate 2.5e-2", 100),
    ("vpg.py, lr 1e-1 (4x)", "vpg", "--learning-rate 1e-1", 12),
    ("ppo.py, lr 1e-1 (4x)", "ppo", "--learning-rate 1e-1", 100),
    ("ppo_gae.py", "ppo_gae", "", None),
]


# The line-world MP's own runs, which no script's flags can say: episodes
# as the unit of a batch (4 whole episodes), 8 epochs of minibatches of 64 on each, one hidden
# layer of 16 ReLU units in each network, the critic's loss times 0.01 in one Adam step with the
# policy's, 2,000 episodes in all. course_run() builds them from the script's own Agent (its
# get_action or get_action_and_value, with the course's networks put in), discounted_returns and
# loss functions. (label, script, Adam's rate, the course's % at the target, its mean final reward)
COURSE_RUNS = [
    ("REINFORCE, 1e-3", "reinforce", 1e-3, 51, -0.035),
    ("VPG, 1e-3", "vpg", 1e-3, 100, 0.0),
    ("VPG, 4e-3", "vpg", 4e-3, 12, -0.318),
    ("PPO, 4e-3", "ppo", 4e-3, 100, 0.0),
]
COURSE = dict(
    episodes=2_000,  # of 20 steps each: 40,000 env steps
    episodes_per_batch=4,
    epochs=8,
    minibatch=64,  # 80 steps a batch: minibatches of 64 and 16, reshuffled each epoch
    hidden=16,
    critic_coef=0.01,
    gamma=0.99,  # the scripts' default; the MP gives no discount for these runs
    clip_coef=0.2,  # ppo.py's default; the MP gives none for the line world
)


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--seeds", nargs="+", type=int, default=list(range(1, 11)))
    p.add_argument("--total-timesteps", type=int, default=100_000, help="env steps per run")
    p.add_argument("--episodes", type=int, default=100, help="greedy evaluation episodes per run")
    p.add_argument("--jobs", type=int, default=1, help="runs at a time, each in a process")
    p.add_argument("--out", required=True, help="folder for raw.json, table.md, success.png")
    p.add_argument("--replot", action="store_true", help="redo table and figure from raw.json")
    p.add_argument(
        "--course", action="store_true", help="the course's own settings (COURSE_RUNS, COURSE)"
    )
    return p.parse_args(argv)


def greedy_successes(module, agent, episodes):
    """info["is_success"] at the end of each of `episodes` greedy episodes (seeds EVAL_SEED+i)."""
    env = module.make_eval_env(ENV_ID)  # the script's own evaluation env: gym.make, 20 steps
    successes = []
    for episode in range(episodes):
        obs, info = env.reset(seed=EVAL_SEED + episode)
        done = False
        while not done:
            with torch.no_grad():
                logits = agent.actor(torch.as_tensor(obs, dtype=torch.float32))
            obs, _, terminated, truncated, info = env.step(logits.argmax().item())
            done = terminated or truncated
        successes.append(bool(info["is_success"]))
    env.close()
    return successes


def judged(agent, episodes, greedy=True):
    """The course's judgement of a trained policy on `episodes` fresh episodes (reset seeds
    EVAL_SEED + i): per episode, whether it ends on the target and its last step's reward,
    -distance / 10 (the course's "mean reward" is their mean: 0.0 only if every episode ends
    on the target). greedy: the most likely action; else sampled from pi."""
    env = gym.make(ENV_ID)
    successes, final_rewards = [], []
    for episode in range(episodes):
        obs, info = env.reset(seed=EVAL_SEED + episode)
        done = False
        while not done:
            with torch.no_grad():
                logits = agent.actor(torch.as_tensor(obs, dtype=torch.float32))
            action = logits.argmax() if greedy else Categorical(logits=logits).sample()
            obs, reward, terminated, truncated, info = env.step(action.item())
            done = terminated or truncated
        successes.append(bool(info["is_success"]))
        final_rewards.append(round(float(reward), 4))
    env.close()
    return successes, final_rewards


def course_agent(module, hidden):
    """The script's own Agent, with the course's networks: 2 inputs, one hidden layer of ReLU
    units, 3 logits (Categorical normalizes them: the course's log-softmax) and V(s)."""
    agent = module.Agent(2, 3)
    agent.actor = nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, 3))
    if hasattr(agent, "critic"):
        agent.critic = nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, 1))
    return agent


def scored(agent, obs, actions=None):
    """(actions, log pi(a|s), V(s) or None) from the script's own method."""
    if hasattr(agent, "get_action_and_value"):
        actions, logprobs, _, values = agent.get_action_and_value(obs, actions)
        return actions, logprobs, values.flatten()
    actions, logprobs, _ = agent.get_action(obs, actions)
    return actions, logprobs, None


def course_loss(module, script, logprobs, values, returns, old_logprobs, advantages):
    """The script's own losses; the critic's times the course's 0.01, in the same step."""
    if script == "reinforce":  # plain returns: no normalization, no critic
        return module.reinforce_loss(logprobs, returns)
    if script == "vpg":  # A = G - V(s) with the critic of this minibatch, detached
        policy_loss, value_loss = module.vpg_loss(logprobs, values, returns)
    else:  # ppo: the clipped surrogate on A = G - V(s) fixed when the batch was played
        policy_loss = module.ppo_loss(logprobs, old_logprobs, advantages, COURSE["clip_coef"])
        value_loss = module.value_loss(values, returns)
    return policy_loss + COURSE["critic_coef"] * value_loss


def course_train(script, learning_rate, seed, episodes=COURSE["episodes"]):
    """Train as the course did (COURSE) with the script's own pieces, for `episodes` episodes:
    the agent, and the return of each training episode."""
    import importlib

    import envs.line_world  # noqa: F401  (registers LineWorld-v0)

    module = importlib.import_module(script)
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    agent = course_agent(module, COURSE["hidden"])
    optimizer = torch.optim.Adam(agent.parameters(), lr=learning_rate)
    env = gym.make(ENV_ID)
    env.reset(seed=seed)  # later resets go on with the env's own stream
    returns_played = []
    per_batch = COURSE["episodes_per_batch"]
    for _ in range(episodes // per_batch):
        obs, actions, rewards = [], [], []
        for _ in range(per_batch):  # whole episodes; the 20th step ends one, as a terminal
            o, _ = env.reset()
            done = False
            while not done:
                obs.append(torch.as_tensor(o, dtype=torch.float32))
                with torch.no_grad():
                    action = scored(agent, obs[-1])[0]
                o, reward, terminated, truncated, _ = env.step(action.item())
                actions.append(action)
                rewards.append(float(reward))
                done = terminated or truncated
        steps = len(rewards) // per_batch  # 20: every episode has the same length
        returns_played += [sum(rewards[i : i + steps]) for i in range(0, len(rewards), steps)]
        rewards_ = torch.tensor(rewards).view(per_batch, steps).T  # time-major (T, episodes)
        dones = torch.zeros(steps, per_batch, dtype=torch.bool)
        dones[-1] = True  # the course marks the time limit terminal
        b_returns = module.discounted_returns(rewards_, dones, COURSE["gamma"]).T.reshape(-1)
        b_obs, b_actions = torch.stack(obs), torch.stack(actions)
        with torch.no_grad():
            _, old_logprobs, old_values = scored(agent, b_obs, b_actions)
        advantages = None if old_values is None else b_returns - old_values
        for _ in range(COURSE["epochs"]):
            for idx in torch.randperm(len(b_obs)).split(COURSE["minibatch"]):
                _, logprobs, values = scored(agent, b_obs[idx], b_actions[idx])
                loss = course_loss(
                    module,
                    script,
                    logprobs,
                    values,
                    b_returns[idx],
                    old_logprobs[idx],
                    None if advantages is None else advantages[idx],
                )
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    env.close()
    return agent, returns_played


def course_run(label, script, learning_rate, seed, episodes):
    """One of COURSE_RUNS on one seed, judged as the course judged, on `episodes` episodes."""
    t0 = time.time()
    agent, returns_played = course_train(script, learning_rate, seed)
    successes, final_rewards = judged(agent, episodes)
    sampled, sampled_rewards = judged(agent, episodes, greedy=False)
    return dict(
        label=label,
        script=f"{script}.py",
        learning_rate=learning_rate,
        seed=seed,
        seconds=round(time.time() - t0, 2),
        last_100_training_returns=round(statistics.fmean(returns_played[-100:]), 4),
        successes=successes,
        final_rewards=final_rewards,
        sampled_successes=sampled,
        sampled_final_rewards=sampled_rewards,
        policy=greedy_policy(agent),
    )


def one_run(label, script, flags, seed, total_timesteps, episodes):
    """Train `script` with its own train() on one seed; its greedy successes."""
    import importlib

    import envs.line_world  # noqa: F401  (registers LineWorld-v0)

    module = importlib.import_module(script)
    t0 = time.time()
    with tempfile.TemporaryDirectory() as run_dir, contextlib.redirect_stdout(io.StringIO()):
        argv = ["--env-id", ENV_ID, "--seed", str(seed), "--total-timesteps", str(total_timesteps)]
        argv += flags.split() + ["--eval-episodes", "0", "--run-dir", run_dir]
        result = module.train(module.parse_args(argv))
    agent = result["agent"].cpu()
    successes = greedy_successes(module, agent, episodes)
    last = [r for _, r in result["episode_returns"][-100:]]
    return dict(
        label=label,
        script=f"{script}.py",
        flags=flags,
        seed=seed,
        global_step=result["global_step"],
        seconds=round(time.time() - t0, 2),
        last_100_training_returns=round(statistics.fmean(last), 4),
        successes=successes,
        policy=greedy_policy(agent),
    )


def greedy_policy(agent):
    """The greedy action in every state, one row per target 0-9 of 11 positions 0-10:
    "<" move -1, "." stay, ">" move +1."""
    rows = []
    for target in range(10):
        obs = torch.tensor([[target, p] for p in range(11)], dtype=torch.float32) / 10 * 2 - 1
        with torch.no_grad():
            actions = agent.actor(obs).argmax(1).tolist()
        rows.append("".join("<.>"[a] for a in actions))
    return rows


def kind(policy):
    """What a greedy policy does: "one action" everywhere, "never stays" (walks to the target
    and past it: on the target at the end only when the distance was even), or "other"."""
    cells = "".join(policy)
    if len(set(cells)) == 1:
        return "one action"
    return "never stays" if "." not in cells else "other"


def rate(run):
    return 100 * statistics.fmean(run["successes"])


def summary(raw, label):
    rates = [rate(r) for r in raw["results"] if r["label"] == label]
    return rates, statistics.fmean(rates), statistics.median(rates)


def make_table(raw):
    lines = [
        f"LineWorld-v0: % of {raw['episodes']} greedy episodes that end on the target, after "
        f"{raw['total_timesteps']:,} env steps of training, over seeds "
        f"{raw['seeds'][0]}-{raw['seeds'][-1]} ({len(raw['seeds'])} seeds).",
        "",
        "| run | flags | course (1 run) | mean | median (min–max) | seeds at 100% | "
        "seeds whose greedy policy never stays / takes one action | "
        "training return (last 100 episodes) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, _, flags, course in raw["runs"]:
        rates, mean, median = summary(raw, label)
        mine = [r for r in raw["results"] if r["label"] == label]
        ret = statistics.median(r["last_100_training_returns"] for r in mine)
        course_cell = "—" if course is None else f"{course}%"
        kinds = [kind(r["policy"]) for r in mine]
        lines.append(
            f"| {label} | `{flags or 'defaults'}` | {course_cell} | {mean:.1f}% | "
            f"{median:.0f}% ({min(rates):.0f}–{max(rates):.0f}) | "
            f"{sum(r == 100 for r in rates)}/{len(rates)} | "
            f"{kinds.count('never stays')} / {kinds.count('one action')} | {ret:.2f} |"
        )
    seconds = sum(r["seconds"] for r in raw["results"])
    lines += ["", f"The runs' own times add up to {seconds / 60:.1f} minutes"]
    if "wall_seconds" in raw:
        lines[-1] += (
            f"; {raw['jobs']} at a time, {raw['wall_seconds'] / 60:.1f} minutes of wall time"
        )
    lines[-1] += "."
    return "\n".join(lines) + "\n"


def spread(values, fmt, unit=""):
    """mean (min–max) of values, each written with fmt; "to" between negative numbers."""
    low, high = (f"{x:{fmt}}" for x in (min(values), max(values)))
    between = " to " if low.startswith("-") else "–"
    return f"{statistics.fmean(values):{fmt}}{unit} ({low}{between}{high})"


def make_course_table(raw):
    """The course's runs (COURSE_RUNS) over the seeds, beside the course's one run of each."""
    c = raw["course"]
    lines = [
        f"LineWorld-v0 as the course ran it: {c['episodes']:,} episodes of 20 steps, batches of "
        f"{c['episodes_per_batch']} episodes, {c['epochs']} epochs of minibatches of "
        f"{c['minibatch']}, one hidden layer of {c['hidden']} ReLU units, critic loss x "
        f"{c['critic_coef']}, gamma {c['gamma']}, PPO's clip {c['clip_coef']}; judged on "
        f"{raw['episodes']} fresh episodes (reset seeds no training used), seeds "
        f"{raw['seeds'][0]}-{raw['seeds'][-1]} ({len(raw['seeds'])} seeds). Cells: mean over the "
        "seeds (min–max).",
        "",
        "| run | Adam | course: at the target | ours: at the target | seeds at 100% | "
        "course: mean reward | ours: mean reward | sampled actions: at the target | "
        "seeds whose greedy policy never stays / takes one action | "
        "training return (last 100 episodes) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, _, learning_rate, course_rate, course_reward in raw["runs"]:
        mine = [r for r in raw["results"] if r["label"] == label]
        rates = [rate(r) for r in mine]
        rewards = [statistics.fmean(r["final_rewards"]) for r in mine]
        sampled = [100 * statistics.fmean(r["sampled_successes"]) for r in mine]
        kinds = [kind(r["policy"]) for r in mine]
        ret = [r["last_100_training_returns"] for r in mine]
        adam = f"{learning_rate:.0e}".replace("e-0", "e-")  # 1e-3
        lines.append(
            f"| {label} | {adam} | {course_rate}% | {spread(rates, '.0f', '%')} | "
            f"{sum(x == 100 for x in rates)}/{len(rates)} | {course_reward} | "
            f"{spread(rewards, '.3f')} | {spread(sampled, '.0f', '%')} | "
            f"{kinds.count('never stays')} / {kinds.count('one action')} | {spread(ret, '.2f')} |"
        )
    seconds = sum(r["seconds"] for r in raw["results"])
    lines += [
        "",
        "The mean reward is the reward of each episode's last step, -distance / 10, averaged over "
        "the 100 episodes (the course's 0.0 at 100% can only be that). Greedy: the most likely "
        "action; sampled: drawn from the policy.",
        "",
        f"The runs' own times add up to {seconds / 60:.1f} minutes; {raw['jobs']} at a time, "
        f"{raw['wall_seconds'] / 60:.1f} minutes of wall time.",
    ]
    return "\n".join(lines) + "\n"


def make_plot(raw, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(12, 4.8))
    rng = np.random.default_rng(0)  # horizontal jitter of the seed dots
    course_label = "the course (one run)"
    for i, (label, _, _, course, *_) in enumerate(raw["runs"]):
        rates, mean, _ = summary(raw, label)
        ax.bar(i, mean, color="C0", alpha=0.35, width=0.6, label="ours: mean over seeds" * (i == 0))
        x = i + rng.uniform(-0.18, 0.18, len(rates))
        ax.scatter(x, rates, color="C0", s=18, zorder=3, label="ours: one seed" * (i == 0))
        if course is not None:
            ax.scatter(i, course, marker="X", s=110, color="C3", zorder=4, label=course_label)
            course_label = None
    ax.set_xticks(range(len(raw["runs"])))
    ax.set_xticklabels([label.replace(", ", ",\n") for label, *_ in raw["runs"]])
    ax.set_ylabel(f"% of {raw['episodes']} greedy episodes at the target")
    ax.set_ylim(-3, 105)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    if "course" in raw:
        title = f"as the course ran it, {raw['course']['episodes']:,} episodes of training"
    else:
        title = f"{raw['total_timesteps']:,} steps of training"
    ax.set_title(f"The course's line world, {title}, {len(raw['seeds'])} seeds")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.replot:
        raw = json.loads((out / "raw.json").read_text())
    elif args.course:
        raw = dict(
            course=COURSE,
            seeds=args.seeds,
            episodes=args.episodes,
            runs=COURSE_RUNS,
            command="python " + " ".join(sys.argv),
            jobs=args.jobs,
            results=[],
        )
        start = time.time()
        jobs = [(*run[:3], seed) for run in COURSE_RUNS for seed in args.seeds]
        with ProcessPoolExecutor(args.jobs) as pool:
            futures = [pool.submit(course_run, *job, args.episodes) for job in jobs]
            for future in futures:
                r = future.result()
                raw["results"].append(r)
                print(
                    f"{r['label']}, seed {r['seed']}: {rate(r):.0f}% at the target "
                    f"({r['seconds']:.0f} s)",
                    flush=True,
                )
        raw["wall_seconds"] = round(time.time() - start, 1)
        (out / "raw.json").write_text(json.dumps(raw, indent=1))
    else:
        raw = dict(
            seeds=args.seeds,
            total_timesteps=args.total_timesteps,
            episodes=args.episodes,
            runs=RUNS,
            command="python " + " ".join(sys.argv),
            jobs=args.jobs,
            results=[],
        )
        start = time.time()
        jobs = [(*run[:3], seed) for run in RUNS for seed in args.seeds]
        with ProcessPoolExecutor(args.jobs) as pool:
            futures = [
                pool.submit(one_run, *job, args.total_timesteps, args.episodes) for job in jobs
            ]
            for future in futures:
                r = future.result()
                raw["results"].append(r)
                print(
                    f"{r['label']}, seed {r['seed']}: {rate(r):.0f}% at the target "
                    f"({r['seconds']:.0f} s)",
                    flush=True,
                )
        raw["wall_seconds"] = round(time.time() - start, 1)
        (out / "raw.json").write_text(json.dumps(raw, indent=1))
    table = make_course_table(raw) if "course" in raw else make_table(raw)
    (out / "table.md").write_text(table)
    make_plot(raw, out / "success.png")
    print(table)
    print(f"wrote {out / 'raw.json'}, {out / 'table.md'}, {out / 'success.png'}")


if __name__ == "__main__":
    main(parse_args())
