"""The supervised runs of ``python -m svpg.compare``: methods of several runs on the same data and splits,
paired by split.

Runs of ``train.py supervised`` on the same data (same rows: config.json records their digest) with the
same ``--protocol``, ``--seed``, ``--test-fraction`` and ``--max-train`` fit every method on the same
training and test rows of split k, whatever methods they hold, so their per-split results can be set
side by side (for example the particle methods of one run beside the parametric methods of another).
:func:`load_runs` reads each run's finished splits (``splits/``; a run still fitting contributes what it
has finished), refuses runs whose data or splits differ and checks that a method present in two runs
gave the same numbers there; :func:`compare_table` prints every metric as mean ± standard error over
splits, and each method's paired difference to the reference on the splits both have (mean and 95 %
Student-t interval, and the splits on which the method is better).

``python -m svpg.supervised.compare`` is the former command, kept as a deprecated alias of
``python -m svpg.compare`` for supervised runs.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from svpg.comparing import CompareError, SameSettings, reference_first, run_command
from svpg.stats import decimals, mean_se, paired_difference

#: config.json entries that must agree for two runs to fit the same rows of every split
SPLIT_KEYS = ("protocol", "seed", "test_fraction", "max_train")
#: (key, column name, short name, scale, digits, higher is better) per task; the first two are paired
METRICS = {
    "regression": [
        ("rmse", "test RMSE", "RMSE", 1.0, 3, False),
        ("test_ll", "test log-likelihood", "LL", 1.0, 3, True),
    ],
    "classification": [
        ("error", "test error (%)", "error", 100.0, 2, False),
        ("nll", "test NLL", "NLL", 1.0, 4, False),
        ("ece", "ECE", "ECE", 1.0, 4, False),
    ],
}
#: the metrics two runs' rows of one (method, split) must agree on
RESULT_KEYS = tuple(m[0] for metrics in METRICS.values() for m in metrics)
TIME_KEY = {"regression": "seconds", "classification": "seconds_per_epoch"}


def load_runs(run_dirs: list[str | Path]) -> tuple[dict, dict[str, dict[int, dict]], dict[str, str]]:
    """(the shared data and split settings, {method: {split: row}}, {method: its label}) of the runs'
    finished splits, after the checks above."""
    from svpg.runs import CONFIG_FILE
    from svpg.supervised.runfolder import load_config, read_finished
    from svpg.supervised.tables import method_label

    same = SameSettings("do not fit the same rows", "compare runs of one data set, protocol and seed")
    table: dict[str, dict[int, dict]] = {}
    labels: dict[str, str] = {}
    for run_dir in map(Path, run_dirs):
        if not (run_dir / CONFIG_FILE).exists():
            raise CompareError(
                f"{run_dir} is not a supervised run folder (no {CONFIG_FILE}): "
                "pass folders written by train.py supervised"
            )
        cfg, built = load_config(run_dir)
        same.check(
            run_dir,
            {"dataset": cfg.dataset, "data": built["data"]["sha256"], **{k: getattr(cfg, k) for k in SPLIT_KEYS}},
        )
        finished = read_finished(run_dir, cfg.methods())
        if not any(finished.values()):
            raise CompareError(
                f"{run_dir} has no finished split yet: fit it with python train.py supervised --resume {run_dir}"
            )
        for method, rows in finished.items():
            for k, row in rows.items():
                seen = table.setdefault(method, {}).get(k)
                if seen is not None and any(not math.isclose(seen[m], row[m]) for m in RESULT_KEYS if m in row):
                    raise CompareError(
                        f"method {method} split {k} gave different results in two runs "
                        "(different options or code): compare runs whose shared methods agree"
                    )
                table[method].setdefault(k, row)
            labels.setdefault(method, method_label(method, cfg))
    if same.settings is None:
        raise CompareError("no run folder given: pass the runs to compare")
    return same.settings, table, labels


def table_task(table: dict[str, dict[int, dict]]) -> str:
    """``"regression"`` if the rows hold an RMSE, else ``"classification"``."""
    return "regression" if any("rmse" in row for rows in table.values() for row in rows.values()) else "classification"


def summarise(
    chosen: dict[str, dict[int, dict]], metrics: list[tuple]
) -> tuple[dict[str, dict[str, tuple[float, float]]], dict[str, int]]:
    """({method: {key: (mean, standard error)}}, {key: decimals}) of ``metrics`` (entries of :data:`METRICS`) over
    each method's rows (``{method: {split: row}}``); a column's decimals keep its smallest mean's digits."""
    summary = {
        method: {key: mean_se([row[key] * scale for row in own.values()]) for key, _, _, scale, _, _ in metrics}
        for method, own in chosen.items()
    }
    digits = {key: decimals((s[key][0] for s in summary.values()), least) for key, _, _, _, least, _ in metrics}
    return summary, digits


def mean_se_cell(mean: float, se: float, digits: int) -> str:
    """``mean ± se``, the mean alone where the standard error is undefined (one split)."""
    return f"{mean:.{digits}f} ± {se:.{digits}f}" if math.isfinite(se) else f"{mean:.{digits}f}"


def difference_cell(own: dict[int, dict], ref: dict[int, dict], metric: tuple, digits: int) -> tuple[str, int, int]:
    """(the paired difference own − ref of ``metric`` over the splits both have, ``+d [low, high]`` with its 95 %
    t-interval, ``+d`` for one pair, empty for none; the splits where own is better; the pairs)."""
    key, _, _, scale, _, higher = metric
    a = {k: row[key] * scale for k, row in own.items()}
    b = {k: row[key] * scale for k, row in ref.items() if k in a}
    pairs, mean, lo, hi = paired_difference(a, b)
    d = digits
    text = f"{mean:+.{d}f} [{lo:+.{d}f}, {hi:+.{d}f}]" if math.isfinite(lo) else (f"{mean:+.{d}f}" if pairs else "")
    better = sum((a[k] > b[k]) if higher else (a[k] < b[k]) for k in b)
    return text, better, pairs


def median_seconds(own: dict[int, dict], key: str) -> str:
    """The median of ``key`` (seconds per split or per epoch) over the rows, as the tables print it."""
    return f"{np.median([row[key] for row in own.values()]):.1f}"


def compare_table(
    table: dict[str, dict[int, dict]],
    reference: str,
    splits: list[int] | None = None,
    labels: dict[str, str] | None = None,
) -> str:
    """The Markdown comparison (see the module docstring)."""
    if reference not in table:
        raise CompareError(f"--reference {reference!r} is in none of the runs: choose one of {', '.join(table)}")
    labels = labels or {}
    task = table_task(table)
    metrics, time_key = METRICS[task], TIME_KEY[task]
    paired = metrics[:2]
    head = [
        "method",
        "splits",
        *[m[1] for m in metrics],
        *[f"{m[2]} − {reference} [95 % CI]" for m in paired],
        f"better on ({' / '.join(m[2] for m in paired)})",
        f"{time_key.replace('_', ' ')} (median)",
    ]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    ref = table[reference]
    chosen = {
        method: own
        for method, by_split in table.items()
        if (own := {k: row for k, row in by_split.items() if splits is None or k in splits})
    }
    summary, digits = summarise(chosen, metrics)
    rows = []
    for method, own in chosen.items():
        cells = [labels.get(method, method), str(len(own))]
        cells += [mean_se_cell(*summary[method][key], digits[key]) for key, *_ in metrics]
        better, pairs = [], 0
        for metric in paired:
            if method == reference:
                cells.append("")
                continue
            text, wins, pairs = difference_cell(own, ref, metric, digits[metric[0]])
            cells.append(text)
            better.append(str(wins))
        cells.append(f"{' / '.join(better)} of {pairs}" if better else "")
        cells.append(median_seconds(own, time_key))
        rows.append((method, summary[method][metrics[0][0]][0], "| " + " | ".join(cells) + " |"))
    lines += reference_first(rows, reference, higher_is_better=metrics[0][-1])
    return "\n".join(lines) + "\n"


def report(args, keys: list[int] | None, spread: str) -> str:
    """The header and table of ``python -m svpg.compare`` for supervised runs (standard errors only)."""
    if args.spread != "se":
        raise ValueError("--spread std: supervised tables show the standard error over splits only")
    shared, table, labels = load_runs(args.runs)
    reference = args.reference or "s2vgd"
    text = compare_table(table, reference, keys, labels)
    metrics = "RMSE and log-likelihood" if table_task(table) == "regression" else "error and NLL"
    return (
        f"**{shared['dataset']}**, --protocol {shared['protocol']}, --seed {shared['seed']}; mean ± standard error "
        f"over splits; paired differences of the {metrics} to {reference} over the splits both have, with 95 % "
        f"t-intervals; *better on*: splits where the method is better on each.\n\n" + text
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m svpg.compare`` for supervised runs only (the former command)."""
    return run_command(argv, {"supervised": report}, kind="supervised", prog="python -m svpg.supervised.compare")


if __name__ == "__main__":
    print("python -m svpg.supervised.compare is deprecated: use python -m svpg.compare", file=sys.stderr)
    sys.exit(main())
