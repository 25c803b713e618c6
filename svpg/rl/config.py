"""The training configuration: one dataclass whose fields document themselves (CleanRL style).

``train.py`` builds its command line from these fields, so ``--help`` and this file never disagree.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from svpg.cli import dataclass_from_dict, option_factory
from svpg.cli import option as _f
from svpg.core.priors import PRIORS
from svpg.core.svgd import OPTIMIZERS
from svpg.envs.generic import VEC_ENVS
from svpg.rl.estimators import BASELINES
from svpg.rl.estimators import ESTIMATORS as ESTIMATOR_CLASSES
from svpg.runtime import DEFAULT_THREADS

#: the off-policy estimator's critics: each particle's own, or one pair per run that all particles read
CRITICS = ("per-particle", "shared")

#: the policy-training methods (``--method``): method → what it trains (shown by --help)
POLICY_METHODS = {
    "s2vgd": "structural prior: W = P Λ1 C Λ2 Qᵀ with K Householder reflections per side, RBF kernel",
    "svgd": "plain dense layers (K = 0, Λ = I), RBF kernel",
    "svgd-star": "plain dense layers widened to the parameter count of s2vgd with K = 4 (the paper's SVGD*), RBF kernel",
    "independent": "plain dense layers, identity kernel: M independent policy-gradient learners",
}
METHODS = POLICY_METHODS  # the former name, kept for existing imports
#: the ``--estimator`` names, in registry order (svpg.rl.estimators.ESTIMATORS holds the classes)
ESTIMATORS = tuple(ESTIMATOR_CLASSES)
#: the estimators that learn from their own rollouts only: the experiments harness's default
ON_POLICY_ESTIMATORS = tuple(name for name, cls in ESTIMATOR_CLASSES.items() if cls.on_policy)
#: the estimators of the SVPG paper's experiments (§5): the structure ablation's default and its tables'
PAPER_ESTIMATORS = ("reinforce", "a2c")
#: Options that ``--resume`` may change: how long to train and how, not what is trained.
RESUMABLE_OPTIONS = (
    "iterations",
    "total_steps",
    "eval_episodes",
    "progress",
    "threads",
    "device",
    "checkpoint_every",
    "keep_checkpoints",
    "vec_env",
    "n_workers",
)
DEFAULT_HORIZON = 1000  # for Gymnasium ids registered without a time limit


def _cli_value(value) -> str:
    """A default as the command line spells it (``256,256``, ``false``)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    return str(value)


def default_horizon(env_id) -> int:
    """The id's registered time limit (``module:Id`` imports ``module``), or :data:`DEFAULT_HORIZON`
    (also for factories and env instances, whose time limit, if any, stays in force)."""
    import gymnasium as gym

    if not isinstance(env_id, str):
        return DEFAULT_HORIZON
    try:
        from svpg.envs import check_registered

        check_registered(env_id)
        steps = gym.spec(env_id.rpartition(":")[2]).max_episode_steps
    except Exception:
        steps = None
    return int(steps or DEFAULT_HORIZON)


@dataclass
class SVPGConfig:
    """Stein variational policy gradient (eq. 19 of S²VGD) on a vectorized Gymnasium task."""

    env_id: str = _f(
        "CartPole-v1",
        "Gymnasium environment id, also Gymnasium's module:Id form for your own package's envs "
        "(svpg/* and CartPole-v1 run on the fast batched path)",
    )
    env_kwargs: dict = option_factory(
        dict, "keyword arguments of gym.make for --env-id, as a JSON object, e.g. '{\"g\": 9.81}'"
    )
    method: str = _f("s2vgd", " | ".join(POLICY_METHODS) + " (see the list below)", choices=tuple(POLICY_METHODS))
    estimator: str = _f(
        "ppo",
        " | ".join(f"{name} ({cls.help})" for name, cls in ESTIMATOR_CLASSES.items())
        + ". Their own defaults, which replace the ones shown here: "
        + "; ".join(
            f"{name}: " + ", ".join(f"--{k.replace('_', '-')} {_cli_value(v)}" for k, v in cls.defaults.items())
            for name, cls in ESTIMATOR_CLASSES.items()
            if cls.defaults
        ),
        choices=ESTIMATOR_CLASSES,  # the live registry: an estimator registered later is a choice too
    )
    num_particles: int = _f(4, "M, the number of policy particles")
    householder: int = _f(1, "K, Householder reflections per side of every layer (s2vgd only; capped at min(ℓ1, ℓ2))")
    hidden: tuple[int, ...] = _f((64, 64), "hidden layer widths of the tanh policy MLP")
    log_std_init: float = _f(
        0.0, "initial log σ of a Gaussian policy's state-independent log-std, every particle (SB3's log_std_init)"
    )
    alpha: float = _f(
        100.0, "temperature α of the target q(θ) ∝ exp(J(θ)/α) p(θ) (eq. 18); larger α trusts the prior more"
    )
    prior_weight: float = _f(
        1.0,
        "λ in q(θ) ∝ exp(J(θ)/α) p(θ)^λ; eq. 18 has λ = 1. With λ = 1/α the prior keeps its weight against J "
        "as at α = 1 while α raises the kernel's repulsion (a tempered posterior)",
    )
    prior: str = _f("flat", "mvg (eq. 14 with Inv-Gamma(a, b) hyperpriors) | flat (original SVPG)", choices=PRIORS)
    prior_a: float = _f(1.0, "Inv-Gamma shape a of the prior variances")
    prior_b: float = _f(0.1, "Inv-Gamma scale b of the prior variances")
    # validated against the observation size by PolicySpec, the one place that knows it
    obs_scale: tuple[float, ...] = _f(
        (),
        "fixed multipliers of the observation features that the policy (and critic and baseline) "
        "read, one per feature, e.g. 1,1,0.1,1,1,0.1 (empty: none); stored in the checkpoint",
    )
    bandwidth: str = _f("median", "RBF bandwidth h: 'median' (h = med²/log M) or a fixed positive number")
    optimizer: str = _f("adam", " | ".join(OPTIMIZERS) + " (steps along −φ)", choices=tuple(OPTIMIZERS))
    lr: float = _f(3e-4, "learning rate")
    anneal_lr: bool = _f(False, "decay the learning rate linearly to 0 over the run (CleanRL's anneal_lr)")
    samples_per_particle: int = _f(
        2048,
        "environment steps each particle collects per iteration (0: one horizon in one environment per "
        "particle; sac's default)",
    )
    horizon: int = _f(0, "maximum episode length (0: the environment's own limit)")
    gamma: float = _f(0.99, "discount factor γ")
    baseline: str = _f(
        "linear",
        "reinforce baseline: linear (rllab's linear feature baseline, refitted every batch) | none",
        choices=BASELINES,
    )
    gae_lambda: float = _f(0.95, "GAE λ (a2c)")
    critic_hidden: tuple[int, ...] = _f((64, 64), "hidden widths of each particle's critic (a2c, ppo, sac, td3)")
    critic_lr: float = _f(3e-4, "critic learning rate (a2c, ppo, sac, td3)")
    value_steps: int = _f(32, "critic minibatches per pass over the batch (a2c, ppo)")
    value_epochs: int = _f(10, "critic passes over the batch per iteration (a2c, ppo)")
    ppo_epochs: int = _f(10, "ppo: passes over each iteration's batch")
    ppo_minibatches: int = _f(32, "ppo: minibatches per pass (each one SVGD step of all particles)")
    clip_range: float = _f(0.2, "ppo: the clipped surrogate's ε (ratios outside 1 ± ε get no gradient)")
    buffer_size: int = _f(1_000_000, "sac, td3: transitions the replay buffer keeps per run (all particles' together)")
    learning_starts: int = _f(
        1000, "sac, td3: transitions (all particles' steps) collected with uniform actions before the first update"
    )
    batch_size: int = _f(256, "sac, td3: minibatch size of every particle's critic and actor updates")
    tau: float = _f(0.005, "sac, td3: Polyak coefficient of the target critics (and of td3's target policies)")
    train_freq: int = _f(
        1, "sac, td3: update every this many steps of all particles' environments (counted across iterations)"
    )
    gradient_steps: int = _f(
        1,
        "sac, td3: gradient steps per update (each a critic update; sac: each with one SVGD step of all particles, td3: "
        "every policy_delay-th); -1: as many as the environment "
        "steps of all particles since the last update (SB3's -1)",
    )
    critics: str = _f(
        "per-particle",
        "sac, td3: per-particle (each particle's own twin critics of its own policy, on its own minibatch) | shared (one "
        "twin pair per run trained on every particle's targets; each particle's actor step reads batch_size / M "
        "of the minibatch's states, so an update costs one SAC update)",
        choices=CRITICS,
    )
    action_noise: float = _f(
        0.1,
        "td3: std of the Gaussian exploration noise added to each particle's action, in units of the action box's "
        "half-width (SB3's NormalActionNoise on the scaled action; rl-zoo3's noise_std)",
    )
    policy_delay: int = _f(2, "td3: an actor step (and target update) every this many critic updates")
    target_policy_noise: float = _f(0.2, "td3: std of the smoothing noise on the target policy's action (scaled)")
    target_noise_clip: float = _f(0.5, "td3: the smoothing noise is clipped to ± this")
    ent_coef: str = _f(
        "auto", "sac: entropy temperature of each particle: auto (tuned, from 1), auto_<initial> or a fixed number"
    )
    target_entropy: str = _f("auto", "sac: entropy target of the tuned temperature (auto: −dim(action space))")
    save_replay_buffer: bool = _f(
        True, "sac, td3: checkpoints hold the replay buffer (false: smaller files; a resume refills it and differs)"
    )
    normalize_obs: bool = _f(
        True,
        "normalise observations by running mean and std, shared by the particles (SB3's VecNormalize); "
        "frozen in evaluation and saved with the model",
    )
    normalize_reward: bool = _f(True, "scale rewards by the running std of the discounted return (SB3's VecNormalize)")
    clip_obs: float = _f(10.0, "clip normalised observations to ± this")
    clip_reward: float = _f(10.0, "clip scaled rewards to ± this")
    iterations: int = _f(25, "number of SVGD updates (iterations)")
    total_steps: int = _f(0, "if > 0, train for this many environment steps instead of --iterations")
    seed: int = _f(
        0,
        "run seed: every random stream (initial particles, environment resets, action noise, critics) is spawned from it",
    )
    num_seeds: int = _f(
        1,
        "train seeds --seed … --seed + S − 1 as one batched computation (one run folder each, "
        "<run-name>__seed<s>); each seed's run equals its single-seed run up to float summation order",
    )
    device: str = _f("cpu", "torch device: cpu, cuda, cuda:N, or auto (CUDA where torch sees it, else the CPU)")
    vec_env: str = _f(
        "sync",
        "how the environments of a Gymnasium id (other than the fast-path tasks) or of your own env are stepped: "
        "sync (one after the other in this process) | async (in --n-workers groups stepped in parallel, one by this "
        "process and one by each worker process; the same results bit for bit) | envpool (ids only: EnvPool's own implementation in "
        '--n-workers threads; pip install "svpg[envpool]")',
        choices=VEC_ENVS,
    )
    n_workers: int = _f(
        0,
        "parallel groups of --vec-env async, this process's included (at most one per environment; 1: no worker "
        "process), threads of envpool (0: one per core)",
    )
    threads: int = _f(
        DEFAULT_THREADS,
        "torch CPU threads for the update (0: all cores; rollouts always use one); "
        "on shared cores more threads can run several times slower",
    )
    log_dir: str = _f("runs", "parent folder of run folders")
    run_name: str = _f("", "run folder name; an existing one is refused (empty: <env>__<method>__<seed>__<time>)")
    checkpoint_every: int = _f(10, "save a checkpoint every this many iterations (0: only at the end)")
    keep_checkpoints: int = _f(
        0, "keep only the newest this many checkpoints (0: all); the run's model.safetensors is always kept"
    )
    eval_episodes: int = _f(20, "episodes per particle in the final evaluation (0: skip)")
    progress: bool = _f(True, "show a progress bar")

    def for_seed(self, seed: int) -> SVPGConfig:
        """The single-seed configuration of seed ``seed`` of a (seed-batched) run: what its run folder's
        ``config.json`` and checkpoints record."""
        return replace(self, seed=seed, num_seeds=1)

    def validate(self) -> SVPGConfig:
        """Self, checked: a one-line ValueError naming every wrong field (type first, then range)."""
        import dataclasses
        import typing

        from svpg.cli import _typed

        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):  # e.g. num_particles="16" from Python: refused, not compared as a string
            try:
                object.__setattr__(
                    self, f.name, _typed(f.name, hints[f.name], getattr(self, f.name), "invalid configuration")
                )
            except ValueError as e:
                raise ValueError(f"{e} (argument {f.name})") from None
        problems = []
        if self.method not in POLICY_METHODS:
            problems.append(f"--method {self.method!r}: choose from {', '.join(POLICY_METHODS)}")
        if self.estimator not in ESTIMATOR_CLASSES:
            problems.append(f"--estimator {self.estimator!r}: choose from {', '.join(ESTIMATOR_CLASSES)}")
        for name in ("num_particles", "num_seeds", "buffer_size", "batch_size", "train_freq", "policy_delay"):
            if getattr(self, name) < 1:
                problems.append(f"--{name.replace('_', '-')} must be ≥ 1, got {getattr(self, name)}")
        if self.gradient_steps < 1 and self.gradient_steps != -1:
            problems.append(f"--gradient-steps must be ≥ 1 or -1 (one per environment step), got {self.gradient_steps}")
        if self.critics not in CRITICS:
            problems.append(f"--critics {self.critics!r}: choose from {', '.join(CRITICS)}")
        elif self.critics == "shared" and self.batch_size % self.num_particles:
            problems.append(
                f"--critics shared splits --batch-size among the particles: {self.batch_size} is not a multiple "
                f"of --num-particles {self.num_particles}"
            )
        for name in (
            "iterations",
            "total_steps",
            "horizon",
            "householder",
            "checkpoint_every",
            "eval_episodes",
            "threads",
            "keep_checkpoints",
            "n_workers",
            "samples_per_particle",
            "learning_starts",
        ):
            if getattr(self, name) < 0:
                problems.append(f"--{name.replace('_', '-')} must be ≥ 0, got {getattr(self, name)}")
        if self.vec_env not in VEC_ENVS:
            problems.append(f"--vec-env {self.vec_env!r}: choose from {', '.join(VEC_ENVS)}")
        if self.iterations == 0 and self.total_steps == 0:
            problems.append("give --iterations > 0 or --total-steps > 0")
        if self.seed < 0:
            problems.append(f"--seed must be ≥ 0, got {self.seed}")
        if not self.alpha > 0:
            problems.append(f"--alpha (temperature) must be > 0, got {self.alpha}")
        if not self.prior_weight >= 0:
            problems.append(f"--prior-weight must be ≥ 0, got {self.prior_weight}")
        if not self.lr > 0:
            problems.append(f"--lr must be > 0, got {self.lr}")
        if not 0 <= self.gae_lambda <= 1:
            problems.append(f"--gae-lambda must be in [0, 1], got {self.gae_lambda}")
        if (
            self.value_steps < 1
            or self.value_epochs < 1
            or not self.critic_lr > 0
            or not self.critic_hidden
            or min(self.critic_hidden) < 1
        ):
            problems.append(
                "--value-steps ≥ 1, --value-epochs ≥ 1, --critic-lr > 0 and positive --critic-hidden widths are required"
            )
        if self.ppo_epochs < 1 or self.ppo_minibatches < 1 or not 0 < self.clip_range < 1:
            problems.append("--ppo-epochs ≥ 1, --ppo-minibatches ≥ 1 and 0 < --clip-range < 1 are required")
        if not 0 < self.tau <= 1:
            problems.append(f"--tau must be in (0, 1], got {self.tau}")
        for name in ("action_noise", "target_policy_noise", "target_noise_clip"):
            if not getattr(self, name) >= 0:
                problems.append(f"--{name.replace('_', '-')} must be ≥ 0, got {getattr(self, name)}")
        if self.target_entropy != "auto":
            try:
                float(self.target_entropy)
            except ValueError:
                problems.append(f"--target-entropy must be 'auto' or a number, got {self.target_entropy!r}")
        if not self.clip_obs > 0 or not self.clip_reward > 0:
            problems.append("--clip-obs and --clip-reward must be > 0")
        if not 0 <= self.gamma <= 1:
            problems.append(f"--gamma must be in [0, 1], got {self.gamma}")
        if not math.isfinite(self.log_std_init):
            problems.append(f"--log-std-init must be a finite number, got {self.log_std_init}")
        if not self.hidden or min(self.hidden) < 1:
            problems.append(f"--hidden needs positive widths, got {self.hidden}")
        if self.bandwidth != "median":
            try:
                ok = float(self.bandwidth) > 0
            except ValueError:
                ok = False
            if not ok:
                problems.append(f"--bandwidth must be 'median' or a positive number, got {self.bandwidth!r}")
        if problems:
            raise ValueError("invalid configuration: " + "; ".join(problems))
        return self

    def kernel_spec(self) -> str | float:
        if self.method == "independent":
            return "identity"
        return "median" if self.bandwidth == "median" else float(self.bandwidth)

    def network_kwargs(self, input_dim: int, out_dim: int) -> dict:
        """NetworkSpec fields for the policy (``hidden`` instead of ``sizes``); ``input_dim`` is the width
        of the dense network's input (an image's or a ``Dict``'s extractor features, else the observation's)."""
        structural = self.method == "s2vgd"
        hidden = tuple(self.hidden)
        if self.method == "svgd-star":
            hidden = widen_to_match(input_dim, hidden, out_dim, householder=4, prior=self.prior)
        return dict(
            hidden=hidden,
            activation="tanh",
            householder=self.householder if structural else 0,
            learn_scales=structural,
            prior=self.prior,
            prior_a=self.prior_a,
            prior_b=self.prior_b,
        )

    @classmethod
    def with_defaults(cls, **fields) -> SVPGConfig:
        """A config of ``fields`` with the chosen estimator's own defaults for the fields not given (what
        ``svpg.SVPG`` and ``train.py`` do; ``SVPGConfig(...)`` itself takes the defaults listed here)."""
        return cls(**with_estimator_defaults(fields))

    @classmethod
    def from_dict(cls, d: dict, source: str = "config") -> SVPGConfig:
        """A config from JSON-like values; unknown keys and wrong types are refused naming ``source``."""
        return dataclass_from_dict(cls, d, source)


_NO_GSDE = "nothing (no gSDE: SAC explores with its policy's Gaussian noise, TD3 with action_noise)"
_ONE_BUFFER = "nothing (one preallocated buffer holds every particle's transitions; size it with buffer_size)"

#: Stable-Baselines3 option names that svpg spells differently or has no counterpart for: what to pass
#: instead, for the one-line refusal of an unknown option
SB3_NAMES = {
    "learning_rate": "lr (critic_lr for the critics)",
    "n_steps": "samples_per_particle (each particle's steps per iteration)",
    "n_epochs": "ppo_epochs",
    "n_envs": "nothing (each particle runs samples_per_particle // horizon environments)",
    "target_update_interval": "nothing (the targets move by tau after every gradient step, SB3's default of 1)",
    "use_sde": _NO_GSDE,
    "sde_sample_freq": _NO_GSDE,
    "replay_buffer_class": _ONE_BUFFER,
    "replay_buffer_kwargs": _ONE_BUFFER,
    "optimize_memory_usage": "nothing (the buffer's memory is printed before training; size it with buffer_size)",
}

#: SB3's ``load`` keywords that svpg's files have no use for
SB3_LOAD_OPTIONS = ("custom_objects", "print_system_info", "force_reset")


def with_estimator_defaults(fields: dict) -> dict:
    """``fields`` (config field → value, as given by a user or a preset) with the estimator's own
    defaults (``Estimator.defaults``, e.g. sac's 256-wide networks) for the fields they leave out."""
    estimator = fields.get("estimator", SVPGConfig.__dataclass_fields__["estimator"].default)
    own = ESTIMATOR_CLASSES[estimator].defaults if estimator in ESTIMATOR_CLASSES else {}
    return {**own, **fields}


def action_noise_std(noise) -> float:
    """``action_noise`` given as SB3's ``NormalActionNoise(0, σ)`` (the same σ on every dimension): that σ,
    since both add the noise to the action scaled to [−1, 1]; SB3's ``None``: 0; any other SB3 action noise
    is refused in one line. A number is returned unchanged (the config checks it)."""
    from stable_baselines3.common.noise import ActionNoise, NormalActionNoise

    if noise is None:  # SB3's TD3 default: no exploration noise
        return 0.0
    if not isinstance(noise, ActionNoise):
        return noise
    if isinstance(noise, NormalActionNoise):
        mu, sigma = np.asarray(noise._mu, dtype=float), np.asarray(noise._sigma, dtype=float)
        if not mu.any() and sigma.size and (sigma == sigma.flat[0]).all():
            return float(sigma.flat[0])
    raise ValueError(
        f"action_noise is zero-mean Gaussian noise of one std on every action dimension (SB3's "
        f"NormalActionNoise(0, σ)), got {noise!r}: pass that std as a number, e.g. action_noise=0.1"
    )


def policy_kwargs_options(policy_kwargs, estimator: str) -> dict:
    """SB3's ``policy_kwargs`` as svpg's options: ``net_arch`` a list (SB3's sizes for the policy and the
    critic alike) → ``hidden`` and, where ``estimator`` has critics, ``critic_hidden``; a dict → ``hidden``
    from ``pi``, ``critic_hidden`` from ``vf`` or ``qf``; ``log_std_init`` as is; ``activation_fn=nn.Tanh``
    (svpg's policies are tanh networks) and ``n_critics=2`` (the twin critics) change nothing; anything
    else is refused in one line."""
    if not isinstance(policy_kwargs, dict):
        raise ValueError(f"policy_kwargs is a dict of SB3's policy options, got {type(policy_kwargs).__name__}")
    import torch

    options: dict = {}
    for key, value in policy_kwargs.items():
        if key == "net_arch":
            if isinstance(value, dict):
                unknown = sorted(set(value) - {"pi", "vf", "qf"})
                if unknown:
                    raise ValueError(f"policy_kwargs net_arch takes the keys pi, vf and qf, got {unknown}")
                if "pi" in value:
                    options["hidden"] = tuple(value["pi"])
                for critic in ("vf", "qf"):
                    if critic in value:
                        options["critic_hidden"] = tuple(value[critic])
            else:
                options["hidden"] = tuple(value)
                if estimator in ESTIMATOR_CLASSES and "critic_hidden" in ESTIMATOR_CLASSES[estimator].reads:
                    options["critic_hidden"] = tuple(value)
        elif key == "log_std_init":
            options["log_std_init"] = value
        elif key == "activation_fn" and value is torch.nn.Tanh:
            pass
        elif key == "n_critics" and value == 2:
            pass
        else:
            what = {
                "activation_fn": "svpg's policies are tanh networks (activation_fn=nn.Tanh or none)",
                "n_critics": "svpg's off-policy estimators keep twin critics (n_critics=2 or none)",
            }.get(key, "svpg has no counterpart for it")
            raise ValueError(
                f"policy_kwargs {key}={value!r}: {what}; svpg reads net_arch, log_std_init, activation_fn and n_critics"
            )
    return options


def train_freq_steps(train_freq):
    """``train_freq`` given in SB3's tuple form: ``(n, "step")`` is ``n``; ``(n, "episode")`` is refused
    in one line (episodes of a particle's environments end at different steps). Anything else is
    returned unchanged (the config checks it)."""
    if not isinstance(train_freq, (tuple, list)):
        return train_freq
    if len(train_freq) == 2 and getattr(train_freq[1], "value", train_freq[1]) == "step":  # also TrainFreq
        return train_freq[0]
    raise ValueError(
        f"train_freq counts steps of all particles' environments, got {tuple(train_freq)!r}: pass n or "
        "(n, 'step'); SB3's (n, 'episode') has no equivalent here"
    )


def refuse_other_estimators_options(estimator: str, given, cli: bool = False) -> None:
    """A one-line ValueError for an option in ``given`` (field names the user passed explicitly) that
    ``estimator`` would ignore: with an off-policy estimator, any option only other estimators read
    (``--ent-coef`` with td3, ``--ppo-epochs`` with sac); with an on-policy one, an option only off-policy
    estimators read (``--learning-starts`` with ppo). The on-policy estimators' own options pass between
    them, as the paper tasks' presets hold one set for REINFORCE, A2C and PPO."""
    if estimator not in ESTIMATOR_CLASSES:
        return  # the config names the unknown estimator
    chosen = ESTIMATOR_CLASSES[estimator]
    for name in sorted(given):
        owners = [n for n, cls in ESTIMATOR_CLASSES.items() if name in cls.reads]
        foreign = not chosen.on_policy or not any(ESTIMATOR_CLASSES[o].on_policy for o in owners)
        if owners and name not in chosen.reads and foreign:
            shown = f"--{name.replace('_', '-')}" if cli else name
            other = f"estimator {owners[0]}" if len(owners) == 1 else "one of them"
            raise ValueError(
                f"{shown} is an option of {' or '.join(owners)}, and estimator {estimator} does not read it: leave "
                f"it out or use {other}"
            )


def parameter_count(sizes: tuple[int, ...], **spec) -> int:
    """D, the number of coordinates of one particle of a network."""
    from svpg.core.networks import NetworkSpec, ParticleMLP
    from svpg.core.particles import ParticleLayout

    layout = ParticleLayout()
    ParticleMLP(layout, NetworkSpec(sizes, **spec))
    return layout.size


def widen_to_match(
    obs_dim: int, hidden: tuple[int, ...], out_dim: int, householder: int = 4, prior: str = "mvg"
) -> tuple[int, ...]:
    """Hidden widths of a plain network scaled up until it has at least as many coordinates as the
    S²VGD network with ``householder`` reflections (the paper's SVGD*, §5.4)."""
    target = parameter_count((obs_dim, *hidden, out_dim), householder=householder, learn_scales=True, prior=prior)
    scale = 1.0
    while True:
        widths = tuple(max(1, round(h * scale)) for h in hidden)
        if parameter_count((obs_dim, *widths, out_dim), prior=prior) >= target:
            return widths
        scale += 0.01


PRESET_DIR = Path(__file__).with_name("presets")


def available_presets() -> list[str]:
    """The shipped presets' names; a namespaced Gymnasium id's preset lies in a folder of its namespace
    (``MinAtar/Breakout-v1`` is ``presets/MinAtar/Breakout-v1.json``)."""
    return sorted(p.relative_to(PRESET_DIR).with_suffix("").as_posix() for p in PRESET_DIR.rglob("*.json"))


#: former preset names that still work, with a one-line note on stderr
PRESET_ALIASES = {"pendulum": "double-pendulum"}  # easily taken for Gymnasium's Pendulum-v1
_noted_aliases: set[str] = set()


class _Tasks(tuple):
    """The preset names; ``in`` also accepts an alias, so a command line with ``choices=TASKS`` takes it
    (and its ``--help`` lists only the current names)."""

    def __contains__(self, name) -> bool:
        return tuple.__contains__(self, PRESET_ALIASES.get(name, name))


#: the names of the shipped presets: the paper's RL tasks and the benchmark's Gymnasium tasks
PRESETS = _Tasks(available_presets())
#: the paper's RL tasks, the reproduction harnesses' ``--task`` (their presets train for a number of iterations)
PAPER_TASKS = _Tasks(("balance", "double-pendulum", "swingup"))
TASKS = PAPER_TASKS  # the former name, kept for existing imports


def load_preset(name_or_path: str) -> dict:
    """Config fields of a preset: a name from ``svpg/rl/presets/`` or a path to a JSON file
    (keys starting with ``_`` are comments)."""
    from svpg.runs import read_json_object

    path = Path(name_or_path)
    if not path.suffix:
        if name_or_path in PRESET_ALIASES:
            if name_or_path not in _noted_aliases:  # once per process: grids load a preset per job
                _noted_aliases.add(name_or_path)
                print(f"note: preset {name_or_path!r} is now called {PRESET_ALIASES[name_or_path]!r}", file=sys.stderr)
            name_or_path = PRESET_ALIASES[name_or_path]
        path = PRESET_DIR / f"{name_or_path}.json"
    if not path.exists():
        raise ValueError(
            f"unknown preset {name_or_path!r}: choose from {', '.join(available_presets())} or give a .json path"
        )
    data = {k: v for k, v in read_json_object(path, "preset").items() if not k.startswith("_")}
    config = SVPGConfig.from_dict(data, f"preset {path}")  # checks names and types
    return {k: getattr(config, k) for k in data}
