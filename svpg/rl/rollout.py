"""Batched rollouts: all particles × all environments step together as (M, N, ·) tensors.

Sampling runs without autograd on effective weights computed once for the whole rollout; the update
recomputes log-probabilities in one batched pass afterwards. No host syncs in the loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from svpg.envs import BatchedEnv
from svpg.rl.policies import ParticlePolicy


@dataclass
class Rollout:
    """One iteration's samples; leading axes (T, M, N)."""

    obs: torch.Tensor  # (T, M, N, obs_dim)
    actions: torch.Tensor  # (T, M, N) or (T, M, N, A)
    rewards: torch.Tensor  # (T, M, N)
    terminated: torch.Tensor  # (T, M, N) bool
    truncated: torch.Tensor  # (T, M, N) bool
    final_obs: torch.Tensor | None  # (T, M, N, obs_dim): next obs before reset (for bootstrapping)
    env_rewards: torch.Tensor | None = None  # (T, M, N): the environment's own rewards when ``rewards`` are scaled

    @property
    def episode_rewards(self) -> torch.Tensor:
        """The environment's rewards (what episode returns are made of)."""
        return self.rewards if self.env_rewards is None else self.env_rewards

    @property
    def dones(self) -> torch.Tensor:
        return self.terminated | self.truncated

    @property
    def num_steps(self) -> int:
        return self.rewards.numel()


def per_particle(x: torch.Tensor, m: int) -> torch.Tensor:
    """A rollout tensor (T, M, N, …) → (M, T·N, …): each particle's samples in one row."""
    return x.transpose(0, 1).reshape(m, -1, *x.shape[3:])


@torch.no_grad()
def collect_rollout(
    env: BatchedEnv,
    policy: ParticlePolicy,
    obs: torch.Tensor,
    steps: int,
    generator: torch.Generator | Sequence[torch.Generator] | None = None,
    *,
    keep_final_obs: bool = False,
    normalizer=None,
) -> Rollout:
    """Run every particle's policy on its own N = env.num_envs / M environments for ``steps`` steps.

    :param obs: the environments' current observations (num_envs, obs_dim), e.g. from ``env.reset()``.
    :param generator: the action-noise stream, or one stream per group of particles (seed batching:
        G generators for G equal consecutive groups of the M particles).
    :param keep_final_obs: also store the pre-reset next observations (A2C bootstraps from them).
    :param normalizer: a :class:`~svpg.rl.normalize.Normalizer` updated with, and applied to, every
        observation and reward (the rollout stores what the policy saw and the scaled rewards; the
        environment's rewards go to ``env_rewards``).
    """
    m = policy.num_particles
    n = env.num_envs // m
    weights = policy.fast_weights(policy.theta.detach())
    if isinstance(generator, Sequence):
        per_group = m // len(generator)
        noise = torch.cat([policy.draw_noise((steps, per_group, n), g) for g in generator], dim=1)
    else:
        noise = policy.draw_noise((steps, m, n), generator)
    obs_l, act_l, rew_l, term_l, trunc_l, final_l, env_rew_l = [], [], [], [], [], [], []
    if normalizer is not None:
        normalizer.start_episodes(env.num_envs, obs.device)
        obs = normalizer.observe(obs)
    for t in range(steps):
        o = obs.view(m, n, -1)
        a = policy.sample(weights, o, noise[t])
        res = env.step(a.reshape(m * n, *a.shape[2:]))
        obs_l.append(o)
        act_l.append(a)
        term_l.append(res.terminated)
        trunc_l.append(res.truncated)
        if normalizer is None:
            rew_l.append(res.reward)
            obs = res.obs
            if keep_final_obs:
                final_l.append(res.final_obs)
        else:  # VecNormalize's order: statistics updated with the new observations, then applied
            env_rew_l.append(res.reward)
            rew_l.append(normalizer.scale_rewards(res.reward, res.terminated | res.truncated))
            obs = normalizer.observe(res.obs)
            if keep_final_obs:
                final_l.append(normalizer.normalize_obs(res.final_obs))
    shape = (steps, m, n)
    return Rollout(
        obs=torch.stack(obs_l),
        actions=torch.stack(act_l),
        rewards=torch.stack(rew_l).view(shape),
        terminated=torch.stack(term_l).view(shape),
        truncated=torch.stack(trunc_l).view(shape),
        final_obs=torch.stack(final_l).view(*shape, -1) if keep_final_obs else None,
        env_rewards=torch.stack(env_rew_l).view(shape) if normalizer is not None else None,
    )
