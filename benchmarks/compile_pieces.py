# SPDX-License-Identifier: MIT
"""What torch.compile buys each piece of ppo_continuous.py's step, with recipe R's shapes.

The pieces, each timed eager and compiled in this process, one torch thread:
- the update's minibatch step as the script has it (a minibatch of 64: gradients(), the
  forward pass, losses, backward and clipping, then the fused Adam step), with R's networks
  (17 observations, 6 actions, a 64x64 actor, a 256x256 critic);
- the same with a 64x64 critic (ppo_continuous.py's default and the issue's probe);
- the rollout's act step for 8 envs (the policy's sample, log-prob and V);
- GAE over a 256 x 8 rollout (compute_gae's loop).
Each time is the best of 20 rounds of 40 calls, the rounds of eager and compiled interleaved,
so that a busy moment of the machine counts against neither; compiling is timed apart. The
first compiled call of a shape compiles it; dynamic=True, as the script asks.

    python benchmarks/compile_pieces.py --out benchmarks/results/sps_mujoco   # ~2 minutes

It also writes profile.txt: torch.profiler's table of 50 compiled update steps (R's networks),
what the time of a compiled step goes to.
"""

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import ppo_continuous as pc  # noqa: E402


def update_step(critic_hidden, batch=64):
    """The script's gradients() and Adam step, rebuilt around an agent of R's shapes."""
    torch.manual_seed(0)
    agent = pc.Agent(17, 6, log_std_init=-0.5, critic_hidden=critic_hidden)
    optimizer = torch.optim.Adam(agent.parameters(), lr=3e-4, eps=1e-5, fused=True)
    data = [torch.randn(batch, 17), torch.randn(batch, 6)] + [torch.randn(batch) for _ in range(4)]

    def gradients(mb_obs, mb_actions, mb_logprobs, mb_advantages, mb_returns, mb_values, c_h):
        _, newlogprobs, entropy, newvalues = agent.get_action_and_value(mb_obs, mb_actions)
        std = mb_advantages.std(correction=0)
        mb_advantages = (mb_advantages - mb_advantages.mean()) / (std + 1e-8)
        policy_loss = pc.ppo_loss(newlogprobs, mb_logprobs, mb_advantages, 0.2)
        v_loss = pc.value_loss(newvalues.flatten(), mb_returns)
        loss = policy_loss - c_h * entropy.mean() + 0.5 * v_loss
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
        return loss, policy_loss, v_loss, entropy, newlogprobs.detach()

    def step(function):
        return lambda: (function(*data, 0.0), optimizer.step())

    return gradients, step


def act_step():
    torch.manual_seed(0)
    agent, obs = pc.Agent(17, 6, log_std_init=-0.5, critic_hidden=256), torch.randn(8, 17)

    def act(x):
        with torch.no_grad():
            return agent.get_action_and_value(x)

    return act, lambda function: lambda: function(obs)


def gae():
    rewards, values, next_values = (torch.randn(256, 8) for _ in range(3))
    ends = (torch.rand(256, 8) < 0.01).float()

    def advantages(r, v, nv, term, end):
        return pc.compute_gae(r, v, nv, term, end, 0.99, 0.95)

    return advantages, lambda function: lambda: function(rewards, values, next_values, ends, ends)


def measure(make, rounds=20, calls=40):
    eager_fn, wrap = make()
    compiled_fn = torch.compile(eager_fn, dynamic=True)
    eager, compiled = wrap(eager_fn), wrap(compiled_fn)
    start = time.perf_counter()
    compiled()
    compiling = time.perf_counter() - start
    best = {"eager": float("inf"), "compiled": float("inf")}
    for _ in range(rounds):
        for name, call in (("eager", eager), ("compiled", compiled)):
            start = time.perf_counter()
            for _ in range(calls):
                call()
            best[name] = min(best[name], (time.perf_counter() - start) / calls)
    return dict(
        eager_us=best["eager"] * 1e6, compiled_us=best["compiled"] * 1e6, compile_s=compiling
    )


PIECES = {  # --pieces: the short names
    "update": ("update step, R's networks (256x256 critic)", lambda: update_step(256)),
    "update64": ("update step, 64x64 critic", lambda: update_step(64)),
    "act": ("act step, 8 envs", act_step),
    "gae": ("GAE, 256 x 8", gae),
}


def profile(path, steps=50):
    """torch.profiler over `steps` compiled update steps of R's networks, its table to path."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as profiler

    gradients, step = update_step(256)
    call = step(torch.compile(gradients, dynamic=True))
    for _ in range(steps):  # compiled, and warm
        call()
    with profiler(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            call()
    averages = prof.key_averages().table(sort_by="cpu_time_total", row_limit=30)
    path.write_text(
        f"{steps} compiled update steps (gradients() and Adam), R's networks\n{averages}"
    )


def table(raw):
    rounds, calls = raw.get("rounds", 20), raw.get("calls", 40)
    lines = [
        f"One piece of ppo_continuous.py's step at a time, eager and with torch.compile "
        f"(dynamic shapes), on {raw['device']}, one torch thread, torch {raw['torch']}: the best "
        f"of {rounds} interleaved rounds of {calls} calls. Compiling: the first compiled call.",
        "",
        "| piece | eager | compiled | speed-up | compiling |",
        "|---|---|---|---|---|",
    ]
    for name, r in raw["pieces"].items():
        speedup = r["eager_us"] / r["compiled_us"]
        cells = [name, f"{r['eager_us']:,.0f} us", f"{r['compiled_us']:,.0f} us"]
        lines.append(
            "| " + " | ".join(cells + [f"{speedup:.2f}x", f"{r['compile_s']:.1f} s"]) + " |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="folder for pieces.json and pieces.md")
    p.add_argument("--pieces", nargs="+", choices=PIECES, default=list(PIECES), help="to time")
    p.add_argument("--rounds", type=int, default=20, help="interleaved rounds of each piece")
    p.add_argument("--calls", type=int, default=40, help="calls a round")
    p.add_argument("--profile-steps", type=int, default=50, help="steps profiled; 0: none")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    raw = dict(device=f"{platform.machine()} CPU", torch=torch.__version__, pieces={})
    raw |= dict(rounds=args.rounds, calls=args.calls)
    for key in args.pieces:
        name, make = PIECES[key]
        raw["pieces"][name] = measure(make, args.rounds, args.calls)
        print(table(raw).splitlines()[-1], flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "pieces.json").write_text(json.dumps(raw, indent=1))
    (out / "pieces.md").write_text(table(raw))
    if args.profile_steps:
        profile(out / "profile.txt", args.profile_steps)
    print(table(raw))


if __name__ == "__main__":
    main()
