# SPDX-License-Identifier: MIT
"""Tests of the exercises (exercises/) and their grader (exercises/check.py).

Run: python -m pytest -q exercises/test_exercises.py

  1. generated from the scripts; the grader against the scripts, planted mistakes and right
     answers in other forms, train()'s contract in every case, its time limit and its folder
     table; an exercise file training its script; exercises.ipynb as committed, filled from the
     scripts, and released and autograded by nbgrader;
  2. the courses' own numbers: the CartPole homework's tests and the line-world MP's
     reward-to-go check in the grader; the answers in words of exercises.ipynb.
"""

import array
import ast
import collections
import contextlib
import csv
import inspect
import itertools
import json
import keyword
import linecache
import math
import os
import platform
import re
import shutil
import signal
import socket
import string
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

# exercises/ is on the path (conftest.py puts it there, after the repository)
import cases as exercise_cases  # exercises/cases.py: the hand-worked case table
import check as entry_point  # exercises/check.py: the command, and its re-exports
import make as exercise_maker  # exercises/make.py
import numpy as np
import pytest
import runner  # exercises/runner.py: the grader's child
import torch
from grading import (  # exercises/grading/: the grader, a file a part
    accounting,
    base,
    classroom,
    command_line,
    handins,
    notebook,
    sandbox,
    session,
    verdicts,
)

import ppo_gae
from conftest import HANG, ROOT, beside_python, cli, flags, notebook_problems, python

# The grader's files in the order exercises/grading/__init__.py lists them: each imports only
# those before it
GRADING = (base, verdicts, sandbox, accounting, handins, session, classroom, command_line, notebook)

# ----------------------------------------------------------------------------------------------
# 1. Exercises (exercises/): generated from the scripts, the grader, its planted mistakes
# ----------------------------------------------------------------------------------------------


def grade(rung, path, capsys, *argv):
    """exercises/check.py RUNG --file PATH [ARGV]: (exit status, its lines)."""
    try:
        code = command_line.main([rung, "--file", str(path), *argv])
    except SystemExit as stop:
        code = stop.code
    out = capsys.readouterr()
    lines = (out.out + out.err).strip().splitlines()
    return code, [line for line in lines if not line.startswith("check.py: note: not sandboxed")]


# A grading's child imports torch as it starts: 1.5 s of a core, most of what a one-file grading
# costs. Where a test is about verdicts (a planted mistake, a sampler, a right answer in another
# form) and not about the sandbox, its children are forks of one python that has imported the
# runner's modules (torch, numpy) once: ZYGOTE below, started once a test worker. Each fork runs
# runner.main() as `python -I runner.py MEMORY SECONDS 0` would, in a session of its own, its
# standard streams the grader's pipes; the grader talks to it, times it and kills it as it does
# any child without a sandbox (session.plain). The sandbox's own tests, and every test of a
# class, a notebook or the command line, start their children as the grader does.
ZYGOTE = """
import array, gc, json, os, socket, sys
sys.path.insert(0, sys.argv[1])
import runner  # torch and numpy, as the runner imports them
sys.path.remove(sys.argv[1])  # as `python -I runner.py` has it: not the runner's folder
sys.modules["__main__"] = sys.modules.pop("runner")
gc.freeze()  # what those made lives as long as each child
control = socket.socket(fileno=int(sys.argv[2]))
while True:
    fds = array.array("i")
    data, ancillary, _, _ = control.recvmsg(4096, socket.CMSG_SPACE(2 * fds.itemsize))
    if not data:
        break
    kind, argument = json.loads(data)
    if kind == "wait":
        _, status = os.waitpid(argument, 0)
        control.send(json.dumps(os.waitstatus_to_exitcode(status)).encode())
        continue
    for _, _, fd_data in ancillary:
        fds.frombytes(fd_data[: len(fd_data) - len(fd_data) % fds.itemsize])
    pid = os.fork()
    if pid == 0:
        os.setsid()
        os.chdir("/")
        os.dup2(fds[0], 0)
        os.dup2(fds[1], 1)
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
        os.closerange(3, 1 << 16)
        sys.argv = ["runner.py", *argument]
        try:
            runner.main()
            code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
        except BaseException:
            code = 1
        os._exit(code)
    for fd in fds:
        os.close(fd)
    control.send(json.dumps(pid).encode())
"""


class Forked:
    """A fork of the zygote, as session.py uses the Popen of a child: pid, stdin and stdout
    (the grader's ends of its pipes), kill() and wait() (its exit status, as Popen gives it)."""

    control = None  # a socket to this worker's zygote, which ends when the worker does

    def __init__(self, runs, stdin, stdout, stderr):
        if Forked.control is None:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            fd = str(theirs.fileno())
            folder = str(ROOT / "exercises")
            subprocess.Popen(
                [sys.executable, "-I", "-c", ZYGOTE, folder, fd],
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
            )
            theirs.close()
            Forked.control = ours
        to_child, ours_in = os.pipe()
        ours_out, from_child = os.pipe()
        rights = array.array("i", [to_child, from_child])
        message = json.dumps(["start", runs[3:]]).encode()
        Forked.control.sendmsg([message], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, rights)])
        os.close(to_child)
        os.close(from_child)
        self.pid = json.loads(Forked.control.recv(4096))
        self.stdin = open(ours_in, "wb")
        self.stdout = open(ours_out, "rb")
        self.returncode = None

    def kill(self):
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)

    def wait(self):
        if self.returncode is None:
            Forked.control.send(json.dumps(["wait", self.pid]).encode())
            self.returncode = json.loads(Forked.control.recv(4096))
        return self.returncode


@pytest.fixture
def forked(monkeypatch):
    """The grader's children forked from the zygote, outside a sandbox (the grader's note that
    says so is dropped by grade())."""
    monkeypatch.setattr(command_line, "sandbox", lambda: None)
    monkeypatch.setattr(session, "plain", Forked)


def test_a_forked_child_grades_as_a_child_the_grader_starts(tmp_path, capsys, monkeypatch):
    """The verdict tests' device: a file graded in a fork of the zygote gets, line for line,
    what it gets in the child the grader starts where it has no sandbox (which gives what the
    sandbox gives, but for the note that says so): a right file, a planted mistake, a function
    that ends its process, a loop past its time limit."""
    files = {
        "right": exercise_maker.exercise("reinforce", solved=True),
        "planted": with_function("reinforce", *PLANTED["reinforce"][0][::2]),
        "ends": wrong_file("reinforce", "discounted_returns", "    os._exit(3)\n"),
        "loops": wrong_file("reinforce", "discounted_returns", "    return sum(range(10**11))\n"),
    }
    for name, text in files.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "reinforce.py").write_text(text)

    def graded():
        paths = [tmp_path / n / "reinforce.py" for n in files]
        found = [grade("reinforce", path, capsys, "--time-limit", "1") for path in paths]
        return [
            (code, [re.sub(r"\d+(\.\d+)? s of CPU", "N s of CPU", x) for x in lines])
            for code, lines in found
        ]

    monkeypatch.setattr(command_line, "sandbox", lambda: None)
    plain = graded()
    monkeypatch.setattr(session, "plain", Forked)
    assert graded() == plain, plain
    assert [code for code, _ in plain] == [0, 1, 1, 1]
    assert "ended its process (exit status 3)" in plain[2][1][0], plain[2]
    assert "time limit" in plain[3][1][0], plain[3]


def test_the_exercises_are_generated_from_the_scripts():
    assert exercise_maker.main(["--check"]) == 0  # else: python exercises/make.py
    for rung, blanks in exercise_cases.EXERCISES.items():
        text = (ROOT / "exercises" / f"{rung}.py").read_text()
        assert text.count("raise NotImplementedError(") == len(blanks), rung
        for name in blanks:  # the script's own signature and docstring
            fn = runner.find(exercise_cases.script(rung), name)
            head = inspect.getsource(fn).split('"""')[:2]
            assert '"""'.join(head) in text, name


@pytest.mark.parametrize("rung", list(exercise_cases.EXERCISES))
def test_the_scripts_pass_every_check_and_blanks_are_not_written_yet(
    rung, tmp_path, capsys, forked
):
    names = list(exercise_cases.EXERCISES[rung])
    functions = f"function{'s' * (len(names) > 1)} passed"
    code, lines = grade(rung, ROOT / f"{rung}.py", capsys)
    assert code == 0 and lines[-1] == f"{len(names)} of {len(names)} {functions}", lines
    for name, line in zip(names, lines[:-1], strict=True):  # hand-worked cases, then random
        counts = re.fullmatch(
            rf"✓ {re.escape(name)}: (\d+) cases passed \((\d+) worked by hand, "
            rf"(?:(1) the (?:CartPole course's own test|line-world MP's own check), )?(\d+) on "
            rf"random "
            rf"inputs against {rung}\.py's own\)",
            line,
        )
        assert counts and int(counts[2]) >= 1 and int(counts[4]) >= 3, line
        assert int(counts[1]) == int(counts[2]) + int(counts[3] or 0) + int(counts[4])
        courses = ("discounted_returns", "reinforce_loss", "vpg_loss", "ppo_loss")
        assert bool(counts[3]) == (name in courses), line
    code, lines = grade(rung, ROOT / "exercises" / f"{rung}.py", capsys)
    assert code == 1 and lines == [f"· {name}: not written yet" for name in names] + [
        f"0 of {len(names)} {functions}"
    ]


def flat(value):
    """A case's value as one list of floats, tuples and nested lists unrolled."""
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in flat(v)]
    return [float(value)]


def test_the_graders_hand_cases_are_test_alls_tables_and_the_script_passes_them():
    # test_all.py's section 1 checks the scripts on GAE_CASES, VL_CASES and PPO_GRAD; the grader
    # builds its hand cases from the same rows: one case a row, the row's numbers expected, and
    # the script's own function gives them.
    gae = exercise_cases.compute_gae_cases()[:-1]  # the last: two envs side by side
    vl = exercise_cases.value_loss_cases(clipped=True)[1:]  # the first: the plain MSE
    ppo_cases = exercise_cases.ppo_loss_cases()
    rows = exercise_cases.GAE_CASES.values()
    assert [flat(c.expected[0]) for c in gae] == [row[-1] for row in rows]
    rows = [row for row in exercise_cases.VL_CASES.values() if row[1] is not None]
    assert [flat(c.expected) for c in vl] == [flat(row[2]) for row in rows]
    assert any(flat(c.expected)[-6:] == exercise_cases.PPO_GRAD for c in ppo_cases)
    functions = (ppo_gae.compute_gae, ppo_gae.value_loss, ppo_gae.ppo_loss)
    for cases, own in zip((gae, vl, ppo_cases), functions, strict=True):
        for case in cases:
            got = flat(exercise_cases.as_lists(case.call(own)))
            assert got == pytest.approx(flat(case.expected), rel=1e-5, abs=1e-6), case.label


# Wrong versions that students write, as source: each must fail its check, in a line that names
# the function and, where given, the mistake in words.
PLANTED = {
    "reinforce": [
        (
            "discounted_returns",
            "no reset at an episode's end",
            """
def discounted_returns(rewards, dones, gamma, last_value=None):
    returns = torch.zeros_like(rewards)
    g = torch.zeros_like(rewards[0]) if last_value is None else last_value
    for t in reversed(range(len(rewards))):
        g = rewards[t] + gamma * g
        returns[t] = g
    return returns
""",
        ),
        (
            "discounted_returns",
            "not reward-to-go",
            """
def discounted_returns(rewards, dones, gamma, last_value=None):
    total = sum(gamma**t * rewards[t] for t in range(len(rewards)))
    return torch.stack([total] * len(rewards))
""",
        ),
        (
            "discounted_returns",
            None,
            """
def discounted_returns(rewards, dones, gamma, last_value=None):
    return rewards.cumsum(0)
""",
        ),
        (
            "reinforce_loss",
            "the sign",
            """
def reinforce_loss(logprobs, returns):
    return (logprobs * returns).mean()
""",
        ),
        (
            "reinforce_loss",
            "a sum where the mean belongs",
            """
def reinforce_loss(logprobs, returns):
    return -(logprobs * returns).sum()
""",
        ),
        (
            "reinforce_loss",
            "raised",
            """
def reinforce_loss(logprobs, returns):
    return -(logprobs * returns[0, 0]).mean()
""",
        ),
    ],
    "vpg": [
        (
            "vpg_loss",
            "the advantage is not detached, so the policy loss moves the critic",
            """
def vpg_loss(logprobs, values, returns):
    advantages = returns - values
    return -(logprobs * advantages).mean(), (advantages**2).mean()
""",
        ),
        (
            "vpg_loss",
            "no baseline",
            """
def vpg_loss(logprobs, values, returns):
    return -(logprobs * returns).mean(), ((returns - values) ** 2).mean()
""",
        ),
        (
            "vpg_loss",
            "the advantage's sign",
            """
def vpg_loss(logprobs, values, returns):
    advantages = (values - returns).detach()
    return -(logprobs * advantages).mean(), ((returns - values) ** 2).mean()
""",
        ),
        (
            "vpg_loss",
            None,
            """
def vpg_loss(logprobs, values, returns):
    return float("nan"), float("nan")
""",
        ),
    ],
    "ppo": [
        (
            "ppo_loss",
            "max where the clip needs min",
            """
def ppo_loss(new_logprobs, old_logprobs, advantages, clip_coef):
    ratio = (new_logprobs - old_logprobs).exp()
    clipped = ratio.clamp(1 - clip_coef, 1 + clip_coef)
    return -torch.max(ratio * advantages, clipped * advantages).mean()
""",
        ),
        (
            "ppo_loss",
            "the ratio built from log-probabilities",
            """
def ppo_loss(new_logprobs, old_logprobs, advantages, clip_coef):
    ratio = new_logprobs - old_logprobs
    clipped = ratio.clamp(1 - clip_coef, 1 + clip_coef)
    return -torch.min(ratio * advantages, clipped * advantages).mean()
""",
        ),
        (
            "ppo_loss",
            "no clip",
            """
def ppo_loss(new_logprobs, old_logprobs, advantages, clip_coef):
    return -((new_logprobs - old_logprobs).exp() * advantages).mean()
""",
        ),
        (
            "value_loss",
            "not squared",
            """
def value_loss(values, returns):
    return (returns - values).abs().mean()
""",
        ),
        (
            "value_loss",
            "a sum where the mean belongs",
            """
def value_loss(values, returns):
    return ((returns - values) ** 2).sum()
""",
        ),
        (
            "value_loss",
            None,
            """
def value_loss(values, returns):
    return ((returns - values.detach()) ** 2).mean()
""",
        ),
    ],
    "ppo_gae": [
        (
            "compute_gae",
            "GAE crosses an episode's end",
            """
def compute_gae(rewards, values, next_values, terminated, episode_end, gamma, gae_lambda):
    advantages, a = torch.zeros_like(rewards), torch.zeros_like(rewards[0])
    for t in reversed(range(len(rewards))):
        delta = rewards[t] + gamma * (1 - terminated[t].float()) * next_values[t] - values[t]
        a = advantages[t] = delta + gamma * gae_lambda * a
    return advantages, advantages + values
""",
        ),
        (
            "compute_gae",
            "a truncation taken for a termination: no bootstrap",
            """
def compute_gae(rewards, values, next_values, terminated, episode_end, gamma, gae_lambda):
    advantages, a = torch.zeros_like(rewards), torch.zeros_like(rewards[0])
    for t in reversed(range(len(rewards))):
        not_ended = 1 - episode_end[t].float()
        delta = rewards[t] + gamma * not_ended * next_values[t] - values[t]
        a = advantages[t] = delta + gamma * gae_lambda * not_ended * a
    return advantages, advantages + values
""",
        ),
        (
            "compute_gae",
            "lambda left out",
            """
def compute_gae(rewards, values, next_values, terminated, episode_end, gamma, gae_lambda):
    advantages, a = torch.zeros_like(rewards), torch.zeros_like(rewards[0])
    for t in reversed(range(len(rewards))):
        delta = rewards[t] + gamma * (1 - terminated[t].float()) * next_values[t] - values[t]
        a = advantages[t] = delta + gamma * (1 - episode_end[t].float()) * a
    return advantages, advantages + values
""",
        ),
        (
            "compute_gae",
            "a termination bootstrapped",
            """
def compute_gae(rewards, values, next_values, terminated, episode_end, gamma, gae_lambda):
    advantages, a = torch.zeros_like(rewards), torch.zeros_like(rewards[0])
    for t in reversed(range(len(rewards))):
        delta = rewards[t] + gamma * next_values[t] - values[t]
        a = advantages[t] = delta + gamma * gae_lambda * (1 - episode_end[t].float()) * a
    return advantages, advantages + values
""",
        ),
        (
            "value_loss",
            "min where the clipped value loss needs max",
            """
def value_loss(values, returns, old_values=None, clip_coef=None):
    loss = (returns - values) ** 2
    if old_values is not None and clip_coef is not None:
        clipped = old_values + (values - old_values).clamp(-clip_coef, clip_coef)
        loss = torch.min(loss, (returns - clipped) ** 2)
    return loss.mean()
""",
        ),
        (
            "value_loss",
            "not around the old values",
            """
def value_loss(values, returns, old_values=None, clip_coef=None):
    loss = (returns - values) ** 2
    if old_values is not None and clip_coef is not None:
        loss = torch.max(loss, (returns - values.clamp(-clip_coef, clip_coef)) ** 2)
    return loss.mean()
""",
        ),
        (
            "value_loss",
            None,
            """
def value_loss(values, returns, old_values=None, clip_coef=None):
    return ((returns - values) ** 2).mean()
""",
        ),
    ],
    "ppo_continuous": [
        (
            "Agent.get_action_and_value",
            "not summed over the action dimensions",
            """
    def get_action_and_value(self, x, action=None):
        mean = self.actor_mean(x)
        dist = Normal(mean, self.actor_logstd.exp().expand_as(mean))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(x)
""",
        ),
        (
            "Agent.get_action_and_value",
            None,
            """
    def get_action_and_value(self, x, action=None):
        mean = self.actor_mean(x)
        dist = Normal(mean, self.actor_logstd.expand_as(mean).abs() + 1e-6)
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.critic(x)
""",
        ),
        (
            "Agent.get_action_and_value",
            None,
            """
    def get_action_and_value(self, x, action=None):
        mean = self.actor_mean(x)
        dist = Normal(mean, self.actor_logstd.exp().expand_as(mean))
        action = dist.sample()
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.critic(x)
""",
        ),
        (
            "RunningNorm.update",
            "earlier batches forgotten",
            """
    def update(self, x):
        self.mean, self.var = x.mean(0), x.var(0, correction=0)
        self.count = self.count + x.shape[0]
""",
        ),
        (
            "RunningNorm.update",
            "the spread between the batch means left out",
            """
    def update(self, x):
        total = self.count + x.shape[0]
        self.mean = (self.mean * self.count + x.mean(0) * x.shape[0]) / total
        self.var = (self.var * self.count + x.var(0, correction=0) * x.shape[0]) / total
        self.count = total
""",
        ),
        (
            "RunningNorm.update",
            None,
            """
    def update(self, x):
        self.mean += x.mean(0)
""",
        ),
        (
            "adapted_lr",
            "raised where the policy moved too far",
            """
def adapted_lr(lr, kl, target_kl, max_lr):
    if kl > 2 * target_kl:
        return min(lr * 1.5, max_lr)
    if kl < target_kl / 2:
        return max(lr / 1.5, 1e-5)
    return lr
""",
        ),
        (
            "adapted_lr",
            "not kept in [1e-5, max_lr]",
            """
def adapted_lr(lr, kl, target_kl, max_lr):
    if kl > 2 * target_kl:
        return lr / 1.5
    if kl < target_kl / 2:
        return lr * 1.5
    return lr
""",
        ),
        (
            "adapted_lr",
            None,
            """
def adapted_lr(lr, kl, target_kl, max_lr):
    return "0.0003"
""",
        ),
    ],
}

# The mistakes that fixed cases could not see, in train()'s contract: flags of its dtype, a
# gradient cut from the actor or the critic, an input normalized again, a factor near a bound.
# words "": the line must name none of the known mistakes (none explains every case).
PLANTED_MORE = {
    "reinforce": [
        (
            "discounted_returns",
            "Subtraction, the `-` operator, with a bool tensor",  # 1 - done on bool dones
            """
def discounted_returns(rewards, dones, gamma, last_value=None):
    returns, g = torch.zeros_like(rewards), torch.zeros_like(rewards[0])
    if last_value is not None:
        g = last_value
    for t in reversed(range(len(rewards))):
        g = rewards[t] + gamma * (1 - dones[t]) * g
        returns[t] = g
    return returns
""",
        ),
        (
            "discounted_returns",
            "last_value ignored",
            """
def discounted_returns(rewards, dones, gamma, last_value=None):
    returns, g = torch.zeros_like(rewards), torch.zeros_like(rewards[0])
    for t in reversed(range(len(rewards))):
        g = rewards[t] + gamma * (~dones[t]) * g
        returns[t] = g
    return returns
""",
        ),
        (
            "discounted_returns",
            "reset one step early",
            """
def discounted_returns(rewards, dones, gamma, last_value=None):
    returns = torch.zeros_like(rewards)
    g = torch.zeros_like(rewards[0]) if last_value is None else last_value
    for t in reversed(range(len(rewards))):
        g = (rewards[t] + gamma * g) * (~dones[t])
        returns[t] = g
    return returns
""",
        ),
        (
            "discounted_returns",
            "gamma multiplies r_t too",
            """
def discounted_returns(rewards, dones, gamma, last_value=None):
    returns = torch.zeros_like(rewards)
    g = torch.zeros_like(rewards[0]) if last_value is None else last_value
    for t in reversed(range(len(rewards))):
        g = gamma * (rewards[t] + (~dones[t]) * g)
        returns[t] = g
    return returns
""",
        ),
        (
            "reinforce_loss",
            "",  # twice the mean is no sum: B is 5, 16 and 33 in the random cases
            """
def reinforce_loss(logprobs, returns):
    return -2 * (logprobs * returns).mean()
""",
        ),
        (
            "reinforce_loss",
            "the log-probabilities detached: no gradient reaches the policy",
            """
def reinforce_loss(logprobs, returns):
    return -(logprobs.detach() * returns).mean()
""",
        ),
        (
            "reinforce_loss",
            "probabilities where log-probabilities belong",
            """
def reinforce_loss(logprobs, returns):
    return -(logprobs.exp() * returns).mean()
""",
        ),
    ],
    "vpg": [
        (
            "vpg_loss",
            "the values detached in the value loss: the critic never learns",
            """
def vpg_loss(logprobs, values, returns):
    advantages = (returns - values).detach()
    return -(logprobs * advantages).mean(), ((returns - values.detach()) ** 2).mean()
""",
        ),
        (
            "vpg_loss",
            "the value loss not squared",
            """
def vpg_loss(logprobs, values, returns):
    advantages = (returns - values).detach()
    return -(logprobs * advantages).mean(), (returns - values).abs().mean()
""",
        ),
        (
            "vpg_loss",
            None,  # the value loss a sum
            """
def vpg_loss(logprobs, values, returns):
    advantages = (returns - values).detach()
    return -(logprobs * advantages).mean(), ((returns - values) ** 2).sum()
""",
        ),
        (
            "vpg_loss",
            exercise_cases.HALF,  # a 1/2 on the value loss, as CleanRL writes its v_loss
            """
def vpg_loss(logprobs, values, returns):
    advantages = (returns - values).detach()
    return -(logprobs * advantages).mean(), 0.5 * ((returns - values) ** 2).mean()
""",
        ),
    ],
    "ppo": [
        (
            "ppo_loss",
            "the min taken over the two ratios, then times A",  # not "no clip"
            """
def ppo_loss(new_logprobs, old_logprobs, advantages, clip_coef):
    ratio = (new_logprobs - old_logprobs).exp()
    clipped = ratio.clamp(1 - clip_coef, 1 + clip_coef)
    return -(torch.min(ratio, clipped) * advantages).mean()
""",
        ),
        (
            "ppo_loss",
            "returned a loss with no gradient",
            """
def ppo_loss(new_logprobs, old_logprobs, advantages, clip_coef):
    ratio = (new_logprobs - old_logprobs).exp().detach()
    clipped = ratio.clamp(1 - clip_coef, 1 + clip_coef)
    return -torch.min(ratio * advantages, clipped * advantages).mean()
""",
        ),
        (
            "ppo_loss",
            None,  # clipped to [-eps, eps], not around 1
            """
def ppo_loss(new_logprobs, old_logprobs, advantages, clip_coef):
    ratio = (new_logprobs - old_logprobs).exp()
    clipped = ratio.clamp(-clip_coef, clip_coef)
    return -torch.min(ratio * advantages, clipped * advantages).mean()
""",
        ),
        (
            "ppo_loss",
            "the sign",
            """
def ppo_loss(new_logprobs, old_logprobs, advantages, clip_coef):
    ratio = (new_logprobs - old_logprobs).exp()
    clipped = ratio.clamp(1 - clip_coef, 1 + clip_coef)
    return torch.min(ratio * advantages, clipped * advantages).mean()
""",
        ),
        (
            "value_loss",
            exercise_cases.HALF,
            """
def value_loss(values, returns):
    return 0.5 * ((returns - values) ** 2).mean()
""",
        ),
    ],
    "ppo_gae": [
        (
            "compute_gae",
            "operator.invert",  # ~flag, right for bool, raises on train()'s float32 flags
            """
def compute_gae(rewards, values, next_values, terminated, episode_end, gamma, gae_lambda):
    advantages, a = torch.zeros_like(rewards), torch.zeros_like(rewards[0])
    for t in reversed(range(len(rewards))):
        delta = rewards[t] + gamma * ~terminated[t] * next_values[t] - values[t]
        a = advantages[t] = delta + gamma * gae_lambda * ~episode_end[t] * a
    return advantages, advantages + values
""",
        ),
        (
            "compute_gae",
            "returns = advantages",
            """
def compute_gae(rewards, values, next_values, terminated, episode_end, gamma, gae_lambda):
    advantages, a = torch.zeros_like(rewards), torch.zeros_like(rewards[0])
    for t in reversed(range(len(rewards))):
        delta = rewards[t] + gamma * (1 - terminated[t]) * next_values[t] - values[t]
        a = advantages[t] = delta + gamma * gae_lambda * (1 - episode_end[t]) * a
    return advantages, advantages
""",
        ),
        (
            "compute_gae",
            None,  # V(s_{t+1}) from values[t + 1], next_values only after the last step
            """
def compute_gae(rewards, values, next_values, terminated, episode_end, gamma, gae_lambda):
    advantages, a = torch.zeros_like(rewards), torch.zeros_like(rewards[0])
    for t in reversed(range(len(rewards))):
        v_next = next_values[t] if t == len(rewards) - 1 else values[t + 1]
        delta = rewards[t] + gamma * (1 - terminated[t]) * v_next - values[t]
        a = advantages[t] = delta + gamma * gae_lambda * (1 - episode_end[t]) * a
    return advantages, advantages + values
""",
        ),
        (
            "value_loss",
            None,  # the clipped term alone, no max
            """
def value_loss(values, returns, old_values=None, clip_coef=None):
    if old_values is not None and clip_coef is not None:
        values = old_values + (values - old_values).clamp(-clip_coef, clip_coef)
    return ((returns - values) ** 2).mean()
""",
        ),
        (
            "value_loss",
            "a sum where the mean belongs",
            """
def value_loss(values, returns, old_values=None, clip_coef=None):
    loss = (returns - values) ** 2
    if old_values is not None and clip_coef is not None:
        clipped = old_values + (values - old_values).clamp(-clip_coef, clip_coef)
        loss = torch.max(loss, (returns - clipped) ** 2)
    return loss.sum()
""",
        ),
        (
            "value_loss",
            exercise_cases.HALF,  # CleanRL's v_loss, clipped and not, word for word
            """
def value_loss(values, returns, old_values=None, clip_coef=None):
    if old_values is None or clip_coef is None:
        return 0.5 * ((values - returns) ** 2).mean()
    v_loss_unclipped = (values - returns) ** 2
    v_clipped = old_values + torch.clamp(values - old_values, -clip_coef, clip_coef)
    v_loss_clipped = (v_clipped - returns) ** 2
    v_loss_max = torch.max(v_loss_unclipped, v_loss_clipped)
    return 0.5 * v_loss_max.mean()
""",
        ),
    ],
    "ppo_continuous": [
        (
            "Agent.get_action_and_value",
            "the mean detached: no gradient reaches the actor's layers",
            """
    def get_action_and_value(self, x, action=None):
        mean = self.actor_mean(x).detach()
        dist = Normal(mean, self.actor_logstd.exp().expand_as(mean))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.critic(x)
""",
        ),
        (
            "Agent.get_action_and_value",
            None,  # all of it under no_grad: nothing reaches the actor, nor the critic
            """
    def get_action_and_value(self, x, action=None):
        with torch.no_grad():
            mean = self.actor_mean(x)
            dist = Normal(mean, self.actor_logstd.exp().expand_as(mean))
            if action is None:
                action = dist.sample()
            return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.critic(x)
""",
        ),
        (
            "Agent.get_action_and_value",
            "x normalized a second time",
            """
    def get_action_and_value(self, x, action=None):
        x = self.obs_norm(x)
        mean = self.actor_mean(x)
        dist = Normal(mean, self.actor_logstd.exp().expand_as(mean))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.critic(x)
""",
        ),
        (
            "Agent.get_action_and_value",
            None,  # V(s) not from the critic of x: of the normalized-again x
            """
    def get_action_and_value(self, x, action=None):
        mean = self.actor_mean(x)
        dist = Normal(mean, self.actor_logstd.exp().expand_as(mean))
        if action is None:
            action = dist.sample()
        value = self.critic(self.obs_norm(x))
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), value
""",
        ),
        (
            "Agent.get_action_and_value",
            "sigma detached: no gradient reaches actor_logstd",
            """
    def get_action_and_value(self, x, action=None):
        mean = self.actor_mean(x)
        dist = Normal(mean, self.actor_logstd.detach().exp().expand_as(mean))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.critic(x)
""",
        ),
        (
            "Agent.get_action_and_value",
            "V(x) detached",
            """
    def get_action_and_value(self, x, action=None):
        mean = self.actor_mean(x)
        dist = Normal(mean, self.actor_logstd.exp().expand_as(mean))
        if action is None:
            action = dist.sample()
        value = self.get_value(x).detach()
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), value
""",
        ),
        (
            "Agent.get_action_and_value",
            None,  # the mean of a fixed observation: the policy ignores x
            """
    def get_action_and_value(self, x, action=None):
        mean = self.actor_mean(torch.zeros_like(x))
        dist = Normal(mean, self.actor_logstd.exp().expand_as(mean))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.critic(x)
""",
        ),
        (
            "RunningNorm.update",
            "Bessel's correction",
            """
    def update(self, x):
        batch_mean, batch_var, batch_count = x.mean(0), x.var(0), x.shape[0]
        delta, total = batch_mean - self.mean, self.count + batch_count
        self.mean = self.mean + delta * batch_count / total
        moments = self.var * self.count + batch_var * batch_count
        self.var = (moments + delta**2 * self.count * batch_count / total) / total
        self.count = total
""",
        ),
        (
            "RunningNorm.update",
            "float64",  # the buffers left in float64: the networks' float32 layers refuse them
            """
    def update(self, x):
        x = x.double()
        batch_mean, batch_var, batch_count = x.mean(0), x.var(0, correction=0), x.shape[0]
        mean, var, count = self.mean.double(), self.var.double(), self.count.double()
        delta, total = batch_mean - mean, count + batch_count
        self.mean = mean + delta * batch_count / total
        moments = var * count + batch_var * batch_count + delta**2 * count * batch_count / total
        self.var = moments / total
        self.count = total
""",
        ),
        (
            "RunningNorm.update",
            None,  # the count never grows
            """
    def update(self, x):
        batch_mean, batch_var, batch_count = x.mean(0), x.var(0, correction=0), x.shape[0]
        delta, total = batch_mean - self.mean, self.count + batch_count
        self.mean = self.mean + delta * batch_count / total
        moments = self.var * self.count + batch_var * batch_count
        self.var = (moments + delta**2 * self.count * batch_count / total) / total
""",
        ),
        (
            "adapted_lr",
            "",  # a factor of 2, bounds kept: wrong near each bound, and no known mistake
            """
def adapted_lr(lr, kl, target_kl, max_lr):
    if kl > 2 * target_kl:
        return max(lr / 2, 1e-5)
    if kl < target_kl / 2:
        return min(lr * 2, max_lr)
    return lr
""",
        ),
        (
            "adapted_lr",
            None,  # the issue's: a wrong factor and no floor
            """
def adapted_lr(lr, kl, target_kl, max_lr):
    if kl > 2 * target_kl:
        return lr / 1.4
    if kl < target_kl / 2:
        return min(lr * 1.5, max_lr)
    return lr
""",
        ),
        (
            "adapted_lr",
            "no floor: it falls below 1e-5",
            """
def adapted_lr(lr, kl, target_kl, max_lr):
    if kl > 2 * target_kl:
        return max(lr / 1.5, 1e-6)
    if kl < target_kl / 2:
        return min(lr * 1.5, max_lr)
    return lr
""",
        ),
        (
            "adapted_lr",
            None,  # the band's edges excluded: kl = 2 target_kl lowers the step size
            """
def adapted_lr(lr, kl, target_kl, max_lr):
    if kl >= 2 * target_kl:
        return max(lr / 1.5, 1e-5)
    if kl <= target_kl / 2:
        return min(lr * 1.5, max_lr)
    return lr
""",
        ),
    ],
}
PLANTED = {rung: PLANTED[rung] + PLANTED_MORE[rung] for rung in PLANTED}


SOLVED = {}  # rung: its exercise file, solved (make.py runs ruff: once a rung)


def with_function(rung, name, source, text=None):
    """The script's exercise file, solved (or `text`), with `name` replaced by `source` (a def)."""
    import ast as syntax

    if rung not in SOLVED:
        SOLVED[rung] = exercise_maker.exercise(rung, solved=True)
    text = text or SOLVED[rung]
    tree, lines = syntax.parse(text), text.splitlines()
    top, _, method = name.partition(".")
    (node,) = [n for n in tree.body if getattr(n, "name", None) == top]
    if method:
        (node,) = [n for n in node.body if getattr(n, "name", None) == method]
    lines[node.lineno - 1 : node.end_lineno] = source.strip("\n").splitlines()
    return "\n".join(lines) + "\n"


def planted_files():
    """(rung, k, {name: (words, source)}): the k-th planted mistake of each of the rung's
    functions, in one file (a sandboxed child a file: a second each); the functions with no
    k-th mistake are right, and must pass."""
    for rung, items in PLANTED.items():
        each = {}
        for name, words, source in items:
            each.setdefault(name, []).append((words, source))
        for k in range(max(len(planted) for planted in each.values())):
            yield rung, k, {name: planted[k] for name, planted in each.items() if k < len(planted)}


@pytest.mark.parametrize(
    "rung, k, planted",
    list(planted_files()),
    ids=lambda v: "+".join(v) if isinstance(v, dict) else str(v),
)
def test_the_grader_catches_planted_mistakes(rung, k, planted, tmp_path, capsys, forked):
    text = None
    for name, (_, source) in planted.items():
        text = with_function(rung, name, source, text)
    path = tmp_path / f"{rung}.py"
    path.write_text(text)
    code, lines = grade(rung, path, capsys)
    assert code == 1, lines
    failed = {line.split(":")[0][2:]: line for line in lines[:-1] if not line.startswith("✓")}
    assert set(failed) == set(planted), lines  # the others pass
    for name, (words, _) in planted.items():
        if words:
            assert words in failed[name], failed[name]
        elif words == "":  # no known mistake gives the student's answer on every case: none
            assert not any(w in failed[name] for w, _ in exercise_cases.MISTAKES[name])
    n = len(exercise_cases.EXERCISES[rung])
    assert lines[-1] == f"{n - len(planted)} of {n} function{'s' * (n > 1)} passed", lines


def test_planted_mistakes_cover_every_exercise_three_times():
    for rung, blanks in exercise_cases.EXERCISES.items():
        for name in blanks:
            assert sum(n == name for n, _, _ in PLANTED[rung]) >= 3, (rung, name)
    assert sum(len(planted) for planted in PLANTED.values()) >= 40


# Right answers in other forms than the scripts': each must pass every case. (rung, name, source)
RIGHT_FORMS = [
    (
        "reinforce",
        "discounted_returns",  # ~done on train()'s bool dones
        """
def discounted_returns(rewards, dones, gamma, last_value=None):
    returns, g = [], torch.zeros_like(rewards[0]) if last_value is None else last_value
    for t in reversed(range(len(rewards))):
        g = rewards[t] + gamma * ~dones[t] * g
        returns.append(g)
    return torch.stack(returns[::-1])
""",
    ),
    (
        "reinforce",
        "discounted_returns",  # torch.where, in float64
        """
def discounted_returns(rewards, dones, gamma, last_value=None):
    r = rewards.double()
    returns = torch.zeros_like(r)
    g = torch.zeros_like(r[0]) if last_value is None else last_value.double()
    for t in range(len(r) - 1, -1, -1):
        g = r[t] + gamma * torch.where(dones[t], torch.zeros_like(g), g)
        returns[t] = g
    return returns
""",
    ),
    (
        "reinforce",
        "discounted_returns",  # 1 - done, once the bool flags are floats
        """
def discounted_returns(rewards, dones, gamma, last_value=None):
    not_done = 1 - dones.float()
    returns = rewards.clone()
    g = 0.0 if last_value is None else last_value
    for t in reversed(range(rewards.shape[0])):
        returns[t] = g = rewards[t] + gamma * not_done[t] * g
    return returns
""",
    ),
    (
        "reinforce",
        "reinforce_loss",  # float64, and a dot product
        """
def reinforce_loss(logprobs, returns):
    return -torch.dot(logprobs.double(), returns.double()) / logprobs.numel()
""",
    ),
    (
        "vpg",
        "vpg_loss",  # F.mse_loss, the detach on values alone
        """
def vpg_loss(logprobs, values, returns):
    import torch.nn.functional as F

    return -(logprobs * (returns - values.detach())).mean(), F.mse_loss(values, returns)
""",
    ),
    (
        "ppo",
        "ppo_loss",  # torch.where on the advantage's sign
        """
def ppo_loss(new_logprobs, old_logprobs, advantages, clip_coef):
    ratio = torch.exp(new_logprobs - old_logprobs)
    upper = torch.minimum(ratio, torch.tensor(1 + clip_coef))
    lower = torch.maximum(ratio, torch.tensor(1 - clip_coef))
    return -torch.where(advantages >= 0, upper * advantages, lower * advantages).mean()
""",
    ),
    (
        "ppo",
        "value_loss",  # float64
        """
def value_loss(values, returns):
    return (values.double() - returns.double()).square().mean()
""",
    ),
    (
        "ppo_gae",
        "compute_gae",  # 1 - flag on train()'s float32 flags, the deltas at once
        """
def compute_gae(rewards, values, next_values, terminated, episode_end, gamma, gae_lambda):
    deltas = rewards + gamma * (1 - terminated) * next_values - values
    advantages = torch.zeros_like(deltas)
    running = torch.zeros_like(deltas[0])
    for t in reversed(range(len(deltas))):
        running = deltas[t] + gamma * gae_lambda * (1 - episode_end[t]) * running
        advantages[t] = running
    return advantages, advantages + values
""",
    ),
    (
        "ppo_gae",
        "compute_gae",  # torch.where on the flags, in float64
        """
def compute_gae(rewards, values, next_values, terminated, episode_end, gamma, gae_lambda):
    r, v, nv = rewards.double(), values.double(), next_values.double()
    a, advantages = torch.zeros_like(r[0]), []
    for t in reversed(range(len(r))):
        bootstrap = torch.where(terminated[t] > 0, torch.zeros_like(nv[t]), nv[t])
        delta = r[t] + gamma * bootstrap - v[t]
        a = delta + gamma * gae_lambda * torch.where(episode_end[t] > 0, torch.zeros_like(a), a)
        advantages.insert(0, a)
    advantages = torch.stack(advantages).float()
    return advantages, advantages + values
""",
    ),
    (
        "ppo_gae",
        "value_loss",  # torch.maximum, clamp's tensor bounds
        """
def value_loss(values, returns, old_values=None, clip_coef=None):
    unclipped = (values - returns) ** 2
    if old_values is None or clip_coef is None:
        return unclipped.mean()
    clipped = torch.clamp(values, old_values - clip_coef, old_values + clip_coef)
    return torch.maximum(unclipped, (clipped - returns) ** 2).mean()
""",
    ),
    (
        "ppo_continuous",
        "Agent.get_action_and_value",  # Independent(Normal), which sums over the last dim
        """
    def get_action_and_value(self, x, action=None):
        from torch.distributions import Independent

        dist = Independent(Normal(self.actor_mean(x), torch.exp(self.actor_logstd)), 1)
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.get_value(x)
""",
    ),
    (
        "ppo_continuous",
        "Agent.get_action_and_value",  # the Gaussian by hand: sample, log-density, entropy
        """
    def get_action_and_value(self, x, action=None):
        import math

        mean, log_std = self.actor_mean(x), self.actor_logstd
        if action is None:
            with torch.no_grad():
                action = mean + log_std.exp() * torch.randn_like(mean)
        z = (action - mean) / log_std.exp()
        logprob = (-0.5 * z**2 - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
        entropy = (0.5 + 0.5 * math.log(2 * math.pi) + log_std).sum().expand(len(x))
        return action, logprob, entropy, self.critic(x)
""",
    ),
    (
        "ppo_continuous",
        "RunningNorm.update",  # float64 inside, float32 kept, in place
        """
    def update(self, x):
        x, n = x.double(), x.shape[0]
        mean, var, count = self.mean.double(), self.var.double(), self.count.double()
        batch_mean, batch_var = x.mean(0), ((x - x.mean(0)) ** 2).mean(0)
        total = count + n
        new_mean = mean + (batch_mean - mean) * n / total
        m2 = var * count + batch_var * n + (batch_mean - mean) ** 2 * count * n / total
        self.mean.copy_(new_mean)
        self.var.copy_(m2 / total)
        self.count.copy_(total)
""",
    ),
    (
        "ppo_continuous",
        "adapted_lr",  # one factor, then one clip
        """
def adapted_lr(lr, kl, target_kl, max_lr):
    factor = 1 / 1.5 if kl > 2 * target_kl else 1.5 if kl < target_kl / 2 else 1.0
    return lr if factor == 1.0 else float(min(max(lr * factor, 1e-5), max_lr))
""",
    ),
]


@pytest.mark.parametrize(
    "rung, name, source",
    RIGHT_FORMS,
    ids=[f"{rung}-{name}-{i}" for i, (rung, name, _) in enumerate(RIGHT_FORMS)],
)
def test_right_answers_in_other_forms_pass(rung, name, source, tmp_path, capsys):
    path = tmp_path / f"{rung}.py"
    path.write_text(with_function(rung, name, source))
    code, lines = grade(rung, path, capsys)
    assert code == 0 and all(line.startswith("✓ ") for line in lines[:-1]), lines


def test_right_forms_cover_every_exercise():
    covered = {(rung, name) for rung, name, _ in RIGHT_FORMS}
    exercises = {(rung, name) for rung, names in exercise_cases.EXERCISES.items() for name in names}
    assert covered == exercises and len(RIGHT_FORMS) >= 12


SAMPLER = """
    def get_action_and_value(self, x, action=None):
        import math

        mean = self.actor_mean(x)
        std = self.actor_logstd.exp().expand_as(mean)
        dist = Normal(mean, std)
        if action is None:
            action = {draw}
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.critic(x)
"""
DRAW_CASE = (
    "20,000 draws in two calls from a seeded stream: z = (a - mu) / sigma as independent"
    " N(0, 1) numbers, then the actions as torch's own draws: "
)
SAMPLERS = {  # a sampler of Agent.get_action_and_value -> the part of the case it fails
    "mu + sigma, then mu - sigma": (
        "mean + std * torch.tensor([1.0, -1.0]).repeat(len(mean) // 2).view(-1, 1)",
        "the largest gap between z's distribution and N(0, 1)'s (Kolmogorov-Smirnov)",
    ),
    "a uniform, of the same mean and std": (
        "mean + std * math.sqrt(3) * (2 * torch.rand_like(mean) - 1)",
        "the largest gap between z's distribution and N(0, 1)'s (Kolmogorov-Smirnov)",
    ),
    "one z for both dimensions": (
        "mean + std * torch.randn(len(mean), 1)",
        "the correlation of z between action dimensions",
    ),
    "each z twice, once with its sign turned": (
        "mean + std * torch.randn(len(mean) // 2, 2).repeat_interleave(2, 0)"
        " * torch.tensor([1.0, -1.0]).repeat(len(mean) // 2).view(-1, 1)",
        "the correlation of z on neighbouring rows",
    ),
    "a seed of its own: the same draws on every call": (
        "mean + std * torch.randn(mean.shape, generator=torch.Generator().manual_seed(1))",
        "the correlation of z between the two calls",
    ),
}


@pytest.mark.parametrize("sampler", list(SAMPLERS))
def test_a_sampler_not_gaussian_is_told_which_statistic_its_draws_fail(
    sampler, tmp_path, capsys, forked
):
    """A sampler whose draws are not torch's is refused; where they are not even independent
    N(mu, sigma) numbers, the line names the statistic that shows it (cases.draws), before the
    comparison with torch's draws, and no named mistake."""
    draw, part = SAMPLERS[sampler]
    path = tmp_path / "ppo_continuous.py"
    source = SAMPLER.format(draw=draw)
    path.write_text(with_function("ppo_continuous", "Agent.get_action_and_value", source))
    code, lines = grade("ppo_continuous", path, capsys)
    assert code == 1 and lines[-1] == "2 of 3 functions passed", lines
    assert lines[0].startswith(f"✗ Agent.get_action_and_value: {DRAW_CASE}"), lines[0]
    assert f": {part}" in lines[0] and exercise_cases.NOT_TORCHS not in lines[0], lines[0]


TORCH_FORMS = {  # from the seeded state, each draws the script's numbers: never refused
    "Normal.sample": "dist.sample()",
    "Normal.rsample": "dist.rsample()",
    "randn_like": "mean + std * torch.randn_like(mean)",
    "torch.normal": "torch.normal(mean, std)",
    "randn of mu's shape": "mean + std * torch.randn(mean.shape)",
}


@pytest.mark.parametrize("draw", list(TORCH_FORMS.values()), ids=list(TORCH_FORMS))
def test_torchs_samplers_pass_every_time(draw, tmp_path, capsys, forked):
    """Each of torch's forms draws the script's numbers from the state given (torch 2.x on a
    CPU), on 20,000 rows and on train()'s 16 and 1: a ✓ that no run can take away."""
    path = tmp_path / "ppo_continuous.py"
    source = SAMPLER.format(draw=draw)
    path.write_text(with_function("ppo_continuous", "Agent.get_action_and_value", source))
    code, lines = grade("ppo_continuous", path, capsys)
    assert code == 0 and lines[0].startswith("✓ Agent.get_action_and_value: 13 cases"), lines


def test_torchs_forms_draw_the_same_numbers_from_one_seed():
    """What the grader relies on, checked here on this torch: the five forms give the same
    numbers, bit for bit, from one seed, twice in a row, on 1, 16 and 20,000 rows."""
    for rows in (1, 16, 20_000):
        mean = torch.randn(rows, 2, generator=torch.Generator().manual_seed(rows))
        std = torch.tensor([1.0, 0.5]).expand(rows, 2)
        dist = torch.distributions.Normal(mean, std)
        found = []
        for draw in TORCH_FORMS.values():
            torch.manual_seed(7)
            names = dict(torch=torch, mean=mean, std=std, dist=dist)
            found.append([eval(draw, names) for _ in range(2)])  # the table above's text
        for other in found[1:]:
            assert all(torch.equal(a, b) for a, b in zip(found[0], other, strict=True)), rows


NOT_TORCHS_SAMPLERS = {  # N(mu, sigma) draws, but not torch's from the given state
    "numpy": "mean + std * torch.as_tensor(np.random.normal(size=tuple(mean.shape)),"
    " dtype=torch.float32)",
    "Python's random": "mean + std * torch.tensor([[random.gauss(0.0, 1.0) for _ in range(2)]"
    " for _ in range(len(mean))])",
    "a row at a time": "torch.stack([torch.normal(m, s) for m, s in zip(mean, std)])",
    "a row at a time, in float64": "torch.stack([torch.normal(m.double(), s.double())"
    " for m, s in zip(mean, std)]).float()",
    "float64": "torch.normal(mean.double(), std.double()).float()",
}


@pytest.mark.parametrize("draw", list(NOT_TORCHS_SAMPLERS.values()), ids=list(NOT_TORCHS_SAMPLERS))
def test_a_gaussian_sampler_not_torchs_is_refused_with_the_named_mistake(
    draw, tmp_path, capsys, forked
):
    """Draws from numpy or Python's random, a row at a time, or in float64: N(mu, sigma), but
    not the script's numbers from the seed (torch draws a float32 batch of 16 numbers or more
    in a way of its own, a row of 2 or a float64 tensor in another). Refused every time, by
    design, with the line that says so (a row at a time and float64 match torch on 1 row: the
    named mistake has that version too). The statistics, a diagnostic, say that the draws look
    N(mu, sigma): true N(mu, sigma) draws are told otherwise with a chance of at most REFUSAL."""
    path = tmp_path / "ppo_continuous.py"
    source = SAMPLER.format(draw=draw).replace(
        "import math\n", "import math\n        import random\n\n        import numpy as np\n"
    )
    path.write_text(with_function("ppo_continuous", "Agent.get_action_and_value", source))
    # A row at a time is 80,000 calls of torch.normal: near the 5 s of CPU time a function
    # gets, where a mistake is named only if every case was answered. The time is not what
    # this test is about: 60 s.
    code, lines = grade("ppo_continuous", path, capsys, "--time-limit", "60")
    assert code == 1 and lines[-1] == "2 of 3 functions passed", lines
    assert lines[0].startswith(f"✗ Agent.get_action_and_value: {DRAW_CASE}"), lines[0]
    looks = exercise_cases.LOOKS + exercise_cases.TORCHS
    assert lines[0].endswith(
        f": {looks}: expected [1.0, 1.0], got [0.0, 0.0]: {exercise_cases.NOT_TORCHS}"
    ), lines[0]


# The six wrong samplers of issue 81's attack (each passed the statistics alone): their bodies
# as the attacker wrote them, after the script's mean, std and dist.
ATTACKS = {  # name -> (the body that sets action, where it is refused, what came back)
    # no randomness at all: a fixed table of N(0, 1) quantiles, shuffled by a call counter
    "quantiles": (
        """
            global CALLS
            CALLS = globals().get("CALLS", 0) + 1
            n = mean.numel()
            q = torch.special.ndtri((torch.arange(n, dtype=torch.float64) + 0.5) / n)
            g = torch.Generator().manual_seed(1234 + CALLS)
            z = q[torch.randperm(n, generator=g)].view_as(mean).to(mean.dtype)
            action = mean + std * z
""",
        DRAW_CASE,
        "[0.0, 0.0]",
    ),
    # rows 4k + 2, 4k + 3 the negatives of rows 4k, 4k + 1 (antithetic at lag 2)
    "antithetic_lag2": (
        """
            b = mean.shape[0]
            z = torch.randn(((b + 3) // 4) * 2, mean.shape[1]).view(-1, 2, mean.shape[1])
            z = torch.cat([z, -z], 1).reshape(-1, mean.shape[1])[:b]
            action = mean + std * z
""",
        DRAW_CASE,
        "[0.0, 0.0]",
    ),
    # mu itself unless the batch has 1,000 rows: a deterministic policy in train()
    "mean_unless_large": (
        """
            if mean.shape[0] >= 1000:
                action = dist.sample()
            else:
                action = mean.detach().clone()
""",
        "an agent whose layers depend on x, 16 rows (train()'s, --num-envs 16) in two"
        " calls from a seeded stream: ",
        "[0.0, 0.0]",
    ),
    # the second call's draws are the first call's, rolled by one row
    "replayed_calls": (
        """
            global LAST
            if globals().get("LAST") is not None and LAST.shape == mean.shape:
                z, LAST = LAST.roll(1, 0), None
            else:
                z = torch.randn_like(mean)
                LAST = z
            action = mean + std * z
""",
        DRAW_CASE,
        "[1.0, 0.0]",
    ),
    # dimension 1 is dimension 0's draws in reverse row order
    "dims_mirrored": (
        """
            z0 = torch.randn(mean.shape[0], 1)
            z = torch.cat([z0, z0.flip(0)], 1)[:, : mean.shape[1]]
            action = mean + std * z
""",
        DRAW_CASE,
        "[0.0, 0.0]",
    ),
    # torch.manual_seed(a call counter) on every call
    "reseeds": (
        """
            global SEED
            SEED = globals().get("SEED", 0) + 1
            torch.manual_seed(SEED)
            action = dist.sample()
""",
        DRAW_CASE,
        "[0.0, 0.0]",
    ),
}
ATTACK = """
    def get_action_and_value(self, x, action=None):
        mean = self.actor_mean(x)
        std = self.actor_logstd.exp().expand_as(mean)
        dist = Normal(mean, std, validate_args=False)
        if action is None:
{body}
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.critic(x)
"""


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_the_attacks_wrong_samplers_are_refused_by_torchs_draws(attack, tmp_path, capsys, forked):
    """Each passes every statistic of cases.draws(); each is refused by the comparison with the
    script's draws from the same seed, on 20,000 rows or on train()'s 16."""
    body, case, got = ATTACKS[attack]
    path = tmp_path / "ppo_continuous.py"
    source = ATTACK.format(body=body.strip("\n"))
    path.write_text(with_function("ppo_continuous", "Agent.get_action_and_value", source))
    code, lines = grade("ppo_continuous", path, capsys)
    assert code == 1 and lines[-1] == "2 of 3 functions passed", lines
    assert lines[0].startswith(f"✗ Agent.get_action_and_value: {case}"), lines[0]
    assert f"{exercise_cases.TORCHS}: expected [1.0, 1.0], got {got}" in lines[0], lines[0]


# Issue 81's second attack: samplers that draw torch's numbers only where they recognise the
# grader's case, and mu (or 3 sigma) elsewhere, as the attacker wrote them. Each passed every
# case while the seeds, the states and the agents were fixed.
SEES_THE_GRADER = {
    # the grader's seeds, read back with torch.initial_seed()
    "seed": """
            if torch.initial_seed() in (101, 103, 104, 105):
                action = dist.sample()
            else:
                action = mean.detach().clone()
""",
    # a state equal to a freshly seeded one, torch.manual_seed(k) for k < 1000, and the next call
    "fresh": """
            global FRESH, GRADED
            if globals().get("FRESH") is None:
                FRESH = [torch.Generator().manual_seed(k).get_state() for k in range(1000)]
            if any(torch.equal(torch.get_rng_state(), f) for f in FRESH):
                GRADED = 2
            if globals().get("GRADED", 0) > 0:
                GRADED -= 1
                action = dist.sample()
            else:
                action = (mean + 3.0 * std * torch.sign(torch.randn_like(mean))).detach()
""",
    # the grader's agents: a running count of exactly 50, or an actor's last layer of zeros
    "weights": """
            graded = float(self.obs_norm.count) == 50.0 or not self.actor_mean[-1].weight.any()
            action = dist.sample() if graded else mean.detach().clone()
""",
}


@pytest.mark.parametrize("attack", list(SEES_THE_GRADER))
def test_a_sampler_that_looks_for_the_graders_seeds_or_agents_is_refused(
    attack, tmp_path, capsys, forked
):
    """The sampling cases' seeds are drawn on every run (cases.run_seed()), the calls' state is
    never a freshly seeded one, and the agents' every number is random from the seed: nothing
    for a sampler to recognise, so each of these draws mu or 3 sigma in the grader too."""
    path = tmp_path / "ppo_continuous.py"
    source = ATTACK.format(body=SEES_THE_GRADER[attack].strip("\n"))
    path.write_text(with_function("ppo_continuous", "Agent.get_action_and_value", source))
    code, lines = grade("ppo_continuous", path, capsys)
    assert code == 1 and lines[-1] == "2 of 3 functions passed", lines
    assert lines[0].startswith(f"✗ Agent.get_action_and_value: {DRAW_CASE}"), lines[0]
    # mu or mu +/- 3 sigma: z's statistics already show that these are not N(mu, sigma) draws
    assert any(f": {part}: expected" in lines[0] for part in exercise_cases.DRAW_PARTS), lines[0]


SEEDS = r"seed \d+|manual_seed\(\d+\), then torch\.rand\(\d+\)"


def test_two_gradings_differ_in_their_seeds_alone(tmp_path, capsys, forked):
    """Each grading run draws its sampling cases' seeds anew (the cases are built once a run):
    a right sampler passes both, and a wrong one gets the same line but for the seeds, which the
    line shows so that the refusal can be reproduced."""
    right = tmp_path / "right" / "ppo_continuous.py"
    wrong = tmp_path / "wrong" / "ppo_continuous.py"
    for path, body in ((right, "action = dist.sample()"), (wrong, SEES_THE_GRADER["seed"])):
        path.parent.mkdir()
        source = ATTACK.format(body=textwrap.indent(textwrap.dedent(body).strip(), " " * 12))
        path.write_text(with_function("ppo_continuous", "Agent.get_action_and_value", source))
    runs = []
    for _ in range(2):
        verdicts.own_answers.cache_clear()  # a new grading run: new seeds
        runs.append([grade("ppo_continuous", path, capsys) for path in (right, wrong)])
    verdicts.own_answers.cache_clear()
    (first_right, first_wrong), (second_right, second_wrong) = runs
    assert first_right == second_right and first_right[0] == 0, first_right
    assert first_right[1][0].startswith("✓ Agent.get_action_and_value: 13 cases"), first_right
    assert first_wrong[1][0].startswith("✗ Agent.get_action_and_value: "), first_wrong
    seeds = [re.findall(SEEDS, run[1][0]) for run in (first_wrong, second_wrong)]
    assert len(seeds[0]) == 2 and seeds[0] != seeds[1], seeds
    masked = [
        [re.sub(SEEDS, "SEED", line) for line in run[1]] for run in (first_wrong, second_wrong)
    ]
    assert masked[0] == masked[1], masked


def test_the_draws_thresholds_misjudge_true_gaussian_draws_under_one_in_a_million():
    """The diagnostic's tail bounds, summed over every test of the function's cases that run
    it, are REFUSAL; and 20 draws of N(mu, sigma) from other seeds each pass them."""
    drawing = [
        case
        for case in exercise_cases.EXERCISES["ppo_continuous"]["Agent.get_action_and_value"][0]()
        if "independent N(0, 1)" in case.label  # draws() runs there: 20,000 rows
    ]
    assert len(drawing) == exercise_cases.DRAWING_CASES == 2
    assert exercise_cases.REFUSAL == 1e-6 and exercise_cases.draw_tests(2) == 10
    limits = exercise_cases.thresholds(2, 20_000, 2)
    x = math.log(2 * 10 * 2 / 1e-6)
    n = 40_000
    assert limits["ks"][0] - exercise_cases.SLACK == pytest.approx(math.sqrt(x / (2 * n)))
    assert 10 * 2 * 2 * math.exp(-2 * n * (limits["ks"][0] - 1e-3) ** 2) == pytest.approx(1e-6)
    assert 0.015 < limits["ks"][0] < 0.016 and 0.03 < limits["mean"][0] < 0.031
    mu, sigma = torch.tensor([[0.5, -1.0]]), torch.tensor([[1.0, 0.5]])
    for seed in range(20):
        g = torch.Generator().manual_seed(100 + seed)
        actions = [mu + sigma * torch.randn(20_000, 2, generator=g) for _ in range(2)]
        got = exercise_cases.as_lists(exercise_cases.draws(actions, mu, sigma))
        assert got == exercise_cases.expected_draws(2), (seed, got)


# What train() passes each exercise, as its docstring states: a check per function, which a
# right answer may rely on. Every case of the grader keeps to it.
def _is(x, dtype, dims, grad=None):
    ok = isinstance(x, torch.Tensor) and x.dtype == dtype and x.dim() == dims
    return ok and (grad is None or x.requires_grad == grad)


def _losses(*tensors, grads):
    first = tensors[0]
    return all(
        _is(x, torch.float32, 1, grad) and x.shape == first.shape
        for x, grad in zip(tensors, grads, strict=True)
    )


CONTRACTS = {
    ("reinforce", "discounted_returns"): lambda rewards, dones, gamma, last_value=None: (
        _is(rewards, torch.float32, 2)
        and _is(dones, torch.bool, 2)
        and dones.shape == rewards.shape
        and type(gamma) is float
        and (last_value is None or _is(last_value, torch.float32, 1))
        and (last_value is None or last_value.shape == rewards.shape[1:])
    ),
    ("reinforce", "reinforce_loss"): lambda logprobs, returns: _losses(
        logprobs, returns, grads=(True, False)
    ),
    ("vpg", "vpg_loss"): lambda logprobs, values, returns: _losses(
        logprobs, values, returns, grads=(True, True, False)
    ),
    ("ppo", "ppo_loss"): lambda new, old, advantages, clip_coef: (
        _losses(new, old, advantages, grads=(True, False, False)) and type(clip_coef) is float
    ),
    ("ppo", "value_loss"): lambda values, returns: _losses(values, returns, grads=(True, False)),
    ("ppo_gae", "compute_gae"): lambda *tensors_gamma_lambda: (
        all(_is(x, torch.float32, 2, False) for x in tensors_gamma_lambda[:5])
        and len({x.shape for x in tensors_gamma_lambda[:5]}) == 1
        and all(((x == 0) | (x == 1)).all() for x in tensors_gamma_lambda[3:5])
        and all(type(x) is float for x in tensors_gamma_lambda[5:])
    ),
    ("ppo_gae", "value_loss"): lambda values, returns, old_values=None, clip_coef=None: (
        _losses(values, returns, grads=(True, False))
        and (old_values is None or _losses(values, old_values, grads=(True, False)))
        and type(clip_coef) is float
    ),
    ("ppo_continuous", "Agent.get_action_and_value"): lambda self, x, action=None: (
        _is(x, torch.float32, 2)
        and (action is None or (_is(action, torch.float32, 2) and len(action) == len(x)))
    ),
    ("ppo_continuous", "RunningNorm.update"): lambda self, x: (
        _is(x, torch.float32, 2) and x.shape[1:] == self.mean.shape
    ),
    ("ppo_continuous", "adapted_lr"): lambda *numbers: all(type(x) is float for x in numbers),
}


def test_every_case_keeps_to_the_contract_the_docstring_states():
    """A right answer that relies on train()'s contract passes: each case's inputs are checked
    against it on the way in to the script's own function."""
    for (rung, name), keeps in CONTRACTS.items():
        own, broken = runner.find(exercise_cases.script(rung), name), []

        def strict(*args, own=own, keeps=keeps, broken=broken, **kwargs):
            if not keeps(*args, **kwargs):
                broken.append(args)
            return own(*args, **kwargs)

        passed, line = verdicts.check(rung, name, strict)
        assert passed and broken == [], (line, broken[:1])


@pytest.mark.parametrize(
    "loop",
    [
        "    while True:\n        pass\n",
        "    while True:\n        try:\n            x = 0\n"
        "        except Exception:\n            pass\n",
    ],
    ids=["a loop", "a loop that catches Exception"],
)
def test_a_function_that_never_returns_fails_its_time_limit_and_the_grader_goes_on(
    loop, tmp_path, capsys
):
    source = "def discounted_returns(rewards, dones, gamma, last_value=None):\n" + loop
    path = tmp_path / "reinforce.py"
    path.write_text(with_function("reinforce", "discounted_returns", source))
    started = time.monotonic()
    code, lines = grade("reinforce", path, capsys, "--time-limit", "2")
    # The limit is CPU time, so how long this takes depends on the machine's load; only a
    # grader that waits for the child forever reaches HANG.
    assert time.monotonic() - started < HANG and code == 1, lines
    assert lines[0] == (
        "✗ discounted_returns: one env, (T, N) = (3, 1): still running after 2 s of CPU "
        "time, the time limit (a loop that never ends?)"
    )
    assert lines[1].startswith("✓ reinforce_loss: ") and lines[2] == "1 of 2 functions passed"


CPU_LOOPS = {
    "a loop": "    while True:\n        pass\n",
    "a loop in a process it waits for": (
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        while True:\n            pass\n"
        "    os.waitpid(pid, 0)\n"
    ),
}


@pytest.mark.parametrize("loop", list(CPU_LOOPS))
def test_a_loop_is_ended_once_it_has_used_its_cpu_time(loop, tmp_path):
    """The time limit counts the CPU time the sandbox used, every process of it: a loop, or a
    process that the function waits for, is killed once it has used its limit, a few polls
    late at most."""
    text = wrong_file("reinforce", "discounted_returns", CPU_LOOPS[loop])
    bwrap = sandbox.sandbox()
    child = session.Session(1.0, base.MEMORY_LIMIT, bwrap, [base.RECEIVED_LIMIT])
    try:
        child.rung = "reinforce"
        loading = child.deadline(30.0, time.monotonic() + 120, "late")
        assert child.ask(["load", session.hand_in("reinforce", text)], loading, "loaded")[1] is None
        deadline = child.deadline(1.0, time.monotonic() + 120, "late")
        with pytest.raises(base.Stop, match="^time$"):
            session.grade_function(child, "reinforce", "discounted_returns", deadline)
        assert deadline.cpu <= child.spent < deadline.cpu + 0.5, (deadline.cpu, child.spent)
    finally:
        child.close()


SLEEPS = """    if not hasattr(time, "slept"):  # once: 1.5 s on the clock, no CPU time
        time.slept = time.sleep(1.5)
"""


def test_a_sleep_costs_no_cpu_time_and_the_wall_clock_ends_one_that_never_wakes(
    tmp_path, capsys, monkeypatch
):
    """--time-limit 1: discounted_returns sleeps 1.5 s, past its limit on the clock but with
    no CPU time used, and passes; reinforce_loss sleeps for ever and is ended by the backstop,
    5 times the limit here (10 times and 5 s by default), with a line that says so."""
    monkeypatch.setattr(session, "WALL_TIMES", 5)
    monkeypatch.setattr(session, "WALL_MORE", 0.0)

    def own_and_head(name):
        source = inspect.getsource(runner.find(exercise_cases.script("reinforce"), name))
        return source, source[: source.index('"""', source.index('"""') + 3) + 3] + "\n"

    returns, head = own_and_head("discounted_returns")
    text = with_function("reinforce", "discounted_returns", returns.replace(head, head + SLEEPS))
    _, head = own_and_head("reinforce_loss")
    text = with_function("reinforce", "reinforce_loss", head + "    time.sleep(600)\n", text)
    path = tmp_path / "reinforce.py"
    path.write_text("import time\n\n" + text)
    code, lines = grade("reinforce", path, capsys, "--time-limit", "1")
    assert code == 1 and lines[0].startswith("✓ discounted_returns: "), lines
    assert lines[1].startswith("✗ reinforce_loss: ") and lines[1].endswith(
        ": still running after 5 s on the clock, having used less than 1 s of CPU time (a "
        "sleep, or a wait that never ends?)"
    ), lines
    assert lines[2] == "1 of 2 functions passed"


def test_right_answers_pass_beside_two_cpu_burners(capsys):
    """The time limit counts the CPU time of the student's code, not the machine's load: two
    busy loops beside the grader change no verdict (on the clock, a shared server's load
    failed right answers)."""
    burner = [sys.executable, "-c", "while True: pass"]
    burners = [subprocess.Popen(burner) for _ in range(2)]
    try:
        for rung in ("reinforce", "ppo_continuous"):
            code, lines = grade(rung, ROOT / f"{rung}.py", capsys, "--time-limit", "2")
            assert code == 0 and all(line.startswith("✓ ") for line in lines[:-1]), lines
    finally:
        for process in burners:
            process.kill()
            process.wait()


def test_the_graders_help_says_the_time_limit(capsys):
    with pytest.raises(SystemExit) as exc:
        command_line.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert exc.value.code == 0 and "--time-limit SECONDS" in text
    assert f"Each function gets {base.TIME_LIMIT:g} s for all its cases" in text
    assert 1 <= base.TIME_LIMIT <= 10 and "--folder DIR" in text and "--csv PATH" in text
    assert "DIR/NAME.py or DIR/NAME.ipynb or a folder DIR/NAME/" in text  # what it grades


def test_a_teacher_grades_a_folder_in_one_command_a_row_per_student(tmp_path):
    """Three students: one right, one wrong (min in the clipped value loss), one blank; each
    graded in a process of their own."""
    import csv

    folder = tmp_path / "handed_in"
    solved = exercise_maker.exercise("ppo_gae", solved=True)
    for student, text in [
        ("ada", solved),
        ("bob", solved.replace("loss = torch.max(loss,", "loss = torch.min(loss,")),
    ]:
        (folder / student).mkdir(parents=True)
        (folder / student / "ppo_gae.py").write_text(text)
    shutil.copy(ROOT / "exercises" / "ppo_gae.py", folder / "cy.py")  # a file, not a folder
    table = tmp_path / "grades.csv"
    argv = ["ppo_gae", "--folder", str(folder), "--csv", str(table)]
    done = cli([str(ROOT / "exercises" / "check.py"), *argv], tmp_path)
    assert done.returncode == 1 and done.stderr == "", done.stderr
    assert done.stdout.splitlines() == [
        "student  passed      not passed",
        "ada      2 of 2",
        "bob      1 of 2      ✗ value_loss",
        "cy       0 of 2      · compute_gae, · value_loss",
    ]
    rows = list(csv.reader(table.open()))
    assert rows[0] == ["student", "passed", "functions", "compute_gae", "value_loss"]
    assert [row[:3] for row in rows[1:]] == [["ada", "2", "2"], ["bob", "1", "2"], ["cy", "0", "2"]]
    assert rows[2][4].startswith("✗ value_loss: clipped: ")
    assert rows[2][4].endswith(": min where the clipped value loss needs max")
    assert rows[3][3:] == ["· compute_gae: not written yet", "· value_loss: not written yet"]


@pytest.mark.parametrize(
    "text, says",
    [("def broken(:\n", "SyntaxError"), ("import no_such_module\n", "ModuleNotFoundError")],
)
def test_a_file_the_grader_cannot_read_is_one_line_and_status_2(text, says, tmp_path, capsys):
    path = tmp_path / "ppo.py"
    path.write_text(text)
    code, lines = grade("ppo", path, capsys)
    assert code == 2 and len(lines) == 1 and says in lines[0] and "check.py: error:" in lines[0]
    code, lines = grade("no_such_rung", path, capsys)
    assert code == 2 and lines == [
        "check.py: error: unknown rung 'no_such_rung': one of reinforce, vpg, ppo, ppo_gae, "
        "ppo_continuous"
    ]


def exercise_copy(tmp_path, rung, text):
    """exercises/RUNG.py with `text`, in a folder of its own beside links to the grader."""
    folder = tmp_path / "exercises"
    folder.mkdir()
    for name in ("check.py", "cases.py"):
        (folder / name).symlink_to(ROOT / "exercises" / name)
    (folder / f"{rung}.py").write_text(text)
    return folder / f"{rung}.py"


def test_an_exercise_file_trains_the_script_with_the_students_functions(tmp_path):
    rung = "ppo_gae"
    blank = cli([str(ROOT / "exercises" / f"{rung}.py")], tmp_path)
    assert blank.returncode == 1 and blank.stdout == "", blank.stderr
    assert blank.stderr.strip() == (
        "ppo_gae.py: error: write compute_gae first, then check it: "
        "python exercises/check.py ppo_gae"
    )
    # Solved, with a compute_gae that counts its calls: the script's train() runs with it.
    solved = exercise_maker.exercise(rung, solved=True).replace(
        "    advantages = torch.zeros_like(rewards)\n",
        "    print('student compute_gae')\n    advantages = torch.zeros_like(rewards)\n",
    )
    path = exercise_copy(tmp_path, rung, solved)
    argv = flags("--total-timesteps 2048 --eval-episodes 1 --run-dir run")
    done = cli([str(path), *argv], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("student compute_gae") == 4  # 2048 / 512 steps a rollout
    assert "evaluation over 1 episode: " in done.stdout


def test_an_exercise_file_kept_in_another_folder_says_where_it_trains(tmp_path):
    # A student's answer, checked with check.py --file from anywhere, then run where it was
    # kept: "ModuleNotFoundError: No module named 'check'" and its traceback.
    (tmp_path / "mine").mkdir()
    path = tmp_path / "mine" / "vpg.py"
    path.write_text(exercise_maker.exercise("vpg", solved=True))
    done = cli([str(path), *flags("--total-timesteps 512")], tmp_path)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "vpg.py: error: it trains only beside exercises/check.py\n"
    assert list((tmp_path / "mine").iterdir()) == [path]  # no run began


def test_an_exercise_file_answers_help_blank_and_stops_a_broken_run_in_one_line(tmp_path):
    rung = "ppo_gae"
    helped = cli([str(ROOT / "exercises" / f"{rung}.py"), "--help"], tmp_path)  # blanks unwritten
    assert helped.returncode == 0 and helped.stderr == "", helped.stderr
    assert helped.stdout.startswith("usage: ppo_gae.py") and "--gae-lambda" in helped.stdout
    # A compute_gae that returns the advantages alone: train() cannot unpack it.
    broken = exercise_maker.exercise(rung, solved=True).replace(
        "    return advantages, advantages + values\n", "    return advantages\n"
    )
    path = exercise_copy(tmp_path, rung, broken)
    argv = flags("--total-timesteps 512 --eval-episodes 0 --run-dir run")
    done = cli([str(path), *argv], tmp_path)
    assert done.returncode == 1 and done.stderr.strip() == (
        "ppo_gae.py: error: training stopped: ValueError: too many values to unpack (expected 2); "
        "check your functions: python exercises/check.py ppo_gae"
    )
    # The script's own refusal is its line, not the student's functions' fault.
    (tmp_path / "right").mkdir()
    right = exercise_copy(tmp_path / "right", rung, exercise_maker.exercise(rung, solved=True))
    done = cli([str(right), *flags("--env-id Pendulum-v1 --run-dir run2")], tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("ppo_gae.py: error: "), done.stderr
    assert "check your functions" not in done.stderr and len(done.stderr.splitlines()) == 1


EXERCISES_NOTEBOOK = ROOT / "exercises.ipynb"


def run_notebook(nb, monkeypatch, path):
    """Every cell of nb in a fresh kernel of this interpreter, quick mode; nb gets the outputs."""
    nbclient = pytest.importorskip("nbclient")
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from jupyter_client.manager import KernelManager

    class ThisInterpreter(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
            return KernelSpec(argv=argv, display_name="this", language="python")

    monkeypatch.setenv("NOTEBOOK_QUICK", "1")
    km = KernelManager(kernel_spec_manager=ThisInterpreter(), kernel_name="python3")
    resources = {"metadata": {"path": str(path)}}
    nbclient.NotebookClient(nb, km=km, timeout=HANG, resources=resources).execute()
    return nb


def solved_notebook():
    """exercises.ipynb with every solution cell's blank filled with the script's own code."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(EXERCISES_NOTEBOOK, as_version=4)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "code":  # not the answers in words
            rung, name = meta["grade_id"].split("-", 1)
            source = exercise_maker.exercise(rung, solved=True)
            tops = exercise_maker.ast.parse(source).body
            (node,) = [n for n in tops if getattr(n, "name", None) == name]
            solved = "\n".join(source.splitlines()[node.lineno - 1 : node.end_lineno])
            keep = cell.source.split("\n\n\n")[-1]  # RUNG.NAME = NAME: into the rung's namespace
            cell.source = f"{solved}\n\n\n{keep}"
    return nb


def printed(nb):
    return "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))


def check_cells_show_one_line_each(nb):
    """Each check cell's output is its verdict line alone: printed, no bare True or False."""
    checks = [c for c in nb.cells if c.source.startswith("notebook_check(")]
    outputs = [[(o.output_type, o.get("text", "")) for o in c.outputs] for c in checks]
    # a busy kernel may send one print as two stream messages (the line, then its "\n")
    odd = [out for out in outputs if not out or {kind for kind, _ in out} != {"stream"}]
    odd += [out for out in outputs if "".join(text for _, text in out).count("\n") != 1]
    assert len(checks) == 10 and odd == [], odd


def test_exercises_notebook_as_committed_says_what_to_write_first(monkeypatch, tmp_path):
    """No outputs committed; run, each check says "not written yet" and each training cell what
    to write first, in one line, and no cell gives error output."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(EXERCISES_NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert all(
        not c.get("outputs") and not c.get("execution_count")
        for c in nb.cells
        if c.cell_type == "code"
    )
    run_notebook(nb, monkeypatch, ROOT)
    assert notebook_problems(nb) == []
    check_cells_show_one_line_each(nb)
    text = printed(nb)
    names = [name for blanks in exercise_cases.EXERCISES.values() for name in blanks]
    assert text.count("not written yet") == len(names)
    assert text.count(" first (and check it): then this cell trains ") == 6  # ppo.py twice
    assert "Traceback" not in text and "mean return" not in text


def a_solved_run_passes_and_learns(nb):
    """exercises.ipynb filled from the scripts, as run (by nbgrader's autograde: the test
    below): every check a ✓, and every rung learns, even in quick mode."""
    assert notebook_problems(nb) == []
    check_cells_show_one_line_each(nb)
    text = printed(nb)
    names = [name for blanks in exercise_cases.EXERCISES.values() for name in blanks]
    assert text.count("✓ ") == len(names) and "✗" not in text and "not written" not in text
    moved = re.findall(
        r"(\w+)\.py with your functions: mean return, first 20 episodes "
        r"(-?[\d.]+), last 20 (-?[\d.]+)",
        text,
    )
    assert [rung for rung, _, _ in moved] == [*exercise_cases.EXERCISES][:3] + ["ppo"] + [
        *exercise_cases.EXERCISES
    ][3:], text  # ppo.py twice: clipped, then with --clip-coef 1e9
    del moved[3]  # the unclipped run: the student compares, nothing is promised
    for _rung, first, last in moved:  # every rung learns, even in quick mode
        first, last = float(first), float(last)  # CartPole: returns doubled; Pendulum: +100
        assert last > 2 * first if first > 0 else last > first + 100, moved


def test_each_rung_of_the_exercises_notebook_keeps_its_functions_apart(capsys):
    """Every solved cell run in one kernel's globals, ppo_gae's after ppo's: the global
    value_loss is ppo_gae's, and ppo's check, run again, still checks ppo's own."""
    from types import SimpleNamespace

    nb = solved_notebook()
    kernel = dict(torch=torch, nn=torch.nn, np=np, SimpleNamespace=SimpleNamespace)
    kernel |= dict(Normal=torch.distributions.Normal, Categorical=torch.distributions.Categorical)
    (imports,) = [c.source for c in nb.cells if "from check import" in c.source]
    exec(next(line for line in imports.splitlines() if line.startswith("reinforce, vpg")), kernel)
    for i, cell in enumerate(nb.cells):  # the solved functions, and the helpers beside them
        skip = ("notebook_check(", "notebook_train(", "%matplotlib", "LADDER_ROOT")
        if cell.cell_type == "code" and not any(s in cell.source for s in skip):
            name = f"<cell-{i}>"  # as IPython keeps a cell's source: the grader reads it there
            linecache.cache[name] = (len(cell.source), None, cell.source.splitlines(True), name)
            exec(compile(cell.source, name, "exec"), kernel)
    assert kernel["value_loss"] is kernel["ppo_gae"].value_loss
    assert list(inspect.signature(kernel["ppo"].value_loss).parameters) == ["values", "returns"]
    (cell,) = [c.source for c in nb.cells if c.source.startswith('notebook_check("ppo", "value')]
    assert cell == 'notebook_check("ppo", "value_loss", ppo)'
    capsys.readouterr()  # what the cells worked by hand printed
    assert notebook.notebook_check("ppo", "value_loss", kernel["ppo"]) is None  # no bare True
    line = capsys.readouterr().out
    assert line.startswith("✓ value_loss: 4 cases passed") and "against ppo.py's own" in line


def test_a_notebook_run_that_breaks_stops_in_one_line_and_the_graders(
    tmp_path, monkeypatch, capsys
):
    """A wrong answer either learns worse or stops its run: one line, then the grader's."""
    from types import SimpleNamespace

    def compute_gae(rewards, values, next_values, terminated, episode_end, gamma, gae_lambda):
        return rewards + gamma * (1 - terminated) * next_values - values  # no tuple

    monkeypatch.chdir(tmp_path)  # its runs/
    answers = SimpleNamespace(compute_gae=compute_gae, value_loss=ppo_gae.value_loss)
    assert notebook.notebook_train("ppo_gae", answers, quick=True) is None
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-2] == "ppo_gae.py stopped: ValueError: too many values to unpack (expected 2)"
    assert lines[-1].startswith("✗ compute_gae: plain: (advantages, returns), one env: ")
    assert not any("Traceback" in line or "with your functions" in line for line in lines)


def test_nbgrader_releases_and_autogrades_the_exercises_notebook(tmp_path, monkeypatch):
    """nbgrader itself: generate_assignment keeps each blank's signature and docstring, and
    autograde gives a solved copy every point and a blank one none; the solved copy, as
    autograde ran it, passes every check and learns."""
    pytest.importorskip("nbgrader")
    nbformat = pytest.importorskip("nbformat")
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config

    course = tmp_path / "course"
    (course / "source" / "hw").mkdir(parents=True)
    shutil.copy(EXERCISES_NOTEBOOK, course / "source" / "hw" / "exercises.ipynb")
    config = Config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.course_id = "ladder"
    config.ExecutePreprocessor.timeout = 300
    monkeypatch.setenv("NOTEBOOK_QUICK", "1")
    monkeypatch.setenv("LADDER_ROOT", str(ROOT))  # autograde runs a copy in a folder of its own
    beside_python(monkeypatch)  # nbgrader runs `alembic` by name
    monkeypatch.chdir(course)
    api = NbGraderAPI(config=config)
    assert api.generate_assignment("hw")["success"]
    released = nbformat.read(course / "release" / "hw" / "exercises.ipynb", as_version=4)
    solution = [c for c in released.cells if c.metadata.get("nbgrader", {}).get("solution")]
    code = [c for c in solution if c.cell_type == "code"]
    assert len(code) == 10 and all(
        '"""' in c.source and "NotImplementedError" in c.source for c in code
    )
    # the answers in words: one "predict, then run" a rung and its questions, manually graded,
    # a point each; released with nbgrader's stub where the model answer was
    words = [c for c in solution if c.cell_type == "markdown"]
    manual = 5 + sum(len(q) for q in exercise_maker.QUESTIONS.values())
    assert len(words) == manual == 19 and all(c.metadata.nbgrader.points == 1 for c in words)
    assert all("YOUR ANSWER HERE" in c.source and "model answer" not in c.source for c in words)
    patched = nbformat.from_dict(released)  # a solution cell patches the grader: no point
    (cell,) = [
        c
        for c in patched.cells
        if c.metadata.get("nbgrader", {}).get("grade_id") == ("reinforce-discounted_returns")
    ]
    cell.source = PATCH + cell.source.replace("raise NotImplementedError()", "return None")
    for student, nb in (("solved", solved_notebook()), ("blank", released), ("patched", patched)):
        folder = course / "submitted" / student / "hw"
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / "exercises.ipynb")
        assert api.autograde("hw", student)["success"], student
    # The solved copy as autograde ran it, with its outputs: the notebook a student fills from
    # the scripts passes every check and learns (one run of it serves both tests)
    a_solved_run_passes_and_learns(
        nbformat.read(course / "autograded" / "solved" / "hw" / "exercises.ipynb", as_version=4)
    )
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        scores = {s: gradebook.find_submission("hw", s).score for s in ("solved", "blank")}
        assert gradebook.find_submission("hw", "patched").score == 0
        total = gradebook.find_assignment("hw").max_score
    # autograde scores the 10 checks; the 19 answers in words wait for a teacher (0 until then)
    assert total == 10 + manual and scores == {"solved": 10, "blank": 0}, scores


# ----------------------------------------------------------------------------------------------
# 2. The courses' own numbers: the CartPole homework's tests and the line-world MP's check
#     in the grader, the questions in words
# ----------------------------------------------------------------------------------------------


def test_the_grader_runs_the_homework_tests_as_the_courses_own():
    """One case each for reinforce_loss, vpg_loss and ppo_loss, named as the course's, that a
    wrong loss fails: a sign, a baseline left out, the clip left out."""
    for rung, name in (("reinforce", "reinforce_loss"), ("vpg", "vpg_loss"), ("ppo", "ppo_loss")):
        (case,) = [c for c in exercise_cases.EXERCISES[rung][name][0]() if c.kind == "course"]
        assert "course's own test" in case.label and case.tolerance == 1e-4
        assert case.expected == exercise_cases.HOMEWORK[rung]
        right = verdicts.attempt(case, exercise_cases.own(rung, name))
        assert verdicts.passes(case, right), right
        ok, line = verdicts.check(rung, name, exercise_cases.own(rung, name))
        assert ok and "1 the CartPole course's own test" in line, line

    def case(rung, name):
        (found,) = [c for c in exercise_cases.EXERCISES[rung][name][0]() if c.kind == "course"]
        return found

    def wrong_sign(logprobs, returns):
        return (logprobs * returns).mean()

    def no_baseline(logprobs, values, returns):
        return -(logprobs * returns).mean(), ((returns - values) ** 2).mean()

    def no_clip(new_logprobs, old_logprobs, advantages, clip_coef):
        return -((new_logprobs - old_logprobs).exp() * advantages).mean()

    for rung, name, wrong in (
        ("reinforce", "reinforce_loss", wrong_sign),
        ("vpg", "vpg_loss", no_baseline),
        ("ppo", "ppo_loss", no_clip),
    ):
        c = case(rung, name)
        kind, got = verdicts.attempt(c, wrong)
        assert kind == "ok" and abs(got - c.expected) > 1e-3 and not verdicts.passes(c, (kind, got))


def test_the_exercises_questions_in_words_are_listed_for_teachers():
    """Each rung of exercises.ipynb: a "predict, then run" before its run and 2 or 3 questions
    after it, each a manually graded answer cell whose model answer sits in the solution region;
    exercises/README.md lists every question as the notebook asks it."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(EXERCISES_NOTEBOOK, as_version=4)
    readme = " ".join((ROOT / "exercises" / "README.md").read_text().split())
    for rung in exercise_cases.EXERCISES:
        questions = exercise_maker.QUESTIONS[rung]
        assert 2 <= len(questions) <= 3
        for question, model in [exercise_maker.PREDICT[rung], *questions]:
            assert " ".join(question.split()) in readme, question
            (i,) = [k for k, c in enumerate(nb.cells) if c.source.endswith(question)]
            answer = nb.cells[i + 1]
            meta = answer.metadata["nbgrader"]
            assert answer.cell_type == "markdown" and meta["solution"] and meta["points"] == 1
            region = answer.source.split("### BEGIN SOLUTION")[1].split("### END SOLUTION")[0]
            assert model in region
        run, *unclipped = [
            k for k, c in enumerate(nb.cells) if f'notebook_train("{rung}"' in c.source
        ]  # ppo's run, then the same without the clip, beside it
        assert [nb.cells[k].source.split(")")[0] for k in unclipped] == (
            ['unclipped = notebook_train("ppo", ppo, QUICK, ["--clip-coef", "1e9"]']
            * (rung == "ppo")
        )
        assert nb.cells[run - 2].source.startswith("**Predict, then run")
        assert nb.cells[run - 1].metadata["nbgrader"]["grade_id"] == f"predict-{rung}"


# ----------------------------------------------------------------------------------------------
# 3. A grader fit for grades: the student's code runs in a child that sends back data alone;
#    the verdict is the grader's (issue 60)
# ----------------------------------------------------------------------------------------------
PATCH = """import sys

for module in list(sys.modules.values()):  # the grader's passes(), wherever it is loaded
    if hasattr(module, "passes"):
        module.passes = lambda case, answer: True
"""
CASE_1 = "one env, (T, N) = (3, 1): rewards=[1.0, 2.0, 3.0], dones=[False, False, False], "
CASE_1 += "gamma=0.5, last_value=None"
GAE_1 = "plain: (advantages, returns), one env: "
TIMED_OUT = (
    "one env, (T, N) = (3, 1): still running after 2 s of CPU time, the time limit (a loop that "
    "never ends?)"
)
WHY = {  # (rung, name, its body, or code before the file) -> the start and end of its ✗ line
    "no return": (
        "reinforce",
        "discounted_returns",
        "    returns = rewards.clone()\n",
        f"{CASE_1}: returned None, where train() needs a tensor of shape (3, 1)"
        " (a missing return?)",
    ),
    "no return, compute_gae": (
        "ppo_gae",
        "compute_gae",
        "    advantages = rewards - values\n",
        "(a missing return?)",
    ),
    "no return, vpg_loss": ("vpg", "vpg_loss", "    pass\n", "(a missing return?)"),
    "KeyboardInterrupt": (
        "reinforce",
        "discounted_returns",
        "    raise KeyboardInterrupt\n",
        f"{CASE_1}: raised KeyboardInterrupt",
    ),
    "GeneratorExit": (
        "reinforce",
        "reinforce_loss",
        "    raise GeneratorExit\n",
        "the loss: logprobs=[-1.0, -2.0], returns=[3.0, -1.0]: raised GeneratorExit",
    ),
    "sys.exit(0)": (
        "reinforce",
        "discounted_returns",
        "    sys.exit(0)\n",
        f"{CASE_1}: raised SystemExit: 0",
    ),
    "os._exit(0)": (
        "reinforce",
        "discounted_returns",
        "    os._exit(0)\n",
        "one env, (T, N) = (3, 1): ended its process (exit status 0)",
    ),
    "a numpy array": (
        "reinforce",
        "discounted_returns",
        "    return rewards.numpy().copy()\n",
        f"{CASE_1}: returned a numpy array of shape (3, 1), where train() needs a tensor of "
        "shape (3, 1)",
    ),
    "a float": (
        "reinforce",
        "reinforce_loss",
        "    return float(-(logprobs * returns).mean())\n",
        "returned a float, where train() needs a tensor of shape ()",
    ),
    "a tuple of 3": (
        "ppo_gae",
        "compute_gae",
        "    return rewards, rewards, rewards\n",
        "returned a tuple of 3 (a tensor of shape (3, 1), a tensor of shape (3, 1), a tensor of "
        "shape (3, 1)), where train() needs a tuple of 2 (a tensor of shape (3, 1), a tensor of "
        "shape (3, 1))",
    ),
    "an input changed in place": (
        "ppo_gae",
        "compute_gae",
        "    advantages = rewards + gamma * (1 - terminated) * next_values - values\n"
        "    return advantages, values.add_(advantages)\n",
        f"{GAE_1}rewards=[1.0, 2.0, 3.0], values=[2.0, 1.0, 2.0], next_values=[1.0, 2.0, 4.0], "
        "terminated=[0.0, 0.0, 0.0], episode_end=[0.0, 0.0, 0.0], gamma=0.5, gae_lambda=0.5: "
        "changed its input values in place (train() uses it again)",
    ),
    "V of shape (B,)": (
        "ppo_continuous",
        "Agent.get_action_and_value",
        "        mean = self.actor_mean(x)\n"
        "        dist = Normal(mean, self.actor_logstd.exp().expand_as(mean))\n"
        "        action = dist.sample() if action is None else action\n"
        "        logp, entropy = dist.log_prob(action).sum(-1), dist.entropy().sum(-1)\n"
        "        return action, logp, entropy, self.critic(x).flatten()\n",
        "returned a tensor of shape (2,) as part 4, where train() needs a tensor of shape (2, 1)",
    ),
    "a loop that catches BaseException": (
        "reinforce",
        "discounted_returns",
        "    while True:\n        try:\n            x = 0\n"
        "        except BaseException:\n            pass\n",
        TIMED_OUT,
    ),
    "a loop in C": (
        "reinforce",
        "discounted_returns",
        "    return sum(range(10**11))\n",
        TIMED_OUT,
    ),
    "a thread left running": (  # it takes all the memory the child may add: reinforce_loss
        "reinforce",  # passes in a child of its own, as it would not beside the thread (which
        "discounted_returns",  # may also leave this function no memory: its line says either)
        "    def take():\n        held = []\n        with contextlib.suppress(RuntimeError):\n"
        "            while True:\n                held.append(torch.empty(2**22))\n"
        "        while True:\n            time.sleep(1)\n\n"
        "    if threading.active_count() == 1:\n"
        "        threading.Thread(target=take, daemon=True).start()\n"
        "    return rewards * 0\n",
        "",
    ),
    "70,000 lists": (  # more than any answer needs; 3.9 million took 14 s and 1 GB to read
        "reinforce",
        "discounted_returns",
        "    return [[]] * 70_000\n",
        "one env, (T, N) = (3, 1): sent what the grader cannot read",
    ),
    "a tensor of no elements in 10**9 rows": (  # a Python list a row, read in the grader
        "reinforce",
        "discounted_returns",
        "    return torch.empty(10**9, 0)\n",
        "one env, (T, N) = (3, 1): sent what the grader cannot read",
    ),
}


def wrong_file(rung, name, body):
    """RUNG.py solved by the script, but NAME's body replaced by body."""
    source = inspect.getsource(runner.find(exercise_cases.script(rung), name))
    head = source[: source.index('"""', source.index('"""') + 3) + 3] + "\n"
    imports = "import contextlib\nimport os\nimport sys\nimport threading\nimport time\n\n"
    return imports + with_function(rung, name, head + body)


# What ends or outlives the child, graded as the grader starts it (the others are answers)
ENDS_THE_CHILD = ("os._exit(0)", "a loop that catches BaseException", "a loop in C")
ENDS_THE_CHILD += ("a thread left running",)


@pytest.mark.parametrize("why", list(WHY))
def test_every_failure_is_a_line_and_the_other_functions_are_still_graded(
    why, tmp_path, capsys, request
):
    if why not in ENDS_THE_CHILD:
        request.getfixturevalue("forked")
    rung, name, body, says = WHY[why]
    path = tmp_path / f"{rung}.py"
    path.write_text(wrong_file(rung, name, body))
    code, lines = grade(rung, path, capsys, "--time-limit", "2")
    assert code == 1, lines
    (failed,) = [line for line in lines[:-1] if not line.startswith("✓")]  # the others pass
    assert failed.startswith(f"✗ {name}: ") and failed.endswith(says), failed
    n = len(exercise_cases.EXERCISES[rung])
    assert lines[-1] == f"{n - 1} of {n} function{'s' * (n > 1)} passed", lines
    assert not any("Traceback" in line for line in lines)


@pytest.mark.parametrize(
    "top, says",
    [
        (PATCH, None),  # the grader's passes() replaced in the child: nothing changes here
        ("import os\n\nos._exit(0)\n", "ended its process (exit status 0)"),
        ("import sys\n\nsys.exit(0)\n", "SystemExit: 0"),
    ],
    ids=["passes patched", "os._exit(0)", "sys.exit(0)"],
)
def test_what_a_file_does_at_its_top_cannot_make_a_pass(top, says, tmp_path, capsys):
    path = tmp_path / "reinforce.py"
    path.write_text(
        top
        + (ROOT / "exercises" / "reinforce.py")
        .read_text()
        .replace(
            '    raise NotImplementedError("loop t from the last step back; reset at each '
            "episode's end\")\n",
            "    return None\n",
        )
    )
    code, lines = grade("reinforce", path, capsys)
    if says is None:
        assert (
            code == 1
            and lines[0].startswith("✗ discounted_returns: ")
            and lines[1:]
            == [
                "· reinforce_loss: not written yet",
                "0 of 2 functions passed",
            ]
        ), lines
    else:
        assert code == 2 and lines == [f"check.py: error: cannot load {path}: {says}"], lines


def test_the_line_world_mps_check_is_a_case_of_its_own():
    (case,) = [
        c
        for c in exercise_cases.EXERCISES["reinforce"]["discounted_returns"][0]()
        if "line-world" in c.label
    ]
    assert case.kind == "course" and case.tolerance == 1e-4
    assert [g for (g,) in case.expected][:11] == exercise_cases.LINE_WORLD_RETURNS
    assert verdicts.passes(
        case, verdicts.attempt(case, exercise_cases.own("reinforce", "discounted_returns"))
    )

    def no_reset(rewards, dones, gamma, last_value=None):
        return exercise_cases._no_reset(rewards, dones, gamma)

    assert not verdicts.passes(case, verdicts.attempt(case, no_reset))


# ----------------------------------------------------------------------------------------------
#    the grader in a sandbox (issue 64): each attack of a dishonest class, written fresh
# ----------------------------------------------------------------------------------------------
needs_sandbox = pytest.mark.skipif(
    sandbox.sandbox() is None,
    reason="bubblewrap cannot start here (sudo apt-get install bubblewrap; .ci/run installs it)",
)


def blank_but(rung, name, body, top=""):
    """exercises/RUNG.py as make.py writes it (every function blank) with NAME's body replaced
    by `body`, and `top` before it all."""
    return top + wrong_file(rung, name, body).replace(
        exercise_maker.exercise(rung, solved=True), exercise_maker.exercise(rung)
    )


FORGER = """import gc, importlib.util, inspect, os, sys
import torch

ROOT = {root!r}


def forged():
    \"\"\"What a forger finds: a case's expected value, or the reference script's answer.\"\"\"
    found = [f.frame.f_locals[k] for f in inspect.stack() for k in ("case", "expected")
             if k in f.frame.f_locals]
    found += [o for o in gc.get_objects() if type(o).__name__ == "Case"]
    for module in ("cases", "check", "ppo_gae", "reinforce"):
        if module in sys.modules or importlib.util.find_spec(module) is not None:
            found.append(module)
    places = [ROOT, os.path.join(ROOT, "exercises"), os.getcwd(), "/tmp"]
    for top in ("/work", "/root", "/home", "/tmp", "/srv", "/opt"):
        for folder, _, files in os.walk(top):
            places += [folder] if "reinforce.py" in files or "cases.py" in files else []
    found += [p for p in places if os.path.exists(os.path.join(p, "reinforce.py"))
              and os.path.exists(os.path.join(p, "cases.py"))]
    return found
"""
FORGE_BODY = """    found = forged()
    if found:  # a forger's way to a pass: the script's own answer
        for place in found:
            if isinstance(place, str) and os.path.isdir(place):
                script = os.path.join(place, "reinforce.py")
                spec = importlib.util.spec_from_file_location("own", script)
                own = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(own)
                return own.discounted_returns(rewards, dones, gamma, last_value)
    pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    raise RuntimeError(f"found {{found}}, processes {{pids}}")
"""


@needs_sandbox
def test_a_forger_finds_no_expected_value_no_reference_script_and_no_other_process(
    tmp_path, capsys
):
    """The child holds no case, and reaches no repository: a file that searches the stack, the
    heap, the modules and the disk for an expected value or the script's own answer finds
    nothing, and sees two processes, the sandbox's init and itself."""
    path = tmp_path / "reinforce.py"
    top = FORGER.format(root=str(ROOT))
    path.write_text(blank_but("reinforce", "discounted_returns", FORGE_BODY.format(), top))
    code, lines = grade("reinforce", path, capsys)
    assert code == 1 and lines[0].startswith("✗ discounted_returns: one env, (T, N) = (3, 1): ")
    assert lines[0].endswith("raised RuntimeError: found [], processes [1, 2]"), lines


@needs_sandbox
def test_no_file_reaches_the_repository_the_grader_or_another_student(tmp_path):
    """A student who writes to the reference script, another's hand-in and the teacher's CSV,
    signals every process it can see, and leaves a process behind with its parent-death signal
    cleared: nothing outside their sandbox changes, and nothing of theirs is left running."""
    folder, table = tmp_path / "handed_in", tmp_path / "grades.csv"
    folder.mkdir()
    solved = exercise_maker.exercise("ppo_gae", solved=True)
    targets = [ROOT / "ppo_gae.py", folder / "bea.py", table, ROOT / "exercises" / "cases.py"]
    attack = f"""import ctypes, os, signal, subprocess, sys
for path in {[str(t) for t in targets]!r}:
    try:
        with open(path, "a") as file:
            file.write("\\nraise SystemExit('forged')\\n")
    except OSError:
        pass
for pid in [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
if os.fork() == 0:
    os.setsid()
    ctypes.CDLL(None).prctl(1, 0)  # PR_SET_PDEATHSIG: none
    os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(4242.5)"])
"""
    (folder / "aaron.py").write_text(attack + solved)
    (folder / "bea.py").write_text(solved)
    before = {path: path.read_bytes() for path in targets if path.exists()}
    argv = ["ppo_gae", "--folder", str(folder), "--csv", str(table)]
    done = cli([str(ROOT / "exercises" / "check.py"), *argv], tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.splitlines()[1:] == ["aaron    2 of 2", "bea      2 of 2"]
    assert all(path.read_bytes() == data for path, data in before.items())
    time.sleep(1)
    assert table.read_text().startswith("student,passed,functions,")
    left = [p for p in Path("/proc").glob("[0-9]*") if b"4242.5" in read_or_empty(p / "cmdline")]
    assert left == [], "a process of the student's outlived their grading"


SEEN = """import glob
import importlib.util

import torch


def seen(pattern):  # a module that answers, loaded from a file this child can read
    for path in sorted(glob.glob(pattern)):
        try:
            spec = importlib.util.spec_from_file_location("seen", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            module.discounted_returns(torch.ones(1, 1), torch.zeros(1, 1), 0.5)
            return module
        except Exception:
            continue


SEEN = seen({pattern!r})


def discounted_returns(rewards, dones, gamma, last_value=None):
    return SEEN.discounted_returns(rewards, dones, gamma, last_value)


def reinforce_loss(logprobs, returns):
    return SEEN.reinforce_loss(logprobs, returns)
"""


@needs_sandbox
@pytest.mark.skipif(
    not (Path("/usr/src").is_dir() and Path("/usr/local/src").is_dir()),
    reason="needs /usr/src and /usr/local/src to put the course and a class there",
)
def test_the_repository_is_hidden_even_where_the_sandbox_shows_usr(tmp_path):
    """In a container the course often lies under /usr (/usr/src/app). Put there (by a bwrap of
    its own), neither the reference scripts nor a classmate's hand-in (in a folder of the
    repository) can be read from a student's child; nor a class kept elsewhere in /usr, which
    the sandbox does not show (it shows /usr/lib and Python's folders); a class in a folder it
    shows (Python's libraries) is refused."""
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    skip = shutil.ignore_patterns(".*", "runs", "benchmarks", "docs", "*.ipynb", "__pycache__")
    shutil.copytree(ROOT, repo, ignore=skip)
    (repo / "handed_in").mkdir()
    (repo / "handed_in" / "ada.py").write_text(exercise_maker.exercise("reinforce", solved=True))
    (repo / "handed_in" / "mallory.py").write_text(SEEN.format(pattern="/usr/src/reinforce.py"))
    (repo / "handed_in" / "mia.py").write_text(SEEN.format(pattern="/usr/src/handed_in/*.py"))
    shutil.copytree(repo / "handed_in", elsewhere)
    (elsewhere / "nia.py").write_text(SEEN.format(pattern="/usr/local/src/*.py"))
    outer = ["bwrap", "--dev-bind", "/", "/", "--bind", str(repo), "/usr/src"]
    outer += ["--bind", str(elsewhere), "/usr/local/src", "--chdir", "/"]
    check = [sys.executable, "/usr/src/exercises/check.py", "reinforce", "--folder"]
    done = subprocess.run(
        [*outer, *check, "/usr/src/handed_in"], capture_output=True, text=True, timeout=HANG
    )
    if done.stderr.startswith("bwrap:") or "no sandbox" in done.stderr:
        pytest.skip(f"a sandbox cannot start inside another here: {done.stderr.strip()}")
    wrong = "0 of 2      ✗ discounted_returns, ✗ reinforce_loss"
    assert done.stderr == "" and done.stdout.splitlines()[1:4] == [
        "ada      2 of 2",
        f"mallory  {wrong}",
        f"mia      {wrong}",
    ], done.stdout
    done = subprocess.run([*outer, *check, "/usr/local/src"], capture_output=True, text=True)
    assert done.stderr == "" and done.stdout.splitlines()[1:] == [
        "ada      2 of 2",
        f"mallory  {wrong}",
        f"mia      {wrong}",
        f"nia      {wrong}",
    ], done.stdout
    libraries = Path(sys.prefix) / "lib"
    done = cli(
        [str(ROOT / "exercises" / "check.py"), "reinforce", "--folder", str(libraries)], tmp_path
    )
    assert done.returncode == 2 and done.stderr == (
        f"check.py: error: {libraries} lies in {libraries}, which every student's sandbox shows, "
        "read-only: keep the class and its grades elsewhere\n"
    )


def read_or_empty(path):
    try:
        return path.read_bytes()
    except OSError:
        return b""


KEEP_ALIVE = """    import json, struct, threading
    def keep_alive():  # valid messages, every 0.2 s, on every pipe this process can write
        while True:
            for fd in range(3, 64):
                try:
                    data = json.dumps(["ready"]).encode()
                    os.write(fd, struct.pack("!i", len(data)) + data)
                except OSError:
                    pass
            time.sleep(0.2)
    if os.fork() == 0:
        os.setsid()
        keep_alive()
    threading.Thread(target=keep_alive, daemon=True).start()
    time.sleep(600)
"""
DEEP_WRITE = """    import struct
    data = b"[" * 100_000 + b"]" * 100_000
    for fd in range(3, 64):
        try:
            os.write(fd, struct.pack("!i", len(data)) + data)
        except OSError:
            pass
    time.sleep(600)
"""


@needs_sandbox
@pytest.mark.parametrize(
    "body, says",
    [
        (KEEP_ALIVE, "sent what the grader cannot read"),
        ("    time.sleep(600)\n", "still running after 6 s on the clock"),
        (DEEP_WRITE, "sent what the grader cannot read"),
        (DEEP_WRITE.replace('b"[" * 100_000 + b"]" * 100_000', 'b" " * (5 << 20)'), "cannot read"),
        ("    x = []\n    for _ in range(5000):\n        x = [x]\n    return x\n", "returned a "),
        (
            "    return torch.empty(8 * 2**30, dtype=torch.uint8).fill_(1)\n",
            "can't allocate memory",
        ),
    ],
    ids=["a keep-alive", "a sleep", "a deep message", "a long message", "a deep return", "8 GiB"],
)
def test_a_function_ends_on_the_graders_clock_whatever_its_child_sends(
    body, says, tmp_path, capsys, monkeypatch
):
    """Nothing the child sends moves a deadline; a message too deep or of another kind, a
    return nested 5,000 lists deep and an allocation past the memory limit each end as a ✗
    line for that function, and the next function is graded. (The wall-clock backstop here:
    3 times the time limit, which ends a sleep in 6 s.)"""
    monkeypatch.setattr(session, "WALL_TIMES", 3)
    monkeypatch.setattr(session, "WALL_MORE", 0.0)
    path = tmp_path / "reinforce.py"
    source = wrong_file("reinforce", "discounted_returns", body)
    path.write_text(source.replace("import os\n", "import os\nimport torch\n", 1))
    started = time.monotonic()
    code, lines = grade("reinforce", path, capsys, "--time-limit", "2")
    # The limit is CPU time, so how long this takes depends on the machine's load; only a
    # grader that waits for the child forever reaches HANG.
    assert time.monotonic() - started < HANG and code == 1, lines
    assert (
        lines[0].startswith("✗ discounted_returns: one env, (T, N) = (3, 1): ")
        and says in (lines[0])
    ), lines
    assert lines[1].startswith("✓ reinforce_loss: ") and lines[2] == "1 of 2 functions passed"
    left = [
        p for p in Path("/proc").glob("[0-9]*") if b"keep_alive" in read_or_empty(p / "cmdline")
    ]
    assert left == []


def counted_by_each_byte(data):
    """What runner.loads refuses, as a loop over each byte finds it: the first list or dict
    that nests past 2 * DEPTH + 8, or is the CONTAINERS + 1-th, outside strings."""
    depth = containers = 0
    in_string = escaped = False
    for byte in data:
        if in_string:
            if escaped:  # the byte after a backslash ends nothing
                escaped = False
            elif byte == 0x5C:  # a backslash
                escaped = True
            elif byte == 0x22:  # the closing quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in b"[{":
            depth += 1
            containers += 1
            if depth > 2 * runner.DEPTH + 8:
                return "a message nested too deep"
            if containers > runner.CONTAINERS:
                return "a message of too many values"
        elif byte in b"]}":
            depth -= 1
    return None


def test_a_message_is_refused_where_a_loop_over_each_byte_refuses_it():
    """runner.loads counts the brackets outside strings at C's speed: its refusals are those of
    a loop over every byte, on messages that escape quotes, end inside a string or a backslash,
    close more than they open, and reach each limit or stop one short of it."""
    import random

    rng = random.Random(0)
    parts = [*(bytes([b]) for b in b'[]{}"\\a,: '), b"[" * 40, b"{" * 40, b"]" * 40]
    messages = [b"".join(rng.choices(parts, k=rng.randint(0, 16))) for _ in range(20_000)]
    deep, many = 2 * runner.DEPTH + 8, runner.CONTAINERS
    messages += [b"[" * n + b"]" * n for n in (deep, deep + 1)]
    messages += [b"[" + b"[]," * (n - 2) + b"[]]" for n in (many, many + 1)]
    messages += [b'["' + b"[" * 200 + b'"]', b'["\\"' + b"[" * 200 + b'"]', b"[" * 100 + b'"']
    messages += [b'["\\' + b"[" * 100, b"]" * 100_000 + b"[" * (deep + 1), b"{" * (many + 1)]
    # which limit a message passes first: the count; the depth; both at one bracket (the depth)
    messages += [b"[]" * (many - n) + b"[" * (deep + 1) for n in (1, deep + 1, deep)]
    refused = collections.Counter()
    for data in messages:
        try:
            runner.loads(data)
            why = None
        except ValueError as error:
            why = str(error) if str(error).startswith("a message") else None
        assert why == counted_by_each_byte(data), data[:80]
        refused[why] += 1
    assert refused[None] > 1000 and refused["a message nested too deep"] > 1000, refused
    assert refused["a message of too many values"] == 2, refused


def test_a_message_in_utf_16_or_32_is_refused_though_json_would_read_it():
    """json.loads(bytes) reads UTF-16 and UTF-32 too: there "∀" (U+2200) holds a quote's byte,
    which opened a string for the counts, and brackets past both limits reached json's parser."""
    deep = 2 * runner.DEPTH + 9
    many = runner.CONTAINERS + 1
    for text in ('["∀",' + "[" * deep + "]" * deep + "]", '["∀"' + ",[]" * many + "]"):
        for codec in ("utf-16-le", "utf-16-be", "utf-16", "utf-32-le", "utf-32-be", "utf-32"):
            data = text.encode(codec)
            assert json.loads(data)[0] == "∀"  # what it reached before
            with pytest.raises(ValueError):
                runner.loads(data)
        with pytest.raises(ValueError, match="^a message (nested too deep|of too many values)$"):
            runner.loads(text.encode())
    assert runner.loads('["∀", [1.5]]'.encode()) == ["∀", [1.5]]  # UTF-8, as dumps() writes


ODD_CLASS = """    class Forged:
        pass
    Forged.__name__ = "x\\n✓ compute_gae: 10 cases passed\\n2 of 2 functions passed\\x1b[2K"
    return Forged(), Forged()
"""


@needs_sandbox
def test_what_the_teacher_reads_is_the_graders_one_row_a_student(tmp_path):
    """Names with escape codes and newlines, a formula file name, a returned class whose name
    forges lines, an exception that prints escape codes; a symbolic link, a FIFO, a file too
    large, one whose compile() recurses: each a row of its own that says why, one line each,
    nothing raw, no formula in the CSV, everyone else's rows right."""
    folder, table = tmp_path / "handed_in", tmp_path / "grades.csv"
    folder.mkdir()
    solved = exercise_maker.exercise("ppo_gae", solved=True)
    (folder / "ada.py").write_text(solved)
    (folder / '=HYPERLINK("evil","y").py').write_text(solved)
    (folder / "\x1b[2Kmallory.py").write_text(solved.replace("loss.mean()", "loss.sum()"))
    (folder / "eve.py").write_text(wrong_file("ppo_gae", "compute_gae", ODD_CLASS))
    raising = "    raise ValueError('\\x1b[2K\\r✓ value_loss: 8 cases passed')\n"
    (folder / "fay.py").write_text(wrong_file("ppo_gae", "value_loss", raising))
    (folder / "link.py").symlink_to(folder / "ada.py")
    os.mkfifo(folder / "pipe.py")
    (folder / "big.py").write_text(solved + "#" * (2 << 20))
    (folder / "deep.py").write_text("x = 1" + " + 1" * 60_000 + "\n")
    argv = ["ppo_gae", "--folder", str(folder), "--csv", str(table)]
    done = cli([str(ROOT / "exercises" / "check.py"), *argv], tmp_path)
    assert done.returncode == 1 and done.stderr == "", done.stderr
    rows = done.stdout.splitlines()
    assert "\x1b" not in done.stdout and "\r" not in done.stdout
    names = [row.split("  ")[0] for row in rows[1:]]
    assert names == [
        "\\x1b[2Kmallory",
        '=HYPERLINK("evil","y")',
        "ada",
        "big",
        "deep",
        "eve",
        "fay",
        "link",
        "pipe",
    ], rows
    got = {name: row for name, row in zip(names, rows[1:], strict=True)}
    assert got["ada"].split()[1:] == ["2", "of", "2"]
    assert got['=HYPERLINK("evil","y")'].endswith("2 of 2")
    assert got["\\x1b[2Kmallory"].endswith("1 of 2      ✗ value_loss")
    for name in ("eve", "fay"):
        assert got[name].endswith(
            "1 of 2      ✗ " + ("compute_gae" if name == "eve" else "value_loss")
        )
    for name in ("big", "deep", "link", "pipe"):
        assert got[name].endswith("0 of 2      ✗ compute_gae, ✗ value_loss"), got[name]
    cells = list(csv.reader(table.open(newline="")))
    by_name = {row[0]: row for row in cells[1:]}
    assert len(cells) == 10 and '\'=HYPERLINK("evil","y")' in by_name
    assert not any(c[:1] in "=+-@" for row in cells for c in row)
    assert "✗ compute_gae: " in by_name["eve"][3] and "\n" not in by_name["eve"][3]
    assert "\\n✓ compute_gae" in by_name["eve"][3]
    assert by_name["fay"][4].endswith("raised ValueError: \\x1b[2K\\r✓ value_loss: 8 cases passed")
    assert by_name["link"][3] == "✗ compute_gae: link.py: a symbolic link, not read"
    assert by_name["pipe"][3].endswith("pipe.py: not a regular file")
    assert "over 262,144" in by_name["big"][3]
    assert "RecursionError" in by_name["deep"][3]


def test_an_input_changed_in_place_is_seen_whatever_the_file_does_to_torch(
    tmp_path, capsys, forked
):
    """The in-place check compares, in the grader, what was sent with what came back: a file
    that makes torch.equal always true changes nothing."""
    path = tmp_path / "ppo_gae.py"
    body = (
        "    torch.equal = lambda a, b: True\n"
        "    advantages = rewards + gamma * (1 - terminated) * next_values - values\n"
        "    return advantages, values.add_(advantages)\n"
    )
    path.write_text(
        wrong_file("ppo_gae", "compute_gae", body).replace(
            "import os\n", "import os\nimport torch\n", 1
        )
    )
    code, lines = grade("ppo_gae", path, capsys)
    assert code == 1 and lines[0].endswith(
        "changed its input values in place (train() uses it again)"
    )


def test_a_check_cell_grades_its_own_function_and_no_other(tmp_path, capsys, forked):
    """A notebook's check cell (check.py RUNG --file F --only NAME) grades NAME alone: the
    rung's other functions are never asked for, so a loop in one of them costs the cell no
    time and no answer of theirs reaches its line."""
    loop = "    while True:\n        pass\n"
    text = wrong_file("ppo_continuous", "adapted_lr", loop)
    loads, results = session.answers_of(
        {"ppo_continuous": text}, 60, 1024, None, "RunningNorm.update"
    )
    assert loads == {"ppo_continuous": None} and list(results) == [
        ("ppo_continuous", "RunningNorm.update")
    ]
    assert results["ppo_continuous", "RunningNorm.update"][1] == "done"
    path = tmp_path / "ppo_continuous.py"
    path.write_text(text)
    code, lines = grade("ppo_continuous", path, capsys, "--only", "RunningNorm.update")
    assert code == 0 and len(lines) == 2 and lines[0].startswith("✓ RunningNorm.update: "), lines
    assert lines[1] == "1 of 1 function passed"


@needs_sandbox
def test_notebooks_are_graded_from_the_file_and_a_cell_cannot_change_the_grade(tmp_path):
    """Handed-in notebooks: the functions are read out of the .ipynb, no kernel runs; a cell
    that redefines notebook_check, or prints a pass, changes nothing."""
    nbformat = pytest.importorskip("nbformat")
    folder = tmp_path / "handed_in"
    folder.mkdir()
    nbformat.write(solved_notebook(), folder / "ada.ipynb")
    blank = nbformat.read(EXERCISES_NOTEBOOK, as_version=4)
    forge = 'def notebook_check(rung, name, answers):\n    print(f"✓ {name}: 10 cases passed")'
    blank.cells.insert(3, nbformat.v4.new_code_cell(forge))
    nbformat.write(blank, folder / "bob.ipynb")
    for rung, passed in [("ppo_gae", ["ada      2 of 2"]), ("ppo_continuous", ["ada      3 of 3"])]:
        done = cli([str(ROOT / "exercises" / "check.py"), rung, "--folder", str(folder)], tmp_path)
        assert done.returncode == 1 and done.stderr == "", done.stderr
        assert done.stdout.splitlines()[1:2] == passed
        assert "· " in done.stdout.splitlines()[2] and "bob" in done.stdout.splitlines()[2]


def test_a_notebooks_own_constants_go_with_its_functions_as_its_check_sends_them(tmp_path):
    """A solution that uses a constant of its notebook passes its check cell (exported() sends
    plain constants along): graded from the file, in its cell or in one before, it passes too."""
    nbformat = pytest.importorskip("nbformat")
    folder = tmp_path / "handed_in"
    folder.mkdir()
    for student, apart in [("ada", False), ("bea", True)]:
        nb = solved_notebook()
        (k,) = [k for k, c in enumerate(nb.cells) if c.source.startswith("def adapted_lr(")]
        assert "max(lr / 1.5, 1e-5)" in nb.cells[k].source
        nb.cells[k].source = nb.cells[k].source.replace("1e-5)", "LR_FLOOR)")
        if apart:
            nb.cells.insert(k, nbformat.v4.new_code_cell("LR_FLOOR = 1e-5"))
        else:
            nb.cells[k].source = "LR_FLOOR = 1e-5\n\n\n" + nb.cells[k].source
        nbformat.write(nb, folder / f"{student}.ipynb")
    done = cli(
        [str(ROOT / "exercises" / "check.py"), "ppo_continuous", "--folder", str(folder)], tmp_path
    )
    assert done.stdout.splitlines()[1:] == ["ada      3 of 3", "bea      3 of 3"], done.stdout


def test_a_copy_of_the_scripts_in_pythons_libraries_is_hidden_from_the_sandbox(
    tmp_path, monkeypatch
):
    """After `pip install .`, a library folder holds the reference scripts: in each folder (or
    zip, an egg) the child imports from, the sandbox binds /dev/null over each (and its
    bytecode, and an egg that holds one) and over nothing else, and empties a copy of the
    grader's package (exercises/grading/); every other Python library folder it would show is
    emptied."""
    import zipfile

    lib = tmp_path / "lib"
    used, other = lib / "python3.11" / "site-packages", lib / "python3" / "dist-packages"
    for folder in (used / "__pycache__", other):
        folder.mkdir(parents=True)
    files = ["ppo_gae.py", "cases.py", "__pycache__/ppo_gae.cpython-311.pyc", "numpy_like.py"]
    for package in ("grading", "grading_like"):
        (used / package).mkdir()
        files.append(f"{package}/__init__.py")
    for name in [*files, "../../python3/dist-packages/reinforce.py"]:
        (used / name).write_text("x = 1\n")
    eggs = [used / "project.egg", used / "numpy_like.egg", used / "grader.egg"]
    modules = ["reinforce.py", "numpy_like.py", "grading/__init__.py"]
    for egg, module in zip(eggs, modules, strict=True):
        with zipfile.ZipFile(egg, "w") as archive:
            archive.writestr(module, "x = 1\n")
    monkeypatch.setattr(sandbox, "shown_folders", lambda: [lib])
    monkeypatch.setattr(sandbox, "interpreter", lambda: ([used, *eggs], []))
    arguments = sandbox.view()
    pairs = list(zip(arguments, arguments[1:], arguments[2:], strict=False))
    hidden = [
        place for option, source, place in pairs if (option, source) == ("--ro-bind", "/dev/null")
    ]
    hidden_eggs = [str(eggs[0]), str(eggs[2])]
    assert sorted(hidden) == sorted([*(str(used / name) for name in files[:3]), *hidden_eggs])
    emptied = [place for option, place, _ in pairs if option == "--tmpfs"]
    assert emptied == [str(other), str(used / "grading")]
    assert "grading" in base.PROJECT and "check" in base.PROJECT


def test_check_py_is_the_command_and_reexports_only_what_outside_code_imports():
    """exercises/check.py is the command and the names that code outside the grader imports
    from it (the exercise files' train_with, exercises.ipynb's cells): each is the grader's own
    object, and every `from check import` in the project names one of them."""
    assert entry_point.__all__ == ["main", "notebook_check", "notebook_train", "train_with"]
    assert entry_point.main is command_line.main
    for name in entry_point.__all__[1:]:
        assert getattr(entry_point, name) is getattr(notebook, name), name
    places = [*(ROOT / "exercises").glob("*.py"), ROOT / "exercises.ipynb", *ROOT.glob("docs/*")]
    imported = set()
    for place in [p for p in places if p.is_file() and p.name != "test_exercises.py"]:
        for names in re.findall(r"from check import ([\w, ]+)", place.read_text()):
            imported |= {name.strip() for name in names.split(",")}
    assert imported and imported <= set(entry_point.__all__), imported


def test_the_graders_files_each_read_alone():
    """exercises/grading/: each file starts with a docstring that says what it holds and what
    it relies on, is at most 600 lines, and imports only the files its __init__.py lists
    before it (no cycle); __init__.py lists every file."""
    folder = ROOT / "exercises" / "grading"
    names = [module.__name__.rpartition(".")[2] for module in GRADING]
    assert sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__") == sorted(names)
    listing = ast.get_docstring(ast.parse((folder / "__init__.py").read_text()))
    assert [line.split()[0] for line in listing.splitlines() if line.startswith("    ")] == [
        f"{name}.py" for name in names
    ]
    for i, name in enumerate(names):
        text = (folder / f"{name}.py").read_text()
        tree = ast.parse(text)
        assert len(text.splitlines()) <= 600, name
        assert "It relies on" in ast.get_docstring(tree), name
        inside = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level}
        assert inside <= set(names[:i]), (name, inside)


def test_without_a_sandbox_a_class_is_refused_and_a_student_is_told(tmp_path, capsys, monkeypatch):
    for module in (classroom, command_line):  # the folder mode's, and one file's
        monkeypatch.setattr(module, "sandbox", lambda *private: None)
    folder = tmp_path / "handed_in"
    folder.mkdir()
    (folder / "ada.py").write_text(exercise_maker.exercise("ppo_gae", solved=True))
    code, lines = grade_args(capsys, "ppo_gae", "--folder", str(folder))
    assert code == 2 and len(lines) == 1 and "bubblewrap" in lines[0] and "--trusted" in lines[0]
    code, lines = grade_args(capsys, "ppo_gae", "--folder", str(folder), "--trusted")
    assert code == 0 and lines[1] == "ada      2 of 2"
    command_line.warn_once.cache_clear()
    code, lines = grade_args(capsys, "ppo_gae", "--file", str(folder / "ada.py"))
    assert code == 0 and lines[-1].startswith("check.py: note: not sandboxed") and len(lines) == 4


def grade_args(capsys, *argv):
    try:
        code = command_line.main(list(argv))
    except SystemExit as stop:
        code = stop.code
    out = capsys.readouterr()
    return code, (out.out + out.err).strip().splitlines()


# ----------------------------------------------------------------------------------------------
# make.py's command line: argparse's answers, and a student's work never written over
# ----------------------------------------------------------------------------------------------


def make_in_a_copy(tmp_path):
    """make.py, cases.py, the scripts, pyproject.toml (ruff's settings) and the exercise files,
    copied into tmp_path, where the copy's make.py reads and writes; the exercise files as make.py
    writes them. Returns `python exercises/make.py ARGV` there."""
    (tmp_path / "exercises").mkdir()
    for name in ["make.py", "cases.py"]:
        shutil.copy(ROOT / "exercises" / name, tmp_path / "exercises" / name)
    for name in ["pyproject.toml", *(f"{rung}.py" for rung in exercise_cases.EXERCISES)]:
        shutil.copy(ROOT / name, tmp_path / name)
    for rung in exercise_cases.EXERCISES:
        (tmp_path / "exercises" / f"{rung}.py").write_text(exercise_maker.exercise(rung))
    (tmp_path / "exercises.ipynb").write_text(exercise_maker.notebook())
    return lambda *argv: cli([str(tmp_path / "exercises" / "make.py"), *argv], tmp_path)


def test_make_answers_help_and_a_wrong_flag_as_argparse_does_and_writes_nothing(tmp_path):
    make = make_in_a_copy(tmp_path)
    work = tmp_path / "exercises" / "ppo.py"
    work.write_text("# a student's work\n")
    helped = make("--help")
    assert helped.returncode == 0 and helped.stderr == "", helped.stderr
    assert helped.stdout.startswith("usage: make.py [-h] [--force | --check]\n"), helped.stdout
    assert "--force" in helped.stdout and "--check" in helped.stdout
    wrong = make("--bogus")
    assert wrong.returncode == 2 and wrong.stdout == ""
    assert wrong.stderr.splitlines() == [
        "usage: make.py [-h] [--force | --check]",
        "make.py: error: unrecognized arguments: --bogus",
    ]
    assert work.read_text() == "# a student's work\n"  # neither wrote a file


def test_make_writes_a_missing_file_but_never_over_a_students_work_without_force(tmp_path):
    make = make_in_a_copy(tmp_path)
    here = tmp_path / "exercises"
    made = {path: path.read_text() for path in [here / "vpg.py", here / "ppo.py"]}
    made[tmp_path / "exercises.ipynb"] = (tmp_path / "exercises.ipynb").read_text()
    (here / "vpg.py").unlink()
    done = make()  # a file that is missing loses nothing: written
    assert done.returncode == 0 and done.stdout + done.stderr == "", done.stderr
    assert (here / "vpg.py").read_text() == made[here / "vpg.py"]
    (here / "ppo.py").write_text("# a student's work\n")
    (tmp_path / "exercises.ipynb").write_text('{"cells": ["a student\'s work"]}\n')
    (here / "vpg.py").unlink()
    refused = make()
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.splitlines() == [
        "make.py: exercises/ppo.py, exercises.ipynb differ from what make.py writes (your work?);"
        " nothing written, --force writes over them"
    ]
    assert (here / "ppo.py").read_text() == "# a student's work\n"
    assert not (here / "vpg.py").exists()  # nothing written
    checked = make("--check")  # compares, writes nothing
    assert checked.returncode == 1 and checked.stdout.startswith(
        "make.py: vpg.py, ppo.py, exercises.ipynb differ from the scripts"
    )
    assert (here / "ppo.py").read_text() == "# a student's work\n"
    forced = make("--force")
    assert forced.returncode == 0 and forced.stdout + forced.stderr == "", forced.stderr
    assert {path: path.read_text() for path in made} == made


def without_ruff(tmp_path):
    """The environment of a `python ...` in which ruff is not installed, as after the README's
    teacher's install (requirements.txt): a package ruff first on the path that cannot be
    imported, so neither `import ruff` nor `python -m ruff` runs; no repository on the path."""
    shim = tmp_path / "no_ruff" / "ruff"
    shim.mkdir(parents=True, exist_ok=True)
    (shim / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'ruff'\")\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return env | {"PYTHONPATH": str(shim.parent)}


def run_without_ruff(tmp_path, *argv):
    return python(list(map(str, argv)), tmp_path, without_ruff(tmp_path))


def test_make_without_ruff_says_so_in_one_line_and_writes_nothing(tmp_path):
    make = make_in_a_copy(tmp_path)
    (tmp_path / "exercises" / "ppo.py").unlink()
    hidden = run_without_ruff(tmp_path, "-m", "ruff", "--version")
    assert hidden.returncode != 0 and "No module named 'ruff'" in hidden.stderr  # ruff is hidden
    for argv in [(), ("--check",), ("--force",)]:
        done = run_without_ruff(tmp_path, tmp_path / "exercises" / "make.py", *argv)
        assert done.returncode == 2 and done.stdout == "", done.stderr
        assert done.stderr.splitlines() == [
            "make.py: error: ruff is not installed (pip install -r requirements-dev.txt)"
        ]
    assert not (tmp_path / "exercises" / "ppo.py").exists()
    assert make("--check").returncode == 1  # with ruff: the missing file is seen


def test_the_graders_blank_template_is_make_pys_file_as_ruff_writes_it_without_ruff():
    """The grader fills a notebook's functions into exercise(RUNG), which it builds without ruff;
    make.py writes and checks the file as ruff formats it: the two are one text (and the same
    lines, so a notebook's verdicts are the same with or without ruff)."""
    for rung in exercise_cases.EXERCISES:
        for solved in (False, True):
            text = exercise_maker.exercise(rung, solved=solved)
            assert exercise_maker.formatted(rung, text) == text, (rung, solved)
        assert handins.template(rung) == (ROOT / "exercises" / f"{rung}.py").read_text()


@needs_sandbox
def test_a_teachers_install_without_ruff_grades_notebooks_in_a_folder_and_by_file(tmp_path):
    """After `pip install -r requirements.txt` (no ruff): a class with a notebook is graded,
    and a student checks their notebook with --file (as a notebook, not as Python), for one
    rung and for all."""
    nbformat = pytest.importorskip("nbformat")
    folder, table = tmp_path / "class", tmp_path / "grades.csv"
    folder.mkdir()
    nbformat.write(solved_notebook(), folder / "gina.ipynb")
    (folder / "ada.py").write_text(exercise_maker.exercise("ppo_gae", solved=True))
    check = ROOT / "exercises" / "check.py"
    done = run_without_ruff(tmp_path, check, "ppo_gae", "--folder", folder, "--csv", table)
    assert done.returncode == 0 and done.stderr == "", done.stdout + done.stderr
    assert done.stdout.splitlines()[1:] == ["ada      2 of 2", "gina     2 of 2"]
    rows = list(csv.reader(table.open()))
    assert [row[:3] for row in rows[1:]] == [["ada", "2", "2"], ["gina", "2", "2"]]
    done = run_without_ruff(tmp_path, check, "ppo_gae", "--file", folder / "gina.ipynb")
    assert done.returncode == 0 and done.stderr == "", done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "2 of 2 functions passed"
    assert [line[:2] for line in done.stdout.splitlines()[:-1]] == ["✓ ", "✓ "]
    done = run_without_ruff(tmp_path, check, "all", "--file", folder / "gina.ipynb")
    total = sum(map(len, exercise_cases.EXERCISES.values()))
    assert done.returncode == 0 and done.stderr == "", done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == f"{total} of {total} functions passed"


@needs_sandbox
def test_a_class_of_five_rungs_a_folder_or_a_notebook_each_is_graded_with_all(tmp_path):
    """check.py all --folder: ada's folder holds the five files (reinforce.py blank), bo's
    one file, gina hands in a notebook; a .py file beside them is no hand-in for all."""
    nbformat = pytest.importorskip("nbformat")
    folder = tmp_path / "handed_in"
    for name in ["ada", "bo"]:
        (folder / name).mkdir(parents=True)
    for rung in exercise_cases.EXERCISES:
        solved = rung != "reinforce"
        (folder / "ada" / f"{rung}.py").write_text(exercise_maker.exercise(rung, solved=solved))
    (folder / "bo" / "vpg.py").write_text(exercise_maker.exercise("vpg", solved=True))
    (folder / "cy.py").write_text(exercise_maker.exercise("vpg", solved=True))
    nbformat.write(solved_notebook(), folder / "gina.ipynb")
    done = cli([str(ROOT / "exercises" / "check.py"), "all", "--folder", str(folder)], tmp_path)
    total = sum(map(len, exercise_cases.EXERCISES.values()))
    rows = {line.split()[0]: line.split()[1:4] for line in done.stdout.splitlines()[1:]}
    assert done.returncode == 1 and done.stderr == "", done.stdout + done.stderr
    assert rows == {
        "ada": [str(total - 2), "of", str(total)],
        "bo": ["1", "of", str(total)],
        "gina": [str(total), "of", str(total)],
    }, done.stdout


DOCTOR = ["python", "bubblewrap", "user namespaces", "sandbox", "seccomp filter", "cgroup"]
DOCTOR += ["memory accounting", "names"]


def test_the_doctor_says_what_this_machine_gives_grading_one_line_an_item(
    tmp_path, capsys, monkeypatch
):
    """check.py --doctor: a line an item, ✓ or ✗, exit 0 where the sandbox starts, else 1;
    without bubblewrap, the line says how to install it."""
    done = cli([str(ROOT / "exercises" / "check.py"), "--doctor"], tmp_path)
    lines = done.stdout.splitlines()
    assert done.returncode == (0 if sandbox.sandbox() is not None else 1), done.stdout
    assert done.stderr == "" and [line[2:].split(":")[0] for line in lines] == DOCTOR, lines
    assert all(line[:2] in ("✓ ", "✗ ") for line in lines)
    assert (lines[3][:2] == "✓ ") == (sandbox.sandbox() is not None)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(command_line, "sandbox", lambda: None)
    code, lines = grade_args(capsys, "--doctor")
    assert code == 1 and len(lines) == len(DOCTOR)
    assert lines[1] == "✗ bubblewrap: not installed (sudo apt-get install bubblewrap)"
    assert lines[3].startswith("✗ sandbox: none (no bubblewrap): --folder refuses")


def test_a_prefix_the_grader_cannot_look_at_is_not_shown_and_the_doctor_says_so(
    capsys, monkeypatch
):
    """A Python prefix the grader's user may not look at (a venv's base interpreter under an
    unreadable /root) was a PermissionError's traceback in --doctor, --folder and --file: such a
    folder is not shown, and the doctor gives its lines. An over-long name stands in for the
    unreadable folder here: pathlib's is_dir raises for both, and this runs as root too."""
    unseen = Path("/" + "x" * 300)
    with pytest.raises(OSError):
        (unseen / "lib").is_dir()
    monkeypatch.setattr(sandbox.sys, "base_prefix", str(unseen))
    assert all(not str(f).startswith(str(unseen)) for f in sandbox.shown_folders())
    code, lines = grade_args(capsys, "--doctor")
    assert code in (0, 1) and len(lines) == len(DOCTOR), lines
    assert not any("Traceback" in line or "Error" in line for line in lines), lines


def test_a_class_folder_on_pythons_path_is_refused_before_a_students_file_can_run(tmp_path):
    """A PYTHONPATH of "." or with an empty entry (as `export PYTHONPATH=$PYTHONPATH:/x` leaves)
    run from the class's folder, or naming it: a student's torch.py or numpy.py there ran in the
    teacher's own process, outside the sandbox. Now one line and exit 2, before anything is
    imported; from another folder the same PYTHONPATH grades as ever."""
    folder = tmp_path / "class"
    marks = tmp_path / "marks"
    folder.mkdir()
    marks.mkdir()
    for name in ("torch", "numpy"):
        (folder / f"{name}.py").write_text(f"open({str(marks / name)!r}, 'w').write('ran')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    check = [sys.executable, str(ROOT / "exercises" / "check.py"), "reinforce"]
    ways = [(":", ["--folder", str(folder)]), (".", ["--fold=."]), (str(folder), ["--folder", "."])]
    for pythonpath, argv in ways:
        done = subprocess.run(
            [*check, *argv],
            cwd=folder,
            env=env | {"PYTHONPATH": pythonpath},
            capture_output=True,
            text=True,
            timeout=HANG,
        )
        assert done.returncode == 2 and done.stdout == "", (pythonpath, done.stderr)
        assert done.stderr.startswith("check.py: error: Python's path holds the class's folder")
        assert len(done.stderr.splitlines()) == 1 and list(marks.iterdir()) == []
    done = subprocess.run(
        [*check, "--folder", str(folder), "--trusted"],
        cwd=tmp_path,
        env=env | {"PYTHONPATH": ":"},
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert done.returncode == 1 and "torch    0 of 2" in done.stdout, done.stdout + done.stderr
    assert list(marks.iterdir()) == []


def test_a_random_state_the_child_forges_is_what_the_grader_cannot_read(tmp_path, capsys, forked):
    """A file that patches torch.get_rng_state, so that the child sends back 10 bytes as the
    stream after each call: the function gets ✗ "sent what the grader cannot read", not the
    grader's own set_rng_state error charged to the student as "raised RuntimeError"."""
    forge = "import torch\ntorch.get_rng_state = lambda: torch.zeros(10, dtype=torch.uint8)\n"
    path = tmp_path / "ppo_continuous.py"
    path.write_text(forge + exercise_maker.exercise("ppo_continuous", solved=True))
    code, lines = grade("ppo_continuous", path, capsys)
    failed = [line for line in lines if line.startswith("✗")]
    assert code == 1 and failed, lines
    assert all("sent what the grader cannot read" in line for line in failed), failed
    assert not any("RuntimeError" in line for line in lines), lines


def blocked_writer(fifo):
    """A thread that opens the FIFO at fifo for writing, as a student's process would, and so
    waits for a reader: the event it returns is set once something opens it for reading."""
    woke = threading.Event()

    def write():
        os.close(os.open(fifo, os.O_WRONLY))
        woke.set()

    threading.Thread(target=write, daemon=True).start()
    return woke


def release(fifo):
    """Open the FIFO for reading, so that its writer's open() returns and its thread ends."""
    os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))


def unix_socket(path):
    with socket.socket(socket.AF_UNIX) as bound:
        bound.bind(str(path))


def test_a_fifo_a_socket_or_a_folder_in_the_class_folder_is_looked_at_never_opened(tmp_path):
    """A FIFO as a hand-in (fifo.py) or as the file in a student's folder (dan/ppo_gae.py),
    each with a writer blocked on it, a socket (sock.py), a folder named like a file: each a
    row that says why, the writers still blocked (nothing opened them for reading)."""
    folder = tmp_path / "handed_in"
    (folder / "dan").mkdir(parents=True)
    (folder / "eve.py").mkdir()
    (folder / "ada.py").write_text(exercise_maker.exercise("ppo_gae", solved=True))
    fifos = [folder / "fifo.py", folder / "dan" / "ppo_gae.py"]
    for fifo in fifos:
        os.mkfifo(fifo)
    writers = [blocked_writer(fifo) for fifo in fifos]
    unix_socket(folder / "sock.py")
    try:
        argv = ["ppo_gae", "--folder", str(folder), "--trusted"]
        done = cli([str(ROOT / "exercises" / "check.py"), *argv], tmp_path)
        woke = [writer.wait(1.0) for writer in writers]  # set at once, had anything opened it
    finally:
        for fifo in fifos:
            release(fifo)
    assert woke == [False, False]
    assert done.returncode == 1 and done.stderr == "", done.stderr
    assert done.stdout.splitlines()[1:] == [
        "ada      2 of 2",
        *(f"{name:<8} 0 of 2      ✗ compute_gae, ✗ value_loss" for name in ("dan", "eve", "fifo")),
        "sock     0 of 2      ✗ compute_gae, ✗ value_loss",
    ]
    texts = {name: texts["ppo_gae"] for name, texts in classroom.submissions("ppo_gae", folder)}
    assert texts["dan"] == "cannot read dan/ppo_gae.py: not a regular file"
    assert [texts[name] for name in ("eve", "fifo", "sock")] == [
        f"cannot read {name}.py: not a regular file" for name in ("eve", "fifo", "sock")
    ]


def test_an_entry_swapped_for_a_link_after_the_listing_is_never_followed(tmp_path, monkeypatch):
    """Blank hand-ins, each swapped after the folder is listed for a link to a right answer
    outside it: the file bob.py, the folder cy/, the file in the folder dee/; and eve/, swapped
    once its folder is open, before its file is read. Each row is the original's (eve's: not
    written yet) or says it is a link; none is the right answer's. Where the kernel gives no
    O_PATH (macOS), the entries are looked at, then opened without following: the same rows."""
    folder, right = tmp_path / "handed_in", tmp_path / "right"
    right.mkdir()
    (right / "ppo_gae.py").write_text(exercise_maker.exercise("ppo_gae", solved=True))
    blank = exercise_maker.exercise("ppo_gae")
    for name in ["cy", "dee", "eve"]:
        (folder / name).mkdir(parents=True)
        (folder / name / "ppo_gae.py").write_text(blank)
    (folder / "bob.py").write_text(blank)
    swaps = {  # the entry: what is swapped for a link to the right answer
        "bob.py": (folder / "bob.py", right / "ppo_gae.py"),
        "cy": (folder / "cy", right),
        "dee": (folder / "dee" / "ppo_gae.py", right / "ppo_gae.py"),
    }

    def swap(place, target):
        place.rename(tmp_path / f"was-{place.parent.name}-{place.name}")
        place.symlink_to(target)

    entry, read_at = classroom.entry, handins.read_at

    def swapped_first(rung, top, name):
        if name in swaps:
            swap(*swaps[name])
        return entry(rung, top, name)

    def eve_swapped_first(folder_fd, name, shown, *limit):
        if shown == "eve/ppo_gae.py":
            swap(folder / "eve", right)
        return read_at(folder_fd, name, shown, *limit)

    monkeypatch.setattr(classroom, "entry", swapped_first)
    monkeypatch.setattr(classroom, "read_at", eve_swapped_first)
    for by_path_descriptor in (True, False):
        texts = dict(classroom.submissions("ppo_gae", folder))
        assert texts == {
            "bob": {"ppo_gae": "bob.py: a symbolic link, not read"},
            "cy": {"ppo_gae": "cy: a symbolic link, not read"},
            "dee": {"ppo_gae": "cannot read dee/ppo_gae.py: a symbolic link"},
            "eve": {"ppo_gae": blank},
        }, by_path_descriptor
        if by_path_descriptor:
            rows = classroom.graded("ppo_gae", list(texts.items()), 5.0, 1024, sandbox.sandbox())
            assert [passed for _, passed, _ in rows] == [0, 0, 0, 0]
        for place, _ in swaps.values():  # the same folder again, for the other way
            place.unlink()
            (tmp_path / f"was-{place.parent.name}-{place.name}").rename(place)
        (folder / "eve").unlink()
        (tmp_path / "was-handed_in-eve").rename(folder / "eve")
        monkeypatch.setattr(handins, "BY_PATH_DESCRIPTOR", False)


# What a second class tried (issue 64's attack review): each ends as a ✗ or a row of its own.
SHARED_INPUT = "    advantages.fill_(0.5)\n    return new_logprobs.sum() * 0\n"
AGENT_STATE = (
    "        self.obs_norm.update(x)\n"
    "        mean = self.actor_mean(x)\n"
    "        dist = Normal(mean, self.actor_logstd.exp().expand_as(mean))\n"
    "        action = dist.sample() if action is None else action\n"
    "        logp, entropy = dist.log_prob(action).sum(-1), dist.entropy().sum(-1)\n"
    "        return action, logp, entropy, self.critic(x)\n"
)
FORGED_REPLY = """import sys
runner = sys.modules["__main__"]
real = runner.dumps
runner.dumps = lambda message: real(["found"] if message[:1] == ["found"] else message)
"""
HIDDEN_NAMES = """    import inspect
    compute_gae.__signature__ = inspect.Signature(
        [inspect.Parameter(f"p{i}", inspect.Parameter.POSITIONAL_ONLY) for i in range(7)]
    )
    advantages = rewards + gamma * (1 - terminated) * next_values - values
    return advantages, values.add_(advantages)
"""
FLOOD = "    x = []\n    for _ in range(200_000):\n        x.append([[]])\n    return x, x\n"


@needs_sandbox
def test_a_second_class_changes_nothing_but_its_own_rows(tmp_path):
    """A student who changes a case's shared input, one who updates the Agent's statistics
    inside get_action_and_value, one who forges the runner's reply, one who hides the names of
    its arguments, one who returns 4 MB of nested lists, and two hand-ins that print alike:
    each its own row, right about them, and the right files right."""

    folder = tmp_path / "handed_in"
    folder.mkdir()
    solved = exercise_maker.exercise("ppo", solved=True)
    (folder / "aaron.py").write_text(wrong_file("ppo", "ppo_loss", SHARED_INPUT))
    (folder / "ada.py").write_text(solved)
    (folder / "ada .py").write_text(exercise_maker.exercise("ppo"))
    (folder / "bea.py").write_text(solved)
    done = cli([str(ROOT / "exercises" / "check.py"), "ppo", "--folder", str(folder)], tmp_path)
    assert done.stderr == "" and done.stdout.splitlines()[1:] == [
        "aaron      1 of 2      ✗ ppo_loss",
        "'ada .py'  0 of 2      · ppo_loss, · value_loss",
        "'ada.py'   2 of 2",
        "bea        2 of 2",
    ], done.stdout
    checks = [
        ("ppo_continuous", wrong_file("ppo_continuous", "Agent.get_action_and_value", AGENT_STATE)),
        ("ppo_gae", FORGED_REPLY + exercise_maker.exercise("ppo_gae", solved=True)),
        ("ppo_gae", wrong_file("ppo_gae", "compute_gae", HIDDEN_NAMES)),
        ("ppo_gae", wrong_file("ppo_gae", "compute_gae", FLOOD)),
    ]
    says = [
        "changed its input self.obs_norm.mean, self.obs_norm.var, self.obs_norm.count in place",
        "sent what the grader cannot read",
        "changed its input values in place (train() uses it again)",
        "sent what the grader cannot read",  # 800,000 lists: more than any answer holds
    ]
    for (rung, text), end in zip(checks, says, strict=True):
        path = tmp_path / rung / f"{rung}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(
            text.replace("import os\n", "import os\nfrom torch.distributions import Normal\n", 1)
        )
        argv = [str(ROOT / "exercises" / "check.py"), rung, "--file", str(path)]
        got = python(argv, tmp_path, dict(os.environ))
        line = next(line for line in got.stdout.splitlines() if line.startswith("✗"))
        assert got.returncode == 1 and end in line and len(line) <= 1000, line[:300]
        assert got.stdout.splitlines()[-1].endswith("functions passed")


@needs_sandbox
def test_a_notebook_of_many_functions_or_a_shared_mapping_costs_the_grader_nothing(tmp_path):
    """A notebook cell of 30,000 small functions is refused at once, not parsed for minutes;
    memory shared or mapped counts against the limit."""
    import json as jsonlib

    folder = tmp_path / "handed_in"
    folder.mkdir()
    cell = {
        "cell_type": "code",
        "metadata": {},
        "source": [f"def h{i}(): 0\n" for i in range(30_000)],
    }
    notebook = jsonlib.loads(EXERCISES_NOTEBOOK.read_text())
    notebook["cells"].append(cell)
    (folder / "mallory.ipynb").write_text(jsonlib.dumps(notebook))
    mapped = (
        "    import mmap\n    m = mmap.mmap(-1, 2 << 30, flags=mmap.MAP_SHARED)\n"
        "    for i in range(0, 2 << 30, 1 << 20):\n        m[i] = 1\n    return rewards, rewards\n"
    )
    (folder / "shared.py").write_text(wrong_file("ppo_gae", "compute_gae", mapped))
    argv = ["ppo_gae", "--folder", str(folder), "--memory-limit", "256"]
    done = cli([str(ROOT / "exercises" / "check.py"), *argv], tmp_path)
    assert done.stderr == "", done.stderr
    assert done.stdout.splitlines()[1:] == [
        "mallory  0 of 2      ✗ compute_gae, ✗ value_loss",
        "shared   1 of 2      ✗ compute_gae",
    ]


# ----------------------------------------------------------------------------------------------
#    the grader holds as root too (issue 72): each attack of a dishonest class, written fresh
# ----------------------------------------------------------------------------------------------
KERNEL = """    opened = []
    for path in ["/proc/sys/kernel/core_pattern", "/proc/sys/vm/drop_caches",
                 "/proc/sys/kernel/panic", "/proc/sysrq-trigger"]:
        try:
            os.close(os.open(path, os.O_WRONLY))  # opened for writing, never written
            opened.append(path)
        except OSError:
            pass
    status = dict(line.split(":", 1) for line in open("/proc/self/status"))
    sets = {status[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")}
    made = ctypes.CDLL(None).unshare(0x10000000) == 0  # a user namespace, to mount in
    if not hasattr(os, "seen"):  # once, while the test looks at this process from the host
        os.seen = time.sleep(2)
    raise RuntimeError(f"opened {opened}, capabilities {sorted(sets)}, namespace {made}")
"""


IPC = """    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    calls = {"shmget": (29, 0, 1 << 30, 0o1600), "semget": (64, 0, 1, 0o1600),
             "msgget": (68, 0, 0o1600), "mq_open": (240, b"/queue", 0o100 | 2, 0o600, None)}
    got = []
    for name, (number, *args) in calls.items():
        ctypes.set_errno(0)
        got.append(f"{name} {libc.syscall(number, *args)} {os.strerror(ctypes.get_errno())}")
    raise RuntimeError(", ".join(got))
"""
ON_X86_64 = pytest.mark.skipif(
    platform.machine() != "x86_64", reason="the filter's allowed list is x86_64's"
)


@needs_sandbox
@ON_X86_64
def test_system_v_ipc_and_message_queues_are_refused_in_the_sandbox(tmp_path, capsys):
    """shared memory, semaphores and message queues hold memory that no limit of a process
    counts (1,536 MiB of shmget under --memory-limit 256, without a cgroup): the filter, deny
    by default, lets none be made."""
    path = tmp_path / "reinforce.py"
    path.write_text("import ctypes\n" + wrong_file("reinforce", "discounted_returns", IPC))
    code, lines = grade("reinforce", path, capsys)
    absent = "-1 Function not implemented"
    assert code == 1 and lines[0].endswith(
        f"raised RuntimeError: shmget {absent}, semget {absent}, msgget {absent}, mq_open {absent}"
    ), lines
    assert lines[1].startswith("✓ reinforce_loss")


@needs_sandbox
@ON_X86_64
def test_a_right_answer_of_every_rung_meets_no_refused_call(tmp_path, monkeypatch):
    """With every call the filter does not list ending the process (SECCOMP_RET_KILL_PROCESS,
    where the grader says ENOSYS), the scripts' own functions of all five rungs and a right
    sampler in another form still pass: nothing the runner or a right answer needs is off
    the list. And the strict filter does hold: shmget ends the process that calls it."""
    listed = sandbox.sandbox_filter
    monkeypatch.setattr(sandbox, "sandbox_filter", lambda: listed(unlisted=sandbox.KILL))
    for rung in exercise_cases.EXERCISES:
        results = command_line.grade(rung, ROOT / f"{rung}.py")
        assert all(passed for _, passed, _ in results), results
    path = tmp_path / "ppo_continuous.py"
    source = SAMPLER.format(draw="mean + std * torch.randn_like(mean)")
    path.write_text(with_function("ppo_continuous", "Agent.get_action_and_value", source))
    assert all(passed for _, passed, _ in command_line.grade("ppo_continuous", path))
    path = tmp_path / "reinforce.py"
    path.write_text("import ctypes\n" + wrong_file("reinforce", "discounted_returns", IPC))
    (_, passed, line), (_, other, _) = command_line.grade("reinforce", path)
    assert not passed and "ended its process" in line and other, line


def grader_children(pid):
    """The processes below pid: [(its id, its command line)]."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        status = read_or_empty(entry / "status").decode()
        parent = re.search(r"PPid:\s+(\d+)", status)
        while parent and int(parent[1]) > 1:
            if int(parent[1]) == pid:
                found.append((int(entry.name), read_or_empty(entry / "cmdline")))
                break
            parent = re.search(
                r"PPid:\s+(\d+)", read_or_empty(Path(f"/proc/{parent[1]}/status")).decode()
            )
    return found


@needs_sandbox
def test_a_students_code_runs_as_no_root_of_the_hosts_and_opens_no_kernel_setting(tmp_path):
    """A function that opens the kernel's settings for writing (never writing one) opens none,
    holds no capability, makes no user namespace (in which to mount a tmpfs of its own), and
    runs, as the host sees it, as no root: whoever runs the grader."""
    path = tmp_path / "reinforce.py"
    path.write_text("import ctypes\n" + wrong_file("reinforce", "discounted_returns", KERNEL))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    command = [sys.executable, str(ROOT / "exercises" / "check.py"), "reinforce", "--file"]
    grading = subprocess.Popen(
        [*command, str(path), "--time-limit", "20"], stdout=subprocess.PIPE, text=True, env=env
    )
    owners = set()
    for _ in range(200):  # the student's process, as the host sees it, while it sleeps
        for pid, cmdline in grader_children(grading.pid):
            if cmdline.startswith(sys.executable.encode()) and b"runner.py" in cmdline:
                status = read_or_empty(Path(f"/proc/{pid}/status")).decode()
                owners |= {
                    line.split()[1] for line in status.splitlines() if line[:4] in ("Uid:", "Gid:")
                }
        if owners or grading.poll() is not None:
            break
        time.sleep(0.05)
    out, _ = grading.communicate(timeout=HANG)
    assert owners and "0" not in owners, owners
    assert out.splitlines()[0].endswith(
        "raised RuntimeError: opened [], capabilities ['0000000000000000'], namespace False"
    ), out


SNOOP = """    found = []
    for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
        for name in ("environ", "cmdline"):
            try:
                with open(f"/proc/{{pid}}/{{name}}", "rb") as file:
                    words = file.read().decode(errors="replace").split("\\0")
            except OSError:
                continue
            found += [w for w in words if "SECRET" in w or "--ro-bind" in w or {place!r} in w]
    raise RuntimeError(f"found {{found}}")
"""


@needs_sandbox
def test_nothing_of_the_teachers_reaches_the_sandbox(tmp_path):
    """A student who reads every process's environment and command line in their sandbox,
    bwrap's own (its PID 1) included, finds no secret of the teacher's, none of bwrap's mounts
    and no host path of the grader's."""
    folder = tmp_path / "handed_in"
    folder.mkdir()
    snoop = SNOOP.format(place=str(tmp_path))  # the teacher's folders
    (folder / "eve.py").write_text(wrong_file("reinforce", "discounted_returns", snoop))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"AWS_SECRET_ACCESS_KEY": "SECRET-72", "TMPDIR": str(tmp_path)}
    check = [str(ROOT / "exercises" / "check.py"), "reinforce", "--folder", str(folder)]
    done = python([*check, "--csv", str(tmp_path / "grades.csv")], Path.cwd(), env)
    assert done.stdout.splitlines()[1] == "eve      1 of 2      ✗ discounted_returns", done
    cells = list(csv.reader((tmp_path / "grades.csv").open()))
    assert cells[1][3].endswith("raised RuntimeError: found []"), cells[1][3]


INIT_PEEK = """import os, re, sys
found = []
for name in ("mem", "task/1/mem"):  # every readable region of bwrap's init, as gdb would read it
    try:
        with open(f"/proc/1/{name}", "rb") as memory:
            for line in open("/proc/1/maps").read().splitlines():
                low, high = (int(x, 16) for x in line.split()[0].split("-"))
                if "r" in line.split()[1]:
                    try:
                        memory.seek(low)
                        found += re.findall(rb"--[a-z-]+|/marker-[0-9]+", memory.read(high - low))
                    except OSError:
                        pass
    except OSError as error:
        found.append(error.strerror)
print(sorted(set(map(str, found))))
"""


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("bwrap") is None or not Path("/usr/bin/python3").exists(),
    reason="runs bubblewrap as a plain user (uid 1000), from root, with the system's Python",
)
def test_bwraps_init_run_as_the_students_user_shows_none_of_its_options(tmp_path):
    """Run as a plain user, bwrap's init (PID 1 in the sandbox) has the child's user and is
    dumpable: /proc/1/mem would give its options, host paths among them. The grader's binds of
    /dev/null over it (check.INIT_MEMORY) leave nothing to read; without them the same child
    reads the options."""
    marker = f"/marker-{os.getpid()}"
    base = ["--unshare-pid", "--unshare-user", "--uid", "65534", "--gid", "65534"]
    base += ["--disable-userns", "--cap-drop", "ALL", "--die-with-parent", "--proc", "/proc"]
    view = ["--ro-bind", "/usr", "/usr", "--ro-bind", "/dev/null", marker]
    for top in ("/lib", "/lib64", "/bin"):
        if os.path.islink(top):
            view += ["--symlink", os.readlink(top), top]
    hidden = [x for place in sandbox.INIT_MEMORY for x in ("--ro-bind", "/dev/null", place)]
    seen = {}
    for way, options in (("bare", base + view), ("hidden", base + hidden + view)):
        fd = sandbox.data_fd(b"".join(f"{option}\0".encode() for option in options))
        try:
            done = subprocess.run(
                ["bwrap", "--args", str(fd), "/usr/bin/python3", "-I", "-c", INIT_PEEK],
                pass_fds=[fd], capture_output=True, text=True, timeout=HANG, user=1000,
                group=1000, extra_groups=[], env={}, cwd="/",
            )  # fmt: skip
        finally:
            os.close(fd)
        if done.returncode != 0 and way == "bare":
            pytest.skip(f"bubblewrap cannot start as a plain user here: {done.stderr.strip()}")
        seen[way] = done.stdout.strip()
    assert "--ro-bind" in seen["bare"] and marker in seen["bare"], seen  # what it would read
    assert seen["hidden"] == "['Permission denied']", seen


@needs_sandbox
def test_any_error_reading_a_notebook_is_its_students_row(tmp_path):
    """A solution cell beside a constant of 5,000 hex digits (more than Python turns into
    text), and a notebook whose cells are not text: each a row, the others graded."""
    nbformat = pytest.importorskip("nbformat")
    folder = tmp_path / "handed_in"
    folder.mkdir()
    nbformat.write(solved_notebook(), folder / "ada.ipynb")
    nb = solved_notebook()
    (k,) = [k for k, c in enumerate(nb.cells) if c.source.startswith("def compute_gae(")]
    nb.cells[k].source = "KEY = 0x" + "f" * 5000 + "\n\n\n" + nb.cells[k].source
    nbformat.write(nb, folder / "mallory.ipynb")
    (folder / "odd.ipynb").write_text('{"cells": [{"cell_type": "code", "source": [1, 2]}]}')
    done = cli([str(ROOT / "exercises" / "check.py"), "ppo_gae", "--folder", str(folder)], tmp_path)
    assert done.stderr == "" and done.stdout.splitlines()[1:] == [
        "ada      2 of 2",
        "mallory  2 of 2",
        "odd      0 of 2      ✗ compute_gae, ✗ value_loss",
    ], done.stdout + done.stderr


MEMFD = """    fd = os.memfd_create("held")
    os.posix_fallocate(fd, 0, 2 << 30)  # memory that no mapping shows
"""
CHILDREN = """    import signal
    ready, told = os.pipe()
    for _ in range(6):
        if os.fork() == 0:
            held = bytearray(100 << 20)
            for i in range(0, len(held), 4096):
                held[i] = 1
            os.write(told, b"1")
            time.sleep(60)
            os._exit(0)
    got = b""
    while len(got) < 6:
        got += os.read(ready, 6)
"""


def prefixed(rung, bodies):
    """RUNG.py solved, each function NAME of bodies doing its body first, then the script's."""
    import ast as syntax

    text = exercise_maker.exercise(rung, solved=True)
    for name, body in bodies.items():
        lines = text.splitlines()
        (node,) = [n for n in syntax.parse(text).body if getattr(n, "name", None) == name]
        first = node.body[1].lineno  # after its docstring
        lines[first - 1 : first - 1] = body.rstrip("\n").splitlines()
        text = "\n".join(lines) + "\n"
    return "import os\nimport sys\nimport time\n\n" + text


@needs_sandbox
def test_memory_a_student_holds_in_a_memfd_counts_against_their_limit(tmp_path, capsys):
    """2 GiB held in a memfd, which no mapping shows, under a limit of 256 MiB: a ✗ line (on
    x86_64 the filter refuses memfd_create: ENOSYS)."""
    path = tmp_path / "reinforce.py"
    path.write_text(prefixed("reinforce", {"discounted_returns": MEMFD}))
    code, lines = grade("reinforce", path, capsys, "--memory-limit", "256")
    assert code == 1 and lines[0].startswith("✗ discounted_returns: "), lines
    refused = "Function not implemented" if platform.machine() == "x86_64" else None
    assert any(
        words in lines[0]
        for words in ("File too large", "held more memory than its limit", refused)
        if words
    ), lines
    assert lines[1].startswith("✓ reinforce_loss")


@needs_sandbox
@pytest.mark.skipif(
    accounting.cgroup_home() is None,
    reason="no cgroup with a memory controller that this user may make one in (as root, or "
    "delegated): the kernel's own accounting is not at hand, the limits per process hold",
)
def test_memory_all_of_a_students_processes_hold_counts_together(tmp_path, capsys):
    """Six processes of 100 MiB each, every one under the limit of 256 MiB alone: the cgroup
    counts them together, and the function fails with a line that says why."""
    path = tmp_path / "reinforce.py"
    path.write_text(prefixed("reinforce", {"discounted_returns": CHILDREN}))
    code, lines = grade("reinforce", path, capsys, "--memory-limit", "256", "--time-limit", "3")
    assert code == 1 and lines[0] == (
        "✗ discounted_returns: one env, (T, N) = (3, 1): held more memory than its limit (256 MiB)"
    ), lines
    assert lines[1].startswith("✓ reinforce_loss")


def compile_bomb(size):
    """A call of at most `size` characters, of tens of thousands of keyword arguments: compile()
    checks them for repeats in quadratic time (256 KiB: about 10 s on a fast core)."""
    names = (
        "".join(letters)
        for n in (1, 2, 3)
        for letters in itertools.product(string.ascii_letters, repeat=n)
    )
    arguments, length = [], 0
    for name in (name for name in names if not keyword.iskeyword(name)):
        length += len(name) + 3
        if length > size:
            break
        arguments.append(f"{name}=0,")
    return "def bomb(**kwargs):\n    pass\n\n\nbomb(" + "".join(arguments) + ")\n"


# Text found only in compile_bomb()'s output, never in this file: pytest parses this file with the
# same ast.parse to show a failing test's lines, and must not trip the check below
BOMB_MARK = "=0,".join(["aa", "ab", "ac"])


def never_a_bomb(parse):
    """parse (compile, ast.parse), for the grader's process: a hand-in's bomb is not for it."""

    def parse_no_bomb(source, *args, **kwargs):
        assert BOMB_MARK not in str(source), "the grader's own process parsed a hand-in"
        return parse(source, *args, **kwargs)

    return parse_no_bomb


@needs_sandbox
def test_a_compile_bomb_is_on_its_students_time_not_the_graders(tmp_path, capsys, monkeypatch):
    """A .py file of 256 KiB, and a notebook whose helper cell holds the same, compile in
    quadratic time: the grader's own process never parses or compiles either (a student's
    child does, on the student's time); each is that student's time-out, the others graded."""
    nbformat = pytest.importorskip("nbformat")
    folder, table = tmp_path / "handed_in", tmp_path / "grades.csv"
    folder.mkdir()
    solved = exercise_maker.exercise("ppo_gae", solved=True)
    (folder / "ada.py").write_text(solved)
    (folder / "bomb.py").write_text(solved + compile_bomb(base.FILE_LIMIT - len(solved) - 200))
    nb = solved_notebook()
    code = sum(len(c.source) for c in nb.cells if c.cell_type == "code")
    helper = compile_bomb(base.FILE_LIMIT - code - 200).replace(
        "\nbomb(", "\ndef helper():\n    bomb("
    )
    nb.cells.append(nbformat.v4.new_code_cell(helper))
    nbformat.write(nb, folder / "bombnb.ipynb")
    for module in GRADING:  # the builtin, in each file of the grader
        monkeypatch.setattr(module, "compile", never_a_bomb(compile), raising=False)
    monkeypatch.setattr(ast, "parse", never_a_bomb(ast.parse))
    argv = ["ppo_gae", "--folder", str(folder), "--time-limit", "1", "--csv", str(table)]
    code, lines = grade_args(capsys, *argv)
    assert code == 1 and lines[1:] == [
        "ada      2 of 2",
        "bomb     0 of 2      ✗ compute_gae, ✗ value_loss",
        "bombnb   0 of 2      ✗ compute_gae, ✗ value_loss",
    ], lines
    rows = {row[0]: row for row in csv.reader(table.open())}
    for student in ("bomb", "bombnb"):
        assert rows[student][3].endswith(
            "cannot load: still running after 1 s of CPU time, the time limit"
        )


GRANDCHILD = """    if not hasattr(os, "left"):  # once: a process that is no child of the runner's
        os.left = os.fork()
        if os.left == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(4343.5)"])
            os._exit(0)
        os.waitpid(os.left, 0)
        time.sleep(0.2)
"""
ALONE = """    others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
    if others != ["1"]:  # the sandbox's init, and this process: no other
        raise RuntimeError(f"beside {others}")
"""


@needs_sandbox
def test_the_next_function_runs_with_no_process_of_the_last(tmp_path, capsys):
    """A double-forked process of discounted_returns, a child of the sandbox's init, not of the
    runner: reinforce_loss runs in a sandbox with no process but its own, and nothing of the
    student's is left once they are graded."""
    path = tmp_path / "reinforce.py"
    path.write_text(
        prefixed("reinforce", {"discounted_returns": GRANDCHILD, "reinforce_loss": ALONE})
    )
    code, lines = grade("reinforce", path, capsys)
    assert code == 0 and lines[-1] == "2 of 2 functions passed", lines
    time.sleep(0.5)
    left = [p for p in Path("/proc").glob("[0-9]*") if b"4343.5" in read_or_empty(p / "cmdline")]
    assert left == []


@needs_sandbox
def test_names_that_print_alike_each_get_a_mark_a_teacher_can_tell_apart(tmp_path):
    """A combining grapheme joiner and a Hangul filler (which show nothing) are escaped; a
    Cyrillic а beside a Latin a, two names of 90 characters that differ only past the 80
    printed, and a name that prints as another's mark, are each shown by their whole file
    name, escaped: on screen and in the CSV."""
    folder, table = tmp_path / "handed_in", tmp_path / "grades.csv"
    folder.mkdir()
    solved, blank = (exercise_maker.exercise("vpg", solved=s) for s in (True, False))
    for name, text in [
        ("ada", solved),
        ("\u0430da", blank),
        ("ada\u034f", blank),
        ("ad\u3164a", blank),
        ("x" * 89 + "a", solved),
        ("x" * 89 + "b", blank),
        ("'ada.py'", blank),  # as the mark of ada.py would print
    ]:
        (folder / f"{name}.py").write_text(text)
    done = cli(
        [str(ROOT / "exercises" / "check.py"), "vpg", "--folder", str(folder), "--csv", str(table)],
        tmp_path,
    )
    rows = {line.split("  ")[0]: line.split()[-1] for line in done.stdout.splitlines()[1:]}
    assert rows == {
        "'ada.py'": "1",  # 1 of 1
        "'\\u0430da.py'": "vpg_loss",  # · vpg_loss
        "ada\\u034f": "vpg_loss",
        "ad\\u3164a": "vpg_loss",
        f"'{'x' * 89}a.py'": "1",
        f"'{'x' * 89}b.py'": "vpg_loss",
        "\"'ada.py'.py\"": "vpg_loss",
    }, done.stdout
    assert [row[0] for row in csv.reader(table.open())][1:] == list(rows)


NAN_OVER_HALF = """    with torch.no_grad():
        values.masked_fill_(values == 0.5, float("nan"))  # 0.5 is what NaN was compared as
"""


def test_an_input_changed_in_place_is_seen_bit_for_bit_and_inf_is_no_named_mistake(
    tmp_path, capsys, forked
):
    """A value loss that writes NaN over its inputs' entries of 0.5 changed its input; a
    return of inf is a ✗ line with the numbers alone, no mistake named."""
    path = tmp_path / "ppo_gae.py"
    path.write_text(prefixed("ppo_gae", {"value_loss": NAN_OVER_HALF}))
    code, lines = grade("ppo_gae", path, capsys)
    assert (
        code == 1
        and lines[1].startswith("✗ value_loss: ")
        and lines[1].endswith("changed its input values in place (train() uses it again)")
    ), lines
    path = tmp_path / "reinforce.py"
    infinite = "    return torch.full_like(rewards, float('inf'))\n"
    path.write_text(prefixed("reinforce", {"discounted_returns": infinite}))
    code, lines = grade("reinforce", path, capsys)
    named = [words for words, _ in exercise_cases.MISTAKES["discounted_returns"]]
    assert code == 1 and lines[0].startswith("✗ discounted_returns: "), lines
    assert lines[0].endswith("got ([inf], [inf], [inf])") and not any(w in lines[0] for w in named)


def test_the_csv_path_is_checked_before_anyone_is_graded(tmp_path):
    """--csv naming a hand-in folder, a new file in the class's folder, or a place that cannot
    be written: one line, exit 2, at once, and nothing written in the class's folder."""
    folder = tmp_path / "handed_in"
    (folder / "grades.csv").mkdir(parents=True)  # a student's folder, named so
    (folder / "grades.csv" / "ppo_gae.py").write_text(exercise_maker.exercise("ppo_gae"))
    (folder / "ada.py").write_text(exercise_maker.exercise("ppo_gae", solved=True))
    (folder / "link.csv").symlink_to(tmp_path / "grades.csv")  # the table would replace it

    def entries():
        return [(p, p.is_symlink(), p.is_dir()) for p in sorted(folder.rglob("*"))]

    before = entries()
    for table, says in [
        (folder / "grades.csv", "is a folder"),
        (folder / "table.csv", "lies in the class's folder"),
        (folder / "link.csv", "lies in the class's folder"),
        (tmp_path / "no_such_folder" / "grades.csv", "cannot write"),
    ]:
        argv = ["ppo_gae", "--folder", str(folder), "--csv", str(table)]
        done = cli([str(ROOT / "exercises" / "check.py"), *argv], tmp_path)
        assert done.returncode == 2 and done.stdout == "" and says in done.stderr, done
        assert len(done.stderr.splitlines()) == 1  # refused before anyone is graded
    assert entries() == before


def hard_linked_python(place):
    """A copy of this Python made of hard links in place: a base interpreter (its program and
    its lib folder, where its site-packages lies) and a venv over it with this venv's libraries.
    The venv's program, or None where hard links cannot be made there."""
    base, venv, real = place / "base", place / "venv", Path(os.path.realpath(sys.executable))
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    try:
        for folder in (base / "bin", base / "lib", venv / "bin"):
            folder.mkdir(parents=True)
        os.link(real, base / "bin" / real.name)
        for source, copy in [
            (Path(sys.base_prefix) / "lib" / version, base / "lib" / version),
            (Path(sys.prefix) / "lib", venv / "lib"),
        ]:
            subprocess.run(["cp", "-al", str(source), str(copy)], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    (base / "lib" / version / "site-packages").mkdir(exist_ok=True)
    (venv / "bin" / "python").symlink_to(base / "bin" / real.name)
    (venv / "pyvenv.cfg").write_text(
        f"home = {base / 'bin'}\ninclude-system-site-packages = false\n"
    )
    return venv / "bin" / "python"


@needs_sandbox
def test_the_reference_in_the_base_interpreters_site_packages_is_hidden(tmp_path):
    """A venv over a Python into which the project was pip-installed (`sudo pip install .`):
    its reference scripts lie in the base's site-packages, which the venv does not import
    from. A student who loads reinforce.py from there finds none; the right file passes."""
    if hard_linked_python(tmp_path / "python") is not None:
        return graded_beside(tmp_path / "python", tmp_path)
    try:  # on the venv's file system: /tmp may be another
        beside = tempfile.TemporaryDirectory(dir=Path(sys.prefix).parent)
    except OSError:
        pytest.skip("no hard link of this Python can be made (another file system, owner)")
    with beside as place:
        if hard_linked_python(Path(place)) is None:
            pytest.skip("no hard link of this Python can be made (another file system, owner)")
        graded_beside(Path(place), tmp_path)


def graded_beside(place, tmp_path):
    """The class of the test above, graded by the hard-linked Python in place."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    libraries = place / "base" / "lib" / version / "site-packages"
    shutil.copy(ROOT / "reinforce.py", libraries / "reinforce.py")  # what pip install . puts
    folder = tmp_path / "handed_in"
    folder.mkdir()
    (folder / "ada.py").write_text(exercise_maker.exercise("reinforce", solved=True))
    pattern = f"{place / 'base'}/lib/python*/*-packages/reinforce.py"
    (folder / "mallory.py").write_text(SEEN.format(pattern=pattern))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    check = [str(place / "venv" / "bin" / "python"), str(ROOT / "exercises" / "check.py")]
    done = subprocess.run(
        [*check, "reinforce", "--folder", str(folder)],
        capture_output=True, text=True, env=env, timeout=HANG,
    )  # fmt: skip
    assert done.stderr == "" and done.stdout.splitlines()[1:] == [
        "ada      2 of 2",
        "mallory  0 of 2      ✗ discounted_returns, ✗ reinforce_loss",
    ], done.stdout + done.stderr


# ----------------------------------------------------------------------------------------------
# The sandbox and the grader against a dishonest class, a second time: keyrings, sockets,
# answers that the grader would build into gigabytes, names that look alike, the CSV's path
# ----------------------------------------------------------------------------------------------
NUMBERS = {  # machine: add_key, request_key, keyctl, io_uring_setup, ptrace
    "x86_64": (248, 249, 250, 425, 101),
    "aarch64": (217, 218, 219, 425, 117),
}
needs_numbers = pytest.mark.skipif(
    platform.machine() not in NUMBERS, reason="this machine's system call numbers are not known"
)
KEYRINGS = """    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    add_key, request_key, keyctl = {numbers}

    def call(*args):
        result = libc.syscall(*args)
        return result if result >= 0 else -ctypes.get_errno()

    secret = ctypes.create_string_buffer(64)
    key = call(keyctl, 10, ctypes.c_int(-3), b"user", b"teacher_token", 0)  # search @s
    read = call(keyctl, 11, key, secret, 64)
    made = call(add_key, b"user", b"note", b"left here", 9, ctypes.c_int(-2))  # @p: not kept
    asked = call(request_key, b"user", b"note", None, ctypes.c_int(0))
    try:
        listed = open("/proc/keys").read()
    except OSError as error:
        listed = type(error).__name__
    raise RuntimeError(f"{{key}} {{read}} {{made}} {{asked}} {{secret.value}} {{listed}}")
"""
TEACHER = """import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
add_key, keyctl = {add_key}, {keyctl}
if libc.syscall(keyctl, 1, None) >= 0:  # a session keyring of its own, as a login's
    libc.syscall(add_key, b"user", b"teacher_token", b"SECRET-72", 9, ctypes.c_int(-3))
os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
"""


@needs_sandbox
@needs_numbers
def test_a_student_reaches_no_kernel_keyring(tmp_path):
    """The grader run from a login's session keyring that holds a secret: a student's function
    finds no key in it, reads none, makes none (a key left in nobody's user keyring would be
    every later sandbox's), asks for none, and /proc/keys does not name them."""
    add_key, request_key, keyctl, _, _ = NUMBERS[platform.machine()]
    path = tmp_path / "reinforce.py"
    body = KEYRINGS.format(numbers=(add_key, request_key, keyctl))
    path.write_text(wrong_file("reinforce", "discounted_returns", body))
    (tmp_path / "teacher.py").write_text(TEACHER.format(add_key=add_key, keyctl=keyctl))
    check = [str(ROOT / "exercises" / "check.py"), "reinforce", "--file", str(path)]
    done = cli([str(tmp_path / "teacher.py"), *check], tmp_path)
    assert done.stdout.splitlines()[0].endswith(
        "raised RuntimeError: -1 -1 -1 -1 b'' PermissionError"
    ), done.stdout + done.stderr


NO_WAY_OUT = """    import ctypes
    import socket
    libc = ctypes.CDLL(None, use_errno=True)
    io_uring_setup, ptrace = {numbers}
    got = []
    for make in (socket.socketpair, socket.socket, lambda: socket.socket(socket.AF_UNIX)):
        try:
            make()
            got.append("made")
        except OSError as error:
            got.append(error.errno)
    got.append(libc.syscall(io_uring_setup, 4, ctypes.create_string_buffer(120)))
    got.append(libc.syscall(ptrace, 16, 1, 0, 0))  # PTRACE_ATTACH to bwrap's init
    got += [os.path.exists("/dev/ptmx"), os.listdir("/dev/pts"), os.uname().nodename]
    raise RuntimeError(f"{{got}}")
"""


@needs_sandbox
@needs_numbers
def test_a_student_makes_no_socket_no_io_uring_no_terminal_and_traces_no_process(tmp_path, capsys):
    """No socket (the child talks over pipes; a socket's buffers are memory no limit of a
    process counts), no io_uring, no trace of bwrap's init (which no filter holds), no
    pseudo-terminal, and the machine's name is not the sandbox's."""
    _, _, _, io_uring_setup, ptrace = NUMBERS[platform.machine()]
    path = tmp_path / "reinforce.py"
    body = NO_WAY_OUT.format(numbers=(io_uring_setup, ptrace))
    path.write_text(wrong_file("reinforce", "discounted_returns", body))
    code, lines = grade("reinforce", path, capsys)
    assert code == 1 and lines[0].endswith(
        "raised RuntimeError: [1, 1, 1, -1, -1, False, [], 'grading']"
    ), lines
    assert lines[1].startswith("✓ reinforce_loss")


HUGE = """    os.calls = getattr(os, "calls", 0) + 1
    odd = type("x" * 1_000_000, (), {})
    shape = {1: (2,) * 20 + (0,), 2: (4000,) + (1,) * 30, 3: (2_000_000,)}.get(os.calls)
    if shape is not None:  # no number, 2 ** 21 lists; 124,000 lists; two million numbers
        return torch.zeros(shape, dtype=torch.bool)
    if os.calls == 4:
        return [0.0] * 300_000  # a list of 300,000 numbers: 1.5 MB of JSON
    if os.calls == 5:
        return odd()  # a type whose name is a million characters
    return torch.zeros_like(rewards)
"""


def test_an_answer_too_large_for_its_case_is_never_built_into_python_lists(
    tmp_path, capsys, monkeypatch, forked
):
    """Answers whose lists and numbers would be far more, or nest far deeper, than their
    case's expected value (an empty tensor of 21 dimensions, a column 31 deep, two million
    numbers, a list of 300,000), a type name and a load error of millions of characters: each
    is its student's ✗ line, in words from its shape and dtype, and the grader builds no list,
    reads no list and escapes no string of them."""
    built = []
    tolist, numbers, clean = torch.Tensor.tolist, exercise_cases.numbers, base.clean

    def guarded_tolist(tensor):
        if tensor.dim() > 8 or tensor.numel() > 100_000:
            built.append(f"tolist {tuple(tensor.shape)}")
            return []
        return tolist(tensor)

    def guarded_numbers(value):
        if isinstance(value, (list, tuple)) and len(value) > 100_000:
            built.append(f"numbers of {len(value)}")
            return None
        return numbers(value)

    def guarded_clean(text):
        if len(str(text)) > 100_000:
            built.append(f"clean of {len(str(text))}")
            return clean(str(text)[:100])
        return clean(text)

    monkeypatch.setattr(torch.Tensor, "tolist", guarded_tolist)
    monkeypatch.setattr(exercise_cases, "numbers", guarded_numbers)
    monkeypatch.setattr(base, "clean", guarded_clean)
    path = tmp_path / "reinforce.py"
    path.write_text(wrong_file("reinforce", "discounted_returns", HUGE))
    code, lines = grade("reinforce", path, capsys)
    assert (
        code == 1
        and len(lines) == 3
        and lines[0].endswith(
            f"returned a tensor of bool of shape ({', '.join(['2'] * 20)}, 0), where train() needs "
            "a tensor of shape (3, 1)"
        )
    ), lines
    assert built == []
    path.write_text('raise ValueError("x" * 4_000_000)\n')
    code, lines = grade("reinforce", path, capsys)
    assert code == 2 and len(lines) == 1 and lines[0].endswith("x...") and built == [], lines


def test_names_alike_in_any_two_scripts_are_marked_and_two_chinese_names_are_not(tmp_path):
    """A Greek, a Cyrillic, a Cherokee, a Lisu and a Carian letter where a Latin A was, or
    for one another: each name marked by its whole file name, escaped; two different Chinese
    names, and two Latin ones, as they are."""
    for name in ["Ada", "\u0391da", "\u0410da", "\u13aada", "\ua4eeda", "\U000102a0da", "Bob"]:
        (tmp_path / f"{name}.py").write_text("")
    for name in ["张伟", "李娜"]:
        (tmp_path / f"{name}.py").write_text("")
    names = [name for name, _ in classroom.submissions("vpg", tmp_path)]
    assert sorted(names) == sorted(
        [
            "'Ada.py'",
            "'\\u0391da.py'",
            "'\\u0410da.py'",
            "'\\u13aada.py'",
            "'\\ua4eeda.py'",
            "'\\U000102a0da.py'",
            "Bob",
            "张伟",
            "李娜",
        ]
    ), names


def test_names_alike_within_one_script_are_marked_by_unicodes_table(tmp_path):
    """UTS #39's skeleton: aǀice (U+01C0) beside alice, ɡreg (U+0261) beside greg, rn beside m,
    each marked; bob, and amy beside arny's mark, as they are (the marks of m and rn still
    look alike, and the marking ends)."""
    for name in ["alice", "a\u01c0ice", "greg", "\u0261reg", "m", "rn", "bob"]:
        (tmp_path / f"{name}.py").write_text("")
    names = [name for name, _ in classroom.submissions("vpg", tmp_path)]
    assert sorted(names) == sorted(
        ["'alice.py'", "'a\\u01c0ice.py'", "'greg.py'", "'\\u0261reg.py'", "'m.py'", "'rn.py'"]
        + ["bob"]
    ), names


def test_the_table_of_names_is_unicodes_confusables_from_the_pinned_package():
    """The prototypes are confusables.txt's (as confusable-homoglyphs 3.3.1 ships it: 6,307
    lines), its lines read the right way round: a source to its prototype, which maps to
    nothing; the version is requirements.txt's pin."""
    from importlib.metadata import version

    pins = (ROOT / "requirements.txt").read_text().splitlines()
    assert f"confusable-homoglyphs=={version('confusable-homoglyphs')}" in pins
    table = classroom.prototypes()
    assert len(table) == 6307
    lines = {"\u01c0": "l", "\u0261": "g", "\u0430": "a", "1": "l", "I": "l", "m": "rn"}
    lines |= {"0": "O", "\u0391": "A", "\u13aa": "A", "\u2f47": "\u65e5", "\uff41": "a"}
    assert {source: table.get(source) for source in lines} == lines
    assert not {"l", "a", "g", "A", "O", "r", "n", "\u65e5"} & set(table)  # prototypes
    assert not [c for c, prototype in table.items() if table.get(prototype) == c]  # no 2-cycle
    assert classroom.skeleton("aǀice") == classroom.skeleton("alice") == "alice"
    assert classroom.skeleton("张伟") != classroom.skeleton("李娜")


def test_names_are_grouped_by_skeleton_in_one_pass(monkeypatch):
    """10,000 names: one skeleton each (never a pair compared), the alike ones found."""
    names = [f"s{k:05d}" for k in range(10_000)]  # 0 and 1 have O and l as prototypes
    names[7] = "s0000l"  # beside s00001
    names[9_999] = "\u0455" + names[42][1:]  # a Cyrillic ѕ: beside s00042
    calls = []
    skeleton = classroom.skeleton

    def counted(name):
        calls.append(name)
        return skeleton(name)

    monkeypatch.setattr(classroom, "skeleton", counted)
    assert classroom.alike(names) == {1, 7, 42, 9_999}
    assert sorted(calls) == sorted(names)


def test_the_folder_mode_without_the_table_of_names_says_so_in_one_line(
    tmp_path, capsys, monkeypatch
):
    (tmp_path / "ada.py").write_text("")
    monkeypatch.setitem(sys.modules, "confusable_homoglyphs", None)  # as if not installed
    classroom.prototypes.cache_clear()
    try:
        code, lines = grade_args(capsys, "vpg", "--folder", str(tmp_path), "--trusted")
    finally:
        classroom.prototypes.cache_clear()
    assert code == 2 and lines == [f"check.py: error: {classroom.NO_TABLE}"]
    assert "pip install -r requirements.txt" in lines[0]


def test_the_csv_path_is_a_file_of_the_graders_own_and_claimed_before_anyone_is_graded(
    tmp_path, capsys, monkeypatch
):
    """--csv naming /dev/stdout or /dev/null (which the table would replace, as root), a link,
    a FIFO, or another user's file (which the grader could not replace in a shared folder):
    one line, exit 2, no one graded, the entry as it was. An absent path is the grader's
    from the start, so that no one takes it while the class is graded, and is gone again if
    grading stops."""
    replaced = []

    def refused(source, target):  # should this grader try: nothing of the machine's replaced
        replaced.append(str(target))
        raise PermissionError(1, "not in this test")

    monkeypatch.setattr(os, "replace", refused)
    folder = tmp_path / "handed_in"
    folder.mkdir()
    (folder / "ada.py").write_text(exercise_maker.exercise("vpg"))
    (tmp_path / "target.csv").write_text("the teacher's\n")
    (tmp_path / "link.csv").symlink_to(tmp_path / "target.csv")
    os.mkfifo(tmp_path / "fifo.csv")
    tables = ["/dev/stdout", "/dev/null", tmp_path / "link.csv", tmp_path / "fifo.csv"]
    if os.geteuid() == 0:
        (tmp_path / "theirs.csv").write_text("")
        os.chown(tmp_path / "theirs.csv", 65534, 65534)
        tables.append(tmp_path / "theirs.csv")
    for table in tables:
        code, lines = grade_args(capsys, "vpg", "--folder", str(folder), "--csv", str(table))
        assert code == 2 and len(lines) == 1 and lines[0].startswith("check.py: error: --csv")
    assert replaced == [] and (tmp_path / "link.csv").is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["handed_in", "target.csv", "link.csv", "fifo.csv", *(["theirs.csv"] * (len(tables) > 4))]
    )
    monkeypatch.undo()
    table, seen = tmp_path / "grades.csv", []
    graded = classroom.graded

    def watched(*args):
        seen.append((table.is_file(), table.stat().st_uid == os.geteuid()))
        return graded(*args)

    monkeypatch.setattr(classroom, "graded", watched)
    code, lines = grade_args(capsys, "vpg", "--folder", str(folder), "--csv", str(table))
    assert code == 1 and seen == [(True, True)] and table.read_text().startswith("student,")

    def interrupted(*args):
        raise KeyboardInterrupt

    table.unlink()
    monkeypatch.setattr(classroom, "graded", interrupted)
    with pytest.raises(KeyboardInterrupt):
        command_line.main(["vpg", "--folder", str(folder), "--csv", str(table)])
    assert not [p for p in tmp_path.iterdir() if "grades.csv" in p.name]
