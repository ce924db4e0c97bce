"""Mutation self-test of the simulator (``kraftcheck selftest --mutants core``): does it find broken rules?

Theory of operation
===================
``operators`` lists mutants of ``reference_impl.protocol`` with an AST pass: one negated or removed
condition, one dropped early return or one flipped comparison each, named stably by function and change.
``apply`` swaps a mutant in by replacing the code object of the one live function it changes, so every
caller runs it and restoring is exact. ``coverage`` records which lines the unmutated simulator executes;
a mutant elsewhere is "not exercised". ``campaign`` runs each exercised mutant in a forked child on a fixed
sequence of seeds until the simulator reports a violation on a seed where the unmutated core reports none,
within a time budget, and for a survivor checks whether it changes anything observable at all (a survivor
whose trace and history equal the core's is probably equivalent). ``report`` prints the table and summary.
"""

from simulator.mutation.campaign import Campaign, Outcome, core_mutants, judge, run_campaign
from simulator.mutation.operators import OPERATORS, Mutant, mutants_of

__all__ = ["OPERATORS", "Campaign", "Mutant", "Outcome", "core_mutants", "judge", "mutants_of", "run_campaign"]
