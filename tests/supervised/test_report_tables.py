"""The supervised tables of docs/supervised.md built from gathered rows of real (tiny) runs: every measured cell is
what the runs' own split files give (means, standard errors and a paired difference computed here by hand), a
method without rows says *not re-measured*, the papers' figures stay as printed, and each table takes its own rows
(the standard splits with every default; MNIST's runs told apart by their options)."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest
from scipy.stats import t as student_t

from svpg.report import NOT_MEASURED, _tables, gather, read_rows, write_rows
from svpg.report_tables import MNIST_COST
from svpg.supervised.cli import main as supervised

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
needs_yacht = pytest.mark.skipif(not (DATA / "uci_splits" / "yacht" / "data.txt").is_file(),
                                 reason="the shared offline data are not present")


def fit(log_dir: Path, name: str, *options: str) -> Path:
    argv = ["--epochs", "2", "--hidden", "8", "--num-particles", "3", "--progress", "false", "--save-models", "false",
            "--threads", "1", "--log-dir", str(log_dir), "--run-name", name, *options]  # options: the last word
    assert supervised(argv) == 0
    return log_dir / name


def split_rows(run: Path, method: str) -> list[dict]:
    """A method's rows of the run's own split files, in split order."""
    return [json.loads(p.read_text()) for p in sorted((run / "splits").glob(f"{method}_split*.json"))]


def cells(table: str) -> dict[str, list[str]]:
    lines = table.splitlines()[2:]
    return {c[0]: c[1:] for c in ([x.strip() for x in line.strip().strip("|").split("|")] for line in lines)}


def minus(text: str) -> str:
    return text.replace("-", "−")  # the documents' minus sign


def mean_se(values: list[float], digits: int = 3) -> str:
    mean, sd = statistics.mean(values), statistics.stdev(values)
    return minus(f"{mean:.{digits}f} ± {sd / math.sqrt(len(values)):.{digits}f}")


def difference(a: list[float], b: list[float], digits: int = 3) -> str:
    """a − b paired by split with its 95 % Student-t interval."""
    d = [x - y for x, y in zip(a, b)]
    mean, half = statistics.mean(d), student_t.ppf(0.975, len(d) - 1) * statistics.stdev(d) / math.sqrt(len(d))
    return minus(f"{mean:+.{digits}f} [{mean - half:+.{digits}f}, {mean + half:+.{digits}f}]")


@pytest.fixture(scope="module")
def yacht(tmp_path_factory):
    """A tiny run of S²VGD, SVGD and MAP on Yacht's first three standard splits, gathered."""
    root = tmp_path_factory.mktemp("yacht")
    run = fit(root, "yacht", "--dataset", "yacht", "--protocol", "standard", "--data-dir", str(DATA),
              "--method", "s2vgd,svgd,map", "--num-splits", "3", "--checkpoint-minutes", "5")
    into = root / "supervised_uci.csv"
    assert gather([run], into, "test", "abc") == 9
    return run, read_rows(into)


@needs_yacht
def test_the_gather_records_what_the_tables_quote_and_no_option_of_how_it_ran(yacht):
    run, rows = yacht
    assert [(r["method"], r["split"]) for r in rows[:3]] == [("s2vgd", "0"), ("s2vgd", "1"), ("s2vgd", "2")]
    first = split_rows(run, "s2vgd")[0]
    row = rows[0]
    assert (row["dataset"], row["protocol"], row["epochs"], row["best_epoch"]) == ("yacht", "standard", "2", "2")
    for key in ("rmse", "test_ll", "seconds", "seconds_per_epoch", "n_train", "n_test"):
        assert float(row[key]) == pytest.approx(first[key], rel=1e-12), key
    # what changes a split's result is recorded; --threads, --data-dir, --progress, --run-name, … are not
    assert json.loads(row["options"]) == {"epochs": 2, "hidden": "8", "num_particles": 3}
    assert "val_error" not in row  # regression rows carry no validation curves


@needs_yacht
def test_a_uci_table_and_table1_from_gathered_runs(yacht, tmp_path):
    run, rows = yacht
    s2vgd, svgd, map_ = (split_rows(run, m) for m in ("s2vgd", "svgd", "map"))
    rmse = {m: [r["rmse"] for r in rs] for m, rs in (("s2vgd", s2vgd), ("svgd", svgd), ("map", map_))}
    ll = {m: [r["test_ll"] for r in rs] for m, rs in (("s2vgd", s2vgd), ("svgd", svgd), ("map", map_))}
    assert min(abs(statistics.mean(v)) for v in (*rmse.values(), *ll.values())) > 0.01  # 3 decimals throughout

    # the tiny runs' options are not the tables' (every default): their formatter is given the rows directly
    table = cells(_tables()["supervised-yacht"].build(rows))
    seconds = statistics.median(r["seconds"] for r in svgd)
    assert table["S²VGD (K = 1)"] == [mean_se(rmse["s2vgd"]), mean_se(ll["s2vgd"]), "", "",
                                      f"{statistics.median(r['seconds'] for r in s2vgd):.1f}"]  # fmt: skip
    assert table["SVGD"] == [mean_se(rmse["svgd"]), mean_se(ll["svgd"]), difference(rmse["svgd"], rmse["s2vgd"]),
                             difference(ll["svgd"], ll["s2vgd"]), f"{seconds:.1f}"]  # fmt: skip
    assert table["MAP"][2] == difference(rmse["map"], rmse["s2vgd"])
    assert table["VMG"] == [NOT_MEASURED, "", "", "", ""]
    assert table["*VMG paper, Table 1: VMG*"] == ["*0.77 ± 0.06*", "*−1.29 ± 0.02*", "", "", ""]

    one = cells(_tables()["supervised-table1"].build(rows))
    assert one["Yacht"][:4] == [
        f"{mean_se(rmse['s2vgd'])} / {mean_se(ll['s2vgd'])}",
        f"{mean_se(rmse['svgd'])} / {mean_se(ll['svgd'])}",
        f"{difference(rmse['s2vgd'], rmse['svgd'])} / {difference(ll['s2vgd'], ll['svgd'])}",  # S²VGD − SVGD
        NOT_MEASURED,  # VMG
    ]
    assert one["Yacht"][4] == "0.47 / 0.86 / 0.48; −0.81 / −1.23 / −1.30"
    assert one["Boston"][:4] == [NOT_MEASURED, "", "", ""]

    # from the result file of a checkout: the tables take the standard splits run with every default only
    root = tmp_path / "checkout"
    write_rows(root / "bench" / "results" / "supervised_uci.csv", rows)
    assert "| Yacht | not re-measured |" in _tables()["supervised-table1"].render(root)
    write_rows(root / "bench" / "results" / "supervised_uci.csv", [{**r, "options": ""} for r in rows])
    text = _tables()["supervised-yacht"].render(root)
    assert cells(text.split("\n\n")[0])["SVGD"][0] == mean_se(rmse["svgd"])
    assert "(9 fits of a method on a split," in text
    assert cells(_tables()["supervised-boston"].render(root).split("\n\n")[0])["SVGD"] == [
        "Adam 3e-3, 800", NOT_MEASURED, "", ""]  # fmt: skip


def test_the_mnist_tables_from_a_gathered_classification_run(tmp_path, monkeypatch):
    """A tiny classification run (the offline digits) gathered: its validation curves are recorded; as MNIST's
    rows of the tables' settings they fill the Table 2 row, the eq. 14 table and the curves table."""
    run = fit(tmp_path, "digits", "--dataset", "digits", "--method", "map", "--max-train", "200", "--num-splits", "1",
              "--epochs", "3")
    into = tmp_path / "supervised_mnist.csv"
    assert gather([run], into, "test", "abc") == 1
    (row,) = read_rows(into)
    own = split_rows(run, "map")[0]
    curve_ll, curve_error = json.loads(row["val_log_likelihood"]), json.loads(row["val_error"])
    assert [e for e, _ in curve_error] == [1, 2, 3] and [e for e, _ in curve_ll] == [1, 2, 3]
    assert all(0 <= v <= 1 for _, v in curve_error) and all(v < 0 for _, v in curve_ll)

    def as_run(options: dict, **changes) -> dict:
        return {**row, "dataset": "mnist", "options": json.dumps(options) if options else "", **changes}

    last = as_run({"keep_epoch": "last"})
    table = cells(_tables()["supervised-mnist"].build([last]))
    best = max(curve_ll, key=lambda p: p[1])
    nll, ece = (f"{own[k]:.{max(4, 2 - math.floor(math.log10(own[k])))}f}" for k in ("nll", "ece"))  # 3 digits
    assert table["MAP"] == [f"{100 * own['error']:.2f} %", "1.59 % (RMSprop)", nll, ece,
                            minus(f"{curve_ll[-1][1]:.4f} ({best[1]:.4f}, {best[0]})"),
                            f"{own['seconds_per_epoch']:.1f}"]  # fmt: skip
    assert table["SVGD"] == [NOT_MEASURED, "1.53 %", "", "", "", ""]
    assert table["S²VGD (K = 10)"][0] == NOT_MEASURED  # the K = 10 row takes only runs of --householder 10
    # the compute names what the measured fits took and that the other rows are not re-measured
    minutes = f"{float(row['seconds']) / 60:.0f} minutes"
    compute = _tables()["supervised-mnist"].compute
    # the rest's estimate names the rows left (MAP's is measured, so not among them), those of one cost together
    monkeypatch.setitem(MNIST_COST, "SVGD", "x core-hours")
    monkeypatch.setitem(MNIST_COST, "S²VGD (K = 1)", "x core-hours")
    left = (f"S²VGD (K = 1) and SVGD x core-hours each, S²VGD (K = 10) {MNIST_COST['S²VGD (K = 10)']}, "
            f"BBB (Gaussian prior) {MNIST_COST['BBB (Gaussian prior)']}, VMG (150 pseudo-data pairs per layer) "
            f"{MNIST_COST['VMG (150 pseudo-data pairs per layer)']} (100 epochs, one CPU thread)")  # fmt: skip
    assert compute([last]) == f"1 fit of a method on a split, {minutes} of training; the other 5 not re-measured, {left}"
    assert compute([]).startswith("S²VGD (K = 1) and SVGD x core-hours each, ") and "MAP " in compute([])
    # a row gathered before the gather recorded the validation curves: that cell is blank ("–"), the others as before
    earlier = {k: v for k, v in last.items() if k not in ("val_log_likelihood", "val_error")}
    assert cells(_tables()["supervised-mnist"].build([earlier]))["MAP"][:5] == table["MAP"][:4] + ["–"]

    eq14 = as_run({"weight_prior": "mvg"}, best_epoch="2")
    eq14_last = as_run({"keep_epoch": "last", "weight_prior": "mvg"}, error="0.5")
    table = cells(_tables()["supervised-mnist-eq14"].build([last, eq14, eq14_last]))
    assert table["MAP"] == [f"{100 * own['error']:.2f} %", "2", minus(f"{curve_ll[-1][1]:.4f}"), "50.00 %"]
    assert table["SVGD"] == [NOT_MEASURED, "", "", ""]

    curves = cells(_tables()["supervised-mnist-curves"].build([last, eq14]))
    assert curves["MAP, eq. 14 (CPU)"] == ["–"] * 6  # a run of 3 epochs reaches none of the table's epochs
    assert curves["SVGD, eq. 14"] == [NOT_MEASURED, "", "", "", "", ""]  # an unmeasured run names no device
    longer = as_run({"keep_epoch": "last"}, val_error=json.dumps([[e, 0.01 * e] for e in range(1, 21)]))
    curves = cells(_tables()["supervised-mnist-curves"].build([longer]))
    assert curves["MAP, fixed N(0, 1) (CPU)"] == ["6.00 %", "20.00 %", "–", "–", "–", "–"]

    # a run on a GPU machine (its record names the GPU) says so in the curves' label and beside its seconds
    gpu = "x86_64, 16 CPUs (Intel(R) Xeon(R) Processor), 1 GPU (NVIDIA H200), Linux"
    curves = cells(_tables()["supervised-mnist-curves"].build([{**longer, "machine": gpu}]))
    assert "MAP, fixed N(0, 1) (GPU)" in curves and "MAP, fixed N(0, 1) (CPU)" not in curves
    table = cells(_tables()["supervised-mnist"].build([{**last, "machine": gpu}]))
    assert table["MAP"][-1] == f"{own['seconds_per_epoch']:.1f} (GPU)"

    fashion_run = as_run({"weight_prior": "mvg"}, dataset="fashion-mnist")
    fashion = cells(_tables()["supervised-fashion-mnist"].build([fashion_run]))
    assert fashion["MAP"] == ["1", str(own["best_epoch"]), f"{100 * own['error']:.2f} %", nll, ece,
                              f"{own['seconds_per_epoch']:.1f}"]  # fmt: skip
    assert fashion["SVGD"] == ["10", NOT_MEASURED, "", "", "", ""]
    assert cells(_tables()["supervised-fashion-mnist"].build([last]))["MAP"] == ["1", NOT_MEASURED, "", "", "", ""]


def test_the_vmg_pseudo_data_table_from_the_bench_scripts_rows():
    """bench/mnist_vmg_pseudo_data.py's rows (one per count): the epochs trained, the validation figures of the epoch
    kept and of the last epoch, in percent where an error; a count of the table without a row says *not re-measured*; the compute line is
    the estimate until every count has a row, then the fits' own hours."""
    def fit_row(count: int, seconds: float) -> dict:
        return {"pseudo_data": count, "best_epoch": 73, "val_log_likelihood": -0.05091, "val_error": 0.01456,
                "last_val_log_likelihood": -0.05104, "last_val_error": 0.0152, "epochs": 100, "seconds": seconds,
                "machine": "m", "commit": "abc"}  # fmt: skip

    table = _tables()["supervised-mnist-vmg-pseudo-data"]
    shown = cells(table.build([fit_row(150, 2400.0), fit_row(50, 1500.0)]))
    assert list(shown) == ["10", "50", "150"]
    assert shown["150"] == ["100", "−0.0509", "1.46 %", "73", "−0.0510", "1.52 %", "40"]
    assert shown["10"] == [NOT_MEASURED, "", "", "", "", "", ""]
    assert "about 1.5 core-hours" in table.compute([fit_row(150, 2400.0)])
    rows = [fit_row(10, 900.0), fit_row(50, 1500.0), fit_row(150, 2400.0)]
    assert table.compute(rows) == "3 fits, 1.3 core-hours of training on m, one thread each"
    assert list(cells(table.build([*rows, fit_row(100, 1.0)]))) == ["10", "50", "100", "150"]  # another count: its row
