"""The mutation operators: one small, syntactically valid change of one function of the protocol core.

``mutants_of(source, path)`` lists every mutant of a module, in source order (the list depends only on the
source text). Four operators, each a single edit the protocol rules make meaningful:

- ``negate-condition``: the test of an ``if``, ``while`` or conditional expression becomes ``not (...)``;
- ``remove-condition``: a guard is removed: ``if c:`` becomes ``if False:`` (the guarded block never runs),
  or one operand of an ``and`` / ``or`` in a condition is dropped (replaced by the neutral ``True`` /
  ``False``, which keeps the expression well formed);
- ``drop-return``: an early ``return`` (one inside an ``if``, ``for``, ``while`` or ``try``) becomes ``pass``;
- ``flip-comparison``: ``<`` <-> ``<=``, ``>`` <-> ``>=`` (an off-by-one at a boundary), ``==`` <-> ``!=``,
  ``in`` <-> ``not in``, ``is`` <-> ``is not``.

Only code inside functions is mutated (a mutant is applied by swapping one function's code object, see
``apply``). Left out: the core's self-checks (``check_invariants``, ``invariant_violations``) and ``if``
statements whose whole body is a ``raise``; these guard against broken invariants and bad input, so
negating one only makes the core raise on itself and removing one only weakens the oracle, neither of which
says anything about whether the simulator finds protocol bugs.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator
from dataclasses import dataclass

from simulator.guards import functions, is_raise_guard

OPERATORS = ("negate-condition", "remove-condition", "drop-return", "flip-comparison")
_FLIPS: dict[type, type] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
    ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}


@dataclass(frozen=True)
class Mutant:
    """One mutant: where it is, what it changes, and the function whose code it replaces.

    ``index`` is the mutant's position in its module's list; ``key`` names it independently of line numbers
    (path, function, operator, the change and its occurrence among identical changes in that function)."""

    path: str            # the module's file, relative to the repository
    module: str          # its import name
    index: int
    line: int
    end_line: int
    function: str        # qualified name of the outermost function around the change (the swapped code)
    operator: str
    original: str
    mutated: str
    occurrence: int

    @property
    def key(self) -> str:
        """A stable name: ``path:function:operator:original->mutated#n``."""
        return f"{self.path}:{self.function}:{self.operator}:{self.original}->{self.mutated}#{self.occurrence}"

    @property
    def where(self) -> str:
        """``path:line``, for a table."""
        return f"{self.path}:{self.line}"


def mutants_of(source: str, path: str, module: str) -> list[Mutant]:
    """Every mutant of one module's source, in a fixed order (source position, then operator)."""
    found: list[Mutant] = []
    seen: dict[tuple[str, str, str, str], int] = {}
    for site in _sites(ast.parse(source)):
        original, mutated = site.texts()
        name = (site.function, site.operator, original, mutated)
        seen[name] = seen.get(name, 0) + 1
        found.append(Mutant(path, module, len(found), site.node.lineno, site.node.end_lineno or site.node.lineno,
                            site.function, site.operator, original, mutated, seen[name]))
    return found


def mutated_tree(source: str, mutant: Mutant) -> ast.Module:
    """The module's AST with ``mutant`` applied (a fresh tree; the edit is the ``mutant.index``-th site)."""
    tree = ast.parse(source)
    site = _checked_site(_sites(tree), mutant)
    site.edit(site.node, site.parent)
    return ast.fix_missing_locations(tree)


def mutated_function(source: str, mutant: Mutant) -> ast.Module:
    """A module holding only the mutated function, inside empty classes of the same names so that it
    compiles to a code object with the same qualified name, line numbers and ``__class__`` cell as the
    original. Cheaper than recompiling the whole module; the parsed source is cached."""
    site = _checked_site(_parsed(source), mutant)
    memo: dict[int, object] = {}
    definition = copy.deepcopy(site.definition, memo)
    node = memo[id(site.node)]
    parent = memo.get(id(site.parent)) if site.parent is not None else None
    site.edit(node, parent)   # type: ignore[arg-type]
    body: ast.stmt = definition  # type: ignore[assignment]
    for name in reversed(mutant.function.split(".")[:-1]):
        body = ast.ClassDef(name=name, bases=[], keywords=[], body=[body], decorator_list=[])
        ast.copy_location(body, definition)
    return ast.fix_missing_locations(ast.Module(body=[body], type_ignores=[]))


_PARSED: dict[str, list[_Site]] = {}


def prepare(source: str) -> None:
    """Parse ``source`` and list its sites once (a parent does it before forking its mutant children)."""
    _parsed(source)


def _parsed(source: str) -> list[_Site]:
    if source not in _PARSED:
        _PARSED[source] = _sites(ast.parse(source))
    return _PARSED[source]


def _checked_site(sites: list[_Site], mutant: Mutant) -> _Site:
    if mutant.index >= len(sites):
        raise ValueError(f"{mutant.key}: no such site in the source")
    site = sites[mutant.index]
    if (site.function, site.operator, *site.texts()) != (mutant.function, mutant.operator, mutant.original,
                                                          mutant.mutated):
        raise ValueError(f"{mutant.key}: the source changed since the mutant was listed")
    return site


# --- where the operators apply ------------------------------------------------------------------------------

@dataclass
class _Site:
    """One place one operator applies: ``node`` is what changes (``parent`` holds it, for a statement)."""

    node: ast.AST
    parent: ast.AST | None
    function: str
    definition: ast.AST    # the def of ``function``
    operator: str
    position: int = 0      # the operand dropped or the comparison operator flipped

    def texts(self) -> tuple[str, str]:
        """(original, mutated) source text of the changed expression or statement."""
        if self.operator == "drop-return":
            return ast.unparse(self.node), "pass"
        changed = copy.deepcopy(self.node)
        self.edit(changed, None)
        shown = self.node.test if isinstance(self.node, (ast.If, ast.While, ast.IfExp)) else self.node
        shown_changed = changed.test if isinstance(changed, (ast.If, ast.While, ast.IfExp)) else changed
        return ast.unparse(shown), ast.unparse(shown_changed)

    def edit(self, node: ast.AST, parent: ast.AST | None) -> None:
        """Apply the change to ``node`` in place (a dropped return is replaced in ``parent``)."""
        if self.operator == "negate-condition":
            node.test = ast.UnaryOp(op=ast.Not(), operand=node.test)  # type: ignore[attr-defined]
        elif self.operator == "remove-condition" and isinstance(node, ast.If):
            node.test = ast.Constant(value=False)
        elif self.operator == "remove-condition":
            # the neutral element keeps the expression well formed: "a and b" without b is "a and True"
            assert isinstance(node, ast.BoolOp)
            node.values[self.position] = ast.Constant(value=isinstance(node.op, ast.And))
        elif self.operator == "flip-comparison":
            assert isinstance(node, ast.Compare)
            node.ops[self.position] = _FLIPS[type(node.ops[self.position])]()
        elif self.operator == "drop-return":
            assert parent is not None
            for statements in _statement_lists(parent):
                for i, stmt in enumerate(statements):
                    if stmt is node:
                        statements[i] = ast.Pass()
                        ast.copy_location(statements[i], node)
                        return
            raise ValueError("return statement not found in its parent")
        else:
            raise ValueError(f"unknown operator {self.operator!r}")


def _sites(tree: ast.Module) -> list[_Site]:
    """Mutation sites in source order; at one position, in the order of ``OPERATORS``."""
    sites: list[tuple[tuple[int, int, int, int], _Site]] = []
    for function, definition in functions(tree):
        guarded = {id(n) for g in ast.walk(definition) if is_raise_guard(g) for n in ast.walk(g.test)}
        tests = {id(n) for t in ast.walk(definition) if isinstance(t, (ast.If, ast.While, ast.IfExp))
                 for n in ast.walk(t.test)}
        for node in ast.walk(definition):
            if id(node) in guarded:
                continue
            for site in _node_sites(node, function, definition, id(node) in tests):
                sites.append(((site.node.lineno, site.node.col_offset, OPERATORS.index(site.operator),
                               site.position), site))
    sites.sort(key=lambda pair: pair[0])
    return [site for _, site in sites]


def _node_sites(node: ast.AST, function: str, definition: ast.AST, in_test: bool) -> Iterator[_Site]:
    if isinstance(node, (ast.If, ast.While, ast.IfExp)) and not is_raise_guard(node):
        yield _Site(node, None, function, definition, "negate-condition")
        if isinstance(node, ast.If):
            yield _Site(node, None, function, definition, "remove-condition")
    if isinstance(node, ast.BoolOp) and in_test:  # "x or default" elsewhere picks a value, not a branch
        for i in range(len(node.values)):
            yield _Site(node, None, function, definition, "remove-condition", i)
    if isinstance(node, (ast.If, ast.For, ast.While, ast.Try)):
        for statements in _statement_lists(node):
            for child in statements:
                if isinstance(child, ast.Return):
                    yield _Site(child, node, function, definition, "drop-return")
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in _FLIPS:
                yield _Site(node, None, function, definition, "flip-comparison", i)


def _statement_lists(node: ast.AST) -> Iterator[list[ast.stmt]]:
    for field in ("body", "orelse", "finalbody"):
        statements = getattr(node, field, None)
        if statements:
            yield statements
    for handler in getattr(node, "handlers", []):
        yield handler.body
