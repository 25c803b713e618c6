"""``svpg.SVPG``: Stein variational policy gradient as a library, with Stable-Baselines3's interface.

    model = svpg.SVPG("CartPole-v1", seed=0)
    model.learn(100_000, callback=cb)
    model.save("cartpole")                       # cartpole.safetensors: everything needed to continue
    model.close()                                # its environments (``with svpg.SVPG(...) as model:`` too)
    model = svpg.SVPG.load("cartpole")           # continues bit for bit
    action, _ = model.predict(obs, deterministic=True)

Each iteration every particle collects its own batch, estimates ∇J(θ_j), and all particles take one
SVGD step on ∇log q(θ) = ∇J(θ)/α + λ ∇log p(θ) (eqs. 17–19 of S²VGD,
https://proceedings.mlr.press/v84/zhang18a.html; SVPG, https://arxiv.org/abs/1704.02399).

Randomness: the initial particles and critics have their own streams of the seed, and iteration n
draws its environment resets, action noise and critic minibatch order from streams keyed by n
(:mod:`svpg.seeding`). The iteration counter is therefore the whole position of every random stream,
and a saved model continues exactly as the uninterrupted run would.

With ``num_seeds`` S > 1 the seeds ``seed, …, seed + S − 1`` train as one batched computation: an
(S·M, D) particle tensor, one environment batch, an SVGD kernel per seed (no particle sees another
seed's), each seed's streams spawned exactly as its single-seed run spawns them. Each seed's run is the
single-seed run up to float summation order; :meth:`SVPG.seed_state` and :meth:`SVPG.save` (per seed)
write what that single-seed run would have written.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from svpg.core.extractors import network_input_size
from svpg.core.svgd import SVGD
from svpg.deprecation import renamed_attribute
from svpg.envs import make_batched
from svpg.rl import checkpoints
from svpg.rl.config import (
    DEFAULT_HORIZON,
    SB3_NAMES,
    SVPGConfig,
    action_noise_std,
    default_horizon,
    load_preset,
    policy_kwargs_options,
    refuse_other_estimators_options,
    train_freq_steps,
    with_estimator_defaults,
)
from svpg.rl.environments import EnvSource, is_custom, resolve_env, sb3_vec_env
from svpg.rl.estimators import ESTIMATORS, Estimator, policy_gradient_surrogate
from svpg.rl.logger import Logger
from svpg.rl.normalize import Normalizer
from svpg.rl.policies import ParticlePolicy, PolicySpec
from svpg.rl.returns import episode_statistics
from svpg.rl.rollout import Rollout, collect_rollout
from svpg.runtime import resolve_device
from svpg.seeding import int_seed, torch_generator

#: config fields that describe a run folder or its length, not the algorithm: not ``SVPG`` options
RUN_FIELDS = (
    "env_id",
    "env_kwargs",
    "log_dir",
    "run_name",
    "checkpoint_every",
    "keep_checkpoints",
    "eval_episodes",
    "progress",
    "iterations",
    "total_steps",
)


#: SB3's policy names, accepted as SVPG's first argument before the env (``SVPG("MlpPolicy", env)``)
SB3_POLICIES = ("MlpPolicy", "CnnPolicy", "MultiInputPolicy")


def env_of_sb3_form(args: tuple, env=None, policy=None):
    """The env of ``SVPG(env)``, of SB3's ``SVPG("MlpPolicy", env)`` and ``SVPG("MlpPolicy", env=env)``, and of
    ``SVPG(policy="MlpPolicy", env=env)`` (rl-zoo3's keywords); ``"CartPole-v1"`` when none is given; anything
    else is one line."""
    if policy is not None and not (isinstance(policy, str) and policy in SB3_POLICIES):
        raise ValueError(
            f"policy={policy!r}: svpg builds every particle's network from the spaces and takes only SB3's names "
            f"{list(SB3_POLICIES)}; size the network with hidden=(64, 64)"
        )
    named = bool(args) and isinstance(args[0], str) and args[0] in SB3_POLICIES
    if named and policy is not None:
        raise ValueError(f"policy={policy!r} and the positional policy name {args[0]!r}: pass one of them")
    envs = [*args[named:], *([] if env is None else [env])]
    if len(envs) > 1:
        raise ValueError(
            f"SVPG takes one env (positional or env=), after SB3's policy name out of {list(SB3_POLICIES)} if you "
            f"like; pass every option by name"
        )
    if not envs and named:
        raise ValueError(
            f"{args[0]!r} is SB3's policy name, not an environment: pass SVPG({args[0]!r}, env) or SVPG(env)"
        )
    return envs[0] if envs else "CartPole-v1"


def _copies(state):
    """A nested state with every tensor cloned (state dicts alias the live tensors)."""
    if isinstance(state, torch.Tensor):
        return state.clone()
    if isinstance(state, dict):
        return {key: _copies(value) for key, value in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(_copies(value) for value in state)
    return state


class NonFiniteError(RuntimeError):
    """θ, its gradient or the environment's output became NaN/inf; nothing was saved over the last
    good checkpoint."""


class SVPG:
    """M policy particles trained jointly by Stein variational policy gradient (S²VGD, SVGD or M
    independent learners), with Stable-Baselines3's ``learn`` / ``predict`` / ``save`` / ``load``.

    Paper: https://proceedings.mlr.press/v84/zhang18a.html (S²VGD), https://arxiv.org/abs/1704.02399 (SVPG)

    :param env: by position or keyword (default ``"CartPole-v1"``): a registered Gymnasium id (also
        ``"my_pkg.my_module:MyEnv-v0"``, which imports the module first), a ``gym.Env`` instance (copied
        once per particle environment), a zero-argument factory returning a new ``gym.Env`` (e.g. an
        ``Env`` subclass), or a ``gym.vector.VectorEnv`` with same-step autoreset whose ``num_envs`` is a
        multiple of ``num_particles``. SB3's forms ``SVPG("MlpPolicy", env)`` and
        ``SVPG("MlpPolicy", env=env)`` work too (also ``"CnnPolicy"``, ``"MultiInputPolicy"``): svpg
        builds every particle's network from the observation space whichever name is given.
    :param policy: SB3's policy name by keyword (``SVPG(policy="MlpPolicy", env=env)``, as rl-zoo3 passes
        it); the same as leaving it out.
    :param method: ``"s2vgd"`` (default), ``"svgd"``, ``"svgd-star"`` or ``"independent"``.
    :param estimator: ``"ppo"`` (default), ``"a2c"``, ``"reinforce"``, ``"sac"`` or ``"td3"`` (off-policy;
        their own defaults for the options they change: ``svpg.rl.estimators.SAC.defaults``, ``TD3.defaults``).
    :param num_particles: M (default 4).
    :param seed: the run seed; every random stream is spawned from it.
    :param device: torch device.
    :param preset: a preset name (``svpg.rl.config.available_presets()``) or JSON file whose fields are
        the defaults; explicit arguments override it.
    :param tensorboard_log: a folder for TensorBoard events (``<tb_log_name>_<n>/``); ``None`` writes nothing.
    :param verbose: 0 silent, 1 a line at the start of ``learn`` and every ``log_interval`` iterations.
    :param env_kwargs: ``gym.make`` keyword arguments of an id (recorded in saved models).
    :param options: any other training option of :class:`~svpg.rl.config.SVPGConfig` (``alpha``,
        ``lr``, ``samples_per_particle``, ``hidden``, ``num_seeds``, …); ``python train.py --help``
        documents each.
    """

    def __init__(
        self,
        env=None,
        /,
        *sb3_env,
        policy: str | None = None,
        method: str | None = None,
        estimator: str | None = None,
        num_particles: int | None = None,
        seed: int = 0,
        device: str = "cpu",
        preset: str | None = None,
        tensorboard_log: str | None = None,
        verbose: int = 1,
        env_kwargs: dict | None = None,
        **options,
    ):
        # env is positional-only so that SB3's SVPG("MlpPolicy", env=env) binds: a keyword env arrives in options
        env = env_of_sb3_form(() if env is None else (env, *sb3_env), options.pop("env", None), policy)
        fields = load_preset(preset) if preset is not None else {}
        given = {"method": method, "estimator": estimator, "num_particles": num_particles}
        fields.update({k: v for k, v in given.items() if v is not None})
        if "policy_kwargs" in options:  # SB3's network options, as svpg's
            mapped = policy_kwargs_options(options.pop("policy_kwargs"), fields.get("estimator", SVPGConfig.estimator))
            both = sorted(set(mapped) & set(options))
            if both:
                raise ValueError(
                    f"policy_kwargs and {both} set the same option{'s' * (len(both) > 1)}: pass one of them"
                )
            options.update(mapped)
        known = {f.name for f in dataclasses.fields(SVPGConfig)}
        unknown = sorted(set(options) - known)
        if unknown:
            sb3 = "".join(f"; for SB3's {name} pass {SB3_NAMES[name]}" for name in unknown if name in SB3_NAMES)
            raise ValueError(
                f"unknown option(s) {unknown}{sb3}: see help(svpg.SVPG) and python train.py --help for the valid names"
            )
        run_only = sorted(set(options) & set(RUN_FIELDS))
        if run_only:
            raise ValueError(
                f"{run_only} are not SVPG options: pass the env as env (and env_kwargs), the length to "
                f"learn(total_timesteps), and use CheckpointCallback / EvalCallback for files and evaluation"
            )
        if "action_noise" in options:  # also SB3's NormalActionNoise object
            options["action_noise"] = action_noise_std(options["action_noise"])
        if "train_freq" in options:  # also SB3's (n, "step")
            options["train_freq"] = train_freq_steps(options["train_freq"])
        for name in ("ent_coef", "target_entropy"):  # SB3 takes a number too
            if isinstance(options.get(name), (int, float)) and not isinstance(options[name], bool):
                options[name] = repr(float(options[name]))
        fields.update(options)
        refuse_other_estimators_options(fields.get("estimator", SVPGConfig.estimator), options)
        fields = with_estimator_defaults(fields)
        source = resolve_env(env, env_kwargs)
        fields.update(seed=seed, device=device, env_id=source.env_id, env_kwargs=source.env_kwargs)
        self._init(SVPGConfig(**fields), source, tensorboard_log=tensorboard_log, verbose=verbose)

    @classmethod
    def from_config(
        cls,
        config: SVPGConfig,
        *,
        seeds: list[int] | None = None,
        env=None,
        tensorboard_log: str | None = None,
        verbose: int = 0,
    ) -> SVPG:
        """A model of a whole :class:`SVPGConfig` (``env_id`` and ``env_kwargs`` included; ``env``
        overrides them with an object or factory). The run-folder layer builds its models this way."""
        source = resolve_env(config.env_id, config.env_kwargs) if env is None else resolve_env(env)
        if env is not None:
            config = dataclasses.replace(config, env_id=source.env_id, env_kwargs=source.env_kwargs)
        model = cls.__new__(cls)
        model._init(config, source, seeds=seeds, tensorboard_log=tensorboard_log, verbose=verbose)
        return model

    def _init(
        self,
        config: SVPGConfig,
        source: EnvSource,
        *,
        seeds: list[int] | None = None,
        tensorboard_log: str | None = None,
        verbose: int = 0,
    ) -> None:
        self.config = cfg = config.validate()
        self.env_source = source
        self.logger = Logger(verbose, tensorboard_log)  # before the estimator, which may report
        self.seeds = list(seeds) if seeds is not None else [cfg.seed + k for k in range(cfg.num_seeds)]
        self.device = resolve_device(cfg.device)
        self.update_threads = cfg.threads or os.cpu_count() or 1
        m, s = cfg.num_particles, len(self.seeds)
        self.total_particles = s * m  # S·M: the rows of θ, every seed's M particles
        if source.factory is None:
            self.horizon = cfg.horizon or default_horizon(cfg.env_id)
        else:
            self.horizon = cfg.horizon or source.time_limit or DEFAULT_HORIZON
        # rllab's sampler: every iteration each environment starts afresh and may run a full horizon
        samples = cfg.samples_per_particle or self.horizon  # 0: one horizon, one environment per particle
        self.envs_per_particle = max(1, samples // self.horizon)
        if source.num_envs is not None:  # a user's vector env fixes the number of environments
            if source.num_envs % self.total_particles:
                raise ValueError(
                    f"the vector env has {source.num_envs} environments: give a multiple of "
                    f"num_particles × num_seeds = {self.total_particles} (each particle runs its own)"
                )
            self.envs_per_particle = source.num_envs // self.total_particles
        self.steps_per_env = math.ceil(samples / self.envs_per_particle)  # T: each environment's steps per iteration
        self.env = self._make_env(source)
        self.spec = PolicySpec.for_spaces(
            self.env.original_observation_space,  # a discrete one: its encoding goes into the spec, for predict
            self.env.single_action_space,
            # svgd-star widens from the dense network's input: an image's features, not its pixel count
            cfg.network_kwargs(
                network_input_size(self.env.single_observation_space, self.env.obs_dim), self.env.action_dim
            ),
            m,
            obs_scale=cfg.obs_scale,
            squashed=ESTIMATORS[cfg.estimator].squashed_policy,
            deterministic=ESTIMATORS[cfg.estimator].deterministic_policy,
            init_log_std=cfg.log_std_init,
        )
        if cfg.log_std_init != 0 and not self.spec.learns_log_std:
            raise ValueError(
                f"--log-std-init sets the log-std of a Gaussian Box head, which {cfg.estimator} on "
                f"{self.env.single_action_space} does not have: leave it at 0"
            )
        # each seed's particles drawn from its own stream, exactly as its single-seed run draws them
        theta = torch.cat(
            [ParticlePolicy(self.spec, device=self.device, seed=seed).theta.detach() for seed in self.seeds]
        )
        # every seed's particles in one policy: its spec holds S·M particles, self.spec (one seed's) M
        self.policy = ParticlePolicy(dataclasses.replace(self.spec, num_particles=self.total_particles), theta)
        self.svgd = SVGD(self.policy.theta, cfg.kernel_spec(), cfg.optimizer, cfg.lr, groups=s, network=self.policy.net)
        self.estimator: Estimator = ESTIMATORS[cfg.estimator].from_model(self)
        self.normalizer = None
        if cfg.normalize_obs or cfg.normalize_reward:
            self.normalizer = Normalizer(
                self.spec.obs_dim,
                s,
                norm_obs=cfg.normalize_obs,
                norm_reward=cfg.normalize_reward,
                clip_obs=cfg.clip_obs,
                clip_reward=cfg.clip_reward,
                gamma=cfg.gamma,
                device=self.device,
                obs_index=self.spec.normalized_index(),  # never an image's pixels
            )
        self.steps_per_update = m * self.envs_per_particle * self.steps_per_env  # M·N·T: one seed's steps per iteration
        self.iteration = 0  # SVGD updates so far: also the position of every random stream
        self.num_timesteps = 0  # environment steps (of one seed) since the last reset_num_timesteps
        self.schedule = (0, 0)  # the iterations the learning-rate schedule of learn runs from and to
        # per-particle returns of the latest iteration
        self.last_returns = torch.zeros(self.total_particles, device=self.device)
        self.scalars: list[dict[str, float]] = []  # the latest iteration's logged scalars, one dict per seed
        self.closed = False  # close() ran: the environments it owns are closed

    def _make_env(self, source: EnvSource):
        """Every particle's environments of ``source`` as one batch, ``envs_per_particle`` each."""
        return make_batched(
            source.target,
            self.total_particles * self.envs_per_particle,
            device=self.device,
            max_episode_steps=None if source.num_envs else self.horizon,
            env_kwargs=source.env_kwargs if source.factory is None else None,
            vec_env=self.config.vec_env,
            n_workers=self.config.n_workers or None,
        )

    # -- one iteration -----------------------------------------------------------------------
    def reset_environments(self) -> torch.Tensor:
        """Reset every environment with iteration n's reset stream: the observations (num_envs, obs_dim)."""
        resets = [int_seed(seed, "env_reset", self.iteration) for seed in self.seeds]
        return self.env.reset(seed=resets[0] if len(resets) == 1 else resets)

    def collect(self) -> Rollout:
        """Every particle runs its policy on its own freshly reset environments (rllab's sampler), with
        iteration n's reset and action-noise streams."""
        obs = self.reset_environments()
        noise = self.streams("action_noise")
        return collect_rollout(
            self.env,
            self.policy,
            obs,
            self.steps_per_env,
            noise[0] if len(noise) == 1 else noise,
            keep_final_obs=self.estimator.needs_final_obs,
            normalizer=self.normalizer,
        )

    def train_iteration(self, batch: Rollout | None = None) -> dict[str, torch.Tensor]:
        """One SVPG iteration (eqs. 17–19), the estimator's: samples, ∇J estimates and the SVGD
        step(s) of all particles. Returns the iteration's scalars, one value per seed (shape (S,)),
        still on the device.

        :param batch: this iteration's rollout if already collected (on-policy; benchmarks time the parts).
        """
        lr = self.learning_rate()
        for group in self.svgd.optimizer.param_groups:
            group["lr"] = lr
        batch, info = self.estimator.train_iteration(self, batch)
        returns, length = episode_statistics(batch.episode_rewards, batch.dones)
        if self.iteration:  # a particle none of whose episodes ended keeps its last finished episodes' return
            returns = torch.where(batch.dones.any(0).any(-1), returns, self.last_returns)
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
            "train/learning_rate": mean.new_full(mean.shape, lr),
            **info,
        }
        return {k: v.reshape(len(self.seeds)) for k, v in scalars.items()}

    def policy_gradient_surrogate(
        self, batch: Rollout, advantages: torch.Tensor, theta: torch.Tensor | None = None, rows: slice = slice(None)
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The on-policy surrogate Σ_t log π(a_t|s_t) Â_t of this model's policy
        (:func:`svpg.rl.estimators.policy_gradient_surrogate`)."""
        return policy_gradient_surrogate(self.policy, batch, advantages, theta, rows)

    def svgd_update(self, surrogate, samples: int, diagnostics: bool = True) -> dict[str, torch.Tensor]:
        """One SVGD step of every particle on ∇(surrogate/α + λ log p) (eq. 19; λ = ``prior_weight``, 1
        in the paper): ``surrogate(block, rows, k)`` gives seed k's (M,) objective and entropy for its
        particles ``block`` (rows ``rows`` of θ); ``samples``: how many samples the objective sums over
        (the logged policy loss is per sample). The estimators' one way to move θ.

        :param diagnostics: return the step's scalars; False returns ``{}`` and skips their cost (the
            pairwise distances and norms of all of θ), for the steps whose scalars nobody reads."""
        theta = self.policy.theta
        grads, entropy, loss = [], [], []
        # One seed at a time: the gradient is per-row work (a forward and backward pass over every
        # sample), which runs faster on one seed's activations, small enough to stay in cache, than on
        # all S·M particles' at once; each seed's gradient is then computed as its single-seed run does.
        for k, rows in enumerate(self.seed_rows()):
            block = theta.detach()[rows].requires_grad_()
            with self.policy.layout.split(block):  # one backward concatenation instead of one per block
                objective, block_entropy = surrogate(block, rows, k)
                log_q = objective / self.config.alpha + self.config.prior_weight * self.policy.log_prior(block)
            grads.append(torch.autograd.grad(log_q.sum(), block)[0])
            entropy.append(block_entropy.detach())
            loss.append(
                -objective.detach().mean() / samples
            )  # SB3's train/policy_loss: −mean of the objective per sample
        grad = grads[0] if len(grads) == 1 else torch.cat(grads)  # the seeds' rows are consecutive, in order
        self._check_finite(grad, "the gradient of log q(θ)")  # before the step: the optimizer state stays good
        terms = self.svgd.step(grad)
        self._check_finite(theta.detach(), "θ after the SVGD step")
        assert terms.min_householder_norm is not None  # set: the SVGD holds the policy's network
        if not diagnostics:
            return {}
        return {
            **terms.diagnostics(theta.detach()),
            "train/policy_loss": torch.stack(loss),
            "policy/entropy": torch.stack([e.mean() for e in entropy]),
            "structure/min_householder_norm": terms.min_householder_norm,
        }

    def learning_rate(self) -> float:
        """lr of the next iteration: with ``anneal_lr``, linear decay to 0 over the current ``learn``
        schedule (CleanRL's anneal_lr; SB3's progress_remaining, which ``reset_num_timesteps=False``
        continues)."""
        if not self.config.anneal_lr:
            return self.config.lr
        start, end = self.schedule
        return (1.0 - (self.iteration - start) / max(end - start, 1)) * self.config.lr

    # -- the loop ----------------------------------------------------------------------------
    def learn(
        self,
        total_timesteps: int,
        callback=None,
        log_interval: int = 10,
        tb_log_name: str = "SVPG",
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
    ) -> SVPG:
        """Train for ``total_timesteps`` environment steps (all particles' steps of one seed count),
        rounded up to whole iterations of :attr:`steps_per_update` steps; returns ``self``.

        :param callback: a :class:`~svpg.rl.callbacks.BaseCallback`, a list of them, or a plain
            callable ``fn(locals, globals) -> bool`` (SB3's); returning ``False`` from ``on_step``
            stops training after the current iteration.
        :param log_interval: with ``verbose`` ≥ 1, print a line every this many iterations.
        :param tb_log_name: the TensorBoard run name under ``tensorboard_log``.
        :param reset_num_timesteps: start counting ``num_timesteps`` (and the learning-rate schedule)
            afresh; ``False`` continues a previous ``learn`` or a loaded model's schedule, so a split
            run equals the uninterrupted one.
        :param progress_bar: show a tqdm progress bar over iterations.
        """
        from svpg.rl.callbacks import make_callback

        if self.closed:
            raise RuntimeError("this model was closed (SVPG.close): load or build a new one to train further")
        if (
            isinstance(total_timesteps, bool)
            or not isinstance(total_timesteps, (int, np.integer))
            or total_timesteps < 1
        ):
            raise ValueError(f"total_timesteps must be a positive integer, got {total_timesteps!r}")
        iterations = math.ceil(int(total_timesteps) / self.steps_per_update)
        if reset_num_timesteps:
            self.num_timesteps = 0
            self.schedule = (self.iteration, self.iteration + iterations)
        else:
            self.schedule = (self.schedule[0], self.iteration + iterations)
        target = self.iteration + iterations
        extra = iterations * self.steps_per_update - int(total_timesteps)
        over = f" ({extra:,} more than asked: an iteration is {self.steps_per_update:,} steps)" if extra else ""
        self.logger.info(
            f"SVPG: {iterations} iterations × {self.config.num_particles} particles × {self.envs_per_particle} envs × "
            f"{self.steps_per_env} steps = {iterations * self.steps_per_update:,} steps on {self.config.env_id}{over}"
        )
        callback = make_callback(callback, progress_bar)
        callback.init_callback(self)
        self.logger.open(self.seeds, tb_log_name, reset_num_timesteps)
        try:
            callback.on_training_start(locals(), globals())
            while self.iteration < target:
                t0 = time.perf_counter()
                scalars = self.train_iteration()
                self.num_timesteps += self.steps_per_update
                self._record(scalars, fps=self.steps_per_update * len(self.seeds) / (time.perf_counter() - t0))
                self.logger.print_iteration(self.iteration, self.num_timesteps, self.scalars[0], log_interval)
                callback.update_locals(locals())
                callback.on_rollout_end()
                go_on = callback.on_step()
                self.logger.end_iteration(self.iteration, log_interval)
                if not go_on:
                    break
            self.set_best_particles()
            callback.on_training_end()
        finally:
            self.logger.close()
        return self

    def _record(self, scalars: dict[str, torch.Tensor], fps: float) -> None:
        """The iteration's one host sync: every scalar of every seed; then the logger's output."""
        table = torch.stack([v.to(torch.float64) for v in scalars.values()], 1).tolist()
        self.scalars = [{**dict(zip(scalars, row)), "time/fps": fps} for row in table]
        self.logger.record_iteration(
            self.scalars,
            self._per_seed(self.last_returns),
            step=self.num_timesteps,
            iteration=self.iteration,
            total_steps=self.iteration * self.steps_per_update,
        )

    def set_logger(self, logger) -> None:
        """Log through SB3's ``Logger`` (``stable_baselines3.common.logger.configure(folder, formats)``), as
        SB3's ``set_logger``: every ``log_interval`` iterations the first seed's scalars, the iteration and the
        steps, and what callbacks record, go to its formats (stdout, csv, json, tensorboard, log), which
        replace ``tensorboard_log`` and the printed line; callbacks' ``self.logger.record`` reaches it."""
        from stable_baselines3.common.logger import Logger as SB3Logger

        if not isinstance(logger, SB3Logger):
            raise ValueError(
                f"set_logger takes Stable-Baselines3's Logger (stable_baselines3.common.logger.configure(folder, "
                f"formats)), got {type(logger).__name__}"
            )
        self.logger.use(logger)

    @property
    def verbose(self) -> int:
        """0 silent, 1 a line at the start of ``learn`` and every ``log_interval`` iterations."""
        return self.logger.verbose

    @verbose.setter
    def verbose(self, value: int) -> None:
        self.logger.verbose = int(value)

    @property
    def tensorboard_log(self) -> str | Path | None:
        """The folder for TensorBoard events (``None``: none, unless ``logger.log_to`` names folders)."""
        return self.logger.tensorboard_log

    @tensorboard_log.setter
    def tensorboard_log(self, value: str | Path | None) -> None:
        self.logger.tensorboard_log = value

    steps_per_iteration = renamed_attribute("SVPG", "steps_per_iteration", "steps_per_env")

    # -- helpers -----------------------------------------------------------------------------
    def streams(self, name: str, *keys: int) -> list[torch.Generator]:
        """Iteration n's generator of stream ``name`` (and sub-keys) for every seed."""
        return [torch_generator(seed, name, self.iteration, *keys, device=self.device) for seed in self.seeds]

    def seed_rows(self) -> list[slice]:
        """Each seed's rows of the (S·M, …) particle tensors."""
        m = self.config.num_particles
        return [slice(k * m, (k + 1) * m) for k in range(len(self.seeds))]

    def _per_seed(self, x: torch.Tensor) -> torch.Tensor:
        """A per-particle tensor (S·M, …) → (S, M, …)."""
        return x.view(len(self.seeds), -1, *x.shape[1:])

    def _check_finite(self, x: torch.Tensor, what: str) -> None:
        # a finite sum means every term is finite (a NaN or an infinity would make it NaN or ±inf): one
        # reduction instead of isfinite's several passes; only a non-finite sum needs the per-seed check
        if bool(torch.isfinite(x.sum())):
            return
        finite = torch.isfinite(x).view(len(self.seeds), -1).all(-1)
        if not finite.all():
            bad = [seed for seed, ok in zip(self.seeds, finite.tolist()) if not ok]
            raise NonFiniteError(
                f"iteration {self.iteration + 1}: {what} is not finite (seed {', '.join(map(str, bad))})"
            )

    def check_environment_output(self, batch: Rollout) -> None:
        """The environment's rewards and observations must be finite: name the first bad one."""
        if bool(torch.isfinite(batch.rewards).all() & torch.isfinite(batch.obs).all()):
            return
        m = self.total_particles
        for what, x in (("observation", batch.obs), ("reward", batch.rewards)):
            bad = ~torch.isfinite(x)
            if x.ndim == 4:
                bad = bad.any(-1)
            if bad.any():
                t, j, e = (int(i) for i in bad.nonzero()[0])
                seed = self.seeds[j // self.config.num_particles] if m else self.seeds[0]
                raise NonFiniteError(
                    f"iteration {self.iteration + 1}: the environment {self.config.env_id} returned a "
                    f"non-finite {what} at step {t} of particle {j % self.config.num_particles}'s "
                    f"environment {e} (seed {seed}): fix the environment or clip what it returns"
                )

    def set_best_particles(self) -> list[int]:
        """Let :meth:`predict` act with the particle that had the highest return in the latest
        iteration (per seed); returns those particles."""
        best = self._per_seed(self.last_returns).argmax(-1).tolist()
        self.policy.set_particle(best[0])
        return best

    # -- acting --------------------------------------------------------------------------------
    def predict(self, observation, state=None, episode_start=None, deterministic: bool = False):
        """SB3's ``predict``: ``(actions, None)`` of the chosen particle (by default the one with the
        highest return in the latest iteration; :meth:`set_particle` chooses another) for one
        observation or a batch (n_envs, obs_dim). With ``num_seeds`` > 1, the first seed's particles.
        Observations are normalised with the statistics frozen at this point, if the model normalises."""
        self.policy.obs_normalization = self.normalizer.frozen(0) if self.normalizer is not None else None
        return self.policy.predict(observation, state, episode_start, deterministic)

    def set_particle(self, index: int) -> SVPG:
        """Act with particle ``index`` (0 … M − 1) in :meth:`predict`."""
        if (
            isinstance(index, bool)
            or not isinstance(index, (int, np.integer))
            or not 0 <= index < self.config.num_particles
        ):
            raise ValueError(f"particle must be an integer in [0, {self.config.num_particles - 1}], got {index!r}")
        self.policy.set_particle(int(index))
        return self

    def seed_policy(self, k: int = 0) -> ParticlePolicy:
        """Seed k's M particles as an ordinary ensemble (acting with its best particle)."""
        m, k = self.config.num_particles, checkpoints.check_seed_index(self, k)
        policy = ParticlePolicy(self.spec, self.policy.theta.detach()[k * m : (k + 1) * m])
        policy.obs_normalization = self.normalizer.frozen(k) if self.normalizer is not None else None
        return policy.set_particle(int(self._per_seed(self.last_returns)[k].argmax().item()))

    def get_env(self):
        """The training environments as Stable-Baselines3's ``VecEnv`` (SB3's ``get_env``): numpy actions in,
        ``(obs, rewards, dones, infos)`` out, the environments' own observations, which :meth:`predict`
        reads. ``model.env`` is the same environments as svpg's :class:`svpg.envs.BatchedEnv` (torch tensors)."""
        if getattr(self, "_sb3_env", None) is None or self._sb3_env.batched is not self.env:
            self._sb3_env = sb3_vec_env(self.env)
        return self._sb3_env

    def set_env(self, env, force_reset: bool = True) -> None:
        """Train on ``env`` from now on (SB3's ``set_env``): any form ``SVPG`` takes (an id, an env
        instance, a factory, a ``gym.vector.VectorEnv`` of :attr:`n_envs` environments) with the model's
        observation and action spaces. The model builds as many environments as before, with the same
        horizon, and closes those it built; the observation normalization statistics stay the model's.
        :meth:`save` records the new env (a model saved after ``set_env(<object>)`` is loaded with
        ``SVPG.load(path, env=...)``). A closed model trains again after it.

        :param force_reset: SB3's; every iteration starts from fresh resets anyway, so it changes nothing.
        """
        source = resolve_env(env)
        if source.num_envs is not None and source.num_envs != self.n_envs:
            raise ValueError(
                f"the vector env has {source.num_envs} environments and the model trains {self.n_envs}: give one "
                f"of {self.n_envs} (SVPG.load(path, env=...) builds a model on another number)"
            )
        new = self._make_env(source)
        for name, space, ours in (
            ("observation", new.original_observation_space, self.observation_space),
            ("action", new.single_action_space, self.action_space),
        ):
            if space != ours:
                if not isinstance(source.factory, gym.vector.VectorEnv):  # a user's vector env stays theirs
                    new.close()
                raise ValueError(
                    f"the new env's {name} space {space} differs from the model's {ours}: set an env of the same spaces"
                )
        if not self.closed:
            self.close()
        self.env, self.env_source, self.closed = new, source, False
        self.config = dataclasses.replace(self.config, env_id=source.env_id, env_kwargs=source.env_kwargs)

    @property
    def observation_space(self) -> gym.Space:
        """One environment's observation space, as SB3's ``model.observation_space`` (the env's own: a
        Discrete one, not its one-hot encoding)."""
        return self.env.original_observation_space

    @property
    def action_space(self) -> gym.Space:
        """One environment's action space, as SB3's ``model.action_space``."""
        return self.env.single_action_space

    @property
    def n_envs(self) -> int:
        """The training environments of all particles (and seeds) together, as SB3's ``model.n_envs``."""
        return self.env.num_envs

    @property
    def seed(self) -> int:
        """The run seed given to the model (SB3's ``model.seed``); every random stream is spawned from it."""
        return self.config.seed

    def set_random_seed(self, seed: int | None = None) -> None:
        """SB3's ``set_random_seed``: from the next iteration on, every random stream (resets, action noise,
        minibatches) is spawned from ``seed`` (``seed, …, seed + S − 1`` with ``num_seeds`` S) instead of the
        model's seed; the particles and critics already drawn stay. :meth:`save` records it, so a saved model
        still continues bit for bit. ``None`` changes nothing, as in SB3."""
        if seed is None:
            return
        self.config = dataclasses.replace(self.config, seed=seed).validate()
        self.seeds = [self.config.seed + k for k in range(len(self.seeds))]

    def close(self) -> None:
        """Close the training environments this model built (from an id, copies of an env instance or a
        factory), and with them the worker processes of ``vec_env="async"``; a ``gym.vector.VectorEnv``
        passed as ``env`` is the caller's to close. Calling it again does nothing. ``predict``, ``save``
        and the policies work after it, ``learn`` does not. ``with svpg.SVPG(...) as model:`` closes on
        leaving the block."""
        if self.closed:
            return
        self.closed = True
        if not isinstance(self.env_source.factory, gym.vector.VectorEnv):
            self.env.close()

    def __enter__(self) -> SVPG:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- saving and loading ----------------------------------------------------------------------
    def seed_config(self, k: int = 0) -> SVPGConfig:
        """The single-seed configuration of seed k."""
        return self.config.for_seed(self.seeds[checkpoints.check_seed_index(self, k)])

    def seed_state(self, k: int = 0) -> tuple[dict[str, torch.Tensor], dict]:
        """Seed k's whole training state as (tensors, JSON metadata): what :meth:`save` writes
        (:func:`svpg.rl.checkpoints.model_state`)."""
        return checkpoints.model_state(self, k)

    def save(self, path, seed_index: int = 0) -> Path:
        """Write everything needed to continue training to ``path`` (``.safetensors`` appended if it
        has no suffix): θ, the SVGD optimizer, the critics, the last returns, the config, the env id
        and kwargs, and the iteration (the position of every random stream). Safetensors tensors
        plus JSON metadata: loading never unpickles. ``svpg.load(path)`` reads it for acting only.

        :param seed_index: with ``num_seeds`` > 1, which seed's run to save.
        """
        return checkpoints.save_model(self, path, seed_index)

    def get_parameters(self) -> dict[str, dict]:
        """SB3's ``get_parameters``: ``{"policy": model.policy.state_dict(), "policy.optimizer": the SVGD
        optimizer's state, "estimator": the estimator's learned state}`` (its critics, targets, temperatures
        and their optimizers; never the replay buffer), copies on the model's device."""
        return {
            "policy": self.policy.state_dict(),
            "policy.optimizer": _copies(self.svgd.optimizer.state_dict()),
            "estimator": _copies(self.estimator.parameters_state()),
        }

    def set_parameters(self, load_path_or_dict, exact_match: bool = True, device: str = "auto") -> None:
        """SB3's ``set_parameters``: load :meth:`get_parameters`' dict, or the parameters in a file of
        :meth:`save`, into this model of the same network, estimator and number of particles. Only the
        parameters change: the replay buffer, the iteration (every random stream's position), the step
        count and the normalization statistics stay this model's. Nothing changes if any part is refused.

        :param exact_match: every part (``policy``, ``policy.optimizer``, ``estimator``) and every policy
            block must be given; ``False`` loads the parts and policy blocks given.
        :param device: SB3's; the parameters are copied onto the model's device whatever it says.
        """
        if isinstance(load_path_or_dict, dict):
            params = load_path_or_dict
        elif len(self.seeds) > 1:
            raise ValueError(
                f"this model trains {len(self.seeds)} seeds and a saved file holds one: pass a dict of get_parameters()"
            )
        else:
            params = checkpoints.read_parameters(load_path_or_dict)
        parts = ("policy", "policy.optimizer", "estimator")
        missing, unexpected = [p for p in parts if p not in params], [p for p in params if p not in parts]
        if unexpected or (exact_match and missing):
            raise ValueError(
                f"set_parameters takes the parts {list(parts)} of get_parameters() (missing {missing}, unexpected "
                f"{unexpected}); exact_match=False loads the parts given"
            )
        before = self.get_parameters()
        if "estimator" in params:
            ours, given = set(before["estimator"]), set(params["estimator"])
            if given - ours or (exact_match and ours - given):
                raise ValueError(
                    f"set_parameters: estimator '{self.config.estimator}' keeps {sorted(ours)}, the parameters give "
                    f"{sorted(given)}: load the parameters of a model of the same estimator"
                )
        try:
            if "policy" in params:
                self.policy.load_state_dict(params["policy"], strict=exact_match)
            if "policy.optimizer" in params:
                self.svgd.optimizer.load_state_dict(params["policy.optimizer"])
            if "estimator" in params:  # exact_match=False may give some keys: the others stay as they are
                self.estimator.load_parameters({**before["estimator"], **params["estimator"]})
        except (KeyError, RuntimeError, ValueError) as e:
            self.policy.load_state_dict(before["policy"])
            self.svgd.optimizer.load_state_dict(before["policy.optimizer"])
            self.estimator.load_parameters(before["estimator"])
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ValueError(
                f"set_parameters: these parameters do not fit this model ({first}); nothing was changed"
            ) from None

    @property
    def replay_buffer(self):
        """The off-policy estimators' :class:`~svpg.rl.replay.ReplayBuffer` (every particle's
        transitions); ``None`` for the on-policy ones, as SB3's on-policy models have none."""
        return getattr(self.estimator, "buffer", None)

    def save_replay_buffer(self, path, seed_index: int = 0) -> Path:
        """Write the replay buffer's transitions and ring position to ``path`` (``.safetensors``
        appended if it has no suffix), as SB3's ``save_replay_buffer``: with ``save_replay_buffer=False``
        the model's own file leaves the buffer out, and ``load_replay_buffer`` after :meth:`load`
        continues training bit for bit.

        :param seed_index: with ``num_seeds`` > 1, which seed's buffer to save.
        """
        return checkpoints.save_replay_buffer(self, path, seed_index)

    def load_replay_buffer(self, path) -> None:
        """Replace the replay buffer by one written by :meth:`save_replay_buffer` (a list of files, one
        per seed in seed order, for a seed-batched model). The buffer's warm-up clock comes with it:
        a model that loads a buffer of ``learning_starts`` transitions or more updates from its first
        iteration."""
        checkpoints.load_replay_buffer(self, path)

    @classmethod
    def load(
        cls,
        path,
        env=None,
        device: str | None = None,
        *,
        tensorboard_log: str | None = None,
        verbose: int = 1,
        **options,
    ) -> SVPG:
        """A model saved by :meth:`save` (or a run folder's checkpoint), ready to ``learn`` on from
        where it stopped (``reset_num_timesteps=False`` continues its learning-rate schedule too).

        :param env: needed when the model was trained on an env object or factory; for an id, the
            saved id and kwargs are used by default.
        :param device: where to load it (default: where it was trained).
        :param options: ``threads`` only (how it runs, not what it is).
        """
        return cls.load_seeds([path], env, device, tensorboard_log=tensorboard_log, verbose=verbose, **options)

    @classmethod
    def load_seeds(
        cls,
        paths: list,
        env=None,
        device: str | None = None,
        *,
        tensorboard_log: str | None = None,
        verbose: int = 0,
        **options,
    ) -> SVPG:
        """Several saved runs of one configuration that differ only in their seed, continued as one
        seed-batched model (what ``train.py --resume`` of several folders does)."""
        states, config = checkpoints.read_models(paths, device, options)
        if env is None:
            if is_custom(config.env_id):
                raise ValueError(
                    f"{paths[0]} was trained on an environment given as an object ({config.env_id[7:]}): "
                    f"pass it again, SVPG.load(path, env=...)"
                )
            source = resolve_env(config.env_id, config.env_kwargs)
        else:
            source = resolve_env(env)
            config = dataclasses.replace(config, env_id=source.env_id, env_kwargs=source.env_kwargs)
        model = cls.__new__(cls)
        model._init(
            config, source, seeds=[c.seed for _, _, c in states], tensorboard_log=tensorboard_log, verbose=verbose
        )
        checkpoints.restore(model, [(t, m) for t, m, _ in states], paths)
        return model

    def __repr__(self) -> str:
        seeds = f", seeds={self.seeds}" if len(self.seeds) > 1 else f", seed={self.seeds[0]}"
        return (
            f"SVPG({self.config.env_id!r}, method={self.config.method!r}, estimator={self.config.estimator!r}, "
            f"num_particles={self.config.num_particles}{seeds}, iteration={self.iteration})"
        )
