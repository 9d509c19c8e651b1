# SPDX-License-Identifier: MIT
"""LineWorld-v0: the course's point-target line world, the first env of its policy-gradient part.

An agent stands on a line of 11 cells, 0 to 10, and a target sits on one of them. Each step it
moves -1, 0 or +1 (actions 0, 1, 2), clipped to the line; its reward is minus its distance to the
target, divided by 10. After 20 steps the episode ends, and it succeeded if the agent stands on
the target (`info["is_success"]`). The best policy walks straight to the target and stays there.

    python ppo.py --env-id envs.line_world:LineWorld-v0 --total-timesteps 20000

Importing this module registers the id; any discrete script takes it by gymnasium's
"module:EnvId" syntax, from the repository root.

- Target and start: integers in [0, 10), each drawn from the reset's seed (self.np_random).
  They may coincide, as in the course.
- Observation: float32 `[target, position] / 10 * 2 - 1`, in [-1, 1].
- Reward after each move: `-|position - target| / 10`.
- `dimensions=2` (`gym.make("LineWorld-v0", dimensions=2)`): the course's 2-D grid of 11 x 11
  cells with 5 moves (0 stay, 1 -x, 2 +x, 3 -y, 4 +y); observation `[target_x, target_y,
  position_x, position_y]`, scaled alike; reward minus the L1 (grid) distance over 10. L1
  rather than Euclidean: it is the number of moves still needed, so every move towards the
  target earns 0.1, as on the line, and on the line it is the course's `|position - target|`.

The end after 20 steps is a truncation (gymnasium's TimeLimit, from the registration's
`max_episode_steps=20`), not a termination, although the course marks it terminal. The
observation has no clock in it: the agent cannot tell step 19 from step 3, so from what it sees
nothing ends there. Marked terminal, the same observation would be worth little near the end
and much early on, and a critic could only learn an average of the two; marked truncated, the
scripts complete the cut return with gamma * V(final observation), and V(s) is one number per
observation, the value of standing there with time to spare, which a critic can learn.
reinforce.py has no critic and treats both alike. (Put the step count in the observation and
terminal would be right, as Pardo et al. 2018, "Time limits in reinforcement learning", show.)
"""

import gymnasium as gym
import numpy as np

GRID_SIZE = 10  # positions 0..10; target and start in [0, 10)
EPISODE_STEPS = 20
MOVES = {  # action -> change of position
    1: np.array([[-1], [0], [1]]),
    2: np.array([[0, 0], [-1, 0], [1, 0], [0, -1], [0, 1]]),
}


class LineWorld(gym.Env):
    """The course's point-target world: a line of 11 cells (or an 11 x 11 grid, dimensions=2)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(self, dimensions=1, render_mode=None):
        if dimensions not in MOVES:
            raise ValueError(f"dimensions must be 1 or 2, got {dimensions}")
        self.dimensions, self.render_mode = dimensions, render_mode
        self.action_space = gym.spaces.Discrete(len(MOVES[dimensions]))
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (2 * dimensions,), np.float32)
        self.target = self.position = np.zeros(dimensions, dtype=np.int64)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.target = self.np_random.integers(0, GRID_SIZE, self.dimensions)
        self.position = self.np_random.integers(0, GRID_SIZE, self.dimensions)
        return self.observation(), self.info()

    def step(self, action):
        move = MOVES[self.dimensions][int(action)]
        self.position = np.clip(self.position + move, 0, GRID_SIZE)
        reward = -self.distance() / GRID_SIZE
        return self.observation(), reward, False, False, self.info()  # TimeLimit ends it

    def distance(self):
        """Moves still needed to reach the target: |position - target| summed over the axes."""
        return int(np.abs(self.position - self.target).sum())

    def observation(self):
        both = np.concatenate([self.target, self.position])
        return (both / GRID_SIZE * 2 - 1).astype(np.float32)

    def info(self):
        """The distance, and whether the agent stands on the target: at the episode's last
        step, whether the episode succeeded."""
        return {"distance": self.distance(), "is_success": self.distance() == 0}

    def render(self):
        """rgb_array: one row of 11 cells (11 x 11 on the grid), the target green, the agent
        blue, both together teal; 24 pixels a cell."""
        if self.render_mode != "rgb_array":
            return None
        rows = GRID_SIZE + 1 if self.dimensions == 2 else 1
        cells = np.full((rows, GRID_SIZE + 1, 3), 235, dtype=np.uint8)

        def cell(point):  # (row, column), y upwards
            return (GRID_SIZE - point[1], point[0]) if self.dimensions == 2 else (0, point[0])

        cells[cell(self.target)] = (40, 170, 80)
        cells[cell(self.position)] = (30, 140, 160) if self.distance() == 0 else (40, 90, 200)
        image = cells.repeat(24, 0).repeat(24, 1)
        image[::24], image[:, ::24] = 150, 150  # grid lines
        return image


if "LineWorld-v0" not in gym.registry:  # importing twice must not register twice
    gym.register("LineWorld-v0", entry_point=LineWorld, max_episode_steps=EPISODE_STEPS)
