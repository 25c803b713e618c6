"""Roll out particles for whole episodes on a batched environment and report their returns."""

from __future__ import annotations

import torch

from svpg.envs import is_fast, make_batched
from svpg.rl.config import DEFAULT_HORIZON, default_horizon
from svpg.rl.policies import ParticlePolicy
from svpg.seeding import int_seed, torch_generator


@torch.no_grad()
def evaluate_particles(
    policy: ParticlePolicy,
    env_id,
    episodes: int = 20,
    *,
    seed: int = 0,
    particles: list[int] | None = None,
    deterministic: bool = True,
    max_episode_steps: int | None = None,
    env_kwargs: dict | None = None,
    return_lengths: bool = False,
):
    """Undiscounted returns of ``episodes`` episodes of each chosen particle: (P, episodes); with
    ``return_lengths``, (returns, episode lengths), both (P, episodes).

    All particles × episodes run at once, one episode per environment. The start states and the
    action noise (``deterministic=False``) come from separate streams of ``seed``.

    :param env_id: an id (with ``env_kwargs``) or a zero-argument env factory.
    """
    if max_episode_steps is None and not (isinstance(env_id, str) and is_fast(env_id)):
        max_episode_steps = default_horizon(env_id)
    if episodes < 1:
        raise ValueError(f"episodes must be ≥ 1, got {episodes}")
    idx = list(range(policy.num_particles)) if particles is None else list(particles)
    for i in idx:
        if not 0 <= i < policy.num_particles:
            raise ValueError(
                f"particle {i} does not exist: this ensemble has {policy.num_particles} (0…{policy.num_particles - 1})"
            )
    p = len(idx)
    env = make_batched(
        env_id,
        p * episodes,
        device=policy.device,
        seed=int_seed(seed, "env_reset"),
        max_episode_steps=max_episode_steps,
        env_kwargs=env_kwargs,
    )
    if env.obs_dim != policy.spec.obs_dim or not policy.spec.acts_in(env.single_action_space):
        env.close()
        raise ValueError(
            f"{env_id} has observations of size {env.obs_dim} and actions in {env.single_action_space}, but the "
            f"policy was trained for size {policy.spec.obs_dim} and {policy.spec.describe_actions()}: "
            f"evaluate on the training env"
        )
    weights = policy.fast_weights(policy.theta.detach()[idx])
    gen = torch_generator(seed, "action_noise", device=policy.device)
    obs = env.reset()
    returns = torch.zeros(p * episodes, device=policy.device)
    lengths = torch.zeros(p * episodes, dtype=torch.long, device=policy.device)
    alive = torch.ones(p * episodes, dtype=torch.bool, device=policy.device)
    # every episode ends by the time limit; an id registered without one gets the trainer's default
    for _ in range(env.max_episode_steps or DEFAULT_HORIZON):
        o = policy.preprocess(obs).view(p, episodes, -1)
        if deterministic:
            a = policy.mode(weights, o)
        else:
            a = policy.sample(weights, o, policy.draw_noise((p, episodes), gen))
        res = env.step(a.reshape(p * episodes, *a.shape[2:]))
        returns += res.reward * alive
        lengths += alive
        alive &= ~(res.terminated | res.truncated)
        obs = res.obs
    env.close()
    if return_lengths:
        return returns.view(p, episodes), lengths.view(p, episodes)
    return returns.view(p, episodes)


def format_table(returns: torch.Tensor, particles: list[int] | None = None) -> str:
    """Per-particle mean ± std table plus the ensemble's mean ± std, as Markdown."""
    idx = list(range(returns.shape[0])) if particles is None else particles
    rows = ["| particle | mean return | std | min | max |", "|---:|---:|---:|---:|---:|"]
    for i, r in zip(idx, returns):
        rows.append(f"| {i} | {r.mean():.1f} | {r.std(unbiased=False):.1f} | {r.min():.1f} | {r.max():.1f} |")
    means = returns.mean(1)
    rows.append(
        f"| **ensemble** | {returns.mean():.1f} | {returns.std(unbiased=False):.1f} | "
        f"{returns.min():.1f} | {returns.max():.1f} |"
    )
    rows.append("")
    rows.append(
        f"particle means: mean {means.mean():.1f}, worst {means.min():.1f} (particle {idx[int(means.argmin())]}), "
        f"best {means.max():.1f} (particle {idx[int(means.argmax())]})"
    )
    return "\n".join(rows)
