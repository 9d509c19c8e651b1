# SPDX-License-Identifier: MIT
"""vpg.py as exercises: write the body of each function that raises NotImplementedError.
Generated from vpg.py by exercises/make.py; the equations are in the docstrings.

    python exercises/check.py vpg    # check what you wrote, a line per function
    python exercises/vpg.py          # then train vpg.py with it
"""


def vpg_loss(logprobs, values, returns):
    """Return the policy loss -mean_t log pi(a_t|s_t) * A_t, with A_t = G_t - V(s_t), and the
    value loss mean_t (G_t - V(s_t))^2.

    logprobs and values (which both carry their graph) and returns are float32 (B,). The
    advantage is detached, so the policy loss does not move the critic. The value loss has no
    1/2 in front. Each value step minimizes it alone, and Adam's step does not change when a
    loss is multiplied by a constant (apart from Adam's own small eps constant), so a factor
    of 1/2 would make no difference.
    """
    raise NotImplementedError("A = G - V, detached in the policy term; the value loss is the MSE")


# vpg.py's own train(), with these functions in place of its own:
if __name__ == "__main__":
    try:
        from check import train_with  # exercises/check.py, beside this file
    except ModuleNotFoundError as error:  # a copy of this file kept in another folder
        if error.name != "check":
            raise
        message = "vpg.py: error: it trains only beside exercises/check.py"
        raise SystemExit(message) from None

    train_with("vpg", globals())
