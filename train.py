#!/usr/bin/env python
"""Train particle policies with Stein variational policy gradient (S²VGD / SVGD / independent).

    python train.py                                   # S²VGD (K = 1), M = 16, REINFORCE, CartPole-v1
    python train.py --method svgd --seed 3 --run-name svgd-s3
    python train.py --preset swingup --estimator a2c  # the paper's settings (svpg/rl/presets/*.json)
    python train.py --resume runs/<run-name>          # continue a run from its last checkpoint

Every run writes runs/<run-name>/: TensorBoard events, config.json, model.safetensors and
checkpoints/. Watch it with `tensorboard --logdir runs`.
"""
from __future__ import annotations

import argparse
import sys

from svpg.cli import add_dataclass_arguments, dataclass_from_args, explicit_options
from svpg.rl.config import METHODS, SVPGConfig, available_presets, load_preset

# Other front ends, dispatched on the first argument: name -> (module with main(argv) -> int, help).
SUBCOMMANDS = {
    "bandit": ("svpg.bandits.cli", "contextual bandits: Stein Thompson sampling and baselines (python train.py bandit --help)"),
    "supervised": ("svpg.supervised.cli", "Bayesian neural networks on regression/classification data (python train.py supervised --help)"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="train.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="methods:\n" + "\n".join(f"  {k:12s} {v}" for k, v in METHODS.items())
        + "\n\nother front ends:\n" + "\n".join(f"  train.py {k:11s} {v[1]}" for k, v in SUBCOMMANDS.items()),
    )
    parser.add_argument(
        "--preset", default=None,
        help=f"start from a preset ({', '.join(available_presets())}, or a JSON file of config fields); "
        "options given on the command line override it",
    )
    add_dataclass_arguments(parser, SVPGConfig)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in SUBCOMMANDS:
        import importlib

        return importlib.import_module(SUBCOMMANDS[argv[0]][0]).main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.preset:
            typed = explicit_options(parser, argv)
            for key, value in load_preset(args.preset).items():
                if key not in typed:
                    setattr(args, key, tuple(value) if isinstance(value, list) else value)
        config = dataclass_from_args(SVPGConfig, args)
        from svpg.rl.trainer import SVPGTrainer

        trainer = SVPGTrainer(config)
    except (ValueError, FileNotFoundError) as e:
        print(f"train.py: error: {e}", file=sys.stderr)
        return 2
    print(f"run folder: {trainer.run_dir}\n{trainer.policy}\n"
          f"{trainer.iterations} iterations × {trainer.policy.num_particles} particles × "
          f"{trainer.envs_per_particle} envs × {trainer.steps_per_iteration} steps on {config.env_id}")
    policy = trainer.train()
    cfg = trainer.config
    if cfg.eval_episodes:
        from svpg.rl.evaluation import evaluate_particles, format_table

        returns = evaluate_particles(policy, cfg.env_id, cfg.eval_episodes, seed=cfg.seed + 10_000, max_episode_steps=trainer.horizon)
        print(f"\nevaluation: {cfg.eval_episodes} deterministic episodes per particle on {cfg.env_id}\n")
        print(format_table(returns))
    print(f"\nsaved to {trainer.run_dir} — evaluate with: python evaluate.py {trainer.run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
