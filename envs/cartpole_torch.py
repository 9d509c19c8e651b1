# SPDX-License-Identifier: MIT
"""CartPoleTorch-v1: gymnasium's CartPole-v1 in torch tensors, stepped on the training device.

Not part of any lesson: an environment for throughput work. Any discrete script takes it by
gymnasium's "module:EnvId" syntax, from the repository root:

    python ppo_gae.py --env-id envs.cartpole_torch:CartPoleTorch-v1 --cuda

Importing this module registers the id. The scripts see the `device` keyword in its spec and
build it with the training device; its vector env takes and returns tensors, records each
episode's return itself, and resets like gymnasium's (next step). A single env of the id
(gym.make, for the final evaluation and video) is gymnasium's own CartPole, in numpy.
"""

import gymnasium as gym
import numpy as np
import torch
from gymnasium.envs.classic_control.cartpole import CartPoleEnv


class CartPoleTorch(gym.vector.VectorEnv):
    """`--env-id CartPoleTorch-v1`: gymnasium's CartPole-v1 (CartPoleVectorEnv) in torch on the
    training device, with no numpy: the same Euler step, limits, reward 1 per step, 500-step
    truncation and next-step autoreset; info has each episode's return and length."""

    metadata = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs=1, max_episode_steps=500, device="cpu"):
        self.num_envs, self.max_episode_steps = num_envs, max_episode_steps
        self.device, self.generator = torch.device(device), torch.Generator(device)
        high = np.array([4.8, np.inf, 24 * 2 * np.pi / 360, np.inf], dtype=np.float32)
        self.single_observation_space = gym.spaces.Box(-high, high, dtype=np.float32)
        self.single_action_space = gym.spaces.Discrete(2)
        batch = gym.vector.utils.batch_space
        self.observation_space = batch(self.single_observation_space, num_envs)
        self.action_space = batch(self.single_action_space, num_envs)

    def uniform_states(self):  # x, x_dot, theta, theta_dot ~ U(-0.05, 0.05)
        shape = (self.num_envs, 4)
        return torch.rand(shape, generator=self.generator, device=self.device) * 0.1 - 0.05

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self.generator.manual_seed(seed)
        self.state = self.uniform_states()
        self.steps = torch.zeros(self.num_envs, dtype=torch.int32, device=self.device)
        self.lengths, self.prev_done = self.steps, self.steps.bool()  # all 0, False
        return self.state, {}

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state.unbind(1)
        force = torch.where(torch.as_tensor(action, device=self.device) == 1, 10.0, -10.0)
        cos, sin = theta.cos(), theta.sin()
        # masses: cart 1, pole 0.1; half the pole's length 0.5; gravity 9.8; tau 0.02 s
        temp = (force + 0.05 * theta_dot**2 * sin) / 1.1
        theta_acc = (9.8 * sin - cos * temp) / (0.5 * (4.0 / 3.0 - 0.1 * cos**2 / 1.1))
        x_acc = temp - 0.05 * theta_acc * cos / 1.1
        x, x_dot = x + 0.02 * x_dot, x_dot + 0.02 * x_acc
        theta, theta_dot = theta + 0.02 * theta_dot, theta_dot + 0.02 * theta_acc
        self.state = torch.stack([x, x_dot, theta, theta_dot], 1)
        terminated = (x.abs() > 2.4) | (theta.abs() > 12 * 2 * np.pi / 360)
        self.steps = self.steps + 1
        truncated = self.steps >= self.max_episode_steps
        # Next-step autoreset: an env whose episode ended on the last step starts a new one now.
        reset = self.prev_done
        self.state = torch.where(reset[:, None], self.uniform_states(), self.state)
        self.steps = torch.where(reset, 0, self.steps)
        reward = (~reset).float()
        terminated, truncated = terminated & ~reset, truncated & ~reset
        self.prev_done = done = terminated | truncated
        self.lengths = torch.where(reset, 0, self.lengths + 1)  # = the return: reward 1 per step
        info = {"episode": {"r": (self.lengths * done).float(), "l": self.lengths * done}}
        info["_episode"] = done
        return self.state, reward, terminated, truncated, info


def single_env(device="cpu", **kwargs):
    """gym.make of the id: gymnasium's CartPole (the same dynamics); `device` is the vector's."""
    return CartPoleEnv(**kwargs)


if "CartPoleTorch-v1" not in gym.registry:
    gym.register(
        "CartPoleTorch-v1",
        entry_point=single_env,
        vector_entry_point=CartPoleTorch,
        max_episode_steps=500,
        reward_threshold=475.0,
        kwargs={"device": "cpu"},  # make_env passes the training device
    )
