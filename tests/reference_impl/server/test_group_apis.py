"""The group APIs on the wire: every served version of JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
OffsetCommit, OffsetFetch, DescribeGroups, ListGroups and FindCoordinator round-trips through the codec
and the handlers to a real coordinator core whose offsets "log" commits every append at once (the
replicated path is exercised by the process and jepsen tests)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from reference_impl.protocol.groups import GroupConfig, GroupCoordinator
from reference_impl.protocol.groups import messages as m
from reference_impl.server.apis.groups import GROUP_API_KEYS
from reference_impl.server.client_apis import ClientApiHandlers
from reference_impl.server.wire import codec
from reference_impl.server.wire.codec import ALL_APIS, CLIENT_APIS
from tests.reference_impl.server.test_wire_codec import roundtrip
from tests.reference_impl.server.test_wire_memory_services import MemoryServices


class MemoryGroups:
    """The shell's surface over a coordinator that leads every offsets partition and whose writes commit
    at once."""

    def __init__(self) -> None:
        self.core = GroupCoordinator(GroupConfig(initial_rebalance_delay_ms=0), random.Random(3))
        for p in range(self.core.config.offsets_partitions):
            self.core.load(p, 0, [], 0)
        self.replies: dict[int, Any] = {}
        self.token = 0

    def _pump(self) -> None:
        while out := self.core.drain():
            for o in out:
                if isinstance(o, m.Reply):
                    self.replies[o.token] = o.result
                else:
                    self.core.append_done(o.append_id, 0, 0)

    async def call(self, method: str, request: Any) -> Any:
        self.token += 1
        getattr(self.core, method)(self.token, request, 0)
        self._pump()
        return self.replies.pop(self.token)

    def direct(self, method: str, *args: Any) -> Any:
        result = getattr(self.core, method)(*args, 0) if method in ("heartbeat", "leave_group") \
            else getattr(self.core, method)(*args)
        self._pump()
        return result

    def endpoint(self, broker_id: int):
        return ("127.0.0.1", 9092) if broker_id == 1 else None

    def ensure_offsets_topic(self) -> None:
        pass

    def leader_of(self, group_id: str) -> int:
        return 1


@pytest.fixture
def handlers():
    services = MemoryServices()
    services.create("t")
    services.port = 9092
    services.groups = MemoryGroups()
    return ClientApiHandlers(broker=services)


GROUP_CASES = [(s.api_key, v) for s in CLIENT_APIS if s.api_key in GROUP_API_KEYS | {10}
               for v in range(s.min_version, s.max_version + 1)]


@pytest.mark.parametrize(("api_key", "version"), GROUP_CASES)
def test_every_group_api_version_roundtrips(handlers, api_key, version):
    _, parsed = roundtrip(handlers, api_key, version)
    if api_key == 10:
        found = parsed.coordinators[0] if version >= 4 else parsed
        assert (found.error_code, found.node_id, found.port) == (0, 1, 9092)
    elif api_key == 11:
        # v4+: a new member is first given its id (KIP-394); before, it joins at once as the leader
        if version >= 4:
            assert parsed.error_code == 79 and parsed.member_id
        else:
            assert (parsed.error_code, parsed.generation_id, parsed.leader) == (0, 1, parsed.member_id)
    elif api_key in (12, 14):
        assert parsed.error_code == 25  # UNKNOWN_MEMBER_ID: "m" never joined
    elif api_key == 13:
        code = parsed.members[0].error_code if version >= 3 else parsed.error_code
        assert code == 25
    elif api_key == 8:
        # a commit from outside group management into an empty group is accepted
        assert parsed.topics[0].partitions[0].error_code == 0
    elif api_key == 9:
        p = parsed.topics[0].partitions[0]
        assert (p.partition_index, p.committed_offset) == (0, -1)
    elif api_key == 15:
        assert (parsed.groups[0].group_id, parsed.groups[0].group_state) == ("g", "Dead")
    elif api_key == 16:
        assert parsed.error_code == 0 and parsed.groups == []


def test_commit_then_fetch_through_the_wire(handlers):
    roundtrip(handlers, 8, 8)
    _, parsed = roundtrip(handlers, 9, 7)
    p = parsed.topics[0].partitions[0]
    assert (p.committed_offset, p.metadata, p.error_code) == (2, "m", 0)
    _, listed = roundtrip(handlers, 16, 4)
    assert [(g.group_id, g.group_state) for g in listed.groups] == [("g", "Empty")]


def test_group_apis_are_advertised_only_with_a_coordinator(handlers):
    assert GROUP_API_KEYS <= set(handlers.served)
    bare = MemoryServices()
    assert not GROUP_API_KEYS & set(ClientApiHandlers(broker=bare).served)
    assert all(k in ALL_APIS for k in GROUP_API_KEYS)


def test_find_coordinator_of_another_key_type_goes_to_the_brokers_own_handler(handlers):
    request = ALL_APIS[10].request_class(key="txn", key_type=1, coordinator_keys=["txn"])
    request.with_header(correlation_id=7, client_id="t")
    decoded = codec.decode_request(bytes(request.encode(version=4, header=True)), handlers.served)
    response = asyncio.run(handlers.handlers()[10](decoded))
    # the broker's own answer (here: nothing coordinates transactions), not the group coordinator's leader
    assert [(c.key, c.error_code, c.node_id) for c in response.coordinators] == [("txn", 15, -1)]
