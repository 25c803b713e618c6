"""The bandit tables of docs/bandits.md built from gathered rows of real (tiny) runs: every measured cell is
what the runs' own results.csv gives (means, spreads and a paired difference computed here by hand), an agent
without rows says *not re-measured*, the papers' figures stay as printed, and each table takes its own runs."""

from __future__ import annotations

import csv
import math
import statistics
from pathlib import Path

import pytest
from scipy.stats import t as student_t

from svpg.bandits.cli import main as bandit
from svpg.report import NOT_MEASURED, _tables, gather, read_rows

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


def play(log_dir: Path, name: str, *options: str, rounds: int = 60, seeds: int = 2) -> Path:
    argv = [*options, "--rounds", str(rounds), "--num-seeds", str(seeds), "--progress", "false", "--log-points", "10"]
    assert bandit([*argv, "--log-dir", str(log_dir), "--run-name", name]) == 0
    return log_dir / name


def results(run: Path, agent: str, column: str) -> list[float]:
    """One agent's per-seed values of a run's own results.csv, in seed order."""
    with (run / "results.csv").open() as f:
        rows = sorted((r for r in csv.DictReader(f) if r["agent"] == agent), key=lambda r: int(r["seed"]))
    return [float(r[column]) for r in rows]


def cells(table: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in table.splitlines()[2:]]


def minus(text: str) -> str:
    return text.replace("-", "−")  # the documents' minus sign


def test_the_wheel_table_from_gathered_runs(tmp_path):
    """Columns are δ: a run at δ = 0.5 and one at the default δ = 0.95 fill their columns (mean ± std over seeds,
    as the document states); a run of other options at δ = 0.5 is not the table's."""
    half = play(tmp_path, "wheel-0.5", "--problem", "wheel", "--delta", "0.5", "--agents", "s2vgd,linucb")
    default = play(tmp_path, "wheel-0.95", "--problem", "wheel", "--agents", "linucb")
    tuned = play(tmp_path, "tuned", "--problem", "wheel", "--delta", "0.5", "--agents", "linucb", "--linucb-alpha", "5")
    into = tmp_path / "bandit_wheel.csv"
    for run in (half, default, tuned):
        gather([run], into, "test", "abc")
    rows = read_rows(into)
    assert {(r["options"], r["delta"]) for r in rows} == {
        ('{"delta": 0.5}', "0.5"),
        ("", "0.95"),  # δ is recorded where it is the default too
        ('{"delta": 0.5, "linucb_alpha": 5.0}', "0.5"),
    }
    assert results(tuned, "linucb", "normalised_regret") != results(half, "linucb", "normalised_regret")

    table = cells(_tables()["bandit-wheel"].build(rows))
    part = table.index(["*reward / optimal reward*", "", "", "", "", ""])
    regret = {r[0]: r[1:] for r in table[:part]}
    ratio = {r[0]: r[1:] for r in table[part + 1 :]}

    def spread(values: list[float], digits: int) -> str:
        return minus(f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}")

    s2vgd = results(half, "s2vgd", "normalised_regret")
    assert regret["s2vgd"] == [spread(s2vgd, 2), NOT_MEASURED, NOT_MEASURED, NOT_MEASURED, NOT_MEASURED]
    assert regret["linucb"] == [
        spread(results(half, "linucb", "normalised_regret"), 2),  # not the tuned run's
        NOT_MEASURED,
        NOT_MEASURED,
        spread(results(default, "linucb", "normalised_regret"), 2),
        NOT_MEASURED,
    ]
    assert regret["svgd"] == [NOT_MEASURED, "", "", "", ""]  # no runs at all: the layout's one cell
    assert ratio["s2vgd"][0] == spread(results(half, "s2vgd", "reward_ratio"), 3)
    assert ratio["uniform"][3] == spread(results(default, "uniform", "reward_ratio"), 3)
    assert ratio["badam"] == [NOT_MEASURED, "", "", "", ""]
    assert ratio["BADAM (their Table 2)"] == ["0.76 ± 0.02", "0.74 ± 0.09", "0.83 ± 0.07", "0.34 ± 0.08", "0.59 ± 0.01"]
    compute = _tables()["bandit-wheel"].compute(rows)
    assert compute.startswith("10 runs of an agent on a seed,")  # 3 agents × 2 seeds at δ 0.5, 2 × 2 at 0.95


@pytest.mark.skipif(not (DATA / "bandits" / "financial").is_dir(), reason="the shared offline data are not present")
def test_a_showdown_table_from_gathered_runs(tmp_path, monkeypatch):
    """Financial: mean ± s.e. over seeds, the paired difference to S²VGD with its 95 % t-interval, the median
    seconds per run; the papers' cells as printed; our schedule's and the tables' schedule's runs kept apart."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # nothing read from or written to the user's cache
    data = ["--problem", "financial", "--data-dir", str(DATA)]
    run = play(tmp_path, "financial", *data, "--agents", "s2vgd,neural-greedy")
    root = tmp_path / "checkout"
    into = root / "bench" / "results" / "bandit_showdown.csv"
    gather([run], into, "test", "abc")
    table = {r[0]: r[1:] for r in cells(_tables()["bandit-showdown-financial"].build(read_rows(into)))}

    def se(values: list[float], digits: int) -> str:
        mean, sd = statistics.mean(values), statistics.stdev(values)
        return minus(f"{mean:.{digits}f} ± {sd / math.sqrt(len(values)):.{digits}f}")

    ours, greedy = (results(run, a, "normalised_regret") for a in ("s2vgd", "neural-greedy"))
    seconds = statistics.median(results(run, "s2vgd", "seconds"))
    assert table["**s2vgd**"] == ["2", se(ours, 2), se(results(run, "s2vgd", "reward_ratio"), 3), "",
                                  f"{seconds:.0f}", "", ""]  # fmt: skip
    diffs = [g - o for g, o in zip(greedy, ours)]  # seeds 0 and 1, paired
    mean, half = statistics.mean(diffs), student_t.ppf(0.975, 1) * statistics.stdev(diffs) / math.sqrt(2)
    assert table["neural-greedy"][:4] == ["2", se(greedy, 2), se(results(run, "neural-greedy", "reward_ratio"), 3),
                                          minus(f"{mean:+.2f} [{mean - half:+.2f}, {mean + half:+.2f}]")]  # fmt: skip
    assert table["neural-greedy"][5:] == ["6.08 ± 0.47 (SGD)", "0.91 ± 0.02 (Greedy)"]
    assert table["kflow-linear"] == [NOT_MEASURED, "", "", "", "", "5.88 ± 0.35 (K-Linear)", ""]
    assert table["uniform"][0] == "2" and table["uniform"][6] == "-0.00 ± 0.01 (Uniform)"
    assert table["*fBNN (not here)*"][5] == "7.27 ± 1.09"
    # the mushroom table's formatter on the same rows: mean ± std (its document's spread) and the seeds won
    mushroom = {r[0]: r[1:] for r in cells(_tables()["bandit-mushroom"].build(read_rows(into)))}
    std = minus(f"{statistics.mean(greedy):.2f} ± {statistics.stdev(greedy):.2f}")
    lower = f"{sum(g < o for g, o in zip(greedy, ours))}/2"
    assert mushroom["neural-greedy"][0] == std and mushroom["neural-greedy"][3] == lower
    assert mushroom["s2vgd"][2:4] == ["", ""] and mushroom["svgd"] == [NOT_MEASURED, "", "", "", ""]

    # the full horizon on our schedule and on the tables' (--train-steps 200 --batch-size 512): each its own table
    plain = play(tmp_path, "plain", *data, "--agents", "uniform", rounds=3713, seeds=1)
    schedule = ["--train-steps", "200", "--batch-size", "512"]
    tables = play(tmp_path, "tables", *data, "--agents", "uniform", *schedule, rounds=3713, seeds=1)
    gather([plain], into, "test", "abc")
    gather([tables], into, "test", "abc")
    ours_rows = _tables()["bandit-showdown-financial"].rows(root)
    theirs_rows = _tables()["bandit-showdown-financial-tables"].rows(root)
    assert [(r["agent"], r["options"]) for r in ours_rows] == [("uniform", "")]
    assert [(r["agent"], r["options"]) for r in theirs_rows] == [("uniform", '{"batch_size": 512, "train_steps": 200}')]
    rendered = {r[0]: r[1:] for r in cells(_tables()["bandit-showdown-financial-tables"].render(root).split("\n\n")[0])}
    assert list(rendered) == ["**s2vgd**", "kflow-linear", "neural-greedy", "uniform"]  # no "not here" rows
    assert rendered["uniform"][:2] == ["1", "100.00"] and rendered["**s2vgd**"][0] == NOT_MEASURED
