"""Policy-gradient estimators, one registry (:data:`ESTIMATORS`): each owns the whole of an iteration's update.

* :class:`Reinforce`: standardised reward-to-go (Williams 1992; rllab's VPG with ``center_adv``).
* :class:`A2C`: generalised advantage estimation with a value network per particle, batched like the
  policies. The critics are trained by regression on their own optimizer and are not part of θ.
* :class:`PPO`: A2C's critics and advantages for PPO's clipped surrogate over several epochs of minibatches.
* :class:`SAC`, :class:`TD3`: off-policy (:class:`OffPolicyEstimator`): one replay buffer for all particles,
  twin critics per particle or per run, every actor step one SVGD step of all particles.

The on-policy estimators (:class:`OnPolicyEstimator`) run the same iteration: every particle collects
its own batch, ``advantages(batch)`` → (Â, value targets, diagnostics) with the critics as they were
during the rollout, ``fit(batch, targets, generators)`` trains the critics (a no-op for REINFORCE), and
``policy_update`` takes the SVGD step(s). Every computation is per particle; with ``groups`` G (seed
batching: G runs of M/G particles each) the diagnostics are per group, shape (G,).

Adding an estimator: a subclass of :class:`Estimator` with a ``name``, a ``help`` line and
``train_iteration``, decorated with :func:`register_estimator` (docs/architecture.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Protocol

import torch

from svpg.core.extractors import ObsLayout, ParticleNetwork, feature_size
from svpg.core.networks import NetworkSpec, ParticleMLP
from svpg.core.particles import ParticleLayout
from svpg.deprecation import renamed_argument
from svpg.rl.policies import ParticlePolicy, fold_obs_scale
from svpg.rl.replay import ReplayBuffer
from svpg.rl.returns import discounted_returns, gae_advantages, linear_feature_baseline, standardize
from svpg.rl.rollout import Rollout, per_particle
from svpg.runtime import torch_threads
from svpg.seeding import torch_generator


class TrainingModel(Protocol):
    """What an estimator uses of the model it trains (:class:`svpg.SVPG`); written here so that the
    estimators do not import the algorithm that imports them."""

    config: Any  # svpg.rl.config.SVPGConfig (config imports this module for its choices)
    spec: Any  # svpg.rl.policies.PolicySpec
    policy: ParticlePolicy
    env: Any  # svpg.envs.BatchedEnv
    seeds: list[int]
    device: torch.device
    verbose: int
    logger: Any  # svpg.rl.logger.Logger
    update_threads: int
    envs_per_particle: int  # N: environments per particle
    steps_per_env: int  # T: each environment's steps per iteration
    total_particles: int  # S·M: the rows of θ (config.num_particles is M)
    iteration: int  # the iterations finished

    def collect(self) -> Rollout: ...

    def reset_environments(self) -> torch.Tensor: ...

    def streams(self, name: str, *keys: int) -> list[torch.Generator]: ...

    def seed_rows(self) -> list[slice]: ...

    def check_environment_output(self, batch: Rollout) -> None: ...

    def svgd_update(self, surrogate: Callable, samples: int, diagnostics: bool = True) -> dict[str, torch.Tensor]: ...

    def learning_rate(self) -> float: ...


#: REINFORCE's baselines (``--baseline``)
BASELINES = ("linear", "none")


class Estimator:
    """The strategy of one SVPG iteration: how ∇J(θ_j) is estimated for every particle and how the
    particles take their SVGD step(s). :class:`~svpg.SVPG` builds it with :meth:`from_model` and calls
    :meth:`train_iteration` once per iteration; everything it trains besides θ (critics, temperatures,
    a replay buffer) is its own and goes through :meth:`state_dict` into every checkpoint.
    """

    #: the ``--estimator`` name
    name: ClassVar[str]
    #: one line for ``--help``
    help: ClassVar[str]
    #: True: learns only from the current policies' own rollouts (the paper grids' estimators)
    on_policy: ClassVar[bool] = True
    #: SVPGConfig fields whose default differs for this estimator, filled in by ``svpg.SVPG`` and
    #: ``train.py`` where the user gives no value (as SB3's algorithms each have their own defaults)
    defaults: ClassVar[dict[str, Any]] = {}
    #: the SVPGConfig fields that only some estimators read, the ones this one reads: one that would be
    #: ignored, given explicitly, is refused in one line (:func:`svpg.rl.config.refuse_other_estimators_options`)
    reads: ClassVar[frozenset[str]] = frozenset()
    #: rollouts keep the pre-reset observations (critics bootstrap from them)
    needs_final_obs: ClassVar[bool] = False
    #: the policy's Box head is the tanh-squashed Gaussian (:class:`~svpg.rl.policies.PolicySpec`)
    squashed_policy: ClassVar[bool] = False
    #: the policy's Box head is the deterministic tanh head (:class:`~svpg.rl.policies.PolicySpec`)
    deterministic_policy: ClassVar[bool] = False

    @classmethod
    def from_model(cls, model: TrainingModel) -> Estimator:
        """The estimator of ``model``'s configuration, spaces, seeds and device."""
        raise NotImplementedError

    def train_iteration(
        self, model: TrainingModel, batch: Rollout | None = None
    ) -> tuple[Rollout, dict[str, torch.Tensor]]:
        """One iteration's samples and updates: (the iteration's rollout, for episode statistics; the
        iteration's diagnostics, one value per seed).

        :param batch: an already collected rollout (on-policy estimators; benchmarks time the parts).
        """
        raise NotImplementedError

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass

    def parameters_state(self) -> dict:
        """What :meth:`state_dict` holds of learned parameters (critics, targets, temperatures, their
        optimizers), without data such as a replay buffer: SB3's ``get_parameters``."""
        return self.state_dict()

    def load_parameters(self, state: dict) -> None:
        """Load :meth:`parameters_state`'s keys, leaving the data as they are: SB3's ``set_parameters``."""
        self.load_state_dict(state)


#: name → estimator class: the one list that ``--estimator``, its help and the grids read
ESTIMATORS: dict[str, type[Estimator]] = {}


def register_estimator(cls: type[Estimator]) -> type[Estimator]:
    """Class decorator: make ``cls`` available as ``estimator=cls.name``."""
    if cls.name in ESTIMATORS:
        raise ValueError(f"estimator {cls.name!r} is already registered ({ESTIMATORS[cls.name].__qualname__})")
    ESTIMATORS[cls.name] = cls
    return cls


def explained_variance(residual: torch.Tensor, target: torch.Tensor, groups: int) -> torch.Tensor:
    """1 − Var(residual) / Var(target) over each group's samples (T, M, N): (G,)."""
    t, m, n = target.shape
    r, y = residual.reshape(t, groups, m // groups, n), target.reshape(t, groups, m // groups, n)
    dims = (0, 2, 3)
    return 1 - r.var(dim=dims) / y.var(dim=dims).clamp_min(1e-8)


def policy_gradient_surrogate(
    policy: ParticlePolicy,
    batch: Rollout,
    advantages: torch.Tensor,
    theta: torch.Tensor | None = None,
    rows: slice = slice(None),
) -> tuple[torch.Tensor, torch.Tensor]:
    """Σ_t log π(a_t|s_t) Â_t over each particle's batch: (M,), and the policy entropy (M,).

    Its gradient estimates ∇J up to a positive scale. Summing (not averaging) over the batch
    scales the "likelihood" exp(J/α) with the number of samples, as a Bayesian likelihood scales
    with the data-set size; α then sets how strongly these samples outweigh the prior p(θ).

    :param theta: the particles ``rows`` of the batch (default: all, ``policy.theta``).
    """
    theta = policy.theta if theta is None else theta
    m = theta.shape[0]
    obs, actions = per_particle(batch.obs[:, rows], m), per_particle(batch.actions[:, rows], m)
    logp, entropy = policy.log_prob_entropy(theta, obs, actions)
    return (logp * per_particle(advantages[:, rows], m)).sum(1), entropy


class OnPolicyEstimator(Estimator):
    """An iteration of the on-policy estimators (eqs. 17–19): every particle collects its own batch on
    freshly reset environments, advantages and the critics' fit, then :meth:`policy_update`."""

    def train_iteration(
        self, model: TrainingModel, batch: Rollout | None = None
    ) -> tuple[Rollout, dict[str, torch.Tensor]]:
        if batch is None:
            # The rollout is thousands of tiny ops that gain nothing from threads (and lose a lot on
            # shared cores); only the update's batched matmuls use --threads.
            with torch_threads(1):
                batch = model.collect()
        model.check_environment_output(batch)
        with torch_threads(model.update_threads):
            advantages, value_targets, estimator_info = self.advantages(batch)
            critic_info = self.fit(batch, value_targets, model.streams("critic_minibatch"))
            svgd_info = self.policy_update(model, batch, advantages)
        return batch, {**svgd_info, **estimator_info, **critic_info}

    def advantages(self, batch: Rollout) -> tuple[torch.Tensor, Any, dict[str, torch.Tensor]]:
        raise NotImplementedError

    def fit(
        self, batch: Rollout, targets: Any, generators: Sequence[torch.Generator | None] | None = None
    ) -> dict[str, torch.Tensor]:
        """Train whatever the advantages come from (the critics) on this batch; nothing by default."""
        return {}

    def policy_update(self, model: TrainingModel, batch: Rollout, advantages: torch.Tensor) -> dict[str, torch.Tensor]:
        """One SVGD step on ∇log q = ∇J/α + λ ∇log p (eq. 19; λ = ``prior_weight``, 1 in the paper)."""
        return model.svgd_update(
            lambda block, rows, k: policy_gradient_surrogate(model.policy, batch, advantages, block, rows),
            model.envs_per_particle * model.steps_per_env,
        )


@register_estimator
class Reinforce(OnPolicyEstimator):
    """Reward-to-go minus a baseline, standardised per particle (rllab's VPG with ``center_adv``).

    :param baseline: ``"linear"`` (rllab's linear feature baseline, fitted on each batch, see
        :func:`~svpg.rl.returns.linear_feature_baseline`) or ``"none"`` (standardisation only).
    """

    name = "reinforce"
    reads = frozenset({"baseline"})
    help = "standardised reward-to-go"
    BASELINES = BASELINES

    def __init__(self, gamma: float, baseline: str = "linear", obs_scale: tuple[float, ...] = (), groups: int = 1):
        if baseline not in self.BASELINES:
            raise ValueError(f"unknown REINFORCE baseline {baseline!r}: choose from {', '.join(self.BASELINES)}")
        self.gamma, self.baseline, self.obs_scale, self.groups = gamma, baseline, tuple(obs_scale), groups

    def advantages(self, batch: Rollout) -> tuple[torch.Tensor, None, dict[str, torch.Tensor]]:
        """Standardised (per particle) advantages (T, M, N), no value targets, diagnostics.
        Cut-off episodes get no bootstrap."""
        returns = discounted_returns(batch.rewards, batch.dones, self.gamma)
        if self.baseline == "none":
            return standardize(returns, dims=(0, 2)), None, {}
        obs = batch.obs * batch.obs.new_tensor(self.obs_scale) if self.obs_scale else batch.obs  # what the policy sees
        # fitted one group at a time: per-row work, faster on blocks that stay in cache
        baseline = [
            linear_feature_baseline(*parts)
            for parts in zip(*(x.chunk(self.groups, 1) for x in (obs, batch.dones, returns)))
        ]
        adv = returns - torch.cat(baseline, 1)
        explained = explained_variance(adv, returns, self.groups)
        return standardize(adv, dims=(0, 2)), None, {"baseline/explained_variance": explained}

    @classmethod
    def from_model(cls, model: TrainingModel) -> Reinforce:
        cfg = model.config
        layout = model.spec.obs_layout
        if cfg.baseline == "linear" and layout is not None and layout.has_images:
            raise ValueError(
                "reinforce's linear baseline regresses on the observation features clipped to ±10, which says "
                "nothing about pixels: with image observations use estimator='ppo' or 'a2c' (critics with CNNs), "
                "or baseline='none'"
            )
        return cls(cfg.gamma, cfg.baseline, cfg.obs_scale, groups=len(model.seeds))


@register_estimator
class A2C(OnPolicyEstimator):
    """GAE advantages from M batched critics V_j(s) (tanh MLPs), fitted after each rollout.

    :param obs_dim: observation size; :param total_particles: S·M, every seed's particles (one critic
        per particle; ``num_particles`` is its former name).
    :param hidden: critic hidden widths; :param lr: critic Adam learning rate.
    :param gae_lambda: λ of GAE; :param value_steps: minibatches per pass over the batch;
    :param value_epochs: passes over the batch per iteration (PPO-style critic fitting).
    :param seed: the run seed; the critics' initial weights come from its ``critic_init`` stream. A
        list of G seeds (seed batching) initialises G equal consecutive groups of critics, each from
        its own seed's stream, as G separate runs would.
    :param obs_scale: the policy's fixed observation scale, which the critics read too.
    :param obs_layout: image or Dict observations: each critic has its own extractors (a CNN per image,
        :class:`~svpg.core.extractors.ParticleNetwork`) before its MLP, as the policy's particles do
        (SB3's actor and critic share one extractor; here the critics are separate networks).

    The options' defaults are :class:`~svpg.rl.config.SVPGConfig`'s (``python train.py --help``).
    """

    name = "a2c"
    reads = frozenset({"gae_lambda", "critic_hidden", "critic_lr", "value_steps", "value_epochs"})
    help = "GAE with a critic per particle"
    needs_final_obs = True

    def __init__(
        self,
        obs_dim: int,
        total_particles: int | None = None,
        gamma: float | None = None,
        *,
        gae_lambda: float,
        hidden: tuple[int, ...],
        lr: float,
        value_steps: int,
        value_epochs: int,
        device="cpu",
        seed: int | list[int] = 0,
        obs_scale: tuple[float, ...] = (),
        obs_layout: ObsLayout | None = None,
        **former,
    ):
        if former:  # num_particles, the former name of total_particles: it meant S·M, not the config's M
            total_particles = renamed_argument("A2C", former, "num_particles", "total_particles")  # type: ignore[assignment]
        if total_particles is None or gamma is None:
            missing = "total_particles" if total_particles is None else "gamma"
            raise TypeError(f"A2C() missing required argument: {missing!r}")
        self.gamma, self.gae_lambda = gamma, gae_lambda
        self.value_steps, self.value_epochs = value_steps, value_epochs
        self.obs_scale = tuple(obs_scale)
        self.layout = ParticleLayout()
        self.net: ParticleMLP | ParticleNetwork
        if obs_layout is not None:
            spec = NetworkSpec((feature_size(obs_layout), *hidden, 1), prior="flat")
            self.net = ParticleNetwork(self.layout, obs_layout, spec, name="v")
        else:
            self.net = ParticleMLP(self.layout, NetworkSpec((obs_dim, *hidden, 1), prior="flat"), name="v")
        seeds = [seed] if isinstance(seed, int) else list(seed)
        self.groups = len(seeds)
        theta = torch.empty(total_particles, self.layout.size, device=device)
        for block, s in zip(theta.chunk(self.groups), seeds):
            self.net.init_(block, torch_generator(s, "critic_init", device=theta.device))
        self.theta = torch.nn.Parameter(theta)
        self.optimizer = torch.optim.Adam([self.theta], lr=lr)

    @classmethod
    def from_model(cls, model: TrainingModel) -> A2C:
        return cls(**cls.options(model))

    @classmethod
    def options(cls, model: TrainingModel) -> dict[str, Any]:
        """The constructor's arguments for ``model``'s configuration, spaces, seeds and device."""
        cfg = model.config
        return dict(
            obs_dim=model.spec.obs_dim,
            total_particles=model.total_particles,
            gamma=cfg.gamma,
            gae_lambda=cfg.gae_lambda,
            hidden=cfg.critic_hidden,
            lr=cfg.critic_lr,
            value_steps=cfg.value_steps,
            value_epochs=cfg.value_epochs,
            device=model.device,
            seed=model.seeds,
            obs_scale=cfg.obs_scale,
            obs_layout=model.spec.obs_layout,
        )

    def values(self, obs: torch.Tensor, theta: torch.Tensor | None = None) -> torch.Tensor:
        """V_j(s) for obs (T, M, N, obs_dim) or (M, B, obs_dim) → matching shape without obs_dim."""
        weights = self.net.fast_weights(
            fold_obs_scale(self.net.weights(self.theta if theta is None else theta), self.obs_scale)
        )
        if obs.ndim == 4:
            t, m, n, _ = obs.shape
            return self.net.fast_forward(weights, per_particle(obs, m)).view(m, t, n).transpose(0, 1)
        return self.net.fast_forward(weights, obs).squeeze(-1)

    @torch.no_grad()
    def advantages(self, batch: Rollout) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        """Standardised GAE advantages (T, M, N), the critics' regression targets (TD(λ) returns) and
        the explained variance, all with the critics as they were during the rollout."""
        # Where an episode goes on, s'_t is s_{t+1}: one critic pass over s_0 … s_{T−1} and the last s'
        # gives V(s_t) and V(s'_t), where a pass over every s' would double the work. (After a
        # termination V(s'_t) is multiplied by 0, so the reset state's value there does no harm.)
        if batch.final_obs is None:
            raise ValueError("A2C/PPO advantages need the pre-reset observations: collect with keep_final_obs=True")
        values = self._group_values(torch.cat([batch.obs, batch.final_obs[-1:]]))
        values, next_values = values[:-1], values[1:]
        cut = batch.truncated[:-1] & ~batch.terminated[:-1]  # time limit inside the batch: s'_t ≠ s_{t+1}
        if cut.any():
            cut = torch.cat([cut, torch.zeros_like(cut[:1])])
            next_values = torch.where(cut, self._group_values(batch.final_obs), next_values)
        adv = gae_advantages(
            batch.rewards, values, next_values, batch.terminated, batch.dones, self.gamma, self.gae_lambda
        )
        returns = adv + values
        explained = explained_variance(adv, returns, self.groups)
        return standardize(adv, dims=(0, 2)), returns, {"critic/explained_variance": explained}

    def _group_values(self, obs: torch.Tensor) -> torch.Tensor:
        """V of obs (T, M, N, obs_dim), one group at a time (per-row work, faster on blocks that stay in cache)."""
        return torch.cat(
            [self.values(x, theta) for x, theta in zip(obs.chunk(self.groups, 1), self.theta.chunk(self.groups))], 1
        )

    def fit(
        self, batch: Rollout, targets: torch.Tensor, generators: Sequence[torch.Generator | None] | None = None
    ) -> dict[str, torch.Tensor]:
        """Regress every particle's critic on its own (obs, target) pairs with minibatch Adam.

        :param generators: the minibatch-order stream of each group (one per seed).
        """
        t, m, n, _ = batch.obs.shape
        per_group = m // self.groups
        streams: Sequence[torch.Generator | None] = generators or [None] * self.groups
        loss = batch.obs.new_zeros(self.groups)
        for _ in range(self.value_epochs):
            # one index_select per pass, then contiguous chunks: 5× cheaper than indexing per minibatch
            minibatches = []
            for obs, y, g in zip(batch.obs.chunk(self.groups, 1), targets.chunk(self.groups, 1), streams):
                perm = torch.randperm(t * n, generator=g, device=obs.device)
                x, y = (
                    per_particle(obs, per_group).index_select(1, perm),
                    per_particle(y, per_group).index_select(1, perm),
                )
                minibatches.append(list(zip(x.chunk(self.value_steps, 1), y.chunk(self.value_steps, 1))))
            for step in zip(*minibatches):  # every group's k-th minibatch, then one optimizer step
                self.optimizer.zero_grad(set_to_none=True)
                # group by group (per-row work, faster on blocks that stay in cache); each particle's
                # critic sees its own mean-squared error, and the groups' gradients touch disjoint rows
                for k, ((xb, yb), theta) in enumerate(zip(step, self.theta.chunk(self.groups))):
                    with self.layout.split(theta):  # one backward concatenation instead of one per block
                        squared = (self.values(xb, theta) - yb).square()
                    (squared.mean() * per_group).backward()
                    loss[k] = squared.detach().mean()
                self.optimizer.step()
        return {"critic/value_loss": loss}

    def state_dict(self) -> dict:
        return {"theta": self.theta.detach().cpu(), "optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        with torch.no_grad():
            self.theta.copy_(state["theta"])
        self.optimizer.load_state_dict(state["optimizer"])


@register_estimator
class PPO(A2C):
    """A2C's critics and GAE advantages for PPO's clipped surrogate (Schulman et al. 2017,
    https://arxiv.org/abs/1707.06347): several epochs of minibatch SVGD steps on one rollout, each
    minibatch one step of all particles."""

    name = "ppo"
    reads = A2C.reads | {"ppo_epochs", "ppo_minibatches", "clip_range"}
    help = "a2c's advantages, PPO's clipped surrogate over several epochs of minibatches, each minibatch one SVGD step"

    def __init__(self, *args, epochs: int, minibatches: int, clip_range: float, **kwargs):
        super().__init__(*args, **kwargs)
        self.epochs, self.minibatches, self.clip_range = epochs, minibatches, clip_range

    @classmethod
    def options(cls, model: TrainingModel) -> dict[str, Any]:
        cfg = model.config
        return {
            **super().options(model),
            "epochs": cfg.ppo_epochs,
            "minibatches": cfg.ppo_minibatches,
            "clip_range": cfg.clip_range,
        }

    def policy_update(self, model: TrainingModel, batch: Rollout, advantages: torch.Tensor) -> dict[str, torch.Tensor]:
        """PPO's epochs of minibatch steps on the clipped surrogate, each minibatch one SVGD step of all
        particles, with the minibatch's estimate of the whole batch's sum as the one-step estimators use."""
        policy, m_all, seeds = model.policy, model.total_particles, len(model.seeds)
        obs, actions, adv = (per_particle(x, m_all) for x in (batch.obs, batch.actions, advantages))
        samples = obs.shape[1]
        size = max(1, samples // self.minibatches)
        eps = self.clip_range
        with torch.no_grad():  # the behaviour policy's log-probabilities, seed by seed
            old_logp = torch.cat(
                [
                    policy.log_prob_entropy(policy.theta.detach()[rows], obs[rows], actions[rows])[0]
                    for rows in model.seed_rows()
                ]
            )
        clipped = obs.new_zeros(seeds)
        kl = obs.new_zeros(seeds)
        steps = 0
        info: dict[str, torch.Tensor] = {}
        for epoch in range(self.epochs):
            orders = [
                torch.randperm(samples, generator=g, device=obs.device) for g in model.streams("ppo_minibatch", epoch)
            ]
            for start in range(0, size * self.minibatches, size):
                columns = [order[start : start + size] for order in orders]

                def surrogate(block, rows, k, columns=columns):
                    o, a = obs[rows][:, columns[k]], actions[rows][:, columns[k]]
                    logp, entropy = policy.log_prob_entropy(block, o, a)
                    log_ratio = logp - old_logp[rows][:, columns[k]]
                    ratio, a_hat = log_ratio.exp(), adv[rows][:, columns[k]]
                    clipped[k] += ((ratio - 1).abs() > eps).float().mean().detach()
                    kl[k] += ((ratio - 1) - log_ratio).mean().detach()  # the low-variance estimator SB3 logs
                    objective = torch.minimum(ratio * a_hat, ratio.clamp(1 - eps, 1 + eps) * a_hat)
                    # the minibatch's estimate of the whole batch's sum, as the one-step estimators use
                    return objective.sum(1) * (samples / len(columns[k])), entropy

                steps += 1
                # only the last step's diagnostics are reported: the others would cost O(M·D) work each
                info = model.svgd_update(surrogate, size, diagnostics=steps == self.epochs * self.minibatches)
        return {**info, "train/clip_fraction": clipped / steps, "train/approx_kl": kl / steps}


class OffPolicyEstimator(Estimator):
    """What the off-policy estimators (:class:`SAC`, :class:`TD3`) share: the refusals, one replay buffer
    for all particles (:class:`~svpg.rl.replay.ReplayBuffer`), twin critics per particle or per run as
    one particle tensor with Polyak-averaged targets, the iteration (every particle acts in its own
    environments, uniform actions before ``learning_starts``, ``gradient_steps`` updates every
    ``train_freq`` steps) and the checkpoints of the buffer, critics and their optimizer. A subclass
    gives :meth:`explore` (the actions after the warm-up) and :meth:`gradient_step`."""

    on_policy = False
    reads = frozenset(
        {"buffer_size", "learning_starts", "batch_size", "tau", "train_freq", "gradient_steps", "critics",
         "save_replay_buffer", "critic_hidden", "critic_lr"}
    )  # fmt: skip
    #: the stream of the noise that each gradient step draws
    update_stream: ClassVar[str]
    #: every diagnostic of an iteration: NaN in one that made no gradient step (the warm-up), so every
    #: progress row has every column
    scalars: ClassVar[tuple[str, ...]]
    #: the critic loss of one critic: SB3's SAC halves the squared error, SB3's TD3 does not
    critic_loss_scale: ClassVar[float] = 1.0

    def __init__(self, model: TrainingModel):
        cfg, spec = model.config, model.spec
        env_name, name = cfg.env_id, self.name
        if spec.discrete:
            raise ValueError(
                f"estimator '{name}' needs a continuous (Box) action space, and {env_name} has discrete actions: "
                f"use estimator='ppo' (or 'a2c', 'reinforce')"
            )
        if spec.obs_layout is not None:
            raise ValueError(
                f"estimator '{name}' reads flat observations, and {env_name} has image or Dict observations: use "
                f"estimator='ppo' (or 'a2c', 'reinforce')"
            )
        if cfg.normalize_obs or cfg.normalize_reward:
            raise ValueError(
                f"estimator '{name}' learns from raw observations and rewards: pass normalize_obs=False and "
                "normalize_reward=False (--normalize-obs false --normalize-reward false)"
            )
        self.seeds, self.particles = len(model.seeds), cfg.num_particles
        self.gamma, self.tau, self.batch_size = cfg.gamma, cfg.tau, cfg.batch_size
        self.learning_starts, self.train_freq, self.gradient_steps = (
            cfg.learning_starts,
            cfg.train_freq,
            cfg.gradient_steps,
        )
        self.save_replay_buffer = cfg.save_replay_buffer
        self.shared = cfg.critics == "shared"
        rows = model.total_particles  # S·M
        obs_dim, action_dim = spec.obs_dim, spec.action_dim
        device = model.device
        needed = ReplayBuffer.nbytes(self.seeds, cfg.buffer_size, obs_dim, action_dim)
        available = available_memory(device)
        if available is not None and needed > 0.8 * available:
            raise ValueError(
                f"a replay buffer of {cfg.buffer_size:,} transitions × {self.seeds} seed(s) needs "
                f"{needed / 2**30:.1f} GiB and {device} has {available / 2**30:.1f} GiB free: lower buffer_size"
            )
        self.buffer = ReplayBuffer(self.seeds, cfg.buffer_size, obs_dim, action_dim, device)
        model.logger.info(f"{name.upper()} {self.buffer}")
        # the critics: two per particle, rows (seed, particle, k), or two per seed (shared): each seed's consecutive
        self.layout = ParticleLayout()
        self.net = ParticleMLP(
            self.layout,
            NetworkSpec((obs_dim + action_dim, *cfg.critic_hidden, 1), activation="relu", prior="flat"),
            name="q",
        )
        theta = torch.empty(2 * (self.seeds if self.shared else rows), self.layout.size, device=device)
        for block, seed in zip(theta.chunk(self.seeds), model.seeds):
            self.net.init_(block, torch_generator(seed, "critic_init", device=device))
        self.critic = torch.nn.Parameter(theta)
        self.target = theta.detach().clone()
        self.critic_optimizer = torch.optim.Adam([self.critic], lr=cfg.critic_lr)
        #: the optimizers that ``anneal_lr`` decays with the actors' (SB3's schedule moves all of them), at their base lr
        self.scheduled = [(self.critic_optimizer, cfg.critic_lr)]
        self.low = torch.tensor(spec.action_low, device=device)
        self.high = torch.tensor(spec.action_high, device=device)

    @classmethod
    def from_model(cls, model: TrainingModel) -> OffPolicyEstimator:
        return cls(model)

    # -- the critics -----------------------------------------------------------------------------
    def q_values(self, weights, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Both critics of each particle row: obs (R, B, d), actions (R, B, A) → (R, 2, B), with critic
        weights of 2R rows (per-particle) or of 2 rows per seed whose M particle rows are in obs (shared:
        one pass of the pair over all its particles' samples)."""
        rows, b = obs.shape[:2]
        x = torch.cat([obs, actions], -1)
        if not self.shared:
            return self.net.forward(weights, x.repeat_interleave(2, dim=0)).view(rows, 2, b)
        runs, m = rows // self.particles, self.particles
        q = self.net.forward(weights, x.reshape(runs, m * b, -1).repeat_interleave(2, dim=0))
        return q.view(runs, 2, m, b).transpose(1, 2).reshape(rows, 2, b)

    def first_critic_values(self, weights, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Q_1 of each particle row only (TD3's actor objective), without Q_2's forward and backward pass:
        obs (R, B, d), actions (R, B, A) → (R, B), with the critic weights of :meth:`q_values`."""
        rows, b = obs.shape[:2]
        first = [(w[0::2], c[0::2]) for w, c in weights]  # each pair's first critic
        x = torch.cat([obs, actions], -1)
        if not self.shared:
            return self.net.forward(first, x).view(rows, b)
        return self.net.forward(first, x.reshape(rows // self.particles, self.particles * b, -1)).view(rows, b)

    def critic_weights(self, weights, particle_rows: slice, k: int):
        """The critic weights that score the particles ``particle_rows`` (seed k's): their own twin pairs,
        or their seed's shared pair."""
        two = slice(2 * k, 2 * k + 2) if self.shared else slice(2 * particle_rows.start, 2 * particle_rows.stop)
        return [(w[two], c[two]) for w, c in weights]

    def sample_minibatch(self, model: TrainingModel, minibatches, update_noise):
        """Each particle row's share of a minibatch (R, b, ·) (obs, actions, rewards, next_obs,
        terminated) and two draws of N(0, 1) noise (R, b, A) from ``update_noise``."""
        m = self.particles
        b = self.batch_size // m if self.shared else self.batch_size  # each particle row's share
        a_dim, device = model.spec.action_dim, model.device
        indices = torch.cat(
            [torch.randint(self.buffer.filled, (m, b), generator=g, device=device) for g in minibatches]
        )
        sampled = self.buffer.sample(indices, m)
        noise = torch.cat([torch.randn((m, b, a_dim), generator=g, device=device) for g in update_noise])
        next_noise = torch.cat([torch.randn((m, b, a_dim), generator=g, device=device) for g in update_noise])
        return sampled, noise, next_noise

    def critic_update(self, obs, actions, y) -> tuple[torch.Tensor, torch.Tensor]:
        """One Adam step of the critics towards the targets y (R, b): the per-particle losses (R,) and
        Q-values (R, 2, b)."""
        m = self.particles
        q = self.q_values(self.net.weights(self.critic), obs, actions)
        per_particle_q_loss = self.critic_loss_scale * (q - y.unsqueeze(1)).square().mean(2).sum(1)
        self.critic_optimizer.zero_grad(set_to_none=True)
        if self.shared:  # each seed's pair: the mean over its whole minibatch
            per_particle_q_loss.view(self.seeds, m).mean(1).sum().backward()
        else:  # each particle's critics get their own loss's gradient
            per_particle_q_loss.sum().backward()
        self.critic_optimizer.step()
        return per_particle_q_loss, q

    # -- an iteration ----------------------------------------------------------------------------
    def explore(self, model: TrainingModel, weights, obs: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
        """The actions (R, N, A) after the warm-up for obs (R, N, d), given the policy's fast weights and
        N(0, 1) noise ``eps`` (R, N, A)."""
        raise NotImplementedError

    def gradient_step(
        self, model: TrainingModel, minibatches, update_noise, remaining: int = 0
    ) -> dict[str, torch.Tensor]:
        """One update of the critics and (when due) the actors; ``remaining``: how many gradient steps
        this iteration makes after this one. The iteration reports its last update's scalars, so an
        update that a later actor step follows may skip the SVGD diagnostics' cost (their keys then
        missing from what it returns)."""
        raise NotImplementedError

    def train_iteration(
        self, model: TrainingModel, batch: Rollout | None = None
    ) -> tuple[Rollout, dict[str, torch.Tensor]]:
        if batch is not None:
            raise ValueError(f"estimator '{self.name}' collects its own samples between its updates: pass no batch")
        policy, env = model.policy, model.env
        rows, n, steps = model.total_particles, model.envs_per_particle, model.steps_per_env
        m, a_dim = self.particles, model.spec.action_dim
        if model.config.anneal_lr:
            fraction = model.learning_rate() / model.config.lr
            for optimizer, base in self.scheduled:
                for group in optimizer.param_groups:
                    group["lr"] = base * fraction
        obs = model.reset_environments()
        action_noise = model.streams("action_noise")
        minibatches, update_noise = model.streams("replay_minibatch"), model.streams(self.update_stream)
        # SB3's gradient_steps=-1: one gradient step per environment step (of all particles) since the last update
        gradient_steps = self.gradient_steps if self.gradient_steps > 0 else self.train_freq * m * n
        # train_freq counts the run's steps across iterations, as SB3's counts across its rollouts
        before = model.iteration * steps
        recorded: dict[str, list[torch.Tensor]] = {k: [] for k in ("obs", "actions", "rewards", "term", "trunc")}
        info: dict[str, torch.Tensor] | None = None
        weights = None
        with torch_threads(model.update_threads):
            for t in range(steps):
                o = obs.view(rows, n, -1)
                with torch.no_grad():
                    if self.buffer.added < self.learning_starts:  # warm-up: uniform in the box (SB3's)
                        u = torch.cat([torch.rand((m, n, a_dim), generator=g, device=o.device) for g in action_noise])
                        a = self.low + (self.high - self.low) * u
                    else:
                        if weights is None:
                            weights = policy.fast_weights(policy.theta.detach())
                        eps = torch.cat(
                            [torch.randn((m, n, a_dim), generator=g, device=o.device) for g in action_noise]
                        )
                        a = self.explore(model, weights, o, eps)
                res = env.step(a.reshape(rows * n, a_dim))
                per_run = (self.seeds, m * n)
                self.buffer.add(
                    o.reshape(*per_run, -1),
                    a.reshape(*per_run, -1),
                    res.reward.view(per_run),
                    res.final_obs.view(*per_run, -1),
                    res.terminated.view(per_run),
                )
                for key, value in zip(recorded, (o, a, res.reward, res.terminated, res.truncated)):
                    recorded[key].append(value)
                obs = res.obs
                done = before + t + 1
                if self.buffer.added >= self.learning_starts and done % self.train_freq == 0:
                    later = gradient_steps * ((before + steps) // self.train_freq - done // self.train_freq)
                    for j in range(gradient_steps):
                        info = self.gradient_step(model, minibatches, update_noise, later + gradient_steps - 1 - j)
                    weights = None
        shape = (steps, rows, n)
        batch = Rollout(
            obs=torch.stack(recorded["obs"]),
            actions=torch.stack(recorded["actions"]),
            rewards=torch.stack(recorded["rewards"]).view(shape),
            terminated=torch.stack(recorded["term"]).view(shape),
            truncated=torch.stack(recorded["trunc"]).view(shape),
            final_obs=None,
        )
        model.check_environment_output(batch)
        if info is None:
            nan = torch.full((self.seeds,), float("nan"), device=model.device)
            info = {key: nan for key in self.scalars}
        return batch, info

    # -- checkpoints -----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {**self.parameters_state(), "buffer": self.buffer.state_dict(self.save_replay_buffer)}

    def load_state_dict(self, state: dict) -> None:
        self.load_parameters(state)
        self.buffer.load_state_dict(state["buffer"])

    def parameters_state(self) -> dict:
        return {
            "critic": self.critic.detach().cpu(),
            "target": self.target.cpu(),
            "critic_optimizer": self.critic_optimizer.state_dict(),
        }

    def load_parameters(self, state: dict) -> None:
        with torch.no_grad():
            self.critic.copy_(state["critic"])
            self.target.copy_(state["target"])
        self.critic_optimizer.load_state_dict(state["critic_optimizer"])


#: the diagnostics of an SVGD step (:meth:`svpg.SVPG.svgd_update`)
_SVGD_SCALARS = (
    "svgd/bandwidth",
    "svgd/driving_norm",
    "svgd/repulsive_norm",
    "svgd/particle_spread",
    "train/policy_loss",
    "policy/entropy",
    "structure/min_householder_norm",
)
#: SAC's diagnostics: the SVGD step's and those of its other updates
_SAC_SCALARS = (*_SVGD_SCALARS, "critic/q_loss", "critic/q_mean", "train/ent_coef", "train/ent_coef_loss")


@register_estimator
class SAC(OffPolicyEstimator):
    """Soft actor-critic (Haarnoja et al. 2018, https://arxiv.org/abs/1812.05905) as an SVGD estimator:
    every particle acts in its own environments, all transitions go to one replay buffer, and each
    gradient step trains every particle's twin critics on its own minibatch from that buffer, then moves
    all particles by one SVGD step on ∇[J_i/α + λ log p] with J_i the sum over particle i's minibatch of
    SAC's actor objective min_k Q_ik(s, ã) − α_i log π_i(ã|s), ã ~ π_i(·|s) reparameterised. The kernel,
    the priors and S²VGD's structured layers are those of the on-policy estimators.

    With ``critics="per-particle"`` (the default) each particle has its own twin critics (Q_i1, Q_i2:
    Q^{π_i} of its own policy, learned from everyone's transitions), one (2·M, D) particle tensor (one
    ``baddbmm`` per layer). With ``critics="shared"`` the run has one twin pair, as CEM-RL's population of
    actors shares one critic (Pourchot & Sigaud 2019, https://arxiv.org/abs/1810.01222): each update draws
    one minibatch of ``batch_size`` transitions and gives each particle batch_size / M of its states, for
    its targets (its own next action and temperature) and its actor step, so an update of all M particles
    costs one SAC update. Either way the critics have Polyak-averaged targets, and every particle has its
    own entropy temperature α_i tuned towards the target entropy as SAC does.
    Stable-Baselines3's names and defaults for ``buffer_size``, ``batch_size``, ``tau``, ``train_freq``,
    ``gradient_steps``, ``ent_coef`` and ``target_entropy``; SB3's name for ``learning_starts``, whose
    default (1000, all particles' steps: 250 uniform steps per particle with M = 4) is larger than SB3's 100.

    An iteration resets the environments (as the on-policy estimators do) and runs
    ``steps_per_env`` steps of all particles, with ``gradient_steps`` updates after every
    ``train_freq`` steps once ``learning_starts`` transitions (all particles' steps) are in the buffer;
    before that, actions are uniform in the box. Checkpoints at iteration boundaries hold the buffer,
    critics, targets, temperatures and optimizers, so a resumed run equals the uninterrupted one.
    """

    name = "sac"
    reads = OffPolicyEstimator.reads | {"ent_coef", "target_entropy"}
    help = (
        "off-policy soft actor-critic: one replay buffer for all particles, twin critics and an entropy "
        "temperature per particle, every actor step one SVGD step"
    )
    squashed_policy = True
    defaults = {
        "hidden": (256, 256),
        "critic_hidden": (256, 256),
        "samples_per_particle": 0,
        "normalize_obs": False,
        "normalize_reward": False,
    }
    update_stream = "sac_noise"
    scalars = _SAC_SCALARS
    critic_loss_scale = 0.5

    def __init__(self, model: TrainingModel):
        super().__init__(model)
        cfg, rows, device = model.config, model.total_particles, model.device
        self.auto_entropy, initial = _parse_ent_coef(cfg.ent_coef)
        self.log_ent_coef = torch.nn.Parameter(torch.full((rows,), math.log(initial), device=device))
        self.ent_optimizer = torch.optim.Adam([self.log_ent_coef], lr=cfg.lr)
        self.scheduled.append((self.ent_optimizer, cfg.lr))
        action_dim = model.spec.action_dim
        self.target_entropy = -float(action_dim) if cfg.target_entropy == "auto" else float(cfg.target_entropy)

    @classmethod
    def from_model(cls, model: TrainingModel) -> SAC:
        return cls(model)

    def explore(self, model: TrainingModel, weights, obs: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
        return model.policy.sample(weights, obs, eps)

    def gradient_step(
        self, model: TrainingModel, minibatches, update_noise, remaining: int = 0
    ) -> dict[str, torch.Tensor]:
        """One SAC update of every particle: critics, one SVGD step of the actors, temperatures,
        Polyak-averaged targets. Each step uses the values from before the update, as Stable-Baselines3's
        does (it steps the temperatures first, on the log π its actor loss uses)."""
        policy, m = model.policy, self.particles
        (obs, actions, rewards, next_obs, terminated), noise, next_noise = self.sample_minibatch(
            model, minibatches, update_noise
        )
        b = obs.shape[1]
        with torch.no_grad():
            layer_weights = policy.fast_weights(policy.theta.detach())[0]
        # the temperatures this update uses are those before their own step (Stable-Baselines3's order)
        ent_coef = self.log_ent_coef.detach().exp()
        # the critics: y = r + γ (1 − d) (min_k Q̄_ik(s', ã') − α_i log π_i(ã'|s'))
        with torch.no_grad():
            next_actions, next_logp = policy.squashed_sample(
                policy.net.fast_forward(layer_weights, next_obs), next_noise
            )
            next_q = self.q_values(self.net.weights(self.target), next_obs, next_actions).amin(1)
            y = rewards + self.gamma * (1 - terminated) * (next_q - ent_coef.unsqueeze(1) * next_logp)
        per_particle_q_loss, q = self.critic_update(obs, actions, y)
        # the actors: one SVGD step on the sum over each particle's minibatch of min_k Q_ik(s, ã) − α_i log π_i(ã|s)
        critic_weights = self.net.weights(self.critic.detach())
        mean_logp = []  # each seed's particles' mean log π(ã|s) on the minibatch, for the temperatures

        def surrogate(block, particle_rows, k):
            o = obs[particle_rows]
            out = policy.net.fast_forward(policy.fast_weights(block)[0], o)
            a, logp_pi = policy.squashed_sample(out, noise[particle_rows])
            q_pi = self.q_values(self.critic_weights(critic_weights, particle_rows, k), o, a).amin(1)
            objective = (q_pi - ent_coef[particle_rows].unsqueeze(1) * logp_pi).sum(1)
            mean_logp.append(logp_pi.detach().mean(1))
            return objective, -mean_logp[-1]

        info = model.svgd_update(surrogate, b, diagnostics=remaining == 0)
        ent_loss = obs.new_zeros(self.seeds)
        if self.auto_entropy:  # −log α_i (log π_i + H̄): α_i grows while the entropy is below its target
            # log π_i from the actor step's forward pass, at θ before its step (SB3 computes it once for both)
            per_particle_loss = -(self.log_ent_coef * (torch.cat(mean_logp) + self.target_entropy))
            self.ent_optimizer.zero_grad(set_to_none=True)
            per_particle_loss.sum().backward()
            self.ent_optimizer.step()
            ent_loss = per_particle_loss.detach().view(self.seeds, m).mean(1)
        with torch.no_grad():
            self.target.lerp_(self.critic.detach(), self.tau)
        per_seed = (self.seeds, m)
        return {
            **info,
            "critic/q_loss": per_particle_q_loss.detach().view(per_seed).mean(1),
            "critic/q_mean": q.detach().mean((1, 2)).view(per_seed).mean(1),
            "train/ent_coef": ent_coef.view(per_seed).mean(1),
            "train/ent_coef_loss": ent_loss,
        }

    # -- checkpoints -----------------------------------------------------------------------------
    def parameters_state(self) -> dict:
        return {
            **super().parameters_state(),
            "log_ent_coef": self.log_ent_coef.detach().cpu(),
            "ent_optimizer": self.ent_optimizer.state_dict(),
        }

    def load_parameters(self, state: dict) -> None:
        super().load_parameters(state)
        with torch.no_grad():
            self.log_ent_coef.copy_(state["log_ent_coef"])
        self.ent_optimizer.load_state_dict(state["ent_optimizer"])


#: TD3's diagnostics: the SVGD step's (NaN in an iteration without an actor step; policy/entropy always:
#: a deterministic policy has none) and the critics'
_TD3_SCALARS = (*_SVGD_SCALARS, "critic/q_loss", "critic/q_mean")


@register_estimator
class TD3(OffPolicyEstimator):
    """Twin delayed DDPG (Fujimoto et al. 2018, https://arxiv.org/abs/1802.09477) as an SVGD estimator, on
    :class:`SAC`'s machinery (one replay buffer, twin critics per particle or per run as one particle
    tensor, the iteration, the checkpoints): every particle's policy is deterministic, a = c + h·tanh(μ_i(s))
    in the action box (:class:`~svpg.rl.policies.PolicySpec`'s ``deterministic`` head), and explores with
    Gaussian noise of std ``action_noise`` on the action scaled to [−1, 1], clipped to the box.

    Each gradient step trains the critics towards y = r + γ(1 − d) min_k Q̄_ik(s′, ã′), with
    ã′ = c + h·clip(tanh(μ̄_i(s′)) + clip(ε, ±target_noise_clip), ±1), ε ~ N(0, target_policy_noise²), from
    particle i's target policy θ̄_i (target policy smoothing). Every ``policy_delay``-th critic update, all
    particles take one SVGD step on ∇[Σ_b Q_i1(s_b, μ_i(s_b))/α + λ log p(θ_i)], then the target critics and
    the target policies move towards theta by Polyak averaging with ``tau`` (Stable-Baselines3's order and
    names: ``action_noise``, ``policy_delay``, ``target_policy_noise``, ``target_noise_clip``). No entropy
    temperature: the policy is deterministic.
    """

    name = "td3"
    reads = OffPolicyEstimator.reads | {"action_noise", "policy_delay", "target_policy_noise", "target_noise_clip"}
    help = (
        "off-policy twin delayed DDPG: one replay buffer for all particles, deterministic policies, twin "
        "critics, a delayed actor step that is one SVGD step"
    )
    deterministic_policy = True
    #: Stable-Baselines3's TD3 (400 × 300 networks, learning rate 1e-3), not tuned for svpg
    defaults = {
        "hidden": (400, 300),
        "critic_hidden": (400, 300),
        "lr": 1e-3,
        "critic_lr": 1e-3,
        "samples_per_particle": 0,
        "normalize_obs": False,
        "normalize_reward": False,
    }
    update_stream = "td3_noise"
    scalars = _TD3_SCALARS

    def __init__(self, model: TrainingModel):
        super().__init__(model)
        cfg = model.config
        self.action_noise, self.policy_delay = cfg.action_noise, cfg.policy_delay
        self.target_policy_noise, self.target_noise_clip = cfg.target_policy_noise, cfg.target_noise_clip
        #: the target policies θ̄ (S·M, D), Polyak averages of θ
        self.target_theta = model.policy.theta.detach().clone()
        #: critic updates so far (SB3's _n_updates): the actor steps on every policy_delay-th
        self.critic_updates = 0
        self._actor_info: dict[str, torch.Tensor] | None = None

    @classmethod
    def from_model(cls, model: TrainingModel) -> TD3:
        return cls(model)

    def explore(self, model: TrainingModel, weights, obs: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
        policy = model.policy
        return policy.deterministic_action(policy.net.fast_forward(weights[0], obs), self.action_noise * eps)

    def train_iteration(
        self, model: TrainingModel, batch: Rollout | None = None
    ) -> tuple[Rollout, dict[str, torch.Tensor]]:
        self._actor_info = None  # an iteration reports its own actor steps only
        return super().train_iteration(model, batch)

    def gradient_step(
        self, model: TrainingModel, minibatches, update_noise, remaining: int = 0
    ) -> dict[str, torch.Tensor]:
        """One TD3 update (Stable-Baselines3's order): the critics; every ``policy_delay``-th update, one
        SVGD step of the actors and the Polyak-averaged targets (critics and policies)."""
        policy, m = model.policy, self.particles
        (obs, actions, rewards, next_obs, terminated), _, next_noise = self.sample_minibatch(
            model, minibatches, update_noise
        )
        b = obs.shape[1]
        self.critic_updates += 1
        # the critics: y = r + γ (1 − d) min_k Q̄_ik(s', ã'), ã' the target policy's action with clipped noise
        with torch.no_grad():
            smoothing = (self.target_policy_noise * next_noise).clamp(-self.target_noise_clip, self.target_noise_clip)
            target_weights = policy.fast_weights(self.target_theta)[0]
            next_actions = policy.deterministic_action(policy.net.fast_forward(target_weights, next_obs), smoothing)
            next_q = self.q_values(self.net.weights(self.target), next_obs, next_actions).amin(1)
            y = rewards + self.gamma * (1 - terminated) * next_q
        per_particle_q_loss, q = self.critic_update(obs, actions, y)
        if self.critic_updates % self.policy_delay == 0:
            # the actors: one SVGD step on the sum over each particle's minibatch of Q_i1(s, μ_i(s))
            critic_weights = self.net.weights(self.critic.detach())

            def surrogate(block, particle_rows, k):
                o = obs[particle_rows]
                a = policy.deterministic_action(policy.net.fast_forward(policy.fast_weights(block)[0], o))
                q_pi = self.first_critic_values(self.critic_weights(critic_weights, particle_rows, k), o, a)
                return q_pi.sum(1), torch.full_like(q_pi[:, 0], float("nan"))  # no entropy: deterministic

            # the iteration reports its last actor step's diagnostics: none follows within `remaining`
            self._actor_info = model.svgd_update(surrogate, b, diagnostics=remaining < self.policy_delay)
            with torch.no_grad():
                self.target.lerp_(self.critic.detach(), self.tau)
                self.target_theta.lerp_(policy.theta.detach(), self.tau)
        per_seed = (self.seeds, m)
        nan = torch.full((self.seeds,), float("nan"), device=model.device)
        actor = self._actor_info or {}
        return {
            **{key: actor.get(key, nan) for key in _SVGD_SCALARS},
            "critic/q_loss": per_particle_q_loss.detach().view(per_seed).mean(1),
            "critic/q_mean": q.detach().mean((1, 2)).view(per_seed).mean(1),
        }

    # -- checkpoints -----------------------------------------------------------------------------
    def parameters_state(self) -> dict:
        return {
            **super().parameters_state(),
            "target_theta": self.target_theta.cpu(),
            "critic_updates": torch.tensor([self.critic_updates], dtype=torch.int64),
        }

    def load_parameters(self, state: dict) -> None:
        super().load_parameters(state)
        self.target_theta.copy_(state["target_theta"])
        self.critic_updates = int(state["critic_updates"][0])


def _parse_ent_coef(value: str) -> tuple[bool, float]:
    """SB3's ``ent_coef``: ``"auto"`` (tuned, starting at 1), ``"auto_0.1"`` (tuned, starting at 0.1) or a
    fixed positive number → (tuned, initial value)."""
    auto = value.startswith("auto")
    text = value[5:] if value.startswith("auto_") else ("1.0" if auto else value)
    try:
        initial = float(text)
    except ValueError:
        initial = float("nan")
    if not initial > 0:
        raise ValueError(f"--ent-coef must be 'auto', 'auto_<initial value>' or a positive number, got {value!r}")
    return auto, initial


def available_memory(device: torch.device | str) -> int | None:
    """Bytes free for a new allocation on ``device`` (MemAvailable of /proc/meminfo on a CPU, the free
    memory of a CUDA device); None where unknown."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None
