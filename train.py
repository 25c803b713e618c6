#!/usr/bin/env python
"""`python train.py …` from a checkout: the same front end as the installed `svpg train` (svpg/rl/train_cli.py)."""
import sys

from svpg.rl.train_cli import main

if __name__ == "__main__":
    sys.exit(main())
