# SPDX-License-Identifier: MIT
"""PPO: the clipped surrogate objective, several epochs on each rollout.

VPG (vpg.py) takes one policy step per batch: more steps on the same data push the
policy far from the one that collected it, and the gradient estimate no longer holds.
PPO takes --update-epochs steps on each batch and removes the incentive to go far:

    rho_t(theta) = pi_theta(a_t|s_t) / pi_old(a_t|s_t)                  (probability ratio)
    L_clip = -mean_t min( rho_t A_t, clip(rho_t, 1 - eps, 1 + eps) A_t )

Once rho_t leaves [1 - eps, 1 + eps] in the direction A_t favours, the clipped term
wins the min and its gradient is zero, so that sample stops pulling. The advantage is
still A_t = G_t - V(s_t), as in vpg.py, and ppo_gae.py replaces it with a better estimate.
The critic regresses on G_t with --train-v-iters steps.

Paper: Schulman et al. (2017), "Proximal Policy Optimization Algorithms", arXiv:1707.06347.

    python ppo.py                                         # CartPole-v1
    python ppo.py --clip-coef 0.1 --update-epochs 20      # watch approx_kl and clipfrac
    tensorboard --logdir runs
"""

import argparse
import contextlib
import functools
import importlib
import os
import random
import signal
import sys
import threading
import time
from pathlib import Path

# These imports take a second or two. A Ctrl-C meanwhile ends the program quietly.
try:
    import gymnasium as gym
    import numpy as np
    import torch
    import torch.nn as nn
    from torch.distributions import Categorical
    from torch.utils.tensorboard import SummaryWriter
except KeyboardInterrupt:
    if __name__ != "__main__":
        raise  # When this file is imported, the caller handles the Ctrl-C.
    sys.exit(130)  # 130 = 128 + 2 (SIGINT), the exit status of a program ended by Ctrl-C.

# The actions are the integers 0..n-1 (Gymnasium calls this space Discrete), and the policy
# draws them from a categorical distribution. ppo_continuous.py handles actions that are
# vectors of real numbers (Gymnasium's Box space). The support code checks that the env's
# actions are of the kind named here.
ACTIONS = "Discrete"


def hyperparameters(parser):
    """Add the algorithm's flags and their defaults. parse_args(), below, adds the flags that
    every run has (--cuda, --compile, --save-model, ...)."""
    arg, on_off = parser.add_argument, argparse.BooleanOptionalAction
    arg("--env-id", default="CartPole-v1", help="Gymnasium env id, with Discrete actions")
    arg("--seed", type=nonnegative_int, default=1, help="seed of python, numpy, torch and the envs")
    arg("--total-timesteps", type=positive_int, default=150_000, help="env steps to train for")
    arg("--num-envs", type=positive_int, default=8, help="envs played in parallel")
    arg("--num-steps", type=positive_int, default=128, help="steps per env in a rollout")
    arg("--learning-rate", type=positive_float, default=1e-2, help="Adam step size")
    arg("--gamma", type=unit_interval, default=0.99, help="discount factor")
    arg(
        "--bootstrap-truncation",
        action=on_off,
        default=True,
        help="complete a return cut by a time limit with gamma * V instead of ending it",
    )
    arg(
        "--update-epochs", type=positive_int, default=10, help="full-batch policy steps per rollout"
    )
    arg("--clip-coef", type=positive_float, default=0.2, help="epsilon of the clipped ratio")
    arg("--train-v-iters", type=positive_int, default=20, help="value steps per rollout")


def flag_conflict(args):
    """Return why these flags' values cannot go together, in one line, or None if they can.
    parse_args(), in the support code, calls it to refuse such a command line. No two flags
    of this script conflict, so it always returns None. ppo_gae.py has rules."""
    return None


class Agent(nn.Module):
    """The actor maps an observation to the logits of pi(.|s). The critic, which shares no
    weights with it, maps the observation to V(s)."""

    def __init__(self, obs_dim, n_actions, hidden=64):
        super().__init__()
        self.actor = nn.Sequential(
            nn.Linear(obs_dim, hidden),
            nn.Tanh(),
            nn.Linear(hidden, hidden),
            nn.Tanh(),
            nn.Linear(hidden, n_actions),
        )
        self.critic = nn.Sequential(
            nn.Linear(obs_dim, hidden),
            nn.Tanh(),
            nn.Linear(hidden, hidden),
            nn.Tanh(),
            nn.Linear(hidden, 1),
        )

    def get_value(self, x):
        """Return V(x), of shape (B, 1), for x float32 (B, obs_dim)."""
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        """Return (a, log pi(a|x), entropy of pi(.|x), V(x)) for a batch of B observations.

        x is float32 (B, obs_dim). With action None, a is sampled from pi(.|x). With action
        given, long (B,), a is that action, so the update uses this method to score the
        batch's actions. The log-prob and the entropy are (B,), and V(x) is (B, 1)."""
        # validate_args=False skips the distribution's argument checks, which cost time.
        dist = Categorical(logits=self.actor(x), validate_args=False)
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(x)


def greedy_action(agent, obs):
    """Return the action that the final evaluation takes, argmax_a pi(a|obs).
    obs is float32 (obs_dim,)."""
    return agent.actor(obs).argmax().item()


def discounted_returns(rewards, dones, gamma, last_value=None):
    """Reward-to-go G_t = r_t + gamma * (1 - done_t) * G_{t+1}, with G_T = last_value.

    Time runs along dim 0. rewards and dones are float32 (T, N), dones holding 0.0 or 1.0,
    gamma is a float, and last_value is None (zeros) or float32 (N,). dones[t] is 1.0 when
    step t ended its episode, so no reward flows back across the end of an episode.
    """
    returns = torch.zeros_like(rewards)
    next_return = torch.zeros_like(rewards[0]) if last_value is None else last_value
    for t in reversed(range(len(rewards))):
        next_return = rewards[t] + gamma * (1.0 - dones[t].to(rewards.dtype)) * next_return
        returns[t] = next_return
    return returns


def ppo_loss(new_logprobs, old_logprobs, advantages, clip_coef):
    """L_clip = -mean_t min(rho_t A_t, clip(rho_t, 1 - eps, 1 + eps) A_t), rho_t = pi / pi_old.

    new_logprobs (which carries its graph), old_logprobs and advantages are float32 (B,), and
    clip_coef (eps) is a float.
    """
    ratio = (new_logprobs - old_logprobs).exp()
    clipped_ratio = ratio.clamp(1 - clip_coef, 1 + clip_coef)
    return -torch.min(ratio * advantages, clipped_ratio * advantages).mean()


def value_loss(values, returns):
    """L_V = mean_t (G_t - V(s_t))^2, the mean squared error, with no 1/2 in front.

    values (which carries its graph) and returns are float32 (B,). Each value step minimizes
    L_V alone, and Adam's step does not change when a loss is multiplied by a constant (apart
    from Adam's own small eps constant, not the clip's eps), so a factor of 1/2 would make no
    difference.
    """
    return ((returns - values) ** 2).mean()


def train(args):
    # set_up() makes the run's folder, seeds python, numpy and torch, and picks the device.
    device, run_dir = set_up(args)
    envs = make_env(args, device)  # make_env() steps --num-envs copies of --env-id together.
    agent = Agent(envs.single_observation_space.shape[0], envs.single_action_space.n).to(device)
    # One Adam serves both networks. A policy step has gradients only in the actor, a value
    # step only in the critic, and Adam skips the parameters that have none.
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate)
    # The update scores the batch's actions with score(), which is agent.get_action_and_value.
    # With --compile, torch.compile compiles score(), both its forward and its backward pass,
    # if compiles() finds that compiling works on this device.
    score = agent.get_action_and_value
    if args.compile and compiles(device):
        score = torch.compile(score, dynamic=True)

    # The rollout's storage is time-major, of shape (num_steps, num_envs).
    shape = (args.num_steps, args.num_envs)
    obs = torch.zeros(shape + envs.single_observation_space.shape, device=device)
    actions = torch.zeros(shape, dtype=torch.long, device=device)
    logprobs = torch.zeros(shape, device=device)
    rewards = torch.zeros(shape, device=device)
    values = torch.zeros(shape, device=device)
    terminations = torch.zeros(shape, device=device)
    truncations = torch.zeros(shape, device=device)
    valid = torch.zeros(shape, dtype=torch.bool, device=device)

    # The log writes TensorBoard's curves and the progress line. With --load-model,
    # start_log() loads the saved weights instead, and the loop below trains nothing.
    log = start_log(args, run_dir, agent, optimizer, envs)
    # A new run starts at step 0, and a resumed run where its checkpoint was written.
    global_step = log.global_step
    num_iterations = max(1, args.total_timesteps // (args.num_envs * args.num_steps))
    # A Ctrl-C ends the loop below, and log.finish() then ends the run with what was learned.
    with log:
        # The first reset has a seed (Log.reset_seed, below).
        next_obs, _ = envs.reset(seed=log.reset_seed())
        next_obs = torch.as_tensor(next_obs, dtype=torch.float32, device=device)
        next_done = torch.zeros(args.num_envs, dtype=torch.bool, device=device)
        for iteration in log.iterations(num_iterations):  # iteration = 1, 2, ..., num_iterations
            for step in range(args.num_steps):
                obs[step] = next_obs
                # Gymnasium resets an env on the step after its episode ends. That reset step
                # ignores the action and gives reward 0, so it is left out of the batch.
                valid[step] = ~next_done
                with torch.no_grad():
                    action, logprob, _, value = agent.get_action_and_value(next_obs)
                actions[step], logprobs[step], values[step] = action, logprob, value.flatten()
                # The envs take the actions as a tensor and return numpy arrays (tensors, for an
                # env written in torch). torch.as_tensor turns each into a tensor on the device.
                next_obs, reward, terminated, truncated, infos = envs.step(action)
                global_step += args.num_envs
                rewards[step] = torch.as_tensor(reward, device=device)
                # --no-bootstrap-truncation is the ablation that treats a time limit as a real end.
                if not args.bootstrap_truncation:
                    terminated = terminated | truncated
                terminations[step] = torch.as_tensor(terminated, device=device)
                # A step that both terminated and was truncated counts as terminated, since a real
                # end wins. Under the ablation, no step counts as truncated.
                truncations[step] = torch.as_tensor(truncated & ~terminated, device=device)
                next_obs = torch.as_tensor(next_obs, dtype=torch.float32, device=device)
                next_done = torch.as_tensor(terminated | truncated, device=device)
                log.episodes(global_step, infos)  # The log keeps the returns of ended episodes.

            # The returns need V(s_{t+1}) at every step. It is the next row of values, and
            # V(next_obs) after the last row.
            # After a step that ends an episode, the next row holds that episode's final
            # observation, since the env resets only on the step after (the reset step).
            with torch.no_grad():
                next_values = torch.cat([values[1:], agent.get_value(next_obs).view(1, -1)])
            # A time limit cut the episode short, not the task, so its return is completed with
            # gamma * V(final observation). The first argument below adds gamma * V to the
            # reward of each truncated step. The second marks every step where an episode ended
            # (where either flag is 1.0, so their torch.maximum is 1.0), and the recursion stops
            # there. A truncated step's return is then G_t = r_t + gamma * V(s_{t+1}), and a
            # terminated step's is G_t = r_t.
            returns = discounted_returns(
                rewards + args.gamma * truncations * next_values,
                torch.maximum(terminations, truncations),
                args.gamma,
                last_value=next_values[-1],
            )

            # Keep the policy's own steps, not gymnasium's reset steps.
            b_obs, b_actions, b_returns = obs[valid], actions[valid], returns[valid]
            b_logprobs, b_values = logprobs[valid], values[valid]
            # With --num-steps 1, every env may be at a reset step, and then nothing is learned.
            if len(b_obs) == 0:
                continue
            b_advantages = b_returns - b_values  # A_t = G_t - V(s_t) stays fixed for every epoch.
            for _ in range(args.update_epochs):
                _, newlogprobs, entropy, newvalues = score(b_obs, b_actions)
                policy_loss = ppo_loss(newlogprobs, b_logprobs, b_advantages, args.clip_coef)
                check_finite(policy_loss, iteration)
                optimizer.zero_grad()
                policy_loss.backward()
                grad_norm = nn.utils.get_total_norm(p.grad for p in agent.actor.parameters())
                optimizer.step()
                # approx_kl estimates KL(pi_old, pi) from the batch, for pi as it was before this
                # step, as mean((rho - 1) - log rho), which is never negative (Schulman's "k3",
                # joschu.net/blog/kl-approx.html). clipfrac is the fraction of samples whose
                # ratio rho left [1 - eps, 1 + eps].
                with torch.no_grad():
                    logratio = newlogprobs - b_logprobs
                    ratio = logratio.exp()
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfrac = ((ratio - 1).abs() > args.clip_coef).float().mean()
            for _ in range(args.train_v_iters):
                _, newlogprobs, entropy, newvalues = score(b_obs, b_actions)
                v_loss = value_loss(newvalues.flatten(), b_returns)
                check_finite(v_loss, iteration)
                optimizer.zero_grad()
                v_loss.backward()
                optimizer.step()

            # Watch the losses and explained_variance = 1 - Var(G - V) / Var(G), which is 1 when
            # V(s) predicts the returns exactly. Var divides by n (correction=0), as numpy's var
            # does. When all the returns of the batch are equal, as in a batch of one sample,
            # Var(G) is 0, the ratio is not finite, and the log leaves it out. grad_norm is the
            # norm of the policy's gradient in the last policy step, before Adam's step. The
            # entropy comes from the last value step. The value steps leave the actor as it is,
            # so it is the entropy of the policy after its update.
            unexplained = (b_returns - b_values).var(correction=0)  # Var(G - V)
            log.update(
                iteration,
                global_step,
                policy_loss=policy_loss,
                value_loss=v_loss,
                entropy=entropy.mean(),
                grad_norm=grad_norm,
                approx_kl=approx_kl,
                clipfrac=clipfrac,
                explained_variance=1 - unexplained / b_returns.var(correction=0),
            )
    # The log writes its last lines, saves the model if --save-model, and runs the evaluation.
    return log.finish(global_step)


# ======== End of the lesson. Below: support code (flags, envs, logs, checks); skip it. ========

SCRIPT = Path(__file__).name
LONG_RUN_FLAGS = ("capture_video", "video_every", "checkpoint_every", "resume", "async_envs")
LONG_RUN_FLAGS += ("track", "wandb_entity", "watch")


class ScriptError(Exception):
    """An error in the script's own words. Its message is the one line that the command line
    prints, and `status` is the exit status. Any other error keeps its traceback (exit 1)."""

    status = 1


class Refusal(ScriptError, ValueError):
    """Bad input, refused: exit status 2. A caller in Python catches it as a ValueError."""

    status = 2


class NotFinite(ScriptError, FloatingPointError):
    """A NaN or inf in a loss, or from the env: the run cannot go on (exit status 1)."""


class EnvProcessError(ScriptError, ChildProcessError):
    """An env's process (--async-envs, in long_runs.py) failed or died (exit status 1)."""


class WriteError(ScriptError, OSError):
    """A file of the run cannot be written: a full disk, a run folder deleted (exit status 1)."""


def fail(message, kind=ValueError):
    """Raise the script's own error of this kind with the line "SCRIPT: error: message".
    A ValueError is bad input (Refusal); the other kinds stop a run that cannot go on."""
    own = {ValueError: Refusal, FloatingPointError: NotFinite, ChildProcessError: EnvProcessError}
    own[OSError] = WriteError
    raise own[kind](f"{SCRIPT}: error: {' '.join(str(message).split())}")


def library_safe(train):
    """train() with its flags checked. Torch's threads and determinism are set for the run
    and given back as the caller had them, however train() ends."""

    @functools.wraps(train)  # its name, docstring and source stay the lesson's
    def checked_train(args):
        if not isinstance(args, argparse.Namespace):  # train(["--flag", ...]), say
            fail(f"train() takes parse_args()'s Namespace, not a {type(args).__name__}")
        args = parse_args(args)  # a copy, checked, of plain values (a numpy seed: an int)
        threads = torch.get_num_threads()
        deterministic = torch.are_deterministic_algorithms_enabled()
        warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
        cublas = os.environ.get("CUBLAS_WORKSPACE_CONFIG")
        try:  # set before the Agent's init, whose weights depend on the threads
            with ctrl_c_after():  # the first call imports part of torch, which Ctrl-C would break
                torch.set_num_threads(args.threads)
                torch.use_deterministic_algorithms(args.torch_deterministic, warn_only=True)
            if args.torch_deterministic and cublas is None:  # cuBLAS's deterministic workspace
                os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
            return train(args)
        finally:
            torch.set_num_threads(threads)
            torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
            if cublas is None:
                os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)

    return checked_train


train = library_safe(train)


@contextlib.contextmanager
def ctrl_c_after():  # a Ctrl-C in the block, raised after it: an import it cut short would be
    came = []  # half made, and its next import fail ("module 'sympy' has no attribute ...")
    main = threading.current_thread() is threading.main_thread()  # the one with signals
    handler = main and signal.signal(signal.SIGINT, lambda signum, frame: came.append(signum))
    try:
        yield
    finally:
        if main:
            signal.signal(signal.SIGINT, handler)
    if came:
        signal.raise_signal(signal.SIGINT)  # to the caller's handler: Python's raises it


def parse_args(argv=None):
    """The flags of argv (a list, or train()'s Namespace), else of the command line. Bad ones
    get argparse's one line: from Python (a notebook: give a list) in a ValueError. In a Jupyter
    kernel, no argv is a ValueError too: sys.argv is the kernel's own (but for %run SCRIPT's)."""
    parser = argparse.ArgumentParser(SCRIPT, description=__doc__.split("\n")[0])
    parser.formatter_class = argparse.ArgumentDefaultsHelpFormatter  # --help shows defaults
    if argv is not None:  # from Python: not argparse's usage and SystemExit
        parser.error = fail
    if argv is None and "ipykernel" in sys.modules and Path(sys.argv[0]).name != SCRIPT:
        fail("in a notebook, give parse_args a list: parse_args([]) for the defaults")  # not its -f
    hyperparameters(parser)  # the algorithm's, in the lesson
    arg, on_off = parser.add_argument, argparse.BooleanOptionalAction
    arg("--cuda", action=on_off, default=False, help="train on the GPU if one is usable")
    arg("--compile", action=on_off, default=False, help="torch.compile the update; for 250k+ steps")
    arg("--torch-deterministic", action=on_off, default=True, help="torch's deterministic kernels")
    arg("--threads", type=positive_int, default=1, help="torch's CPU threads (docs/results.md)")
    arg("--save-model", action=on_off, default=False, help="save the weights in the run directory")
    arg(
        "--load-model",
        type=nonempty_path,
        default=None,
        help="evaluate a saved model; no files unless --run-dir",
    )
    arg("--eval-episodes", type=nonnegative_int, default=10, help="greedy episodes after training")
    arg(
        "--run-dir",
        type=nonempty_path,
        default=None,
        help="TensorBoard dir; if unset, runs/ENV__SCRIPT__SEED__TIME",
    )
    arg = parser.add_argument_group("long runs: need long_runs.py beside the script").add_argument
    arg("--capture-video", action=on_off, default=False, help="film rollouts, evaluation (moviepy)")
    arg("--video-every", type=nonnegative_int, default=0, help="rollouts per film; 0: a tenth")
    arg("--checkpoint-every", type=nonnegative_int, default=0, help="steps per checkpoint; 0: none")
    arg(
        "--resume",
        type=nonempty_path,
        metavar="RUN_DIR",
        help="go on from RUN_DIR/checkpoint.pt; given flags win",
    )
    arg("--async-envs", action=on_off, default=False, help="step each env in its own process")
    arg("--track", action=on_off, default=False, help="the run in Weights & Biases (needs wandb)")
    arg("--wandb-project-name", default="minimal-policy-gradients", help="W&B project")
    arg("--wandb-entity", default=None, help="W&B team or user; if unset, your own")
    arg("--watch", action=on_off, default=False, help="with --load-model: play it in a window")
    namespace = isinstance(argv, argparse.Namespace)  # train()'s, maybe built by hand
    args = check_namespace(parser, argv) if namespace else parser.parse_args(argv)
    if (LongRun := long_run_class(args)) is not Log:  # or one line, alone
        args = LongRun.checked_args(parser, argv, args)  # --resume: the checkpoint's flags too
    if args.num_envs * args.num_steps > 2**24:  # 2**25: 107 s, 13 GB, then torch's traceback
        parser.error(f"--num-envs x --num-steps is {args.num_envs * args.num_steps}, over 2**24")
    if args.load_model and (args.save_model or not args.eval_episodes):  # or it does nothing
        parser.error("--load-model evaluates --eval-episodes episodes (1 or more), saving none")
    if conflict := flag_conflict(args):  # the lesson's: values its flags cannot take together
        parser.error(conflict)
    return args


def check_namespace(parser, args):
    """train()'s Namespace, maybe built or changed by hand, checked as argparse checks a
    command line: every flag there, each a value the flag could give, else one line. Returns
    a copy, with numpy's numbers as Python's."""
    given = {k: v.item() if isinstance(v, np.generic) else v for k, v in vars(args).items()}
    if odd := sorted(set(given) ^ {action.dest for action in parser._actions[1:]}):  # a typo?
        change = "make it with parse_args(), then change it"  # not another script's, say
        parser.error(f"the Namespace and {SCRIPT}'s flags differ at {odd[0]!r}: {change}")
    parser.set_defaults(**{k: str(v) for k, v in given.items() if v is not None})
    parsed = vars(parser.parse_args([]))  # argparse's own line for a value it refuses
    for action in parser._actions[1:]:  # after --help
        flag = action.option_strings[0]
        value = given[action.dest]
        text = not isinstance(value, bytes) and str(value)  # b"runs": not "b'runs'"
        not_a_value = action.nargs != 0 and parsed[action.dest] not in (value, text)  # None
        not_a_switch = action.nargs == 0 and not isinstance(value, bool)  # "False" is true
        if not_a_value or not_a_switch:
            parser.error(f"{flag} is {value!r} in the Namespace, not a value of the flag")
    plain = {action.dest: parsed[action.dest] for action in parser._actions if action.nargs != 0}
    return argparse.Namespace(**(given | plain))


def checked(convert, ok, must_be):
    """An argparse type: convert(text), refused unless ok(value). A nan fails every ok()."""

    def parse(text):
        if not ok(value := convert(text)):
            raise argparse.ArgumentTypeError(f"must be {must_be}, got {text}")
        return value

    parse.__name__ = convert.__name__  # argparse says "invalid int value: 'x'"
    return parse


positive_int = checked(int, lambda n: n > 0, "a positive integer")
nonnegative_int = checked(int, lambda n: n >= 0, "an integer >= 0")
positive_float = checked(float, lambda x: 0 < x <= 1e9, "in (0, 1e9]")  # Adam: float32 steps
nonnegative_float = checked(float, lambda x: x >= 0, "a number >= 0")
unit_interval = checked(float, lambda x: 0 <= x <= 1, "in [0, 1]")


def nonempty_path(text):
    """An argparse type: "" (an unset shell variable, say) is refused, not taken as no flag."""
    if not text:
        raise argparse.ArgumentTypeError("must be a path, got ''")
    return text


def set_up(args):
    """The run's directory (new, or --resume's), the seeds, and the device. The envs get
    their seed at the first reset (Log.reset_seed)."""
    env = "".join("-" if c in '/\\:*?"<>|' else c for c in args.env_id)  # a file name: no ":"
    run_name = f"{env}__{Path(SCRIPT).stem}__{args.seed}__{int(time.time())}"
    if not args.run_dir and Path(f"runs/{run_name}").exists():  # this seed's, this second
        run_name += f"_{time.time_ns()}"
    run_dir = os.path.normpath(os.path.expanduser(args.run_dir or f"runs/{run_name}"))
    if args.load_model and not (args.run_dir or args.capture_video or args.track):
        run_dir = None  # an evaluation writes nothing, unless a flag asks for a folder
    folder = run_dir and os.path.isdir(run_dir)  # False for a name the file system refuses
    events = folder and any(Path(run_dir).glob("events.out.tfevents.*"))
    checkpoint = run_dir and os.path.exists(f"{run_dir}/checkpoint.pt")
    if not args.resume and (events or checkpoint):
        if running(run_dir):  # its --resume would be refused, so the line offers none
            fail(f"the run in {run_dir} is going on in another process; wait for its end")
        afresh = "to start afresh, give another --run-dir or delete it"
        resume = f"--resume={importlib.import_module('shlex').quote(run_dir)}"  # to paste as is
        go_on = f"{resume} goes on" if checkpoint else "with no checkpoint, it cannot go on"
        fail(f"--run-dir {run_dir} holds a run: {go_on}; {afresh}")
    random.seed(args.seed)
    np.random.seed(args.seed % 2**32)  # numpy's seeds have 32 bits, torch's 64
    torch.manual_seed(args.seed % 2**64)
    device = torch.device("cuda" if args.cuda and torch.cuda.is_available() else "cpu")
    if args.cuda and device.type == "cpu":
        print(f"{SCRIPT}: warning: no usable GPU for --cuda; using the CPU", file=sys.stderr)
    return device, run_dir


def running(run_dir):
    """Whether another process holds run_dir's lock (long_runs.lock): a run going on in it."""
    try:
        fcntl = importlib.import_module("fcntl")  # POSIX; on Windows, no lock
    except ImportError:
        return False
    folder = os.open(run_dir, os.O_RDONLY)
    try:
        fcntl.flock(folder, fcntl.LOCK_SH | fcntl.LOCK_NB)  # refused while one holds LOCK_EX
        return False
    except OSError:
        return True
    finally:
        os.close(folder)


def compiles(device):
    """Whether torch.compile works here (a C++ compiler; Triton on a GPU). A tiny compile
    costs nothing a run can see; if it fails, one warning line, and the run goes on eager."""
    try:
        torch.compile(lambda x: x + 1)(torch.ones(1, device=device))
        return True
    except Exception as error:  # the run goes on eager, as --cuda does on the CPU
        why = str(error).strip().splitlines()[0]
        print(f"{SCRIPT}: warning: --compile cannot work here, so eager: {why}", file=sys.stderr)
        return False


def needs_flattening(space, env_id):
    """Whether the MLP must see `space` flattened (all but a flat Box); images are refused."""
    if isinstance(space, (gym.spaces.Tuple, gym.spaces.Dict)):
        parts = space.spaces.values() if isinstance(space, gym.spaces.Dict) else space.spaces
        for part in parts:
            needs_flattening(part, env_id)  # refuses a part the MLP cannot take
        return True
    mlp = f"{SCRIPT} feeds an MLP with flat vectors"
    if isinstance(space, gym.spaces.Box) and len(space.shape) >= 3:
        cnn = "for pixels use a convolutional agent, e.g. CleanRL's ppo_atari.py"
        fail(f"{env_id} has image observations of shape {space.shape}; {mlp}: {cnn}")
    kinds = gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary
    if not isinstance(space, kinds):  # Text, Graph, Sequence, OneOf, ...
        what = f"{type(space).__name__} observations, which have no fixed-size vector form"
        fail(f"{env_id} has {what}; {mlp}: wrap the env to give Box observations")
    return not (isinstance(space, gym.spaces.Box) and len(space.shape) == 1)


def find_spec(env_id):  # for gymnasium's "module:EnvId", importing module registers EnvId
    if ":" in env_id:
        module = env_id.split(":")[0]
        if not module or module.startswith("."):  # importlib's ValueError or TypeError
            raise ImportError(f"{module!r} before the ':' is no module to import")
        importlib.import_module(module)
    spec = gym.spec(env_id.split(":")[-1])
    if isinstance(spec.entry_point, str):  # its code, loaded: a MUJOCO_GL that fails, fails here
        gym.envs.registration.load_env_creator(spec.entry_point)
    return spec


def make_env(args, device):
    """The flags' envs, stepped together. Gymnasium 1.x resets one on the step AFTER its end.
    They take torch actions and return numpy observations and rewards, which train() turns
    into tensors itself (gymnasium's NumpyToTorch wrapper would need array_api_compat)."""
    env_id = args.env_id
    try:
        spec = find_spec(env_id)
    except Exception as error:  # unknown id or module, no MuJoCo, a MUJOCO_GL that fails
        if isinstance(error, (ImportError, gym.error.Error)) or os.environ.get("MUJOCO_GL"):
            fail(f"cannot make {env_id}: {error}")
        raise  # a bug of the env's module: its traceback
    in_torch = "device" in spec.kwargs  # an env in torch (envs/cartpole_torch.py), on `device`
    render_mode = "rgb_array" if args.capture_video else None  # to film
    kwargs = dict(num_envs=args.num_envs, render_mode=render_mode)
    kwargs["max_episode_steps"] = spec.max_episode_steps or 1000  # if none: cut
    if args.async_envs:  # each env in a process of its own (long_runs.py)
        envs = importlib.import_module("long_runs").EnvProcesses(env_id, kwargs, fail)
    elif in_torch:  # an error from here on is the env's own: it keeps its traceback
        envs = gym.make_vec(env_id, num_envs=args.num_envs, device=device)
    else:
        try:
            envs = gym.make_vec(env_id, **kwargs)
        except ImportError as error:  # a package that making the env imports (shimmy, say)
            fail(f"cannot make {env_id}: {error}")
    kinds = {"Discrete": "Discrete ones from 0", "Box": "Box ones of one dimension"}
    scripts = {"Discrete": "use ppo_gae.py", "Box": "use ppo_continuous.py"}
    space = envs.single_action_space  # what the lesson's policy draws: ACTIONS, at the top
    kind = "Discrete" if isinstance(space, gym.spaces.Discrete) and space.start == 0 else None
    kind = "Box" if isinstance(space, gym.spaces.Box) and len(space.shape) == 1 else kind
    if kind != ACTIONS:
        use = scripts.get(kind, "no script of this ladder takes them")
        fail(f"{env_id} has {space} actions; {SCRIPT} needs {kinds[ACTIONS]}: {use}")
    if in_torch:  # tensors in and out; it records each episode's return itself
        return envs
    if needs_flattening(envs.single_observation_space, env_id):
        envs = gym.wrappers.vector.FlattenObservation(envs)  # e.g. Discrete(16): one-hot of 16
    envs = gym.wrappers.vector.RecordEpisodeStatistics(Finite(envs))  # the env's own returns
    return gym.wrappers.vector.TransformAction(envs, lambda action: action.cpu().numpy())


class Finite(gym.vector.VectorWrapper):
    """The envs, stopped at a NaN or inf observation or reward: the source, not a loss, named."""

    def reset(self, **kwargs):
        self.steps = 0  # of the envs, since this process made them
        return self.checked(*self.env.reset(**kwargs))

    def step(self, actions):
        self.steps += 1
        return self.checked(*self.env.step(actions))

    def checked(self, *returned):  # (obs, info), or (obs, reward, terminated, truncated, info)
        for what, values in zip(("observation", "reward"), returned[:-1], strict=False):
            if not (np.abs(values) <= np.finfo(np.float32).max).all():  # inf in float32 too
                where = f"{self.spec.id} gave a NaN or inf {what} at step {self.steps}"
                fail(f"{where}, which no loss can learn from", FloatingPointError)
        return returned


def make_eval_env(env_id, render_mode=None):
    """One env for the final evaluation, which sees the observations that training saw."""
    steps = find_spec(env_id).max_episode_steps or 1000  # as in make_env
    env = gym.make(env_id, max_episode_steps=steps, render_mode=render_mode)
    if needs_flattening(env.observation_space, env_id):
        env = gym.wrappers.FlattenObservation(env)  # e.g. Discrete(16): one-hot of 16
    if isinstance(env.action_space, gym.spaces.Box):  # a Gaussian's mean, within the bounds
        env = gym.wrappers.ClipAction(env)
    return env


@torch.no_grad()
def evaluate(agent, env, episodes, seed, device):
    """The returns of `episodes` episodes that take the lesson's greedy_action in every state."""
    returns = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        done, episode_return = False, 0.0
        while not done and np.isfinite(episode_return) and np.isfinite(obs).all():
            x = torch.as_tensor(obs, dtype=torch.float32, device=device)
            obs, reward, terminated, truncated, _ = env.step(greedy_action(agent, x))
            episode_return += float(reward)
            done = terminated or truncated
        if not np.isfinite(episode_return) or not np.isfinite(obs).all():  # as in training
            fail(f"{env.spec.id} gave a NaN or inf in the evaluation", FloatingPointError)
        returns.append(episode_return)
    return returns


class Log:
    """TensorBoard and the progress line of a run, and its end (long_runs.py's LongRun: more)."""

    fail = staticmethod(fail)  # long_runs.py raises the script's own errors with it

    def __init__(self, args, run_dir, agent, optimizer, envs):
        self.script = SCRIPT  # the name its lines begin with, long_runs.py's too
        self.args = args
        self.run_dir = run_dir
        self.agent = agent
        self.optimizer = optimizer
        self.envs = envs
        self.iteration = 0  # of the last update
        self.global_step = 0  # env steps taken
        self.episode_returns = []  # (step, return) of every episode that ended
        self.ended_episodes = []  # those of the rollout under way, logged at its update
        self.entropy = np.nan  # the last update's, for the progress line
        self.purge_step = None  # where TensorBoard's curves go on (a resumed run: after it)
        self.interrupted = None  # what stopped training: "SIGINT" (Ctrl-C), or "SIGTERM"
        self.seeded = False  # whether the envs' first reset has had its seed
        self.writer = None  # TensorBoard's, made in __enter__ (an evaluation's: maybe none)

    def __enter__(self):
        """The run's folder, claimed at once (of two runs, one is refused); TensorBoard; clock."""
        self.excepthook = threading.excepthook  # the caller's, back at the run's end
        threading.excepthook = functools.partial(writer_thread_error, self.excepthook)
        table = "|param|value|\n|-|-|" + "".join(f"\n|{k}|{v}|" for k, v in vars(self.args).items())
        try:
            if self.run_dir:  # an evaluation without --run-dir writes nothing
                Path(self.run_dir, ".claimed").mkdir(parents=True, exist_ok=bool(self.args.resume))
                self.writer = SummaryWriter(self.run_dir, purge_step=self.purge_step)
                self.writer.add_text("hyperparameters", table, self.global_step)
        except OSError as error:  # --run-dir is a file, read-only, or cannot be made; a full disk
            threading.excepthook = self.excepthook
            if isinstance(error, FileExistsError):  # by a run started since set_up() looked
                fail(f"the run folder {self.run_dir} was claimed by a run started at the same time")
            self.failed(error)  # a full disk: its one line, exit status 1, as later in the run
            fail(f"cannot write TensorBoard's files to {self.run_dir}: {error}")
        where = f"logging to {self.run_dir}" if self.run_dir else "writing no files (no --run-dir)"
        say(f"{SCRIPT}: {self.args.env_id}, seed {self.args.seed}, {where}")
        self.start_time = time.time()
        self.start_step = self.global_step
        self.last_print = self.start_time
        self.printed_step = self.global_step
        return self

    def __exit__(self, kind, error, traceback):  # Ctrl-C ends training (True); errors go up
        if kind is KeyboardInterrupt:  # long_runs.py's SIGTERM has said so already
            self.interrupted = self.interrupted or "SIGINT"
        elif kind is not None:
            self.failed(error)
        return kind is KeyboardInterrupt

    def failed(self, error):  # the writer closed; a full disk or a folder gone: one line, exit 1
        threading.excepthook = self.excepthook
        with contextlib.suppress(OSError):  # the disk's error again, which `error` says
            if self.writer:
                self.writer.close()
        errno = importlib.import_module("errno")
        code = isinstance(error, OSError) and error.errno
        gone = code == errno.ENOENT and self.run_dir and not os.path.isdir(self.run_dir)
        if gone or code in (errno.ENOSPC, errno.EDQUOT):
            why = f"the run folder {self.run_dir} is gone" if gone else os.strerror(code)
            fail(f"cannot write {os.fsdecode(error.filename or self.events())}: {why}", OSError)

    def events(self):
        """The file a write failed on, where the error names none. Such an error is TensorBoard's
        (save() names its own file), so it is this process's newest events file, whose name
        ends TIME.HOST.PID.N; where the folder is gone, the folder."""
        pattern = f"events.out.tfevents.*.{os.getpid()}.*"
        ours = sorted(Path(self.run_dir).glob(pattern)) if self.run_dir else []
        return ours[-1] if ours else self.run_dir

    def iterations(self, num_iterations):  # 1 to N (None: till train() stops), on from the last
        rollout = self.args.num_envs * self.args.num_steps  # update; --load-model: none
        budget = self.args.total_timesteps
        if self.args.load_model:
            return range(0)
        if num_iterations is None and not self.iteration:  # reinforce.py's: whole episodes
            say(f"{SCRIPT}: rollouts of whole episodes: training ends past {budget} steps")
        elif num_iterations and num_iterations * rollout != budget:
            whole = f"whole rollouts of {rollout} steps: {num_iterations * rollout} steps"
            say(f"{SCRIPT}: --total-timesteps {budget} is rounded to {whole}")
        return range(self.iteration + 1, (num_iterations or sys.maxsize) + 1)

    def reset_seed(self):
        """The seed of the envs' first reset, then None: later resets go on with each env's
        own random stream. A resumed run adds its steps, so that it plays new episodes."""
        seed = None if self.seeded else self.args.seed + self.global_step
        self.seeded = True
        return seed

    def episodes(self, global_step, infos, counted=None):
        """The return and length of each episode that ended at this step, which update() logs.
        counted (bool, one per env): the envs whose episodes count; None: all of them."""
        if "_episode" in infos:
            ended = infos["_episode"]
            if counted is not None:  # reinforce.py's envs that idle until the rollout ends
                ended = torch.as_tensor(ended, device=counted.device) & counted
            self.ended_episodes.append((global_step, ended, infos["episode"]))

    def update(self, iteration, global_step, **losses):  # lr, SPS, losses/NAME; progress()
        self.iteration = iteration
        self.global_step = global_step
        self.entropy = losses["entropy"]
        lr = self.optimizer.param_groups[0]["lr"]
        self.writer.add_scalar("charts/learning_rate", lr, global_step)
        self.writer.add_scalar("charts/SPS", self.sps(global_step), global_step)
        for name, value in losses.items():  # explained_variance is 0 / 0 if G is flat: not logged
            if value.isfinite():
                self.writer.add_scalar(f"losses/{name}", value.item(), global_step)
        self.progress(global_step)

    def sps(self, global_step):  # env steps per second of this process
        return int((global_step - self.start_step) / (time.time() - self.start_time))

    def progress(self, global_step, end=False):  # the episodes ended since; a line every 2 s
        if self.ended_episodes:
            log_episodes(self.writer, self.ended_episodes, self.episode_returns)
        self.ended_episodes = []
        sps = self.sps(global_step)
        if time.time() - self.last_print > 2 or (end and self.printed_step != global_step):
            self.last_print = time.time()
            self.printed_step = global_step
            returns = [r for _, r in self.episode_returns[-20:]]
            recent = f"{np.mean(returns):6.1f}" if returns else "     -"  # none has ended yet
            left = f"{max(0, self.args.total_timesteps - global_step) / max(sps, 1):4.0f}s left"
            steps = f"step {global_step:>8}/{self.args.total_timesteps} | SPS {sps:>5} | {left}"
            say(f"{steps} | return (last 20 episodes) {recent} | entropy {self.entropy:.2f}")

    def finish(self, global_step):
        """A run's end (trained, stopped or loaded): logs, --save-model, evaluation; its dict."""
        try:
            return self.end(global_step)
        except Exception as error:  # the writer closed; a full disk, a folder gone: one line
            self.failed(error)
            raise
        finally:
            threading.excepthook = self.excepthook

    def end(self, global_step):  # finish()'s work
        self.envs.close()
        sps = self.sps(global_step)
        self.progress(global_step, end=global_step > 0 and not self.interrupted)
        if self.interrupted:  # what stopped the run, and how to go on
            say(f"{SCRIPT}: stopped by {self.interrupted} at step {global_step}; {self.go_on()}")
        if self.args.save_model:  # the weights, and whose they are (--load-model checks)
            path = f"{self.run_dir}/{Path(SCRIPT).stem}.pt"
            save(dict(agent=self.agent.state_dict(), script=SCRIPT), path)
            say(f"saved the weights to {path}")
        episodes = 0 if self.interrupted else self.args.eval_episodes
        eval_env = self.eval_env()
        device = next(self.agent.parameters()).device
        try:
            eval_returns = evaluate(self.agent, eval_env, episodes, self.args.seed + 10_000, device)
            eval_env.close()  # --capture-video's film of it is written here
        except KeyboardInterrupt:  # Ctrl-C (or long_runs.py's SIGTERM): the run ends without it
            eval_returns = []
            self.interrupted = self.interrupted or "SIGINT"
            say(f"{SCRIPT}: evaluation stopped by {self.interrupted}")
        for episode, episode_return in enumerate(eval_returns if self.writer else []):
            self.writer.add_scalar("eval/episodic_return", episode_return, episode)
        if eval_returns:
            n = len(eval_returns)
            mean_and_std = f"{np.mean(eval_returns):.1f} +/- {np.std(eval_returns):.1f}"
            say(f"evaluation over {n} episode{'s' if n > 1 else ''}: {mean_and_std}")
        if self.writer:
            self.writer.close()
        result = dict(agent=self.agent, episode_returns=self.episode_returns, sps=sps)
        result |= dict(global_step=global_step, eval_returns=eval_returns, run_dir=self.run_dir)
        return result | dict(interrupted=self.interrupted)

    def eval_env(self, render_mode=None):  # long_runs.py films it
        return make_eval_env(self.args.env_id, render_mode)

    def go_on(self):  # long_runs.py: the checkpoint
        return "no checkpoint to resume from"


def start_log(args, run_dir, agent, optimizer, envs):
    """A Log; with a flag of long or watched runs, long_runs.py's LongRun, which extends it.
    With --load-model, the weights to evaluate are loaded here (the Log then trains nothing)."""
    if args.load_model:
        load_weights(agent, args.load_model, args.env_id)
    return long_run_class(args)(args, run_dir, agent, optimizer, envs)


def writer_thread_error(excepthook, hook_args):  # threading.excepthook while a run writes
    if not type(hook_args.thread).__module__.startswith("tensorboard."):
        excepthook(hook_args)  # TensorBoard's thread: its error comes back at the next write


def save(state, path):  # torch.save, whole or not at all: a full disk is an OSError naming path
    data = importlib.import_module("io").BytesIO()
    torch.save(state, data)
    try:
        Path(path).write_bytes(data.getvalue())
    except OSError as error:
        Path(path).unlink(missing_ok=True)
        raise OSError(error.errno, error.strerror, path) from None


def long_run_class(args):
    """Log; with a flag of long or watched runs, long_runs.py's LongRun, which extends it."""
    if not any(getattr(args, flag) for flag in LONG_RUN_FLAGS):
        return Log
    try:
        import long_runs
    except ModuleNotFoundError as error:  # a script copied alone: one line naming the file
        if error.name != "long_runs":
            raise
        given = [f"--{flag.replace('_', '-')}" for flag in LONG_RUN_FLAGS if getattr(args, flag)]
        fail(f"{' '.join(given)} needs long_runs.py: put it beside {SCRIPT}, from its repository")
    return type("LongRun", (long_runs.LongRun, Log), {})  # a Log that checkpoints, films, ...


def load_weights(agent, path, env_id):
    """--load-model: what --save-model wrote, or a checkpoint's "agent"; as data, never code.
    A file of the weights alone (--save-model's before 2026-11-28) is taken as this script's."""
    if os.path.isdir(path):  # a run folder: the weights are a file in it
        found = ", ".join(sorted(str(p) for p in Path(path).glob("*.pt"))) or "none"
        fail(f"--load-model {path} is a folder: give a file of weights (there: {found})")
    if not os.path.isfile(path):
        fail(f"--load-model {path}: no such file")
    try:
        saved = torch.load(path, "cpu", weights_only=True)
        script = saved.get("script", SCRIPT)
    except Exception:  # objects or code (never run), or not torch's
        fail(f"cannot load --load-model {path}: not weights that --save-model wrote")
    if script != SCRIPT:  # as --resume refuses another script's checkpoint
        fail(f"cannot load --load-model {path}: it holds weights of {script}; evaluate them there")
    try:
        agent.load_state_dict(saved.get("agent", saved))
    except Exception as error:  # another env's sizes: "size mismatch for actor.0.weight: ..."
        why = str(error).strip().splitlines()[-1]
        fail(f"cannot load --load-model {path}: its weights do not fit {env_id} here: {why}")


def log_episodes(writer, ended_episodes, history):
    """The episodes that ended in a rollout: each if few, else their mean (add_scalar: ~0.1 ms)."""
    steps, ended, episodes = zip(*ended_episodes, strict=True)
    ended = torch.stack([torch.as_tensor(done) for done in ended]).cpu()
    returns = torch.stack([torch.as_tensor(e["r"]) for e in episodes]).cpu()[ended].tolist()
    lengths = torch.stack([torch.as_tensor(e["l"]) for e in episodes]).cpu()[ended].tolist()
    steps = torch.tensor(steps)[:, None].expand_as(ended)[ended].tolist()
    history.extend(zip(steps, returns, strict=True))  # every (step, return), for the caller
    rows = zip(steps, returns, lengths, strict=True)  # (step, return, length) of each
    if len(returns) > 256:  # their mean at the last step: 8,192 take 0.66 s apart, 0.06 s so
        writer.add_scalar("charts/episodes", len(returns), steps[-1])
        rows = [(steps[-1], np.mean(returns), np.mean(lengths))]
    for step, episode_return, length in rows:
        writer.add_scalar("charts/episodic_return", episode_return, step)
        writer.add_scalar("charts/episodic_length", length, step)


def say(line):
    """print(line) at once. A reader gone (| head) ends nothing: stdout goes to os.devnull."""
    try:
        print(line, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def check_finite(loss, iteration):
    """Stop on a NaN or inf loss before it reaches the weights, naming the iteration."""
    if not torch.isfinite(loss):
        hint = "try a smaller --learning-rate"
        fail(f"loss is {loss.item()} at iteration {iteration}; {hint}", FloatingPointError)


if __name__ == "__main__":
    import gc

    # What the imports made lives as long as the run, so the garbage collector skips it.
    gc.freeze()
    args = None  # parse_args()'s, once it has read the flags
    try:
        result = train(args := parse_args())
    except ScriptError as error:  # the script's own words, in one line
        print(error, file=sys.stderr)
        sys.exit(error.status)  # 2: bad input; 1: the run cannot go on
    except Exception:  # the env's, numpy's or torch's error keeps its traceback (exit 1)
        run = f"the run on {args.env_id}" if args else "reading the flags"
        print(f"{SCRIPT}: error: {run} failed:", file=sys.stderr)
        raise
    except KeyboardInterrupt:  # Ctrl-C before the loop (the envs, compiling) or after it
        result = dict(interrupted="SIGINT")
    if result["interrupted"] == "SIGINT":  # end as Ctrl-C ends a program: a shell says 130
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.raise_signal(signal.SIGINT)
