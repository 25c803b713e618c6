"""The SVPG training loop (eqs. 17–19 of S²VGD; Liu et al. 2017).

Each iteration every particle collects its own batch, estimates ∇J(θ_j), and all particles take one
SVGD step on ∇log q(θ) = ∇J(θ)/α + ∇log p(θ) (eq. 19).
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import asdict
from pathlib import Path

import torch
from tqdm.auto import tqdm

import envs
from svpg.core.allocator import keep_freed_memory
from svpg.core.svgd import SVGD
from svpg.io import MODEL_FILE, load_state, save_state
from svpg.rl.config import SVPGConfig, default_horizon, saved_config
from svpg.rl.estimators import A2C, Reinforce
from svpg.rl.policies import ParticlePolicy, PolicySpec, load_policy, save_policy
from svpg.rl.returns import episode_statistics
from svpg.rl.rollout import Rollout, collect_rollout
from svpg.runs import TensorBoardLogger, make_run_dir, run_name, write_json

STATE_FILE = "trainer_state.pt"
PROGRESS_FILE = "progress.csv"

# TensorBoard custom-scalars layout: mean ± std over particles (Figure 4 of S²VGD).
CHART_LAYOUT = {
    "svpg": {
        "return over particles (mean ± std)": ["Margin", ["rollout/ep_rew_mean", "rollout/ep_rew_lower", "rollout/ep_rew_upper"]],
        "return over particles (mean, max, min)": ["Multiline", ["rollout/ep_rew_mean", "rollout/ep_rew_max", "rollout/ep_rew_min"]],
        "SVGD terms": ["Multiline", ["svgd/driving_norm", "svgd/repulsive_norm"]],
    }
}


class SVPGTrainer:
    """Builds everything a run needs from an :class:`SVPGConfig` and trains it.

    >>> trainer = SVPGTrainer(SVPGConfig(iterations=5, progress=False))
    >>> policy = trainer.train()
    """

    def __init__(self, config: SVPGConfig):
        if config.resume:
            config = self._resumed_config(config)
        self.config = cfg = config.validate()
        self.update_threads = cfg.threads or os.cpu_count() or 1
        keep_freed_memory()  # A2C's critic fit: −25–40 % time (see svpg/core/allocator.py)
        torch.manual_seed(cfg.seed)
        self.device = torch.device(cfg.device)
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError("--device cuda was asked for but torch sees no CUDA device; use --device cpu")
        m = cfg.num_particles
        self.horizon = cfg.horizon or default_horizon(cfg.env_id)
        # rllab's sampler: every iteration each environment starts afresh and may run a full horizon
        self.envs_per_particle = max(1, cfg.samples_per_particle // self.horizon)
        self.steps_per_iteration = math.ceil(cfg.samples_per_particle / self.envs_per_particle)
        self.env = envs.make_batched(
            cfg.env_id, m * self.envs_per_particle, device=self.device, seed=cfg.seed, max_episode_steps=self.horizon
        )
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
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(cfg.seed + 1)
        per_iter = m * self.envs_per_particle * self.steps_per_iteration
        self.iterations = math.ceil(cfg.total_steps / per_iter) if cfg.total_steps else cfg.iterations
        self.iteration = 0
        self.run_dir = Path(cfg.resume) if cfg.resume else make_run_dir(
            cfg.log_dir, cfg.run_name or run_name(cfg.env_id, cfg.method, cfg.seed)
        )
        if cfg.resume:
            self._load_state()

    # -- one iteration -----------------------------------------------------------------------
    def policy_gradient_surrogate(self, batch: Rollout) -> tuple[torch.Tensor, torch.Tensor, dict]:
        """Σ_t log π(a_t|s_t) Â_t over each particle's batch (Â from the estimator, standardised).

        Its gradient estimates ∇J up to a positive scale. Summing (not averaging) over the batch
        scales the "likelihood" exp(J/α) with the number of samples, as a Bayesian likelihood scales
        with the data-set size; α then sets how strongly these samples outweigh the prior p(θ).
        Returns the per-particle surrogate (M,), the policy entropy (M,) and estimator diagnostics.
        """
        adv, info = self.estimator.advantages(batch)
        m = self.policy.num_particles
        obs = batch.obs.transpose(0, 1).reshape(m, -1, batch.obs.shape[-1])
        actions = batch.actions.transpose(0, 1).reshape(m, -1, *batch.actions.shape[3:])
        logp, entropy = self.policy.log_prob_entropy(self.policy.theta, obs, actions)
        return (logp * adv.transpose(0, 1).reshape(m, -1)).sum(1), entropy, info

    def update(self, batch: Rollout) -> dict[str, torch.Tensor]:
        """One SVGD step on ∇log q = ∇J/α + λ ∇log p (eq. 19; λ = ``prior_weight``, 1 in the paper)."""
        theta = self.policy.theta
        with self.policy.layout.split(theta):  # one backward concatenation instead of one per block
            surrogate, entropy, info = self.policy_gradient_surrogate(batch)
            log_q = surrogate / self.config.alpha + self.config.prior_weight * self.policy.log_prior(theta)
        (grad,) = torch.autograd.grad(log_q.sum(), theta)
        terms = self.svgd.step(grad)
        return {**terms.diagnostics(theta.detach()), "policy/entropy": entropy.mean().detach(), **info}

    def iterate(self) -> tuple[Rollout, dict[str, torch.Tensor]]:
        """One iteration: every particle collects its batch, then one SVGD step (no host sync)."""
        # The rollout is thousands of tiny ops that gain nothing from threads (and lose a lot when
        # the cores are shared); only the update's large batched matmuls use --threads.
        torch.set_num_threads(1)
        batch = collect_rollout(
            self.env, self.policy, self.steps_per_iteration, self.generator, keep_final_obs=self.estimator.needs_final_obs
        )
        torch.set_num_threads(self.update_threads)
        ret, length = episode_statistics(batch.rewards, batch.dones)
        if self.config.anneal_lr:  # linear decay to 0 over the run (CleanRL's anneal_lr)
            frac = 1.0 - self.iteration / max(self.iterations, 1)
            for group in self.svgd.optimizer.param_groups:
                group["lr"] = frac * self.config.lr
        diagnostics = self.update(batch)
        self.last_returns = ret.detach()
        self.iteration += 1
        mean, std = ret.mean(), ret.std(unbiased=False)
        return batch, {
            "rollout/ep_rew_mean": mean,
            "rollout/ep_rew_max": ret.max(),
            "rollout/ep_rew_min": ret.min(),
            "rollout/ep_rew_std": std,
            "rollout/ep_rew_lower": mean - std,
            "rollout/ep_rew_upper": mean + std,
            "rollout/ep_len_mean": length.mean(),
            **diagnostics,
        }

    # -- the loop ----------------------------------------------------------------------------
    def train(self) -> ParticlePolicy:
        cfg = self.config
        write_json(self.run_dir / "config.json", asdict(cfg) | {"resume": ""})
        logger = TensorBoardLogger(self.run_dir, CHART_LAYOUT)
        steps_done = self.iteration * self.policy.num_particles * self.envs_per_particle * self.steps_per_iteration
        bar = tqdm(total=self.iterations, initial=self.iteration, disable=not cfg.progress, unit="it", dynamic_ncols=True)
        progress = ProgressCSV(self.run_dir / PROGRESS_FILE, keep_until=self.iteration)
        self._progress = progress
        try:
            while self.iteration < self.iterations:
                t0 = time.perf_counter()
                batch, scalars = self.iterate()
                steps_done += batch.num_steps
                values = logger.log(scalars, steps_done)  # the one host sync per iteration
                fps = batch.num_steps / (time.perf_counter() - t0)
                logger.writer.add_scalar("time/fps", fps, steps_done)
                logger.writer.add_scalar("time/iterations", self.iteration, steps_done)
                progress.append({"iteration": self.iteration, "total_steps": steps_done, **values, "time/fps": fps})
                bar.update(1)
                bar.set_postfix(mean=f"{values['rollout/ep_rew_mean']:.1f}", max=f"{values['rollout/ep_rew_max']:.1f}", sps=f"{fps:,.0f}")
                if cfg.checkpoint_every and self.iteration % cfg.checkpoint_every == 0:
                    self.save_checkpoint()
        except KeyboardInterrupt:
            bar.write("interrupted: saving a checkpoint; resume with --resume " + str(self.run_dir))
        finally:
            bar.close()
            self.save_checkpoint()
            logger.close()
            del self._progress
        return self.policy

    # -- checkpoints -------------------------------------------------------------------------
    def save_checkpoint(self) -> Path:
        """Ensemble to ``model.safetensors`` (and ``checkpoints/``), optimizer and RNG to a state file,
        and the per-iteration scalars so far to ``progress.csv``."""
        if hasattr(self, "_progress"):
            self._progress.flush()
        if hasattr(self, "last_returns"):
            self.policy.set_particle(int(self.last_returns.argmax()))
        meta = {"config": asdict(self.config), "iteration": self.iteration, "env_id": self.config.env_id}
        save_policy(self.policy, self.run_dir / "checkpoints" / f"iter_{self.iteration:06d}.safetensors", meta)
        path = save_policy(self.policy, self.run_dir / MODEL_FILE, meta)
        save_state(
            self.run_dir / STATE_FILE,
            {
                "iteration": self.iteration,
                "optimizer": self.svgd.optimizer.state_dict(),
                "generator": self.generator.get_state(),
                "env_generator": self.env.generator.get_state() if hasattr(self.env, "generator") else torch.empty(0),
                "torch_rng": torch.get_rng_state(),
                "estimator": self.estimator.state_dict(),
            },
        )
        return path

    @staticmethod
    def _resumed_config(config: SVPGConfig) -> SVPGConfig:
        path = Path(config.resume) / "config.json"
        if not path.exists():
            raise FileNotFoundError(f"cannot resume: {path} does not exist (is {config.resume} a run folder?)")
        import json

        saved = saved_config(json.loads(path.read_text()))
        saved.resume, saved.progress = config.resume, config.progress
        if config.iterations != saved.iterations and config.iterations != SVPGConfig.iterations:
            saved.iterations = config.iterations  # allow extending a finished run
        return saved

    def _load_state(self) -> None:
        loaded = load_policy(self.run_dir, device=self.device)
        if loaded.spec != self.policy.spec:
            raise ValueError(f"cannot resume: {self.run_dir} holds a different network ({loaded.spec} vs {self.policy.spec})")
        with torch.no_grad():
            self.policy.theta.copy_(loaded.theta)
        state = load_state(self.run_dir / STATE_FILE)
        self.iteration = int(state["iteration"])
        self.svgd.optimizer.load_state_dict(state["optimizer"])
        self.generator.set_state(state["generator"])
        if hasattr(self.env, "generator") and state["env_generator"].numel():
            self.env.generator.set_state(state["env_generator"])
        torch.set_rng_state(state["torch_rng"])
        self.estimator.load_state_dict(state.get("estimator", {}))



class ProgressCSV:
    """Per-iteration scalars (SB3's progress.csv), rewritten atomically at every checkpoint.

    On resume the rows after the checkpoint's iteration are dropped, so the file and the
    checkpoint always agree.
    """

    def __init__(self, path: Path, keep_until: int):
        import csv

        self.path = path
        self.rows: list[dict] = []
        if keep_until and path.exists():
            with open(path, newline="") as f:
                self.rows = [r for r in csv.DictReader(f) if int(r["iteration"]) <= keep_until]

    def append(self, row: dict) -> None:
        self.rows.append(row)

    def flush(self) -> None:
        import csv
        import io

        from svpg.io import _atomic_write

        if not self.rows:
            return
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(self.rows[-1]))
        writer.writeheader()
        writer.writerows(self.rows)
        _atomic_write(self.path, lambda tmp: Path(tmp).write_text(buf.getvalue()))
