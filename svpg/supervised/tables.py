"""The Markdown results table of a supervised run (``results.md``)."""

from __future__ import annotations

import numpy as np

from svpg.stats import mean_se
from svpg.supervised.config import SupervisedConfig


def method_label(method: str, cfg: SupervisedConfig) -> str:
    return {"s2vgd": f"s2vgd (K={cfg.householder})", "map": "map (M=1)"}.get(method, method)


def format_table(results: dict[str, list[dict]], task: str, cfg: SupervisedConfig, title: str = "") -> str:
    """Markdown table: mean ± standard error over splits of every metric, one row per method."""
    if task == "classification":
        cols = [("error", "test error (%)", 100.0, 2), ("nll", "test NLL", 1.0, 4), ("ece", "ECE", 1.0, 4)]
        time_col = ("seconds_per_epoch", "s / epoch (median)")
    else:
        cols = [("rmse", "test RMSE", 1.0, 3), ("test_ll", "test log-likelihood", 1.0, 3)]
        time_col = ("seconds", "s / split (median)")
    count = "runs" if task == "classification" else "splits"
    head = ["method", *[c[1] for c in cols], count, time_col[1]]
    lines = [f"**{title}**\n" if title else "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for method, rows in results.items():
        cells = [method_label(method, cfg)]
        for key, _, scale, digits in cols:
            mean, se = mean_se([r[key] * scale for r in rows])
            cells.append(f"{mean:.{digits}f} ± {se:.{digits}f}" if len(rows) > 1 else f"{mean:.{digits}f}")
        cells.append(str(len(rows)))
        cells.append(f"{np.median([r[time_col[0]] for r in rows]):.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    if task == "regression":
        note = "mean ± standard error over splits; log-likelihood in the target's original units"
    else:
        note = "mean ± standard error over runs; ECE with 15 equal-width confidence bins"
    return "\n".join(line for line in lines if line) + f"\n\n({note})\n"
