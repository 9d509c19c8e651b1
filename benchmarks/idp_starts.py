# SPDX-License-Identifier: MIT
"""InvertedDoublePendulum-v5: the starts that greedy policies fall from, and whether a
controller can hold them at all.

ppo_continuous.py evaluates seed s on 10 episodes that start from reset(seed=s + 10000 + k),
k = 0..9. `falls` lists, for each run in a benchmarks/run.py folder, the reset seeds of its
evaluation episodes that ended below --fell (an episode balanced for 1000 steps scores about
9357). `lqr` plays episodes from given reset seeds with a linear controller: the env's own
MuJoCo model linearized about the upright state by finite differences, a discrete LQR gain
from the Riccati recursion, the action clipped to [-1, 1] as the policy's is. A start that
the LQR holds for 1000 steps is one a policy can hold too. `play` runs the greedy policy of a
model that ppo_continuous.py --save-model wrote from many starts, and says for each fall
whether the cart had reached the end of its rail first (|x| > 0.98; the slider stops at 1),
and at which step.

    python benchmarks/idp_starts.py falls benchmarks/results/inverteddoublependulum
    python benchmarks/idp_starts.py lqr --reset-seeds 10001 10002 10003 10004 10005
    python benchmarks/idp_starts.py play runs/RUN/ppo_continuous.pt --first-seed 20000 --count 200
"""

import argparse
import json
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np

ENV_ID = "InvertedDoublePendulum-v5"
EVAL_SEED = 10_000  # ppo_continuous.py's evaluation: reset(seed=seed + 10000 + episode)


def falls(raw, fell=9000.0):
    """{run seed: reset seeds of its evaluation episodes that returned less than `fell`}."""
    return {
        run["seed"]: [
            run["seed"] + EVAL_SEED + k for k, r in enumerate(run["eval_returns"]) if r < fell
        ]
        for run in sorted(raw["runs"], key=lambda run: run["seed"])
    }


def linearized(env, eps=1e-6):
    """x' = A x + B u about upright and at rest, x = (qpos, qvel), one env step (frame_skip)."""
    import mujoco

    model, data = env.unwrapped.model, env.unwrapped.data
    nq, nv = model.nq, model.nv

    def step(x, u):
        data.qpos[:], data.qvel[:], data.ctrl[:] = x[:nq], x[nq:], u
        for _ in range(env.unwrapped.frame_skip):
            mujoco.mj_step(model, data)
        return np.concatenate([data.qpos, data.qvel])

    x0, u0 = np.zeros(nq + nv), np.zeros(model.nu)
    f0 = step(x0, u0)
    A = np.stack([(step(x0 + eps * e, u0) - f0) / eps for e in np.eye(nq + nv)], axis=1)
    B = np.stack([(step(x0, u0 + eps * e) - f0) / eps for e in np.eye(model.nu)], axis=1)
    return A, B


def lqr_gain(A, B, Q, R, iterations=5000):
    """K of u = -K x minimizing sum x'Qx + u'Ru: the Riccati recursion run to its fixed point."""
    P = Q
    for _ in range(iterations):
        K = np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)
        P = Q + A.T @ P @ (A - B @ K)
    return K


def episode(env, act, reset_seed, rail=0.98):
    """One episode from reset(seed=reset_seed), actions act(obs) clipped to [-1, 1]:
    (steps, return, the first step that ends with the cart at |x| > rail, or None)."""
    obs, _ = env.reset(seed=reset_seed)
    steps, total, at_rail, done = 0, 0.0, None, False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(np.clip(act(obs), -1.0, 1.0))
        steps, total, done = steps + 1, total + float(reward), terminated or truncated
        if at_rail is None and abs(obs[0]) > rail:  # obs[0]: the cart's position
            at_rail = steps
    return steps, total, at_rail


def lqr_controller(env, cart_target=0.0):
    """act(obs) of the clipped LQR, steering the cart to `cart_target` (beyond 1: into the
    rail). It reads the full state from MuJoCo: the observation holds sines and cosines."""
    env.reset(seed=0)
    # cart position, the two hinge angles, then their velocities; one unit of action costs 1
    K = lqr_gain(*linearized(env), Q=np.diag([1.0, 10.0, 10.0, 0.1, 1.0, 1.0]), R=np.eye(1))
    data, target = env.unwrapped.data, np.array([cart_target, 0, 0, 0, 0, 0])
    return lambda obs: -K @ (np.concatenate([data.qpos, data.qvel]) - target)


def lqr_returns(reset_seeds):
    """{reset seed: return of one episode from that start under the clipped LQR controller}."""
    env = gym.make(ENV_ID)
    act = lqr_controller(env)
    return {seed: episode(env, act, seed)[1] for seed in reset_seeds}


def policy_episodes(model_path, reset_seeds):
    """{reset seed: episode(...)} for the greedy policy (the Gaussian's mean) of a model saved
    by ppo_continuous.py --save-model, its observation statistics frozen as in its evaluation."""
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import ppo_continuous

    weights = torch.load(model_path, map_location="cpu")
    hidden, obs_dim = weights["actor_mean.0.weight"].shape  # the sizes it was trained with
    action_dim, critic_hidden = len(weights["actor_logstd"]), len(weights["critic.0.weight"])
    agent = ppo_continuous.Agent(obs_dim, action_dim, hidden, critic_hidden=critic_hidden)
    agent.load_state_dict(weights)

    def act(obs):
        with torch.no_grad():
            x = agent.obs_norm(torch.as_tensor(obs, dtype=torch.float32))
            return agent.actor_mean(x).numpy()

    env = gym.make(ENV_ID)
    return {seed: episode(env, act, seed) for seed in reset_seeds}


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True)
    f = sub.add_parser("falls", help="the reset seeds each run's evaluation fell from")
    f.add_argument("folders", nargs="+", help="benchmarks/run.py output folders (raw.json)")
    f.add_argument("--fell", type=float, default=9000.0, help="an episode below this fell")
    q = sub.add_parser("lqr", help="returns of the LQR controller from these starts")
    q.add_argument("--reset-seeds", nargs="+", type=int, default=list(range(10001, 10015)))
    g = sub.add_parser("play", help="a saved model's falls, and whether the cart hit the rail")
    g.add_argument("model", help="the .pt file that ppo_continuous.py --save-model wrote")
    g.add_argument("--first-seed", type=int, default=20_000, help="the first start's reset seed")
    g.add_argument("--count", type=int, default=200, help="starts played, from --first-seed on")
    return p.parse_args(argv)


if __name__ == "__main__":
    args = parse_args()
    if args.command == "falls":
        for folder in args.folders:
            raw = json.loads((Path(folder) / "raw.json").read_text())
            print(folder, falls(raw, args.fell))
    elif args.command == "lqr":
        for seed, total in lqr_returns(args.reset_seeds).items():
            print(f"reset seed {seed}: {total:.1f}")
    else:
        seeds = range(args.first_seed, args.first_seed + args.count)
        played = policy_episodes(args.model, seeds)
        fell = {seed: e for seed, e in played.items() if e[0] < 1000}
        for seed, (steps, total, at_rail) in fell.items():
            rail = f"the cart at the rail at step {at_rail}" if at_rail else "the cart off the rail"
            print(f"reset seed {seed}: fell at step {steps} ({total:.0f}), {rail}")
        railed = sum(e[2] is not None for e in fell.values())
        print(f"fell from {len(fell)} of {args.count} starts; {railed} of the falls at the rail")
