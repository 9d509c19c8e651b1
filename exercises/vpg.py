# SPDX-License-Identifier: MIT
"""vpg.py as exercises: write the body of each function that raises NotImplementedError.
Generated from vpg.py by exercises/make.py; the equations are in the docstrings.

    python exercises/check.py vpg    # check what you wrote, a line per function
    python exercises/vpg.py          # then train vpg.py with it
"""


def vpg_loss(logprobs, values, returns):
    """Policy loss -mean_t log pi(a_t|s_t) * A_t with A_t = G_t - V(s_t), and value loss.

    The advantage is detached: the policy loss must not move the critic.
    logprobs and values (both carrying their graph) and returns: float32 (B,).
    """
    raise NotImplementedError("A = G - V, detached in the policy term; the value loss is the MSE")


# vpg.py's own train(), with these functions in place of its own:
if __name__ == "__main__":
    from check import train_with  # exercises/check.py

    train_with("vpg", globals())
