"""The supervised front end's results table: every test metric as mean ± standard error over splits (:mod:`svpg.stats`)."""

from __future__ import annotations

import numpy as np

from svpg.stats import convention, decimals, format_mean_se, markdown_table, mean_se


def method_label(method: str, cfg) -> str:
    """A method's name in tables: s2vgd with its K (``cfg.householder``), map with its single particle."""
    return {"s2vgd": f"s2vgd (K={cfg.householder})", "map": "map (M=1)"}.get(method, method)


def format_table(results: dict[str, list[dict]], task: str, cfg, title: str = "") -> str:
    """Markdown table: mean ± standard error over splits (runs, for classification) of every metric, one row per
    method; ``results`` maps a method to its per-split result rows, ``cfg`` is the run's SupervisedConfig."""
    if task == "classification":
        cols = [("error", "test error (%)", 100.0, 2), ("nll", "test NLL", 1.0, 4), ("ece", "ECE", 1.0, 4)]
        time_col = ("seconds_per_epoch", "s / epoch (median)")
        note = "ECE with 15 equal-width confidence bins"
    else:
        cols = [("rmse", "test RMSE", 1.0, 3), ("test_ll", "test log-likelihood", 1.0, 3)]
        time_col = ("seconds", "s / split (median)")
        note = "log-likelihood in the target's original units"
    count = "runs" if task == "classification" else "splits"
    summary = {
        method: {key: mean_se([r[key] * scale for r in found]) for key, _, scale, _ in cols}
        for method, found in results.items()
    }
    digits = {key: decimals((s[key][0] for s in summary.values()), least) for key, _, _, least in cols}
    rows = []
    for method, found in results.items():
        rows.append(
            [
                method_label(method, cfg),
                *[format_mean_se(*summary[method][key], digits=digits[key]) for key, *_ in cols],
                len(found),
                f"{np.median([r[time_col[0]] for r in found]):.2f}",
            ]
        )
    sizes = {len(found) for found in results.values()}
    spread = convention(count, sizes.pop() if len(sizes) == 1 else None)
    head = f"**{title}**\n\n" if title else ""
    return (
        head + f"({spread}; {note})\n\n" + markdown_table(["method", *[c[1] for c in cols], count, time_col[1]], rows)
    )
