# SPDX-License-Identifier: MIT
"""Ant-v5 split in two, to find which of its changes from Ant-v4 costs ppo_continuous.py.

Ant-v5 adds 78 contact-force observations (mostly zero, with spikes) and a contact cost in
the reward; Ant-v4 has neither. Each env below drops one of the two and keeps all else:

    AntNoContactObs-v5    Ant-v5 without the contact-force observations (27 numbers)
    AntNoContactCost-v5   Ant-v5 with contact_cost_weight 0

Gymnasium imports this module when an env id names it ("module:EnvId"):

    PYTHONPATH=benchmarks python ppo_continuous.py --env-id antdiag:AntNoContactObs-v5 ...
"""

import gymnasium as gym

ENTRY = "gymnasium.envs.mujoco.ant_v5:AntEnv"
gym.register(
    "AntNoContactObs-v5",
    entry_point=ENTRY,
    max_episode_steps=1000,
    kwargs={"include_cfrc_ext_in_observation": False},
)
gym.register(
    "AntNoContactCost-v5",
    entry_point=ENTRY,
    max_episode_steps=1000,
    kwargs={"contact_cost_weight": 0.0},
)
