"""Applying a mutant to the running interpreter: swap the code object of the one function it changes.

The function around the change is compiled from its edited AST (alone, inside empty classes of the same
names, under the module's real file name, so qualified name, line numbers and closure cells match); its
code object is then set as the ``__code__`` of the live function object. Every caller
(other modules that imported the class or function by name, objects built earlier, the simulator's nodes)
holds that same function object, so all of them run the mutant, and restoring the old code object undoes
it exactly. Methods are found through their class's ``__dict__`` (properties through ``fget``,
class and static methods through ``__func__``).
"""

from __future__ import annotations

import contextlib
import importlib
import types
from collections.abc import Iterator

from simulator.mutation.operators import Mutant, mutated_function


class NotApplicable(Exception):
    """The mutant cannot be swapped in (its function is not a plain function object, or the mutated code
    needs other closure cells than the original)."""


@contextlib.contextmanager
def applied(mutant: Mutant, source: str) -> Iterator[None]:
    """Run the body with ``mutant`` in place of its function's code; the original is restored on exit."""
    module = importlib.import_module(mutant.module)
    function = live_function(module, mutant.function)
    filename = function.__code__.co_filename
    code = find_code(compile(mutated_function(source, mutant), filename, "exec"), mutant.function)
    if code is None:
        raise NotApplicable(f"{mutant.key}: no code object named {mutant.function} in the mutated module")
    if code.co_freevars != function.__code__.co_freevars:
        raise NotApplicable(f"{mutant.key}: the mutated code needs other closure cells")
    original = function.__code__
    function.__code__ = code
    try:
        yield
    finally:
        function.__code__ = original


def live_function(module: types.ModuleType, qualname: str) -> types.FunctionType:
    """The function object named ``qualname`` (``Class.method`` or ``function``) in ``module``."""
    owner: object = module
    parts = qualname.split(".")
    for part in parts[:-1]:
        owner = vars(owner)[part]
    attribute = vars(owner).get(parts[-1])
    if isinstance(attribute, property):
        attribute = attribute.fget
    elif isinstance(attribute, (classmethod, staticmethod)):
        attribute = attribute.__func__
    if not isinstance(attribute, types.FunctionType):
        raise NotApplicable(f"{module.__name__}.{qualname} is not a plain function ({type(attribute).__name__})")
    return attribute


def find_code(code: types.CodeType, qualname: str) -> types.CodeType | None:
    """The code object with ``co_qualname == qualname`` inside a module's code (classes' bodies included)."""
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            if const.co_qualname == qualname:
                return const
            found = find_code(const, qualname)
            if found is not None:
                return found
    return None
