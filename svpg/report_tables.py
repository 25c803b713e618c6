"""The registered results tables of ``python -m svpg.report``: name → document, result file, formatter.

A table whose runs are in its result file is formatted from them. A table whose runs were lost keeps its
layout here (its labels and the papers' published figures, quoted from their tables) and says
*not re-measured* in the first measured cell of every row until its units are gathered into the file.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from svpg.report import NOT_MEASURED, ReportError, Table, doc_number, register, render_table

BENCHMARK_FILE = "bench/results/benchmark_results.csv"
VM = "on the 2-core VM"


# -- RL: python -m svpg.rl.benchmark (docs/benchmarks.md) -----------------------------------------------
def _benchmark_rows(rows: list[dict]) -> list[dict]:
    ints, floats = ("env_steps", "seed", "eval_episodes"), ("final", "final_particle_mean", "wall_s")
    return [{**r, **{k: int(r[k]) for k in ints if k in r}, **{k: float(r[k]) for k in floats if k in r}} for r in rows]


def _core_hours(rows: list[dict]) -> str:
    hours = sum(float(r["wall_s"]) for r in rows) / 3600
    return f"{len(rows)} runs, {hours:.1f} core-hours of training {VM}"


def _benchmark_task(task: str, marks: dict[str, str] | None = None):
    """The per-task table of docs/benchmarks.md: :func:`svpg.rl.benchmark.task_table`'s cells; ``marks``
    appends a footnote mark to an agent's wall-clock cell."""

    def build(rows: list[dict]) -> str:
        from svpg.rl.benchmark import task_table

        header, table = task_table(_benchmark_rows(rows), task)
        wall = header.index("wall-clock per run (min)")
        cells = []
        for row in table:
            row = [doc_number(c) if isinstance(c, str) else c for c in row]
            row[wall] = f"{row[wall]}{(marks or {}).get(row[0], '')}"
            cells.append(row)
        return render_table(header, cells)

    return build


for _task, _slug, _marks in (
    ("InvertedDoublePendulum-v5", "idp", {"a2c": "¹"}),
    ("Hopper-v5", "hopper", {"a2c": "¹"}),
    ("HalfCheetah-v5", "halfcheetah", None),
    ("MountainCarContinuous-v0", "mcc", None),
    ("Pendulum-v1", "pendulum", None),
):
    register(
        Table(
            name=f"benchmark-{_slug}",
            doc="docs/benchmarks.md",
            source=BENCHMARK_FILE,
            build=_benchmark_task(_task, _marks),
            command=f"python -m svpg.rl.benchmark --tasks {_task} --seeds 0-4 --out runs/benchmark && "
            f"python -m svpg.report gather runs/benchmark --into {BENCHMARK_FILE}",
            compute=_core_hours,
            select={"task": _task},
        )
    )


def _benchmark_summary(rows: list[dict]) -> str:
    from svpg.rl.benchmark import SOLVED, TASK_BUDGETS, task_table

    results = _benchmark_rows(rows)
    header = [
        "task, environment steps",
        "svpg S²VGD",
        "SB3 PPO (rl-zoo3)",
        "S²VGD − PPO (95 % CI)",
        "SB3 A2C (rl-zoo3)",
        "wall-clock per run, S²VGD / PPO (min)",
    ]
    table = []
    for task, budget in TASK_BUDGETS.items():
        head, cells = task_table(results, task)
        by_agent = {row[0]: dict(zip(head, row)) for row in cells}
        if not by_agent:
            continue

        def final(agent: str, by_agent=by_agent, task=task) -> str:
            if agent not in by_agent:
                return NOT_MEASURED
            text = doc_number(by_agent[agent]["final return"])
            return f"{text}, solved {by_agent[agent]['solved']}" if task in SOLVED else text

        def wall(agent: str, by_agent=by_agent) -> str:
            return by_agent[agent]["wall-clock per run (min)"].split(" ±")[0] if agent in by_agent else "–"

        steps = "1 M" if budget == 1_000_000 else f"{budget:,}"
        diff = by_agent.get("s2vgd", {}).get("− PPO (95 % CI)", "–")
        table.append(
            [
                f"{task}, {steps}",
                final("s2vgd"),
                final("ppo"),
                doc_number(diff),
                final("a2c"),
                f"{wall('s2vgd')} / {wall('ppo')}",
            ]
        )
    return render_table(header, table)


register(
    Table(
        name="benchmark-summary",
        doc="docs/benchmarks.md",
        source=BENCHMARK_FILE,
        build=_benchmark_summary,
        command="python -m svpg.rl.benchmark --tasks all --seeds 0-4 --out runs/benchmark && "
        f"python -m svpg.report gather runs/benchmark --into {BENCHMARK_FILE}",
        compute=_core_hours,
    )
)


# -- RL: the defaults against SB3 PPO's defaults (docs/results.md) ---------------------------------------
def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _defaults_row(label: str, rows: list[dict], solved: float | None) -> list[str]:
    from svpg.stats import cell, paired_difference

    own = {int(r["seed"]): r for r in rows if r["candidate"] == "defaults"}
    ppo = {int(r["seed"]): r for r in rows if r["candidate"] == "sb3-ppo"}
    if not own:
        return [label, NOT_MEASURED, "", "", "", ""]

    def score(by_seed: dict, key: str = "best_particle") -> str:
        values = [float(r[key]) for r in by_seed.values()]
        text = doc_number(cell(values))
        if solved is not None:
            text += f" ({sum(v >= solved for v in values)} of {len(values)}{' ≥ 90' if by_seed is own else ''})"
        return text

    best = score(own)
    particles = doc_number(cell([float(r["mean_particles"]) for r in own.values()]))
    if ppo:
        pairs, mean, lo, hi = paired_difference(
            {s: float(r["best_particle"]) for s, r in own.items()},
            {s: float(r["best_particle"]) for s, r in ppo.items()},
        )
        diff = doc_number(f"{mean:+.1f} [{lo:+.1f}, {hi:+.1f}]")
        ppo_cell = score(ppo)
        ppo_wall = f"{_mean([float(r['seconds']) for r in ppo.values()]):.0f} s"
    else:
        diff = ppo_cell = ppo_wall = "–"
    wall = f"{_mean([float(r['seconds']) for r in own.values()]):.0f} s / {ppo_wall}"
    return [label, best, particles, ppo_cell, diff, wall]


DEFAULTS_TASKS = (  # (env id, the row's label, the "solved" threshold)
    ("Pendulum-v1", "Pendulum-v1 (200k)", None),
    ("MountainCarContinuous-v0", "MountainCarContinuous-v0 (200k)", 90.0),
    ("CartPole-v1", "CartPole-v1 (100k)", None),
)


def _defaults_table(rows: list[dict]) -> str:
    header = [
        "task (steps)",
        "svpg best particle",
        "svpg mean over particles",
        "SB3 PPO",
        "svpg − PPO, paired [95 % interval]",
        "wall-clock per run, svpg / PPO",
    ]
    table = [
        _defaults_row(label, [r for r in rows if r["env_id"] == env], solved) for env, label, solved in DEFAULTS_TASKS
    ]
    return render_table(header, table)


register(
    Table(
        name="defaults-vs-sb3-ppo",
        doc="docs/results.md",
        source="bench/results/defaults_vs_sb3ppo_*.csv",
        build=_defaults_table,
        command="python bench/generic_defaults.py --env-id Pendulum-v1 --total-steps 200000 --seeds 0-4 "
        "--candidates defaults,sb3-ppo --out bench/results/defaults_vs_sb3ppo_pendulum.csv",
        compute=lambda rows: (
            f"{len(rows)} runs, {sum(float(r['seconds']) for r in rows) / 3600:.1f} core-hours "
            "on the 16-core Xeon host; the same with MountainCarContinuous-v0 and CartPole-v1 (100000 steps, "
            "--candidates defaults)"
        ),
    )
)


# -- the tables whose runs were lost: their layout, the papers' figures, "not re-measured" ------------------
M = None  # a measured cell in a layout


def _layout(header: Sequence[str], rows: Sequence[Sequence[str | None]], align: str | None = None):
    """A table kept as its layout: label and published cells as given, measured cells (:data:`M`) from
    the result file. Until its units are gathered, a row's first measured cell says *not re-measured*
    and its others are empty; a file with units for it needs a formatter here."""

    def build(rows_of_file: list[dict]) -> str:
        if rows_of_file:
            raise ReportError(
                f"{len(rows_of_file)} rows are in this table's result file, but the table has no formatter for them "
                "yet: add one to svpg/report_tables.py"
            )
        out = []
        for row in rows:
            first = next((i for i, c in enumerate(row) if c is M), None)
            out.append([NOT_MEASURED if i == first else ("" if c is M else c) for i, c in enumerate(row)])
        return render_table(header, out, align)

    return build


def _mean_se(values: Sequence[float], digits: int) -> str:  # pragma: no cover (formatters to come)
    from svpg.stats import format_mean_se, mean_se

    mean, se = mean_se(values)
    return format_mean_se(mean, se if math.isfinite(se) else float("nan"), digits)
