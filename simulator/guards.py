"""The guard table: every branch of the protocol core that rejects, ignores or fences, found by an AST pass.

A guard is a place where the core says "no": a request refused with an error code, a stale message
dropped, an epoch compared, an early way out of a handler. A search that never makes such a branch's
condition true cannot test it (removing the branch changes nothing the search sees), so the simulator
counts how often each guard's body runs (``guard_count``) and the schedule generator aims at the guards
(``steer``). The list depends only on the source text, like the mutation pass's list of mutants.

What counts as a guard: an ``if`` (an ``elif`` is an ``if`` of its own) inside a function of
``reference_impl/protocol`` whose body

- ends the way out: its last statement is a ``return``, ``continue`` or ``break`` (returns an error value,
  returns early, drops the message or the item of a loop); or
- refuses: it names an error code (``Errors.X``) or builds one (``error(...)``);

or whose test compares an epoch (a comparison with an operand whose name contains ``epoch``: leader,
partition, broker, quorum epochs). Left out, as in the mutation pass: the core's self-checks
(``check_invariants``, ``invariant_violations``) and ``if`` statements whose whole body is a ``raise``
(broken-invariant and bad-input checks: their firing is a finding, never a path to cover).

A guard *fires* when its body starts to run, that is when its condition was true. It is named
``path:function#n`` (the n-th guard of that function in source order, the function's qualified name as
Python gives it, nested functions included), which survives unrelated edits elsewhere in the file.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

import reference_impl.protocol

PROTOCOL_DIR = os.path.dirname(os.path.abspath(reference_impl.protocol.__file__))
REPO_DIR = os.path.dirname(os.path.dirname(PROTOCOL_DIR))
SELF_CHECKS = frozenset({"check_invariants", "invariant_violations"})
# Why a branch is a guard (a guard may have several reasons; the first that applies is shown).
EXIT, REFUSE, EPOCH = "exit", "refuse", "epoch"


@dataclass(frozen=True)
class Guard:
    """One guard: where it is and what it tests. ``body_line`` is the line whose execution means it fired."""

    path: str            # the module's file, relative to the repository
    function: str        # qualified name of the innermost function around it (``A.f.<locals>.g``)
    occurrence: int      # 1-based, among the guards of that function in source order
    line: int            # the ``if``
    body_line: int       # the first statement of its body
    reason: str          # EXIT, REFUSE or EPOCH
    test: str            # the condition's source text (shortened)

    @property
    def name(self) -> str:
        """A stable name: ``path:function#n``."""
        return f"{self.path}:{self.function}#{self.occurrence}"

    @property
    def where(self) -> str:
        """``path:line``, for a table."""
        return f"{self.path}:{self.line}"

    @property
    def module_file(self) -> str:
        """The absolute file name the interpreter reports for the guard's code."""
        return os.path.normpath(os.path.join(REPO_DIR, self.path))


def guards_of(source: str, path: str) -> list[Guard]:
    """Every guard of one module's source, in source order."""
    found: list[Guard] = []
    seen: dict[str, int] = {}
    for qualname, definition in functions(ast.parse(source), inner=True):
        ifs = sorted((n for n in _own_nodes(definition) if isinstance(n, ast.If) and not is_raise_guard(n)),
                     key=lambda n: (n.lineno, n.col_offset))
        for node in ifs:
            reason = guard_reason(node)
            if reason is None:
                continue
            seen[qualname] = seen.get(qualname, 0) + 1
            test = ast.unparse(node.test)
            found.append(Guard(path, qualname, seen[qualname], node.lineno, node.body[0].lineno, reason,
                               test if len(test) <= 80 else test[:77] + "..."))
    found.sort(key=lambda g: (g.line, g.function))
    return found


@lru_cache(maxsize=1)
def core_guards() -> tuple[Guard, ...]:
    """Every guard of every module of the protocol core (subpackages included), in file and line order."""
    found: list[Guard] = []
    for path in core_modules():
        with open(path, encoding="utf-8") as fh:
            found.extend(guards_of(fh.read(), os.path.relpath(path, REPO_DIR)))
    return tuple(found)


def core_modules(directory: str = PROTOCOL_DIR) -> list[str]:
    """The ``.py`` files under ``directory``, subpackages included, sorted by path."""
    found = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        found += [os.path.join(root, name) for name in files if name.endswith(".py")]
    return sorted(found)


def guard_reason(node: ast.If) -> str | None:
    """Why an ``if`` is a guard (see the module docstring), or None."""
    if isinstance(node.body[-1], (ast.Return, ast.Continue, ast.Break)):
        return EXIT
    for child in (n for stmt in node.body for n in ast.walk(stmt)):
        if (isinstance(child, ast.Attribute) and isinstance(child.value, ast.Name) and child.value.id == "Errors"
                and child.attr != "NONE"):
            return REFUSE
        if isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id == "error":
            return REFUSE
    for child in ast.walk(node.test):
        if isinstance(child, ast.Compare) and any(_mentions_epoch(part) for part in [child.left, *child.comparators]):
            return EPOCH
    return None


def _mentions_epoch(node: ast.AST) -> bool:
    for child in ast.walk(node):
        name = child.id if isinstance(child, ast.Name) else child.attr if isinstance(child, ast.Attribute) else ""
        if "epoch" in name.lower():
            return True
    return False


def functions(tree: ast.Module, inner: bool = False) -> Iterator[tuple[str, ast.AST]]:
    """(qualified name, def node) of each module-level function and method, the self-checks left out.
    Nested defs are part of theirs, unless ``inner``: then they are listed too, under the qualified name
    Python gives their code (``outer.<locals>.inner``)."""
    def visit(body: list[ast.stmt], prefix: str) -> Iterator[tuple[str, ast.AST]]:
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                yield from visit(stmt.body, f"{prefix}{stmt.name}.")
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name not in SELF_CHECKS:
                yield f"{prefix}{stmt.name}", stmt
                if inner:
                    yield from visit_nested(stmt, f"{prefix}{stmt.name}.<locals>.")

    def visit_nested(definition: ast.AST, prefix: str) -> Iterator[tuple[str, ast.AST]]:
        for node in _own_nodes(definition):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not definition:
                yield f"{prefix}{node.name}", node
                yield from visit_nested(node, f"{prefix}{node.name}.<locals>.")
            elif isinstance(node, ast.ClassDef):
                yield from visit(node.body, f"{prefix}{node.name}.")
    yield from visit(tree.body, "")


def _own_nodes(definition: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function that belong to its own code object (not to a nested def, class or lambda);
    the nested definitions themselves are yielded, not entered."""
    stack = list(ast.iter_child_nodes(definition))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def is_raise_guard(node: ast.AST) -> bool:
    """An ``if`` whose whole body is a ``raise`` (a broken-invariant or bad-input check)."""
    return isinstance(node, ast.If) and not node.orelse and all(isinstance(s, ast.Raise) for s in node.body)
