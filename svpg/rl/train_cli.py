"""Train particle policies with Stein variational policy gradient (S²VGD / SVGD / independent).

    python train.py                                   # S²VGD (K = 1), M = 4, PPO's surrogate, CartPole-v1
    python train.py --method svgd --seed 3 --run-name svgd-s3
    python train.py --preset swingup --estimator a2c  # a task's settings (svpg/rl/presets/*.json)
    python train.py --preset swingup --num-seeds 5    # seeds 0-4 as one batched run, one folder per seed
    python train.py --resume runs/<run-name>          # continue from the newest consistent checkpoint
    python train.py --resume runs/<run-name> --iterations 400 --from iter_000100
    python train.py --resume runs/x__seed0 runs/x__seed1   # continue several seeds as one batch

Every run writes runs/<run-name>/: TensorBoard events, config.json, progress.csv, model.safetensors and
checkpoints/. Watch it with `tensorboard --logdir runs`. An existing run folder is never overwritten.
Ctrl-C (or SIGTERM) finishes the current iteration, saves a checkpoint and exits; --resume continues
the run exactly as if it had not stopped. With --resume only these options may be given:
--iterations, --total-steps, --eval-episodes, --progress, --threads, --device, --checkpoint-every,
--keep-checkpoints, --vec-env, --n-workers.
"""

# `svpg train` and the repository's `python train.py`: messages name the command the user ran.
from __future__ import annotations

import sys

from svpg.cli import Parser, add_dataclass_arguments, dataclass_from_args, explicit_options
from svpg.io import CheckpointError
from svpg.rl.config import (
    POLICY_METHODS,
    SVPGConfig,
    available_presets,
    load_preset,
    refuse_other_estimators_options,
    with_estimator_defaults,
)
from svpg.seeding import int_seed

# Other front ends, dispatched on the first argument: name -> (module with main(argv) -> int, help).
SUBCOMMANDS = {
    "bandit": ("svpg.bandits.cli", "contextual bandits: Stein Thompson sampling and baselines"),
    "supervised": ("svpg.supervised.cli", "Bayesian neural networks on regression/classification data"),
}


def commands(prog: str) -> tuple[str, str]:
    """How the user runs training and evaluation: the repository's scripts or the installed command."""
    return ("python train.py", "python evaluate.py") if prog == "train.py" else ("svpg train", "svpg evaluate")


def build_parser(prog: str = "train.py") -> Parser:
    train_cmd = commands(prog)[0]
    top = "python train.py" if prog == "train.py" else "svpg"  # where the other front ends hang
    front_ends = {
        f"{top.removeprefix('python ')} {name}": f"{text} ({top} {name} --help)"
        for name, (_, text) in SUBCOMMANDS.items()
    }
    parser = Parser(
        prog=prog,
        description=__doc__.replace("python train.py", train_cmd),
        listed={"methods": POLICY_METHODS, "other front ends": front_ends},
    )
    parser.add_argument(
        "--preset",
        default=None,
        help=f"start from a preset ({', '.join(available_presets())}, or a JSON file of config fields); "
        "options given on the command line override it",
    )
    parser.add_argument(
        "--resume",
        default=None,
        nargs="+",
        metavar="RUN_DIR",
        help="continue the run in this folder (its own config; see above for the options it takes); "
        "several folders of one configuration and different seeds continue as one seed batch",
    )
    parser.add_argument(
        "--from",
        dest="from_checkpoint",
        default=None,
        metavar="CHECKPOINT",
        help="with --resume: the checkpoint to continue from, e.g. iter_000040 or 40 (later ones are "
        "moved to checkpoints/discarded_after_…; default: the newest consistent one)",
    )
    add_dataclass_arguments(parser, SVPGConfig)
    return parser


def make_trainer(parser: Parser, args, argv: list[str]):
    from svpg.rl.trainer import SVPGTrainer

    typed = explicit_options(parser, argv)
    if args.resume:
        if "preset" in typed:
            raise ValueError("--preset cannot be combined with --resume (the run keeps its own settings)")
        overrides = {k: getattr(args, k) for k in typed - {"resume", "from_checkpoint"}}
        return SVPGTrainer.resume(args.resume, args.from_checkpoint, **overrides)
    if args.from_checkpoint:
        raise ValueError("--from needs --resume RUN_DIR")
    given = {k: getattr(args, k) for k in typed}
    if args.preset:
        given = {**load_preset(args.preset), **given}
    refuse_other_estimators_options(given.get("estimator", args.estimator), typed, cli=True)
    for key, value in with_estimator_defaults(given).items():
        if hasattr(args, key):
            setattr(args, key, value)
    return SVPGTrainer(dataclass_from_args(SVPGConfig, args))


def main(argv: list[str] | None = None, prog: str = "train.py") -> int:
    """Run the front end on ``argv`` (default: the command line); ``prog`` is the command's name in messages."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in SUBCOMMANDS:
        import importlib

        return importlib.import_module(SUBCOMMANDS[argv[0]][0]).main(argv[1:])
    train_cmd, evaluate_cmd = commands(prog)
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    from svpg.allocator import keep_freed_memory

    keep_freed_memory()  # the A2C critic fit's large activations: see svpg/allocator.py
    try:
        trainer = make_trainer(parser, args, argv)
    except (ValueError, FileNotFoundError) as e:  # CheckpointError and WriteError are ValueErrors
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted before training started", file=sys.stderr)
        return 130
    from svpg.io import WriteError
    from svpg.rl.trainer import NonFiniteError, TrainingInterrupted
    from svpg.runs import RunFolderInUse

    cfg = trainer.config
    folders = " ".join(map(str, trainer.run_dirs))
    for note in trainer.notes:
        print(f"note: {note}")
    if args.resume:
        start = trainer.resumed_from[0].name if trainer.resumed_from else "the start"
        print(f"resuming {folders} from {start} (iteration {trainer.iteration} of {trainer.iterations})")
        if trainer.finished:
            print(
                f"nothing to do: {folders} finished {trainer.iterations} iterations; "
                f"give --iterations N (> {trainer.iterations}) or --total-steps to train further"
            )
            trainer.close()
            return 0
    else:
        print(f"run folder{'s' if len(trainer.run_dirs) > 1 else ''}: {folders}")
    seeds = f"{len(trainer.seeds)} seeds × " if len(trainer.seeds) > 1 else ""
    total = trainer.iterations * trainer.model.steps_per_update
    over = (
        f" ({total - cfg.total_steps:,} more than --total-steps {cfg.total_steps:,}: an iteration is "
        f"{trainer.model.steps_per_update:,} steps)"
        if cfg.total_steps and total != cfg.total_steps
        else ""
    )
    print(
        f"{trainer.seed_policy(0)}\n{trainer.iterations} iterations × {seeds}{cfg.num_particles} particles × "
        f"{trainer.model.envs_per_particle} envs × {trainer.model.steps_per_env} steps = {total:,} steps per seed "
        f"on {cfg.env_id}{over}"
    )
    if trainer.model.replay_buffer is not None:
        print(trainer.model.replay_buffer)
    resume_hint = f"{train_cmd} --resume {folders}"
    try:
        with trainer:
            trainer.train()
    except TrainingInterrupted as e:
        print(
            f"\n{e.signal_name}: stopped after iteration {e.iteration} and saved a checkpoint; "
            f"continue with: {resume_hint}",
            file=sys.stderr,
        )
        return e.exit_status
    except KeyboardInterrupt:
        print(
            f"\ninterrupted again: stopped without saving; the last checkpoint is intact; continue with: {resume_hint}",
            file=sys.stderr,
        )
        return 130
    except NonFiniteError as e:
        print(
            f"{prog}: error: {e}; nothing was saved over the last checkpoint. Start a new run with a smaller --lr "
            f"(or a larger --alpha)",
            file=sys.stderr,
        )
        return 1
    except RunFolderInUse as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except (WriteError, CheckpointError) as e:
        print(f"{prog}: error: {e}; once fixed, continue with: {resume_hint}", file=sys.stderr)
        return 2
    if cfg.eval_episodes:
        from svpg.rl.evaluation import evaluate_particles, format_table

        try:
            for k, (seed, run_dir) in enumerate(zip(trainer.seeds, trainer.run_dirs)):
                returns = evaluate_particles(
                    trainer.seed_policy(k),
                    cfg.env_id,
                    cfg.eval_episodes,
                    seed=int_seed(seed, "evaluation"),
                    max_episode_steps=trainer.model.horizon,
                    env_kwargs=cfg.env_kwargs,
                )
                print(
                    f"\nevaluation of {run_dir}: {cfg.eval_episodes} deterministic episodes per particle "
                    f"on {cfg.env_id}\n"
                )
                print(format_table(returns))
        except KeyboardInterrupt:
            print(
                f"\nevaluation interrupted; training finished and is saved: {evaluate_cmd} {trainer.run_dirs[0]}",
                file=sys.stderr,
            )
            return 130
    print(f"\nsaved to {folders} — evaluate with: {evaluate_cmd} {trainer.run_dirs[0]}")
    return 0
