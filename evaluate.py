#!/usr/bin/env python
"""Load a saved particle ensemble, roll it out, and report returns per particle and for the ensemble.

    python evaluate.py runs/<run-name>                       # every particle, 20 episodes each
    python evaluate.py runs/<run-name> --particle 3 --episodes 50 --seed 7
    python evaluate.py runs/<run-name>/checkpoints/iter_000040.safetensors
    python evaluate.py runs/<run-name> --particle best --gif swingup.gif
"""
from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="evaluate.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", help="run folder (runs/<run-name>) or a .safetensors checkpoint")
    p.add_argument("--particle", default="all", help="'all', 'best' (highest mean return) or a particle index (default: all)")
    p.add_argument("--episodes", type=int, default=20, help="episodes per particle (default: 20)")
    p.add_argument("--seed", type=int, default=0, help="seed of the evaluation environments and action noise (default: 0)")
    p.add_argument("--env-id", default=None, help="environment id (default: the one the run trained on)")
    p.add_argument("--stochastic", action="store_true", help="sample actions instead of the deterministic argmax / mean")
    p.add_argument("--horizon", type=int, default=0, help="episode time limit (default: the run's)")
    p.add_argument("--device", default="cpu", help="torch device (default: cpu)")
    p.add_argument("--gif", default=None, metavar="OUT.gif", help="also render one episode of the chosen particle "
                   "(--particle; 'all' means the best) to an animated GIF")
    p.add_argument("--gif-frame-skip", type=int, default=2, help="keep every n-th frame in the GIF (default: 2)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import svpg
    from svpg.io import CheckpointError
    from svpg.rl.evaluation import evaluate_particles, format_table

    try:
        policy = svpg.load(args.path, device=args.device)
        config = policy.metadata.get("config", {})
        env_id = args.env_id or policy.metadata.get("env_id") or config.get("env_id")
        if env_id is None:
            raise ValueError("the checkpoint does not name its environment: pass --env-id")
        horizon = args.horizon or config.get("horizon") or None
        if args.particle == "all":
            particles = None
        elif args.particle == "best":
            scores = evaluate_particles(policy, env_id, args.episodes, seed=args.seed + 1, deterministic=not args.stochastic, max_episode_steps=horizon)
            particles = [int(scores.mean(1).argmax())]
        else:
            try:
                particles = [int(args.particle)]
            except ValueError:
                raise ValueError(f"--particle must be 'all', 'best' or an index, got {args.particle!r}") from None
        returns = evaluate_particles(
            policy, env_id, args.episodes, seed=args.seed, particles=particles,
            deterministic=not args.stochastic, max_episode_steps=horizon,
        )
    except (CheckpointError, FileNotFoundError, ValueError) as e:
        print(f"evaluate.py: error: {e}", file=sys.stderr)
        return 2
    mode = "stochastic" if args.stochastic else "deterministic"
    print(f"{args.path}: {policy}\n{args.episodes} {mode} episodes per particle on {env_id}, seed {args.seed}\n")
    print(format_table(returns, particles))
    if args.gif:
        from svpg.rl.video import record_gif

        chosen = particles[0] if particles else int(returns.mean(1).argmax())
        policy.set_particle(chosen)
        path, ep_returns = record_gif(
            policy, env_id, args.gif, seed=args.seed, deterministic=not args.stochastic,
            max_episode_steps=horizon, frame_skip=max(1, args.gif_frame_skip),
        )
        print(f"\nparticle {chosen}: one episode (return {ep_returns[0]:.1f}) rendered to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
