"""Callbacks for :meth:`svpg.SVPG.learn`, with Stable-Baselines3's names and lifecycle.

One SVPG iteration (every particle's rollout and one SVGD step) is one "step" of the callbacks:

* ``_on_training_start()`` once, before the first iteration of a ``learn`` call;
* ``_on_rollout_end()`` after every iteration, when ``self.model.scalars`` holds its scalars;
* ``_on_step()`` right after it: returning ``False`` stops training after this iteration;
* ``_on_training_end()`` once, when ``learn`` finishes or a callback stopped it.

Frequencies (``save_freq``, ``eval_freq``) count iterations.

    from svpg.rl.callbacks import CheckpointCallback, EvalCallback, StopTrainingOnRewardThreshold
    stop = StopTrainingOnRewardThreshold(reward_threshold=475)
    model.learn(500_000, callback=[CheckpointCallback(10, "runs/cartpole"),
                                   EvalCallback("CartPole-v1", eval_freq=5, callback_on_new_best=stop)])
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from svpg.io import atomic_write
from svpg.rl import checkpoints
from svpg.rl.checkpoints import PROGRESS_FILE, ProgressCSV
from svpg.rl.logger import NOT_TENSORBOARD


class BaseCallback:
    """SB3's ``BaseCallback``: subclass it and override the ``_on_*`` hooks.

    Attributes while training: ``model`` (the :class:`~svpg.SVPG`), ``n_calls`` (iterations seen),
    ``num_timesteps``, ``locals`` / ``globals`` of ``learn``, ``logger`` (the model's logger: SB3's
    ``self.logger.record(key, value)``), ``parent`` (for callbacks run by another).
    """

    def __init__(self, verbose: int = 0):
        self.verbose = verbose
        self.model: Any = None  # the SVPG, from init_callback on (duck-typed: any model with its attributes)
        self.n_calls = 0
        self.num_timesteps = 0
        self.locals: dict = {}
        self.globals: dict = {}
        self.parent: BaseCallback | None = None

    @property
    def logger(self):
        """The model's :class:`~svpg.rl.logger.Logger`, as SB3's ``self.logger``: ``self.logger.record(key,
        value)`` writes to TensorBoard at the iteration's steps (``self.logger.writer`` is the first seed's
        ``SummaryWriter`` while the model writes events, else ``None``)."""
        return self.model.logger if self.model is not None else None

    @property
    def scalars(self) -> dict[str, float]:
        """The latest iteration's scalars (the first seed's, with ``num_seeds`` > 1)."""
        return self.model.scalars[0] if self.model.scalars else {}

    def init_callback(self, model) -> None:
        self.model = model
        self._init_callback()

    def _init_callback(self) -> None:
        pass

    def on_training_start(self, locals_: dict, globals_: dict) -> None:
        self.locals, self.globals = locals_, globals_
        self.num_timesteps = self.model.num_timesteps
        self._on_training_start()

    def _on_training_start(self) -> None:
        pass

    def on_rollout_end(self) -> None:
        self._on_rollout_end()

    def _on_rollout_end(self) -> None:
        pass

    def on_step(self) -> bool:
        """Called once per iteration; ``False`` stops training."""
        self.n_calls += 1
        self.num_timesteps = self.model.num_timesteps
        return self._on_step()

    def _on_step(self) -> bool:
        return True

    def on_training_end(self) -> None:
        self._on_training_end()

    def _on_training_end(self) -> None:
        pass

    def update_locals(self, locals_: dict) -> None:
        self.locals.update(locals_)
        self.update_child_locals(locals_)

    def update_child_locals(self, locals_: dict) -> None:
        pass


class CallbackList(BaseCallback):
    """Several callbacks in order; training stops if any ``_on_step`` returns ``False`` (all of them
    still run for that iteration)."""

    def __init__(self, callbacks: list[BaseCallback]):
        super().__init__()
        self.callbacks = list(callbacks)

    def _init_callback(self) -> None:
        for c in self.callbacks:
            c.init_callback(self.model)
            c.parent = self.parent

    def _on_training_start(self) -> None:
        for c in self.callbacks:
            c.on_training_start(self.locals, self.globals)

    def _on_rollout_end(self) -> None:
        for c in self.callbacks:
            c.on_rollout_end()

    def _on_step(self) -> bool:
        go_on = True
        for c in self.callbacks:
            go_on = c.on_step() and go_on
        return go_on

    def _on_training_end(self) -> None:
        for c in self.callbacks:
            c.on_training_end()

    def update_child_locals(self, locals_: dict) -> None:
        for c in self.callbacks:
            c.update_locals(locals_)


class ConvertCallback(BaseCallback):
    """A plain function ``fn(locals, globals) -> bool | None`` as a callback (called every iteration;
    ``False`` stops training)."""

    def __init__(self, callback: Callable, verbose: int = 0):
        super().__init__(verbose)
        self.callback = callback

    def _on_step(self) -> bool:
        return self.callback(self.locals, self.globals) is not False


class EventCallback(BaseCallback):
    """Runs ``callback`` (a child) when :meth:`_on_event` is called, e.g. on a new best evaluation."""

    def __init__(self, callback: BaseCallback | None = None, verbose: int = 0):
        super().__init__(verbose)
        self.callback = callback
        if callback is not None:
            callback.parent = self

    def init_callback(self, model) -> None:
        super().init_callback(model)
        if self.callback is not None:
            self.callback.init_callback(model)

    def _on_training_start(self) -> None:
        if self.callback is not None:
            self.callback.on_training_start(self.locals, self.globals)

    def _on_event(self) -> bool:
        return self.callback.on_step() if self.callback is not None else True

    def update_child_locals(self, locals_: dict) -> None:
        if self.callback is not None:
            self.callback.update_locals(locals_)


class EveryNTimesteps(EventCallback):
    """Runs ``callback`` at the end of the first iteration after every ``n_steps`` environment steps (SB3's
    ``EveryNTimesteps``; an iteration is svpg's callback step, so it fires at most once per iteration)."""

    def __init__(self, n_steps: int, callback: BaseCallback):
        super().__init__(callback)
        if isinstance(n_steps, bool) or not isinstance(n_steps, (int, np.integer)) or n_steps < 1:
            raise ValueError(f"EveryNTimesteps n_steps must be a positive integer, got {n_steps!r}")
        self.n_steps = int(n_steps)
        self.last_time_trigger = 0

    def _on_step(self) -> bool:
        if self.num_timesteps - self.last_time_trigger >= self.n_steps:
            self.last_time_trigger = self.num_timesteps
            return self._on_event()
        return True


class ProgressBarCallback(BaseCallback):
    """A tqdm bar over the iterations of a ``learn`` call, with the latest mean and best returns."""

    def _on_training_start(self) -> None:
        from tqdm.auto import tqdm

        start, end = self.model.iteration, self.locals.get("target", self.model.iteration)
        self.bar = tqdm(total=end, initial=start, unit="it", dynamic_ncols=True)

    def _on_step(self) -> bool:
        values = self.scalars
        self.bar.update(1)
        self.bar.set_postfix(
            mean=f"{values['rollout/ep_rew_mean']:.1f}",
            max=f"{values['rollout/ep_rew_max']:.1f}",
            sps=f"{values['time/fps']:,.0f}",
        )
        return True

    def _on_training_end(self) -> None:
        self.bar.close()


def make_callback(callback, progress_bar: bool = False) -> BaseCallback:
    """A callback from what ``learn`` accepts: ``None``, a BaseCallback, a list, or a callable."""
    if isinstance(callback, (list, tuple)):
        callback = CallbackList([make_callback(c) for c in callback])
    elif callback is None:
        callback = CallbackList([])
    elif not isinstance(callback, BaseCallback):
        if any(c.__module__.startswith("stable_baselines3.") for c in type(callback).__mro__):  # or a subclass
            raise ValueError(
                f"{type(callback).__name__} is Stable-Baselines3's callback, which drives SB3's algorithms: use "
                f"svpg's of the same name, or subclass svpg.BaseCallback (the same hooks; one call per iteration)"
            )
        if not callable(callback):
            raise ValueError(
                f"callback must be a BaseCallback, a list of them or a callable, got a {type(callback).__name__}"
            )
        callback = ConvertCallback(callback)
    if progress_bar:
        callback = CallbackList([callback, ProgressBarCallback()])
    return callback


# -- checkpoints: the run folder ---------------------------------------------------------------
class CheckpointCallback(BaseCallback):
    """Saves the whole training state every ``save_freq`` iterations and at the end, into a run
    folder that survives any interruption.

    ``save_path`` gets ``checkpoints/iter_NNNNNN.safetensors`` (each a :meth:`SVPG.save` file stamped
    with its iteration and the number of ``progress.csv`` rows it follows, written atomically),
    ``model.safetensors`` (a copy of the newest), and ``progress.csv`` (every iteration's scalars).
    The folder is locked while training (one writer at a time, see :class:`svpg.runs.RunLock`), and
    ``provenance.jsonl`` records the code and machine that trained in it (:func:`svpg.runs.record_provenance`).
    ``SVPG.load(checkpoint)`` then ``learn(rest, callback=CheckpointCallback(same folder),
    reset_num_timesteps=False)`` continues bit for bit; checkpoints and progress rows after the loaded
    iteration are moved to ``checkpoints/discarded_after_…``, never deleted.

    :param save_freq: iterations between checkpoints (0: only at the end).
    :param save_path: the run folder; with ``num_seeds`` > 1, one folder per seed.
    :param keep_last: keep only the newest this many checkpoints (0: all); ``model.safetensors`` and
        the best model of an :class:`EvalCallback` are separate files and always kept.
    :param save_replay_buffer: accepted for SB3's code and changes nothing: a checkpoint holds the whole
        training state, the replay buffer included unless the model was built with ``save_replay_buffer=False``.
    :param save_vecnormalize: likewise: the normalization statistics are always in the checkpoint.
    :param name_prefix: SB3's file-name prefix, refused in one line (the files are ``iter_NNNNNN.safetensors``).
    """

    def __init__(
        self,
        save_freq: int,
        save_path,
        keep_last: int = 0,
        verbose: int = 0,
        *,
        save_replay_buffer: bool = True,
        save_vecnormalize: bool = True,
        name_prefix: str | None = None,
    ):
        super().__init__(verbose)
        if name_prefix is not None:
            raise ValueError(
                f"name_prefix={name_prefix!r}: svpg names its checkpoints <save_path>/checkpoints/iter_NNNNNN.safetensors "
                f"(the iteration); drop name_prefix, or give each run its own save_path"
            )
        if isinstance(save_freq, bool) or not isinstance(save_freq, int) or save_freq < 0:
            raise ValueError(f"save_freq must be an integer ≥ 0 (iterations), got {save_freq!r}")
        if isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 0:
            raise ValueError(f"keep_last must be an integer ≥ 0 (0 keeps every checkpoint), got {keep_last!r}")
        self.save_freq, self.keep_last = save_freq, keep_last
        self.save_paths = [Path(p) for p in save_path] if isinstance(save_path, (list, tuple)) else [Path(save_path)]
        self.progress: list[ProgressCSV] = []
        self.locks: list = []
        self.saved = -1
        self.notes: list[str] = []

    def _init_callback(self) -> None:
        if len(self.save_paths) != len(self.model.seeds):
            raise ValueError(
                f"CheckpointCallback needs one folder per seed ({len(self.model.seeds)}), got {len(self.save_paths)}"
            )

    def _on_training_start(self) -> None:
        from svpg.runs import RunLock, record_provenance

        start = self.model.iteration
        for path in self.save_paths:
            path.mkdir(parents=True, exist_ok=True)
            if not any(lock.path.parent == path and lock.held for lock in self.locks):
                self.locks.append(RunLock(path).acquire())
            self.notes += checkpoints.prepare_run_dir(path, start)  # a run continued from an earlier point
            record_provenance(path)
        self.progress = [ProgressCSV(p / PROGRESS_FILE, start) for p in self.save_paths]
        self.model.logger.write_rows_to(self.progress)  # every iteration's row, as the model logs it
        self.saved = start

    def _on_step(self) -> bool:
        if self.save_freq and self.model.iteration % self.save_freq == 0:
            self.save()
        return True

    def _on_training_end(self) -> None:
        if self.saved != self.model.iteration:
            self.save()
        self.close()

    def save(self) -> list[Path]:
        """Checkpoint the model's current iteration into every folder."""
        paths = []
        for k, (path, rows) in enumerate(zip(self.save_paths, self.progress)):
            rows.sync()
            paths.append(checkpoints.save_checkpoint(path, self.model, k, rows.rows))
            if self.keep_last:
                checkpoints.prune(path, self.keep_last)
        self.saved = self.model.iteration
        if self.verbose >= 1:
            print(f"saved checkpoint {paths[0]}")
        return paths

    def close(self) -> None:
        for rows in self.progress:
            rows.close()
        for lock in self.locks:
            lock.release()
        self.locks = []


# -- evaluation ------------------------------------------------------------------------------
class EvalCallback(EventCallback):
    """Evaluates every particle deterministically on a separate environment every ``eval_freq``
    iterations; logs ``eval/mean_reward`` (of the best particle), ``eval/mean_reward_particles`` (the
    mean over particles), ``eval/std_reward``, ``eval/best_particle``, ``eval/mean_ep_length`` and
    every particle's mean as a histogram; saves the best model; runs ``callback_on_new_best`` when
    the best particle's mean return improves and ``callback_after_eval`` after each evaluation.

    :param eval_env: an id, env, factory or vector env (as ``svpg.SVPG`` takes it); default: the
        training environment's id (a new set of environments either way).
    :param best_model_save_path: folder for ``best_model.safetensors`` (a :meth:`SVPG.save` file,
        acting with the best evaluated particle).
    :param log_path: folder for ``evaluations.npz``: SB3's ``timesteps``, ``results`` and ``ep_lengths``
        (of the best particle at each evaluation), and ``particle_results`` (every particle's returns,
        (n_evals, M, n_eval_episodes)) and ``best_particle``.
    :param render: SB3's keyword; only ``False`` (``True`` is one line naming ``evaluate.py --gif``).
    :param warn: SB3's keyword for its Monitor-wrapper warning, which svpg does not need (returns are
        counted by the rollout itself); accepted and ignored.
    """

    def __init__(
        self,
        eval_env=None,
        callback_on_new_best: BaseCallback | None = None,
        callback_after_eval: BaseCallback | None = None,
        n_eval_episodes: int = 5,
        eval_freq: int = 10,
        log_path: str | None = None,
        best_model_save_path: str | None = None,
        deterministic: bool = True,
        render: bool = False,
        verbose: int = 1,
        warn: bool = True,
    ):
        super().__init__(callback_on_new_best, verbose)
        if render:
            raise ValueError(
                "render=True: the evaluation runs without a window; record a saved model's episodes with "
                "python evaluate.py <model> --gif out.gif"
            )
        for name, value, low in (("n_eval_episodes", n_eval_episodes, 1), ("eval_freq", eval_freq, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer ≥ {low}, got {value!r}")
        self.eval_env, self.n_eval_episodes, self.eval_freq = eval_env, n_eval_episodes, eval_freq
        self.callback_after_eval = callback_after_eval
        if callback_after_eval is not None:
            callback_after_eval.parent = self
        self.log_path = Path(log_path) if log_path else None
        self.best_model_save_path = Path(best_model_save_path) if best_model_save_path else None
        self.deterministic = deterministic
        self.best_mean_reward = -np.inf
        self.last_mean_reward = -np.inf
        self.evaluations_timesteps: list[int] = []
        self.evaluations_results: list[np.ndarray] = []  # the best particle's returns, as SB3's (n_eval_episodes,)
        self.evaluations_length: list[np.ndarray] = []
        self.evaluations_particle_results: list[np.ndarray] = []  # every particle's: (M, n_eval_episodes)
        self.evaluations_best_particle: list[int] = []

    def _init_callback(self) -> None:
        from svpg.rl.environments import resolve_env

        if self.eval_env is None:
            self.source = self.model.env_source
            if self.source.factory is not None and self.source.num_envs is not None:
                raise ValueError("EvalCallback needs eval_env when training on a vector env object")
        else:
            self.source = resolve_env(self.eval_env)
        if self.callback_after_eval is not None:
            self.callback_after_eval.init_callback(self.model)

    def _on_step(self) -> bool:
        if self.n_calls % self.eval_freq:
            return True
        from svpg.rl.evaluation import evaluate_particles
        from svpg.seeding import int_seed

        model = self.model
        policy = model.seed_policy(0)
        returns, lengths = evaluate_particles(
            policy,
            self.source.target,
            self.n_eval_episodes,
            seed=int_seed(model.seeds[0], "evaluation", model.iteration),
            deterministic=self.deterministic,
            max_episode_steps=model.horizon,
            env_kwargs=self.source.env_kwargs if self.source.factory is None else None,
            return_lengths=True,
        )
        per_particle = returns.mean(1)
        best = int(per_particle.argmax())
        self.last_mean_reward = float(per_particle[best])
        std = float(returns[best].std(unbiased=False))
        self.evaluations_timesteps.append(model.num_timesteps)
        self.evaluations_results.append(returns[best].cpu().numpy())
        self.evaluations_length.append(lengths[best].cpu().numpy())
        self.evaluations_particle_results.append(returns.cpu().numpy())
        self.evaluations_best_particle.append(best)
        if self.log_path is not None:
            self.log_path.mkdir(parents=True, exist_ok=True)
            # SB3's keys (the evaluated policy: the best particle), then every particle's returns
            data: dict[str, Any] = {
                "timesteps": np.array(self.evaluations_timesteps),
                "results": np.stack(self.evaluations_results),
                "ep_lengths": np.stack(self.evaluations_length),
                "particle_results": np.stack(self.evaluations_particle_results),
                "best_particle": np.array(self.evaluations_best_particle),
            }
            atomic_write(self.log_path / "evaluations.npz", lambda tmp: np.savez(open(tmp, "wb"), **data))
        for key, value in (
            ("eval/mean_reward", self.last_mean_reward),
            ("eval/std_reward", std),
            ("eval/mean_reward_particles", float(per_particle.mean())),
            ("eval/best_particle", best),
            ("eval/mean_ep_length", float(lengths[best].float().mean())),
        ):
            self.logger.record(key, value)
        # a histogram: TensorBoard's alone (a set_logger's csv or stdout has no cell for it)
        self.logger.record("eval/particle_mean_rewards", per_particle.cpu(), exclude=NOT_TENSORBOARD)
        self.logger.dump(model.num_timesteps)
        if self.verbose >= 1:
            print(
                f"eval at {model.num_timesteps:,} steps: best particle {best} {self.last_mean_reward:.1f} ± {std:.1f}, "
                f"mean over particles {float(per_particle.mean()):.1f}"
            )
        go_on = True
        if self.last_mean_reward > self.best_mean_reward:
            self.best_mean_reward = self.last_mean_reward
            if self.best_model_save_path is not None:
                chosen = model.policy.particle
                model.policy.set_particle(best)
                try:
                    model.save(self.best_model_save_path / "best_model.safetensors")
                finally:
                    model.policy.set_particle(chosen)
            go_on = self._on_event()
        if self.callback_after_eval is not None:
            go_on = self.callback_after_eval.on_step() and go_on
        return go_on


class StopTrainingOnRewardThreshold(BaseCallback):
    """Stops training once the parent :class:`EvalCallback`'s best mean reward reaches
    ``reward_threshold`` (use it as ``callback_on_new_best``)."""

    def __init__(self, reward_threshold: float, verbose: int = 0):
        super().__init__(verbose)
        self.reward_threshold = float(reward_threshold)

    def _on_step(self) -> bool:
        if not isinstance(self.parent, EvalCallback):
            raise ValueError("StopTrainingOnRewardThreshold must be an EvalCallback's callback_on_new_best")
        go_on = self.parent.best_mean_reward < self.reward_threshold
        if not go_on and self.verbose >= 1:
            print(f"stopping: best mean reward {self.parent.best_mean_reward:.1f} reached {self.reward_threshold}")
        return go_on


class StopTrainingOnNoModelImprovement(BaseCallback):
    """Stops training when ``max_no_improvement_evals`` evaluations in a row (after ``min_evals``)
    did not improve the best mean reward (use it as an EvalCallback's ``callback_after_eval``)."""

    def __init__(self, max_no_improvement_evals: int, min_evals: int = 0, verbose: int = 0):
        super().__init__(verbose)
        self.max_no_improvement_evals, self.min_evals = max_no_improvement_evals, min_evals
        self.last_best = -np.inf
        self.no_improvement = 0

    def _on_step(self) -> bool:
        if not isinstance(self.parent, EvalCallback):
            raise ValueError("StopTrainingOnNoModelImprovement must be an EvalCallback's callback_after_eval")
        go_on = True
        if self.n_calls > self.min_evals:
            self.no_improvement = 0 if self.parent.best_mean_reward > self.last_best else self.no_improvement + 1
            go_on = self.no_improvement <= self.max_no_improvement_evals
        self.last_best = self.parent.best_mean_reward
        if not go_on and self.verbose >= 1:
            print(f"stopping: no improvement in the last {self.no_improvement} evaluations")
        return go_on


class StopOnRequest(BaseCallback):
    """Stops after the current iteration once ``request.requested`` is set (a
    :class:`svpg.runtime.StopRequest`: Ctrl-C / SIGTERM)."""

    def __init__(self, request):
        super().__init__()
        self.request = request

    def _on_step(self) -> bool:
        return not self.request.requested


__all__ = [
    "BaseCallback",
    "CallbackList",
    "ConvertCallback",
    "EventCallback",
    "EveryNTimesteps",
    "ProgressBarCallback",
    "CheckpointCallback",
    "EvalCallback",
    "StopTrainingOnRewardThreshold",
    "StopTrainingOnNoModelImprovement",
]
