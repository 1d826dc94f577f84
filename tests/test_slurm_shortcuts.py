"""The `slurm` policy's shortcuts change nothing it decides: the will-run test's release
steps shared between jobs, the running jobs kept in end order between cycles, a
backfill cycle that stops at the last job able to start now, and the cycles of a chain of
PLANNED-node updates computed only from when `now` could change their answer
(docs/benchmarks.md, "Slurm emulation beside EASY"). Each is checked against the policy
doing the whole work; the compiled helpers' short ways (the node-space map's scan that
stops once its answer is settled, the last job that fits found from counts, runs read off
the binary digits) against the plain loops they replaced."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_slurm_policy import job, machine

from schedd.core.engine import Engine, EngineOptions
from schedd.core.job import JobSpec
from schedd.slurm.backfill import Candidate, NodeSpace, last_fit
from schedd.slurm.jobs import SlurmJob
from schedd.slurm.machine import SlurmSetup
from schedd.slurm.policy import SlurmOptions, SlurmPolicy
from schedd.slurm.select import Nodes, Placement, Releases, Request, Running, runs_of, will_run


def _request(data: st.DataObject, total: list[int]) -> Request:
    exclusive = data.draw(st.booleans())
    n = data.draw(st.integers(1, len(total)))
    cpus = data.draw(st.integers(1, sum(total)))
    return Request(n if exclusive else cpus, n if exclusive else 1,
                   n if exclusive else cpus, exclusive)


def _busy_machine(data: st.DataObject, total: list[int],
                  over: st.SearchStrategy[int]) -> tuple[Nodes, list[Running]]:
    """Nodes of `total` CPUs with up to eight drawn jobs running on them, in order of
    expected end (1-400 s), each guessed to end `over` seconds past it."""
    nodes = Nodes(total)
    every = (1 << len(total)) - 1
    running: list[Running] = []
    for _ in range(data.draw(st.integers(0, 8))):
        at = nodes.place(_request(data, total), every)
        if at is None:
            continue
        nodes.take(at)
        end = float(data.draw(st.integers(1, 400)))
        running.append(Running(end, at, end + data.draw(over)))
    running.sort(key=lambda r: r.end)
    return nodes, running


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=8), st.data())
def test_shared_release_steps_answer_as_fresh_ones(total: list[int],
                                                   data: st.DataObject) -> None:
    nodes, running = _busy_machine(data, total, st.sampled_from([0, 30, 90]))
    every = (1 << len(total)) - 1
    now = float(data.draw(st.integers(0, 300)))
    scale = data.draw(st.sampled_from([0, 0, 45]))
    steps: dict[int, Releases] = {}
    for _ in range(12):
        req = _request(data, total)
        usable = data.draw(st.integers(1, every))
        now_only = data.draw(st.booleans())
        fresh = will_run(nodes, usable, req, running, now, scale, now_only, 7.0)
        shared = will_run(nodes, usable, req, running, now, scale, now_only, 7.0, steps)
        if fresh is None or shared is None:
            assert fresh is shared is None
        else:
            assert fresh[0] == shared[0]
            assert (fresh[1].full, fresh[1].partial) == (shared[1].full, shared[1].partial)
    # Sharing left the machine as it was.
    assert isinstance(nodes, Nodes) and all(isinstance(r.at, Placement) for r in running)


CONFS = [
    "SchedulerParameters=bf_interval=2\n",
    "SchedulerParameters=bf_interval=5,bf_resolution=60,bf_max_job_test=4\n",
    "SchedulerParameters=bf_interval=3,bf_window=10,bf_max_job_start=2\nOverTimeLimit=1\n",
    "SchedulerParameters=bf_interval=2,bf_min_age_reserve=20\n",
]
PARTS = """\
NodeName=n[1-6] CPUs=4
PartitionName=short Nodes=n[1-6] Default=YES MaxTime=5 PriorityTier=2
PartitionName=long Nodes=n[1-4] MaxTime=INFINITE PriorityTier=1
"""


def _schedule(setup: SlurmSetup, jobs: list[tuple[JobSpec, SlurmJob]],
              whole: bool) -> tuple[list[tuple[int, float, float]], dict[str, int]]:
    policy = SlurmPolicy(SlurmOptions(boot=600.0, epilog=1.0), setup.cluster)
    policy.configure(setup.conf, setup.assocs, {spec.id: sj for spec, sj in jobs})
    if whole:  # the reference: every cycle in full, the running jobs rebuilt each time,
        # and every cycle of a chain of PLANNED-node updates computed
        policy.exhaustive_backfill = True
        policy.static_guess = False
        policy.exhaustive_chain = True
    engine = Engine(setup.cluster, policy,
                    options=EngineOptions(keep_finished=True, **policy.engine_overrides()))
    engine.feed(sorted((spec for spec, _ in jobs), key=lambda s: (s.submit, s.id)))
    while engine.step():
        pass
    done = sorted((j.id, j.first_start, j.end_time) for j in engine.finished.values())
    return done, policy.stats()


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(conf=st.sampled_from(CONFS), parts=st.booleans(), data=st.data())
def test_backfill_shortcuts_decide_as_the_whole_cycle(tmp_path: Path, conf: str, parts: bool,
                                                     data: st.DataObject) -> None:
    setup = machine(tmp_path, conf, PARTS if parts else
                    "NodeName=n[1-6] CPUs=4\nPartitionName=batch Nodes=ALL Default=YES\n")
    jobs = []
    submit = 0.0
    for jid in range(1, data.draw(st.integers(1, 40)) + 1):
        submit += data.draw(st.sampled_from([0.0, 0.0, 1.0, 3.0, 17.0, 60.0]))
        limit = 60.0 * data.draw(st.integers(1, 8))
        runtime = float(data.draw(st.integers(1, 600)))  # some outlive their limit
        partition = data.draw(st.integers(0, 1)) if parts else 0
        width = 4 if partition else 6
        if data.draw(st.booleans()):
            jobs.append(job(setup, jid, submit, runtime, nodes=data.draw(st.integers(1, width)),
                            limit=limit, partition=partition))
        else:
            jobs.append(job(setup, jid, submit, runtime,
                            cpus=data.draw(st.integers(1, 4 * width)), limit=limit,
                            partition=partition))
    quick, quick_stats = _schedule(setup, jobs, whole=False)
    whole, whole_stats = _schedule(setup, jobs, whole=True)
    assert quick == whole
    # The reference computes every cycle of a chain of PLANNED updates; the policy only
    # those from which `now` could change the answer (`_recheck`): the same decisions,
    # fewer cycles computed.
    assert quick_stats["backfill_cycles"] <= whole_stats["backfill_cycles"]
    del quick_stats["backfill_cycles"], whole_stats["backfill_cycles"]
    assert quick_stats == whole_stats


# The compiled helpers' short ways against the plain loops they replaced.

def _runs_by_arithmetic(mask: int) -> list[tuple[int, int]]:
    out = []
    while mask:
        low = mask & -mask
        past = (mask + low) & ~mask
        first = low.bit_length() - 1
        out.append((first, past.bit_length() - 1 - first))
        mask &= ~(past - low)
    return out


@settings(max_examples=300, deadline=None)
@given(st.integers(0, (1 << 300) - 1))
def test_runs_of_reads_the_binary_digits_as_the_arithmetic_did(mask: int) -> None:
    assert runs_of(mask) == _runs_by_arithmetic(mask)


def _available_every_record(space: NodeSpace, base: int, start: float,
                            end_time: float) -> tuple[int, float]:
    avail, later = base, 0.0
    n = len(space.begin)
    for j in range(n):
        se = space.end[j]
        if later == 0.0 and se > start and j + 1 < n \
                and base & space.mask[j + 1] & ~(avail & space.mask[j]):
            later = se
        if se <= start:
            continue
        if space.begin[j] <= end_time:
            avail &= space.mask[j]
        else:
            break
    return avail, later


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_available_stops_early_only_where_the_answer_is_settled(data: st.DataObject) -> None:
    width = data.draw(st.integers(1, 12))
    every = (1 << width) - 1
    res = data.draw(st.sampled_from([1, 10, 60]))
    space = NodeSpace(0.0, 1000.0, every, res)
    for _ in range(data.draw(st.integers(0, 10))):
        begin = float(data.draw(st.integers(0, 990)))
        space.reserve(begin, begin + data.draw(st.integers(1, 400)),
                      data.draw(st.integers(0, every)))
    for _ in range(10):
        base = data.draw(st.integers(0, every))
        start = float(data.draw(st.integers(0, 1000)))
        end_time = start + data.draw(st.integers(0, 600))
        need = data.draw(st.integers(0, width + 1))
        want_later = data.draw(st.booleans())
        full = _available_every_record(space, base, start, end_time)
        assert space.available(base, start, end_time) == full
        avail, later = space.available(base, start, end_time, need, want_later)
        if avail.bit_count() >= need:
            assert avail == full[0]  # enough nodes: all of them
        else:
            assert full[0].bit_count() < need
        if want_later:
            assert later == full[1]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=8), st.data())
def test_last_fit_finds_the_last_job_could_fit_accepts(total: list[int],
                                                       data: st.DataObject) -> None:
    nodes = Nodes(total)
    every = (1 << len(total)) - 1
    for _ in range(data.draw(st.integers(0, 6))):
        at = nodes.place(_request(data, total), every)
        if at is not None:
            nodes.take(at)
    masks = [every, data.draw(st.integers(1, every))]
    candidates = [Candidate(i, data.draw(st.sampled_from(masks)), 60.0,
                            _request(data, total), False)
                  for i in range(data.draw(st.integers(0, 8)))]
    fits = [i for i, c in enumerate(candidates) if nodes.could_fit(c.req, c.usable)]
    assert last_fit(candidates, nodes) == (fits[-1] if fits else -1)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=8), st.booleans(), st.data())
def test_release_steps_count_as_the_machine_they_stand_for(total: list[int], same: bool,
                                                           data: st.DataObject) -> None:
    if same:
        total = [total[0]] * len(total)  # nodes of one size: the counts' short way
    nodes, running = _busy_machine(data, total, st.just(30))
    every = (1 << len(total)) - 1
    usable = data.draw(st.integers(1, every))
    releases = Releases(nodes, usable, running, 0.0)
    machine = nodes.copy()
    released = 0
    i = 0
    while releases.step():
        for r in releases.ordered[released:releases.k]:
            if r.at.mask & usable:  # the others are skipped, as Slurm does
                machine.give(r.at)
        released = releases.k
        state = releases.state(i)
        assert (state.idle, state.some, state.part) == (machine.idle, machine.some,
                                                        machine.part)
        for _ in range(4):
            req = _request(data, total)
            assert releases.fits(i, req) == _could_fit_node_by_node(machine, req, usable)
            assert machine.could_fit(req, usable) == _could_fit_node_by_node(machine, req,
                                                                              usable)
        i += 1


def _could_fit_node_by_node(nodes: Nodes, req: Request, usable: int) -> bool:
    mine = [i for i in range(len(nodes.total)) if usable >> i & 1]
    if req.exclusive:
        return sum(1 for i in mine if nodes.idle >> i & 1) >= req.min_nodes
    free = [nodes.free_of(i) for i in mine if nodes.some >> i & 1]
    return len(free) >= req.min_nodes and sum(free) >= req.cpus
