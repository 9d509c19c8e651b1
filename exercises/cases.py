# SPDX-License-Identifier: MIT
"""The hand-worked cases of every exercise: one table, read by exercises/check.py (the grader)
and by test_all.py (section 1), so that no number is written twice.

Each case calls the function under test, `fn`, on small inputs and names what it expects. A
method (Agent.get_action_and_value, RunningNorm.update) is bound to an object of the script's
own class, so a case checks the method alone. MISTAKES holds wrong versions that students
write: when a wrong answer equals one of theirs, the grader says the mistake in words.
"""

import importlib.util
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent


def script(name, fresh=False):
    """The module of ROOT/NAME.py, loaded by its path (exercises/NAME.py has the same name);
    fresh: a new copy, whose functions a notebook's run may replace."""
    key = f"_script_{name}"
    if key in globals() and not fresh:
        return globals()[key]
    spec = importlib.util.spec_from_file_location(key, ROOT / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not fresh:
        globals()[key] = module
    return module


def t(values, dtype=torch.float32):
    return torch.tensor(values, dtype=dtype)


@dataclass
class Case:
    label: str  # what the case shows
    inputs: str  # its inputs, small enough to read
    call: object  # fn -> what it got
    expected: object  # a number, a list, or a tuple of them


# ---- discounted_returns(rewards, dones, gamma, last_value=None) ---------------------------------
R = [1.0, 2.0, 3.0]
DISCOUNTED_RETURNS = [  # dones, gamma, last_value, expected G for rewards R
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
]
# (T, N) = (3, 2), gamma .5. Env 0: rewards 1, 2, 3, its episode ends at t=1, last value 10:
# G2 = 3 + .5 * 10 = 8, G1 = 2, G0 = 1 + .5 * 2 = 2. Env 1: rewards 1, 1, 1, no end, last
# value 2: G2 = 1 + 1 = 2, G1 = 1 + 1 = 2, G0 = 2.
RETURNS_2_ENVS = dict(
    rewards=[[1.0, 1.0], [2.0, 1.0], [3.0, 1.0]],
    dones=[[False, False], [True, False], [False, False]],
    last_value=[10.0, 2.0],
    expected=[[2.0, 2.0], [2.0, 2.0], [8.0, 2.0]],
)


def discounted_returns_cases():
    cases = []
    for dones, gamma, last, expected in DISCOUNTED_RETURNS:
        inputs = f"rewards={R}, dones={dones}, gamma={gamma}, last_value={last}"
        last_value = None if last is None else torch.tensor(last)

        def call(fn, dones=dones, gamma=gamma, last_value=last_value):
            return fn(t(R), t(dones), gamma, last_value=last_value)

        cases.append(Case("one env", inputs, call, expected))
    c = RETURNS_2_ENVS
    inputs = f"rewards={c['rewards']}, dones={c['dones']}, gamma=0.5, last_value={c['last_value']}"

    def two(fn):
        dones = t(c["dones"], torch.bool)
        return fn(t(c["rewards"]), dones, 0.5, last_value=t(c["last_value"]))

    return cases + [Case("time-major (T, N): each env on its own", inputs, two, c["expected"])]


# ---- reinforce_loss(logprobs, returns) ----------------------------------------------------------
# -(mean(-1 * 3, -2 * -1)) = -(-3 + 2) / 2 = 0.5; d/dlogp = -G / 2 = (-1.5, 0.5)
REINFORCE = dict(logprobs=[-1.0, -2.0], returns=[3.0, -1.0], loss=0.5, grad=[-1.5, 0.5])


def reinforce_loss_cases():
    c = REINFORCE
    inputs = f"logprobs={c['logprobs']}, returns={c['returns']}"

    def grad(fn):
        logprobs = t(c["logprobs"]).requires_grad_()
        fn(logprobs, t(c["returns"])).backward()
        return logprobs.grad

    return [
        Case("the loss", inputs, lambda fn: fn(t(c["logprobs"]), t(c["returns"])), c["loss"]),
        Case("its gradient in the logprobs", inputs, grad, c["grad"]),
    ]


# ---- vpg_loss(logprobs, values, returns) -> (policy_loss, value_loss) ----------------------------
# logp (-1, -2), V (1, 3), G (2, 1): A = G - V = (1, -2). policy: -((-1)(1) + (-2)(-2)) / 2 = -1.5;
# value: (1^2 + 2^2) / 2 = 2.5. d policy / d logp = -A / 2 = (-.5, 1); d value / d V =
# -2 (G - V) / 2 = (-1, 2). The policy loss leaves V alone, the value loss the policy.
VPG = dict(logprobs=[-1.0, -2.0], values=[1.0, 3.0], returns=[2.0, 1.0], losses=(-1.5, 2.5))
VPG_GRADS = dict(policy=([-0.5, 1.0], [0.0, 0.0]), value=([0.0, 0.0], [-1.0, 2.0]))


def vpg_loss_case(fn):
    logprobs = t(VPG["logprobs"]).requires_grad_()
    values = t(VPG["values"]).requires_grad_()
    return logprobs, values, fn(logprobs, values, t(VPG["returns"]))


def vpg_loss_cases():
    inputs = f"logprobs={VPG['logprobs']}, values={VPG['values']}, returns={VPG['returns']}"

    def grads(which):
        def call(fn):
            logprobs, values, losses = vpg_loss_case(fn)
            losses[0 if which == "policy" else 1].backward()
            zero = torch.zeros(2)
            return (
                zero if logprobs.grad is None else logprobs.grad,
                zero if values.grad is None else values.grad,
            )

        return call

    return [
        Case("(policy_loss, value_loss)", inputs, lambda fn: vpg_loss_case(fn)[2], VPG["losses"]),
        Case(
            "policy_loss's gradient: (logprobs, values)",
            inputs,
            grads("policy"),
            VPG_GRADS["policy"],
        ),
        Case(
            "value_loss's gradient: (logprobs, values)", inputs, grads("value"), VPG_GRADS["value"]
        ),
    ]


# ---- ppo_loss(new_logprobs, old_logprobs, advantages, clip_coef) --------------------------------
# eps = 0.2, old logprobs 0 so ratio = exp(new). min(r A, clip(r) A) per sample:
#   r 1.1, A +1: inside the range     -> 1.1 * 1  =  1.1, pulls
#   r 1.5, A +1: above 1 + eps, A > 0 -> 1.2 * 1  =  1.2, clipped: no gradient
#   r 0.5, A +1: below, but A > 0     -> 0.5 * 1  =  0.5, pulls (pessimistic side)
#   r 0.5, A -1: below 1 - eps, A < 0 -> 0.8 * -1 = -0.8, clipped: no gradient
#   r 1.5, A -1: above, but A < 0     -> 1.5 * -1 = -1.5, pulls
#   r 0.9, A -2: inside the range     -> 0.9 * -2 = -1.8, pulls
# loss = -(1.1 + 1.2 + 0.5 - 0.8 - 1.5 - 1.8) / 6 = 1.3 / 6
# d loss / d new_logprob = -r A / 6 where it pulls (d r / d new = r), 0 where clipped.
# With eps = 0.6 every ratio is inside [0.4, 1.6]: -mean(r A) = 0.7 / 6.
PPO_RATIOS = [1.1, 1.5, 0.5, 0.5, 1.5, 0.9]
PPO_ADVANTAGES = [1.0, 1.0, 1.0, -1.0, -1.0, -2.0]
PPO_LOSS = {0.2: 1.3 / 6, 0.6: 0.7 / 6}
PPO_GRAD = [-1.1 / 6, 0.0, -0.5 / 6, 0.0, 1.5 / 6, 1.8 / 6]


def ppo_loss_cases():
    adv = t(PPO_ADVANTAGES)
    show = f"ratios={PPO_RATIOS}, advantages={PPO_ADVANTAGES}"

    def loss(old, eps):
        def call(fn):
            return fn(old + t(PPO_RATIOS).log(), old, adv, eps)

        return call

    def grad(fn):
        new = t(PPO_RATIOS).log().requires_grad_()
        fn(new, torch.zeros(6), adv, 0.2).backward()
        return new.grad

    return [
        Case(
            "the clipped objective",
            f"{show}, old logprobs 0, clip_coef=0.2",
            loss(torch.zeros(6), 0.2),
            PPO_LOSS[0.2],
        ),
        Case(
            "a ratio to the old policy",
            f"{show}, old logprobs -1, clip_coef=0.2",
            loss(torch.full((6,), -1.0), 0.2),
            PPO_LOSS[0.2],
        ),
        Case(
            "a clip wide enough to change nothing",
            f"{show}, clip_coef=0.6",
            loss(torch.zeros(6), 0.6),
            PPO_LOSS[0.6],
        ),
        Case("its gradient: zero where clipped", f"{show}, clip_coef=0.2", grad, PPO_GRAD),
    ]


# ---- value_loss(values, returns[, old_values, clip_coef]) ---------------------------------------
# ((2 - 1)^2 + (1 - 3)^2) / 2 = 2.5; d/dV = -2 (G - V) / 2 = (-1, 2)
VALUE = dict(values=[1.0, 3.0], returns=[2.0, 1.0], loss=2.5, grad=[-1.0, 2.0])
# Clipped, eps .2, old values 0, so V_clip = clip(V, -.2, .2). Per sample (R, V):
#   (1, .5):   unclipped (1 - .5)^2 = .25, clipped (1 - .2)^2 = .64   -> .64, V went up too far
#   (-1, -.5): unclipped .25, clipped (-1 + .2)^2 = .64               -> .64, down too far
#   (0, .5):   unclipped .25, clipped (0 - .2)^2 = .04                -> .25, clipping no matter
#   (1, .1):   inside the range, V_clip = V: both (1 - .1)^2 = .81    -> .81
# Clipped: (.64 + .64 + .25 + .81) / 4 = .585; unclipped: (.25 + .25 + .25 + .81) / 4 = .39.
# d/dV = 2 (V - R) / 4 = (-.25, .25, .25, -.45), but 0 where the clipped term (flat in V) wins.
VL_RETURNS = [1.0, -1.0, 0.0, 1.0]
VL_VALUES = [0.5, -0.5, 0.5, 0.1]
VL_UNCLIPPED = (0.39, [-0.25, 0.25, 0.25, -0.45])
VL_CASES = {  # id: old_values, clip_coef, (loss, gradient in values)
    "mse": (None, None, VL_UNCLIPPED),
    "no-old-values": (None, 0.2, VL_UNCLIPPED),  # train() without --clip-vloss: no clipping
    "clipped": ([0.0] * 4, 0.2, (0.585, [0.0, 0.0, 0.25, -0.45])),
    "wide-clip": ([0.0] * 4, 1.0, VL_UNCLIPPED),  # every |V - V_old| <= 1: no change
    # Old values (.4, -.4, .4, .4): the first three V are within .2 of theirs; the last, .1, is
    # .3 below, so V_clip = .2 and (1 - .2)^2 = .64 < .81. The max is the unclipped term
    # everywhere: .39, the unclipped gradient (clipping V to [-.2, .2] itself would give .585).
    "around-old": ([0.4, -0.4, 0.4, 0.4], 0.2, VL_UNCLIPPED),
}


def value_loss_cases(clipped):
    def plain(fn):
        values = t(VALUE["values"]).requires_grad_()
        loss = fn(values, t(VALUE["returns"]))
        loss.backward()
        return loss, values.grad

    inputs = f"values={VALUE['values']}, returns={VALUE['returns']}"
    cases = [
        Case(
            "mean squared error, and its gradient in values",
            inputs,
            plain,
            (VALUE["loss"], VALUE["grad"]),
        )
    ]
    if not clipped:
        return cases
    for label, (old, eps, expected) in VL_CASES.items():

        def call(fn, old=old, eps=eps):
            values = t(VL_VALUES).requires_grad_()
            loss = fn(values, t(VL_RETURNS), None if old is None else t(old), eps)
            loss.backward()
            return loss, values.grad

        inputs = f"values={VL_VALUES}, returns={VL_RETURNS}, old_values={old}, clip_coef={eps}"
        cases.append(Case(f"{label}: the loss and its gradient in values", inputs, call, expected))
    return cases


# ---- compute_gae(rewards, values, next_values, terminated, episode_end, gamma, gae_lambda) -------
# gamma .5, lambda .5 (gamma lambda = .25), rewards (1, 2, 3), V(s_t) = (2, 1, 2) and
# next_values = V(s_{t+1}) = (1, 2, 4). With no episode end the TD errors
# delta_t = r_t + .5 V(s_{t+1}) - V(s_t) are (1 + .5 - 2, 2 + 1 - 1, 3 + 2 - 2) = (-.5, 2, 3).
GAE_REWARDS = [1.0, 2.0, 3.0]
GAE_VALUES = [2.0, 1.0, 2.0]
GAE_NEXT_VALUES = [1.0, 2.0, 4.0]
GAE_CASES = {  # terminated, episode_end, next_values[1], lambda -> advantages
    # No end: the rollout is cut after t=2 and bootstrapped by next_values[-1] = 4 (in delta_2).
    # A2 = 3, A1 = 2 + .25 * 3 = 2.75, A0 = -.5 + .25 * 2.75 = .1875
    "plain": ([0, 0, 0], [0, 0, 0], 2.0, 0.5, [0.1875, 2.75, 3.0]),
    # Terminated at t=1: no bootstrap, delta_1 = 2 - 1 = 1, and A2 does not flow back into A1:
    # A1 = 1, A0 = -.5 + .25 * 1 = -.25
    "terminated": ([0, 1, 0], [0, 1, 0], 2.0, 0.5, [-0.25, 1.0, 3.0]),
    # Truncated at t=1, next_values[1] = 6 = V(the episode's final observation): bootstrapped,
    # delta_1 = 2 + .5 * 6 - 1 = 4, but A2 does not flow back: A1 = 4, A0 = -.5 + .25 * 4 = .5
    "truncated": ([0, 0, 0], [0, 1, 0], 6.0, 0.5, [0.5, 4.0, 3.0]),
    # Terminated at the last step: A2 = delta_2 = 3 - 2 = 1, A1 = 2 + .25 * 1 = 2.25,
    # A0 = -.5 + .25 * 2.25 = .0625
    "terminated-last": ([0, 0, 1], [0, 0, 1], 2.0, 0.5, [0.0625, 2.25, 1.0]),
    # lambda 1: A2 = 3, A1 = 2 + .5 * 3 = 3.5, A0 = -.5 + .5 * 3.5 = 1.25. That is G - V, with
    # G2 = 3 + .5 * 4 = 5, G1 = 2 + .5 * 5 = 4.5, G0 = 1 + .5 * 4.5 = 3.25 and V = (2, 1, 2).
    "lambda-1": ([0, 0, 0], [0, 0, 0], 2.0, 1.0, [1.25, 3.5, 3.0]),
    # lambda 0: the one-step TD errors themselves
    "lambda-0": ([0, 0, 0], [0, 0, 0], 2.0, 0.0, [-0.5, 2.0, 3.0]),
}
# (T, N) = (3, 2), bool flags: env 0 is the "plain" case, env 1 the "terminated" one.
GAE_2_ENVS = [[0.1875, -0.25], [2.75, 1.0], [3.0, 3.0]]


def gae_inputs(case):
    terminated, ended, next_value_1, gae_lambda, _ = GAE_CASES[case]
    next_values = list(GAE_NEXT_VALUES)
    next_values[1] = next_value_1
    return (t(GAE_REWARDS), t(GAE_VALUES), t(next_values), t(terminated), t(ended), 0.5, gae_lambda)


def compute_gae_cases():
    cases = []
    for label, (terminated, ended, next_value_1, gae_lambda, expected) in GAE_CASES.items():
        next_values = list(GAE_NEXT_VALUES)
        next_values[1] = next_value_1
        inputs = (
            f"rewards={GAE_REWARDS}, values={GAE_VALUES}, next_values={next_values}, "
            f"terminated={terminated}, episode_end={ended}, gamma=0.5, gae_lambda={gae_lambda}"
        )
        returns = [a + v for a, v in zip(expected, GAE_VALUES, strict=True)]  # returns = A + V
        cases.append(
            Case(
                f"{label}: (advantages, returns)",
                inputs,
                lambda fn, c=label: fn(*gae_inputs(c)),
                (expected, returns),
            )
        )

    def two(fn):
        both = lambda x: torch.stack([t(x), t(x)], 1)  # noqa: E731
        terminated = t([[False, False], [False, True], [False, False]], torch.bool)
        return fn(
            both(GAE_REWARDS),
            both(GAE_VALUES),
            both(GAE_NEXT_VALUES),
            terminated,
            terminated,
            0.5,
            0.5,
        )[0]

    inputs = "the plain case in env 0 beside the terminated one in env 1, shape (3, 2)"
    return cases + [Case("time-major (T, N): each env on its own", inputs, two, GAE_2_ENVS)]


# ---- ppo_continuous: Agent.get_action_and_value, RunningNorm.update, adapted_lr -----------------
# mu = (.5, -1) whatever the observation (last layer: weights 0, that bias), sigma = (1, .5).
# log N(a; mu, sigma) = -(a - mu)^2 / (2 sigma^2) - log sigma - log(2 pi) / 2, where
# log(2 pi) / 2 = .918939 and log .5 = -.693147:
#   a = (1.5, -1): (-.5 - 0 - .918939) + (-0 + .693147 - .918939) = -1.644731
#   a = (.5, 0):   (-0 - 0 - .918939) + (-2 + .693147 - .918939)   = -3.144731
# entropy = sum_i log sigma_i + (1 + log 2 pi) / 2 = 1.418939 + (-.693147 + 1.418939) = 2.144731
GAUSSIAN = dict(mean=[0.5, -1.0], std=[1.0, 0.5], actions=[[1.5, -1.0], [0.5, 0.0]])
GAUSSIAN_EXPECTED = dict(logprob=[-1.644731, -3.144731], entropy=[2.144731, 2.144731])


def gaussian_agent(module=None):
    """ppo_continuous's Agent on 3 observations and 2 actions, with mean and sigma fixed."""
    torch.manual_seed(0)
    agent = (module or script("ppo_continuous")).Agent(3, 2)
    with torch.no_grad():
        agent.actor_mean[-1].weight.zero_()
        agent.actor_mean[-1].bias.copy_(t(GAUSSIAN["mean"]))
        agent.actor_logstd.copy_(t(GAUSSIAN["std"]).log())
    return agent


def get_action_and_value_cases():
    def scored(fn):
        agent = gaussian_agent()
        with torch.no_grad():
            _, logp, entropy, value = fn(agent, torch.randn(2, 3), t(GAUSSIAN["actions"]))
        return logp, entropy, list(value.shape)

    def sampled(fn):  # mean mu and std sigma, to within 4 standard errors (1/sqrt(20000) = .007)
        agent = gaussian_agent()
        with torch.no_grad():
            samples = fn(agent, torch.randn(20_000, 3))[0]
        mean, std = samples.mean(0), samples.std(0)
        near = lambda x, y: torch.where((x - t(y)).abs() < 0.03, t(y), x)  # noqa: E731
        return near(mean, GAUSSIAN["mean"]), near(std, GAUSSIAN["std"])

    inputs = f"mu={GAUSSIAN['mean']}, sigma={GAUSSIAN['std']}, actions={GAUSSIAN['actions']}"
    expected = (GAUSSIAN_EXPECTED["logprob"], GAUSSIAN_EXPECTED["entropy"], [2, 1])
    return [
        Case(
            "(log pi(a|s), entropy, V's shape), summed over action dims", inputs, scored, expected
        ),
        Case(
            "20,000 samples: their (mean, std)",
            f"mu={GAUSSIAN['mean']}, sigma={GAUSSIAN['std']}",
            sampled,
            (GAUSSIAN["mean"], GAUSSIAN["std"]),
        ),
    ]


NORM_BATCHES = [1, 10, 40]  # split points: batches of 1, 9, 30 and 60 of 100 rows


def norm_data():
    rng = np.random.default_rng(0)
    return rng.normal([5.0, -3.0], [2.0, 0.5], (100, 2)).astype(np.float32)


def running_norm_update_cases():
    def merged(fn):
        norm = script("ppo_continuous").RunningNorm(2)
        for batch in np.split(norm_data(), NORM_BATCHES):
            fn(norm, torch.as_tensor(batch))
        return norm.mean, norm.var, norm.count.item()

    data = norm_data()
    # They start as a pseudo-sample of weight 1e-4 with mean 0 and var 1: off by ~1e-5 here.
    expected = (data.mean(0).tolist(), data.var(0).tolist(), 100.0)
    inputs = "100 rows of N((5, -3), (2, .5)^2), in batches of 1, 9, 30 and 60"
    return [
        Case(
            "(mean, var, count) after the 4 batches, as numpy's over all 100",
            inputs,
            merged,
            expected,
        )
    ]


ADAPTED_LR = [  # lr, kl -> lr, with target_kl 0.02 and max_lr 3e-4
    (3e-4, 0.05, 2e-4),  # above 2 x the target: / 1.5
    (1e-4, 0.005, 1.5e-4),  # below half of it: x 1.5
    (2.5e-4, 0.005, 3e-4),  # ... up to max_lr and no further
    (3e-4, 0.0, 3e-4),
    (1e-4, 0.02, 1e-4),  # inside the band, its edges included: unchanged
    (1e-4, 0.04, 1e-4),
    (1e-4, 0.01, 1e-4),
    (1.2e-5, 1.0, 1e-5),  # never below 1e-5
]


def adapted_lr_cases():
    return [
        Case(
            "the step size after an update",
            f"lr={lr}, kl={kl}, target_kl=0.02, max_lr=0.0003",
            lambda fn, lr=lr, kl=kl: fn(lr, kl, 0.02, 3e-4),
            expected,
        )
        for lr, kl, expected in ADAPTED_LR
    ]


# ---- the exercises of each rung, their cases, hints and known mistakes --------------------------
EXERCISES = {  # rung: {name in the script: (cases, one-line hint)}
    "reinforce": {
        "discounted_returns": (
            discounted_returns_cases,
            "loop t from the last step back; reset at each episode's end",
        ),
        "reinforce_loss": (reinforce_loss_cases, "minus the mean of log pi(a_t|s_t) * G_t"),
    },
    "vpg": {
        "vpg_loss": (
            vpg_loss_cases,
            "A = G - V, detached in the policy term; the value loss is the MSE",
        ),
    },
    "ppo": {
        "ppo_loss": (
            ppo_loss_cases,
            "ratio = exp(new - old); minus the mean of the min of the two terms",
        ),
        "value_loss": (
            lambda: value_loss_cases(False),
            "the mean squared error between returns and values",
        ),
    },
    "ppo_gae": {
        "compute_gae": (compute_gae_cases, "delta_t first, then A_t from the last step back"),
        "value_loss": (
            lambda: value_loss_cases(True),
            "the MSE; with old_values and clip_coef, the max of it and the clipped one",
        ),
    },
    "ppo_continuous": {
        "Agent.get_action_and_value": (
            get_action_and_value_cases,
            "a Normal(mean, exp(logstd)); sum log-prob and entropy over the last dim",
        ),
        "RunningNorm.update": (
            running_norm_update_cases,
            "merge the batch's mean and variance into the running ones, weighted by counts",
        ),
        "adapted_lr": (
            adapted_lr_cases,
            "/ 1.5 above 2 target_kl, * 1.5 below target_kl / 2, kept in [1e-5, max_lr]",
        ),
    },
}


def _no_reset(rewards, dones, gamma, last_value=None):
    returns, g = (
        torch.zeros_like(rewards),
        torch.zeros_like(rewards[0]) if last_value is None else last_value,
    )
    for i in reversed(range(len(rewards))):
        g = returns[i] = rewards[i] + gamma * g
    return returns


def _not_reward_to_go(rewards, dones, gamma, last_value=None):
    return _no_reset(rewards, dones, gamma)[:1].expand_as(rewards)


def _no_bootstrap(rewards, dones, gamma, last_value=None):
    return script("reinforce").discounted_returns(rewards, dones, gamma)


def _gamma_on_r(rewards, dones, gamma, last_value=None):
    return gamma * script("reinforce").discounted_returns(rewards, dones, gamma, last_value)


def _not_detached(logprobs, values, returns):
    return -(logprobs * (returns - values)).mean(), ((returns - values) ** 2).mean()


def _no_baseline(logprobs, values, returns):
    return -(logprobs * returns).mean(), ((returns - values) ** 2).mean()


def _v_minus_g(logprobs, values, returns):
    return -(logprobs * (values - returns).detach()).mean(), ((returns - values) ** 2).mean()


def _max_clip(new, old, advantages, clip_coef):
    ratio = (new - old).exp()
    return -torch.max(
        ratio * advantages, ratio.clamp(1 - clip_coef, 1 + clip_coef) * advantages
    ).mean()


def _log_ratio(new, old, advantages, clip_coef):
    ratio = new - old
    return -torch.min(
        ratio * advantages, ratio.clamp(1 - clip_coef, 1 + clip_coef) * advantages
    ).mean()


def _no_clip(new, old, advantages, clip_coef):
    return -((new - old).exp() * advantages).mean()


def _gae(
    rewards,
    values,
    next_values,
    terminated,
    episode_end,
    gamma,
    gae_lambda,
    cross=False,
    boot=False,
    lam=True,
    trunc=False,
):
    advantages, a = torch.zeros_like(rewards), torch.zeros_like(rewards[0])
    for i in reversed(range(len(rewards))):
        cut = (episode_end if trunc else terminated)[i].float()
        delta = rewards[i] + gamma * (1.0 if boot else 1 - cut) * next_values[i] - values[i]
        a = advantages[i] = (
            delta
            + gamma
            * (gae_lambda if lam else 1.0)
            * (1.0 if cross else 1 - episode_end[i].float())
            * a
        )
    return advantages, advantages + values


def _min_vloss(values, returns, old_values=None, clip_coef=None):
    loss = (returns - values) ** 2
    if old_values is not None and clip_coef is not None:
        loss = torch.min(
            loss, (returns - old_values - (values - old_values).clamp(-clip_coef, clip_coef)) ** 2
        )
    return loss.mean()


def _clip_v_itself(values, returns, old_values=None, clip_coef=None):
    loss = (returns - values) ** 2
    if old_values is not None and clip_coef is not None:
        loss = torch.max(loss, (returns - values.clamp(-clip_coef, clip_coef)) ** 2)
    return loss.mean()


def _gaussian(self, x, action=None, std=None, reduce="sum"):
    mean = self.actor_mean(x)
    dist = torch.distributions.Normal(
        mean, (std or (lambda s: s.exp()))(self.actor_logstd).expand_as(mean)
    )
    action = dist.sample() if action is None else action
    logp, entropy = dist.log_prob(action), dist.entropy()
    if reduce:
        logp, entropy = getattr(logp, reduce)(-1), getattr(entropy, reduce)(-1)
    return action, logp, entropy, self.critic(x)


def _overwrite(self, x):
    self.mean, self.var, self.count = x.mean(0), x.var(0, correction=0), self.count + x.shape[0]


def _mean_of_vars(self, x):
    total = self.count + x.shape[0]
    self.mean = (self.mean * self.count + x.mean(0) * x.shape[0]) / total
    self.var = (self.var * self.count + x.var(0, correction=0) * x.shape[0]) / total
    self.count = total


def _swapped_lr(lr, kl, target_kl, max_lr):
    if kl > 2 * target_kl:
        return min(lr * 1.5, max_lr)
    if kl < target_kl / 2:
        return max(lr / 1.5, 1e-5)
    return lr


def _unbounded_lr(lr, kl, target_kl, max_lr):
    return lr / 1.5 if kl > 2 * target_kl else lr * 1.5 if kl < target_kl / 2 else lr


MISTAKES = {  # name: [(the mistake in words, a wrong version)]
    "discounted_returns": [
        ("no reset at an episode's end: G flows back across it", _no_reset),
        ("not reward-to-go: every step gets the episode's whole return", _not_reward_to_go),
        ("last_value ignored: a cut-off return is not bootstrapped", _no_bootstrap),
        ("gamma multiplies r_t too: G_t = gamma (r_t + G_{t+1})", _gamma_on_r),
    ],
    "reinforce_loss": [
        (
            "the sign: minimizing +mean(log pi G) makes good actions rarer",
            lambda lp, g: (lp * g).mean(),
        ),
        ("a sum where the mean belongs", lambda lp, g: -(lp * g).sum()),
        ("probabilities where log-probabilities belong", lambda lp, g: -(lp.exp() * g).mean()),
    ],
    "vpg_loss": [
        ("the advantage is not detached, so the policy loss moves the critic", _not_detached),
        ("no baseline: the policy term uses G, not G - V", _no_baseline),
        ("A = V - G: the advantage's sign", _v_minus_g),
        (
            "the value loss not squared: mean |G - V|",
            lambda lp, v, g: (-(lp * (g - v).detach()).mean(), (g - v).abs().mean()),
        ),
    ],
    "ppo_loss": [
        ("max where the clip needs min", _max_clip),
        ("the ratio built from log-probabilities: new - old, not exp(new - old)", _log_ratio),
        ("no clip: the plain surrogate", _no_clip),
        (
            "the sign: maximized where it must be minimized",
            lambda n, o, a, e: script("ppo").ppo_loss(n, o, a, e).neg(),
        ),
    ],
    "value_loss": [
        ("min where the clipped value loss needs max", _min_vloss),
        ("V clipped to [-eps, eps] itself, not around the old values", _clip_v_itself),
        (
            "a sum where the mean belongs",
            lambda v, r, o=None, e=None: script("ppo_gae").value_loss(v, r, o, e) * len(v),
        ),
        ("not squared: mean |G - V|", lambda v, r, o=None, e=None: (r - v).abs().mean()),
    ],
    "compute_gae": [
        (
            "GAE crosses an episode's end: A_{t+1} of the next episode flows back",
            lambda *a: _gae(*a, cross=True),
        ),
        ("a termination bootstrapped: V(s_{t+1}) after a real end", lambda *a: _gae(*a, boot=True)),
        ("a truncation taken for a termination: no bootstrap", lambda *a: _gae(*a, trunc=True)),
        ("lambda left out: A_t = delta_t + gamma A_{t+1}", lambda *a: _gae(*a, lam=False)),
        ("returns = advantages: V(s_t) not added back", lambda *a: (_gae(*a)[0], _gae(*a)[0])),
    ],
    "Agent.get_action_and_value": [
        (
            "log-prob and entropy not summed over the action dimensions",
            lambda s, x, a=None: _gaussian(s, x, a, reduce=None),
        ),
        (
            "the mean over the action dimensions, where the sum belongs",
            lambda s, x, a=None: _gaussian(s, x, a, reduce="mean"),
        ),
    ],
    "RunningNorm.update": [
        ("the batch's statistics replace the running ones: earlier batches forgotten", _overwrite),
        ("the variances averaged: the spread between the batch means left out", _mean_of_vars),
    ],
    "adapted_lr": [
        ("raised where the policy moved too far, lowered where too little", _swapped_lr),
        ("not kept in [1e-5, max_lr]", _unbounded_lr),
    ],
}


def as_lists(value):
    """A case's value, tensors as lists of floats, so it can be compared and printed."""
    if isinstance(value, (tuple, list)) and not all(isinstance(v, (int, float)) for v in value):
        return tuple(as_lists(v) for v in value)
    if isinstance(value, torch.Tensor):
        return value.detach().float().tolist()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def close(got, expected, rtol=1e-4, atol=1e-5):
    """Same structure, shape and numbers (to rtol, atol); NaN never matches."""
    got, expected = as_lists(got), as_lists(expected)
    if isinstance(expected, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return False
        return all(close(g, e, rtol, atol) for g, e in zip(got, expected, strict=True))
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return False
    return math.isfinite(got) and abs(got - expected) <= atol + rtol * abs(expected)


def mistake(name, case, got):
    """The known mistake whose answer to this case is `got`, in words, else None."""
    for words, wrong in MISTAKES.get(name, []):
        try:
            if close(got, case.call(wrong)):
                return words
        except Exception:  # a wrong version that does not apply to this case
            continue
    return None
