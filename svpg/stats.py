"""Summary statistics shared by the comparison tools: seeds or splits paired by key, Student-t intervals.

Every front end that sets methods side by side (``svpg.bandits.compare``, ``svpg.supervised.compare``,
``svpg.rl.ablation``) pairs two methods on the same seeds (or splits) and reports the mean difference
with a 95 % Student-t interval, so a difference is read against the seed-to-seed noise it must beat.
"""
from __future__ import annotations

import math
import re


def t_quantile(p: float, df: int) -> float:
    """The p-quantile of Student's t with df degrees of freedom."""
    from scipy.stats import t as student_t

    return float(student_t.ppf(p, df))


def mean_se(values) -> tuple[float, float]:
    """Mean and standard error (sample std / √n) of the finite values; NaN where undefined."""
    x = [float(v) for v in values if math.isfinite(v)]
    if not x:
        return math.nan, math.nan
    mean = sum(x) / len(x)
    if len(x) < 2:
        return mean, math.nan
    return mean, math.sqrt(sum((v - mean) ** 2 for v in x) / (len(x) - 1) / len(x))


def paired_difference(a: dict, b: dict) -> tuple[int, float, float, float]:
    """a − b over the keys (seeds, splits) both have with finite values: (pairs, mean, 95 % t-interval
    low, high); the interval is NaN below two pairs."""
    d = [a[k] - b[k] for k in sorted(set(a) & set(b)) if math.isfinite(a[k]) and math.isfinite(b[k])]
    mean, se = mean_se(d)
    if len(d) < 2:
        return len(d), mean, math.nan, math.nan
    half = t_quantile(0.975, len(d) - 1) * se
    return len(d), mean, mean - half, mean + half


def parse_range_list(text: str, option: str = "--seeds") -> list[int]:
    """``100-104`` → [100, …, 104]; ranges and single numbers may be joined by commas (``0-4,7``).
    Raises ValueError naming ``option`` for anything else."""
    values: list[int] = []
    for part in text.replace(" ", "").split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m or (m[2] is not None and int(m[2]) < int(m[1])):
            raise ValueError(f"{option} {text!r}: expected a range of numbers ≥ 0 such as 100-104, or a list such as 0-4,7")
        values += range(int(m[1]), int(m[2] or m[1]) + 1)
    if len(set(values)) != len(values):
        raise ValueError(f"{option} {text!r} names a number twice: give each once")
    return values
