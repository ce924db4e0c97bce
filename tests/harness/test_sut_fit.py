"""A system whose setting serves fewer brokers than the run's defaults gets the counts the user did not
give fitted to it; what the user gave is kept (and refused later if it does not fit)."""

from harness.clusters import fit_to_setting


def test_a_one_broker_setting_fits_the_counts_not_given():
    options, note = fit_to_setting({"sut": "tansu", "sut_setting": "sqlite"})
    assert (options["brokers"], options["replication_factor"], options["min_isr"]) == (1, 1, 1)
    assert "serves at most 1 broker" in note and "--brokers 1" in note


def test_what_the_user_gave_is_kept():
    options, note = fit_to_setting({"sut": "tansu", "brokers": 3})
    assert options == {"sut": "tansu", "brokers": 3} and note is None
    options, note = fit_to_setting({"sut": "tansu", "replication_factor": 1, "min_isr": None})
    assert (options["brokers"], options["replication_factor"], options["min_isr"]) == (1, 1, 1)


def test_settings_without_a_limit_and_the_reference_are_untouched():
    assert fit_to_setting({"sut": "tansu", "sut_setting": "postgres"}) == (
        {"sut": "tansu", "sut_setting": "postgres"}, None)
    assert fit_to_setting({}) == ({}, None)
