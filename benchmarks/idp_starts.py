# SPDX-License-Identifier: MIT
"""InvertedDoublePendulum-v5: the starts that greedy policies fall from, and whether a
controller can hold them at all.

ppo_continuous.py evaluates seed s on 10 episodes that start from reset(seed=s + 10000 + k),
k = 0..9. `falls` lists, for each run in a benchmarks/run.py folder, the reset seeds of its
evaluation episodes that ended below --fell (an episode balanced for 1000 steps scores about
9357). `lqr` plays episodes from given reset seeds with a linear controller: the env's own
MuJoCo model linearized about the upright state by finite differences, a discrete LQR gain
from the Riccati recursion, the action clipped to [-1, 1] as the policy's is. A start that
the LQR holds for 1000 steps is one a policy can hold too.

    python benchmarks/idp_starts.py falls benchmarks/results/inverteddoublependulum
    python benchmarks/idp_starts.py lqr --reset-seeds 10001 10002 10003 10004 10005
"""

import argparse
import json
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


def lqr_returns(reset_seeds):
    """{reset seed: return of one episode from that start under the clipped LQR controller}."""
    env = gym.make(ENV_ID)
    env.reset(seed=0)
    # cart position, the two hinge angles, then their velocities; one unit of action costs 1
    K = lqr_gain(*linearized(env), Q=np.diag([1.0, 10.0, 10.0, 0.1, 1.0, 1.0]), R=np.eye(1))
    returns = {}
    for seed in reset_seeds:
        env.reset(seed=seed)
        data, total, done = env.unwrapped.data, 0.0, False
        while not done:
            x = np.concatenate([data.qpos, data.qvel])
            _, reward, terminated, truncated, _ = env.step(np.clip(-K @ x, -1.0, 1.0))
            total, done = total + float(reward), terminated or truncated
        returns[seed] = total
    return returns


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
    return p.parse_args(argv)


if __name__ == "__main__":
    args = parse_args()
    if args.command == "falls":
        for folder in args.folders:
            raw = json.loads((Path(folder) / "raw.json").read_text())
            print(folder, falls(raw, args.fell))
    else:
        for seed, total in lqr_returns(args.reset_seeds).items():
            print(f"reset seed {seed}: {total:.1f}")
