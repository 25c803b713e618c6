"""``python -m svpg.report``: every results table of the documents is what its result file gives, a changed
number fails the check (``gather``'s tests are in test_gather.py)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from svpg.report import (
    FIGURE_SOURCE_KEY,
    NOT_MEASURED,
    TABLES,
    first_difference,
    main,
    png_text,
    read_rows,
    rebuild,
)

ROOT = Path(__file__).resolve().parents[2]


def test_the_documents_match_their_result_files():
    assert rebuild(ROOT, check=True) == []


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A copy of the documents and result files, to change."""
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")  # with its images: the figures drawn from result files
    shutil.copytree(ROOT / "bench" / "results", tmp_path / "bench" / "results")
    return tmp_path


def change(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) >= 1, old
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(
    "doc, old, new, table, row, column",
    [
        # RL: a benchmark figure backed by bench/results/benchmark_results.csv
        (
            "docs/benchmarks.md",
            "| 2241.8 ± 117.4 |",
            "| 2241.9 ± 117.4 |",
            "benchmark-hopper",
            "s2vgd",
            "mean over particles",
        ),
        # bandits: a measured figure; a published one beside it and another table (slow: one case per front end is
        # the default suite's share)
        pytest.param(
            "docs/bandits.md",
            "| 0.76 ± 0.02 |",
            "| 0.77 ± 0.02 |",
            "bandit-wheel",
            "BADAM (their Table 2)",
            "δ = 0.5",
            marks=pytest.mark.slow,
        ),
        ("docs/bandits.md", "| s2vgd | 8.11 ± 1.31 |", "| s2vgd | 8.12 ± 1.31 |", "bandit-wheel", "s2vgd", "δ = 0.5"),
        pytest.param(
            "docs/bandits.md",
            "| **s2vgd** | 3 | 3.62 ± 0.57 |",
            "| **s2vgd** | 3 | 3.63 ± 0.57 |",
            "bandit-showdown-financial-tables",
            "**s2vgd**",
            "normalised regret (uniform = 100)",
            marks=pytest.mark.slow,
        ),
        # README.md's overview: a figure quoted from a page's table
        pytest.param(
            "README.md",
            "Boston 2.636 vs 2.834",
            "Boston 2.637 vs 2.834",
            "results-overview",
            "the nine UCI sets of Table 1 on their standard splits, MNIST's Table 2, Fashion-MNIST",
            "headline",
            marks=pytest.mark.slow,
        ),
        # supervised: a number where the file has no split
        (
            "docs/supervised.md",
            f"| S²VGD (K = 1) | 10 | {NOT_MEASURED} |",
            "| S²VGD (K = 1) | 10 | 12 |",
            "supervised-fashion-mnist",
            "S²VGD (K = 1)",
            "best epoch (validation NLL)",
        ),
    ],
)
def test_a_changed_number_fails_the_check(checkout, capsys, doc, old, new, table, row, column):
    change(checkout / doc, old, new)
    # the other tables are untouched copies (test_the_documents_match_their_result_files checks them all): only
    # the changed one is checked and rebuilt here
    names = [table]
    assert main(["--check", "--root", str(checkout), "--tables", ",".join(names)]) == 1
    assert f"table {table}" in capsys.readouterr().err
    problems = rebuild(checkout, check=True, names=names)
    assert len(problems) == 1
    assert problems[0].startswith(f"{doc}: table {table}, row {row!r}, column {column!r}"), problems[0]
    assert main(["--root", str(checkout), "--tables", ",".join(names)]) == 0  # the rebuild puts the file's value back
    assert rebuild(checkout, check=True, names=names) == []


def tables_in(doc: str) -> list[str]:
    import svpg.report_tables  # noqa: F401  (registers the tables)

    return [name for name, table in TABLES.items() if table.doc == doc]


def test_a_changed_result_file_fails_the_check(checkout):
    path = checkout / "bench" / "results" / "benchmark_results.csv"
    rows = read_rows(path)
    rows[0]["final"] = str(float(rows[0]["final"]) - 10)  # Pendulum-v1, s2vgd, seed 0
    write_csv(path, rows)
    problems = rebuild(checkout, check=True, names=["results-overview", *tables_in("docs/benchmarks.md")])
    # README.md's overview quotes the page's summary table, so the changed run changes it with the page's tables
    assert [p.split(",")[0] for p in problems] == [
        "README.md: table results-overview",
        "docs/benchmarks.md: table benchmark-summary",
        "docs/benchmarks.md: table benchmark-pendulum",
        "docs/benchmarks.md: quote benchmark-pendulum/s2vgd-ppo: the result file gives '+40 [+12",  # the prose's too
    ], problems
    assert "Pendulum-v1, 200,000: S²VGD −181.0 ± 12.1, PPO" in problems[0]
    assert problems[1].startswith("docs/benchmarks.md: table benchmark-summary, row 'Pendulum-v1, 200,000'")


def test_missing_and_unknown_markers_are_named(checkout):
    change(checkout / "docs" / "rl.md", "<!-- report:ablation-step-time -->", "<!-- report:no-such-table -->")
    change(checkout / "docs" / "rl.md", "<!-- /report:ablation-step-time -->", "<!-- /report:no-such-table -->")
    problems = rebuild(checkout, check=True, names=tables_in("docs/rl.md"))
    assert any("marker report:no-such-table names no table" in p for p in problems)
    assert any("no markers <!-- report:ablation-step-time -->" in p for p in problems)


def test_table_cells_read_back_what_render_table_writes():
    from svpg.report import render_table, table_cells

    text = "intro\n\n" + render_table(["a", "b", "c"], [["x", "", "1.0"], ["y", "2", ""]]) + "\nafter\n"
    assert table_cells(text) == [{"a": "x", "b": "", "c": "1.0"}, {"a": "y", "b": "2", "c": ""}]


@pytest.mark.parametrize(
    "difference, lower_is_better, side",
    [
        ("+42.0 [+17.3, +66.8]", False, "ahead"),
        ("−3303.5 [−4671.4, −1935.6]", False, "behind"),
        ("+4451.0 [−313.1, +9215.2]", False, "level"),
        ("−0.198 [−0.279, −0.116]", True, "ahead"),  # an RMSE: lower is better
        ("+0.006 [+0.003, +0.009]", True, "behind"),
        ("–", False, ""),
    ],
)
def test_the_overview_names_the_side_of_a_paired_interval(difference, lower_is_better, side):
    from svpg.report_tables import _side

    assert _side(difference, lower_is_better) == side


def test_first_difference_names_the_cell():
    expected = "| a | b |\n|---|---:|\n| x | 1.0 |\n"
    found = "| a | b |\n|---|---:|\n| x | 1.5 |\n"
    assert first_difference("d.md", "t", expected, expected) is None
    assert first_difference("d.md", "t", expected, found) == (
        "d.md: table t, row 'x', column 'b': the result file gives '1.0', the document has '1.5'"
    )


def write_csv(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def test_a_figure_is_drawn_from_its_rows_and_a_stale_one_fails_the_check(checkout):
    """The Walker2d-v5 and Ant-v5 curves figure carries the SHA-256 of the rows it is drawn from: a changed curve
    in the result file fails the check, naming the image; the rebuild redraws it; an unchanged one is not redrawn."""
    image = checkout / "docs" / "img" / "benchmark-walker2d-ant.png"
    assert len(png_text(image)[FIGURE_SOURCE_KEY]) == 64
    before = image.read_bytes()
    names = tables_in("docs/benchmarks.md")  # the figure's document: the others are untouched copies
    rebuild_benchmarks = ["--root", str(checkout), "--tables", ",".join(names)]
    assert main(rebuild_benchmarks) == 0 and image.read_bytes() == before  # nothing changed: not redrawn
    path = checkout / "bench" / "results" / "benchmark_results.csv"
    rows = read_rows(path)
    ant = next(r for r in rows if r["task"] == "Ant-v5" and r["curve"])
    curve = json.loads(ant["curve"])
    curve[-1][1] += 100.0
    ant["curve"] = json.dumps(curve)
    write_csv(path, rows)
    problems = rebuild(checkout, check=True, names=names)
    assert problems == [
        "docs/img/benchmark-walker2d-ant.png: figure benchmark-walker2d-ant-curves is not drawn from the rows of "
        "bench/results/benchmark_results.csv: run python -m svpg.report"
    ]
    assert main(rebuild_benchmarks) == 0
    assert image.read_bytes() != before and rebuild(checkout, check=True) == []


def test_the_sac_hopper_screen_pairs_each_candidate_with_sb3_sac_by_seed():
    """bench/sac_defaults.py's rows and the benchmark's SB3 SAC rows in one table: the best particle's paired
    difference to SAC over the seeds both have (hand-computed: +100 and −50 → +25, t-interval ±953.0)."""
    from svpg.report import _tables

    ours = [{"env_id": "Hopper-v5", "options": "{}", "seed": str(s), "eval_best": str(v), "eval_mean": str(v - 100),
             "train_best": str(v + 10), "train_mean": str(v - 10), "seconds": "3600"} for s, v in ((100, 1100.0), (101, 950.0))]
    sac = [{"task": "Hopper-v5", "agent": "sac", "seed": str(s), "final": str(v), "wall_s": "1800"}
           for s, v in ((100, 1000.0), (101, 1000.0))]
    rows = {r.split("|")[1].strip(): [c.strip() for c in r.strip().strip("|").split("|")]
            for r in _tables()["sac-defaults-hopper"].build(ours + sac).splitlines()[2:]}
    defaults = next(v for k, v in rows.items() if k.startswith("none"))
    assert defaults[1:7] == ["100, 101", "1025.0 ± 75.0", "925.0 ± 75.0", "1035.0 ± 75.0, 1015.0 ± 75.0",
                             "+25.0 [−928.0, +978.0]", "3600"]
    assert rows["SB3 SAC (rl-zoo3's settings)"][1:3] == ["100, 101", "1000.0 ± 0.0"]
    assert next(v for k, v in rows.items() if k.startswith("shared"))[1] == "not measured yet"


def test_the_throughput_tables_take_the_newest_row_of_their_protocol():
    """bench/throughput.py --out rows: steps/s and ratios as printed (hand-computed), the newest row per task and
    estimator, and a row of other sizes (a smoke run) left out by the table's selection."""
    from svpg.report import _tables

    def row(kind, env_id, estimator, first, second, **kw):
        return {"kind": kind, "env_id": env_id, "estimator": estimator, "device": "cpu", "num_seeds": 1,
                "num_particles": 16, "samples_per_particle": 5000, "householder": 1, "threads": 1,
                "first_steps_per_s": first, "second_steps_per_s": second, "first_ms_rollout": 40.0,
                "first_ms_learn": 10.0, "second_ms_rollout": 50.0, "second_ms_learn": 50.0,
                "sb3_a2c_steps_per_s": 2000.0, "machine": "m", "cores": 2, "commit": "c", **kw}

    rows = [row("methods", "CartPole-v1", "reinforce", 90000.0, 95000.0),
            row("methods", "CartPole-v1", "reinforce", 100000.0, 110000.0),  # newer: replaces the first
            row("methods", "CartPole-v1", "reinforce", 5.0, 5.0, num_particles=2),  # a smoke run: not the table's
            row("seed-batch", "svpg/DoublePendulum-v0", "a2c", 20000.0, 50000.0, num_seeds=5)]
    table = _tables()["throughput"]
    selected = [r for r in rows if all(str(r.get(k, "")) == str(v) for k, v in table.select.items())]
    lines = table.build(selected).splitlines()
    assert lines[2] == "| CartPole-v1 | 100,000 | 110,000 | 2,000 | 50.0× |"
    assert lines[3] == "| CartPoleSwingUp-v0 | not re-measured |  |  |  |"
    batch = _tables()["throughput-seed-batch"]
    selected = [r for r in rows if all(str(r.get(k, "")) == str(v) for k, v in batch.select.items())]
    lines = batch.build(selected).splitlines()
    assert "| DoublePendulum-v0 | A2C | 20,000 | 50,000 | 2.50× | 1.25× | 5.00× |" in lines
    assert "| CartPole-v1 | REINFORCE | not re-measured |  |  |  |  |" in lines


def test_the_a2c_screen_pairs_each_setting_with_rl_zoo3s_by_seed():
    """Benchmark rows of two --sb3-options settings: final return and AUC per setting, and the difference to
    rl-zoo3's own settings paired by seed (hand-computed: +500 and +700 → +600)."""
    from svpg.report import _tables

    rows = [{"task": "HalfCheetah-v5", "agent": "a2c", "seed": str(s), "final": str(f), "auc": str(a), "wall_s": "600",
             "options": o} for o, s, f, a in (("", 100, 1000.0, 400.0), ("", 101, 1400.0, 600.0),
                                             ('{"normalize": {"norm_reward": false}}', 100, 1500.0, 500.0),
                                             ('{"normalize": {"norm_reward": false}}', 101, 2100.0, 700.0))]
    lines = _tables()["a2c-halfcheetah-screen"].build(rows).splitlines()
    assert lines[2].endswith("| 100, 101 | 1200.0 ± 200.0 | – | 500.0 ± 100.0 |")
    assert lines[3].endswith("| 100, 101 | 1800.0 ± 300.0 | +600.0 [−670.6, +1870.6] | 600.0 ± 100.0 |")


def test_table1_compute_names_the_sets_and_a_set_with_some_methods_only():
    from svpg.report_tables import METHOD_LABELS, TABLE1_ESTIMATE, _table1_compute

    boston = [{"dataset": "boston", "method": m, "seconds": "900"} for m in METHOD_LABELS]
    naval = [{"dataset": "naval", "method": "s2vgd", "seconds": "1800"}]
    assert _table1_compute(boston + naval) == (
        f"Boston, Naval with S²VGD (K = 1) only: 9 fits of a method on a split, 2.5 hours of training; "
        f"{TABLE1_ESTIMATE} for all nine sets"
    )
    assert _table1_compute([]) == TABLE1_ESTIMATE


def test_every_reproduce_line_gives_a_shell_command_in_its_code_span():
    """Prose (what to run first, what to repeat) stays outside the span a reader pastes into a shell."""
    from svpg.report import _tables

    for name, table in _tables().items():
        assert table.command.startswith("python "), (name, table.command)
        assert " above" not in table.command and "; " not in table.command, (name, table.command)


@pytest.mark.parametrize(
    "doc, quote, old, new",
    [
        ("docs/benchmarks.md", "benchmark-hopper/ppo-seed2", "207", "208"),  # a run's figure
        # a paired difference over splits, a seed of a bandit run (slow: the benchmark case is the default suite's)
        pytest.param("docs/supervised.md", "supervised-kin8nm/vmg", "0.082 / 1.08", "0.082 / 1.09", marks=pytest.mark.slow),
        pytest.param("docs/bandits.md", "bandit-mushroom/linucb-seed8", "69", "70", marks=pytest.mark.slow),
    ],
)
def test_a_changed_quote_fails_the_check_and_the_rebuild_restores_it(checkout, doc, quote, old, new):
    """A figure the prose quotes is checked as a table's cell is, and the rebuild writes the file's value back."""
    path = checkout / doc
    change(path, f"<!-- quote:{quote} -->{old}<!-- /quote -->", f"<!-- quote:{quote} -->{new}<!-- /quote -->")
    names = [quote.split("/")[0]]  # the quoted table: its cells and quotes are checked and rebuilt
    assert rebuild(checkout, check=True, names=names) == [
        f"{doc}: quote {quote}: the result file gives {old!r}, the document has {new!r}"
    ]
    assert main(["--root", str(checkout), "--tables", ",".join(names)]) == 0
    assert f"<!-- quote:{quote} -->{old}<!-- /quote -->" in path.read_text()
    assert rebuild(checkout, check=True, names=names) == []


def test_unknown_and_unquoted_quotes_are_named(checkout):
    change(checkout / "docs" / "benchmarks.md", "quote:benchmark-hopper/ppo-seed2 -->", "quote:benchmark-hopper/no-such -->")
    problems = rebuild(checkout, check=True, names=["benchmark-hopper"])
    assert problems == [
        "docs/benchmarks.md: marker quote:benchmark-hopper/no-such names no quote: register it in svpg/report_quotes.py",
        "no document quotes benchmark-hopper/ppo-seed2: quote it as <!-- quote:benchmark-hopper/ppo-seed2 -->… or remove it",
    ]


def test_quote_builders_against_hand_computed_values():
    from svpg.report import render_table
    from svpg.report_quotes import cell, count, difference, mean, prose_number, spread

    assert prose_number(-3303.46, 0) == "−3,303"
    assert prose_number(2416.2, 0, sign=True) == "+2,416"
    assert prose_number(0.59) == "0.6"
    rows = [
        {"agent": "a", "seed": "0", "final": "3"},
        {"agent": "a", "seed": "1", "final": "5"},
        {"agent": "b", "seed": "0", "final": "1"},
        {"agent": "b", "seed": "1", "final": "2"},
        {"agent": "b", "seed": "2", "final": "1000"},  # no pair: left out of the difference
    ]
    assert mean(agent="a")(rows, "") == "4.0"
    assert spread(agent="b", but=(2,))(rows, "") == "1 to 2"
    assert count(lambda v: v > 1.5, agent="b")(rows, "") == "2"
    # differences 2 and 3: mean 2.5, standard error 0.5, t(0.975, 1 df) = 12.706 → 2.5 ± 6.353
    assert difference({"agent": "a"}, {"agent": "b"})(rows, "") == "+2.5 [−3.9, +8.9]"
    markdown = render_table(
        ["method", "final mean", "Δ", "iterations to τ"],
        [["x", "1.0 ± 0.5", "+0.5 [−1.0, +2.0]", "654 ± 52 (7/10)"], ["y", "−2.0 ± 0.1", "–", "311 ± 10 (10/10)"]],
    )
    assert cell("final mean", "y", "mean")([], markdown) == "−2.0"
    assert cell("final mean", part="se", method="x")([], markdown) == "0.5"
    assert cell("Δ", "x", "mean")([], markdown) == "+0.5"
    assert cell("iterations to τ", "x", "reached")([], markdown) == "7 of 10"
    assert cell("iterations to τ", "x", "mean")([], markdown) == "654"
    with pytest.raises(ValueError, match="exactly one"):
        cell("final mean", "z")([], markdown)
    with pytest.raises(ValueError, match="no rows with final"):
        mean(agent="c")(rows, "")


def test_steps_to_a_return_and_seeds_behind_a_reference():
    from svpg.report_quotes import behind_count, steps_to

    def run(agent, seed, final, curve):
        return {"task": "T", "agent": agent, "seed": str(seed), "final": str(final), "curve": json.dumps(curve)}

    rows = [
        run("a", 0, 10, [[1000, -5.0, -6.0], [2000, 4.0, 1.0], [3000, 9.0, 2.0]]),  # best-particle column reaches 4 at 2000
        run("a", 1, 30, [[1000, 4.5, 0.0], [2000, 3.0, 0.0]]),
        run("a", 2, 5, [[1000, 1.0, 0.0]]),  # never
        run("b", 0, 20, [[1000, 3.0, 1], [2000, 8.0, 1]]),  # SB3's curve: step, mean return, episodes
        run("b", 1, 20, [[1000, 2.0, 1]]),
    ]
    assert steps_to(4, agent="a")(rows, "") == "1,000 to 2,000; never on 1 seed"
    assert steps_to(4, agent="b")(rows, "") == "2,000; never on 1 seed"
    assert steps_to(2, agent="b")(rows, "") == "1,000"
    assert steps_to(100, agent="a")(rows, "") == "never on 3 seeds"
    assert behind_count(("task", "T"), "a", "b")(rows, "") == "1 of 2"  # seed 2 has no pair


def test_the_overview_gives_a_one_seed_difference_without_a_side(monkeypatch):
    import svpg.report_tables as tables

    def row(agent, seeds, diff, mean="–"):
        return {"task": "Hopper-v5", "agent": agent, "seeds": seeds, "final return": "1.0", "mean over particles": mean,
                "− SAC (95 % CI)": diff, "wall-clock per run (min)": "2.0"}

    cells = [row("s2vgd-sac", "1", "−3.0", mean="0.5"), row("svgd-sac", "2", "+1.0 [−2.0, +4.0]"), row("sac", "2", "–")]
    monkeypatch.setattr(tables, "quoted_cells", lambda rows, name: cells)
    text = tables._overview_budget("off-policy", "SAC")([])
    assert "s2vgd-sac 1.0 (1 seed; mean over particles 0.5; − SAC −3.0; minutes per run 2.0)" in text
    assert "svgd-sac 1.0 (2 seeds; − SAC +1.0 [−2.0, +4.0], level; minutes per run 2.0)" in text
