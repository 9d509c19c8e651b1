"""Tests of the policy-gradient scripts: pure math by hand, probe environments, learning, CLI.

Run: python -m pytest -q test_all.py

Layout, one section per kind of check:
  0. the scripts under test (SCRIPTS: what differs between them), helpers, probe envs;
  1. pure functions, on cases worked out by hand;
  2. probe environments, each with one answer the agent must find;
  3. gymnasium's autoreset steps never reach the loss;
  4. a short learning run on CartPole-v1;
  5. command line and bad input;
  6. reproducibility;
  7. the dict that train() returns.
A new script joins by an entry in SCRIPTS (and in the family lists it belongs to), plus a
subsection in 1 for the functions only it has.
"""

import importlib.util
import math
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import gymnasium as gym
import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))

import ppo  # noqa: E402
import reinforce  # noqa: E402
import vpg  # noqa: E402

# ----------------------------------------------------------------------------------------------
# 0. The scripts under test
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Script:
    module: ModuleType
    critic: bool  # has Agent.get_value and learns V
    policy_loss: str  # the function train() calls for the policy loss
    returns_loss: str  # a function train() gives the batch's returns to ...
    returns_arg: int  # ... as this positional argument
    returns_argv: tuple  # flags that make returns_loss see every sample of a batch ...
    returns_calls: int  # ... exactly this many times per rollout, and unnormalized
    own_positive: tuple  # the script's own flags that must be > 0
    tags: tuple  # TensorBoard scalars beyond the common ones
    probe_argv: tuple  # hyperparameters that make the probes below learn in a few seconds
    cartpole_steps: int  # --total-timesteps after which CartPole-v1 is clearly learned

    @property
    def name(self):
        return self.module.__name__

    @property
    def path(self):
        return Path(self.module.__file__)

    def __repr__(self):  # the test ids
        return self.name


CRITIC_TAGS = ("losses/value_loss", "losses/explained_variance")
SCRIPTS = [
    Script(
        module=reinforce,
        critic=False,
        policy_loss="reinforce_loss",
        returns_loss="reinforce_loss",
        returns_arg=1,
        returns_argv=("--no-normalize-returns",),
        returns_calls=1,
        own_positive=(),
        tags=(),
        probe_argv=("--num-envs", "8", "--num-steps", "4", "--learning-rate", "3e-2"),
        cartpole_steps=50_000,
    ),
    Script(
        module=vpg,
        critic=True,
        policy_loss="vpg_loss",
        returns_loss="vpg_loss",
        returns_arg=2,
        returns_argv=("--train-pi-iters", "1", "--train-v-iters", "1"),
        returns_calls=2,  # one policy step and one value step, each on the whole batch
        own_positive=("--train-pi-iters", "--train-v-iters"),
        tags=CRITIC_TAGS,
        probe_argv=("--num-envs", "4", "--num-steps", "8", "--learning-rate", "3e-2"),
        cartpole_steps=24_000,
    ),
    Script(
        module=ppo,
        critic=True,
        policy_loss="ppo_loss",
        returns_loss="value_loss",
        returns_arg=1,
        returns_argv=("--train-v-iters", "1"),
        returns_calls=1,
        own_positive=("--update-epochs", "--clip-coef", "--train-v-iters"),
        tags=CRITIC_TAGS + ("losses/approx_kl", "losses/clipfrac"),
        probe_argv=("--num-envs", "4", "--num-steps", "8", "--learning-rate", "3e-2"),
        cartpole_steps=16_000,
    ),
]
WITH_CRITIC = [s for s in SCRIPTS if s.critic]
# Families that share a pure function (ppo_gae and ppo_continuous join the last two).
DISCOUNTED_RETURNS = [reinforce, vpg, ppo]
PPO_LOSS = [ppo]
VALUE_LOSS = [ppo]

COMMON_TAGS = (
    "charts/episodic_return",
    "charts/episodic_length",
    "charts/SPS",
    "charts/learning_rate",
    "losses/policy_loss",
    "losses/entropy",
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
    "--eval-episodes",
    "--run-dir",
)
RESULT_KEYS = {"agent", "episode_returns", "global_step", "sps", "eval_returns", "run_dir"}


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
    """A run of a few hundred CartPole steps: enough for episodes, updates and logs."""
    return run(
        script, tmp_path, "--num-envs", "2", "--num-steps", "64", "--total-timesteps", "512", *argv
    )


def logprob(agent, obs, action):
    """log pi(action|obs) for a batch, with either Agent interface."""
    score = getattr(agent, "get_action_and_value", None) or agent.get_action
    with torch.no_grad():
        return score(torch.as_tensor(obs, dtype=torch.float32), torch.as_tensor(action))[1]


def value(agent, obs):
    with torch.no_grad():
        return agent.get_value(torch.as_tensor(obs, dtype=torch.float32)).squeeze(-1)


def wrap(monkeypatch, module, name, after):
    """Replace module.name by a function that calls it, then `after(args, result)`."""
    original = getattr(module, name)

    def wrapper(*args, **kwargs):
        result = original(*args, **kwargs)
        return after(args, result)

    monkeypatch.setattr(module, name, wrapper)


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
# Probe environments: Discrete(2) actions, a Box observation of one number
# ----------------------------------------------------------------------------------------------


class OneStep(gym.Env):
    """Observation 1, reward 1 whatever the action, and the episode ends: V = 1."""

    terminates = True

    def __init__(self, render_mode=None):
        self.render_mode = render_mode
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def observe(self):
        return 1.0

    def reward(self, action):
        return 1.0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.obs = np.array([self.observe()], dtype=np.float32)
        return self.obs, {}

    def step(self, action):
        return self.obs.copy(), self.reward(int(action)), self.terminates, False, {}


class RandomSign(OneStep):
    """Observation +1 or -1 at random, reward = observation: V(s) = s."""

    def observe(self):
        return float(self.np_random.choice([-1.0, 1.0]))

    def reward(self, action):
        return float(self.obs[0])


class RightAction(RandomSign):
    """Reward 1 for action 1 when the observation is +1, for action 0 when it is -1."""

    def reward(self, action):
        return float(action == (self.obs[0] > 0))


class Endless(OneStep):
    """Reward 1 per step forever, constant observation; registered with a time limit of 5."""

    terminates = False


PROBES = {
    "probes/OneStep-v0": (OneStep, None),
    "probes/RandomSign-v0": (RandomSign, None),
    "probes/RightAction-v0": (RightAction, None),
    "probes/Endless-v0": (Endless, 5),
}
for _env_id, (_cls, _limit) in PROBES.items():
    if _env_id not in gym.registry:
        gym.register(id=_env_id, entry_point=_cls, max_episode_steps=_limit)


def probe(script, tmp_path, env_id, steps, *argv):
    return run(
        script,
        tmp_path,
        "--env-id",
        env_id,
        "--total-timesteps",
        str(steps),
        *script.probe_argv,
        *argv,
    )["agent"]


# ----------------------------------------------------------------------------------------------
# 1. Pure functions
# ----------------------------------------------------------------------------------------------

R = torch.tensor([1.0, 2.0, 3.0])
NO_DONES = torch.zeros(3)


@modules(DISCOUNTED_RETURNS)
@pytest.mark.parametrize(
    "dones, gamma, last_value, expected",
    [
        # G2 = 3, G1 = 2 + .5 * 3 = 3.5, G0 = 1 + .5 * 3.5 = 2.75
        ([0, 0, 0], 0.5, None, [2.75, 3.5, 3.0]),
        # the episode ends at t=1: G1 = 2, G0 = 1 + .5 * 2 = 2; G2 = 3 is a new episode
        ([0, 1, 0], 0.5, None, [2.0, 2.0, 3.0]),
        # bootstrap: G2 = 3 + .5 * 4 = 5, G1 = 2 + .5 * 5 = 4.5, G0 = 1 + .5 * 4.5 = 3.25
        ([0, 0, 0], 0.5, 4.0, [3.25, 4.5, 5.0]),
        # no bootstrap after a last step that ended the episode: G2 = 3, G1 = 3.5, G0 = 2.75
        ([0, 0, 1], 0.5, 4.0, [2.75, 3.5, 3.0]),
        ([0, 0, 0], 0.0, 4.0, [1.0, 2.0, 3.0]),  # gamma 0: G_t = r_t
        ([0, 0, 0], 1.0, None, [6.0, 5.0, 3.0]),  # gamma 1: plain sums of what follows
        ([0, 0, 0], 1.0, 4.0, [10.0, 9.0, 7.0]),  # ... plus the last value
    ],
)
def test_discounted_returns_1d(module, dones, gamma, last_value, expected):
    rewards, dones = R.clone(), torch.tensor(dones, dtype=torch.float32)
    last = None if last_value is None else torch.tensor(last_value)
    returns = module.discounted_returns(rewards, dones, gamma, last_value=last)
    assert returns.shape == (3,)
    torch.testing.assert_close(returns, torch.tensor(expected))
    torch.testing.assert_close(rewards, R)  # the input is left alone


@modules(DISCOUNTED_RETURNS)
def test_discounted_returns_time_major_envs_are_independent(module):
    # (T, N) = (3, 2), gamma .5, bool dones. Env 0: rewards 1, 2, 3, its episode ends at t=1,
    # last value 10: G2 = 3 + .5 * 10 = 8, G1 = 2, G0 = 1 + .5 * 2 = 2.
    # Env 1: rewards 1, 1, 1, no end, last value 2: G2 = 1 + 1 = 2, G1 = 1 + 1 = 2, G0 = 2.
    rewards = torch.tensor([[1.0, 1.0], [2.0, 1.0], [3.0, 1.0]])
    dones = torch.tensor([[False, False], [True, False], [False, False]])
    returns = module.discounted_returns(rewards, dones, 0.5, last_value=torch.tensor([10.0, 2.0]))
    torch.testing.assert_close(returns, torch.tensor([[2.0, 2.0], [2.0, 2.0], [8.0, 2.0]]))


def test_reinforce_loss_and_its_gradient():
    # -(mean(-1 * 3, -2 * -1)) = -(-3 + 2) / 2 = 0.5; d/dlogp = -G / 2 = (-1.5, 0.5)
    logprobs = torch.tensor([-1.0, -2.0], requires_grad=True)
    loss = reinforce.reinforce_loss(logprobs, torch.tensor([3.0, -1.0]))
    torch.testing.assert_close(loss, torch.tensor(0.5))
    loss.backward()
    torch.testing.assert_close(logprobs.grad, torch.tensor([-1.5, 0.5]))


def vpg_case():
    # logp (-1, -2), V (1, 3), G (2, 1): A = G - V = (1, -2)
    logprobs = torch.tensor([-1.0, -2.0], requires_grad=True)
    values = torch.tensor([1.0, 3.0], requires_grad=True)
    return logprobs, values, *vpg.vpg_loss(logprobs, values, torch.tensor([2.0, 1.0]))


def test_vpg_loss_values():
    _, _, policy_loss, value_loss = vpg_case()
    # policy: -((-1)(1) + (-2)(-2)) / 2 = -(3) / 2 = -1.5; value: (1^2 + 2^2) / 2 = 2.5
    torch.testing.assert_close(policy_loss, torch.tensor(-1.5))
    torch.testing.assert_close(value_loss, torch.tensor(2.5))


def test_vpg_policy_loss_does_not_move_the_critic():
    logprobs, values, policy_loss, _ = vpg_case()
    policy_loss.backward()
    assert values.grad is None or not values.grad.any()
    torch.testing.assert_close(logprobs.grad, torch.tensor([-0.5, 1.0]))  # -A / 2


def test_vpg_value_loss_trains_only_the_critic():
    logprobs, values, _, value_loss = vpg_case()
    value_loss.backward()
    torch.testing.assert_close(values.grad, torch.tensor([-1.0, 2.0]))  # -2 (G - V) / 2
    assert logprobs.grad is None or not logprobs.grad.any()


# PPO, eps = 0.2, old logprobs 0 so ratio = exp(new). min(r A, clip(r) A) per sample:
#   r 1.1, A +1: inside the range     -> 1.1 * 1  =  1.1, pulls
#   r 1.5, A +1: above 1 + eps, A > 0 -> 1.2 * 1  =  1.2, clipped: no gradient
#   r 0.5, A +1: below, but A > 0     -> 0.5 * 1  =  0.5, pulls (pessimistic side)
#   r 0.5, A -1: below 1 - eps, A < 0 -> 0.8 * -1 = -0.8, clipped: no gradient
#   r 1.5, A -1: above, but A < 0     -> 1.5 * -1 = -1.5, pulls
#   r 0.9, A -2: inside the range     -> 0.9 * -2 = -1.8, pulls
# loss = -(1.1 + 1.2 + 0.5 - 0.8 - 1.5 - 1.8) / 6 = 1.3 / 6
# d loss / d new_logprob = -r A / 6 where it pulls (d r / d new = r), 0 where clipped.
PPO_RATIOS = torch.tensor([1.1, 1.5, 0.5, 0.5, 1.5, 0.9])
PPO_ADVANTAGES = torch.tensor([1.0, 1.0, 1.0, -1.0, -1.0, -2.0])
PPO_GRAD = torch.tensor([-1.1, 0.0, -0.5, 0.0, 1.5, 1.8]) / 6


@modules(PPO_LOSS)
def test_ppo_loss_value_and_gradient(module):
    new_logprobs = PPO_RATIOS.log().requires_grad_()
    loss = module.ppo_loss(new_logprobs, torch.zeros(6), PPO_ADVANTAGES, 0.2)
    torch.testing.assert_close(loss, torch.tensor(1.3 / 6))
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
    torch.testing.assert_close(loss, torch.tensor(1.3 / 6))
    # With eps = 0.6 every ratio is inside [0.4, 1.6], so the loss is -mean(r A)
    # = -(1.1 + 1.5 + 0.5 - 0.5 - 1.5 - 1.8) / 6 = 0.7 / 6
    loss = module.ppo_loss(old + PPO_RATIOS.log(), old, PPO_ADVANTAGES, 0.6)
    torch.testing.assert_close(loss, torch.tensor(0.7 / 6))


@modules(VALUE_LOSS)
def test_value_loss(module):
    # ((2 - 1)^2 + (1 - 3)^2) / 2 = 2.5; d/dV = -2 (G - V) / 2 = (-1, 2)
    values = torch.tensor([1.0, 3.0], requires_grad=True)
    loss = module.value_loss(values, torch.tensor([2.0, 1.0]))
    torch.testing.assert_close(loss, torch.tensor(2.5))
    loss.backward()
    torch.testing.assert_close(values.grad, torch.tensor([-1.0, 2.0]))


# ----------------------------------------------------------------------------------------------
# 2. Probe environments
# ----------------------------------------------------------------------------------------------


@by_name(WITH_CRITIC)
def test_probe_critic_learns_a_constant_reward(script, tmp_path):
    # One step, reward 1, terminated: V = 1 (a bootstrapped termination would go towards
    # 1 / (1 - gamma) = 100).
    agent = probe(script, tmp_path, "probes/OneStep-v0", 128)
    assert value(agent, [[1.0]]).item() == pytest.approx(1.0, abs=0.1)


@by_name(WITH_CRITIC)
def test_probe_critic_learns_a_value_that_depends_on_the_observation(script, tmp_path):
    # Reward = observation = +-1, one step: V(+1) = 1, V(-1) = -1.
    agent = probe(script, tmp_path, "probes/RandomSign-v0", 256)
    torch.testing.assert_close(
        value(agent, [[1.0], [-1.0]]), torch.tensor([1.0, -1.0]), atol=0.15, rtol=0
    )


@by_name(SCRIPTS)
def test_probe_policy_learns_the_right_action(script, tmp_path):
    # Reward 1 for action 1 at +1 and for action 0 at -1: pi(right action) -> 1.
    agent = probe(script, tmp_path, "probes/RightAction-v0", 320)
    probs = logprob(agent, [[1.0], [-1.0]], [1, 0]).exp()
    assert (probs > 0.9).all(), probs


@by_name(WITH_CRITIC)
def test_probe_time_limit_is_bootstrapped(script, tmp_path):
    # Reward 1 per step forever, cut after 5 steps by a time limit, gamma 0.9. The task does
    # not end, so V = 1 + 0.9 V = 1 / (1 - 0.9) = 10. Had the cut been taken for an end, the
    # critic would learn the mean return left in the episode: sum_{k=1..5} (1 - .9^k) / .1 / 5
    # = (1 + 1.9 + 2.71 + 3.439 + 4.0951) / 5 = 2.63 (4.1 from the first step).
    agent = probe(script, tmp_path, "probes/Endless-v0", 640, "--gamma", "0.9")
    v = value(agent, [[1.0]]).item()
    assert v == pytest.approx(10.0, abs=1.0)
    assert v > 4.1 + 4  # far from any truncated sum


# ----------------------------------------------------------------------------------------------
# 3. Autoreset: the step after an episode's end is gymnasium's reset, not a transition
# ----------------------------------------------------------------------------------------------


@by_name(SCRIPTS)
def test_reset_steps_never_reach_the_loss(script, tmp_path, monkeypatch):
    # OneStep episodes last one step, so every other env step is a reset step, with reward 0.
    # Every real step is a whole episode with G = 1; a reset step would bring G = 0 + gamma * G'
    # or a bootstrap. So the loss must see only returns of exactly 1, and as many of them as
    # there were episodes (times the calls per rollout).
    seen = []

    def record(args, result):
        seen.append(args[script.returns_arg].detach().clone())
        return result

    wrap(monkeypatch, script.module, script.returns_loss, record)
    argv = "--env-id probes/OneStep-v0 --num-envs 2 --num-steps 6 --total-timesteps 48".split()
    result = run(script, tmp_path, *argv, *script.returns_argv)
    returns = torch.cat(seen)
    assert len(result["episode_returns"]) > 0
    assert len(returns) == script.returns_calls * len(result["episode_returns"])
    assert (returns == 1.0).all(), returns


# ----------------------------------------------------------------------------------------------
# 4. Learning CartPole-v1 with the default hyperparameters
# ----------------------------------------------------------------------------------------------


@by_name(SCRIPTS)
def test_learns_cartpole(script, tmp_path):
    # A random policy lasts about 22 steps. Seed 1 gives (last 20 training episodes, greedy
    # evaluation) of about (190, 480) for reinforce, (340, 500) vpg, (240, 440) ppo; seeds 2-10
    # gave at least (90, 230), (118, 140), (220, 400): the seed is not a lucky one.
    steps = str(script.cartpole_steps)
    start = time.time()
    result = run(script, tmp_path, "--total-timesteps", steps, "--eval-episodes", "10")
    seconds = time.time() - start
    # SPS is measured over training only; the rest (envs, evaluation) is a small part.
    assert 0.99 <= result["sps"] / (result["global_step"] / seconds) <= 2.5
    recent = np.mean([r for _, r in result["episode_returns"][-20:]])
    assert recent >= 100, recent
    assert np.mean(result["eval_returns"]) >= 150, result["eval_returns"]


# ----------------------------------------------------------------------------------------------
# 5. Command line and bad input
# ----------------------------------------------------------------------------------------------


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


@by_name(SCRIPTS)
def test_script_alone_in_an_empty_folder_trains_logs_and_reports(script, tmp_path):
    # Copied alone: no other script, no repo on the path. --total-timesteps 1 is smaller than one
    # rollout: still exactly one rollout and one update. Default run dir under ./runs.
    shutil.copy(script.path, tmp_path)
    start = int(time.time())
    argv = "--total-timesteps 1 --num-envs 2 --eval-episodes 2".split()
    proc = cli([script.path.name, *argv], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    progress = [line for line in proc.stdout.splitlines() if re.search(r"\d+/1\b", line)]
    assert progress and all(w in progress[-1] for w in ("SPS", "left", "return")), proc.stdout

    (run_dir,) = (tmp_path / "runs").glob(f"CartPole-v1__{script.name}__1__*")
    assert start <= int(run_dir.name.rsplit("__", 1)[1]) <= time.time()
    events = scalars(run_dir)
    tags = events.Tags()
    assert set(COMMON_TAGS + script.tags) <= set(tags["scalars"])
    assert any("hyperparameters" in tag for tag in tags["tensors"])
    (update,) = events.Scalars("losses/policy_loss")  # one update ...
    num_steps = script.module.parse_args([]).num_steps
    assert update.step >= 2 * num_steps  # ... after a whole rollout of 2 envs
    assert len(events.Scalars("eval/episodic_return")) == 2


@by_name(SCRIPTS)
def test_box_action_env_is_refused_in_one_line(script, tmp_path):
    proc = cli([str(script.path), "--env-id", "Pendulum-v1", "--run-dir", "run"], tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "ppo_continuous.py" in proc.stderr
    assert not (tmp_path / "run").exists()


def installed(name):
    return importlib.util.find_spec(name) is not None


ENV_ERRORS = [
    pytest.param(("--env-id", "NoSuchEnv-v0"), "NoSuchEnv", id="unknown-env"),
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
]


@by_name(SCRIPTS)
@pytest.mark.parametrize("argv, says", ENV_ERRORS)
def test_env_errors_are_one_line_and_status_2(script, argv, says, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        run(script, tmp_path, *argv)
    assert says.lower() in one_line_error(capsys, exc, script).lower()


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
]


@pytest.mark.parametrize(
    "script, flag, bad",
    [(s, *case) for s in SCRIPTS for case in COMMON_BAD + [(f, "0") for f in s.own_positive]],
    ids=repr,
)
def test_impossible_hyperparameters_are_argparse_errors(script, flag, bad, capsys):
    with pytest.raises(SystemExit) as exc:
        script.module.parse_args([flag, bad])
    assert exc.value.code == 2
    assert flag in capsys.readouterr().err


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
    assert (Path(result["run_dir"]) / f"{script.name}.pt").is_file()
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


# ----------------------------------------------------------------------------------------------
# 6. Reproducibility
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
# 7. What train() returns, and the saved model
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
    assert all(8 <= r <= 500 and r == int(r) for r in returns)  # 1 per step, 8 to 500 steps
    assert result["global_step"] >= 512 - 2 * 64  # --total-timesteps, to within a rollout
    assert result["global_step"] % 2 == 0  # 2 envs step together
    assert result["global_step"] / seconds <= result["sps"] + 1  # steps per second of training
    assert len(result["eval_returns"]) == 2 and all(r >= 8 for r in result["eval_returns"])
    assert Path(result["run_dir"]).name == "run"


def test_saved_model_loads_into_a_fresh_agent(tiny_run):
    script, result, _ = tiny_run
    trained = result["agent"]
    fresh = script.module.Agent(4, 2)  # CartPole: 4 observations, 2 actions
    fresh.load_state_dict(torch.load(Path(result["run_dir"]) / f"{script.name}.pt"))
    obs, actions = torch.randn(100, 4), torch.randint(0, 2, (100,))
    assert torch.equal(logprob(fresh, obs, actions), logprob(trained, obs, actions))
    if script.critic:
        assert torch.equal(value(fresh, obs), value(trained, obs))
