"""Unit tests of the queue workload's pure parts (outcome classification, encodings, process mapping)."""

from collections import namedtuple

import kafka.errors as errors

from harness.spec import RunSpec
from workloads.clients import QueueClient, decode_value, definite_send_failure, records_by_key
from workloads.queue import client_factory, final_read_op, main_generator, node_for

TP = namedtuple("TP", "topic partition")
Rec = namedtuple("Rec", "offset value")


def test_decode_value():
    assert decode_value(b"42") == 42
    assert decode_value(b"abc") == "abc"
    assert decode_value(None) is None


def test_records_by_key_encoding():
    batches = {TP("t", 1): [Rec(5, b"7"), Rec(6, b"8")], TP("t", 0): [Rec(0, b"1")]}
    assert records_by_key(batches) == {"0": [[0, 1]], "1": [[5, 7], [6, 8]]}
    assert list(records_by_key(batches)) == ["0", "1"]


def test_only_definite_rejections_are_fail():
    assert definite_send_failure(errors.MessageSizeTooLargeError())
    assert definite_send_failure(errors.InvalidTopicError())
    # retried or timed-out sends may have been appended by an earlier attempt: info, never fail
    assert not definite_send_failure(errors.KafkaTimeoutError())
    assert not definite_send_failure(errors.NotEnoughReplicasError())
    assert not definite_send_failure(errors.NotEnoughReplicasAfterAppendError())
    assert not definite_send_failure(errors.NotLeaderForPartitionError())
    assert not definite_send_failure(ConnectionError())


def test_send_without_any_broker_is_fail_not_info():
    # Nothing listens on 127.0.0.1:1 (port 1 is never open for us): the producer cannot be built or the
    # record never leaves the client, so the op certainly did not happen.
    spec = RunSpec(topic="t", op_timeout_s=2.0, keys=1, acks="all", idempotence=True)
    client = QueueClient(spec, ["127.0.0.1:1"])
    try:
        done = client.invoke(None, {"f": "send", "value": [0, 5], "process": 0, "type": "invoke"})
    finally:
        client.close()
    assert done["type"] == "fail", done
    assert done["value"] == [0, [None, 5]]


def test_unknown_f_is_fail():
    client = QueueClient(RunSpec(topic="t", op_timeout_s=1.0, keys=1), ["127.0.0.1:1"])
    assert client.invoke(None, {"f": "frobnicate", "value": None})["type"] == "fail"


class FakeCluster:
    def bootstrap_servers(self):
        return ["h1:9092", "h2:9092", "h3:9092"]

    def brokers(self):
        return ["b1", "b2", "b3"]


def test_processes_spread_over_brokers():
    spec = RunSpec(topic="t", op_timeout_s=1.0, keys=2)
    make = client_factory(spec, FakeCluster(), op_timeout_s=3.0)
    c4 = make(4)
    assert c4.bootstrap == ["h2:9092", "h3:9092", "h1:9092"] and c4.node == "b2"
    assert c4.op_timeout_s == 3.0
    assert node_for(FakeCluster())(4) == "b2"


def test_final_read_op_is_marked_final_and_main_generator_is_time_limited():
    assert final_read_op() == {"f": "poll", "value": None, "final": True}
    from harness.generator import GenContext

    gen = main_generator(RunSpec(keys=2, send_ratio=0.5, assign_ratio=0.0, rate=10, time_limit_s=1))
    assert gen.op(GenContext(1.0, 0)) is None
    op = gen.op(GenContext(0.0, 0))
    assert op["f"] in ("send", "poll")
