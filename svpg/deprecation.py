"""Former names kept working for existing code, with a :class:`DeprecationWarning` that names the new one."""

from __future__ import annotations

import importlib
import sys
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


def moved(former: str, current: str, namespace: dict) -> None:
    """Make the module ``former`` (its ``globals()`` is ``namespace``) a former name of the module ``current``:
    ``import former`` and ``from former import x`` give ``current`` itself (warning at the first import, at the
    importer's line), and ``python -m former`` runs ``current``'s ``main()`` (where it has one)::

        moved("svpg.rl.benchmark", "svpg.studies.benchmark", globals())   # the whole of svpg/rl/benchmark.py
    """
    run = namespace["__name__"] == "__main__"
    warnings.warn(
        f"{'python -m ' if run else ''}{former} is deprecated: use {'python -m ' if run else ''}{current} "
        "(the same module)",
        DeprecationWarning,
        # the importer's line (the import machinery's frames are skipped); run as a script, the module's own
        stacklevel=2 if run else 3,
    )
    module = importlib.import_module(current)
    if run and hasattr(module, "main"):
        sys.exit(module.main())
    sys.modules[former] = module


def renamed_attribute(owner: str, former: str, current: str) -> property:
    """A read-only class attribute ``former`` that answers with ``current``'s value, warning that it is
    deprecated::

        steps_per_iteration = renamed_attribute("SVPG", "steps_per_iteration", "steps_per_env")
    """

    def get(self) -> object:
        warnings.warn(
            f"{owner}.{former} is deprecated: use {owner}.{current} (the same value)", DeprecationWarning, stacklevel=2
        )
        return getattr(self, current)

    return property(get, doc=f"Deprecated: :attr:`{current}`.")


def renamed_argument(owner: str, kwargs: dict, former: str, current: str) -> object:
    """The value of a keyword argument given under its former name ``former`` (removed from ``kwargs``),
    with a DeprecationWarning naming ``current``; ``None`` if it was not given. Other keywords are refused
    as Python refuses them."""
    unknown = sorted(set(kwargs) - {former})
    if unknown:
        raise TypeError(f"{owner}() got an unexpected keyword argument {unknown[0]!r}")
    if former not in kwargs:
        return None
    warnings.warn(f"{owner}({former}=...) is deprecated: use {current}=", DeprecationWarning, stacklevel=3)
    return kwargs.pop(former)
