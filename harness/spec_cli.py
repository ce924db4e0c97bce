"""The spec's field table as command-line options: one flag per field, for each command that takes it.

``add_options(parser, "run")`` adds the flags of ``kraftcheck run``; ``cluster`` (cluster up), ``scenario``
and ``pytest`` (the plugin's ``--kraftcheck-*`` options) take their subsets, as each field's ``Option``
says. Every flag defaults to None, so ``options_from_args`` returns only what was given and a replay's
stored options are overridden by exactly those; the help of each flag states the spec's default.
Values are not checked here: ``RunSpec`` checks them, whatever their source.
"""

from __future__ import annotations

import argparse
import typing
from collections.abc import Iterator, Mapping
from typing import Any

from harness.spec import DEFAULTS, OPTIONS, Option, field_kind


def _default_text(name: str, opt: Option, note: str | None) -> str:
    if note is not None:
        return note
    if opt.default_text is not None:
        return opt.default_text
    default = DEFAULTS[name]
    if isinstance(default, bool):
        return "on" if default else "off"
    return f"{default:g}" if isinstance(default, float) else str(default)


def option_arguments(command: str, default_notes: Mapping[str, str] | None = None
                     ) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``(field name, flag, argparse keyword arguments)`` for each flag ``command`` takes, in table order.

    Every flag defaults to None (so a replay can tell what was given), its help states the spec's default
    (or ``default_notes[name]``, for a command whose default differs). Booleans are switches that set the
    opposite of the default.
    """
    notes = default_notes or {}
    for name, opt in OPTIONS.items():
        if opt.flag is None or command not in opt.commands:
            continue
        base, _ = field_kind(name)
        text = f"turn {'off' if DEFAULTS[name] else 'on'} {opt.help}" if base is bool else opt.help
        kwargs: dict[str, Any] = {"default": None,
                                  "help": f"{text} (default: {_default_text(name, opt, notes.get(name))})"}
        if base is bool:
            kwargs.update(action="store_const", const=not DEFAULTS[name])
        else:
            if base is int:
                kwargs["type"] = int
            elif base is float:
                kwargs["type"] = float
            if opt.choices is not None and typing.get_origin(base) is not tuple:
                kwargs["choices"] = [str(c) for c in opt.choices]
            if opt.metavar is not None:
                kwargs["metavar"] = opt.metavar
        yield name, opt.flag, kwargs


def add_options(parser: argparse.ArgumentParser | Any, command: str,
                default_notes: Mapping[str, str] | None = None) -> None:
    """Add the flags ``command`` takes (see ``option_arguments``) to an argparse parser or group."""
    for name, flag, kwargs in option_arguments(command, default_notes):
        parser.add_argument(flag, dest=name, **kwargs)


def options_from_args(args: argparse.Namespace, command: str = "run") -> dict[str, Any]:
    """The spec options the user actually gave on ``command``'s command line (None = not given)."""
    return {name: getattr(args, name) for name, _, _ in option_arguments(command)
            if getattr(args, name, None) is not None}
