"""The figures the documents' prose quotes, each formatted from the rows of a registered table's result file.

In a document a quoted figure stands between ``<!-- quote:TABLE/KEY -->`` and ``<!-- /quote -->``;
``python -m svpg.report`` rewrites it from TABLE's rows and ``--check`` names one the rows no longer give, as
for the tables (:mod:`svpg.report_tables`). The builders below pick runs by their fields (``agent``,
``options``, …; a missing field reads as empty) and format as the prose writes numbers: thousands separated,
Unicode minus signs.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from svpg.report import doc_number, register_quotes, table_cells
from svpg.report_tables import SAC_HOPPER_CANDIDATES
from svpg.stats import mean_se, paired_difference

#: a quoted figure: a function of the table's rows and its Markdown as built
Quote = Callable[[list[dict], str], str]


def prose_number(value: float, digits: int = 1, sign: bool = False) -> str:
    """``value`` as the prose writes it: ``2,416.2``, ``−3,304``; ``sign``: ``+`` before a positive one."""
    return doc_number(f"{value:{'+' if sign else ''},.{digits}f}")


def _matches(row: dict, match: dict) -> bool:
    """Whether the row's fields equal ``match`` (a missing or null field reads as "")."""
    return all(str(row.get(k) or "") == str(v) for k, v in match.items())


def by_seed(rows: list[dict], metric: str = "final", **match) -> dict[int, float]:
    """seed (a supervised row's split) → ``metric`` of the rows whose fields equal ``match`` (a missing or null
    field reads as "")."""
    out = {}
    for r in rows:
        if _matches(r, match) and r.get(metric) not in ("", None):
            out[int(r["seed"] if "seed" in r else r["split"])] = float(r[metric])  # a supervised unit is a split
    if not out:
        raise ValueError(f"no rows with {metric} for {match}: the quote picks runs the result file does not have")
    return out


def mean(metric: str = "final", digits: int = 1, scale: float = 1.0, **match) -> Quote:
    """The mean over seeds (times ``scale``: 1 / 60 turns ``wall_s`` into minutes)."""
    return lambda rows, _: prose_number(scale * mean_se(list(by_seed(rows, metric, **match).values()))[0], digits)


def at_seed(seed: int, metric: str = "final", digits: int = 1, **match) -> Quote:
    """One seed's value."""
    return lambda rows, _: prose_number(by_seed(rows, metric, **match)[seed], digits)


def spread(metric: str = "final", digits: int = 0, join: str = " to ", but: tuple[int, ...] = (), **match) -> Quote:
    """The lowest and highest value over the seeds (those in ``but`` left out): ``1,463 to 2,657``."""

    def value(rows: list[dict], _: str) -> str:
        values = [v for seed, v in by_seed(rows, metric, **match).items() if seed not in but]
        return f"{prose_number(min(values), digits)}{join}{prose_number(max(values), digits)}"

    return value


def seeds_list(seeds: tuple[int, ...], metric: str = "final", digits: int = 1, **match) -> Quote:
    """The values of ``seeds`` in that order: ``13.1, 14.5 and 12.3``."""

    def value(rows: list[dict], _: str) -> str:
        values = by_seed(rows, metric, **match)
        text = [prose_number(values[k], digits) for k in seeds]
        return ", ".join(text[:-1]) + f" and {text[-1]}" if len(text) > 1 else text[0]

    return value


def highest(metric: str = "final", digits: int = 0, but: tuple[int, ...] = (), **match) -> Quote:
    """The highest value over the seeds (those in ``but`` left out)."""
    return lambda rows, _: prose_number(
        max(v for k, v in by_seed(rows, metric, **match).items() if k not in but), digits
    )


def lowest(metric: str = "final", digits: int = 0, **match) -> Quote:
    """The lowest value over the seeds."""
    return lambda rows, _: prose_number(min(by_seed(rows, metric, **match).values()), digits)


def count(predicate: Callable[[float], bool], metric: str = "final", **match) -> Quote:
    """How many seeds' values satisfy ``predicate`` (a numeral)."""
    return lambda rows, _: str(sum(predicate(v) for v in by_seed(rows, metric, **match).values()))


def steps_to(threshold: float, **match) -> Quote:
    """The environment steps at which each matching run's training curve (its best particle's return; SB3's
    mean episode return) first reaches ``threshold``, lowest to highest over the seeds: ``52,000`` or
    ``52,000 to 96,000``, with the seeds that never reach it counted: ``…; never on 1 seed``."""

    def value(rows: list[dict], _: str) -> str:
        picked = [r for r in rows if _matches(r, match) and r.get("curve")]
        if not picked:
            raise ValueError(f"no rows with a curve for {match}: the quote picks runs the result file does not have")
        firsts = [next((step for step, ret, *_ in json.loads(r["curve"]) if ret >= threshold), None) for r in picked]
        reached = sorted(step for step in firsts if step is not None)
        never = len(firsts) - len(reached)
        parts = [f"{reached[0]:,}" + (f" to {reached[-1]:,}" if reached[-1] > reached[0] else "")] if reached else []
        if never:
            parts.append(f"never on {never} seed{'s' if never > 1 else ''}")
        return "; ".join(parts)

    return value


def behind_count(where: tuple[str, str], agent: str, reference: str, metric: str = "final") -> Quote:
    """On how many of the seeds both have the agent ends below the reference: ``3 of 5``."""

    def value(rows: list[dict], _: str) -> str:
        field, equal = where
        ours = by_seed(rows, metric, **{field: equal, "agent": agent})
        theirs = by_seed(rows, metric, **{field: equal, "agent": reference})
        paired = sorted(set(ours) & set(theirs))
        return f"{sum(ours[k] < theirs[k] for k in paired)} of {len(paired)}"

    return value


def _with_interval(diff: float, low: float, high: float, digits: int) -> str:
    """A paired difference with its 95 % interval as the prose writes it: ``+2,416 [+2,181, +2,651]``."""
    return f"{prose_number(diff, digits, True)} [{prose_number(low, digits, True)}, {prose_number(high, digits, True)}]"


def difference(a: dict, b: dict, metric: str = "final", digits: int = 1, interval: bool = True) -> Quote:
    """The paired difference a − b by seed with its 95 % t-interval: ``+2,416 [+2,181, +2,651]``; a and b are
    ``match`` dicts of :func:`by_seed`. ``interval=False``: the mean difference alone."""

    def value(rows: list[dict], _: str) -> str:
        _pairs, diff, low, high = paired_difference(by_seed(rows, metric, **a), by_seed(rows, metric, **b))
        if not interval or math.isnan(low):
            return prose_number(diff, digits, sign=True)
        return _with_interval(diff, low, high, digits)

    return value


def ratio(a: dict, b: dict, metric: str = "final", digits: int = 1, percent: bool = False) -> Quote:
    """The ratio of the mean over seeds of a to that of b (``percent``: as a whole percentage)."""

    def value(rows: list[dict], _: str) -> str:
        x = (
            mean_se(list(by_seed(rows, metric, **a).values()))[0]
            / mean_se(list(by_seed(rows, metric, **b).values()))[0]
        )
        return f"{100 * x:.0f} %" if percent else prose_number(x, digits)

    return value


def total_hours(tasks: tuple[str, ...], digits: int = 1, **match) -> Quote:
    """The training hours (``wall_s``) of the runs of ``tasks`` matching ``match``."""

    def value(rows: list[dict], _: str) -> str:
        picked = [r for r in rows if r["task"] in tasks and _matches(r, match)]
        return prose_number(sum(float(r["wall_s"]) for r in picked) / 3600, digits)

    return value


def runs(tasks: tuple[str, ...]) -> Quote:
    """How many runs of ``tasks`` the rows hold."""
    return lambda rows, _: str(sum(r["task"] in tasks for r in rows))


def _rows_of(markdown: str, first: tuple[str, ...] | None, where: dict) -> list[dict[str, str]]:
    """The rows of the table as built whose first cell is one of ``first`` (None: any) and whose cells equal
    ``where`` (header → cell; a header with spaces is given with underscores)."""
    wanted = {k.replace("_", " "): v for k, v in where.items()}
    return [
        r
        for r in table_cells(markdown)
        if all(r.get(k) == v for k, v in wanted.items()) and (first is None or next(iter(r.values())) in first)
    ]


def cell(column: str, row: str | None = None, part: str = "all", nth: int | None = None, **where) -> Quote:
    """A cell of the table as built, column ``column``, in the row whose first cell is ``row`` and whose cells
    equal ``where`` (header → cell; a header with spaces is given with underscores); ``part``: "mean" the
    figure before " ±" (or a paired difference's before its interval), "se" the one after " ±", "reached" how
    many seeds of how many reached τ, "ratio" the ``(1.03×)`` of a timing, "all" the whole cell. ``nth``: of
    several such rows (a table in parts), the nth."""

    def value(_: list[dict], markdown: str) -> str:
        rows = _rows_of(markdown, None if row is None else (row,), where)
        if nth is not None:  # a table with parts (the wheel's regret, then its reward ratio): the nth such row
            rows = rows[nth : nth + 1]
        if len(rows) != 1:
            raise ValueError(f"{len(rows)} rows of the table have {row or ''} {where}: the quote needs exactly one")
        text = rows[0][column]
        if part == "ratio":  # "1,872 (1.03×)" → "1.03×"
            return re.search(r"\(([^)]*×)\)", text).group(1)  # type: ignore[union-attr]
        if part == "reached":  # iterations to τ: "654 ± 52 (7/10)" → "7 of 10"
            reached, seeds = re.search(r"\((\d+)/(\d+)\)", text).groups()  # type: ignore[union-attr]
            return f"{reached} of {seeds}"
        return {"all": text, "mean": re.split(r" ± | \[| \(", text)[0], "se": text.partition(" ± ")[2]}[part]

    return value


def se_spread(
    column: str, digits: int = 0, among: tuple[str, ...] | None = None, plus_minus: bool = False, **where
) -> Quote:
    """The lowest and highest ± of column ``column`` over the rows matching ``where`` (and, given ``among``, whose
    first cell is one of those): ``19 to 62``; ``plus_minus``: ``±1.0 to ±1.4``."""
    sign = "±" if plus_minus else ""

    def value(_: list[dict], markdown: str) -> str:
        rows = _rows_of(markdown, among, where)
        ses = [float(r[column].partition(" ± ")[2].replace(",", "")) for r in rows if " ± " in r[column]]
        return f"{sign}{prose_number(min(ses), digits)} to {sign}{prose_number(max(ses), digits)}"

    return value


# -- docs/benchmarks.md ---------------------------------------------------------------------------------------
#: the runs a quote picks, as ``by_seed``'s ``match`` (Any: they go to builders as keyword arguments)
S2VGD: dict[str, Any] = {"agent": "s2vgd"}
SVGD: dict[str, Any] = {"agent": "svgd"}
PPO: dict[str, Any] = {"agent": "ppo"}
A2C: dict[str, Any] = {"agent": "a2c"}
FIRST_FIVE = ("Pendulum-v1", "InvertedDoublePendulum-v5", "Hopper-v5", "HalfCheetah-v5", "MountainCarContinuous-v0")
CEILING = 9_300  # InvertedDoublePendulum-v5: a return at the task's ceiling (about 9,350)

register_quotes(
    "benchmark-summary",
    {
        "runs": runs(FIRST_FIVE),
        "hours": total_hours(FIRST_FIVE),
        **{f"hours-{a['agent']}": total_hours(FIRST_FIVE, **a) for a in (S2VGD, SVGD, PPO, A2C)},
    },
)
register_quotes(
    "benchmark-idp",
    {
        "svgd-at-ceiling": count(lambda v: v >= CEILING, **SVGD),
        "s2vgd-at-ceiling": count(lambda v: v >= CEILING, **S2VGD),
        "ppo-others": spread(join=" and ", but=(0,), **PPO),
        "s2vgd-ppo": difference(S2VGD, PPO, digits=0),
        "svgd-ppo": difference(SVGD, PPO, digits=0),
        "s2vgd-particles": mean("final_particle_mean", 0, **S2VGD),
        "svgd-particles": mean("final_particle_mean", 0, **SVGD),
        "a2c": mean(**A2C),
        "a2c-highest": highest(**A2C),
    },
)
register_quotes(
    "benchmark-hopper",
    {
        "s2vgd-ppo": difference(S2VGD, PPO, digits=0),
        "s2vgd-spread": spread(join=" and ", **S2VGD),
        "ppo-seed2": at_seed(2, digits=0, **PPO),
        "ppo-seed4": at_seed(4, digits=0, **PPO),
        "svgd-seed0": at_seed(0, digits=0, **SVGD),
        "svgd-others": spread(but=(0,), **SVGD),
        "s2vgd-particles": mean("final_particle_mean", 0, **S2VGD),
        "svgd-particles": mean("final_particle_mean", 0, **SVGD),
        "ppo": mean(**PPO),
        "a2c": mean(**A2C),
        "a2c-ppo": difference(A2C, PPO, digits=0),
        "a2c-spread": spread(**A2C),
    },
)
register_quotes(
    "benchmark-halfcheetah",
    {
        "s2vgd-ppo": difference(S2VGD, PPO, digits=0),
        "s2vgd-of-ppo": ratio(S2VGD, PPO, percent=True),
        "s2vgd-spread": spread(**S2VGD),
        "ppo-spread": spread(**PPO),
        "ppo": mean(**PPO),
        "ppo-wall-clock": ratio(PPO, S2VGD, "wall_s"),
        "a2c": mean(**A2C),
        "a2c-spread": spread(**A2C),
    },
)
register_quotes(
    "benchmark-walker2d",
    {
        "s2vgd-ppo": difference(S2VGD, PPO),
        "ppo-seed0": at_seed(0, **PPO),
        "ppo-auc": mean("auc", **PPO),
        "s2vgd-auc": mean("auc", **S2VGD),
        "s2vgd-ppo-auc": difference(S2VGD, PPO, "auc"),
        "ppo": mean(**PPO),
        "s2vgd-spread": spread(digits=1, **S2VGD),
    },
)
register_quotes(
    "benchmark-mcc",
    {
        "ppo": mean(**PPO),
        "ppo-unsolved": count(lambda v: v < 90, **PPO),
        "s2vgd-a2c": difference(S2VGD, A2C),
        "s2vgd-a2c-mean": difference(S2VGD, A2C, interval=False),
        "a2c-wall-clock": mean("wall_s", 2, 1 / 60, **A2C),
    },
)
register_quotes(
    "benchmark-pendulum",
    {
        "ppo": mean(**PPO),
        "s2vgd-ppo": difference(S2VGD, PPO, digits=0),
    },
)
register_quotes(
    "a2c-halfcheetah-screen",
    {
        "zoo": mean(options=""),
        "no-reward-norm": mean(options='{"normalize": {"norm_reward": false}}'),
        "no-reward-norm-lowest": lowest(digits=1, options='{"normalize": {"norm_reward": false}}'),
    },
)

#: the on-policy screens' candidates (their ``options``, as the result files record them)
DEFAULTS: dict[str, Any] = {"agent": "s2vgd", "options": ""}
LOG_STD_2: dict[str, Any] = {"agent": "s2vgd", "options": '{"log_std_init": -2.0}'}
LOG_STD_1: dict[str, Any] = {"agent": "s2vgd", "options": '{"log_std_init": -1.0}'}
register_quotes(
    "halfcheetah-screen",
    {
        "defaults": mean(**DEFAULTS),
        "log-std-2": mean(**LOG_STD_2),
        "defaults-particles": mean("final_particle_mean", **DEFAULTS),
        "log-std-2-particles": mean("final_particle_mean", **LOG_STD_2),
        "more-steps": mean(agent="s2vgd", options='{"ppo_epochs": 20, "ppo_minibatches": 64}'),
        "width": mean(agent="s2vgd", options='{"hidden": [256, 256]}'),
        "width-log-std-2": mean(agent="s2vgd", options='{"hidden": [256, 256], "log_std_init": -2.0}'),
        "gamma": mean(agent="s2vgd", options='{"gamma": 0.98}'),
        "log-std-1": mean(**LOG_STD_1),
        "ppo": mean(**PPO),
    },
)
register_quotes(
    "mujoco-screen",
    {"defaults": mean(**DEFAULTS), "log-std-2": mean(**LOG_STD_2), "log-std-1": mean(**LOG_STD_1)},
)

BREAKOUT, REACH, KNOBS = "MinAtar/Breakout-v1", "svpg/PointReach-v0", "svpg/Knobs-v0"
register_quotes(
    "benchmark-spaces",
    {
        **{
            f"{slug}-{key}": quote
            for slug, task in (("reach", REACH), ("knobs", KNOBS), ("breakout", BREAKOUT))
            for key, quote in (
                ("s2vgd", mean(task=task, **S2VGD)),
                ("ppo", mean(task=task, **PPO)),
                ("s2vgd-ppo", difference({"task": task, **S2VGD}, {"task": task, **PPO})),
                ("s2vgd-ppo-auc", difference({"task": task, **S2VGD}, {"task": task, **PPO}, "auc")),
            )
        },
        "breakout-s2vgd-seed2": at_seed(2, task=BREAKOUT, **S2VGD),
        "breakout-ppo-seed2": at_seed(2, task=BREAKOUT, **PPO),
        "breakout-s2vgd-auc": mean("auc", task=BREAKOUT, **S2VGD),
        "breakout-ppo-auc": mean("auc", task=BREAKOUT, **PPO),
        "breakout-s2vgd-spread": spread(digits=1, task=BREAKOUT, **S2VGD),
        "breakout-s2vgd-particles-spread": spread("final_particle_mean", 1, task=BREAKOUT, **S2VGD),
        "breakout-ppo-spread": spread(digits=1, task=BREAKOUT, **PPO),
    },
)


# -- docs/results.md ------------------------------------------------------------------------------------------
def _grid(method: str, estimator: str, column: str, part: str = "all") -> Quote:
    return cell(column, part=part, method=method, estimator=estimator)


register_quotes(
    "paper-grid-double-pendulum",
    {
        "s2vgd-reinforce-peak": _grid("s2vgd", "reinforce", "peak max"),
        "svgd-reinforce-peak": _grid("svgd", "reinforce", "peak max"),
        "s2vgd-a2c-peak": _grid("s2vgd", "a2c", "peak max"),
        "svgd-a2c-peak": _grid("svgd", "a2c", "peak max"),
        "s2vgd-a2c-peak-mean": _grid("s2vgd", "a2c", "peak mean"),
        "svgd-a2c-peak-mean": _grid("svgd", "a2c", "peak mean"),
        "final-mean-se": se_spread("final mean"),
        "svgd-star-reinforce-peak": _grid("svgd-star", "reinforce", "peak max"),
        "svgd-star-a2c-peak": _grid("svgd-star", "a2c", "peak max"),
    },
)
register_quotes(
    "paper-grid-swingup",
    {
        "s2vgd-reinforce-peak": _grid("s2vgd", "reinforce", "peak max"),
        "svgd-reinforce-peak": _grid("svgd", "reinforce", "peak max"),
        "s2vgd-a2c-peak": _grid("s2vgd", "a2c", "peak max"),
        "svgd-a2c-peak": _grid("svgd", "a2c", "peak max"),
        "s2vgd-reinforce-final-mean": _grid("s2vgd", "reinforce", "final mean", "mean"),
        "svgd-reinforce-final-mean": _grid("svgd", "reinforce", "final mean", "mean"),
        "s2vgd-a2c-final-mean": _grid("s2vgd", "a2c", "final mean", "mean"),
        "svgd-a2c-final-mean": _grid("svgd", "a2c", "final mean", "mean"),
    },
)


# -- docs/rl.md -----------------------------------------------------------------------------------------------
PENDULUM, MCC = "Pendulum-v1: best particle", "MountainCarContinuous-v0: best particle"
MCC_MEAN = "MountainCarContinuous-v0: mean over particles"
register_quotes(
    "generic-defaults-screen",
    {
        "defaults": cell(PENDULUM, "α = 100 (the defaults)"),
        "alpha1": cell(PENDULUM, "none (α = 1)"),
        "alpha10": cell(PENDULUM, "α = 10"),
        "m8": cell(PENDULUM, "8 particles"),
        "m2": cell(PENDULUM, "2 particles"),
        "svgd": cell(PENDULUM, "plain SVGD layers"),
        "small": cell(PENDULUM, "25,10 networks"),
        "mvg": cell(PENDULUM, "the eq. 14 prior"),
        "anneal": cell(PENDULUM, "learning rates annealed to 0"),
        "epochs5": cell(PENDULUM, "5 PPO epochs"),
        "norew": cell(PENDULUM, "no reward scaling"),
        "gamma95": cell(PENDULUM, "γ = 0.95"),
        "samples1024": cell(PENDULUM, "α = 100, 1024 samples per particle"),
        "mcc-defaults": cell(MCC, "α = 100 (the defaults)", "mean"),
        "mcc-alpha1": cell(MCC, "none (α = 1)", "mean"),
        "mcc-defaults-particles": cell(MCC_MEAN, "α = 100 (the defaults)", "mean"),
        "mcc-alpha1-particles": cell(MCC_MEAN, "none (α = 1)", "mean"),
        "mcc-lr-particles": cell(MCC_MEAN, "learning rates 1e-3", "mean"),
    },
)

SAC_DEFAULTS: dict[str, Any] = {"options": "{}"}
SAC_HOPPER_DEFAULTS = SAC_HOPPER_CANDIDATES["{}"]
SHARED_CRITICS: dict[str, Any] = {"options": '{"critics": "shared", "gradient_steps": -1}'}


def _best_minus_sac(rows: list[dict], _: str) -> str:
    """The defaults' best particle (``eval_best``) minus SB3 SAC's final return, seed by seed."""
    best, sac = by_seed(rows, "eval_best", **SAC_DEFAULTS), by_seed(rows, "final", agent="sac")
    return " and ".join(prose_number(best[k] - sac[k], sign=True) for k in sorted(set(best) & set(sac)))


def _shared_wall_clock(rows: list[dict], _: str) -> str:
    """The shared critics' seconds per run over the defaults' on the seed both ran."""
    shared, own = by_seed(rows, "seconds", **SHARED_CRITICS), by_seed(rows, "seconds", **SAC_DEFAULTS)
    (seed,) = set(shared) & set(own)
    return prose_number(shared[seed] / own[seed])


register_quotes(
    "sac-defaults-hopper",
    {
        "defaults-sac": cell("− SAC (95 % CI)", SAC_HOPPER_DEFAULTS, "mean"),
        "defaults-sac-seeds": _best_minus_sac,
        "shared-wall-clock": _shared_wall_clock,
        "shared-best": at_seed(100, "eval_best", **SHARED_CRITICS),
        "shared-train-best": at_seed(100, "train_best", **SHARED_CRITICS),
        "shared-train-mean": at_seed(100, "train_mean", **SHARED_CRITICS),
        "defaults-train-best": at_seed(100, "train_best", **SAC_DEFAULTS),
        "defaults-train-mean": at_seed(100, "train_mean", **SAC_DEFAULTS),
    },
)


# -- docs/rl.md: the structure ablation ----------------------------------------------------------------------
WINNER = "s2vgd-K1-flat-a300"
ESTIMATORS = ("reinforce", "a2c")


def _ablation(column: str, cell_name: str, estimator: str, part: str = "all") -> Quote:
    """A cell of an ablation table: ``column`` of ``cell_name``'s row under ``estimator``."""
    return cell(column, estimator, part, cell=f"`{cell_name}`")


def _halfway(cell_name: str, estimator: str) -> Quote:
    """Iterations to halfway of ``cell_name`` (the time table's mean)."""
    return cell(f"`{cell_name}`", {"reinforce": "REINFORCE", "a2c": "A2C"}[estimator], "mean")


_AGAINST: dict[tuple[int, str, str], tuple[list[dict], dict]] = {}


def _ablation_against(rows: list[dict], task: str, reference: str) -> dict:
    """The ablation's metrics against ``reference``, computed once per rebuild's rows (several quotes read them)."""
    from svpg.report_tables import _ablation_metrics
    from svpg.studies.ablation_analysis import THRESHOLD

    key = (id(rows), task, reference)
    if key not in _AGAINST or _AGAINST[key][0] is not rows:
        _AGAINST.clear()  # keep only the current rows (and so the memory of one rebuild)
        _AGAINST[key] = rows, _ablation_metrics(rows, task, THRESHOLD, reference)
    return _AGAINST[key][1]


def _against(task: str, cell_name: str, reference: str, estimator: str, metric: str) -> Quote:
    """The paired difference ``cell_name`` − ``reference`` by seed of ``metric`` (peak_best, final_mean) with its
    95 % t-interval, as the ablation table writes its Δ columns against ``svgd``."""

    def value(rows: list[dict], _: str) -> str:
        from svpg.studies.ablation_analysis import _interval

        r = _ablation_against(rows, task, reference)[(cell_name, estimator)]
        return doc_number(_interval(r[f"d_{metric}"], r[f"d_{metric}_lo"], r[f"d_{metric}_hi"]))

    return value


for _slug, _control in (("swingup", "svgd"), ("double-pendulum", "svgd-a300")):  # the control each paragraph names
    register_quotes(
        f"ablation-{_slug}-time",
        {f"halfway-{c}-{e}": _halfway(c, e) for c in (WINNER, _control) for e in ESTIMATORS},
    )


def _ablation_quotes(task: str) -> dict[str, Quote]:
    """What both ablation paragraphs quote: iterations to τ and the action KL of the winner and SVGD, and the
    winner against plain SVGD at its α (paired by seed)."""
    return {
        **{
            f"tau-{c}-{e}": _ablation("iterations to τ (reached)", c, e, "mean")
            for c in (WINNER, "svgd")
            for e in ESTIMATORS
        },
        **{f"kl-{c}-{e}": _ablation("action KL", c, e) for c in (WINNER, "svgd") for e in ESTIMATORS},
        **{
            f"winner-vs-a300-{m}-{e}": _against(task, WINNER, "svgd-a300", e, m)
            for m in ("peak_best", "final_mean")
            for e in ESTIMATORS
        },
    }


register_quotes(
    "ablation-swingup",
    {
        **_ablation_quotes("swingup"),
        "tau-winner-reinforce-reached": _ablation("iterations to τ (reached)", WINNER, "reinforce", "reached"),
    },
)
register_quotes(
    "ablation-double-pendulum",
    {
        **_ablation_quotes("double-pendulum"),
        **{f"d-final-{c}-{e}": _ablation("Δ final mean", c, e) for c in (WINNER, "svgd-a300") for e in ESTIMATORS},
        **{f"d-peak-winner-{e}": _ablation("Δ peak best", WINNER, e) for e in ESTIMATORS},
        "svgd-star-a2c-peak": _ablation("peak best", "svgd-star", "a2c", "mean"),
        "svgd-star-a2c-d-peak": _ablation("Δ peak best", "svgd-star", "a2c"),
    },
)

register_quotes(
    "vec-env",
    {"learn-async": cell("async/2 (steps/s, × sync)", "svpg.SVPG learn iterations (PPO, 4 particles)", "ratio")},
)


# -- docs/bandits.md -----------------------------------------------------------------------------------------
WHEEL_DELTAS = ("0.5", "0.95", "0.99")
REGRET, RATIO, THEIRS = 0, 1, "BADAM (their Table 2)"  # the wheel table's parts: regret rows, then reward ratios
register_quotes(
    "bandit-wheel",
    {
        **{f"badam-regret-{d}": cell(f"δ = {d}", "badam", "mean", REGRET) for d in ("0.5", "0.95")},
        **{f"badam-ratio-{d}": cell(f"δ = {d}", "badam", "mean", RATIO) for d in WHEEL_DELTAS},
        **{f"their-badam-{d}": cell(f"δ = {d}", THEIRS, "mean") for d in WHEEL_DELTAS},
    },
)

MUSHROOM_NEURAL = ("s2vgd", "svgd", "neural-greedy", "bbb", "kflow-diag", "kflow-linear")
REGRET_COLUMN, MINUS, LOWER = "normalised regret (uniform = 100)", "minus S²VGD: mean [95 % CI]", "lower on"


register_quotes(
    "bandit-mushroom",
    {
        "neural-spread": se_spread(REGRET_COLUMN, 1, among=MUSHROOM_NEURAL, plus_minus=True),
        "vmg-spread": cell(REGRET_COLUMN, "vmg", "se"),
        "linucb-seed8": at_seed(8, "normalised_regret", 0, agent="linucb"),
        "linucb-others": highest("normalised_regret", 1, but=(8,), agent="linucb"),
        "svgd-minus": cell(MINUS, "svgd"),
        **{f"{a}-minus": cell(MINUS, a, "mean") for a in ("kflow-linear", "kflow-diag", "bbb", "vmg")},
        **{f"{a}-lower": cell(LOWER, a) for a in ("kflow-linear", "kflow-diag")},
        "badam": cell(REGRET_COLUMN, "badam"),
        "badam-minus": cell(MINUS, "badam"),
        "badam-lower": cell(LOWER, "badam"),
        **{f"{a}-regret": cell(REGRET_COLUMN, a, "mean") for a in ("kflow-linear", "kflow-diag", "neural-greedy")},
    },
)
FIRST_THREE = (0, 1, 2)
register_quotes(
    "bandit-showdown-financial",
    {
        f"{a}-seeds": seeds_list(FIRST_THREE, "normalised_regret", agent=a)
        for a in ("s2vgd", "kflow-linear", "neural-greedy")
    },
)
register_quotes(
    "bandit-showdown-financial-tables",
    {
        **{
            f"{a}-seeds": seeds_list(FIRST_THREE, "normalised_regret", agent=a)
            for a in ("s2vgd", "kflow-linear", "neural-greedy")
        },
        "s2vgd-ratio": cell("reward / optimal", "**s2vgd**", "mean"),
        "kflow-linear-minus": cell(MINUS, "kflow-linear"),
    },
)


# -- docs/supervised.md: the UCI sets of Table 1 (units: the 20 standard splits) ------------------------------
PROSE_LABELS = {"s2vgd": "S²VGD", "svgd": "SVGD", "map": "MAP", "bbb": "BBB", "vmg": "VMG", "kflow-linear": "K-Linear",
                "kflow-diag": "K-Diag", "badam": "BADAM"}  # fmt: skip


def _against_s2vgd(rows: list[dict], dataset: str, method: str, metric: str) -> dict[int, float]:
    """split → the method's ``metric`` minus S²VGD's on that split."""
    own, s2vgd = (
        by_seed(rows, metric, dataset=dataset, method=method),
        by_seed(rows, metric, dataset=dataset, method="s2vgd"),
    )
    return {k: own[k] - s2vgd[k] for k in sorted(set(own) & set(s2vgd))}


def _better(differences: dict[int, float], metric: str) -> int:
    """On how many splits the method beats S²VGD: a lower RMSE, a higher log-likelihood."""
    return sum((d < 0) if metric == "rmse" else (d > 0) for d in differences.values())


def sv_pair(dataset: str, method: str, metric: str, digits: int = 2, style: str = "se", better: bool = False) -> Quote:
    """The method − S²VGD by split: ``+0.20 ± 0.04`` (mean ± standard error, ``style`` "se") or ``+0.47 [+0.37,
    +0.56]`` (with its 95 % t-interval, "ci"); ``better``: followed by `` (2 of 20)``, the splits where it is
    better."""

    def value(rows: list[dict], _: str) -> str:
        diffs = _against_s2vgd(rows, dataset, method, metric)
        mean_, se = mean_se(list(diffs.values()))
        if style == "se":
            text = f"{prose_number(mean_, digits, True)} ± {prose_number(se, digits)}"
        else:
            own = by_seed(rows, metric, dataset=dataset, method=method)
            _pairs, d, low, high = paired_difference(own, by_seed(rows, metric, dataset=dataset, method="s2vgd"))
            text = _with_interval(d, low, high, digits)
        return f"{text} ({_better(diffs, metric)} of {len(diffs)})" if better else text

    return value


def sv_list(dataset: str, methods: tuple[str, ...], metric: str, digits: int = 2, style: str = "se") -> Quote:
    """``SVGD +0.20 ± 0.04 (2 of 20), MAP …``: each method's :func:`sv_pair` with the splits it wins."""
    pairs = [(m, sv_pair(dataset, m, metric, digits, style, better=True)) for m in methods]
    return lambda rows, markdown: ", ".join(f"{PROSE_LABELS[m]} {q(rows, markdown)}" for m, q in pairs)


def sv_better(dataset: str, method: str, metric: str) -> Quote:
    """``18 of 20``: the splits where the method beats S²VGD."""

    def value(rows: list[dict], _: str) -> str:
        diffs = _against_s2vgd(rows, dataset, method, metric)
        return f"{_better(diffs, metric)} of {len(diffs)}"

    return value


def sv_mean(dataset: str, method: str, metric: str, digits: int = 2) -> Quote:
    return mean(metric, digits, dataset=dataset, method=method)


def sv_both(dataset: str, method: str, digits: int = 2, ll_digits: int = 2) -> Quote:
    """``3.06 / −2.53``: the mean RMSE and log-likelihood over splits."""
    rmse, ll = sv_mean(dataset, method, "rmse", digits), sv_mean(dataset, method, "test_ll", ll_digits)
    return lambda rows, markdown: f"{rmse(rows, markdown)} / {ll(rows, markdown)}"


def sv_se(dataset: str, method: str, metric: str, digits: int = 2) -> Quote:
    """The standard error over splits of the method's mean."""
    return lambda rows, _: prose_number(
        mean_se(list(by_seed(rows, metric, dataset=dataset, method=method).values()))[1], digits
    )


def sv_means_range(dataset: str, methods: tuple[str, ...], metric: str, digits: int = 1, join: str = "–") -> Quote:
    """The lowest and highest of the methods' means over splits."""

    def value(rows: list[dict], _: str) -> str:
        means = [mean_se(list(by_seed(rows, metric, dataset=dataset, method=m).values()))[0] for m in methods]
        return f"{prose_number(min(means), digits)}{join}{prose_number(max(means), digits)}"

    return value


def sv_ses_range(dataset: str, methods: tuple[str, ...], metric: str, digits: int = 2) -> Quote:
    """``±0.06 to ±0.07``: the lowest and highest standard error of the methods' means."""

    def value(rows: list[dict], _: str) -> str:
        ses = [mean_se(list(by_seed(rows, metric, dataset=dataset, method=m).values()))[1] for m in methods]
        low, high = prose_number(min(ses), digits), prose_number(max(ses), digits)
        return f"±{low}" if low == high else f"±{low} to ±{high}"

    return value


def sv_worst(dataset: str, method: str, n: int = 3) -> Quote:
    """The ``n`` splits of the method's largest RMSE, in order of split: ``4, 9 and 10``."""

    def value(rows: list[dict], _: str) -> str:
        rmse = by_seed(rows, "rmse", dataset=dataset, method=method)
        worst = sorted(sorted(rmse, key=rmse.get, reverse=True)[:n])  # type: ignore[arg-type]
        return ", ".join(str(k) for k in worst[:-1]) + f" and {worst[-1]}"

    return value


def sv_worst_range(dataset: str, method: str, metric: str, digits: int = 1, join: str = "–", n: int = 3) -> Quote:
    """The range of ``metric`` over the ``n`` splits of the method's largest RMSE."""

    def value(rows: list[dict], _: str) -> str:
        rmse = by_seed(rows, "rmse", dataset=dataset, method=method)
        values = by_seed(rows, metric, dataset=dataset, method=method)
        picked = [values[k] for k in sorted(rmse, key=rmse.get, reverse=True)[:n]]  # type: ignore[arg-type]
        low, high = sorted(picked, key=abs)[0], sorted(picked, key=abs)[-1]
        return f"{prose_number(low, digits)}{join}{prose_number(high, digits)}"

    return value


def sv_hours(dataset: str, digits: int = 0) -> Quote:
    """The hours of training (``seconds``) of the data set's fits."""
    return lambda rows, _: f"{sum(float(r['seconds']) for r in rows if r['dataset'] == dataset) / 3600:.{digits}f}"


B, C, Y, E, K, W, PW, N = "boston", "concrete", "yacht", "energy", "kin8nm", "wine", "power", "naval"
PARAMETRIC = ("bbb", "vmg", "kflow-linear", "kflow-diag")
register_quotes(
    "supervised-boston",
    {
        "s2vgd-rmse": sv_mean(B, "s2vgd", "rmse"),
        "rmse-pairs": sv_list(B, ("svgd", "map", "bbb", "kflow-linear", "kflow-diag", "vmg", "badam"), "rmse"),
        "s2vgd-ll": sv_mean(B, "s2vgd", "test_ll"),
        "svgd-ll-pair": sv_pair(B, "svgd", "test_ll"),
        "svgd-ll-better": sv_better(B, "svgd", "test_ll"),
        "ll-pairs": sv_list(B, ("vmg", "kflow-linear", "kflow-diag", "bbb"), "test_ll"),
        "map-ll-pair": sv_pair(B, "map", "test_ll"),
        "badam-ll-pair": sv_pair(B, "badam", "test_ll"),
        "s2vgd-ll-se": sv_se(B, "s2vgd", "test_ll"),
        "parametric-ll-se": sv_ses_range(B, PARAMETRIC, "test_ll"),
        "s2vgd-worst": sv_worst(B, "s2vgd"),
        "s2vgd-worst-rmse": sv_worst_range(B, "s2vgd", "rmse"),
        "s2vgd-worst-ll": sv_worst_range(B, "s2vgd", "test_ll", join=" to "),
        "svgd-rmse": sv_mean(B, "svgd", "rmse"),
        "svgd-ll": sv_mean(B, "svgd", "test_ll"),
        "vmg": sv_both(B, "vmg"),
        "badam": sv_both(B, "badam"),
    },
)
register_quotes(
    "supervised-concrete",
    {
        "rmse-pairs": sv_list(
            C, ("svgd", "badam", "map", "vmg", "kflow-linear", "bbb", "kflow-diag"), "rmse", style="ci"
        ),
        "ll-pairs": sv_list(
            C, ("vmg", "svgd", "kflow-linear", "bbb", "kflow-diag", "badam", "map"), "test_ll", style="ci"
        ),
        "s2vgd-ll": sv_mean(C, "s2vgd", "test_ll"),
        "s2vgd-rmse": sv_mean(C, "s2vgd", "rmse"),
        "svgd-rmse": sv_mean(C, "svgd", "rmse"),
        "svgd-ll": sv_mean(C, "svgd", "test_ll"),
        "parametric-rmse": sv_means_range(C, ("bbb", "kflow-linear", "kflow-diag"), "rmse"),
        "hours": sv_hours(C, 1),
        "vmg": sv_both(C, "vmg"),
    },
)
register_quotes(
    "supervised-yacht",
    {
        "s2vgd": sv_both(Y, "s2vgd"),
        "svgd": sv_both(Y, "svgd"),
        "bbb-rmse": sv_mean(Y, "bbb", "rmse", 1),
        "badam-rmse": sv_mean(Y, "badam", "rmse", 1),
        "vmg": sv_both(Y, "vmg"),
    },
)
register_quotes(
    "supervised-energy",
    {
        "s2vgd": sv_both(E, "s2vgd"),
        "svgd-rmse-better": sv_better(E, "svgd", "rmse"),
        "svgd-ll-better": sv_better(E, "svgd", "test_ll"),
        "map-rmse-better": sv_better(E, "map", "rmse"),
        "svgd": sv_both(E, "svgd"),
        "vmg-ll": sv_mean(E, "vmg", "test_ll"),
        "vmg-rmse": sv_mean(E, "vmg", "rmse"),
        "kflow-linear": sv_both(E, "kflow-linear"),
        "kflow-linear-rmse-better": sv_better(E, "kflow-linear", "rmse"),
        "kflow-linear-ll-better": sv_better(E, "kflow-linear", "test_ll"),
        "others-rmse": sv_means_range(E, ("bbb", "badam", "kflow-diag"), "rmse", 2),
    },
)
register_quotes(
    "supervised-kin8nm",
    {**{m: sv_both(K, m, 3) for m in ("s2vgd", "svgd", "vmg")}, "hours": sv_hours(K, 1)},
)
WINE_LEVEL = ("s2vgd", "svgd", "map", "bbb", "kflow-linear", "kflow-diag")


def _means_width(dataset: str, methods: tuple[str, ...], metric: str, digits: int) -> Quote:
    """How far apart the methods' means are (the highest minus the lowest)."""

    def value(rows: list[dict], _: str) -> str:
        means = [mean_se(list(by_seed(rows, metric, dataset=dataset, method=m).values()))[0] for m in methods]
        return prose_number(max(means) - min(means), digits)

    return value


register_quotes(
    "supervised-wine",
    {
        "s2vgd": sv_both(W, "s2vgd", 3),
        "hours": sv_hours(W, 1),
        "level-width": _means_width(W, WINE_LEVEL, "rmse", 3),
        "svgd-ll-pair": sv_pair(W, "svgd", "test_ll", 3, "ci"),
        "map-ll-pair": sv_pair(W, "map", "test_ll", 3, "ci"),
        "vmg": sv_both(W, "vmg", 3),
        "vmg-rmse-better": sv_better(W, "vmg", "rmse"),
        "vmg-rmse-pair": sv_pair(W, "vmg", "rmse", 3, "ci"),
        "vmg-ll-pair": sv_pair(W, "vmg", "test_ll", 3, "ci"),
        "badam-rmse-pair": sv_pair(W, "badam", "rmse", 3, "ci"),
        "badam-ll-pair": sv_pair(W, "badam", "test_ll", 3, "ci"),
    },
)


def _ratio_range(dataset: str, method: str, others: tuple[str, ...], metric: str) -> Quote:
    """``3–8``: the method's mean over each other method's, rounded, lowest to highest."""

    def value(rows: list[dict], _: str) -> str:
        def avg(m: str) -> float:
            return mean_se(list(by_seed(rows, metric, dataset=dataset, method=m).values()))[0]

        ratios = [avg(method) / avg(m) for m in others]
        return f"{min(ratios):.0f}–{max(ratios):.0f}"

    return value


def _count_above(dataset: str, method: str, metric: str, threshold: float) -> Quote:
    def value(rows: list[dict], _: str) -> str:
        values = by_seed(rows, metric, dataset=dataset, method=method)
        return f"{sum(v > threshold for v in values.values())} of {len(values)}"

    return value


def _significant(value: float) -> str:
    """A small positive figure with two significant digits, as the prose writes Naval's RMSEs."""
    return f"{value:.{max(0, 1 - math.floor(math.log10(abs(value))))}f}"


def _split_range(dataset: str, method: str, metric: str) -> Quote:
    def value(rows: list[dict], _: str) -> str:
        values = by_seed(rows, metric, dataset=dataset, method=method).values()
        return f"{_significant(min(values))} to {_significant(max(values))}"

    return value


register_quotes(
    "supervised-power-naval",
    {
        "power-s2vgd": sv_both(PW, "s2vgd"),
        "power-svgd": sv_both(PW, "svgd"),
        "power-svgd-rmse-pair": sv_pair(PW, "svgd", "rmse", 3, "ci"),
        "power-svgd-rmse-better": sv_better(PW, "svgd", "rmse"),
        "power-map-rmse-pair": sv_pair(PW, "map", "rmse", 3, "ci"),
        "power-parametric": sv_list(PW, ("kflow-linear", "vmg", "kflow-diag", "bbb", "badam"), "rmse", 3, "ci"),
        "power-vmg": sv_both(PW, "vmg"),
        "power-hours": sv_hours(PW),
        "naval-hours": sv_hours(N),
        "naval-s2vgd-ll": sv_mean(N, "s2vgd", "test_ll"),
        "naval-s2vgd-rmse": sv_mean(N, "s2vgd", "rmse", 6),
        "naval-ll-pairs": sv_list(N, ("svgd", "kflow-linear", "map"), "test_ll", 3, "ci"),
        "naval-svgd-ll": sv_mean(N, "svgd", "test_ll"),
        "naval-vmg-ll": sv_mean(N, "vmg", "test_ll"),
        "naval-vmg-rmse": lambda rows, _: _significant(
            mean_se(list(by_seed(rows, "rmse", dataset=N, method="vmg").values()))[0]
        ),
        "naval-vmg-ratio": _ratio_range(
            N, "vmg", ("s2vgd", "svgd", "map", "bbb", "kflow-linear", "kflow-diag"), "rmse"
        ),
        "naval-badam-range": _split_range(N, "badam", "rmse"),
        "naval-badam-above": _count_above(N, "badam", "rmse", 0.001),
    },
)


# -- docs/benchmarks.md: the off-policy table ---------------------------------------------------------------
OFF_POLICY_COLUMNS = {"final": "final return", "particles": "mean over particles", "diff": "− SAC (95 % CI)",
                      "auc-diff": "AUC − SAC (95 % CI)", "wall": "wall-clock per run (min)", "seeds": "seeds"}  # fmt: skip
register_quotes(
    "benchmark-off-policy",
    {
        f"hopper-{agent}-{key}": cell(column, "Hopper-v5", agent=agent)
        for agent, keys in (
            ("s2vgd-sac", ("final", "particles", "diff", "auc-diff", "wall")),
            ("svgd-sac", ("final", "particles", "diff", "auc-diff", "wall")),
            ("sac", ("final", "particles", "wall")),
        )
        for key in keys
        for column in (OFF_POLICY_COLUMNS[key],)
        if not (agent == "sac" and key == "particles")
    }
    | {"hopper-svgd-sac-spread": spread(digits=1, task="Hopper-v5", agent="svgd-sac")}
    | {
        f"halfcheetah-{agent}-{key}": cell(OFF_POLICY_COLUMNS[key], "HalfCheetah-v5", agent=agent)
        for agent in ("s2vgd-sac", "svgd-sac")
        for key in ("diff", "particles", "auc-diff")
    }
    | {
        f"halfcheetah-{agent}-wall": cell(OFF_POLICY_COLUMNS["wall"], "HalfCheetah-v5", agent=agent)
        for agent in ("s2vgd-sac", "svgd-sac", "sac")
    }
    | {
        f"halfcheetah-{agent}-behind": behind_count(("task", "HalfCheetah-v5"), agent, "sac")
        for agent in ("s2vgd-sac", "svgd-sac")
    }
    | {
        f"halfcheetah-{agent}-to-4000": steps_to(4000, task="HalfCheetah-v5", agent=agent)
        for agent in ("s2vgd-sac", "svgd-sac", "sac")
    }
    | {
        f"walker2d-{agent}-{key}": cell(OFF_POLICY_COLUMNS[key], "Walker2d-v5", agent=agent)
        for agent, keys in (
            ("s2vgd-sac", ("final", "particles", "wall")),
            ("svgd-sac", ("final", "particles", "wall")),
            ("sac", ("final", "wall")),
        )
        for key in keys
    }
    | {
        f"walker2d-{agent}-to-{level}": steps_to(level, task="Walker2d-v5", agent=agent)
        for agent in ("s2vgd-sac", "svgd-sac", "sac")
        for level in (1000, 2000)
    }
    | {
        f"hopper-{agent}-{key}": cell(OFF_POLICY_COLUMNS[key], "Hopper-v5", agent=agent)
        for agent, keys in (
            ("s2vgd-td3", ("final", "particles", "seeds", "wall")),
            ("svgd-td3", ("final", "particles", "seeds", "wall")),
            ("td3", ("final", "seeds", "wall")),
        )
        for key in keys
    }
    | {
        f"hopper-{agent}-to-1000": steps_to(1000, task="Hopper-v5", agent=agent)
        for agent in ("s2vgd-td3", "svgd-td3", "td3", "s2vgd-sac")
    }
    | {
        f"hopper-{agent}-minus-td3": difference(
            {"task": "Hopper-v5", "agent": agent}, {"task": "Hopper-v5", "agent": "td3"}
        )
        for agent in ("s2vgd-td3", "svgd-td3")
    }
    | {
        f"{slug}-{agent}-{key}": cell(OFF_POLICY_COLUMNS[key], task, agent=agent)
        for slug, task in (("halfcheetah", "HalfCheetah-v5"), ("walker2d", "Walker2d-v5"))
        for agent, keys in (("td3", ("final", "seeds", "wall")), ("s2vgd-td3", ("final", "particles", "seeds", "wall")))
        for key in keys
    }
    | {
        f"{slug}-{agent}-minus-{reference}": difference(
            {"task": task, "agent": agent}, {"task": task, "agent": reference}
        )
        for slug, task in (("halfcheetah", "HalfCheetah-v5"), ("walker2d", "Walker2d-v5"))
        for agent, reference in (("td3", "sac"), ("s2vgd-td3", "td3"))
    },
)

register_quotes(
    "supervised-mnist-vmg-pseudo-data",
    {
        **{f"error-{n}": cell("validation error", str(n)) for n in (10, 50, 150)},
        **{f"ll-{n}": cell("validation LL (epoch kept)", str(n)) for n in (50, 150)},
        "minutes-150": cell("minutes per fit", "150"),
    },
)
