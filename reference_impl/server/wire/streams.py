"""Closing a connection without waiting on its peer.

``StreamWriter.close`` flushes the write buffer before the socket goes; a peer that stopped reading (paused,
cut off by a partition, or itself shutting down) keeps that buffer full, and ``wait_closed`` then waits until
TCP gives up, minutes later. A node that is shutting down must not wait on its peers, so the close is bounded
and the transport aborted (an RST, what a killed process would send) once the grace is spent.
"""

from __future__ import annotations

import asyncio
import contextlib

CLOSE_GRACE_S = 1.0


async def close_writer(writer: asyncio.StreamWriter, grace_s: float = CLOSE_GRACE_S) -> None:
    """Close ``writer``; abort its transport if the buffered bytes are not flushed within ``grace_s``."""
    writer.close()
    try:
        await asyncio.wait_for(asyncio.shield(writer.wait_closed()), grace_s)
    except TimeoutError:
        writer.transport.abort()
    except (ConnectionError, OSError):
        pass
    except asyncio.CancelledError:
        writer.transport.abort()
        raise
    # After an abort the transport finishes closing on the next loop iteration; wait for that, briefly.
    with contextlib.suppress(ConnectionError, OSError, TimeoutError):
        await asyncio.wait_for(writer.wait_closed(), grace_s)
