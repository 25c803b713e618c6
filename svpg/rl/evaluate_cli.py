"""The evaluation front end: ``svpg evaluate`` and the checkout's ``python evaluate.py``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from svpg.cli import Parser

# --help's text: a plain string, so that a formatter keeps the examples' indentation
DESCRIPTION = """Load a saved particle ensemble, roll it out, and report returns per particle and for the ensemble.

    python evaluate.py runs/<run-name>                       # every particle, 20 episodes each
    python evaluate.py runs/<run-name> --particle 3 --eval-episodes 50 --seed 7
    python evaluate.py runs/<run-name>/checkpoints/iter_000040.safetensors
    python evaluate.py runs/<run-name> --particle best --gif swingup.gif
"""


def build_parser(prog: str = "evaluate.py") -> argparse.ArgumentParser:
    command = "python evaluate.py" if prog == "evaluate.py" else "svpg evaluate"
    p = Parser(prog=prog, description=DESCRIPTION.replace("python evaluate.py", command))
    p.add_argument("path", help="run folder (runs/<run-name>) or a .safetensors checkpoint")
    p.add_argument(
        "--particle", default="all", help="'all', 'best' (highest mean return) or a particle index (default: all)"
    )
    p.add_argument(
        "--eval-episodes",
        deprecated=("--episodes",),
        dest="episodes",
        type=int,
        default=20,
        help="episodes per particle (default: 20)",
    )
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the evaluation environments and action noise (default: 0)"
    )
    p.add_argument(
        "--env-id", default=None, help="environment id, also module:Id (default: the one the run trained on)"
    )
    p.add_argument(
        "--env-kwargs",
        default=None,
        metavar="JSON",
        help="gym.make keyword arguments as a JSON object (default: the run's, or none with --env-id)",
    )
    p.add_argument(
        "--stochastic",
        action="store_true",
        help="sample actions instead of the deterministic argmax / mean (estimator td3: the same actions)",
    )
    p.add_argument("--horizon", type=int, default=0, help="episode time limit (default: the run's)")
    p.add_argument("--device", default="cpu", help="torch device (default: cpu)")
    p.add_argument(
        "--gif",
        default=None,
        metavar="OUT.gif",
        help="also render one episode of the chosen particle (--particle; 'all' means the best) to an animated GIF",
    )
    p.add_argument("--gif-frame-skip", type=int, default=2, help="keep every n-th frame in the GIF (default: 2)")
    return p


def check_gif_path(path: str) -> None:
    """Refuse an output the GIF could not be written to before any episode runs."""
    out = Path(path)
    folder = out.parent if str(out.parent) else Path(".")
    if out.suffix.lower() != ".gif":
        raise ValueError(f"--gif {path!r} must end in .gif")
    if out.is_dir():
        raise ValueError(f"--gif {path!r} is a folder; give a file name such as {out / 'episode.gif'}")
    if not folder.is_dir():
        raise ValueError(f"--gif {path!r}: the folder {folder} does not exist; create it or choose another path")
    if not os.access(folder, os.W_OK | os.X_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise ValueError(f"--gif {path!r}: {folder} is not writable; choose another path")


def main(argv: list[str] | None = None, prog: str = "evaluate.py") -> int:
    """Run the front end on ``argv`` (default: the command line); ``prog`` is the command's name in messages."""
    args = build_parser(prog).parse_args(argv)
    from svpg.io import CheckpointError, WriteError
    from svpg.rl import load
    from svpg.rl.evaluation import evaluate_particles, format_table
    from svpg.runtime import resolve_device
    from svpg.seeding import int_seed

    try:
        if args.episodes < 1:
            raise ValueError(f"--eval-episodes must be ≥ 1, got {args.episodes}")
        if args.gif:
            check_gif_path(args.gif)
        device = resolve_device(args.device)
        policy = load(args.path, device=device)
        config = policy.metadata.get("config", {})
        env_id = args.env_id or policy.metadata.get("env_id") or config.get("env_id")
        if env_id is None:
            raise ValueError("the checkpoint does not name its environment: pass --env-id")
        if env_id.startswith("custom:"):
            raise ValueError(
                f"the model was trained on an environment object ({env_id[7:]}), not an id: pass --env-id "
                f"(a registered id or module:Id)"
            )
        env_kwargs = (
            json.loads(args.env_kwargs) if args.env_kwargs else ({} if args.env_id else config.get("env_kwargs", {}))
        )
        horizon = args.horizon or config.get("horizon") or None
        if args.particle == "all":
            particles = None
        elif args.particle == "best":
            # chosen on episodes of their own stream, then reported on the --seed episodes
            scores = evaluate_particles(
                policy,
                env_id,
                args.episodes,
                seed=int_seed(args.seed, "selection"),
                deterministic=not args.stochastic,
                max_episode_steps=horizon,
                env_kwargs=env_kwargs,
            )
            particles = [int(scores.mean(1).argmax())]
        else:
            try:
                particles = [int(args.particle)]
            except ValueError:
                raise ValueError(f"--particle must be 'all', 'best' or an index, got {args.particle!r}") from None
        returns = evaluate_particles(
            policy,
            env_id,
            args.episodes,
            seed=args.seed,
            particles=particles,
            deterministic=not args.stochastic,
            max_episode_steps=horizon,
            env_kwargs=env_kwargs,
        )
    except json.JSONDecodeError as e:
        print(f"{prog}: error: --env-kwargs must be a JSON object such as '{{\"g\": 9.81}}' ({e})", file=sys.stderr)
        return 2
    except (CheckpointError, FileNotFoundError, ValueError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    mode = "stochastic" if args.stochastic else "deterministic"
    if args.stochastic and policy.spec.deterministic:
        mode = "deterministic (TD3's head has no noise to sample, as SB3's TD3.predict)"
    print(f"{args.path}: {policy}\n{args.episodes} {mode} episodes per particle on {env_id}, seed {args.seed}\n")
    print(format_table(returns, particles))
    if args.gif:
        from gymnasium.error import DependencyNotInstalled

        from svpg.rl.video import record_gif

        chosen = particles[0] if particles else int(returns.mean(1).argmax())
        policy.set_particle(chosen)
        try:
            path, ep_returns = record_gif(
                policy,
                env_id,
                args.gif,
                seed=args.seed,
                deterministic=not args.stochastic,
                max_episode_steps=horizon,
                frame_skip=max(1, args.gif_frame_skip),
                env_kwargs=env_kwargs,
            )
        except WriteError as e:
            print(f"{prog}: error: {e}", file=sys.stderr)
            return 2
        except DependencyNotInstalled as e:  # the env's renderer (classic control: pygame) is an extra
            print(f"{prog}: error: --gif renders {env_id}, and its renderer is not installed: {e}", file=sys.stderr)
            return 2
        print(f"\nparticle {chosen}: one episode (return {ep_returns[0]:.1f}) rendered to {path}")
    return 0
