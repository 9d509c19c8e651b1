# SPDX-License-Identifier: MIT
"""reinforce.py as exercises: write the body of each function that raises NotImplementedError.
Generated from reinforce.py by exercises/make.py; the equations are in the docstrings.

    python exercises/check.py reinforce    # check what you wrote, a line per function
    python exercises/reinforce.py          # then train reinforce.py with it
"""

import torch


def discounted_returns(rewards, dones, gamma, last_value=None):
    """Reward-to-go G_t = r_t + gamma * (1 - done_t) * G_{t+1}, with G_T = last_value.

    Time runs along dim 0. rewards is float32 (T, N), dones is bool (T, N), gamma is a float,
    and last_value is None (zeros) or float32 (N,). dones[t] is true when step t ended its
    episode, so no reward flows back across the end of an episode. This script never passes
    last_value, since its episodes end within the rollout; vpg.py passes V of the last state.
    """
    raise NotImplementedError("loop t from the last step back; reset at each episode's end")


def reinforce_loss(logprobs, returns):
    """L = -mean_t log pi(a_t|s_t) * G_t. The mean over the batch's B steps makes its gradient
    minus the policy gradient's sum over the batch, scaled by 1/B.

    logprobs (which carries its graph) and returns are float32 (B,), one per step of the batch.
    """
    raise NotImplementedError("minus the mean of log pi(a_t|s_t) * G_t")


# reinforce.py's own train(), with these functions in place of its own:
if __name__ == "__main__":
    try:
        from check import train_with  # exercises/check.py, beside this file
    except ModuleNotFoundError as error:  # a copy of this file kept in another folder
        if error.name != "check":
            raise
        message = "reinforce.py: error: it trains only beside exercises/check.py"
        raise SystemExit(message) from None

    train_with("reinforce", globals())
