"""Observation normalisation and reward scaling with Stable-Baselines3 ``VecNormalize``'s semantics.

* Observations: a running mean and variance of every feature (Chan et al.'s parallel update, as SB3's
  ``RunningMeanStd``), updated with every observation the training rollouts see, and
  ``clip((o − μ) / sqrt(σ² + ε), −clip_obs, clip_obs)`` fed to the policies and critics.
* Rewards: divided by the running standard deviation of the discounted return
  ``R_t = γ R_{t−1} + r_t`` (reset at every episode end), clipped to ``±clip_reward``; not centred.
  Episode returns in the logs stay the environment's own.

**Shared by the particles.** One set of statistics per seed, updated with every particle's
observations. SVGD's kernel compares the particles' parameters, which only means something if every
particle reads its input in the same coordinates: with per-particle statistics the same θ would be a
different policy in each particle, and the repulsive term would push apart parameters that encode the
same behaviour. Shared statistics also see M times the data. Seed-batched runs keep one set per seed,
so each seed's run is its single-seed run.

**Images are never normalised** (as SB3, whose ``VecNormalize`` refuses image observations for its
CNN policies): for image and ``Dict`` observations only the features of the Box vector keys are
normalised (SB3's ``norm_obs_keys``, here every vector key; one-hot ``Discrete`` keys and images pass
through), the others reach the policies as the environment gives them.

Statistics are updated only while training collects; evaluation, ``predict``, export and GIFs use a
frozen copy (:meth:`Normalizer.frozen`), saved with the model and restored on resume.
"""

from __future__ import annotations

import torch


class Normalizer:
    """Running statistics of G independent groups (seeds): observations (G, d) and returns (G,).

    :param obs_dim: d.
    :param groups: G; the batches passed to the ``update`` methods hold G equal consecutive groups of
        environments.
    :param norm_obs: normalise observations; :param norm_reward: scale rewards.
    :param clip_obs: / :param clip_reward: clipping after normalisation (SB3's 10 and 10).
    :param gamma: the discount of the return whose spread scales the rewards.
    :param epsilon: added to the variance (SB3's 1e-8).
    :param obs_index: the features to normalise (None: all; an empty list: none).
    """

    def __init__(
        self,
        obs_dim: int,
        groups: int = 1,
        *,
        norm_obs: bool = True,
        norm_reward: bool = True,
        clip_obs: float = 10.0,
        clip_reward: float = 10.0,
        gamma: float = 0.99,
        epsilon: float = 1e-8,
        device="cpu",
        obs_index: list[int] | None = None,
    ):
        self.norm_obs, self.norm_reward = norm_obs, norm_reward
        self.obs_index = None if obs_index is None else torch.tensor(obs_index, dtype=torch.long, device=device)
        self.clip_obs, self.clip_reward, self.gamma, self.epsilon = clip_obs, clip_reward, gamma, epsilon
        self.groups = groups
        f64 = dict(dtype=torch.float64, device=device)
        # SB3's RunningMeanStd starts at mean 0, var 1, count 1e-4
        self.obs_mean, self.obs_var = torch.zeros(groups, obs_dim, **f64), torch.ones(groups, obs_dim, **f64)
        self.obs_count = torch.full((groups,), 1e-4, **f64)
        self.ret_mean, self.ret_var = torch.zeros(groups, **f64), torch.ones(groups, **f64)
        self.ret_count = torch.full((groups,), 1e-4, **f64)
        self.returns: torch.Tensor | None = None  # the running discounted return of every environment

    @staticmethod
    def _combine(mean, var, count, batch: torch.Tensor):
        """Chan et al.'s parallel update of (mean, var, count) with a batch (G, n, …) → new tensors."""
        batch = batch.to(torch.float64)
        b_mean, b_var, n = batch.mean(1), batch.var(1, unbiased=False), batch.shape[1]
        delta = b_mean - mean
        total = count + n
        shape = (-1,) + (1,) * (mean.ndim - 1)
        new_mean = mean + delta * (n / total).view(shape)
        m2 = var * count.view(shape) + b_var * n + delta.square() * (count * n / total).view(shape)
        return new_mean, m2 / total.view(shape), total

    def observe(self, obs: torch.Tensor) -> torch.Tensor:
        """Update the observation statistics with a batch (G·n, d) and return it normalised."""
        if not self.norm_obs:
            return obs
        grouped = obs.view(self.groups, -1, obs.shape[-1])
        if self.obs_index is not None:  # the statistics of the other features stay at (0, 1), unused
            if not len(self.obs_index):
                return obs
            grouped = grouped.index_select(-1, self.obs_index)
            mean, var, count = self._combine(
                self.obs_mean[:, self.obs_index], self.obs_var[:, self.obs_index], self.obs_count, grouped
            )
            self.obs_mean, self.obs_var = self.obs_mean.clone(), self.obs_var.clone()
            self.obs_mean[:, self.obs_index], self.obs_var[:, self.obs_index], self.obs_count = mean, var, count
            return self.normalize_obs(obs)
        self.obs_mean, self.obs_var, self.obs_count = self._combine(
            self.obs_mean, self.obs_var, self.obs_count, grouped
        )
        return self.normalize_obs(obs)

    def normalize_obs(self, obs: torch.Tensor) -> torch.Tensor:
        """(G·n, d) or (G·n, …, d) observations with the current statistics (no update)."""
        if not self.norm_obs:
            return obs
        if self.obs_index is not None:
            if not len(self.obs_index):
                return obs
            part = obs.index_select(-1, self.obs_index)
            lead = part.shape[0]
            grouped = part.reshape(self.groups, lead // self.groups, -1, part.shape[-1])
            mean = self.obs_mean[:, self.obs_index].view(self.groups, 1, 1, -1)
            std = (self.obs_var[:, self.obs_index] + self.epsilon).sqrt().view(self.groups, 1, 1, -1)
            normed = ((grouped - mean) / std).clamp(-self.clip_obs, self.clip_obs).to(obs.dtype).reshape(part.shape)
            return obs.index_copy(-1, self.obs_index, normed)
        lead = obs.shape[0]
        grouped = obs.reshape(self.groups, lead // self.groups, -1, obs.shape[-1])
        mean = self.obs_mean.view(self.groups, 1, 1, -1)
        std = (self.obs_var + self.epsilon).sqrt().view(self.groups, 1, 1, -1)
        out = ((grouped - mean) / std).clamp(-self.clip_obs, self.clip_obs)
        return out.to(obs.dtype).reshape(obs.shape)

    def start_episodes(self, num_envs: int, device) -> None:
        """Every environment starts afresh (the rollouts reset all of them each iteration)."""
        self.returns = torch.zeros(num_envs, dtype=torch.float64, device=device)

    def scale_rewards(self, rewards: torch.Tensor, done: torch.Tensor) -> torch.Tensor:
        """Update the return statistics with one step's rewards (G·n,) and return them scaled."""
        if not self.norm_reward:
            return rewards
        assert self.returns is not None, "start_episodes comes first (collect_rollout calls it)"
        self.returns = self.returns * self.gamma + rewards.to(torch.float64)
        grouped = self.returns.view(self.groups, -1)
        self.ret_mean, self.ret_var, self.ret_count = self._combine(
            self.ret_mean, self.ret_var, self.ret_count, grouped
        )
        std = (self.ret_var + self.epsilon).sqrt().repeat_interleave(grouped.shape[1])
        scaled = (rewards / std.to(rewards.dtype)).clamp(-self.clip_reward, self.clip_reward)
        self.returns = self.returns.masked_fill(done, 0.0)
        return scaled

    def frozen(self, group: int = 0) -> dict | None:
        """Group ``group``'s observation transform as fixed tensors (for a policy that acts), or None."""
        if not self.norm_obs:
            return None
        return {
            "mean": self.obs_mean[group].float().clone(),
            "std": (self.obs_var[group] + self.epsilon).sqrt().float(),
            "clip": float(self.clip_obs),
        }

    def state_dict(self) -> dict:
        return {
            "obs_mean": self.obs_mean,
            "obs_var": self.obs_var,
            "obs_count": self.obs_count,
            "ret_mean": self.ret_mean,
            "ret_var": self.ret_var,
            "ret_count": self.ret_count,
        }

    def load_state_dict(self, state: dict) -> None:
        for key, value in state.items():
            setattr(self, key, value.to(torch.float64).to(getattr(self, key).device).reshape(getattr(self, key).shape))


def apply_frozen(obs: torch.Tensor, transform: dict | None, index: list[int] | None = None) -> torch.Tensor:
    """A frozen observation transform (:meth:`Normalizer.frozen`) applied to raw observations; only to
    the features ``index`` when given (those of a Dict's vector keys, see ``Normalizer``'s obs_index)."""
    if transform is None:
        return obs
    if index is not None:
        if not index:
            return obs
        idx = torch.tensor(index, dtype=torch.long, device=obs.device)
        mean, std = transform["mean"].to(obs)[idx], transform["std"].to(obs)[idx]
        part = ((obs.index_select(-1, idx) - mean) / std).clamp(-transform["clip"], transform["clip"])
        return obs.index_copy(-1, idx, part)
    return ((obs - transform["mean"].to(obs)) / transform["std"].to(obs)).clamp(-transform["clip"], transform["clip"])
