#!/usr/bin/env python
"""Wall-clock of bandit agents on a Showdown problem or mushroom (targets: one agent's 50,000 rounds in
≤ 2 minutes on one CPU core on a Showdown problem, Covertype being the only one with 50,000 contexts or
more; ≤ 5 minutes on mushroom, where `bench/bandit_mushroom.py` is this script).

    python bench/bandit_showdown.py                                      # s2vgd on covertype, 50,000 rounds
    python bench/bandit_showdown.py --problem adult --rounds 45222 --agents s2vgd,badam
    python bench/bandit_showdown.py --rounds 2000 --train-steps 200 --batch-size 512   # the papers' schedule

Prints, per agent, the total wall-clock, the split between acting and training, the time per
training step (SVGD or Adam) and the run's regret (normalised by the uniform policy on the same
table). Not a test: timings depend on the machine and its load.
"""
from __future__ import annotations

import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from svpg.bandits import make_agent, make_problem, play  # noqa: E402
from svpg.cli import Parser  # noqa: E402
from svpg.runtime import DEFAULT_THREADS  # noqa: E402

#: seconds for 50,000 rounds of one agent on one core
TARGET_SECONDS = {"mushroom": 300}
SHOWDOWN_TARGET_SECONDS = 120


def main(prog: str = "python bench/bandit_showdown.py", description: str | None = __doc__,
         default_problem: str = "covertype") -> int:
    p = Parser(prog=prog, description=description)
    p.add_argument("--problem", default=default_problem, help="statlog | covertype | financial | adult | mushroom")
    p.add_argument("--data-dir", default="", help="data root (see svpg.datafiles)")
    p.add_argument("--agents", deprecated=("--method",), default="s2vgd",
                   help="comma-separated agent names (s2vgd, svgd, neural-greedy, bbb, vmg, kflow-diag, kflow-linear, badam, …)")
    p.add_argument("--rounds", type=int, default=50_000)
    p.add_argument("--num-particles", deprecated=("--particles",), dest="particles", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=DEFAULT_THREADS)
    p.add_argument("--train-every", type=int, default=50)
    p.add_argument("--train-steps", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.0,
                   help="learning rate (0: each agent's default, as in the CLI)")
    args = p.parse_args()

    problem = make_problem(args.problem, data_dir=args.data_dir)
    table = problem.table(args.rounds, args.seed)
    uniform = play(make_agent("uniform", problem.num_actions, problem.context_dim, seed=args.seed), table)
    ref = table.regret(uniform).sum()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
          f"{args.threads} thread(s); load average {os.getloadavg()[0]:.2f}")
    for name in [a.strip() for a in args.agents.split(",") if a.strip()]:
        agent = make_agent(name, problem.num_actions, problem.context_dim, seed=args.seed,
                           num_particles=args.particles, train_every=args.train_every, train_steps=args.train_steps,
                           batch_size=args.batch_size, **({"lr": args.lr, "variational_lr": args.lr} if args.lr else {}))
        train_time = [0.0]
        inner_train = getattr(agent, "train", None)

        def timed_train(inner=inner_train, clock=train_time):
            start = time.perf_counter()
            out = inner()
            clock[0] += time.perf_counter() - start
            return out

        if inner_train is not None:
            agent.train = timed_train
        start = time.perf_counter()
        actions = play(agent, table, threads=args.threads)
        total = time.perf_counter() - start
        regret = table.regret(actions).sum()
        steps = getattr(agent, "trainings", 0) * args.train_steps

        print(f"agent: {agent!r}")
        print(f"{args.problem}, {args.rounds} rounds: wall-clock {total:.1f} s ({args.rounds / total:.0f} rounds/s); "
              f"training {train_time[0]:.1f} s in {steps} steps ({1e3 * train_time[0] / max(steps, 1):.2f} ms/step), "
              f"acting and bookkeeping {total - train_time[0]:.1f} s")
        print(f"cumulative regret {regret:.0f} (uniform {ref:.0f}); normalised regret {100 * regret / ref:.2f} (uniform = 100)")
        target = TARGET_SECONDS.get(args.problem, SHOWDOWN_TARGET_SECONDS)
        print(f"50,000 rounds: {total * 50_000 / args.rounds:.0f} s; target ≤ {target} s "
              f"{'met' if total * 50_000 / args.rounds <= target else 'NOT met'}"
              + ("" if args.rounds == 50_000 else " (extrapolated)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
