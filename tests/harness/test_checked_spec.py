"""The checkers' view of a spec: the one table of keys they read, and what a missing key means."""

import pytest

from harness.checked_spec import CheckedSpec
from harness.spec import RunSpec, SpecError, build_spec


def test_a_stored_spec_and_the_typed_spec_give_the_same_view():
    stored = build_spec({"seed": 4, "nemesis": "kill,partition", "acks": 1, "min_isr": 1, "variant": "v3.5"})
    typed = RunSpec.from_options(stored)
    assert CheckedSpec.of(stored) == CheckedSpec.of(typed)
    view = CheckedSpec.of(stored)
    assert view.acks == "1" and not view.acks_all and view.min_isr == 1 and view.variant == "v3.5"
    assert view.nemesis == ("kill", "partition") and view.controllers == 1


def test_missing_keys_mean_not_stated_not_the_run_default():
    view = CheckedSpec.of({})
    assert view.min_isr is None and view.controllers is None and view.idempotence is None
    assert view.acks_all and view.variant == "kip966" and view.linearizability is True
    assert CheckedSpec.of(None) == view
    # the checkers' view of a partial spec written by hand
    assert CheckedSpec.of({"acks": "-1", "test_name": "LRS"}).run_name == "lrs"


def test_a_key_of_the_wrong_type_is_an_error_naming_it():
    with pytest.raises(SpecError, match="min_isr"):
        CheckedSpec.of({"min_isr": "two"})
    with pytest.raises(SpecError, match="sut_facts"):
        CheckedSpec.of({"sut_facts": ["not", "an", "object"]})
    with pytest.raises(SpecError):
        CheckedSpec.of(["acks"])


def test_environment_facts_and_unknown_keys():
    view = CheckedSpec.of({"sut_facts": {"profile": "declared", "name": "x"}, "git_commit": "abc",
                           "something_old": 1})
    assert view.sut_facts["name"] == "x"
    assert CheckedSpec.of(view) is view
