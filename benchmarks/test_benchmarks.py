# SPDX-License-Identifier: MIT
"""Tests of the benchmark tools (benchmarks/); what the test files share is in conftest.py.

Run: python -m pytest -q benchmarks/test_benchmarks.py

  1. tune.py: two workers on one study (a journal file, a real PostgreSQL), pruning, retries;
  2. mujoco_suite.py: the suite's table; run.py --append adds seeds; race.py, compile_race.py
     and zoo_nets.py (lesson 7's networks);
  3. iqm.py (rliable's IQM) and sb3_ppo.py's rl-zoo settings;
  4. line_world.py: greedy successes, and the line world as the course ran it (--course);
  5. eval_modes.py: the sampled evaluation of every script, through its lesson's names;
  6. every tool of benchmarks/README.md run to its end at its smallest settings (its table
     written), so that a renamed class or exit status fails here, not at a user's.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

import ppo
import reinforce
import vpg
from conftest import HANG, ROOT, flags, python

# ----------------------------------------------------------------------------------------------
# 1. benchmarks/tune.py: Optuna over subprocess runs, on a journal file or a real PostgreSQL
# ----------------------------------------------------------------------------------------------


TUNE = ROOT / "benchmarks" / "tune.py"
# Two trials of two 1,024-step CartPole runs each: seconds, not minutes.
TUNE_ARGV = flags("ppo_gae.py --env-id CartPole-v1 --trials 2 --seeds 1 --total-timesteps 1024")
TUNE_ARGV += flags("--eval-episodes 1 --pruner none")


def tune_cli(*argv, cwd):
    return subprocess.Popen(
        [sys.executable, str(TUNE), *argv],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.fixture(params=["journal", "postgresql"])
def tune_storage(request, tmp_path):
    """A journal file, or the URL of a PostgreSQL server started for the test and removed
    after it (pgserver ships the server's binaries)."""
    if request.param == "journal":
        yield str(tmp_path / "study.journal")
        return
    import pgserver

    server = pgserver.get_server(tmp_path / "pgdata", cleanup_mode="stop")
    yield server.get_uri().replace("postgresql://", "postgresql+psycopg2://", 1)
    server.cleanup()


def load_study(name, storage):
    import optuna

    if "://" in storage:
        return optuna.load_study(study_name=name, storage=storage)
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    return optuna.load_study(study_name=name, storage=JournalStorage(JournalFileBackend(storage)))


def test_tune_two_workers_at_once_share_one_study(tune_storage, tmp_path):
    from optuna.trial import TrialState

    argv = (*TUNE_ARGV, "--study-name", "shared", "--storage", tune_storage)
    workers = [tune_cli(*argv, "--out", str(tmp_path / f"out{i}"), cwd=tmp_path) for i in (1, 2)]
    outputs = [w.communicate(timeout=HANG)[0] for w in workers]
    assert [w.returncode for w in workers] == [0, 0], outputs
    trials = load_study("shared", tune_storage).get_trials()
    # 2 trials from each worker, each in the study once, each with its own number and runs
    assert len(trials) == 4 and {t.number for t in trials} == {0, 1, 2, 3}
    assert all(t.state == TrialState.COMPLETE for t in trials), [t.state for t in trials]
    by_worker = {}
    for t in trials:
        by_worker.setdefault(t.user_attrs["worker_pid"], []).append(t.number)
    assert sorted(len(numbers) for numbers in by_worker.values()) == [2, 2]
    for t in trials:  # the objective is the evaluation that the run itself printed
        (evaluation,) = t.user_attrs["evaluations"]
        (log,) = tmp_path.glob(f"out*/runs/shared/trial{t.number}_seed1/stdout.log")
        said = re.search(r"evaluation over 1 episode: ([\d.]+)", log.read_text()).group(1)
        assert t.value == evaluation == pytest.approx(float(said), abs=0.05)
    assert "Best trial, as the commands of its runs:" in outputs[0] + outputs[1]
    rerun = "for seed in 1; do python ppo_gae.py --env-id CartPole-v1 --seed $seed "
    assert rerun + "--total-timesteps 1024 --eval-episodes 1 " in outputs[0]  # every flag
    # Each worker's report saw the trials done when it ended; --report, after both, sees all.
    final = tune_cli(
        "--study-name",
        "shared",
        "--storage",
        tune_storage,
        "--report",
        "--out",
        str(tmp_path / "final"),
        cwd=tmp_path,
    )
    said = final.communicate(timeout=HANG)[0]
    assert final.returncode == 0, said
    report = (tmp_path / "final" / "shared.md").read_text()
    best = max(trials, key=lambda t: t.value)
    assert (
        f"{rerun}--total-timesteps 1024 --eval-episodes 1 {best.user_attrs['flags']}; done"
        in report
    )


def test_tune_kills_the_runs_of_a_pruned_trial(tune_storage, tmp_path):
    from optuna.trial import TrialState

    # CartPole returns are at most 500: threshold:1000 prunes each trial at its first report,
    # a tenth into runs of 100,000 steps that would take half a minute.
    argv = flags("ppo_gae.py --env-id CartPole-v1 --trials 1 --seeds 1 2 --total-timesteps 100000")
    argv += ("--study-name", "pruned", "--storage", tune_storage, "--pruner", "threshold:1000")
    worker = tune_cli(*argv, "--out", str(tmp_path), cwd=tmp_path)
    output = worker.communicate(timeout=HANG)[0]
    assert worker.returncode == 0, output
    (trial,) = load_study("pruned", tune_storage).get_trials()
    assert trial.state == TrialState.PRUNED
    assert len(trial.intermediate_values) == 1  # stopped at its first report, of 10
    for pid in trial.user_attrs["pids"]:  # killed and reaped, not left running
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    for log in (tmp_path / "runs" / "pruned").glob("trial0_seed*/stdout.log"):  # ... mid-run
        assert "evaluation over" not in log.read_text()
    assert len(list((tmp_path / "runs" / "pruned").glob("trial0_seed*/stdout.log"))) == 2


def test_tune_retries_the_trial_of_a_worker_that_died(tmp_path):
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend
    from optuna.trial import TrialState

    from benchmarks import tune

    storage = JournalStorage(JournalFileBackend(str(tmp_path / "study.journal")))
    study = optuna.create_study(study_name="dead", storage=storage, direction="maximize")
    trial = study.ask()
    trial.suggest_float("learning-rate", 1e-4, 1e-2)
    dead = subprocess.Popen(["true"])
    dead.wait()  # a worker pid that no longer exists
    trial.set_user_attr("worker_pid", dead.pid)
    trial.set_user_attr("host", __import__("socket").gethostname())
    alive = study.ask()  # a running trial of a live worker (this process): left alone
    alive.set_user_attr("worker_pid", os.getpid())
    alive.set_user_attr("host", __import__("socket").gethostname())
    tune.retry_orphans(study)
    states = [t.state for t in study.get_trials()]
    assert states == [TrialState.FAIL, TrialState.RUNNING, TrialState.WAITING]
    again = study.ask()  # the queued retry, with the dead trial's flags
    assert again.suggest_float("learning-rate", 1e-4, 1e-2) == trial.params["learning-rate"]


TUNE_BAD = [
    pytest.param(flags("nosuch.py --env-id CartPole-v1"), "unknown script", id="script"),
    pytest.param(flags("ppo_gae.py --env-id NoSuchEnv-v0"), "NoSuchEnv", id="env"),
    pytest.param(flags("ppo_continuous.py --env-id CartPole-v1"), "Discrete", id="actions"),
    pytest.param(flags("ppo_gae.py --env-id CartPole-v1 --space bad.json"), "bad.json", id="json"),
    pytest.param(
        flags("ppo_gae.py --env-id CartPole-v1 --space flag.json"), "--no-such-flag", id="flag"
    ),
    pytest.param(
        flags("ppo_gae.py --env-id CartPole-v1")
        + ("--storage", "postgresql+psycopg2://tuner:secret@127.0.0.1:9/optuna"),
        "cannot reach the database postgresql+psycopg2://tuner:***@127.0.0.1:9/optuna",
        id="database",
    ),
]


@pytest.mark.parametrize("argv, says", TUNE_BAD)
def test_tune_bad_input_is_one_line_and_status_2(argv, says, tmp_path, monkeypatch, capsys):
    from benchmarks import tune

    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "flag.json").write_text('{"--no-such-flag": {"type": "int", "low": 1, "high": 2}}')
    argv = (*argv, "--study-name", "bad", "--total-timesteps", "1000", "--out", str(tmp_path))
    with pytest.raises(SystemExit) as exc:
        tune.main(tune.parse_args(list(argv)))
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("tune.py: error:") and says in err, err
    assert "secret" not in err


# ----------------------------------------------------------------------------------------------
# 2. benchmarks/mujoco_suite.py: the suite's table; run.py --append adds seeds to a folder
# ----------------------------------------------------------------------------------------------


def test_mujoco_suite_table_scores_each_seeds_final_evaluation(tmp_path, monkeypatch):
    import json

    from benchmarks import mujoco_suite

    monkeypatch.setattr(mujoco_suite, "RESULTS", tmp_path)
    runs = {  # env folder: {seed: final evaluation episodes}
        "hopper": {1: [2000, 3000], 2: [3500, 3500], 3: [1000, 1000]},  # 2500, 3500, 1000
        "reacher": {1: [-4.0, -4.2], 2: [-3.0, -3.2]},  # -4.1 (equal: at), -3.1
    }
    for name, seeds in runs.items():
        (tmp_path / name).mkdir()
        raw = [{"seed": s, "eval_returns": returns} for s, returns in seeds.items()]
        (tmp_path / name / "raw.json").write_text(json.dumps({"runs": raw}))
    mujoco_suite.table(reps=2000)
    rows = {
        line.split("|")[1].strip(): [cell.strip() for cell in line.split("|")[2:-1]]
        for line in (tmp_path / "mujoco_suite.md").read_text().splitlines()
        if line.startswith("| ") and "-v5" in line
    }
    # Hopper: mean 7000/3 = 2333, population std 1027 (by hand), below 2609; one seed above.
    # With 3 seeds the 25% trimmed mean trims none: the IQM is the mean, and the bootstrap's
    # interval lies between the lowest and the highest seed.
    hopper = rows["[Hopper-v5](hopper/table.md)"]
    assert hopper[:2] == ["3", "2333 ± 1027"] and hopper[3:5] == ["1/3", "2609"]
    iqm, interval = hopper[2].split(" [")
    low, high = map(float, interval.rstrip("]").split(", "))
    assert iqm == "2333" and 1000 <= low < 2333 < high <= 3500
    assert hopper[-1] == "2500, 3500, 1000"
    # Reacher: mean -3.6 >= -4.1 is bold; a seed equal to the figure counts as at it
    reacher = rows["[Reacher-v5](reacher/table.md)"]
    assert reacher[:2] == ["2", "**-3.60 ± 0.50**"] and reacher[3:5] == ["2/2", "-4.1"]
    assert reacher[2].startswith("-3.60 [")  # two decimals, as its mean
    assert rows["Ant-v5"][:2] == ["0", "not run"]


def test_race_reads_logs_finds_levels_and_tabulates(tmp_path):
    """benchmarks/race.py on a made-up curve: the peer's episode log, the first time the mean of
    20 episodes reaches each level, and the table's times, steps and ratios."""
    from benchmarks import race

    t0 = 1000.0
    log = tmp_path / "peer.jsonl"
    log.write_text("".join(json.dumps([100 * (i + 1), t0 + i, float(i)]) + "\n" for i in range(40)))
    peer = race.read_peer_log(log, t0)
    assert peer[0] == [100, 0.0, 0.0] and peer[-1] == [4000, 39.0, 39.0]
    # The mean of episodes i-19..i is i - 9.5: it first reaches 10 at i = 20 (step 2100, 20 s).
    assert race.crossing(peer, 10) == (2100, 20.0)
    assert race.crossing(peer, 29.5) == (4000, 39.0) and race.crossing(peer, 30) is None
    ours = [[50 * (i + 1), 0.5 * i, 2.0 * i] for i in range(40)]  # twice the return, twice as fast
    # Ours' mean of the last 20 is 2i - 19, from i = 19 (the 20th episode) on: 19 there, so it
    # reaches 10 at once (step 1000, 9.5 s); 30 at i = 25 (step 1300, 12.5 s).
    assert race.crossing(ours, 10) == (1000, 9.5) and race.crossing(ours, 30) == (1300, 12.5)
    seeds = {"1": {"ours": {"episodes": ours}, "peer": {"episodes": peer}}}
    # 25, 50, 75, 100% of 40; then 125% = 50 while ours' best mean (2 * 39 - 19 = 59) allows.
    assert race.levels(40, seeds) == [10, 20, 30, 40, 50]
    rows = {line.split(" |")[0]: line for line in race.table("Hopper-v5", seeds, 40).splitlines()}
    # Level 20: ours at i = 20 (step 1050, 10 s), the peer at i = 30 (step 3100, 30 s): 0.33.
    assert rows["| 20"] == "| 20 | 10 s (1,050) / 30 s (3,100) (0.33) | 0.33 (0.33-0.33) |"
    assert rows["| 30"] == "| 30 | 12 s (1,300) / — | — |"  # the peer never gets there


def test_compile_race_tabulates_compiled_against_eager_and_the_old_race(tmp_path):
    """benchmarks/compile_race.py on made-up runs of Hopper (figure 2609): the compiled run
    is twice as fast in seconds; the old race's ours / rl-zoo3 ratio is halved with it."""
    from benchmarks import compile_race

    def run(seconds_per_episode, slope=200.0):  # 20 episodes then a return that climbs
        return [[1000 * (i + 1), seconds_per_episode * (i + 1), slope * i] for i in range(40)]

    def record(episodes):
        return {"returncode": 0, "wall_s": episodes[-1][1], "episodes": episodes}

    folders = {}
    for name, episodes in [("eager", run(2.0)), ("compile", run(1.0))]:
        folders[name] = tmp_path / name
        folders[name].mkdir()
        raw = {"Hopper-v5": {"1": {"ours": record(episodes)}}}
        (folders[name] / "raw.json").write_text(json.dumps(raw))
    (tmp_path / "race").mkdir()  # another day's race: ours as the eager run, the peer 4x slower
    old = {"ours": record(run(2.0)), "peer": record(run(8.0))}
    (tmp_path / "race" / "raw.json").write_text(json.dumps({"Hopper-v5": {"1": old}}))
    argv = ["--out", str(folders["compile"]), "--eager", str(folders["eager"])]
    compile_race.main([*argv, "--race", str(tmp_path / "race")])
    lines = (folders["compile"] / "table.md").read_text().splitlines()
    assert "| 1 | 80, 40 (0.50) | 1,000 | —, — |" in lines  # the last episode; no evaluation
    # Compiling for 15 s, then 1 s an episode against 2: level at the 15th episode, ahead on.
    late = [[step, seconds + 15, r] for step, seconds, r in run(1.0)]
    assert compile_race.ahead_from(run(2.0), late) == 15_000
    assert compile_race.ahead_from(run(2.0), run(3.0)) is None
    # The mean of the last 20, 200 (i - 9.5), passes 652.2 at once at i = 19: eager 40 s,
    # compiled 20 s, the peer 160 s: ratios 0.50, then 0.25, then 0.125 with the compile.
    assert "| 652.2 | 0.50 (0.50-0.50) | 0.25 (0.25-0.25) | 0.12 (0.12-0.12) |" in lines


def test_race_sets_r_beside_its_variants_from_run_py_folders(tmp_path):
    """race.py --variants: R's runs from the race's raw.json, its variants' from a run.py
    folder (a failed run left out), tabulated at 25-100% of Hopper's 2609; the variants.json it
    writes gives the same table again."""
    from benchmarks import race

    # R: returns 100 i, so the mean of the last 20 is 100 (i - 9.5) from i = 19 (step 2000, 19 s)
    # on: at 652 then; at 1304 from i = 23, 1957 from i = 30, 2609 from i = 36; 2950 at the end.
    r = [[100 * (i + 1), float(i), 100.0 * i] for i in range(40)]
    race_raw = {"Hopper-v5": {"1": {"ours": {"episodes": r}, "peer": {"episodes": []}}}}
    (tmp_path / "raw.json").write_text(json.dumps(race_raw))
    flat = [
        [[k * 100 * (i + 1), k * i + k - 1.0, 600.0 + 100 * k] for i in range(40)] for k in (1, 2)
    ]
    runs = [
        dict(script="R, gamma .999", seed=k, returncode=0, episodes=flat[k - 1]) for k in (1, 2)
    ]
    runs.append(dict(script="R, gamma .999", seed=3, returncode=1, episodes=[]))
    (tmp_path / "gamma").mkdir()
    (tmp_path / "gamma" / "raw.json").write_text(json.dumps({"env_id": "Hopper-v5", "runs": runs}))
    argv = ["--env-id", "Hopper-v5", "--out", str(tmp_path), "--variants", str(tmp_path / "gamma")]
    assert race.main(race.parse_args(argv)) == 0
    table = (tmp_path / "variants.md").read_text()
    rows = {line.split(" |")[0]: line for line in table.splitlines()}
    assert rows["| run"].startswith("| run | 652 (25%) | 1304 (50%) | 1957 (75%) | 2609 (100%) |")
    assert rows["| R"] == (
        "| R | 2,000, 19 s (1/1) | 2,400, 23 s (1/1) | 3,100, 30 s (1/1) "
        "| 3,700, 36 s (1/1) | 2950 |"
    )
    # Seeds 1 and 2 stay at 700 and 800: both at 652 at their 20th episode (step 2000, 19 s and
    # step 4000, 39 s), never higher; seed 3 failed and is not counted.
    assert rows["| R, gamma .999"] == (
        "| R, gamma .999 | 3,000 (2,000-4,000), 29 (19-39) s (2/2) | never (0/2) | never (0/2) "
        "| never (0/2) | 750 (700-800) |"
    )
    argv[-1] = str(tmp_path / "variants.json")  # the kept runs: the same table
    assert race.main(race.parse_args(argv)) == 0
    assert (tmp_path / "variants.md").read_text() == table


def test_race_runs_each_side_as_a_queue_on_its_own_core_and_keeps_what_is_done(
    tmp_path, monkeypatch
):
    """race.py's main(): ours on core 0 and the peer on core 1, each through the envs and seeds
    in order; a run already done is kept, a failed one runs again, and the table gets only the
    seeds that both sides finished."""
    from benchmarks import race

    done = dict(returncode=0, episodes=[[1, 1.0, 1.0]])
    raw = {"Hopper-v5": {"1": {"ours": done, "peer": dict(done, returncode=1)}}}
    (tmp_path / "raw.json").write_text(json.dumps(raw))
    calls, reported = [], {}

    def run_side(args, env_id, seed, side, core):
        calls.append((side, core, env_id, seed))
        return dict(returncode=1 if (side, env_id, seed) == ("peer", "Walker2d-v5", "2") else 0)

    monkeypatch.setattr(race, "run_side", run_side)
    monkeypatch.setattr(race, "report", lambda raw, out: reported.update(raw))
    argv = ["--env-id", "Hopper-v5", "Walker2d-v5", "--seeds", "1", "2", "--out", str(tmp_path)]
    assert race.main(race.parse_args(argv)) == 0
    ours = [("ours", 0, e, s) for e, s in [("Hopper-v5", "2"), ("Walker2d-v5", "1")]]
    ours += [("ours", 0, "Walker2d-v5", "2")]
    peer = [("peer", 1, e, s) for e, s in [("Hopper-v5", "1"), ("Hopper-v5", "2")]]
    peer += [("peer", 1, "Walker2d-v5", "1"), ("peer", 1, "Walker2d-v5", "2")]
    assert [c for c in calls if c[0] == "ours"] == ours
    assert [c for c in calls if c[0] == "peer"] == peer
    saved = json.loads((tmp_path / "raw.json").read_text())
    assert saved["Hopper-v5"]["1"]["ours"] == done and saved["Walker2d-v5"]["2"]["peer"]
    # Every seed has both sides on record, the failed peer too (the table shows its dashes).
    assert {e: sorted(s) for e, s in reported.items()} == {
        "Hopper-v5": ["1", "2"],
        "Walker2d-v5": ["1", "2"],
    }
    calls.clear()
    argv += ["--sides", "peer"]  # a second peer queue: only the failed run again
    assert race.main(race.parse_args(argv)) == 0
    assert calls == [("peer", 1, "Walker2d-v5", "2")]


def test_race_table_keeps_every_env_its_raw_json_holds(tmp_path):
    # --table alone (no --env-id) once rewrote a table of three envs with Hopper's alone
    from benchmarks import race

    episodes = [[100 * (i + 1), float(i), 100.0 * i] for i in range(40)]
    seed = {"1": {side: dict(returncode=0, episodes=episodes) for side in race.SIDES}}
    raw = {"Hopper-v5": seed, "Walker2d-v5": seed, "HalfCheetah-v5": seed}
    (tmp_path / "raw.json").write_text(json.dumps(raw))
    assert race.main(race.parse_args(["--table", "--out", str(tmp_path)])) == 0
    table = (tmp_path / "table.md").read_text()
    assert all(env_id in table for env_id in raw), table
    assert race.parse_args([]).out == str(ROOT / "benchmarks/results/mujoco_vs_sb3/race")


def test_zoo_nets_says_its_own_name(tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "zoo_nets.py"), "--help"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and done.stdout.startswith("usage: zoo_nets.py [-h]")


def test_race_runs_rl_zoo3s_own_entry_for_the_v4_env(capsys):
    from benchmarks import race

    name, entry = race.zoo_entry("Hopper-v5")
    assert name == "Hopper-v4" and entry["n_steps"] == 512 and entry["batch_size"] == 32
    kwargs = race.zoo_model_kwargs(entry)
    assert "n_envs" not in kwargs and "normalize" not in kwargs and kwargs["gamma"] == 0.999
    assert kwargs["policy_kwargs"]["log_std_init"] == -2
    assert kwargs["policy_kwargs"]["activation_fn"] is torch.nn.ReLU
    with pytest.raises(KeyError):
        race.zoo_entry("NoSuchEnv-v5")


def test_zoo_nets_trains_ppo_continuous_with_256x256_relu_actor_and_critic(tmp_path):
    """benchmarks/zoo_nets.py (lesson 7's networks): the run it starts saves weights of 256x256
    layers for both networks, with ppo_continuous.py's flags and initialisation otherwise."""
    from benchmarks import zoo_nets

    script = ROOT / "benchmarks" / "zoo_nets.py"
    flags = ["--env-id", "Pendulum-v1", "--total-timesteps", "512", "--num-envs", "2"]
    flags += ["--eval-episodes", "0", "--log-std-init", "-2", "--save-model"]
    flags += ["--critic-hidden", "32", "--run-dir", str(tmp_path)]
    done = subprocess.run([sys.executable, script] + flags, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    saved = torch.load(tmp_path / "zoo_nets.pt")  # the weights, and the script that saved them
    assert saved["script"] == "zoo_nets.py"
    weights = saved["agent"]  # Pendulum: 3 numbers in, 1 action out
    for net in ("actor_mean", "critic"):
        shapes = [tuple(weights[f"{net}.{i}.weight"].shape) for i in (0, 2, 4)]
        assert shapes == [(256, 3), (256, 256), (1, 256)], net
    assert torch.allclose(weights["actor_logstd"], torch.tensor([-2.0]), atol=0.05)
    agent = zoo_nets.ZooAgent(11, 3, log_std_init=-2.0)  # Hopper's sizes: the actor gives 3
    relu_mlp = [torch.nn.Linear, torch.nn.ReLU, torch.nn.Linear, torch.nn.ReLU, torch.nn.Linear]
    assert [type(m) for m in agent.actor_mean] == relu_mlp
    assert [type(m) for m in agent.critic] == relu_mlp
    assert agent.actor_mean[4].out_features == 3 and agent.critic[4].out_features == 1
    # ppo_continuous.py's initialisation: orthogonal rows, the mean's last layer scaled to 0.01
    rows = agent.actor_mean[4].weight.norm(dim=1)
    assert torch.allclose(rows, torch.full((3,), 0.01), rtol=1e-4)
    assert agent.critic[4].weight.norm().item() == pytest.approx(1.0, rel=1e-4)


def test_mujoco_suite_tries_an_idea_in_a_folder_of_its_own(tmp_path, monkeypatch):
    import json

    from benchmarks import mujoco_suite

    calls = []
    monkeypatch.setattr(mujoco_suite.subprocess, "run", lambda cmd, **kw: calls.append(cmd))
    argv = ["run", "--envs", "Ant-v5", "Swimmer-v5", "--seeds", "1", "2", "--results"]
    argv = [*argv, str(tmp_path), "--extra", "--ent-coef 0.01", "--reps", "100"]
    mujoco_suite.run(mujoco_suite.parse_args(argv))
    extras = [cmd[cmd.index("--extra") + 1].split() for cmd in calls]
    r, swimmer = mujoco_suite.R.split(), mujoco_suite.SWIMMER.split()
    # R first, then Swimmer's own flags, then the idea's: argparse takes the last of a flag.
    assert extras == [r + ["--ent-coef", "0.01"], r + swimmer + ["--ent-coef", "0.01"]]
    assert [cmd[cmd.index("--out") + 1] for cmd in calls] == [
        f"{tmp_path}/ant",
        f"{tmp_path}/swimmer",
    ]
    assert "| Ant-v5 | 0 | not run |" in (tmp_path / "mujoco_suite.md").read_text()  # its table

    def table_head(extra, script="ppo_continuous.py"):
        (tmp_path / "ant").mkdir(exist_ok=True)
        raw = {"extra": extra, "scripts": [script], "runs": [{"seed": 1, "eval_returns": [1.0]}]}
        (tmp_path / "ant" / "raw.json").write_text(json.dumps(raw))
        mujoco_suite.table(tmp_path, reps=100)
        return (tmp_path / "mujoco_suite.md").read_text().split(" (Swimmer")[0]

    assert table_head(f" {mujoco_suite.R}") == "ppo_continuous.py, 1M steps, recipe R"
    assert table_head(f" {mujoco_suite.R} --lr-target-kl 0.01", "x/copy.py") == (
        "copy.py, 1M steps, recipe R + `--lr-target-kl 0.01`"
    )
    assert table_head(" --num-envs 8  --gamma 0.99") == (  # not R: its flags in full
        "ppo_continuous.py, 1M steps, flags `--num-envs 8 --gamma 0.99`"
    )
    raw = json.loads((tmp_path / "ant" / "raw.json").read_text())
    (tmp_path / "ant" / "raw.json").write_text(json.dumps({**raw, "total_timesteps": 4096}))
    mujoco_suite.table(tmp_path, reps=100)
    assert (tmp_path / "mujoco_suite.md").read_text().startswith("ppo_continuous.py, 4,096 steps,")


def test_run_append_adds_seeds_and_keeps_the_runs_it_has(tmp_path):
    import json

    def bench(*argv):
        cmd = [sys.executable, str(ROOT / "benchmarks" / "run.py")]
        cmd += ["--scripts", "ppo_gae.py", "--env-id", "CartPole-v1", "--threshold", "10"]
        cmd += ["--total-timesteps", "512", "--out", str(tmp_path), *argv]
        return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)

    assert bench("--seeds", "1", "--extra", "--eval-episodes 1").returncode == 0
    first = json.loads((tmp_path / "raw.json").read_text())["runs"]
    added = bench("--seeds", "1", "2", "--extra", "--eval-episodes 1", "--append")
    assert added.returncode == 0, added.stderr
    assert "[1/1] ppo_gae.py seed 2" in added.stdout  # seed 1 is not run again
    raw = json.loads((tmp_path / "raw.json").read_text())
    assert raw["seeds"] == [1, 2] and [r["seed"] for r in raw["runs"]] == [1, 2]
    assert raw["runs"][0]["episodes"] == first[0]["episodes"]
    assert raw["runs"][0]["wall_s"] == first[0]["wall_s"]
    assert len(raw["runs"][1]["eval_returns"]) == 1
    other = bench("--seeds", "3", "--extra", "--eval-episodes 2", "--append")  # other flags
    assert other.returncode == 1 and other.stdout == ""
    assert other.stderr.startswith("run.py: error: --append:") and other.stderr.count("\n") == 1
    assert [r["seed"] for r in json.loads((tmp_path / "raw.json").read_text())["runs"]] == [1, 2]


# ----------------------------------------------------------------------------------------------
# 3. rliable's IQM (benchmarks/iqm.py); SB3's settings (benchmarks/sb3_ppo.py)
# ----------------------------------------------------------------------------------------------


def test_iqm_of_known_numbers_and_its_bootstrap_interval():
    import itertools

    from benchmarks import iqm

    # The IQM is scipy's 25% trimmed mean: with 5 scores it drops the lowest and the highest,
    # with 8 the two lowest and the two highest. One wild seed moves the mean, not the IQM.
    assert iqm.iqm_interval([4, 100, 2, 1, 3], reps=200)[0] == 3.0  # (2 + 3 + 4) / 3
    assert iqm.iqm_interval([0, 10, 20, 30, 40, 50, 60, 1000], reps=200)[0] == 35.0
    assert iqm.iqm_interval([5.0] * 4, reps=200) == (5.0, 5.0, 5.0)
    # The interval: the 2.5% and 97.5% points of the IQMs of resampled seeds. With 5 scores
    # there are 5^5 equally likely resamples; the exact points are 4/3 (the IQM of 1, 1, 2 in
    # the middle) and 68 ((4 + 100 + 100) / 3), each on a plateau wide enough that rliable's
    # Monte Carlo draw lands on it.
    scores = [1.0, 2.0, 3.0, 4.0, 100.0]
    every = [
        np.sort(np.take(scores, idx))[1:4].mean() for idx in itertools.product(range(5), repeat=5)
    ]
    assert np.percentile(every, [2.5, 97.5]) == pytest.approx([4 / 3, 68.0])
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    result = iqm.iqm_interval(scores, reps=20_000)
    assert result == pytest.approx((3.0, 4 / 3, 68.0))
    assert np.array_equal(np.random.get_state()[1], before)  # numpy's global RNG left as found
    assert iqm.iqm_interval(scores, reps=3000, seed=7) == iqm.iqm_interval(scores, 3000, seed=7)
    # mean 22, population std sqrt((21² + 20² + 19² + 18² + 78²) / 5) = 39.01; decimals by size
    assert iqm.spread(scores, reps=2000) == ("22 ± 39", "3 [1, 68]")
    assert iqm.spread(scores, reps=2000, decimals=2) == ("22.00 ± 39.01", "3.00 [1.33, 68.00]")


def test_iqm_reads_raw_json_and_scores_the_peak_as_tianshou_does(tmp_path, capsys):
    import json

    from benchmarks import iqm

    # Two seeds of one script and one of a variant; episodes are (env step, seconds, return).
    raw = {
        "runs": [
            {
                "script": "a.py",
                "seed": 1,
                "eval_returns": [10, 20],
                "episodes": [[5, 0, 1.0], [8, 0, 3.0], [12, 0, 5.0], [25, 0, 7.0], [29, 0, 9.0]],
            },
            {
                "script": "a.py",
                "seed": 2,
                "eval_returns": [30],
                "episodes": [[10, 0, 2.0], [20, 0, 4.0], [30, 0, 0.0]],
            },
            {"script": "b", "seed": 1, "eval_returns": [1, 2, 3], "episodes": [[10, 0, 1.0]]},
        ]
    }
    assert iqm.final_evaluations(raw) == {"a.py": {1: 15.0, 2: 30.0}, "b": {1: 2.0}}
    # Every 10 steps up to 30, each seed's last 2 episodes that ended by then:
    # seed 1: (1+3)/2 = 2, (3+5)/2 = 4, (7+9)/2 = 8; seed 2: 2, (2+4)/2 = 3, (4+0)/2 = 2.
    # Their mean: 2, 3.5, 5; the peak is 5 at step 30.
    peak, step, curve = iqm.peak_of_mean_curve(raw, "a.py", every=10, episodes=2, until=30)
    assert (peak, step) == (5.0, 30) and curve == [(10, 2.0), (20, 3.5), (30, 5.0)]
    # Runs of 25 steps: no point at 30, past their end (which took their last episode's 5)
    peak, step, curve = iqm.peak_of_mean_curve(raw | dict(total_timesteps=25), "a.py", 10, 2, 30)
    assert (peak, step) == (3.5, 20) and curve == [(10, 2.0), (20, 3.5)]
    (tmp_path / "raw.json").write_text(json.dumps(raw))
    out = iqm.table([tmp_path], reps=100)
    assert f"| {tmp_path.name} | a.py | 1,2 | 22.5 ± 7.5 | 22.5 [" in out
    assert f"| {tmp_path.name} | b | 1 | 2.00 ± 0.00 | 2.00 [2.00, 2.00] |" in out
    with pytest.raises(SystemExit) as exc:
        iqm.parse_args([str(tmp_path / "nothing")])
    assert exc.value.code == 2 and "no raw.json there" in capsys.readouterr().err


def test_sb3_ppo_settings_are_rl_zoo3s_own():
    import importlib.metadata
    import importlib.util

    import yaml

    from benchmarks import sb3_ppo

    # rl_zoo3 is found, not imported: importing it patches gymnasium for the whole process.
    spec = importlib.util.find_spec("rl_zoo3")
    assert spec is not None, "rl_zoo3 is missing: pip install -r requirements-dev.txt"
    path = Path(spec.submodule_search_locations[0]) / "hyperparams" / "ppo.yml"
    zoo = yaml.safe_load(path.read_text())
    version = importlib.metadata.version("rl_zoo3")
    assert f"rl-zoo3 {version} `hyperparams/ppo.yml`" in sb3_ppo.__doc__  # the copy names it
    assert sorted(sb3_ppo.ZOO) == ["CartPole-v1", "Pendulum-v1"]
    for env_id, ours in sb3_ppo.ZOO.items():
        theirs = zoo[env_id]
        assert sorted(ours) == sorted(theirs), env_id  # no setting left out or added
        for key, value in theirs.items():
            if isinstance(value, str) and value.startswith("lin_"):  # X * progress_remaining
                start = float(value.removeprefix("lin_"))
                got = [ours[key](p) for p in (1.0, 0.25, 0.0)]
                assert got == pytest.approx([start, start / 4, 0.0]), (env_id, key)
            else:
                assert ours[key] == value, (env_id, key, ours[key], value)


# ----------------------------------------------------------------------------------------------
# 4. benchmarks/line_world.py: greedy successes; the line world as the course ran it
# ----------------------------------------------------------------------------------------------


def test_line_world_benchmark_counts_greedy_successes():
    from benchmarks import line_world as bench

    class Greedy(torch.nn.Module):  # logits of (-1, stay, +1) from [target, position]
        def __init__(self, stay_on_target):
            super().__init__()
            self.stay_on_target = stay_on_target

        def actor(self, obs):
            gap = obs[..., 0] - obs[..., 1]  # (target - position) / 5
            move = torch.where(gap > 1e-6, 2, torch.where(gap < -1e-6, 0, 1))
            if not self.stay_on_target:
                move = torch.where(move == 1, 2, move)  # steps off the target, then back
            return torch.nn.functional.one_hot(move, 3).float()

    best, restless = Greedy(True), Greedy(False)
    assert bench.greedy_successes(vpg, best, 20) == [True] * 20
    policy = bench.greedy_policy(restless)
    assert policy[3] == ">>>><<<<<<<" and bench.kind(policy) == "never stays"
    assert bench.kind(bench.greedy_policy(best)) == "other"
    assert bench.kind(["." * 11] * 10) == "one action"
    # stepping off the target (+1, never clipped: targets are < 10) and back: on it after the
    # 20 steps exactly when the distance at the start was even
    env = gym.make("LineWorld-v0")
    even = []
    for episode in range(20):
        obs, _ = env.reset(seed=bench.EVAL_SEED + episode)
        target, start = np.round((obs + 1) / 2 * 10).astype(int)
        even.append((target - start) % 2 == 0)
    assert bench.greedy_successes(vpg, restless, 20) == even


def test_line_world_as_the_course_ran_it_from_the_scripts_own_pieces():
    """benchmarks/line_world.py --course: the course's networks in the script's own Agent, its
    losses (the critic's x 0.01), batches of 4 whole episodes; judged as the course judged."""
    from types import SimpleNamespace

    from benchmarks import line_world as bench

    assert bench.COURSE == dict(
        episodes=2_000,
        episodes_per_batch=4,
        epochs=8,
        minibatch=64,
        hidden=16,
        critic_coef=0.01,
        gamma=0.99,
        clip_coef=0.2,
    )
    assert [(s, lr, rate, reward) for _, s, lr, rate, reward in bench.COURSE_RUNS] == [
        ("reinforce", 1e-3, 51, -0.035),
        ("vpg", 1e-3, 100, 0.0),
        ("vpg", 4e-3, 12, -0.318),
        ("ppo", 4e-3, 100, 0.0),
    ]
    agent = bench.course_agent(vpg, 16)
    assert type(agent) is vpg.Agent
    assert [type(m) for m in agent.actor] == [torch.nn.Linear, torch.nn.ReLU, torch.nn.Linear]
    assert agent.actor[0].weight.shape == (16, 2) and agent.actor[2].weight.shape == (3, 16)
    assert agent.critic[2].weight.shape == (1, 16)
    # the losses: the script's own, the critic's times 0.01
    logprobs, values = torch.tensor([-1.0, -2.0]), torch.tensor([1.0, 3.0])
    returns = torch.tensor([2.0, 1.0])  # A = (1, -2): policy -1.5, value 2.5 (test_all's section 1)
    loss = bench.course_loss(vpg, "vpg", logprobs, values, returns, None, None)
    assert loss.item() == pytest.approx(-1.5 + 0.01 * 2.5)
    old = torch.tensor([-1.0, -2.0])
    loss = bench.course_loss(ppo, "ppo", logprobs, values, returns, old, returns - values)
    assert loss.item() == pytest.approx(0.5 + 0.01 * 2.5)  # ratio 1: -mean(A) = -(1 - 2) / 2
    loss = bench.course_loss(reinforce, "reinforce", logprobs, None, returns, None, None)
    assert loss.item() == pytest.approx(2.0)  # -((-1)(2) + (-2)(1)) / 2
    # 8 episodes: 2 batches of 4, 20 steps each, every reward <= 0; the same seed, the same run
    agent, played = bench.course_train("ppo", 4e-3, seed=3, episodes=8)
    again = bench.course_train("ppo", 4e-3, seed=3, episodes=8)[1]
    assert len(played) == 8 and played == again and all(-20 <= r <= 0 for r in played)

    # judged: the perfect policy ends on the target with reward 0 every time, greedy or sampled
    def towards_the_target(obs):  # logits of (-1, stay, +1) from [target, position]
        gap = obs[..., 0] - obs[..., 1]
        move = torch.where(gap > 1e-6, 2, torch.where(gap < -1e-6, 0, 1))
        return 50 * torch.nn.functional.one_hot(move, 3).float()  # sampled: the same move

    perfect = SimpleNamespace(actor=towards_the_target)
    for greedy in (True, False):
        successes, finals = bench.judged(perfect, 20, greedy)
        assert successes == [True] * 20 and finals == [0.0] * 20
    # the committed table is the one its raw.json gives
    folder = ROOT / "benchmarks" / "results" / "line_world" / "course"
    raw = json.loads((folder / "raw.json").read_text())
    assert (folder / "table.md").read_text() == bench.make_course_table(raw)
    assert len(raw["results"]) == 40 and raw["seeds"] == list(range(1, 11))


# ----------------------------------------------------------------------------------------------
# benchmarks/same_numbers.py: the same flags and seed, the same returns, in two checkouts
# ----------------------------------------------------------------------------------------------


def test_same_numbers_runs_a_checkout_and_tells_a_changed_return(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import same_numbers

    monkeypatch.setattr(same_numbers, "RUNS", {"ppo_gae.py": [["--total-timesteps", "512"]]})
    before = same_numbers.measure(ROOT)
    (key,) = before
    assert key == "ppo_gae.py --total-timesteps 512" and before[key]["eval"]
    assert before[key]["episodes"] and before[key]["episodes"][-1][0] <= 512
    again = same_numbers.measure(ROOT)
    assert again[key]["episodes"] == before[key]["episodes"]
    assert "| True |" in same_numbers.compare(before, again)
    changed = json.loads(json.dumps(again))
    changed[key]["episodes"][0][1] += 1.0  # one episode's return, one more
    assert "| False |" in same_numbers.compare(before, changed)


# ----------------------------------------------------------------------------------------------
# 5. benchmarks/eval_modes.py: a sampled evaluation, through what each lesson names
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["reinforce", "vpg", "ppo", "ppo_gae", "ppo_continuous"])
def test_eval_modes_samples_each_scripts_policy_through_its_lesson(name):
    # Sampled reaches the Agent only by the names the lesson gives: greedy_action reads actor
    # (or actor_mean), and Sampled puts the policy's noise there. A known policy, drawn 4,000
    # times: P(a = 1) = sigmoid(1) = 0.731 in CartPole; N(0.5, 0.3^2) in Pendulum.
    from benchmarks import eval_modes

    module = __import__(name)
    env = module.make_eval_env(module.parse_args([]).env_id)
    obs = torch.as_tensor(env.reset(seed=0)[0], dtype=torch.float32)
    agent = module.Agent(obs.shape[0], 2 if module.ACTIONS == "Discrete" else 1)
    last = agent.actor[-1] if module.ACTIONS == "Discrete" else agent.actor_mean[-1]
    with torch.no_grad():
        last.weight.zero_()
        last.bias.copy_(torch.tensor([0.0, 1.0]) if module.ACTIONS == "Discrete" else 0.5)
        if module.ACTIONS == "Box":
            agent.actor_logstd.fill_(np.log(0.3))
        sampled = eval_modes.Sampled(agent, seed=3)
        draws = np.array([module.greedy_action(sampled, obs) for _ in range(4000)], dtype=float)
        greedy = module.greedy_action(agent, obs)
    if module.ACTIONS == "Discrete":
        assert greedy == 1 and abs(draws.mean() - 0.731) < 0.03
    else:
        assert greedy == pytest.approx([0.5]) and abs(draws.mean() - 0.5) < 0.02
        assert abs(draws.std() - 0.3) < 0.02
    returns = module.evaluate(sampled, env, 2, 10_000, torch.device("cpu"))  # as measure() runs it
    assert len(returns) == 2 and all(np.isfinite(returns))


# ----------------------------------------------------------------------------------------------
# 6. Every tool of benchmarks/README.md, run to its end at its smallest settings
# ----------------------------------------------------------------------------------------------

# tool: (its flags, OUT the test's folder; what it writes into OUT)
SMOKE = {
    "sb3_ppo.py": (
        "--env-id CartPole-v1 --total-timesteps 256 --eval-episodes 1 --run-dir OUT/run",
        ["run"],
    ),
    "mujoco_suite.py": (
        "run --envs Hopper-v5 --seeds 1 --total-timesteps 2048 --jobs 1 --results OUT --reps 100",
        ["mujoco_suite.md", "hopper/table.md"],
    ),
    "iqm.py": ("--peak OUT", []),  # over a copy of a results folder
    "race.py": (
        "--env-id Hopper-v5 --seeds 1 --total-timesteps 1024 --out OUT",
        ["raw.json", "table.md", "curves.png"],
    ),
    "compile_race.py": ("--out OUT --eager OUT/eager --race OUT/race", ["table.md"]),
    "sps.py": ("--num-envs 4 --num-steps 8 --min-steps 64 --out OUT", ["table.md", "sps.png"]),
    "sps.py --mujoco": (
        "--mujoco --envs Hopper-v5 --iterations 1 --out OUT",
        ["table.md", "sps.png"],
    ),
    "compile_pieces.py": (
        "--pieces act --rounds 1 --calls 1 --profile-steps 0 --out OUT",
        ["pieces.md"],
    ),
    "async_envs.py": (
        "--envs Pendulum-v1 --num-envs 2 --raw-steps 200 --iterations 1 --out OUT",
        ["table.md"],
    ),
    "resume.py": (
        "--scripts ppo_gae.py --seeds 1 --total-timesteps 4096 --out OUT",
        ["table.md"],
    ),
    "grad_variance.py": (
        "--seeds 1 --budgets 512 --batches 2 --episodes 1 --out OUT",
        ["table.md", "variance.png"],
    ),
    "eval_modes.py": (
        "--seeds 1 --budgets 1024 --episodes 2 --out OUT",
        ["table.md", "eval_modes.png"],
    ),
    "line_world.py": (
        "--seeds 1 --total-timesteps 512 --episodes 5 --out OUT",
        ["table.md", "success.png"],
    ),
    "threads.py": (
        "--cores 1 --num-envs 2 --num-steps 8 --iterations 2 --repeats 1 --out OUT",
        ["table.md"],
    ),
}
# The tools whose own tests above run their command to its end.
COVERED = {
    "run.py": "test_run_append_adds_seeds_and_keeps_the_runs_it_has",
    "tune.py": "test_tune_two_workers_at_once_share_one_study",
    "zoo_nets.py": "test_zoo_nets_trains_ppo_continuous_with_256x256_relu_actor_and_critic",
}


def test_every_tool_of_the_readme_has_a_test_that_runs_it():
    text = (ROOT / "benchmarks" / "README.md").read_text()
    tools = set(re.findall(r"^\| \[(\w+\.py)\]\(\1\)", text, re.MULTILINE))
    assert tools == {tool.split()[0] for tool in SMOKE} | set(COVERED), tools
    assert all(name in globals() for name in COVERED.values())


@pytest.mark.parametrize("tool", SMOKE)
def test_each_tool_runs_to_its_end_at_its_smallest_settings(tool, tmp_path):
    argv, writes = SMOKE[tool]
    results = ROOT / "benchmarks" / "results"
    if tool == "iqm.py":  # a folder of run.py's, as the docs' tables have
        shutil.copy(results / "inverteddoublependulum" / "raw.json", tmp_path)
    if tool == "compile_race.py":  # race.py's folders: compiled, eager and the race
        for name, folder in [(".", "race_compile"), ("eager", "race_eager"), ("race", "race")]:
            (tmp_path / name).mkdir(exist_ok=True)
            shutil.copy(results / "mujoco_vs_sb3" / folder / "raw.json", tmp_path / name)
    command = [sys.executable, str(ROOT / "benchmarks" / tool.split()[0])]
    command += [word.replace("OUT", str(tmp_path)) for word in shlex.split(argv)]
    (tmp_path / "tmp").mkdir()  # the system's temp folder, as the tool sees it
    done = python(command[1:], ROOT, dict(os.environ, TMPDIR=str(tmp_path / "tmp")))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr
    assert all((tmp_path / name).exists() for name in writes), sorted(tmp_path.rglob("*"))
    assert not list((tmp_path / "tmp").glob("SB3-*"))  # SB3's logger's folder, unasked
    tables = [(tmp_path / name).read_text() for name in writes if name.endswith(".md")]
    if tool != "sb3_ppo.py":  # a run, which run.py tabulates
        assert "|---|" in done.stdout + "".join(tables)
