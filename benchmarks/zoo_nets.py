# SPDX-License-Identifier: MIT
"""ppo_continuous.py with rl-zoo3's MuJoCo networks: actor and critic each 256x256 ReLU.

rl-zoo3's PPO entries for Hopper, Walker2d and HalfCheetah use `net_arch=dict(pi=[256, 256],
vf=[256, 256])` with `activation_fn=nn.ReLU`; recipe R has a 64x64 tanh actor and a 256x256 tanh
critic (--critic-hidden 256). This runs ppo_continuous.py unchanged but for those layers, so that
docs/lessons.md's lesson 7 can take the networks alone, as it takes rl-zoo3's other settings. The
rest stays ppo_continuous.py's: its initialisation (orthogonal, the mean's last layer at 0.01;
rl-zoo3 sets ortho_init=False), its flags (--critic-hidden is ignored: both are 256 wide).

    python benchmarks/zoo_nets.py --env-id Hopper-v5 --total-timesteps 1000000 [R's flags]
"""

import sys
from pathlib import Path

from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import ppo_continuous  # noqa: E402

WIDTH = 256


def mlp(n_in, n_out, last_std):
    """n_in -> 256 -> 256 -> n_out, ReLU between, initialised as ppo_continuous.py does."""
    init = ppo_continuous.layer_init
    return nn.Sequential(
        init(nn.Linear(n_in, WIDTH)),
        nn.ReLU(),
        init(nn.Linear(WIDTH, WIDTH)),
        nn.ReLU(),
        init(nn.Linear(WIDTH, n_out), std=last_std),
    )


class ZooAgent(ppo_continuous.Agent):
    """ppo_continuous.py's Agent with both networks 256x256 ReLU (critic_hidden: ignored)."""

    def __init__(self, obs_dim, action_dim, log_std_init=0.0, critic_hidden=None):
        super().__init__(obs_dim, action_dim, log_std_init=log_std_init)
        self.actor_mean = mlp(obs_dim, action_dim, 0.01)
        self.critic = mlp(obs_dim, 1, 1.0)


if __name__ == "__main__":
    ppo_continuous.Agent = ZooAgent  # train() builds its agent from the module's name
    ppo_continuous.SCRIPT = Path(__file__).name  # its --help, lines and run folders say so
    ppo_continuous.train(ppo_continuous.parse_args())
