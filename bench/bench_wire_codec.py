"""Wire-layer cost: how fast the codec and the loopback server/client are (figures printed, never asserted).

Answers "is the wire layer the bottleneck?" for the reference broker: if the codec decodes produce
requests and encodes fetch responses far faster than the cluster moves records, replication dominates.

    python bench/bench_wire_codec.py [--records-per-batch 100] [--iterations 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from kafka.record import MemoryRecordsBuilder

from reference_impl.server import services as sv
from reference_impl.server.apis.common import fetch_response
from reference_impl.server.client_apis import ClientApiHandlers, build_server
from reference_impl.server.wire import WireClient, codec, records


def make_batch(n: int, value_size: int = 100) -> bytes:
    """A v2 batch of ``n`` records with ``value_size``-byte values."""
    b = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 24)
    for i in range(n):
        b.append(timestamp=None, key=None, value=(b"%08d" % i) * (value_size // 8), headers=[])
    b.close()
    return bytes(b.buffer())


def produce_payload(batch: bytes) -> bytes:
    """A Produce v9 request payload (header + body) carrying ``batch``."""
    cls = codec.ALL_APIS[0].request_class
    t = cls.TopicProduceData
    req = cls(transactional_id=None, acks=-1, timeout_ms=1000, topic_data=[
        t(name="bench", partition_data=[t.PartitionProduceData(index=0, records=batch)])])
    req.with_header(correlation_id=1, client_id="bench")
    return bytes(req.encode(version=9, header=True))


def timed(fn, iterations: int) -> float:
    """Operations per second of ``fn`` over ``iterations`` calls."""
    start = time.perf_counter()
    for _ in range(iterations):
        fn()
    return iterations / (time.perf_counter() - start)


class EchoServices:
    """Answers ApiVersions only (the round-trip benchmark needs no state)."""

    async def metadata(self, topics, allow_auto_topic_creation):
        """An empty cluster (never called by the round-trip benchmark)."""
        return sv.ClusterMetadata("bench", 1, ())


async def roundtrips(n: int) -> tuple[float, list[float]]:
    """Serial ApiVersions latencies (ms) and pipelined throughput (req/s) over loopback."""
    server = build_server("127.0.0.1", 0, broker=EchoServices(), name="bench")
    await server.start()
    try:
        cls = codec.ALL_APIS[18].request_class
        async with WireClient("127.0.0.1", server.port) as client:
            latencies = []
            for _ in range(n):
                t0 = time.perf_counter()
                await client.send(cls(client_software_name="b", client_software_version="1"), 3)
                latencies.append((time.perf_counter() - t0) * 1e3)
            start = time.perf_counter()
            await asyncio.gather(*(client.send(cls(client_software_name="b", client_software_version="1"), 3)
                                   for _ in range(n)))
            pipelined = n / (time.perf_counter() - start)
        return pipelined, latencies
    finally:
        await server.close()


def main() -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records-per-batch", type=int, default=100)
    parser.add_argument("--iterations", type=int, default=2000)
    args = parser.parse_args()
    batch = make_batch(args.records_per_batch)
    payload = produce_payload(batch)
    apis = ClientApiHandlers(broker=EchoServices()).served
    n = args.iterations

    decode_rate = timed(lambda: codec.decode_request(payload, apis), n)
    crc_rate = timed(lambda: records.validate_produce_records(batch), n)
    stamp_rate = timed(lambda: records.assign_offsets(batch, 12345, 7), n)
    result = sv.FetchResult((sv.FetchPartitionResult("bench", 0, high_watermark=1, records=batch * 10),))
    encode_rate = timed(
        lambda: codec.encode_response(fetch_response(12, result), 12, 1), n
    )
    pipelined, lat = asyncio.run(roundtrips(min(n, 2000)))
    lat.sort()

    mb = len(batch) / 1e6
    print(f"batch: {args.records_per_batch} records, {len(batch)} bytes")
    print(f"decode Produce v9 request     : {decode_rate:10.0f} req/s  ({decode_rate * args.records_per_batch:,.0f} records/s)")
    print(f"verify batch CRC-32C          : {crc_rate:10.0f} batch/s ({crc_rate * mb:,.0f} MB/s)")
    print(f"stamp offsets + leader epoch  : {stamp_rate:10.0f} batch/s")
    print(f"encode Fetch v12 resp (10 b.) : {encode_rate:10.0f} resp/s ({encode_rate * 10 * mb:,.0f} MB/s)")
    print(f"loopback ApiVersions, serial  : p50 {statistics.median(lat):.3f} ms, p99 {lat[int(len(lat) * 0.99) - 1]:.3f} ms")
    print(f"loopback ApiVersions, pipelined: {pipelined:10.0f} req/s")


if __name__ == "__main__":
    main()
