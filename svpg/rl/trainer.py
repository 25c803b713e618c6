"""The SVPG training loop (eqs. 17–19 of S²VGD; Liu et al. 2017).

Each iteration every particle collects its own batch, estimates ∇J(θ_j), and all particles take one
SVGD step on ∇log q(θ) = ∇J(θ)/α + ∇log p(θ) (eq. 19).

Randomness: the initial particles and critics have their own streams of the run's seed, and every
iteration n draws its environment resets, action noise and critic minibatch order from streams keyed
by n (:mod:`svpg.seeding`). A checkpoint therefore needs no generator state, and a resumed run is the
uninterrupted run, bit for bit, on any machine that reproduces it at all.
"""
from __future__ import annotations

import csv
import io
import math
import os
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch
from tqdm.auto import tqdm

import envs
from svpg.core.svgd import SVGD
from svpg.io import CheckpointError, WriteError, atomic_write
from svpg.rl import checkpoints
from svpg.rl.config import RESUMABLE_OPTIONS, SVPGConfig, default_horizon
from svpg.rl.estimators import A2C, Reinforce
from svpg.rl.policies import ParticlePolicy, PolicySpec
from svpg.rl.returns import episode_statistics
from svpg.rl.rollout import Rollout, collect_rollout, per_particle
from svpg.runs import (TensorBoardLogger, check_writable, create_run_dir, read_json_object, remove_stray_temporaries,
                       run_name, write_json)
from svpg.runtime import StopRequest, resolve_device, torch_threads
from svpg.seeding import int_seed, torch_generator

CONFIG_FILE = "config.json"
PROGRESS_FILE = "progress.csv"

# TensorBoard custom-scalars layout: mean ± std over particles (Figure 4 of S²VGD).
CHART_LAYOUT = {
    "svpg": {
        "return over particles (mean ± std)": ["Margin", ["rollout/ep_rew_mean", "rollout/ep_rew_lower", "rollout/ep_rew_upper"]],
        "return over particles (mean, max, min)": ["Multiline", ["rollout/ep_rew_mean", "rollout/ep_rew_max", "rollout/ep_rew_min"]],
        "SVGD terms": ["Multiline", ["svgd/driving_norm", "svgd/repulsive_norm"]],
    }
}


class TrainingInterrupted(KeyboardInterrupt):
    """SIGINT / SIGTERM stopped training after a checkpoint of the last finished iteration was saved."""

    def __init__(self, signal_name: str, exit_status: int, iteration: int):
        super().__init__(f"{signal_name} at iteration {iteration}")
        self.signal_name, self.exit_status, self.iteration = signal_name, exit_status, iteration


class NonFiniteError(RuntimeError):
    """θ or its gradient became NaN/inf; nothing was saved over the last good checkpoint."""


class SVPGTrainer:
    """Builds everything a run needs from an :class:`SVPGConfig` and trains it in a new run folder.

    >>> trainer = SVPGTrainer(SVPGConfig(iterations=5, progress=False))
    >>> policy = trainer.train()
    >>> trainer = SVPGTrainer.resume(trainer.run_dir, iterations=10)   # continue it later

    :param run_dir: an existing run folder to continue in (used by :meth:`resume`); by default a new
        folder ``log_dir/run_name`` is created, and an existing one is refused.
    """

    def __init__(self, config: SVPGConfig, *, run_dir: str | Path | None = None):
        self.config = cfg = config.validate()
        self.device = resolve_device(cfg.device)
        self.update_threads = cfg.threads or os.cpu_count() or 1
        m = cfg.num_particles
        self.horizon = cfg.horizon or default_horizon(cfg.env_id)
        # rllab's sampler: every iteration each environment starts afresh and may run a full horizon
        self.envs_per_particle = max(1, cfg.samples_per_particle // self.horizon)
        self.steps_per_iteration = math.ceil(cfg.samples_per_particle / self.envs_per_particle)
        self.env = envs.make_batched(cfg.env_id, m * self.envs_per_particle, device=self.device, max_episode_steps=self.horizon)
        spec = PolicySpec.for_spaces(
            self.env.single_observation_space, self.env.single_action_space,
            cfg.network_kwargs(self.env.obs_dim, self.env.action_dim), m, obs_scale=cfg.obs_scale,
        )
        self.policy = ParticlePolicy(spec, device=self.device, seed=cfg.seed)
        self.svgd = SVGD(self.policy.theta, cfg.kernel_spec(), cfg.optimizer, cfg.lr)
        if cfg.estimator == "a2c":
            self.estimator = A2C(
                spec.obs_dim, m, cfg.gamma, gae_lambda=cfg.gae_lambda, hidden=cfg.critic_hidden, lr=cfg.critic_lr,
                value_steps=cfg.value_steps, value_epochs=cfg.value_epochs, device=self.device, seed=cfg.seed,
                obs_scale=cfg.obs_scale,
            )
        else:
            self.estimator = Reinforce(cfg.gamma, cfg.baseline, cfg.obs_scale)
        self.steps_per_update = m * self.envs_per_particle * self.steps_per_iteration
        self.iterations = math.ceil(cfg.total_steps / self.steps_per_update) if cfg.total_steps else cfg.iterations
        self.iteration = 0
        self.last_returns = torch.zeros(m, device=self.device)  # per-particle returns of the latest iteration
        self.resumed = False
        self.resumed_from: Path | None = None  # the checkpoint a resumed run continues from
        self.notes: list[str] = []  # what resuming found and did, for the user
        if run_dir is None:  # last, so that bad input creates no folder
            run_dir = create_run_dir(cfg.log_dir, cfg.run_name or run_name(cfg.env_id, cfg.method, cfg.seed), config=asdict(cfg))
        self.run_dir = Path(run_dir)

    # -- one iteration -----------------------------------------------------------------------
    def collect(self) -> Rollout:
        """Every particle runs its policy on its own freshly reset environments (rllab's sampler)."""
        seed, n = self.config.seed, self.iteration
        obs = self.env.reset(seed=int_seed(seed, "env_reset", n))
        noise = torch_generator(seed, "action_noise", n, device=self.device)
        return collect_rollout(self.env, self.policy, obs, self.steps_per_iteration, noise,
                               keep_final_obs=self.estimator.needs_final_obs)

    def policy_gradient_surrogate(self, batch: Rollout, advantages: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Σ_t log π(a_t|s_t) Â_t over each particle's batch: (M,), and the policy entropy (M,).

        Its gradient estimates ∇J up to a positive scale. Summing (not averaging) over the batch
        scales the "likelihood" exp(J/α) with the number of samples, as a Bayesian likelihood scales
        with the data-set size; α then sets how strongly these samples outweigh the prior p(θ).
        """
        m = self.policy.num_particles
        logp, entropy = self.policy.log_prob_entropy(self.policy.theta, per_particle(batch.obs, m), per_particle(batch.actions, m))
        return (logp * per_particle(advantages, m)).sum(1), entropy

    def update(self, batch: Rollout, advantages: torch.Tensor) -> dict[str, torch.Tensor]:
        """One SVGD step on ∇log q = ∇J/α + λ ∇log p (eq. 19; λ = ``prior_weight``, 1 in the paper)."""
        theta = self.policy.theta
        with self.policy.layout.split(theta):  # one backward concatenation instead of one per block
            surrogate, entropy = self.policy_gradient_surrogate(batch, advantages)
            log_q = surrogate / self.config.alpha + self.config.prior_weight * self.policy.log_prior(theta)
        (grad,) = torch.autograd.grad(log_q.sum(), theta)
        if not torch.isfinite(grad).all():  # checked before the step, so the optimizer state stays good too
            raise NonFiniteError(f"iteration {self.iteration + 1}: the gradient of log q(θ) is not finite")
        terms = self.svgd.step(grad)
        if not torch.isfinite(theta).all():
            raise NonFiniteError(f"iteration {self.iteration + 1}: θ is not finite after the SVGD step")
        return {**terms.diagnostics(theta.detach()), "policy/entropy": entropy.mean().detach()}

    def learn(self, batch: Rollout) -> dict[str, torch.Tensor]:
        """Advantages, critic fit, one SVGD step on the batch; returns the iteration's scalars."""
        advantages, value_targets, estimator_info = self.estimator.advantages(batch)
        critic_info = self.estimator.fit(
            batch, value_targets, torch_generator(self.config.seed, "critic_minibatch", self.iteration, device=self.device)
        )
        svgd_info = self.update(batch, advantages)
        returns, length = episode_statistics(batch.rewards, batch.dones)
        self.last_returns = returns.detach()
        self.iteration += 1
        mean, std = returns.mean(), returns.std(unbiased=False)
        return {
            "rollout/ep_rew_mean": mean,
            "rollout/ep_rew_max": returns.max(),
            "rollout/ep_rew_min": returns.min(),
            "rollout/ep_rew_std": std,
            "rollout/ep_rew_lower": mean - std,
            "rollout/ep_rew_upper": mean + std,
            "rollout/ep_len_mean": length.mean(),
            **svgd_info,
            **estimator_info,
            **critic_info,
        }

    def learning_rate(self) -> float:
        """lr for the next iteration: linear decay to 0 over the run with ``anneal_lr`` (CleanRL's)."""
        if not self.config.anneal_lr:
            return self.config.lr
        return (1.0 - self.iteration / max(self.iterations, 1)) * self.config.lr

    # -- the loop ----------------------------------------------------------------------------
    def train(self) -> ParticlePolicy:
        """Train until ``self.iterations``; checkpoints every ``checkpoint_every`` iterations and at the end.

        SIGINT / SIGTERM finish the current iteration, save a checkpoint and raise
        :class:`TrainingInterrupted`; a second signal stops at once without saving (the last
        checkpoint stays consistent). A non-finite θ raises :class:`NonFiniteError` without saving.
        """
        cfg = self.config
        write_json(self.run_dir / CONFIG_FILE, asdict(cfg))  # a resumed run may have been extended
        steps_done = self.iteration * self.steps_per_update
        # a resumed run drops the events an interrupted process logged after its checkpoint
        logger = TensorBoardLogger(self.run_dir, CHART_LAYOUT, purge_step=steps_done + 1 if self.resumed else None)
        progress = ProgressCSV(self.run_dir / PROGRESS_FILE, self.iteration)
        bar = tqdm(total=self.iterations, initial=self.iteration, disable=not cfg.progress, unit="it", dynamic_ncols=True)
        saved = self.iteration
        try:
            with StopRequest() as stop:
                while self.iteration < self.iterations and not stop.requested:
                    t0 = time.perf_counter()
                    for group in self.svgd.optimizer.param_groups:
                        group["lr"] = self.learning_rate()
                    # The rollout is thousands of tiny ops that gain nothing from threads (and lose a
                    # lot on shared cores); only the update's batched matmuls use --threads.
                    with torch_threads(1):
                        batch = self.collect()
                    with torch_threads(self.update_threads):
                        scalars = self.learn(batch)
                    steps_done += batch.num_steps
                    values = logger.log(scalars, steps_done)  # the one host sync per iteration
                    fps = batch.num_steps / (time.perf_counter() - t0)
                    logger.writer.add_scalar("time/fps", fps, steps_done)
                    progress.append({"iteration": self.iteration, "total_steps": steps_done, **values, "time/fps": fps})
                    bar.update(1)
                    bar.set_postfix(mean=f"{values['rollout/ep_rew_mean']:.1f}", max=f"{values['rollout/ep_rew_max']:.1f}", sps=f"{fps:,.0f}")
                    if self.finished or (cfg.checkpoint_every and self.iteration % cfg.checkpoint_every == 0):
                        self.save_checkpoint(progress)
                        saved = self.iteration
                if stop.requested and not self.finished:
                    if saved != self.iteration:
                        self.save_checkpoint(progress)
                    raise TrainingInterrupted(stop.requested, stop.exit_status, self.iteration)
        finally:
            bar.close()
            progress.close()
            logger.close()
        self.policy.set_particle(self.best_particle())
        return self.policy

    def best_particle(self) -> int:
        """The particle with the highest return in the latest iteration (what ``predict`` acts with)."""
        return int(self.last_returns.argmax())

    # -- checkpoints -------------------------------------------------------------------------
    def save_checkpoint(self, progress: "ProgressCSV") -> Path:
        """Save iteration ``self.iteration`` as one stamped unit (see :mod:`svpg.rl.checkpoints`)."""
        progress.sync()
        metadata = {"config": asdict(self.config), "iteration": self.iteration, "env_id": self.config.env_id,
                    "particle": self.best_particle()}
        state = {
            "iteration": self.iteration,
            "optimizer": self.svgd.optimizer.state_dict(),
            "estimator": self.estimator.state_dict(),
            "last_returns": self.last_returns.cpu(),
        }
        return checkpoints.save_checkpoint(
            self.run_dir, self.policy, state, metadata, checkpoints.stamp(self.policy, self.iteration, progress.rows)
        )

    @classmethod
    def resume(cls, run_dir: str | Path, checkpoint: str | int | None = None, **overrides) -> "SVPGTrainer":
        """Continue the run in ``run_dir`` from its newest consistent checkpoint (or ``checkpoint``).

        :param checkpoint: ``iter_000040``, ``40`` or a checkpoint path: resume from that one; later
            checkpoints are moved to ``checkpoints/discarded_after_iter_000040/``, never deleted.
        :param overrides: only :data:`~svpg.rl.config.RESUMABLE_OPTIONS` (``iterations``,
            ``total_steps``, ``eval_episodes``, ``progress``, ``threads``, ``device``,
            ``checkpoint_every``); anything else would make the run a different one and is refused.
        """
        run_dir = Path(run_dir)
        refused = sorted(set(overrides) - set(RESUMABLE_OPTIONS))
        if refused:
            names = ", ".join("--" + k.replace("_", "-") for k in refused)
            raise ValueError(f"{names} cannot change when resuming {run_dir} (it would be a different run); "
                             f"start a new run with another --run-name instead")
        if not (run_dir / CONFIG_FILE).exists():
            raise ValueError(f"cannot resume {run_dir}: it has no {CONFIG_FILE} (pass a run folder, runs/<run-name>)")
        check_writable(run_dir)
        saved = read_json_object(run_dir / CONFIG_FILE, "run config")
        from svpg.cli import dataclass_from_dict

        config = dataclass_from_dict(SVPGConfig, saved, f"run config {run_dir / CONFIG_FILE}")
        if "iterations" in overrides and "total_steps" not in overrides:
            overrides["total_steps"] = 0  # a typed --iterations redefines the run's length
        config = replace(config, **overrides)
        trainer = cls(config, run_dir=run_dir)
        trainer.resumed = True
        stray = remove_stray_temporaries(run_dir)
        if stray:
            trainer.notes.append(f"removed {len(stray)} temporary file(s) of an interrupted write")
        wanted = None if checkpoint is None else checkpoints.parse_checkpoint(checkpoint)
        point = None
        if wanted is not None or checkpoints.listed(run_dir):
            rows = ProgressCSV.count(run_dir / PROGRESS_FILE)
            point, notes = checkpoints.find_resume_point(run_dir, rows, wanted, device=trainer.device)
            trainer.notes += notes
            if trainer.iterations < point.iteration:
                raise ValueError(f"{run_dir} is at iteration {point.iteration}; --iterations {trainer.iterations} would "
                                 f"not extend it (give more, or --from an earlier checkpoint)")
        else:  # stopped before its first complete checkpoint: the run starts over in its folder
            trainer.notes.append("no complete checkpoint yet: starting from iteration 0")
        start = point.iteration if point else 0
        later = checkpoints.files_after(run_dir, start)
        if later:  # incomplete ones, or later ones when --from chose an earlier checkpoint: kept, out of the way
            aside = checkpoints.set_aside(run_dir, start, later)
            ProgressCSV.set_aside(run_dir / PROGRESS_FILE, start, aside / PROGRESS_FILE)
            trainer.notes.append(f"moved {len(later)} checkpoint file(s) after iteration {start} "
                                 f"(and their progress rows) to {aside}")
        if point:
            if checkpoints.refresh_model(run_dir, point):
                trainer.notes.append(f"model.safetensors now holds {point.path.name}")
            trainer._restore(point)
        return trainer

    def _restore(self, point: "checkpoints.Checkpoint") -> None:
        if point.policy.spec != self.policy.spec:
            raise CheckpointError(f"{point.path} holds a different network ({point.policy.spec} vs {self.policy.spec})")
        with torch.no_grad():
            self.policy.theta.copy_(point.policy.theta)
        self.iteration = point.iteration
        self.svgd.optimizer.load_state_dict(point.state["optimizer"])
        self.estimator.load_state_dict(point.state["estimator"])
        self.last_returns = point.state["last_returns"].to(self.device)
        self.resumed_from = point.path

    @property
    def finished(self) -> bool:
        return self.iteration >= self.iterations


class ProgressCSV:
    """Per-iteration scalars (SB3's progress.csv), one row appended per iteration.

    Rows may run ahead of the last checkpoint; on resume the rows after it are dropped (or moved with
    the later checkpoints), so the file and the checkpoint agree.
    """

    def __init__(self, path: Path, keep_until: int):
        self.path = path
        rows = self.read(path, keep_until)
        self.rows = len(rows)
        self.fieldnames = list(rows[0]) if rows else None
        if rows or path.exists():  # rewrite without the rows of iterations after the checkpoint
            self._rewrite(rows)
        self.file = None

    @staticmethod
    def read(path: Path, keep_until: int | None = None) -> list[dict]:
        """Complete rows with iteration ≤ keep_until (a torn last line of a killed process is dropped)."""
        if not path.exists():
            return []
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            rows = [r for r in reader if None not in r.values() and None not in r]
        out = []
        for r in rows:
            try:
                it = int(r["iteration"])
            except (KeyError, ValueError):
                continue
            if keep_until is None or it <= keep_until:
                out.append(r)
        return out

    @classmethod
    def count(cls, path: Path) -> int:
        """Rows 1, 2, … present without a gap: how far the progress file backs a checkpoint."""
        n = 0
        for r in cls.read(path):
            if int(r["iteration"]) == n + 1:
                n += 1
        return n

    @classmethod
    def set_aside(cls, path: Path, iteration: int, target: Path) -> None:
        later = [r for r in cls.read(path) if int(r["iteration"]) > iteration]
        if later:
            cls._write(target, later)

    @staticmethod
    def _write(path: Path, rows: list[dict]) -> None:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
        atomic_write(path, lambda tmp: Path(tmp).write_text(buf.getvalue()))

    def _rewrite(self, rows: list[dict]) -> None:
        if rows:
            self._write(self.path, rows)
        else:
            self.path.unlink()

    def append(self, row: dict) -> None:
        try:
            if self.file is None:
                new = self.fieldnames is None
                self.fieldnames = self.fieldnames or list(row)
                self.file = open(self.path, "a", newline="")
                self.writer = csv.DictWriter(self.file, fieldnames=self.fieldnames)
                if new:
                    self.writer.writeheader()
            self.writer.writerow(row)
            self.file.flush()  # live for readers; durable at the next sync()
        except OSError as e:
            raise WriteError(f"could not write {self.path} ({e.strerror or e})") from None
        self.rows += 1

    def sync(self) -> None:
        """Make every appended row durable (before a checkpoint that counts them is written)."""
        if self.file is not None:
            try:
                os.fsync(self.file.fileno())
            except OSError as e:
                raise WriteError(f"could not write {self.path} ({e.strerror or e})") from None

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
