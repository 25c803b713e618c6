"""Policy-gradient estimators: advantages Â for the surrogate Σ_t log π(a_t|s_t) Â_t (eq. 19).

* :class:`Reinforce`: standardised reward-to-go (Williams 1992; rllab's VPG with ``center_adv``).
* :class:`A2C`: generalised advantage estimation with a value network per particle, batched like the
  policies. The critics are trained by regression on their own optimizer and are not part of θ.

Both have the same two steps, called in this order every iteration: ``advantages(batch)`` →
(Â, value targets, diagnostics) with the critics as they were during the rollout, then
``fit(batch, targets, generators)``, which trains the critics (a no-op for REINFORCE). Every
computation is per particle; with ``groups`` G (seed batching: G runs of M/G particles each) the
diagnostics are per group, shape (G,).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Protocol

import torch

from svpg.core.networks import NetworkSpec, ParticleMLP
from svpg.core.particles import ParticleLayout
from svpg.rl.config import BASELINES, SVPGConfig
from svpg.rl.policies import fold_obs_scale
from svpg.rl.returns import discounted_returns, gae_advantages, linear_feature_baseline, standardize
from svpg.rl.rollout import Rollout, per_particle
from svpg.seeding import torch_generator


def explained_variance(residual: torch.Tensor, target: torch.Tensor, groups: int) -> torch.Tensor:
    """1 − Var(residual) / Var(target) over each group's samples (T, M, N): (G,)."""
    t, m, n = target.shape
    r, y = residual.reshape(t, groups, m // groups, n), target.reshape(t, groups, m // groups, n)
    dims = (0, 2, 3)
    return 1 - r.var(dim=dims) / y.var(dim=dims).clamp_min(1e-8)


class Estimator(Protocol):
    """What :class:`~svpg.SVPG` uses of an advantage estimator (:class:`Reinforce`, :class:`A2C`, :class:`PPO`)."""

    @property
    def needs_final_obs(self) -> bool: ...

    def advantages(self, batch: Rollout) -> tuple[torch.Tensor, torch.Tensor | None, dict[str, torch.Tensor]]: ...

    # targets: the second item of advantages() (None for REINFORCE, which has nothing to fit)
    def fit(
        self, batch: Rollout, targets: Any, generators: Sequence[torch.Generator | None] | None = None
    ) -> dict[str, torch.Tensor]: ...

    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...


class Reinforce:
    """Reward-to-go minus a baseline, standardised per particle (rllab's VPG with ``center_adv``).

    :param baseline: ``"linear"`` (rllab's linear feature baseline, fitted on each batch, see
        :func:`~svpg.rl.returns.linear_feature_baseline`) or ``"none"`` (standardisation only).
    """

    name = "reinforce"
    needs_final_obs = False
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

    def fit(
        self, batch: Rollout, targets: None, generators: Sequence[torch.Generator | None] | None = None
    ) -> dict[str, torch.Tensor]:
        """Nothing to train: the linear baseline is refitted inside :meth:`advantages`."""
        return {}

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


def _config_default(name: str):
    """The default of an :class:`SVPGConfig` field: the critic's defaults live in the config (one home,
    shown by --help), read off the field without building a config."""
    field = SVPGConfig.__dataclass_fields__[name]
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    raise TypeError(f"SVPGConfig.{name} has no default")


class A2C:
    """GAE advantages from M batched critics V_j(s) (tanh MLPs), fitted after each rollout.

    :param obs_dim: observation size; :param num_particles: M (one critic per particle).
    :param hidden: critic hidden widths; :param lr: critic Adam learning rate.
    :param gae_lambda: λ of GAE; :param value_steps: minibatches per pass over the batch;
    :param value_epochs: passes over the batch per iteration (PPO-style critic fitting).
    :param seed: the run seed; the critics' initial weights come from its ``critic_init`` stream. A
        list of G seeds (seed batching) initialises G equal consecutive groups of critics, each from
        its own seed's stream, as G separate runs would.
    :param obs_scale: the policy's fixed observation scale, which the critics read too.

    The critic options left at None take the defaults of :class:`~svpg.rl.config.SVPGConfig`.
    """

    name = "a2c"
    needs_final_obs = True

    def __init__(
        self,
        obs_dim: int,
        num_particles: int,
        gamma: float,
        *,
        gae_lambda: float | None = None,
        hidden: tuple[int, ...] | None = None,
        lr: float | None = None,
        value_steps: int | None = None,
        value_epochs: int | None = None,
        device="cpu",
        seed: int | list[int] = 0,
        obs_scale: tuple[float, ...] = (),
    ):
        gae_lambda = _config_default("gae_lambda") if gae_lambda is None else gae_lambda
        hidden = _config_default("critic_hidden") if hidden is None else hidden
        lr = _config_default("critic_lr") if lr is None else lr
        value_steps = _config_default("value_steps") if value_steps is None else value_steps
        value_epochs = _config_default("value_epochs") if value_epochs is None else value_epochs
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


class PPO(A2C):
    """A2C's critics and GAE advantages for PPO's clipped surrogate (Schulman et al. 2017,
    https://arxiv.org/abs/1707.06347): the policy update takes several epochs of minibatch SVGD steps
    on one rollout (:meth:`svpg.SVPG.policy_update`)."""

    name = "ppo"
