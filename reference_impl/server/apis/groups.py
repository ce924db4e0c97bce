"""The group APIs of a broker: FindCoordinator (groups), JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
OffsetCommit, OffsetFetch, DescribeGroups, ListGroups and TxnOffsetCommit, over the broker's
``group_shell.GroupShell``.

Each handler maps the kafka-python request to the core's message (``protocol.groups.messages``) and the
answer back at the request's version; no decision is made here. ``ERROR_BUILDERS`` are the whole-request
error responses of these APIs (every group, member or partition carries the code), which
``error_responses`` uses for unserved versions and handler failures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka.protocol.api_message import ApiMessage

from reference_impl.protocol.errors import Errors
from reference_impl.protocol.groups import messages as m
from reference_impl.server.apis.common import group_by_topic, response_class
from reference_impl.server.wire.api_keys import ApiKey
from reference_impl.server.wire.codec import DecodedRequest
from reference_impl.server.wire.server import Handler

if TYPE_CHECKING:
    from reference_impl.server.group_shell import GroupShell

GROUP_API_KEYS = frozenset({
    ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.JOIN_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP,
    ApiKey.SYNC_GROUP, ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS, ApiKey.TXN_OFFSET_COMMIT,
})
KEY_TYPE_GROUP = 0


class GroupApis:
    """The group handlers of one broker (module docstring)."""

    def __init__(self, shell: GroupShell, other_coordinators: Handler | None = None) -> None:
        self.shell = shell
        # FindCoordinator of another key type (transactions) goes to the handler that serves it.
        self.other_coordinators = other_coordinators

    def handlers(self) -> dict[int, Handler]:
        """Map api key -> async handler, for every key of ``GROUP_API_KEYS``."""
        return {
            ApiKey.JOIN_GROUP: self.handle_join_group,
            ApiKey.SYNC_GROUP: self.handle_sync_group,
            ApiKey.HEARTBEAT: self.handle_heartbeat,
            ApiKey.LEAVE_GROUP: self.handle_leave_group,
            ApiKey.OFFSET_COMMIT: self.handle_offset_commit,
            ApiKey.OFFSET_FETCH: self.handle_offset_fetch,
            ApiKey.DESCRIBE_GROUPS: self.handle_describe_groups,
            ApiKey.LIST_GROUPS: self.handle_list_groups,
            ApiKey.TXN_OFFSET_COMMIT: self.handle_txn_offset_commit,
        }

    # --------------------------------------------------------------------------- FindCoordinator
    def find_coordinator(self, key: str, key_type: int) -> tuple[Errors, int, str, int]:
        """``(error, node_id, host, port)`` of the coordinator of group ``key``: the leader of its offsets
        partition. COORDINATOR_NOT_AVAILABLE while the topic is created or the partition has no leader."""
        if key_type != KEY_TYPE_GROUP:
            return Errors.COORDINATOR_NOT_AVAILABLE, -1, "", -1
        if not key:
            return Errors.INVALID_REQUEST, -1, "", -1
        self.shell.ensure_offsets_topic()
        leader = self.shell.leader_of(key)
        where = self.shell.endpoint(leader) if leader >= 0 else None
        if where is None:
            return Errors.COORDINATOR_NOT_AVAILABLE, -1, "", -1
        return Errors.NONE, leader, where[0], where[1]

    async def handle_find_coordinator(self, request: DecodedRequest) -> ApiMessage:
        """FindCoordinator 0-4 for groups; another key type goes to ``other_coordinators`` (else
        COORDINATOR_NOT_AVAILABLE)."""
        body, version = request.body, request.api_version
        cls = response_class(ApiKey.FIND_COORDINATOR)
        key_type = body.key_type if version >= 1 else KEY_TYPE_GROUP
        if key_type != KEY_TYPE_GROUP and self.other_coordinators is not None:
            return await self.other_coordinators(request)
        if version >= 4:
            coordinators = []
            for key in body.coordinator_keys or []:
                err, node, host, port = self.find_coordinator(key, key_type)
                coordinators.append(cls.Coordinator(key=key, node_id=node, host=host, port=port, error_code=int(err),
                                                    error_message=None))
            return cls(version=version, throttle_time_ms=0, error_code=0, error_message=None, node_id=-1, host="",
                       port=-1, coordinators=coordinators)
        err, node, host, port = self.find_coordinator(body.key, key_type)
        return cls(version=version, throttle_time_ms=0, error_code=int(err), error_message=None, node_id=node,
                   host=host, port=port, coordinators=[])

    # --------------------------------------------------------------------------- membership
    async def handle_join_group(self, request: DecodedRequest) -> ApiMessage:
        """JoinGroup 2-9 (v4+: MEMBER_ID_REQUIRED for a new member, KIP-394)."""
        body, version = request.body, request.api_version
        req = m.JoinGroup(
            group_id=body.group_id, member_id=body.member_id or "", protocol_type=body.protocol_type,
            protocols=tuple((p.name, bytes(p.metadata or b"")) for p in body.protocols),
            session_timeout_ms=body.session_timeout_ms,
            rebalance_timeout_ms=body.rebalance_timeout_ms if version >= 1 else body.session_timeout_ms,
            client_id=request.client_id or "", client_host="",
            group_instance_id=body.group_instance_id if version >= 5 else None,
            require_known_member_id=version >= 4)
        r: m.JoinResult = await self.shell.call("join_group", req)
        cls = response_class(ApiKey.JOIN_GROUP)
        return cls(version=version, throttle_time_ms=0, error_code=int(r.error), generation_id=r.generation,
                   protocol_type=r.protocol_type, protocol_name=r.protocol_name or ("" if version < 7 else None),
                   leader=r.leader, skip_assignment=False, member_id=r.member_id,
                   members=[cls.JoinGroupResponseMember(member_id=mid, group_instance_id=iid, metadata=meta)
                            for mid, iid, meta in r.members])

    async def handle_sync_group(self, request: DecodedRequest) -> ApiMessage:
        """SyncGroup 0-5."""
        body, version = request.body, request.api_version
        req = m.SyncGroup(body.group_id, body.generation_id, body.member_id,
                          {a.member_id: bytes(a.assignment or b"") for a in body.assignments or []},
                          body.protocol_type if version >= 5 else None, body.protocol_name if version >= 5 else None)
        r: m.SyncResult = await self.shell.call("sync_group", req)
        return response_class(ApiKey.SYNC_GROUP)(version=version, throttle_time_ms=0, error_code=int(r.error),
                                                 protocol_type=r.protocol_type, protocol_name=r.protocol_name,
                                                 assignment=r.assignment)

    async def handle_heartbeat(self, request: DecodedRequest) -> ApiMessage:
        """Heartbeat 0-4."""
        body = request.body
        err = self.shell.direct("heartbeat", m.Heartbeat(body.group_id, body.generation_id, body.member_id))
        return response_class(ApiKey.HEARTBEAT)(version=request.api_version, throttle_time_ms=0, error_code=int(err))

    async def handle_leave_group(self, request: DecodedRequest) -> ApiMessage:
        """LeaveGroup 0-5 (v3+: several members at once)."""
        body, version = request.body, request.api_version
        ids = tuple(x.member_id for x in body.members) if version >= 3 else (body.member_id,)
        r: m.LeaveResult = self.shell.direct("leave_group", m.LeaveGroup(body.group_id, ids))
        cls = response_class(ApiKey.LEAVE_GROUP)
        top = r.error
        if version < 3 and top == Errors.NONE and r.members:
            top = r.members[0][1]  # one member: its error is the answer
        return cls(version=version, throttle_time_ms=0, error_code=int(top),
                   members=[cls.MemberResponse(member_id=mid, group_instance_id=None, error_code=int(e))
                            for mid, e in r.members] if version >= 3 else [])

    # --------------------------------------------------------------------------- offsets
    async def handle_offset_commit(self, request: DecodedRequest) -> ApiMessage:
        """OffsetCommit 2-8: answered once the offsets are committed in ``__consumer_offsets``."""
        body, version = request.body, request.api_version
        offsets = {(t.name, p.partition_index): (p.committed_offset,
                                                 p.committed_leader_epoch if version >= 6 else -1,
                                                 p.committed_metadata or "")
                   for t in body.topics for p in t.partitions}
        req = m.OffsetCommit(body.group_id, body.generation_id_or_member_epoch, body.member_id or "", offsets,
                             body.group_instance_id if version >= 7 else None)
        r: m.OffsetCommitResult = await self.shell.call("offset_commit", req)
        return _offset_commit_response(version, r.errors)

    async def handle_txn_offset_commit(self, request: DecodedRequest) -> ApiMessage:
        """TxnOffsetCommit 0-3: a transactional producer's offsets for a group, answered once written;
        they take effect with the transaction's COMMIT marker."""
        body, version = request.body, request.api_version
        offsets = {(t.name, p.partition_index): (p.committed_offset,
                                                 p.committed_leader_epoch if version >= 2 else -1,
                                                 p.committed_metadata or "")
                   for t in body.topics for p in t.partitions}
        req = m.TxnOffsetCommit(body.group_id, body.transactional_id, body.producer_id, body.producer_epoch, offsets,
                                body.generation_id if version >= 3 else -1,
                                (body.member_id or "") if version >= 3 else "",
                                body.group_instance_id if version >= 3 else None)
        r: m.OffsetCommitResult = await self.shell.call("txn_offset_commit", req)
        return _txn_commit_response(version, r.errors)

    async def handle_offset_fetch(self, request: DecodedRequest) -> ApiMessage:
        """OffsetFetch 1-7 (``topics`` null from v2: every partition with a committed offset; v7's
        ``require_stable``: UNSTABLE_OFFSET_COMMIT for a partition an open transaction holds an offset for)."""
        body, version = request.body, request.api_version
        parts = None if body.topics is None else [(t.name, i) for t in body.topics for i in t.partition_indexes]
        stable = bool(body.require_stable) if version >= 7 else False
        r: m.OffsetFetchResult = self.shell.direct("offset_fetch", body.group_id, parts, stable)
        cls = response_class(ApiKey.OFFSET_FETCH)
        tcls = cls.OffsetFetchResponseTopic
        pcls = tcls.OffsetFetchResponsePartition
        items = r.offsets if r.error == Errors.NONE else dict.fromkeys(parts or [], (-1, -1, ""))
        part_error = int(r.error) if version < 2 else 0  # before v2 the error is per partition only
        groups = group_by_topic((t, pcls(partition_index=p, committed_offset=o, committed_leader_epoch=e,
                                         metadata=md, error_code=int(r.partition_errors.get((t, p), part_error))))
                                for (t, p), (o, e, md) in sorted(items.items()))
        return cls(version=version, throttle_time_ms=0, error_code=int(r.error), groups=[],
                   topics=[tcls(name=t, partitions=ps) for t, ps in groups.items()])

    # --------------------------------------------------------------------------- describe, list
    async def handle_describe_groups(self, request: DecodedRequest) -> ApiMessage:
        """DescribeGroups 0-5."""
        body, version = request.body, request.api_version
        cls = response_class(ApiKey.DESCRIBE_GROUPS)
        gcls = cls.DescribedGroup
        out = []
        for gid in body.groups:
            d: m.GroupDescription = self.shell.direct("describe_group", gid)
            out.append(gcls(error_code=int(d.error), error_message=None, group_id=gid, group_state=d.state,
                            protocol_type=d.protocol_type, protocol_data=d.protocol,
                            members=[gcls.DescribedGroupMember(member_id=x.member_id,
                                                               group_instance_id=x.group_instance_id,
                                                               client_id=x.client_id, client_host=x.client_host,
                                                               member_metadata=x.metadata,
                                                               member_assignment=x.assignment)
                                     for x in d.members],
                            authorized_operations=None))
        return cls(version=version, throttle_time_ms=0, groups=out)

    async def handle_list_groups(self, request: DecodedRequest) -> ApiMessage:
        """ListGroups 0-4 (v4: a state filter)."""
        body, version = request.body, request.api_version
        states = set(body.states_filter or []) if version >= 4 else None
        cls = response_class(ApiKey.LIST_GROUPS)
        return cls(version=version, throttle_time_ms=0, error_code=0, groups=[
            cls.ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state,
                            group_type="classic")
            for g in self.shell.direct("list_groups", states)])


def _offset_commit_response(version: int, errors: dict[tuple[str, int], Errors]) -> ApiMessage:
    cls = response_class(ApiKey.OFFSET_COMMIT)
    tcls = cls.OffsetCommitResponseTopic
    pcls = tcls.OffsetCommitResponsePartition
    groups = group_by_topic((t, pcls(partition_index=p, error_code=int(e))) for (t, p), e in errors.items())
    return cls(version=version, throttle_time_ms=0, topics=[tcls(name=t, partitions=ps) for t, ps in groups.items()])


# ------------------------------------------------------------------------------- whole-request errors

def _txn_commit_response(version: int, errors: dict[tuple[str, int], Errors]) -> ApiMessage:
    cls = response_class(ApiKey.TXN_OFFSET_COMMIT)
    tcls = cls.TxnOffsetCommitResponseTopic
    pcls = tcls.TxnOffsetCommitResponsePartition
    groups = group_by_topic((t, pcls(partition_index=p, error_code=int(e))) for (t, p), e in sorted(errors.items()))
    return cls(version=version, throttle_time_ms=0, topics=[tcls(name=t, partitions=ps) for t, ps in groups.items()])


def _txn_commit(body: Any, version: int, code: int) -> ApiMessage:
    return _txn_commit_response(version, {(t.name, p.partition_index): Errors(code)
                                          for t in body.topics for p in t.partitions})


def _join(body: Any, version: int, code: int) -> ApiMessage:
    return response_class(ApiKey.JOIN_GROUP)(version=version, throttle_time_ms=0, error_code=code, generation_id=-1,
                                             protocol_type=None, protocol_name="" if version < 7 else None,
                                             leader="", skip_assignment=False, member_id=body.member_id or "",
                                             members=[])


def _sync(body: Any, version: int, code: int) -> ApiMessage:
    return response_class(ApiKey.SYNC_GROUP)(version=version, throttle_time_ms=0, error_code=code,
                                             protocol_type=None, protocol_name=None, assignment=b"")


def _heartbeat(body: Any, version: int, code: int) -> ApiMessage:
    return response_class(ApiKey.HEARTBEAT)(version=version, throttle_time_ms=0, error_code=code)


def _leave(body: Any, version: int, code: int) -> ApiMessage:
    cls = response_class(ApiKey.LEAVE_GROUP)
    return cls(version=version, throttle_time_ms=0, error_code=code, members=[
        cls.MemberResponse(member_id=x.member_id, group_instance_id=None, error_code=code)
        for x in (body.members or [] if version >= 3 else [])])


def _commit(body: Any, version: int, code: int) -> ApiMessage:
    return _offset_commit_response(version, {(t.name, p.partition_index): Errors(code)
                                             for t in body.topics for p in t.partitions})


def _fetch(body: Any, version: int, code: int) -> ApiMessage:
    cls = response_class(ApiKey.OFFSET_FETCH)
    tcls = cls.OffsetFetchResponseTopic
    pcls = tcls.OffsetFetchResponsePartition
    return cls(version=version, throttle_time_ms=0, error_code=code, groups=[], topics=[
        tcls(name=t.name, partitions=[pcls(partition_index=i, committed_offset=-1, committed_leader_epoch=-1,
                                           metadata="", error_code=code) for i in t.partition_indexes])
        for t in body.topics or []])


def _describe(body: Any, version: int, code: int) -> ApiMessage:
    cls = response_class(ApiKey.DESCRIBE_GROUPS)
    return cls(version=version, throttle_time_ms=0, groups=[
        cls.DescribedGroup(error_code=code, error_message=None, group_id=g, group_state="", protocol_type="",
                           protocol_data="", members=[], authorized_operations=None)
        for g in body.groups])


def _list(body: Any, version: int, code: int) -> ApiMessage:
    return response_class(ApiKey.LIST_GROUPS)(version=version, throttle_time_ms=0, error_code=code, groups=[])


ERROR_BUILDERS = {
    ApiKey.JOIN_GROUP: _join,
    ApiKey.SYNC_GROUP: _sync,
    ApiKey.HEARTBEAT: _heartbeat,
    ApiKey.LEAVE_GROUP: _leave,
    ApiKey.OFFSET_COMMIT: _commit,
    ApiKey.OFFSET_FETCH: _fetch,
    ApiKey.DESCRIBE_GROUPS: _describe,
    ApiKey.LIST_GROUPS: _list,
    ApiKey.TXN_OFFSET_COMMIT: _txn_commit,
}
