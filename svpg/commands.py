"""The ``svpg`` command: one subcommand per front end, each with its own options and ``--help``.

svpg train --preset swingup            # RL (the repository's python train.py)
svpg evaluate runs/<run-name>          # roll out a saved ensemble (python evaluate.py)
svpg bandit --problem wheel            # contextual bandits
svpg supervised --dataset boston       # Bayesian neural networks
svpg compare runs/a runs/b             # paired comparison of finished runs
svpg export runs/<run-name> actor.pt2  # one particle as a torch-only file
svpg report --check                    # the documents' tables against bench/results/
"""

from __future__ import annotations

import difflib
import importlib
import sys

# name -> (module with main(argv) -> int, one line for the overview); modules are imported only when run
COMMANDS = {
    "train": ("svpg.rl.train_cli", "train particle policies on a Gymnasium task (Stein variational policy gradient)"),
    "evaluate": ("svpg.rl.evaluate_cli", "roll out a saved particle ensemble and report returns per particle"),
    "bandit": ("svpg.bandits.cli", "contextual bandits: Stein Thompson sampling and baselines"),
    "supervised": ("svpg.supervised.cli", "Bayesian neural networks on regression/classification data"),
    "compare": ("svpg.compare", "compare finished runs of one front end (means, paired differences)"),
    "export": ("svpg.rl.export", "write one particle of a saved ensemble as a file that runs with torch alone"),
    "report": ("svpg.report", "rebuild (or --check) the documents' results tables from bench/results/"),
}
# the front ends whose messages can name the command the user typed
NAMED = {"train", "evaluate", "report"}


def overview() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {text}" for name, (_, text) in COMMANDS.items()]
    return "usage: svpg COMMAND [options]    (svpg COMMAND --help: that command's options)\n\ncommands:\n" + "\n".join(
        lines
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(overview(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] == "--version":
        from svpg import __version__

        print(f"svpg {__version__}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        close = difflib.get_close_matches(name, COMMANDS, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        print(f"svpg: error: unknown command {name!r}{hint}: choose from {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    return module.main(rest, prog=f"svpg {name}") if name in NAMED else module.main(rest)


if __name__ == "__main__":
    sys.exit(main())
