# SPDX-License-Identifier: MIT
"""ppo_gae.py as exercises: write the body of each function that raises NotImplementedError.
Generated from ppo_gae.py by exercises/make.py; the equations are in the docstrings.

    python exercises/check.py ppo_gae    # check what you wrote, a line per function
    python exercises/ppo_gae.py          # then train ppo_gae.py with it
"""

import torch


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
    raise NotImplementedError("delta_t first, then A_t from the last step back")


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
    raise NotImplementedError(
        "the MSE; with old_values and clip_coef, the max of it and the clipped one"
    )


# ppo_gae.py's own train(), with these functions in place of its own:
if __name__ == "__main__":
    try:
        from check import train_with  # exercises/check.py, beside this file
    except ModuleNotFoundError as error:  # a copy of this file kept in another folder
        if error.name != "check":
            raise
        message = "ppo_gae.py: error: it trains only beside exercises/check.py"
        raise SystemExit(message) from None

    train_with("ppo_gae", globals())
