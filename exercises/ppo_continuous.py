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
        raise NotImplementedError(
            "merge the batch's mean and variance into the running ones, weighted by counts"
        )

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
        raise NotImplementedError(
            "Normal(mean, exp(logstd)).sample(); sum log-prob and entropy over the last dim"
        )


def adapted_lr(lr, kl, target_kl, max_lr):
    """Return the step size that keeps each update's KL(pi_old, pi) near target_kl. It is
    lr / 1.5 if kl > 2 target_kl, lr * 1.5 if kl < target_kl / 2, and lr otherwise, kept in
    [1e-5, max_lr]. All four arguments are Python floats, and so is the step size returned."""
    raise NotImplementedError(
        "/ 1.5 above 2 target_kl, * 1.5 below target_kl / 2, kept in [1e-5, max_lr]"
    )


# ppo_continuous.py's own train(), with these functions in place of its own:
if __name__ == "__main__":
    try:
        from check import train_with  # exercises/check.py, beside this file
    except ModuleNotFoundError as error:  # a copy of this file kept in another folder
        if error.name != "check":
            raise
        message = "ppo_continuous.py: error: it trains only beside exercises/check.py"
        raise SystemExit(message) from None

    train_with("ppo_continuous", globals())
