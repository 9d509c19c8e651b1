# SPDX-License-Identifier: MIT
"""Write exercises/RUNG.py for every rung from the scripts themselves: never edit them by hand.

    python exercises/make.py           # write them, but never over a file that differs
    python exercises/make.py --force   # write them all, over a student's work too
    python exercises/make.py --check   # exit 1 if a committed file differs (test_exercises.py does)

Each exercise keeps the script's name, signature and docstring, and its body becomes
`raise NotImplementedError("a one-line hint")`. A method stays in its class, written out with
the class's other methods; what the code needs from the script (imports, helpers such as
layer_init) is copied in with it. Each is laid out as `ruff format` writes it; make.py checks
that with ruff (requirements-dev.txt); the grader needs none.
"""

import argparse
import ast
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cases  # noqa: E402

HERE = Path(__file__).resolve().parent
LINE_LENGTH = 100  # pyproject.toml's, which ruff format keeps

HEADER = '''# SPDX-License-Identifier: MIT
"""{rung}.py as exercises: write the body of each function that raises NotImplementedError.
Generated from {rung}.py by exercises/make.py; the equations are in the docstrings.

    python exercises/check.py {rung}    # check what you wrote, a line per function
    python exercises/{rung}.py          # then train {rung}.py with it
"""
'''
FOOTER = """

# {rung}.py's own train(), with these functions in place of its own:
if __name__ == "__main__":
    try:
        from check import train_with  # exercises/check.py, beside this file
    except ModuleNotFoundError as error:  # a copy of this file kept in another folder
        if error.name != "check":
            raise
        message = "{rung}.py: error: it trains only beside exercises/check.py"
        raise SystemExit(message) from None

    train_with("{rung}", globals())
"""


def blank(lines, node, hint):
    """The source of a def with its body replaced by the hint, docstring kept."""
    indent = " " * (node.body[0].col_offset)
    first = node.lineno - 1 - len(node.decorator_list)
    doc = node.body[0]
    keep = (
        doc.end_lineno
        if isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
        else doc.lineno - 1
    )
    raised = f'{indent}raise NotImplementedError("{hint}")'
    if len(raised) > LINE_LENGTH:  # as ruff format splits it
        raised = f'{indent}raise NotImplementedError(\n{indent}    "{hint}"\n{indent})'
    return lines[first:keep] + [raised]


def names_used(tree):
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def exercise(rung, solved=False):
    """The text of exercises/RUNG.py; solved: with the script's own bodies in the blanks."""
    source = (cases.ROOT / f"{rung}.py").read_text()
    lines, tree = source.splitlines(), ast.parse(source)
    tops = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    parts = {}  # top-level name: its lines in the exercise
    for name, (_, hint) in cases.EXERCISES[rung].items():
        top, _, method = name.partition(".")
        node = tops[top]
        if not method:
            parts[top] = (
                lines[node.lineno - 1 : node.end_lineno] if solved else blank(lines, node, hint)
            )
            continue
        (item,) = [i for i in node.body if isinstance(i, ast.FunctionDef) and i.name == method]
        before, after = (
            lines[node.lineno - 1 : item.lineno - 1],
            lines[item.end_lineno : node.end_lineno],
        )
        middle = lines[item.lineno - 1 : item.end_lineno] if solved else blank(lines, item, hint)
        parts[top] = before + middle + after  # one blank method a class
    todo = names_used(ast.parse("\n".join(sum(parts.values(), []))))
    while todo:  # what the code calls from the lesson (layer_init, say): copied in full
        name = todo.pop()
        if name in tops and name not in parts and tops[name].lineno < tops["train"].lineno:
            parts[name] = lines[tops[name].lineno - 1 : tops[name].end_lineno]
            todo |= names_used(tops[name])
    used = set().union(*(names_used(tops[n]) for n in parts))  # what the answers need too
    tried = [node for top in tree.body if isinstance(top, ast.Try) for node in top.body]
    imports = [
        ast.get_source_segment(source, node)
        for node in tree.body + tried  # the imports at the top, and those Ctrl-C's `try:` holds
        if isinstance(node, (ast.Import, ast.ImportFrom))
        and {(a.asname or a.name).split(".")[0] for a in node.names} & used
    ]
    body = ["\n".join(parts[n]) for n in sorted(parts, key=lambda n: tops[n].lineno)]
    code = "\n\n\n".join(["\n".join(imports)] + body if imports else body) + "\n"
    gap = "\n" if imports else "\n\n"  # ruff format's: 1 blank line before imports, 2 before a def
    return HEADER.format(rung=rung) + gap + code + FOOTER.format(rung=rung)


class NoRuff(Exception):
    """ruff cannot run here: what make.py writes is checked against ruff format's layout."""


def formatted(rung, text):
    """text, the exercise of rung, as ruff format writes it (a test keeps exercise()'s text so
    already: the grader, which needs no ruff, builds its blank template with exercise())."""
    try:
        import ruff  # noqa: F401  (installed: requirements-dev.txt)
    except ImportError:
        raise NoRuff("ruff is not installed (pip install -r requirements-dev.txt)") from None
    where = str(HERE / f"{rung}.py")  # ruff finds pyproject.toml from there, wherever we run
    command = [sys.executable, "-m", "ruff", "format", "--stdin-filename", where, "-"]
    done = subprocess.run(command, input=text, capture_output=True, text=True)
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise NoRuff(f"ruff format cannot run: {why}")
    return done.stdout


IDEAS = {  # rung: its section's text in exercises.ipynb (the equations are in the docstrings)
    "reinforce": (
        "1. REINFORCE: the policy gradient with reward-to-go",
        "Play whole episodes, then step along"
        " $\\nabla_\\theta J = \\mathbb{E}[\\sum_t \\nabla_\\theta"
        " \\log \\pi_\\theta(a_t|s_t)\\, G_t]$ with the reward-to-go $G_t = r_t + \\gamma G_{t+1}$,"
        " which starts again at 0 after each episode's end. Autograd gives the gradient of the loss"
        " $L = -\\frac{1}{T}\\sum_t \\log \\pi_\\theta(a_t|s_t)\\, G_t$.",
    ),
    "vpg": (
        "2. VPG: a learned baseline",
        "Subtract a critic's $V_\\phi(s_t)$ from $G_t$:"
        " the advantage $A_t = G_t - V_\\phi(s_t)$ leaves"
        " the gradient unbiased and cuts its variance. It must not train the critic through the"
        " policy loss (detach it); the critic learns from $L_V = \\frac{1}{T}\\sum_t (G_t -"
        " V_\\phi(s_t))^2$.",
    ),
    "ppo": (
        "3. PPO: the clipped surrogate",
        "Several steps on one batch, with the ratio $\\rho_t = \\pi_\\theta(a_t|s_t) /"
        " \\pi_{old}(a_t|s_t)$ kept from pulling far: $L = -\\frac{1}{T}\\sum_t \\min(\\rho_t A_t,"
        " \\mathrm{clip}(\\rho_t, 1-\\epsilon, 1+\\epsilon) A_t)$.",
    ),
    "ppo_gae": (
        "4. PPO + GAE: generalized advantage estimation",
        "$\\delta_t = r_t + \\gamma (1 - \\mathrm{terminated}_t) V(s_{t+1}) - V(s_t)$ and $A_t ="
        " \\delta_t + \\gamma\\lambda (1 - \\mathrm{end}_t) A_{t+1}$:"
        " a truncated step is bootstrapped,"
        " a terminated one is not, and no advantage crosses an episode's end. The value loss may be"
        " clipped around the old values, as PPO2 does.",
    ),
    "ppo_continuous": (
        "5. Continuous PPO: a diagonal Gaussian policy",
        "For `Box` actions the policy is $\\mathcal{N}(\\mu_\\theta(s), \\sigma)$,"
        " one $\\log\\sigma$ per"
        " action dimension: the log-probability and entropy of independent dimensions add up."
        " Observations are normalized with running statistics, and `--lr-target-kl` adapts the"
        " step size to how far each update moved the policy.",
    ),
}
WORKED = {  # rung: (markdown, code), worked by hand where a distribution first appears
    "reinforce": (
        "**By hand: a softmax and the gradient of its log.** The actor's last layer gives one logit"
        " $z_b$ per action, and the policy is their softmax, $\\pi(a) = e^{z_a} / \\sum_b e^{z_b}$."
        " Its log is $z_a - \\log \\sum_b e^{z_b}$, so $\\partial \\log \\pi(a) / \\partial z_b ="
        " \\mathbb{1}[a = b] - \\pi(b)$: the one-hot of the action taken minus the probabilities."
        " A university assignment's numbers: logits $(-2.5, 0.9, 2.4, 3.7)$ give"
        " $\\pi = (0.0015, 0.0455, 0.2041, 0.7489)$, and the gradient of $\\log \\pi(a{=}2)$ is"
        " $(-0.0015, -0.0455, 0.7959, -0.7489)$. The cell below gets both from reinforce.py's own"
        " `Agent` and its `Categorical`, with the logits in its last layer's bias.",
        """# reinforce.py's own Agent, its last layer's weights 0 and its bias the logits: the same
# logits whatever the observation, and their gradient lands in the bias
from cases import script

by_hand = script("reinforce").Agent(obs_dim=1, n_actions=4)
logits = by_hand.actor[-1].bias
with torch.no_grad():
    by_hand.actor[-1].weight.zero_()
    logits.copy_(torch.tensor([-2.5, 0.9, 2.4, 3.7]))
_, log_pi, _ = by_hand.get_action(torch.zeros(1), torch.arange(4))  # log pi(a), a = 0, 1, 2, 3
probs = log_pi.exp().detach()
log_pi[2].backward()  # d log pi(a=2) / d logits
print("pi                        =", probs.numpy().round(4))
print("d log pi(a=2) / d logits  =", logits.grad.numpy().round(4))
# the assignment's numbers (4 places), and the formula: one-hot(2) - pi
assert torch.allclose(probs, torch.tensor([0.0015, 0.0455, 0.2041, 0.7489]), atol=5e-5)
assert torch.allclose(logits.grad, torch.tensor([-0.0015, -0.0455, 0.7959, -0.7489]), atol=5e-5)
assert torch.allclose(logits.grad, torch.eye(4)[2] - probs, atol=1e-6)""",
    ),
    "ppo_continuous": (
        "**By hand: the Gaussian's gradient in its mean.** One dimension's log-density is"
        " $-(a - \\mu)^2 / 2\\sigma^2 - \\ln \\sigma - \\frac{1}{2}\\ln 2\\pi$, so"
        " $\\partial \\log \\pi / \\partial \\mu = (a - \\mu) / \\sigma^2$, dimension by dimension"
        " (the sum over dimensions leaves each its own term). The university assignment's numbers:"
        " $\\mu = (0, 1.2)$, $\\sigma = e^{-0.5}$ in both dimensions, $a = (0.1, 1.0)$ give"
        " $(0.2718, -0.5437)$. The cell below gets it from ppo_continuous.py's own `Agent` (the"
        " method you write below), with $\\mu$ in its last layer's bias.",
        """# ppo_continuous.py's own Agent: mu its last layer's bias (weights 0), log sigma -0.5
from cases import script

by_hand = script("ppo_continuous").Agent(obs_dim=1, action_dim=2)
mu = by_hand.actor_mean[-1].bias
with torch.no_grad():
    by_hand.actor_mean[-1].weight.zero_()
    mu.copy_(torch.tensor([0.0, 1.2]))
    by_hand.actor_logstd.fill_(-0.5)  # sigma = e^-0.5 in both dimensions
action = torch.tensor([[0.1, 1.0]])
_, log_pi, _, _ = by_hand.get_action_and_value(torch.zeros(1, 1), action)
log_pi.sum().backward()  # d log pi(a) / d mu, summed over the two dimensions
print("d log pi / d mu =", mu.grad.numpy().round(4))
# the assignment's numbers (4 places), and the formula: (a - mu) / sigma^2
assert torch.allclose(mu.grad, torch.tensor([0.2718, -0.5437]), atol=5e-5)
assert torch.allclose(mu.grad, (action[0] - mu.detach()) / torch.tensor(-1.0).exp(), atol=1e-6)""",
    ),
}
PREDICT = {  # rung: (what to write down before its run, a model answer), before its training cell
    "reinforce": (
        "The next cell trains reinforce.py with your functions on CartPole-v1 for 100,000 steps"
        " (500 is the most an episode can return). Before you run it, write down what you expect"
        " the first 20 episodes to return on average, and the last 20. Then run it and compare.",
        "The first 20 episodes play an untrained, nearly uniform policy, which drops the pole in"
        " about 20 steps: a mean near 20. The last 20 should be far above that but short of 500:"
        " over 5 seeds reinforce.py first reached a mean of 475 after 150,552 steps at the"
        " earliest (docs/lessons.md, section 1), and it climbs noisily, batch by batch.",
    ),
    "vpg": (
        "The next cell trains vpg.py with your loss on CartPole-v1 for 30,000 steps, under a third"
        " of reinforce.py's budget. Write down where you expect its last 20 episodes to end,"
        " against reinforce.py's run above, and why. Then run it and compare.",
        "Near the top, in fewer steps than reinforce.py needed: with the critic, vpg.py reached a"
        " mean of 475 in a median of 29,112 steps over 5 seeds, a sixth of reinforce.py's"
        " 168,384 (docs/lessons.md, section 1). 30,000 steps is about that median, so one seed"
        " may end at 500 and another still on the way.",
    ),
    "ppo": (
        "The next cell trains ppo.py with your functions on CartPole-v1 for 30,000 steps, with 10"
        " policy steps (epochs) on each batch where vpg.py takes 1. Several policy steps per batch"
        " broke vpg.py (its docstring). Write down whether you expect ppo.py to break, to learn as"
        " vpg.py did, or faster. Then run it and compare.",
        "It should not break, and it learns at about vpg.py's pace in steps: over 5 seeds ppo.py"
        " reached 475 in a median of 28,920 steps, every seed, where vpg.py with 10 plain policy"
        " steps per batch solved 1 of 5 (docs/lessons.md, section 2). The clip is what makes the"
        " 10 epochs safe.",
    ),
    "ppo_gae": (
        "The next cell trains ppo_gae.py with your functions on CartPole-v1 for 40,000 steps, with"
        " GAE at lambda 0.95, minibatches and its other defaults. Write down whether you expect it"
        " to reach a mean of 475 within that budget, and whether sooner or later than ppo.py. Then"
        " run it and compare.",
        "About at the end of the budget: at its defaults ppo_gae.py reached 475 in a median of"
        " 39,920 steps over 10 seeds (26,384 to 52,304), ppo.py in 29,944 (docs/results.md, the"
        " CartPole ladder). Its defaults are tuned for speed in seconds and for staying at 500,"
        " not for the fewest steps: every one of its 10 seeds evaluates at 500.",
    ),
    "ppo_continuous": (
        "The next cell trains ppo_continuous.py with your functions on Pendulum-v1 for 100,000"
        " steps. A random policy scores about -1,200 to -1,500 an episode; -200 counts as solved."
        " Write down where you expect the last 20 episodes to end. Then run it and compare.",
        "Near -200, on a noisy curve: over 5 seeds ppo_continuous.py reached a mean of -200 in a"
        " median of 54,656 steps (docs/lessons.md, section 4). The training curve samples its"
        " actions, so it sits below what the greedy policy scores (section 5).",
    ),
}
QUESTIONS = {  # rung: [(a question in words, a model answer)], after its training cell
    "reinforce": [
        (
            "reinforce_loss is not the return, and its value tells little about learning. Why"
            " does a gradient step *down* this loss raise the expected return?",
            "Its gradient is minus the sample estimate of the policy gradient,"
            " mean_t grad log pi(a_t|s_t) G_t: the returns G_t come from the environment and carry"
            " no graph, so autograd differentiates only the log-probabilities. A step down the"
            " loss is a step up that estimate of grad J. The loss's value depends on which"
            " actions and returns the batch happened to hold, so it is no learning curve: read"
            " the returns instead.",
        ),
        (
            "The worked cell's gradient of log pi(a=2) was (-0.0015, -0.0455, 0.7959, -0.7489)."
            " In words, what does a step along it do to the policy? The loss weights it by G_t:"
            " what changes when G_t is large, negative, or of the same sign for every step?",
            "It raises the logit of the action taken, 2, and lowers each other one by its"
            " probability, most of all action 3 (0.75), so action 2 becomes more likely. Weighted"
            " by G_t, a large return pushes harder and a negative one pushes the other way. When"
            " every return has the same sign (all positive on CartPole, all negative on the line"
            " world) every sampled action is pushed the same way, and only the differences"
            " between returns carry the signal, under a lot of noise: what a baseline removes.",
        ),
        (
            "Why must discounted_returns start again at 0 after a step whose `dones` is true?"
            " What would the loss credit otherwise?",
            "An action's return is what follows it in its own episode. Without the reset, the"
            " next episode's rewards, which the action could not influence, flow back into its"
            " G_t: on CartPole the last moves before the pole fell would be credited with the"
            " next episode's survival, and the lesson that they were bad drowns. The grader's"
            " case with dones (0, 1, 0) shows it: G_1 = 2, not 2 + 0.5 x 3.",
        ),
    ],
    "vpg": [
        (
            "Why does subtracting V(s_t) from G_t leave the expected gradient unchanged, and why"
            " does it lower the variance?",
            "For any b(s) that depends on the state alone, E_a[grad log pi(a|s) b(s)] ="
            " b(s) grad sum_a pi(a|s) = b(s) grad 1 = 0, so the baseline adds nothing on average."
            " G_t mixes how good the state is, which no action changes, with how good the action"
            " was; V(s_t) takes the first part out, so A_t is centred near 0 and each log-prob"
            " is weighted by what its action changed.",
        ),
        (
            "Does the baseline help here? Compare this notebook's two runs (reinforce.py for"
            " 100,000 steps, vpg.py for 30,000) and the project's measurements.",
            "Yes. On CartPole vpg.py reached 475 in a median of 29,112 steps, reinforce.py in"
            " 168,384 (docs/lessons.md, section 1), and on frozen policies the baseline cut the"
            " variance of the gradient estimate to a half of reward-to-go's early on and to 3%"
            " once the policy was good. On the course's line world, with the course's settings,"
            " REINFORCE ends on the target in about half of the episodes and VPG in all of them"
            " (section 6). (reinforce.py normalizes its returns per batch by default, a crude"
            " baseline of its own.)",
        ),
        (
            "vpg_loss detaches the advantage in the policy term. What would the policy loss do"
            " to the critic if it did not?",
            "Its gradient would reach V through A = G - V: d/dV of -log pi(a|s) (G - V) is"
            " log pi(a|s), which is negative, so every step would push V(s_t) up, the more the"
            " rarer the action, whatever the return. The critic must learn from the value loss"
            " alone. (The CartPole course's own test leaves A attached: the loss's value is the"
            " same, its gradient is not.)",
        ),
    ],
    "ppo": [
        (
            "What does the clip stop? Take a sample with A_t > 0 and epsilon 0.2: what is its"
            " gradient when its ratio is 1.1, and when it is 1.5?",
            "At 1.1 the unclipped term rho A is the smaller and pulls as in VPG (gradient"
            " rho A grad log pi). At 1.5 the clipped term, 1.2 A, is smaller and wins the min; it"
            " is a constant, so the sample's gradient is zero and it stops asking for more. The"
            " clip removes the incentive to push a sample's probability further than epsilon in"
            " the direction its advantage favours; it does not bound the size of an optimizer"
            " step, which the learning rate does.",
        ),
        (
            "Without the clip (the surrogate rho_t A_t alone, which the CartPole course invites"
            " you to try, and the cell after ppo.py's run trains), what happens over 10 epochs"
            " on one batch? Is it vpg.py with 10 policy steps?",
            "Nothing keeps the policy near the one that collected the batch: each epoch raises"
            " the ratios of the samples with A_t > 0 and lowers those with A_t < 0 further, and"
            " the estimate, good only near pi_old, stops holding. It is not vpg.py with more"
            " steps: the surrogate's gradient is rho_t A_t grad log pi, so a sample whose"
            " probability has already grown pulls harder still, while vpg.py's loss"
            " -A_t log pi has the gradient A_t grad log pi at every step, whatever the ratio."
            " Both leave pi_old behind in 10 steps; the project measured the second: vpg.py with"
            " 4, 10 or 20 policy steps per batch collapsed on 10 of 15 runs to a policy that"
            " always pushes one way (a return of 9), where ppo.py with 10 or 20 epochs solved"
            " all 10 (docs/lessons.md, section 2). The run with --clip-coef 1e9 shows the"
            " surrogate itself: compare its curve with the clipped run's.",
        ),
        (
            "In the first epoch on each batch the ratio is exactly 1. Why, and what is PPO's"
            " first step then?",
            "pi_theta is still pi_old, so rho = 1, inside the clip range: the gradient of rho A"
            " at rho = 1 is A grad log pi, VPG's gradient on the same advantage. The clip only"
            " acts from the second epoch on, once the policy has moved.",
        ),
    ],
    "ppo_gae": [
        (
            "What does lambda trade? Write A_t at lambda = 0 and at lambda = 1.",
            "lambda = 0: A_t = delta_t = r_t + gamma V(s_t+1) - V(s_t), one reward and the"
            " critic's guess for the rest: low variance, biased wherever the critic is wrong."
            " lambda = 1: A_t = G_t - V(s_t), VPG's advantage: unbiased, with the noise of every"
            " later reward. In between the deltas are summed with weights (gamma lambda)^k. On"
            " Acrobot lambda 0 reached -100 in a fifth of lambda 1's steps; on CartPole it solved"
            " 1 of 3 (docs/lessons.md, section 3): it depends on how early the critic is good.",
        ),
        (
            "How do a termination and a time-out reach the targets in compute_gae? Which flag"
            " stops what?",
            "terminated_t zeroes V(s_t+1) in delta_t: after a real end there is nothing more to"
            " earn. A time-out leaves terminated at 0, so delta_t keeps gamma V(final"
            " observation): the cut return is completed with the critic's estimate. episode_end_t"
            " (either end) stops A_t+1 from flowing back, so no advantage crosses into the next"
            " episode. Take a time-out for a termination and ppo_continuous.py needed twice the"
            " steps on Pendulum (docs/lessons.md, section 4).",
        ),
    ],
    "ppo_continuous": [
        (
            "The worked cell's gradient of log pi in mu was (a - mu) / sigma^2 = (0.2718,"
            " -0.5437). What does a step along it, weighted by A_t, do to the policy? Why is it"
            " larger when sigma is small?",
            "It moves each mean towards the action taken: from (0, 1.2) towards (0.1, 1.0), up in"
            " the first dimension and down in the second. With A_t > 0 the mean moves towards the"
            " action, with A_t < 0 away from it. Dividing by sigma^2 makes the same miss a bigger"
            " surprise to a narrow policy, so it asks for a bigger move.",
        ),
        (
            "Why are the log-probabilities summed over the action's dimensions, and not averaged?",
            "Given s the dimensions are drawn independently, so the action's density is the"
            " product of theirs and its log the sum. The ratio pi / pi_old is then the product of"
            " the dimensions' ratios, which is what the clip bounds; a mean gives their geometric"
            " mean instead, a smaller ratio and a gradient divided by the number of dimensions."
            " The grader names this mistake.",
        ),
        (
            "RunningNorm scales the observations with statistics gathered in training. Why must"
            " evaluation use those same statistics, and not fresh ones?",
            "The networks learned on observations scaled by them: the same state must give the"
            " same input. Statistics from a few evaluation episodes would shift and rescale every"
            " input, and the policy would act on inputs it never saw. That is why --save-model"
            " keeps them with the weights.",
        ),
    ],
}
UNCLIPPED = {  # rung: (markdown, code) after its run: the same run without the clip
    "ppo": (
        "**The same run without the clip.** With a clip no ratio reaches (`--clip-coef 1e9`)"
        " ppo.py minimizes the plain surrogate $-\\frac{1}{T}\\sum_t \\rho_t A_t$, 10 epochs on"
        " each batch, as the CartPole course invites you to try. Run it, and compare its curve"
        " with the clipped run's above (question 3.2).",
        'unclipped = notebook_train("ppo", ppo, QUICK, ["--clip-coef", "1e9"])\n'
        'curve(unclipped, "ppo.py --clip-coef 1e9: no clip")',
    ),
}

INTRO = """# Exercises: write the ladder, then watch it learn

One section per rung of this repository's ladder. Fill in each function (its signature and
docstring are the script's own), run the check cell below it, then the training cell: it trains
the script's own `train()` with your function in place, and prints how the returns moved. A right
answer learns as the script does; a wrong one learns worse, or its run stops with one line that
says why, followed by the grader's line for your function. Each rung's functions live in a
namespace of their own (the last line of each cell you fill in, `ppo.value_loss = value_loss`, puts
yours there; keep it), so ppo's `value_loss` is never ppo_gae's.

- **Open it** from a clone of this repository in Jupyter (`pip install -r requirements.txt
  jupyter`, then `jupyter notebook exercises.ipynb`); or in Colab, by uploading the repository's
  folder (or a zip of it, unzipped) and then this notebook: the first cell finds the scripts
  (or set `LADDER_ROOT` to the repository's folder).
- **Check outside the notebook**: `python exercises/check.py RUNG` checks `exercises/RUNG.py`, the
  same exercises as plain files.
- **Questions in words**: before each run, write down what you expect ("predict, then run");
  after it, two or three questions on why the rung's idea works. Each answer cell has a model
  answer folded under its prompt: write yours before you open it.
- **For teachers**: the cells carry nbgrader's metadata (solution cells, autograded check cells,
  manually graded answer cells whose model answers nbgrader's release leaves out), so a course
  can release and autograde this notebook as it is.

Generated from the scripts by `exercises/make.py`: do not edit by hand."""
SETUP = """import os
import sys
from pathlib import Path

places = [Path.cwd(), *Path.cwd().parents, *Path("/content").glob("*")]  # /content: Colab
places.insert(0, Path(os.environ.get("LADDER_ROOT", ".")))  # or say where: a course's setup
root = next((p for p in places if (p / "exercises" / "check.py").exists()), None)
if root is None:
    print("The scripts are not here: open this notebook from the repository's folder.")
else:
    os.chdir(root)  # runs/ and the scripts' imports from the repository's folder
    sys.path[:0] = [str(root), str(root / "exercises")]
QUICK = os.environ.get("NOTEBOOK_QUICK") == "1"  # CI: every run cut short"""
IMPORTS = """%matplotlib inline
from types import SimpleNamespace

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
from check import notebook_check, notebook_train
from torch.distributions import Categorical, Normal

# Each rung's functions, in a namespace of their own: ppo.value_loss is not ppo_gae.value_loss
reinforce, vpg, ppo, ppo_gae, ppo_continuous = (SimpleNamespace() for _ in range(5))


def curve(result, title):
    # Each training episode's return, and the mean of the last 20
    if result is None:
        return
    steps, returns = np.array(result["episode_returns"], dtype=float).reshape(-1, 2).T
    mean = np.convolve(returns, np.ones(20) / 20, "valid")
    plt.figure(figsize=(7, 2.6))
    plt.plot(steps, returns, ".", ms=2, alpha=0.3)
    plt.plot(steps[19:], mean, label="mean of the last 20")
    plt.xlabel("environment steps")
    plt.ylabel("episode return")
    plt.title(title)
    plt.legend()
    plt.show()"""


def nbgrader(grade_id, solution=False, points=0):
    """nbgrader's cell metadata (schema 3): a solution cell, or an autograded test cell."""
    meta = dict(grade=points > 0, grade_id=grade_id, locked=not solution, schema_version=3)
    meta |= dict(solution=solution, task=False) | (dict(points=points) if points else {})
    return {"nbgrader": meta}


def marked(source):
    """A blank's body between nbgrader's solution markers, for nbgrader to swap for its stub."""
    lines = source.splitlines()
    i = next(k for k, line in enumerate(lines) if "raise NotImplementedError(" in line)
    j = next(k for k in range(i, len(lines)) if lines[k].rstrip().endswith(")"))
    indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
    body = [f"{indent}### BEGIN SOLUTION", *lines[i : j + 1], f"{indent}### END SOLUTION"]
    return "\n".join(lines[:i] + body + lines[j + 1 :])


def answer_cell(model):
    """A manually graded answer's source: a prompt, and a model answer in nbgrader's solution
    region (folded here; a released notebook has the stub in its place)."""
    return (
        "*Your answer:*\n\n### BEGIN SOLUTION\n<details><summary>A model answer (write yours"
        f" first)</summary>\n\n{model}\n\n</details>\n\n### END SOLUTION"
    )


def notebook():
    """exercises.ipynb, without outputs, as nbformat 4 JSON."""
    import json

    def cell(kind, text, **meta):
        cell = dict(cell_type=kind, metadata=meta, source=text.strip("\n").splitlines(True))
        return cell | (dict(execution_count=None, outputs=[]) if kind == "code" else {})

    cells = [cell("markdown", INTRO), cell("code", SETUP), cell("code", IMPORTS)]
    for rung, (title, idea) in IDEAS.items():
        cells.append(cell("markdown", f"## {title} (`{rung}.py`)\n\n{idea}"))
        if rung in WORKED:  # where its distribution first appears
            cells += [cell("markdown", WORKED[rung][0]), cell("code", WORKED[rung][1])]
        parts = exercise(rung).split("\n\n\n")[1:]  # the code, one definition a part
        for part in parts:
            if part.startswith(("# ", "if __name__")):  # the footer
                continue
            name = part.split("(")[0].split()[-1]
            names = [n for n in cases.EXERCISES[rung] if n.split(".")[0] == name]
            if not names:  # a helper the exercises need, as in the script
                cells.append(cell("code", part.strip()))
                continue
            grade_id = f"{rung}-{name}"
            keep = f"{rung}.{name} = {name}  # yours, in {rung}'s namespace"
            solution = marked(part.strip()) + "\n\n\n" + keep
            cells.append(cell("code", solution, **nbgrader(grade_id, solution=True)))
            for exercise_name in names:
                check = f'notebook_check("{rung}", "{exercise_name}", {rung})'
                cells.append(
                    cell(
                        "code",
                        check,
                        **nbgrader(f"check-{rung}-{exercise_name.replace('.', '__')}", points=1),
                    )
                )
        number = title.split(".")[0]
        prompt, model = PREDICT[rung]
        cells.append(cell("markdown", f"**Predict, then run ({number}).** {prompt}"))
        cells.append(cell("markdown", answer_cell(model), **nbgrader(f"predict-{rung}", True, 1)))
        train = f'result = notebook_train("{rung}", {rung}, QUICK)\ncurve(result, "{rung}.py")'
        cells.append(cell("code", train))
        if rung in UNCLIPPED:  # the surrogate without its clip, beside the clipped run
            cells += [cell("markdown", UNCLIPPED[rung][0]), cell("code", UNCLIPPED[rung][1])]
        for k, (question, model) in enumerate(QUESTIONS[rung], 1):
            cells.append(cell("markdown", f"**Question {number}.{k}.** {question}"))
            answer = nbgrader(f"answer-{rung}-{k}", True, 1)
            cells.append(cell("markdown", answer_cell(model), **answer))
    for number, each in enumerate(cells):
        each["id"] = f"cell-{number}"
    meta = dict(kernelspec=dict(display_name="Python 3", language="python", name="python3"))
    meta |= dict(language_info=dict(name="python"))
    return (
        json.dumps(dict(cells=cells, metadata=meta, nbformat=4, nbformat_minor=5), indent=1) + "\n"
    )


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="make.py",
        description="Write exercises/RUNG.py for every rung, and exercises.ipynb, from the scripts."
        " A file that differs from what make.py writes (a student's work, or one the scripts"
        " have moved on from) is written over only with --force.",
    )
    how = parser.add_mutually_exclusive_group()
    how.add_argument(
        "--force", action="store_true", help="write over files that differ (their edits are lost)"
    )
    how.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a file differs or is missing"
    )
    return parser.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    try:
        targets = [(HERE / f"{r}.py", formatted(r, exercise(r))) for r in cases.EXERCISES]
    except NoRuff as error:
        print(f"make.py: error: {error}", file=sys.stderr)
        return 2
    targets.append((HERE.parent / "exercises.ipynb", notebook()))
    stale = [
        (path, text) for path, text in targets if not path.exists() or path.read_text() != text
    ]
    changed = ", ".join(str(path.relative_to(HERE.parent)) for path, _ in stale if path.exists())
    if args.check:
        if stale:
            names = ", ".join(path.name for path, _ in stale)
            print(f"make.py: {names} differ from the scripts; run python exercises/make.py --force")
        return 1 if stale else 0
    if changed and not args.force:
        why = "differ from what make.py writes (your work?); nothing written, --force writes over"
        print(f"make.py: {changed} {why} them", file=sys.stderr)
        return 1
    for path, text in stale:
        path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
