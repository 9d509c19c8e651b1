# SPDX-License-Identifier: MIT
"""Tests of the policy-gradient scripts: pure math by hand, probe environments, learning, CLI.

Run: python -m pytest -q test_all.py

Layout, one section per kind of check:
  0. the scripts under test (SCRIPTS: what differs between them), helpers, probe envs;
  1. pure functions, on cases worked out by hand;
  2. probe environments, each with one answer the agent must find;
  3. what reaches the loss: never gymnasium's autoreset steps; for Box actions, the sample
     itself, while the env gets it clipped;
  4. a short learning run on CartPole-v1;
  5. observation spaces: flattened (Discrete as one-hot, Tuple, Dict, ...) or refused in one line;
  6. command line and bad input; --cuda and --compile (a compiled update gives the eager one's
     losses and weights; where compiling cannot work, one warning, then eager);
  7. reproducibility;
  8. the dict that train() returns, and the saved model (--save-model, --load-model);
  9. CartPoleTorch-v1 (envs/cartpole_torch.py) against gymnasium's CartPole; the episode log;
 10. the shape of a script: the lesson first, one divider, the same support code in each;
 11. benchmarks/tune.py: two workers on one study (a journal file, a real PostgreSQL), pruning.
 12. runs that survive: checkpoints, SIGTERM handled like Ctrl-C, --resume; a checkpoint is
     data: one that would run code is refused, and the code never runs;
 13. --async-envs: each env in a process of its own, its failures in one line;
 14. benchmarks/mujoco_suite.py: the suite's table; benchmarks/run.py --append adds seeds;
     benchmarks/race.py and zoo_nets.py (lesson 7's networks);
 15. the docs and the tools behind their figures: every relative link in README.md, docs/ and
     benchmarks/ resolves (files, and headings by GitHub's anchors), every results folder is
     cited; ruff format and lint; benchmarks/iqm.py (rliable's IQM); sb3_ppo.py's rl-zoo settings.
 16. watching it learn: --track (W&B offline, read back), training videos; any flags, any values
     (a randomized command-line test: hypothesis, 100 examples a script, FUZZ_EXAMPLES to change).
 17. the course's line world (envs/line_world.py): its dynamics by hand, every discrete script
     on it, benchmarks/line_world.py; the notebook ladder.ipynb, run in quick mode and as committed.
 18. the exercises (exercises/): generated from the scripts, the grader against the scripts,
     planted mistakes and right answers in other forms, train()'s contract in every case, its
     time limit and its folder table; an exercise file training its script; exercises.ipynb as
     committed, filled from the scripts, and released and autograded by nbgrader; no placeholder
     links.
 19. the courses' own numbers (../shared/COURSES.md): the CartPole homework's three loss tests,
     on the scripts' functions and in the grader; the line world as the course ran it
     (benchmarks/line_world.py --course); the answers in words of exercises.ipynb.
A new script joins by an entry in SCRIPTS (and in the family lists it belongs to), plus a
subsection in 1 for the functions only it has.
"""

import argparse
import copy
import importlib.util
import inspect
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from unittest import mock

import gymnasium as gym
import numpy as np
import pytest
import torch

ROOT = Path(__file__).parent
sys.path.insert(0, str(ROOT))

import ppo  # noqa: E402
import ppo_continuous  # noqa: E402
import ppo_gae  # noqa: E402
import reinforce  # noqa: E402
import vpg  # noqa: E402
from envs import cartpole_torch  # noqa: E402

sys.path.insert(0, str(ROOT / "exercises"))
import cases as exercise_cases  # noqa: E402  (exercises/cases.py: the hand-worked case table)
import check as grader  # noqa: E402  (exercises/check.py)
import make as exercise_maker  # noqa: E402  (exercises/make.py)

# ----------------------------------------------------------------------------------------------
# 0. The scripts under test
# ----------------------------------------------------------------------------------------------


def flags(text):
    return tuple(text.split())


@dataclass(frozen=True)
class Script:
    module: ModuleType
    critic: bool  # has Agent.get_value and learns V
    discrete: bool  # Discrete actions; else Box actions, and the Box versions of the probes
    policy_loss: str  # the function train() calls for the policy loss
    returns_loss: str  # a function train() gives the batch's returns to ...
    returns_arg: int  # ... as this positional argument
    returns_argv: tuple  # flags that make returns_loss see every sample of a batch ...
    returns_calls: int  # ... exactly this many times per rollout, and unnormalized
    own_positive: tuple  # the script's own flags that must be > 0
    tags: tuple  # TensorBoard scalars beyond the common ones
    env_id: str  # an env with its kind of actions and short episodes, for the short runs
    hyper: tuple  # every learning hyperparameter, pinned: the defaults are being tuned
    probe_argv: tuple  # what to change in `hyper` so that the probes learn in a few seconds
    cartpole_steps: int = 0  # --total-timesteps after which CartPole-v1 is clearly learned
    own_bad: tuple = ()  # more argvs that parse_args must refuse, naming their next-to-last word

    @property
    def name(self):
        return self.module.__name__

    @property
    def path(self):
        return Path(self.module.__file__)

    @property
    def default_env(self):  # CartPole-v1 or Pendulum-v1
        return self.module.parse_args([]).env_id

    @property
    def other_kind(self):  # an env with the other kind of actions, and the script it needs
        return (
            ("Pendulum-v1", "ppo_continuous.py") if self.discrete else ("CartPole-v1", "ppo_gae.py")
        )

    def __repr__(self):  # the test ids
        return self.name


CRITIC_TAGS = ("losses/value_loss", "losses/explained_variance")
PPO_TAGS = CRITIC_TAGS + ("losses/approx_kl", "losses/clipfrac")
# The learning flags of ppo_gae and ppo_continuous, pinned at ppo_gae's defaults.
GAE_HYPER = flags(
    "--num-envs 16 --num-steps 32 --num-minibatches 1 --update-epochs 10 --learning-rate 5e-3 "
    "--gamma 0.99 --gae-lambda 0.95 --anneal-lr --normalize-advantages --clip-coef 0.2 "
    "--no-clip-vloss --ent-coef 0 --vf-coef 0.5 --max-grad-norm 0.5"
)
GAE_PROBE = flags(
    "--num-envs 4 --num-steps 8 --num-minibatches 2 --update-epochs 4 --learning-rate 1e-2 "
    "--max-grad-norm 1"
)
GAE_SCRIPT = dict(
    critic=True,
    policy_loss="ppo_loss",
    returns_loss="value_loss",
    returns_arg=1,
    returns_argv=flags("--update-epochs 1 --num-minibatches 2"),
    returns_calls=1,  # every minibatch once
    own_positive=flags(
        "--update-epochs --num-minibatches --clip-coef --vf-coef --max-grad-norm --target-kl"
    ),
    own_bad=(
        ("--gae-lambda", "1.5"),
        ("--ent-coef", "-0.1"),
        flags("--num-envs 3 --num-steps 5 --num-minibatches 4"),  # 15 samples in 4 minibatches
    ),
    tags=PPO_TAGS,
    hyper=GAE_HYPER,
    probe_argv=GAE_PROBE,
)
SCRIPTS = [
    Script(
        module=reinforce,
        critic=False,
        discrete=True,
        policy_loss="reinforce_loss",
        returns_loss="reinforce_loss",
        returns_arg=1,
        returns_argv=("--no-normalize-returns",),
        returns_calls=1,
        own_positive=(),
        tags=(),
        env_id="CartPole-v1",
        hyper=flags(
            "--num-envs 8 --num-steps 200 --learning-rate 5e-3 --gamma 0.99 --normalize-returns"
        ),
        probe_argv=("--num-envs", "8", "--num-steps", "4", "--learning-rate", "3e-2"),
        cartpole_steps=50_000,
    ),
    Script(
        module=vpg,
        critic=True,
        discrete=True,
        policy_loss="vpg_loss",
        returns_loss="vpg_loss",
        returns_arg=2,
        returns_argv=("--train-pi-iters", "1", "--train-v-iters", "1"),
        returns_calls=2,  # one policy step and one value step, each on the whole batch
        own_positive=("--train-pi-iters", "--train-v-iters"),
        tags=CRITIC_TAGS,
        env_id="CartPole-v1",
        hyper=flags(
            "--num-envs 8 --num-steps 128 --learning-rate 1e-2 --gamma 0.99 "
            "--train-pi-iters 1 --train-v-iters 20"
        ),
        probe_argv=("--num-envs", "4", "--num-steps", "8", "--learning-rate", "3e-2"),
        cartpole_steps=24_000,
    ),
    Script(
        module=ppo,
        critic=True,
        discrete=True,
        policy_loss="ppo_loss",
        returns_loss="value_loss",
        returns_arg=1,
        returns_argv=("--train-v-iters", "1"),
        returns_calls=1,
        own_positive=("--update-epochs", "--clip-coef", "--train-v-iters"),
        tags=PPO_TAGS,
        env_id="CartPole-v1",
        hyper=flags(
            "--num-envs 8 --num-steps 128 --learning-rate 1e-2 --gamma 0.99 "
            "--update-epochs 10 --clip-coef 0.2 --train-v-iters 20"
        ),
        probe_argv=("--num-envs", "4", "--num-steps", "8", "--learning-rate", "3e-2"),
        cartpole_steps=16_000,
    ),
    Script(module=ppo_gae, discrete=True, env_id="CartPole-v1", cartpole_steps=12288, **GAE_SCRIPT),
    Script(module=ppo_continuous, discrete=False, env_id="probes/ShortPendulum-v0", **GAE_SCRIPT),
]
WITH_CRITIC = [s for s in SCRIPTS if s.critic]
DISCRETE = [s for s in SCRIPTS if s.discrete]
CONTINUOUS = [s for s in SCRIPTS if not s.discrete]
# Families that share a pure function.
DISCOUNTED_RETURNS = [reinforce, vpg, ppo]
PPO_LOSS = [ppo, ppo_gae, ppo_continuous]
VALUE_LOSS = [ppo, ppo_gae, ppo_continuous]
GAE = [ppo_gae, ppo_continuous]  # compute_gae, value_loss with clipping, minibatches
GAE_SCRIPTS = [s for s in SCRIPTS if s.module in GAE]
TORCH_CARTPOLE = "envs.cartpole_torch:CartPoleTorch-v1"  # gymnasium's "module:EnvId"

COMMON_TAGS = (
    "charts/episodic_return",
    "charts/episodic_length",
    "charts/SPS",
    "charts/learning_rate",
    "losses/policy_loss",
    "losses/entropy",
    "losses/grad_norm",
    "eval/episodic_return",
)
SPEC_FLAGS = (
    "--env-id",
    "--seed",
    "--total-timesteps",
    "--num-envs",
    "--learning-rate",
    "--gamma",
    "--cuda",
    "--torch-deterministic",
    "--no-torch-deterministic",
    "--capture-video",
    "--save-model",
    "--load-model",
    "--eval-episodes",
    "--run-dir",
    "--checkpoint-every",
    "--resume",
    "--async-envs",
    "--track",
    "--wandb-project-name",
    "--wandb-entity",
    "--video-every",
)
RESULT_KEYS = {"agent", "episode_returns", "global_step", "sps", "eval_returns", "run_dir"}
# What the return of one episode can be in each env_id above.
EPISODE_RETURN_OK = {
    "CartPole-v1": lambda r: 8 <= r <= 500 and r == int(r),  # 1 per step, 8 to 500 steps
    # 25 steps of cost theta^2 + .1 theta'^2 + .001 u^2 <= pi^2 + .1 * 8^2 + .001 * 2^2 = 16.27
    "probes/ShortPendulum-v0": lambda r: -25 * 16.28 <= r <= 0,
}


def by_name(scripts):
    return pytest.mark.parametrize("script", scripts, ids=repr)


def modules(mods):
    return pytest.mark.parametrize("module", mods, ids=lambda m: m.__name__)


# ----------------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------------


def run(script, tmp_path, *argv):
    """train() in this process: no evaluation, logs under tmp_path; later flags win."""
    module = script.module
    args = module.parse_args(["--eval-episodes", "0", "--run-dir", str(tmp_path / "run"), *argv])
    return module.train(args)


def tiny(script, tmp_path, *argv):
    """A run of a few hundred steps of script.env_id: enough for episodes, updates and logs."""
    argv = ("--env-id", script.env_id, *flags("--num-envs 2 --num-steps 64"), *argv)
    return run(script, tmp_path, "--total-timesteps", "512", *argv)


def observe(agent, obs):
    """obs as the networks take it: ppo_continuous's Agent holds running statistics (obs_norm)
    that its caller applies first; the others take observations as they are."""
    obs = torch.as_tensor(obs, dtype=torch.float32)
    norm = getattr(agent, "obs_norm", None)
    with torch.no_grad():
        return obs if norm is None else norm(obs)


def logprob(agent, obs, action):
    """log pi(action|obs) for a batch, with either Agent interface."""
    score = getattr(agent, "get_action_and_value", None) or agent.get_action
    with torch.no_grad():
        return score(observe(agent, obs), torch.as_tensor(action))[1]


def value(agent, obs):
    with torch.no_grad():
        return agent.get_value(observe(agent, obs)).squeeze(-1)


def wrap(monkeypatch, module, name, after):
    """Replace module.name by a function that calls it, then `after(args, result)`."""
    original = getattr(module, name)

    def wrapper(*args, **kwargs):
        result = original(*args, **kwargs)
        return after(args, result)

    monkeypatch.setattr(module, name, wrapper)


def record(monkeypatch, module, name, arg):
    """A list that gets a copy of the positional argument `arg` of every call to module.name."""
    seen = []

    def keep(args, result):
        seen.append(args[arg].detach().clone())
        return result

    wrap(monkeypatch, module, name, keep)
    return seen


def one_line_error(capsys, exc, script):
    """Exit status 2 and exactly one line on stderr that names the script."""
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(f"{script.path.name}: error:"), err
    return err


def scalars(run_dir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir))
    events.Reload()
    return events


# ----------------------------------------------------------------------------------------------
# Probe environments: a Box observation of one number; Discrete(2) actions, or Box actions in
# [-1, 1] for the ids that end in Box
# ----------------------------------------------------------------------------------------------


class OneStep(gym.Env):
    """Observation 1, reward 1 whatever the action, and the episode ends: V = 1."""

    terminates = True
    received = None  # set it to a list to keep every action the env gets

    def __init__(self, render_mode=None, bound=None):
        self.render_mode = render_mode
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        if bound is None:
            self.action_space = gym.spaces.Discrete(2)
        else:
            self.action_space = gym.spaces.Box(-bound, bound, (1,), np.float32)

    def observe(self):
        return 1.0

    def reward(self, action):
        return 1.0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.obs = np.array([self.observe()], dtype=np.float32)
        return self.obs, {}

    def step(self, action):
        if self.received is not None:
            self.received.append(np.array(action))
        return self.obs.copy(), self.reward(action), self.terminates, False, {}


class RandomSign(OneStep):
    """Observation +1 or -1 at random, reward = observation: V(s) = s."""

    def observe(self):
        return float(self.np_random.choice([-1.0, 1.0]))

    def reward(self, action):
        return float(self.obs[0])


class RightAction(RandomSign):
    """Reward 1 for action 1 when the observation is +1, for action 0 when it is -1."""

    def reward(self, action):
        return float(int(action) == (self.obs[0] > 0))


class Endless(OneStep):
    """Reward 1 per step forever, constant observation; registered with a time limit of 5."""

    terminates = False


class Track(OneStep):
    """Observation uniform in [-1, 1], reward -(action - observation)^2: the best action is the
    observation itself."""

    def observe(self):
        return float(self.np_random.uniform(-1.0, 1.0))

    def reward(self, action):
        return -float((action[0] - self.obs[0]) ** 2)


class Forever(Endless):
    """Endless with no time limit at all: the scripts must cut it themselves (at 1,000 steps).
    It fails loudly past 1,000 steps rather than let a test hang."""

    def reset(self, *, seed=None, options=None):
        self.steps = 0
        return super().reset(seed=seed, options=options)

    def step(self, action):
        self.steps += 1
        assert self.steps <= 1000, "an episode with no time limit ran past 1,000 steps"
        return super().step(action)


class OneHot(gym.Env):
    """Observation Discrete(2), 0 or 1 at random, which the scripts flatten to a one-hot vector;
    one step. Discrete actions: reward 1 for the action equal to the observation. Box actions
    in [-1, 1]: reward -(a - (2 s - 1))^2, best at a = -1 for s = 0 and a = +1 for s = 1."""

    def __init__(self, render_mode=None, bound=None):
        self.render_mode = render_mode
        self.observation_space = gym.spaces.Discrete(2)
        self.action_space = gym.spaces.Discrete(2) if bound is None else BOX_SPACE

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.obs = int(self.np_random.integers(2))
        return self.obs, {}

    def step(self, action):
        if isinstance(self.action_space, gym.spaces.Box):
            reward = -float((action[0] - (2 * self.obs - 1)) ** 2)
        else:
            reward = float(int(action) == self.obs)
        return self.obs, reward, True, False, {}


class Observe(OneStep):
    """OneStep with the observation space `space`: every observation is a sample of it."""

    def __init__(self, render_mode=None, bound=None, space=None):
        super().__init__(render_mode, bound)
        self.observation_space = space

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.observation_space.seed(seed)
        self.obs = self.observation_space.sample()
        return self.obs, {}

    def step(self, action):
        return self.observation_space.sample(), 1.0, True, False, {}


BOX = {"bound": 1.0}
BOX_SPACE = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
PROBES = [  # id, entry point, time limit, arguments
    ("probes/OneStep-v0", OneStep, None, {}),
    ("probes/RandomSign-v0", RandomSign, None, {}),
    ("probes/RightAction-v0", RightAction, None, {}),
    ("probes/Endless-v0", Endless, 5, {}),
    ("probes/OneStepBox-v0", OneStep, None, BOX),
    ("probes/RandomSignBox-v0", RandomSign, None, BOX),
    ("probes/EndlessBox-v0", Endless, 5, BOX),
    ("probes/TrackBox-v0", Track, None, BOX),
    ("probes/NarrowBox-v0", OneStep, None, {"bound": 0.1}),  # actions in [-0.1, 0.1]
    ("probes/Forever-v0", Forever, None, {}),
    ("probes/ForeverBox-v0", Forever, None, BOX),
    ("probes/OneHot-v0", OneHot, None, {}),
    ("probes/OneHotBox-v0", OneHot, None, BOX),
    # Not a probe: Pendulum-v1 cut at 25 steps, for many short Box-action episodes.
    ("probes/ShortPendulum-v0", "gymnasium.envs.classic_control.pendulum:PendulumEnv", 25, {}),
]
for _env_id, _entry, _limit, _kwargs in PROBES:
    if _env_id not in gym.registry:
        gym.register(id=_env_id, entry_point=_entry, max_episode_steps=_limit, kwargs=_kwargs)


def probe_id(script, name):
    """The probe `name` with the script's kind of actions."""
    return f"probes/{name}{'' if script.discrete else 'Box'}-v0"


def reward_unit(monkeypatch, script):
    """A function that tells, once train() has run, what a reward of 1 was in the loss of the
    last rollout. That is 1, except in ppo_continuous, which divides rewards by the running std
    of the discounted return (then clips them to +-10): its values are learned in that unit.
    Read off the rewards that compute_gae gets; the older scripts scale no reward."""
    if script.module not in GAE:
        return lambda: 1.0
    rewards = record(monkeypatch, script.module, "compute_gae", 0)
    return lambda: rewards[-1].max().item()


def probe(script, tmp_path, monkeypatch, name, steps, *argv):
    """Train on a probe: the agent, and what a reward of 1 is in its loss (reward_unit)."""
    unit = reward_unit(monkeypatch, script)
    argv = ("--total-timesteps", str(steps), *script.hyper, *script.probe_argv, *argv)
    agent = run(script, tmp_path, "--env-id", probe_id(script, name), *argv)["agent"]
    return agent, unit()


# ----------------------------------------------------------------------------------------------
# 1. Pure functions
# ----------------------------------------------------------------------------------------------

# The hand-worked numbers of this section live in exercises/cases.py, the table that the grader
# (exercises/check.py) reads too: each is worked out there, in its comments.
R = torch.tensor(exercise_cases.R)
NO_DONES = torch.zeros(3)


@modules(DISCOUNTED_RETURNS)
@pytest.mark.parametrize("dones, gamma, last_value, expected", exercise_cases.DISCOUNTED_RETURNS)
def test_discounted_returns_1d(module, dones, gamma, last_value, expected):
    rewards, dones = R.clone(), torch.tensor(dones, dtype=torch.float32)
    last = None if last_value is None else torch.tensor(last_value)
    returns = module.discounted_returns(rewards, dones, gamma, last_value=last)
    assert returns.shape == (3,)
    torch.testing.assert_close(returns, torch.tensor(expected))
    torch.testing.assert_close(rewards, R)  # the input is left alone


@modules(DISCOUNTED_RETURNS)
def test_discounted_returns_time_major_envs_are_independent(module):
    c = exercise_cases.RETURNS_2_ENVS  # (T, N) = (3, 2), gamma .5, bool dones
    rewards, dones = torch.tensor(c["rewards"]), torch.tensor(c["dones"])
    returns = module.discounted_returns(
        rewards, dones, 0.5, last_value=torch.tensor(c["last_value"])
    )
    torch.testing.assert_close(returns, torch.tensor(c["expected"]))


def test_reinforce_loss_and_its_gradient():
    c = exercise_cases.REINFORCE
    logprobs = torch.tensor(c["logprobs"], requires_grad=True)
    loss = reinforce.reinforce_loss(logprobs, torch.tensor(c["returns"]))
    torch.testing.assert_close(loss, torch.tensor(c["loss"]))
    loss.backward()
    torch.testing.assert_close(logprobs.grad, torch.tensor(c["grad"]))


def vpg_case():
    c = exercise_cases.VPG  # worked out in exercises/cases.py: A = G - V = (1, -2)
    logprobs = torch.tensor(c["logprobs"], requires_grad=True)
    values = torch.tensor(c["values"], requires_grad=True)
    return logprobs, values, *vpg.vpg_loss(logprobs, values, torch.tensor(c["returns"]))


def test_vpg_loss_values():
    _, _, policy_loss, value_loss = vpg_case()
    torch.testing.assert_close(policy_loss, torch.tensor(exercise_cases.VPG["losses"][0]))
    torch.testing.assert_close(value_loss, torch.tensor(exercise_cases.VPG["losses"][1]))


def test_vpg_policy_loss_does_not_move_the_critic():
    logprobs, values, policy_loss, _ = vpg_case()
    policy_loss.backward()
    assert values.grad is None or not values.grad.any()
    torch.testing.assert_close(logprobs.grad, torch.tensor(exercise_cases.VPG_GRADS["policy"][0]))


def test_vpg_value_loss_trains_only_the_critic():
    logprobs, values, _, value_loss = vpg_case()
    value_loss.backward()
    torch.testing.assert_close(values.grad, torch.tensor(exercise_cases.VPG_GRADS["value"][1]))
    assert logprobs.grad is None or not logprobs.grad.any()


# PPO: exercises/cases.py works the clipped objective out, sample by sample.
PPO_RATIOS = torch.tensor(exercise_cases.PPO_RATIOS)
PPO_ADVANTAGES = torch.tensor(exercise_cases.PPO_ADVANTAGES)
PPO_GRAD = torch.tensor(exercise_cases.PPO_GRAD)


@modules(PPO_LOSS)
def test_ppo_loss_value_and_gradient(module):
    new_logprobs = PPO_RATIOS.log().requires_grad_()
    loss = module.ppo_loss(new_logprobs, torch.zeros(6), PPO_ADVANTAGES, 0.2)
    torch.testing.assert_close(loss, torch.tensor(exercise_cases.PPO_LOSS[0.2]))
    loss.backward()
    torch.testing.assert_close(new_logprobs.grad, PPO_GRAD)
    clipped = torch.tensor([False, True, False, True, False, False])
    assert (new_logprobs.grad[clipped] == 0).all()  # exactly zero, not just small
    assert (new_logprobs.grad[~clipped] != 0).all()


@modules(PPO_LOSS)
def test_ppo_loss_uses_the_ratio_to_the_old_policy(module):
    # The same ratios from old logprobs -1 and new = old + log r: same loss.
    old = torch.full((6,), -1.0)
    loss = module.ppo_loss(old + PPO_RATIOS.log(), old, PPO_ADVANTAGES, 0.2)
    torch.testing.assert_close(loss, torch.tensor(exercise_cases.PPO_LOSS[0.2]))
    # With eps = 0.6 every ratio is inside [0.4, 1.6], so the loss is -mean(r A)
    # = -(1.1 + 1.5 + 0.5 - 0.5 - 1.5 - 1.8) / 6 = 0.7 / 6
    loss = module.ppo_loss(old + PPO_RATIOS.log(), old, PPO_ADVANTAGES, 0.6)
    torch.testing.assert_close(loss, torch.tensor(exercise_cases.PPO_LOSS[0.6]))


@modules(VALUE_LOSS)
def test_value_loss(module):
    c = exercise_cases.VALUE  # worked out in exercises/cases.py
    values = torch.tensor(c["values"], requires_grad=True)
    loss = module.value_loss(values, torch.tensor(c["returns"]))
    torch.testing.assert_close(loss, torch.tensor(c["loss"]))
    loss.backward()
    torch.testing.assert_close(values.grad, torch.tensor(c["grad"]))


# GAE: exercises/cases.py works each case out (gamma .5, lambda .5, rewards (1, 2, 3)).
GAE_REWARDS = torch.tensor(exercise_cases.GAE_REWARDS)
GAE_VALUES = torch.tensor(exercise_cases.GAE_VALUES)
GAE_NEXT_VALUES = torch.tensor(exercise_cases.GAE_NEXT_VALUES)
GAE_CASES = exercise_cases.GAE_CASES


@modules(GAE)
@pytest.mark.parametrize("case", GAE_CASES)
def test_compute_gae_1d(module, case):
    terminated, ended, next_value_1, gae_lambda, expected = GAE_CASES[case]
    next_values = GAE_NEXT_VALUES.clone()
    next_values[1] = next_value_1
    advantages, returns = module.compute_gae(
        GAE_REWARDS,
        GAE_VALUES,
        next_values,
        torch.tensor(terminated, dtype=torch.float32),
        torch.tensor(ended, dtype=torch.float32),
        0.5,
        gae_lambda,
    )
    torch.testing.assert_close(advantages, torch.tensor(expected))
    torch.testing.assert_close(returns, torch.tensor(expected) + GAE_VALUES)  # returns = A + V
    torch.testing.assert_close(GAE_REWARDS, torch.tensor([1.0, 2.0, 3.0]))  # inputs left alone


@modules(GAE)
def test_compute_gae_time_major_envs_are_independent(module):
    # (T, N) = (3, 2), bool flags: env 0 is the "plain" case above, env 1 the "terminated" one.
    both = torch.stack
    terminated = torch.tensor([[False, False], [False, True], [False, False]])
    advantages, returns = module.compute_gae(
        both([GAE_REWARDS, GAE_REWARDS], 1),
        both([GAE_VALUES, GAE_VALUES], 1),
        both([GAE_NEXT_VALUES, GAE_NEXT_VALUES], 1),
        terminated,
        terminated,
        0.5,
        0.5,
    )
    expected = torch.tensor(exercise_cases.GAE_2_ENVS)
    torch.testing.assert_close(advantages, expected)
    torch.testing.assert_close(returns, expected + GAE_VALUES[:, None])


# Clipped value loss: exercises/cases.py works each case out (eps .2, old values 0).
VL_RETURNS = torch.tensor(exercise_cases.VL_RETURNS)
VL_VALUES = torch.tensor(exercise_cases.VL_VALUES)
VL_CASES = exercise_cases.VL_CASES


@modules(GAE)
@pytest.mark.parametrize("old_values, clip_coef, expected", VL_CASES.values(), ids=list(VL_CASES))
def test_value_loss_clipped_around_the_old_values(module, old_values, clip_coef, expected):
    values = VL_VALUES.clone().requires_grad_()
    old_values = None if old_values is None else torch.tensor(old_values)
    loss = module.value_loss(values, VL_RETURNS, old_values, clip_coef)
    torch.testing.assert_close(loss, torch.tensor(expected[0]))
    loss.backward()
    torch.testing.assert_close(values.grad, torch.tensor(expected[1]))


# ppo_continuous: the Gaussian policy and the observation statistics


def test_gaussian_logprob_and_entropy_are_summed_over_action_dimensions():
    # exercises/cases.py works it out: mu = (.5, -1) whatever the observation, sigma = (1, .5).
    g, expected = exercise_cases.GAUSSIAN, exercise_cases.GAUSSIAN_EXPECTED
    agent = exercise_cases.gaussian_agent(ppo_continuous)
    with torch.no_grad():
        actions = torch.tensor(g["actions"])
        action, logp, entropy, v = agent.get_action_and_value(torch.randn(2, 3), actions)
        assert torch.equal(action, actions) and v.shape == (2, 1)
        torch.testing.assert_close(logp, torch.tensor(expected["logprob"]))
        torch.testing.assert_close(entropy, torch.tensor(expected["entropy"]))
        # Samples: mean mu and std sigma, to within 4 standard errors (1 / sqrt(20000) = .007).
        samples = agent.get_action_and_value(torch.randn(20_000, 3))[0]
    torch.testing.assert_close(samples.mean(0), torch.tensor(g["mean"]), atol=0.03, rtol=0)
    torch.testing.assert_close(samples.std(0), torch.tensor(g["std"]), atol=0.03, rtol=0)


def test_log_std_init_sets_the_starting_sigma(tmp_path):
    assert ppo_continuous.Agent(3, 2).actor_logstd.tolist() == [0.0, 0.0]  # sigma = 1
    script = next(s for s in CONTINUOUS if s.module is ppo_continuous)
    # One rollout, one update of steps ~1e-12: training starts from the flag's value.
    result = tiny(script, tmp_path, "--log-std-init", "-0.5", "--learning-rate", "1e-12")
    torch.testing.assert_close(result["agent"].actor_logstd.detach(), torch.tensor([-0.5]))


def test_critic_hidden_widens_the_critic_alone(tmp_path, capsys):
    def widths(net):
        return [layer.out_features for layer in net if isinstance(layer, torch.nn.Linear)]

    default, wide = ppo_continuous.Agent(3, 2), ppo_continuous.Agent(3, 2, critic_hidden=256)
    assert widths(default.critic) == [64, 64, 1] and widths(wide.critic) == [256, 256, 1]
    assert widths(default.actor_mean) == widths(wide.actor_mean) == [64, 64, 2]
    assert widths(ppo_continuous.Agent(3, 2, hidden=16).critic) == [16, 16, 1]  # as ppo_gae's
    script = next(s for s in CONTINUOUS if s.module is ppo_continuous)
    result = tiny(script, tmp_path, "--critic-hidden", "32", "--save-model")
    assert widths(result["agent"].critic) == [32, 32, 1]
    assert widths(result["agent"].actor_mean) == [64, 64, 1]
    # A saved model loads with the width it was trained with, and only with it.
    argv = ("--env-id", script.env_id, "--load-model", str(saved_path(script, result)))
    loaded = run(script, tmp_path / "a", *argv, "--critic-hidden", "32", "--eval-episodes", "1")
    assert len(loaded["eval_returns"]) == 1
    with pytest.raises(SystemExit) as exc:
        run(script, tmp_path / "b", *argv)
    assert "--load-model" in one_line_error(capsys, exc, script)


@pytest.mark.parametrize("lr, kl, expected", exercise_cases.ADAPTED_LR)  # target 0.02, max 3e-4
def test_adapted_lr(lr, kl, expected):
    assert ppo_continuous.adapted_lr(lr, kl, 0.02, 3e-4) == pytest.approx(
        expected, rel=1e-12, abs=0
    )


@pytest.mark.parametrize(
    "target_kl, lr, expected",
    [
        ("1e3", "4e-4", [4e-4] * 4),
        ("1e-12", "4e-5", [4e-5 / 1.5, 4e-5 / 2.25, 4e-5 / 3.375, 1e-5]),
    ],
)
def test_lr_target_kl_sets_the_learning_rate_after_each_update(
    target_kl, lr, expected, tmp_path, capsys
):
    # 4 updates. Every update's KL is far below 1e3 / 2, and above 2e-12: the rate would rise
    # after each one but stays at its start, its ceiling (falls by / 1.5 after each one, down to
    # 1e-5). The log shows the rate after the update.
    script = next(s for s in CONTINUOUS if s.module is ppo_continuous)
    argv = ("--learning-rate", lr, "--no-anneal-lr", "--lr-target-kl", target_kl)
    whole = tiny(script, tmp_path / "whole", *argv)
    # Stopped after 2 updates and resumed, it goes on from the rate it had reached.
    half = tiny(
        script, tmp_path / "half", *argv, "--total-timesteps", "256", "--checkpoint-every", "256"
    )
    resumed = run(
        script, tmp_path / "half", "--resume", half["run_dir"], "--total-timesteps", "512"
    )
    for result in (whole, resumed):
        logged = [e.value for e in scalars(result["run_dir"]).Scalars("charts/learning_rate")]
        assert logged == pytest.approx(expected, rel=1e-6)
    with pytest.raises(SystemExit) as exc:  # with the default decay, it would fight the schedule
        tiny(script, tmp_path / "both", "--lr-target-kl", target_kl)
    assert "--no-anneal-lr" in one_line_error(capsys, exc, script)


def test_running_norm_statistics_match_numpy_over_several_batches():
    data = exercise_cases.norm_data()  # 100 rows of N((5, -3), (2, .5)^2), as the grader's
    norm = ppo_continuous.RunningNorm(2)
    for batch in np.split(data, exercise_cases.NORM_BATCHES):  # batches of 1, 9, 30 and 60
        norm.update(torch.as_tensor(batch))
    # They start as a pseudo-sample of weight 1e-4 with mean 0 and var 1: off by ~1e-5 here.
    mean, var = data.mean(0), data.var(0)
    torch.testing.assert_close(norm.mean, torch.as_tensor(mean), rtol=1e-4, atol=0)
    torch.testing.assert_close(norm.var, torch.as_tensor(var), rtol=1e-4, atol=0)
    assert norm.count.item() == pytest.approx(100)
    # (x - mean) / std, clipped to +-10: 2 std above -> 2, 100 std below -> -10
    x = torch.as_tensor(np.stack([mean + 2 * var**0.5, mean - 100 * var**0.5]))
    torch.testing.assert_close(
        norm(x), torch.tensor([[2.0, 2.0], [-10.0, -10.0]]), rtol=1e-4, atol=0
    )


@by_name([s for s in SCRIPTS if s.module is reinforce or s.module in GAE])
def test_a_batch_of_one_sample_keeps_its_gradient(script, tmp_path, monkeypatch):
    # OneStep ends every episode at once. reinforce: one env, one step, a batch of one G_t.
    # PPO + GAE: one env, two steps, the second gymnasium's reset step: one sample, in a
    # minibatch of its own. Scaled to mean 0 and std 1, it would be 0 and give no gradient.
    if script.module is reinforce:
        seen = record(monkeypatch, reinforce, "reinforce_loss", 1)  # (logprobs, returns)
        argv = flags("--num-envs 1 --num-steps 1 --total-timesteps 1")
    else:
        seen = record(monkeypatch, script.module, "ppo_loss", 2)  # (new, old, advantages, eps)
        argv = flags("--num-envs 1 --num-steps 2 --total-timesteps 2 --num-minibatches 2")
    run(script, tmp_path, "--env-id", probe_id(script, "OneStep"), *argv)
    assert len(seen[0]) == 1 and seen[0].abs().item() > 0.1, seen


@by_name([s for s in SCRIPTS if s.module in (vpg, ppo)])
def test_explained_variance_of_flat_returns_is_not_logged(script, tmp_path):
    # OneStep's return is 1 at every step: Var(G) = 0, and 1 - Var(G - V) / Var(G) is undefined.
    argv = flags("--num-envs 2 --num-steps 8 --total-timesteps 32")
    result = run(script, tmp_path, "--env-id", probe_id(script, "OneStep"), *argv)
    events = scalars(result["run_dir"])
    assert len(events.Scalars("losses/value_loss")) == 2
    logged = events.Tags()["scalars"]
    if "losses/explained_variance" in logged:
        values = [e.value for e in events.Scalars("losses/explained_variance")]
        assert all(math.isfinite(v) for v in values), values


# ----------------------------------------------------------------------------------------------
# 2. Probe environments
# ----------------------------------------------------------------------------------------------


@by_name(WITH_CRITIC)
def test_probe_critic_learns_a_constant_reward(script, tmp_path, monkeypatch):
    # One step, reward 1, terminated: V = 1 (a bootstrapped termination would go towards
    # 1 / (1 - gamma) = 100). Values here and below are in the loss's unit of reward (probe()).
    agent, unit = probe(script, tmp_path, monkeypatch, "OneStep", 128)
    assert value(agent, [[1.0]]).item() / unit == pytest.approx(1.0, abs=0.1)


@by_name(WITH_CRITIC)
def test_probe_critic_learns_a_value_that_depends_on_the_observation(script, tmp_path, monkeypatch):
    # Reward = observation = +-1, one step: V(+1) = 1, V(-1) = -1.
    agent, unit = probe(script, tmp_path, monkeypatch, "RandomSign", 256)
    torch.testing.assert_close(
        value(agent, [[1.0], [-1.0]]) / unit, torch.tensor([1.0, -1.0]), atol=0.15, rtol=0
    )


@by_name(DISCRETE)
def test_probe_policy_learns_the_right_action(script, tmp_path, monkeypatch):
    # Reward 1 for action 1 at +1 and for action 0 at -1: pi(right action) -> 1.
    agent, _ = probe(script, tmp_path, monkeypatch, "RightAction", 320)
    probs = logprob(agent, [[1.0], [-1.0]], [1, 0]).exp()
    assert (probs > 0.9).all(), probs


@by_name(CONTINUOUS)
def test_probe_gaussian_policy_tracks_the_observation(script, tmp_path, monkeypatch):
    # Observation s uniform in [-1, 1], reward -(a - s)^2: the best mean action is mu(s) = s, and
    # sigma, 1 at the start, should shrink. A policy blind to s is off by up to 1 at s = +-1.
    argv = flags("--num-envs 8 --num-steps 16 --update-epochs 10")
    agent, _ = probe(script, tmp_path, monkeypatch, "Track", 2048, *argv)
    s = torch.linspace(-1.0, 1.0, 9)[:, None]
    with torch.no_grad():
        mu = agent.actor_mean(observe(agent, s))
    assert (mu - s).abs().max() < 0.2, torch.cat([s, mu], 1)
    assert (agent.actor_logstd.exp() < 0.5).all()
    # evaluate() plays mu(normalized s): errors under .2 cost under .04 an episode. Were s not
    # normalized (std 1 / sqrt(3) = .58), mu(s) ~ .58 s would cost E[(.42 s)^2] = .18 / 3 = .06.
    env = gym.make(probe_id(script, "Track"))
    returns = script.module.evaluate(agent, env, 20, 0, torch.device("cpu"))
    assert np.mean(returns) > -0.02, returns


@by_name(WITH_CRITIC)
def test_probe_time_limit_is_bootstrapped(script, tmp_path, monkeypatch):
    # Reward 1 per step forever, cut after 5 steps by a time limit, gamma 0.9. The task does
    # not end, so V = 1 + 0.9 V = 1 / (1 - 0.9) = 10. Had the cut been taken for an end, the
    # critic would learn the mean return left in the episode: sum_{k=1..5} (1 - .9^k) / .1 / 5
    # = (1 + 1.9 + 2.71 + 3.439 + 4.0951) / 5 = 2.63 (4.1 from the first step). ppo_continuous's
    # unit creeps up here (the std of the discounted return shrinks as it nears 10), and its V
    # lags a little behind: 9.3 of them with seeds 1-5.
    agent, unit = probe(script, tmp_path, monkeypatch, "Endless", 640, "--gamma", "0.9")
    v = value(agent, [[1.0]]).item() / unit
    assert v == pytest.approx(10.0, abs=1.5)
    assert v > 4.1 + 4  # far from any truncated sum


@by_name(WITH_CRITIC)
def test_probe_no_bootstrap_truncation_shows_the_bug(script, tmp_path, monkeypatch):
    # The ablation flag: the same probe with the cut taken for an end. The critic then learns
    # about the mean return left in an episode, 2.63 (above; 4.1 at most), where the task's value
    # is 10. A rollout's end is still bootstrapped (it is no episode's end), which lifts V a
    # little: 3.5 for vpg and ppo, 3.1 for ppo_gae, 2.8 for ppo_continuous (against about 10).
    argv = ("--gamma", "0.9", "--no-bootstrap-truncation")
    agent, unit = probe(script, tmp_path, monkeypatch, "Endless", 640, *argv)
    v = value(agent, [[1.0]]).item() / unit
    assert 2.0 < v < 4.1 + 0.5, v


# ----------------------------------------------------------------------------------------------
# 3. What reaches the loss. Autoreset: the step after an episode's end is gymnasium's reset,
# not a transition. Box actions: the sample, not what the env got (clipped to its bounds).
# ----------------------------------------------------------------------------------------------


@by_name(SCRIPTS)
def test_reset_steps_never_reach_the_loss(script, tmp_path, monkeypatch):
    # OneStep episodes last one step, so every other env step is a reset step, with reward 0.
    # Every real step is a whole episode with G = 1 (in the loss's unit, see reward_unit); a reset
    # step would bring G = 0 + gamma * G' or a bootstrap. So the loss must see only returns of
    # exactly 1 (GAE's A + V: to rounding), and as many of them as there were episodes (times the
    # calls per rollout). The episode returns reported are the env's own: 1.
    unit = reward_unit(monkeypatch, script)
    seen = record(monkeypatch, script.module, script.returns_loss, script.returns_arg)
    argv = ("--env-id", probe_id(script, "OneStep"), *script.returns_argv)
    result = run(script, tmp_path, *flags("--num-envs 2 --num-steps 6 --total-timesteps 48"), *argv)
    returns = torch.cat(seen)
    assert len(result["episode_returns"]) > 0
    assert all(r == 1.0 for _, r in result["episode_returns"])
    assert len(returns) == script.returns_calls * len(result["episode_returns"])
    torch.testing.assert_close(returns, torch.full_like(returns, unit()))


@by_name(DISCRETE)
def test_numpy_cartpole_resets_on_the_next_step_like_python_envs(script):
    # make_env lets gymnasium pick CartPole's own numpy vector env (the probes above run in a
    # SyncVectorEnv); the masking needs its reset too one step after the end, with reward 0.
    envs = script.module.make_env("CartPole-v1", 4, torch.device("cpu"))
    assert type(envs.unwrapped).__name__ == "CartPoleVectorEnv"
    envs.reset(seed=0)
    push_right, done = torch.ones(4, dtype=torch.long), np.zeros(4, dtype=bool)
    for _ in range(100):  # pushing one way, the pole falls in about 10 steps
        _, reward, terminated, truncated, _ = envs.step(push_right)
        assert np.all(reward == 1)
        done = terminated | truncated
        if done.any():
            break
    obs, reward, terminated, truncated, _ = envs.step(push_right)
    envs.close()
    assert done.any() and np.all(reward == np.where(done, 0, 1))
    assert not (terminated | truncated)[done].any()
    assert np.all(np.abs(obs[done]) <= 0.05)  # a new episode's first observation


@by_name(GAE_SCRIPTS)
@pytest.mark.parametrize(
    "anneal, weights", [("--anneal-ent", [0.8, 0.6, 0.4, 0.2]), ("", [0.8] * 4)]
)
def test_entropy_weight_in_the_loss_and_its_annealing(
    script, anneal, weights, tmp_path, monkeypatch
):
    # The loss is ... - c_H * mean(entropy): d loss / d entropy_i = -c_H / B, so the gradient
    # that reaches the entropy tensor of each update sums to -c_H, the weight really used.
    # 4 updates of one minibatch; --anneal-ent takes c_H = 0.8 linearly towards 0.
    seen = []

    def keep(args, result):  # scoring the batch's actions: the update's entropy tensor
        if len(args) == 3:
            result[2].register_hook(lambda grad: seen.append(-grad.sum().item()))
        return result

    wrap(monkeypatch, script.module.Agent, "get_action_and_value", keep)
    argv = flags("--num-envs 2 --num-steps 8 --total-timesteps 64 --update-epochs 1")
    argv += flags(f"--num-minibatches 1 --ent-coef 0.8 {anneal}")
    run(script, tmp_path, "--env-id", probe_id(script, "RandomSign"), *argv)
    assert seen == pytest.approx(weights)


@by_name(SCRIPTS)
def test_grad_norm_is_the_last_policy_steps_norm_before_clipping(script, tmp_path, monkeypatch):
    # losses/grad_norm (C4's progress line has it): in ppo_gae and ppo_continuous, the norm of
    # the whole loss's gradient that clip_grad_norm_ saw before it clipped to --max-grad-norm;
    # in the others, which do not clip, the norm of the policy's gradient at its last step.
    # Each norm is computed here apart, from the gradients in place at that moment.
    seen, clip, step = [], torch.nn.utils.clip_grad_norm_, torch.optim.Adam.step

    def norm(parameters):
        grads = [p.grad.flatten() for p in parameters if p.grad is not None]
        return torch.linalg.vector_norm(torch.cat(grads)).item() if grads else None

    def clipping(parameters, max_norm, **kwargs):
        parameters = list(parameters)
        seen.append(norm(parameters))
        return clip(parameters, max_norm, **kwargs)

    def stepping(optimizer, *args, **kwargs):
        parameters = optimizer.param_groups[0]["params"]  # the actor's first, as Agent makes them
        if parameters[0].grad is not None:  # a policy step: a value step leaves the actor none
            seen.append(norm(parameters))
        return step(optimizer, *args, **kwargs)

    if script.module in GAE:
        monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", clipping)
        argv = flags("--max-grad-norm 1e-6 --update-epochs 2 --num-minibatches 2")
    else:
        monkeypatch.setattr(torch.optim.Adam, "step", stepping)
        argv = ()
    result = tiny(script, tmp_path, "--total-timesteps", "128", *argv)
    logged = scalars(result["run_dir"]).Scalars("losses/grad_norm")
    assert logged and seen[-1] > 1e-3  # clipped, it would be 1e-6
    assert logged[-1].value == pytest.approx(seen[-1], rel=1e-5)


@by_name(GAE_SCRIPTS)
def test_minibatches_are_never_empty(script, tmp_path):
    # 1 env, 4 steps of one-step episodes: steps 1 and 3 are resets, so 2 samples reach the update.
    # 4 steps split into --num-minibatches 4, a legal choice; but 2 samples do not, and an empty
    # minibatch has a NaN loss (or no distribution at all).
    argv = flags("--num-envs 1 --num-steps 4 --num-minibatches 4 --total-timesteps 4")
    result = run(script, tmp_path, "--env-id", probe_id(script, "OneStep"), *argv)
    assert result["global_step"] == 4 and len(result["episode_returns"]) == 2


@by_name(CONTINUOUS)
def test_env_gets_the_action_clipped_and_the_loss_the_sample(script, tmp_path, monkeypatch):
    # Actions in [-0.1, 0.1] and an initial sigma of 1: ~92% of the samples fall outside. One
    # rollout of 2 envs x 8 steps, of which 8 are real steps (one-step episodes), and one update
    # on one minibatch, which scores those 8 samples.
    received, sampled, scored = [], [], []
    monkeypatch.setattr(OneStep, "received", received)

    def keep(args, result):  # args: (agent, obs) to sample, (agent, obs, actions) to score
        (scored if len(args) == 3 else sampled).append(result[0].detach().clone())
        return result

    wrap(monkeypatch, script.module.Agent, "get_action_and_value", keep)
    argv = flags("--num-envs 2 --num-steps 8 --total-timesteps 16 --update-epochs 1")
    run(script, tmp_path, "--env-id", "probes/NarrowBox-v0", *argv, "--num-minibatches", "1")
    (scored,) = scored
    assert len(scored) == len(received) == 8
    assert torch.isin(scored, torch.cat(sampled)).all()  # the samples themselves ...
    assert (scored.abs() > 0.1).sum() >= 4  # ... most of them out of bounds
    # The env got each of them clipped to [-0.1, 0.1] (the minibatch is shuffled: compare sorted).
    clipped = np.sort(np.clip(scored.numpy().ravel(), -0.1, 0.1))
    assert np.array_equal(np.sort(np.concatenate(received)), clipped), (received, clipped)


# ----------------------------------------------------------------------------------------------
# 4. Learning CartPole-v1 with pinned hyperparameters (Script.hyper)
# ----------------------------------------------------------------------------------------------


@by_name(DISCRETE)
def test_learns_cartpole(script, tmp_path):
    # A random policy lasts about 22 steps. Seed 1 gives (last 20 training episodes, greedy
    # evaluation) of about (424, 500) for reinforce, (408, 500) vpg, (472, 500) ppo, (199, 325)
    # ppo_gae; seeds 2-10 gave at least (169, 160), (146, 272), (219, 376), (168, 130), except
    # vpg's seed 4 at (75, 76): the seed is not a lucky one.
    steps = str(script.cartpole_steps)
    start = time.time()
    argv = (*script.hyper, "--total-timesteps", steps, "--eval-episodes", "10")
    result = run(script, tmp_path, "--env-id", "CartPole-v1", *argv)
    seconds = time.time() - start
    # SPS is measured over training only; the rest (envs, evaluation) is a small part.
    assert 0.99 <= result["sps"] / (result["global_step"] / seconds) <= 2.5
    recent = np.mean([r for _, r in result["episode_returns"][-20:]])
    assert recent >= 100, recent
    assert np.mean(result["eval_returns"]) >= 150, result["eval_returns"]


# ----------------------------------------------------------------------------------------------
# 5. Observation spaces. The MLP takes a flat vector: a flat Box as it is; Discrete (one-hot),
# MultiDiscrete, MultiBinary, a 2-D Box, Tuple and Dict through gymnasium's FlattenObservation;
# images and spaces with no fixed-size vector are refused in one line.
# ----------------------------------------------------------------------------------------------


def observing(space, script):
    """The id of an env that observes `space`, with the script's kind of actions."""
    env_id = probe_id(script, f"Observe{id(space)}")
    if env_id not in gym.registry:
        kwargs = {"space": space, **({} if script.discrete else BOX)}
        gym.register(id=env_id, entry_point=Observe, kwargs=kwargs)
    return env_id


def input_size(agent):
    """The number of inputs of the agent's first linear layer."""
    return next(m for m in agent.modules() if isinstance(m, torch.nn.Linear)).in_features


@by_name(SCRIPTS)
def test_probe_policy_learns_from_a_one_hot_observation(script, tmp_path, monkeypatch):
    # Observation 0 or 1, seen as (1, 0) or (0, 1): the right action is the observation
    # (Discrete), or -1 and +1 (Box).
    argv = () if script.discrete else flags("--num-envs 8 --num-steps 16 --update-epochs 10")
    agent, _ = probe(
        script, tmp_path, monkeypatch, "OneHot", 320 if script.discrete else 1024, *argv
    )
    assert input_size(agent) == 2
    one_hot = torch.eye(2)
    if script.discrete:
        probs = logprob(agent, one_hot, [0, 1]).exp()
        assert (probs > 0.9).all(), probs
    else:
        with torch.no_grad():
            mu = agent.actor_mean(observe(agent, one_hot)).flatten()
        assert mu[0] < -0.7 and mu[1] > 0.7, mu


TABULAR = [  # env id, size of the one-hot observation
    ("FrozenLake-v1", 16),
    ("Taxi-v4", 500),
    ("CliffWalking-v1", 48),
    ("Blackjack-v1", 32 + 11 + 2),  # a Tuple of three Discrete: three one-hot vectors
]


@by_name(DISCRETE)
@pytest.mark.parametrize("env_id, size", TABULAR, ids=[t[0] for t in TABULAR])
def test_tabular_envs_train_and_evaluate_on_one_hot_observations(script, env_id, size, tmp_path):
    # One env for 1,000 steps: at least one episode ends, even CliffWalking's (cut at 1,000).
    argv = flags("--num-envs 1 --num-steps 1000 --total-timesteps 1000 --eval-episodes 2")
    result = run(script, tmp_path, "--env-id", env_id, *argv)
    assert input_size(result["agent"]) == size
    assert len(result["episode_returns"]) > 0 and len(result["eval_returns"]) == 2


FLATTENED = [  # space, its size once flattened
    pytest.param(gym.spaces.Box(-1.0, 1.0, (2, 3), np.float32), 6, id="Box-2d"),
    pytest.param(gym.spaces.MultiDiscrete([2, 3]), 5, id="MultiDiscrete"),
    pytest.param(gym.spaces.MultiBinary(4), 4, id="MultiBinary"),
    pytest.param(gym.spaces.Tuple([gym.spaces.Discrete(3), BOX_SPACE]), 4, id="Tuple"),
    pytest.param(
        gym.spaces.Dict(cell=gym.spaces.Discrete(3), speed=gym.spaces.Box(-1, 1, (2,))),
        5,
        id="Dict",
    ),
]


@by_name(SCRIPTS)
@pytest.mark.parametrize("space, size", FLATTENED)
def test_other_observation_spaces_are_flattened(script, space, size, tmp_path):
    env_id = observing(space, script)
    argv = flags("--num-envs 2 --num-steps 8 --total-timesteps 16 --eval-episodes 2")
    result = run(script, tmp_path, "--env-id", env_id, *argv)
    assert input_size(result["agent"]) == size
    assert result["episode_returns"] and result["eval_returns"] == [1.0, 1.0]


REFUSED = [  # space, what the line says
    pytest.param(gym.spaces.Box(0, 255, (8, 8, 3), np.uint8), "image", id="image"),
    pytest.param(
        gym.spaces.Dict(pixels=gym.spaces.Box(0, 255, (8, 8, 3), np.uint8), speed=BOX_SPACE),
        "image",
        id="image-in-Dict",
    ),
    pytest.param(gym.spaces.Text(8), "Text", id="Text"),
    pytest.param(gym.spaces.Sequence(gym.spaces.Discrete(2)), "Sequence", id="Sequence"),
    pytest.param(gym.spaces.Graph(BOX_SPACE, None), "Graph", id="Graph"),
]


@by_name(SCRIPTS)
@pytest.mark.parametrize("space, says", REFUSED)
def test_observations_an_mlp_cannot_take_are_refused_in_one_line(
    script, space, says, tmp_path, capsys
):
    env_id = observing(space, script)
    with pytest.raises(SystemExit) as exc:
        run(script, tmp_path, "--env-id", env_id)
    err = one_line_error(capsys, exc, script)
    assert says in err and "MLP" in err, err
    assert not (tmp_path / "run").exists()


@by_name(SCRIPTS)
def test_an_env_with_no_time_limit_is_cut_at_1000_steps(script, tmp_path):
    # Reward 1 per step, no end and no time limit (CliffWalking-v1 has none either). Cut at
    # 1,000 steps, one env's first episode returns 1,000 in training and in evaluation. Uncut,
    # the probe fails (and a real env would run reinforce's rollout, or a greedy evaluation
    # that bumps into a wall, forever). The cut is gymnasium's TimeLimit, so a truncation like
    # any other: test_probe_time_limit_is_bootstrapped shows the critics bootstrap those.
    argv = flags("--num-envs 1 --num-steps 1000 --total-timesteps 1000 --eval-episodes 1")
    argv += flags("--num-minibatches 1") if script.module in GAE else ()
    result = run(script, tmp_path, "--env-id", probe_id(script, "Forever"), *argv)
    assert result["episode_returns"] == [(1000, 1000.0)]
    assert result["eval_returns"] == [1000.0]


# ----------------------------------------------------------------------------------------------
# 6. Command line and bad input
# ----------------------------------------------------------------------------------------------


def beside_python(monkeypatch):
    """Programs that a package starts by name (nbgrader's `alembic`) are found beside the
    Python that runs the tests, as when pytest was started as .venv/bin/python -m pytest
    without activating the virtualenv."""
    bin_dir = str(Path(sys.executable).parent)  # not resolved: the venv's bin, not the base's
    monkeypatch.setenv("PATH", os.pathsep.join([bin_dir, os.environ.get("PATH", "")]))


def cli(args, cwd):
    """`python ARGS` in cwd, with nothing of this repository on the path."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


@by_name(SCRIPTS)
def test_help_shows_every_flag_and_default(script, capsys):
    with pytest.raises(SystemExit) as exc:
        script.module.parse_args(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for flag in SPEC_FLAGS:
        assert re.search(rf"{flag}\b", text), flag
    options = re.split(r"\n  (?=-)", text.split("options:", 1)[1])[1:]  # one block per option
    assert len(options) >= len(SPEC_FLAGS) - 1  # the on/off pair is one block
    for block in options:
        assert block.startswith("-h") or "(default:" in block, block


KERNEL_ARGV = [  # how Jupyter starts a kernel; Colab's launcher is colab_kernel_launcher.py
    "/usr/lib/python3/dist-packages/ipykernel_launcher.py",
    "-f",
    "/root/.local/share/jupyter/runtime/kernel-1.json",
]


@by_name(SCRIPTS)
def test_parse_args_in_a_notebook_ignores_the_kernels_command_line(script, monkeypatch):
    # In a notebook cell, sys.argv is the kernel's own. Outside a kernel that argv is refused like
    # any unknown flag; inside one, parse_args() gives the defaults, parse_args([...]) the flags
    # given, and `%run SCRIPT --seed 5` (which sets sys.argv to the script's) its flags.
    module = script.module
    monkeypatch.setattr(sys, "argv", KERNEL_ARGV)
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    with pytest.raises(SystemExit) as exc:
        module.parse_args()
    assert exc.value.code == 2
    monkeypatch.setitem(sys.modules, "ipykernel", ModuleType("ipykernel"))
    assert module.parse_args() == module.parse_args([])
    assert module.parse_args(["--seed", "7"]).seed == 7
    monkeypatch.setattr(sys, "argv", [script.path.name, "--seed", "5"])
    assert module.parse_args().seed == 5


@by_name(SCRIPTS)
def test_script_alone_in_an_empty_folder_trains_logs_and_reports(script, tmp_path):
    # Copied alone: no other script, no repo on the path. --total-timesteps 1 is smaller than one
    # rollout: still exactly one rollout and one update, of 256 steps per env: whole episodes
    # even of Pendulum-v1 (200 steps). Default env and run dir under ./runs.
    shutil.copy(script.path, tmp_path)
    start = int(time.time())
    argv = flags("--total-timesteps 1 --num-envs 2 --num-steps 256 --eval-episodes 2")
    proc = cli([script.path.name, *argv], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    progress = [line for line in proc.stdout.splitlines() if re.search(r"\d+/1\b", line)]
    assert progress and all(w in progress[-1] for w in ("SPS", "left", "return")), proc.stdout

    default_env = script.module.parse_args([]).env_id
    (run_dir,) = (tmp_path / "runs").glob(f"{default_env}__{script.name}__1__*")
    assert start <= int(run_dir.name.rsplit("__", 1)[1]) <= time.time()
    events = scalars(run_dir)
    tags = events.Tags()
    assert set(COMMON_TAGS + script.tags) <= set(tags["scalars"])
    assert any("hyperparameters" in tag for tag in tags["tensors"])
    (update,) = events.Scalars("losses/policy_loss")  # one update ...
    assert update.step >= 2 * 256  # ... after a whole rollout of 2 envs
    (entropy,) = events.Scalars("losses/entropy")  # the progress line shows it beside the return
    assert progress[-1].endswith(f" | entropy {entropy.value:.2f}"), progress[-1]
    assert len(events.Scalars("eval/episodic_return")) == 2


@by_name(SCRIPTS)
def test_other_kind_of_actions_is_refused_in_one_line(script, tmp_path):
    env_id, other_script = script.other_kind  # Box actions for the discrete scripts, and back
    proc = cli([str(script.path), "--env-id", env_id, "--run-dir", "run"], tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert other_script in proc.stderr
    assert not (tmp_path / "run").exists()


def installed(name):
    return importlib.util.find_spec(name) is not None


ENV_ERRORS = [
    pytest.param(("--env-id", "NoSuchEnv-v0"), "NoSuchEnv", id="unknown-env"),
    pytest.param(("--env-id", "no_such_module:Env-v0"), "no_such_module", id="unknown-module"),
    pytest.param(
        ("--env-id", "LunarLander-v3"),
        "pip install",
        id="no-box2d",
        marks=pytest.mark.skipif(installed("Box2D"), reason="Box2D is installed"),
    ),
    pytest.param(
        ("--capture-video", "--eval-episodes", "1"),
        "moviepy",
        id="no-moviepy",
        marks=pytest.mark.skipif(installed("moviepy"), reason="moviepy is installed"),
    ),
    pytest.param(
        ("--env-id", "HalfCheetah-v5"),
        'pip install "gymnasium[mujoco]"',
        id="no-mujoco",
        marks=pytest.mark.skipif(installed("mujoco"), reason="MuJoCo is installed"),
    ),
]


@by_name(SCRIPTS)
@pytest.mark.parametrize("argv, says", ENV_ERRORS)
def test_env_errors_are_one_line_and_status_2(script, argv, says, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        run(script, tmp_path, *argv)
    assert says.lower() in one_line_error(capsys, exc, script).lower()


@pytest.mark.skipif(installed("pygame"), reason="pygame is installed")
@by_name(SCRIPTS)
def test_capture_video_without_a_renderer_is_one_line_before_training(
    script, tmp_path, capsys, monkeypatch
):
    # moviepy present or not, the default envs render with pygame: without it, one line, before
    # any training (not a traceback from the first frame of the evaluation).
    monkeypatch.setattr(gym.wrappers, "RecordVideo", lambda env, *args, **kwargs: env)  # moviepy
    with pytest.raises(SystemExit) as exc:
        run(script, tmp_path, "--capture-video", "--eval-episodes", "1")
    assert "pygame" in one_line_error(capsys, exc, script)
    assert not (tmp_path / "run").exists()


COMMON_BAD = [
    ("--total-timesteps", "0"),
    ("--num-envs", "0"),
    ("--num-steps", "0"),
    ("--learning-rate", "0"),
    ("--learning-rate", "-1"),
    ("--learning-rate", "nan"),
    ("--gamma", "2"),
    ("--gamma", "-0.1"),
    ("--eval-episodes", "-1"),
    ("--seed", "-1"),
    ("--learning-rate", "1e10"),
    ("--video-every", "-1"),
]


@pytest.mark.parametrize(
    "script, argv",
    [
        (s, argv)
        for s in SCRIPTS
        for argv in COMMON_BAD + [(f, "0") for f in s.own_positive] + list(s.own_bad)
    ],
    ids=lambda x: " ".join(x) if isinstance(x, tuple) else repr(x),
)
def test_impossible_hyperparameters_are_argparse_errors(script, argv, capsys):
    with pytest.raises(SystemExit) as exc:
        script.module.parse_args(list(argv))
    assert exc.value.code == 2
    assert argv[-2] in capsys.readouterr().err  # names the (last) flag


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is usable here")
@by_name(SCRIPTS)
def test_cuda_without_gpu_warns_and_trains_on_cpu(script, tmp_path, capsys):
    result = run(script, tmp_path, *"--cuda --num-envs 2 --total-timesteps 1".split())
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "--cuda" in warnings[0]
    assert next(result["agent"].parameters()).device.type == "cpu"
    assert result["global_step"] > 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")
@by_name(SCRIPTS)
def test_cuda_trains_on_the_gpu(script, tmp_path):
    result = run(
        script, tmp_path, *"--cuda --num-envs 2 --total-timesteps 1".split(), "--eval-episodes", "1"
    )
    assert {p.device.type for p in result["agent"].parameters()} == {"cuda"}
    assert len(result["eval_returns"]) == 1


def compiled_by_train(monkeypatch):
    """torch.compile as the scripts call it, keeping what it compiles: {function's name:
    (the function, what torch.compile made of it, the arguments of its first call)}."""
    seen, compile = {}, torch.compile

    def spy(function, **options):
        compiled = compile(function, **options)

        def call(*args):
            first = [a.detach().clone() if torch.is_tensor(a) else a for a in args]
            seen.setdefault(function.__name__, (function, compiled, first))
            return compiled(*args)

        return call

    monkeypatch.setattr(torch, "compile", spy)
    return seen


@by_name(GAE_SCRIPTS)
def test_a_compiled_update_gives_the_eager_update(script, tmp_path, monkeypatch):
    """--compile: gradients() (forward, losses, backward, clipping) compiled gives the eager
    one's losses, gradients and, after the same Adam step, weights, on the same minibatch."""
    seen = compiled_by_train(monkeypatch)
    tiny(script, tmp_path, "--compile")
    assert set(seen) == {"<lambda>", "gradients"}  # the tiny compile that checks, and the update
    eager, compiled, args = seen["gradients"]
    assert eager is not compiled and len(args[0]) > 1  # a real minibatch of the run
    cells = [cell.cell_contents for cell in eager.__closure__]
    closure = dict(zip(eager.__code__.co_freevars, cells, strict=True))
    agent, optimizer = closure["agent"], closure["optimizer"]
    start = copy.deepcopy((agent.state_dict(), optimizer.state_dict()))
    after = []
    for gradients in (eager, compiled):
        agent.load_state_dict(start[0])
        optimizer.load_state_dict(copy.deepcopy(start[1]))  # it keeps the tensors it is given
        losses = gradients(*args)
        grads = [p.grad.clone() for p in agent.parameters()]
        optimizer.step()
        after.append([*losses, *grads, *(p.detach().clone() for p in agent.parameters())])
    assert after[0][0] != 0 and any(g.abs().sum() > 0 for g in after[0][5:])
    for got, expected in zip(after[1], after[0], strict=True):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_compiled_runs_are_reproducible_from_a_seed(tmp_path, monkeypatch):
    """On the CPU, inductor's kernels run in one order: the same seed, the same run."""
    seen = compiled_by_train(monkeypatch)
    first, again = (tiny(SCRIPTS[-1], tmp_path / run, "--compile") for run in ("a", "b"))
    assert "gradients" in seen and len(first["episode_returns"]) >= 4
    assert first["episode_returns"] == again["episode_returns"]
    weights, weights_again = first["agent"].state_dict(), again["agent"].state_dict()
    assert all(torch.equal(weights[k], weights_again[k]) for k in weights)


@by_name(SCRIPTS)
def test_compile_where_it_cannot_work_warns_once_and_trains_eager(
    script, tmp_path, monkeypatch, capsys
):
    """A torch with no compiler backend: torch.compile raises. One warning line, then eager."""

    def no_backend(function, **options):
        raise RuntimeError("torch.compile is not supported on this Python\nmore")

    monkeypatch.setattr(torch, "compile", no_backend)
    result = tiny(script, tmp_path, "--compile")
    warnings = capsys.readouterr().err.strip().splitlines()
    assert warnings == [
        f"{script.path.name}: warning: --compile cannot work here, so eager: "
        "torch.compile is not supported on this Python"
    ]
    assert result["global_step"] >= 512 and result["episode_returns"]


def test_compile_without_a_cpp_compiler_says_so_and_trains_eager(tmp_path):
    """The command line, with no working C++ compiler (CXX) and no compiled code cached."""
    env = dict(os.environ, CXX=str(tmp_path / "no-such-g++"))
    env["TORCHINDUCTOR_CACHE_DIR"] = str(tmp_path / "inductor")  # nothing compiled before
    argv = flags("--total-timesteps 512 --num-envs 2 --num-steps 64 --eval-episodes 0 --compile")
    done = subprocess.run(
        [sys.executable, str(SCRIPTS[3].path), *argv, "--run-dir", str(tmp_path / "run")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    warning = "ppo_gae.py: warning: --compile cannot work here, so eager: InvalidCxxCompiler:"
    assert done.stderr.startswith(warning) and len(done.stderr.splitlines()) == 1, done.stderr
    assert "no-such-g++" in done.stderr and "step      512/512" in done.stdout


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")
def test_compile_with_cuda_trains_on_the_gpu(tmp_path, monkeypatch):
    seen = compiled_by_train(monkeypatch)
    result = tiny(SCRIPTS[-1], tmp_path, "--cuda", "--compile", "--eval-episodes", "1")
    assert "gradients" in seen and seen["gradients"][2][0].device.type == "cuda"
    assert {p.device.type for p in result["agent"].parameters()} == {"cuda"}


@by_name(SCRIPTS)
def test_interrupt_stops_cleanly_and_saves(script, tmp_path, monkeypatch):
    def interrupt(args, result):
        raise KeyboardInterrupt

    wrap(monkeypatch, script.module, script.policy_loss, interrupt)
    try:
        result = tiny(script, tmp_path, "--save-model", "--eval-episodes", "3")
    except KeyboardInterrupt:  # would otherwise stop the whole pytest session
        pytest.fail("Ctrl-C escaped train()")
    assert result["eval_returns"] == []  # no evaluation after Ctrl-C
    assert result["global_step"] > 0
    assert saved_path(script, result).is_file()
    # TensorBoard was flushed: the episodes played before Ctrl-C are in the event file.
    logged = scalars(result["run_dir"]).Scalars("charts/episodic_return")
    assert len(logged) == len(result["episode_returns"]) > 0


@by_name(SCRIPTS)
def test_non_finite_loss_stops_naming_the_iteration(script, tmp_path, monkeypatch):
    def poison(args, result):  # every loss that comes out of it is NaN
        if isinstance(result, tuple):
            return tuple(x * math.nan for x in result)
        return result * math.nan

    wrap(monkeypatch, script.module, script.policy_loss, poison)
    with pytest.raises(SystemExit) as exc:
        tiny(script, tmp_path)
    assert "iteration 1" in str(exc.value.code)


BAD_MODELS = [
    pytest.param(None, id="missing"),
    pytest.param(lambda path, agent: path.write_text("not a model\n"), id="not-a-model"),
    pytest.param(  # CartPole-v1 has 4 observations and 2 actions, Pendulum-v1 3 and 1
        lambda path, agent: torch.save(agent(5, 2).state_dict(), path), id="other-sizes"
    ),
]


@by_name(SCRIPTS)
@pytest.mark.parametrize("write", BAD_MODELS)
def test_bad_load_model_is_one_line_and_status_2(script, write, tmp_path, capsys):
    path = tmp_path / "model.pt"
    if write:
        write(path, script.module.Agent)
    with pytest.raises(SystemExit) as exc:
        run(script, tmp_path, "--env-id", script.default_env, "--load-model", str(path))
    assert "--load-model" in one_line_error(capsys, exc, script)


# ----------------------------------------------------------------------------------------------
# 7. Reproducibility
# ----------------------------------------------------------------------------------------------


@by_name(SCRIPTS)
def test_same_seed_same_run_other_seed_other_run(script, tmp_path):
    first, again, other = (tiny(script, tmp_path / s, "--seed", s) for s in ("1", "1", "2"))
    assert len(first["episode_returns"]) >= 10
    assert first["episode_returns"] == again["episode_returns"]
    weights, weights_again = first["agent"].state_dict(), again["agent"].state_dict()
    assert all(torch.equal(weights[k], weights_again[k]) for k in weights)
    assert first["episode_returns"] != other["episode_returns"]


# ----------------------------------------------------------------------------------------------
# 8. What train() returns, and the saved model
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=SCRIPTS, ids=repr)
def tiny_run(request, tmp_path_factory):
    script = request.param
    start = time.time()
    result = tiny(
        script, tmp_path_factory.mktemp(script.name), "--save-model", "--eval-episodes", "2"
    )
    return script, result, time.time() - start


def test_train_returns_every_key(tiny_run):
    script, result, seconds = tiny_run
    assert set(result) >= RESULT_KEYS
    assert isinstance(result["agent"], script.module.Agent)
    steps = [step for step, _ in result["episode_returns"]]
    returns = [r for _, r in result["episode_returns"]]
    assert len(steps) >= 10 and steps == sorted(steps)
    assert 0 < steps[-1] <= result["global_step"]
    assert all(map(EPISODE_RETURN_OK[script.env_id], returns)), returns
    assert result["global_step"] >= 512 - 2 * 64  # --total-timesteps, to within a rollout
    assert result["global_step"] % 2 == 0  # 2 envs step together
    assert result["global_step"] / seconds <= result["sps"] + 1  # steps per second of training
    assert len(result["eval_returns"]) == 2
    assert all(map(EPISODE_RETURN_OK[script.env_id], result["eval_returns"]))
    assert Path(result["run_dir"]).name == "run"


def saved_path(script, result):
    return Path(result["run_dir"]) / f"{script.name}.pt"


def load_saved(script, result, env):
    """A fresh Agent for env with the weights that result's run saved; and those weights."""
    space = env.action_space
    agent = script.module.Agent(
        env.observation_space.shape[0], space.n if script.discrete else space.shape[0]
    )
    saved = torch.load(saved_path(script, result))
    agent.load_state_dict(saved)
    return agent, saved


def changed(agent, saved):
    """The entries of agent's state (weights and buffers) that differ from saved."""
    state = agent.state_dict()
    same = {k for k in state.keys() & saved.keys() if torch.equal(state[k], saved[k])}
    return sorted((state.keys() | saved.keys()) - same)


def test_saved_model_loads_into_a_fresh_agent(tiny_run):
    script, result, _ = tiny_run
    trained, env = result["agent"], gym.make(script.env_id)
    fresh, saved = load_saved(script, result, env)
    # Saved before the final evaluation, the trained agent's state is still the file's, buffers
    # included (ppo_continuous's observation statistics): evaluation changes nothing.
    assert not changed(trained, saved)
    env.action_space.seed(0)
    obs = torch.randn(100, env.observation_space.shape[0])
    actions = torch.as_tensor(np.stack([env.action_space.sample() for _ in range(100)]))
    assert torch.equal(logprob(fresh, obs, actions), logprob(trained, obs, actions))
    if script.critic:
        assert torch.equal(value(fresh, obs), value(trained, obs))
    # The same evaluation as at the end of training (seed --seed + 10_000), which leaves the
    # loaded state alone too.
    again = script.module.evaluate(fresh, env, 2, 1 + 10_000, torch.device("cpu"))
    assert again == result["eval_returns"]
    assert not changed(fresh, saved)


def test_load_model_evaluates_the_saved_agent_as_it_is(tiny_run, tmp_path):
    # --load-model: no training, and no change to the loaded weights, nor to ppo_continuous's
    # statistics (they would move with the first observations of the envs), so the evaluation
    # at the end of training again.
    script, result, _ = tiny_run
    path = saved_path(script, result)
    argv = ("--env-id", script.env_id, "--load-model", str(path), "--eval-episodes", "2")
    loaded = run(script, tmp_path, *argv)
    assert loaded["global_step"] == 0 and loaded["episode_returns"] == []
    assert not changed(loaded["agent"], torch.load(path))
    assert loaded["eval_returns"] == result["eval_returns"]


def test_load_model_on_the_command_line(tiny_run, tmp_path):
    # Saved from a short run, evaluated on the default env: CartPole-v1, or for ppo_continuous
    # Pendulum-v1 (trained on a 25-step Pendulum: the same spaces, 200 steps).
    script, result, _ = tiny_run
    env = gym.make(script.default_env)
    agent, _ = load_saved(script, result, env)
    returns = script.module.evaluate(agent, env, 2, 1 + 10_000, torch.device("cpu"))
    path = saved_path(script, result)
    argv = ["--env-id", script.default_env, "--seed", "1", "--eval-episodes", "2"]
    argv += ["--run-dir", "run"]
    proc = cli([str(script.path), "--load-model", str(path), *argv], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    said = f"evaluation over 2 episodes: {np.mean(returns):.1f} +/- {np.std(returns):.1f}"
    assert said in proc.stdout, (said, proc.stdout)
    assert "losses/policy_loss" not in scalars(tmp_path / "run").Tags()["scalars"]  # no update


# ----------------------------------------------------------------------------------------------
# 9. CartPoleTorch-v1: gymnasium's CartPole in torch tensors; the episode log of a rollout
# ----------------------------------------------------------------------------------------------


def balancing(state, rng, noise=0.35):
    """Push the way the pole leans, with a random action a `noise` share of the time: episodes
    of all lengths, so that some reach a time limit and many end by falling."""
    theta, theta_dot = state[2], state[3]
    return ((theta + 0.5 * theta_dot > 0) ^ (rng.random(len(theta)) < noise)).astype(np.int64)


def test_torch_cartpole_steps_exactly_like_gymnasiums():
    # 64 envs x 3,000 steps with a 50-step limit, next to gymnasium's CartPoleVectorEnv with
    # RecordEpisodeStatistics. Before every step, ours takes gymnasium's state (float64 ->
    # float32), so both step from identical states with identical actions. Every reward and flag
    # and every finished episode's return and length agree exactly; observations to float32
    # precision, except on reset steps, where each env draws its own new U(-0.05, 0.05) state.
    n = 64
    ours = cartpole_torch.CartPoleTorch(n, max_episode_steps=50)
    theirs = gym.wrappers.vector.RecordEpisodeStatistics(
        gym.make_vec("CartPole-v1", n, max_episode_steps=50)
    )
    ours.reset(seed=0)
    theirs.reset(seed=0)
    raw, rng = theirs.unwrapped, np.random.default_rng(0)
    seen = dict(terminated=0, truncated=0, reset=0, episodes=0)
    for _ in range(3000):
        ours.state = torch.tensor(raw.state.T, dtype=torch.float32)
        action, reset = balancing(raw.state, rng), raw.prev_done.copy()
        obs, reward, terminated, truncated, info = ours.step(torch.as_tensor(action))
        obs_, reward_, terminated_, truncated_, info_ = theirs.step(action)
        assert np.array_equal(reward.numpy(), reward_)
        assert np.array_equal(terminated.numpy(), terminated_)
        assert np.array_equal(truncated.numpy(), truncated_)
        np.testing.assert_allclose(obs.numpy()[~reset], obs_[~reset], rtol=1e-5, atol=1e-6)
        assert np.all(np.abs(obs.numpy()[reset]) <= 0.05) and np.all(reward_[reset] == 0)
        ended = info_.get("_episode", np.zeros(n, dtype=bool))
        assert np.array_equal(info["_episode"].numpy(), ended)
        for key in ("r", "l"):
            if ended.any():
                assert np.array_equal(
                    info["episode"][key].numpy()[ended], info_["episode"][key][ended]
                )
        seen["terminated"] += terminated_.sum()
        seen["truncated"] += truncated_.sum()
        seen["reset"] += reset.sum()
        seen["episodes"] += ended.sum()
    assert seen["terminated"] > 1000 and seen["truncated"] > 1000, seen
    assert seen["reset"] == seen["episodes"] - ended.sum()  # every end but the last is reset


def test_torch_cartpole_same_seed_same_episodes():
    def observations(seed):
        envs = cartpole_torch.CartPoleTorch(16)
        obs, _ = envs.reset(seed=seed)
        actions = torch.Generator().manual_seed(0)
        seen = [obs]
        for _ in range(300):  # random actions: episodes of ~20 steps, so ~15 resets per env
            seen.append(envs.step(torch.randint(0, 2, (16,), generator=actions))[0])
        return torch.stack(seen)

    first = observations(3)
    assert torch.equal(first, observations(3))
    assert not torch.equal(first, observations(4))


@by_name(DISCRETE)
def test_torch_cartpole_trains_with_tensors_only(script, tmp_path, monkeypatch):
    # make_env builds it for the id, unwrapped: the loop hands it the action tensor itself
    # (no copy to numpy) and gets tensors back. The evaluation plays gymnasium's CartPole.
    actions = []
    original = cartpole_torch.CartPoleTorch.step

    def step(self, action):
        actions.append(action)
        return original(self, action)

    monkeypatch.setattr(cartpole_torch.CartPoleTorch, "step", step)
    argv = flags("--num-envs 4 --num-steps 64 --total-timesteps 512 --eval-episodes 1")
    result = run(script, tmp_path, "--env-id", TORCH_CARTPOLE, *argv)
    assert len(actions) >= 128 and all(isinstance(a, torch.Tensor) for a in actions)
    assert len(result["episode_returns"]) >= 10 and len(result["eval_returns"]) == 1
    assert all(8 <= r <= 500 for _, r in result["episode_returns"])
    envs = script.module.make_env(TORCH_CARTPOLE, 4, torch.device("cpu"))
    assert isinstance(envs, cartpole_torch.CartPoleTorch)


def test_ppo_gae_learns_the_torch_cartpole(tmp_path):
    # ppo_gae's defaults on CartPoleTorch-v1 for 40,960 steps: the mean of the last 20 training
    # returns was 500, 478 and 495 on seeds 1-3.
    result = run(SCRIPTS[3], tmp_path, "--env-id", TORCH_CARTPOLE, "--total-timesteps", "40960")
    recent = np.mean([r for _, r in result["episode_returns"][-20:]])
    assert recent >= 200, recent


class Writer:
    """The add_scalar calls a SummaryWriter would get."""

    def __init__(self):
        self.calls = []

    def add_scalar(self, tag, value, step):
        self.calls.append((tag, value, step))


@modules([s.module for s in SCRIPTS])
@pytest.mark.parametrize("as_tensor", [False, True], ids=["numpy", "torch"])
def test_log_episodes_each_when_few_their_mean_when_many(module, as_tensor):
    # Step 16 (global step) ends env 1's episode (return 5, 5 steps), step 32 ends envs 0 and 2.
    convert = torch.as_tensor if as_tensor else np.asarray

    def info(ended, returns, lengths):
        return convert(ended), {"r": convert(returns), "l": convert(lengths)}

    few = [
        (16, *info([False, True, False], [0.0, 5.0, 0.0], [0, 5, 0])),
        (32, *info([True, False, True], [9.0, 0.0, 2.5], [9, 0, 3])),
    ]
    writer, history = Writer(), []
    module.log_episodes(writer, few, history)
    assert history == [(16, 5.0), (32, 9.0), (32, 2.5)]
    assert writer.calls == [
        ("charts/episodic_return", 5.0, 16),
        ("charts/episodic_length", 5, 16),
        ("charts/episodic_return", 9.0, 32),
        ("charts/episodic_length", 9, 32),
        ("charts/episodic_return", 2.5, 32),
        ("charts/episodic_length", 3, 32),
    ]
    # 300 envs that all end an episode on step 300 (returns 0..299, lengths 1..300): logged as
    # their mean and count, as one point each. Nothing ended: nothing logged.
    many = [(300, *info([True] * 300, np.arange(300.0), np.arange(1, 301)))]
    writer, history = Writer(), []
    module.log_episodes(writer, many, history)
    assert len(history) == 300 and history[-1] == (300, 299.0)
    assert writer.calls == [
        ("charts/episodes", 300, 300),
        ("charts/episodic_return", 149.5, 300),
        ("charts/episodic_length", 150.5, 300),
    ]
    writer, history = Writer(), []
    module.log_episodes(writer, [(8, *info([False] * 3, [0.0] * 3, [0] * 3))], history)
    assert writer.calls == [] and history == []


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")
def test_torch_cartpole_on_the_gpu_steps_like_on_the_cpu():
    # From the same states and actions, the GPU's step agrees with the CPU's (except on the
    # reset steps, which each device's generator draws).
    n, rng = 256, np.random.default_rng(0)
    cpu, gpu = (cartpole_torch.CartPoleTorch(n, 50, device) for device in ("cpu", "cuda"))
    cpu.reset(seed=0)
    gpu.reset(seed=0)
    for _ in range(500):
        gpu.state = cpu.state.cuda()
        action, reset = torch.as_tensor(balancing(cpu.state.T.numpy(), rng)), cpu.prev_done
        out, out_gpu = cpu.step(action), gpu.step(action.cuda())
        assert out_gpu[0].device.type == "cuda"
        for a, b in zip(out[1:4], out_gpu[1:4], strict=True):
            assert torch.equal(a, b.cpu())
        torch.testing.assert_close(out[0][~reset], out_gpu[0].cpu()[~reset])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")
def test_ppo_gae_trains_on_the_gpu_with_the_torch_cartpole(tmp_path):
    argv = flags("--cuda --num-envs 1024 --num-steps 16 --total-timesteps 65536 --eval-episodes 1")
    result = run(SCRIPTS[3], tmp_path, "--env-id", TORCH_CARTPOLE, *argv)
    assert {p.device.type for p in result["agent"].parameters()} == {"cuda"}
    assert len(result["episode_returns"]) > 1000


@by_name(SCRIPTS)
def test_one_torch_thread_for_small_rollouts_every_core_for_large(script, tmp_path, monkeypatch):
    # 2 x 64 = 128 steps per rollout: one thread. 512 x 64 = 32,768: every core torch saw.
    threads = []
    monkeypatch.setattr(torch, "set_num_threads", threads.append)
    tiny(script, tmp_path / "small")
    argv = flags("--num-envs 512 --num-steps 64 --total-timesteps 1 --update-epochs 1")
    argv = argv if script.module in GAE + [ppo] else argv[:-2]
    run(script, tmp_path / "large", "--env-id", script.env_id, *argv)
    assert threads == [1, script.module.CPU_THREADS]


# ----------------------------------------------------------------------------------------------
# 10. The shape of a script: the lesson first, one divider, then the support code
# ----------------------------------------------------------------------------------------------

RULE = "=" * 8
DIVIDER = (
    f"# {RULE} End of the lesson. Below: support code (flags, envs, logs, checks); skip it. {RULE}"
)
# What a reader meets above the divider, and below it (where a script has the name).
LESSON = ("layer_init", "RunningNorm", "Agent", "discounted_returns", "reinforce_loss", "vpg_loss")
LESSON += ("compute_gae", "ppo_loss", "value_loss", "train")
SUPPORT = ("set_up", "checked", "parse_args", "needs_flattening", "make_env", "make_eval_env")
SUPPORT += ("find_spec", "evaluate", "Run", "log_episodes", "finish", "fail")
SUPPORT += ("check_finite", "resumed", "EnvProcesses")
# The support code that is word for word the same in every script.
SHARED = ("set_up", "checked", "find_spec", "needs_flattening", "Run", "log_episodes", "finish")
SHARED += ("fail", "check_finite", "resumed", "EnvProcesses", "make_eval_env")
# Lines to the end of train(): what a reader pays for the lesson. No script grows: a new
# capability is paid for by simpler support code (the lengths of 2026-11-25 are the ceiling).
# The exercised functions' docstrings state train()'s contract: 2, 1, 1, 2 and 2 lines more.
LINES = {"reinforce": 147, "vpg": 194, "ppo": 198, "ppo_gae": 236, "ppo_continuous": 293}
MAX_FILE_LINES = {"reinforce": 586, "vpg": 636, "ppo": 641, "ppo_gae": 692, "ppo_continuous": 755}


def first_line(module, name):
    return inspect.getsourcelines(getattr(module, name))[1]


@by_name(SCRIPTS)
def test_the_lesson_comes_first_then_the_divider_then_the_support_code(script):
    module, lines = script.module, script.path.read_text().splitlines()
    assert lines.count(DIVIDER) == 1
    divider = lines.index(DIVIDER) + 1
    lesson = [first_line(module, name) for name in LESSON if hasattr(module, name)]
    support = [first_line(module, name) for name in SUPPORT if hasattr(module, name)]
    assert max(lesson) == first_line(module, "train") < divider < min(support)
    assert len(support) == len(SUPPORT)
    assert first_line(module, "Agent") <= 70
    end_of_train = first_line(module, "train") + len(inspect.getsourcelines(module.train)[0]) - 1
    assert end_of_train <= LINES[script.name] and len(lines) <= MAX_FILE_LINES[script.name], (
        end_of_train,
        len(lines),
    )
    assert lines[-2:] == ['if __name__ == "__main__":', "    train(parse_args())"]


def test_the_support_code_is_word_for_word_the_same_in_every_script():
    for name in SHARED:
        sources = {inspect.getsource(getattr(s.module, name)) for s in SCRIPTS}
        assert len(sources) == 1, name
    # the rest of the flags' own code, too, from `def parse_args` to the first flag
    heads = {inspect.getsource(s.module.parse_args).split('    arg("--env-id"')[0] for s in SCRIPTS}
    assert len(heads) == 1


# ----------------------------------------------------------------------------------------------
# 12. Runs that survive: checkpoints, SIGTERM handled like Ctrl-C, --resume
# ----------------------------------------------------------------------------------------------

# Long enough never to end by itself; a checkpoint after every 128-step rollout.
FOREVER = flags("--total-timesteps 100000000 --num-envs 2 --num-steps 64 --checkpoint-every 128")


def start(script, run_dir, *argv):
    """`python SCRIPT --run-dir RUN_DIR ARGV` in the background, as a user would start it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    command = [sys.executable, str(script.path), "--run-dir", str(run_dir), *argv]
    return subprocess.Popen(
        command,
        cwd=run_dir.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_checkpoint(proc, checkpoint, extra_seconds):
    """Wait until the run has written its first checkpoint, then `extra_seconds` more."""
    deadline = time.time() + 60
    while not checkpoint.is_file():
        assert proc.poll() is None, proc.communicate()
        assert time.time() < deadline, "no checkpoint after 60 s"
        time.sleep(0.05)
    time.sleep(extra_seconds)


def load_checkpoint(path):
    """checkpoint.pt as --resume reads it: data only, or UnpicklingError."""
    return torch.load(path, map_location="cpu", weights_only=True)


def increasing(steps, strictly=True):
    pairs = zip(steps[:-1], steps[1:], strict=True)
    return all(b > a if strictly else b >= a for a, b in pairs)


def steps_of(run_dir, tag):
    return [event.step for event in scalars(run_dir).Scalars(tag)]


def env_argv(script):
    """The env a subprocess can make: the probes are registered only in this process."""
    return ("--env-id", "CartPole-v1" if script.discrete else "Pendulum-v1")


@by_name(SCRIPTS)
def test_sigterm_stops_like_ctrl_c_with_status_143_and_resume_finishes(script, tmp_path):
    run_dir, checkpoint = tmp_path / "run", tmp_path / "run" / "checkpoint.pt"
    proc = start(script, run_dir, *env_argv(script), *FOREVER, "--eval-episodes", "2")
    wait_for_checkpoint(proc, checkpoint, extra_seconds=0.5)  # then stop it mid-run
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "Traceback" not in out + err
    saved = load_checkpoint(checkpoint)
    step = saved["global_step"]
    name, last = re.escape(script.path.name), out.strip().splitlines()[-1]
    assert re.fullmatch(
        rf"{name}: stopped by SIGTERM at step \d+; checkpoint of step {step} in "
        rf"{re.escape(str(checkpoint))}; python {name} --resume {re.escape(str(run_dir))}",
        last,
    ), last
    assert "evaluation" not in out  # no evaluation after a stop, as after Ctrl-C
    assert 0 < step and saved["iteration"] > 0
    assert set(saved) >= {"agent", "optimizer", "rng", "args", "episode_returns"}

    # --resume goes on to the new --total-timesteps, in the same run directory.
    resumed = run(script, tmp_path, "--resume", str(run_dir), "--total-timesteps", str(step + 1024))
    assert resumed["run_dir"] == str(run_dir)
    assert resumed["global_step"] >= step + 1024
    if script.module is not reinforce:  # whole rollouts of 128 steps
        assert resumed["global_step"] == step + 1024
    # The returned episodes cover the whole run: those before the checkpoint come first.
    before = saved["episode_returns"]
    assert [tuple(e) for e in resumed["episode_returns"][: len(before)]] == [
        tuple(e) for e in before
    ]
    assert len(resumed["episode_returns"]) > len(before)
    # TensorBoard: one curve, no point twice, none out of order; the last at the last step.
    updates = steps_of(run_dir, "losses/policy_loss")
    assert increasing(updates), updates
    assert updates[-1] == resumed["global_step"]
    episodes = steps_of(run_dir, "charts/episodic_return")
    assert increasing(episodes, strictly=False), episodes


def test_sigkill_leaves_the_last_checkpoint_whole(tmp_path):
    script = SCRIPTS[3]  # ppo_gae: a checkpoint every 512 steps, dozens of them a second
    run_dir, checkpoint = tmp_path / "run", tmp_path / "run" / "checkpoint.pt"
    proc = start(script, run_dir, *env_argv(script), *FOREVER, "--checkpoint-every", "512")
    wait_for_checkpoint(proc, checkpoint, extra_seconds=1.5)
    proc.kill()
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    saved = load_checkpoint(checkpoint)  # whole, though the kill came in the middle of writes
    assert saved["global_step"] > 128
    total = saved["global_step"] + 1024
    resumed = run(script, tmp_path, "--resume", str(run_dir), "--total-timesteps", str(total))
    assert resumed["global_step"] == total
    updates = steps_of(run_dir, "losses/policy_loss")  # those after the checkpoint are dropped
    assert increasing(updates) and updates[-1] == total, updates


@by_name(SCRIPTS)
def test_a_resumed_run_goes_on_where_it_stopped(script, tmp_path, monkeypatch):
    """Killed after its third update, with its last checkpoint at its second, and resumed, a
    run logs the updates of a run that was never stopped: at the same steps, none twice (the
    third update's points are dropped), with the same learning rates (the schedule goes on)."""
    every = ("--checkpoint-every", "256")
    whole = tiny(script, tmp_path / "whole", *every)
    update, updates = script.module.Run.update, []

    def update_then_die(self, *args, **losses):
        update(self, *args, **losses)
        updates.append(args[1])
        if len(updates) == 3:  # as a kill would: the points are logged, no checkpoint follows
            self.snapshot = None
            raise KeyboardInterrupt

    monkeypatch.setattr(script.module.Run, "update", update_then_die)
    stopped = tiny(script, tmp_path / "stopped", *every)
    monkeypatch.undo()
    assert load_checkpoint(Path(stopped["run_dir"]) / "checkpoint.pt")["global_step"] == updates[1]
    resumed = run(script, tmp_path / "stopped", "--resume", stopped["run_dir"])
    assert resumed["global_step"] >= 512
    lrs = {
        tag: scalars(r["run_dir"]).Scalars("charts/learning_rate")
        for tag, r in [("whole", whole), ("resumed", resumed)]
    }
    steps = {tag: [e.step for e in events] for tag, events in lrs.items()}
    assert increasing(steps["resumed"])
    if script.module is not reinforce:  # fixed rollouts: the same steps, the same rates
        assert steps["resumed"] == steps["whole"]
        assert [e.value for e in lrs["resumed"]] == [e.value for e in lrs["whole"]]


@by_name(SCRIPTS)
def test_checkpoints_leave_the_arithmetic_unchanged(script, tmp_path):
    plain = tiny(script, tmp_path / "plain")
    checkpointed = tiny(script, tmp_path / "checkpointed", "--checkpoint-every", "1")
    assert checkpointed["episode_returns"] == plain["episode_returns"]
    for name, weights in plain["agent"].state_dict().items():
        assert torch.equal(checkpointed["agent"].state_dict()[name], weights), name
    assert (Path(checkpointed["run_dir"]) / "checkpoint.pt").is_file()
    assert not (Path(plain["run_dir"]) / "checkpoint.pt").exists()


def test_ppo_continuous_keeps_its_normalization_statistics_across_a_resume(tmp_path, monkeypatch):
    script = CONTINUOUS[0]
    first = tiny(script, tmp_path, "--checkpoint-every", "128", "--eval-episodes", "2")
    saved = load_checkpoint(Path(first["run_dir"]) / "checkpoint.pt")
    assert saved["agent"]["obs_norm.count"] > 500  # observations of four rollouts
    mean, var, count = saved["return_rms"][0].tolist()  # NormalizeReward's, as float64
    assert count > 400 and var > 0 and saved["return_rms"][0].dtype == torch.float64
    restore, restored = script.module.Run.restore, []

    def restore_and_look(self, checkpoint):
        restore(self, checkpoint)
        restored.append(self.return_rms()[0])

    monkeypatch.setattr(script.module.Run, "restore", restore_and_look)
    # Nothing left to train: resume evaluates the saved agent, with its saved statistics.
    again = run(script, tmp_path, "--resume", first["run_dir"], "--eval-episodes", "2")
    assert again["global_step"] == first["global_step"]
    assert again["eval_returns"] == first["eval_returns"]
    for name in ("obs_norm.mean", "obs_norm.var", "obs_norm.count"):
        assert torch.equal(again["agent"].state_dict()[name], first["agent"].state_dict()[name])
    assert (restored[0].mean, restored[0].var, restored[0].count) == (mean, var, count)


class RunsCode:
    """What a hostile file can hold: unpickling it calls exec(code); weights_only never does."""

    def __init__(self, code):
        self.code = code

    def __reduce__(self):
        return exec, (self.code,)


def hostile(path, data, marker):
    """torch.save(data) plus one entry whose unpickling writes `marker`: shown to be live, by
    loading it as --resume did before (weights_only=False), which runs it."""
    torch.save(data | {"note": RunsCode(f"open({str(marker)!r}, 'w').write('ran')")}, path)
    torch.load(path, weights_only=False)
    assert marker.read_text() == "ran"
    marker.unlink()


@by_name(SCRIPTS)
def test_resume_loads_data_only_and_refuses_a_checkpoint_that_would_run_code(
    script, tmp_path, capsys
):
    """A checkpoint holds tensors and plain values only; one that holds code, or one written
    before checkpoints were data (numpy's RNG state as an array), gets one line, exit 2, and
    nothing in it runs; train() itself loads data only, whoever built its flags."""
    first = tiny(script, tmp_path, "--checkpoint-every", "256")
    path, marker = Path(first["run_dir"]) / "checkpoint.pt", tmp_path / "ran"
    saved = load_checkpoint(path)  # weights_only=True, or this raises
    refusal = f"cannot --resume: {path} is missing or not one {script.path.name} wrote"
    args = script.module.parse_args(["--resume", first["run_dir"], "--eval-episodes", "0"])
    older = saved | {"rng": (saved["rng"][0], np.random.get_state(), *saved["rng"][2:])}
    for data in (older, None):
        if data is None:
            hostile(path, saved, marker)
        else:
            torch.save(data, path)
        with pytest.raises(SystemExit) as exc:
            script.module.parse_args(["--resume", first["run_dir"]])
        assert one_line_error(capsys, exc, script).endswith(refusal)
    with pytest.raises(Exception, match="Weights only load failed"):
        script.module.train(args)
    assert not marker.exists()


def test_a_hostile_checkpoint_resumed_on_the_command_line_runs_nothing(tmp_path):
    script = SCRIPTS[3]  # ppo_gae.py, as the issue's user ran it
    first = tiny(script, tmp_path, "--checkpoint-every", "256")
    path, marker = Path(first["run_dir"]) / "checkpoint.pt", tmp_path / "ran"
    hostile(path, load_checkpoint(path), marker)
    done = cli([str(script.path), "--resume", first["run_dir"]], tmp_path)
    refusal = f"cannot --resume: {path} is missing or not one ppo_gae.py wrote"
    assert (done.returncode, done.stderr) == (2, f"ppo_gae.py: error: {refusal}\n")
    assert done.stdout == "" and not marker.exists()


@by_name(SCRIPTS)
def test_load_model_refuses_a_file_that_would_run_code(script, tmp_path, capsys):
    path, marker = tmp_path / "model.pt", tmp_path / "ran"
    hostile(path, script.module.Agent(4, 2).state_dict(), marker)
    with pytest.raises(SystemExit) as exc:
        run(script, tmp_path, "--env-id", script.default_env, "--load-model", str(path))
    assert one_line_error(capsys, exc, script).endswith(f"{path}: missing, or not this env's")
    assert not marker.exists()


@by_name(SCRIPTS)
def test_resume_takes_the_saved_flags_and_those_given_again(script, tmp_path, capsys):
    first = tiny(script, tmp_path, "--checkpoint-every", "256", "--learning-rate", "0.003")
    args = script.module.parse_args(["--resume", first["run_dir"], "--total-timesteps", "4096"])
    assert (args.total_timesteps, args.learning_rate, args.num_steps) == (4096, 0.003, 64)
    assert (args.checkpoint_every, args.run_dir, args.env_id) == (
        256,
        first["run_dir"],
        script.env_id,
    )
    nothing = tmp_path / "empty"
    nothing.mkdir()
    refused = {
        "--resume " + str(tmp_path / "no_such_dir"): "cannot --resume",
        "--resume " + str(nothing): "cannot --resume",
        f"--resume {first['run_dir']} --num-envs 3": "--num-envs stays 2",
        f"--resume {first['run_dir']} --env-id Acrobot-v1": "--env-id stays",
        f"--resume {first['run_dir']} --load-model x.pt": "--load-model",
        "--checkpoint-every 100 --load-model x.pt": "--load-model",
        "--checkpoint-every -1": "--checkpoint-every",
    }
    if script.module is ppo_continuous:  # another critic's shapes would not load
        refused[f"--resume {first['run_dir']} --critic-hidden 32"] = "--critic-hidden stays"
    for argv, says in refused.items():
        with pytest.raises(SystemExit) as exc:
            script.module.parse_args(argv.split())
        assert exc.value.code == 2, argv
        err = capsys.readouterr().err.strip()
        assert says in err and "Traceback" not in err, (argv, err)
        assert len(err.splitlines()) == 1 or err.startswith("usage:"), err


# ----------------------------------------------------------------------------------------------
# 13. --async-envs: each env in a process of its own
# ----------------------------------------------------------------------------------------------


class Failing(OneStep):
    """OneStep whose 20th step fails: raises, or (`die`) kills its own process."""

    def __init__(self, render_mode=None, bound=None, die=False):
        super().__init__(render_mode, bound)
        self.die, self.steps = die, 0

    def step(self, action):
        self.steps += 1
        if self.steps == 20 and self.die:
            os.kill(os.getpid(), signal.SIGKILL)
        if self.steps == 20:
            raise RuntimeError("the simulator blew up")
        return super().step(action)


for _env_id, _kwargs in [("probes/Raises-v0", {}), ("probes/Dies-v0", {"die": True})]:
    if _env_id not in gym.registry:
        gym.register(id=_env_id, entry_point=Failing, kwargs=_kwargs)


@by_name(SCRIPTS)
def test_async_envs_train_and_keep_the_seed(script, tmp_path, monkeypatch):
    built = []  # what make_env built for --async-envs: processes, closed at the end
    wrap(monkeypatch, script.module, "EnvProcesses", lambda args, envs: built.append(envs) or envs)
    first = tiny(script, tmp_path / "first", "--async-envs")
    (envs,) = built
    assert isinstance(envs.env, gym.vector.AsyncVectorEnv) and len(envs.env.processes) == 2
    assert not any(process.is_alive() for process in envs.env.processes)
    again = tiny(script, tmp_path / "again", "--async-envs")
    assert first["episode_returns"] == again["episode_returns"] and first["episode_returns"]
    for name, weights in first["agent"].state_dict().items():
        assert torch.equal(again["agent"].state_dict()[name], weights), name
    if not script.discrete:  # ShortPendulum has no vector version: sync is gymnasium's sync
        assert tiny(script, tmp_path / "sync")["episode_returns"] == first["episode_returns"]


@pytest.mark.parametrize("env_id", ["probes/Raises-v0", "probes/Dies-v0"])
def test_a_failing_env_process_gives_one_line(env_id, tmp_path, capsys):
    script = SCRIPTS[3]  # ppo_gae
    with pytest.raises(SystemExit) as exc:
        tiny(script, tmp_path, "--async-envs", "--env-id", env_id)
    why = "RuntimeError: the simulator blew up" if "Raises" in env_id else "Error"
    assert exc.value.code.startswith("ppo_gae.py: error: an env process failed: ")
    assert why in exc.value.code and "\n" not in exc.value.code
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Worker" not in err, err  # gymnasium's own log is quiet


def start_in_group(command, env, stderr=subprocess.PIPE):
    """`command` in a process group of its own, as a terminal starts a job: a Ctrl-C to the
    group reaches the run and its env processes. A job started with & by a non-interactive shell
    (CI runners can be) ignores SIGINT, and so would the script: it inherits SIG_IGN. A handler
    here becomes SIG_DFL in the child."""
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen(
            command,
            env=env,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            start_new_session=True,
        )
    finally:
        signal.signal(signal.SIGINT, inherited)


def test_ctrl_c_stops_async_envs_and_their_processes(tmp_path):
    """Ctrl-C in a terminal reaches the whole process group: the run stops cleanly, once, and
    leaves no env process behind."""
    script, run_dir = SCRIPTS[3], tmp_path / "run"
    argv = (*env_argv(script), *FOREVER, "--async-envs", "--num-envs", "4")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    command = [sys.executable, str(script.path), "--run-dir", str(run_dir), *argv]
    proc = start_in_group(command, env)
    wait_for_checkpoint(proc, run_dir / "checkpoint.pt", extra_seconds=0.5)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Traceback" not in out + err and "WARN" not in err, err
    assert out.count("stopped by Ctrl-C") == 1
    # communicate() returned at the end of the output that the env processes shared: they ended.
    with pytest.raises(ProcessLookupError):  # no process of the group is left
        os.killpg(proc.pid, 0)


SLOW_RESET = """
import os, time
import gymnasium as gym
from gymnasium.envs.classic_control import CartPoleEnv, PendulumEnv

def slow(env_class):
    class SlowReset(env_class):
        def reset(self, **kwargs):
            if os.environ.get("RESETTING"):  # say so, then take long enough to be stopped in it
                open(os.environ.pop("RESETTING"), "w").close()
                time.sleep(60)
            return super().reset(**kwargs)
    return SlowReset

gym.register("SlowReset-v0", entry_point=slow(CartPoleEnv), max_episode_steps=500)
gym.register("SlowResetBox-v0", entry_point=slow(PendulumEnv), max_episode_steps=200)
"""
STOPS = [(signal.SIGTERM, ("--async-envs",)), (signal.SIGINT, ())]


@by_name(SCRIPTS)
@pytest.mark.parametrize("signum, argv", STOPS, ids=["SIGTERM-async", "Ctrl-C-sync"])
def test_a_stop_during_the_first_reset_ends_in_one_line(script, signum, argv, tmp_path):
    """SIGTERM, or Ctrl-C (to the whole group, as a terminal sends it), while the envs reset: the
    run stops as it does mid-training, no traceback, and nothing after its last line."""
    (tmp_path / "slow_reset.py").write_text(SLOW_RESET)
    resetting = tmp_path / "resetting"
    env = dict(os.environ, PYTHONPATH=str(tmp_path), RESETTING=str(resetting))
    env_id = f"slow_reset:SlowReset{'' if script.discrete else 'Box'}-v0"
    command = [sys.executable, str(script.path), "--env-id", env_id]
    command += ["--num-envs", "2", "--run-dir", str(tmp_path / "run"), *argv]
    proc = start_in_group(command, env, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while not resetting.exists():  # an env is in its reset: the run is past its start
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.05)
    os.killpg(proc.pid, signum) if signum == signal.SIGINT else proc.send_signal(signum)
    out = proc.communicate(timeout=60)[0]
    assert proc.returncode == (143 if signum == signal.SIGTERM else 0), out
    assert "Traceback" not in out and "Error" not in out, out
    how = "SIGTERM" if signum == signal.SIGTERM else "Ctrl-C"
    assert out.strip().splitlines()[-1] == (
        f"{script.path.name}: stopped by {how} at step 0; no checkpoint to resume from"
    ), out


# ----------------------------------------------------------------------------------------------
# 11. benchmarks/tune.py: Optuna over subprocess runs, on a journal file or a real PostgreSQL
# ----------------------------------------------------------------------------------------------

TUNE = Path(__file__).parent / "benchmarks" / "tune.py"
# Two trials of two 1,024-step CartPole runs each: seconds, not minutes.
TUNE_ARGV = flags("ppo_gae.py --env-id CartPole-v1 --trials 2 --seeds 1 --total-timesteps 1024")
TUNE_ARGV += flags("--eval-episodes 1 --pruner none")


def tune_cli(*argv, cwd):
    return subprocess.Popen(
        [sys.executable, str(TUNE), *argv],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.fixture(params=["journal", "postgresql"])
def tune_storage(request, tmp_path):
    """A journal file, or the URL of a PostgreSQL server started for the test and removed
    after it (pgserver ships the server's binaries)."""
    if request.param == "journal":
        yield str(tmp_path / "study.journal")
        return
    import pgserver

    server = pgserver.get_server(tmp_path / "pgdata", cleanup_mode="stop")
    yield server.get_uri().replace("postgresql://", "postgresql+psycopg2://", 1)
    server.cleanup()


def load_study(name, storage):
    import optuna

    if "://" in storage:
        return optuna.load_study(study_name=name, storage=storage)
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    return optuna.load_study(study_name=name, storage=JournalStorage(JournalFileBackend(storage)))


def test_tune_two_workers_at_once_share_one_study(tune_storage, tmp_path):
    from optuna.trial import TrialState

    argv = (*TUNE_ARGV, "--study-name", "shared", "--storage", tune_storage)
    workers = [tune_cli(*argv, "--out", str(tmp_path / f"out{i}"), cwd=tmp_path) for i in (1, 2)]
    outputs = [w.communicate(timeout=600)[0] for w in workers]
    assert [w.returncode for w in workers] == [0, 0], outputs
    trials = load_study("shared", tune_storage).get_trials()
    # 2 trials from each worker, each in the study once, each with its own number and runs
    assert len(trials) == 4 and {t.number for t in trials} == {0, 1, 2, 3}
    assert all(t.state == TrialState.COMPLETE for t in trials), [t.state for t in trials]
    by_worker = {}
    for t in trials:
        by_worker.setdefault(t.user_attrs["worker_pid"], []).append(t.number)
    assert sorted(len(numbers) for numbers in by_worker.values()) == [2, 2]
    for t in trials:  # the objective is the evaluation that the run itself printed
        (evaluation,) = t.user_attrs["evaluations"]
        (log,) = tmp_path.glob(f"out*/runs/shared/trial{t.number}_seed1/stdout.log")
        said = re.search(r"evaluation over 1 episodes: ([\d.]+)", log.read_text()).group(1)
        assert t.value == evaluation == pytest.approx(float(said), abs=0.05)
    assert "Best trial, as a command:" in outputs[0] + outputs[1]
    # Each worker's report saw the trials done when it ended; --report, after both, sees all.
    final = tune_cli(
        "--study-name",
        "shared",
        "--storage",
        tune_storage,
        "--report",
        "--out",
        str(tmp_path / "final"),
        cwd=tmp_path,
    )
    said = final.communicate(timeout=120)[0]
    assert final.returncode == 0, said
    report = (tmp_path / "final" / "shared.md").read_text()
    best = max(trials, key=lambda t: t.value)
    assert f"python ppo_gae.py --env-id CartPole-v1 {best.user_attrs['flags']}" in report


def test_tune_kills_the_runs_of_a_pruned_trial(tune_storage, tmp_path):
    from optuna.trial import TrialState

    # CartPole returns are at most 500: threshold:1000 prunes each trial at its first report,
    # a tenth into runs of 100,000 steps that would take half a minute.
    argv = flags("ppo_gae.py --env-id CartPole-v1 --trials 1 --seeds 1 2 --total-timesteps 100000")
    argv += ("--study-name", "pruned", "--storage", tune_storage, "--pruner", "threshold:1000")
    worker = tune_cli(*argv, "--out", str(tmp_path), cwd=tmp_path)
    output = worker.communicate(timeout=600)[0]
    assert worker.returncode == 0, output
    (trial,) = load_study("pruned", tune_storage).get_trials()
    assert trial.state == TrialState.PRUNED
    assert len(trial.intermediate_values) == 1  # stopped at its first report, of 10
    for pid in trial.user_attrs["pids"]:  # killed and reaped, not left running
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    for log in (tmp_path / "runs" / "pruned").glob("trial0_seed*/stdout.log"):  # ... mid-run
        assert "evaluation over" not in log.read_text()
    assert len(list((tmp_path / "runs" / "pruned").glob("trial0_seed*/stdout.log"))) == 2


def test_tune_retries_the_trial_of_a_worker_that_died(tmp_path):
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend
    from optuna.trial import TrialState

    from benchmarks import tune

    storage = JournalStorage(JournalFileBackend(str(tmp_path / "study.journal")))
    study = optuna.create_study(study_name="dead", storage=storage, direction="maximize")
    trial = study.ask()
    trial.suggest_float("learning-rate", 1e-4, 1e-2)
    dead = subprocess.Popen(["true"])
    dead.wait()  # a worker pid that no longer exists
    trial.set_user_attr("worker_pid", dead.pid)
    trial.set_user_attr("host", __import__("socket").gethostname())
    alive = study.ask()  # a running trial of a live worker (this process): left alone
    alive.set_user_attr("worker_pid", os.getpid())
    alive.set_user_attr("host", __import__("socket").gethostname())
    tune.retry_orphans(study)
    states = [t.state for t in study.get_trials()]
    assert states == [TrialState.FAIL, TrialState.RUNNING, TrialState.WAITING]
    again = study.ask()  # the queued retry, with the dead trial's flags
    assert again.suggest_float("learning-rate", 1e-4, 1e-2) == trial.params["learning-rate"]


TUNE_BAD = [
    pytest.param(flags("nosuch.py --env-id CartPole-v1"), "unknown script", id="script"),
    pytest.param(flags("ppo_gae.py --env-id NoSuchEnv-v0"), "NoSuchEnv", id="env"),
    pytest.param(flags("ppo_continuous.py --env-id CartPole-v1"), "Discrete", id="actions"),
    pytest.param(flags("ppo_gae.py --env-id CartPole-v1 --space bad.json"), "bad.json", id="json"),
    pytest.param(
        flags("ppo_gae.py --env-id CartPole-v1 --space flag.json"), "--no-such-flag", id="flag"
    ),
    pytest.param(
        flags("ppo_gae.py --env-id CartPole-v1")
        + ("--storage", "postgresql+psycopg2://tuner:secret@127.0.0.1:9/optuna"),
        "cannot reach the database postgresql+psycopg2://tuner:***@127.0.0.1:9/optuna",
        id="database",
    ),
]


@pytest.mark.parametrize("argv, says", TUNE_BAD)
def test_tune_bad_input_is_one_line_and_status_2(argv, says, tmp_path, monkeypatch, capsys):
    from benchmarks import tune

    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "flag.json").write_text('{"--no-such-flag": {"type": "int", "low": 1, "high": 2}}')
    argv = (*argv, "--study-name", "bad", "--total-timesteps", "1000", "--out", str(tmp_path))
    with pytest.raises(SystemExit) as exc:
        tune.main(tune.parse_args(list(argv)))
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("tune.py: error:") and says in err, err
    assert "secret" not in err


# ----------------------------------------------------------------------------------------------
# 14. benchmarks/mujoco_suite.py: the suite's table; run.py --append adds seeds to a folder
# ----------------------------------------------------------------------------------------------


def test_mujoco_suite_table_scores_each_seeds_final_evaluation(tmp_path, monkeypatch):
    import json

    from benchmarks import mujoco_suite

    monkeypatch.setattr(mujoco_suite, "RESULTS", tmp_path)
    runs = {  # env folder: {seed: final evaluation episodes}
        "hopper": {1: [2000, 3000], 2: [3500, 3500], 3: [1000, 1000]},  # 2500, 3500, 1000
        "reacher": {1: [-4.0, -4.2], 2: [-3.0, -3.2]},  # -4.1 (equal: at), -3.1
    }
    for name, seeds in runs.items():
        (tmp_path / name).mkdir()
        raw = [{"seed": s, "eval_returns": returns} for s, returns in seeds.items()]
        (tmp_path / name / "raw.json").write_text(json.dumps({"runs": raw}))
    mujoco_suite.table(reps=2000)
    rows = {
        line.split("|")[1].strip(): [cell.strip() for cell in line.split("|")[2:-1]]
        for line in (tmp_path / "mujoco_suite.md").read_text().splitlines()
        if line.startswith("| ") and "-v5" in line
    }
    # Hopper: mean 7000/3 = 2333, population std 1027 (by hand), below 2609; one seed above.
    # With 3 seeds the 25% trimmed mean trims none: the IQM is the mean, and the bootstrap's
    # interval lies between the lowest and the highest seed.
    hopper = rows["[Hopper-v5](hopper/table.md)"]
    assert hopper[:2] == ["3", "2333 ± 1027"] and hopper[3:5] == ["1/3", "2609"]
    iqm, interval = hopper[2].split(" [")
    low, high = map(float, interval.rstrip("]").split(", "))
    assert iqm == "2333" and 1000 <= low < 2333 < high <= 3500
    assert hopper[-1] == "2500, 3500, 1000"
    # Reacher: mean -3.6 >= -4.1 is bold; a seed equal to the figure counts as at it
    reacher = rows["[Reacher-v5](reacher/table.md)"]
    assert reacher[:2] == ["2", "**-3.60 ± 0.50**"] and reacher[3:5] == ["2/2", "-4.1"]
    assert reacher[2].startswith("-3.60 [")  # two decimals, as its mean
    assert rows["Ant-v5"][:2] == ["0", "not run"]


def test_race_reads_logs_finds_levels_and_tabulates(tmp_path):
    """benchmarks/race.py on a made-up curve: the peer's episode log, the first time the mean of
    20 episodes reaches each level, and the table's times, steps and ratios."""
    from benchmarks import race

    t0 = 1000.0
    log = tmp_path / "peer.jsonl"
    log.write_text("".join(json.dumps([100 * (i + 1), t0 + i, float(i)]) + "\n" for i in range(40)))
    peer = race.read_peer_log(log, t0)
    assert peer[0] == [100, 0.0, 0.0] and peer[-1] == [4000, 39.0, 39.0]
    # The mean of episodes i-19..i is i - 9.5: it first reaches 10 at i = 20 (step 2100, 20 s).
    assert race.crossing(peer, 10) == (2100, 20.0)
    assert race.crossing(peer, 29.5) == (4000, 39.0) and race.crossing(peer, 30) is None
    ours = [[50 * (i + 1), 0.5 * i, 2.0 * i] for i in range(40)]  # twice the return, twice as fast
    # Ours' mean of the last 20 is 2i - 19, from i = 19 (the 20th episode) on: 19 there, so it
    # reaches 10 at once (step 1000, 9.5 s); 30 at i = 25 (step 1300, 12.5 s).
    assert race.crossing(ours, 10) == (1000, 9.5) and race.crossing(ours, 30) == (1300, 12.5)
    seeds = {"1": {"ours": {"episodes": ours}, "peer": {"episodes": peer}}}
    # 25, 50, 75, 100% of 40; then 125% = 50 while ours' best mean (2 * 39 - 19 = 59) allows.
    assert race.levels(40, seeds) == [10, 20, 30, 40, 50]
    rows = {line.split(" |")[0]: line for line in race.table("Hopper-v5", seeds, 40).splitlines()}
    # Level 20: ours at i = 20 (step 1050, 10 s), the peer at i = 30 (step 3100, 30 s): 0.33.
    assert rows["| 20"] == "| 20 | 10 s (1,050) / 30 s (3,100) (0.33) | 0.33 (0.33-0.33) |"
    assert rows["| 30"] == "| 30 | 12 s (1,300) / — | — |"  # the peer never gets there


def test_compile_race_tabulates_compiled_against_eager_and_the_old_race(tmp_path):
    """benchmarks/compile_race.py on made-up runs of Hopper (figure 2609): the compiled run
    is twice as fast in seconds; the old race's ours / rl-zoo3 ratio is halved with it."""
    from benchmarks import compile_race

    def run(seconds_per_episode, slope=200.0):  # 20 episodes then a return that climbs
        return [[1000 * (i + 1), seconds_per_episode * (i + 1), slope * i] for i in range(40)]

    def record(episodes):
        return {"returncode": 0, "wall_s": episodes[-1][1], "episodes": episodes}

    folders = {}
    for name, episodes in [("eager", run(2.0)), ("compile", run(1.0))]:
        folders[name] = tmp_path / name
        folders[name].mkdir()
        raw = {"Hopper-v5": {"1": {"ours": record(episodes)}}}
        (folders[name] / "raw.json").write_text(json.dumps(raw))
    (tmp_path / "race").mkdir()  # another day's race: ours as the eager run, the peer 4x slower
    old = {"ours": record(run(2.0)), "peer": record(run(8.0))}
    (tmp_path / "race" / "raw.json").write_text(json.dumps({"Hopper-v5": {"1": old}}))
    argv = ["--out", str(folders["compile"]), "--eager", str(folders["eager"])]
    compile_race.main([*argv, "--race", str(tmp_path / "race")])
    lines = (folders["compile"] / "table.md").read_text().splitlines()
    assert "| 1 | 80, 40 (0.50) | 1,000 | —, — |" in lines  # the last episode; no evaluation
    # Compiling for 15 s, then 1 s an episode against 2: level at the 15th episode, ahead on.
    late = [[step, seconds + 15, r] for step, seconds, r in run(1.0)]
    assert compile_race.ahead_from(run(2.0), late) == 15_000
    assert compile_race.ahead_from(run(2.0), run(3.0)) is None
    # The mean of the last 20, 200 (i - 9.5), passes 652.2 at once at i = 19: eager 40 s,
    # compiled 20 s, the peer 160 s: ratios 0.50, then 0.25, then 0.125 with the compile.
    assert "| 652.2 | 0.50 (0.50-0.50) | 0.25 (0.25-0.25) | 0.12 (0.12-0.12) |" in lines


def test_race_sets_r_beside_its_variants_from_run_py_folders(tmp_path):
    """race.py --variants: R's runs from the race's raw.json, its variants' from a run.py
    folder (a failed run left out), tabulated at 25-100% of Hopper's 2609; the variants.json it
    writes gives the same table again."""
    from benchmarks import race

    # R: returns 100 i, so the mean of the last 20 is 100 (i - 9.5) from i = 19 (step 2000, 19 s)
    # on: at 652 then; at 1304 from i = 23, 1957 from i = 30, 2609 from i = 36; 2950 at the end.
    r = [[100 * (i + 1), float(i), 100.0 * i] for i in range(40)]
    race_raw = {"Hopper-v5": {"1": {"ours": {"episodes": r}, "peer": {"episodes": []}}}}
    (tmp_path / "raw.json").write_text(json.dumps(race_raw))
    flat = [
        [[k * 100 * (i + 1), k * i + k - 1.0, 600.0 + 100 * k] for i in range(40)] for k in (1, 2)
    ]
    runs = [
        dict(script="R, gamma .999", seed=k, returncode=0, episodes=flat[k - 1]) for k in (1, 2)
    ]
    runs.append(dict(script="R, gamma .999", seed=3, returncode=1, episodes=[]))
    (tmp_path / "gamma").mkdir()
    (tmp_path / "gamma" / "raw.json").write_text(json.dumps({"env_id": "Hopper-v5", "runs": runs}))
    argv = ["--env-id", "Hopper-v5", "--out", str(tmp_path), "--variants", str(tmp_path / "gamma")]
    assert race.main(race.parse_args(argv)) == 0
    table = (tmp_path / "variants.md").read_text()
    rows = {line.split(" |")[0]: line for line in table.splitlines()}
    assert rows["| run"].startswith("| run | 652 (25%) | 1304 (50%) | 1957 (75%) | 2609 (100%) |")
    assert rows["| R"] == (
        "| R | 2,000, 19 s (1/1) | 2,400, 23 s (1/1) | 3,100, 30 s (1/1) "
        "| 3,700, 36 s (1/1) | 2950 |"
    )
    # Seeds 1 and 2 stay at 700 and 800: both at 652 at their 20th episode (step 2000, 19 s and
    # step 4000, 39 s), never higher; seed 3 failed and is not counted.
    assert rows["| R, gamma .999"] == (
        "| R, gamma .999 | 3,000 (2,000-4,000), 29 (19-39) s (2/2) | never (0/2) | never (0/2) "
        "| never (0/2) | 750 (700-800) |"
    )
    argv[-1] = str(tmp_path / "variants.json")  # the kept runs: the same table
    assert race.main(race.parse_args(argv)) == 0
    assert (tmp_path / "variants.md").read_text() == table


def test_race_runs_each_side_as_a_queue_on_its_own_core_and_keeps_what_is_done(
    tmp_path, monkeypatch
):
    """race.py's main(): ours on core 0 and the peer on core 1, each through the envs and seeds
    in order; a run already done is kept, a failed one runs again, and the table gets only the
    seeds that both sides finished."""
    from benchmarks import race

    done = dict(returncode=0, episodes=[[1, 1.0, 1.0]])
    raw = {"Hopper-v5": {"1": {"ours": done, "peer": dict(done, returncode=1)}}}
    (tmp_path / "raw.json").write_text(json.dumps(raw))
    calls, reported = [], {}

    def run_side(args, env_id, seed, side, core):
        calls.append((side, core, env_id, seed))
        return dict(returncode=1 if (side, env_id, seed) == ("peer", "Walker2d-v5", "2") else 0)

    monkeypatch.setattr(race, "run_side", run_side)
    monkeypatch.setattr(race, "report", lambda raw, out: reported.update(raw))
    argv = ["--env-id", "Hopper-v5", "Walker2d-v5", "--seeds", "1", "2", "--out", str(tmp_path)]
    assert race.main(race.parse_args(argv)) == 0
    ours = [("ours", 0, e, s) for e, s in [("Hopper-v5", "2"), ("Walker2d-v5", "1")]]
    ours += [("ours", 0, "Walker2d-v5", "2")]
    peer = [("peer", 1, e, s) for e, s in [("Hopper-v5", "1"), ("Hopper-v5", "2")]]
    peer += [("peer", 1, "Walker2d-v5", "1"), ("peer", 1, "Walker2d-v5", "2")]
    assert [c for c in calls if c[0] == "ours"] == ours
    assert [c for c in calls if c[0] == "peer"] == peer
    saved = json.loads((tmp_path / "raw.json").read_text())
    assert saved["Hopper-v5"]["1"]["ours"] == done and saved["Walker2d-v5"]["2"]["peer"]
    # Every seed has both sides on record, the failed peer too (the table shows its dashes).
    assert {e: sorted(s) for e, s in reported.items()} == {
        "Hopper-v5": ["1", "2"],
        "Walker2d-v5": ["1", "2"],
    }
    calls.clear()
    argv += ["--sides", "peer"]  # a second peer queue: only the failed run again
    assert race.main(race.parse_args(argv)) == 0
    assert calls == [("peer", 1, "Walker2d-v5", "2")]


def test_race_runs_rl_zoo3s_own_entry_for_the_v4_env(capsys):
    from benchmarks import race

    name, entry = race.zoo_entry("Hopper-v5")
    assert name == "Hopper-v4" and entry["n_steps"] == 512 and entry["batch_size"] == 32
    kwargs = race.zoo_model_kwargs(entry)
    assert "n_envs" not in kwargs and "normalize" not in kwargs and kwargs["gamma"] == 0.999
    assert kwargs["policy_kwargs"]["log_std_init"] == -2
    assert kwargs["policy_kwargs"]["activation_fn"] is torch.nn.ReLU
    with pytest.raises(KeyError):
        race.zoo_entry("NoSuchEnv-v5")


def test_zoo_nets_trains_ppo_continuous_with_256x256_relu_actor_and_critic(tmp_path):
    """benchmarks/zoo_nets.py (lesson 7's networks): the run it starts saves weights of 256x256
    layers for both networks, with ppo_continuous.py's flags and initialisation otherwise."""
    from benchmarks import zoo_nets

    script = Path(__file__).parent / "benchmarks" / "zoo_nets.py"
    flags = ["--env-id", "Pendulum-v1", "--total-timesteps", "512", "--num-envs", "2"]
    flags += ["--eval-episodes", "0", "--log-std-init", "-2", "--save-model"]
    flags += ["--critic-hidden", "32", "--run-dir", str(tmp_path)]
    done = subprocess.run([sys.executable, script] + flags, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    weights = torch.load(tmp_path / "ppo_continuous.pt")  # Pendulum: 3 numbers in, 1 action out
    for net in ("actor_mean", "critic"):
        shapes = [tuple(weights[f"{net}.{i}.weight"].shape) for i in (0, 2, 4)]
        assert shapes == [(256, 3), (256, 256), (1, 256)], net
    assert torch.allclose(weights["actor_logstd"], torch.tensor([-2.0]), atol=0.05)
    agent = zoo_nets.ZooAgent(11, 3, log_std_init=-2.0)  # Hopper's sizes: the actor gives 3
    relu_mlp = [torch.nn.Linear, torch.nn.ReLU, torch.nn.Linear, torch.nn.ReLU, torch.nn.Linear]
    assert [type(m) for m in agent.actor_mean] == relu_mlp
    assert [type(m) for m in agent.critic] == relu_mlp
    assert agent.actor_mean[4].out_features == 3 and agent.critic[4].out_features == 1
    # ppo_continuous.py's initialisation: orthogonal rows, the mean's last layer scaled to 0.01
    rows = agent.actor_mean[4].weight.norm(dim=1)
    assert torch.allclose(rows, torch.full((3,), 0.01), rtol=1e-4)
    assert agent.critic[4].weight.norm().item() == pytest.approx(1.0, rel=1e-4)


def test_mujoco_suite_tries_an_idea_in_a_folder_of_its_own(tmp_path, monkeypatch):
    import json

    from benchmarks import mujoco_suite

    calls = []
    monkeypatch.setattr(mujoco_suite.subprocess, "run", lambda cmd, **kw: calls.append(cmd))
    argv = ["run", "--envs", "Ant-v5", "Swimmer-v5", "--seeds", "1", "2", "--results"]
    argv = [*argv, str(tmp_path), "--extra", "--ent-coef 0.01", "--reps", "100"]
    mujoco_suite.run(mujoco_suite.parse_args(argv))
    extras = [cmd[cmd.index("--extra") + 1].split() for cmd in calls]
    r, swimmer = mujoco_suite.R.split(), mujoco_suite.SWIMMER.split()
    # R first, then Swimmer's own flags, then the idea's: argparse takes the last of a flag.
    assert extras == [r + ["--ent-coef", "0.01"], r + swimmer + ["--ent-coef", "0.01"]]
    assert [cmd[cmd.index("--out") + 1] for cmd in calls] == [
        f"{tmp_path}/ant",
        f"{tmp_path}/swimmer",
    ]
    assert "| Ant-v5 | 0 | not run |" in (tmp_path / "mujoco_suite.md").read_text()  # its table

    def table_head(extra, script="ppo_continuous.py"):
        (tmp_path / "ant").mkdir(exist_ok=True)
        raw = {"extra": extra, "scripts": [script], "runs": [{"seed": 1, "eval_returns": [1.0]}]}
        (tmp_path / "ant" / "raw.json").write_text(json.dumps(raw))
        mujoco_suite.table(tmp_path, reps=100)
        return (tmp_path / "mujoco_suite.md").read_text().split(" (Swimmer")[0]

    assert table_head(f" {mujoco_suite.R}") == "ppo_continuous.py, 1M steps, recipe R"
    assert table_head(f" {mujoco_suite.R} --lr-target-kl 0.01", "x/copy.py") == (
        "copy.py, 1M steps, recipe R + `--lr-target-kl 0.01`"
    )
    assert table_head(" --num-envs 8  --gamma 0.99") == (  # not R: its flags in full
        "ppo_continuous.py, 1M steps, flags `--num-envs 8 --gamma 0.99`"
    )
    raw = json.loads((tmp_path / "ant" / "raw.json").read_text())
    (tmp_path / "ant" / "raw.json").write_text(json.dumps({**raw, "total_timesteps": 4096}))
    mujoco_suite.table(tmp_path, reps=100)
    assert (tmp_path / "mujoco_suite.md").read_text().startswith("ppo_continuous.py, 4,096 steps,")


def test_run_append_adds_seeds_and_keeps_the_runs_it_has(tmp_path):
    import json

    def bench(*argv):
        cmd = [sys.executable, str(Path(__file__).parent / "benchmarks" / "run.py")]
        cmd += ["--scripts", "ppo_gae.py", "--env-id", "CartPole-v1", "--threshold", "10"]
        cmd += ["--total-timesteps", "512", "--out", str(tmp_path), *argv]
        return subprocess.run(cmd, cwd=Path(__file__).parent, capture_output=True, text=True)

    assert bench("--seeds", "1", "--extra", "--eval-episodes 1").returncode == 0
    first = json.loads((tmp_path / "raw.json").read_text())["runs"]
    added = bench("--seeds", "1", "2", "--extra", "--eval-episodes 1", "--append")
    assert added.returncode == 0, added.stderr
    assert "[1/1] ppo_gae.py seed 2" in added.stdout  # seed 1 is not run again
    raw = json.loads((tmp_path / "raw.json").read_text())
    assert raw["seeds"] == [1, 2] and [r["seed"] for r in raw["runs"]] == [1, 2]
    assert raw["runs"][0]["episodes"] == first[0]["episodes"]
    assert raw["runs"][0]["wall_s"] == first[0]["wall_s"]
    assert len(raw["runs"][1]["eval_returns"]) == 1
    other = bench("--seeds", "3", "--extra", "--eval-episodes 2", "--append")  # other flags
    assert other.returncode == 1 and other.stdout == ""
    assert other.stderr.startswith("run.py: error: --append:") and other.stderr.count("\n") == 1
    assert [r["seed"] for r in json.loads((tmp_path / "raw.json").read_text())["runs"]] == [1, 2]


# ----------------------------------------------------------------------------------------------
# 15. The docs and the tools behind their figures: every relative link resolves, every results
#     folder is cited; format and lint; rliable's IQM (benchmarks/iqm.py); SB3's settings
# ----------------------------------------------------------------------------------------------


def test_iqm_of_known_numbers_and_its_bootstrap_interval():
    import itertools

    from benchmarks import iqm

    # The IQM is scipy's 25% trimmed mean: with 5 scores it drops the lowest and the highest,
    # with 8 the two lowest and the two highest. One wild seed moves the mean, not the IQM.
    assert iqm.iqm_interval([4, 100, 2, 1, 3], reps=200)[0] == 3.0  # (2 + 3 + 4) / 3
    assert iqm.iqm_interval([0, 10, 20, 30, 40, 50, 60, 1000], reps=200)[0] == 35.0
    assert iqm.iqm_interval([5.0] * 4, reps=200) == (5.0, 5.0, 5.0)
    # The interval: the 2.5% and 97.5% points of the IQMs of resampled seeds. With 5 scores
    # there are 5^5 equally likely resamples; the exact points are 4/3 (the IQM of 1, 1, 2 in
    # the middle) and 68 ((4 + 100 + 100) / 3), each on a plateau wide enough that rliable's
    # Monte Carlo draw lands on it.
    scores = [1.0, 2.0, 3.0, 4.0, 100.0]
    every = [
        np.sort(np.take(scores, idx))[1:4].mean() for idx in itertools.product(range(5), repeat=5)
    ]
    assert np.percentile(every, [2.5, 97.5]) == pytest.approx([4 / 3, 68.0])
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    result = iqm.iqm_interval(scores, reps=20_000)
    assert result == pytest.approx((3.0, 4 / 3, 68.0))
    assert np.array_equal(np.random.get_state()[1], before)  # numpy's global RNG left as found
    assert iqm.iqm_interval(scores, reps=3000, seed=7) == iqm.iqm_interval(scores, 3000, seed=7)
    # mean 22, population std sqrt((21² + 20² + 19² + 18² + 78²) / 5) = 39.01; decimals by size
    assert iqm.spread(scores, reps=2000) == ("22 ± 39", "3 [1, 68]")
    assert iqm.spread(scores, reps=2000, decimals=2) == ("22.00 ± 39.01", "3.00 [1.33, 68.00]")


def test_iqm_reads_raw_json_and_scores_the_peak_as_tianshou_does(tmp_path, capsys):
    import json

    from benchmarks import iqm

    # Two seeds of one script and one of a variant; episodes are (env step, seconds, return).
    raw = {
        "runs": [
            {
                "script": "a.py",
                "seed": 1,
                "eval_returns": [10, 20],
                "episodes": [[5, 0, 1.0], [8, 0, 3.0], [12, 0, 5.0], [25, 0, 7.0], [29, 0, 9.0]],
            },
            {
                "script": "a.py",
                "seed": 2,
                "eval_returns": [30],
                "episodes": [[10, 0, 2.0], [20, 0, 4.0], [30, 0, 0.0]],
            },
            {"script": "b", "seed": 1, "eval_returns": [1, 2, 3], "episodes": [[10, 0, 1.0]]},
        ]
    }
    assert iqm.final_evaluations(raw) == {"a.py": {1: 15.0, 2: 30.0}, "b": {1: 2.0}}
    # Every 10 steps up to 30, each seed's last 2 episodes that ended by then:
    # seed 1: (1+3)/2 = 2, (3+5)/2 = 4, (7+9)/2 = 8; seed 2: 2, (2+4)/2 = 3, (4+0)/2 = 2.
    # Their mean: 2, 3.5, 5; the peak is 5 at step 30.
    peak, step, curve = iqm.peak_of_mean_curve(raw, "a.py", every=10, episodes=2, until=30)
    assert (peak, step) == (5.0, 30) and curve == [(10, 2.0), (20, 3.5), (30, 5.0)]
    (tmp_path / "raw.json").write_text(json.dumps(raw))
    out = iqm.table([tmp_path], reps=100)
    assert f"| {tmp_path.name} | a.py | 1,2 | 22.5 ± 7.5 | 22.5 [" in out
    assert f"| {tmp_path.name} | b | 1 | 2.00 ± 0.00 | 2.00 [2.00, 2.00] |" in out
    with pytest.raises(SystemExit) as exc:
        iqm.parse_args([str(tmp_path / "nothing")])
    assert exc.value.code == 2 and "no raw.json there" in capsys.readouterr().err


def test_sb3_ppo_settings_are_rl_zoo3s_own():
    import importlib.metadata
    import importlib.util

    import yaml

    from benchmarks import sb3_ppo

    # rl_zoo3 is found, not imported: importing it patches gymnasium for the whole process.
    spec = importlib.util.find_spec("rl_zoo3")
    assert spec is not None, "rl_zoo3 is missing: pip install -r requirements-dev.txt"
    path = Path(spec.submodule_search_locations[0]) / "hyperparams" / "ppo.yml"
    zoo = yaml.safe_load(path.read_text())
    version = importlib.metadata.version("rl_zoo3")
    assert f"rl-zoo3 {version} `hyperparams/ppo.yml`" in sb3_ppo.__doc__  # the copy names it
    assert sorted(sb3_ppo.ZOO) == ["CartPole-v1", "Pendulum-v1"]
    for env_id, ours in sb3_ppo.ZOO.items():
        theirs = zoo[env_id]
        assert sorted(ours) == sorted(theirs), env_id  # no setting left out or added
        for key, value in theirs.items():
            if isinstance(value, str) and value.startswith("lin_"):  # X * progress_remaining
                start = float(value.removeprefix("lin_"))
                got = [ours[key](p) for p in (1.0, 0.25, 0.0)]
                assert got == pytest.approx([start, start / 4, 0.0]), (env_id, key)
            else:
                assert ours[key] == value, (env_id, key, ours[key], value)


RESULTS = ROOT / "benchmarks" / "results"


def docs_pages():
    """The pages a visitor reads: README.md, docs/*.md, benchmarks/README.md, and the notes kept
    beside the results (benchmarks/results/**/*.md)."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return pages + [ROOT / "benchmarks" / "README.md", *sorted(RESULTS.rglob("*.md"))]


def prose(text):
    """The markdown outside fenced code blocks, with inline code spans emptied."""
    text = re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", text, flags=re.S | re.M)
    return re.sub(r"(`+)(?:(?!\1).)+?\1", "``", text)


def github_slug(heading):
    """The anchor GitHub gives a heading: its text as rendered (code marks, emphasis and link
    syntax gone), lower-cased, every character that is not a letter, digit, '_', '-' or space
    dropped, and each space made a '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[`*]", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path):
    """The anchors of a markdown file's headings, with GitHub's -1, -2 for repeated ones."""
    seen, found = {}, set()
    text = re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", path.read_text(), flags=re.S | re.M)
    for match in re.finditer(r"^#{1,6}\s+(.*?)\s*#*\s*$", text, flags=re.M):
        slug = github_slug(match.group(1))
        found.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return found


def broken_links(page):
    """(target, why) for each relative link of a markdown page that does not resolve."""
    broken, checked = [], 0
    for target in re.findall(
        r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", prose(page.read_text())
    ):
        if re.match(r"[a-z][a-z0-9+.-]*:|//", target, flags=re.I):
            continue  # https:, mailto: ...: not relative
        checked += 1
        file, _, anchor = target.partition("#")
        path = (page.parent / file).resolve() if file else page
        if not path.exists():
            broken.append((target, "no such file"))
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append((target, f"no heading with anchor #{anchor} in {path.name}"))
    return broken, checked


def test_github_slugs_and_the_link_check_on_a_hand_made_page(tmp_path):
    # Headings of this repository's pages, with the anchors GitHub gave them
    assert github_slug("Scaling up: CartPole in torch, and when `--cuda` helps") == (
        "scaling-up-cartpole-in-torch-and-when---cuda-helps"
    )
    assert github_slug("ppo_gae.py against Stable-Baselines3 on CartPole-v1 (SB3: 1-5)") == (
        "ppo_gaepy-against-stable-baselines3-on-cartpole-v1-sb3-1-5"
    )
    assert github_slug("Why CartPoleTorch lives in benchmarks/") == (
        "why-cartpoletorch-lives-in-benchmarks"
    )
    assert github_slug("Greedy eval: 7358 ± 1809, **bold** [a link](x.md)") == (
        "greedy-eval-7358--1809-bold-a-link"
    )
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "there.md").write_text("# Two words\n\n## Two words\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Top\n\n[ok](sub/there.md#two-words) [ok](sub/there.md#two-words-1) [ok](#top)\n"
        "[web](https://example.com/x) ![img](sub/there.md)\n"
        "[gone](sub/gone.md) [bad anchor](sub/there.md#three-words) [bad](#bottom)\n"
        "`[in code](nowhere.md)`\n```bash\n[in a block](nowhere.md)\n```\n"
    )
    broken, checked = broken_links(page)
    assert checked == 7  # the web link and the two in code are not relative links to check
    assert [target for target, _ in broken] == [
        "sub/gone.md",
        "sub/there.md#three-words",
        "#bottom",
    ]


def test_every_relative_link_of_the_docs_resolves():
    total, broken = 0, []
    for page in docs_pages():
        found, checked = broken_links(page)
        total += checked
        broken += [(str(page.relative_to(ROOT)), *item) for item in found]
    assert not broken, broken
    assert total > 100  # the pages do link to their tables, plots and sections


def test_results_stay_within_36_folders_and_60_mb():
    """benchmarks/results/ keeps the tables the docs cite; finished tries live in git history."""
    results = ROOT / "benchmarks" / "results"
    folders = [path for path in results.iterdir() if path.is_dir()]
    size = sum(path.stat().st_size for path in results.rglob("*") if path.is_file())
    assert len(folders) <= 36 and size <= 60e6, (len(folders), size)


def test_every_results_folder_is_cited_and_every_cited_one_exists():
    text = "\n".join(
        page.read_text()
        for page in [
            ROOT / "README.md",
            *(ROOT / "docs").glob("*.md"),
            ROOT / "benchmarks" / "README.md",
        ]
    )
    name = r"([a-z0-9_.-]*[a-z0-9_])"  # a folder's name; NAME in a command is a placeholder
    cited = set(re.findall(r"\bbenchmarks/results/" + name, text))
    cited |= set(re.findall(r"(?<![\w/])results/" + name, text))  # benchmarks/README's own
    kept = {entry.name for entry in RESULTS.iterdir()}
    assert not cited - kept, f"cited, not in benchmarks/results: {sorted(cited - kept)}"
    assert not kept - cited, f"in benchmarks/results, cited nowhere: {sorted(kept - cited)}"


@pytest.mark.parametrize("argv", [("format", "--check", "."), ("check", ".")])
def test_ruff_format_and_lint_pass(argv):
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *argv], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


# ----------------------------------------------------------------------------------------------
# 16. Watch it learn: --track to Weights & Biases (offline), training videos; any flags, any values
# ----------------------------------------------------------------------------------------------

FILMING = ("wandb", "moviepy", "pygame", "PIL")
needs_filming = pytest.mark.skipif(
    not all(installed(name) for name in FILMING), reason="needs " + ", ".join(FILMING)
)
FILM_ARGV = flags("--num-envs 4 --num-steps 16 --total-timesteps 480 --video-every 1")


def wandb_records(run_folder):
    """Every record of an offline W&B run, read from its run-ID.wandb file: a log of 32 KiB
    blocks after a 7-byte header; each chunk has a 7-byte head (CRC, length, type: 1 whole,
    2 first, 3 middle, 4 last) and a part of a wandb_internal_pb2.Record."""
    from wandb.proto import wandb_internal_pb2

    (path,) = Path(run_folder).glob("run-*.wandb")
    for _ in range(300):  # wandb.finish() may return while W&B's own process still writes
        records = read_wandb_log(path.read_bytes(), wandb_internal_pb2.Record)
        if any(record.HasField("exit") for record in records):
            break
        time.sleep(0.1)
    return records


def read_wandb_log(data, Record):
    """The records of a W&B log file's bytes (wandb_records says how they are laid out)."""
    position, chunks, records = 7, b"", []
    assert data[:4] == b":W&B"
    while position + 7 <= len(data):
        if 32768 - position % 32768 < 7:  # too little room left in the block for a head
            position += 32768 - position % 32768
            continue
        length, kind = (
            int.from_bytes(data[position + 4 : position + 6], "little"),
            data[position + 6],
        )
        if position + 7 + length > len(data):  # a chunk still being written
            break
        chunks += data[position + 7 : position + 7 + length]
        position += 7 + length
        if kind in (1, 4):
            records.append(Record.FromString(chunks))
            chunks = b""
    return records


def tensorboard_gifs(run_dir, tag="videos/training"):
    """{step: the animated GIF logged under `tag`, opened with Pillow} of a TensorBoard run."""
    from io import BytesIO

    from PIL import Image
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir), size_guidance={"images": 0})
    events.Reload()
    if tag not in events.Tags()["images"]:
        return {}
    return {e.step: Image.open(BytesIO(e.encoded_image_string)) for e in events.Images(tag)}


@needs_filming
@by_name([SCRIPTS[0], SCRIPTS[-1]])  # whole episodes, and Box actions; Run is the same in all
def test_track_offline_records_the_flags_a_metric_the_code_and_videos(script, tmp_path):
    shutil.copy(script.path, tmp_path)  # W&B keeps the code of the program it runs in
    env = dict(os.environ, WANDB_MODE="offline", WANDB_SILENT="true")
    env_id = "CartPole-v1" if script.discrete else "Pendulum-v1"
    argv = [script.path.name, "--env-id", env_id, *FILM_ARGV, "--capture-video", "--track"]
    argv += ["--learning-rate", "0.00123", "--eval-episodes", "1", "--run-dir", "run"]
    done = subprocess.run(
        [sys.executable, *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    (folder,) = (tmp_path / "wandb").glob("offline-run-*")
    records = wandb_records(folder)
    kinds = [record.WhichOneof("record_type") for record in records]
    (run,) = [record.run for record in records if record.HasField("run")]
    config = {item.key: json.loads(item.value_json) for item in run.config.update}
    assert config["learning_rate"] == 0.00123 and config["env_id"] == env_id
    assert config["total_timesteps"] == 480 and config["wandb_id"] == run.run_id
    history = {}
    for record in records:
        for item in record.history.item if record.HasField("history") else []:
            history.setdefault((*item.nested_key, item.key)[0], []).append(item)
    losses = [json.loads(item.value_json) for item in history["losses/policy_loss"]]
    assert len(losses) >= 2 and all(map(math.isfinite, losses))  # synced from TensorBoard
    code = folder / "files" / config["_wandb"]["code_path"]  # the script's code, as it ran
    assert code.name == script.path.name and code.read_text() == script.path.read_text()
    gifs = [
        json.loads(i.value_json) for i in history["videos/training"] if "filenames" in i.nested_key
    ]
    assert len(gifs) >= 2 and "exit" in kinds
    for (name,) in gifs:  # the GIFs that W&B keeps as the run's media
        assert (folder / "files" / name).read_bytes()[:3] == b"GIF"
    films = tensorboard_gifs(tmp_path / "run")
    assert len(films) >= 2  # an animated grid at two steps or more
    fps = 50 if script.discrete else 30  # CartPole's and Pendulum's: a frame every 2 steps
    for film in films.values():  # a rollout of 16 steps (reinforce.py's: whole episodes)
        assert film.format == "GIF" and film.n_frames >= 6  # Pillow merges repeats
        assert film.size[0] >= 4 * 100  # 4 envs a row, each shrunk to at most 128 px wide
        durations = []
        for frame in range(film.n_frames):
            film.seek(frame)
            durations.append(film.info["duration"])
        real_time = 1000 * 2 / fps  # a frame's, cut to the GIF's 10 ms: 40 and 60
        assert all(d % (real_time // 10 * 10) == 0 for d in durations), durations  # or repeats
        if script.path.name != "reinforce.py":
            assert sum(durations) == 8 * (real_time // 10 * 10), durations
        if script.discrete:  # CartPole's track, one pixel high, is a dark row in each tile
            grid = np.asarray(film.convert("L"))[:80]  # the first row of tiles
            assert (grid < 230).mean(axis=1).max() > 0.9
    assert list((tmp_path / "run" / "videos").glob("*.mp4"))  # the evaluation's film stays


@needs_filming
def test_a_resumed_run_keeps_its_wandb_id(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    script = SCRIPTS[3]  # ppo_gae; the support code is the same in every script
    argv = flags("--num-envs 2 --num-steps 64 --checkpoint-every 128 --track")
    first = run(script, tmp_path, *argv, "--total-timesteps", "256")
    again = script.module.parse_args(["--resume", first["run_dir"], "--total-timesteps", "512"])
    script.module.train(again)
    runs = sorted(Path("wandb").glob("offline-run-*"))
    assert len(runs) == 2 and runs[0].name[-16:] == runs[1].name[-16:]  # the id ends the name
    ids = [[r.run.run_id for r in wandb_records(path) if r.HasField("run")] for path in runs]
    assert ids[0] == ids[1] == [again.wandb_id]


@needs_filming
@by_name(SCRIPTS)
def test_filming_does_not_change_what_the_agent_learns(script, tmp_path):
    argv = ("--env-id", script.env_id, *FILM_ARGV)
    plain = run(script, tmp_path / "plain", *argv)
    filmed = run(script, tmp_path / "filmed", *argv, "--capture-video")
    assert filmed["episode_returns"] == plain["episode_returns"] and plain["episode_returns"]
    for name, weights in plain["agent"].state_dict().items():
        assert torch.equal(filmed["agent"].state_dict()[name], weights), name
    assert len(tensorboard_gifs(filmed["run_dir"])) >= 2 and not tensorboard_gifs(plain["run_dir"])


@needs_filming
def test_a_renderer_that_fails_mid_run_warns_once_and_training_goes_on(
    tmp_path, monkeypatch, capsys
):
    script = SCRIPTS[3]
    plain = run(script, tmp_path / "plain", *FILM_ARGV)
    calls = []

    def render(self):
        calls.append(1)
        raise RuntimeError("the GL context is gone")

    monkeypatch.setattr(gym.wrappers.vector.TransformAction, "render", render, raising=False)
    filmed = run(script, tmp_path / "filmed", *FILM_ARGV, "--capture-video")
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert warnings == [
        f"{script.path.name}: warning: training goes on unfilmed: the GL context is gone"
    ]
    assert len(calls) == 1 and filmed["episode_returns"] == plain["episode_returns"]
    assert not tensorboard_gifs(filmed["run_dir"])


@by_name(SCRIPTS)
def test_track_without_wandb_is_one_line_naming_the_pip_command(
    script, tmp_path, capsys, monkeypatch
):
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb raises ImportError
    with pytest.raises(SystemExit) as exc:
        tiny(script, tmp_path, "--track")
    assert one_line_error(capsys, exc, script).endswith("--track needs wandb: pip install wandb")


@pytest.mark.parametrize(
    "argv, says",
    [
        (flags("--num-envs 65536 --num-steps 512"), "--num-envs x --num-steps is 33554432"),
        (("--run-dir", "/dev/null"), "cannot write TensorBoard's files to /dev/null"),
    ],
)
@by_name(SCRIPTS)
def test_values_argparse_takes_but_a_run_cannot_are_one_line(script, argv, says, capsys):
    """Found by the randomized test: a rollout beyond memory, a run directory that is a file."""
    with pytest.raises(SystemExit) as exc:
        script.module.train(script.module.parse_args(["--env-id", script.env_id, *argv]))
    assert says in one_line_error(capsys, exc, script)


@needs_filming
def test_track_with_no_wandb_account_is_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env["HOME"] = str(tmp_path)  # no ~/.netrc, no W&B settings
    argv = ["ppo.py", *flags("--num-envs 2 --num-steps 16 --total-timesteps 32 --track")]
    done = subprocess.run(
        [sys.executable, *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    lines = done.stderr.strip().splitlines()
    assert (
        done.returncode == 2 and len(lines) == 1 and lines[0].startswith("ppo.py: error: --track")
    )
    assert "WANDB_MODE=offline" in lines[0]


@pytest.mark.skipif(not installed("mujoco"), reason="needs MuJoCo")
@pytest.mark.parametrize("gl", ["osmesa", "glfw"])
def test_mujoco_that_cannot_render_is_one_line(gl, tmp_path):
    """Without a display, MuJoCo renders through MUJOCO_GL=egl or osmesa; one that fails to
    load, or glfw with no display, stops the run before training with one line."""
    env = dict(os.environ, MUJOCO_GL=gl, DISPLAY="")
    argv = ["ppo_continuous.py", "--env-id", "InvertedPendulum-v5", "--capture-video"]
    argv += [*flags("--num-envs 2 --num-steps 16 --total-timesteps 32"), "--run-dir", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    if done.returncode == 0:
        pytest.skip(f"MUJOCO_GL={gl} renders on this machine")
    last = done.stderr.strip().splitlines()[-1]  # after glfw's own warnings, if any
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert last.startswith("ppo_continuous.py: error: ")
    assert gl == "osmesa" or "MUJOCO_GL=egl" in last


def test_write_gif_tiles_four_envs_a_row(tmp_path):
    frames = np.zeros((3, 6, 10, 20, 3), np.uint8)  # 3 steps of 6 envs, 10 x 20 pixels each
    for env in range(6):
        frames[:, env] = 40 * env + 10  # each env its own grey
    frames[1] += 1  # the steps differ, so the GIF keeps 3 frames
    writer = type("Writer", (), {})()
    written = []
    writer.file_writer = type(
        "FileWriter", (), {"add_summary": lambda _, s, step: written.append((s, step))}
    )()
    # Pendulum renders 30 frames a second: a frame of every 2nd step shows 66.7 ms of its time
    run = type("Run", (), {"writer": writer, "fps": 30, "film_every": 2})()
    ppo.Run.write_gif(run, "videos/x", frames, 7)
    ((summary, step),) = written
    assert step == 7 and summary.value[0].tag == "videos/x"
    from io import BytesIO

    from PIL import Image

    gif = Image.open(BytesIO(summary.value[0].image.encoded_image_string))
    assert gif.size == (80, 20) and gif.n_frames == 3  # 2 rows of 4 tiles of 20 x 10
    assert gif.info["duration"] == 60  # Pillow writes the GIF's 10 ms units, rounded down
    grid = np.asarray(gif.convert("RGB"))
    tiles = [grid[r * 10 + 5, c * 20 + 10, 0] for r in range(2) for c in range(4)]
    expected = [10, 50, 90, 130, 170, 210, 0, 0]  # envs in order, 2 empty tiles black
    assert np.allclose(tiles, expected, atol=8), tiles  # the GIF's 256-colour palette


@by_name(SCRIPTS)
def test_a_film_keeps_a_frame_every_film_every_steps_and_thin_lines(script):
    """A filmed step shrinks each env's frame to 128 px wide or less by the mean of each n x n
    pixels (Pillow's reduce), so CartPole's one-pixel track stays: keeping every n-th pixel,
    as the films did, loses row 299 of 400 when n is 5. Only every film_every-th step is
    rendered at all."""
    frame = np.full((400, 600, 3), 255, np.uint8)
    frame[299] = 0  # a black line one pixel high, where CartPole draws its track
    frame[:, 0:5] = [200, 100, 0]  # and a band 5 pixels wide on the left
    rendered = []
    envs = type("Envs", (), {"num_envs": 2, "render": lambda _: rendered.append(1) or [frame] * 2})
    run = type("Run", (), {"envs": envs(), "frames": [], "film_every": 2, "ended_episodes": []})()
    for global_step in range(2, 10, 2):  # the steps 1, 2, 3 and 4 of 2 envs: 2 and 4 filmed
        script.module.Run.episodes(run, global_step, {})
    assert len(rendered) == 2 and len(run.frames) == 2
    tile = run.frames[0][1]  # the second env's frame, 600 / 5 = 120 px wide
    assert tile.shape == (80, 120, 3) and run.frames[0].shape == (2, 80, 120, 3)
    assert (tile[59, 1:] == 204).all()  # rows 295-299 to one: 4 white, 1 black
    assert (np.delete(tile[:, 1:], 59, axis=0) == 255).all()  # the rest stays white
    assert (tile[:, 0] == [200, 100, 0]).all()  # the band's 5 columns are one column
    run.frames = None  # not a filmed rollout: nothing rendered
    script.module.Run.episodes(run, 12, {})
    assert len(rendered) == 2


# Any flags, any values: each example runs parse_args and train in a process forked from one
# that imported the script once; it must exit 0, or 1 or 2 with one line saying what is wrong.
FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "100"))
INT_EDGES = ["0", "1", "-1", "2", "7", "64", "2147483647", "2147483648", "-2147483648"]
INT_EDGES += ["9223372036854775807", "18446744073709551616", str(10**30), "1e3", "3.5", "nan"]
INT_EDGES += ["", "x", "0x10", " 5", "1_000", "٣"]
FLOAT_EDGES = ["0", "-0.0", "1", "-1", "nan", "inf", "-inf", "1e-300", "5e-324", "1e308"]
FLOAT_EDGES += ["1.8e308", "0.5", "1e-8", "2", "100", "1e9", "1.1e9", "x", "", "1,5"]
ENV_EDGES = ["CartPole-v1", "Pendulum-v1", "FrozenLake-v1", "Blackjack-v1", "Acrobot-v1"]
ENV_EDGES += ["MountainCarContinuous-v0", "NoSuchEnv-v0", "", "nomodule:X-v0", "ALE/Pong-v5"]
ENV_EDGES += ["CarRacing-v3", "CliffWalking-v1", "Taxi-v3", "cartpole-v1", ":", "a:b:c"]
ENV_EDGES += ["gymnasium:CartPole-v1", "os:Foo-v0", "Hopper-v5", "ALE/Pong-v5"]
PATH_EDGES = ["", ".", "/nonexistent/dir", "runs/x", "/dev/null", "a/b/c", "w.pt", "/proc/x"]


def fuzz_child(path, deadline):
    """Runs as a process of its own: imports the script once, then for each argv (a JSON line
    on stdin) forks a child that runs parse_args and train in a new folder, and answers (exit
    status or None if still running at the deadline, then killed; what it printed; seconds).

    The child ends as a command-line run ends, through Python's exit handlers, which close its
    env processes. What it printed is read only once every process of its group has ended: those
    it started and left behind too, which this process adopts (Linux's child subreaper) and
    waits for, until the deadline, then kills. So no process still printing can change the
    answer, however fast or slow the machine."""
    import atexit
    import ctypes
    import importlib.util
    import json
    import os
    import signal
    import sys
    import tempfile
    import time
    import traceback

    for name in ("wandb", "PIL.Image", "moviepy", "pygame"):
        try:
            __import__(name)  # once here, not in every child
        except ImportError:
            pass
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.torch.optim.Adam([module.torch.zeros(1, requires_grad=True)])  # its lazy imports: 1 s
    libc = ctypes.CDLL(None, use_errno=True)
    if hasattr(libc, "prctl"):  # PR_SET_CHILD_SUBREAPER: orphans of the children come here
        libc.prctl(36, 1, 0, 0, 0)
    for line in sys.stdin:
        argv, folder = json.loads(line), tempfile.mkdtemp()
        out = os.path.join(folder, "out.txt")
        pid = os.fork()
        if pid == 0:
            os.setpgid(0, 0)  # a group of its own, env processes too
            os.chdir(folder)
            os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT), 1)
            os.dup2(1, 2)
            code = 0
            try:
                module.train(module.parse_args(argv))
            except SystemExit as stop:  # sys.exit("message") prints it, then exits 1
                code = 0 if stop.code is None else stop.code
                if isinstance(code, str):
                    print(code, file=sys.stderr)
                    code = 1
            except BaseException:
                traceback.print_exc()
                code = 99
            sys.stdout.flush()
            sys.stderr.flush()
            atexit._run_exitfuncs()  # as at a command-line run's end: multiprocessing's handler
            os._exit(code)  # ends env processes; the rest of a shutdown would take 0.6 s a child
        os.setpgid(pid, pid)  # here too, so that the group is there before waitpid looks
        start, code, killed = time.time(), None, False
        while True:  # the child, then whatever of its group outlives it
            try:
                done, status = os.waitpid(-pid, os.WNOHANG)
            except ChildProcessError:  # none left
                break
            if done == pid and not killed:
                code = os.waitstatus_to_exitcode(status)
            elif not done and time.time() - start > deadline and not killed:
                killed = True  # the child (its code stays None) or what it left running
                os.killpg(pid, signal.SIGKILL)
            elif not done:
                time.sleep(0.005)
        with open(out, errors="replace") as printed:
            print(json.dumps([code, printed.read(), time.time() - start]), flush=True)


def flag_strategies(module):
    """A hypothesis strategy of [flag] or [flag, value] for each of the script's flags."""
    from hypothesis import strategies as st

    parsers = []
    parse = argparse.ArgumentParser.parse_args

    def grab(self, *args, **kwargs):
        parsers.append(self)
        return parse(self, *args, **kwargs)

    with mock.patch.object(argparse.ArgumentParser, "parse_args", grab):
        module.parse_args([])
    strategies = []
    for action in parsers[0]._actions:
        names = action.option_strings
        if names == ["-h", "--help"]:
            continue
        if action.nargs == 0:  # store_true, or --x / --no-x
            strategies.append(st.sampled_from(names).map(lambda name: [name]))
            continue
        kind = getattr(action.type, "__name__", "str")
        if kind == "int":
            values = st.sampled_from(INT_EDGES) | st.integers(-100, 10_000).map(str)
        elif kind == "float":
            values = st.sampled_from(FLOAT_EDGES) | st.floats().map(repr)
        elif action.dest == "env_id":
            values = st.sampled_from(ENV_EDGES)
        elif action.dest in ("run_dir", "load_model", "resume"):
            values = st.sampled_from(PATH_EDGES)
        else:
            values = st.sampled_from(["x", "", "-", "a b", "é"])
        # argparse reads "-1" after a flag as a flag of its own: such values go as --flag=-1
        strategies.append(
            values.map(lambda v, n=names[0]: [f"{n}={v}"] if v[:1] == "-" else [n, v])
        )
    return strategies


@pytest.mark.skipif(not installed("hypothesis"), reason="needs hypothesis")
@by_name(SCRIPTS)
def test_any_flags_any_values_exit_0_1_or_2_in_one_line(script):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    source = inspect.getsource(fuzz_child) + f"\nfuzz_child({str(script.path)!r}, 2.0)\n"
    # TORCHDYNAMO_DISABLE: a drawn --compile runs eager, not 10 s of compiling past the deadline
    env = dict(os.environ, WANDB_MODE="disabled", PYTHONPATH=str(ROOT), TORCHDYNAMO_DISABLE="1")
    child = subprocess.Popen(
        [sys.executable, "-c", source],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    small = [
        "--total-timesteps",
        "64",
        "--num-envs",
        "2",
        "--num-steps",
        "8",
        "--eval-episodes",
        "1",
    ]
    odd = st.sampled_from([["--nope"], ["x"], ["--seed"], ["--env-id"], ["-h"]])
    drawn = st.lists(
        st.sampled_from(flag_strategies(script.module)).flatmap(lambda s: s) | odd, max_size=5
    )
    seen = {0: 0, 1: 0, 2: 0, None: 0}

    @settings(
        max_examples=FUZZ_EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(drawn.map(lambda parts: small + [word for part in parts for word in part]))
    def check(argv):
        if os.environ.get("FUZZ_VERBOSE"):
            print(argv, flush=True)
        child.stdin.write(json.dumps(argv) + "\n")
        child.stdin.flush()
        code, printed, seconds = json.loads(child.stdout.readline())
        if os.environ.get("FUZZ_VERBOSE"):
            print(f"{seconds:.2f}s exit {code}", flush=True)
        lines = [line for line in printed.splitlines() if line.strip()]
        assert "Traceback" not in printed and code in seen, (argv, code, printed[-3000:])
        if code in (1, 2):  # the last line says what is wrong
            assert "error" in lines[-1] and len(lines[-1]) < 600, (argv, printed[-3000:])
        seen[code] += 1

    try:
        check()
    finally:
        child.stdin.close()
        child.wait(timeout=60)
    print(f"{script.name}: exit status of {FUZZ_EXAMPLES} examples: {seen}")
    assert seen[0] >= FUZZ_EXAMPLES // 10 and seen[2] >= FUZZ_EXAMPLES // 10  # both kinds drawn


# ----------------------------------------------------------------------------------------------
# 17. The course's line world (envs/line_world.py) and the notebook
# ----------------------------------------------------------------------------------------------

LINE_WORLD = "envs.line_world:LineWorld-v0"  # gymnasium's "module:EnvId"


def line_world(target, position, dimensions=1):
    """LineWorld-v0 as gym.make gives it (20-step limit), with the target and agent put by hand."""
    from envs import line_world as _  # noqa: F401  (registers LineWorld-v0)

    env = gym.make("LineWorld-v0", dimensions=dimensions)
    env.reset(seed=0)
    env.unwrapped.target = np.array(target if dimensions > 1 else [target])
    env.unwrapped.position = np.array(position if dimensions > 1 else [position])
    return env


@pytest.mark.parametrize("dimensions", [1, 2])
@pytest.mark.parametrize("render_mode", [None, "rgb_array"])
def test_line_world_passes_gymnasiums_env_checker(dimensions, render_mode):
    import warnings

    from gymnasium.utils.env_checker import check_env

    from envs import line_world

    env = gym.make("LineWorld-v0", dimensions=dimensions, render_mode=render_mode)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the checker's complaints are warnings
        check_env(env.unwrapped)
        importlib.reload(line_world)  # importing it again must not register the id again
    assert env.spec.max_episode_steps == 20
    assert env.action_space == gym.spaces.Discrete(3 if dimensions == 1 else 5)
    assert env.observation_space == gym.spaces.Box(-1, 1, (2 * dimensions,), np.float32)
    if render_mode:
        env.reset(seed=0)
        frame = env.render()  # 24 pixels a cell: a row of 11, or 11 x 11
        assert frame.dtype == np.uint8 and frame.shape == (24 if dimensions == 1 else 264, 264, 3)


def test_line_world_steps_as_the_course_worked_by_hand():
    env = line_world(target=3, position=5)
    # action 0: -1, 1: stay, 2: +1; reward -|position - target| / 10 after the move
    steps = [env.step(a) for a in (0, 0, 1, 2, 0)]
    positions = [round((obs[1] + 1) / 2 * 10) for obs, *_ in steps]
    assert positions == [4, 3, 3, 4, 3]
    assert [r for _, r, *_ in steps] == pytest.approx([-0.1, 0.0, 0.0, -0.1, 0.0])
    assert [info["is_success"] for *_, info in steps] == [False, True, True, False, True]
    assert [info["distance"] for *_, info in steps] == [1, 0, 0, 1, 0]
    # observation [target, position] / 10 * 2 - 1: target 3 -> -0.4, position 3 -> -0.4
    assert steps[-1][0].dtype == np.float32
    np.testing.assert_allclose(steps[-1][0], [-0.4, -0.4], rtol=1e-6)
    # clipped at 0: -1 from 0 stays at 0, |0 - 3| / 10 = 0.3
    env = line_world(target=3, position=0)
    obs, reward, *_ = env.step(0)
    np.testing.assert_allclose(obs, [-0.4, -1.0], rtol=1e-6)
    assert reward == pytest.approx(-0.3)
    # clipped at 10 (the line has 11 cells; start and target are drawn in [0, 10) only)
    env = line_world(target=9, position=9)
    obs, reward, *_ = env.step(2)
    np.testing.assert_allclose(obs, [0.8, 1.0], rtol=1e-6)
    obs, reward, *_ = env.step(2)
    np.testing.assert_allclose(obs, [0.8, 1.0], rtol=1e-6)
    assert reward == pytest.approx(-0.1)


def test_line_world_ends_after_20_steps_truncated_with_is_success():
    for target, position, action, success in [(3, 3, 1, True), (3, 7, 0, False)]:
        env = line_world(target, position)
        ends = [env.step(action)[2:] for _ in range(20)]  # (terminated, truncated, info)
        assert [t or tr for t, tr, _ in ends] == [False] * 19 + [True]
        terminated, truncated, info = ends[-1]
        assert not terminated and truncated  # a time limit, bootstrapped by the scripts
        assert info["is_success"] is success  # stays on 3; or walks from 7 past 3 to 0
    # the greedy best: walk to the target and stay; success, and the return is -sum of distances
    env = line_world(target=3, position=7)
    total = sum(env.step(0 if i < 4 else 1)[1] for i in range(20))
    assert total == pytest.approx(-(0.3 + 0.2 + 0.1))


def test_line_world_same_seed_same_start_and_target():
    from envs import line_world as _  # noqa: F401

    env = gym.make("LineWorld-v0")
    firsts = [tuple(env.reset(seed=seed)[0]) for seed in range(300)]
    assert [tuple(env.reset(seed=seed)[0]) for seed in range(300)] == firsts
    cells = np.round((np.array(firsts) + 1) / 2 * 10, 6)
    assert np.all(cells == cells.round())  # integers ...
    assert set(cells[:, 0]) == set(cells[:, 1]) == set(range(10))  # ... drawn in [0, 10)
    assert len(set(firsts)) > 80  # of the 100 (target, start) pairs


def test_line_world_in_two_dimensions():
    env = line_world(target=(2, 7), position=(5, 5), dimensions=2)
    # 0 stay, 1 -x, 2 +x, 3 -y, 4 +y; reward minus the L1 distance / 10
    steps = [env.step(a) for a in (4, 1, 0, 3, 2)]
    cells = [tuple(np.round((obs[2:] + 1) / 2 * 10).astype(int)) for obs, *_ in steps]
    assert cells == [(5, 6), (4, 6), (4, 6), (4, 5), (5, 5)]
    assert [r for _, r, *_ in steps] == pytest.approx([-0.4, -0.3, -0.3, -0.4, -0.5])
    np.testing.assert_allclose(steps[0][0], [-0.6, 0.4, 0.0, 0.2], rtol=1e-6)
    env = line_world(target=(0, 0), position=(0, 10), dimensions=2)
    obs, reward, *_ = env.step(4)  # clipped at y = 10
    np.testing.assert_allclose(obs, [-1, -1, -1, 1], rtol=1e-6)
    assert reward == pytest.approx(-1.0)
    env = line_world(target=(4, 4), position=(4, 5), dimensions=2)
    *_, info = env.step(3)
    assert info["is_success"] and info["distance"] == 0


@by_name(DISCRETE)
def test_each_discrete_script_trains_on_the_line_world_from_the_command_line(script, tmp_path):
    argv = ["--env-id", LINE_WORLD, "--total-timesteps", "400", "--eval-episodes", "2"]
    done = cli([str(script.path), *argv, "--run-dir", str(tmp_path / "run")], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "evaluation over 2 episodes" in done.stdout and "Traceback" not in done.stderr


def test_line_world_benchmark_counts_greedy_successes():
    from benchmarks import line_world as bench

    class Greedy(torch.nn.Module):  # logits of (-1, stay, +1) from [target, position]
        def __init__(self, stay_on_target):
            super().__init__()
            self.stay_on_target = stay_on_target

        def actor(self, obs):
            gap = obs[..., 0] - obs[..., 1]  # (target - position) / 5
            move = torch.where(gap > 1e-6, 2, torch.where(gap < -1e-6, 0, 1))
            if not self.stay_on_target:
                move = torch.where(move == 1, 2, move)  # steps off the target, then back
            return torch.nn.functional.one_hot(move, 3).float()

    best, restless = Greedy(True), Greedy(False)
    assert bench.greedy_successes(vpg, best, 20) == [True] * 20
    policy = bench.greedy_policy(restless)
    assert policy[3] == ">>>><<<<<<<" and bench.kind(policy) == "never stays"
    assert bench.kind(bench.greedy_policy(best)) == "other"
    assert bench.kind(["." * 11] * 10) == "one action"
    # stepping off the target (+1, never clipped: targets are < 10) and back: on it after the
    # 20 steps exactly when the distance at the start was even
    env = gym.make("LineWorld-v0")
    even = []
    for episode in range(20):
        obs, _ = env.reset(seed=bench.EVAL_SEED + episode)
        target, start = np.round((obs + 1) / 2 * 10).astype(int)
        even.append((target - start) % 2 == 0)
    assert bench.greedy_successes(vpg, restless, 20) == even


NOTEBOOK = Path(__file__).parent / "ladder.ipynb"


def notebook_problems(nb):
    """Error outputs, and stderr that reports an error or a traceback, cell by cell."""
    problems = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                problems.append(f"cell {index}: {output.ename}: {output.evalue}")
            elif output.output_type == "stream" and output.name == "stderr":
                if re.search("traceback|error", output.text, re.IGNORECASE):
                    problems.append(f"cell {index}: stderr: {output.text.strip()[:300]}")
    return problems


def test_notebook_runs_top_to_bottom_in_quick_mode_without_errors(monkeypatch):
    """What CI runs: a fresh kernel of this interpreter, NOTEBOOK_QUICK=1, within 3 minutes."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from jupyter_client.manager import KernelManager

    class ThisInterpreter(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
            return KernelSpec(argv=argv, display_name="this", language="python")

    monkeypatch.setenv("NOTEBOOK_QUICK", "1")  # the kernel inherits the environment
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:  # start from nothing, whatever the committed file holds
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    km = KernelManager(kernel_spec_manager=ThisInterpreter(), kernel_name="python3")
    client = nbclient.NotebookClient(
        nb, km=km, timeout=180, resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()  # raises CellExecutionError on the first cell that fails
    assert notebook_problems(nb) == []
    assert "Quick mode" in nb.cells[1].outputs[0].text


def test_committed_notebook_was_one_full_run_top_to_bottom():
    """ladder.ipynb as committed: every code cell run once, in order, in one kernel (counts 1, 2,
    3, ...), not in quick mode, with no error output, and its pictures."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
    assert notebook_problems(nb) == []
    assert nb.cells[1].outputs[0].text.startswith("Full run.")
    outputs = [output for cell in code for output in cell.outputs]
    assert sum("image/png" in output.get("data", {}) for output in outputs) >= 3
    for cell in code:  # each output's count, where it has one, is its cell's
        for output in cell.outputs:
            assert output.get("execution_count", cell.execution_count) == cell.execution_count


# ----------------------------------------------------------------------------------------------
# 18. Exercises (exercises/): generated from the scripts, the grader, its planted mistakes
# ----------------------------------------------------------------------------------------------


def grade(rung, path, capsys, *argv):
    """exercises/check.py RUNG --file PATH [ARGV]: (exit status, its lines)."""
    try:
        code = grader.main([rung, "--file", str(path), *argv])
    except SystemExit as stop:
        code = stop.code
    out = capsys.readouterr()
    return code, (out.out + out.err).strip().splitlines()


def test_the_exercises_are_generated_from_the_scripts():
    assert exercise_maker.main(["--check"]) == 0  # else: python exercises/make.py
    for rung, blanks in exercise_cases.EXERCISES.items():
        text = (ROOT / "exercises" / f"{rung}.py").read_text()
        assert text.count("raise NotImplementedError(") == len(blanks), rung
        for name in blanks:  # the script's own signature and docstring
            fn = grader.find(exercise_cases.script(rung), name)
            head = inspect.getsource(fn).split('"""')[:2]
            assert '"""'.join(head) in text, name


@pytest.mark.parametrize("rung", list(exercise_cases.EXERCISES))
def test_the_scripts_pass_every_check_and_blanks_are_not_written_yet(rung, tmp_path, capsys):
    names = list(exercise_cases.EXERCISES[rung])
    functions = f"function{'s' * (len(names) > 1)} passed"
    code, lines = grade(rung, ROOT / f"{rung}.py", capsys)
    assert code == 0 and lines[-1] == f"{len(names)} of {len(names)} {functions}", lines
    for name, line in zip(names, lines[:-1], strict=True):  # hand-worked cases, then random
        counts = re.fullmatch(
            rf"✓ {re.escape(name)}: (\d+) cases passed \((\d+) worked by hand, "
            rf"(?:(1) the CartPole course's own test, )?(\d+) on random "
            rf"inputs against {rung}\.py's own\)",
            line,
        )
        assert counts and int(counts[2]) >= 1 and int(counts[4]) >= 3, line
        assert int(counts[1]) == int(counts[2]) + int(counts[3] or 0) + int(counts[4])
        assert bool(counts[3]) == (name in ("reinforce_loss", "vpg_loss", "ppo_loss")), line
    code, lines = grade(rung, ROOT / "exercises" / f"{rung}.py", capsys)
    assert code == 1 and lines == [f"· {name}: not written yet" for name in names] + [
        f"0 of {len(names)} {functions}"
    ]


def test_the_case_table_is_the_one_the_tests_use():
    # Section 1's numbers come from exercises/cases.py: the same objects, not copies.
    assert PPO_GRAD.tolist() == pytest.approx(exercise_cases.PPO_GRAD)
    assert GAE_CASES is exercise_cases.GAE_CASES and VL_CASES is exercise_cases.VL_CASES


# Wrong versions that students write, as source: each must fail its check, in a line that names
# the function and, where given, the mistake in words.
PLANTED = {
    "reinforce": [
        (
            "discounted_returns",
            "no reset at an episode's end",
            """
def discounted_returns(rewards, dones, gamma, last_value=None):
    returns = torch.zeros_like(rewards)
    g = torch.zeros_like(rewards[0]) if last_value is None else last_value
    for t in reversed(range(len(rewards))):
        g = rewards[t] + gamma * g
        returns[t] = g
    return returns
""",
        ),
        (
            "discounted_returns",
            "not reward-to-go",
            """
def discounted_returns(rewards, dones, gamma, last_value=None):
    total = sum(gamma**t * rewards[t] for t in range(len(rewards)))
    return torch.stack([total] * len(rewards))
""",
        ),
        (
            "discounted_returns",
            None,
            """
def discounted_returns(rewards, dones, gamma, last_value=None):
    return rewards.cumsum(0)
""",
        ),
        (
            "reinforce_loss",
            "the sign",
            """
def reinforce_loss(logprobs, returns):
    return (logprobs * returns).mean()
""",
        ),
        (
            "reinforce_loss",
            "a sum where the mean belongs",
            """
def reinforce_loss(logprobs, returns):
    return -(logprobs * returns).sum()
""",
        ),
        (
            "reinforce_loss",
            "raised",
            """
def reinforce_loss(logprobs, returns):
    return -(logprobs * returns[0, 0]).mean()
""",
        ),
    ],
    "vpg": [
        (
            "vpg_loss",
            "the advantage is not detached, so the policy loss moves the critic",
            """
def vpg_loss(logprobs, values, returns):
    advantages = returns - values
    return -(logprobs * advantages).mean(), (advantages**2).mean()
""",
        ),
        (
            "vpg_loss",
            "no baseline",
            """
def vpg_loss(logprobs, values, returns):
    return -(logprobs * returns).mean(), ((returns - values) ** 2).mean()
""",
        ),
        (
            "vpg_loss",
            "the advantage's sign",
            """
def vpg_loss(logprobs, values, returns):
    advantages = (values - returns).detach()
    return -(logprobs * advantages).mean(), ((returns - values) ** 2).mean()
""",
        ),
        (
            "vpg_loss",
            None,
            """
def vpg_loss(logprobs, values, returns):
    return float("nan"), float("nan")
""",
        ),
    ],
    "ppo": [
        (
            "ppo_loss",
            "max where the clip needs min",
            """
def ppo_loss(new_logprobs, old_logprobs, advantages, clip_coef):
    ratio = (new_logprobs - old_logprobs).exp()
    clipped = ratio.clamp(1 - clip_coef, 1 + clip_coef)
    return -torch.max(ratio * advantages, clipped * advantages).mean()
""",
        ),
        (
            "ppo_loss",
            "the ratio built from log-probabilities",
            """
def ppo_loss(new_logprobs, old_logprobs, advantages, clip_coef):
    ratio = new_logprobs - old_logprobs
    clipped = ratio.clamp(1 - clip_coef, 1 + clip_coef)
    return -torch.min(ratio * advantages, clipped * advantages).mean()
""",
        ),
        (
            "ppo_loss",
            "no clip",
            """
def ppo_loss(new_logprobs, old_logprobs, advantages, clip_coef):
    return -((new_logprobs - old_logprobs).exp() * advantages).mean()
""",
        ),
        (
            "value_loss",
            "not squared",
            """
def value_loss(values, returns):
    return (returns - values).abs().mean()
""",
        ),
        (
            "value_loss",
            "a sum where the mean belongs",
            """
def value_loss(values, returns):
    return ((returns - values) ** 2).sum()
""",
        ),
        (
            "value_loss",
            None,
            """
def value_loss(values, returns):
    return ((returns - values.detach()) ** 2).mean()
""",
        ),
    ],
    "ppo_gae": [
        (
            "compute_gae",
            "GAE crosses an episode's end",
            """
def compute_gae(rewards, values, next_values, terminated, episode_end, gamma, gae_lambda):
    advantages, a = torch.zeros_like(rewards), torch.zeros_like(rewards[0])
    for t in reversed(range(len(rewards))):
        delta = rewards[t] + gamma * (1 - terminated[t].float()) * next_values[t] - values[t]
        a = advantages[t] = delta + gamma * gae_lambda * a
    return advantages, advantages + values
""",
        ),
        (
            "compute_gae",
            "a truncation taken for a termination: no bootstrap",
            """
def compute_gae(rewards, values, next_values, terminated, episode_end, gamma, gae_lambda):
    advantages, a = torch.zeros_like(rewards), torch.zeros_like(rewards[0])
    for t in reversed(range(len(rewards))):
        not_ended = 1 - episode_end[t].float()
        delta = rewards[t] + gamma * not_ended * next_values[t] - values[t]
        a = advantages[t] = delta + gamma * gae_lambda * not_ended * a
    return advantages, advantages + values
""",
        ),
        (
            "compute_gae",
            "lambda left out",
            """
def compute_gae(rewards, values, next_values, terminated, episode_end, gamma, gae_lambda):
    advantages, a = torch.zeros_like(rewards), torch.zeros_like(rewards[0])
    for t in reversed(range(len(rewards))):
        delta = rewards[t] + gamma * (1 - terminated[t].float()) * next_values[t] - values[t]
        a = advantages[t] = delta + gamma * (1 - episode_end[t].float()) * a
    return advantages, advantages + values
""",
        ),
        (
            "compute_gae",
            "a termination bootstrapped",
            """
def compute_gae(rewards, values, next_values, terminated, episode_end, gamma, gae_lambda):
    advantages, a = torch.zeros_like(rewards), torch.zeros_like(rewards[0])
    for t in reversed(range(len(rewards))):
        delta = rewards[t] + gamma * next_values[t] - values[t]
        a = advantages[t] = delta + gamma * gae_lambda * (1 - episode_end[t].float()) * a
    return advantages, advantages + values
""",
        ),
        (
            "value_loss",
            "min where the clipped value loss needs max",
            """
def value_loss(values, returns, old_values=None, clip_coef=None):
    loss = (returns - values) ** 2
    if old_values is not None and clip_coef is not None:
        clipped = old_values + (values - old_values).clamp(-clip_coef, clip_coef)
        loss = torch.min(loss, (returns - clipped) ** 2)
    return loss.mean()
""",
        ),
        (
            "value_loss",
            "not around the old values",
            """
def value_loss(values, returns, old_values=None, clip_coef=None):
    loss = (returns - values) ** 2
    if old_values is not None and clip_coef is not None:
        loss = torch.max(loss, (returns - values.clamp(-clip_coef, clip_coef)) ** 2)
    return loss.mean()
""",
        ),
        (
            "value_loss",
            None,
            """
def value_loss(values, returns, old_values=None, clip_coef=None):
    return ((returns - values) ** 2).mean()
""",
        ),
    ],
    "ppo_continuous": [
        (
            "Agent.get_action_and_value",
            "not summed over the action dimensions",
            """
    def get_action_and_value(self, x, action=None):
        mean = self.actor_mean(x)
        dist = Normal(mean, self.actor_logstd.exp().expand_as(mean))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(x)
""",
        ),
        (
            "Agent.get_action_and_value",
            None,
            """
    def get_action_and_value(self, x, action=None):
        mean = self.actor_mean(x)
        dist = Normal(mean, self.actor_logstd.expand_as(mean).abs() + 1e-6)
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.critic(x)
""",
        ),
        (
            "Agent.get_action_and_value",
            None,
            """
    def get_action_and_value(self, x, action=None):
        mean = self.actor_mean(x)
        dist = Normal(mean, self.actor_logstd.exp().expand_as(mean))
        action = dist.sample()
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.critic(x)
""",
        ),
        (
            "RunningNorm.update",
            "earlier batches forgotten",
            """
    def update(self, x):
        self.mean, self.var = x.mean(0), x.var(0, correction=0)
        self.count = self.count + x.shape[0]
""",
        ),
        (
            "RunningNorm.update",
            "the spread between the batch means left out",
            """
    def update(self, x):
        total = self.count + x.shape[0]
        self.mean = (self.mean * self.count + x.mean(0) * x.shape[0]) / total
        self.var = (self.var * self.count + x.var(0, correction=0) * x.shape[0]) / total
        self.count = total
""",
        ),
        (
            "RunningNorm.update",
            None,
            """
    def update(self, x):
        self.mean += x.mean(0)
""",
        ),
        (
            "adapted_lr",
            "raised where the policy moved too far",
            """
def adapted_lr(lr, kl, target_kl, max_lr):
    if kl > 2 * target_kl:
        return min(lr * 1.5, max_lr)
    if kl < target_kl / 2:
        return max(lr / 1.5, 1e-5)
    return lr
""",
        ),
        (
            "adapted_lr",
            "not kept in [1e-5, max_lr]",
            """
def adapted_lr(lr, kl, target_kl, max_lr):
    if kl > 2 * target_kl:
        return lr / 1.5
    if kl < target_kl / 2:
        return lr * 1.5
    return lr
""",
        ),
        (
            "adapted_lr",
            None,
            """
def adapted_lr(lr, kl, target_kl, max_lr):
    return "0.0003"
""",
        ),
    ],
}

# The mistakes that fixed cases could not see, in train()'s contract: flags of its dtype, a
# gradient cut from the actor or the critic, an input normalized again, a factor near a bound.
# words "": the line must name none of the known mistakes (none explains every case).
PLANTED_MORE = {
    "reinforce": [
        (
            "discounted_returns",
            "Subtraction, the `-` operator, with a bool tensor",  # 1 - done on bool dones
            """
def discounted_returns(rewards, dones, gamma, last_value=None):
    returns, g = torch.zeros_like(rewards), torch.zeros_like(rewards[0])
    if last_value is not None:
        g = last_value
    for t in reversed(range(len(rewards))):
        g = rewards[t] + gamma * (1 - dones[t]) * g
        returns[t] = g
    return returns
""",
        ),
        (
            "discounted_returns",
            "last_value ignored",
            """
def discounted_returns(rewards, dones, gamma, last_value=None):
    returns, g = torch.zeros_like(rewards), torch.zeros_like(rewards[0])
    for t in reversed(range(len(rewards))):
        g = rewards[t] + gamma * (~dones[t]) * g
        returns[t] = g
    return returns
""",
        ),
        (
            "discounted_returns",
            "reset one step early",
            """
def discounted_returns(rewards, dones, gamma, last_value=None):
    returns = torch.zeros_like(rewards)
    g = torch.zeros_like(rewards[0]) if last_value is None else last_value
    for t in reversed(range(len(rewards))):
        g = (rewards[t] + gamma * g) * (~dones[t])
        returns[t] = g
    return returns
""",
        ),
        (
            "discounted_returns",
            "gamma multiplies r_t too",
            """
def discounted_returns(rewards, dones, gamma, last_value=None):
    returns = torch.zeros_like(rewards)
    g = torch.zeros_like(rewards[0]) if last_value is None else last_value
    for t in reversed(range(len(rewards))):
        g = gamma * (rewards[t] + (~dones[t]) * g)
        returns[t] = g
    return returns
""",
        ),
        (
            "reinforce_loss",
            "",  # twice the mean is no sum: B is 5, 16 and 33 in the random cases
            """
def reinforce_loss(logprobs, returns):
    return -2 * (logprobs * returns).mean()
""",
        ),
        (
            "reinforce_loss",
            "the log-probabilities detached: no gradient reaches the policy",
            """
def reinforce_loss(logprobs, returns):
    return -(logprobs.detach() * returns).mean()
""",
        ),
        (
            "reinforce_loss",
            "probabilities where log-probabilities belong",
            """
def reinforce_loss(logprobs, returns):
    return -(logprobs.exp() * returns).mean()
""",
        ),
    ],
    "vpg": [
        (
            "vpg_loss",
            "the values detached in the value loss: the critic never learns",
            """
def vpg_loss(logprobs, values, returns):
    advantages = (returns - values).detach()
    return -(logprobs * advantages).mean(), ((returns - values.detach()) ** 2).mean()
""",
        ),
        (
            "vpg_loss",
            "the value loss not squared",
            """
def vpg_loss(logprobs, values, returns):
    advantages = (returns - values).detach()
    return -(logprobs * advantages).mean(), (returns - values).abs().mean()
""",
        ),
        (
            "vpg_loss",
            None,  # the value loss a sum
            """
def vpg_loss(logprobs, values, returns):
    advantages = (returns - values).detach()
    return -(logprobs * advantages).mean(), ((returns - values) ** 2).sum()
""",
        ),
    ],
    "ppo": [
        (
            "ppo_loss",
            "the min taken over the two ratios, then times A",  # not "no clip"
            """
def ppo_loss(new_logprobs, old_logprobs, advantages, clip_coef):
    ratio = (new_logprobs - old_logprobs).exp()
    clipped = ratio.clamp(1 - clip_coef, 1 + clip_coef)
    return -(torch.min(ratio, clipped) * advantages).mean()
""",
        ),
        (
            "ppo_loss",
            "returned a loss with no gradient",
            """
def ppo_loss(new_logprobs, old_logprobs, advantages, clip_coef):
    ratio = (new_logprobs - old_logprobs).exp().detach()
    clipped = ratio.clamp(1 - clip_coef, 1 + clip_coef)
    return -torch.min(ratio * advantages, clipped * advantages).mean()
""",
        ),
        (
            "ppo_loss",
            None,  # clipped to [-eps, eps], not around 1
            """
def ppo_loss(new_logprobs, old_logprobs, advantages, clip_coef):
    ratio = (new_logprobs - old_logprobs).exp()
    clipped = ratio.clamp(-clip_coef, clip_coef)
    return -torch.min(ratio * advantages, clipped * advantages).mean()
""",
        ),
        (
            "ppo_loss",
            "the sign",
            """
def ppo_loss(new_logprobs, old_logprobs, advantages, clip_coef):
    ratio = (new_logprobs - old_logprobs).exp()
    clipped = ratio.clamp(1 - clip_coef, 1 + clip_coef)
    return torch.min(ratio * advantages, clipped * advantages).mean()
""",
        ),
        (
            "value_loss",
            "half the mean squared error",
            """
def value_loss(values, returns):
    return 0.5 * ((returns - values) ** 2).mean()
""",
        ),
    ],
    "ppo_gae": [
        (
            "compute_gae",
            "operator.invert",  # ~flag, right for bool, raises on train()'s float32 flags
            """
def compute_gae(rewards, values, next_values, terminated, episode_end, gamma, gae_lambda):
    advantages, a = torch.zeros_like(rewards), torch.zeros_like(rewards[0])
    for t in reversed(range(len(rewards))):
        delta = rewards[t] + gamma * ~terminated[t] * next_values[t] - values[t]
        a = advantages[t] = delta + gamma * gae_lambda * ~episode_end[t] * a
    return advantages, advantages + values
""",
        ),
        (
            "compute_gae",
            "returns = advantages",
            """
def compute_gae(rewards, values, next_values, terminated, episode_end, gamma, gae_lambda):
    advantages, a = torch.zeros_like(rewards), torch.zeros_like(rewards[0])
    for t in reversed(range(len(rewards))):
        delta = rewards[t] + gamma * (1 - terminated[t]) * next_values[t] - values[t]
        a = advantages[t] = delta + gamma * gae_lambda * (1 - episode_end[t]) * a
    return advantages, advantages
""",
        ),
        (
            "compute_gae",
            None,  # V(s_{t+1}) from values[t + 1], next_values only after the last step
            """
def compute_gae(rewards, values, next_values, terminated, episode_end, gamma, gae_lambda):
    advantages, a = torch.zeros_like(rewards), torch.zeros_like(rewards[0])
    for t in reversed(range(len(rewards))):
        v_next = next_values[t] if t == len(rewards) - 1 else values[t + 1]
        delta = rewards[t] + gamma * (1 - terminated[t]) * v_next - values[t]
        a = advantages[t] = delta + gamma * gae_lambda * (1 - episode_end[t]) * a
    return advantages, advantages + values
""",
        ),
        (
            "value_loss",
            None,  # the clipped term alone, no max
            """
def value_loss(values, returns, old_values=None, clip_coef=None):
    if old_values is not None and clip_coef is not None:
        values = old_values + (values - old_values).clamp(-clip_coef, clip_coef)
    return ((returns - values) ** 2).mean()
""",
        ),
        (
            "value_loss",
            "a sum where the mean belongs",
            """
def value_loss(values, returns, old_values=None, clip_coef=None):
    loss = (returns - values) ** 2
    if old_values is not None and clip_coef is not None:
        clipped = old_values + (values - old_values).clamp(-clip_coef, clip_coef)
        loss = torch.max(loss, (returns - clipped) ** 2)
    return loss.sum()
""",
        ),
    ],
    "ppo_continuous": [
        (
            "Agent.get_action_and_value",
            "the mean detached: no gradient reaches the actor's layers",
            """
    def get_action_and_value(self, x, action=None):
        mean = self.actor_mean(x).detach()
        dist = Normal(mean, self.actor_logstd.exp().expand_as(mean))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.critic(x)
""",
        ),
        (
            "Agent.get_action_and_value",
            None,  # all of it under no_grad: nothing reaches the actor, nor the critic
            """
    def get_action_and_value(self, x, action=None):
        with torch.no_grad():
            mean = self.actor_mean(x)
            dist = Normal(mean, self.actor_logstd.exp().expand_as(mean))
            if action is None:
                action = dist.sample()
            return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.critic(x)
""",
        ),
        (
            "Agent.get_action_and_value",
            "x normalized a second time",
            """
    def get_action_and_value(self, x, action=None):
        x = self.obs_norm(x)
        mean = self.actor_mean(x)
        dist = Normal(mean, self.actor_logstd.exp().expand_as(mean))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.critic(x)
""",
        ),
        (
            "Agent.get_action_and_value",
            None,  # V(s) not from the critic of x: of the normalized-again x
            """
    def get_action_and_value(self, x, action=None):
        mean = self.actor_mean(x)
        dist = Normal(mean, self.actor_logstd.exp().expand_as(mean))
        if action is None:
            action = dist.sample()
        value = self.critic(self.obs_norm(x))
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), value
""",
        ),
        (
            "Agent.get_action_and_value",
            "sigma detached: no gradient reaches actor_logstd",
            """
    def get_action_and_value(self, x, action=None):
        mean = self.actor_mean(x)
        dist = Normal(mean, self.actor_logstd.detach().exp().expand_as(mean))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.critic(x)
""",
        ),
        (
            "Agent.get_action_and_value",
            "V(x) detached",
            """
    def get_action_and_value(self, x, action=None):
        mean = self.actor_mean(x)
        dist = Normal(mean, self.actor_logstd.exp().expand_as(mean))
        if action is None:
            action = dist.sample()
        value = self.get_value(x).detach()
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), value
""",
        ),
        (
            "Agent.get_action_and_value",
            None,  # the mean of a fixed observation: the policy ignores x
            """
    def get_action_and_value(self, x, action=None):
        mean = self.actor_mean(torch.zeros_like(x))
        dist = Normal(mean, self.actor_logstd.exp().expand_as(mean))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.critic(x)
""",
        ),
        (
            "RunningNorm.update",
            "Bessel's correction",
            """
    def update(self, x):
        batch_mean, batch_var, batch_count = x.mean(0), x.var(0), x.shape[0]
        delta, total = batch_mean - self.mean, self.count + batch_count
        self.mean = self.mean + delta * batch_count / total
        moments = self.var * self.count + batch_var * batch_count
        self.var = (moments + delta**2 * self.count * batch_count / total) / total
        self.count = total
""",
        ),
        (
            "RunningNorm.update",
            "float64",  # the buffers left in float64: the networks' float32 layers refuse them
            """
    def update(self, x):
        x = x.double()
        batch_mean, batch_var, batch_count = x.mean(0), x.var(0, correction=0), x.shape[0]
        mean, var, count = self.mean.double(), self.var.double(), self.count.double()
        delta, total = batch_mean - mean, count + batch_count
        self.mean = mean + delta * batch_count / total
        moments = var * count + batch_var * batch_count + delta**2 * count * batch_count / total
        self.var = moments / total
        self.count = total
""",
        ),
        (
            "RunningNorm.update",
            None,  # the count never grows
            """
    def update(self, x):
        batch_mean, batch_var, batch_count = x.mean(0), x.var(0, correction=0), x.shape[0]
        delta, total = batch_mean - self.mean, self.count + batch_count
        self.mean = self.mean + delta * batch_count / total
        moments = self.var * self.count + batch_var * batch_count
        self.var = (moments + delta**2 * self.count * batch_count / total) / total
""",
        ),
        (
            "adapted_lr",
            "",  # a factor of 2, bounds kept: wrong near each bound, and no known mistake
            """
def adapted_lr(lr, kl, target_kl, max_lr):
    if kl > 2 * target_kl:
        return max(lr / 2, 1e-5)
    if kl < target_kl / 2:
        return min(lr * 2, max_lr)
    return lr
""",
        ),
        (
            "adapted_lr",
            None,  # the issue's: a wrong factor and no floor
            """
def adapted_lr(lr, kl, target_kl, max_lr):
    if kl > 2 * target_kl:
        return lr / 1.4
    if kl < target_kl / 2:
        return min(lr * 1.5, max_lr)
    return lr
""",
        ),
        (
            "adapted_lr",
            "no floor: it falls below 1e-5",
            """
def adapted_lr(lr, kl, target_kl, max_lr):
    if kl > 2 * target_kl:
        return max(lr / 1.5, 1e-6)
    if kl < target_kl / 2:
        return min(lr * 1.5, max_lr)
    return lr
""",
        ),
        (
            "adapted_lr",
            None,  # the band's edges excluded: kl = 2 target_kl lowers the step size
            """
def adapted_lr(lr, kl, target_kl, max_lr):
    if kl >= 2 * target_kl:
        return max(lr / 1.5, 1e-5)
    if kl <= target_kl / 2:
        return min(lr * 1.5, max_lr)
    return lr
""",
        ),
    ],
}
PLANTED = {rung: PLANTED[rung] + PLANTED_MORE[rung] for rung in PLANTED}


SOLVED = {}  # rung: its exercise file, solved (make.py runs ruff: once a rung)


def with_function(rung, name, source):
    """The script's exercise file, solved, with `name` replaced by `source` (a def)."""
    import ast as syntax

    if rung not in SOLVED:
        SOLVED[rung] = exercise_maker.exercise(rung, solved=True)
    text = SOLVED[rung]
    tree, lines = syntax.parse(text), text.splitlines()
    top, _, method = name.partition(".")
    (node,) = [n for n in tree.body if getattr(n, "name", None) == top]
    if method:
        (node,) = [n for n in node.body if getattr(n, "name", None) == method]
    lines[node.lineno - 1 : node.end_lineno] = source.strip("\n").splitlines()
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "rung, name, words, source",
    [(rung, *planted) for rung, items in PLANTED.items() for planted in items],
    ids=lambda value: value if isinstance(value, str) and len(value) < 30 else "",
)
def test_the_grader_catches_planted_mistakes(rung, name, words, source, tmp_path, capsys):
    path = tmp_path / f"{rung}.py"
    path.write_text(with_function(rung, name, source))
    code, lines = grade(rung, path, capsys)
    assert code == 1, lines
    (failed,) = [line for line in lines[:-1] if not line.startswith("✓")]  # the others pass
    assert failed.startswith(f"✗ {name}: "), lines
    if words:
        assert words in failed, failed
    elif words == "":  # no known mistake gives the student's answer on every case: none named
        assert not any(w in failed for w, _ in exercise_cases.MISTAKES[name]), failed
    n = len(exercise_cases.EXERCISES[rung])
    assert lines[-1] == f"{n - 1} of {n} function{'s' * (n > 1)} passed", lines


def test_planted_mistakes_cover_every_exercise_three_times():
    for rung, blanks in exercise_cases.EXERCISES.items():
        for name in blanks:
            assert sum(n == name for n, _, _ in PLANTED[rung]) >= 3, (rung, name)
    assert sum(len(planted) for planted in PLANTED.values()) >= 40


# Right answers in other forms than the scripts': each must pass every case. (rung, name, source)
RIGHT_FORMS = [
    (
        "reinforce",
        "discounted_returns",  # ~done on train()'s bool dones
        """
def discounted_returns(rewards, dones, gamma, last_value=None):
    returns, g = [], torch.zeros_like(rewards[0]) if last_value is None else last_value
    for t in reversed(range(len(rewards))):
        g = rewards[t] + gamma * ~dones[t] * g
        returns.append(g)
    return torch.stack(returns[::-1])
""",
    ),
    (
        "reinforce",
        "discounted_returns",  # torch.where, in float64
        """
def discounted_returns(rewards, dones, gamma, last_value=None):
    r = rewards.double()
    returns = torch.zeros_like(r)
    g = torch.zeros_like(r[0]) if last_value is None else last_value.double()
    for t in range(len(r) - 1, -1, -1):
        g = r[t] + gamma * torch.where(dones[t], torch.zeros_like(g), g)
        returns[t] = g
    return returns
""",
    ),
    (
        "reinforce",
        "discounted_returns",  # 1 - done, once the bool flags are floats
        """
def discounted_returns(rewards, dones, gamma, last_value=None):
    not_done = 1 - dones.float()
    returns = rewards.clone()
    g = 0.0 if last_value is None else last_value
    for t in reversed(range(rewards.shape[0])):
        returns[t] = g = rewards[t] + gamma * not_done[t] * g
    return returns
""",
    ),
    (
        "reinforce",
        "reinforce_loss",  # float64, and a dot product
        """
def reinforce_loss(logprobs, returns):
    return -torch.dot(logprobs.double(), returns.double()) / logprobs.numel()
""",
    ),
    (
        "vpg",
        "vpg_loss",  # F.mse_loss, the detach on values alone
        """
def vpg_loss(logprobs, values, returns):
    import torch.nn.functional as F

    return -(logprobs * (returns - values.detach())).mean(), F.mse_loss(values, returns)
""",
    ),
    (
        "ppo",
        "ppo_loss",  # torch.where on the advantage's sign
        """
def ppo_loss(new_logprobs, old_logprobs, advantages, clip_coef):
    ratio = torch.exp(new_logprobs - old_logprobs)
    upper = torch.minimum(ratio, torch.tensor(1 + clip_coef))
    lower = torch.maximum(ratio, torch.tensor(1 - clip_coef))
    return -torch.where(advantages >= 0, upper * advantages, lower * advantages).mean()
""",
    ),
    (
        "ppo",
        "value_loss",  # float64
        """
def value_loss(values, returns):
    return (values.double() - returns.double()).square().mean()
""",
    ),
    (
        "ppo_gae",
        "compute_gae",  # 1 - flag on train()'s float32 flags, the deltas at once
        """
def compute_gae(rewards, values, next_values, terminated, episode_end, gamma, gae_lambda):
    deltas = rewards + gamma * (1 - terminated) * next_values - values
    advantages = torch.zeros_like(deltas)
    running = torch.zeros_like(deltas[0])
    for t in reversed(range(len(deltas))):
        running = deltas[t] + gamma * gae_lambda * (1 - episode_end[t]) * running
        advantages[t] = running
    return advantages, advantages + values
""",
    ),
    (
        "ppo_gae",
        "compute_gae",  # torch.where on the flags, in float64
        """
def compute_gae(rewards, values, next_values, terminated, episode_end, gamma, gae_lambda):
    r, v, nv = rewards.double(), values.double(), next_values.double()
    a, advantages = torch.zeros_like(r[0]), []
    for t in reversed(range(len(r))):
        bootstrap = torch.where(terminated[t] > 0, torch.zeros_like(nv[t]), nv[t])
        delta = r[t] + gamma * bootstrap - v[t]
        a = delta + gamma * gae_lambda * torch.where(episode_end[t] > 0, torch.zeros_like(a), a)
        advantages.insert(0, a)
    advantages = torch.stack(advantages).float()
    return advantages, advantages + values
""",
    ),
    (
        "ppo_gae",
        "value_loss",  # torch.maximum, clamp's tensor bounds
        """
def value_loss(values, returns, old_values=None, clip_coef=None):
    unclipped = (values - returns) ** 2
    if old_values is None or clip_coef is None:
        return unclipped.mean()
    clipped = torch.clamp(values, old_values - clip_coef, old_values + clip_coef)
    return torch.maximum(unclipped, (clipped - returns) ** 2).mean()
""",
    ),
    (
        "ppo_continuous",
        "Agent.get_action_and_value",  # Independent(Normal), which sums over the last dim
        """
    def get_action_and_value(self, x, action=None):
        from torch.distributions import Independent

        dist = Independent(Normal(self.actor_mean(x), torch.exp(self.actor_logstd)), 1)
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.get_value(x)
""",
    ),
    (
        "ppo_continuous",
        "Agent.get_action_and_value",  # the Gaussian by hand: sample, log-density, entropy
        """
    def get_action_and_value(self, x, action=None):
        import math

        mean, log_std = self.actor_mean(x), self.actor_logstd
        if action is None:
            with torch.no_grad():
                action = mean + log_std.exp() * torch.randn_like(mean)
        z = (action - mean) / log_std.exp()
        logprob = (-0.5 * z**2 - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
        entropy = (0.5 + 0.5 * math.log(2 * math.pi) + log_std).sum().expand(len(x))
        return action, logprob, entropy, self.critic(x)
""",
    ),
    (
        "ppo_continuous",
        "RunningNorm.update",  # float64 inside, float32 kept, in place
        """
    def update(self, x):
        x, n = x.double(), x.shape[0]
        mean, var, count = self.mean.double(), self.var.double(), self.count.double()
        batch_mean, batch_var = x.mean(0), ((x - x.mean(0)) ** 2).mean(0)
        total = count + n
        new_mean = mean + (batch_mean - mean) * n / total
        m2 = var * count + batch_var * n + (batch_mean - mean) ** 2 * count * n / total
        self.mean.copy_(new_mean)
        self.var.copy_(m2 / total)
        self.count.copy_(total)
""",
    ),
    (
        "ppo_continuous",
        "adapted_lr",  # one factor, then one clip
        """
def adapted_lr(lr, kl, target_kl, max_lr):
    factor = 1 / 1.5 if kl > 2 * target_kl else 1.5 if kl < target_kl / 2 else 1.0
    return lr if factor == 1.0 else float(min(max(lr * factor, 1e-5), max_lr))
""",
    ),
]


@pytest.mark.parametrize(
    "rung, name, source",
    RIGHT_FORMS,
    ids=[f"{rung}-{name}-{i}" for i, (rung, name, _) in enumerate(RIGHT_FORMS)],
)
def test_right_answers_in_other_forms_pass(rung, name, source, tmp_path, capsys):
    path = tmp_path / f"{rung}.py"
    path.write_text(with_function(rung, name, source))
    code, lines = grade(rung, path, capsys)
    assert code == 0 and all(line.startswith("✓ ") for line in lines[:-1]), lines


def test_right_forms_cover_every_exercise():
    covered = {(rung, name) for rung, name, _ in RIGHT_FORMS}
    exercises = {(rung, name) for rung, names in exercise_cases.EXERCISES.items() for name in names}
    assert covered == exercises and len(RIGHT_FORMS) >= 12


# What train() passes each exercise, as its docstring states: a check per function, which a
# right answer may rely on. Every case of the grader keeps to it.
def _is(x, dtype, dims, grad=None):
    ok = isinstance(x, torch.Tensor) and x.dtype == dtype and x.dim() == dims
    return ok and (grad is None or x.requires_grad == grad)


def _losses(*tensors, grads):
    first = tensors[0]
    return all(
        _is(x, torch.float32, 1, grad) and x.shape == first.shape
        for x, grad in zip(tensors, grads, strict=True)
    )


CONTRACTS = {
    ("reinforce", "discounted_returns"): lambda rewards, dones, gamma, last_value=None: (
        _is(rewards, torch.float32, 2)
        and _is(dones, torch.bool, 2)
        and dones.shape == rewards.shape
        and type(gamma) is float
        and (last_value is None or _is(last_value, torch.float32, 1))
        and (last_value is None or last_value.shape == rewards.shape[1:])
    ),
    ("reinforce", "reinforce_loss"): lambda logprobs, returns: _losses(
        logprobs, returns, grads=(True, False)
    ),
    ("vpg", "vpg_loss"): lambda logprobs, values, returns: _losses(
        logprobs, values, returns, grads=(True, True, False)
    ),
    ("ppo", "ppo_loss"): lambda new, old, advantages, clip_coef: (
        _losses(new, old, advantages, grads=(True, False, False)) and type(clip_coef) is float
    ),
    ("ppo", "value_loss"): lambda values, returns: _losses(values, returns, grads=(True, False)),
    ("ppo_gae", "compute_gae"): lambda *tensors_gamma_lambda: (
        all(_is(x, torch.float32, 2, False) for x in tensors_gamma_lambda[:5])
        and len({x.shape for x in tensors_gamma_lambda[:5]}) == 1
        and all(((x == 0) | (x == 1)).all() for x in tensors_gamma_lambda[3:5])
        and all(type(x) is float for x in tensors_gamma_lambda[5:])
    ),
    ("ppo_gae", "value_loss"): lambda values, returns, old_values=None, clip_coef=None: (
        _losses(values, returns, grads=(True, False))
        and (old_values is None or _losses(values, old_values, grads=(True, False)))
        and type(clip_coef) is float
    ),
    ("ppo_continuous", "Agent.get_action_and_value"): lambda self, x, action=None: (
        _is(x, torch.float32, 2)
        and (action is None or (_is(action, torch.float32, 2) and len(action) == len(x)))
    ),
    ("ppo_continuous", "RunningNorm.update"): lambda self, x: (
        _is(x, torch.float32, 2) and x.shape[1:] == self.mean.shape
    ),
    ("ppo_continuous", "adapted_lr"): lambda *numbers: all(type(x) is float for x in numbers),
}


def test_every_case_keeps_to_the_contract_the_docstring_states():
    """A right answer that relies on train()'s contract passes: each case's inputs are checked
    against it on the way in to the script's own function."""
    for (rung, name), keeps in CONTRACTS.items():
        own, broken = grader.find(exercise_cases.script(rung), name), []

        def strict(*args, own=own, keeps=keeps, broken=broken, **kwargs):
            if not keeps(*args, **kwargs):
                broken.append(args)
            return own(*args, **kwargs)

        passed, line = grader.check(rung, name, strict)
        assert passed and broken == [], (line, broken[:1])


@pytest.mark.parametrize(
    "loop",
    [
        "    while True:\n        pass\n",
        "    while True:\n        try:\n            x = 0\n"
        "        except Exception:\n            pass\n",
    ],
    ids=["a loop", "a loop that catches Exception"],
)
def test_a_function_that_never_returns_fails_its_time_limit_and_the_grader_goes_on(
    loop, tmp_path, capsys
):
    source = "def discounted_returns(rewards, dones, gamma, last_value=None):\n" + loop
    path = tmp_path / "reinforce.py"
    path.write_text(with_function("reinforce", "discounted_returns", source))
    started = time.monotonic()
    code, lines = grade("reinforce", path, capsys, "--time-limit", "0.5")
    assert time.monotonic() - started < 10 and code == 1, lines
    assert lines[0] == (
        "✗ discounted_returns: one env, (T, N) = (3, 1): still running after 0.5 s, the time "
        "limit (a loop that never ends?)"
    )
    assert lines[1].startswith("✓ reinforce_loss: ") and lines[2] == "1 of 2 functions passed"


def test_the_graders_help_says_the_time_limit(capsys):
    with pytest.raises(SystemExit) as exc:
        grader.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert exc.value.code == 0 and "--time-limit SECONDS" in text
    assert f"Each function gets {grader.TIME_LIMIT:g} s for all its cases" in text
    assert 1 <= grader.TIME_LIMIT <= 10 and "--folder DIR" in text and "--csv PATH" in text


def test_a_teacher_grades_a_folder_in_one_command_a_row_per_student(tmp_path):
    """Three students: one right, one wrong (min in the clipped value loss), one blank; each
    graded in a process of their own."""
    import csv

    folder = tmp_path / "handed_in"
    solved = exercise_maker.exercise("ppo_gae", solved=True)
    for student, text in [
        ("ada", solved),
        ("bob", solved.replace("loss = torch.max(loss,", "loss = torch.min(loss,")),
    ]:
        (folder / student).mkdir(parents=True)
        (folder / student / "ppo_gae.py").write_text(text)
    shutil.copy(ROOT / "exercises" / "ppo_gae.py", folder / "cy.py")  # a file, not a folder
    table = tmp_path / "grades.csv"
    argv = ["ppo_gae", "--folder", str(folder), "--csv", str(table)]
    done = cli([str(ROOT / "exercises" / "check.py"), *argv], tmp_path)
    assert done.returncode == 1 and done.stderr == "", done.stderr
    assert done.stdout.splitlines() == [
        "student  passed      not passed",
        "ada      2 of 2",
        "bob      1 of 2      ✗ value_loss",
        "cy       0 of 2      · compute_gae, · value_loss",
    ]
    rows = list(csv.reader(table.open()))
    assert rows[0] == ["student", "passed", "functions", "compute_gae", "value_loss"]
    assert [row[:3] for row in rows[1:]] == [["ada", "2", "2"], ["bob", "1", "2"], ["cy", "0", "2"]]
    assert rows[2][4].startswith("✗ value_loss: clipped: ")
    assert rows[2][4].endswith(": min where the clipped value loss needs max")
    assert rows[3][3:] == ["· compute_gae: not written yet", "· value_loss: not written yet"]


@pytest.mark.parametrize(
    "text, says",
    [("def broken(:\n", "SyntaxError"), ("import no_such_module\n", "ModuleNotFoundError")],
)
def test_a_file_the_grader_cannot_read_is_one_line_and_status_2(text, says, tmp_path, capsys):
    path = tmp_path / "ppo.py"
    path.write_text(text)
    code, lines = grade("ppo", path, capsys)
    assert code == 2 and len(lines) == 1 and says in lines[0] and "check.py: error:" in lines[0]
    code, lines = grade("no_such_rung", path, capsys)
    assert code == 2 and lines == [
        "check.py: error: unknown rung 'no_such_rung': one of reinforce, vpg, ppo, ppo_gae, "
        "ppo_continuous"
    ]


def exercise_copy(tmp_path, rung, text):
    """exercises/RUNG.py with `text`, in a folder of its own beside links to the grader."""
    folder = tmp_path / "exercises"
    folder.mkdir()
    for name in ("check.py", "cases.py"):
        (folder / name).symlink_to(ROOT / "exercises" / name)
    (folder / f"{rung}.py").write_text(text)
    return folder / f"{rung}.py"


def test_an_exercise_file_trains_the_script_with_the_students_functions(tmp_path):
    rung = "ppo_gae"
    blank = cli([str(ROOT / "exercises" / f"{rung}.py")], tmp_path)
    assert blank.returncode == 1 and blank.stdout == "", blank.stderr
    assert blank.stderr.strip() == (
        "ppo_gae.py: error: write compute_gae first, then check it: "
        "python exercises/check.py ppo_gae"
    )
    # Solved, with a compute_gae that counts its calls: the script's train() runs with it.
    solved = exercise_maker.exercise(rung, solved=True).replace(
        "    advantages = torch.zeros_like(rewards)\n",
        "    print('student compute_gae')\n    advantages = torch.zeros_like(rewards)\n",
    )
    path = exercise_copy(tmp_path, rung, solved)
    argv = flags("--total-timesteps 2048 --eval-episodes 1 --run-dir run")
    done = cli([str(path), *argv], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("student compute_gae") == 4  # 2048 / 512 steps a rollout
    assert "evaluation over 1 episodes" in done.stdout


def test_an_exercise_file_answers_help_blank_and_stops_a_broken_run_in_one_line(tmp_path):
    rung = "ppo_gae"
    helped = cli([str(ROOT / "exercises" / f"{rung}.py"), "--help"], tmp_path)  # blanks unwritten
    assert helped.returncode == 0 and helped.stderr == "", helped.stderr
    assert helped.stdout.startswith("usage: ppo_gae.py") and "--gae-lambda" in helped.stdout
    # A compute_gae that returns the advantages alone: train() cannot unpack it.
    broken = exercise_maker.exercise(rung, solved=True).replace(
        "    return advantages, advantages + values\n", "    return advantages\n"
    )
    path = exercise_copy(tmp_path, rung, broken)
    argv = flags("--total-timesteps 512 --eval-episodes 0 --run-dir run")
    done = cli([str(path), *argv], tmp_path)
    assert done.returncode == 1 and done.stderr.strip() == (
        "ppo_gae.py: error: training stopped: ValueError: too many values to unpack (expected 2); "
        "check your functions: python exercises/check.py ppo_gae"
    )


EXERCISES_NOTEBOOK = ROOT / "exercises.ipynb"


def run_notebook(nb, monkeypatch, path):
    """Every cell of nb in a fresh kernel of this interpreter, quick mode; nb gets the outputs."""
    nbclient = pytest.importorskip("nbclient")
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from jupyter_client.manager import KernelManager

    class ThisInterpreter(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
            return KernelSpec(argv=argv, display_name="this", language="python")

    monkeypatch.setenv("NOTEBOOK_QUICK", "1")
    km = KernelManager(kernel_spec_manager=ThisInterpreter(), kernel_name="python3")
    resources = {"metadata": {"path": str(path)}}
    nbclient.NotebookClient(nb, km=km, timeout=300, resources=resources).execute()
    return nb


def solved_notebook():
    """exercises.ipynb with every solution cell's blank filled with the script's own code."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(EXERCISES_NOTEBOOK, as_version=4)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "code":  # not the answers in words
            rung, name = meta["grade_id"].split("-", 1)
            source = exercise_maker.exercise(rung, solved=True)
            tops = exercise_maker.ast.parse(source).body
            (node,) = [n for n in tops if getattr(n, "name", None) == name]
            solved = "\n".join(source.splitlines()[node.lineno - 1 : node.end_lineno])
            keep = cell.source.split("\n\n\n")[-1]  # RUNG.NAME = NAME: into the rung's namespace
            cell.source = f"{solved}\n\n\n{keep}"
    return nb


def printed(nb):
    return "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))


def check_cells_show_one_line_each(nb):
    """Each check cell's output is its verdict line alone: printed, no bare True or False."""
    checks = [c for c in nb.cells if c.source.startswith("notebook_check(")]
    outputs = [[(o.output_type, o.get("text", "")) for o in c.outputs] for c in checks]
    assert len(checks) == 10 and all(
        len(out) == 1 and out[0][0] == "stream" and out[0][1].count("\n") == 1 for out in outputs
    ), outputs


def test_exercises_notebook_as_committed_says_what_to_write_first(monkeypatch, tmp_path):
    """No outputs committed; run, each check says "not written yet" and each training cell what
    to write first, in one line, and no cell gives error output."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(EXERCISES_NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert all(
        not c.get("outputs") and not c.get("execution_count")
        for c in nb.cells
        if c.cell_type == "code"
    )
    run_notebook(nb, monkeypatch, ROOT)
    assert notebook_problems(nb) == []
    check_cells_show_one_line_each(nb)
    text = printed(nb)
    names = [name for blanks in exercise_cases.EXERCISES.values() for name in blanks]
    assert text.count("not written yet") == len(names)
    assert text.count(" first (and check it): then this cell trains ") == 5
    assert "Traceback" not in text and "mean return" not in text


def test_exercises_notebook_filled_from_the_scripts_passes_and_learns(monkeypatch):
    nb = run_notebook(solved_notebook(), monkeypatch, ROOT)
    assert notebook_problems(nb) == []
    check_cells_show_one_line_each(nb)
    text = printed(nb)
    names = [name for blanks in exercise_cases.EXERCISES.values() for name in blanks]
    assert text.count("✓ ") == len(names) and "✗" not in text and "not written" not in text
    moved = re.findall(
        r"(\w+)\.py with your functions: mean return, first 20 episodes "
        r"(-?[\d.]+), last 20 (-?[\d.]+)",
        text,
    )
    assert len(moved) == 5, text
    for _rung, first, last in moved:  # every rung learns, even in quick mode
        first, last = float(first), float(last)  # CartPole: returns doubled; Pendulum: +100
        assert last > 2 * first if first > 0 else last > first + 100, moved


def test_each_rung_of_the_exercises_notebook_keeps_its_functions_apart(capsys):
    """Every solved cell run in one kernel's globals, ppo_gae's after ppo's: the global
    value_loss is ppo_gae's, and ppo's check, run again, still checks ppo's own."""
    from types import SimpleNamespace

    nb = solved_notebook()
    kernel = dict(torch=torch, nn=torch.nn, np=np, SimpleNamespace=SimpleNamespace)
    kernel |= dict(Normal=torch.distributions.Normal, Categorical=torch.distributions.Categorical)
    (imports,) = [c.source for c in nb.cells if "from check import" in c.source]
    exec(next(line for line in imports.splitlines() if line.startswith("reinforce, vpg")), kernel)
    for cell in nb.cells:  # the solved functions, and the helpers (layer_init) beside them
        skip = ("notebook_check(", "notebook_train(", "%matplotlib", "LADDER_ROOT")
        if cell.cell_type == "code" and not any(s in cell.source for s in skip):
            exec(cell.source, kernel)
    assert kernel["value_loss"] is kernel["ppo_gae"].value_loss
    assert list(inspect.signature(kernel["ppo"].value_loss).parameters) == ["values", "returns"]
    (cell,) = [c.source for c in nb.cells if c.source.startswith('notebook_check("ppo", "value')]
    assert cell == 'notebook_check("ppo", "value_loss", ppo)'
    capsys.readouterr()  # what the cells worked by hand printed
    assert grader.notebook_check("ppo", "value_loss", kernel["ppo"]) is None  # no bare True
    line = capsys.readouterr().out
    assert line.startswith("✓ value_loss: 4 cases passed") and "against ppo.py's own" in line


def test_a_notebook_run_that_breaks_stops_in_one_line_and_the_graders(
    tmp_path, monkeypatch, capsys
):
    """A wrong answer either learns worse or stops its run: one line, then the grader's."""
    from types import SimpleNamespace

    def compute_gae(rewards, values, next_values, terminated, episode_end, gamma, gae_lambda):
        return ppo_gae.compute_gae(
            rewards, values, next_values, terminated, episode_end, gamma, gae_lambda
        )[0]  # the advantages alone

    monkeypatch.chdir(tmp_path)  # its runs/
    answers = SimpleNamespace(compute_gae=compute_gae, value_loss=ppo_gae.value_loss)
    assert grader.notebook_train("ppo_gae", answers, quick=True) is None
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-2] == "ppo_gae.py stopped: ValueError: too many values to unpack (expected 2)"
    assert lines[-1].startswith("✗ compute_gae: plain: (advantages, returns), one env: ")
    assert not any("Traceback" in line or "with your functions" in line for line in lines)


def test_nbgrader_releases_and_autogrades_the_exercises_notebook(tmp_path, monkeypatch):
    """nbgrader itself: generate_assignment keeps each blank's signature and docstring, and
    autograde gives a solved copy every point and a blank one none."""
    pytest.importorskip("nbgrader")
    nbformat = pytest.importorskip("nbformat")
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config

    course = tmp_path / "course"
    (course / "source" / "hw").mkdir(parents=True)
    shutil.copy(EXERCISES_NOTEBOOK, course / "source" / "hw" / "exercises.ipynb")
    config = Config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.course_id = "ladder"
    config.ExecutePreprocessor.timeout = 300
    monkeypatch.setenv("NOTEBOOK_QUICK", "1")
    monkeypatch.setenv("LADDER_ROOT", str(ROOT))  # autograde runs a copy in a folder of its own
    beside_python(monkeypatch)  # nbgrader runs `alembic` by name
    monkeypatch.chdir(course)
    api = NbGraderAPI(config=config)
    assert api.generate_assignment("hw")["success"]
    released = nbformat.read(course / "release" / "hw" / "exercises.ipynb", as_version=4)
    solution = [c for c in released.cells if c.metadata.get("nbgrader", {}).get("solution")]
    code = [c for c in solution if c.cell_type == "code"]
    assert len(code) == 10 and all(
        '"""' in c.source and "NotImplementedError" in c.source for c in code
    )
    # the answers in words: one "predict, then run" a rung and its questions, manually graded,
    # a point each; released with nbgrader's stub where the model answer was
    words = [c for c in solution if c.cell_type == "markdown"]
    manual = 5 + sum(len(q) for q in exercise_maker.QUESTIONS.values())
    assert len(words) == manual == 19 and all(c.metadata.nbgrader.points == 1 for c in words)
    assert all("YOUR ANSWER HERE" in c.source and "model answer" not in c.source for c in words)
    for student, nb in (("solved", solved_notebook()), ("blank", released)):
        folder = course / "submitted" / student / "hw"
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / "exercises.ipynb")
        assert api.autograde("hw", student)["success"], student
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        scores = {s: gradebook.find_submission("hw", s).score for s in ("solved", "blank")}
        total = gradebook.find_assignment("hw").max_score
    # autograde scores the 10 checks; the 19 answers in words wait for a teacher (0 until then)
    assert total == 10 + manual and scores == {"solved": 10, "blank": 0}, scores


def test_no_link_points_at_a_placeholder():
    """The Colab badges pointed at github.com/OWNER/REPO: no page or notebook may lead nowhere."""
    pages = [ROOT / "README.md", *ROOT.glob("*.ipynb"), *ROOT.glob("*/*.md")]
    for path in pages:
        text = path.read_text()
        assert not re.search(r"OWNER/REPO|github\.com/(owner|user|USERNAME|OWNER)/", text), path


# ----------------------------------------------------------------------------------------------
# 19. The courses' own numbers (../shared/COURSES.md): the CartPole homework's tests (C1), the
#     line world as the course ran it (C3), the questions in words
# ----------------------------------------------------------------------------------------------


def test_the_homework_tests_hold_on_the_scripts_own_functions():
    """C1's three losses on its data, through reinforce_loss, vpg_loss and ppo_loss (with ppo.py's
    value_loss): its values, to its absolute tolerance; its data as it describes it."""
    hw = exercise_cases.HOMEWORK
    own = dict(reinforce=reinforce.reinforce_loss, vpg=vpg.vpg_loss, ppo=ppo.ppo_loss)
    got = {r: float(exercise_cases.homework_loss(r, fn).detach()) for r, fn in own.items()}
    for rung, value in got.items():
        assert abs(value - hw[rung]) < hw["tolerance"], (rung, value)
    # the same numbers from the course's formulas, written out here on its own data
    d = exercise_cases.homework_data()
    assert float(-(d["log_probs"] * d["returns"]).mean()) == pytest.approx(got["reinforce"])
    with torch.no_grad():
        a = d["returns"] - d["value"](d["states"]).squeeze(-1)
        assert float((a**2).mean() - (d["log_probs"] * a).mean()) == pytest.approx(got["vpg"])
        d = exercise_cases.homework_data(ppo=True)
        a = d["returns"] - d["value"](d["states"]).squeeze(-1)
        new = torch.distributions.Categorical(logits=d["policy"](d["states"])).log_prob(
            d["actions"]
        )
        ratio = (new - d["log_probs"]).exp()
        surrogate = torch.min(ratio * a, ratio.clamp(0.9, 1.1) * a)
        assert float(-surrogate.mean() + (a**2).mean()) == pytest.approx(got["ppo"])
    # its data: one action (all 0, so the new log-prob is 0), flags in {0, 1}, PPO's returns in
    # [-1, 1); and the draws after the seed are the course's, in its order
    assert (d["actions"] == 0).all() and (new == 0).all()
    assert set(d["not_dones"].unique().tolist()) == {0, 1}
    assert d["returns"].min() < 0 < d["returns"].max() and d["returns"].abs().max() < 1
    torch.manual_seed(0)
    assert torch.equal(d["states"], torch.rand(10, 5, 4))
    # the rounded values need the course's absolute tolerance: to the grader's relative one,
    # vpg.py's own 0.061841 is not 0.0618
    assert not exercise_cases.close(got["vpg"], hw["vpg"])
    assert exercise_cases.close(got["vpg"], hw["vpg"], tolerance=hw["tolerance"])


def test_the_grader_runs_the_homework_tests_as_the_courses_own():
    """One case each for reinforce_loss, vpg_loss and ppo_loss, named as the course's, that a
    wrong loss fails: a sign, a baseline left out, the clip left out."""
    for rung, name in (("reinforce", "reinforce_loss"), ("vpg", "vpg_loss"), ("ppo", "ppo_loss")):
        (case,) = [c for c in exercise_cases.EXERCISES[rung][name][0]() if c.kind == "course"]
        assert "course's own test" in case.label and case.tolerance == 1e-4
        assert case.expected == exercise_cases.HOMEWORK[rung]
        right = grader.attempt(case, exercise_cases.own(rung, name))
        assert grader.passes(case, right), right
        ok, line = grader.check(rung, name, exercise_cases.own(rung, name))
        assert ok and "1 the CartPole course's own test" in line, line

    def case(rung, name):
        (found,) = [c for c in exercise_cases.EXERCISES[rung][name][0]() if c.kind == "course"]
        return found

    def wrong_sign(logprobs, returns):
        return (logprobs * returns).mean()

    def no_baseline(logprobs, values, returns):
        return -(logprobs * returns).mean(), ((returns - values) ** 2).mean()

    def no_clip(new_logprobs, old_logprobs, advantages, clip_coef):
        return -((new_logprobs - old_logprobs).exp() * advantages).mean()

    for rung, name, wrong in (
        ("reinforce", "reinforce_loss", wrong_sign),
        ("vpg", "vpg_loss", no_baseline),
        ("ppo", "ppo_loss", no_clip),
    ):
        c = case(rung, name)
        kind, got = grader.attempt(c, wrong)
        assert kind == "ok" and abs(got - c.expected) > 1e-3 and not grader.passes(c, (kind, got))


def test_line_world_as_the_course_ran_it_from_the_scripts_own_pieces():
    """benchmarks/line_world.py --course: the course's networks in the script's own Agent, its
    losses (the critic's x 0.01), batches of 4 whole episodes; judged as the course judged."""
    from types import SimpleNamespace

    from benchmarks import line_world as bench

    assert bench.COURSE == dict(
        episodes=2_000,
        episodes_per_batch=4,
        epochs=8,
        minibatch=64,
        hidden=16,
        critic_coef=0.01,
        gamma=0.99,
        clip_coef=0.2,
    )
    assert [(s, lr, rate, reward) for _, s, lr, rate, reward in bench.COURSE_RUNS] == [
        ("reinforce", 1e-3, 51, -0.035),
        ("vpg", 1e-3, 100, 0.0),
        ("vpg", 4e-3, 12, -0.318),
        ("ppo", 4e-3, 100, 0.0),
    ]
    agent = bench.course_agent(vpg, 16)
    assert type(agent) is vpg.Agent
    assert [type(m) for m in agent.actor] == [torch.nn.Linear, torch.nn.ReLU, torch.nn.Linear]
    assert agent.actor[0].weight.shape == (16, 2) and agent.actor[2].weight.shape == (3, 16)
    assert agent.critic[2].weight.shape == (1, 16)
    # the losses: the script's own, the critic's times 0.01
    logprobs, values = torch.tensor([-1.0, -2.0]), torch.tensor([1.0, 3.0])
    returns = torch.tensor([2.0, 1.0])  # A = (1, -2): policy -1.5, value 2.5 (section 1)
    loss = bench.course_loss(vpg, "vpg", logprobs, values, returns, None, None)
    assert loss.item() == pytest.approx(-1.5 + 0.01 * 2.5)
    old = torch.tensor([-1.0, -2.0])
    loss = bench.course_loss(ppo, "ppo", logprobs, values, returns, old, returns - values)
    assert loss.item() == pytest.approx(0.5 + 0.01 * 2.5)  # ratio 1: -mean(A) = -(1 - 2) / 2
    loss = bench.course_loss(reinforce, "reinforce", logprobs, None, returns, None, None)
    assert loss.item() == pytest.approx(2.0)  # -((-1)(2) + (-2)(1)) / 2
    # 8 episodes: 2 batches of 4, 20 steps each, every reward <= 0; the same seed, the same run
    agent, played = bench.course_train("ppo", 4e-3, seed=3, episodes=8)
    again = bench.course_train("ppo", 4e-3, seed=3, episodes=8)[1]
    assert len(played) == 8 and played == again and all(-20 <= r <= 0 for r in played)

    # judged: the perfect policy ends on the target with reward 0 every time, greedy or sampled
    def towards_the_target(obs):  # logits of (-1, stay, +1) from [target, position]
        gap = obs[..., 0] - obs[..., 1]
        move = torch.where(gap > 1e-6, 2, torch.where(gap < -1e-6, 0, 1))
        return 50 * torch.nn.functional.one_hot(move, 3).float()  # sampled: the same move

    perfect = SimpleNamespace(actor=towards_the_target)
    for greedy in (True, False):
        successes, finals = bench.judged(perfect, 20, greedy)
        assert successes == [True] * 20 and finals == [0.0] * 20
    # the committed table is the one its raw.json gives
    folder = ROOT / "benchmarks" / "results" / "line_world" / "course"
    raw = json.loads((folder / "raw.json").read_text())
    assert (folder / "table.md").read_text() == bench.make_course_table(raw)
    assert len(raw["results"]) == 40 and raw["seeds"] == list(range(1, 11))


def test_the_exercises_questions_in_words_are_listed_for_teachers():
    """Each rung of exercises.ipynb: a "predict, then run" before its run and 2 or 3 questions
    after it, each a manually graded answer cell whose model answer sits in the solution region;
    exercises/README.md lists every question as the notebook asks it."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(EXERCISES_NOTEBOOK, as_version=4)
    readme = " ".join((ROOT / "exercises" / "README.md").read_text().split())
    for rung in exercise_cases.EXERCISES:
        questions = exercise_maker.QUESTIONS[rung]
        assert 2 <= len(questions) <= 3
        for question, model in [exercise_maker.PREDICT[rung], *questions]:
            assert " ".join(question.split()) in readme, question
            (i,) = [k for k, c in enumerate(nb.cells) if c.source.endswith(question)]
            answer = nb.cells[i + 1]
            meta = answer.metadata["nbgrader"]
            assert answer.cell_type == "markdown" and meta["solution"] and meta["points"] == 1
            region = answer.source.split("### BEGIN SOLUTION")[1].split("### END SOLUTION")[0]
            assert model in region
        (run,) = [k for k, c in enumerate(nb.cells) if f'notebook_train("{rung}"' in c.source]
        assert nb.cells[run - 2].source.startswith("**Predict, then run")
        assert nb.cells[run - 1].metadata["nbgrader"]["grade_id"] == f"predict-{rung}"
