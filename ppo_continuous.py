# SPDX-License-Identifier: MIT
"""PPO for continuous actions: ppo_gae.py with a diagonal Gaussian policy, normalized inputs.

    pi_theta(a|s) = N(a; mu_theta(s), diag(sigma^2))
    log pi(a|s) = sum_i [ -(a_i - mu_i)^2 / (2 sigma_i^2) - log sigma_i - log(2 pi) / 2 ]
    entropy     = sum_i [ log sigma_i + (1 + log(2 pi)) / 2 ]

mu_theta is a network, and log sigma is a learned vector that does not depend on s.
The loss scores the sampled action a, and the env gets it clipped to its bounds. Observations
are normalized by their running mean and variance. The Agent keeps these statistics, so
--save-model saves them, and the evaluation freezes them. Rewards are divided by the running
std of the discounted return, so the value targets have one scale in any env. Normalized
observations and scaled rewards are both clipped to [-10, 10]. A wider critic
(--critic-hidden) fits V better.

The learning rate decays linearly to 0. With --lr-target-kl it follows each update's
KL(pi_old, pi) instead, as the rsl_rl library does: it is divided by 1.5 when the KL is above
twice the target, multiplied by 1.5 when it is below half of it, and never rises above
--learning-rate.

Papers: Schulman et al. (2017), "Proximal Policy Optimization Algorithms", arXiv:1707.06347;
Andrychowicz et al. (2020), "What Matters In On-Policy Reinforcement Learning?",
arXiv:2006.05990, for the normalizations and the initial sigma; Rudin et al. (2021),
"Learning to Walk in Minutes Using Massively Parallel Deep Reinforcement Learning",
arXiv:2109.11978, for the learning rate that follows the KL.

    python ppo_continuous.py                              # Pendulum-v1
    python ppo_continuous.py --env-id HalfCheetah-v5 --total-timesteps 1000000 --num-envs 8 \
        --num-steps 256 --num-minibatches 32 --learning-rate 3e-4 --gamma 0.99 \
        --log-std-init -0.5 --critic-hidden 256 --no-anneal-lr --lr-target-kl 0.02
    (MuJoCo's envs and their flags: docs/results.md)
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
    from torch.distributions import Normal
    from torch.utils.tensorboard import SummaryWriter
except KeyboardInterrupt:
    if __name__ != "__main__":
        raise  # When this file is imported, the caller handles the Ctrl-C.
    sys.exit(130)  # 130 = 128 + 2 (SIGINT), the exit status of a program ended by Ctrl-C.

# The actions are vectors of real numbers, each dimension within its bounds (Gymnasium calls
# this space Box), and the policy draws each dimension from a Gaussian. ppo_gae.py handles the
# integer actions 0..n-1 (Gymnasium's Discrete space). The support code checks that the env's
# actions are of the kind named here.
ACTIONS = "Box"


def hyperparameters(parser):
    """Add the algorithm's flags and their defaults. parse_args(), below, adds the flags that
    every run has (--cuda, --compile, --save-model, ...)."""
    arg, on_off = parser.add_argument, argparse.BooleanOptionalAction
    # log_sigma_type is an argparse type: a float in [-20, 20], so sigma = e^x is in [2e-9, 5e8].
    log_sigma_type = checked(float, lambda x: -20 <= x <= 20, "in [-20, 20]")
    arg("--env-id", default="Pendulum-v1", help="Gymnasium env id, with Box actions")
    arg("--seed", type=nonnegative_int, default=1, help="seed of python, numpy, torch and the envs")
    arg("--total-timesteps", type=positive_int, default=150_000, help="env steps to train for")
    arg("--num-envs", type=positive_int, default=16, help="envs played in parallel")
    arg("--num-steps", type=positive_int, default=128, help="steps per env in a rollout")
    arg("--learning-rate", type=positive_float, default=1e-3, help="Adam step size")
    arg("--gamma", type=unit_interval, default=0.9, help="discount factor")
    arg(
        "--bootstrap-truncation",
        action=on_off,
        default=True,
        help="complete a return cut by a time limit with gamma * V instead of ending it",
    )
    arg("--anneal-lr", action=on_off, default=True, help="decay the learning rate linearly to 0")
    arg("--gae-lambda", type=unit_interval, default=0.95, help="lambda of GAE")
    arg("--num-minibatches", type=positive_int, default=8, help="minibatches per epoch")
    arg("--update-epochs", type=positive_int, default=10, help="passes over each rollout")
    arg("--normalize-advantages", action=on_off, default=True, help="standardize A per minibatch")
    arg("--clip-coef", type=positive_float, default=0.2, help="epsilon of the clipped ratio")
    arg("--clip-vloss", action=on_off, default=False, help="clip V around its old values too")
    arg("--log-std-init", type=log_sigma_type, default=0.0, help="the policy's log sigma at first")
    arg("--critic-hidden", type=positive_int, default=64, help="units in each critic layer")
    arg("--ent-coef", type=nonnegative_float, default=0.0, help="weight c_H of the entropy bonus")
    arg("--anneal-ent", action=on_off, default=False, help="decay c_H linearly to 0 as well")
    arg("--vf-coef", type=positive_float, default=0.5, help="weight c_V of the value loss")
    arg("--max-grad-norm", type=positive_float, default=0.5, help="clip the global gradient norm")
    arg(
        "--target-kl",
        type=positive_float,
        default=None,
        help="stop the epochs early once the estimated KL(pi_old, pi) exceeds this",
    )
    arg("--lr-target-kl", type=positive_float, default=None, help="the KL that the lr adapts to")


def flag_conflict(args):
    """Return why these flags' values cannot go together, in one line, or None if they can.
    parse_args(), in the support code, calls it to refuse such a command line."""
    # As in CleanRL, num_envs x num_steps must split evenly into --num-minibatches, so that
    # the minibatches of a full batch have one size. train() drops the reset steps from the
    # batch, and then the minibatches' sizes may differ by one.
    batch = args.num_envs * args.num_steps
    if batch % args.num_minibatches != 0:
        return f"--num-envs x --num-steps = {batch} does not split into --num-minibatches"
    if args.anneal_ent and args.ent_coef == 0:
        return "--anneal-ent decays --ent-coef, which is 0: give --ent-coef too"
    if args.lr_target_kl is not None and args.anneal_lr:
        return "--lr-target-kl sets the learning rate itself: add --no-anneal-lr"
    return None


def layer_init(layer, std=2**0.5, bias=0.0):
    """Give the layer orthogonal weights of gain `std` and a constant bias, as the PPO
    codebases do. std is the gain that scales the orthogonal matrix, not a standard
    deviation, and CleanRL names it std too. The default gain, sqrt(2), is the one OpenAI
    Baselines gives hidden layers. The actor's last layer takes 0.01 and the critic's 1."""
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


class RunningNorm(nn.Module):
    """Normalize x to clip((x - mean) / sqrt(var + 1e-8), -10, 10), where mean and var are the
    running statistics of every x passed to update(). They are buffers, which are saved with
    the weights and are not trained."""

    def __init__(self, shape):
        super().__init__()
        self.register_buffer("mean", torch.zeros(shape))
        self.register_buffer("var", torch.ones(shape))
        # count starts at 1e-4, not 0, so the first update does not divide by zero and gives
        # the initial mean and variance almost no weight.
        self.register_buffer("count", torch.tensor(1e-4))

    def update(self, x):
        """Merge x, float32 (B, *shape), into the statistics (Chan et al.'s parallel update)."""
        batch_mean = x.mean(0)
        batch_var = x.var(0, correction=0)
        batch_count = x.shape[0]
        delta, total = batch_mean - self.mean, self.count + batch_count
        self.mean += delta * batch_count / total
        # squared_deviations sums the squared deviations of the old data and of x, each
        # around its own mean. The term delta**2 * self.count * batch_count / total adds the
        # spread that comes from the two means being apart (Chan et al.'s formula).
        squared_deviations = self.var * self.count + batch_var * batch_count
        self.var = (squared_deviations + delta**2 * self.count * batch_count / total) / total
        self.count = total

    def forward(self, x):
        return ((x - self.mean) / torch.sqrt(self.var + 1e-8)).clamp(-10.0, 10.0)


class Agent(nn.Module):
    """The actor maps a normalized observation to the mean of a Gaussian, whose log-std is a
    learned vector. The critic, which shares no weights with it, maps the observation to V(s).
    The critic is `hidden` wide too, unless `critic_hidden` says otherwise."""

    def __init__(self, obs_dim, action_dim, hidden=64, log_std_init=0.0, critic_hidden=None):
        super().__init__()
        critic_hidden = critic_hidden or hidden
        # The networks do not normalize their input. train() normalizes each observation once
        # with obs_norm, stores the normalized one, and passes it to the networks.
        self.obs_norm = RunningNorm(obs_dim)
        self.actor_mean = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden, action_dim), std=0.01),  # The mean starts near 0.
        )
        # log sigma is learned, one per action dimension, and is the same in every state.
        self.actor_logstd = nn.Parameter(torch.full((action_dim,), log_std_init))
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, critic_hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(critic_hidden, critic_hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(critic_hidden, 1), std=1.0),
        )

    def get_value(self, x):
        """Return V(x), of shape (B, 1), for x float32 (B, obs_dim), normalized already."""
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        """Return (a, log pi(a|x), entropy of pi(.|x), V(x)) for a batch of B observations.

        x is float32 (B, obs_dim), normalized already. With action None, a is sampled from
        pi(.|x). With action given, float32 (B, action_dim), a is that action, so the update
        uses this method to score the batch's actions. The action dimensions are independent,
        so the log-prob and the entropy are sums over them, of shape (B,). V(x) is (B, 1)."""
        mean = self.actor_mean(x)
        std = self.actor_logstd.exp().expand_as(mean)  # sigma is the same in every state.
        # validate_args=False skips the distribution's argument checks, which cost time.
        dist = Normal(mean, std, validate_args=False)
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.critic(x)


def greedy_action(agent, obs):
    """Return the action that the final evaluation takes, the Gaussian's mean mu(s).
    obs is float32 (obs_dim,). It is normalized here with the statistics frozen, and the env
    clips the action to its bounds."""
    return agent.actor_mean(agent.obs_norm(obs)).cpu().numpy()


def compute_gae(rewards, values, next_values, terminated, episode_end, gamma, gae_lambda):
    """Return the generalized advantage estimates and the value targets, time along dim 0.

    Every tensor is float32 (T, N); terminated and episode_end hold 0.0 or 1.0, and gamma and
    gae_lambda are floats.

    delta_t = r_t + gamma * (1 - terminated_t) * V(s_{t+1}) - V(s_t)
    A_t     = delta_t + gamma * lambda * (1 - episode_end_t) * A_{t+1},  A_T = 0
    returns = A + V

    next_values[t] is V(s_{t+1}); on a truncated step it is V of the episode's real final
    observation, which bootstraps the cut-off return. A termination zeroes the bootstrap;
    any episode end (terminated or truncated) stops A from flowing back across it.
    """
    advantages = torch.zeros_like(rewards)
    next_advantage = torch.zeros_like(rewards[0])
    for t in reversed(range(len(rewards))):
        not_terminated = 1.0 - terminated[t].to(rewards.dtype)
        not_ended = 1.0 - episode_end[t].to(rewards.dtype)
        delta = rewards[t] + gamma * not_terminated * next_values[t] - values[t]
        next_advantage = delta + gamma * gae_lambda * not_ended * next_advantage
        advantages[t] = next_advantage
    return advantages, advantages + values


def ppo_loss(new_logprobs, old_logprobs, advantages, clip_coef):
    """L_clip = -mean_t min(rho_t A_t, clip(rho_t, 1 - eps, 1 + eps) A_t), rho_t = pi / pi_old.

    new_logprobs (which carries its graph), old_logprobs and advantages are float32 (B,), and
    clip_coef (eps) is a float.
    """
    ratio = (new_logprobs - old_logprobs).exp()
    clipped_ratio = ratio.clamp(1 - clip_coef, 1 + clip_coef)
    return -torch.min(ratio * advantages, clipped_ratio * advantages).mean()


def value_loss(values, returns, old_values=None, clip_coef=None):
    """L_V = mean_t (R_t - V(s_t))^2, the mean squared error, with no 1/2 in front.

    R_t = A_t + V_old(s_t) is GAE's value target (compute_gae's returns). With old_values and
    clip_coef, L_V is the mean of the elementwise max of (R_t - V(s_t))^2 and (R_t - V_clip)^2,
    where V_clip = V_old + clip(V - V_old, -eps, eps), as in OpenAI Baselines' PPO2. Here eps
    is --clip-coef, the policy's clip range, reused as an absolute bound on how far V may
    move from V_old, although values have another scale than probability ratios. values
    (which carries its graph), returns and old_values (or None) are float32 (B,), and
    clip_coef is a float.

    train() adds --vf-coef * L_V to the loss, as Stable-Baselines3 does (vf_coef times
    F.mse_loss). CleanRL puts an extra 1/2 inside its value loss, so at the same --vf-coef its
    value loss counts half as much as here.
    """
    loss = (returns - values) ** 2
    if old_values is not None and clip_coef is not None:
        clipped_values = old_values + (values - old_values).clamp(-clip_coef, clip_coef)
        loss = torch.max(loss, (returns - clipped_values) ** 2)
    return loss.mean()


def adapted_lr(lr, kl, target_kl, max_lr):
    """Return the step size that keeps each update's KL(pi_old, pi) near target_kl. It is
    lr / 1.5 if kl > 2 target_kl, lr * 1.5 if kl < target_kl / 2, and lr otherwise, kept in
    [1e-5, max_lr]. All four arguments are Python floats, and so is the step size returned."""
    if kl > 2 * target_kl:
        return max(lr / 1.5, 1e-5)
    if kl < target_kl / 2:
        return min(lr * 1.5, max_lr)
    return lr


def train(args):
    # set_up() makes the run's folder, seeds python, numpy and torch, and picks the device.
    device, run_dir = set_up(args)
    envs = make_env(args, device)  # make_env() steps --num-envs copies of --env-id together.
    # Each reward is divided by the running std of the discounted return, then clipped to
    # [-10, 10], so the value targets have one scale in any env. The logged episode returns
    # stay the env's own, since make_env() records them before these wrappers.
    envs = gym.wrappers.vector.NormalizeReward(envs, gamma=args.gamma)
    envs = gym.wrappers.vector.ClipReward(envs, -10.0, 10.0)
    obs_dim, action_dim = envs.single_observation_space.shape[0], envs.single_action_space.shape[0]
    agent = Agent(
        obs_dim, action_dim, log_std_init=args.log_std_init, critic_hidden=args.critic_hidden
    ).to(device)
    # Adam's eps is 1e-5, as in the PPO codebases. fused=True updates all the parameters in
    # one kernel, which is about 20% faster here.
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5, fused=True)

    def gradients(mb_obs, mb_actions, mb_logprobs, mb_advantages, mb_returns, mb_values, ent_coef):
        """Leave the gradients of a minibatch's loss in each parameter's .grad, and return
        what to watch. The mb_ arguments are the minibatch's rows of the batch.

        It builds the loss L = L_clip + c_V * L_V - c_H * H, one loss for actor and critic,
        runs its backward pass, and clips the gradients to a global norm. This is the update's
        minibatch step, which --compile compiles, and optimizer.step() then applies the
        gradients. It returns L, the policy loss, the value loss, the entropy of each sample
        (B,), the new log-probs (detached) and the gradient's norm |g| before clipping."""
        _, newlogprobs, entropy, newvalues = agent.get_action_and_value(mb_obs, mb_actions)
        # The advantages are standardized to mean 0 and std 1 in each minibatch. A single
        # sample would become 0, so it is left as it is.
        if args.normalize_advantages and len(mb_advantages) > 1:
            std = mb_advantages.std(correction=0)
            mb_advantages = (mb_advantages - mb_advantages.mean()) / (std + 1e-8)
        policy_loss = ppo_loss(newlogprobs, mb_logprobs, mb_advantages, args.clip_coef)
        old_values = mb_values if args.clip_vloss else None
        v_loss = value_loss(newvalues.flatten(), mb_returns, old_values, args.clip_coef)
        loss = policy_loss - ent_coef * entropy.mean() + args.vf_coef * v_loss
        optimizer.zero_grad()
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
        return loss, policy_loss, v_loss, entropy, newlogprobs.detach(), grad_norm

    # With --compile, torch.compile compiles gradients(), both its forward and its backward
    # pass, if compiles() finds that compiling works on this device.
    if args.compile and compiles(device):
        gradients = torch.compile(gradients, dynamic=True)

    # The rollout's storage is time-major, of shape (num_steps, num_envs).
    shape = (args.num_steps, args.num_envs)
    obs = torch.zeros(shape + envs.single_observation_space.shape, device=device)
    actions = torch.zeros(shape + envs.single_action_space.shape, device=device)
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
    action_low = torch.as_tensor(envs.single_action_space.low, device=device)
    action_high = torch.as_tensor(envs.single_action_space.high, device=device)
    # A Ctrl-C ends the loop below, and log.finish() then ends the run with what was learned.
    with log:
        # The first reset has a seed (Log.reset_seed, below).
        next_obs, _ = envs.reset(seed=log.reset_seed())
        next_obs = agent.obs_norm(torch.as_tensor(next_obs, dtype=torch.float32, device=device))
        next_done = torch.zeros(args.num_envs, dtype=torch.bool, device=device)
        for iteration in log.iterations(num_iterations):  # iteration = 1, 2, ..., num_iterations
            # frac is 1 at the first update and 1/N at the last.
            frac = 1 - (iteration - 1) / num_iterations
            if args.anneal_lr:  # The learning rate decays linearly toward 0.
                optimizer.param_groups[0]["lr"] = args.learning_rate * frac
            # With --anneal-ent the entropy bonus decays too, so the policy explores first and
            # acts sharply later.
            ent_coef = args.ent_coef * (frac if args.anneal_ent else 1)
            for step in range(args.num_steps):
                obs[step] = next_obs
                # Gymnasium resets an env on the step after its episode ends. That reset step
                # ignores the action and gives reward 0, so it is left out of the batch.
                valid[step] = ~next_done
                with torch.no_grad():
                    action, logprob, _, value = agent.get_action_and_value(next_obs)
                actions[step], logprobs[step], values[step] = action, logprob, value.flatten()
                # The env gets the action clipped to its bounds. The loss scores the sample itself.
                env_action = action.clamp(action_low, action_high)
                # The envs take the actions as a tensor and return numpy arrays (tensors, for an
                # env written in torch). torch.as_tensor turns each into a tensor on the device.
                next_obs, reward, terminated, truncated, infos = envs.step(env_action)
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
                agent.obs_norm.update(next_obs)  # The statistics take in each observation seen.
                # The networks see the normalized observation, and the storage keeps it.
                next_obs = agent.obs_norm(next_obs)
                next_done = torch.as_tensor(terminated | truncated, device=device)
                log.episodes(global_step, infos)  # The log keeps the returns of ended episodes.

            # GAE needs V(s_{t+1}) at every step. It is the next row of values, and V(next_obs)
            # after the last row.
            # After a step that ends an episode, the next row holds that episode's final
            # observation, since the env resets only on the step after (the reset step).
            with torch.no_grad():
                next_values = torch.cat([values[1:], agent.get_value(next_obs).view(1, -1)])
            # A truncated step bootstraps with V(final observation), a terminated one does not.
            # episode_end is 1.0 where either flag is 1.0 (their torch.maximum), and A_t does
            # not flow back across that end from the next episode.
            episode_end = torch.maximum(terminations, truncations)
            advantages, returns = compute_gae(
                rewards, values, next_values, terminations, episode_end, args.gamma, args.gae_lambda
            )

            # Keep the policy's own steps, not gymnasium's reset steps.
            b_obs, b_actions, b_returns = obs[valid], actions[valid], returns[valid]
            b_logprobs, b_values, b_advantages = logprobs[valid], values[valid], advantages[valid]
            # With --num-steps 1, every env may be at a reset step, and then nothing is learned.
            if len(b_obs) == 0:
                continue
            clipfracs = []
            for _ in range(args.update_epochs):
                # kls collects approx_kl at each minibatch step of this epoch.
                kls = []
                # Once the reset steps are dropped, the batch can be smaller than num_envs x
                # num_steps, so tensor_split(n) cuts it into n minibatches whose sizes differ by
                # one at most. mb holds the indices of one minibatch.
                shuffled = torch.randperm(len(b_obs), device=device)
                for mb in shuffled.tensor_split(min(args.num_minibatches, len(b_obs))):
                    loss, policy_loss, v_loss, entropy, newlogprobs, grad_norm = gradients(
                        b_obs[mb],
                        b_actions[mb],
                        b_logprobs[mb],
                        b_advantages[mb],
                        b_returns[mb],
                        b_values[mb],
                        ent_coef,
                    )
                    # A NaN or inf loss stops the run here, before the step reaches the weights.
                    check_finite(loss, iteration)
                    optimizer.step()
                    # approx_kl estimates KL(pi_old, pi) from the minibatch, before its step, as
                    # mean((rho - 1) - log rho), which is never negative (Schulman's "k3",
                    # joschu.net/blog/kl-approx.html). clipfrac is the fraction of samples whose
                    # ratio rho left [1 - eps, 1 + eps].
                    with torch.no_grad():
                        logratio = newlogprobs - b_logprobs[mb]
                        ratio = logratio.exp()
                        approx_kl = ((ratio - 1) - logratio).mean()
                        clipfracs.append(((ratio - 1).abs() > args.clip_coef).float().mean())
                        kls.append(approx_kl)
                # With --target-kl, the epochs stop once the last minibatch's approx_kl exceeds
                # it, since the policy has then moved far enough from pi_old.
                if args.target_kl is not None and approx_kl > args.target_kl:
                    break
            # With --lr-target-kl, instead of the decay, the next update's step size follows how
            # far this one moved the policy, measured as the mean approx_kl over the minibatches
            # of its last epoch.
            if args.lr_target_kl is not None:
                kl = torch.stack(kls).mean().item()
                group = optimizer.param_groups[0]
                group["lr"] = adapted_lr(group["lr"], kl, args.lr_target_kl, args.learning_rate)

            # Watch the losses and explained_variance = 1 - Var(R - V) / Var(R), which is 1 when
            # V(s) predicts the value targets R = A + V (of the scaled rewards) exactly. Var
            # divides by n (correction=0), as numpy's var does. When all the targets of the
            # batch are equal, as in a batch of one sample, Var(R) is 0, the ratio is not
            # finite, and the log leaves it out. grad_norm is the gradient's norm |g| in the last
            # minibatch, before clipping.
            unexplained = (b_returns - b_values).var(correction=0)  # Var(R - V)
            log.update(
                iteration,
                global_step,
                policy_loss=policy_loss,
                value_loss=v_loss,
                entropy=entropy.mean(),
                grad_norm=grad_norm,
                approx_kl=approx_kl,
                clipfrac=torch.stack(clipfracs).mean(),
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
