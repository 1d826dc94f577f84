"""cancel_and_wait: the daemon's background tasks stop at shutdown even when one of them
takes its first cancellation to clean up and then waits without a timeout (aiomqtt's
disconnect), and a task that never stops is named instead of holding the daemon."""

from __future__ import annotations

import asyncio

from schedd.daemon.shutdown import cancel_and_wait

GRACE = 0.05  # seconds; no test asserts a duration


async def ends_when_cancelled() -> None:
    await asyncio.Event().wait()


async def cleans_up_then_waits_forever(cancellations: list[int]) -> None:
    """Like aiomqtt's Client.__aexit__ under a cancelled `async with`: the first
    cancellation starts a wait that only another cancellation ends."""
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        cancellations.append(1)
        await asyncio.Event().wait()  # "wait for the broker", timeout=None
        raise


async def never_stops(cancellations: list[int], release: asyncio.Event) -> None:
    while not release.is_set():
        try:
            await release.wait()
        except asyncio.CancelledError:
            cancellations.append(1)


async def fails() -> None:
    raise RuntimeError("logged where it happened")


def test_plain_tasks_stop_at_the_first_cancellation():
    async def main() -> tuple[list[str], list[asyncio.Task[None]]]:
        tasks = [asyncio.create_task(ends_when_cancelled(), name=f"t{i}") for i in range(3)]
        await asyncio.sleep(0)
        return await cancel_and_wait(tasks, GRACE), tasks

    stuck, tasks = asyncio.run(main())
    assert stuck == [] and all(t.cancelled() for t in tasks)


def test_a_task_that_absorbs_one_cancellation_is_cancelled_again():
    async def main() -> tuple[list[str], asyncio.Task[None], list[int]]:
        seen: list[int] = []
        task = asyncio.create_task(cleans_up_then_waits_forever(seen), name="mqtt")
        await asyncio.sleep(0)
        return await cancel_and_wait([task], GRACE), task, seen

    stuck, task, seen = asyncio.run(main())
    assert stuck == [] and task.cancelled() and seen == [1]


def test_a_task_that_never_stops_is_named_after_the_last_round():
    async def main() -> tuple[list[str], list[int]]:
        seen: list[int] = []
        release = asyncio.Event()
        task = asyncio.create_task(never_stops(seen, release), name="stubborn")
        done = asyncio.create_task(ends_when_cancelled(), name="polite")
        await asyncio.sleep(0)
        stuck = await cancel_and_wait([task, done], GRACE, rounds=3)
        release.set()
        await task
        return stuck, seen

    stuck, seen = asyncio.run(main())
    assert stuck == ["stubborn"] and seen == [1, 1, 1]


def test_finished_and_failed_tasks_are_accepted_quietly():
    async def main() -> list[str]:
        failed = asyncio.create_task(fails(), name="failed")
        await asyncio.sleep(0)
        return await cancel_and_wait([failed], GRACE)

    assert asyncio.run(main()) == []
