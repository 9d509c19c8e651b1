# SPDX-License-Identifier: MIT
"""ppo_continuous.py as exercises: write the body of each function that raises NotImplementedError.
Generated from ppo_continuous.py by exercises/make.py; the equations are in the docstrings.

    python exercises/check.py ppo_continuous    # check what you wrote, a line per function
    python exercises/ppo_continuous.py          # then train ppo_continuous.py with it
"""

import torch
import torch.nn as nn
from torch.distributions import Normal


def layer_init(layer, std=2**0.5, bias=0.0):
    """Orthogonal weights of gain `std`, constant bias: the usual PPO initialization."""
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


class RunningNorm(nn.Module):
    """x -> clip((x - mean) / sqrt(var + 1e-8), -10, 10), with the running mean and variance
    of every x passed to update(). They are buffers: saved with the weights, not trained."""

    def __init__(self, shape):
        super().__init__()
        self.register_buffer("mean", torch.zeros(shape))
        self.register_buffer("var", torch.ones(shape))
        self.register_buffer("count", torch.tensor(1e-4))

    def update(self, x):
        """Merge x, float32 (B, *shape), into the statistics (Chan et al.'s parallel update)."""
        raise NotImplementedError(
            "merge the batch's mean and variance into the running ones, weighted by counts"
        )

    def forward(self, x):
        return ((x - self.mean) / torch.sqrt(self.var + 1e-8)).clamp(-10.0, 10.0)


class Agent(nn.Module):
    """Actor: normalized observation -> mean of a Gaussian, with a learned log-std vector.
    Critic: normalized observation -> V(s). No shared weights; the critic is `hidden` wide
    too unless `critic_hidden` says otherwise."""

    def __init__(self, obs_dim, action_dim, hidden=64, log_std_init=0.0, critic_hidden=None):
        super().__init__()
        critic_hidden = critic_hidden or hidden
        self.obs_norm = RunningNorm(obs_dim)
        self.actor_mean = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden, action_dim), std=0.01),  # start near mean 0
        )
        # log sigma: learned, one per action dimension, the same in every state
        self.actor_logstd = nn.Parameter(torch.full((action_dim,), log_std_init))
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, critic_hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(critic_hidden, critic_hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(critic_hidden, 1), std=1.0),
        )

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        """Sample a ~ pi(.|x), or score the given action: (action, log pi(a|x), entropy, V(x)).
        Log-prob and entropy (B,) of the independent action dimensions add up; V(x) is (B, 1).
        x: float32 (B, obs_dim), normalized already; action: None or float32 (B, action_dim)."""
        raise NotImplementedError(
            "a Normal(mean, exp(logstd)); sum log-prob and entropy over the last dim"
        )


def adapted_lr(lr, kl, target_kl, max_lr):
    """The step size that keeps each update's KL(pi_old, pi) near target_kl: lr / 1.5 if
    kl > 2 target_kl, lr * 1.5 if kl < target_kl / 2, else lr; kept in [1e-5, max_lr].
    All four are Python floats, and so is the step size returned."""
    raise NotImplementedError(
        "/ 1.5 above 2 target_kl, * 1.5 below target_kl / 2, kept in [1e-5, max_lr]"
    )


# ppo_continuous.py's own train(), with these functions in place of its own:
if __name__ == "__main__":
    from check import train_with  # exercises/check.py

    train_with("ppo_continuous", globals())
