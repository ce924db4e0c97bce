"""The mutation operators, their application to live code and the baseline coverage (pure and fast)."""

from __future__ import annotations

import ast
import importlib
import sys
import textwrap

import pytest

from simulator.mutation import OPERATORS, core_mutants, mutants_of
from simulator.mutation.apply import applied
from simulator.mutation.campaign import core_modules
from simulator.mutation.coverage import line_coverage
from simulator.mutation.operators import mutated_tree

SAMPLE = textwrap.dedent('''
    def classify(x, limit):
        if x is None:
            raise ValueError("no x")
        while x > limit and limit >= 0:
            x -= 1
        for item in range(3):
            if item == x:
                return "hit"
        return "big" if x < limit else "small"


    class Gate:
        def allows(self, members):
            if 1 in members or not members:
                return True
            return False

        def check_invariants(self):
            if self is None:
                return 1
''')


def test_every_operator_applies_and_each_mutant_compiles_to_different_code():
    mutants = mutants_of(SAMPLE, "sample.py", "sample")
    assert {m.operator for m in mutants} == set(OPERATORS)
    original = ast.unparse(ast.parse(SAMPLE))
    seen = set()
    for mutant in mutants:
        tree = mutated_tree(SAMPLE, mutant)
        compile(tree, "sample.py", "exec")
        text = ast.unparse(tree)
        assert text != original, mutant.key
        assert mutant.mutated != mutant.original
        seen.add(text)
    assert len(seen) == len(mutants), "two mutants produce the same code"


def test_raise_guards_and_self_checks_are_left_alone():
    mutants = mutants_of(SAMPLE, "sample.py", "sample")
    assert not any(m.original == "x is None" for m in mutants)
    assert not any("check_invariants" in m.function for m in mutants)
    assert {m.function for m in mutants} == {"classify", "Gate.allows"}


def test_the_expected_changes_are_listed():
    changes = {(m.operator, m.original, m.mutated) for m in mutants_of(SAMPLE, "sample.py", "sample")}
    assert ("flip-comparison", "x > limit", "x >= limit") in changes
    assert ("flip-comparison", "1 in members", "1 not in members") in changes
    assert ("remove-condition", "1 in members or not members", "False") in changes
    assert ("remove-condition", "1 in members or not members", "False or (not members)") in changes \
        or ("remove-condition", "1 in members or not members", "False or not members") in changes
    assert ("negate-condition", "x < limit", "not x < limit") in changes
    assert ("drop-return", "return 'hit'", "pass") in changes
    assert ("drop-return", "return True", "pass") in changes


def test_the_core_mutant_list_is_deterministic_with_unique_keys():
    first, second = core_mutants(), core_mutants()
    assert first == second and len(first) > 500
    assert len({m.key for m in first}) == len(first)
    assert {m.operator for m in first} == set(OPERATORS)


def test_the_core_mutant_list_covers_subpackages(tmp_path):
    # Modules in a subpackage of the core are found (compiled caches are not).
    core = tmp_path / "protocol"
    (core / "control" / "__pycache__").mkdir(parents=True)
    for name in ("top.py", "control/__init__.py", "control/inner.py", "control/__pycache__/inner.py"):
        (core / name).write_text(SAMPLE)
    assert core_modules(str(core)) == [str(core / "control" / "__init__.py"), str(core / "control" / "inner.py"),
                                       str(core / "top.py")]
    # The real core: the control managers are mutated, each mutant naming its module's import name.
    managers = {(m.path, m.module) for m in core_mutants() if m.path.startswith("reference_impl/protocol/control/")}
    assert ("reference_impl/protocol/control/replication.py", "reference_impl.protocol.control.replication") \
        in managers
    for _, module in managers:
        importlib.import_module(module)


@pytest.fixture
def sample_module(tmp_path, monkeypatch):
    (tmp_path / "mutation_sample.py").write_text(SAMPLE)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("mutation_sample")
    yield module
    sys.modules.pop("mutation_sample", None)


def test_applied_swaps_the_live_function_and_restores_it(sample_module):
    mutant = next(m for m in mutants_of(SAMPLE, "mutation_sample.py", "mutation_sample")
                  if m.operator == "flip-comparison" and m.original == "item == x")
    gate, classify = sample_module.Gate(), sample_module.classify
    assert classify(1, 5) == "hit"
    with applied(mutant, SAMPLE):
        assert classify(1, 5) == "hit"          # item 0 != 1 now matches
        assert classify(0, 5) == "hit"
        assert sample_module.classify(7, 5) == "hit"
    assert classify(7, 5) == "small" and gate.allows([1])


def test_applied_reaches_methods_through_the_class(sample_module):
    mutant = next(m for m in mutants_of(SAMPLE, "mutation_sample.py", "mutation_sample")
                  if m.function == "Gate.allows" and m.operator == "remove-condition" and m.mutated == "False")
    gate = sample_module.Gate()
    with applied(mutant, SAMPLE):
        assert gate.allows([1]) is False
    assert gate.allows([1]) is True


def test_line_coverage_records_the_lines_run(sample_module, tmp_path):
    with line_coverage(str(tmp_path)) as hits:
        sample_module.classify(1, 5)
    lines = hits[str(tmp_path / "mutation_sample.py")]
    assert 9 in lines                 # return "hit"
    assert 10 not in lines            # the final return is not reached
