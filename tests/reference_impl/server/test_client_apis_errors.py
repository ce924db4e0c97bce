"""Error paths of the client API handlers: whole-request error responses, forwarding failures, acks."""

from __future__ import annotations

import asyncio

import pytest

from reference_impl.protocol.errors import Errors
from reference_impl.server.client_apis import ClientApiHandlers
from reference_impl.server.wire import codec
from reference_impl.server.wire.codec import ALL_APIS
from tests.reference_impl.server.test_wire_codec import CASES, request_for
from tests.reference_impl.server.test_wire_memory_services import MemoryServices


def decoded(api_key: int, version: int, request=None) -> codec.DecodedRequest:
    request = request if request is not None else request_for(api_key, version)
    request.with_header(correlation_id=3, client_id="c")
    return codec.decode_request(bytes(request.encode(version=version, header=True)), codec.ALL_APIS)


def error_codes(message) -> list[int]:
    """Every ``error_code`` anywhere in a decoded message."""
    found = []

    def walk(obj):
        if isinstance(obj, list):
            for item in obj:
                walk(item)
            return
        if not hasattr(obj, "_struct") or obj is None:
            return
        for fld in obj._struct.fields.values():
            if obj.version is not None and not fld.for_version_q(obj.version):
                continue
            value = getattr(obj, fld.name)
            if fld.name == "error_code":
                found.append(value)
            elif fld.is_struct() or fld.is_struct_array():
                walk(value)

    walk(message)
    return found


@pytest.mark.parametrize(("api_key", "version"), CASES)
def test_error_response_for_every_api_version_encodes_and_carries_the_error(api_key, version):
    handlers = ClientApiHandlers(broker=MemoryServices())
    request = decoded(api_key, version)
    response = handlers.error_response(request, Errors.UNSUPPORTED_VERSION)
    frame = codec.encode_response(response, version, 3)
    parsed = ALL_APIS[api_key].response_class.decode(frame, version=version, header=True, framed=True)
    assert parsed.header.correlation_id == 3
    codes = error_codes(parsed)
    if api_key == 3:
        codes = [t.error_code for t in parsed.topics]
    assert codes and set(codes) == {35}, (api_key, version, parsed)


class Unreachable(MemoryServices):
    """A broker whose controller cannot be reached (or does not answer in time)."""

    def __init__(self, exc):
        super().__init__()
        self.exc = exc

    async def forward_to_controller(self, api_key, api_version, request):
        raise self.exc


class UnreachableForwardingAll(Unreachable):
    """The same broker without a local DescribeConfigs: every admin API is forwarded."""

    describe_configs = None


@pytest.mark.parametrize(("exc", "code"), [(ConnectionError("down"), 41), (TimeoutError(), 7)])
@pytest.mark.parametrize("api_key", [19, 32, 43, 45, 46])
def test_forwarding_failure_becomes_a_kafka_error(exc, code, api_key):
    handlers = ClientApiHandlers(broker=UnreachableForwardingAll(exc))
    version = ALL_APIS[api_key].max_version if api_key != 45 else 1
    response = asyncio.run(handlers.admin_apis.handle_admin(decoded(api_key, min(version, 7))))
    assert set(error_codes(response)) == {code}


def test_a_broker_with_describe_configs_answers_it_without_the_controller():
    # Kafka brokers answer DescribeConfigs themselves: an unreachable controller does not matter.
    handlers = ClientApiHandlers(broker=Unreachable(ConnectionError("down")))
    response = asyncio.run(handlers.admin_apis.handle_admin(decoded(32, 4)))
    assert set(error_codes(response)) == {0}
    assert [c.name for r in response.results for c in r.configs] == ["min.insync.replicas"]


def test_invalid_acks_is_refused_without_appending():
    services = MemoryServices()
    services.create("t")
    handlers = ClientApiHandlers(broker=services)
    req = request_for(0, 9)
    req.acks = 2
    response = asyncio.run(handlers.broker_apis.handle_produce(decoded(0, 9, req)))
    assert response.responses[0].partition_responses[0].error_code == Errors.INVALID_REQUIRED_ACKS
    assert services.produce_calls == 0


def test_acks_zero_appends_but_returns_no_response():
    services = MemoryServices()
    services.create("t")
    handlers = ClientApiHandlers(broker=services)
    req = request_for(0, 7)
    req.acks = 0
    assert asyncio.run(handlers.broker_apis.handle_produce(decoded(0, 7, req))) is None
    assert services.topics["t"][0].leo == 2
    assert handlers.error_response(decoded(0, 7, req), 35) is None  # acks=0 never gets an answer


def test_metadata_v0_empty_list_means_all_topics_and_v1_means_none():
    services = MemoryServices()
    services.create("a")
    services.create("b")
    handlers = ClientApiHandlers(broker=services)
    cls = ALL_APIS[3].request_class
    v0 = asyncio.run(handlers.broker_apis.handle_metadata(decoded(3, 0, cls(topics=[]))))
    v1 = asyncio.run(handlers.broker_apis.handle_metadata(decoded(3, 1, cls(topics=[]))))
    v1_all = asyncio.run(handlers.broker_apis.handle_metadata(decoded(3, 1, cls(topics=None))))
    assert sorted(t.name for t in v0.topics) == ["a", "b"]
    assert v1.topics == []
    assert sorted(t.name for t in v1_all.topics) == ["a", "b"]


def test_unknown_topic_in_metadata_and_produce():
    services = MemoryServices()
    handlers = ClientApiHandlers(broker=services)
    meta = asyncio.run(handlers.broker_apis.handle_metadata(decoded(3, 12)))
    assert meta.topics[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    produced = asyncio.run(handlers.broker_apis.handle_produce(decoded(0, 9)))
    assert produced.responses[0].partition_responses[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_controller_side_handlers_serve_admin_only():
    handlers = ClientApiHandlers(admin=MemoryServices())
    assert set(handlers.own_apis()) == {18, 19, 32, 33, 43, 44, 45, 46}
    with pytest.raises(ValueError):
        ClientApiHandlers()
