"""`slurm`: Slurm 22.05's scheduling, driven by a slurm.conf, as a policy on a CPU-node
machine.

What runs when, as in slurmctld (docs/slurm.md has the sources, line by line):

* **At submission**: a batch job only asks for a main-scheduler pass
  (`queue_job_scheduler`); sbatch's `job_allocate` runs with allocate == 0, a test only.
  With option `interactive` (salloc, srun) a job that is eligible and has the top
  priority (no pending, runnable job with a higher one in its partition, or in an
  overlapping partition of a higher tier) starts at once if its nodes are free
  (SchedSubmit).
* **Main scheduler** (`_schedule`): pending jobs in priority order; a job that cannot
  start fails its partition, whose nodes no later job of the pass may use. It runs when a
  job ends (the epilog, at once, `default_queue_depth` jobs deep), on the background
  thread's one-second tick when a pass was asked for and `batch_sched_delay` seconds have
  passed since its last one, and over the whole queue every `sched_interval` seconds.
* **Backfill** (sched/backfill, `_attempt_backfill`): every `bf_interval` seconds after the
  previous cycle, if anything changed since (otherwise at the first one-second poll after
  a change). Jobs in priority order, up to `bf_max_job_test` tested: each finds the
  earliest start the will-run test gives (select.py) on nodes not reserved for an
  earlier job over its whole time limit; starts now if it can, else reserves its nodes
  from that start, both rounded down to `bf_resolution`, if within `bf_window`.
* **Priorities**: priority/basic in submission order; multifactor set at submission and
  recomputed, with decayed usage and fair-share, every PriorityCalcPeriod.
* **Time limits**: checked every 30 s (PERIODIC_TIMEOUT): the engine kills a job at the
  first check at or after its limit plus OverTimeLimit (EngineOptions).

Slurm's periodic timers run from slurmctld's start, which a log does not record: option
`boot` says how many seconds before the trace's time 0 it was (default 0, or read off an
imported log's first job). Within one
second, the policy handles job ends (with their epilog pass), then submissions, then the
background tick, then a backfill cycle, or the cycle first (`backfill_after_tick`); the
decay thread's run of that second comes before, between or after those two
(`decay_order`).
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from dataclasses import dataclass, field, replace
from operator import attrgetter

from ..core.cluster import Cluster, NodePool
from ..core.cpu_nodes import CpuNodes
from ..core.decisions import Decision, Start, WakeAt
from ..core.job import Job, JobClass, JobState
from ..core.view import View
from ..policies.base import Policy, PolicyError
from . import fairshare
from .assoc import Assoc, AssocError, Associations, read_associations
from .backfill import Candidate, backfill_cycle, guesses_at, last_fit
from .conf import Partition, SlurmConf, SlurmConfError, read_slurm_conf
from .jobs import AFTERNOTOK, AFTEROK, SlurmJob, default_job
from .priority import PriorityModel
from .qos import QosError, read_qos
from .select import Nodes, Placement, Request, Running, by_end_then_submission

YEAR = 365 * 86400.0


_EPS = 1e-9  # s: instants closer than this are one


def _by_end(run: Running) -> float:
    return run.end


def guess_job_end(conf: SlurmConf, sj: SlurmJob, end: float, now: float) -> float:
    """When a running job with expected end `end` is thought to end once that has
    passed (backfill's and the will-run test's `_guess_job_end`): its end plus KillWait,
    plus its partition's (else the cluster's) OverTimeLimit; with an unlimited
    OverTimeLimit, its time limit from now; never before the next second."""
    over = conf.partitions[sj.partition].over_time_limit
    over = conf.over_time_limit if over is None else over
    if over == 0:
        guess = end + conf.kill_wait
    elif over == math.inf:
        guess = now + (sj.time_limit if sj.time_limit != math.inf else YEAR)
    else:
        guess = end + conf.kill_wait + over * 60
    return guess if guess > now else now + 1


# Enum members read once: each JobState.X is a call of the enum metaclass's __getattr__
# (~0.1 us), and these tests run for every running and every pending job at every instant.
_RUNNING, _CHECKPOINTING = JobState.RUNNING, JobState.CHECKPOINTING
_CANCELLED = JobState.CANCELLED

PERIODIC_TIMEOUT = 30.0  # slurmctld.h: time limits are checked this often (s)
_SUBMIT, _MAIN, _BACKFILL = "submit", "main", "backfill"


@dataclass(frozen=True)
class SlurmOptions:
    conf: str = field(default="", metadata={
        "help": "slurm.conf to schedule by (schedd simulate --slurm-conf sets it)"})
    assoc: str = field(default="", metadata={
        "help": "sacctmgr --parsable2 show associations output: accounts, users, shares"})
    qos: str = field(default="", metadata={
        "help": "sacctmgr --parsable2 show qos output: the QOS priorities"})
    interactive: bool = field(default=False, metadata={
        "help": "jobs are interactive allocations (salloc, srun): one with the top "
                "priority starts at its submission if its nodes are free (sbatch jobs "
                "never do)"})
    epilog: float = field(default=0.0, metadata={
        "help": "seconds from a job's end to its nodes' release when the epilog-complete "
                "message brings them back and runs the main scheduler: a job killed at its "
                "limit or cancelled, or every job where slurm.conf has an Epilog script (its "
                "run time); a job that exits by itself without one frees its nodes at once "
                "(docs/slurm.md, What runs when)"})
    epoch: float = field(default=0.0, metadata={
        "help": "Unix time of the trace's time 0 (its UnixStartTime; simulate sets it): "
                "Slurm rounds backfill times to multiples of Unix time"})
    bf_phase: float = field(default=-1.0, metadata={
        "help": "seconds past a multiple of bf_interval (from time 0) at which backfill "
                "cycles fall while there is work (-1: from boot; simulate infers it from "
                "an imported log's backfilled starts)"})
    planned_nodes: bool = field(default=True, metadata={
        "help": "a backfill cycle that reserves nodes with CPUs free marks them PLANNED "
                "and the next cycle clears them, each an update of the nodes, so the "
                "cycles after it run in full though nothing else changed (Slurm 22.05's "
                "_handle_planned; false: such cycles are taken to start nothing, the "
                "model before 2026-11-29 evening)"})
    submit_after_backfill: float = field(default=-1.0, metadata={
        "help": "1: submissions come after the backfill cycle of their second, which sees "
                "them only in the next; 0: before it (-1: simulate reads it off an imported "
                "log's backfilled starts, else 0)"})
    submit_after_tick: float = field(default=-1.0, metadata={
        "help": "1: submissions come after the background thread's tick of their second "
                "too: nothing sees them before the next second; 0: before it (-1: simulate "
                "reads it off an imported log's main-scheduler starts, else 0)"})
    backfill_after_tick: float = field(default=-1.0, metadata={
        "help": "1: backfill cycles come later in the second than the background "
                "thread's tick, so a job a cycle started ends after the tick of its last "
                "second, which sees it only a second later; 0: earlier, so a cycle sees "
                "none of its own second's ends, which the tick sees (-1: neither said: "
                "the tick first, a cycle's jobs ending before the tick; simulate reads it "
                "off an imported log: the submissions' place between the two, else the "
                "order under which its first jobs start as they did; docs/slurm.md, What "
                "runs when)"})
    check_phase: float = field(default=-1.0, metadata={
        "help": "seconds past a multiple of 30 s at which time limits are checked (-1: from "
                "boot; simulate infers it from an imported log's time-outs)"})
    decay_phase: float = field(default=-1.0, metadata={
        "help": "seconds past a multiple of PriorityCalcPeriod (from time 0) at which the "
                "decay thread recomputes priorities (-1: from boot; simulate reads it off "
                "an imported priority/multifactor log: the second under which its first "
                "jobs start as they did)"})
    decay_order: float = field(default=-1.0, metadata={
        "help": "how many of its second's two timers (the backfill cycle, the background "
                "thread's tick) come before the decay thread's run in that second: 0, 1 "
                "(between them) or 2 (after both; the ends and submissions of the second "
                "too). Its instant in the second is slurmctld's start, theirs drift (-1: 2; "
                "simulate reads it off an imported log under priority/multifactor, the "
                "position under which its first jobs start as they did; docs/slurm.md, "
                "What runs when)"})
    tick_drift: float = field(default=0.0013, metadata={
        "help": "seconds the background thread's one-second loop runs late each second "
                "(ten 100 ms sleeps and its own work; 1.1-1.5 ms in the reference runs' "
                "logs): with `launch`, whether a job it started ends before or after its "
                "tick of the job's last second"})
    launch: float = field(default=0.03, metadata={
        "help": "seconds from a job's allocation to its processes' start (15-50 ms in the "
                "reference runs' logs): a job the background thread started ends this "
                "long past the phase its tick had then, so one shorter than launch / "
                "tick_drift ends after the tick of its last second, which sees it only "
                "a second later (docs/slurm.md, What runs when; 0: every end comes "
                "before the tick of its second, the model before 2026-11-29)"})
    check_message_lag: float = field(default=0.03, metadata={
        "help": "seconds from the time-limit check's kill, at the background thread's "
                "tick, to the epilog-complete message whose main pass starts jobs on the "
                "freed nodes (25-101 ms, median 31, in the reference runs' timelines): "
                "such a job ends `launch` plus this past that tick's phase, as one the "
                "tick started ends `launch` past it (-1: taken as before the tick of its "
                "last second, the model before 2026-11-29 evening)"})
    boot: float = field(default=-1.0, metadata={
        "help": "seconds before time 0 at which slurmctld started: the phase of its "
                "periodic timers (background passes, decay, time-limit checks, backfill) "
                "(-1: simulate reads it off an imported log's first job — started at once "
                "by the main scheduler: a controller long up, 600 — else 0)"})


def default_conf(cluster: Cluster) -> SlurmConf:
    """Slurm's defaults on a machine that has no slurm.conf: its nodes in one partition."""
    if isinstance(cluster, CpuNodes):
        cpus, names = cluster.cpus, cluster.node_names
    else:
        cpus = (1,) * cluster.total_nodes
        names = tuple(f"n{i + 1}" for i in range(cluster.total_nodes))
    nodes = tuple(range(len(cpus)))
    return SlurmConf("(defaults)", names, tuple(cpus),
                     (Partition("batch", nodes, default=True),), cluster_name=cluster.name)


class _Pending:
    __slots__ = ("id", "job", "sj", "assoc", "_prio", "eligible", "never", "seq", "req",
                 "tested", "tier", "order", "cand")

    def __init__(self, job: Job, sj: SlurmJob, assoc: Assoc | None, seq: int, tier: int):
        self.id = job.id
        self.job = job
        self.sj = sj
        self.assoc = assoc
        self.req = SlurmPolicy._request(sj)
        self.tested = False  # a backfill cycle tried to place it (Slurm's total_cpus set)
        self.tier = tier  # its partition's PriorityTier
        self.eligible: float | None = None  # when it became eligible (begin time)
        self.never = False  # its dependency can never be met
        self.seq = seq
        self.prio = 0
        self.cand: Candidate | None = None  # as backfill sees it, made at its first cycle

    @property
    def prio(self) -> int:
        return self._prio

    @prio.setter
    def prio(self, value: int) -> None:
        # Slurm's queue order (sort_job_queue2), kept with the priority it depends on:
        # the queue is sorted at every pass, and a key built per job per pass was most of
        # a long trace's sorting time.
        self._prio = value
        self.order = (-self.tier, -value, self.job.submit, self.id)


class _Run:
    __slots__ = ("id", "seq", "job", "sj", "assoc", "at", "start", "end", "view", "by_tick",
                 "lag")

    def __init__(self, p: _Pending, at: Placement, start: float):
        self.id = p.id
        self.seq = p.seq  # submission order: breaks ties of end in the will-run test
        self.job = p.job
        self.sj = p.sj
        self.assoc = p.assoc
        self.at = at
        self.start = start
        limit = p.sj.time_limit if p.sj.time_limit != math.inf else YEAR
        self.end = start + limit  # Slurm's end_time
        self.view: Running | None = None  # as the will-run test sees it, while running
        self.by_tick = False  # started by a main pass of the background thread
        self.lag = 0.0  # ... or that long after its tick (`check_message_lag`)


class SlurmPolicy(Policy):
    name = "slurm"
    summary = ("Slurm 22.05 from its slurm.conf: priority/basic or multifactor with Fair "
               "Tree fair-share, the main scheduler and sched/backfill (docs/slurm.md)")
    Options = SlurmOptions
    processes_eccs = False
    # Tests' reference: every backfill cycle built and run in full, no shortcut taken.
    exhaustive_backfill = False
    # Tests: compute every cycle of a chain of PLANNED updates, not only those from
    # `_recheck` on (the reference for that shortcut).
    exhaustive_chain = False
    # Set to a list, every backfill reservation: (cycle, job, expected start, node mask),
    # as Slurm's DebugFlags=Backfill logs them (bench/slurm_reservations.py).
    plans: list[tuple[float, int, float, int]] | None = None

    def __init__(self, options: SlurmOptions, cluster: Cluster):
        super().__init__(options, cluster)
        self.conf: SlurmConf | None = None
        self.assocs: Associations | None = None
        self.table: dict[int, SlurmJob] = {}
        self.started_by: dict[int, str] = {}
        self.watched: set[int] = set()  # jobs some job depends on
        self.counts = {_SUBMIT: 0, _MAIN: 0, _BACKFILL: 0, "main_passes": 0,
                       "backfill_cycles": 0, "decay_runs": 0}

    # -- configuration -------------------------------------------------------------
    def configure(self, conf: SlurmConf, assocs: Associations | None = None,
                  table: dict[int, SlurmJob] | None = None,
                  epoch: float | None = None, qos: dict[str, int] | None = None,
                  **phases: float) -> None:
        """Schedule by `conf` with `assocs`, knowing the trace's jobs `table`; `epoch` (the
        trace's UnixStartTime) unless option `epoch` was given; `phases` (bf_phase,
        check_phase) read off the trace where the options leave them unset."""
        if epoch is not None and not self.options.epoch:
            self.options = replace(self.options, epoch=float(epoch))
        if phases:
            self.options = replace(self.options, **phases)
        self.conf = conf
        self.qos = qos
        self.assocs = assocs if assocs is not None else Associations.flat()
        if table is not None:
            self.table = table
        self._setup()
        self.watched = {sj.dep_on for sj in self.table.values() if sj.dep_kind}

    def _load(self) -> None:
        """The slurm.conf named by option `conf`, or, without one, Slurm's defaults on this
        machine: one partition of every node, sched/backfill, priority/basic."""
        opts = self.options
        try:
            conf = read_slurm_conf(opts.conf) if opts.conf else default_conf(self.cluster)
            assocs = read_associations(opts.assoc) if opts.assoc else None
            qos = read_qos(opts.qos) if opts.qos else None
        except (SlurmConfError, AssocError, QosError) as err:
            raise PolicyError(str(err)) from None
        self.configure(conf, assocs, qos=qos)

    def _setup(self) -> None:
        conf = self.conf
        assert conf is not None
        cluster = self.cluster
        if isinstance(cluster, CpuNodes):
            if tuple(cluster.cpus) != tuple(conf.node_cpus):
                raise PolicyError(f"policy slurm: the machine ({cluster.describe()}) is not "
                                  f"the one {conf.path} describes")
            self.placed = True
        elif isinstance(cluster, NodePool) and set(conf.node_cpus) == {1} \
                and len(conf.node_cpus) == cluster.total_nodes:
            self.placed = False  # a node pool takes a count: one CPU per node
        else:
            raise PolicyError(f"policy slurm runs on a node pool or the machine of a "
                              f"slurm.conf (--slurm-conf), not on {cluster.name}")
        self.sched = conf.sched
        self.prio_model = PriorityModel(conf, getattr(self, "qos", None))
        self.nodes = Nodes(list(conf.node_cpus))
        self.all_mask = (1 << len(conf.node_cpus)) - 1
        self.part_masks = []
        for part in conf.partitions:
            mask = 0
            for node in part.nodes:
                mask |= 1 << node
            self.part_masks.append(mask)
        self.pending: dict[int, _Pending] = {}
        self.running: dict[int, _Run] = {}
        self.not_before: dict[int, _Pending] = {}  # waiting for their begin time
        self.started_now = 0  # jobs started in this instant (still in the engine's queue)
        # Jobs that ended, holding their nodes until their epilog completes: (release
        # instant, end instant, job, whether the agent frees them and only queues a pass).
        self.releasing: list[tuple[float, float, _Run, bool]] = []
        # Jobs the background thread started that end, in this instant, after its tick
        # of this second (see `_ends_after_the_tick`): released once the tick has run.
        self.after_tick: list[tuple[float, float, _Run, bool]] = []
        self.in_tick = False  # a main pass of the background thread is running
        # The epilog-complete message being handled is that of a job the time-limit check
        # killed at the background thread's tick: its pass runs a fixed lag after the tick.
        self.check_message = False
        # Running jobs as the will-run test sees them, in order of expected end: kept as
        # jobs start and end where each one's guessed end is fixed (a finite
        # OverTimeLimit everywhere), rebuilt at every backfill cycle otherwise.
        self.views: list[Running] = []
        self.static_guess = conf.over_time_limit != math.inf and all(
            part.over_time_limit != math.inf for part in conf.partitions)
        self.epilog = float(self.options.epilog)
        self.finished: dict[int, tuple[JobState, float]] = {}  # dependency targets
        # Dependency targets that ended but whose nodes are not yet released: still
        # COMPLETING, which IS_JOB_COMPLETED excludes (job_scheduler.c
        # `_test_job_dependency_common`), so their dependants wait for the epilog.
        self.completing: dict[int, JobState] = {}
        self.next_submission: float | None = None  # a late submission's turn
        self.last_seen: tuple[float, int] = (-math.inf, -1)
        self.seq = 0
        # The controller has been up since before time 0: its threads are in their
        # steady state, their periodic timers in phase with `boot` seconds before it.
        phase = -self.boot
        # Background thread: pass requests, its last pass, its last full pass.
        self.sched_requests = 0
        # It starts with its last pass at its own start (`boot` s before time 0): with
        # boot 0, a job submitted at time 0 waits batch_sched_delay for the main
        # scheduler, and backfill's first cycle may start it first (as in the reference
        # runs, whose first jobs Slurm's backfill started).
        self.last_sched = phase
        interval = conf.sched.sched_interval
        self.last_full = (phase - interval * math.ceil(phase / interval)
                          if interval > 0 else -math.inf)  # the last full pass <= 0
        self.main_dirty = False
        # Backfill agent: its last cycle, the first update since, and whether anything
        # changed since the last cycle we computed.
        # The agent's cycles fall at bf_phase + k x bf_interval while there is work:
        # its last cycle before time 0 was one interval before the first such instant.
        bf = conf.sched.bf_interval
        bf_phase = self.options.bf_phase if self.options.bf_phase >= 0 else phase % bf
        self.bf_last = bf_phase % bf - bf
        self.bf_update: float | None = None
        self.bf_changed = False
        self.bf_estimates = False
        # The last cycle reserved nodes with CPUs free when it ended: _handle_planned
        # marked them PLANNED (an update of the nodes), and the next cycle clears them.
        self.bf_planned = False
        # Cycles with no news that Slurm runs in full for those updates (`planned_nodes`):
        # they repeat the last computed cycle until `bf_recheck`, when `now` itself could
        # change its answer; the chain ends after the slot at `bf_chain_until`.
        self.bf_chain = False
        self.bf_recheck = math.inf
        self.bf_chain_until = math.inf
        self.last_change = -math.inf  # the latest update (Slurm's last_job_update)
        # Decay thread (multifactor): runs at phase + k x PriorityCalcPeriod.
        self.multifactor = conf.priority.multifactor
        self.decay_f = fairshare.decay_factor(conf.priority.decay_half_life)
        self.calc = max(conf.priority.calc_period, 1.0)
        decay_phase = (self.options.decay_phase if self.options.decay_phase >= 0
                       else phase % self.calc)
        self.next_decay = decay_phase % self.calc
        self.g_last_ran = self.next_decay - self.calc
        self.fair_tree = conf.priority.fair_tree
        self.fs_stale = False  # usage charged since the last ranking
        self._recompute_fairshare()

    @property
    def boot(self) -> float:
        """Seconds before time 0 that slurmctld started (option boot; unset: 0)."""
        return max(float(self.options.boot), 0.0)

    def engine_overrides(self) -> dict[str, float]:
        """EngineOptions this policy needs: time limits enforced as slurmctld does."""
        conf = self.conf
        assert conf is not None
        grace = conf.over_time_limit * 60.0 if conf.over_time_limit != math.inf else YEAR
        return {"walltime_check_s": PERIODIC_TIMEOUT,
                "walltime_check_phase_s": (self.options.check_phase
                                           if self.options.check_phase >= 0
                                           else -self.boot),
                "walltime_grace_s": grace}

    def stats(self) -> dict[str, int]:
        return dict(self.counts)

    # -- one instant -------------------------------------------------------------------
    def schedule(self, view: View) -> list[Decision]:
        if self.conf is None:
            self._load()
        now = view.now
        decisions: list[Decision] = []
        self.started_now = 0
        self._catch_up_backfill(now)
        self._background_catch_up(now)
        # The decay runs due before this second; its own second's run comes after as many
        # of the second's timers as `decay_order` says.
        self._run_decay(now, before=self.decay_after > 0)
        if self.sched.backfill and self.options.backfill_after_tick == 0:
            return self._cycle_first(view, now, decisions)
        # Within one second, submissions are seen before the epilog pass of a job ending in
        # it: a submission's second begins with it more often than not (sbatch at whole
        # seconds; in the reference runs' logs 252 submissions preceded a job's completion
        # in the same second and 15 followed it).
        ended = self._observe_ends(now)
        cancelled = self._observe_cancellations()
        submitted = self._observe_submissions(view, now)
        if ended or cancelled or submitted:
            self._update(now)
        self._begin_times(now)
        for run in ended:
            self._job_ended(run, now)
        self._epilog_pass(now, decisions)
        for p in submitted:
            self._submitted(p, now, decisions)
        self._tick(now, decisions)
        if self.decay_after == 1 or not self.sched.backfill:
            self._run_decay(now)
        if self.options.submit_after_tick > 0 and self.options.submit_after_backfill <= 0:
            # Submissions between the tick and the backfill cycle: the cycle sees them.
            between = self._observe_submissions(view, now, after_tick=True)
            if between:
                self._update(now)
                self._begin_times(now)
                for p in between:
                    self._submitted(p, now, decisions)
        if self.sched.backfill:
            self._maybe_backfill(now, decisions)
            self._run_decay(now)
        self._wake(now, decisions)
        return decisions

    def _cycle_first(self, view: View, now: float, decisions: list[Decision]
                     ) -> list[Decision]:
        """A second whose backfill cycle comes before the background thread's tick
        (`backfill_after_tick` 0): the cycle sees the submissions (those of this second
        only where they come before it, `submit_after_backfill`) but none of this
        second's ends — a job a cycle started ends `launch` past a cycle's phase, one a
        tick started `launch` past a tick's, both after this cycle — and then the ends
        are given back as in `schedule`, before or after the tick."""
        submitted = self._observe_submissions(view, now)
        cancelled = self._observe_cancellations()
        if submitted or cancelled:
            self._update(now)
        self._begin_times(now)
        for p in submitted:
            self._submitted(p, now, decisions)
        self._maybe_backfill(now, decisions)
        if self.decay_after == 1:
            self._run_decay(now)
        # Jobs the cycle just started are not running in the engine yet: not ends.
        started = {d.job_id for d in decisions if isinstance(d, Start)}
        ended = self._observe_ends(now, started)
        if ended:
            self._update(now)
            self._begin_times(now)
        for run in ended:
            self._job_ended(run, now)
        self._epilog_pass(now, decisions)
        self._tick(now, decisions)
        self._run_decay(now)
        self._wake(now, decisions)
        return decisions

    def _epilog_pass(self, now: float, decisions: list[Decision]) -> None:
        """Nodes whose epilog is done come back; the epilog-complete message runs the
        main scheduler (deferred: asks the background thread for a pass)."""
        released, killed = self._release(now)
        if released and not self.sched.defer:
            self.check_message = killed and self.options.check_message_lag >= 0
            try:
                self._main_pass(now, False, decisions)  # the epilog's schedule()
            finally:
                self.check_message = False
        elif released:
            self.sched_requests += 1

    def _tick(self, now: float, decisions: list[Decision]) -> None:
        """The background thread's tick, then the ends that came after it."""
        self._background(now, decisions)
        if self.after_tick:
            late, self.after_tick = self.after_tick, []
            self._give_back(late, now)

    # -- what happened since the last instant -------------------------------------------
    def _observe_ends(self, now: float, fresh: set[int] | None = None) -> list[_Run]:
        """Running jobs the engine has ended, but for `fresh` (started in this instant,
        not yet running in the engine)."""
        out = []
        for run in list(self.running.values()):
            state = run.job.state
            if state is _RUNNING or state is _CHECKPOINTING or (fresh and run.id in fresh):
                continue
            del self.running[run.id]
            if run.view is not None:
                self._drop_view(run.view)
            # A batch script that exited by itself leaves no step to kill: without an
            # Epilog script slurmd answers the terminate request ALREADY_COMPLETE and
            # slurmctld's agent marks the nodes idle at once (agent.c; 2-7 ms in the
            # harness's logs), queueing a pass for the background thread instead of
            # running one. A killed job's, or any job's with an Epilog script, come back
            # with the epilog-complete message, which runs the main scheduler.
            by_agent = (state is JobState.COMPLETED
                        and not self.conf.epilog_script)  # type: ignore[union-attr]
            if by_agent and self._ends_after_the_tick(run, now):
                self.after_tick.append((now, now, run, True))
            else:
                self.releasing.append((now if by_agent else now + self.epilog, now, run,
                                       by_agent))
            out.append(run)
        return out

    def _ends_after_the_tick(self, run: _Run, now: float) -> bool:
        """Whether a job ending now ends after the background thread's tick of this
        second. The thread loops on ten 100 ms sleeps plus its work, so its tick comes
        `tick_drift` later each second; a job one of its passes started ends `launch`
        past that pass's phase (its processes start that long after the allocation).
        So a short job ends just after the tick of its last second, a long one before.
        A job a backfill cycle started ends `launch` past that cycle's phase: after the
        tick where the cycles come later in the second (`backfill_after_tick`), else
        taken as before it."""
        opts = self.options
        if run.by_tick:
            return (opts.launch > 0
                    and opts.launch + run.lag > opts.tick_drift * (now - run.start))
        return opts.backfill_after_tick > 0 and self.started_by.get(run.id) == _BACKFILL

    def _release(self, now: float) -> tuple[bool, bool]:
        """Give back the nodes of jobs whose epilog is done by now (job_epilog_complete);
        whether one came with the epilog-complete message, which runs the main scheduler
        (the agent's releases only queue a pass for the background thread), and whether
        one such was of a job the time-limit check killed (at a tick of the background
        thread: `check_message_lag`)."""
        done = [item for item in self.releasing if item[0] <= now]
        if not done:
            return False, False
        self.releasing = [item for item in self.releasing if item[0] > now]
        killed = any(not by_agent and run.job.state is JobState.KILLED
                     for _, _, run, by_agent in done)
        return self._give_back(done, now), killed

    def _give_back(self, done: list[tuple[float, float, _Run, bool]], now: float) -> bool:
        by_message = False
        for _, _, run, by_agent in done:
            self.nodes.give(run.at)
            state = self.completing.pop(run.id, None)
            if state is not None:
                self.finished[run.id] = (state, now)
            if by_agent:
                self.sched_requests += 1  # queue_job_scheduler()
            else:
                by_message = True
        self._update(now)
        return by_message

    def _observe_submissions(self, view: View, now: float,
                             after_tick: bool = False) -> list[_Pending]:
        """The jobs submitted since the last look, as pending jobs. With submissions
        after the tick (`submit_after_tick`), this second's are left for the look after
        the tick (`after_tick`) where the backfill cycle comes after them
        (`submit_after_backfill` 0), else for the next second."""
        queue = view.queue
        new: list[Job] = []
        last = self.last_seen
        for i in range(len(queue) - 1, -1, -1):
            job = queue[i]
            key = (job.submit, job.id)
            if key <= last:
                break
            if job.id not in self.pending and job.id not in self.running:
                new.append(job)
        if len(queue) != len(self.pending) + len(new) + self.started_now:
            # A job arrived out of submit order (a late gRPC submission): look at all.
            # (Jobs started earlier in this instant are still in the engine's queue.)
            new = [job for job in queue
                   if job.id not in self.pending and job.id not in self.running]
            new.reverse()
        if not new:
            return []
        new.reverse()
        if self.options.submit_after_tick > 0 and not after_tick:
            # Seen in the second after the submission's (its own came after the cycle
            # and the tick), or after this second's tick; the rest wait for their turn
            # (_wake).
            due = [job for job in new if job.submit + 1.0 <= now + _EPS]
            self.next_submission = min((job.submit + 1.0 for job in new
                                        if job.submit + 1.0 > now + _EPS), default=None)
            new = due
            if not new:
                return []
        elif after_tick:
            self.next_submission = None  # every one is seen now
        self.last_seen = max(last, max((job.submit, job.id) for job in new))
        out = []
        for job in new:
            sj = self.table.get(job.id)
            if sj is None:
                sj = default_job(self.conf, job.nodes, job.walltime,  # type: ignore[arg-type]
                                 job.user, str(job.project) if job.project >= 0 else "",
                                 job.queue)
            assoc = self._assoc_of(sj)
            self.seq += 1
            p = _Pending(job, sj, assoc, self.seq,
                         self.conf.partitions[sj.partition].priority_tier)  # type: ignore[union-attr]
            p.prio = self._set_priority(p, now, True)  # set_job_prio, at its creation
            self.pending[job.id] = p
            if sj.dep_kind and sj.dep_on >= 0:
                self.watched.add(sj.dep_on)
            out.append(p)
        return out

    def _observe_cancellations(self) -> bool:
        gone = [p for p in self.pending.values() if p.job.state is _CANCELLED]
        for p in gone:
            del self.pending[p.id]
            if p.id in self.watched:
                self.finished[p.id] = (JobState.CANCELLED, p.job.end_time)
        return bool(gone)

    def _assoc_of(self, sj: SlurmJob) -> Assoc | None:
        assocs = self.assocs
        if assocs is None:
            return None
        account = sj.account or assocs.default_account(sj.user) or "root"
        return assocs.charged(account, sj.user)

    def _update(self, now: float) -> None:
        """Something changed (Slurm's last_job_update): the backfill agent has work."""
        if self.bf_update is None:
            self.bf_update = now
        self.bf_changed = True
        self.main_dirty = True
        self.last_change = max(self.last_change, now)

    # -- job lifecycle --------------------------------------------------------------
    def _job_ended(self, run: _Run, now: float) -> None:
        # Usage since the decay thread's last run is charged at a job's end only where
        # AccountingStorageEnforce has limits (priority_g_job_end is called from the
        # limits code); otherwise that part is never charged.
        if self.multifactor and run.assoc is not None and self.conf.enforce_limits:  # type: ignore[union-attr]
            start = max(run.start, self.g_last_ran)
            end = min(now, run.job.end_time if run.job.end_time >= 0 else now)
            fairshare.charge(run.assoc, run.sj.cpus, end - start, self.decay_f)
            self.fs_stale = True
        if run.id in self.watched:
            self.completing[run.id] = run.job.state

    def _dependency_met(self, p: _Pending, now: float) -> bool | None:
        """True when met, False while waiting, None when it never will be."""
        kind = p.sj.dep_kind
        if not kind:
            return True
        target = p.sj.dep_on
        done = self.finished.get(target)
        if done is None:  # waiting, or a job the trace does not hold: nothing to wait for
            return not (target in self.pending or target in self.running
                        or target in self.completing)
        state = done[0]
        ok = state is JobState.COMPLETED
        if kind == AFTEROK:
            return True if ok else None
        if kind == AFTERNOTOK:
            return None if ok else True
        return True  # AFTERANY

    def _runnable(self, p: _Pending, now: float) -> bool:
        """Eligible now: its begin time has come and its dependency is met (setting the
        eligible time the first time, as job_independent does)."""
        if p.never:
            return False
        if p.eligible is not None:
            return True
        if p.sj.begin > now:
            return False
        if p.job.job_class is JobClass.DEDICATED and p.job.requested_start > now:
            return False  # a dedicated job: not before its requested start (a --begin)
        met = self._dependency_met(p, now)
        if met is None:
            p.never = True
            return False
        if not met:
            return False
        p.eligible = now
        return True

    def _begin_times(self, now: float) -> None:
        """Jobs whose begin time came: the schedulers have news."""
        if not self.not_before:
            return
        for p in list(self.not_before.values()):
            if p.id not in self.pending:
                del self.not_before[p.id]
            elif self._runnable(p, now):
                del self.not_before[p.id]
                self._update(now)

    # -- priorities -----------------------------------------------------------------
    def _set_priority(self, p: _Pending, now: float, at_submit: bool) -> int:
        if not self.multifactor:
            return -p.seq  # priority/basic: each job one lower than the one before
        eligible = None if at_submit else p.eligible
        return self.prio_model.priority(p.sj, p.assoc, eligible, now)

    def _recompute_fairshare(self) -> None:
        if self.assocs is None or not self.multifactor:
            return
        if self.fair_tree:
            fairshare.fair_tree(self.assocs)
        else:
            fairshare.classic(self.assocs)

    @property
    def decay_after(self) -> int:
        """How many of its second's two timers come before the decay thread's run there
        (option decay_order; unset: 2)."""
        order = self.options.decay_order
        return 2 if order < 0 else min(int(order), 2)

    def _run_decay(self, now: float, before: bool = False) -> None:
        """The decay thread's runs due by now (`before`: before now): decay usage, charge
        running jobs, rank fair-share and recompute pending jobs' priorities
        (fair_tree_decay)."""
        if not self.multifactor:
            return
        assocs = self.assocs
        while self.next_decay < now or (self.next_decay == now and not before):
            tick = self.next_decay
            if not self.pending and not self.running and not self.fs_stale:
                # Idle runs only decay every usage alike, which leaves the ranking as it
                # is: all of them at once (f ** a x f ** b = f ** (a + b)).
                ticks = math.floor((now - tick) / self.calc)
                tick += ticks * self.calc
            self.next_decay = tick + self.calc
            delta = tick - self.g_last_ran
            if assocs is not None:
                fairshare.decay(assocs, self.decay_f, delta)
                for run in self.running.values():
                    if run.assoc is not None:
                        fairshare.charge(run.assoc, run.sj.cpus,
                                         tick - max(run.start, self.g_last_ran), self.decay_f)
            self.g_last_ran = tick
            if not self.pending and not self.running and not self.fs_stale:
                continue
            self.counts["decay_runs"] += 1
            self.fs_stale = False
            self._recompute_fairshare()
            changed = False
            for p in self.pending.values():
                self._runnable(p, tick)
                prio = self.prio_model.priority(p.sj, p.assoc, p.eligible, tick, p.tested)
                if prio != p.prio:
                    p.prio = prio
                    changed = True
            if changed:
                self._update(tick)

    # -- submission ---------------------------------------------------------------------
    def _submitted(self, p: _Pending, now: float, decisions: list[Decision]) -> None:
        self.sched_requests += 1
        self._runnable(p, now)  # eligible from now, unless it waits on a dependency
        if p.eligible is None and not p.sj.dep_kind:
            self.not_before[p.id] = p  # a begin time still to come
        # A batch job (sbatch) is never started by its submission: job_allocate tests it
        # only (allocate == 0). Interactive allocations (salloc, srun) are, when on top.
        if not self.options.interactive or self.sched.defer or p.eligible is None:
            return
        if not self._top_priority(p, now):
            return
        place = self.nodes.place(p.req, self.part_masks[p.sj.partition])
        if place is not None:
            self._start(p, place, now, _SUBMIT, decisions)

    def _top_priority(self, p: _Pending, now: float) -> bool:
        part = self.conf.partitions[p.sj.partition]  # type: ignore[union-attr]
        mask = self.part_masks[p.sj.partition]
        for q in self.pending.values():
            if q is p or not self._runnable(q, now):
                continue
            if q.sj.partition == p.sj.partition:
                if q.prio > p.prio:
                    return False
                continue
            if not self.part_masks[q.sj.partition] & mask:
                continue
            qpart = self.conf.partitions[q.sj.partition]  # type: ignore[union-attr]
            if qpart.priority_tier > part.priority_tier or (
                    qpart.priority_tier == part.priority_tier and q.prio > p.prio):
                return False
        return True

    @staticmethod
    def _request(sj: SlurmJob) -> Request:
        return Request(sj.cpus if not sj.exclusive else sj.min_nodes, sj.min_nodes,
                       sj.max_nodes, sj.exclusive)

    def _start(self, p: _Pending, at: Placement, now: float, how: str,
               decisions: list[Decision]) -> _Run:
        self.nodes.take(at)
        del self.pending[p.id]
        run = _Run(p, at, now)
        run.by_tick = self.in_tick
        if self.check_message and not self.in_tick:
            run.by_tick = True
            run.lag = self.options.check_message_lag
        self.running[p.id] = run
        if self.static_guess:
            # The guess as it stands, not yet moved past `now` (_running_view does that).
            run.view = self._running_of(run, -math.inf)
            insort(self.views, run.view, key=by_end_then_submission)
        decisions.append(Start(p.id, place=at.place(self.nodes.total)) if self.placed
                         else Start(p.id))
        self.started_by[p.id] = how
        self.started_now += 1
        self.counts[how] += 1
        self._update(now)
        return run

    # -- the main scheduler ----------------------------------------------------------
    def _queue(self, now: float) -> list[_Pending]:
        """Runnable pending jobs in Slurm's order: partition tier, priority, submit time,
        job id (sort_job_queue2)."""
        parts = self.conf.partitions  # type: ignore[union-attr]
        runnable = self._runnable
        ready = [p for p in self.pending.values()
                 if (p.eligible is not None or runnable(p, now)) and parts[p.sj.partition].up]
        ready.sort(key=attrgetter("order"))  # each job's, kept with its priority
        return ready

    def _main_pass(self, now: float, full: bool, decisions: list[Decision]) -> None:
        self.counts["main_passes"] += 1
        sched = self.sched
        avail = self.all_mask
        failed: set[int] = set()
        depth = 0
        started = 0
        part_jobs: dict[int, int] = {}
        for p in self._queue(now):
            if sched.sched_max_job_start and started >= sched.sched_max_job_start:
                break
            part = p.sj.partition
            if sched.partition_job_depth:
                part_jobs[part] = part_jobs.get(part, 0) + 1
                if part_jobs[part] > sched.partition_job_depth:
                    continue
            if not full:
                if depth > sched.default_queue_depth:
                    break
                depth += 1
            if part in failed:
                continue
            usable = avail & self.part_masks[part]
            place = None
            if usable.bit_count() >= p.sj.min_nodes:
                place = self.nodes.place(p.req, usable)
            if place is not None:
                self._start(p, place, now, _MAIN, decisions)
                started += 1
                continue
            # The job cannot start: no later job may use this partition's nodes.
            failed.add(part)
            avail &= ~self.part_masks[part]
            if not avail:
                break  # no node left to any later job (every job asks for one at least)
        self.main_dirty = False

    def _background_catch_up(self, now: float) -> None:
        """The full passes the background thread ran before `now`, none of which we needed
        to compute (nothing had changed since the last): their times still count. Called
        before this instant's own requests are noted."""
        interval = self.sched.sched_interval
        if interval > 0 and self.last_full + interval < now:
            passes = math.ceil((now - self.last_full) / interval) - 1
            self.last_full += passes * interval
            self.last_sched = max(self.last_sched, self.last_full)
            self.sched_requests = 0

    def _background(self, now: float, decisions: list[Decision]) -> None:
        """The background thread's tick at `now`."""
        interval = self.sched.sched_interval
        if interval > 0 and self.last_full + interval <= now:
            self.last_full += interval
            self.last_sched = now
            requested = self.sched_requests
            self.sched_requests = 0
            if self.main_dirty or requested:
                self._tick_pass(now, True, decisions)
            return
        if self.sched_requests and now - self.last_sched >= self.sched.batch_sched_delay:
            self.sched_requests = 0
            self.last_sched = now
            self._tick_pass(now, False, decisions)

    def _tick_pass(self, now: float, full: bool, decisions: list[Decision]) -> None:
        self.in_tick = True
        try:
            self._main_pass(now, full, decisions)
        finally:
            self.in_tick = False

    # -- backfill ---------------------------------------------------------------------
    def _bf_next(self) -> float | None:
        """The agent's next cycle: bf_interval after its last, or, for news that came
        later, the first of its one-second polls after them (backfill_agent's
        short_sleep), so its cycles keep their phase within the second."""
        if self.bf_update is None:
            return None
        due = self.bf_last + self.sched.bf_interval
        if self.bf_update <= due + _EPS:
            return due
        return due + math.ceil(self.bf_update - due - _EPS)

    def _catch_up_backfill(self, now: float) -> None:
        """Cycles the agent ran before `now` with nothing new to find: keep their times."""
        interval = self.sched.bf_interval
        while True:
            nxt = self._bf_next()
            if nxt is None or nxt >= now - _EPS:
                return
            if self.bf_changed:
                return  # a cycle with news before now would have been computed
            if self.bf_estimates:
                # It sets the same estimates again (an update): one per interval. At
                # least one step, whatever rounding does to fractional times (an
                # `epilog` of 0.7 s): each turn moves the agent's clock forward.
                # The slots strictly before `now`: a slot at `now` itself is this
                # instant's, to run with its news. (An absolute epsilon vanishes at a
                # long trace's times: 1e-9 is below the float spacing past 2**23 s.)
                q = (now - nxt) / interval
                whole = round(q)
                steps = max(0, whole - 1 if abs(q - whole) < 1e-9 else math.floor(q))
                self.bf_last = nxt + steps * interval
                self.bf_update = self.bf_last
            else:
                self.bf_last = nxt
                self.bf_update = None

    def _maybe_backfill(self, now: float, decisions: list[Decision]) -> None:
        nxt = self._bf_next()
        if nxt is None or nxt > now:
            return
        if not self.bf_changed:
            slot = self._chain_slot() if self.bf_chain else None
            if slot is None or slot > now + _EPS:
                self._catch_up_backfill(now + 1)
                return
            # The cycles before this slot repeated the last computed one: their times.
            self.bf_last = slot - self.sched.bf_interval
        self._backfill(now, decisions)

    def _backfill(self, now: float, decisions: list[Decision]) -> None:
        self.counts["backfill_cycles"] += 1
        sched = self.sched
        conf = self.conf
        assert conf is not None
        self.bf_last = now
        self.bf_update = None
        self.bf_changed = False
        # _handle_planned(false): the nodes the last cycle left PLANNED are cleared, an
        # update in this cycle's second.
        cleared, self.bf_planned = self.bf_planned, False
        queue = self._queue(now)
        if self.options.submit_after_backfill > 0:
            # Submitted in this second, after this cycle: the next one sees them.
            queue = [p for p in queue if p.job.submit + 1.0 <= now + _EPS]
        # Each job's candidate is made once (its nodes, limit and request do not change);
        # only whether it may reserve depends on the cycle.
        max_test = sched.bf_max_job_test
        reserve_rules = bool(sched.bf_min_prio_reserve or sched.bf_min_age_reserve)
        candidates = []
        for i, p in enumerate(queue):
            if i < max_test:
                p.tested = True
            cand = p.cand
            if cand is None:
                sj = p.sj
                limit = min(sj.time_limit, conf.partitions[sj.partition].max_time)
                cand = p.cand = Candidate(p.id, self.part_masks[sj.partition],
                                          YEAR if limit == math.inf else limit, p.req, False)
            if reserve_rules:
                cand.no_reserve = self._no_reserve(p, now)
            candidates.append(cand)
        # backfill_cycle's first test, made here before the running jobs are built: only
        # a job that fits its partition's free CPUs now can start, the jobs after the last
        # such one only get expected starts, which nothing keeps, and most cycles of a
        # long trace have no such job at all.
        last = (len(candidates) - 1 if self.exhaustive_backfill
                else last_fit(candidates, self.nodes))
        if last < 0:
            # No job can start until something changes, in this cycle or any after it
            # with no news, whatever it plans: its nodes are not followed.
            self._after_cycle(now, bool(queue), False)
            return
        del candidates[last + 1:]

        def start(job: Candidate, at: Placement) -> Running:
            run = self._start(self.pending[job.id], at, now, _BACKFILL, decisions)
            return self._running_of(run, now)

        running = self._running_view(now)
        estimates, _, planned, recheck = backfill_cycle(
            now, candidates, self.nodes, running, self.all_mask,
            max(sched.bf_resolution, 1), float(sched.bf_window), sched.bf_max_job_test,
            sched.bf_max_job_start, sched.bf_window_scale, float(self.options.epoch), start,
            len(queue) > last + 1, self.exhaustive_backfill, self.plans)
        # _handle_planned(true): reserved nodes not wholly allocated become PLANNED.
        self.bf_planned = bool(planned & self.nodes.some)
        self._after_cycle(now, estimates, cleared or self.bf_planned)
        if self.bf_chain:
            self.bf_recheck = self._recheck(now, recheck, running, reserve_rules)
            # Only the clearing of the last cycle's PLANNED nodes: one more cycle.
            self.bf_chain_until = (math.inf if self.bf_planned
                                   else now + sched.bf_interval)

    def _after_cycle(self, now: float, estimates: bool, node_update: bool) -> None:
        """`node_update`: the cycle changed nodes' PLANNED flags (last_node_update), in
        its own second, so the next cycle has work (`_more_work`): Slurm runs it in full
        though nothing else changed (`bf_chain`)."""
        self.bf_estimates = estimates
        self.bf_chain = node_update and self.options.planned_nodes
        if self.bf_chain and self.bf_update is None:
            self.bf_update = now
        # _more_work compares whole seconds (last_job_update >= last_backfill_time): an
        # update in the cycle's own second, even one the cycle has seen, is work for the
        # next cycle.
        if estimates:
            self.bf_update = now
        if math.floor(self.last_change) >= math.floor(now):
            self.bf_update = now if self.bf_update is None else self.bf_update
            self.bf_changed = True

    def _recheck(self, now: float, first: float, running: list[Running],
                 reserve_rules: bool) -> float:
        """The earliest time at which a cycle with nothing changed but `now` could answer
        otherwise than the one just run at `now`: `first` (backfill_cycle's, from its
        reservations and node-space map), and the first expected or guessed end of a
        running job (the will-run test releases a job at its expected end until that has
        passed, then at its guess, and moves a passed guess to the next second). Every
        slot where guesses or reservation rules move with `now` (an unlimited
        OverTimeLimit, bf_min_age_reserve, bf_min_prio_reserve)."""
        if not self.static_guess or reserve_rules or self.exhaustive_chain:
            return now
        t = first
        for run in running:  # a release steps at its end until then, at its guess after
            if now < run.end < t:
                t = run.end
            if run.guess < t:
                t = run.guess
        return t

    def _chain_slot(self) -> float | None:
        """The agent's first cycle slot at or after `bf_recheck`, while the chain of
        PLANNED updates lasts (None after it)."""
        interval = self.sched.bf_interval
        k = max(1, math.ceil((self.bf_recheck - self.bf_last) / interval - _EPS))
        slot = self.bf_last + k * interval
        return slot if slot <= self.bf_chain_until + _EPS else None

    def _no_reserve(self, p: _Pending, now: float) -> bool:
        sched = self.sched
        if sched.bf_min_prio_reserve and p.prio < sched.bf_min_prio_reserve:
            return True
        return bool(sched.bf_min_age_reserve and p.eligible is not None
                    and now - p.eligible < sched.bf_min_age_reserve)

    def _running_view(self, now: float) -> list[Running]:
        """Running jobs in order of expected end, then submission (the will-run test's
        order), and jobs that ended but hold their nodes until their epilog completes:
        cons_common's `_will_run_test` releases those "cleaning" jobs too, at
        `_guess_job_end` of their real end. Without them a job waiting for their nodes
        could get no expected start, and backfill would start others on the nodes it
        waits for."""
        if not self.static_guess:
            out = [self._running_of(run, now) for run in self.running.values()]
            out += [self._running_of(run, now, ended)
                    for _, ended, run, _ in self.releasing]
            out.sort(key=by_end_then_submission)
            return out
        # The same list from the views kept in that order since each start, a guess that
        # has passed moved to the next second, and the completing jobs among them.
        out = guesses_at(self.views, now)
        for _, ended, run, _ in self.releasing:
            insort(out, self._running_of(run, now, ended), key=by_end_then_submission)
        return out

    def _drop_view(self, view: Running) -> None:
        views = self.views
        i = bisect_left(views, view.end, key=_by_end)
        while views[i] is not view:
            i += 1
        del views[i]

    def _running_of(self, run: _Run, now: float, ended: float | None = None) -> Running:
        conf = self.conf
        assert conf is not None
        # A completing job's end_time is its real end (`ended`), else start + limit.
        end = run.end if ended is None else ended
        return Running(end, run.at, guess_job_end(conf, run.sj, end, now), run.seq)

    # -- when to be called again --------------------------------------------------------
    def _wake(self, now: float, decisions: list[Decision]) -> None:
        times = []
        if self.sched.backfill and self.bf_changed:
            nxt = self._bf_next()
            if nxt is not None:
                times.append(nxt if nxt > now + _EPS else now + 1)
        elif self.sched.backfill and self.bf_chain:
            slot = self._chain_slot()
            if slot is not None:
                times.append(slot if slot > now + _EPS else now + 1)
        if self.sched_requests:
            times.append(max(self.last_sched + self.sched.batch_sched_delay, now + 1))
        interval = self.sched.sched_interval
        if interval > 0 and (self.main_dirty or self.sched_requests) and self.pending:
            times.append(self.last_full + interval)
        if self.multifactor and (self.pending or self.running):
            times.append(self.next_decay)
        for p in self.not_before.values():
            begin = max(p.sj.begin, p.job.requested_start
                        if p.job.job_class is JobClass.DEDICATED else -1.0)
            if begin > now:
                times.append(begin)
        times.extend(item[0] for item in self.releasing)
        if self.next_submission is not None and self.next_submission > now:
            times.append(self.next_submission)
        if times:
            wake = min(times)
            if wake > now:
                decisions.append(WakeAt(wake))
