"""Command-line parsers generated from config dataclasses (so ``--help`` documents every field), and the one
mechanism for renamed options: ``add_argument("--new", deprecated=("--old",), …)`` keeps ``--old`` working with
a one-line note on stderr."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import typing


class _DeprecatedAlias(argparse.Action):
    """An old name of an option: does what the option does, after a one-line note naming the new name."""

    def __init__(self, option_strings, dest, canonical: str, **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self.canonical = canonical

    def __call__(self, parser, namespace, values, option_string=None):
        print(
            f"{parser.prog}: note: {option_string} is deprecated, use {self.canonical} (same meaning)", file=sys.stderr
        )
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)


def _add_aliases(add, action: argparse.Action, deprecated: tuple[str, ...], registry: list) -> None:
    """Old names of ``action`` added by ``add`` (same destination, type and choices; no default of their own)."""
    if deprecated and not action.option_strings:
        raise ValueError(f"{action.dest}: a positional argument has no option name to deprecate")
    for old in deprecated:
        canonical = max(action.option_strings, key=len)
        registry.append(
            add(
                old,
                action=_DeprecatedAlias,
                canonical=canonical,
                dest=action.dest,
                nargs=action.nargs,
                const=action.const,
                type=action.type,
                choices=action.choices,
                metavar=action.metavar,
                default=argparse.SUPPRESS,
                help=f"deprecated name of {canonical}",
            )
        )


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (plus a pointer to ``--help``), not a usage dump,
    whose description keeps its line breaks (module docstrings with examples), and whose epilog can
    list named choices: ``Parser(prog=…, listed={"methods": {"s2vgd": "…", …}})``.

    It records every option added to it or to its argument groups (:attr:`options`, read by
    :func:`explicit_options`), and ``add_argument`` takes ``deprecated=("--old-name", …)``: old names that keep
    working with a one-line note on stderr."""

    def __init__(self, *args, listed: dict[str, dict[str, str]] | None = None, **kwargs):
        #: every argparse Action added, aliases included, in order (set before argparse adds --help)
        self.options: list[argparse.Action] = []
        kwargs.setdefault("usage", "%(prog)s [options]")
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        if listed:
            width = max(len(name) for items in listed.values() for name in items) + 2
            kwargs.setdefault(
                "epilog",
                "\n\n".join(
                    f"{title}:\n" + "\n".join(f"  {name:{width}s} {text}" for name, text in items.items())
                    for title, items in listed.items()
                ),
            )
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def add_argument(self, *args, deprecated: tuple[str, ...] = (), **kwargs):
        action = super().add_argument(*args, **kwargs)
        self.options.append(action)
        _add_aliases(super().add_argument, action, tuple(deprecated), self.options)
        return action

    def option_name(self, dest: str) -> str:
        """The option's current name for a destination (``"seeds"`` → ``"--num-seeds"`` after a rename), for messages
        that name options by their destination; ``--dest-name`` when no option has that destination."""
        for action in self.options:
            if action.dest == dest and action.option_strings and not isinstance(action, _DeprecatedAlias):
                return max(action.option_strings, key=len)
        return "--" + dest.replace("_", "-")

    def add_argument_group(self, *args, **kwargs):
        """An argument group whose options are recorded here and take ``deprecated=`` too."""
        group = super().add_argument_group(*args, **kwargs)
        add, options = group.add_argument, self.options

        def add_argument(*names, deprecated: tuple[str, ...] = (), **kw):
            action = add(*names, **kw)
            options.append(action)
            _add_aliases(add, action, tuple(deprecated), options)
            return action

        group.add_argument = add_argument  # type: ignore[method-assign]
        return group


def option(default, help: str, **kw):
    """A config dataclass field that documents itself: ``help`` (and ``choices``) feed ``--help``."""
    return dataclasses.field(default=default, metadata={"help": help, **kw})


def option_factory(factory, help: str, **kw):
    """:func:`option` for a mutable default (a dict), built fresh for every instance."""
    return dataclasses.field(default_factory=factory, metadata={"help": help, **kw})


def _json_object(text: str) -> dict:
    import json

    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(
            f"expected a JSON object such as '{{\"key\": 1}}', got {text!r} ({e})"
        ) from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object such as '{{\"key\": 1}}', got {text!r}")
    return value


def _parse_bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")


def _int_tuple(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.replace(" ", "").split(",") if v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers such as 25,10, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError("expected at least one width, e.g. 25,10")
    return values


def _float_tuple(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(v) for v in text.replace(" ", "").split(",") if v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers such as 1,1,0.1, got {text!r}") from None


def add_dataclass_arguments(
    parser: argparse.ArgumentParser, cls, skip: tuple[str, ...] = (), renamed: dict[str, str] | None = None
) -> None:
    """One ``--field-name`` option per dataclass field, with its default and help text.

    :param renamed: field → its option's name where that is not ``--field-name`` (e.g. ``{"seeds": "--num-seeds"}``);
        ``--field-name`` then keeps working as a deprecated name (``parser`` must be a :class:`Parser` or one of its
        groups). The destination stays the field's name."""
    hints = typing.get_type_hints(cls)
    renamed = renamed or {}
    unknown = sorted(set(renamed) - {f.name for f in dataclasses.fields(cls)})
    if unknown:
        raise ValueError(f"renamed: {unknown} are not fields of {cls.__name__}")
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        hint = hints[f.name]
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            raise TypeError(f"{cls.__name__}.{f.name} has no default: every option needs one")
        shown = " (default: %(default)s)" if default != "" else ""  # an empty default is explained by the help itself
        kwargs: dict = {"default": default, "help": f.metadata.get("help", "") + shown}
        if hint is bool:
            kwargs.update(type=_parse_bool, metavar="BOOL")
        elif hint == tuple[int, ...]:
            kwargs.update(type=_int_tuple, metavar="W1,W2")
            kwargs["help"] = f.metadata.get("help", "") + f" (default: {','.join(map(str, default))})"
        elif hint is dict:
            kwargs.update(type=_json_object, metavar="JSON")
            kwargs["help"] = f.metadata.get("help", "") + f" (default: {json_text(default)})"
        elif hint == tuple[float, ...]:
            kwargs.update(type=_float_tuple, metavar="S1,S2,…")
            kwargs["help"] = f.metadata.get("help", "") + f" (default: {','.join(map(str, default)) or 'none'})"
        else:
            kwargs["type"] = hint
        if "choices" in f.metadata:
            kwargs["choices"] = f.metadata["choices"]
        flag = "--" + f.name.replace("_", "-")
        if f.name in renamed:
            parser.add_argument(renamed[f.name], dest=f.name, deprecated=(flag,), **kwargs)
        else:
            parser.add_argument(flag, dest=f.name, **kwargs)


def json_text(value) -> str:
    import json

    return json.dumps(value)


def dataclass_from_args(cls, args: argparse.Namespace):
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in vars(args).items() if k in names})


def _typed(name: str, hint, value, source: str):
    """``value`` checked (and, for tuples and int → float, converted) against the field's type."""

    def bad(expected: str):
        return ValueError(f"{source}: {name!r} must be {expected}, got {value!r}")

    if hint is bool:
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad("an integer")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad("a number")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise bad("a string")
        return value
    if hint is dict:
        if not isinstance(value, dict):
            raise bad("a JSON object")
        return dict(value)
    if typing.get_origin(hint) is tuple:
        (item, _) = typing.get_args(hint)
        if not isinstance(value, (list, tuple)):
            raise bad(f"a list of {'integers' if item is int else 'numbers'}")
        return tuple(_typed(name, item, v, source) for v in value)
    return value


def dataclass_from_dict(cls, data: dict, source: str):
    """``cls(**data)`` with unknown keys and wrongly typed values refused in one line naming ``source``."""
    if not isinstance(data, dict):
        raise ValueError(f"{source} must be a JSON object of option names and values, got a {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"{source}: unknown option(s) {unknown}; see --help for the valid names")
    return cls(**{k: _typed(k, hints[k], v, source) for k, v in data.items()})


def explicit_options(parser: Parser, argv: list[str]) -> set[str]:
    """Destinations the user actually typed (so a preset can fill in the rest), under any of their names."""
    if not isinstance(parser, Parser):
        raise TypeError(
            f"explicit_options needs a svpg.cli.Parser (it records its options), got {type(parser).__name__}"
        )
    probe = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS)
    for action in parser.options:
        if not action.option_strings or action.dest == "help":
            continue
        if action.nargs == 0:  # flags (store_true and the like)
            probe.add_argument(*action.option_strings, dest=action.dest, action="store_true")
        else:
            # type=None is argparse's own default (the string as typed); the stubs only take it left out
            if action.type is None:
                probe.add_argument(*action.option_strings, dest=action.dest, nargs=action.nargs)
            else:
                probe.add_argument(*action.option_strings, dest=action.dest, type=action.type, nargs=action.nargs)
    known, _ = probe.parse_known_args(argv)
    return set(vars(known))


def comparison_parser(prog: str, description: str, runs_help: str, reference: str, keys: str) -> Parser:
    """The options every ``compare`` tool shares: run folders, ``--reference``, ``--<keys>`` (the seeds or
    splits to pair on) and ``--out``."""
    p = Parser(prog=prog, description=description)
    p.add_argument("runs", nargs="+", help=runs_help)
    p.add_argument("--reference", default="s2vgd", help=f"the {reference} every other is paired with (default: s2vgd)")
    p.add_argument(
        f"--{keys}", default=None, help=f"only these {keys}, e.g. 0-9 or 0,2 (default: every one any run has)"
    )
    p.add_argument("--out", default=None, help="also write the table to this Markdown file")
    return p


def emit_markdown(text: str, out: str | None) -> None:
    """Print ``text`` and, with ``out``, also write it there (atomically)."""
    from pathlib import Path

    from svpg.io import atomic_write

    print(text, end="")
    if out:
        atomic_write(Path(out), lambda tmp: Path(tmp).write_text(text))
