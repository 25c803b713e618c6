"""The figures the documents' prose quotes, each formatted from the rows of a registered table's result file.

In a document a quoted figure stands between ``<!-- quote:TABLE/KEY -->`` and ``<!-- /quote -->``;
``python -m svpg.report`` rewrites it from TABLE's rows and ``--check`` names one the rows no longer give, as
for the tables (:mod:`svpg.report_tables`). The builders below pick runs by their fields (``agent``,
``options``, …; a missing field reads as empty) and format as the prose writes numbers: thousands separated,
Unicode minus signs.
"""

from __future__ import annotations

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


def by_seed(rows: list[dict], metric: str = "final", **match) -> dict[int, float]:
    """seed → ``metric`` of the rows whose fields equal ``match`` (a missing or null field reads as "")."""
    out = {}
    for r in rows:
        if all(str(r.get(k) or "") == str(v) for k, v in match.items()) and r.get(metric) not in ("", None):
            out[int(r["seed"])] = float(r[metric])
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


def difference(a: dict, b: dict, metric: str = "final", digits: int = 1, interval: bool = True) -> Quote:
    """The paired difference a − b by seed with its 95 % t-interval: ``+2,416 [+2,181, +2,651]``; a and b are
    ``match`` dicts of :func:`by_seed`. ``interval=False``: the mean difference alone."""

    def value(rows: list[dict], _: str) -> str:
        _pairs, diff, low, high = paired_difference(by_seed(rows, metric, **a), by_seed(rows, metric, **b))
        if not interval or math.isnan(low):
            return prose_number(diff, digits, sign=True)
        return f"{prose_number(diff, digits, True)} [{prose_number(low, digits, True)}, {prose_number(high, digits, True)}]"

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
        picked = [
            r for r in rows if r["task"] in tasks and all(str(r.get(k) or "") == str(v) for k, v in match.items())
        ]
        return prose_number(sum(float(r["wall_s"]) for r in picked) / 3600, digits)

    return value


def runs(tasks: tuple[str, ...]) -> Quote:
    """How many runs of ``tasks`` the rows hold."""
    return lambda rows, _: str(sum(r["task"] in tasks for r in rows))


def cell(column: str, row: str | None = None, part: str = "all", nth: int | None = None, **where) -> Quote:
    """A cell of the table as built, column ``column``, in the row whose first cell is ``row`` and whose cells
    equal ``where`` (header → cell; a header with spaces is given with underscores); ``part``: "mean" the
    figure before " ±" (or a paired difference's before its interval), "se" the one after " ±", "reached" how
    many seeds of how many reached τ, "ratio" the ``(1.03×)`` of a timing, "all" the whole cell. ``nth``: of
    several such rows (a table in parts), the nth."""

    def value(_: list[dict], markdown: str) -> str:
        wanted = {k.replace("_", " "): v for k, v in where.items()}
        rows = [
            r
            for r in table_cells(markdown)
            if all(r.get(k) == v for k, v in wanted.items()) and (row is None or next(iter(r.values())) == row)
        ]
        if nth is not None:  # a table with parts (the wheel's regret, then its reward ratio): the nth such row
            rows = rows[nth : nth + 1]
        if len(rows) != 1:
            raise ValueError(f"{len(rows)} rows of the table have {row or ''} {wanted}: the quote needs exactly one")
        text = rows[0][column]
        if part == "ratio":  # "1,872 (1.03×)" → "1.03×"
            return re.search(r"\(([^)]*×)\)", text).group(1)  # type: ignore[union-attr]
        if part == "reached":  # iterations to τ: "654 ± 52 (7/10)" → "7 of 10"
            reached, seeds = re.search(r"\((\d+)/(\d+)\)", text).groups()  # type: ignore[union-attr]
            return f"{reached} of {seeds}"
        return {"all": text, "mean": re.split(r" ± | \[| \(", text)[0], "se": text.partition(" ± ")[2]}[part]

    return value


def se_spread(column: str, digits: int = 0, **where) -> Quote:
    """The lowest and highest standard error of column ``column`` over the rows matching ``where``: ``19 to 62``."""

    def value(_: list[dict], markdown: str) -> str:
        wanted = {k.replace("_", " "): v for k, v in where.items()}
        ses = [
            float(doc_number(r[column]).partition(" ± ")[2].replace(",", ""))
            for r in table_cells(markdown)
            if all(r.get(k) == v for k, v in wanted.items()) and " ± " in r[column]
        ]
        return f"{prose_number(min(ses), digits)} to {prose_number(max(ses), digits)}"

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


def _ablation(column: str, cell_name: str, estimator: str, part: str = "all") -> Quote:
    """A cell of an ablation table: ``column`` of ``cell_name``'s row under ``estimator``."""
    return cell(column, estimator, part, cell=f"`{cell_name}`")


def _halfway(cell_name: str, estimator: str) -> Quote:
    """Iterations to halfway of ``cell_name`` (the time table's mean)."""
    return cell(f"`{cell_name}`", {"reinforce": "REINFORCE", "a2c": "A2C"}[estimator], "mean")


def _against(task: str, cell_name: str, reference: str, estimator: str, metric: str) -> Quote:
    """The paired difference ``cell_name`` − ``reference`` by seed of ``metric`` (peak_best, final_mean) with its
    95 % t-interval, as the ablation table writes its Δ columns against ``svgd``."""

    def value(rows: list[dict], _: str) -> str:
        from svpg.report_tables import _ablation_metrics
        from svpg.studies.ablation_analysis import THRESHOLD, _interval

        r = _ablation_metrics(rows, task, THRESHOLD, reference)[(cell_name, estimator)]
        return doc_number(_interval(r[f"d_{metric}"], r[f"d_{metric}_lo"], r[f"d_{metric}_hi"]))

    return value


for _slug, _control in (("swingup", "svgd"), ("double-pendulum", "svgd-a300")):  # the control each paragraph names
    register_quotes(
        f"ablation-{_slug}-time",
        {f"halfway-{c}-{e}": _halfway(c, e) for c in (WINNER, _control) for e in ("reinforce", "a2c")},
    )
register_quotes(
    "ablation-swingup",
    {
        **{
            f"tau-{c}-{e}": _ablation("iterations to τ (reached)", c, e, "mean")
            for c in (WINNER, "svgd")
            for e in ("reinforce", "a2c")
        },  # fmt: skip
        "tau-winner-reinforce-reached": _ablation("iterations to τ (reached)", WINNER, "reinforce", "reached"),
        **{f"kl-{c}-{e}": _ablation("action KL", c, e) for c in (WINNER, "svgd") for e in ("reinforce", "a2c")},
        **{
            f"winner-vs-a300-{m}-{e}": _against("swingup", WINNER, "svgd-a300", e, m)
            for m in ("peak_best", "final_mean")
            for e in ("reinforce", "a2c")
        },  # fmt: skip
    },
)
register_quotes(
    "ablation-double-pendulum",
    {
        **{
            f"tau-{c}-{e}": _ablation("iterations to τ (reached)", c, e, "mean")
            for c in (WINNER, "svgd")
            for e in ("reinforce", "a2c")
        },  # fmt: skip
        **{
            f"d-final-{c}-{e}": _ablation("Δ final mean", c, e)
            for c in (WINNER, "svgd-a300")
            for e in ("reinforce", "a2c")
        },  # fmt: skip
        **{f"d-peak-winner-{e}": _ablation("Δ peak best", WINNER, e) for e in ("reinforce", "a2c")},
        **{
            f"winner-vs-a300-{m}-{e}": _against("double-pendulum", WINNER, "svgd-a300", e, m)
            for m in ("peak_best", "final_mean")
            for e in ("reinforce", "a2c")
        },  # fmt: skip
        "svgd-star-a2c-peak": _ablation("peak best", "svgd-star", "a2c", "mean"),
        "svgd-star-a2c-d-peak": _ablation("Δ peak best", "svgd-star", "a2c"),
        **{f"kl-{c}-{e}": _ablation("action KL", c, e) for c in (WINNER, "svgd") for e in ("reinforce", "a2c")},
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


def _spread_of(agents: tuple[str, ...]) -> Quote:
    """The lowest and highest ± of the agents' normalised regret (the mushroom table's standard deviations)."""

    def value(_: list[dict], markdown: str) -> str:
        spreads = [float(r[REGRET_COLUMN].partition(" ± ")[2]) for r in table_cells(markdown) if r["agent"] in agents]
        return f"±{min(spreads):.1f} to ±{max(spreads):.1f}"

    return value


register_quotes(
    "bandit-mushroom",
    {
        "neural-spread": _spread_of(MUSHROOM_NEURAL),
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
        },  # fmt: skip
        "s2vgd-ratio": cell("reward / optimal", "**s2vgd**", "mean"),
        "kflow-linear-minus": cell(MINUS, "kflow-linear"),
    },
)
