#!/usr/bin/env python
"""`python evaluate.py …` from a checkout: the same front end as the installed `svpg evaluate` (svpg/rl/evaluate_cli.py)."""
import sys

from svpg.rl.evaluate_cli import main

if __name__ == "__main__":
    sys.exit(main())
