"""Model conformance CLI: run the controller's partition-change logic on JSON cases (docs/conformance.md).

``python -m reference_impl.conformance CASES.json`` (also ``kraftcheck conformance CASES.json``) reads a list
of single-partition cases, runs each on a fresh ``Controller`` and prints the same list with a ``result``
added to every case: ``{"error": null | Kafka error name, "changed": bool, "after": {partition state}}``.

Each case is independent: its ``config.brokers`` are replayed as registrations (absent brokers stay
unregistered), its ``before`` as the partition record of topic ``t`` partition 0, then its ``input`` goes
through the very handler a server would call (``alter_partition_reassignments``, ``alter_partition``,
``fence_broker`` / ``unfence_broker``, a shutdown heartbeat, ``elect_leaders``, a re-registration, ...),
and the resulting records are replayed. A malformed case or an unknown kind gets a per-case error
(``MALFORMED_CASE`` / ``UNKNOWN_KIND`` with a ``message``, ``after`` null); the run never crashes on input
(an exception inside the model itself is reported as that case's ``INTERNAL_ERROR``, never hidden).
Exit status: 0 when the file was processed (whatever the cases' results), 2 when it is not a readable JSON
list of cases.

Optional extensions of ``config``: ``"completion_rule": "min_isr" | "non_empty"`` (C17, docs/protocol-rules.md
5.8(i)).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from reference_impl.protocol.controller import Controller, ControllerConfig
from reference_impl.protocol.errors import OK, Errors, KafkaError, error
from reference_impl.protocol.partition_change import CompletionRule, Election
from reference_impl.protocol.records import (
    RECOVERED,
    RECOVERING,
    PartitionRecord,
    PartitionState,
    RegisterBrokerRecord,
    TopicRecord,
)

# The codes of harness/verdict.py's EXIT_CODES this command uses, repeated: the reference implementation may
# not import the harness (pyproject.toml's import contracts).
EXIT_OK, EXIT_USAGE = 0, 2

KINDS = ("reassign", "cancel", "alter_partition", "fence", "unfence", "controlled_shutdown", "elect", "elr")
TOPIC, TOPIC_ID, PARTITION = "t", "conformance-topic-t", 0


class MalformedCase(ValueError):
    """The case does not follow the schema of docs/conformance.md (reported per case, never raised out)."""


# -- schema checks ------------------------------------------------------------------------------------------
def _int(obj: dict, key: str, where: str, default: Any = ..., minimum: int | None = None) -> int:
    if key not in obj:
        if default is ...:
            raise MalformedCase(f"{where}: missing {key!r}")
        return default
    value = obj[key]
    if not isinstance(value, int) or isinstance(value, bool):
        raise MalformedCase(f"{where}.{key}: expected an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise MalformedCase(f"{where}.{key}: must be >= {minimum}, got {value}")
    return value


def _bool(obj: dict, key: str, where: str, default: Any = ...) -> bool:
    if key not in obj:
        if default is ...:
            raise MalformedCase(f"{where}: missing {key!r}")
        return default
    if not isinstance(obj[key], bool):
        raise MalformedCase(f"{where}.{key}: expected true/false, got {obj[key]!r}")
    return obj[key]


def _ints(obj: dict, key: str, where: str, default: Any = ...) -> list[int]:
    if key not in obj:
        if default is ...:
            raise MalformedCase(f"{where}: missing {key!r}")
        return list(default)
    value = obj[key]
    if not isinstance(value, list) or any(not isinstance(v, int) or isinstance(v, bool) for v in value):
        raise MalformedCase(f"{where}.{key}: expected a list of integers, got {value!r}")
    return list(value)


def _obj(obj: dict, key: str, where: str) -> dict:
    if not isinstance(obj.get(key), dict):
        raise MalformedCase(f"{where}: {key!r} must be an object")
    return obj[key]


def _partition(before: dict) -> PartitionState:
    state = PartitionState(
        replicas=_ints(before, "replicas", "before"),
        isr=_ints(before, "isr", "before"),
        leader=_int(before, "leader", "before", minimum=-1),
        leader_epoch=_int(before, "leader_epoch", "before", minimum=0),
        partition_epoch=_int(before, "partition_epoch", "before", minimum=0),
        adding=_ints(before, "adding", "before", ()),
        removing=_ints(before, "removing", "before", ()),
        elr=_ints(before, "elr", "before", ()),
        last_known_elr=_ints(before, "last_known_elr", "before", ()),
        leader_recovery_state=before.get("leader_recovery_state", RECOVERED),
    )
    if state.leader_recovery_state not in (RECOVERED, RECOVERING):
        raise MalformedCase(f"before.leader_recovery_state: {state.leader_recovery_state!r}")
    if not state.replicas:
        raise MalformedCase("before.replicas: must not be empty")
    return state


def _controller(config: dict, before: PartitionState) -> Controller:
    rule = config.get("completion_rule", CompletionRule.MIN_ISR.value)
    try:
        completion_rule = CompletionRule(rule)
    except ValueError:
        raise MalformedCase(f"config.completion_rule: {rule!r}") from None
    ctl = Controller(ControllerConfig(
        min_isr=_int(config, "min_isr", "config", minimum=1),
        elr_enabled=_bool(config, "elr_enabled", "config", False),
        unclean_election=_bool(config, "unclean_election", "config", False),
        completion_rule=completion_rule,
        # Cases describe arbitrary targets; C16's RF >= MinISR guard still applies (it is a rule).
    ))
    brokers = config.get("brokers", {})
    if not isinstance(brokers, dict):
        raise MalformedCase("config.brokers: must be an object keyed by broker id")
    for key in sorted(brokers, key=lambda k: (len(str(k)), str(k))):
        try:
            broker_id = int(key)
        except ValueError:
            raise MalformedCase(f"config.brokers: key {key!r} is not a broker id") from None
        entry = brokers[key]
        if not isinstance(entry, dict):
            raise MalformedCase(f"config.brokers.{key}: must be an object")
        where = f"config.brokers.{key}"
        ctl.replay(RegisterBrokerRecord(
            broker_id, f"conformance-{broker_id}", _int(entry, "epoch", where, minimum=0),
            fenced=_bool(entry, "fenced", where, False),
            in_controlled_shutdown=_bool(entry, "in_controlled_shutdown", where, False)))
    ctl.replay(TopicRecord(TOPIC, TOPIC_ID))
    ctl.replay(PartitionRecord(
        TOPIC_ID, PARTITION, tuple(before.replicas), tuple(before.isr), before.leader, before.leader_epoch,
        before.partition_epoch, tuple(before.adding), tuple(before.removing), tuple(before.elr),
        tuple(before.last_known_elr), before.leader_recovery_state))
    return ctl


# -- one case -----------------------------------------------------------------------------------------------
def _run_kind(ctl: Controller, kind: str, inp: dict) -> KafkaError:
    tp = (TOPIC, PARTITION)
    if kind == "reassign":
        target = _ints(inp, "target_replicas", "input")
        result = ctl.alter_partition_reassignments({tp: target},
                                                   allow_rf_change=_bool(inp, "allow_rf_change", "input", True))
        ctl.apply(result)
        return result.response[tp]
    if kind == "cancel":
        if inp.get("target_replicas", None) is not None:
            raise MalformedCase("input.target_replicas: a cancel has target_replicas null")
        result = ctl.alter_partition_reassignments({tp: None})
        ctl.apply(result)
        return result.response[tp]
    if kind == "alter_partition":
        members = inp.get("new_isr")
        if not isinstance(members, list) or any(not isinstance(m, dict) for m in members):
            raise MalformedCase("input.new_isr: expected a list of {broker_id, broker_epoch}")
        new_isr = [(_int(m, "broker_id", "input.new_isr[]"), _int(m, "broker_epoch", "input.new_isr[]", -1))
                   for m in members]
        recovery = inp.get("leader_recovery_state", RECOVERED)
        if recovery not in (RECOVERED, RECOVERING):
            raise MalformedCase(f"input.leader_recovery_state: {recovery!r}")
        result = ctl.alter_partition(
            _int(inp, "broker_id", "input"), _int(inp, "broker_epoch", "input"), TOPIC, PARTITION,
            leader_epoch=_int(inp, "leader_epoch", "input"), partition_epoch=_int(inp, "partition_epoch", "input"),
            new_isr=new_isr, leader_recovery_state=recovery)
        ctl.apply(result)
        return result.response.error
    if kind in ("fence", "unfence"):
        handler = ctl.fence_broker if kind == "fence" else ctl.unfence_broker
        for broker_id in _ints(inp, "broker_ids", "input"):
            result = handler(broker_id)
            ctl.apply(result)
            if not result.response.ok:
                return result.response
        return OK
    if kind == "controlled_shutdown":
        broker_id = _int(inp, "broker_id", "input")
        reg = ctl.brokers.get(broker_id)
        if reg is None:
            return error(Errors.BROKER_ID_NOT_REGISTERED)
        # C8: the broker asks to shut down; others are taken as caught up (a single step of the model).
        result = ctl.heartbeat(broker_id, reg.epoch, want_fence=False, want_shutdown=True,
                               metadata_offset=ctl.next_offset, now_ms=0)
        ctl.apply(result)
        return result.response.error
    if kind == "elect":
        kind_name = inp.get("election_type")
        if kind_name not in ("PREFERRED", "UNCLEAN"):
            raise MalformedCase(f"input.election_type: {kind_name!r} (PREFERRED or UNCLEAN)")
        result = ctl.elect_leaders(Election(kind_name), [tp])
        ctl.apply(result)
        return result.response[tp]
    if kind == "elr":
        event = inp.get("event")
        if event == "clear_elr":
            result = ctl.clear_elr([tp])
            ctl.apply(result)
            return result.response
        if event != "broker_shutdown":
            raise MalformedCase(f"input.event: {event!r} (broker_shutdown or clear_elr)")
        broker_id = _int(inp, "broker_id", "input")
        clean = _bool(inp, "clean", "input")
        reg = ctl.brokers.get(broker_id)
        if reg is None:
            return error(Errors.BROKER_ID_NOT_REGISTERED)
        # The shutdown fences the old session (a clean shutdown ends fenced, C9; an unclean one times out,
        # C6); the restarted broker then registers with its marker epoch (clean) or without (K4).
        ctl.apply(ctl.fence_broker(broker_id))
        result = ctl.register_broker(broker_id, f"conformance-{broker_id}-restarted",
                                     previous_broker_epoch=reg.epoch if clean else -1)
        ctl.apply(result)
        return result.response.error
    raise AssertionError(kind)  # unreachable: kinds are checked before


def run_case(case: Any) -> dict:
    """Run one case; returns the case (a copy) with ``result`` added. Never raises on bad input."""
    out = dict(case) if isinstance(case, dict) else {"case": case}
    try:
        if not isinstance(case, dict):
            raise MalformedCase("a case must be a JSON object")
        if not isinstance(case.get("id"), str):
            raise MalformedCase("'id' must be a string")
        kind = case.get("kind")
        if kind not in KINDS:
            out["result"] = {"error": "UNKNOWN_KIND", "message": f"unknown kind {kind!r}; known: {list(KINDS)}",
                             "changed": False, "after": None}
            return out
        before = _partition(_obj(case, "before", "case"))
        ctl = _controller(_obj(case, "config", "case"), before)
        inp = case.get("input", {})
        if not isinstance(inp, dict):
            raise MalformedCase("'input' must be an object")
        err = _run_kind(ctl, kind, inp)
        after = ctl.partition(TOPIC, PARTITION)
        out["result"] = {"error": err.name, "changed": after.as_dict() != before.as_dict(),
                         "after": after.as_dict()}
    except MalformedCase as exc:
        out["result"] = {"error": "MALFORMED_CASE", "message": str(exc), "changed": False, "after": None}
    except Exception as exc:  # noqa: BLE001 - a model bug must show up in this case's result, not kill the run
        out["result"] = {"error": "INTERNAL_ERROR", "message": f"{type(exc).__name__}: {exc}",
                         "changed": False, "after": None}
    return out


def run_cases(cases: list) -> list[dict]:
    """Run every case in order (each on its own fresh controller)."""
    return [run_case(case) for case in cases]


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: ``CASES.json`` in, results JSON on stdout; ``EXIT_USAGE`` when the file is unusable."""
    parser = argparse.ArgumentParser(prog="kraftcheck conformance",
                                     description="Run model conformance cases (docs/conformance.md).")
    parser.add_argument("cases", help="JSON file holding a list of cases")
    args = parser.parse_args(argv)
    try:
        with open(args.cases, encoding="utf-8") as fh:
            cases = json.load(fh)
    except OSError as exc:
        print(f"conformance: cannot read {args.cases}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        print(f"conformance: {args.cases} is not valid JSON: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not isinstance(cases, list):
        print(f"conformance: {args.cases} must hold a JSON list of cases, got {type(cases).__name__}",
              file=sys.stderr)
        return EXIT_USAGE
    json.dump(run_cases(cases), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
