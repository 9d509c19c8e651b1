# SPDX-License-Identifier: MIT
"""The cases of every exercise: one table, read by exercises/check.py (the grader) and by
test_all.py (section 1), so that no number is written twice.

Each case calls the function under test, `fn`, on inputs of the contract that the script's
`train()` uses (the dtypes and shapes its docstring states), and names what it expects. First
the hand-worked cases, whose numbers are worked out in the comments; then cases on random
inputs (fixed seeds) whose expected values are the script's own function's, values and
gradients, and, for the Agent's method, an agent whose every layer depends on its input. A
sampler's actions are compared, element by element, with the script's from the same state
(two_calls()); a sampling case's seeds are drawn anew on every grading run (run_seed()). A
method (Agent.get_action_and_value, RunningNorm.update) is bound to an object of the script's
own class, so a case checks the method alone. MISTAKES holds wrong versions that students
write: the grader names one when its answers equal the student's on every case.
"""

import copy
import importlib.util
import math
import random
import secrets
from contextlib import contextmanager
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


_BUILT = {}


def fresh(key, build):
    """A new copy of what build() makes, built once: the same agent for every call of a case,
    and no student's call can change the next one's."""
    if key not in _BUILT:
        _BUILT[key] = build()
    return copy.deepcopy(_BUILT[key])


def own(rung, name):
    """The script's own function: RUNG.NAME, or the method RUNG.Class.method."""
    found = script(rung)
    for part in name.split("."):
        found = getattr(found, part)
    return found


def t(values, dtype=torch.float32):
    return torch.tensor(values, dtype=dtype)


def column(values, dtype=torch.float32):
    """One env's values as train() passes them, time-major (T, N) with N = 1."""
    return t(values, dtype).view(-1, 1)


def gen(seed):
    """A random stream of its own, so that the inputs of a case never depend on what ran before."""
    return torch.Generator().manual_seed(seed)


@contextmanager
def seeded(seed):
    """torch's global random stream at `seed` inside, as it was outside (an Agent's
    initialization and Normal.sample draw from it)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def run_seed():
    """A seed of 64 random bits, as torch's own default seed, drawn anew on every grading run
    for a sampling case: a sampler cannot recognise the case by its seed, its inputs or its
    agent, and so cannot draw right only while it is graded. The case shows the seed, so that
    a refusal can be reproduced."""
    return secrets.randbits(64)


def skipped(seed):
    """How many numbers (1 to 1,000) a sampling case draws after torch.manual_seed(seed) and
    before its calls, so that the state they get is never a freshly seeded one."""
    return 1 + seed % 1000


def stream_text(seed):
    return f"torch.manual_seed({seed}), then torch.rand({skipped(seed)})"


@dataclass
class Case:
    label: str  # what the case shows
    inputs: str  # its inputs, small enough to read (or how they were drawn)
    call: object  # fn -> what it got
    expected: object  # a number, a list, or a tuple of them
    kind: str = "hand"  # "hand": worked out by hand; "course": a course's own test;
    # "random": the script's own on random inputs
    parts: tuple = ()  # the names of a tuple's parts, for the grader's line
    scale: float = 1.0  # the size of the numbers it computes from: the tolerance's floor
    tolerance: float = None  # an absolute tolerance of the case's own (a course's), else RTOL
    course: str = ""  # for a course's own test: whose, in words


def against(rung, name, label, inputs, call, parts=(), scale=1.0):
    """A case on random inputs whose expected answer is the script's own function's."""
    expected = as_lists(call(own(rung, name)))
    return Case(label, inputs, call, expected, "random", parts, scale)


def backward(loss):
    """loss.backward(), as train() calls it, or one clear reason why it cannot be."""
    if not isinstance(loss, torch.Tensor):
        raise TypeError(f"returned a {type(loss).__name__}: train() needs a tensor to backward")
    if loss.dim() != 0:
        raise ValueError(f"returned shape {tuple(loss.shape)}: train() needs a scalar loss")
    if not loss.requires_grad:
        raise ValueError(
            "returned a loss with no gradient: nothing it was given reaches it through autograd"
            " (a .detach(), .item(), numpy or torch.no_grad() on the way?)"
        )
    loss.backward()


def grad_or_none(x):
    """x's gradient, or "none" where no gradient reached it."""
    return "none" if x.grad is None or not x.grad.any() else x.grad


def moved(**groups):
    """What a backward pass moved: for each group of parameters "none", or (the gradient's
    norm, its dot product with a fixed random direction), enough to tell two gradients apart."""
    summary = {}
    for name, params in groups.items():
        grads = [p.grad for p in params if p.grad is not None]
        norm = math.sqrt(sum((g.double() ** 2).sum().item() for g in grads))
        if norm <= 1e-12:
            summary[name] = "none"
            continue
        direction = gen(7)
        dot = sum(
            (g.double() * torch.randn(g.shape, generator=direction, dtype=torch.float64)).sum()
            for g in grads
        )
        summary[name] = [norm, float(dot)]
    return summary


def moves(loss, **groups):
    """backward() of loss, then what it moved; a loss that reaches no parameter moved none."""
    if isinstance(loss, torch.Tensor) and loss.requires_grad:
        backward(loss)
    return moved(**groups)


def alike(x, shape, what):
    """Refuse x unless a tensor of that shape, before any arithmetic that would broadcast it."""
    if not isinstance(x, torch.Tensor) or x.shape != tuple(shape):
        got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"{what} has shape {got}, not {tuple(shape)}")


def near(x, target, within, below=None):
    """x, or target where x is within `within` of it (`below` under it, where the two sides
    differ), for statistics of random samples."""
    x = torch.as_tensor(x, dtype=torch.float32)
    target = torch.as_tensor(target, dtype=torch.float32).expand_as(x)
    below = within if below is None else below
    return torch.where((x - target < within) & (target - x < below), target, x)


# ---- a sampler: torch's draws from the seeded stream, then N(mu, sigma)'s statistics ---------
# A sampling case seeds torch's global generator, calls the method twice (the stream going on
# between the calls), and compares every action, element by element, with the script's own from
# the same seed: that is the verdict (two_calls() says why). draws() only explains a refusal: do
# the draws at least look like N(mu, sigma), independent across rows, dimensions and calls?
REFUSAL = 1e-6  # the chance, at most, that draws() calls a true N(mu, sigma) sampler's draws
# otherwise, per function: which line a refused sampler gets, never whether it is refused
DRAWING_CASES = 2  # the cases of Agent.get_action_and_value that run draws(): they share REFUSAL
SLACK = 1e-3  # float32's rounding of a and mu in z (about 1e-6), far above it


def draw_tests(dims):
    """How many tests draws() makes of draws in `dims` dimensions."""
    return 3 * dims + 2 + dims * (dims - 1) // 2 + 1


def thresholds(calls, rows, dims):
    """{statistic: (how far above its target it may be, how far below)}, for `calls` calls'
    draws of `rows` rows and `dims` dimensions, at each test's share of REFUSAL. They decide
    which line a sampler that does not draw torch's numbers gets, never a verdict: the script's
    draws are fixed by the case's seed and pass every test."""
    x = math.log(2 * draw_tests(dims) * DRAWING_CASES / REFUSAL)  # a test refuses: <= 2 e^-x
    n = calls * rows  # the draws of one dimension
    k = n - 1  # their variance's degrees of freedom
    mean = math.sqrt(2 * x / n)
    high = math.sqrt(1 + 2 * math.sqrt(x / k) + 2 * x / k) - 1
    low = 1 - math.sqrt(1 - 2 * math.sqrt(x / k))
    ks = math.sqrt(x / (2 * n))
    pairs = calls * dims * ((rows - 1) // 2)  # of neighbouring rows, the fewer of the two ways
    return {
        name: (limit + SLACK, (low if name == "std" else limit) + SLACK)
        for name, limit in [
            ("mean", mean),
            ("std", high),
            ("ks", ks),
            ("rows", math.sqrt(2 * x / pairs)),
            ("dims", math.sqrt(2 * x / n)),
            ("calls", math.sqrt(2 * x / (rows * dims))),
        ]
    }


DRAW_PARTS = (
    "the mean of z = (a - mu) / sigma in each dimension",
    "the std of z in each dimension",
    "the largest gap between z's distribution and N(0, 1)'s (Kolmogorov-Smirnov)",
    "the correlation of z on neighbouring rows (2i and 2i + 1, 2i + 1 and 2i + 2)",
    "the correlation of z between action dimensions",
    "the correlation of z between the two calls",
)


def cosine(u, w):
    return float((u * w).sum() / (u.norm() * w.norm()).clamp_min(1e-300))


def ks_distance(z):
    """sup |F_n - Phi|: the Kolmogorov-Smirnov distance of the draws z from N(0, 1)."""
    z = z.sort().values
    n = len(z)
    cdf = 0.5 * (1 + torch.erf(z / math.sqrt(2)))
    steps = torch.arange(n + 1, dtype=torch.float64) / n
    return float(torch.maximum(steps[1:] - cdf, cdf - steps[:-1]).max())


def draws(actions, mu, sigma):
    """The statistics of two calls' actions (B, dims) drawn from N(mu, sigma), each at its
    target or, past its threshold, as it is: (means, stds, KS distances, [the two ways of
    neighbouring rows], [each pair of dimensions], the calls' cosine).

    A diagnostic, not the verdict. A sampler passes only if its actions are torch's draws from
    the seeded state (two_calls()); these statistics say, of one that is not, whether its draws
    at least look like independent N(mu, sigma) numbers: its line names the statistic that
    fails, or says that the draws look N(mu, sigma) but are not torch's (LOOKS, TORCHS). No
    finite set of statistics could be the verdict: a fixed table of normal quantiles shuffled by
    a call counter, rows 4k + 2 and 4k + 3 the negatives of rows 4k and 4k + 1, mu itself unless
    the batch is large, a second call that replays the first rolled by a row, one dimension the
    other in reverse row order, or torch.manual_seed(counter) on every call pass all of these
    tests (exercises/test_exercises.py has each); only the script's own draws from the given
    state cannot be matched by a constructed sequence.

    REFUSAL is shared by the function's tests (a union bound): 10 tests a case in 2 dimensions,
    2 cases, so each test calls true N(mu, sigma) draws otherwise with a chance of at most 5e-8,
    and all 20 together 1e-6 (then such a sampler's line names a statistic, not the named
    mistake). Each test's threshold is a tail bound that holds for every n:
      the mean of n draws is N(0, 1/n):             P(|mean| > c) <= 2 exp(-n c^2 / 2)
      their variance, (n - 1) s^2 ~ chi^2_{n-1}:    Laurent and Massart (2000), Lemma 1
      the Kolmogorov-Smirnov distance D_n to N(0, 1): P(D_n > t) <= 2 exp(-2 n t^2) (Massart)
      the cosine of two independent vectors, one of m N(0, 1) draws (a uniform direction):
                                                    P(|cos| > c) <= 2 exp(-m c^2 / 2) (Ball,
      "An elementary introduction to modern convex geometry", Lemma 2.2: a cap of the sphere)
    The cosines test independence: of rows 2i and 2i + 1 and of rows 2i + 1 and 2i + 2 (each
    pair once, so that the two vectors share no draw), of two action dimensions, of two calls.
    mu + sigma on one row and mu - sigma on the next fails the KS distance (0.34), a uniform on
    mu +/- sqrt(3) sigma too (0.057, where the threshold is 0.016 for 40,000 draws), one z for
    both dimensions the dimensions' cosine, the same draws on every call (a seed of its own, or
    x itself) the calls' cosine.
    """
    z = (torch.stack(actions).double() - mu.double()) / sigma.double()  # (2, B, dims)
    calls, rows, dims = z.shape
    limits = thresholds(calls, rows, dims)
    columns = z.reshape(-1, dims).T
    half = (rows - 1) // 2  # pairs of neighbouring rows, each way
    neighbours = [
        cosine(z[:, 0 : 2 * half : 2].flatten(), z[:, 1 : 2 * half : 2].flatten()),
        cosine(z[:, 1 : 2 * half + 1 : 2].flatten(), z[:, 2 : 2 * half + 2 : 2].flatten()),
    ]
    pairs = [cosine(columns[i], columns[j]) for i in range(dims) for j in range(i + 1, dims)]
    found = dict(
        mean=(columns.mean(1), 0.0),
        std=(columns.std(1), 1.0),
        ks=([ks_distance(c) for c in columns], 0.0),
        rows=(neighbours, 0.0),
        dims=(pairs, 0.0),
        calls=(cosine(z[0].flatten(), z[1].flatten()), 0.0),
    )
    return tuple(near(value, target, *limits[key]) for key, (value, target) in found.items())


def expected_draws(dims):
    """What draws() gives for a right sampler: every statistic at its target."""
    pairs = dims * (dims - 1) // 2
    return ([0.0] * dims, [1.0] * dims, [0.0] * dims, [0.0, 0.0], [0.0] * pairs, 0.0)


SAMPLE = "Agent.get_action_and_value"
TORCHS = (
    "whether each call's actions are torch's draws from the seeded stream, element by element"
    " (1.0) or not (0.0)"
)
LOOKS = (  # before TORCHS, where draws() ran: what a refused sampler's draws at least are
    "the draws look N(mu, sigma) (z = (a - mu) / sigma passed every test of independent N(0, 1)"
    " numbers); "
)


def two_calls(fn, agent, x, seed):
    """fn(agent(), x) twice after stream_text(seed), the stream going on between them, and
    the script's own method twice from the same state: (fn's first result, both calls' actions,
    [for each call 1.0 where its actions are the script's, else 0.0]). An action is refused
    unless of shape (len(x), 2). agent() makes a new copy of the case's agent.

    The script's --seed seeds torch's generator, and from the seeded state its
    Normal(mu, sigma).sample(), .rsample(), mu + sigma * torch.randn_like(mu),
    torch.normal(mu, sigma) and mu + sigma * torch.randn(mu.shape) all draw the same numbers
    (torch 2.x on a CPU: normal_(0, 1) on the whole batch, then * sigma + mu). So a right
    sampler matches the script's actions, each to RTOL of its size plus FLOOR times the largest,
    on every run: it is never refused. A sampler that draws otherwise (from numpy or Python's
    random, a row at a time, in float64, a generator of its own) is refused every time, by
    design: the draws from the given state are the one verdict that no constructed sequence can
    meet without being the script's sampler (draws() lists constructed ones that pass every
    statistic)."""
    size = len(x)
    script_method = own("ppo_continuous", SAMPLE)
    with seeded(seed):
        torch.rand(skipped(seed))
        script_actions = [script_method(agent(), x.clone())[0] for _ in range(2)]
    student = agent()
    with seeded(seed):
        torch.rand(skipped(seed))
        first = fn(student, x.clone())
        second = fn(student, x.clone())
    for result in (first, second):
        alike(result[0], (size, 2), "the action")
    actions = [first[0], second[0]]
    return first, actions, [torchs(a, m) for a, m in zip(actions, script_actions, strict=True)]


def torchs(action, script_action):
    """1.0 where every element of action is the script's, to RTOL of its size plus FLOOR times
    the largest (close()'s tolerance, as a tensor), else 0.0."""
    floor = FLOOR * max(1.0, float(script_action.abs().max()))
    gap = (action.double() - script_action.double()).abs()
    return float(bool((gap <= RTOL * script_action.double().abs() + floor).all()))


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
    # train()'s contract: float32 rewards and bool dones (T, N), here one env: N = 1.
    cases = []
    for dones, gamma, last, expected in DISCOUNTED_RETURNS:
        shown = [bool(d) for d in dones]
        inputs = f"rewards={R}, dones={shown}, gamma={gamma}, last_value={last}"
        last_value = None if last is None else t([last])

        def call(fn, dones=dones, gamma=gamma, last_value=last_value):
            return fn(column(R), column(dones, torch.bool), gamma, last_value=last_value)

        expected = [[g] for g in expected]
        cases.append(Case("one env, (T, N) = (3, 1)", inputs, call, expected))
    c = RETURNS_2_ENVS
    inputs = f"rewards={c['rewards']}, dones={c['dones']}, gamma=0.5, last_value={c['last_value']}"

    def two(fn):
        dones = t(c["dones"], torch.bool)
        return fn(t(c["rewards"]), dones, 0.5, last_value=t(c["last_value"]))

    cases.append(Case("time-major (T, N): each env on its own", inputs, two, c["expected"]))
    return cases + [line_world_case()]


# The line-world MP's own reward-to-go check: two episodes of rewards 0, 1, ..., 10, each ended by
# its last step, at a discount of 0.5. Its values, rounded by the MP: G_10 = 10, G_9 = 9 + 5 = 14,
# G_8 = 8 + 7 = 15, ..., G_0 = sum_k k / 2^k = 1.98828125.
LINE_WORLD_RETURNS = [1.9883, 3.9766, 5.9531, 7.9062, 9.8125, 11.625, 13.25, 14.5, 15.0, 14.0, 10.0]


def line_world_case():
    """The MP's check as train() would pass it: one env, (T, N) = (22, 1), to 1e-4 (its values
    are rounded)."""
    rewards, dones = list(range(11)) * 2, ([False] * 10 + [True]) * 2

    def call(fn):
        return fn(column(rewards), column(dones, torch.bool), 0.5)

    return Case(
        "the line-world MP's own reward-to-go check (to 1e-4)",
        "rewards 0, 1, ..., 10 twice, dones True at the two 10s, gamma=0.5, last_value=None",
        call,
        [[g] for g in LINE_WORLD_RETURNS * 2],
        kind="course",
        tolerance=1e-4,
        course="the line-world MP's own check",
    )


# ---- reinforce_loss(logprobs, returns) ----------------------------------------------------------
# -(mean(-1 * 3, -2 * -1)) = -(-3 + 2) / 2 = 0.5; d/dlogp = -G / 2 = (-1.5, 0.5)
REINFORCE = dict(logprobs=[-1.0, -2.0], returns=[3.0, -1.0], loss=0.5, grad=[-1.5, 0.5])


def reinforce_loss_cases():
    c = REINFORCE
    inputs = f"logprobs={c['logprobs']}, returns={c['returns']}"

    def grad(fn):
        logprobs = t(c["logprobs"]).requires_grad_()
        backward(fn(logprobs, t(c["returns"])))
        return logprobs.grad

    return [
        Case(
            "the loss",
            inputs,
            lambda fn: fn(t(c["logprobs"]).requires_grad_(), t(c["returns"])),
            c["loss"],
        ),
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
            backward(losses[0 if which == "policy" else 1])
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
            return fn((old + t(PPO_RATIOS).log()).requires_grad_(), old, adv, eps)

        return call

    def grad(fn):
        new = t(PPO_RATIOS).log().requires_grad_()
        backward(fn(new, torch.zeros(6), adv, 0.2))
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
    # train()'s contract: ppo.py's value_loss takes (values, returns); ppo_gae.py's always gets
    # a clip_coef, and old_values only with --clip-vloss (else None).
    def plain(fn):
        values = t(VALUE["values"]).requires_grad_()
        loss = fn(values, t(VALUE["returns"]), *((None, 0.2) if clipped else ()))
        backward(loss)
        return loss, values.grad

    inputs = f"values={VALUE['values']}, returns={VALUE['returns']}"
    inputs += ", old_values=None, clip_coef=0.2" if clipped else ""
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
        if eps is None:  # the signature's default, not a call train() makes
            continue

        def call(fn, old=old, eps=eps):
            values = t(VL_VALUES).requires_grad_()
            loss = fn(values, t(VL_RETURNS), None if old is None else t(old), eps)
            backward(loss)
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
    """A GAE_CASES case as train() passes it: every tensor float32 (T, N), here N = 1."""
    terminated, ended, next_value_1, gae_lambda, _ = GAE_CASES[case]
    next_values = list(GAE_NEXT_VALUES)
    next_values[1] = next_value_1
    tensors = GAE_REWARDS, GAE_VALUES, next_values, terminated, ended
    return (*(column(x) for x in tensors), 0.5, gae_lambda)


def compute_gae_cases():
    cases = []
    for label, (terminated, ended, next_value_1, gae_lambda, expected) in GAE_CASES.items():
        next_values = list(GAE_NEXT_VALUES)
        next_values[1] = next_value_1
        flags = f"terminated={list(map(float, terminated))}, episode_end={list(map(float, ended))}"
        inputs = (
            f"rewards={GAE_REWARDS}, values={GAE_VALUES}, next_values={next_values}, {flags}, "
            f"gamma=0.5, gae_lambda={gae_lambda}"
        )
        returns = [[a + v] for a, v in zip(expected, GAE_VALUES, strict=True)]  # returns = A + V
        cases.append(
            Case(
                f"{label}: (advantages, returns), one env",
                inputs,
                lambda fn, c=label: fn(*gae_inputs(c)),
                ([[a] for a in expected], returns),
                parts=("advantages", "returns"),
            )
        )

    def two(fn):
        both = lambda x: torch.stack([t(x), t(x)], 1)  # noqa: E731
        terminated = t([[0.0, 0.0], [0.0, 1.0], [0.0, 0.0]])  # float32 flags, as train()'s
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
        agent = fresh("gaussian", gaussian_agent)
        with torch.no_grad():
            _, logp, entropy, value = fn(agent, torch.randn(2, 3), t(GAUSSIAN["actions"]))
        return logp, entropy, list(value.shape)

    seed = run_seed()  # x's and the agent's
    stream = run_seed()  # the calls'
    x = torch.randn(20_000, 3, generator=gen(seed))

    def agent_copy():
        return fresh(("input", seed), lambda: input_agent(seed))

    def sampled(fn):  # torch's draws from the state, then z = (a - mu) / sigma's statistics
        with torch.no_grad():
            agent = agent_copy()
            mu, sigma = agent.actor_mean(x), agent.actor_logstd.exp().expand(len(x), 2)
            _, actions, torch_draws = two_calls(fn, agent_copy, x, stream)
        return (*draws(actions, mu, sigma), torch_draws)

    inputs = f"mu={GAUSSIAN['mean']}, sigma={GAUSSIAN['std']}, actions={GAUSSIAN['actions']}"
    expected = (GAUSSIAN_EXPECTED["logprob"], GAUSSIAN_EXPECTED["entropy"], [2, 1])
    return [
        Case(
            "(log pi(a|s), entropy, V's shape), summed over action dims", inputs, scored, expected
        ),
        Case(
            "20,000 draws in two calls from a seeded stream: z = (a - mu) / sigma as"
            " independent N(0, 1) numbers, then the actions as torch's own draws",
            f"x float32 (20000, 3) ~ N(0, 1), action None, x and a random agent from seed {seed},"
            f" the calls after {stream_text(stream)}",
            sampled,
            (*expected_draws(2), [1.0, 1.0]),
            "random",  # the script's own draws, on a random agent
            parts=(*DRAW_PARTS, LOOKS + TORCHS),
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
            parts=("mean", "var", "count"),
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
            scale=0.0,  # step sizes of 1e-5 to 3e-4: the tolerance is relative to each
        )
        for lr, kl, expected in ADAPTED_LR
    ]


# ---- random inputs of train()'s contract, against the script's own function -----------------
# Each draw has a seed of its own; its expected answer is what the script's function gives.
# Sizes change from draw to draw (never 2 samples, say, so that twice the mean is no sum).


def discounted_returns_random():
    def draw(seed, steps, envs, gamma, bootstrap):
        g = gen(seed)
        rewards = torch.randn(steps, envs, generator=g)
        dones = torch.rand(steps, envs, generator=g) < 0.25
        last = torch.randn(envs, generator=g) if bootstrap else None

        def call(fn):
            last_value = None if last is None else last.clone()
            return fn(rewards.clone(), dones.clone(), gamma, last_value=last_value)

        inputs = (
            f"rewards float32 {steps, envs} ~ N(0, 1), dones bool (a quarter True), "
            f"gamma={gamma}, last_value={'float32 (N,)' if bootstrap else None}"
        )
        return against("reinforce", "discounted_returns", f"random, seed {seed}", inputs, call)

    return [draw(1, 12, 4, 0.99, False), draw(2, 7, 3, 0.9, True), draw(3, 20, 1, 0.5, False)]


def loss_random(rung, name, seed, size, **extra):
    """A loss of float32 (B,) inputs: (the loss, its gradient in the input carrying the graph).
    extra: ppo_loss's clip_coef, value_loss's old values and clip_coef."""
    g = gen(seed)
    if name == "reinforce_loss":
        first = -3 * torch.rand(size, generator=g)  # logprobs, with the graph
        rest = [2 * torch.randn(size, generator=g)]  # returns
        shown = "logprobs float32 (B,) in [-3, 0], returns float32 (B,) ~ N(0, 4)"
    elif name == "ppo_loss":
        old = -2 * torch.rand(size, generator=g)
        first = old + 0.3 * torch.randn(size, generator=g)  # new_logprobs: ratios .5 to 2
        rest = [old, torch.randn(size, generator=g), extra["clip_coef"]]
        shown = f"new - old logprobs ~ N(0, .09), advantages ~ N(0, 1), clip_coef={rest[-1]}"
    else:  # value_loss: values, returns[, old_values, clip_coef]
        first = torch.randn(size, generator=g)
        rest = [2 * torch.randn(size, generator=g)]
        shown = "values ~ N(0, 1), returns ~ N(0, 4)"
        if rung == "ppo_gae":
            old = first + 0.3 * torch.randn(size, generator=g) if extra["old"] else None
            rest += [old, extra["clip_coef"]]
            shown += f", old_values {'V + N(0, .09)' if extra['old'] else None}"
            shown += f", clip_coef={extra['clip_coef']}"

    def call(fn):
        x = first.clone().requires_grad_()
        loss = fn(x, *(r.clone() if isinstance(r, torch.Tensor) else r for r in rest))
        backward(loss)
        return loss, grad_or_none(x)

    inputs = f"B={size}, {shown}"
    grad_in = dict(reinforce_loss="logprobs", ppo_loss="new_logprobs", value_loss="values")
    parts = ("the loss", f"its gradient in {grad_in[name]}")
    return against(rung, name, f"random, seed {seed}", inputs, call, parts)


def seeded_agent(seed):
    with seeded(seed):
        return script("vpg").Agent(4, 3)


def vpg_loss_random():
    """vpg's Agent scores random observations: its log-probabilities and values go in."""

    def draw(seed, size, what):
        g = gen(seed)
        obs, actions = torch.randn(size, 4, generator=g), torch.randint(0, 3, (size,), generator=g)
        returns = 1 + 2 * torch.randn(size, generator=g)

        def call(fn):
            agent = fresh(("vpg", seed), lambda: seeded_agent(seed))
            _, logprobs, _, values = agent.get_action_and_value(obs, actions)
            losses = fn(logprobs, values.flatten(), returns.clone())
            if what == "losses":
                return losses
            policy_loss, value_loss = losses
            loss = policy_loss if what == "policy_loss" else value_loss
            return moves(loss, actor=agent.actor.parameters(), critic=agent.critic.parameters())

        labels = {
            "losses": ("(policy_loss, value_loss)", ("policy_loss", "value_loss")),
            "policy_loss": ("what policy_loss moves: the actor, never the critic", ()),
            "value_loss": ("what value_loss moves: the critic, never the actor", ()),
        }
        label, parts = labels[what]
        inputs = f"vpg's Agent on B={size} random observations, returns ~ N(1, 4)"
        return against(
            "vpg", "vpg_loss", f"random agent, seed {seed}: {label}", inputs, call, parts
        )

    draws = [draw(seed, size, "losses") for seed, size in ((1, 6), (2, 11), (3, 17))]
    return draws + [
        draw(seed, 9, what) for seed in (4, 5) for what in ("policy_loss", "value_loss")
    ]


def compute_gae_random():
    def draw(seed, steps, envs, gamma, gae_lambda):
        g = gen(seed)
        rewards, values, next_values = (torch.randn(steps, envs, generator=g) for _ in range(3))
        terminated = (torch.rand(steps, envs, generator=g) < 0.15).float()
        truncated = (torch.rand(steps, envs, generator=g) < 0.15).float() * (1 - terminated)
        episode_end = torch.maximum(terminated, truncated)
        tensors = rewards, values, next_values, terminated, episode_end

        def call(fn):
            return fn(*(x.clone() for x in tensors), gamma, gae_lambda)

        inputs = (
            f"rewards, values, next_values float32 {steps, envs} ~ N(0, 1), terminated and "
            f"episode_end float32 0.0 or 1.0 (some truncated), gamma={gamma}, "
            f"gae_lambda={gae_lambda}"
        )
        label = f"random, seed {seed}"
        return against("ppo_gae", "compute_gae", label, inputs, call, ("advantages", "returns"))

    return [draw(1, 16, 4, 0.99, 0.95), draw(2, 9, 3, 0.9, 0.8), draw(3, 20, 1, 0.5, 1.0)]


def input_agent(seed):
    """ppo_continuous's Agent on 3 observations and 2 actions whose every part depends on its
    input: every layer moved off its initialization by noise (as training moves it), the
    actor's last layer near gain 1 (the script's starts at .01), a sigma of its own in each
    dimension, and observation statistics far from (0, 1), so that normalizing x again inside
    the method changes what comes out. Every number is random from the seed, none fixed: a
    sampler finds no sign of the grader in the agent."""
    with seeded(seed):
        agent = script("ppo_continuous").Agent(3, 2)
        with torch.no_grad():
            for parameter in agent.parameters():
                parameter.add_(0.1 * torch.randn_like(parameter))
            agent.actor_mean[-1].weight.normal_(0.0, 64**-0.5)
            agent.actor_mean[-1].bias.normal_(0.0, 0.5)
            agent.actor_logstd.copy_(t([-0.7, 0.3]) + 0.2 * torch.randn(2))
            agent.obs_norm.mean.copy_(2 * torch.randn(3))
            agent.obs_norm.var.copy_(0.5 + torch.rand(3))
            agent.obs_norm.count.fill_(float(torch.randint(100, 10**6, ())))
    return agent


def get_action_and_value_random():
    def draw(seed, size, what):
        g = gen(seed)
        x, actions = torch.randn(size, 3, generator=g), torch.randn(size, 2, generator=g)
        weights = 0.5 + torch.rand(size, generator=g)  # log pi's gradient: a weighted sum

        def call(fn):
            agent = fresh(("input", seed), lambda: input_agent(seed))
            action, logprob, entropy, value = fn(agent, x.clone(), actions.clone())
            if what == "values":
                return logprob, entropy, value
            groups = dict(
                actor_mean=agent.actor_mean.parameters(),
                actor_logstd=[agent.actor_logstd],
                critic=agent.critic.parameters(),
            )
            if what == "log pi":
                return moves((weights * logprob).sum(), **groups)
            return moves((entropy if what == "entropy" else value).sum(), **groups)

        labels = {
            "values": "(log pi(a|x), entropy, V(x)) of given actions",
            "log pi": "what log pi(a|x) moves: actor_mean and actor_logstd, never the critic",
            "entropy": "what the entropy moves: actor_logstd alone",
            "V": "what V(x) moves: the critic alone",
        }
        inputs = f"x float32 ({size}, 3) ~ N(0, 1), actions float32 ({size}, 2) ~ N(0, 1)"
        label = f"an agent whose layers depend on x, seed {seed}: {labels[what]}"
        parts = ("log pi(a|x)", "entropy", "V(x)") if what == "values" else ()
        return against("ppo_continuous", "Agent.get_action_and_value", label, inputs, call, parts)

    def sampled(size):
        """Two calls on `size` rows from a seeded stream, its seeds drawn for this run: log pi
        and V of the first call's action against the script's; on 20,000 rows, z's statistics;
        then whether the actions are torch's draws."""
        seed = run_seed()  # x's and the agent's
        stream = run_seed()  # the calls'
        x = torch.randn(size, 3, generator=gen(seed))
        big = size > 1_000  # enough rows for draws()' statistics

        def agent_copy():
            return fresh(("input", seed), lambda: input_agent(seed))

        def call(fn):
            agent = agent_copy()
            with torch.no_grad():
                mu, sigma = agent.actor_mean(x), agent.actor_logstd.exp().expand(size, 2)
                first, actions, torch_draws = two_calls(fn, agent_copy, x, stream)
                action, logprob, _, value = first
                _, own_logprob, _, own_value = own("ppo_continuous", SAMPLE)(agent, x, action)
                alike(logprob, own_logprob.shape, "log pi(a|x)")
                alike(value, own_value.shape, "V(x)")
            return (
                near((logprob - own_logprob).abs().max(), 0.0, 1e-4),
                near((value - own_value).abs().max(), 0.0, 1e-4),
                *(draws(actions, mu, sigma) if big else ()),
                torch_draws,
            )

        rows = (
            f"{size:,} draws"
            if big
            else f"{size} row{'s' * (size > 1)} (train()'s, --num-envs {size})"
        )
        label = (
            f"an agent whose layers depend on x, {rows} in two calls from a seeded stream:"
            " (|log pi - the script's|, |V - the script's|, "
            + ("z = (a - mu(x)) / sigma as independent N(0, 1) numbers, " if big else "")
            + "the actions as torch's own draws)"
        )
        inputs = (
            f"x float32 ({size}, 3) ~ N(0, 1), action None, x and the agent from seed {seed},"
            f" the calls after {stream_text(stream)}"
        )
        parts = ("|log pi - the script's|", "|V - the script's|")
        parts += (*DRAW_PARTS, LOOKS + TORCHS) if big else (TORCHS,)
        statistics = expected_draws(2) if big else ()
        expected = (0.0, 0.0, *statistics, [1.0, 1.0])
        return Case(label, inputs, call, expected, "random", parts)

    whats = ("values", "log pi", "entropy", "V")
    given = [draw(seed, size, w) for seed, size in ((1, 7), (2, 12)) for w in whats]
    return given + [sampled(20_000), sampled(16), sampled(1)]


def running_norm_update_random():
    def draw(seed, sizes):
        g = gen(seed)
        loc, spread = 2 * torch.randn(3, generator=g), torch.exp(0.5 * torch.randn(3, generator=g))
        batches = [
            loc + 0.3 * k + spread * torch.randn(n, 3, generator=g) for k, n in enumerate(sizes)
        ]

        def call(fn):
            norm = script("ppo_continuous").RunningNorm(3)
            for batch in batches:
                fn(norm, batch.clone())
            dtypes = tuple(str(b.dtype) for b in (norm.mean, norm.var, norm.count))
            return norm.mean, norm.var, norm.count, dtypes

        shown = ", ".join(map(str, sizes))
        inputs = f"float32 batches of {shown} rows (B, 3) of a drifting Gaussian"
        parts = ("mean", "var", "count", "the buffers' dtypes")
        return against(
            "ppo_continuous", "RunningNorm.update", f"random, seed {seed}", inputs, call, parts
        )

    return [draw(1, [1, 1, 4, 16, 8]), draw(2, [8, 8, 8, 8]), draw(3, [1, 1, 1, 1, 64])]


def adapted_lr_random():
    """Step sizes on both sides of each bound and KLs on both sides of each edge of the band,
    where a wrong factor or a missing bound shows."""
    rng, cases = random.Random(52), []
    for target_kl, max_lr in ((0.01, 1e-3), (0.02, 3e-4), (0.05, 2.5e-4)):
        draws = [
            ("near the floor, a KL too far", rng.uniform(1e-5, 3e-5), rng.uniform(2.01, 10)),
            ("near the floor, a KL too far", rng.uniform(1e-5, 3e-5), rng.uniform(2.01, 10)),
            ("near max_lr, a KL too small", max_lr / rng.uniform(1.01, 2.5), rng.uniform(0, 0.49)),
            ("near max_lr, a KL too small", max_lr / rng.uniform(1.01, 2.5), rng.uniform(0, 0.49)),
            ("just above the band", rng.uniform(2e-5, max_lr / 1.6), rng.uniform(2.001, 2.1)),
            ("just inside the band", rng.uniform(2e-5, max_lr), rng.uniform(0.51, 1.99)),
        ]
        for label, lr, ratio in draws:
            kl = ratio * target_kl

            def call(fn, lr=lr, kl=kl, target_kl=target_kl, max_lr=max_lr):
                return fn(lr, kl, target_kl, max_lr)

            inputs = f"lr={lr:.6g}, kl={kl:.6g}, target_kl={target_kl}, max_lr={max_lr}"
            expected = call(own("ppo_continuous", "adapted_lr"))
            cases.append(Case(f"random: {label}", inputs, call, expected, "random", scale=0.0))
    return cases


# ---- the CartPole homework's own tests ---------------------------------------------------------
# The course fixes each loss on random data: after torch.manual_seed(0) it draws, in this order,
# states (10, 5, 4) uniform in [0, 1), actions randint(0, 1) (one action: all 0), rewards
# uniform, not_dones randint(0, 2), log_probs uniform (the old policy's) and returns uniform
# (for PPO, 2 * uniform - 1); then torch.manual_seed(0) again, the policy nn.Linear(4, 1) and
# then the value nn.Linear(4, 1). Its losses, its values, its tolerance (absolute):
#   REINFORCE  -mean(log_probs * returns)                                   -0.2369
#   VPG        A = returns - V(states): mean(A^2) - mean(log_probs * A)      0.0618
#   PPO        the same A; new log-probs from Categorical(logits=policy(states)) (one action,
#              so 0); -mean(min(ratio A, clip(ratio, 0.9, 1.1) A)) + mean(A^2)  0.9314
# On the scripts' functions, each (10, 5) tensor flattened to train()'s (B,) = (50,): reinforce_loss
# of (log_probs, returns); vpg_loss's two losses summed (its A is detached: the same value); and
# ppo_loss (clip_coef 0.1) plus ppo.py's own value_loss, the new log-probs from ppo.py's Agent
# with the course's two networks as its actor and critic.
HOMEWORK = dict(reinforce=-0.2369, vpg=0.0618, ppo=0.9314, tolerance=1e-4, clip_coef=0.1)
HOMEWORK_INPUTS = (
    "the course's data: manual_seed(0), then states (10, 5, 4), actions, rewards, not_dones,"
    " log_probs and returns{ppo} drawn in that order; manual_seed(0), then policy and value,"
    " nn.Linear(4, 1) each"
)


def homework_data(ppo=False):
    """The course's draws, in its order, and its two networks: a dict of float32 tensors, the
    networks under "policy" and "value". torch's global random state is left as it was."""
    with seeded(0):
        data = dict(states=torch.rand_like(torch.zeros(10, 5, 4)))
        data["actions"] = torch.randint(0, 1, (10, 5))
        data["rewards"] = torch.rand(10, 5)
        data["not_dones"] = torch.randint(0, 2, (10, 5))
        data["log_probs"] = torch.rand(10, 5)
        data["returns"] = torch.rand(10, 5)
        if ppo:
            data["returns"] = 2 * data["returns"] - 1
    with seeded(0):
        data["policy"], data["value"] = torch.nn.Linear(4, 1), torch.nn.Linear(4, 1)
    return data


def homework_loss(rung, fn):
    """The course's loss for RUNG on its data, with fn in the place of the script's function of
    that rung (reinforce_loss, vpg_loss or ppo_loss): a float."""
    d = homework_data(ppo=rung == "ppo")
    log_probs, returns = d["log_probs"].flatten(), d["returns"].flatten()
    if rung == "reinforce":
        return fn(log_probs.requires_grad_(), returns)
    module = script(rung)
    agent = module.Agent(4, 1)
    agent.actor, agent.critic = d["policy"], d["value"]
    _, new_logprobs, _, values = agent.get_action_and_value(
        d["states"].view(-1, 4), d["actions"].flatten()
    )
    values = values.flatten()
    if rung == "vpg":  # its log-probs are the stored ones: the course's VPG has no ratio
        policy_loss, value_loss = fn(log_probs.requires_grad_(), values, returns)  # as train()
        return policy_loss + value_loss
    advantages = (returns - values).detach()  # ppo.py's A: G - V(s) of the rollout
    clip_coef = HOMEWORK["clip_coef"]
    return fn(new_logprobs, log_probs, advantages, clip_coef) + module.value_loss(values, returns)


def homework_case(rung):
    """The course's own test of RUNG, as a case: its value, its tolerance."""
    tol = HOMEWORK["tolerance"]
    return Case(
        f"the CartPole course's own test (its loss on its data, to {tol:g})",
        HOMEWORK_INPUTS.format(ppo=" (2 * uniform - 1)" if rung == "ppo" else ""),
        lambda fn: homework_loss(rung, fn),
        HOMEWORK[rung],
        kind="course",
        tolerance=tol,
        course="the CartPole course's own test",
    )


# ---- the exercises of each rung, their cases, hints and known mistakes --------------------------
def both(*groups):
    """The cases of an exercise: the hand-worked ones first, then a course's own test where it
    has one, then the random ones."""
    return lambda: [case for group in groups for case in group()]


def losses(rung, name, *draws):
    return lambda: [loss_random(rung, name, seed, size, **extra) for seed, size, extra in draws]


EXERCISES = {  # rung: {name in the script: (cases, one-line hint)}
    "reinforce": {
        "discounted_returns": (
            both(discounted_returns_cases, discounted_returns_random),
            "loop t from the last step back; reset at each episode's end",
        ),
        "reinforce_loss": (
            both(
                reinforce_loss_cases,
                lambda: [homework_case("reinforce")],
                losses("reinforce", "reinforce_loss", (1, 5, {}), (2, 16, {}), (3, 33, {})),
            ),
            "minus the mean of log pi(a_t|s_t) * G_t",
        ),
    },
    "vpg": {
        "vpg_loss": (
            both(vpg_loss_cases, lambda: [homework_case("vpg")], vpg_loss_random),
            "A = G - V, detached in the policy term; the value loss is the MSE",
        ),
    },
    "ppo": {
        "ppo_loss": (
            both(
                ppo_loss_cases,
                lambda: [homework_case("ppo")],
                losses(
                    "ppo",
                    "ppo_loss",
                    (1, 8, dict(clip_coef=0.2)),
                    (2, 13, dict(clip_coef=0.1)),
                    (3, 32, dict(clip_coef=0.3)),
                ),
            ),
            "ratio = exp(new - old); minus the mean of the min of the two terms",
        ),
        "value_loss": (
            both(
                lambda: value_loss_cases(False),
                losses("ppo", "value_loss", (1, 7, {}), (2, 16, {}), (3, 30, {})),
            ),
            "the mean squared error between returns and values",
        ),
    },
    "ppo_gae": {
        "compute_gae": (
            both(compute_gae_cases, compute_gae_random),
            "delta_t first, then A_t from the last step back",
        ),
        "value_loss": (
            both(
                lambda: value_loss_cases(True),
                losses(
                    "ppo_gae",
                    "value_loss",
                    (1, 8, dict(old=True, clip_coef=0.2)),
                    (2, 16, dict(old=True, clip_coef=0.1)),
                    (3, 25, dict(old=False, clip_coef=0.2)),
                ),
            ),
            "the MSE; with old_values and clip_coef, the max of it and the clipped one",
        ),
    },
    "ppo_continuous": {
        "Agent.get_action_and_value": (
            both(get_action_and_value_cases, get_action_and_value_random),
            "Normal(mean, exp(logstd)).sample(); sum log-prob and entropy over the last dim",
        ),
        "RunningNorm.update": (
            both(running_norm_update_cases, running_norm_update_random),
            "merge the batch's mean and variance into the running ones, weighted by counts",
        ),
        "adapted_lr": (
            both(adapted_lr_cases, adapted_lr_random),
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
    returns = torch.zeros_like(rewards)
    g = torch.zeros_like(rewards[0]) if last_value is None else last_value
    for i in reversed(range(len(rewards))):
        g = returns[i] = gamma * (rewards[i] + (~dones[i]) * g)
    return returns


def _reset_after(rewards, dones, gamma, last_value=None):
    returns = torch.zeros_like(rewards)
    g = torch.zeros_like(rewards[0]) if last_value is None else last_value
    for i in reversed(range(len(rewards))):
        g = returns[i] = (rewards[i] + gamma * g) * (~dones[i])
    return returns


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


def _min_of_ratios(new, old, advantages, clip_coef):
    ratio = (new - old).exp()
    return -(torch.min(ratio, ratio.clamp(1 - clip_coef, 1 + clip_coef)) * advantages).mean()


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


def _gaussian(
    self, x, action=None, reduce="sum", again=False, detach=(), critic=True, sampler=None
):
    """ppo_continuous's get_action_and_value, with a mistake: reduce, the log-prob's and
    entropy's reduction over the action dimensions; again, x normalized a second time;
    detach, the parts cut from the graph ("mean", "std", "value"); sampler, N(mu, sigma)
    drawn otherwise than torch's Normal.sample() from the given state ("own": a generator of
    its own, as numpy's or Python's random; "rows": a row at a time)."""
    seen = self.obs_norm(x) if again else x
    mean = self.actor_mean(seen)
    std = self.actor_logstd.exp().expand_as(mean)
    mean, std = (p.detach() if n in detach else p for n, p in (("mean", mean), ("std", std)))
    dist = torch.distributions.Normal(mean, std, validate_args=False)
    if action is None and sampler == "own":
        stream = torch.Generator().manual_seed(int(torch.randint(2**62, ())))
        action = (mean + std * torch.randn(mean.shape, generator=stream)).detach()
    elif action is None and sampler == "rows":
        action = torch.stack([torch.normal(m, s) for m, s in zip(mean, std, strict=True)])
    action = dist.sample() if action is None else action
    logp, entropy = dist.log_prob(action), dist.entropy()
    if reduce:
        logp, entropy = getattr(logp, reduce)(-1), getattr(entropy, reduce)(-1)
    value = self.critic(seen)
    return action, logp, entropy, value.detach() if "value" in detach else value


def _overwrite(self, x):
    self.mean, self.var, self.count = x.mean(0), x.var(0, correction=0), self.count + x.shape[0]


def _mean_of_vars(self, x):
    total = self.count + x.shape[0]
    self.mean = (self.mean * self.count + x.mean(0) * x.shape[0]) / total
    self.var = (self.var * self.count + x.var(0, correction=0) * x.shape[0]) / total
    self.count = total


def _bessel(self, x):
    batch_mean, batch_var, batch_count = x.mean(0), x.var(0), x.shape[0]
    delta, total = batch_mean - self.mean, self.count + batch_count
    self.mean = self.mean + delta * batch_count / total
    moments = self.var * self.count + batch_var * batch_count
    self.var = (moments + delta**2 * self.count * batch_count / total) / total
    self.count = total


def _swapped_lr(lr, kl, target_kl, max_lr):
    if kl > 2 * target_kl:
        return min(lr * 1.5, max_lr)
    if kl < target_kl / 2:
        return max(lr / 1.5, 1e-5)
    return lr


def _unbounded_lr(lr, kl, target_kl, max_lr):
    return lr / 1.5 if kl > 2 * target_kl else lr * 1.5 if kl < target_kl / 2 else lr


def _no_floor_lr(lr, kl, target_kl, max_lr):
    return min(_unbounded_lr(lr, kl, target_kl, max_lr), max_lr)


def _no_ceiling_lr(lr, kl, target_kl, max_lr):
    return max(_unbounded_lr(lr, kl, target_kl, max_lr), 1e-5)


HALF = (  # v_loss = 0.5 * ((newvalue - b_returns) ** 2).mean(), or 0.5 * v_loss_max.mean()
    "CleanRL's 1/2 (its v_loss = 0.5 * (...).mean()): this script's L_V has none, the mean of"
    " the squared errors as it is"
)
NOT_TORCHS = (  # a sampler whose actions are not torch's from the seed, N(mu, sigma) or not
    "the draws are not the ones torch's generator gives from the seed; the scripts' --seed seeds"
    " torch's generator, and the grader knows a sampler by its draws: draw with"
    " Normal(mu, sigma).sample() as the script does"
)
MISTAKES = {  # name: [(the mistake in words, a wrong version)]
    "discounted_returns": [
        ("no reset at an episode's end: G flows back across it", _no_reset),
        ("not reward-to-go: every step gets the episode's whole return", _not_reward_to_go),
        ("last_value ignored: a cut-off return is not bootstrapped", _no_bootstrap),
        ("gamma multiplies r_t too: G_t = gamma (r_t + G_{t+1})", _gamma_on_r),
        ("reset one step early: the step that ends an episode loses its own reward", _reset_after),
    ],
    "reinforce_loss": [
        (
            "the sign: minimizing +mean(log pi G) makes good actions rarer",
            lambda lp, g: (lp * g).mean(),
        ),
        ("a sum where the mean belongs", lambda lp, g: -(lp * g).sum()),
        ("probabilities where log-probabilities belong", lambda lp, g: -(lp.exp() * g).mean()),
        (
            "the log-probabilities detached: no gradient reaches the policy",
            lambda lp, g: -(lp.detach() * g).mean(),
        ),
    ],
    "vpg_loss": [
        ("the advantage is not detached, so the policy loss moves the critic", _not_detached),
        ("no baseline: the policy term uses G, not G - V", _no_baseline),
        ("A = V - G: the advantage's sign", _v_minus_g),
        (
            "the value loss not squared: mean |G - V|",
            lambda lp, v, g: (-(lp * (g - v).detach()).mean(), (g - v).abs().mean()),
        ),
        (
            HALF,
            lambda lp, v, g: (-(lp * (g - v).detach()).mean(), 0.5 * ((g - v) ** 2).mean()),
        ),
        (
            "the values detached in the value loss: the critic never learns",
            lambda lp, v, g: (-(lp * (g - v).detach()).mean(), ((g - v.detach()) ** 2).mean()),
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
        (
            "the min taken over the two ratios, then times A: where A < 0 it keeps the wrong one",
            _min_of_ratios,
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
        (HALF, lambda v, r, o=None, e=None: script("ppo_gae").value_loss(v, r, o, e) / 2),
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
        (
            "x normalized a second time: it comes normalized already (train() does it)",
            lambda s, x, a=None: _gaussian(s, x, a, again=True),
        ),
        (
            "the mean detached: no gradient reaches the actor's layers",
            lambda s, x, a=None: _gaussian(s, x, a, detach=("mean",)),
        ),
        (
            "sigma detached: no gradient reaches actor_logstd",
            lambda s, x, a=None: _gaussian(s, x, a, detach=("std",)),
        ),
        (
            "V(x) detached: the value loss cannot train the critic",
            lambda s, x, a=None: _gaussian(s, x, a, detach=("value",)),
        ),
        # Two ways to the same words: a sampler of its own never matches torch's draws; a row
        # at a time (or in float64) matches them on one row alone, where torch draws the same.
        (NOT_TORCHS, lambda s, x, a=None: _gaussian(s, x, a, sampler="own")),
        (NOT_TORCHS, lambda s, x, a=None: _gaussian(s, x, a, sampler="rows")),
    ],
    "RunningNorm.update": [
        ("the batch's statistics replace the running ones: earlier batches forgotten", _overwrite),
        ("the variances averaged: the spread between the batch means left out", _mean_of_vars),
        (
            "the batch variance with Bessel's correction, x.var(0): NaN for a batch of one row"
            " (one env), and not the running statistics' own variance",
            _bessel,
        ),
    ],
    "adapted_lr": [
        ("raised where the policy moved too far, lowered where too little", _swapped_lr),
        ("not kept in [1e-5, max_lr]", _unbounded_lr),
        ("no floor: it falls below 1e-5", _no_floor_lr),
        ("no ceiling: it rises above max_lr", _no_ceiling_lr),
    ],
}


# ---- comparing answers ------------------------------------------------------------------------
RTOL = 1e-4  # relative to each value
FLOOR = 1e-5  # absolute floor, times the size of the numbers: the case's scale or its largest


def as_lists(value):
    """A case's value, tensors as lists of floats, so it can be compared and printed."""
    if isinstance(value, dict):
        return {key: as_lists(v) for key, v in value.items()}
    if isinstance(value, (tuple, list)) and not all(isinstance(v, (int, float)) for v in value):
        return tuple(as_lists(v) for v in value)
    if isinstance(value, torch.Tensor):
        return value.detach().float().tolist()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def numbers(value):
    """The numbers of a (nested) list and its shape, or None if it is not one."""
    if isinstance(value, bool) or isinstance(value, str):
        return None
    if isinstance(value, (int, float)):
        return [float(value)], ()
    if not isinstance(value, (list, tuple)):
        return None
    if not value:
        return [], (0,)
    inner = [numbers(v) for v in value]
    if any(i is None for i in inner) or len({shape for _, shape in inner}) != 1:
        return None
    return [x for flat, _ in inner for x in flat], (len(value), *inner[0][1])


def close(got, expected, rtol=RTOL, scale=1.0, nan=False, tolerance=None):
    """Same structure, shape and numbers, each to rtol of its size plus a floor of FLOOR times
    the size of the numbers (the largest expected one, or `scale` if larger), or, given a
    tolerance, to that absolute tolerance alone (a course's test: its values are rounded); NaN
    never matches (nan: NaN matches NaN, to compare two answers)."""
    got, expected = as_lists(got), as_lists(expected)
    if isinstance(expected, str):
        return got == expected
    if isinstance(expected, dict):
        return (
            isinstance(got, dict)
            and got.keys() == expected.keys()
            and all(close(got[k], expected[k], rtol, scale, nan, tolerance) for k in expected)
        )
    want, have = numbers(expected), numbers(got)
    if want is None:  # a tuple of parts, or what no number is (None, say)
        if not isinstance(got, tuple) or not isinstance(expected, tuple):
            return got is None and expected is None
        if len(got) != len(expected):
            return False
        return all(
            close(g, e, rtol, scale, nan, tolerance) for g, e in zip(got, expected, strict=True)
        )
    if have is None or have[1] != want[1]:
        return False
    floor = FLOOR * max([scale, *(abs(e) for e in want[0] if math.isfinite(e))])
    if tolerance is not None:
        rtol, floor = 0.0, tolerance
    return all(
        (math.isfinite(g) and abs(g - e) <= rtol * abs(e) + floor)
        or (nan and math.isnan(g) and math.isnan(e))
        for g, e in zip(have[0], want[0], strict=True)
    )


def same(one, other, scale=1.0):
    """Whether two answers to a case agree: both returned close values, or both raised the
    same error."""
    if one[0] == "raised" or other[0] == "raised":
        return one == other
    return close(one[1], other[1], scale=scale, nan=True)


def mistake(name, case_list, answers, attempt):
    """The known mistake whose answers equal the student's on every case, in words, else None.
    answers: the student's, one (kind, value) per case, as attempt(case, fn) gives them."""
    for words, wrong in MISTAKES.get(name, []):
        if all(
            same(attempt(case, wrong), answer, case.scale)
            for case, answer in zip(case_list, answers, strict=True)
        ):
            return words
    return None
