"""``python -m svpg.compare RUN RUN …``: finished runs of one kind side by side, paired by seed or split.

The command (its help: :data:`svpg.comparing.DESCRIPTION`) finds the kind of the runs and hands them to
that front end's table: :func:`svpg.bandits.compare.report`, :func:`svpg.supervised.compare.report` or
:func:`svpg.rl.compare.report`. What the three share lives in :mod:`svpg.comparing`.
"""

from __future__ import annotations

import sys

from svpg.comparing import (  # noqa: F401  (the names this module had before they moved to svpg.comparing)
    KINDS,
    SPREADS,
    CompareError,
    build_parser,
    reference_first,
    run_command,
    run_kind,
)


def _bandit(args, keys: list[int] | None, spread: str) -> str:
    from svpg.bandits.compare import report

    return report(args, keys, spread)


def _supervised(args, keys: list[int] | None, spread: str) -> str:
    from svpg.supervised.compare import report

    return report(args, keys, spread)


def _rl(args, keys: list[int] | None, spread: str) -> str:
    from svpg.rl.compare import report

    return report(args, keys, spread)


#: each kind's table (the front ends are imported only when their runs are compared)
TABLES = {"bandit": _bandit, "supervised": _supervised, "rl": _rl}


def main(argv: list[str] | None = None, *, kind: str | None = None, prog: str = "python -m svpg.compare") -> int:
    """The command line; ``kind`` restricts it to runs of one kind."""
    return run_command(argv, TABLES, kind=kind, prog=prog)


if __name__ == "__main__":
    sys.exit(main())
