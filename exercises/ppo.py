# SPDX-License-Identifier: MIT
"""ppo.py as exercises: write the body of each function that raises NotImplementedError.
Generated from ppo.py by exercises/make.py; the equations are in the docstrings.

    python exercises/check.py ppo    # check what you wrote, a line per function
    python exercises/ppo.py          # then train ppo.py with it
"""

import torch


def ppo_loss(new_logprobs, old_logprobs, advantages, clip_coef):
    """L_clip = -mean_t min(rho_t A_t, clip(rho_t, 1 - eps, 1 + eps) A_t), rho_t = pi / pi_old.

    new_logprobs (which carries its graph), old_logprobs and advantages are float32 (B,), and
    clip_coef (eps) is a float.
    """
    raise NotImplementedError("ratio = exp(new - old); minus the mean of the min of the two terms")


def value_loss(values, returns):
    """L_V = mean_t (G_t - V(s_t))^2, the mean squared error, with no 1/2 in front.

    values (which carries its graph) and returns are float32 (B,). Each value step minimizes
    L_V alone, and Adam's step does not change when a loss is multiplied by a constant (apart
    from Adam's own small eps constant, not the clip's eps), so a factor of 1/2 would make no
    difference.
    """
    raise NotImplementedError("the mean squared error between returns and values")


# ppo.py's own train(), with these functions in place of its own:
if __name__ == "__main__":
    try:
        from check import train_with  # exercises/check.py, beside this file
    except ModuleNotFoundError as error:  # a copy of this file kept in another folder
        if error.name != "check":
            raise
        message = "ppo.py: error: it trains only beside exercises/check.py"
        raise SystemExit(message) from None

    train_with("ppo", globals())
