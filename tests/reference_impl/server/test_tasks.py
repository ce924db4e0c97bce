"""cancel_all ends tasks even when a cancellation is lost, and never waits past its grace."""

import asyncio
import time

from reference_impl.server.tasks import cancel_all


async def _loses_first_cancel(ended: list) -> None:
    # What a loop around Python 3.11's wait_for does when a cancellation races the awaited result:
    # the CancelledError never reaches the loop, which goes on.
    lost = False
    while True:
        try:
            await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            if lost:
                ended.append(True)
                raise
            lost = True


async def _ignores_cancel(released: asyncio.Event) -> None:
    while not released.is_set():
        try:
            await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            pass


async def _scenario():
    ended: list = []
    lossy = asyncio.create_task(_loses_first_cancel(ended))
    failing = asyncio.create_task(asyncio.sleep(0, result=None))
    await asyncio.sleep(0.1)
    stuck = await cancel_all([lossy, failing], grace_s=5.0)
    assert stuck == [] and lossy.cancelled() and ended == [True]
    released = asyncio.Event()
    stubborn = asyncio.create_task(_ignores_cancel(released))
    await asyncio.sleep(0.01)
    started = time.monotonic()
    stuck = await cancel_all([stubborn], grace_s=0.5)
    took = time.monotonic() - started
    assert stuck == [stubborn] and took < 2.0
    released.set()
    await stubborn
    return True


def test_a_lost_cancellation_is_repeated_and_a_stubborn_task_does_not_hang_the_stop():
    assert asyncio.run(_scenario())


def test_a_plain_await_of_a_task_that_lost_its_cancellation_would_hang():
    async def plain():
        task = asyncio.create_task(_loses_first_cancel([]))
        await asyncio.sleep(0.1)
        task.cancel()
        try:
            await asyncio.wait_for(asyncio.shield(task), 1.0)
        except TimeoutError:
            task.cancel()
            return "hung"
        return "ended"

    assert asyncio.run(plain()) == "hung"
