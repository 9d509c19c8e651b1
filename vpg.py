# SPDX-License-Identifier: MIT
"""VPG: the policy gradient with a learned value baseline, on discrete actions.

REINFORCE (reinforce.py) plus a critic V_phi(s) that learns the expected return.
Subtracting it from the reward-to-go leaves the gradient unbiased and cuts its variance:

    A_t = G_t - V_phi(s_t)                                (advantage; no gradient)
    L_pi = -mean_t log pi_theta(a_t|s_t) * A_t            (policy loss)
    L_V  =  mean_t (G_t - V_phi(s_t))^2                   (value loss)

With a critic, rollouts need not be whole episodes: a return cut by the end of the
rollout, or by a time limit, is completed with gamma * V_phi(next state). An episode
that really ended (terminated) adds nothing after its last reward.

Each batch gets --train-pi-iters policy steps (1: vanilla policy gradient) and
--train-v-iters value steps. Try --train-pi-iters 10: repeated steps on one batch
push the policy far from the one that collected it. On 4 of 5 seeds it collapsed to
always pushing one way, a return of 9 (docs/lessons.md, "What each idea buys"). That is the
problem PPO (ppo.py) fixes.

Paper: Sutton et al. (2000), "Policy gradient methods for reinforcement learning with
function approximation"; Schulman et al. (2016), GAE paper, section 2 on baselines.

    python vpg.py                                         # CartPole-v1
    python vpg.py --train-pi-iters 10                     # watch it collapse
    tensorboard --logdir runs
"""

import argparse
import importlib
import random
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
        # validate_args=False: the argument checks cost more than this small MLP's forward pass
        dist = Categorical(logits=self.actor(x), validate_args=False)
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


def vpg_loss(logprobs, values, returns):
    """Policy loss -mean_t log pi(a_t|s_t) * A_t with A_t = G_t - V(s_t), and value loss.

    The advantage is detached: the policy loss must not move the critic.
    """
    advantages = (returns - values).detach()
    policy_loss = -(logprobs * advantages).mean()
    value_loss = ((returns - values) ** 2).mean()
    return policy_loss, value_loss


def train(args):
    device, run_dir = set_up(args)  # seeds, device, run folder: the support code, below
    envs = make_env(args.env_id, args.num_envs, device)
    eval_env = make_eval_env(args.env_id, f"{run_dir}/videos" if args.capture_video else None)
    agent = Agent(envs.single_observation_space.shape[0], envs.single_action_space.n).to(device)
    # One Adam for both networks: a policy step only has gradients in the actor and a
    # value step only in the critic, and Adam skips parameters that have none.
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate)
    log = Log(args, run_dir)  # TensorBoard, the progress line, every episode's return
    if args.load_model:  # no training: evaluate (and film) a saved model
        return finish(args, load_model(agent, args.load_model), envs, eval_env, log)

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

    global_step, interrupted = 0, False
    num_iterations = max(1, args.total_timesteps // (args.num_envs * args.num_steps))
    next_obs, _ = envs.reset(seed=args.seed)
    next_obs = torch.as_tensor(next_obs, dtype=torch.float32, device=device)
    next_done = torch.zeros(args.num_envs, dtype=torch.bool, device=device)
    try:
        for iteration in range(1, num_iterations + 1):
            for step in range(args.num_steps):
                obs[step] = next_obs
                valid[step] = ~next_done  # the step after an episode's end is gymnasium's reset
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
                log.episodes(global_step, infos)  # the return of each episode that just ended

            # V(s_{t+1}) for every step. After a step that ends an episode, s_{t+1} is still
            # that episode's final observation (the reset comes one step later).
            with torch.no_grad():
                next_values = torch.cat([values[1:], agent.get_value(next_obs).T])
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
            b_values = values[valid]
            for _ in range(args.train_pi_iters):
                _, newlogprobs, entropy, newvalues = agent.get_action_and_value(b_obs, b_actions)
                policy_loss, _ = vpg_loss(newlogprobs, newvalues.flatten(), b_returns)
                check_finite(policy_loss, iteration, log)
                optimizer.zero_grad()
                policy_loss.backward()
                optimizer.step()
            for _ in range(args.train_v_iters):
                _, newlogprobs, entropy, newvalues = agent.get_action_and_value(b_obs, b_actions)
                _, v_loss = vpg_loss(newlogprobs, newvalues.flatten(), b_returns)
                check_finite(v_loss, iteration, log)
                optimizer.zero_grad()
                v_loss.backward()
                optimizer.step()

            # What to watch: the losses, and explained_variance (1: V(s) predicts the returns).
            log.update(
                global_step,
                optimizer,
                policy_loss=policy_loss,
                value_loss=v_loss,
                entropy=entropy.mean(),
                explained_variance=1 - (b_returns - b_values).var() / b_returns.var(),
            )
    except KeyboardInterrupt:  # Ctrl-C: stop cleanly, keep what was learned, skip evaluation
        interrupted = True
    return finish(args, agent, envs, eval_env, log, global_step, interrupted)


# ======== End of the lesson. Below: support code (flags, envs, logs, checks); skip it. ========

SCRIPT = Path(__file__).name
CPU_THREADS = torch.get_num_threads()  # torch's default: one per core


def set_up(args):
    """Seeds (the envs get theirs at reset), CPU threads, the device, the run's directory."""
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic
    # A small MLP on small batches runs fastest on one CPU thread; rollouts of 32,768 steps
    # or more run ~1.6x faster on 2 cores than on one (benchmarks/results/sps).
    torch.set_num_threads(1 if args.num_envs * args.num_steps < 32_768 else CPU_THREADS)
    device = torch.device("cuda" if args.cuda and torch.cuda.is_available() else "cpu")
    if args.cuda and device.type == "cpu":
        print(f"{SCRIPT}: warning: no usable GPU for --cuda; using the CPU", file=sys.stderr)
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
positive_float = checked(float, lambda x: x > 0, "a positive number")
unit_interval = checked(float, lambda x: 0 <= x <= 1, "in [0, 1]")


def parse_args(argv=None):
    """The flags in argv, else on the command line, except in a Jupyter or Colab notebook,
    whose kernel's own (-f kernel.json) are not ours; `%run SCRIPT --flags` still reads them."""
    if argv is None and "ipykernel" in sys.modules and Path(sys.argv[0]).name != SCRIPT:
        argv = []
    parser = argparse.ArgumentParser(SCRIPT, description=__doc__.split("\n")[0])
    parser.formatter_class = argparse.ArgumentDefaultsHelpFormatter  # --help shows defaults
    arg, on_off = parser.add_argument, argparse.BooleanOptionalAction
    arg("--env-id", default="CartPole-v1", help="Gymnasium env id, with Discrete actions")
    arg("--seed", type=int, default=1, help="seed of python, numpy, torch and the envs")
    arg("--total-timesteps", type=positive_int, default=150_000, help="env steps to train for")
    arg("--num-envs", type=positive_int, default=8, help="envs played in parallel")
    arg("--num-steps", type=positive_int, default=128, help="steps per env in a rollout")
    arg("--learning-rate", type=positive_float, default=1e-2, help="Adam step size")
    arg("--gamma", type=unit_interval, default=0.99, help="discount factor")
    arg("--bootstrap-truncation", action=on_off, default=True, help="off shows the time-limit bug")
    arg("--train-pi-iters", type=positive_int, default=1, help="policy steps per rollout")
    arg("--train-v-iters", type=positive_int, default=20, help="value steps per rollout")
    arg("--cuda", action="store_true", help="train on the GPU if one is usable")
    arg("--torch-deterministic", action=on_off, default=True, help="deterministic cuDNN")
    arg("--capture-video", action="store_true", help="film the evaluation (needs moviepy)")
    arg("--save-model", action="store_true", help="save the weights in the run directory")
    arg("--load-model", default=None, help="evaluate (and film) this saved model; no training")
    arg("--eval-episodes", type=nonnegative_int, default=10, help="greedy episodes after training")
    arg("--run-dir", default=None, help="TensorBoard dir; if unset, runs/ENV__SCRIPT__SEED__TIME")
    return parser.parse_args(argv)


def needs_flattening(space, env_id):
    """Whether the MLP must see `space` through FlattenObservation: not a flat Box; yes for
    Discrete (one-hot), MultiDiscrete, MultiBinary, a 2-D Box, and Tuples or Dicts of these.
    Images and spaces with no fixed-size vector: one line, exit 2."""
    if isinstance(space, (gym.spaces.Tuple, gym.spaces.Dict)):
        parts = space.spaces.values() if isinstance(space, gym.spaces.Dict) else space.spaces
        for part in parts:
            needs_flattening(part, env_id)  # exits on a part the MLP cannot take
        return True
    if isinstance(space, gym.spaces.Box) and len(space.shape) >= 3:
        fail(
            f"{env_id} has image observations of shape {space.shape}; {SCRIPT} feeds an MLP "
            "with flat vectors: for pixels use a convolutional agent, e.g. CleanRL's ppo_atari.py"
        )
    kinds = gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary
    if not isinstance(space, kinds):  # Text, Graph, Sequence, OneOf, ...
        fail(
            f"{env_id} has {type(space).__name__} observations, which have no fixed-size vector "
            f"form; {SCRIPT} feeds an MLP with flat vectors: wrap the env to give Box observations"
        )
    return not (isinstance(space, gym.spaces.Box) and len(space.shape) == 1)


def find_spec(env_id):
    """The env's spec; for gymnasium's "module:EnvId", the import of module registers it."""
    if ":" in env_id:
        importlib.import_module(env_id.split(":")[0])
    return gym.spec(env_id.split(":")[-1])


def make_env(env_id, num_envs, device):
    """`num_envs` copies of the env, stepped together (the env's own vector version if it has
    one, else sync), recording each episode's return. Gymnasium 1.x resets an env on the step
    AFTER its episode ends (action ignored, reward 0): train() keeps that out of the loss."""
    try:
        spec = find_spec(env_id)
        # An env in torch (benchmarks/cartpole_torch.py): tensors in and out, on `device`.
        if "device" in spec.kwargs:
            return gym.make_vec(env_id, num_envs=num_envs, device=device)
        # No time limit of its own (CliffWalking-v1)? Cut at 1,000 steps, or it may never end.
        max_steps = spec.max_episode_steps or 1000
        envs = gym.make_vec(env_id, num_envs=num_envs, max_episode_steps=max_steps)
    except (gym.error.Error, ImportError) as error:  # unknown id or module, no MuJoCo, ...
        fail(f"cannot make {env_id}: {error}")
    if needs_flattening(envs.single_observation_space, env_id):
        envs = gym.wrappers.vector.FlattenObservation(envs)  # e.g. Discrete(16): one-hot of 16
    if not isinstance(envs.single_action_space, gym.spaces.Discrete):
        fail(
            f"{env_id} has {envs.single_action_space} actions; {SCRIPT} needs Discrete "
            "actions: use ppo_continuous.py for Box actions"
        )
    envs = gym.wrappers.vector.RecordEpisodeStatistics(envs)
    return gym.wrappers.vector.TransformAction(envs, lambda action: action.cpu().numpy())


def make_eval_env(env_id, video_dir=None):
    """One env for the final evaluation, recording video if asked."""
    max_steps = find_spec(env_id).max_episode_steps or 1000  # as in make_env
    mode = "rgb_array" if video_dir else None
    env = gym.make(env_id, max_episode_steps=max_steps, render_mode=mode)
    if needs_flattening(env.observation_space, env_id):
        env = gym.wrappers.FlattenObservation(env)  # the vectors that training saw
    if video_dir:
        try:
            recorder = gym.wrappers.RecordVideo(env, video_dir, episode_trigger=lambda _: True)
            env.reset(seed=0)
            env.render()  # a missing renderer (pygame) fails now, not after training
        except gym.error.DependencyNotInstalled as error:  # moviepy or the renderer
            fail(f"--capture-video: {error}")
        env = recorder
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


def load_model(agent, path):
    """The weights that --save-model wrote (and the statistics, where the Agent has them)."""
    try:
        agent.load_state_dict(torch.load(path, map_location=next(agent.parameters()).device))
    except Exception as error:  # missing, unreadable or not this Agent's weights
        fail(f"cannot load --load-model {path}: {error}")
    return agent


class Log:
    """TensorBoard (CleanRL's tags), a progress line every 2 s, each episode's (step, return)."""

    def __init__(self, args, run_dir):
        self.run_dir, self.total_timesteps = run_dir, args.total_timesteps
        self.writer = SummaryWriter(run_dir)
        table = "\n".join(f"|{key}|{value}|" for key, value in vars(args).items())
        self.writer.add_text("hyperparameters", "|param|value|\n|-|-|\n" + table)
        print(f"{SCRIPT}: {args.env_id}, seed {args.seed}, logging to {run_dir}")
        self.episode_returns, self.ended_episodes, self.printed_step = [], [], None
        self.start_time = self.last_print = time.time()

    def episodes(self, global_step, infos):
        """Note which envs ended an episode at this step, and its return and length."""
        if "_episode" in infos:  # written once per rollout, by update()
            self.ended_episodes.append((global_step, infos["_episode"], infos["episode"]))

    def update(self, global_step, optimizer, **losses):
        """After each update: learning rate, SPS, losses/NAME of each loss, then progress()."""
        sps = int(global_step / (time.time() - self.start_time))
        self.writer.add_scalar("charts/learning_rate", optimizer.param_groups[0]["lr"], global_step)
        self.writer.add_scalar("charts/SPS", sps, global_step)
        for name, value in losses.items():
            self.writer.add_scalar(f"losses/{name}", value.item(), global_step)
        self.progress(global_step)

    def progress(self, global_step, end=False):
        """The episodes that ended since the last call; progress every 2 s and at the end."""
        log_episodes(self.writer, self.ended_episodes, self.episode_returns)
        self.ended_episodes, sps = [], int(global_step / (time.time() - self.start_time))
        if time.time() - self.last_print > 2 or (end and self.printed_step != global_step):
            self.last_print, self.printed_step = time.time(), global_step
            recent = np.mean([r for _, r in self.episode_returns[-20:]] or [np.nan])
            left = max(0, self.total_timesteps - global_step) / max(sps, 1)
            print(
                f"step {global_step:>8}/{self.total_timesteps} | SPS {sps:>5} | "
                f"{left:4.0f}s left | return (last 20 episodes) {recent:6.1f}"
            )


def log_episodes(writer, ended_episodes, history):
    """The episodes that ended in a rollout, from (global step, which envs ended, their
    info["episode"]) per step: each if few, else their mean and count (add_scalar: ~0.1 ms)."""
    if not ended_episodes:
        return
    steps, ended, episodes = zip(*ended_episodes, strict=True)
    ended = torch.stack([torch.as_tensor(done) for done in ended]).cpu()
    returns = torch.stack([torch.as_tensor(e["r"]) for e in episodes]).cpu()[ended].tolist()
    lengths = torch.stack([torch.as_tensor(e["l"]) for e in episodes]).cpu()[ended].tolist()
    steps = torch.tensor(steps)[:, None].expand_as(ended)[ended].tolist()
    history.extend(zip(steps, returns, strict=True))  # every (step, return), for the caller
    if len(returns) <= 256:
        for step, episode_return, length in zip(steps, returns, lengths, strict=True):
            writer.add_scalar("charts/episodic_return", episode_return, step)
            writer.add_scalar("charts/episodic_length", length, step)
    else:
        writer.add_scalar("charts/episodic_return", np.mean(returns), steps[-1])
        writer.add_scalar("charts/episodic_length", np.mean(lengths), steps[-1])
        writer.add_scalar("charts/episodes", len(returns), steps[-1])


def finish(args, agent, envs, eval_env, log, global_step=0, interrupted=False):
    """The end of a run, trained, Ctrl-C'd or loaded: last logs, save, evaluate, the dict."""
    envs.close()
    device = next(agent.parameters()).device
    sps = int(global_step / (time.time() - log.start_time))
    log.progress(global_step, end=global_step > 0 and not interrupted)
    if interrupted:
        print(f"{SCRIPT}: interrupted at step {global_step}; stopping cleanly")
    if args.save_model:
        torch.save(agent.state_dict(), f"{log.run_dir}/{Path(SCRIPT).stem}.pt")
        print(f"saved the weights to {log.run_dir}/{Path(SCRIPT).stem}.pt")
    episodes = 0 if interrupted else args.eval_episodes
    eval_returns = evaluate(agent, eval_env, episodes, args.seed + 10_000, device)
    for episode, episode_return in enumerate(eval_returns):
        log.writer.add_scalar("eval/episodic_return", episode_return, episode)
    if eval_returns:
        mean, std = np.mean(eval_returns), np.std(eval_returns)
        print(f"evaluation over {len(eval_returns)} episodes: {mean:.1f} +/- {std:.1f}")
    eval_env.close()
    log.writer.close()
    result = dict(agent=agent, episode_returns=log.episode_returns, global_step=global_step)
    return result | dict(sps=sps, eval_returns=eval_returns, run_dir=log.run_dir)


def fail(message):
    """Bad input: one line on stderr and exit status 2, never a traceback."""
    print(f"{SCRIPT}: error: {' '.join(str(message).split())}", file=sys.stderr)
    sys.exit(2)


def check_finite(loss, iteration, log):
    """Stop on a NaN or inf loss before it reaches the weights, naming the iteration."""
    if not torch.isfinite(loss):
        log.writer.close()
        message = f"loss is {loss.item()} at iteration {iteration}; try a smaller --learning-rate"
        sys.exit(f"{SCRIPT}: error: {message}")


if __name__ == "__main__":
    train(parse_args())
