# SPDX-License-Identifier: MIT
"""Tune a script's flags with Optuna: each trial runs the script once per seed, as subprocesses.

The objective is the mean over seeds of each run's final greedy evaluation (the runs'
`eval/episodic_return`), maximized. While a trial runs, the tuner reads every run's
TensorBoard `charts/episodic_return` and reports the mean over seeds of the last 20 returns at
each tenth of --total-timesteps; the pruner stops a trial that lags (median of the trials
before it, after a warm-up) and its runs are killed. The five scripts are left untouched.

One machine: the study lives in a journal file (benchmarks/results/tune/NAME.journal), shared
by the --jobs workers of this command and by any other command given the same --storage:

    python benchmarks/tune.py ppo_gae.py --env-id Acrobot-v1 --study-name acrobot \\
        --trials 30 --seeds 1 2 --total-timesteps 100000 --jobs 2

Many machines: a database URL as --storage, and the same command on every machine; each
command runs its --trials, all in one study. A worker that dies leaves its trial to be failed
by the database's heartbeat and retried by another worker:

    python benchmarks/tune.py ppo_gae.py --env-id Acrobot-v1 --study-name acrobot \\
        --trials 10 --seeds 1 2 --total-timesteps 100000 \\
        --storage postgresql+psycopg2://USER:PASSWORD@HOST/DB

The report (the best trial as a command line, the top trials, the objective over trials and
the flags' importances) is printed at the end, or on demand with --report, and written beside
the study as benchmarks/results/tune/NAME.md, NAME_history.png and NAME_importances.png.
"""

import argparse
import contextlib
import importlib
import importlib.util
import io
import json
import multiprocessing
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "tune"  # the default --out
RUNS = ROOT / "benchmarks" / "runs" / "tune"  # git-ignored: the trials' TensorBoard runs
SCRIPTS = ("reinforce.py", "vpg.py", "ppo.py", "ppo_gae.py", "ppo_continuous.py")
WINDOW, REPORTS = 20, 10  # the running mean's episodes; reports to the pruner per trial

# What each script's default search space tunes, where the script has the flag. `float` and
# `int` take low, high and log (sampled on a log scale); `categorical` takes choices.
LR = {"type": "float", "low": 1e-4, "high": 1e-2, "log": True}
GAMMA = {"type": "categorical", "choices": [0.9, 0.95, 0.98, 0.99, 0.995, 0.999]}
LAMBDA = {"type": "categorical", "choices": [0.8, 0.9, 0.92, 0.95, 0.98, 0.99, 1.0]}
ENT = {"type": "categorical", "choices": [0.0, 1e-4, 1e-3, 1e-2, 0.05, 0.1]}
EPOCHS = {"type": "int", "low": 1, "high": 20}
SPACES = {
    "reinforce.py": {"--learning-rate": LR, "--gamma": GAMMA},
    "vpg.py": {"--learning-rate": LR, "--gamma": GAMMA, "--train-v-iters": EPOCHS},
    "ppo.py": {"--learning-rate": LR, "--gamma": GAMMA, "--update-epochs": EPOCHS},
    "ppo_gae.py": {
        "--learning-rate": LR,
        "--ent-coef": ENT,
        "--gae-lambda": LAMBDA,
        "--gamma": GAMMA,
        "--num-minibatches": {"type": "categorical", "choices": [1, 2, 4, 8]},
        "--update-epochs": EPOCHS,
    },
}
SPACES["ppo_continuous.py"] = SPACES["ppo_gae.py"] | {
    "--log-std-init": {"type": "float", "low": -2.0, "high": 0.5}
}


warnings.filterwarnings("ignore", message=".*(experimental|deprecated).*")  # Optuna's notes


def fail(message):
    """Bad input: one line on stderr and exit status 2."""
    print(f"tune.py: error: {' '.join(str(message).split())}", file=sys.stderr)
    sys.exit(2)


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: " + __doc__.split("\n\n")[2].strip(),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("script", nargs="?", help=f"one of {', '.join(SCRIPTS)}")
    p.add_argument("--env-id", help="the env to tune on (gymnasium id, or module:EnvId)")
    p.add_argument("--study-name", required=True, help="the study; the same name goes on with it")
    p.add_argument("--trials", type=int, default=20, help="trials this command runs")
    p.add_argument("--seeds", type=int, nargs="+", default=[1], help="one run per seed per trial")
    p.add_argument("--total-timesteps", type=int, help="env steps of each run")
    p.add_argument("--eval-episodes", type=int, default=10, help="greedy episodes per run")
    p.add_argument("--flags", default="", help='fixed flags for every run, e.g. "--num-envs 8"')
    p.add_argument("--storage", help="journal file, or database URL (default: a journal file)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes on this machine")
    p.add_argument("--space", help="JSON or YAML file: {FLAG: {type, low, high, log | choices}}")
    p.add_argument(
        "--pruner",
        default="median",
        help="median (after 5 trials and 3 reports), none, or threshold:X (prune below X)",
    )
    p.add_argument("--report", action="store_true", help="only print and write the report")
    p.add_argument("--out", type=Path, default=RESULTS, help="the default journal, the report")
    args = p.parse_args(argv)
    args.runs = RUNS if args.out == RESULTS else args.out / "runs"  # the trials' TensorBoard
    if args.report:
        return args
    if args.script is None or Path(args.script).name not in SCRIPTS:
        fail(f"unknown script {args.script!r}: tune one of {', '.join(SCRIPTS)}")
    if not args.env_id or not args.total_timesteps:
        fail("--env-id and --total-timesteps are needed to run trials")
    for flag, value in (("--trials", args.trials), ("--jobs", args.jobs)):
        if value < 1 or args.total_timesteps < 1:
            fail(f"{flag} and --total-timesteps must be positive")
    if not (args.pruner in ("median", "none") or args.pruner.startswith("threshold:")):
        fail(f"--pruner {args.pruner}: use median, none or threshold:X")
    args.script = Path(args.script).name
    return args


def check_env(script, env_id):
    """One line and exit 2 unless env_id names an env whose actions the script can take."""
    sys.path.insert(0, str(ROOT))  # "module:EnvId" ids may name a module of this repository
    import gymnasium as gym

    try:
        if ":" in env_id:
            importlib.import_module(env_id.split(":")[0])
        env = gym.make(env_id.split(":")[-1])
    except (gym.error.Error, ImportError) as error:
        fail(f"cannot make {env_id}: {error}")
    discrete = isinstance(env.action_space, gym.spaces.Discrete)
    env.close()
    if discrete == (script == "ppo_continuous.py"):
        fail(f"{env_id} has {env.action_space} actions, which {script} does not take")


def load_space(args):
    """The search space: --space FILE, or the script's default. Bad files: one line, exit 2."""
    if not args.space:
        return SPACES[args.script]
    path = Path(args.space)
    try:
        text = path.read_text()
        if path.suffix in (".yaml", ".yml"):
            import yaml

            space = yaml.safe_load(text)
        else:
            space = json.loads(text)
    except Exception as error:  # unreadable, not JSON or YAML, pyyaml missing
        fail(f"--space {path}: {error}")
    if not isinstance(space, dict) or not space:
        fail(f"--space {path}: want an object of FLAG: {{type, ...}}")
    for flag, spec in space.items():
        ok = isinstance(spec, dict) and (
            (spec.get("type") in ("float", "int") and {"low", "high"} <= spec.keys())
            or (spec.get("type") == "categorical" and isinstance(spec.get("choices"), list))
        )
        if not (str(flag).startswith("--") and ok):
            fail(
                f"--space {path}: {flag}: want type float or int with low and high, or "
                "categorical with choices"
            )
    return space


def sample(trial, space):
    """The flags of one trial, sampled from the space."""
    flags = []
    for flag, spec in space.items():
        name = flag.lstrip("-")
        if spec["type"] == "categorical":
            value = trial.suggest_categorical(name, spec["choices"])
        elif spec["type"] == "int":
            value = trial.suggest_int(name, spec["low"], spec["high"], log=spec.get("log", False))
        else:  # 3 significant digits: what a person would type
            value = trial.suggest_float(name, spec["low"], spec["high"], log=spec.get("log", False))
            value = float(f"{value:.3g}")
        flags += [flag, str(value)]
    return flags


def refused(script, argv):
    """Why the script's own parse_args refuses argv (its last line), or None if it takes it."""
    spec = importlib.util.spec_from_file_location(Path(script).stem, ROOT / script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            module.parse_args(argv)
    except ValueError as error:  # from Python, argparse's one line
        return str(error)
    except SystemExit:
        return err.getvalue().strip().splitlines()[-1]
    return None


READERS = {}  # run directory -> its EventAccumulator, which reads only what is new each time


def episode_returns(run_dir):
    """[(step, return)] logged so far by a run, and the mean of its evaluation (or None)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    if run_dir not in READERS:
        READERS[run_dir] = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    events = READERS[run_dir]
    events.Reload()
    tags = events.Tags()["scalars"]
    returns = (
        [(e.step, e.value) for e in events.Scalars("charts/episodic_return")]
        if ("charts/episodic_return" in tags)
        else []
    )
    evals = (
        [e.value for e in events.Scalars("eval/episodic_return")]
        if ("eval/episodic_return" in tags)
        else []
    )
    return returns, (sum(evals) / len(evals) if evals else None)


def running_mean(returns, step):
    """The mean of the last WINDOW returns logged at or before `step` (None if none)."""
    before = [r for s, r in returns if s <= step][-WINDOW:]
    return sum(before) / len(before) if before else None


def stop(procs):
    """Kill every run of a trial (their whole process groups) and reap them."""
    for proc in procs:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.time() + 10
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def objective(trial, args, space):
    import optuna

    flags = shlex.split(args.flags) + sample(trial, space)
    why = refused(args.script, flags)
    if why:  # e.g. a batch that does not split into the sampled minibatches
        trial.set_user_attr("refused", why)
        raise optuna.TrialPruned(why)
    trial.set_user_attr("flags", shlex.join(flags))
    trial.set_user_attr("host", socket.gethostname())
    trial.set_user_attr("worker_pid", os.getpid())
    procs, run_dirs = [], []
    try:
        for seed in args.seeds:
            run_dir = args.runs / args.study_name / f"trial{trial.number}_seed{seed}"
            run_dir.mkdir(parents=True, exist_ok=True)
            cmd = [sys.executable, str(ROOT / args.script), "--env-id", args.env_id]
            cmd += ["--seed", str(seed), "--total-timesteps", str(args.total_timesteps)]
            cmd += ["--eval-episodes", str(args.eval_episodes), "--run-dir", str(run_dir)]
            with open(run_dir / "stdout.log", "w") as log:
                procs.append(
                    subprocess.Popen(
                        cmd + flags, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
                    )
                )
            run_dirs.append(run_dir)
        trial.set_user_attr("pids", [proc.pid for proc in procs])
        reported = 0
        while True:
            done = all(proc.poll() is not None for proc in procs)
            runs = [episode_returns(d)[0] for d in run_dirs]
            while reported < REPORTS - 1:  # the last point is the end of the runs
                step = (reported + 1) * args.total_timesteps // REPORTS
                if not all(r and r[-1][0] >= step for r in runs):
                    break
                reported += 1
                means = [running_mean(r, step) for r in runs]
                if None in means:  # a run with no episode ended by then: nothing to compare
                    continue
                trial.report(sum(means) / len(means), reported)
                if trial.should_prune():
                    stop(procs)
                    raise optuna.TrialPruned(f"pruned at {step} steps")
            if done:
                break
            time.sleep(2.0)
    finally:
        stop(procs)  # Ctrl-C, an error, or a prune: no run outlives its trial
    for proc, run_dir in zip(procs, run_dirs, strict=True):
        if proc.returncode != 0:
            lines = (run_dir / "stdout.log").read_text().strip().splitlines() or ["no output"]
            raise RuntimeError(f"{run_dir.name} exited {proc.returncode}: {lines[-1]}")
    evaluations = [episode_returns(d)[1] for d in run_dirs]
    for run_dir in run_dirs:
        READERS.pop(run_dir, None)
    if any(e is None for e in evaluations):
        raise RuntimeError("a run logged no evaluation (--eval-episodes 0?)")
    trial.set_user_attr("evaluations", evaluations)
    return sum(evaluations) / len(evaluations)


def storage_of(args):
    """Optuna storage: a database URL (heartbeats, retries), else a journal file."""
    import optuna
    from optuna.storages import JournalStorage, RDBStorage, RetryHeartbeatStaleTrialCallback
    from optuna.storages.journal import JournalFileBackend

    if args.storage and "://" in args.storage:
        from sqlalchemy.engine import make_url

        try:
            shown = make_url(args.storage).render_as_string(hide_password=True)
        except Exception:
            fail(f"--storage: not a database URL: {args.storage.split('@')[-1]}")
        for attempt in range(3):  # workers that start at once race to create the tables
            try:
                return RDBStorage(
                    args.storage,
                    heartbeat_interval=30,  # a dead worker's trial is failed after 2 minutes,
                    grace_period=120,  # and retried by another worker
                    heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=2),
                    engine_kwargs={"connect_args": {"connect_timeout": 10}}
                    if args.storage.startswith("postgresql")
                    else None,
                )
            except Exception as error:  # unreachable, wrong credentials, driver missing, ...
                reason = str(getattr(error, "orig", None) or error).strip().splitlines()[0]
                time.sleep(0.5 * (attempt + 1))
        fail(f"cannot reach the database {shown}: {reason}")
    path = Path(args.storage) if args.storage else args.out / f"{args.study_name}.journal"
    path.parent.mkdir(parents=True, exist_ok=True)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return JournalStorage(JournalFileBackend(str(path)))


def retry_orphans(study):
    """Trials left running by a dead worker of this machine (journal files have no heartbeat):
    failed, and their flags queued again."""
    from optuna.trial import TrialState

    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        pid, host = trial.user_attrs.get("worker_pid"), trial.user_attrs.get("host")
        if host != socket.gethostname() or pid is None:
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
            study.enqueue_trial(trial.params, skip_if_exists=False)


def pruner_of(name):
    import optuna

    if name == "none":
        return optuna.pruners.NopPruner()
    if name.startswith("threshold:"):
        return optuna.pruners.ThresholdPruner(lower=float(name.split(":", 1)[1]))
    return optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=3)


def interrupt(signum, frame):
    """SIGTERM (Slurm, docker stop, a parent's terminate()) stops a worker as Ctrl-C does: its
    trial's runs are killed, and the trial is failed for another worker to retry."""
    raise KeyboardInterrupt


def worker(args, space, trials):
    import optuna

    signal.signal(signal.SIGTERM, interrupt)

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        study_name=args.study_name,
        storage=storage_of(args),
        direction="maximize",
        pruner=pruner_of(args.pruner),
        load_if_exists=True,
    )
    for key in ("script", "env_id", "total_timesteps", "seeds", "flags", "eval_episodes"):
        study.set_user_attr(key, getattr(args, key))
    retry_orphans(study)
    study.optimize(
        lambda trial: objective(trial, args, space),
        n_trials=trials,
        catch=(RuntimeError,),
        callbacks=[lambda study, trial: print(line_of(trial), flush=True)],
    )


def line_of(trial):
    value = "" if trial.value is None else f"{trial.value:.4g} "
    flags = trial.user_attrs.get("flags", "")
    return f"trial {trial.number}: {trial.state.name.lower()} {value}{flags}"


def best_command(study, trial):
    """The commands that run `trial` again: every flag its runs had, for each seed."""
    attrs = study.user_attrs
    episodes = attrs.get("eval_episodes", 10)  # (a study of before 2026-11-27: the default)
    flags = f"--total-timesteps {attrs['total_timesteps']} --eval-episodes {episodes}"
    command = f"python {attrs['script']} --env-id {attrs['env_id']} --seed $seed {flags}"
    seeds = " ".join(map(str, attrs["seeds"]))
    return f"for seed in {seeds}; do {command} {trial.user_attrs['flags']}; done"


def report(args):
    """Print the best trial as a command line and the top trials; write them and two plots."""
    import optuna
    from optuna.trial import TrialState

    try:
        study = optuna.load_study(study_name=args.study_name, storage=storage_of(args))
    except KeyError:
        fail(f"no study {args.study_name!r} in {args.storage or 'the default journal file'}")
    done = sorted(
        study.get_trials(states=(TrialState.COMPLETE,)), key=lambda t: t.value, reverse=True
    )
    attrs = study.user_attrs
    counts = {s.name.lower(): len(study.get_trials(states=(s,))) for s in TrialState}
    lines = [
        f"# Study {args.study_name}: {attrs.get('script')} on {attrs.get('env_id')}",
        "",
        f"{attrs.get('total_timesteps')} steps per run, seeds {attrs.get('seeds')}; objective: "
        "the mean over seeds of the final greedy evaluation. Trials: "
        + ", ".join(f"{n} {state}" for state, n in counts.items() if n)
        + ".",
        "",
    ]
    if done:
        lines += [
            "Best trial, as the commands of its runs:",
            "",
            "```bash",
            best_command(study, done[0]),
        ]
        lines += ["```", ""]
        lines += ["| trial | objective | per seed | flags |", "|---|---|---|---|"]
        for t in done[:10]:
            seeds = ", ".join(f"{e:.4g}" for e in t.user_attrs.get("evaluations", []))
            lines.append(f"| {t.number} | {t.value:.4g} | {seeds} | `{t.user_attrs['flags']}` |")
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.study_name}.md").write_text(text)
    if len(done) >= 2:
        import matplotlib

        matplotlib.use("Agg")
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        from optuna.visualization import matplotlib as plots

        for name, plot in (
            ("history", plots.plot_optimization_history),
            ("importances", plots.plot_param_importances),
        ):
            with contextlib.suppress(Exception):  # importances need parameters that varied
                axes = plot(study)
                axes.figure.savefig(
                    args.out / f"{args.study_name}_{name}.png", dpi=100, bbox_inches="tight"
                )
    print(f"wrote {args.out / args.study_name}.md and its plots")


def main(args):
    if args.report:
        return report(args)
    check_env(args.script, args.env_id)
    space = load_space(args)
    trial_argv = shlex.split(args.flags) + [
        a
        for flag, spec in space.items()
        for a in (flag, str(spec["choices"][0] if "choices" in spec else spec["low"]))
    ]
    why = refused(args.script, trial_argv)
    if why and ("unrecognized" in why or "invalid" in why):
        fail(f"{args.script} refuses the space's flags: {why}")
    storage_of(args)  # an unreachable database: one line now, not one per worker
    signal.signal(signal.SIGTERM, interrupt)
    shares = [args.trials // args.jobs + (i < args.trials % args.jobs) for i in range(args.jobs)]
    if args.jobs == 1:
        worker(args, space, args.trials)
    else:
        procs = [
            multiprocessing.get_context("spawn").Process(target=worker, args=(args, space, n))
            for n in shares
            if n
        ]
        for proc in procs:
            proc.start()
        try:
            for proc in procs:
                proc.join()
        except KeyboardInterrupt:
            for proc in procs:
                proc.terminate()
            raise
    report(args)


if __name__ == "__main__":
    main(parse_args())
