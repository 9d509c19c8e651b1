# SPDX-License-Identifier: MIT
"""The machinery of long and watched runs, written once for the five scripts beside it.

A script imports this file only when one of these flags asks for it:

    --checkpoint-every N   a checkpoint every N env steps; SIGTERM (Slurm, docker stop) then
                           stops the run as Ctrl-C does, and a stopped run leaves one behind
    --resume RUN_DIR       go on from RUN_DIR/checkpoint.pt, exactly where the run stopped
    --capture-video        films: a grid of the envs over a rollout, about ten a run (a GIF in
                           TensorBoard), and the final evaluation as mp4
    --track                the run in Weights & Biases (flags, TensorBoard scalars, films, code)
    --async-envs           each env in a process of its own
    --watch                with --load-model, the evaluation played in a window

Each script's Log writes TensorBoard and the progress line. LongRun below extends it method by
method (each script's long_run_class() says `class LongRun(long_runs.LongRun, Log)`), so train()
never sees a checkpoint, a signal, a film or W&B: it hands the Log its steps, episodes and losses
as always.
Copied alone, a script answers each of these flags in one line naming this file.

What LongRun needs from the script's Log, attribute by attribute:
    script                 the script's file name, which its lines begin with
    fail                   the script's fail(message, kind): LongRun's errors are the script's
                           own types, which its command line turns into one line and a status
    args                   the run's flags (a Namespace); LongRun reads, never writes, them
    run_dir                the run's folder, for checkpoint.pt and the evaluation's films
    agent, optimizer       whose state_dict() a checkpoint keeps
    envs                   the vector env: its num_envs, metadata, render() for films
    iteration, global_step of the last update (a resumed run goes on from them)
    episode_returns        [(step, return), ...] of the run so far, kept and restored
    purge_step             where TensorBoard's curves go on, read when the writer is made
    interrupted            what stopped training: None, "SIGINT" or "SIGTERM"
    writer                 the SummaryWriter, made in __enter__
and the methods it extends: __init__, __enter__, __exit__, iterations, episodes, update,
finish, eval_env and go_on; failed(error) closes the writer and says a full disk in one line.
A checkpoint names the script that wrote it and its FORMAT; it keeps the running statistics of
the envs' wrappers (NormalizeReward's, say) beside the Agent's state_dict.
"""

import argparse
import copy
import importlib
import importlib.util
import os
import random
import shlex
import signal
import sys
import time
from io import BytesIO
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from gymnasium.wrappers.utils import RunningMeanStd

FORMAT = 2  # of checkpoint.pt; 1 (before 2026-11-27) named no script


def say(line):
    """print(line) at once. A reader gone (| head) ends nothing: stdout goes to os.devnull."""
    try:
        print(line, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def plain(value):
    """A flag's value as a checkpoint keeps it: torch's weights-only load, which --resume uses,
    refuses a Path (a notebook's --run-dir) and numpy's numbers (a sweep's np.logspace)."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value.item() if isinstance(value, np.generic) else value


class LongRun:
    """What long and watched runs add to a script's Log: checkpoints and --resume, SIGTERM,
    films, W&B. Each method does its part, then hands on to the Log's own (super())."""

    resume_keeps = ("env_id", "num_envs", "num_steps")  # the rollout's shape

    @classmethod
    def checked_args(cls, parser, given, args):
        """The flags of a long run (given: the command line's list, or train()'s Namespace),
        checked. --resume RUN_DIR: its checkpoint's, but those given again; a flag the checkpoint
        predates takes its default; those in resume_keeps cannot change."""
        script = parser.prog
        fail = cls.fail  # the script's own: bad input, in one line (exit status 2)
        unused = ("resume", "checkpoint_every", "async_envs", "video_every")  # by an evaluation
        if args.load_model and any(getattr(args, name) for name in unused):
            why = "--load-model evaluates a saved model: it takes no --resume, --checkpoint-every,"
            fail(f"{why} --async-envs or --video-every")
        if args.video_every and not args.capture_video:
            fail("--video-every says how often --capture-video films: give both")
        if args.wandb_entity and not args.track:
            fail("--wandb-entity says whose --track the run goes to: give both")
        if args.watch and (not args.load_model or args.capture_video):
            why = "--watch plays --load-model's model in a window"
            fail(f"{why}: give it, no --capture-video")
        display = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")  # X11's, Wayland's
        if args.watch and sys.platform.startswith("linux") and not display:  # ssh, a container
            fail("--watch needs a display, and DISPLAY is unset; --capture-video films it")
        if not args.resume:
            return args
        args.resume = os.path.expanduser(args.resume)  # as --run-dir: a "~" the shell left
        if isinstance(given, argparse.Namespace):  # train()'s: as parse_args([...]) made it?
            if os.path.normpath(str(args.run_dir)) != os.path.normpath(args.resume):
                fail(f"to go on from {args.resume}: train(parse_args(['--resume', DIR]))")
            return args
        if args.run_dir is not None and os.path.normpath(args.run_dir) != os.path.normpath(
            args.resume
        ):
            fail(f"--resume goes on in {args.resume} itself: give no --run-dir")
        if os.path.isfile(args.resume):  # the checkpoint itself, as --load-model takes a file
            folder = shlex.quote(os.path.dirname(args.resume) or ".")
            fail(f"--resume takes the run's folder, not a file: --resume={folder}")
        if not os.path.isdir(args.resume):
            fail(f"cannot --resume: no folder {args.resume}")
        if not os.path.exists(f"{args.resume}/checkpoint.pt"):  # a run without checkpoints
            why = "holds no checkpoint.pt: a run goes on from what --checkpoint-every writes"
            fail(f"cannot --resume: {args.resume} {why}")
        try:  # data only (weights_only): a file that would run code is refused, its code unrun
            checkpoint = torch.load(f"{args.resume}/checkpoint.pt", "cpu", weights_only=True)
            saved = dict(checkpoint["args"])
            writer = checkpoint.get("script") or written_by(saved, args, script)
            newer = int(checkpoint.get("format", 1)) > FORMAT
            shape = {name: saved[name] for name in cls.resume_keeps}  # the rollout's
        except Exception:  # objects or code; not a checkpoint; cut short
            why = f"{args.resume}/checkpoint.pt is not one {script} wrote"
            fail(f"cannot --resume: {why}")
        if writer != script:
            fail(f"cannot --resume: {args.resume} holds a run of {writer}")
        if newer:
            fail(f"cannot --resume: {args.resume} was written by a newer {script}")
        kept = {name: value for name, value in saved.items() if name in vars(args)}
        for action in parser._actions[1:]:  # each saved value one its flag could give
            if not given_by(action, kept.get(action.dest)):
                value = f"{action.dest} = {kept[action.dest]!r}"
                fail(f"cannot --resume: {args.resume}/checkpoint.pt holds {value}")
        resumed = parser.parse_args(given, argparse.Namespace(**kept))  # flags given again win
        for name, value in shape.items():
            if getattr(resumed, name) != value:
                flag = f"--{name.replace('_', '-')}"
                fail(f"--resume: {flag} stays {value}, as in {args.resume}")
        if not resumed.capture_video:  # turned off again (--no-capture-video): no films to space
            resumed.video_every = 0
        if not resumed.track:  # --no-track: no W&B team
            resumed.wandb_entity = None
        resumed.run_dir = os.path.normpath(args.resume)
        return resumed

    def __init__(self, args, run_dir, agent, optimizer, envs):
        super().__init__(args, run_dir, agent, optimizer, envs)
        self.checkpoint = f"{run_dir}/checkpoint.pt"
        self.wandb_id = f"{time.time_ns():x}"  # W&B's id of the run, which the checkpoint keeps
        if args.resume:  # weights, optimizer, statistics, counters, RNGs and episodes go on
            try:
                checkpoint = torch.load(self.checkpoint, map_location="cpu", weights_only=True)
                unlike = self.unlike(checkpoint)
                if not unlike:
                    self.restore(checkpoint)
            except (LookupError, TypeError, ValueError, RuntimeError, AttributeError) as error:
                why = f"{type(error).__name__}: {error}"  # a checkpoint edited, or cut short
                self.fail(f"cannot --resume: {self.checkpoint} is not whole ({why})")
            if unlike:
                self.fail(f"--resume: {unlike}")
            self.purge_step = self.global_step + 1  # TensorBoard drops what came after it
        self.saved_step = self.global_step if args.resume else None  # that of checkpoint.pt
        self.snapshot = self.state() if args.checkpoint_every else None
        self.wandb = self.track(args) if args.track else None  # before the writer it syncs
        self.filmed_env = self.film_evaluation() if args.capture_video else None
        self.watched_env = self.watch_evaluation() if args.watch else None
        rollouts = args.total_timesteps // (args.num_envs * args.num_steps)  # or fewer, longer
        self.video_every = args.capture_video and (args.video_every or max(1, rollouts // 10))
        self.frames = None  # the rollout after every video_every-th (about ten a run), filmed
        self.fps = envs.metadata.get("render_fps") or 25  # the env's frames a second
        self.film_every = -(-self.fps // 25)  # ceil(fps / 25) steps a frame: 25 a second at most
        self.training = True
        self.signal = None
        self.lock = None  # a file descriptor of the run folder, locked (__enter__)

    def __enter__(self):
        """The run folder locked while this process runs in it (another --resume of it is
        refused); SIGTERM stops training as Ctrl-C does; finish() gives the old handler back."""
        if self.args.resume:  # locked before TensorBoard writes a file in it
            self.lock = lock(self.run_dir, self.fail)
            say(f"{self.script}: going on from step {self.global_step} of {self.checkpoint}")
        log = super().__enter__()  # TensorBoard first: if it fails, there is no handler to undo
        if self.run_dir:  # a new run's, just made (--watch's evaluation may write no files)
            self.lock = self.lock or lock(self.run_dir, self.fail)
        self.default_sigterm = signal.signal(signal.SIGTERM, self.stop)
        return log

    def __exit__(self, kind, error, traceback):
        self.training = False  # a SIGTERM from now on lets the run end, then ends the process
        if kind not in (None, KeyboardInterrupt):  # an error: no finish() to give it back
            signal.signal(signal.SIGTERM, self.default_sigterm)
            self.unlock()
        return super().__exit__(kind, error, traceback)

    def unlock(self):  # the run folder, for the next run in it (a notebook's, say)
        if self.lock is not None:
            os.close(self.lock)
            self.lock = None

    def stop(self, signum, frame):
        """SIGTERM: stop like Ctrl-C (the evaluation too, at its next step: eval_env()); after
        finish(), the process ends by the same signal."""
        self.signal = signum
        self.interrupted = self.interrupted or "SIGTERM"  # what train() returns, where it goes on
        if self.training:
            raise KeyboardInterrupt

    def episodes(self, global_step, infos, counted=None):
        """In a filmed rollout, every film_every-th step: up to 16 envs, 128 px wide or less."""
        super().episodes(global_step, infos, counted)
        try:
            if self.frames is not None and global_step // self.envs.num_envs % self.film_every == 0:
                Image = importlib.import_module("PIL.Image")  # Pillow, imported only to film
                frames = [Image.fromarray(frame) for frame in self.envs.render()[:16]]
                n = -(-frames[0].width // 128)  # each n x n pixels to their mean: thin lines stay
                self.frames.append(np.stack([np.asarray(frame.reduce(n)) for frame in frames]))
        except Exception as error:  # no renderer, or no display: one warning, no more films
            print(f"{self.script}: warning: training goes on unfilmed: {error}", file=sys.stderr)
            self.frames = None
            self.video_every = 0

    def update(self, iteration, global_step, **losses):
        """The film of the rollout just played; a checkpoint when one is due."""
        super().update(iteration, global_step, **losses)
        if self.frames:
            self.write_gif("videos/training", np.stack(self.frames), global_step)
        self.frames = [] if self.video_every and iteration % self.video_every == 0 else None
        if self.args.checkpoint_every:
            self.snapshot = self.state()  # what a stop before the next update saves
            if global_step - (self.saved_step or 0) >= self.args.checkpoint_every:
                self.save()

    def finish(self, global_step):
        """The last checkpoint, the run's end as the Log has it, W&B's end; then a SIGTERM
        that stopped the run ends the process, by the handler that was there before it."""
        try:  # whatever happens here (a failing evaluation), the old handler comes back
            if self.snapshot is not None and self.snapshot["global_step"] != self.saved_step:
                self.save()  # the last update's state; a finished run can go on with more steps
            result = super().finish(global_step)
            if self.wandb:  # after the writer: W&B syncs its last events
                self.wandb.finish()
        finally:
            signal.signal(signal.SIGTERM, self.default_sigterm)
            self.unlock()
        if self.signal:  # by default, the process ends: a shell's status 128 + 15 = 143
            sys.stdout.flush()
            sys.stderr.flush()
            signal.raise_signal(self.signal)
        return result

    def go_on(self):
        if not self.args.checkpoint_every:
            return super().go_on()
        ran = sys.argv[0] if Path(sys.argv[0]).name == self.script else self.script  # its path
        resume = f"python {shlex.quote(ran)} --resume={shlex.quote(self.run_dir)}"
        return f"checkpoint of step {self.saved_step} in {self.checkpoint}; {resume}"

    def eval_env(self, render_mode=None):
        """--capture-video: the evaluation filmed; --watch: shown (both made at the start: a
        renderer fails early). A SIGTERM stops it at its next step, as a Ctrl-C does."""
        return Stoppable(self.filmed_env or self.watched_env or super().eval_env(render_mode), self)

    def watch_evaluation(self):  # --watch: the evaluation in a window (rl-zoo3's enjoy), open now
        env = super().eval_env(render_mode="human")
        cannot = f"--watch cannot show {self.args.env_id}"
        nowhere = f"{cannot}: no window opens on DISPLAY={os.environ.get('DISPLAY', '')}"
        try:
            env.reset(seed=self.args.seed + 10_000)  # as the evaluation's first episode
        except gym.error.DependencyNotInstalled as error:  # pygame, for CartPole's window
            self.fail(f"{cannot}: {error}")
        except Exception as error:  # pygame.error: SDL found no display it can use
            if type(error).__module__ != "pygame":
                raise
            env.close()
            self.fail(f"{nowhere} ({error})")
        pygame = sys.modules.get("pygame")  # or SDL, finding no display, draws off screen
        driver = pygame and pygame.display.get_init() and pygame.display.get_driver()
        if driver in ("offscreen", "dummy"):  # a DISPLAY with no server behind it, say
            env.close()
            self.fail(f"{nowhere} (SDL's video driver is {driver})")
        return env

    def iterations(self, num_iterations):  # a resumed run with nothing left to train says so
        iterations = super().iterations(num_iterations)
        if self.args.resume and (not iterations or self.global_step >= self.args.total_timesteps):
            at = f"at step {self.global_step} of --total-timesteps {self.args.total_timesteps}"
            say(f"{self.script}: nothing left to train {at}; a larger --total-timesteps goes on")
        return iterations

    def film_evaluation(self):
        env = super().eval_env(render_mode="rgb_array")
        env.reset(seed=0)  # the env's own error here is not the renderer's: its traceback
        try:
            env.render()  # a missing renderer (pygame) fails now, not after training
            if importlib.util.find_spec("moviepy") is None:  # before RecordVideo makes a folder
                raise ImportError('MoviePy is not installed, run `pip install "gymnasium[other]"`')
            episodes = lambda _: True  # noqa: E731
            return gym.wrappers.RecordVideo(env, f"{self.run_dir}/videos", episode_trigger=episodes)
        except Exception as error:  # no moviepy, no pygame, no OpenGL for MuJoCo
            hint = "mujoco" in str(env.spec) and "; with no display, set MUJOCO_GL=egl or osmesa"
            why = f"cannot film {self.args.env_id}: {error}{hint or ''}"
            self.fail(f"--capture-video: {why}")

    # ---- checkpoints: all a resumed run needs, as data only ----

    def state(self):
        """All that --resume needs, copied, as of the last update: tensors and plain values."""
        name, keys, *rest = np.random.get_state()  # numpy's MT19937: 624 words, as plain ints
        rng = random.getstate(), (name, keys.tolist(), *rest), torch.get_rng_state()
        rng += (torch.cuda.get_rng_state_all(),)  # [] without CUDA
        agent = copy.deepcopy(self.agent.state_dict())
        optimizer = copy.deepcopy(self.optimizer.state_dict())
        for group in optimizer["param_groups"]:  # lr: a flag's value, maybe numpy's
            group.update({key: plain(value) for key, value in group.items()})
        rms = [torch.from_numpy(np.array([r.mean, r.var, r.count])) for r in self.statistics()]
        state = dict(agent=agent, optimizer=optimizer, statistics=rms, rng=rng)
        state |= dict(iteration=self.iteration, global_step=self.global_step)
        state |= dict(episode_returns=list(self.episode_returns), wandb_id=self.wandb_id)
        state |= dict(script=self.script, format=FORMAT)  # whose it is, for --resume
        return state | dict(args={name: plain(value) for name, value in vars(self.args).items()})

    def statistics(self):
        """The running statistics of the envs' wrappers, which the Agent's state_dict lacks
        (NormalizeReward's, of the return): every RunningMeanStd among their attributes."""
        found = []
        envs = self.envs
        while envs is not None:  # from the outermost wrapper in
            found += [value for value in vars(envs).values() if isinstance(value, RunningMeanStd)]
            envs = getattr(envs, "env", None)
        return found

    def unlike(self, checkpoint):
        """Why the checkpoint's Agent has other shapes than this one (a flag given again that
        shapes it, a layer's width), and what to give; None if it has the same."""
        saved = checkpoint["args"]
        ours = {name: tuple(value.shape) for name, value in self.agent.state_dict().items()}
        theirs = {name: tuple(value.shape) for name, value in checkpoint["agent"].items()}
        if ours == theirs:
            return None
        name = next(n for n in sorted(ours.keys() | theirs.keys()) if ours.get(n) != theirs.get(n))
        why = f"{name} is {theirs.get(name)} in {self.checkpoint}, {ours.get(name)} here"
        given = [k for k, v in vars(self.args).items() if k in saved and saved[k] != v]
        flags = [f"--{k.replace('_', '-')} {saved[k]}" for k in given if k != "resume"]
        fix = f"give {', '.join(flags)} as in it" if flags else "its Agent is not these flags'"
        return f"{why}: {fix}"

    def restore(self, checkpoint):
        """The state() that checkpoint.pt holds, back in the agent, optimizer, envs and RNGs."""
        saved = checkpoint["args"]
        if not all(weights.isfinite().all() for weights in checkpoint["agent"].values()):
            raise ValueError("the Agent's weights hold a NaN or inf")
        self.agent.load_state_dict(checkpoint["agent"])
        made = [dict(group) for group in self.optimizer.param_groups]  # as the flags set them
        self.optimizer.load_state_dict(checkpoint["optimizer"])  # Adam's moments and steps
        for group, settings in zip(self.optimizer.param_groups, made, strict=True):
            lr = group["lr"]  # the run's own: annealed, or adapted by --lr-target-kl
            group.update(settings)  # every setting as the flags say (eps, betas, ...)
            if self.args.learning_rate == saved["learning_rate"]:  # not given again: it goes on
                group["lr"] = lr
        kept = checkpoint.get("statistics", checkpoint.get("return_rms"))  # before 2026-11-27
        for rms, statistics in zip(self.statistics(), kept, strict=True):
            rms.mean, rms.var, rms.count = statistics.tolist()  # float64, as they were
        for name in ("iteration", "global_step"):  # counts, as state() wrote them
            if type(checkpoint[name]) is not int or checkpoint[name] < 0:
                raise ValueError(f"{name} is {checkpoint[name]!r}")
            setattr(self, name, checkpoint[name])
        self.episode_returns = checkpoint["episode_returns"]
        saved_id = checkpoint.get("wandb_id", checkpoint["args"].get("wandb_id"))  # or in args
        self.wandb_id = saved_id or self.wandb_id  # W&B goes on with the same run
        setters = random.setstate, np.random.set_state, torch.set_rng_state
        setters += (torch.cuda.set_rng_state_all,)  # none without CUDA
        for set_state, rng in zip(setters, checkpoint["rng"], strict=True):
            set_state(rng)

    def save(self):
        """checkpoint.pt <- the snapshot, written beside it and renamed: a kill leaves it whole.
        A full disk (or the run folder gone) leaves no checkpoint.pt.tmp, and one line."""
        data = BytesIO()  # torch.save to a file says a full disk as a RuntimeError, unnamed
        torch.save(self.snapshot, data)
        written = Path(f"{self.checkpoint}.tmp")
        try:
            written.write_bytes(data.getvalue())
            written.replace(self.checkpoint)  # atomic, as os.replace
            self.saved_step = self.snapshot["global_step"]
            self.writer.flush()  # after a kill, the curves reach the checkpoint at least
        except OSError as error:
            written.unlink(missing_ok=True)
            self.failed(OSError(error.errno, error.strerror, error.filename or written))
            raise

    # ---- films and W&B ----

    def write_gif(self, tag, frames, step):
        """Frames (T, N, H, W, 3): a GIF of 4 envs a row (torch's add_video needs moviepy 1)."""
        Image = importlib.import_module("PIL.Image")
        Summary = importlib.import_module("tensorboard.compat.proto.summary_pb2").Summary
        t, n, h, w, c = frames.shape
        rows = -(-n // 4)
        cols = min(n, 4)
        tiles = np.pad(frames, [(0, 0), (0, rows * cols - n), (0, 0), (0, 0), (0, 0)])
        grid = tiles.reshape(t, rows, cols, h, w, c).swapaxes(2, 3).reshape(t, rows * h, -1, c)
        palette = Image.Quantize.FASTOCTREE
        images = [Image.fromarray(frame).quantize(method=palette) for frame in grid]
        gif = BytesIO()
        ms = 1000 * self.film_every / self.fps  # real time
        images[0].save(gif, "GIF", save_all=True, append_images=images[1:], duration=ms, loop=0)
        image = Summary.Image(height=rows * h, width=cols * w, encoded_image_string=gif.getvalue())
        summary = Summary(value=[Summary.Value(tag=tag, image=image)])
        self.writer.file_writer.add_summary(summary, step)

    def track(self, args):
        """--track: W&B syncs TensorBoard, with flags and code; the checkpoint keeps its id."""
        where = dict(project=args.wandb_project_name, entity=args.wandb_entity, id=self.wandb_id)
        how = dict(name=Path(self.run_dir).name, config=vars(args), save_code=True, resume="allow")
        try:
            wandb = importlib.import_module("wandb")
        except ImportError:
            self.fail("--track needs wandb: pip install wandb")
        if not hasattr(wandb, "init"):  # an offline run's wandb/ folder, imported as a package
            folder = next(iter(getattr(wandb, "__path__", [])), "a folder named wandb")
            why = f"{folder} is the runs W&B wrote, not the package"
            self.fail(f"--track needs wandb: pip install wandb ({why})")
        try:  # WANDB_MODE=offline needs no account
            return wandb.init(**where, **how, sync_tensorboard=True)
        except Exception as error:  # not logged in, no network, a bad project name
            self.fail(f"--track: {error}; with no W&B account, set WANDB_MODE=offline")


def given_by(action, value):
    """Whether a flag could give value (None: a flag's default, or none saved)."""
    if value is None or action.nargs == 0:  # a switch: True or False
        return value is None or isinstance(value, bool)
    try:
        return (action.type or str)(str(value)) == value and type(value) is not bool
    except (ValueError, TypeError, argparse.ArgumentTypeError):
        return False


def lock(run_dir, fail):
    """A file descriptor of run_dir, locked for this process: the kernel lets go when it ends
    (by SIGKILL too). Where another process holds it (a --resume of it, say): fail's line."""
    try:
        fcntl = importlib.import_module("fcntl")  # POSIX; on Windows, no lock
    except ImportError:
        return None
    folder = os.open(run_dir, os.O_RDONLY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(folder)
        fail(f"the run in {run_dir} is going on in another process; wait for its end")
    return folder


def written_by(saved, args, script):
    """The script of a checkpoint that names none (format 1, before 2026-11-27): this one if
    it knows every flag kept there, else another."""
    return script if set(saved) - {"wandb_id"} <= set(vars(args)) else "another script"


class Stoppable(gym.Wrapper):
    """An env whose next step, once the run has had a SIGTERM, is a KeyboardInterrupt."""

    def __init__(self, env, run):
        super().__init__(env)
        self.run = run

    def step(self, action):
        if self.run.signal:
            raise KeyboardInterrupt
        return self.env.step(action)


class EnvProcesses(gym.vector.VectorWrapper):
    """--async-envs: a process for each env; one that fails or dies: the script's
    ChildProcessError (fail's) that names the env and the error (its traceback is the env's
    own: run without --async-envs)."""

    def __init__(self, env_id, kwargs, fail):
        self.fail = fail  # the script's: its errors are the script's own types
        self.env_id = env_id
        if "device" in gym.spec(env_id.split(":")[-1]).kwargs:  # envs/cartpole_torch.py's
            fail(f"{env_id} steps in torch, in this process: give no --async-envs")
        # SIGINT blocked while they start: they inherit the mask (across exec too), so a Ctrl-C
        # is never theirs; this process takes one that came meanwhile (a slow simulator's first
        # env is made here) once they have started, and stops them
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            super().__init__(gym.make_vec(env_id, vectorization_mode="async", **kwargs))
            ctrl_c = signal.SIGINT in signal.sigpending()
            if ctrl_c:
                signal.sigwait({signal.SIGINT})  # taken here, not delivered
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        if ctrl_c:
            self.close()
            raise KeyboardInterrupt

    def reset(self, **kwargs):
        return self.quietly(self.env.reset, **kwargs)

    def step(self, actions):
        return self.quietly(self.env.step, actions)

    def quietly(self, function, *args, **kwargs):
        level = gym.logger.min_level
        gym.logger.min_level = gym.logger.ERROR + 1  # silent
        try:
            return function(*args, **kwargs)
        except Exception as error:  # raised in an env's process, or its pipe broke: it died
            self.close()
            what = f"{type(error).__name__}: {error or 'it ended'}"
        finally:
            gym.logger.min_level = level
        message = f"a process of {self.env_id} failed: {what}; its traceback: no --async-envs"
        self.fail(message, ChildProcessError)  # here, not in the except: no chained traceback

    def close(self, **kwargs):  # at once: a stop may come mid-step, or find them dead
        for process in self.env.processes:
            process.terminate()
            process.join()
        self.env.closed = True
