"""Policy-gradient estimators, one registry (:data:`ESTIMATORS`): each owns the whole of an iteration's update.

* :class:`Reinforce`: standardised reward-to-go (Williams 1992; rllab's VPG with ``center_adv``).
* :class:`A2C`: generalised advantage estimation with a value network per particle, batched like the
  policies. The critics are trained by regression on their own optimizer and are not part of θ.
* :class:`PPO`: A2C's critics and advantages for PPO's clipped surrogate over several epochs of minibatches.

The on-policy estimators (:class:`OnPolicyEstimator`) run the same iteration: every particle collects
its own batch, ``advantages(batch)`` → (Â, value targets, diagnostics) with the critics as they were
during the rollout, ``fit(batch, targets, generators)`` trains the critics (a no-op for REINFORCE), and
``policy_update`` takes the SVGD step(s). Every computation is per particle; with ``groups`` G (seed
batching: G runs of M/G particles each) the diagnostics are per group, shape (G,).

Adding an estimator: a subclass of :class:`Estimator` with a ``name``, a ``help`` line and
``train_iteration``, decorated with :func:`register_estimator` (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from svpg.core.networks import NetworkSpec, ParticleMLP
from svpg.core.particles import ParticleLayout
from svpg.rl.policies import ParticlePolicy, fold_obs_scale
from svpg.rl.returns import discounted_returns, gae_advantages, linear_feature_baseline, standardize
from svpg.rl.rollout import Rollout, per_particle
from svpg.runtime import torch_threads
from svpg.seeding import torch_generator

if TYPE_CHECKING:
    from svpg.rl.algorithm import SVPG

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

    @classmethod
    def from_model(cls, model: SVPG) -> Estimator:
        """The estimator of ``model``'s configuration, spaces, seeds and device."""
        raise NotImplementedError

    def train_iteration(self, model: SVPG, batch: Rollout | None = None) -> tuple[Rollout, dict[str, torch.Tensor]]:
        """One iteration's samples and updates: (the iteration's rollout, for episode statistics; the
        iteration's diagnostics, one value per seed).

        :param batch: an already collected rollout (on-policy estimators; benchmarks time the parts).
        """
        raise NotImplementedError

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


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

    #: the rollout keeps the pre-reset observations (critics bootstrap from them)
    needs_final_obs: ClassVar[bool] = False

    def train_iteration(self, model: SVPG, batch: Rollout | None = None) -> tuple[Rollout, dict[str, torch.Tensor]]:
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

    def policy_update(self, model: SVPG, batch: Rollout, advantages: torch.Tensor) -> dict[str, torch.Tensor]:
        """One SVGD step on ∇log q = ∇J/α + λ ∇log p (eq. 19; λ = ``prior_weight``, 1 in the paper)."""
        return model.svgd_update(
            lambda block, rows, k: policy_gradient_surrogate(model.policy, batch, advantages, block, rows),
            model.envs_per_particle * model.steps_per_iteration,
        )


@register_estimator
class Reinforce(OnPolicyEstimator):
    """Reward-to-go minus a baseline, standardised per particle (rllab's VPG with ``center_adv``).

    :param baseline: ``"linear"`` (rllab's linear feature baseline, fitted on each batch, see
        :func:`~svpg.rl.returns.linear_feature_baseline`) or ``"none"`` (standardisation only).
    """

    name = "reinforce"
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
    def from_model(cls, model: SVPG) -> Reinforce:
        cfg = model.config
        return cls(cfg.gamma, cfg.baseline, cfg.obs_scale, groups=len(model.seeds))


@register_estimator
class A2C(OnPolicyEstimator):
    """GAE advantages from M batched critics V_j(s) (tanh MLPs), fitted after each rollout.

    :param obs_dim: observation size; :param num_particles: M (one critic per particle).
    :param hidden: critic hidden widths; :param lr: critic Adam learning rate.
    :param gae_lambda: λ of GAE; :param value_steps: minibatches per pass over the batch;
    :param value_epochs: passes over the batch per iteration (PPO-style critic fitting).
    :param seed: the run seed; the critics' initial weights come from its ``critic_init`` stream. A
        list of G seeds (seed batching) initialises G equal consecutive groups of critics, each from
        its own seed's stream, as G separate runs would.
    :param obs_scale: the policy's fixed observation scale, which the critics read too.

    The options' defaults are :class:`~svpg.rl.config.SVPGConfig`'s (``python train.py --help``).
    """

    name = "a2c"
    help = "GAE with a critic per particle"
    needs_final_obs = True

    def __init__(
        self,
        obs_dim: int,
        num_particles: int,
        gamma: float,
        *,
        gae_lambda: float,
        hidden: tuple[int, ...],
        lr: float,
        value_steps: int,
        value_epochs: int,
        device="cpu",
        seed: int | list[int] = 0,
        obs_scale: tuple[float, ...] = (),
    ):
        self.gamma, self.gae_lambda = gamma, gae_lambda
        self.value_steps, self.value_epochs = value_steps, value_epochs
        self.obs_scale = tuple(obs_scale)
        self.layout = ParticleLayout()
        self.net = ParticleMLP(self.layout, NetworkSpec((obs_dim, *hidden, 1), prior="flat"), name="v")
        seeds = [seed] if isinstance(seed, int) else list(seed)
        self.groups = len(seeds)
        theta = torch.empty(num_particles, self.layout.size, device=device)
        for block, s in zip(theta.chunk(self.groups), seeds):
            self.net.init_(block, torch_generator(s, "critic_init", device=theta.device))
        self.theta = torch.nn.Parameter(theta)
        self.optimizer = torch.optim.Adam([self.theta], lr=lr)

    @classmethod
    def from_model(cls, model: SVPG) -> A2C:
        cfg = model.config
        return cls(
            model.spec.obs_dim,
            model.policy.num_particles,
            cfg.gamma,
            gae_lambda=cfg.gae_lambda,
            hidden=cfg.critic_hidden,
            lr=cfg.critic_lr,
            value_steps=cfg.value_steps,
            value_epochs=cfg.value_epochs,
            device=model.device,
            seed=model.seeds,
            obs_scale=cfg.obs_scale,
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
    help = "a2c's advantages, PPO's clipped surrogate over several epochs of minibatches, each minibatch one SVGD step"

    def __init__(self, *args, epochs: int, minibatches: int, clip_range: float, **kwargs):
        super().__init__(*args, **kwargs)
        self.epochs, self.minibatches, self.clip_range = epochs, minibatches, clip_range

    @classmethod
    def from_model(cls, model: SVPG) -> PPO:
        cfg = model.config
        return cls(
            model.spec.obs_dim,
            model.policy.num_particles,
            cfg.gamma,
            gae_lambda=cfg.gae_lambda,
            hidden=cfg.critic_hidden,
            lr=cfg.critic_lr,
            value_steps=cfg.value_steps,
            value_epochs=cfg.value_epochs,
            device=model.device,
            seed=model.seeds,
            obs_scale=cfg.obs_scale,
            epochs=cfg.ppo_epochs,
            minibatches=cfg.ppo_minibatches,
            clip_range=cfg.clip_range,
        )

    def policy_update(self, model: SVPG, batch: Rollout, advantages: torch.Tensor) -> dict[str, torch.Tensor]:
        """PPO's epochs of minibatch steps on the clipped surrogate, each minibatch one SVGD step of all
        particles, with the minibatch's estimate of the whole batch's sum as the one-step estimators use."""
        policy, m_all, seeds = model.policy, model.policy.num_particles, len(model.seeds)
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

                info = model.svgd_update(surrogate, size)
                steps += 1
        return {**info, "train/clip_fraction": clipped / steps, "train/approx_kl": kl / steps}
