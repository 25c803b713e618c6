"""The registered results tables of ``python -m svpg.report``: name → document, result file, formatter.

Every table is formatted from the rows of its result file: its labels and the papers' published figures (quoted
from their tables) are kept here, and a row whose units are not in the file says *not re-measured* (in its
first measured cell, the others empty, when none of its cells has units).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Sequence

from svpg.report import (
    NOT_MEASURED,
    PAIRS,
    Figure,
    ReportError,
    Summary,
    Table,
    doc_number,
    quoted_cells,
    register,
    render_table,
    rl_options,
)
from svpg.rl.config import PAPER_ESTIMATORS
from svpg.stats import counted

BENCHMARK_FILE = "bench/results/benchmark_results.csv"
OFF_POLICY_FILE = "bench/results/benchmark_off_policy.csv"
SPACES_FILE = "bench/results/benchmark_spaces.csv"
VM = "on the 2-core VM"
#: what a row of a table whose runs have not been made yet says instead of a number
NOT_YET = "not measured yet"


# -- RL: python -m svpg.studies.benchmark (docs/benchmarks.md) -----------------------------------------------
def _benchmark_rows(rows: list[dict]) -> list[dict]:
    """The result file's rows with numbers as numbers (an empty cell, e.g. the AUC of a row gathered before
    runs recorded it, is NaN)."""
    ints, floats = ("env_steps", "seed", "eval_episodes"), ("final", "final_particle_mean", "wall_s", "auc")
    return [
        {
            **r,
            **{k: int(r[k]) for k in ints if k in r},
            **{k: float(r[k]) if r[k] not in ("", None) else float("nan") for k in floats if k in r},
        }
        for r in rows
    ]


def _core_hours(rows: list[dict], planned: int = 0) -> str:
    """The runs' training hours (of how many planned, while some are missing); where they ran on more than
    one machine, which agents ran where, since their wall-clock then compares only within a machine."""
    runs = f"{len(rows)} of {planned} runs" if len(rows) < planned else counted(len(rows), "run")
    hours = sum(float(r["wall_s"]) for r in rows) / 3600
    agents_on: dict[str, set[str]] = {}
    for r in rows:
        agents_on.setdefault(r.get("machine") or "an unrecorded machine", set()).add(r.get("agent", "?"))
    if len(agents_on) == 1:
        return f"{runs}, {hours:.1f} core-hours of training {VM}"
    where = "; ".join(f"{', '.join(sorted(agents))} on {machine}" for machine, agents in sorted(agents_on.items()))
    return f"{runs}, {hours:.1f} core-hours of training: {where}; wall-clock compares within one machine"


def _run_hours(how: str, planned: int):
    """A screen's compute: its runs' wall-clock hours (``seconds`` of bench scripts' rows, ``wall_s`` of the
    benchmark's) and how they ran beside each other; the planned count while none is in."""

    def compute(rows: list[dict]) -> str:
        if not rows:
            return f"{planned} runs, {NOT_YET}"
        hours = sum(float(r.get("seconds") or r.get("wall_s") or 0) for r in rows) / 3600
        return f"{counted(len(rows), 'run')}, {hours:.1f} hours of run time, {how}"

    return compute


def _doc_cell(text: str, seeds: int) -> str:
    """A benchmark table's cell as the documents print it (:func:`doc_number`); a paired difference over fewer
    seeds than its row's ``seeds`` (a reference agent still being measured) says how many paired."""
    pairs = PAIRS.search(text)
    if pairs and int(pairs[1]) < seeds:
        return f"{doc_number(text)} ({pairs[1]} of {seeds} seeds paired)"
    return doc_number(text)


def _doc_row(row: list) -> list:
    """A row of :func:`svpg.studies.benchmark.task_table` (agent, seeds, …) as the documents print it."""
    return [_doc_cell(c, row[1]) if isinstance(c, str) else c for c in row]


def _benchmark_task(task: str, marks: dict[str, str] | None = None, expected: Sequence[str] = ()):
    """The per-task table of docs/benchmarks.md: :func:`svpg.studies.benchmark.task_table`'s cells; ``marks``
    appends a footnote mark to an agent's wall-clock cell; an ``expected`` agent without runs says so."""

    def build(rows: list[dict]) -> str:
        from svpg.studies.benchmark import task_table

        header, table = task_table(_benchmark_rows(rows), task)
        wall = header.index("wall-clock per run (min)")
        cells = []
        for row in table:
            row = _doc_row(row)
            row[wall] = f"{row[wall]}{(marks or {}).get(row[0], '')}"
            cells.append(row)
        done = {row[0] for row in table}
        cells += [[agent, NOT_YET, *[""] * (len(header) - 2)] for agent in expected if agent not in done]
        return render_table(header, cells)

    return build


def _task_compute(expected_runs: int):
    return lambda rows: _core_hours(rows, expected_runs) if rows else f"{expected_runs} runs, {NOT_YET}"


for _task, _slug, _marks, _agents in (
    ("InvertedDoublePendulum-v5", "idp", {"a2c": "¹"}, ""),
    ("Hopper-v5", "hopper", {"a2c": "¹"}, ""),
    ("HalfCheetah-v5", "halfcheetah", None, ""),
    ("MountainCarContinuous-v0", "mcc", None, ""),
    ("Pendulum-v1", "pendulum", None, ""),
    ("Walker2d-v5", "walker2d", None, "s2vgd,ppo"),
    ("Ant-v5", "ant", None, "s2vgd,ppo"),
):
    register(
        Table(
            name=f"benchmark-{_slug}",
            doc="docs/benchmarks.md",
            source=BENCHMARK_FILE,
            build=_benchmark_task(_task, _marks, _agents.split(",") if _agents else ()),
            command=f"python -m svpg.studies.benchmark --tasks {_task} "
            f"{f'--agents {_agents} ' if _agents else ''}--seeds 0-4 --out runs/benchmark && "
            f"python -m svpg.report gather runs/benchmark --into {BENCHMARK_FILE}",
            compute=_task_compute(5 * len(_agents.split(",")) if _agents else 20),
            select={"task": _task},
        )
    )


def _curves_of(tasks: Sequence[str]):
    """The rows of a curves figure: each reported run (seeds 0–99, no options) of ``tasks`` whose row holds its
    training curve (rows gathered before the gather recorded curves have none), as task, agent, seed, curve."""

    def pick(rows: list[dict]) -> list[dict]:
        return [
            {"task": r["task"], "agent": r["agent"], "seed": int(r["seed"]), "curve": json.loads(r["curve"])}
            for r in rows
            if r["task"] in tasks and r.get("curve") and not r.get("options") and int(r["seed"]) < 100
        ]

    return pick


def _agent_label(agent: str) -> str:
    """An agent as the curves' legend names it: ``svpg s2vgd``, ``SB3 PPO``."""
    from svpg.studies.benchmark import SVPG_AGENTS

    return f"svpg {agent}" if agent in SVPG_AGENTS else f"SB3 {agent.upper()}"


def _draw_curves(rows: list[dict], path, metadata: dict) -> None:
    """:func:`svpg.studies.benchmark.plot` of the rows' curves (a null return: no episode finished yet)."""
    from svpg.studies.benchmark import plot

    curves = [
        {"task": r["task"], "agent": r["agent"], "seed": r["seed"], "total_steps": steps,
         "return": math.nan if ret is None else ret}
        for r in rows
        for steps, ret, _ in r["curve"]
    ]  # fmt: skip
    plot(curves, path, metadata)


def _curves_alt(runs: list[dict]) -> str:
    """A curves figure's alt text: each task's agents and seeds (what the image shows)."""
    seeds: dict[str, dict[str, list[int]]] = {}
    for r in runs:
        seeds.setdefault(r["task"], {}).setdefault(r["agent"], []).append(r["seed"])
    shown = "; ".join(
        f"{task}: " + ", ".join(f"{_agent_label(a)} {counted(len(s), 'seed')}" for a, s in agents.items())
        for task, agents in seeds.items()
    )
    return f"Training return against environment steps, mean ± s.e. over seeds ({shown})"


def _curves_figure(tasks: Sequence[str], image: str, what: str):
    """A curves figure's table: ``not measured yet`` while no run of the tasks has a curve, then the image."""
    pick = _curves_of(tasks)
    figure = Figure(image=image, alt=_curves_alt, rows=pick, draw=_draw_curves)
    return (lambda rows: "" if pick(rows) else f"Curves of {what}: {NOT_YET}.\n"), figure


for _name, _tasks, _image, _what, _source, _out in (
    ("benchmark-walker2d-ant-curves", ("Walker2d-v5", "Ant-v5"), "docs/img/benchmark-walker2d-ant.png",
     "Walker2d-v5 and Ant-v5", BENCHMARK_FILE, "runs/benchmark"),
    ("benchmark-off-policy-curves", ("Hopper-v5", "HalfCheetah-v5", "Walker2d-v5"), "docs/img/benchmark-off-policy.png",
     "the off-policy table", OFF_POLICY_FILE, "runs/benchmark-off-policy"),
):  # fmt: skip
    _build, _figure = _curves_figure(_tasks, _image, _what)
    register(
        Table(
            name=_name,
            doc="docs/benchmarks.md",
            source=_source,
            build=_build,
            first="the runs of the tables above",
            command=f"python -m svpg.report gather {_out} --into {_source}",
            compute="each run's training curve, recorded in its row",
            figure=_figure,
        )
    )


def _benchmark_summary(rows: list[dict]) -> str:
    from svpg.studies.benchmark import SOLVED, TASK_BUDGETS, machines_differ, task_table, wall_clock_cell

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
        if "s2vgd" not in by_agent or "ppo" not in by_agent:  # a task joins the summary with its comparison
            continue

        def final(agent: str, by_agent=by_agent, task=task) -> str:
            if agent not in by_agent:  # not part of the task's comparison (A2C on Walker2d-v5 and Ant-v5)
                return "–"
            text = doc_number(by_agent[agent]["final return"])
            return f"{text}, solved {by_agent[agent]['solved']}" if task in SOLVED else text

        # mean minutes per run, each machine named only where S²VGD's and PPO's runs used different ones
        pair = [r for r in results if r["task"] == task and r["agent"] in ("s2vgd", "ppo")]
        walls = [
            wall_clock_cell([r for r in pair if r["agent"] == agent], machines_differ(pair), spread=False)
            for agent in ("s2vgd", "ppo")
        ]

        steps = "1 M" if budget == 1_000_000 else f"{budget:,}"
        diff = by_agent.get("s2vgd", {}).get("− PPO (95 % CI)", "–")
        table.append(
            [
                f"{task}, {steps}",
                final("s2vgd"),
                final("ppo"),
                _doc_cell(diff, by_agent["s2vgd"]["seeds"]),
                final("a2c"),
                " / ".join(walls),
            ]
        )
    return render_table(header, table)


register(
    Table(
        name="benchmark-summary",
        doc="docs/benchmarks.md",
        source=BENCHMARK_FILE,
        build=_benchmark_summary,
        command="python -m svpg.studies.benchmark --tasks all --seeds 0-4 --out runs/benchmark && "
        f"python -m svpg.report gather runs/benchmark --into {BENCHMARK_FILE}",
        compute=_core_hours,
    )
)


SCREEN_FILE = "bench/results/halfcheetah_screen.csv"
#: the on-policy HalfCheetah-v5 screen's candidates: svpg options on top of the preset → what each tests
SCREEN_CANDIDATES = {
    "": "none (the defaults)",
    '{"ppo_epochs": 20, "ppo_minibatches": 64}': "4 × the SVGD steps",
    '{"hidden": [256, 256]}': "PPO's network width",
    '{"gamma": 0.98}': "PPO's discount (γ = 0.98)",
    '{"log_std_init": -2.0}': "PPO's initial log σ (−2)",
    '{"hidden": [256, 256], "log_std_init": -2.0}': "initial log σ −2 and PPO's width",
    '{"log_std_init": -1.0}': "initial log σ −1",
}


def _screen(candidates: dict[str, str], tasks: Sequence[str]):
    """A screen of S²VGD options on tuning seeds (docs/benchmarks.md): one row per task and candidate
    (mean ± s.e. over seeds), a candidate without runs says so; rl-zoo3's PPO on the same seeds and budget,
    where the file has it, closes each task's rows."""

    def build(rows: list[dict]) -> str:
        import json

        from svpg.rl.config import SVPGConfig, load_preset
        from svpg.stats import cell

        results = _benchmark_rows(rows)
        header = [
            "options on top of the defaults",
            "seeds",
            "env steps",
            "final return",
            "mean over particles",
            "AUC (mean training return)",
            "wall-clock per run (min)",
            "policy network, SVGD steps",
        ]
        if len(tasks) > 1:
            header.insert(0, "task")
        table = []
        for task in tasks:
            first = [task] if len(tasks) > 1 else []
            preset = {k: v for k, v in load_preset(task).items() if not k.startswith("_")}
            for options, label in candidates.items():
                own = [
                    r
                    for r in results
                    if r["task"] == task and r["agent"] == "s2vgd" and r.get("options", "") == options
                ]
                if not own:
                    table.append([*first, label, NOT_YET, *[""] * (len(header) - 2 - len(first))])
                    continue
                config = SVPGConfig(**{**preset, **(json.loads(options) if options else {})})
                steps = max(r["env_steps"] for r in own)
                svgd_steps = steps // (config.num_particles * config.samples_per_particle) * config.ppo_epochs
                auc = [r["auc"] for r in own if r["auc"] == r["auc"]]
                table.append(
                    [
                        *first,
                        label,
                        ", ".join(str(r["seed"]) for r in sorted(own, key=lambda r: r["seed"])),
                        f"{steps:,}",
                        doc_number(cell([r["final"] for r in own])),
                        doc_number(cell([r["final_particle_mean"] for r in own])),
                        doc_number(cell(auc)) if auc else "–",
                        doc_number(cell([r["wall_s"] / 60 for r in own], digits=2)),
                        f"{' × '.join(map(str, config.hidden))} tanh, {svgd_steps * config.ppo_minibatches:,}",
                    ]
                )
            ppo = [r for r in results if r["task"] == task and r["agent"] == "ppo"]
            if ppo:
                from svpg.studies.benchmark import training_shape

                steps = max(r["env_steps"] for r in ppo)
                table.append(
                    [
                        *first,
                        "SB3 PPO (rl-zoo3), for reference",
                        ", ".join(str(r["seed"]) for r in sorted(ppo, key=lambda r: r["seed"])),
                        f"{steps:,}",
                        doc_number(cell([r["final"] for r in ppo])),
                        "–",
                        doc_number(cell([r["auc"] for r in ppo])),
                        doc_number(cell([r["wall_s"] / 60 for r in ppo], digits=2)),
                        "{}, {:,}".format(*training_shape("ppo", task, steps)),
                    ]
                )
        return render_table(header, table, "l" * (len(header) - 7) + "r" * 7)

    return build


register(
    Table(
        name="halfcheetah-screen",
        doc="docs/benchmarks.md",
        source=SCREEN_FILE,
        build=_screen(SCREEN_CANDIDATES, ["HalfCheetah-v5"]),
        command="python -m svpg.studies.benchmark --tasks HalfCheetah-v5 --agents s2vgd --total-steps 300000 "
        "--seeds 100-101 --out runs/cheetah-tuning/<candidate> --svpg-options '<options>' && "
        f"python -m svpg.report gather runs/cheetah-tuning/* --into {SCREEN_FILE}",
        note="for each candidate (and --agents ppo for PPO's rows)",
        compute=_task_compute(8),
    )
)


A2C_SCREEN_FILE = "bench/results/a2c_halfcheetah_screen.csv"
#: SB3 A2C on HalfCheetah-v5 (tuning seeds): --sb3-options on top of rl-zoo3's entry → what each tests
A2C_SCREEN_CANDIDATES = {
    "": "rl-zoo3's settings (observations and rewards normalised)",
    '{"normalize": {"norm_reward": false}}': "rewards not normalised (observations still)",
}


def _a2c_screen_table(rows: list[dict]) -> str:
    """Each setting's final return and AUC, mean ± s.e. over seeds, and its paired difference to rl-zoo3's."""
    from svpg.stats import cell, format_difference, paired_difference

    def by_seed(options: str, key: str) -> dict[int, float]:
        return {int(r["seed"]): float(r[key]) for r in rows if (r.get("options") or "") == options}

    header = ["setting", "seeds", "final return", "− rl-zoo3's (95 % CI)", "AUC (mean training return)"]
    table = []
    for options, label in A2C_SCREEN_CANDIDATES.items():
        final, auc = by_seed(options, "final"), by_seed(options, "auc")
        if not final:
            table.append([label, NOT_YET, "", "", ""])
            continue
        difference = format_difference(*paired_difference(final, by_seed("", "final"))) if options else "–"
        table.append(
            [
                label,
                ", ".join(str(k) for k in sorted(final)),
                doc_number(cell(final.values())),
                doc_number(difference),
                doc_number(cell(auc.values())),
            ]
        )
    return render_table(header, table, "lrrrr")


register(
    Table(
        name="a2c-halfcheetah-screen",
        doc="docs/benchmarks.md",
        source=A2C_SCREEN_FILE,
        build=_a2c_screen_table,
        command="python -m svpg.studies.benchmark --tasks HalfCheetah-v5 --agents a2c --seeds 100-101 --out "
        "runs/a2c-cheetah/<setting> --sb3-options '<options>' && python -m svpg.report gather runs/a2c-cheetah/* "
        f"--into {A2C_SCREEN_FILE}",
        compute=_run_hours("up to four at a time on the 2-core VM", planned=4),
    )
)


MUJOCO_SCREEN_FILE = "bench/results/mujoco_screen.csv"
register(
    Table(
        name="mujoco-screen",
        doc="docs/benchmarks.md",
        source=MUJOCO_SCREEN_FILE,
        build=_screen(
            {
                "": "none (the defaults)",
                '{"log_std_init": -2.0}': "initial log σ −2",
                '{"log_std_init": -1.0}': "initial log σ −1",
            },
            ["Hopper-v5"],
        ),
        command="python -m svpg.studies.benchmark --tasks Hopper-v5 --agents s2vgd --seeds 100-101 "
        "--out runs/mujoco-tuning/<candidate> --svpg-options '<options>' && "
        f"python -m svpg.report gather runs/mujoco-tuning/* --into {MUJOCO_SCREEN_FILE}",
        compute=_core_hours,
    )
)


def _budget_table(name: str):
    """The table of ``--budget name`` in docs/benchmarks.md: one row per (task, agent) of the budget,
    :func:`svpg.studies.benchmark.task_table`'s cells (AUC and the paired differences against the budget's
    reference agent included); an agent without runs in the file says *not measured yet*."""

    def build(rows: list[dict]) -> str:
        return _budget_rows(rows, name)

    return build


def _budget_rows(rows: list[dict], name: str) -> str:
    from svpg.studies.benchmark import BUDGETS, task_table

    budget = BUDGETS[name]
    results = _benchmark_rows(rows)
    header: list[str] = []
    table = []
    for task in budget.tasks:
        head, cells = task_table(results, task, name)
        header = ["task", *head]
        by_agent = {row[0]: row for row in cells}
        for agent in budget.agents:
            if agent in by_agent:
                table.append([task, *_doc_row(by_agent[agent])])
            else:
                table.append([task, agent, NOT_YET, *[""] * (len(head) - 2)])
    return render_table(header, table, "ll" + "r" * (len(header) - 2))


def _budget_plan(name: str):
    """``--budget name``'s plan (imported here: the report imports no study at module level)."""
    from svpg.studies.benchmark import BUDGETS

    return BUDGETS[name]


def _budget_compute(name: str):
    return _task_compute(_budget_plan(name).planned_runs())


for _budget, _file in (("off-policy", OFF_POLICY_FILE), ("spaces", SPACES_FILE)):
    register(
        Table(
            name=f"benchmark-{_budget}",
            doc="docs/benchmarks.md",
            source=_file,
            build=_budget_table(_budget),
            command=" && ".join(_budget_plan(_budget).commands())
            + f" && python -m svpg.report gather runs/benchmark-{_budget} --into {_file}",
            compute=_budget_compute(_budget),
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


# -- RL: environment stepping, sync against async and EnvPool (docs/rl.md) ------------------------------------
VEC_ENV_FILE = "bench/results/vec_env.jsonl"


def _vec_env_table(rows: list[dict]) -> str:
    """bench/vec_env.py's latest run (the last rows sharing its load, machine and commit): env-steps/s per
    number of environments, sync and each other variant with its ratio to sync; ``learn`` rows are whole
    ``svpg.SVPG`` iterations."""
    if not rows:
        raise ReportError(f"{VEC_ENV_FILE}: no rows")
    stamp = ("machine", "commit", "load_start", "load_end")
    last = [r for r in rows if all(r[k] == rows[-1][k] for k in stamp)]
    variants = list(dict.fromkeys(r["variant"] for r in last if r["variant"] != "sync"))
    header = ["what is timed", "environments", "sync (steps/s)", *[f"{v} (steps/s, × sync)" for v in variants]]
    table = []
    for kind, n in dict.fromkeys((r["kind"], r["num_envs"]) for r in last):
        figures = {r["variant"]: r for r in last if r["kind"] == kind and r["num_envs"] == n}
        cells = [
            f"{figures[v]['steps_per_s']:,.0f} ({figures[v]['ratio_to_sync']:.2f}×)" if v in figures else "–"
            for v in variants
        ]
        what = "environment steps" if kind == "step" else "svpg.SVPG learn iterations (PPO, 4 particles)"
        table.append([what, str(n), f"{figures['sync']['steps_per_s']:,.0f}", *cells])
    return render_table(header, table, "lr" + "r" * (len(header) - 2))


def _vec_env_compute(rows: list[dict]) -> str:
    r = rows[-1]
    return f"about 2 minutes on the {r['machine']} with its other jobs paused, {r['cores']} cores, at {r['commit']}"


register(
    Table(
        name="vec-env",
        doc="docs/rl.md",
        source=VEC_ENV_FILE,
        build=_vec_env_table,
        command=f"python bench/vec_env.py --num-envs 8 16 32 64 --workers 2 --repeats 7 --learn --out {VEC_ENV_FILE}",
        compute=_vec_env_compute,
    )
)


# -- RL: the on-policy defaults' screen on tuning seeds (docs/rl.md) --------------------------------------------
GENERIC_DEFAULTS_FILES = "bench/results/generic_defaults_*.csv"
#: bench/generic_defaults.py's candidates (options on top of its BASE: the defaults with α = 1) → what each sets
GENERIC_CANDIDATES = {
    "base": "none (α = 1)",
    "alpha10": "α = 10",
    "alpha100": "α = 100 (the defaults)",
    "a1000": "α = 1000",
    "m2": "2 particles",
    "m8": "8 particles",
    "a100-m8": "α = 100, 8 particles",
    "lr1e-3": "learning rates 1e-3",
    "a100-lr1e-3": "α = 100, learning rates 1e-3",
    "lr1e-3-m8": "learning rates 1e-3, 8 particles",
    "gamma95": "γ = 0.95",
    "lr1e-3-gamma95": "learning rates 1e-3, γ = 0.95",
    "samples1024": "1024 samples per particle",
    "a100-s1024": "α = 100, 1024 samples per particle",
    "epochs5": "5 PPO epochs",
    "anneal": "learning rates annealed to 0",
    "svgd": "plain SVGD layers",
    "small": "25,10 networks",
    "mvg": "the eq. 14 prior",
    "norew": "no reward scaling",
}
GENERIC_TASKS = ("Pendulum-v1", "MountainCarContinuous-v0", "CartPole-v1")


def _generic_defaults_table(rows: list[dict]) -> str:
    """Each candidate's best particle and mean over particles per task (mean ± s.e. over the tuning seeds); a
    candidate not run on a task: –."""
    from svpg.stats import cell

    header = ["options on top of α = 1 and the other defaults"]
    for task in GENERIC_TASKS:
        header += [f"{task}: best particle", f"{task}: mean over particles"]
    table = []
    for name, label in GENERIC_CANDIDATES.items():
        line = [label]
        for task in GENERIC_TASKS:
            runs = [r for r in rows if r["env_id"] == task and r["candidate"] == name]
            for key in ("best_particle", "mean_particles"):
                line.append(doc_number(cell([float(r[key]) for r in runs])) if runs else "–")
        table.append(line)
    unknown = sorted({r["candidate"] for r in rows} - set(GENERIC_CANDIDATES) - {"defaults", "sb3-ppo"})
    if unknown:
        raise ReportError(
            f"{GENERIC_DEFAULTS_FILES}: candidates {', '.join(unknown)} have no label in GENERIC_CANDIDATES"
        )
    return render_table(header, table)


register(
    Table(
        name="generic-defaults-screen",
        doc="docs/rl.md",
        source=GENERIC_DEFAULTS_FILES,
        build=_generic_defaults_table,
        command="python bench/generic_defaults.py --env-id Pendulum-v1 --total-steps 200000 --seeds 100-104 "
        "--out bench/results/generic_defaults_pendulum.csv",
        note="(and likewise MountainCarContinuous-v0 and CartPole-v1 at 200,000 and 100,000 steps, --candidates "
        "as in their rows)",
        compute=lambda rows: (
            f"{len(rows)} runs, {sum(float(r['seconds']) for r in rows) / 3600:.1f} core-hours on the 16-core Xeon "
            "host of a GPU machine, several runs at a time"
        ),
    )
)


# -- RL: the off-policy estimator's defaults on tuning seeds (docs/rl.md) -------------------------------------
def _sac_defaults_table(rows: list[dict]) -> str:
    from svpg.stats import cell

    header = ["options on top of the defaults", "seeds", "best particle", "mean over particles", "seconds per run"]
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(r["options"], []).append(r)
    table = [
        [
            "none (the defaults)" if options == "{}" else f"`{options}`",
            ", ".join(sorted(r["seed"] for r in group)),
            doc_number(cell([float(r["eval_best"]) for r in group])),
            doc_number(cell([float(r["eval_mean"]) for r in group])),
            f"{sum(float(r['seconds']) for r in group) / len(group):.0f}",
        ]
        for options, group in groups.items()
    ]
    return render_table(header, table, "lrrrr")


#: the off-policy estimator's MuJoCo screen: bench/sac_defaults.py's rows and SB3 SAC on the same seeds and budget
SAC_HOPPER_CANDIDATES = {
    "{}": "none (the defaults: per-particle critics, one gradient step per particle per M environment steps)",
    '{"critics": "shared", "gradient_steps": -1}': "shared critics, one gradient step per environment step",
}


def _sac_hopper_table(rows: list[dict]) -> str:
    """svpg's candidates (rows with ``eval_best``) beside SB3 SAC's runs (benchmark rows: ``agent`` sac), with
    the paired difference of the best particle to SAC by seed."""
    from svpg.stats import cell, format_difference, paired_difference

    ours = [r for r in rows if "eval_best" in r]
    sac = {int(r["seed"]): float(r["final"]) for r in rows if r.get("agent") == "sac"}
    header = [
        "options on top of the defaults",
        "seeds",
        "best particle",
        "mean over particles",
        "last iteration's training returns: best, mean",
        "− SAC (95 % CI)",
        "seconds per run",
    ]
    table = []
    for options, label in SAC_HOPPER_CANDIDATES.items():
        group = [r for r in ours if r["options"] == options]
        if not group:
            table.append([label, NOT_YET, "", "", "", "", ""])
            continue
        best = {int(r["seed"]): float(r["eval_best"]) for r in group}
        table.append(
            [
                label,
                ", ".join(str(k) for k in sorted(best)),
                doc_number(cell(best.values())),
                doc_number(cell([float(r["eval_mean"]) for r in group])),
                doc_number(
                    f"{cell([float(r['train_best']) for r in group])}, {cell([float(r['train_mean']) for r in group])}"
                ),
                doc_number(format_difference(*paired_difference(best, sac))) if sac else "",
                f"{sum(float(r['seconds']) for r in group) / len(group):.0f}",
            ]
        )
    runs = [r for r in rows if r.get("agent") == "sac"]
    if runs:
        wall = sum(float(r["wall_s"]) for r in runs) / len(runs)
        seeds = ", ".join(str(k) for k in sorted(sac))
        table.append(["SB3 SAC (rl-zoo3's settings)", seeds, doc_number(cell(sac.values())), "", "", "", f"{wall:.0f}"])
    else:
        table.append(["SB3 SAC (rl-zoo3's settings)", NOT_YET, "", "", "", "", ""])
    return render_table(header, table, "lrrrrrr")


register(
    Table(
        name="sac-defaults-hopper",
        doc="docs/rl.md",
        source="bench/results/sac_defaults_hopper*.csv",
        build=_sac_hopper_table,
        command="python bench/sac_defaults.py --env-id Hopper-v5 --total-steps 100000 --seeds 100-101 --jobs 2 "
        "--options '<options>' --out bench/results/sac_defaults_hopper.csv && python -m svpg.studies.benchmark "
        "--budget off-policy --tasks Hopper-v5 --agents sac --seeds 100-101 --total-steps 100000 --out "
        "runs/sac-hopper-tuning && python -m svpg.report gather runs/sac-hopper-tuning --into "
        "bench/results/sac_defaults_hopper_sb3.csv",
        compute=_run_hours("two or three runs at a time on the 2-core VM", planned=6),
    )
)


register(
    Table(
        name="sac-defaults-pendulum",
        doc="docs/rl.md",
        source="bench/results/sac_defaults_pendulum.csv",
        build=_sac_defaults_table,
        command="python bench/sac_defaults.py --env-id Pendulum-v1 --total-steps 30000 --seeds 100-104 --jobs 2 "
        "--out bench/results/sac_defaults_pendulum.csv",
        compute=lambda rows: (
            f"{len(rows)} runs, {sum(float(r['seconds']) for r in rows) / 3600:.1f} core-hours on the 2-core VM "
            "beside other jobs"
        ),
    )
)


# -- bandits: train.py bandit, gathered by python -m svpg.report gather (docs/bandits.md) ------------------------
WHEEL_FILE = "bench/results/bandit_wheel.csv"
MUSHROOM_FILE = "bench/results/bandit_mushroom.csv"
SHOWDOWN_FILE = "bench/results/bandit_showdown.csv"
#: the wheel table's columns
WHEEL_DELTAS = (0.5, 0.7, 0.9, 0.95, 0.99)
#: the agents of the wheel table's two parts: normalised regret, then reward / optimal reward
WHEEL_REGRET_AGENTS = ("s2vgd", "svgd", "neural-greedy", "eps-greedy-0.01", "eps-greedy-0.03", "linucb", "bbb", "vmg",
                       "kflow-diag", "kflow-linear", "badam")  # fmt: skip
WHEEL_RATIO_AGENTS = ("s2vgd", "svgd", "bbb", "vmg", "kflow-diag", "kflow-linear", "badam", "uniform")
#: BADAM's Table 2 (Salas et al., arXiv:1811.03679): reward / optimal reward on the wheel, as printed there
WHEEL_PUBLISHED = [
    ["BADAM (their Table 2)", "0.76 ± 0.02", "0.74 ± 0.09", "0.83 ± 0.07", "0.34 ± 0.08", "0.59 ± 0.01"],
    ["BBB (their Table 2)", "0.97 ± 0.02", "0.95 ± 0.02", "0.93 ± 0.02", "0.41 ± 0.18", "0.58 ± 0.00"],
    ["Greedy (their Table 2)", "0.81 ± 0.17", "0.85 ± 0.15", "0.87 ± 0.09", "0.38 ± 0.13", "0.58 ± 0.00"],
    ["Uniform (their Table 2)", "0.22 ± 0.00", "0.23 ± 0.01", "0.28 ± 0.01", "0.35 ± 0.01", "0.58 ± 0.01"],
]
MUSHROOM_AGENTS = ("svgd", "kflow-linear", "kflow-diag", "s2vgd", "neural-greedy", "bbb", "vmg", "eps-greedy-0.01",
                   "badam", "eps-greedy-0.03", "linucb", "uniform")  # fmt: skip
#: the options of Financial on the tables' schedule, as the gather writes them
TABLES_SCHEDULE = '{"batch_size": 512, "train_steps": 200}'


def _number(value) -> float:
    return float(value) if value not in ("", None) else float("nan")


def _row_options(row: dict) -> dict:
    options = row.get("options") or {}
    return json.loads(options) if isinstance(options, str) else dict(options)


def _bandit_runs(rows: list[dict]) -> dict[tuple[str, int], dict]:
    """The rows as ``{(agent, seed): metrics}``, the per-seed results of :func:`svpg.bandits.compare.load_runs`."""
    from svpg.bandits.compare import METRICS

    return {(r["agent"], int(r["seed"])): {m: _number(r.get(m)) for m in METRICS} for r in rows}


def _bandit_compute(estimate: str):
    """The agent time the rows add up to (the estimate while there are none)."""

    def compute(rows: list[dict]) -> str:
        if not rows:
            return estimate
        seconds = sum(s for s in (_number(r.get("seconds")) for r in rows) if math.isfinite(s))
        time = f"{seconds / 3600:.1f} hours" if seconds >= 3600 else f"{seconds / 60:.0f} minutes"
        return f"{len(rows)} runs of an agent on a seed, {time} of agent time"

    return compute


def _wheel_delta(row: dict) -> float:
    """The δ a wheel row was played at: its column (a row gathered before the column: its options' δ, else the
    default)."""
    if row.get("delta") not in ("", None):
        return float(row["delta"])
    from svpg.bandits.cli import BanditConfig

    return float(_row_options(row).get("delta", BanditConfig.delta))


def _wheel_rows(rows: list[dict]) -> list[dict]:
    """The rows of the wheel table: runs with options other than δ (tuning runs) are not its."""
    return [r for r in rows if not set(_row_options(r)) - {"delta"}]


def _bandit_wheel(rows: list[dict]) -> str:
    """One column per δ: normalised regret (upper part) and reward / optimal reward (lower part), mean ± std over
    seeds as ``python -m svpg.compare --spread std`` prints them, then BADAM's Table 2. Runs with options other
    than δ are not the table's; a cell without runs says *not re-measured* (a row without any: its first cell)."""
    from svpg.bandits.compare import spread_cell

    by_delta: dict[float, list[dict]] = {}
    for r in _wheel_rows(rows):
        by_delta.setdefault(_wheel_delta(r), []).append(r)
    runs = {delta: _bandit_runs(group) for delta, group in by_delta.items()}

    def row(agent: str, metric: str, digits: int) -> list[str]:
        cells = []
        for delta in WHEEL_DELTAS:
            values = [v[metric] for (a, _), v in runs.get(delta, {}).items() if a == agent]
            cells.append(doc_number(spread_cell(values, "std", digits)) if values else NOT_MEASURED)
        return [agent, *cells] if set(cells) != {NOT_MEASURED} else [agent, NOT_MEASURED, *[""] * (len(cells) - 1)]

    table = [row(agent, "normalised_regret", 2) for agent in WHEEL_REGRET_AGENTS]
    table.append(["*reward / optimal reward*", *[""] * len(WHEEL_DELTAS)])
    table += [row(agent, "reward_ratio", 3) for agent in WHEEL_RATIO_AGENTS]
    table += WHEEL_PUBLISHED
    return render_table(["agent", *(f"δ = {d}" for d in WHEEL_DELTAS)], table)


def _bandit_mushroom(rows: list[dict]) -> str:
    """:func:`svpg.bandits.compare.agent_cells` per agent (mean ± std over seeds, paired difference to S²VGD)."""
    from svpg.bandits.compare import agent_cells

    runs = _bandit_runs(rows)
    seeds = sorted({s for _, s in runs})
    table = []
    for agent in MUSHROOM_AGENTS:
        cells = agent_cells(runs, agent, "s2vgd", seeds, "std")
        measured = [doc_number(c) for c in cells[1:]] if cells else [NOT_MEASURED, "", "", "", ""]
        table.append([agent, *measured])
    header = ["agent", "normalised regret (uniform = 100)", "reward / optimal reward", "minus S²VGD: mean [95 % CI]",
              "lower on", "s per run"]  # fmt: skip
    return render_table(header, table)


def _bandit_showdown(problem: str, agents: Sequence[str] | None = None, not_here: bool = True):
    """A Showdown data set's table (:mod:`svpg.bandits.showdown_table`): one row per agent (default: every one of
    the tables, in their order), the papers' figures for its posterior family beside it, and (``not_here``)
    their methods that svpg does not have."""

    def build(rows: list[dict]) -> str:
        from svpg.bandits.showdown_table import HEADER, ORDER, measured_cells, not_here_rows, published_cells

        runs = _bandit_runs(rows)
        table = []
        for agent in agents or ORDER:
            cells = measured_cells(runs, agent)
            measured = [doc_number(c) for c in cells] if cells else [NOT_MEASURED, "", "", "", ""]
            table.append([f"**{agent}**" if agent == "s2vgd" else agent, *measured, *published_cells(problem, agent)])
        if not_here:
            table += not_here_rows(problem, agents or ORDER)
        return render_table(HEADER, table)

    return build


register(
    Table(
        name="bandit-wheel",
        doc="docs/bandits.md",
        source=WHEEL_FILE,
        build=_bandit_wheel,
        first="the loop over δ above",
        command="python -m svpg.report gather runs/wheel-* --into bench/results/bandit_wheel.csv",
        compute=lambda rows: _bandit_compute("10 runs of 5 seeds, about 40 core-minutes")(_wheel_rows(rows)),
        select={"problem": "wheel", "rounds": 5000},
    )
)


register(
    Table(
        name="bandit-mushroom",
        doc="docs/bandits.md",
        source=MUSHROOM_FILE,
        build=_bandit_mushroom,
        first="the two commands above",
        command="python -m svpg.report gather runs/mushroom runs/mushroom-variational --into bench/results/bandit_mushroom.csv",
        compute=_bandit_compute("12 agents × 10 seeds, about 2.8 core-hours on the loaded 2-core VM"),
        select={"problem": "mushroom", "rounds": 50000, "options": ""},
    )
)


for _problem, _rounds, _seeds, _run, _estimate in (
    ("statlog", 43500, 5, "showdown-statlog-full", "about 30 minutes of agent time, an estimate"),
    ("covertype", 50000, 5, "showdown-covertype-full", "about 35 minutes of agent time, an estimate"),
    ("financial", 3713, 10, "showdown-financial", "about 10 minutes of agent time, an estimate"),
    ("adult", 45222, 5, "showdown-adult-full", "about 45 minutes of agent time, an estimate"),
):
    register(
        Table(
            name=f"bandit-showdown-{_problem}",
            doc="docs/bandits.md",
            source=SHOWDOWN_FILE,
            build=_bandit_showdown(_problem),
            command=f"python train.py bandit --problem {_problem} --rounds {_rounds} --num-seeds {_seeds} "
            f"--agents $AGENTS --run-name {_run} && python -m svpg.report gather runs/{_run} --into {SHOWDOWN_FILE}",
            compute=_bandit_compute(_estimate),
            select={"problem": _problem, "rounds": _rounds, "options": ""},  # our schedule: not the one below
        )
    )


register(
    Table(
        name="bandit-showdown-financial-tables",
        doc="docs/bandits.md",
        source=SHOWDOWN_FILE,
        build=_bandit_showdown("financial", ("s2vgd", "kflow-linear", "neural-greedy", "uniform"), not_here=False),
        first="the command above",
        command=f"python -m svpg.report gather runs/showdown-financial-tables --into {SHOWDOWN_FILE}",
        compute=_bandit_compute("about 20 minutes of agent time per seed, an estimate"),
        select={"problem": "financial", "rounds": 3713, "options": TABLES_SCHEDULE},
    )
)


# -- supervised: train.py supervised (docs/supervised.md) ---------------------------------------------------
UCI_FILE = "bench/results/supervised_uci.csv"
MNIST_FILE = "bench/results/supervised_mnist.csv"
FASHION_MNIST_FILE = "bench/results/supervised_fashion_mnist.csv"
#: the tables' names of the methods
METHOD_LABELS = {"s2vgd": "S²VGD (K = 1)", "svgd": "SVGD", "map": "MAP", "bbb": "BBB", "vmg": "VMG",
                 "kflow-linear": "K-Linear", "kflow-diag": "K-Diag", "badam": "BADAM"}  # fmt: skip
#: the columns of a gathered supervised row that are numbers
SUPERVISED_NUMBERS = ("rmse", "test_ll", "error", "nll", "ece", "epochs", "best_epoch", "seconds", "seconds_per_epoch")
#: the columns of a gathered classification row that hold a validation curve, [[epoch, value], …]
SUPERVISED_CURVES = ("val_log_likelihood", "val_error")


def _supervised_runs(rows: list[dict]) -> dict[str, dict[int, dict]]:
    """The rows as ``{method: {split: row}}``, numbers as numbers (an empty cell: NaN; a curve: its list), the
    shape of :func:`svpg.supervised.compare.load_runs`."""
    runs: dict[str, dict[int, dict]] = {}
    for r in rows:
        row = {**r, **{k: _number(r.get(k)) for k in SUPERVISED_NUMBERS}}
        for k in SUPERVISED_CURVES:
            curve = r.get(k) or []
            row[k] = json.loads(curve) if isinstance(curve, str) else curve
        runs.setdefault(r["method"], {})[int(r["split"])] = row
    return runs


def _measured(label: Sequence[str], cells: Sequence[str | None]) -> list[str]:
    """A table row: a cell without units (None) says *not re-measured*; a row without any says it in its first
    measured cell, the others empty (the layout of a table before its runs were gathered)."""
    if all(c is None for c in cells):
        return [*label, NOT_MEASURED, *[""] * (len(cells) - 1)]
    return [*label, *(NOT_MEASURED if c is None else doc_number(c) for c in cells)]


def _mean_cells(runs: dict[str, dict[int, dict]], method: str, task: str, digits: dict) -> dict[str, str]:
    """``{metric: mean ± standard error over the method's splits}`` (:func:`svpg.supervised.compare.mean_se_cell`)."""
    from svpg.supervised.compare import METRICS, mean_se_cell, summarise

    summary, _ = summarise({method: runs[method]}, METRICS[task])
    return {
        key: mean_se_cell(mean, se, digits[key]) if math.isfinite(mean) else "–"
        for key, (mean, se) in summary[method].items()
    }


def _digits(runs: dict[str, dict[int, dict]], methods: Sequence[str], task: str) -> dict[str, int]:
    """Each metric's decimals over the methods of a table (as ``python -m svpg.compare`` chooses them)."""
    from svpg.supervised.compare import METRICS, summarise

    return summarise({m: runs[m] for m in methods if m in runs}, METRICS[task])[1]


def _regression_cells(runs: dict[str, dict[int, dict]], method: str, digits: dict, differences: bool) -> list | None:
    """One method's cells of a UCI table: test RMSE and log-likelihood (mean ± s.e. over splits), with
    ``differences`` its paired differences to S²VGD (95 % t-interval; empty for S²VGD or without it), and the
    median seconds per split; None without splits."""
    from svpg.supervised.compare import METRICS, TIME_KEY, difference_cell, median_seconds

    own = runs.get(method)
    if not own:
        return None
    means = _mean_cells(runs, method, "regression", digits)
    cells = [means["rmse"], means["test_ll"]]
    if differences:
        ref = runs.get("s2vgd") if method != "s2vgd" else None
        for metric in METRICS["regression"]:
            cells.append(difference_cell(own, ref, metric, digits[metric[0]])[0] if ref else "")
    return [*cells, median_seconds(own, TIME_KEY["regression"])]


def _uci_table(datasets: dict[str, Sequence[tuple[str, ...]]], published: dict[str, list], differences: bool = True):
    """A table of UCI data sets: per data set its rows (the table's label cells, then the method), each with
    :func:`_regression_cells`, then the papers' rows (``published``) as given."""

    def build(rows: list[dict]) -> str:
        table = []
        for dataset, methods in datasets.items():
            runs = _supervised_runs([r for r in rows if r["dataset"] == dataset])
            digits = _digits(runs, [m[-1] for m in methods], "regression")
            for *label, method in methods:
                cells = _regression_cells(runs, method, digits, differences)
                table.append(_measured(label, cells or [None] * (5 if differences else 3)))
            table += published.get(dataset, [])
        if differences:
            header = ["method", "test RMSE", "test log-likelihood", "method − S²VGD, RMSE [95 %]",
                      "method − S²VGD, LL [95 %]", "s / split"]  # fmt: skip
        else:
            header = ["method", "optimizer, lr, epochs", "test RMSE", "test log-likelihood", "s / split"]
        if len(datasets) > 1:
            header[0] = "data set, method"
        return render_table(header, table, "l" * len(header))

    return build


def _supervised_compute(estimate: str | Callable[[list[dict]], str], used=None, fits: int | None = None):
    """The training time the table's fits add up to (``used``: those of its rows that are the table's; the
    estimate while there are none, and for the rest while fewer than the table's ``fits`` are measured; a
    callable estimate is given the used rows, to name what is left)."""

    def compute(rows: list[dict]) -> str:
        rows = used(rows) if used else rows
        rest = estimate(rows) if callable(estimate) else estimate
        if not rows:
            return rest
        seconds = sum(s for s in (_number(r.get("seconds")) for r in rows) if math.isfinite(s))
        time = f"{seconds / 3600:.1f} hours" if seconds >= 3600 else f"{seconds / 60:.0f} minutes"
        done = f"{counted(len(rows), 'fit')} of a method on a split, {time} of training"
        if fits is not None and len(rows) < fits:
            left = fits - len(rows)
            return f"{done}; {'one other' if left == 1 else f'the other {left}'} not re-measured, {rest}"
        return done

    return compute


UCI_SELECT = {"protocol": "standard", "options": ""}  # the standard splits, every method with its defaults
TABLE1_SETS = {"boston": "Boston", "concrete": "Concrete", "energy": "Energy", "kin8nm": "Kin8nm", "naval": "Naval",
               "power": "Power (CCPP)", "wine": "Wine", "yacht": "Yacht", "protein": "Protein (5 splits)"}  # fmt: skip


TABLE1_ESTIMATE = "about 27 core-hours"


def _table1_compute(rows: list[dict]) -> str:
    """The measured sets' training time, and the estimate for all nine while some are not re-measured (a set
    with only some of the eight methods is named with those)."""
    named, complete = [], 0
    for key, name in TABLE1_SETS.items():
        methods = [m for m in METHOD_LABELS if any(r["dataset"] == key and r["method"] == m for r in rows)]
        if len(methods) == len(METHOD_LABELS):
            named.append(name)
            complete += 1
        elif methods:
            named.append(f"{name} with {', '.join(METHOD_LABELS[m] for m in methods)} only")
    time = _supervised_compute(TABLE1_ESTIMATE)(rows)
    if not named or complete == len(TABLE1_SETS):
        return time
    return f"{', '.join(named)}: {time}; {TABLE1_ESTIMATE} for all nine sets"


TABLE1_PUBLISHED = {
    "boston": ["2.56 / 2.96 / 2.70; −2.43 / −2.50 / −2.46", "2.81 ± 0.11 / −2.54 ± 0.08"],
    "concrete": ["4.25 / 5.32 / 4.89; −2.90 / −3.08 / −3.01", "4.70 ± 0.14 / −2.98 ± 0.03"],
    "energy": ["0.38 / 1.37 / 0.54; −0.55 / −1.77 / −1.06", "1.16 ± 0.03 / −1.45 ± 0.03"],
    "kin8nm": ["0.07 / 0.09 / 0.08; 1.15 / 0.98 / 1.10", "0.08 ± 0.00 / 1.14 ± 0.01"],
    "naval": ["0.00 / 0.00 / 0.00; 4.79 / 4.09 / 2.46", "0.00 ± 0.00 / 5.84 ± 0.00"],
    "power": ["3.84 / 4.03 / 4.04; −2.77 / −2.82 / −2.82", "3.88 ± 0.03 / −2.78 ± 0.01"],
    "wine": ["0.59 / 0.61 / 0.61; −0.90 / −0.93 / −0.95", "0.61 ± 0.01 / −0.93 ± 0.02"],
    "yacht": ["0.47 / 0.86 / 0.48; −0.81 / −1.23 / −1.30", "0.77 ± 0.06 / −1.29 ± 0.02"],
    "protein": ["4.15 / 4.61 / 4.13; −2.84 / −2.95 / −2.84", "4.14 ± 0.01 / −2.84 ± 0.00"],
}


def _supervised_table1(rows: list[dict]) -> str:
    """Per data set: S²VGD's, SVGD's and VMG's test RMSE / log-likelihood (mean ± s.e. over splits), S²VGD − SVGD
    paired by split (95 % t-intervals), the papers' Table 1 as printed."""
    from svpg.supervised.compare import METRICS, difference_cell

    table = []
    for dataset, name in TABLE1_SETS.items():
        runs = _supervised_runs([r for r in rows if r["dataset"] == dataset])
        digits = _digits(runs, ("s2vgd", "svgd", "vmg"), "regression")

        def both(method: str, runs=runs, digits=digits) -> str | None:
            if method not in runs:
                return None
            means = _mean_cells(runs, method, "regression", digits)
            return f"{means['rmse']} / {means['test_ll']}"

        diff = None
        if "s2vgd" in runs and "svgd" in runs:
            parts = [difference_cell(runs["s2vgd"], runs["svgd"], m, digits[m[0]])[0] for m in METRICS["regression"]]
            diff = " / ".join(parts) if all(parts) else "–"  # "–": no split that both have
        table.append([*_measured([name], [both("s2vgd"), both("svgd"), diff, both("vmg")]),
                      *TABLE1_PUBLISHED[dataset]])  # fmt: skip
    header = ["data set", "S²VGD (ours) RMSE / LL", "SVGD (ours)", "S²VGD − SVGD [95 %] RMSE / LL", "VMG (ours)",
              "S²VGD's Table 1: S²VGD / SVGD / VMG (RMSE; LL)", "VMG's Table 1: VMG"]  # fmt: skip
    return render_table(header, table, "lllllll")


def _papers(s2vgd_paper: tuple[str, str], vmg_paper: tuple[str, str], prefix: str = "") -> list[list[str]]:
    """The papers' rows of a per-data-set table with differences: S²VGD's Table 1 (S²VGD / SVGD / VMG) and VMG's."""
    s2vgd, vmg = (f"*{prefix}, {paper} paper" if prefix else f"*{paper} paper, Table 1" for paper in ("S²VGD", "VMG"))
    return [
        [f"{s2vgd}: S²VGD / SVGD / VMG*", f"*{s2vgd_paper[0]}*", f"*{s2vgd_paper[1]}*", "", "", ""],
        [f"{vmg}: VMG*", f"*{vmg_paper[0]}*", f"*{vmg_paper[1]}*", "", "", ""],
    ]


register(
    Table(
        name="supervised-table1",
        doc="docs/supervised.md",
        source=UCI_FILE,
        build=_supervised_table1,
        first="the nine commands above",
        command=f"python -m svpg.report gather runs/<run-name> --into {UCI_FILE}",
        note="for each run",
        compute=_table1_compute,
        select=UCI_SELECT,
    )
)


def _per_method(optimizers: dict[str, str], papers: list[tuple[str, str, str]]):
    """Boston's and Concrete's table: every method with its optimizer, lr and epochs (as given), then the papers'
    figures (label, RMSE, log-likelihood)."""
    published = [[f"*{label}*", "", f"*{rmse}*", f"*{ll}*", ""] for label, rmse, ll in papers]
    methods = [(METHOD_LABELS[m], text, m) for m, text in optimizers.items()]
    return methods, published


for _dataset, _optimizers, _papers_rows, (_first, _train), _estimate in (
    (
        "boston",
        {"s2vgd": "Adam 3e-3, 2400", "svgd": "Adam 3e-3, 800", "bbb": "Adam 3e-3, 2400",
         "vmg": "Adam 1e-3 constant, Polyak, 2400", "kflow-linear": "Adam 1e-2, 2400", "kflow-diag": "Adam 1e-2, 4800",
         "badam": "Adam 5e-3 constant, 2400", "map": "Adam 3e-3, 2400"},
        [("S²VGD paper, Table 1: S²VGD", "2.56 ± 0.33", "−2.43 ± 0.10"),
         ("S²VGD paper, Table 1: SVGD", "2.96 ± 0.10", "−2.50 ± 0.03"),
         ("S²VGD paper, Table 1: VMG (re-reported)", "2.70", "−2.46"),
         ("VMG paper, Table 1: VMG", "2.81 ± 0.11", "−2.54 ± 0.08")],
        ("", "python train.py supervised --dataset boston --protocol standard --method "
         "s2vgd,svgd,bbb,vmg,kflow-linear,kflow-diag,badam,map --threads 1"),
        "about 1.8 core-hours",
    ),
    (
        "concrete",
        {"s2vgd": "Adam 0.003, 3200", "svgd": "Adam 0.003, 3200", "bbb": "RMSprop 0.003, 1600",
         "vmg": "Adam 1e-3 constant, Polyak, 3200", "kflow-linear": "RMSprop 0.001, 1600",
         "kflow-diag": "Adam 0.01, 6400", "badam": "Adam 5e-3 constant, 1600", "map": "Adam 0.003, 3200"},
        [("S²VGD paper, Table 1: S²VGD", "4.25 ± 0.37", "−2.90 ± 0.07"),
         ("S²VGD paper, Table 1: SVGD", "5.32 ± 0.10", "−3.08 ± 0.02"),
         ("S²VGD paper, Table 1: VMG (re-reported)", "4.89", "−3.01"),
         ("VMG paper, Table 1: VMG", "4.70 ± 0.14", "−2.98 ± 0.03")],
        ("the Concrete command above", ""),
        "about 4.5 core-hours",
    ),
):  # fmt: skip
    _methods, _published = _per_method(_optimizers, _papers_rows)
    register(
        Table(
            name=f"supervised-{_dataset}",
            doc="docs/supervised.md",
            source=UCI_FILE,
            build=_uci_table({_dataset: _methods}, {_dataset: _published}, differences=False),
            first=_first,
            command=" && ".join(
                filter(None, (_train, f"python -m svpg.report gather runs/<run-name> --into {UCI_FILE}"))
            ),
            compute=_supervised_compute(_estimate),
            select={"dataset": _dataset, **UCI_SELECT},
        )
    )


def _order(*methods: str, prefix: str = "") -> list[tuple[str, str]]:
    """A table's rows in the document's order: (label, method)."""
    return [(f"{prefix}{METHOD_LABELS[m]}", m) for m in methods]


for _dataset, _methods, _s2vgd_paper, _vmg_paper, (_first, _gather), _estimate in (
    ("yacht", _order("s2vgd", "svgd", "map", "kflow-linear", "kflow-diag", "bbb", "badam", "vmg"),
     ("0.47 / 0.86 / 0.48", "−0.81 / −1.23 / −1.30"), ("0.77 ± 0.06", "−1.29 ± 0.02"),
     ("the Yacht commands above", "python -m svpg.report gather runs/table1-yacht runs/table1-yacht-vmg"),
     "about 55 core-minutes"),
    ("energy", _order("s2vgd", "svgd", "map", "kflow-linear", "vmg", "bbb", "badam", "kflow-diag"),
     ("0.38 / 1.37 / 0.54", "−0.55 / −1.77 / −1.06"), ("1.16 ± 0.03", "−1.45 ± 0.03"),
     ("the Energy commands above", "python -m svpg.report gather runs/<run-name>"), "about 69 core-minutes"),
    ("kin8nm", _order("s2vgd", "svgd", "kflow-linear", "map", "badam", "vmg", "kflow-diag", "bbb"),
     ("0.07 / 0.09 / 0.08", "1.15 / 0.98 / 1.10"), ("0.08 ± 0.00", "1.14 ± 0.01"),
     ("the Kin8nm commands above", "python -m svpg.report gather runs/<run-name>"), "about 83 core-minutes"),
    ("wine", _order("s2vgd", "svgd", "map", "bbb", "vmg", "kflow-linear", "kflow-diag", "badam"),
     ("0.59 / 0.61 / 0.61", "−0.90 / −0.93 / −0.95"), ("0.61 ± 0.01", "−0.93 ± 0.02"),
     ("the Wine commands above", "python -m svpg.report gather runs/<run-name>"), "about 2.1 core-hours"),
    ("protein", _order("s2vgd", "vmg", "svgd", "map", "kflow-linear", "badam", "kflow-diag", "bbb"),
     ("4.15 / 4.61 / 4.13", "−2.84 / −2.95 / −2.84"), ("4.14 ± 0.01", "−2.84 ± 0.00"),
     ("the Protein commands above", "python -m svpg.report gather runs/<run-name>"), "about 3 core-hours, an estimate"),
):  # fmt: skip
    register(
        Table(
            name=f"supervised-{_dataset}",
            doc="docs/supervised.md",
            source=UCI_FILE,
            build=_uci_table({_dataset: _methods}, {_dataset: _papers(_s2vgd_paper, _vmg_paper)}),
            first=_first,
            command=f"{_gather} --into {UCI_FILE}",
            compute=_supervised_compute(_estimate),
            select={"dataset": _dataset, **UCI_SELECT},
        )
    )


register(
    Table(
        name="supervised-power-naval",
        doc="docs/supervised.md",
        source=UCI_FILE,
        build=_uci_table(
            {
                "power": _order("s2vgd", "svgd", "map", "kflow-linear", "bbb", "vmg", "kflow-diag", "badam",
                                prefix="Power, "),
                "naval": _order("s2vgd", "svgd", "kflow-linear", "kflow-diag", "map", "bbb", "vmg", "badam",
                                prefix="Naval, "),
            },
            {
                "power": _papers(("3.84 / 4.03 / 4.04", "−2.77 / −2.82 / −2.82"),
                                 ("3.88 ± 0.03", "−2.78 ± 0.01"), prefix="Power"),
                "naval": _papers(("0.00 / 0.00 / 0.00", "4.79 / 4.09 / 2.46"),
                                 ("0.00 ± 0.00", "5.84 ± 0.00"), prefix="Naval"),
            },
        ),
        first="the Power and Naval commands above",
        command="python -m svpg.report gather runs/table1-power "
        f"runs/table1-power-parametric runs/table1-naval-s2vgd runs/table1-naval-others --into {UCI_FILE}",
        compute=_supervised_compute(
            "about 9 core-hours", lambda rows: [r for r in rows if r["dataset"] in ("power", "naval")]
        ),
        select=UCI_SELECT,
    )
)  # fmt: skip


# MNIST and Fashion-MNIST: one run (split 0) per method and setting, told apart by their options
def _setting(row: dict) -> dict:
    """A classification row's options that change its training: ``--keep-epoch`` only picks which epoch's weights it
    ends with, and ``--weight-prior gaussian`` is what the default gives for classification."""
    options = {k: v for k, v in _row_options(row).items() if k != "keep_epoch"}
    if options.get("weight_prior") == "gaussian":
        del options["weight_prior"]
    return options


def _runs_of(rows: list[dict], method: str, options: dict) -> dict[int, dict]:
    """``{split: row}`` of ``method`` run with exactly ``options``."""
    return _supervised_runs([r for r in rows if r["method"] == method and _row_options(r) == options]).get(method, {})


def _error_cell(runs: dict[int, dict], digits: int) -> str:
    """The test error in percent, mean ± s.e. over the runs (one run: its error)."""
    from svpg.stats import mean_se
    from svpg.supervised.compare import mean_se_cell

    mean, se = mean_se([r["error"] * 100 for r in runs.values()])
    return f"{mean_se_cell(mean, se, digits)} %" if math.isfinite(mean) else "–"


def _curve_at(curve: list, epoch: int) -> float:
    return next((float(v) for e, v in curve if int(e) == epoch), math.nan)


def _last_and_best(runs: dict[int, dict]) -> str | None:
    """The validation log-likelihood at the last evaluated epoch, and the best with its epoch, ``−0.0512 (−0.0480,
    37)`` (several runs: the means, and every run's best epoch); None without curves."""
    curves = [r["val_log_likelihood"] for r in runs.values() if r["val_log_likelihood"]]
    if not curves:
        return None
    last = sum(c[-1][1] for c in curves) / len(curves)
    best = [max(c, key=lambda p: p[1]) for c in curves]
    epochs = ", ".join(str(int(e)) for e, _ in best)
    return f"{last:.4f} ({sum(v for _, v in best) / len(best):.4f}, {epochs})"


MNIST_TABLE2: list[tuple[str, str, dict, str]] = [
    ("S²VGD (K = 1)", "s2vgd", {}, "1.43 %"),
    ("S²VGD (K = 10)", "s2vgd", {"householder": 10}, "1.36 %"),
    ("SVGD", "svgd", {}, "1.53 %"),
    ("MAP", "map", {}, "1.59 % (RMSprop)"),
    ("BBB (Gaussian prior)", "bbb", {}, "1.82 % (scale mixture 1.32 %)"),
    ("VMG (150 pseudo-data pairs per layer)", "vmg", {}, "1.15 % (its own Table 2)"),
]
#: the eq. 14 table's methods (run with --weight-prior mvg, keeping the best epoch and, apart, the last)
MNIST_EQ14 = [("S²VGD (K = 1)", "s2vgd"), ("SVGD", "svgd"), ("MAP", "map")]
#: the curves table's runs: (label, method, setting), the setting as :func:`_setting` gives it
#: (a measured run's label ends in the device it ran on, :func:`_device_of`)
MNIST_CURVES: list[tuple[str, str, dict]] = [
    ("MAP, eq. 14", "map", {"weight_prior": "mvg"}),
    ("SVGD, eq. 14", "svgd", {"weight_prior": "mvg"}),
    ("S²VGD K = 1, eq. 14", "s2vgd", {"weight_prior": "mvg"}),
    ("S²VGD K = 10, eq. 14", "s2vgd", {"householder": 10, "weight_prior": "mvg"}),
    ("MAP, fixed N(0, 1)", "map", {}),
    ("S²VGD K = 1, fixed N(0, 1)", "s2vgd", {}),
    ("S²VGD K = 10, fixed N(0, 1)", "s2vgd", {"householder": 10}),
    ("SVGD, fixed N(0, 1)", "svgd", {}),
]
CURVE_EPOCHS = (6, 20, 30, 50, 75, 100)
#: what each Table 2 row costs to measure (100 epochs on one CPU thread of the 2-core VM), by its label
MNIST_COST = {
    "S²VGD (K = 1)": "about 3 core-hours",
    "S²VGD (K = 10)": "about 12 core-hours",
    "SVGD": "about 2.5 core-hours",
    "MAP": "about 15 core-minutes",
    "BBB (Gaussian prior)": "about 45 core-minutes",
    "VMG (150 pseudo-data pairs per layer)": "about 40 core-minutes",
}
LAST = {"keep_epoch": "last"}
EQ14 = {"weight_prior": "mvg"}


def _classification_digits(groups: list[dict[int, dict]]) -> dict[str, int]:
    from svpg.supervised.compare import METRICS, summarise

    return summarise({str(i): g for i, g in enumerate(groups) if g}, METRICS["classification"])[1]


def _device_of(runs: Iterable[dict]) -> str:
    """``GPU`` when a run's machine names one (a run record lists its machine's GPUs; older rows name the NVIDIA
    card alone), else ``CPU``."""
    return "GPU" if any("GPU" in r.get("machine", "") or "NVIDIA" in r.get("machine", "") for r in runs) else "CPU"


def _mnist_table(rows: list[dict]) -> str:
    """Table 2's methods after 100 epochs (``--keep-epoch last``): test error, NLL and ECE (mean ± s.e. over runs;
    one run: its figures), the validation log-likelihood at the last epoch (best, epoch), the median seconds per
    epoch; the papers' Table 2 as printed."""
    from svpg.supervised.compare import TIME_KEY, median_seconds

    groups = [_runs_of(rows, method, {**options, **LAST}) for _, method, options, _ in MNIST_TABLE2]
    digits = _classification_digits(groups)
    table = []
    for (label, *_, paper), runs in zip(MNIST_TABLE2, groups):
        cells: list[str | None] = [None] * 5
        if runs:
            means = _mean_cells({"m": runs}, "m", "classification", digits)
            cells = [_error_cell(runs, digits["error"]), means["nll"], means["ece"], _last_and_best(runs) or "–",
                     _seconds_on(runs, median_seconds(runs, TIME_KEY["classification"]))]  # fmt: skip
        row = _measured([label], cells)
        table.append([row[0], row[1], paper, *row[2:]])
    header = ["method", "test error", "paper's Table 2", "test NLL", "ECE", "validation LL at epoch 100 (best, epoch)",
              "s per epoch"]  # fmt: skip
    return render_table(header, table, "lrrrrrr")


def _seconds_on(runs: dict[int, dict], seconds: str) -> str:
    """A timing cell, marked ``(GPU)`` where the runs ran on one (the table's other timings are one CPU thread's)."""
    return f"{seconds} (GPU)" if _device_of(runs.values()) == "GPU" else seconds


def _mnist_used(rows: list[dict]) -> list[dict]:
    wanted = [(m, {**o, **LAST}) for _, m, o, _ in MNIST_TABLE2]
    return [r for r in rows if (r["method"], _row_options(r)) in wanted]


def _mnist_estimate(rows: list[dict]) -> str:
    """What Table 2's rows without a run would cost, by :data:`MNIST_COST`: ``"S²VGD (K = 1) and SVGD about 2.5
    core-hours each, …"``."""
    labels_by_cost: dict[str, list[str]] = {}
    for label, method, options, _ in MNIST_TABLE2:
        if not _runs_of(rows, method, {**options, **LAST}):
            labels_by_cost.setdefault(MNIST_COST[label], []).append(label)
    parts = [
        f"{' and '.join(labels)} {cost}{' each' if len(labels) > 1 else ''}" for cost, labels in labels_by_cost.items()
    ]
    return ", ".join(parts) + " (100 epochs, one CPU thread)"


def _mnist_eq14_table(rows: list[dict]) -> str:
    """Eq. 14's runs: the test error of the best epoch on the validation images, that epoch, the validation
    log-likelihood at the last epoch, and the test error of the run that keeps the last epoch."""
    best = [_runs_of(rows, method, EQ14) for _, method in MNIST_EQ14]
    last = [_runs_of(rows, method, {**EQ14, **LAST}) for _, method in MNIST_EQ14]
    digits = _classification_digits(best + last)
    table = []
    for (label, _), kept, after in zip(MNIST_EQ14, best, last):
        curve = _last_and_best(kept or after)
        cells = [
            _error_cell(kept, digits["error"]) if kept else None,
            ", ".join(str(int(r["best_epoch"])) for r in kept.values()) if kept else None,
            curve.split(" (")[0] if curve else ("–" if kept or after else None),
            _error_cell(after, digits["error"]) if after else None,
        ]
        table.append(_measured([label], cells))
    header = ["method", "test error", "epoch kept (validation NLL)", "validation LL at epoch 100",
              "test error after 100 epochs (`--keep-epoch last`)"]  # fmt: skip
    return render_table(header, table, "lrrrr")


def _mnist_eq14_used(rows: list[dict]) -> list[dict]:
    wanted = [(m, o) for _, m in MNIST_EQ14 for o in (EQ14, {**EQ14, **LAST})]
    return [r for r in rows if (r["method"], _row_options(r)) in wanted]


def _curve_run(rows: list[dict], method: str, setting: dict) -> dict | None:
    """The row of the longest validation curve among ``method``'s runs of ``setting`` (the run that kept the best
    epoch and the one that kept the last trained alike)."""
    runs = [r for r in _supervised_runs([r for r in rows if r["method"] == method and _setting(r) == setting])
            .get(method, {}).values()]  # fmt: skip
    runs = [r for r in runs if r["val_error"]]
    return max(runs, key=lambda r: len(r["val_error"]), default=None)


def _mnist_curves_table(rows: list[dict]) -> str:
    """The validation error (%) of each run at the table's epochs; ``–`` at an epoch its curve does not reach."""
    table = []
    for label, method, setting in MNIST_CURVES:
        run = _curve_run(rows, method, setting)
        cells: list[str | None] = [None] * len(CURVE_EPOCHS)
        if run is not None:
            values = [_curve_at(run["val_error"], e) * 100 for e in CURVE_EPOCHS]
            cells = [f"{v:.2f} %" if math.isfinite(v) else "–" for v in values]
            label = f"{label} ({_device_of([run])})"
        table.append(_measured([label], cells))
    return render_table(["run", "epoch 6", "20", "30", "50", "75", "100"], table, "lrrrrrr")


FASHION_MNIST_ROWS = [("S²VGD (K = 1)", "10", "s2vgd"), ("SVGD", "10", "svgd"), ("MAP", "1", "map")]


def _fashion_mnist_table(rows: list[dict]) -> str:
    """Eq. 14's runs (``--weight-prior mvg``): the epoch kept, test error, NLL and ECE, median seconds per epoch."""
    from svpg.supervised.compare import TIME_KEY, median_seconds

    groups = [_runs_of(rows, method, EQ14) for *_, method in FASHION_MNIST_ROWS]
    digits = _classification_digits(groups)
    table = []
    for (label, particles, _), runs in zip(FASHION_MNIST_ROWS, groups):
        cells: list[str | None] = [None] * 5
        if runs:
            means = _mean_cells({"m": runs}, "m", "classification", digits)
            cells = [", ".join(str(int(r["best_epoch"])) for r in runs.values()), _error_cell(runs, digits["error"]),
                     means["nll"], means["ece"], median_seconds(runs, TIME_KEY["classification"])]  # fmt: skip
        table.append(_measured([label, particles], cells))
    header = ["method", "particles", "best epoch (validation NLL)", "test error", "test NLL", "ECE", "s per epoch"]
    return render_table(header, table, "lllllll")


register(
    Table(
        name="supervised-mnist",
        doc="docs/supervised.md",
        source=MNIST_FILE,
        build=_mnist_table,
        first="the MNIST commands above",
        command=f"python -m svpg.report gather runs/<run-name> --into {MNIST_FILE}",
        compute=_supervised_compute(_mnist_estimate, _mnist_used, len(MNIST_TABLE2)),
        select={"dataset": "mnist"},
    )
)


register(
    Table(
        name="supervised-mnist-eq14",
        doc="docs/supervised.md",
        source=MNIST_FILE,
        build=_mnist_eq14_table,
        first="the eq. 14 commands above",
        command=f"python -m svpg.report gather runs/<run-name> --into {MNIST_FILE}",
        compute=_supervised_compute(
            "about 2.5 core-hours per run (100 epochs, one CPU thread)", _mnist_eq14_used, 2 * len(MNIST_EQ14)
        ),
        select={"dataset": "mnist"},
    )
)


register(
    Table(
        name="supervised-mnist-curves",
        doc="docs/supervised.md",
        source=MNIST_FILE,
        build=_mnist_curves_table,
        first="the runs above",
        command=f"python -m svpg.report gather runs/<run-name> --into {MNIST_FILE}",
        compute="the runs of the two tables above",
        select={"dataset": "mnist"},
    )
)


#: bench/mnist_vmg_pseudo_data.py's fits: VMG's pseudo-data pairs per layer scored on MNIST's validation images
MNIST_VMG_PSEUDO_FILE = "bench/results/mnist_vmg_pseudo_data.jsonl"
MNIST_VMG_PSEUDO_COUNTS = (10, 50, 150)


def _mnist_vmg_pseudo_table(rows: list[dict]) -> str:
    """Per pseudo-data count (the table's and any other in the file): the epochs trained, the validation
    log-likelihood and error of the epoch the CLI keeps (best validation log-likelihood), that epoch, the same
    at the last epoch, and the fit's minutes."""
    fits = {int(r["pseudo_data"]): r for r in rows}
    table = []
    for count in sorted({*MNIST_VMG_PSEUDO_COUNTS, *fits}):
        r = fits.get(count)
        cells: list[str | None] = [None] * 7
        if r is not None:
            cells = [str(r["epochs"]), f"{r['val_log_likelihood']:.4f}", f"{100 * r['val_error']:.2f} %", str(r["best_epoch"]),
                     f"{r['last_val_log_likelihood']:.4f}", f"{100 * r['last_val_error']:.2f} %",
                     f"{r['seconds'] / 60:.0f}"]  # fmt: skip
        table.append(_measured([str(count)], cells))
    header = ["pseudo-data pairs per layer", "epochs", "validation LL (epoch kept)", "validation error", "epoch kept",
              "validation LL at the last epoch", "validation error at the last epoch", "minutes per fit"]  # fmt: skip
    return render_table(header, table, "rrrrrrrr")


def _mnist_vmg_pseudo_compute(rows: list[dict]) -> str:
    if len(rows) < len(MNIST_VMG_PSEUDO_COUNTS):
        return f"{len(MNIST_VMG_PSEUDO_COUNTS)} fits of 100 epochs on one CPU thread, about 1.5 core-hours in all"
    hours = sum(float(r["seconds"]) for r in rows) / 3600
    machines = sorted({r["machine"] for r in rows})
    return f"{len(rows)} fits, {hours:.1f} core-hours of training on {' and '.join(machines)}, one thread each"


register(
    Table(
        name="supervised-mnist-vmg-pseudo-data",
        doc="docs/supervised.md",
        source=MNIST_VMG_PSEUDO_FILE,
        build=_mnist_vmg_pseudo_table,
        command="python bench/mnist_vmg_pseudo_data.py --pseudo-data 10,50,150 --compile true --results "
        + MNIST_VMG_PSEUDO_FILE,
        compute=_mnist_vmg_pseudo_compute,
    )
)


register(
    Table(
        name="supervised-fashion-mnist",
        doc="docs/supervised.md",
        source=FASHION_MNIST_FILE,
        build=_fashion_mnist_table,
        first="the Fashion-MNIST commands above",
        command=f"python -m svpg.report gather runs/<run-name> --into {FASHION_MNIST_FILE}",
        compute=_supervised_compute(
            "about 2 core-hours",
            lambda rows: [
                r for r in rows if (r["method"], _row_options(r)) in [(m, EQ14) for *_, m in FASHION_MNIST_ROWS]
            ],
            len(FASHION_MNIST_ROWS),
        ),
        select={"dataset": "fashion-mnist"},
    )
)


# -- throughput: bench/throughput.py --out (docs/results.md) ----------------------------------------------------
THROUGHPUT_FILE = "bench/results/throughput.jsonl"
THROUGHPUT_TASKS = {"CartPole-v1": "CartPole-v1", "svpg/CartPoleSwingUp-v0": "CartPoleSwingUp-v0",
                    "svpg/DoublePendulum-v0": "DoublePendulum-v0"}  # fmt: skip
ESTIMATOR_LABELS = {"reinforce": "REINFORCE", "a2c": "A2C"}
#: the tables' protocol (bench/throughput.py's defaults): rows measured otherwise are not theirs
THROUGHPUT_PROTOCOL = {"num_particles": 16, "samples_per_particle": 5000, "householder": 1, "threads": 1}


def _throughput_rows(rows: list[dict]) -> dict[tuple[str, str], dict]:
    """The newest row per (task, estimator) of those the table selected (kind, device, seeds, protocol)."""
    return {(r["env_id"], r["estimator"]): r for r in rows}


def _throughput_methods_table(rows: list[dict]) -> str:
    """S²VGD and plain SVGD beside SB3 A2C per task (REINFORCE, the CPU): steps/s of whole iterations."""
    found = _throughput_rows(rows)
    table = []
    for env_id, name in THROUGHPUT_TASKS.items():
        r = found.get((env_id, "reinforce"))
        if r is None:
            table.append([name, NOT_MEASURED, "", "", ""])
            continue
        s2vgd, svgd, sb3 = r["first_steps_per_s"], r["second_steps_per_s"], r["sb3_a2c_steps_per_s"]
        table.append([name, f"{s2vgd:,.0f}", f"{svgd:,.0f}", f"{sb3:,.0f}", f"{s2vgd / sb3:.1f}×"])
    return render_table(["task", "S²VGD (K = 1)", "plain SVGD", "SB3 A2C", "S²VGD ÷ SB3"], table, "lrrrr")


def _throughput_seed_batch_table(seeds: int, tasks: Sequence[str]):
    def build(rows: list[dict]) -> str:
        found = _throughput_rows(rows)
        table = []
        for env_id in tasks:
            for estimator, label in ESTIMATOR_LABELS.items():
                r = found.get((env_id, estimator))
                first = [THROUGHPUT_TASKS[env_id], label]
                if r is None:
                    table.append([*first, NOT_MEASURED, "", "", "", ""])
                    continue
                one, batched = r["first_steps_per_s"], r["second_steps_per_s"]
                rollout = r["second_ms_rollout"] / r["first_ms_rollout"]
                learn = r["second_ms_learn"] / r["first_ms_learn"]
                table.append(
                    [
                        *first,
                        f"{one:,.0f}",
                        f"{batched:,.0f}",
                        f"{batched / one:.2f}×",
                        f"{rollout:.2f}×",
                        f"{learn:.2f}×",
                    ]
                )
        header = ["task", "estimator", "1 seed (steps/s)", f"{seeds} seeds batched (steps/s)", "gain",
                  f"rollout: {seeds} seeds ÷ 1", f"learning step: {seeds} seeds ÷ 1"]  # fmt: skip
        return render_table(header, table, "llrrrrr")

    return build


def _throughput_compute(what: str):
    def compute(rows: list[dict]) -> str:
        if not rows:
            return f"{what}, {NOT_MEASURED}"
        r = rows[-1]
        return f"{what}; measured on the {r['machine']}, {r['cores']} cores, at {r['commit']}"

    return compute


register(
    Table(
        name="throughput",
        doc="docs/results.md",
        source=THROUGHPUT_FILE,
        build=_throughput_methods_table,
        command=f"python bench/throughput.py --task TASK --out {THROUGHPUT_FILE}",
        note="for each task above",
        compute=_throughput_compute("a few core-minutes each"),
        select={"kind": "methods", "device": "cpu", "num_seeds": 1, **THROUGHPUT_PROTOCOL},
    )
)


register(
    Table(
        name="throughput-seed-batch",
        doc="docs/results.md",
        source=THROUGHPUT_FILE,
        build=_throughput_seed_batch_table(5, list(THROUGHPUT_TASKS)),
        command=f"python bench/throughput.py --task TASK --estimator ESTIMATOR --num-seeds 5 --out {THROUGHPUT_FILE}",
        note="for each task and estimator above",
        compute=_throughput_compute("a few core-minutes each"),
        select={"kind": "seed-batch", "device": "cpu", "num_seeds": 5, **THROUGHPUT_PROTOCOL},
    )
)


register(
    Table(
        name="throughput-gpu",
        doc="docs/results.md",
        source=THROUGHPUT_FILE,
        build=_throughput_seed_batch_table(10, ["svpg/CartPoleSwingUp-v0"]),
        command="python bench/throughput.py --task swingup --device cuda --estimator ESTIMATOR --num-seeds 10 "
        f"--iterations 3 --repeats 2 --warmup 1 --out {THROUGHPUT_FILE}",
        note="for each estimator above, on a GPU",
        compute=_throughput_compute("under a minute of GPU time each"),
        select={"kind": "seed-batch", "device": "cuda", "num_seeds": 10, **THROUGHPUT_PROTOCOL},
    )
)


# -- RL: the paper's grid (docs/results.md) and the structure ablation (docs/rl.md) ---------------------------
PAPER_GRID_FILE = "bench/results/rl_paper_grid.csv"
ABLATION_FILE = "bench/results/rl_ablation.csv"
GRID_METHODS = ("s2vgd", "svgd", "svgd-star", "independent")
#: the SB3 rows of the swing-up grid: (label, the gathered method of python -m svpg.studies.sb3)
GRID_SB3 = (("SB3 A2C", "sb3-a2c"), ("SB3 PPO", "sb3-ppo"))
#: the ablation's report stage: its cells and seeds (the tuning stage's seeds 100–104 are not the tables')
ABLATION_CELLS = ("s2vgd-K1-flat-a300", "svgd", "svgd-star", "svgd-a300")
ABLATION_SEEDS = range(10)
#: the threshold of the ablation's time tables, "iterations to halfway"
HALFWAY = "50%"


def _env_id(task: str) -> str:
    from svpg.rl.config import load_preset

    return load_preset(task)["env_id"]


def _preset_runs(rows: list[dict], task: str, settings=lambda row: {}) -> list[dict]:
    """The rows run with the task's preset and, on top of it, a row's own ``settings`` (an ablation cell's) only:
    runs with other options (a shorter test, another α) are not a table's."""
    from svpg.rl.config import load_preset

    preset = load_preset(task)
    return [r for r in rows if _row_options(r) == rl_options(preset | settings(r))]


def _run_curves(row: dict) -> tuple[list[float], list[float]]:
    """A gathered row's per-iteration returns: (mean over particles, best particle)."""
    curves = (json.loads(c) if isinstance(c, str) else c for c in (row["mean_curve"], row["max_curve"]))
    mean, best = ([float(x) for x in curve] for curve in curves)
    return mean, best


def _curve_rows(rows: list[dict], label: str) -> list[dict]:
    """The gathered rows' curves as one row per iteration, the rows of :func:`svpg.studies.experiments.collect`
    (``label``: the column that names the row's method or cell)."""
    out = []
    for r in rows:
        for i, (mean, best) in enumerate(zip(*_run_curves(r), strict=True)):
            out.append({label: r[label], "estimator": r.get("estimator", ""), "seed": int(r["seed"]),
                        "iteration": i + 1, "mean": float(mean), "max": float(best)})  # fmt: skip
    return out


def _grid_figure(task: str, image: str, alt: str) -> Figure:
    """The grid's learning curves (:func:`svpg.studies.experiments.plot`): its methods' runs on the task's preset."""

    def pick(rows: list[dict]) -> list[dict]:
        keys = ("method", "estimator", "seed", "mean_curve", "max_curve")
        return [{k: r[k] for k in keys} for r in _preset_runs(rows, task) if r["method"] in GRID_METHODS]

    def draw(rows: list[dict], path, metadata: dict) -> None:
        from svpg.studies.experiments import plot, summarise

        plot(summarise(_curve_rows(rows, "method"), metrics=("mean", "max")), path, task, metadata=metadata)

    return Figure(image=image, alt=alt, rows=pick, draw=draw)


def _paper_grid(task: str, sb3: bool = False):
    """The grid's (method, estimator) rows: final mean and max over particles (mean ± standard error over seeds of the
    last iteration) and their peaks (the best iteration of the seed-averaged curve), as ``results.md`` of
    ``python -m svpg.studies.experiments`` writes them (:func:`svpg.studies.experiments.grid_cells`); ``sb3``: the
    SB3 agents' rows below, their deterministic evaluation return in the mean and max columns alike (one policy).
    The grid's rows are those of the task's preset (:func:`_preset_runs`)."""

    def build(rows: list[dict]) -> str:
        from svpg.studies.experiments import grid_cells, summarise

        runs = _preset_runs(rows, task) + [r for r in rows if r["method"] in dict(GRID_SB3).values()]
        summary = summarise(_curve_rows(runs, "method"), metrics=("mean", "max"))
        table = []
        for estimator in PAPER_ESTIMATORS:
            for method in GRID_METHODS:
                s = summary.get((method, estimator))
                cells = grid_cells(s["mean"], s["max"]) if s else [None] * 4
                table.append(_measured([method, estimator], cells))
        for label, method in GRID_SB3 if sb3 else ():
            s = summary.get((method, ""))
            seeds = s["mean"].shape[1] if s else 1
            cells = grid_cells(s["mean"], s["max"]) if s else [None] * 4
            table.append(_measured([label, f"({counted(seeds, 'seed')})"], cells))
        return render_table(
            ["method", "estimator", "final mean", "final max", "peak mean", "peak max"], table, "llrrrr"
        )

    return build


def _ablation_metrics(rows: list[dict], task: str, threshold: str, reference: str = "svgd") -> dict:
    """(cell, estimator) → the row of ``cells.csv`` (:func:`svpg.studies.ablation_analysis.summary_row`) of the
    report stage's runs in ``rows`` (its cells and seeds, on the task's preset with each cell's settings), with the
    command's default window and ``threshold``: mean ± standard error over seeds, paired differences to ``reference``,
    iterations to τ and the action KL the gather recorded."""
    from svpg.studies.ablation import parse_threshold
    from svpg.studies.ablation_analysis import WINDOW, cut_to_shortest, per_run_metrics, summary_row, thresholds
    from svpg.studies.ablation_cells import Cell

    rows = [r for r in rows if r.get("cell") in ABLATION_CELLS and int(r["seed"]) in ABLATION_SEEDS]
    rows = _preset_runs(rows, task, lambda r: Cell.parse(r["cell"]).settings())
    if not rows:
        return {}
    curves: dict = {}  # the run folders' curves as run_curves groups them, without a row per iteration
    for r in rows:
        curves.setdefault((r["cell"], r["estimator"]), {})[int(r["seed"])] = _run_curves(r)
    curves = cut_to_shortest(curves)
    taus, _ = thresholds(curves, parse_threshold(threshold), WINDOW)
    per_run = per_run_metrics(curves, taus, WINDOW)
    for r in rows:
        per_run[r["cell"], r["estimator"]][int(r["seed"])]["action_kl"] = _number(r.get("action_kl"))
    keys = ("peak_best", "final_mean", "iterations_to_threshold", "action_kl")
    return {
        key: summary_row(runs, per_run.get((reference, key[1])) if key[0] != reference else None, keys)
        | {"seeds": len(runs)}
        for key, runs in per_run.items()
    }


def _to_threshold(row: dict) -> str:
    from svpg.studies.ablation_analysis import _pm

    return (
        f"{_pm(row['iterations_to_threshold'], row['iterations_to_threshold_se'], 0)} ({row['reached']}/{row['seeds']})"
    )


def _ablation_table(task: str):
    """Per estimator and cell of the report stage (seeds 0–9): peak best and final mean (mean ± standard error over
    seeds) with their paired differences to ``svgd`` (95 % t-intervals), iterations to τ (90 %) and the action KL,
    as ``results.md`` of ``python -m svpg.studies.ablation`` writes them (its default --threshold)."""

    def build(rows: list[dict]) -> str:
        from svpg.studies.ablation_analysis import THRESHOLD

        return _ablation_rows(_ablation_metrics(rows, task, THRESHOLD))

    return build


def _ablation_rows(summary: dict) -> str:
    from svpg.studies.ablation_analysis import _interval, _pm, _sig

    table = []
    for estimator in PAPER_ESTIMATORS:
        for cell in ABLATION_CELLS:
            r = summary.get((cell, estimator))
            cells = None if r is None else [
                _pm(r["peak_best"], r["peak_best_se"]), _interval(r["d_peak_best"], r["d_peak_best_lo"], r["d_peak_best_hi"]),
                _pm(r["final_mean"], r["final_mean_se"]), _interval(r["d_final_mean"], r["d_final_mean_lo"], r["d_final_mean_hi"]),
                _to_threshold(r), _sig(r["action_kl"]),
            ]  # fmt: skip
            table.append(_measured([estimator, f"`{cell}`"], cells or [None] * 6))
    header = ["estimator", "cell", "peak best", "Δ peak best", "final mean", "Δ final mean", "iterations to τ (reached)",
              "action KL"]  # fmt: skip
    return render_table(header, table, "llrrrrrr")


def _ablation_time_table(task: str):
    """Iterations to halfway (τ at 50 %) per estimator and cell, mean ± standard error over the seeds that reach
    it, and how many do."""
    return lambda rows: _ablation_time_rows(_ablation_metrics(rows, task, HALFWAY))


#: the ablation's learning-curve figures under docs/img/ and their alt texts
ABLATION_IMAGES = {
    "swingup": ("ablation-swingup.png", "swing-up ablation"),
    "double-pendulum": ("ablation-pendulum.png", "double-pendulum ablation"),
}


def _ablation_figure(task: str) -> Figure:
    """The report stage's curves (:func:`svpg.studies.experiments.plot`, as ``python -m svpg.studies.ablation``
    draws them): each cell's runs on the task's preset with its settings, seeds 0–9."""
    from svpg.studies.ablation_cells import Cell

    def pick(rows: list[dict]) -> list[dict]:
        rows = [r for r in rows if r.get("cell") in ABLATION_CELLS and int(r["seed"]) in ABLATION_SEEDS]
        keys = ("cell", "estimator", "seed", "mean_curve", "max_curve")
        return [{k: r[k] for k in keys} for r in _preset_runs(rows, task, lambda r: Cell.parse(r["cell"]).settings())]

    def draw(rows: list[dict], path, metadata: dict) -> None:
        from svpg.studies.experiments import plot, summarise

        summary = summarise(_curve_rows(rows, "cell"), label="cell", metrics=("mean", "max"))
        plot(summary, path, task, labels=ABLATION_CELLS, metadata=metadata)

    image, alt = ABLATION_IMAGES[task]
    return Figure(image=f"docs/img/{image}", alt=alt, rows=pick, draw=draw)


def _ablation_time_rows(summary: dict) -> str:
    table = []
    for estimator in PAPER_ESTIMATORS:
        r = [summary.get((cell, estimator)) for cell in ABLATION_CELLS]
        table.append(_measured([ESTIMATOR_LABELS[estimator]], [None if x is None else _to_threshold(x) for x in r]))
    return render_table(["estimator", *(f"`{c}`" for c in ABLATION_CELLS)], table, "lrrrr")


def _runs_compute(estimate: str):
    def compute(rows: list[dict]) -> str:
        return f"{len(rows)} runs" if rows else estimate

    return compute


register(
    Table(
        name="paper-grid-double-pendulum",
        doc="docs/results.md",
        source=PAPER_GRID_FILE,
        build=_paper_grid("double-pendulum"),
        first="the double-pendulum grid above",
        command="python -m svpg.report gather runs/<out> --into bench/results/rl_paper_grid.csv",
        compute=_runs_compute("40 runs"),
        select={"env_id": _env_id("double-pendulum")},
        figure=_grid_figure("double-pendulum", "docs/img/pendulum-grid.png", "double-pendulum learning curves"),
    )
)


register(
    Table(
        name="paper-grid-swingup",
        doc="docs/results.md",
        source=PAPER_GRID_FILE,
        build=_paper_grid("swingup", sb3=True),
        first="the swing-up grid and SB3 commands above",
        command="python -m svpg.report gather runs/repro-swingup --into bench/results/rl_paper_grid.csv",
        note="to gather the grid's runs and the SB3 agents of its sb3/ folder",
        compute=_runs_compute("40 runs"),
        select={"env_id": _env_id("swingup")},
        figure=_grid_figure("swingup", "docs/img/swingup-grid.png", "swing-up learning curves"),
    )
)


_ABLATION_COMMAND = "python -m svpg.report gather runs/ablation-{task} --into bench/results/rl_ablation.csv"
for _task in ("swingup", "double-pendulum"):  # the same two tables for each task
    register(
        Table(
            name=f"ablation-{_task}",
            doc="docs/rl.md",
            source=ABLATION_FILE,
            build=_ablation_table(_task),
            first="the report-stage command above",
            command=_ABLATION_COMMAND.format(task=_task),
            compute="see the ablation's compute above",
            select={"env_id": _env_id(_task)},
        )
    )
    register(
        Table(
            name=f"ablation-{_task}-time",
            doc="docs/rl.md",
            source=ABLATION_FILE,
            build=_ablation_time_table(_task),
            first="the report-stage command above",
            command=_ABLATION_COMMAND.format(task=_task),
            compute="the same runs",
            select={"env_id": _env_id(_task)},
            figure=_ablation_figure(_task),
        )
    )


STEP_TIME_CELLS = ("svgd", "svgd-star", "s2vgd-K1", "s2vgd-K2", "s2vgd-K4", "s2vgd-K4-mvg")
#: the columns of the step-time table: (task, estimator) of a throughput row of kind "cells"
STEP_TIME_COLUMNS = (("svpg/CartPoleSwingUp-v0", "reinforce"), ("svpg/CartPoleSwingUp-v0", "a2c"),
                     ("svpg/DoublePendulum-v0", "reinforce"), ("svpg/DoublePendulum-v0", "a2c"))  # fmt: skip


def _ablation_step_time(rows: list[dict]) -> str:
    """Seconds per iteration of one seed per cell, the best of ``bench/throughput.py --cells``' alternating blocks,
    from its newest CPU row per task and estimator (as the command prints them)."""
    found = _throughput_rows(rows)
    table = []
    for cell in STEP_TIME_CELLS:
        values = [found.get(column, {}).get("seconds_per_iteration", {}).get(cell) for column in STEP_TIME_COLUMNS]
        table.append(_measured([f"`{cell}`"], [None if v is None else f"{v:.3f}" for v in values]))
    header = ["cell", "swing-up, REINFORCE", "swing-up, A2C", "double pendulum, REINFORCE", "double pendulum, A2C"]
    return render_table(header, table, "lrrrr")


register(
    Table(
        name="ablation-step-time",
        doc="docs/rl.md",
        source=THROUGHPUT_FILE,
        build=_ablation_step_time,
        command=f"python bench/throughput.py --task TASK --estimator ESTIMATOR --cells {','.join(STEP_TIME_CELLS)} "
        f"--iterations 4 --repeats 8 --warmup 1 --out {THROUGHPUT_FILE}",
        note="for TASK swingup and double-pendulum and ESTIMATOR reinforce and a2c",
        compute=_throughput_compute("a few core-minutes each"),
        select={"kind": "cells", "device": "cpu"},
    )
)


# -- README.md: the results overview, quoting the pages' tables -----------------------------------------------
INTERVAL = re.compile(r"\[([^,\]]+), ([^\]]+)\]")


def _value(text: str) -> float:
    """The leading number of a cell as the documents print it (Unicode minus, thousands commas, a unit after it)."""
    return float(text.replace("−", "-").replace(",", "").split()[0].rstrip("×%"))


def _side(difference: str, lower_is_better: bool = False) -> str:
    """ "ahead", "behind" or "level" for a paired difference "+x [lo, hi]" of ours minus theirs: whether its 95 %
    interval lies wholly on one side of zero."""
    found = INTERVAL.search(difference)
    if not found:
        return ""
    lo, hi = (_value(x) for x in found.groups())
    if lo <= 0 <= hi:
        return "level"
    return "ahead" if (lo > 0) != lower_is_better else "behind"


def _span(values: Sequence[float], fmt: str) -> str:
    low, high = fmt.format(min(values)), fmt.format(max(values))
    return low if low == high else f"{low}–{high}"


def _overview_defaults(rows: list[dict]) -> str:
    parts = []
    for r in quoted_cells(rows, "defaults-vs-sb3-ppo"):
        best, ppo, diff = r["svpg best particle"], r["SB3 PPO"], r["svpg − PPO, paired [95 % interval]"]
        if best == NOT_MEASURED:
            parts.append(f"{r['task (steps)']}: {NOT_MEASURED}")
        elif ppo == "–":
            parts.append(f"{r['task (steps)']}: best particle {best} (PPO not run)")
        else:
            parts.append(f"{r['task (steps)']}: best particle {best} against PPO's {ppo}, {diff} ({_side(diff)})")
    return "; ".join(parts)


def _overview_throughput(rows: list[dict]) -> str:
    methods = [r for r in quoted_cells(rows, "throughput") if r["S²VGD (K = 1)"] != NOT_MEASURED]
    batched = [r for r in quoted_cells(rows, "throughput-seed-batch") if r["gain"] != NOT_MEASURED]
    if not methods:
        return NOT_MEASURED
    text = (
        f"S²VGD (M = 16) {_span([_value(r['S²VGD (K = 1)']) for r in methods], '{:,.0f}')} steps/s, "
        f"{_span([_value(r['S²VGD ÷ SB3']) for r in methods], '{:.0f}')}× SB3 A2C's in the same run"
    )
    if batched:
        text += f"; five seeds batched in one run {_span([_value(r['gain']) for r in batched], '{:.2f}')}× one seed's"
    return text


def _overview_paper_grid(rows: list[dict]) -> str:
    labels = {"s2vgd": "S²VGD", "svgd": "SVGD", "svgd-star": "SVGD\\*", "independent": "independent"}
    parts = []
    for task, name in (("double pendulum", "paper-grid-double-pendulum"), ("swing-up", "paper-grid-swingup")):
        cells = {(r["method"], r["estimator"]): r for r in quoted_cells(rows, name)}
        for column, what in (("peak max", "best particle"), ("peak mean", "mean over particles")):
            pairs = ", ".join(
                f"{label} {' / '.join(cells.get((method, e), {}).get(column) or NOT_MEASURED for e in PAPER_ESTIMATORS)}"
                for method, label in labels.items()
            )
            parts.append(f"{task}, {what}: {pairs}")
    return "peak return, REINFORCE / A2C: " + "; ".join(parts)


def _overview_benchmark(rows: list[dict]) -> str:
    from svpg.studies.benchmark import BENCHMARK_TASKS

    parts, shown = [], set()
    for r in quoted_cells(rows, "benchmark-summary"):
        task = r["task, environment steps"]
        shown.add(task.split(",")[0])
        diff = r["S²VGD − PPO (95 % CI)"]
        a2c = r["SB3 A2C (rl-zoo3)"]
        parts.append(
            f"{task}: S²VGD {r['svpg S²VGD']}, PPO {r['SB3 PPO (rl-zoo3)']}{f', A2C {a2c}' if a2c != '–' else ''}; "
            f"S²VGD − PPO {diff} ({_side(diff)}); minutes per run, S²VGD / PPO: {r['wall-clock per run, S²VGD / PPO (min)']}"
        )
    missing = [task for task in BENCHMARK_TASKS if task not in shown]
    if missing:
        parts.append(f"{', '.join(missing)}: {NOT_YET}")
    return ". ".join(parts)


def _overview_ablation(rows: list[dict]) -> str:
    tuned, parts = ABLATION_CELLS[0], []
    for task, name in (("swing-up", "ablation-swingup"), ("double pendulum", "ablation-double-pendulum")):
        times = {r["estimator"]: r for r in quoted_cells(rows, f"{name}-time")}
        cells = {(r["estimator"], r["cell"].strip("`")): r for r in quoted_cells(rows, name)}
        for estimator in PAPER_ESTIMATORS:
            label, ours = ESTIMATOR_LABELS[estimator], cells.get((estimator, tuned))
            if ours is None or ours["peak best"] == NOT_MEASURED:
                parts.append(f"{task}, {label}: {NOT_MEASURED}")
                continue
            final, peak = ours["Δ final mean"], ours["Δ peak best"]
            parts.append(
                f"{task}, {label}: halfway in {times[label][f'`{tuned}`']} iterations against SVGD's "
                f"{times[label]['`svgd`']}, final mean over particles − SVGD {final} ({_side(final)}), "
                f"peak best particle − SVGD {peak} ({_side(peak)})"
            )
    return "; ".join(parts)


REGRET, AGAINST_S2VGD = "normalised regret (uniform = 100)", "minus S²VGD: mean [95 % CI]"


def _overview_bandits(rows: list[dict]) -> str:
    def agent(row: dict) -> str:
        return row["agent"].strip("*")

    wheel = []
    for r in quoted_cells(rows, "bandit-wheel"):
        if r["agent"].startswith("*"):  # the second half: reward / optimal reward
            break
        if agent(r) == "s2vgd":
            wheel = [f"{k} {v.split(' ±')[0]}" for k, v in r.items() if k.startswith("δ")]
    parts = [f"wheel {', '.join(wheel)}" if wheel else f"wheel {NOT_MEASURED}"]
    problems = (("mushroom", "bandit-mushroom"), ("Statlog", "bandit-showdown-statlog"),
                ("Covertype", "bandit-showdown-covertype"), ("Financial", "bandit-showdown-financial"),
                ("Adult", "bandit-showdown-adult"))  # fmt: skip
    for label, name in problems:
        measured = [r for r in quoted_cells(rows, name) if r[REGRET] not in (NOT_MEASURED, "")]
        ours = next((r[REGRET] for r in measured if agent(r) == "s2vgd"), None)
        if ours is None:
            parts.append(f"{label} {NOT_MEASURED}")
            continue
        # agents whose paired regret minus S²VGD's has its whole 95 % interval below zero
        lower = sorted((_value(r[REGRET]), agent(r)) for r in measured if _side(r[AGAINST_S2VGD]) == "behind")
        below = ", ".join(f"{a} {v:.2f}" for v, a in lower) or "none"
        parts.append(f"{label} {ours.split(' ±')[0]} (lower with 95 % confidence: {below})")
    return "S²VGD's normalised regret (uniform = 100): " + "; ".join(parts)


def _overview_supervised(rows: list[dict]) -> str:
    uci = []
    for r in quoted_cells(rows, "supervised-table1"):
        ours, svgd = r["S²VGD (ours) RMSE / LL"], r["SVGD (ours)"]
        if ours == NOT_MEASURED or not svgd:
            uci.append(f"{r['data set']} {NOT_MEASURED}")
            continue
        diff = r["S²VGD − SVGD [95 %] RMSE / LL"].split(" / ")[0]
        side = _side(diff, lower_is_better=True)
        uci.append(f"{r['data set']} {ours.split(' ±')[0]} vs {svgd.split(' ±')[0]} ({diff}, {side})")
    mnist = []
    for r in quoted_cells(rows, "supervised-mnist"):
        paper = f" against the paper's {r[next(k for k in r if k.startswith('paper'))]}"
        mnist.append(f"{r['method']} {r['test error']}{paper if r['test error'] != NOT_MEASURED else ''}")
    eq14 = [f"{r['method']} {r['test error']}" + (f" ({r['test error after 100 epochs (`--keep-epoch last`)']} "
            "after 100 epochs)" if r["test error"] != NOT_MEASURED else "")
            for r in quoted_cells(rows, "supervised-mnist-eq14")]  # fmt: skip
    fashion = [f"{r['method']} {r['test error'] or r['best epoch (validation NLL)']}"
               for r in quoted_cells(rows, "supervised-fashion-mnist")]  # fmt: skip
    return (
        f"test RMSE, S²VGD vs SVGD (paired by split): {'; '.join(uci)}. MNIST test error after 100 epochs: "
        f"{'; '.join(mnist)}; under eq. 14's prior, the best epoch's: {'; '.join(eq14)}. "
        f"Fashion-MNIST test error: {'; '.join(fashion)}"
    )


def _overview_budget(budget: str, reference: str):
    def build(rows: list[dict]) -> str:
        cells = [r for r in quoted_cells(rows, f"benchmark-{budget}") if r["seeds"] != NOT_YET]
        diff_column = f"− {reference} (95 % CI)"
        by_task: dict[str, list[str]] = {}
        for r in cells:
            text = f"{r['agent']} {r['final return']} ({counted(int(r['seeds']), 'seed')}"
            if r["mean over particles"] != "–":
                text += f"; mean over particles {r['mean over particles']}"
            if r[diff_column] != "–":  # one seed has a difference but no interval, so no side
                side = _side(r[diff_column])
                text += f"; − {reference} {r[diff_column]}" + (f", {side}" if side else "")
            by_task.setdefault(r["task"], []).append(text + f"; minutes per run {r['wall-clock per run (min)']})")
        runs = sum(int(r["seeds"]) for r in cells)
        planned = _budget_plan(budget).planned_runs()
        done = f"{runs} of {planned} runs so far: " if runs < planned else ""
        return done + "; ".join(f"{task}: {', '.join(parts)}" for task, parts in by_task.items()) if cells else NOT_YET

    return build


#: the overview's rows: (experiment, what its headline quotes, the page and anchor)
OVERVIEW = (
    ("`svpg.SVPG(env_id)` with its defaults against SB3 PPO's defaults, same steps, seeds 0–4",
     _overview_defaults, "results.md#the-defaults-on-tasks-without-a-preset-against-sb3-ppo"),
    ("`python bench/throughput.py`: environment steps per second of whole training iterations, one thread",
     _overview_throughput, "results.md#throughput"),
    ("swing-up and double-pendulum grids, 4 methods × 2 estimators × 5 seeds", _overview_paper_grid,
     "results.md#the-papers-grid-swing-up-and-double-pendulum"),
    ("`python -m svpg.studies.benchmark --tasks <task> --seeds 0-4`: S²VGD against SB3 PPO and A2C (rl-zoo3's "
     "hyperparameters) at equal environment steps", _overview_benchmark, "benchmarks.md#results"),
    ("`python -m svpg.studies.ablation`: K × prior × α tuned on seeds 100–104, the winner "
     f"(`{ABLATION_CELLS[0]}`) against SVGD on seeds 0–9", _overview_ablation, "rl.md#what-the-ablation-found"),
    ("wheel and mushroom bandits; the Showdown's Statlog, Covertype, Financial and Adult", _overview_bandits,
     "bandits.md#results"),
    ("the nine UCI sets of Table 1 on their standard splits, MNIST's Table 2, Fashion-MNIST", _overview_supervised,
     "supervised.md#results"),
    ("`python -m svpg.studies.benchmark --budget off-policy`: the SAC and TD3 estimators against SB3 SAC and TD3 at "
     "300k steps on Hopper-v5, HalfCheetah-v5, Walker2d-v5", _overview_budget("off-policy", "SAC"),
     "benchmarks.md#off-policy-svpgs-sac-and-td3-estimators-against-sac-and-td3"),
    ("`python -m svpg.studies.benchmark --budget spaces`: S²VGD against SB3 PPO on MinAtar Breakout (images, 1M "
     "steps), a goal-conditioned `Dict` task and a `MultiDiscrete` one (100k each)", _overview_budget("spaces", "PPO"),
     "benchmarks.md#observation-and-action-spaces"),
)  # fmt: skip


def _overview(rows: list[dict]) -> str:
    table = []
    for experiment, headline, page in OVERVIEW:
        file = page.partition("#")[0]
        table.append([experiment, headline(rows), f"[{file}](docs/{page})"])
    return render_table(["experiment", "headline", "page"], table, "lll")


register(
    Summary(
        name="results-overview",
        doc="README.md",
        source="bench/results/",
        build=_overview,
        command="python -m svpg.report",
        compute="seconds",
        quotes=("defaults-vs-sb3-ppo", "throughput", "throughput-seed-batch", "paper-grid-double-pendulum",
                "paper-grid-swingup", "benchmark-summary", "ablation-swingup", "ablation-swingup-time",
                "ablation-double-pendulum", "ablation-double-pendulum-time", "bandit-wheel", "bandit-mushroom",
                "bandit-showdown-statlog", "bandit-showdown-covertype", "bandit-showdown-financial",
                "bandit-showdown-adult", "supervised-table1", "supervised-mnist", "supervised-mnist-eq14",
                "supervised-fashion-mnist", "benchmark-off-policy", "benchmark-spaces"),
    )
)  # fmt: skip
