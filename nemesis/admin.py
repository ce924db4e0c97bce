"""Admin faults through the Kafka admin API (kafka-python): reassignments, cancels, elections, and live
switches of the reassignment mode / KIP-435 parallelism.

Ops (the topic is ``value["topic"]`` or ``spec.topic``; the partition is drawn from
``value["pick"]`` unless given):
- ``reassign`` ``{"kind": move|grow|shrink|grow-without-flag|shrink-without-flag}``: AlterPartition-
  Reassignments. ``move`` keeps the replication factor (swaps a replica for a broker outside the set,
  or rotates the order when every broker already holds one, which moves the preferred leader);
  ``grow``/``shrink`` change it with KIP-860's AllowReplicationFactorChange=true; the
  ``-without-flag`` kinds send the same change with the flag false, which the controller must refuse
  with INVALID_REPLICATION_FACTOR (the KIP-860 guard). Whether the reassignment runs all at once or
  incrementally (KIP-435) is the controller's ``reassignment.mode``: the run's setting until a
  ``set-reassignment-mode`` op switches it live. A drawn RF change that no partition allows (a grow when
  every partition has every broker, a shrink of single replicas) is done in the other direction instead
  (``done``, ``substituted``): the same KIP-860 rule, with or without the flag.
- ``set-reassignment-mode`` ``{"kind": incremental|all-at-once|parallel}``: IncrementalAlterConfigs on the
  cluster-wide BROKER resource (name ``""``): ``incremental`` sets ``reassignment.mode=incremental`` and a
  seeded ``reassignment.parallel.replica.count``; ``all-at-once`` switches back; ``parallel`` draws the
  three KIP-435 parallelism settings; ``{"configs": {name: value}}`` sets exactly those (scripted
  scenarios). Seed 002: each change affects only steps planned after it.
  kafka-python's public ``alter_configs`` refuses a BROKER resource named ``""`` (it wants a broker id),
  so the request is built by its own ``_alter_configs_request`` and sent through its client's manager
  (to any broker, which forwards it to the controller). Evidence: DescribeConfigs of ``""`` before and
  after (value and Kafka config source); ``effective`` when the answer is OK and every value set reads
  back from the cluster-wide dynamic config (``DYNAMIC_DEFAULT_BROKER_CONFIG``).
  Scripted scenarios name the change instead: ``{"targets": {partition: [broker ids]}, "allow_rf_change":
  bool, "expect": {partition: error name or null}}`` sends exactly those targets in one request;
  ``effective`` then means every partition was answered as ``expect`` says (accepted and visible when
  ``expect`` is absent); ``"via": [node, ...]`` sends it through those brokers only (one that the
  script cut from the controller could not forward it).
- ``cancel-reassignment``: cancels an ongoing reassignment (ListPartitionReassignments first); with
  none in progress it first starts a move of the drawn partition (``started``) and cancels that; a move
  that completed before the cancel arrived is answered NO_REASSIGNMENT_IN_PROGRESS. With
  ``{"partition": p}`` it cancels that partition's (``"expect": error name`` for a refusal the script
  wants to see, C21).
- ``elect-preferred`` / ``elect-unclean``: ElectLeaders over every partition of the topic.
- ``reassign`` ``{"kind": "coordinator", "target": group-coordinator|txn-coordinator}``: moves a
  coordinator. The state-topic partition that makes it (``nemesis.targets.coordinator_of``) is reassigned
  to the same replicas with another one first (``plan_coordinator_move``; a broker from outside when it
  has a single replica), then a preferred election on that partition hands it the leadership. Evidence:
  ``coordinator`` (partition, node before), ``replicas_target``, the reassignment's and the election's
  answers (ELECTION_NOT_NEEDED when the controller already moved the leadership on the reorder), the
  leader before and after; ``effective`` when the leadership moved. Before a client has created the state topic
  there is nothing to move: ``skipped``, not effective.

Evidence: the controller's per-partition answer (Kafka error names, ``null`` when accepted), the
partition state read back (replicas, leader, ongoing reassignment). ``effective``: the controller
accepted the change and it is visible when read back (an ongoing reassignment listed, or the replicas
already equal to the target), or for the guard kinds the expected refusal; for elections, the
controller answered for every partition (ELECTION_NOT_NEEDED counts: the request was exercised).
"""

from __future__ import annotations

import random
import time
from typing import Any

from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType
from kafka.errors import for_code
from kafka.protocol.admin import AlterPartitionReassignmentsRequest

from nemesis.targets import broker_node, coordinator_of

RF_GUARD_ERROR = "InvalidReplicationFactorError"
DESCRIBE_TIMEOUT_S = 10.0
# Ops that may be sent twice with the effect of once (an election, setting configs to given values).
REPEATABLE = frozenset({"elect-preferred", "elect-unclean", "set-reassignment-mode"})
# The RF change in the other direction: the same KIP-860 rule, when the drawn direction is impossible.
MIRROR = {"grow": "shrink", "shrink": "grow", "grow-without-flag": "shrink-without-flag",
          "shrink-without-flag": "grow-without-flag"}
REASSIGNMENT_KEYS = ("reassignment.mode", "reassignment.parallel.replica.count",
                     "reassignment.parallel.partition.count", "reassignment.parallel.leader.movements")
CLUSTER_DEFAULT_SOURCE = "DYNAMIC_DEFAULT_BROKER_CONFIG"


def _err_name(err: Any) -> str | None:
    if err is None:
        return None
    return getattr(err, "__name__", None) or type(err).__name__


NO_CONTROLLER = "NotControllerError"


def _no_active_controller(exc: BaseException) -> bool:
    """kafka-python's way of saying every broker answered NOT_CONTROLLER (no active controller: a lost
    quorum or an election in progress) for a request it sends to the controller."""
    return isinstance(exc, RuntimeError) and "active controller" in str(exc)


def plan_reassignment(kind: str, replicas: list[int], brokers: list[int], rng: random.Random) -> tuple[list[int] | None, bool]:
    """Target replica list and the AllowReplicationFactorChange flag for ``kind`` (None: impossible)."""
    outside = [b for b in sorted(brokers) if b not in replicas]
    if kind == "move":
        if outside:
            target = list(replicas)
            target[rng.randrange(len(target))] = rng.choice(outside)
            return target, True
        if len(replicas) < 2:
            return None, True
        shift = rng.randrange(1, len(replicas))
        return replicas[shift:] + replicas[:shift], True
    if kind in ("grow", "grow-without-flag"):
        if not outside:
            return None, kind == "grow"
        return [*replicas, rng.choice(outside)], kind == "grow"
    if kind in ("shrink", "shrink-without-flag"):
        if len(replicas) < 2:
            return None, kind == "shrink"
        drop = rng.randrange(len(replicas))
        return [r for i, r in enumerate(replicas) if i != drop], kind == "shrink"
    raise ValueError(f"unknown reassignment kind {kind!r}")


def plan_coordinator_move(replicas: list[int], leader: int | None, isr: list[int], brokers: list[int],
                          rng: random.Random) -> list[int] | None:
    """A replica list for a state-topic partition whose preferred (first) replica is not ``leader``: the
    same replicas with one of the others first (one in ``isr`` when there is one, which a preferred election
    can make leader at once); with a single replica, a broker from outside instead. None when there is
    no other broker at all."""
    others = [r for r in replicas if r != leader]
    if others:
        in_sync = [r for r in others if r in isr]
        first = rng.choice(in_sync or others)
        return [first, *(r for r in replicas if r != first)]
    outside = [b for b in sorted(brokers) if b not in replicas]
    return [rng.choice(outside)] if outside else None


def plan_reassignment_config(kind: str, rng: random.Random) -> dict[str, str]:
    """The cluster-wide config values a ``set-reassignment-mode`` op of ``kind`` sets (seeded by ``rng``)."""
    if kind == "incremental":
        return {"reassignment.mode": "incremental", "reassignment.parallel.replica.count": str(rng.choice([1, 2]))}
    if kind == "all-at-once":
        return {"reassignment.mode": "all-at-once"}
    if kind == "parallel":
        return {"reassignment.parallel.replica.count": str(rng.choice([1, 2, 3])),
                "reassignment.parallel.partition.count": str(rng.choice([1, 2, 4])),
                "reassignment.parallel.leader.movements": str(rng.choice([1, 2]))}
    raise ValueError(f"unknown set-reassignment-mode kind {kind!r}")


def _send(admin: Any, request: Any) -> Any:
    async def send():
        return await admin._manager.send(request)
    return admin._manager.run(send)


def alter_cluster_configs(admin: Any, configs: dict[str, str | None], *, incremental: bool = True,
                          validate_only: bool = False) -> str:
    """Set (value) or delete (None) cluster-wide BROKER configs (resource ``""``) with kafka-python's
    IncrementalAlterConfigs (or legacy AlterConfigs, which replaces the whole set); returns kafka-python's
    per-resource outcome: ``"OK"`` or the error's text."""

    entries: dict[str, Any] = {k: ((AlterConfigOp.DELETE, None) if v is None else v) for k, v in configs.items()}
    resource = ConfigResource(ConfigResourceType.BROKER, "", configs=entries)
    request = KafkaAdminClient._alter_configs_request([resource], validate_only, incremental)
    response = _send(admin, request)
    return KafkaAdminClient._alter_configs_process_responses(response.responses)["broker"][""]


def describe_cluster_configs(admin: Any) -> dict[str, dict]:
    """The cluster-wide BROKER configs (resource ``""``): name -> {"value", "config_source"}."""

    request = KafkaAdminClient._describe_configs_request([ConfigResource(ConfigResourceType.BROKER, "")])
    described = KafkaAdminClient._describe_configs_process_responses([_send(admin, request)], "all")
    return {k: {"value": v.get("value"), "config_source": v.get("config_source")}
            for k, v in described.get("broker", {}).get("", {}).items()}


class AdminNemesis:
    """reassign / cancel-reassignment / elect-preferred / elect-unclean / set-reassignment-mode (see the
    module docstring)."""

    FS = {"reassign", "cancel-reassignment", "elect-preferred", "elect-unclean", "set-reassignment-mode"}

    def __init__(self, request_timeout_ms: int = 15_000):
        self.request_timeout_ms = request_timeout_ms
        self._admin = None
        self.started: list[dict] = []

    def fs(self) -> set[str]:
        """The op names handled here."""
        return set(self.FS)

    def setup(self, run: Any) -> None:
        """Nothing to prepare: the admin client connects on the first op."""

    def admin(self, run: Any):
        """A KafkaAdminClient on the cluster's brokers (created once, rebuilt after an error)."""
        if self._admin is None:
            self._admin = KafkaAdminClient(
                bootstrap_servers=run.cluster.bootstrap_servers(),
                client_id="kraftcheck-nemesis-admin",
                request_timeout_ms=self.request_timeout_ms,
            )
        return self._admin

    def _drop_admin(self) -> None:
        if self._admin is not None:
            try:
                self._admin.close()
            except Exception:
                pass
            self._admin = None

    def _topic(self, run: Any, value: dict) -> str:
        return value.get("topic") or run.spec.topic or "queue"

    def admin_via(self, run: Any, nodes: list[str]) -> Any:
        """A one-op admin client bootstrapped from ``nodes`` only (a script's way to keep its admin requests
        off brokers it has cut from the controller: a broker forwards them to the controller, and Metadata
        names a broker as the controller; close it after use)."""
        return KafkaAdminClient(bootstrap_servers=[run.cluster.address(n) for n in nodes],
                                client_id="kraftcheck-nemesis-admin-via", request_timeout_ms=self.request_timeout_ms)

    def describe(self, run: Any, topic: str, admin: Any = None) -> dict[int, dict]:
        """partition -> {"replicas", "isr", "leader"} from Metadata."""
        out = {}
        for t in (admin or self.admin(run)).describe_topics([topic]):
            for p in t.get("partitions", []):
                # kafka-python 3 names the Metadata fields as the schema does (replica_nodes, ...).
                out[int(p.get("partition_index", p.get("partition")))] = {
                    "replicas": list(p.get("replica_nodes", p.get("replicas", []))),
                    "isr": list(p.get("isr_nodes", p.get("isr", []))),
                    "leader": p.get("leader_id", p.get("leader")),
                }
        return out

    def described(self, run: Any, topic: str) -> dict[int, dict]:
        """``describe``, asked again (on a fresh client) for up to ``DESCRIBE_TIMEOUT_S`` while Metadata lists
        no partition of the topic: right after a fault the answer can come from a broker whose metadata is
        not there yet, and a fault drawn from an empty list would fail for the harness's sake."""
        deadline = time.monotonic() + DESCRIBE_TIMEOUT_S
        state = self.describe(run, topic)
        while not state and time.monotonic() < deadline:
            self._drop_admin()
            time.sleep(0.5)
            state = self.describe(run, topic)
        return state

    def ongoing(self, run: Any, topic: str, admin: Any = None) -> dict[int, dict]:
        """partition -> ongoing reassignment (ListPartitionReassignments)."""
        admin = admin or self.admin(run)
        try:
            listed = admin.list_partition_reassignments({topic: list(self.describe(run, topic, admin))})
        except RuntimeError as exc:
            if not _no_active_controller(exc):
                raise
            return {}  # no controller to ask: none listed (the answer of the alter says why)
        return {tp.partition: dict(v) for tp, v in listed.items() if tp.topic == topic}

    def alter(self, run: Any, topic: str, targets: dict[int, list[int] | None], allow_rf_change: bool,
              admin: Any = None) -> dict[int, str | None]:
        """Send AlterPartitionReassignments (v1 with the KIP-860 flag); partition -> error name."""

        admin = admin or self.admin(run)
        try:
            return self._alter(topic, targets, allow_rf_change, admin)
        except RuntimeError as exc:
            if not _no_active_controller(exc):
                raise
            return dict.fromkeys(targets, NO_CONTROLLER)

    def _alter(self, topic: str, targets: dict[int, list[int] | None], allow_rf_change: bool,
               admin: Any) -> dict[int, str | None]:
        tps = {TopicPartition(topic, p): r for p, r in targets.items()}
        if allow_rf_change:
            return {tp.partition: _err_name(e) for tp, e in admin.alter_partition_reassignments(
                tps, timeout_ms=self.request_timeout_ms).items()}
        # kafka-python has no argument for the flag; build the request it builds, with the flag false.
        request = AlterPartitionReassignmentsRequest(
            timeout_ms=self.request_timeout_ms,
            topics=admin._process_alter_partition_reassignments_input(tps),
            allow_replication_factor_change=False,
        )

        def top_level(r):
            yield for_code(r.error_code)

        response = admin._manager.run(admin._send_request_to_controller, request, top_level)
        out = {}
        for t in response.responses:
            for part in t.partitions:
                err = for_code(part.error_code)
                out[part.partition_index] = None if err.errno == 0 else err.__name__
        return out

    def invoke(self, run: Any, op: dict) -> dict:
        """Perform one admin op and return the controller's answer and the state read back."""
        value = dict(op.get("value") or {})
        perform = getattr(self, "_" + op["f"].replace("-", "_"))
        try:
            evidence = perform(run, value)
        except Exception as exc:
            self._drop_admin()  # a broken connection must not poison the next op
            if op["f"] not in REPEATABLE:
                raise
            # A client still bound to a broker an earlier fault restarted: once more on a fresh one.
            evidence = {**self._once_more(run, perform, value), "retried": f"{type(exc).__name__}: {exc}"}
        return {**op, "type": "ok", "value": {**value, **evidence}}

    def _once_more(self, run: Any, perform: Any, value: dict) -> dict:
        try:
            return perform(run, value)
        except Exception:
            self._drop_admin()
            raise

    def _pick_partition(self, value: dict, partitions: list[int]) -> int:
        if value.get("partition") is not None:
            return int(value["partition"])
        return random.Random(value.get("pick", 0)).choice(sorted(partitions))

    def _reassign(self, run: Any, value: dict) -> dict:
        if value.get("kind") == "coordinator":
            return self._move_coordinator(run, value)
        topic = self._topic(run, value)
        if value.get("targets") is not None:
            return self._reassign_to(run, topic, value)
        state = self.described(run, topic)
        partition = self._pick_partition(value, list(state))
        brokers = sorted(_broker_ids(run))
        drawn = kind = value.get("kind", "move")
        rng = random.Random(value.get("pick", 0) + 1)
        target, flag = plan_reassignment(kind, state[partition]["replicas"], brokers, rng)
        if target is None and value.get("partition") is None:
            partition, kind, target, flag = self._possible_instead(state, partition, kind, brokers, rng)
        if target is None:
            return {"partition": partition, "replicas_before": state[partition]["replicas"],
                    "skipped": f"{kind} impossible with brokers {brokers}", "effective": False}
        substituted = {} if kind == drawn else {"done": kind, "substituted": f"{drawn} impossible with brokers "
                                                f"{brokers} on every partition"}
        answer = self.alter(run, topic, {partition: target}, flag)
        error = answer.get(partition, "NO_ANSWER")
        time.sleep(0.2)
        ongoing = self.ongoing(run, topic).get(partition)
        after = self.describe(run, topic).get(partition, {})
        guard = kind.endswith("without-flag")
        if guard:
            effective = error == RF_GUARD_ERROR
        else:
            effective = error is None and (ongoing is not None or after.get("replicas") == target)
        return {"partition": partition, **substituted, "target": target, "allow_rf_change": flag, "error": error,
                "replicas_before": state[partition]["replicas"], "ongoing": ongoing,
                "replicas_after": after.get("replicas"), "effective": effective}

    @staticmethod
    def _possible_instead(state: dict[int, dict], partition: int, kind: str, brokers: list[int],
                          rng: random.Random) -> tuple[int, str, list[int] | None, bool]:
        """A drawn reassignment impossible on the drawn partition (an RF change on a partition that already
        has every broker, or a single replica): the same kind on another partition, else its mirror (a
        shrink for a grow, and back), which exercises the same rule (an RF change with the KIP-860 flag, or
        the guard without it). A fault turn spent on nothing would prove nothing."""
        order = [partition, *sorted(p for p in state if p != partition)]
        for candidate in (kind, MIRROR.get(kind)):
            for p in order if candidate else ():
                target, flag = plan_reassignment(candidate, state[p]["replicas"], brokers, rng)
                if target is not None:
                    return p, candidate, target, flag
        return partition, kind, None, True

    def _reassign_to(self, run: Any, topic: str, value: dict) -> dict:
        """Explicit ``targets`` ``{partition: [broker ids]}`` in one request (scripted scenarios); ``via``
        names the brokers to send it through."""
        targets = {int(p): [int(b) for b in t] for p, t in value["targets"].items()}
        flag = bool(value.get("allow_rf_change", True))
        admin = self.admin_via(run, value["via"]) if value.get("via") else self.admin(run)
        try:
            before = self.describe(run, topic, admin)
            answer = self.alter(run, topic, targets, flag, admin)
            errors = {p: answer.get(p, "NO_ANSWER") for p in targets}
            ongoing = self.ongoing(run, topic, admin)
            after = self.describe(run, topic, admin)
        finally:
            if value.get("via"):
                admin.close()
        if value.get("expect") is not None:
            expected = {int(p): e for p, e in value["expect"].items()}
            effective = all(errors[p] == expected.get(p) for p in targets)
        else:
            effective = all(errors[p] is None and (p in ongoing or after.get(p, {}).get("replicas") == targets[p])
                            for p in targets)
        return {"targets": targets, "allow_rf_change": flag, "errors": errors,
                "replicas_before": {p: before.get(p, {}).get("replicas") for p in targets},
                "ongoing": {p: ongoing.get(p) for p in targets},
                "replicas_after": {p: after.get(p, {}).get("replicas") for p in targets}, "effective": effective}

    def _cancel_reassignment(self, run: Any, value: dict) -> dict:
        topic = self._topic(run, value)
        if value.get("partition") is not None:
            return self._cancel_partition(run, topic, int(value["partition"]), value)
        ongoing = self.ongoing(run, topic)
        started = None
        if not ongoing:
            # Nothing in flight to cancel: start a move of the drawn partition and cancel that, so the turn
            # exercises the cancel path (a move that completes first leaves nothing to cancel: not effective).
            state = self.described(run, topic)
            moved = self._pick_partition(value, list(state))
            target, _ = plan_reassignment("move", state[moved]["replicas"], sorted(_broker_ids(run)),
                                          random.Random(value.get("pick", 0) + 1))
            if target is not None:
                started = {"partition": moved, "target": target,
                           "error": self.alter(run, topic, {moved: target}, True).get(moved, "NO_ANSWER")}
                ongoing = self.ongoing(run, topic)
        if ongoing:
            partition = sorted(ongoing)[random.Random(value.get("pick", 0)).randrange(len(ongoing))]
        else:
            partition = self._pick_partition(value, list(self.described(run, topic)))
        answer = self.alter(run, topic, {partition: None}, True)
        error = answer.get(partition, "NO_ANSWER")
        still = self.ongoing(run, topic).get(partition)
        return {"partition": partition, **({"started": started} if started else {}),
                "was_ongoing": ongoing.get(partition), "error": error, "ongoing_after": still,
                "effective": bool(ongoing) and error is None and still is None}

    def _cancel_partition(self, run: Any, topic: str, partition: int, value: dict) -> dict:
        """Cancel the reassignment of one named partition; ``expect`` names the error the script expects
        (e.g. the C21 refusal), which then makes the op effective."""
        admin = self.admin_via(run, value["via"]) if value.get("via") else self.admin(run)
        try:
            before = self.ongoing(run, topic, admin).get(partition)
            error = self.alter(run, topic, {partition: None}, True, admin).get(partition, "NO_ANSWER")
            still = self.ongoing(run, topic, admin).get(partition)
            after = self.describe(run, topic, admin).get(partition, {})
        finally:
            if value.get("via"):
                admin.close()
        if "expect" in value:
            effective = error == value["expect"]
        else:
            effective = before is not None and error is None and still is None
        return {"partition": partition, "was_ongoing": before, "error": error, "ongoing_after": still,
                "replicas_after": after.get("replicas"), "effective": effective}

    def _move_coordinator(self, run: Any, value: dict) -> dict:
        """See the module docstring (``reassign`` of kind ``coordinator``)."""
        found = coordinator_of(run, value.get("target", "group-coordinator"), value)
        if "partition" not in found:
            return {"coordinator": found, "skipped": found.get("fallback"), "effective": False}
        topic, partition = found["topic"], int(found["partition"])
        state = self.described(run, topic).get(partition)
        if state is None:
            return {"coordinator": found, "skipped": f"{topic} lists no partition {partition}", "effective": False}
        before = state["leader"]
        target = plan_coordinator_move(state["replicas"], before, state["isr"], sorted(_broker_ids(run)),
                                       random.Random(value.get("pick", 0) + 1))
        if target is None:
            return {"coordinator": found, "replicas_before": state["replicas"],
                    "skipped": "no other broker to move the coordinator to", "effective": False}
        error = self.alter(run, topic, {partition: target}, True).get(partition, "NO_ANSWER")
        # The election can only pick the new first replica once the controller has the new replica list
        # (a reorder completes at once; a move to an outside broker waits for it to catch up).
        deadline = time.monotonic() + DESCRIBE_TIMEOUT_S
        while error is None and time.monotonic() < deadline:
            if self.describe(run, topic).get(partition, {}).get("replicas") == target:
                break
            time.sleep(0.2)
        response = self.admin(run).elect_leaders(0, {topic: [partition]}, timeout_ms=self.request_timeout_ms,
                                                 raise_errors=False)
        election = {}
        for result in response.replica_election_results:
            for part in result.partition_result:
                err = for_code(part.error_code)
                election[part.partition_id] = None if err.errno == 0 else err.__name__
        after = before
        deadline = time.monotonic() + DESCRIBE_TIMEOUT_S
        while time.monotonic() < deadline:
            after = self.describe(run, topic).get(partition, {}).get("leader")
            if after is not None and after >= 0 and after != before:
                break
            time.sleep(0.2)
        node_after = broker_node(run.cluster, int(after)) if after is not None and after >= 0 else None
        # "replicas_target", not "target": the op's "target" names the coordinator it aims at.
        return {"coordinator": found, "partition": partition, "replicas_before": state["replicas"],
                "replicas_target": target, "error": error, "election_error": election.get(partition, "NO_ANSWER"),
                "leader_before": before, "leader_after": after, "node_after": node_after,
                "effective": error is None and after is not None and after >= 0 and after != before}

    def _elect(self, run: Any, value: dict, election_type: int) -> dict:
        topic = self._topic(run, value)
        before = {p: s["leader"] for p, s in self.described(run, topic).items()}
        response = self.admin(run).elect_leaders(election_type, {topic: sorted(before)},
                                                 timeout_ms=self.request_timeout_ms, raise_errors=False)

        errors = {}
        for result in response.replica_election_results:
            for part in result.partition_result:
                err = for_code(part.error_code)
                errors[part.partition_id] = None if err.errno == 0 else err.__name__
        after = {p: s["leader"] for p, s in self.describe(run, topic).items()}
        answered = bool(before) and set(errors) == set(before)
        return {"leaders_before": before, "leaders_after": after, "errors": errors, "effective": answered}

    def _elect_preferred(self, run: Any, value: dict) -> dict:
        return self._elect(run, value, 0)

    def _elect_unclean(self, run: Any, value: dict) -> dict:
        return self._elect(run, value, 1)

    def _set_reassignment_mode(self, run: Any, value: dict) -> dict:
        kind = value.get("kind", "incremental")
        if value.get("configs"):  # a script names the exact values
            wanted = {str(k): str(v) for k, v in value["configs"].items()}
        else:
            wanted = plan_reassignment_config(kind, random.Random(value.get("pick", 0)))
        admin = self.admin(run)
        before = {k: v for k, v in describe_cluster_configs(admin).items() if k in REASSIGNMENT_KEYS}
        answer = alter_cluster_configs(admin, wanted)
        # DescribeConfigs is answered by a broker from its metadata image: give it a moment to apply.
        deadline = time.monotonic() + 10
        while True:
            after = {k: v for k, v in describe_cluster_configs(admin).items() if k in REASSIGNMENT_KEYS}
            applied = all(after.get(k, {}).get("value") == v and after[k]["config_source"] == CLUSTER_DEFAULT_SOURCE
                          for k, v in wanted.items())
            if applied or answer != "OK" or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        return {"configs": wanted, "answer": answer, "configs_before": before, "configs_after": after,
                "effective": answer == "OK" and applied}

    def heal_all(self, run: Any) -> dict:
        """Nothing to undo: reassignments are protocol operations the cluster must complete itself, and a
        switched reassignment mode or parallelism still completes every reassignment (only the steps differ)."""
        return {"effective": True}

    def teardown(self, run: Any) -> None:
        """Close the admin client; never raises."""
        self._drop_admin()


def _broker_ids(run: Any) -> list[int]:
    cluster = run.cluster
    ids = []
    for name in cluster.brokers():
        node_id = getattr(cluster, "node_id", None)
        ids.append(int(node_id(name)) if callable(node_id) else int(name.lstrip("b")))
    return ids
