"""The environments live in :mod:`svpg.envs`; this shim, which is not installed, keeps ``import envs`` and
``from envs.base import …`` working for scripts run from the repository: every name is svpg.envs's own module."""
import sys

import svpg.envs
import svpg.envs.render  # noqa: F401  (the one submodule svpg.envs does not import itself)

for _name, _module in list(sys.modules.items()):
    if _name.startswith("svpg.envs."):
        sys.modules[_name[len("svpg."):]] = _module
sys.modules[__name__] = svpg.envs
