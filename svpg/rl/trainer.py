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
from collections.abc import Callable
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

    With ``num_seeds`` S > 1 the seeds ``seed, seed + 1, …`` train as one batched computation: an
    (S·M, D) particle tensor, one environment batch, an SVGD kernel per seed (no particle sees another
    seed's), per-seed random streams spawned exactly as a single-seed run spawns them, and one ordinary
    run folder per seed (``<run-name>__seed<s>``), each resumable on its own. Each seed's run is the
    single-seed run up to float summation order.

    >>> trainer = SVPGTrainer(SVPGConfig(iterations=5, progress=False))
    >>> policy = trainer.train()
    >>> trainer = SVPGTrainer.resume(trainer.run_dir, iterations=10)   # continue it later

    :param run_dirs: existing run folders to continue in, one per seed (used by :meth:`resume`); by
        default new folders under ``log_dir`` are created, and an existing one is refused.
    :param seeds: the seeds (default ``seed, …, seed + num_seeds − 1``).
    """

    def __init__(self, config: SVPGConfig, *, run_dirs: list[Path] | None = None, seeds: list[int] | None = None):
        self.config = cfg = config.validate()
        self.seeds = list(seeds) if seeds is not None else [cfg.seed + k for k in range(cfg.num_seeds)]
        self.device = resolve_device(cfg.device)
        self.update_threads = cfg.threads or os.cpu_count() or 1
        m, s = cfg.num_particles, len(self.seeds)
        self.horizon = cfg.horizon or default_horizon(cfg.env_id)
        # rllab's sampler: every iteration each environment starts afresh and may run a full horizon
        self.envs_per_particle = max(1, cfg.samples_per_particle // self.horizon)
        self.steps_per_iteration = math.ceil(cfg.samples_per_particle / self.envs_per_particle)
        self.env = envs.make_batched(cfg.env_id, s * m * self.envs_per_particle, device=self.device,
                                     max_episode_steps=self.horizon)
        self.spec = PolicySpec.for_spaces(
            self.env.single_observation_space, self.env.single_action_space,
            cfg.network_kwargs(self.env.obs_dim, self.env.action_dim), m, obs_scale=cfg.obs_scale,
        )
        # each seed's particles drawn from its own stream, exactly as its single-seed run draws them
        theta = torch.cat([ParticlePolicy(self.spec, device=self.device, seed=seed).theta.detach() for seed in self.seeds])
        self.policy = ParticlePolicy(replace(self.spec, num_particles=s * m), theta)
        self.svgd = SVGD(self.policy.theta, cfg.kernel_spec(), cfg.optimizer, cfg.lr, groups=s)
        if cfg.estimator == "a2c":
            self.estimator = A2C(
                self.spec.obs_dim, s * m, cfg.gamma, gae_lambda=cfg.gae_lambda, hidden=cfg.critic_hidden,
                lr=cfg.critic_lr, value_steps=cfg.value_steps, value_epochs=cfg.value_epochs, device=self.device,
                seed=self.seeds, obs_scale=cfg.obs_scale,
            )
        else:
            self.estimator = Reinforce(cfg.gamma, cfg.baseline, cfg.obs_scale, groups=s)
        self.steps_per_update = m * self.envs_per_particle * self.steps_per_iteration  # per seed
        self.iterations = math.ceil(cfg.total_steps / self.steps_per_update) if cfg.total_steps else cfg.iterations
        self.iteration = 0
        self.last_returns = torch.zeros(s * m, device=self.device)  # per-particle returns of the latest iteration
        self.resumed = False
        self.resumed_from: list[Path] = []  # the checkpoints a resumed run continues from
        self.notes: list[str] = []  # what resuming found and did, for the user
        if run_dirs is None:  # last, so that bad input creates no folder
            run_dirs = self._create_run_dirs()
        self.run_dirs = [Path(p) for p in run_dirs]

    def _create_run_dirs(self) -> list[Path]:
        cfg = self.config
        names = [cfg.run_name or run_name(cfg.env_id, cfg.method, seed) for seed in self.seeds]
        if len(self.seeds) > 1:
            names = [f"{name}__seed{seed}" if cfg.run_name else name for name, seed in zip(names, self.seeds)]
        for name in names:  # refuse before creating any
            path = Path(cfg.log_dir) / name
            if path.exists() and (not path.is_dir() or any(path.iterdir())):
                create_run_dir(cfg.log_dir, name)  # raises the one-line error
        return [create_run_dir(cfg.log_dir, name, config=asdict(self.seed_config(k))) for k, name in enumerate(names)]

    def seed_config(self, k: int) -> SVPGConfig:
        """The single-seed configuration of seed k's run folder."""
        return replace(self.config, seed=self.seeds[k], num_seeds=1)

    @property
    def run_dir(self) -> Path:
        """The run folder of a single-seed trainer (a seed-batched one has :attr:`run_dirs`)."""
        if len(self.run_dirs) != 1:
            raise AttributeError(f"this trainer runs {len(self.run_dirs)} seeds: use run_dirs")
        return self.run_dirs[0]

    def seed_policy(self, k: int) -> ParticlePolicy:
        """Seed k's M particles as an ordinary ensemble (acting with its best particle)."""
        m = self.config.num_particles
        policy = ParticlePolicy(self.spec, self.policy.theta.detach()[k * m:(k + 1) * m])
        return policy.set_particle(self.best_particles()[k])

    # -- one iteration -----------------------------------------------------------------------
    def _streams(self, name: str) -> list[torch.Generator]:
        """Iteration n's generator of stream ``name`` for every seed."""
        return [torch_generator(seed, name, self.iteration, device=self.device) for seed in self.seeds]

    def collect(self) -> Rollout:
        """Every particle runs its policy on its own freshly reset environments (rllab's sampler)."""
        resets = [int_seed(seed, "env_reset", self.iteration) for seed in self.seeds]
        obs = self.env.reset(seed=resets[0] if len(resets) == 1 else resets)
        noise = self._streams("action_noise")
        return collect_rollout(self.env, self.policy, obs, self.steps_per_iteration, noise[0] if len(noise) == 1 else noise,
                               keep_final_obs=self.estimator.needs_final_obs)

    def policy_gradient_surrogate(self, batch: Rollout, advantages: torch.Tensor, theta: torch.Tensor | None = None,
                                  rows: slice = slice(None)) -> tuple[torch.Tensor, torch.Tensor]:
        """Σ_t log π(a_t|s_t) Â_t over each particle's batch: (M,), and the policy entropy (M,).

        Its gradient estimates ∇J up to a positive scale. Summing (not averaging) over the batch
        scales the "likelihood" exp(J/α) with the number of samples, as a Bayesian likelihood scales
        with the data-set size; α then sets how strongly these samples outweigh the prior p(θ).

        :param theta: the particles ``rows`` of the batch (default: all, ``policy.theta``).
        """
        theta = self.policy.theta if theta is None else theta
        m = theta.shape[0]
        obs, actions = per_particle(batch.obs[:, rows], m), per_particle(batch.actions[:, rows], m)
        logp, entropy = self.policy.log_prob_entropy(theta, obs, actions)
        return (logp * per_particle(advantages[:, rows], m)).sum(1), entropy

    def update(self, batch: Rollout, advantages: torch.Tensor) -> dict[str, torch.Tensor]:
        """One SVGD step on ∇log q = ∇J/α + λ ∇log p (eq. 19; λ = ``prior_weight``, 1 in the paper)."""
        theta = self.policy.theta
        grad, entropy = torch.empty_like(theta), []
        # One seed at a time: the gradient is per-row work (a forward and backward pass over every
        # sample), which runs faster on one seed's activations, small enough to stay in cache, than on
        # all S·M particles' at once; each seed's gradient is then computed as its single-seed run does.
        for rows in self._seed_rows():
            block = theta.detach()[rows].requires_grad_()
            with self.policy.layout.split(block):  # one backward concatenation instead of one per block
                surrogate, block_entropy = self.policy_gradient_surrogate(batch, advantages, block, rows)
                log_q = surrogate / self.config.alpha + self.config.prior_weight * self.policy.log_prior(block)
            grad[rows] = torch.autograd.grad(log_q.sum(), block)[0]
            entropy.append(block_entropy.detach())
        self._check_finite(grad, "the gradient of log q(θ)")  # before the step: the optimizer state stays good
        terms = self.svgd.step(grad)
        self._check_finite(theta.detach(), "θ after the SVGD step")
        # the likelihood sees only the directions of the Householder vectors: keep them on the unit sphere
        min_norm = torch.stack([self.policy.net.normalise_householder_(block) for block in self._per_seed(theta.detach())])
        return {**terms.diagnostics(theta.detach()), "policy/entropy": torch.stack([e.mean() for e in entropy]),
                "structure/min_householder_norm": min_norm}

    def _seed_rows(self) -> list[slice]:
        """Each seed's rows of the (S·M, …) particle tensors."""
        m = self.config.num_particles
        return [slice(k * m, (k + 1) * m) for k in range(len(self.seeds))]

    def _check_finite(self, x: torch.Tensor, what: str) -> None:
        finite = torch.isfinite(x).view(len(self.seeds), -1).all(-1)
        if not finite.all():
            bad = [seed for seed, ok in zip(self.seeds, finite.tolist()) if not ok]
            raise NonFiniteError(f"iteration {self.iteration + 1}: {what} is not finite (seed {', '.join(map(str, bad))})")

    def _per_seed(self, x: torch.Tensor) -> torch.Tensor:
        """A per-particle tensor (S·M, …) → (S, M, …)."""
        return x.view(len(self.seeds), -1, *x.shape[1:])

    def learn(self, batch: Rollout) -> dict[str, torch.Tensor]:
        """Advantages, critic fit, one SVGD step on the batch; returns the iteration's scalars, one
        value per seed (shape (S,))."""
        advantages, value_targets, estimator_info = self.estimator.advantages(batch)
        critic_info = self.estimator.fit(batch, value_targets, self._streams("critic_minibatch"))
        svgd_info = self.update(batch, advantages)
        returns, length = episode_statistics(batch.rewards, batch.dones)
        self.last_returns = returns.detach()
        self.iteration += 1
        returns, length = self._per_seed(returns), self._per_seed(length)
        mean, std = returns.mean(-1), returns.std(-1, unbiased=False)
        scalars = {
            "rollout/ep_rew_mean": mean,
            "rollout/ep_rew_max": returns.max(-1).values,
            "rollout/ep_rew_min": returns.min(-1).values,
            "rollout/ep_rew_std": std,
            "rollout/ep_rew_lower": mean - std,
            "rollout/ep_rew_upper": mean + std,
            "rollout/ep_len_mean": length.mean(-1),
            **svgd_info,
            **estimator_info,
            **critic_info,
        }
        return {k: v.reshape(len(self.seeds)) for k, v in scalars.items()}

    def learning_rate(self) -> float:
        """lr for the next iteration: linear decay to 0 over the run with ``anneal_lr`` (CleanRL's)."""
        if not self.config.anneal_lr:
            return self.config.lr
        return (1.0 - self.iteration / max(self.iterations, 1)) * self.config.lr

    # -- the loop ----------------------------------------------------------------------------
    def train(self, callback: Callable[[int, list[dict[str, float]]], None] | None = None) -> ParticlePolicy:
        """Train until ``self.iterations``; checkpoints every ``checkpoint_every`` iterations and at the end.

        :param callback: ``callback(iteration, scalars)`` after every iteration, with one dict of the
            logged scalars per seed (e.g. to report to Ray Tune).

        SIGINT / SIGTERM finish the current iteration, save a checkpoint and raise
        :class:`TrainingInterrupted`; a second signal stops at once without saving (the last
        checkpoint stays consistent). A non-finite θ raises :class:`NonFiniteError` without saving.
        Returns the policy of all S·M particles (:meth:`seed_policy` gives one seed's).
        """
        cfg = self.config
        for k, run_dir in enumerate(self.run_dirs):
            write_json(run_dir / CONFIG_FILE, asdict(self.seed_config(k)))  # a resumed run may have been extended
        steps_done = self.iteration * self.steps_per_update
        # a resumed run drops the events an interrupted process logged after its checkpoint
        loggers = [TensorBoardLogger(d, CHART_LAYOUT, purge_step=steps_done + 1 if self.resumed else None) for d in self.run_dirs]
        progress = [ProgressCSV(d / PROGRESS_FILE, self.iteration) for d in self.run_dirs]
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
                    steps_done += self.steps_per_update
                    # the one host sync per iteration: every scalar of every seed at once
                    table = torch.stack([v.to(torch.float64) for v in scalars.values()], 1).tolist()
                    fps = batch.num_steps / (time.perf_counter() - t0)
                    for logger, rows, row in zip(loggers, progress, table):
                        values = dict(zip(scalars, row))
                        logger.write({**values, "time/fps": fps}, steps_done)
                        rows.append({"iteration": self.iteration, "total_steps": steps_done, **values, "time/fps": fps})
                    if callback is not None:
                        callback(self.iteration, [dict(zip(scalars, row)) for row in table])
                    bar.update(1)
                    means = [row[0] for row in table]
                    bar.set_postfix(mean=f"{sum(means) / len(means):.1f}", max=f"{max(row[1] for row in table):.1f}", sps=f"{fps:,.0f}")
                    if self.finished or (cfg.checkpoint_every and self.iteration % cfg.checkpoint_every == 0):
                        self.save_checkpoint(progress)
                        saved = self.iteration
                if stop.requested and not self.finished:
                    if saved != self.iteration:
                        self.save_checkpoint(progress)
                    raise TrainingInterrupted(stop.requested, stop.exit_status, self.iteration)
        finally:
            bar.close()
            for rows in progress:
                rows.close()
            for logger in loggers:
                logger.close()
        if len(self.seeds) == 1:
            self.policy.set_particle(self.best_particles()[0])
        return self.policy

    def best_particles(self) -> list[int]:
        """Per seed, the particle (0…M−1) with the highest return in the latest iteration (what
        ``predict`` acts with)."""
        return self._per_seed(self.last_returns).argmax(-1).tolist()

    # -- checkpoints -------------------------------------------------------------------------
    def save_checkpoint(self, progress: list["ProgressCSV"]) -> list[Path]:
        """Save iteration ``self.iteration`` of every seed as one stamped unit per run folder (see
        :mod:`svpg.rl.checkpoints`)."""
        s = len(self.seeds)
        optimizer = split_rows(self.svgd.optimizer.state_dict(), s)
        estimator = split_rows(self.estimator.state_dict(), s)
        returns = self.last_returns.cpu().chunk(s)
        paths = []
        for k, (run_dir, rows) in enumerate(zip(self.run_dirs, progress)):
            rows.sync()
            policy = self.seed_policy(k)
            metadata = {"config": asdict(self.seed_config(k)), "iteration": self.iteration,
                        "env_id": self.config.env_id, "particle": policy.particle}
            state = {"iteration": self.iteration, "optimizer": optimizer[k], "estimator": estimator[k],
                     "last_returns": returns[k].clone()}
            stamp = checkpoints.stamp(policy, self.iteration, rows.rows)
            paths.append(checkpoints.save_checkpoint(run_dir, policy, state, metadata, stamp))
        return paths

    @classmethod
    def resume(cls, run_dirs: str | Path | list, checkpoint: str | int | None = None, **overrides) -> "SVPGTrainer":
        """Continue the run in ``run_dirs`` from its newest consistent checkpoint (or ``checkpoint``).

        :param run_dirs: a run folder, or several runs of one configuration that differ only in their
            seed, resumed as one seed-batched computation from the newest checkpoint all of them have.
        :param checkpoint: ``iter_000040``, ``40`` or a checkpoint path: resume from that one; later
            checkpoints are moved to ``checkpoints/discarded_after_iter_000040/``, never deleted.
        :param overrides: only :data:`~svpg.rl.config.RESUMABLE_OPTIONS` (``iterations``,
            ``total_steps``, ``eval_episodes``, ``progress``, ``threads``, ``device``,
            ``checkpoint_every``); anything else would make the run a different one and is refused.
        """
        from svpg.cli import dataclass_from_dict

        run_dirs = [Path(run_dirs)] if isinstance(run_dirs, (str, Path)) else [Path(p) for p in run_dirs]
        refused = sorted(set(overrides) - set(RESUMABLE_OPTIONS))
        if refused:
            names = ", ".join("--" + k.replace("_", "-") for k in refused)
            raise ValueError(f"{names} cannot change when resuming {run_dirs[0]} (it would be a different run); "
                             f"start a new run with another --run-name instead")
        configs = []
        for run_dir in run_dirs:
            if not (run_dir / CONFIG_FILE).exists():
                raise ValueError(f"cannot resume {run_dir}: it has no {CONFIG_FILE} (pass a run folder, runs/<run-name>)")
            check_writable(run_dir)
            saved = read_json_object(run_dir / CONFIG_FILE, "run config")
            configs.append(dataclass_from_dict(SVPGConfig, saved, f"run config {run_dir / CONFIG_FILE}"))
        config = configs[0]
        for run_dir, other in zip(run_dirs[1:], configs[1:]):
            if replace(other, seed=config.seed, run_name=config.run_name) != config:
                raise ValueError(f"{run_dir} and {run_dirs[0]} are runs of different configurations: resume them separately")
        seeds = [c.seed for c in configs]
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"the run folders repeat a seed ({seeds}): pass each seed's folder once")
        if "iterations" in overrides and "total_steps" not in overrides:
            overrides["total_steps"] = 0  # a typed --iterations redefines the run's length
        trainer = cls(replace(config, **overrides), run_dirs=run_dirs, seeds=seeds)
        trainer.resumed = True
        wanted = None if checkpoint is None else checkpoints.parse_checkpoint(checkpoint)
        points = trainer._find_resume_points(wanted)
        start = points[0].iteration if points else 0
        for run_dir in run_dirs:
            prefix = f"{run_dir}: " if len(run_dirs) > 1 else ""
            stray = remove_stray_temporaries(run_dir)
            if stray:
                trainer.notes.append(f"{prefix}removed {len(stray)} temporary file(s) of an interrupted write")
            later = checkpoints.files_after(run_dir, start)
            if later:  # incomplete ones, or later ones when --from chose an earlier checkpoint: kept, out of the way
                aside = checkpoints.set_aside(run_dir, start, later)
                ProgressCSV.set_aside(run_dir / PROGRESS_FILE, start, aside / PROGRESS_FILE)
                trainer.notes.append(f"{prefix}moved {len(later)} checkpoint file(s) after iteration {start} "
                                     f"(and their progress rows) to {aside}")
        if points:
            if trainer.iterations < start:
                raise ValueError(f"{run_dirs[0]} is at iteration {start}; --iterations {trainer.iterations} would "
                                 f"not extend it (give more, or --from an earlier checkpoint)")
            for run_dir, point in zip(run_dirs, points):
                if checkpoints.refresh_model(run_dir, point):
                    trainer.notes.append(f"{run_dir / 'model.safetensors'} now holds {point.path.name}")
            trainer._restore(points)
        else:
            trainer.notes.append("no complete checkpoint yet: starting from iteration 0")
        return trainer

    def _find_resume_points(self, wanted: int | None) -> list["checkpoints.Checkpoint"]:
        """One verified checkpoint per run folder, all of the same iteration (empty: start over)."""
        if wanted is None and not all(checkpoints.listed(d) for d in self.run_dirs):
            if any(checkpoints.listed(d) for d in self.run_dirs):
                self.notes.append("a seed has no complete checkpoint yet: every seed starts over")
            return []
        points = []
        for run_dir in self.run_dirs:
            rows = ProgressCSV.count(run_dir / PROGRESS_FILE)
            point, notes = checkpoints.find_resume_point(run_dir, rows, wanted, device=self.device)
            points.append(point)
            self.notes += [f"{run_dir}: {n}" if len(self.run_dirs) > 1 else n for n in notes]
        common = min(p.iteration for p in points)
        if any(p.iteration != common for p in points):  # a kill between seeds' checkpoints: go back together
            points = [p if p.iteration == common else
                      checkpoints.find_resume_point(d, ProgressCSV.count(d / PROGRESS_FILE), common, device=self.device)[0]
                      for d, p in zip(self.run_dirs, points)]
        return points

    def _restore(self, points: list["checkpoints.Checkpoint"]) -> None:
        for point in points:
            if point.policy.spec != self.spec:
                raise CheckpointError(f"{point.path} holds a different network ({point.policy.spec} vs {self.spec})")
        with torch.no_grad():
            self.policy.theta.copy_(torch.cat([p.policy.theta.to(self.device) for p in points]))
        self.iteration = points[0].iteration
        self.svgd.optimizer.load_state_dict(join_rows([p.state["optimizer"] for p in points]))
        self.estimator.load_state_dict(join_rows([p.state["estimator"] for p in points]))
        self.last_returns = torch.cat([p.state["last_returns"] for p in points]).to(self.device)
        self.resumed_from = [p.path for p in points]

    @property
    def finished(self) -> bool:
        return self.iteration >= self.iterations


def split_rows(state, parts: int):
    """Split every tensor of a (nested) state dict along its first axis into ``parts`` (per-seed
    optimizer and critic state of a seed-batched run); other values are copied to every part."""
    if parts == 1:
        return [state]
    if isinstance(state, torch.Tensor) and state.ndim >= 1:
        return [t.clone() for t in state.chunk(parts)]
    if isinstance(state, dict):
        split = {k: split_rows(v, parts) for k, v in state.items()}
        return [{k: v[i] for k, v in split.items()} for i in range(parts)]
    if isinstance(state, list):
        split = [split_rows(v, parts) for v in state]
        return [[v[i] for v in split] for i in range(parts)]
    return [state] * parts


def join_rows(states: list):
    """The inverse of :func:`split_rows`."""
    if len(states) == 1:
        return states[0]
    first = states[0]
    if isinstance(first, torch.Tensor) and first.ndim >= 1:
        return torch.cat(states)
    if isinstance(first, dict):
        return {k: join_rows([s[k] for s in states]) for k in first}
    if isinstance(first, list):
        return [join_rows([s[i] for s in states]) for i in range(len(first))]
    return first


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
