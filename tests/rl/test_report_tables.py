"""The RL tables of docs/results.md (the paper's grid) and docs/rl.md (the structure ablation) built from gathered rows
of a real tiny ablation: every measured cell is what the runs' own progress.csv give (final returns, peaks of the
seed-averaged curves, smoothed peaks and finals, paired differences to svgd with their 95 % t-intervals and
iterations to τ, computed here by hand), the action KL is the ablation's own seeds.csv's, a method or cell without
rows says *not re-measured*, and each task's table takes its own task's rows."""

from __future__ import annotations

import csv
import json
import math
import statistics
from pathlib import Path

import pytest

from svpg.report import NOT_MEASURED, _tables, gather, read_rows, rl_options, write_rows
from svpg.rl.config import load_preset
from svpg.studies import ablation
from svpg.studies.ablation_cells import Cell

T_975_DF1 = 12.706204736174707  # Student's t, 97.5 % quantile, 1 degree of freedom (two seeds → one df)
CELLS = ("s2vgd-K1-flat-a300", "svgd")
TINY = ["--task", "swingup", "--seeds", "0-1", "--cells", ",".join(CELLS), "--estimators", "reinforce",
        "--iterations", "3", "--samples-per-particle", "500", "--num-particles", "2", "--jobs", "1"]


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def curves(out: Path, cell: str, seed: int) -> tuple[list[float], list[float]]:
    """(mean, max over particles) per iteration, from the run's own progress.csv."""
    rows = read_csv(out / f"{cell}__reinforce__seed{seed}" / "progress.csv")
    return [float(r["rollout/ep_rew_mean"]) for r in rows], [float(r["rollout/ep_rew_max"]) for r in rows]


def cells(table: str) -> dict[tuple[str, str], list[str]]:
    lines = table.split("\n\n")[0].splitlines()[2:]
    rows = [[x.strip() for x in line.strip().strip("|").split("|")] for line in lines]
    return {(r[0], r[1]): r[2:] for r in rows}


def one(x: float, digits: int = 1) -> str:
    return f"{x:.{digits}f}".replace("-", "−")


def mean_se(values: list[float], digits: int = 1) -> str:
    if len(values) == 1:
        return one(values[0], digits)
    return f"{one(statistics.mean(values), digits)} ± {one(statistics.stdev(values) / math.sqrt(len(values)), digits)}"


def difference(a: list[float], b: list[float]) -> str:
    d = [x - y for x, y in zip(a, b)]
    mean, half = statistics.mean(d), T_975_DF1 * statistics.stdev(d) / math.sqrt(2)
    return f"{mean:+.1f} [{mean - half:+.1f}, {mean + half:+.1f}]".replace("-", "−")


def as_preset(rows: list[dict], cells: bool = True) -> list[dict]:
    """The rows as if run with the preset (and, ``cells``, each cell's settings): the tables take only those."""
    def settings(r: dict) -> dict:
        return Cell.parse(r["cell"]).settings() if cells else {}

    return [{**r, "options": json.dumps(rl_options(load_preset("swingup") | settings(r)))} for r in rows]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny ablation on the swing-up (s2vgd at α = 300 and the svgd control, REINFORCE, seeds 0 and 1, three
    iterations), gathered; and a checkout whose ablation file holds its rows as the preset's with each cell's settings,
    and whose grid file holds them as the preset's own s2vgd and svgd runs."""
    root = tmp_path_factory.mktemp("rl-tables")
    out = root / "ablation"
    assert ablation.main([*TINY, "--out", str(out)]) == 0
    assert gather([out], root / "gathered.csv", "test", "abc") == 4
    rows = read_rows(root / "gathered.csv")
    checkout = root / "checkout"
    write_rows(checkout / "bench" / "results" / "rl_ablation.csv", as_preset(rows))
    write_rows(checkout / "bench" / "results" / "rl_paper_grid.csv", as_preset(rows, cells=False))
    return out, checkout, rows


def test_the_gather_records_the_curves_the_cell_and_no_option_of_how_it_ran(tiny):
    out, _, rows = tiny
    assert [(r["cell"], r["method"], r["estimator"], r["seed"]) for r in rows] == [
        ("s2vgd-K1-flat-a300", "s2vgd", "reinforce", "0"), ("s2vgd-K1-flat-a300", "s2vgd", "reinforce", "1"),
        ("svgd", "svgd", "reinforce", "0"), ("svgd", "svgd", "reinforce", "1")]  # fmt: skip
    row = rows[0]
    mean, best = curves(out, "s2vgd-K1-flat-a300", 0)
    assert json.loads(row["mean_curve"]) == mean and json.loads(row["max_curve"]) == best
    assert (float(row["final_mean"]), float(row["final_max"])) == (mean[-1], best[-1])
    assert (row["env_id"], row["iteration"], row["total_steps"]) == ("svpg/CartPoleSwingUp-v0", "3", "3000")
    # what changes a seed's result is recorded (the cell's α, the typed budget, the preset); how it ran is not
    options = json.loads(row["options"])
    assert options["alpha"] == 300.0 and options["num_particles"] == 2 and options["samples_per_particle"] == 500
    assert not {"threads", "device", "run_name", "log_dir", "progress", "seed", "num_seeds", "estimator"} & set(options)
    own = {(r["cell"], r["seed"]): r for r in read_csv(out / "seeds.csv")}  # the ablation's own per-run figures
    for r in rows:
        assert float(r["action_kl"]) == pytest.approx(float(own[r["cell"], r["seed"]]["action_kl"]), rel=1e-9)
    timing = [json.loads(line) for line in (out / "timing" / "svgd__reinforce.jsonl").read_text().splitlines()]
    assert float(rows[2]["seconds_per_iteration"]) == pytest.approx(timing[0]["seconds"] / timing[0]["iterations"])
    from svpg.runs import provenance, read_provenance

    assert read_provenance(out / "svgd__reinforce__seed0") == [provenance()]  # each run records what trained it


def test_a_run_short_of_its_budget_is_left_out_and_named(tiny, tmp_path):
    """An interrupted run resumes; its last iteration is not its final return, so the gather leaves it out."""
    import shutil

    out, _, _ = tiny
    grid = tmp_path / "grid"
    for cell in CELLS:
        shutil.copytree(out / f"{cell}__reinforce__seed0", grid / f"{cell}__reinforce__seed0")
    progress = grid / "svgd__reinforce__seed0" / "progress.csv"
    lines = progress.read_text().splitlines(keepends=True)
    progress.write_text("".join(lines[:-1]))  # stopped after iteration 2 of 3
    skipped: list[str] = []
    assert gather([grid], tmp_path / "gathered.csv", "test", "abc", skipped) == 1
    assert [r["cell"] for r in read_rows(tmp_path / "gathered.csv")] == ["s2vgd-K1-flat-a300"]
    assert skipped == [f"{grid / 'svgd__reinforce__seed0'} (iteration 2 of 3)"]


def test_the_paper_grid_from_gathered_runs(tiny):
    out, checkout, _ = tiny
    text = _tables()["paper-grid-swingup"].render(checkout)
    table = cells(text)
    for cell, method in zip(CELLS, ("s2vgd", "svgd")):
        runs = [curves(out, cell, seed) for seed in (0, 1)]
        averaged = {k: [statistics.mean(c) for c in zip(*(run[k] for run in runs))] for k in (0, 1)}
        assert table[method, "reinforce"] == [
            mean_se([run[0][-1] for run in runs]), mean_se([run[1][-1] for run in runs]),  # the last iteration
            one(max(averaged[0])), one(max(averaged[1])),  # the best iteration of the seed-averaged curve
        ]  # fmt: skip
    assert table["svgd-star", "reinforce"] == [NOT_MEASURED, "", "", ""]
    assert table["svgd", "a2c"] == [NOT_MEASURED, "", "", ""]
    assert table["SB3 PPO", "(1 seed)"] == [NOT_MEASURED, "", "", ""]
    assert "(4 runs)" in text
    # the double pendulum's table takes the double pendulum's rows only
    assert set(v[0] for v in cells(_tables()["paper-grid-double-pendulum"].render(checkout)).values()) == {NOT_MEASURED}


def test_the_ablation_tables_from_gathered_runs(tiny):
    out, checkout, _ = tiny
    runs = {(cell, seed): curves(out, cell, seed) for cell in CELLS for seed in (0, 1)}
    # three iterations under the command's 10-iteration window: one window over the whole curve, so the peak and
    # the final of a run are its curve's mean
    peak_best = {c: [statistics.mean(runs[c, s][1]) for s in (0, 1)] for c in CELLS}
    final_mean = {c: [statistics.mean(runs[c, s][0]) for s in (0, 1)] for c in CELLS}
    # τ: f of the way from iteration 1 to the peak of the seed-averaged best curve of the control (svgd)
    averaged = [statistics.mean(c) for c in zip(runs["svgd", 0][1], runs["svgd", 1][1])]

    def to_threshold(cell: str, f: float) -> str:
        tau = averaged[0] + f * (statistics.mean(averaged) - averaged[0])
        hits = [3 for best in peak_best[cell] if best >= tau]  # reached after the one window of 3 iterations
        shown = "—" if not hits else mean_se(hits, 0)
        return f"{shown} ({len(hits)}/2)"

    kl = {c: statistics.mean(float(r["action_kl"]) for r in read_csv(out / "seeds.csv") if r["cell"] == c)
          for c in CELLS}  # fmt: skip
    table = cells(_tables()["ablation-swingup"].render(checkout))
    s2vgd, svgd = "s2vgd-K1-flat-a300", "svgd"
    assert table["reinforce", f"`{s2vgd}`"] == [
        mean_se(peak_best[s2vgd]), difference(peak_best[s2vgd], peak_best[svgd]),
        mean_se(final_mean[s2vgd]), difference(final_mean[s2vgd], final_mean[svgd]),
        to_threshold(s2vgd, 0.9), f"{kl[s2vgd]:.3g}",
    ]  # fmt: skip
    assert table["reinforce", "`svgd`"] == [mean_se(peak_best[svgd]), "—", mean_se(final_mean[svgd]), "—",
                                            to_threshold(svgd, 0.9), f"{kl[svgd]:.3g}"]  # fmt: skip
    assert table["reinforce", "`svgd-star`"] == [NOT_MEASURED, "", "", "", "", ""]
    assert table["a2c", f"`{s2vgd}`"] == [NOT_MEASURED, "", "", "", "", ""]

    time = cells(_tables()["ablation-swingup-time"].render(checkout).replace("| REINFORCE |", "| REINFORCE | x |"))
    assert time["REINFORCE", "x"] == [to_threshold(s2vgd, 0.5), to_threshold(svgd, 0.5), NOT_MEASURED, NOT_MEASURED]
    assert cells(_tables()["ablation-double-pendulum"].render(checkout))["reinforce", "`svgd`"][0] == NOT_MEASURED


def test_the_tables_take_the_report_stage_seeds_on_the_preset_only(tiny, tmp_path):
    _, _, rows = tiny
    for changed, names in (
        ([{**r, "seed": int(r["seed"]) + 100} for r in as_preset(rows)], ("ablation-swingup",)),  # tuning seeds
        (rows, ("ablation-swingup", "paper-grid-swingup")),  # the tiny runs' own options: not the preset's
    ):
        checkout = tmp_path / str(len(changed))
        for name in ("rl_ablation.csv", "rl_paper_grid.csv"):
            write_rows(checkout / "bench" / "results" / name, changed)
        for name in names:
            assert {v[0] for v in cells(_tables()[name].render(checkout)).values()} == {NOT_MEASURED}, name


def test_the_sb3_agents_of_a_grid_folder_are_gathered_into_the_swingup_table(tmp_path):
    """python -m svpg.studies.sb3 writes into the grid's --out: gathering the folder brings its agents' rows."""
    from svpg.runs import read_provenance, source_commit
    from svpg.studies import sb3

    out = tmp_path / "repro-swingup"
    argv = ["--task", "swingup", "--seeds", "1", "--algos", "a2c", "--steps", "400", "--eval-every", "200",
            "--out", str(out)]  # fmt: skip
    assert sb3.main(argv) == 0
    assert [r["commit"] for r in read_provenance(out / "sb3")] == [source_commit()]  # what gather writes without overrides
    into = tmp_path / "checkout" / "bench" / "results" / "rl_paper_grid.csv"
    assert gather([out], into, "test", "abc") == 1
    (row,) = read_rows(into)
    evaluations = [float(r["eval_mean"]) for r in read_csv(out / "sb3" / "curves.csv")]
    assert (row["method"], row["seed"], json.loads(row["options"])) == ("sb3-a2c", "0", {"steps": 400})
    final, peak = one(evaluations[-1]), one(max(evaluations))
    table = cells(_tables()["paper-grid-swingup"].render(tmp_path / "checkout"))
    assert table["SB3 A2C", "(1 seed)"] == [final, final, peak, peak]
    assert table["SB3 PPO", "(1 seed)"] == [NOT_MEASURED, "", "", ""]


@pytest.mark.slow
def test_the_step_time_table_from_bench_throughput_cells(tmp_path):
    """bench/throughput.py --cells --out appends one row per task and estimator; the table quotes its seconds per
    iteration as the command prints them, and a task or cell without a row says *not re-measured*."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    into = tmp_path / "checkout" / "bench" / "results" / "throughput.jsonl"
    into.parent.mkdir(parents=True)
    argv = [sys.executable, str(root / "bench" / "throughput.py"), "--task", "swingup", "--cells", "svgd,s2vgd-K1",
            "--iterations", "1", "--repeats", "1", "--warmup", "0", "--out", str(into)]  # fmt: skip
    printed = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=root).stdout
    seconds = {}
    for line in printed.splitlines():  # | cell | steps/s | s / iteration | …
        parts = [x.strip() for x in line.strip().strip("|").split("|")]
        if parts[0] in ("svgd", "s2vgd-K1"):
            seconds[parts[0]] = parts[2]
    (row,) = read_rows(into)
    assert (row["kind"], row["env_id"], row["estimator"]) == ("cells", "svpg/CartPoleSwingUp-v0", "reinforce")
    text = _tables()["ablation-step-time"].render(tmp_path / "checkout")
    table = {r[0]: r[1:] for r in ([x.strip() for x in line.strip("|").split("|")] for line in text.splitlines()[2:8])}
    assert table["`svgd`"] == [seconds["svgd"], NOT_MEASURED, NOT_MEASURED, NOT_MEASURED]
    assert table["`s2vgd-K1`"] == [seconds["s2vgd-K1"], NOT_MEASURED, NOT_MEASURED, NOT_MEASURED]
    assert table["`svgd-star`"] == [NOT_MEASURED, "", "", ""]


def test_a_task_table_run_on_two_machines_says_which_agent_ran_where(tmp_path):
    """Wall-clock compares only within a machine: a task whose agents' rows name two machines says which agent ran
    on which, with the summed training hours; rows of one machine keep the plain line."""
    row = {"env_steps": 1_000_000, "final": 2000.0, "final_particle_mean": 1000.0, "best_particle": 0,
           "task": "Walker2d-v5", "eval_episodes": 10, "commit": "abc", "auc": 400.0, "options": ""}  # fmt: skip
    rows = [{**row, "agent": "s2vgd", "seed": s, "wall_s": 600.0, "machine": "machine A"} for s in range(2)]
    path = tmp_path / "bench" / "results" / "benchmark_results.csv"
    path.parent.mkdir(parents=True)
    write_rows(path, rows)
    table = _tables()["benchmark-walker2d"]
    assert "(2 of 10 runs, 0.3 core-hours of training on the 2-core VM)" in table.render(tmp_path)
    rows += [{**row, "agent": "ppo", "seed": s, "wall_s": 1200.0, "machine": "machine B"} for s in range(2)]
    write_rows(path, rows)
    line = table.render(tmp_path).splitlines()[-1]
    assert "(4 of 10 runs, 1.0 core-hours of training: s2vgd on machine A; ppo on machine B; wall-clock compares" in line


def test_a_paired_difference_over_fewer_seeds_than_its_row_says_how_many_paired(tmp_path):
    """While the reference agent has fewer seeds than svpg's row, the difference cells name how many seeds paired
    (the documents otherwise drop the count, which equals the row's seeds); the summary's difference too."""
    row = {"env_steps": 1_000_000, "task": "Walker2d-v5", "eval_episodes": 10, "commit": "abc", "options": "",
           "best_particle": 0, "wall_s": 600.0, "machine": "m"}  # fmt: skip
    finals = {0: 2000.0, 1: 2600.0}
    rows = [{**row, "agent": "s2vgd", "seed": s, "final": f, "final_particle_mean": 1000.0, "auc": 400.0}
            for s, f in finals.items()]  # fmt: skip
    rows.append({**row, "agent": "ppo", "seed": 1, "final": 1500.0, "final_particle_mean": "", "auc": 900.0})
    path = tmp_path / "bench" / "results" / "benchmark_results.csv"
    path.parent.mkdir(parents=True)
    write_rows(path, rows)
    text = _tables()["benchmark-walker2d"].render(tmp_path)
    s2vgd = next(line for line in text.splitlines() if line.startswith("| s2vgd |"))
    assert "| +1100.0 (1 of 2 seeds paired) |" in s2vgd and "| −500.0 (1 of 2 seeds paired) |" in s2vgd
    summary = _tables()["benchmark-summary"].render(tmp_path)
    assert "| Walker2d-v5, 1 M | 2300.0 ± 300.0 | 1500.0 | +1100.0 (1 of 2 seeds paired) |" in summary
    rows.append({**row, "agent": "ppo", "seed": 0, "final": 1000.0, "final_particle_mean": "", "auc": 800.0})
    write_rows(path, rows)
    assert "paired" not in _tables()["benchmark-walker2d"].render(tmp_path).split("Reproduce")[0]
    # the summary's minutes (10.00 / 10.00 on one machine) name the machines once PPO's ran on another
    assert "| 10.00 / 10.00 |" in _tables()["benchmark-summary"].render(tmp_path)
    intel = "x86_64, 2 CPUs (Intel(R) Xeon(R) Processor), Linux"
    write_rows(path, [{**r, "machine": intel} if r["agent"] == "ppo" else r for r in rows])
    assert "| 10.00 on m / 10.00 on Intel Xeon |" in _tables()["benchmark-summary"].render(tmp_path)


def test_the_defaults_screen_table_from_bench_generic_defaults_rows(tmp_path):
    """bench/generic_defaults.py's rows, one per candidate, task and seed: each candidate's best particle and mean
    over particles per task (mean ± standard error over seeds, computed here by hand), – for a task it did not run
    on; a candidate without a label is refused in one line."""
    from svpg.report import ReportError

    def row(candidate, env_id, seed, best, mean):
        return {"env_id": env_id, "candidate": candidate, "seed": seed, "steps": 205000, "best_particle": best,
                "mean_particles": mean, "top_particle": 0, "train_best": best, "seconds": 60.0}  # fmt: skip

    rows = [row("alpha100", "Pendulum-v1", 100, -150.0, -170.0), row("alpha100", "Pendulum-v1", 101, -190.0, -200.0),
            row("m8", "Pendulum-v1", 100, -900.0, -950.0), row("m8", "Pendulum-v1", 101, -1000.0, -1050.0)]  # fmt: skip
    path = tmp_path / "bench" / "results" / "generic_defaults_pendulum.csv"
    path.parent.mkdir(parents=True)
    write_rows(path, rows)
    table = _tables()["generic-defaults-screen"]
    lines = {line.split(" | ")[0].lstrip("| "): line.strip(" |").split(" | ") for line in table.render(tmp_path).splitlines()}
    # −150 and −190: mean −170, standard error |−150 − (−190)| / 2 = 20
    assert lines["α = 100 (the defaults)"][1:] == ["−170.0 ± 20.0", "−185.0 ± 15.0", "–", "–", "–", "–"]
    assert lines["8 particles"][1:3] == ["−950.0 ± 50.0", "−1000.0 ± 50.0"]
    assert lines["none (α = 1)"][1:] == ["–"] * 6
    write_rows(path, [*rows, row("m16", "Pendulum-v1", 100, -1.0, -1.0)])
    with pytest.raises(ReportError, match="candidates m16 have no label in GENERIC_CANDIDATES"):
        table.render(tmp_path)
