#!/usr/bin/env python
"""The off-policy estimator's defaults on tuning seeds: svpg.SVPG(estimator="sac", **options) per seed.

    python bench/sac_defaults.py --env-id Pendulum-v1 --total-steps 30000 --seeds 100-104 --jobs 2 \
        --out bench/results/sac_defaults_pendulum.csv
    python bench/sac_defaults.py --options '{"learning_starts": 10000}' --seeds 100-104   # a candidate

Every (options, seed) trains for ``--total-steps`` environment steps (all particles' steps count) with the
estimator's defaults and ``--options`` on top, then scores the particle with the highest return in the
last iteration (chosen on training returns) by its deterministic return on 10 fresh episodes, and the
mean over particles. Rows are appended to ``--out`` as runs finish; (options, seed) pairs already there
are skipped. Prints mean ± s.e. over seeds per options.
"""

from __future__ import annotations

import csv
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from svpg.cli import Parser
from svpg.io import append_csv
from svpg.runs import describe_machine, source_commit
from svpg.stats import cell, convention, markdown_table, parse_range_list

EVAL_EPISODES, EVAL_SEED = 10, 12345  # the same fresh episodes for every run


def run(env_id: str, options: str, seed: int, steps: int) -> dict:
    import torch

    torch.set_num_threads(1)
    import svpg
    from svpg.rl.evaluation import evaluate_particles

    t0 = time.perf_counter()
    model = svpg.SVPG(env_id, estimator="sac", seed=seed, verbose=0, threads=1, **json.loads(options))
    model.learn(steps)
    returns = evaluate_particles(model.policy, env_id, EVAL_EPISODES, seed=EVAL_SEED, deterministic=True).mean(1)
    last = model.scalars[0]
    return {
        "env_id": env_id,
        "options": options,
        "seed": seed,
        "steps": model.num_timesteps,
        "train_best": last["rollout/ep_rew_max"],
        "train_mean": last["rollout/ep_rew_mean"],
        "eval_best": float(returns[model.policy.particle]),
        "eval_mean": float(returns.mean()),
        "seconds": round(time.perf_counter() - t0, 1),
        "machine": describe_machine(),
        "commit": source_commit(),
    }


def main() -> None:
    p = Parser(prog="python bench/sac_defaults.py", description=__doc__)
    p.add_argument("--env-id", default="Pendulum-v1")
    p.add_argument("--total-steps", type=int, default=30_000)
    p.add_argument("--seeds", default="100-104", help="tuning seeds, e.g. 100-104")
    p.add_argument("--options", default="{}", help="svpg.SVPG options on top of sac's defaults, as a JSON object")
    p.add_argument("--jobs", type=int, default=os.cpu_count())
    p.add_argument("--out", default="sac_defaults.csv")
    args = p.parse_args()
    options = json.dumps(json.loads(args.options), sort_keys=True)
    out = Path(args.out)
    done = set()
    if out.exists():
        done = {(r["env_id"], r["options"], int(r["seed"])) for r in csv.DictReader(open(out))}
    todo = [s for s in parse_range_list(args.seeds) if (args.env_id, options, s) not in done]
    with ProcessPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(run, args.env_id, options, s, args.total_steps) for s in todo]
        for f in as_completed(futures):
            row = f.result()
            append_csv(out, [row])
            print(row, flush=True)
    with open(out) as fh:
        rows = [r for r in csv.DictReader(fh) if r["env_id"] == args.env_id]
    columns = ["eval_best", "eval_mean", "train_best", "seconds"]
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(r["options"], []).append(r)
    print(f"\n({convention('seeds')})\n")
    print(
        markdown_table(
            ["options", "seeds", *columns],
            [[name, len(g), *(cell([float(r[c]) for r in g]) for c in columns)] for name, g in groups.items()],
        )
    )


if __name__ == "__main__":
    main()
