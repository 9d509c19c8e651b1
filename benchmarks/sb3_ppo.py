# SPDX-License-Identifier: MIT
"""Stable-Baselines3 PPO with the rl-baselines3-zoo tuned hyperparameters: the peer our scripts
are measured against.

The hyperparameters are copied from rl-zoo3 2.9.2 `hyperparams/ppo.yml` (CartPole-v1 and
Pendulum-v1; neither uses `normalize` or `policy_kwargs`, so SB3's defaults hold for the rest,
e.g. Pendulum's batch_size 64). `lin_X` means a linear decay from X to 0 over training. A test
in benchmarks/test_benchmarks.py reads that file from the rl_zoo3 package (pinned in
requirements-dev.txt) and checks that the copy below equals it, key for key.

It writes the same TensorBoard tags as our scripts, with its own SummaryWriter:
`charts/episodic_return` and `charts/episodic_length` (x = global env step, one per finished
training episode, from the Monitor wrapper's `info["episode"]`), `charts/SPS`, and at the end
`eval/episodic_return` (one scalar per deterministic evaluation episode).

Torch threads: SB3 itself never calls `torch.set_num_threads`, and rl-zoo's `--num-threads`
defaults to -1 ("use the torch default", i.e. one thread per physical core). We do the same:
`--num-threads -1` leaves torch alone; a positive value calls `torch.set_num_threads`.

    python benchmarks/sb3_ppo.py --env-id CartPole-v1 --seed 1
    python benchmarks/sb3_ppo.py --env-id Pendulum-v1 --seed 1 --eval-episodes 10

`--recipe mujoco` runs instead the batch structure of ppo_continuous.py's MuJoCo recipe on any
Box-action env, for a side-by-side timing: 8 envs x 256 steps, minibatches of 64, 10 epochs,
lr 3e-4 decayed linearly to 0, gamma 0.99, GAE lambda 0.95, clip 0.2, no entropy bonus,
gradient norm 0.5, log-std starting at -0.5, observations and rewards normalized (VecNormalize,
clipped at 10), separate 64x64 tanh actor and critic with orthogonal init, Adam eps 1e-5 (SB3's
defaults for the last three).

    python benchmarks/sb3_ppo.py --recipe mujoco --env-id HalfCheetah-v5 --num-threads 1
"""

import argparse
import time

import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.vec_env import VecNormalize
from torch.utils.tensorboard import SummaryWriter


def linear(initial):
    """rl-zoo's `lin_X`: X * progress_remaining, which goes from 1 to 0 over training."""
    return lambda progress_remaining: progress_remaining * initial


ZOO = {
    "CartPole-v1": dict(
        n_envs=8,
        n_timesteps=100_000,
        policy="MlpPolicy",
        n_steps=32,
        batch_size=256,
        gae_lambda=0.8,
        gamma=0.98,
        n_epochs=20,
        ent_coef=0.0,
        learning_rate=linear(1e-3),
        clip_range=linear(0.2),
    ),
    "Pendulum-v1": dict(
        n_envs=4,
        n_timesteps=100_000,
        policy="MlpPolicy",
        n_steps=1024,
        gae_lambda=0.95,
        gamma=0.9,
        n_epochs=10,
        ent_coef=0.0,
        learning_rate=1e-3,
        clip_range=0.2,
        use_sde=True,
        sde_sample_freq=4,
    ),
}


# ppo_continuous.py's MuJoCo recipe R, in SB3's terms (see the docstring)
RECIPES = {
    "mujoco": dict(
        n_envs=8,
        n_timesteps=1_000_000,
        policy="MlpPolicy",
        n_steps=256,
        batch_size=64,
        n_epochs=10,
        learning_rate=linear(3e-4),
        gamma=0.99,
        gae_lambda=0.95,
        clip_range=0.2,
        ent_coef=0.0,
        vf_coef=0.5,
        max_grad_norm=0.5,
        policy_kwargs=dict(log_std_init=-0.5),
    )
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--env-id", default="CartPole-v1", help=f"one of {sorted(ZOO)}")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--total-timesteps", type=int, default=None, help="default: rl-zoo's n_timesteps"
    )
    p.add_argument("--run-dir", default=None, help="default: runs/{env}__sb3_ppo__{seed}__{time}")
    p.add_argument("--eval-episodes", type=int, default=10)
    p.add_argument("--num-threads", type=int, default=-1, help="torch threads; -1: torch default")
    p.add_argument("--recipe", choices=sorted(RECIPES), help="our recipe's settings, not rl-zoo's")
    args = p.parse_args(argv)
    if args.env_id not in ZOO and not args.recipe:
        p.error(f"no rl-zoo hyperparameters here for {args.env_id}; known: {sorted(ZOO)}")
    if args.total_timesteps is not None and args.total_timesteps <= 0:
        p.error("--total-timesteps must be positive")
    if args.eval_episodes < 0:
        p.error("--eval-episodes must be >= 0")
    return args


class TensorBoardCallback(BaseCallback):
    """Logs every finished training episode and the SPS under CleanRL's tag names."""

    def __init__(self, writer, total_timesteps):
        super().__init__()
        self.writer = writer
        self.total_timesteps = total_timesteps
        self.recent = []

    def _on_training_start(self):
        self.start_time = self.last_print = time.time()

    def _on_step(self):
        for info in self.locals["infos"]:
            if "episode" in info:  # added by the Monitor wrapper when an episode ends
                ret, length = float(info["episode"]["r"]), int(info["episode"]["l"])
                self.writer.add_scalar("charts/episodic_return", ret, self.num_timesteps)
                self.writer.add_scalar("charts/episodic_length", length, self.num_timesteps)
                self.recent = (self.recent + [ret])[-20:]
        return True

    def _on_rollout_start(self):  # i.e. after the previous rollout's update, as in CleanRL
        if self.num_timesteps > 0:
            self.log_sps(final=False)

    def _on_training_end(self):
        self.log_sps(final=True)

    def log_sps(self, final):
        now = time.time()
        sps = int(self.num_timesteps / (now - self.start_time))
        self.writer.add_scalar("charts/SPS", sps, self.num_timesteps)
        if now - self.last_print < 5 and not final:
            return
        self.last_print = now
        mean = sum(self.recent) / len(self.recent) if self.recent else float("nan")
        left = max(self.total_timesteps - self.num_timesteps, 0) / max(sps, 1)
        print(
            f"step {self.num_timesteps}/{self.total_timesteps}  SPS {sps}  "
            f"left {left:.0f}s  mean return (last 20) {mean:.1f}",
            flush=True,
        )


def main(args):
    if args.num_threads > 0:
        torch.set_num_threads(args.num_threads)
    hp = dict(RECIPES[args.recipe] if args.recipe else ZOO[args.env_id])
    n_envs, policy, n_timesteps = hp.pop("n_envs"), hp.pop("policy"), hp.pop("n_timesteps")
    total_timesteps = args.total_timesteps or n_timesteps
    run_dir = args.run_dir or f"runs/{args.env_id}__sb3_ppo__{args.seed}__{int(time.time())}"
    writer = SummaryWriter(run_dir, flush_secs=2)
    shown = {**vars(args), **hp, "n_envs": n_envs, "torch_threads": torch.get_num_threads()}
    writer.add_text(
        "hyperparameters",
        "|param|value|\n|-|-|\n" + "\n".join(f"|{k}|{v}|" for k, v in shown.items()),
    )

    env = make_vec_env(args.env_id, n_envs=n_envs, seed=args.seed)  # DummyVecEnv + Monitor
    if args.recipe:  # observations and rewards normalized, each clipped at 10
        env = VecNormalize(env, gamma=hp["gamma"], clip_obs=10.0, clip_reward=10.0)
    model = PPO(policy, env, seed=args.seed, device="cpu", verbose=0, **hp)
    # A logger that writes nowhere: SB3's own, unasked, makes an empty SB3-<time> folder in the
    # system's temp folder for every run (this tool logs through the callback)
    model.set_logger(Logger(None, []))
    model.learn(total_timesteps, callback=TensorBoardCallback(writer, total_timesteps))

    eval_returns = []
    if args.eval_episodes > 0:
        eval_env = make_vec_env(args.env_id, n_envs=1, seed=args.seed + 10_000)
        if args.recipe:  # the training statistics, frozen; raw rewards
            eval_env = VecNormalize(eval_env, training=False, norm_reward=False)
            eval_env.obs_rms = env.obs_rms
        eval_returns, _ = evaluate_policy(
            model,
            eval_env,
            n_eval_episodes=args.eval_episodes,
            deterministic=True,
            return_episode_rewards=True,
        )
        for i, ret in enumerate(eval_returns):
            writer.add_scalar("eval/episodic_return", ret, i)
        mean = sum(eval_returns) / len(eval_returns)
        n = len(eval_returns)
        print(f"eval: mean return {mean:.1f} over {n} episode{'s' if n > 1 else ''}")
    writer.close()
    return {"model": model, "eval_returns": eval_returns, "run_dir": run_dir}


if __name__ == "__main__":
    main(parse_args())
