"""Run ``train.py`` and SIGKILL this process at a chosen moment (used by tests/rl/test_faults.py).

    python tests/kill_driver.py replace:<k>:before|after  -- <train.py arguments>
    python tests/kill_driver.py time:<seconds>           -- <train.py arguments>

``replace:k:before`` dies when the k-th atomic write has written its temporary file but not renamed it;
``replace:k:after`` right after the k-th rename; ``time:s`` s seconds after training starts. A SIGKILL
runs no cleanup, as a crash, an OOM kill or a pulled plug.
"""
import os
import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def die():
    os.kill(os.getpid(), signal.SIGKILL)


def main():
    plan, argv = sys.argv[1], sys.argv[sys.argv.index("--") + 1:]
    kind, *rest = plan.split(":")
    import train

    if kind == "replace":
        k, phase = int(rest[0]), rest[1]
        real_replace, count = os.replace, [0]

        def replace(src, dst, *a, **kw):
            count[0] += 1
            if count[0] == k and phase == "before":
                die()
            real_replace(src, dst, *a, **kw)
            if count[0] == k and phase == "after":
                die()

        os.replace = replace
    elif kind == "time":
        timer = threading.Timer(float(rest[0]), die)
        timer.daemon = True
        timer.start()
    else:
        raise SystemExit(f"unknown plan {plan!r}")
    sys.exit(train.main(argv))


if __name__ == "__main__":
    main()
