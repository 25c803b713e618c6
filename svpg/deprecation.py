"""Former names kept working for existing code, with a :class:`DeprecationWarning` that names the new one."""

from __future__ import annotations

import warnings
from collections.abc import Callable


def renamed(module: str, aliases: dict[str, str], namespace: dict) -> Callable[[str], object]:
    """A module ``__getattr__`` that answers each former name of ``aliases`` ({former: current}) with the
    current name's object from ``namespace`` (the module's ``globals()``), warning once per use site::

        __getattr__ = renamed(__name__, {"METHODS": "BNN_METHODS"}, globals())
    """

    def __getattr__(name: str) -> object:
        if name in aliases:
            warnings.warn(
                f"{module}.{name} is deprecated: use {module}.{aliases[name]} (the same object)",
                DeprecationWarning,
                stacklevel=2,
            )
            return namespace[aliases[name]]
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
