# SPDX-License-Identifier: MIT
"""PPO: the clipped surrogate objective, several epochs on each rollout.

VPG (vpg.py) takes one policy step per batch: more steps on the same data push the
policy far from the one that collected it, and the gradient estimate no longer holds.
PPO takes --update-epochs steps on each batch and removes the incentive to go far:

    rho_t(theta) = pi_theta(a_t|s_t) / pi_old(a_t|s_t)                  (probability ratio)
    L_clip = -mean_t min( rho_t A_t, clip(rho_t, 1 - eps, 1 + eps) A_t )

Once rho_t leaves [1 - eps, 1 + eps] in the direction A_t favours, the clipped term
wins the min and its gradient is zero: that sample stops pulling. The advantage is
still A_t = G_t - V(s_t), as in vpg.py (GAE comes in ppo_gae.py); the critic
regresses on G_t with --train-v-iters steps.

Paper: Schulman et al. (2017), "Proximal Policy Optimization Algorithms", arXiv:1707.06347.

    python ppo.py                                         # CartPole-v1
    python ppo.py --clip-coef 0.1 --update-epochs 20
    tensorboard --logdir runs
"""

import argparse
import copy
import importlib
import random
import signal
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Categorical
from torch.utils.tensorboard import SummaryWriter


class Agent(nn.Module):
    """Actor: observation -> logits of pi(.|s). Critic: observation -> V(s). No shared weights."""

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
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        """Sample a ~ pi(.|x), or score the given action: (action, log pi(a|x), entropy, V(x))."""
        dist = Categorical(logits=self.actor(x), validate_args=False)  # no checks: faster
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(x)


def discounted_returns(rewards, dones, gamma, last_value=None):
    """Reward-to-go G_t = r_t + gamma * (1 - done_t) * G_{t+1}, with G_T = last_value.

    Time runs along dim 0, (T,) or (T, N). dones[t] is true when step t ended its
    episode, so no reward flows back across the end of an episode.
    """
    returns = torch.zeros_like(rewards)
    next_return = torch.zeros_like(rewards[0]) if last_value is None else last_value
    for t in reversed(range(len(rewards))):
        next_return = rewards[t] + gamma * (1.0 - dones[t].to(rewards.dtype)) * next_return
        returns[t] = next_return
    return returns


def ppo_loss(new_logprobs, old_logprobs, advantages, clip_coef):
    """L_clip = -mean_t min(rho_t A_t, clip(rho_t, 1 - eps, 1 + eps) A_t), rho_t = pi / pi_old.
    new_logprobs (carrying its graph), old_logprobs, advantages: float32 (B,); clip_coef a float."""
    ratio = (new_logprobs - old_logprobs).exp()
    clipped_ratio = ratio.clamp(1 - clip_coef, 1 + clip_coef)
    return -torch.min(ratio * advantages, clipped_ratio * advantages).mean()


def value_loss(values, returns):
    """L_V = mean_t (G_t - V(s_t))^2; values (carrying their graph) and returns: float32 (B,)."""
    return ((returns - values) ** 2).mean()


def train(args):
    device, run_dir = set_up(args)  # seeds, device, run folder: the support code, below
    envs = make_env(args.env_id, args.num_envs, device, args.async_envs, args.capture_video)
    eval_env = make_eval_env(args.env_id, f"{run_dir}/videos" if args.capture_video else None)
    agent = Agent(envs.single_observation_space.shape[0], envs.single_action_space.n).to(device)
    # One Adam for both networks: a policy step only has gradients in the actor and a
    # value step only in the critic, and Adam skips parameters that have none.
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate)
    score = agent.get_action_and_value  # log pi(a|s) and V(s) of a batch, in the update
    score = torch.compile(score, dynamic=True) if args.compile else score  # docs/results.md

    # Rollout storage, time-major: (num_steps, num_envs).
    shape = (args.num_steps, args.num_envs)
    obs = torch.zeros(shape + envs.single_observation_space.shape, device=device)
    actions = torch.zeros(shape, dtype=torch.long, device=device)
    logprobs = torch.zeros(shape, device=device)
    rewards = torch.zeros(shape, device=device)
    values = torch.zeros(shape, device=device)
    terminations = torch.zeros(shape, device=device)
    truncations = torch.zeros(shape, device=device)
    valid = torch.zeros(shape, dtype=torch.bool, device=device)

    run = Run(args, run_dir, agent, optimizer, envs)  # logs, checkpoints, --resume, --load-model
    global_step, interrupted = run.global_step, False  # 0, or where --resume goes on
    num_iterations = max(1, args.total_timesteps // (args.num_envs * args.num_steps))
    try:
        next_obs, _ = envs.reset(seed=args.seed + global_step)  # resumed: new episodes, not old
        # numpy to torch by hand: gymnasium's NumpyToTorch needs array_api_compat
        next_obs = torch.as_tensor(next_obs, dtype=torch.float32, device=device)
        next_done = torch.zeros(args.num_envs, dtype=torch.bool, device=device)
        for iteration in run.iterations(num_iterations):  # 1 to N; --resume: on from its next
            for step in range(args.num_steps):
                obs[step] = next_obs
                valid[step] = ~next_done  # False at reset steps: action ignored, reward 0
                with torch.no_grad():
                    action, logprob, _, value = agent.get_action_and_value(next_obs)
                actions[step], logprobs[step], values[step] = action, logprob, value.flatten()
                next_obs, reward, terminated, truncated, infos = envs.step(action)
                global_step += args.num_envs
                rewards[step] = torch.as_tensor(reward, device=device)
                if not args.bootstrap_truncation:  # the ablation: take a time-limit cut for an end
                    terminated = terminated | truncated
                terminations[step] = torch.as_tensor(terminated, device=device)
                truncations[step] = torch.as_tensor(truncated & ~terminated, device=device)
                next_obs = torch.as_tensor(next_obs, dtype=torch.float32, device=device)
                next_done = torch.as_tensor(terminated | truncated, device=device)
                run.episodes(global_step, infos)  # the return of each episode that just ended

            # V(s_{t+1}) at every step: values' next row, V(next_obs) after the last.
            # After a step that ends an episode, s_{t+1} is still its final observation.
            with torch.no_grad():
                next_values = torch.cat([values[1:], agent.get_value(next_obs).view(1, -1)])
            # A time limit cut the episode, not the task: complete its return with
            # gamma * V(final observation). A termination adds nothing; nor does G cross it.
            returns = discounted_returns(
                rewards + args.gamma * truncations * next_values,
                torch.maximum(terminations, truncations),
                args.gamma,
                last_value=next_values[-1],
            )

            # Keep the policy's own steps, not gymnasium's reset steps.
            b_obs, b_actions, b_returns = obs[valid], actions[valid], returns[valid]
            b_logprobs, b_values = logprobs[valid], values[valid]
            b_advantages = b_returns - b_values  # A_t = G_t - V(s_t), fixed for every epoch
            for _ in range(args.update_epochs):
                _, newlogprobs, entropy, newvalues = score(b_obs, b_actions)
                policy_loss = ppo_loss(newlogprobs, b_logprobs, b_advantages, args.clip_coef)
                check_finite(policy_loss, iteration, run)
                optimizer.zero_grad()
                policy_loss.backward()
                grad_norm = nn.utils.get_total_norm(p.grad for p in agent.actor.parameters())
                optimizer.step()
                with torch.no_grad():  # how far the policy has moved from pi_old
                    logratio = newlogprobs - b_logprobs
                    ratio = logratio.exp()
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfrac = ((ratio - 1).abs() > args.clip_coef).float().mean()
            for _ in range(args.train_v_iters):
                _, newlogprobs, entropy, newvalues = score(b_obs, b_actions)
                v_loss = value_loss(newvalues.flatten(), b_returns)
                check_finite(v_loss, iteration, run)
                optimizer.zero_grad()
                v_loss.backward()
                optimizer.step()

            # What to watch: the losses, and explained_variance (1: V(s) predicts the returns).
            run.update(
                iteration,
                global_step,
                policy_loss=policy_loss,
                value_loss=v_loss,
                entropy=entropy.mean(),
                grad_norm=grad_norm,  # |g| of the last policy step
                approx_kl=approx_kl,
                clipfrac=clipfrac,
                explained_variance=1 - (b_returns - b_values).var() / b_returns.var(),
            )
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: stop cleanly, keep what was learned
        interrupted = True
    return finish(args, agent, envs, eval_env, run, global_step, interrupted)


# ======== End of the lesson. Below: support code (flags, envs, logs, checks); skip it. ========

SCRIPT = Path(__file__).name
CPU_THREADS = torch.get_num_threads()  # torch's default: one per core


def set_up(args):
    """Seeds (the envs get theirs at reset), CPU threads, the device, the run's directory."""
    random.seed(args.seed)
    np.random.seed(args.seed % 2**32)  # numpy's seeds have 32 bits, torch's 64
    torch.manual_seed(args.seed % 2**64)
    torch.backends.cudnn.deterministic = args.torch_deterministic
    # One thread is fastest for small batches; 2 cores, for 32,768 steps (benchmarks/results/sps)
    torch.set_num_threads(1 if args.num_envs * args.num_steps < 32_768 else CPU_THREADS)
    if args.num_envs * args.num_steps > 2**24:  # what a rollout's memory can hold
        fail(f"--num-envs x --num-steps is {args.num_envs * args.num_steps}, over 2**24 steps")
    device = torch.device("cuda" if args.cuda and torch.cuda.is_available() else "cpu")
    if args.cuda and device.type == "cpu":
        print(f"{SCRIPT}: warning: no usable GPU for --cuda; using the CPU", file=sys.stderr)
    try:  # --compile needs a backend and a C++ compiler (on a GPU, Triton): a tiny compile first
        if args.compile:
            torch.compile(lambda x: x + 1)(torch.ones(1, device=device))
    except Exception as error:  # the run goes on eager, as --cuda does on the CPU
        args.compile, why = False, str(error).strip().splitlines()[0]
        print(f"{SCRIPT}: warning: --compile cannot work here, so eager: {why}", file=sys.stderr)
    run_name = f"{args.env_id}__{Path(SCRIPT).stem}__{args.seed}__{int(time.time())}"
    return device, args.run_dir or f"runs/{run_name}"


def checked(convert, ok, must_be):
    """An argparse type: convert(text), refused unless ok(value); nan fails every ok()."""

    def parse(text):
        if not ok(value := convert(text)):
            raise argparse.ArgumentTypeError(f"must be {must_be}, got {text}")
        return value

    parse.__name__ = convert.__name__  # argparse says "invalid int value: 'x'"
    return parse


positive_int = checked(int, lambda n: n > 0, "a positive integer")
nonnegative_int = checked(int, lambda n: n >= 0, "an integer >= 0")
positive_float = checked(float, lambda x: 0 < x <= 1e9, "in (0, 1e9]")  # Adam: float32 steps
unit_interval = checked(float, lambda x: 0 <= x <= 1, "in [0, 1]")


def parse_args(argv=None):
    """The flags in argv, else on the command line, unless a notebook's kernel owns that."""
    if argv is None and "ipykernel" in sys.modules and Path(sys.argv[0]).name != SCRIPT:
        argv = []
    parser = argparse.ArgumentParser(SCRIPT, description=__doc__.split("\n")[0])
    parser.formatter_class = argparse.ArgumentDefaultsHelpFormatter  # --help shows defaults
    arg, on_off = parser.add_argument, argparse.BooleanOptionalAction
    arg("--env-id", default="CartPole-v1", help="Gymnasium env id, with Discrete actions")
    arg("--seed", type=nonnegative_int, default=1, help="seed of python, numpy, torch and the envs")
    arg("--total-timesteps", type=positive_int, default=150_000, help="env steps to train for")
    arg("--num-envs", type=positive_int, default=8, help="envs played in parallel")
    arg("--num-steps", type=positive_int, default=128, help="steps per env in a rollout")
    arg("--async-envs", action=on_off, default=False, help="step each env in its own process")
    arg("--learning-rate", type=positive_float, default=1e-2, help="Adam step size")
    arg("--gamma", type=unit_interval, default=0.99, help="discount factor")
    arg("--bootstrap-truncation", action=on_off, default=True, help="off shows the time-limit bug")
    arg("--update-epochs", type=positive_int, default=10, help="policy steps per rollout")
    arg("--clip-coef", type=positive_float, default=0.2, help="epsilon of the clipped ratio")
    arg("--train-v-iters", type=positive_int, default=20, help="value steps per rollout")
    arg("--cuda", action="store_true", help="train on the GPU if one is usable")
    arg("--compile", action="store_true", help="torch.compile the update; pays from ~250k steps")
    arg("--torch-deterministic", action=on_off, default=True, help="deterministic cuDNN")
    arg("--capture-video", action="store_true", help="film rollouts and the evaluation (moviepy)")
    arg("--video-every", type=nonnegative_int, default=0, help="rollouts per film; 0: a tenth")
    arg("--save-model", action="store_true", help="save the weights in the run directory")
    arg("--load-model", default=None, help="evaluate (and film) this saved model; no training")
    arg("--eval-episodes", type=nonnegative_int, default=10, help="greedy episodes after training")
    arg("--run-dir", default=None, help="TensorBoard dir; if unset, runs/ENV__SCRIPT__SEED__TIME")
    arg("--checkpoint-every", type=nonnegative_int, default=0, help="steps per checkpoint; 0: none")
    arg("--resume", metavar="RUN_DIR", help="go on from RUN_DIR/checkpoint.pt; given flags win")
    arg("--track", action="store_true", help="send the run to Weights & Biases (needs wandb)")
    arg("--wandb-project-name", default="minimal-policy-gradients", help="W&B project")
    arg("--wandb-entity", default=None, help="W&B team or user; if unset, your own")
    return resumed(parser, argv, parser.parse_args(argv))  # --resume: the saved flags


def resumed(parser, argv, args):
    """--resume RUN_DIR: the flags of its checkpoint, but for those given again (not the env's)."""
    if args.load_model and (args.resume or args.checkpoint_every):
        fail("--load-model evaluates a saved model: it takes no --resume or --checkpoint-every")
    if not args.resume:
        return args
    try:  # data only (weights_only): a file that would run code is refused, its code unrun
        saved = torch.load(f"{args.resume}/checkpoint.pt", "cpu", weights_only=True)["args"]
    except Exception:  # no such folder or file; objects or code; not a checkpoint
        fail(f"cannot --resume: {args.resume}/checkpoint.pt is missing or not one {SCRIPT} wrote")
    args = parser.parse_args(argv, argparse.Namespace(**saved))  # flags given again win
    for name in ("env_id", "num_envs", "num_steps", "critic_hidden"):  # the rollout's, the Agent's
        if getattr(args, name, None) != saved.get(name):
            fail(f"--resume: --{name.replace('_', '-')} stays {saved[name]}, as in {args.resume}")
    args.run_dir = args.resume
    return args


def needs_flattening(space, env_id):
    """Whether the MLP must see `space` flattened (all but a flat Box); images: one line, exit 2."""
    if isinstance(space, (gym.spaces.Tuple, gym.spaces.Dict)):
        parts = space.spaces.values() if isinstance(space, gym.spaces.Dict) else space.spaces
        for part in parts:
            needs_flattening(part, env_id)  # exits on a part the MLP cannot take
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
        importlib.import_module(env_id.split(":")[0])
    return gym.spec(env_id.split(":")[-1])


def make_env(env_id, num_envs, device, processes=False, video=False):
    """Envs stepped together. Gymnasium 1.x resets one on the step AFTER its episode ends."""
    try:
        spec = find_spec(env_id)
        if "device" in spec.kwargs:  # an env in torch (envs/cartpole_torch.py), on `device`
            return gym.make_vec(env_id, num_envs=num_envs, device=device)
        kwargs = dict(num_envs=num_envs, render_mode="rgb_array" if video else None)  # to film
        kwargs["max_episode_steps"] = spec.max_episode_steps or 1000  # if none: cut
        envs = EnvProcesses(env_id, kwargs) if processes else gym.make_vec(env_id, **kwargs)
    except Exception as error:  # unknown id or module, no MuJoCo, a MUJOCO_GL that fails
        fail(f"cannot make {env_id}: {error}")
    if needs_flattening(envs.single_observation_space, env_id):
        envs = gym.wrappers.vector.FlattenObservation(envs)  # e.g. Discrete(16): one-hot of 16
    if not isinstance(envs.single_action_space, gym.spaces.Discrete):
        kind = f"{envs.single_action_space} actions; {SCRIPT} needs Discrete ones"
        fail(f"{env_id} has {kind}: use ppo_continuous.py for Box actions")
    envs = gym.wrappers.vector.RecordEpisodeStatistics(envs)
    return gym.wrappers.vector.TransformAction(envs, lambda action: action.cpu().numpy())


class EnvProcesses(gym.vector.VectorWrapper):
    """--async-envs: a process for each env; one that fails or dies: one line, exit 1."""

    def __init__(self, env_id, kwargs):
        default = signal.signal(signal.SIGINT, signal.SIG_IGN)  # what the new processes inherit
        try:
            super().__init__(gym.make_vec(env_id, vectorization_mode="async", **kwargs))
        finally:
            signal.signal(signal.SIGINT, default)

    def reset(self, **kwargs):
        return self.quietly(self.env.reset, **kwargs)

    def step(self, actions):
        return self.quietly(self.env.step, actions)

    def quietly(self, function, *args, **kwargs):
        level, gym.logger.min_level = gym.logger.min_level, gym.logger.ERROR + 1  # silent
        try:
            return function(*args, **kwargs)
        except Exception as error:  # raised in an env's process, or its pipe broke: it died
            self.close()
            message = f"an env process failed: {type(error).__name__}: {error or 'it ended'}"
            sys.exit(f"{SCRIPT}: error: {' '.join(message.split())}")
        finally:
            gym.logger.min_level = level

    def close(self, **kwargs):  # at once: a stop may come mid-step, or find them dead
        for process in self.env.processes:
            process.terminate()
            process.join()
        self.env.closed = True


def make_eval_env(env_id, video_dir=None):
    """One env for the final evaluation, recording video if asked."""
    steps = find_spec(env_id).max_episode_steps or 1000  # as in make_env
    env = gym.make(env_id, max_episode_steps=steps, render_mode="rgb_array" if video_dir else None)
    if needs_flattening(env.observation_space, env_id):
        env = gym.wrappers.FlattenObservation(env)  # the vectors that training saw
    if video_dir:
        try:
            env.reset(seed=0)
            env.render()  # a missing renderer (pygame) fails now, not after training
            env = gym.wrappers.RecordVideo(env, video_dir, episode_trigger=lambda _: True)
        except Exception as error:  # no moviepy, no pygame, no OpenGL for MuJoCo
            hint = "mujoco" in str(env.spec) and "; with no display, set MUJOCO_GL=egl or osmesa"
            fail(f"--capture-video: cannot film {env_id}: {error}{hint or ''}")
    return env


def evaluate(agent, env, episodes, seed, device):
    """Returns of `episodes` episodes that take the most likely action, argmax_a pi(a|s)."""
    returns = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        done, episode_return = False, 0.0
        while not done:
            with torch.no_grad():
                logits = agent.actor(torch.as_tensor(obs, dtype=torch.float32, device=device))
            obs, reward, terminated, truncated, _ = env.step(logits.argmax().item())
            episode_return += float(reward)
            done = terminated or truncated
        returns.append(episode_return)
    return returns


class Run:
    """TensorBoard, W&B, progress, videos, checkpoints, --resume, SIGTERM stopping like Ctrl-C."""

    def __init__(self, args, run_dir, agent, optimizer, envs):
        self.args, self.run_dir, self.agent, self.optimizer = args, run_dir, agent, optimizer
        self.envs, self.checkpoint = envs, f"{run_dir}/checkpoint.pt"
        self.iteration, self.global_step, self.episode_returns, self.ended_episodes = 0, 0, [], []
        if args.resume:  # weights, optimizer, statistics, counters, RNGs and episodes go on
            self.restore(torch.load(self.checkpoint, map_location="cpu", weights_only=True))
        self.wandb = self.track(args) if args.track else None  # before the writer it syncs
        purge_step = self.global_step + 1 if args.resume else None  # drop logs past checkpoint
        try:
            self.writer = SummaryWriter(run_dir, purge_step=purge_step)
        except OSError as error:  # --run-dir is a file, or cannot be made
            fail(f"cannot write TensorBoard's files to {run_dir}: {error}")
        table = "\n".join(f"|{key}|{value}|" for key, value in vars(args).items())
        self.writer.add_text("hyperparameters", "|param|value|\n|-|-|\n" + table, self.global_step)
        resumed = f", going on from step {self.global_step}" if args.resume else ""
        print(f"{SCRIPT}: {args.env_id}, seed {args.seed}, logging to {run_dir}{resumed}")
        self.saved_step = self.global_step if args.resume else None  # that of checkpoint.pt
        self.snapshot = self.state() if args.checkpoint_every else None
        self.signal, self.training, self.entropy = None, True, np.nan  # the last update's entropy
        self.default_sigterm = signal.signal(signal.SIGTERM, self.stop)
        self.start_time, self.start_step = time.time(), self.global_step
        self.last_print, self.printed_step = self.start_time, self.global_step
        rollouts = args.total_timesteps // (args.num_envs * args.num_steps)  # reinforce: at most
        self.video_every = args.capture_video and (args.video_every or max(1, rollouts // 10))
        self.frames = None  # --capture-video: the rollout after every video_every-th (ten a run)
        self.fps = envs.metadata.get("render_fps") or 25  # the env's frames a second
        self.film_every = -(-self.fps // 25)  # ceil(fps / 25) steps a frame: 25 a second at most

    def iterations(self, num_iterations):
        """1 to num_iterations (resumed: on from the next). --load-model: none, its weights in."""
        if not self.args.load_model:
            return range(self.iteration + 1, num_iterations + 1)
        try:  # what --save-model wrote: weights, and statistics where the Agent has them
            self.agent.load_state_dict(torch.load(self.args.load_model, "cpu", weights_only=True))
        except Exception:  # missing; objects or code (never run); another Agent's weights
            fail(f"cannot load --load-model {self.args.load_model}: missing, or not this env's")
        return range(0)

    def episodes(self, global_step, infos):
        """Note which envs ended an episode at this step, and its return and length; film."""
        if "_episode" in infos:  # written once per rollout, by update()
            self.ended_episodes.append((global_step, infos["_episode"], infos["episode"]))
        try:  # in a filmed rollout, every film_every-th step: up to 16 envs, 128 px wide or less
            if self.frames is not None and global_step // self.envs.num_envs % self.film_every == 0:
                Image = importlib.import_module("PIL.Image")  # Pillow, imported only to film
                frames = [Image.fromarray(frame) for frame in self.envs.render()[:16]]
                n = -(-frames[0].width // 128)  # each n x n pixels to their mean: thin lines stay
                self.frames.append(np.stack([np.asarray(frame.reduce(n)) for frame in frames]))
        except Exception as error:  # no renderer, or no display: one warning, no more films
            print(f"{SCRIPT}: warning: training goes on unfilmed: {error}", file=sys.stderr)
            self.frames, self.video_every = None, 0

    def update(self, iteration, global_step, **losses):
        """After each update: learning rate, SPS, losses/NAME, progress(); checkpoint if due."""
        self.iteration, self.global_step, self.entropy = iteration, global_step, losses["entropy"]
        lr = self.optimizer.param_groups[0]["lr"]
        self.writer.add_scalar("charts/learning_rate", lr, global_step)
        self.writer.add_scalar("charts/SPS", self.sps(global_step), global_step)
        for name, value in losses.items():  # explained_variance is 0 / 0 if G is flat: not logged
            if value.isfinite():
                self.writer.add_scalar(f"losses/{name}", value.item(), global_step)
        if self.frames:  # the rollout just filmed
            self.write_gif("videos/training", np.stack(self.frames), global_step)
        self.frames = [] if self.video_every and iteration % self.video_every == 0 else None
        self.progress(global_step)
        if self.args.checkpoint_every:
            self.snapshot = self.state()  # what a stop before the next update saves
            if global_step - (self.saved_step or 0) >= self.args.checkpoint_every:
                self.save()

    def sps(self, global_step):  # env steps per second of this process, not before a --resume
        return int((global_step - self.start_step) / (time.time() - self.start_time))

    def progress(self, global_step, end=False):
        """The episodes that ended since the last call; progress every 2 s and at the end."""
        if self.ended_episodes:
            log_episodes(self.writer, self.ended_episodes, self.episode_returns)
        self.ended_episodes, sps = [], self.sps(global_step)
        if time.time() - self.last_print > 2 or (end and self.printed_step != global_step):
            self.last_print, self.printed_step = time.time(), global_step
            recent = np.mean([r for _, r in self.episode_returns[-20:]] or [np.nan])
            left = f"{max(0, self.args.total_timesteps - global_step) / max(sps, 1):4.0f}s left"
            steps = f"step {global_step:>8}/{self.args.total_timesteps} | SPS {sps:>5} | {left}"
            print(f"{steps} | return (last 20 episodes) {recent:6.1f} | entropy {self.entropy:.2f}")

    def return_rms(self):  # the statistics of NormalizeReward (ppo_continuous.py has one)
        wrappers = [self.envs]
        while hasattr(wrappers[-1], "env"):
            wrappers.append(wrappers[-1].env)
        return [wrapper.return_rms for wrapper in wrappers if hasattr(wrapper, "return_rms")]

    def state(self):
        """All that --resume needs, copied, as of the last update: tensors and plain values."""
        name, keys, *rest = np.random.get_state()  # numpy's MT19937: 624 words, as plain ints
        rng = random.getstate(), (name, keys.tolist(), *rest), torch.get_rng_state()
        rng += (torch.cuda.get_rng_state_all(),)  # [] without CUDA
        agent, optimizer = copy.deepcopy((self.agent.state_dict(), self.optimizer.state_dict()))
        rms = [torch.from_numpy(np.array([r.mean, r.var, r.count])) for r in self.return_rms()]
        state = dict(agent=agent, optimizer=optimizer, return_rms=rms, rng=rng)
        state |= dict(iteration=self.iteration, global_step=self.global_step)
        return state | dict(episode_returns=list(self.episode_returns), args=dict(vars(self.args)))

    def restore(self, checkpoint):
        """The state() that checkpoint.pt holds, back in the agent, optimizer, envs and RNGs."""
        self.agent.load_state_dict(checkpoint["agent"])
        self.optimizer.load_state_dict(checkpoint["optimizer"])
        for rms, statistics in zip(self.return_rms(), checkpoint["return_rms"], strict=True):
            rms.mean, rms.var, rms.count = statistics.tolist()  # float64, as they were
        self.iteration, self.global_step = checkpoint["iteration"], checkpoint["global_step"]
        self.episode_returns = checkpoint["episode_returns"]
        setters = random.setstate, np.random.set_state, torch.set_rng_state
        setters += (torch.cuda.set_rng_state_all,)  # none without CUDA
        for set_state, rng in zip(setters, checkpoint["rng"], strict=True):
            set_state(rng)

    def save(self):
        """checkpoint.pt <- the snapshot, written beside it and renamed: a kill leaves it whole."""
        torch.save(self.snapshot, f"{self.checkpoint}.tmp")
        Path(f"{self.checkpoint}.tmp").replace(self.checkpoint)  # atomic, as os.replace
        self.saved_step = self.snapshot["global_step"]
        self.writer.flush()  # after a kill, the curves reach the checkpoint at least

    def write_gif(self, tag, frames, step):
        """Frames (T, N, H, W, 3): a GIF of 4 envs a row (torch's add_video needs moviepy 1)."""
        from io import BytesIO

        Image = importlib.import_module("PIL.Image")
        Summary = importlib.import_module("tensorboard.compat.proto.summary_pb2").Summary
        t, n, h, w, c = frames.shape
        rows, cols = -(-n // 4), min(n, 4)
        tiles = np.pad(frames, [(0, 0), (0, rows * cols - n), (0, 0), (0, 0), (0, 0)])
        grid = tiles.reshape(t, rows, cols, h, w, c).swapaxes(2, 3).reshape(t, rows * h, -1, c)
        palette, ms = Image.Quantize.FASTOCTREE, 1000 * self.film_every / self.fps  # real time
        gif, images = BytesIO(), [Image.fromarray(frame).quantize(method=palette) for frame in grid]
        images[0].save(gif, "GIF", save_all=True, append_images=images[1:], duration=ms, loop=0)
        image = Summary.Image(height=rows * h, width=cols * w, encoded_image_string=gif.getvalue())
        summary = Summary(value=[Summary.Value(tag=tag, image=image)])
        self.writer.file_writer.add_summary(summary, step)

    def track(self, args):
        """--track: W&B syncs TensorBoard, with flags and code; its id is kept for --resume."""
        args.wandb_id = getattr(args, "wandb_id", None) or f"{time.time_ns():x}"
        where = dict(project=args.wandb_project_name, entity=args.wandb_entity, id=args.wandb_id)
        how = dict(name=Path(self.run_dir).name, config=vars(args), save_code=True, resume="allow")
        try:  # WANDB_MODE=offline needs no account
            return importlib.import_module("wandb").init(**where, **how, sync_tensorboard=True)
        except ImportError:
            fail("--track needs wandb: pip install wandb")
        except Exception as error:  # not logged in, no network, a bad project name
            fail(f"--track: {error}; with no W&B account, set WANDB_MODE=offline")

    def stop(self, signum, frame):
        """SIGTERM (Slurm, docker stop): stop like Ctrl-C; finish() exits with 128 + 15."""
        self.signal = signum
        if self.training:  # in finish(), the run ends as it would have, then exits
            raise KeyboardInterrupt


def log_episodes(writer, ended_episodes, history):
    """The episodes that ended in a rollout: each if few, else their mean (add_scalar: ~0.1 ms)."""
    steps, ended, episodes = zip(*ended_episodes, strict=True)
    ended = torch.stack([torch.as_tensor(done) for done in ended]).cpu()
    returns = torch.stack([torch.as_tensor(e["r"]) for e in episodes]).cpu()[ended].tolist()
    lengths = torch.stack([torch.as_tensor(e["l"]) for e in episodes]).cpu()[ended].tolist()
    steps = torch.tensor(steps)[:, None].expand_as(ended)[ended].tolist()
    history.extend(zip(steps, returns, strict=True))  # every (step, return), for the caller
    if len(returns) > 256:  # one point, their mean, at the last step
        writer.add_scalar("charts/episodes", len(returns), steps[-1])
        steps, returns, lengths = [steps[-1]], [np.mean(returns)], [np.mean(lengths)]
    for step, episode_return, length in zip(steps, returns, lengths, strict=True):
        writer.add_scalar("charts/episodic_return", episode_return, step)
        writer.add_scalar("charts/episodic_length", length, step)


def finish(args, agent, envs, eval_env, run, global_step=0, interrupted=False):
    """The end of a run, trained, stopped or loaded: last logs, checkpoint, save, evaluation."""
    run.training = False  # a SIGTERM from now on lets the run end, then exits with 143
    envs.close()
    device = next(agent.parameters()).device
    sps = run.sps(global_step)
    run.progress(global_step, end=global_step > 0 and not interrupted)
    if run.snapshot is not None and run.snapshot["global_step"] != run.saved_step:
        run.save()  # the last update's state; a finished run can go on with more steps, too
    if interrupted:  # what stopped the run, and how to go on
        how = f"stopped by {'SIGTERM' if run.signal else 'Ctrl-C'} at step {global_step}"
        go_on = f"checkpoint of step {run.saved_step} in {run.checkpoint}; python {SCRIPT} --resume"
        end = f"{go_on} {run.run_dir}" if args.checkpoint_every else "no checkpoint to resume from"
        print(f"{SCRIPT}: {how}; {end}")
    if args.save_model:
        torch.save(agent.state_dict(), f"{run.run_dir}/{Path(SCRIPT).stem}.pt")
        print(f"saved the weights to {run.run_dir}/{Path(SCRIPT).stem}.pt")
    episodes = 0 if interrupted else args.eval_episodes
    eval_returns = evaluate(agent, eval_env, episodes, args.seed + 10_000, device)
    for episode, episode_return in enumerate(eval_returns):
        run.writer.add_scalar("eval/episodic_return", episode_return, episode)
    if eval_returns:
        mean, std = np.mean(eval_returns), np.std(eval_returns)
        print(f"evaluation over {len(eval_returns)} episodes: {mean:.1f} +/- {std:.1f}")
    eval_env.close()
    run.writer.close()
    if run.wandb:  # after the writer: W&B syncs its last events
        run.wandb.finish()
    signal.signal(signal.SIGTERM, run.default_sigterm)
    if run.signal:  # the conventional status: 128 + the signal's number, 143 for SIGTERM
        sys.exit(128 + run.signal)
    result = dict(agent=agent, episode_returns=run.episode_returns, global_step=global_step)
    return result | dict(sps=sps, eval_returns=eval_returns, run_dir=run.run_dir)


def fail(message):
    """Bad input: one line on stderr and exit status 2, never a traceback."""
    print(f"{SCRIPT}: error: {' '.join(str(message).split())}", file=sys.stderr)
    sys.exit(2)


def check_finite(loss, iteration, run):
    """Stop on a NaN or inf loss before it reaches the weights, naming the iteration."""
    if not torch.isfinite(loss):
        run.writer.close()
        message = f"loss is {loss.item()} at iteration {iteration}; try a smaller --learning-rate"
        sys.exit(f"{SCRIPT}: error: {message}")


if __name__ == "__main__":
    train(parse_args())
