"""Render a particle's rollouts to an animated GIF (Pillow, which matplotlib already requires)."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np

from svpg.envs import canonical_id
from svpg.io import atomic_write
from svpg.rl.policies import ParticlePolicy
from svpg.seeding import int_seed


def record_gif(
    policy: ParticlePolicy,
    env_id: str,
    path: str | Path,
    *,
    episodes: int = 1,
    seed: int = 0,
    deterministic: bool = True,
    max_episode_steps: int | None = None,
    frame_skip: int = 1,
    env_kwargs: dict | None = None,
) -> tuple[Path, list[float]]:
    """Roll out ``policy.particle`` with ``gym.make(env_id, render_mode="rgb_array")`` and save a GIF.

    The first reset is seeded from the ``env_reset`` stream of ``seed``; later episodes continue it.

    :return: the path and the return of every episode.
    """
    from PIL import Image

    kwargs = dict(env_kwargs or {})
    if max_episode_steps:
        kwargs["max_episode_steps"] = max_episode_steps
    env = gym.make(canonical_id(env_id), render_mode="rgb_array", **kwargs)
    fps = env.metadata.get("render_fps", 30) / frame_skip
    frames, returns = [], []
    for ep in range(episodes):
        obs, _ = env.reset(seed=int_seed(seed, "env_reset") if ep == 0 else None)
        total, done, t = 0.0, False, 0
        while not done:
            if t % frame_skip == 0:
                frames.append(Image.fromarray(np.asarray(env.render(), dtype=np.uint8)))
            action, _ = policy.predict(obs, deterministic=deterministic)
            obs, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            done = terminated or truncated
            t += 1
        returns.append(total)
    env.close()
    if not frames:
        raise ValueError(f"{env_id} produced no frames to record")
    path = Path(path)
    atomic_write(
        path,
        lambda tmp: frames[0].save(
            tmp, format="GIF", save_all=True, append_images=frames[1:], duration=int(1000 / fps), loop=0, optimize=False
        ),
    )
    return path, returns
