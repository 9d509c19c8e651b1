# SPDX-License-Identifier: MIT
"""Environments the project defines, each registered when its module is imported, so that any
script takes it by gymnasium's "module:EnvId" syntax, from the repository root:

    python ppo.py --env-id envs.line_world:LineWorld-v0        # the course's line world
    python ppo_gae.py --env-id envs.cartpole_torch:CartPoleTorch-v1 --cuda
"""
