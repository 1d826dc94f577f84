"""The machine, jobs and policy a slurm.conf makes of a trace: what `schedd simulate
--slurm-conf` and `schedd serve --slurm-conf` run.

The machine is a `CpuNodes` of the conf's nodes; a job's size on it is the CPUs Slurm would
allocate it (every CPU of its nodes when it wants them whole). Jobs that can never run on
the machine as configured (more nodes than their partition holds) are dropped, counted
and said, as archive traces' oversized jobs are.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..core.cpu_nodes import CpuNodes
from .assoc import Associations, read_associations
from .conf import SlurmConf, read_slurm_conf
from .jobs import TraceJobs, table_from_trace
from .policy import PERIODIC_TIMEOUT
from .qos import read_qos


def _timed_out(cols: dict[str, Any], header: Any) -> Any:
    """Rows whose original state (field 39, its name in the header) is TIMEOUT."""
    names = (getattr(header, "names", None) or {}).get("state", {})
    codes = [code for code, name in names.items() if name.split()[0].upper() == "TIMEOUT"]
    state = cols.get("state")
    if state is None or not codes:
        return np.zeros(len(cols["job_id"]), dtype=bool)
    return np.isin(state, codes)


FIRST_CYCLES = 20  # backfilled starts the backfill agent's phase is read off


def _mode_residue(times: Any, period: float) -> tuple[float, int]:
    """The most common whole-second residue of `times` modulo `period`, and how many of
    the times fall on it (ties: the smallest residue)."""
    residues = np.floor(np.mod(np.asarray(times, dtype=np.float64), period)).astype(np.int64)
    counts = np.bincount(residues, minlength=int(period))
    best = int(np.argmax(counts))
    return float(best), int(counts[best])


def first_residue(starts: Any, period: float) -> float | None:
    """The whole-second residue modulo `period` of the first two backfilled starts in a
    row (`starts`, in order) that share one, or None: the agent's phase at the log's
    start. Not the most common residue of the first starts: the agent sleeps bf_interval
    from each cycle's end, so its instant within the second drifts by the cycles'
    durations and, crossing a whole second, moves its cycles to the next one, and the
    first twenty backfilled starts can lie mostly past such a step (multifactor-fs-s73:
    cycles at .93-.99 s of seconds 3 past each 5 s until 114 s, then at .006 s of the
    next; two backfilled starts before, eighteen after)."""
    residues = [int(np.floor(t)) % int(period) for t in starts]
    for i in range(len(residues) - 1):
        if residues[i] == residues[i + 1]:
            return float(residues[i])
    return None


def infer_phases(cols: dict[str, Any], header: Any, conf: SlurmConf,
                 options: Any, limit_kills: Any = None) -> tuple[dict[str, float], str | None]:
    """Where in their period Slurm's backfill cycles and time-limit checks fell in the
    original run, read off its log: backfilled jobs (field 40 = 3) start at a cycle, and
    jobs that timed out end at a check (`limit_kills`: their recorded ends, where the
    columns no longer hold them — SlurmSetup.prepare lengthens such jobs). The phase is
    the most common residue of those instants (a controller's timers keep their phase
    while there is work); at least 3 such jobs are needed. Options already given are
    left alone."""
    out: dict[str, float] = {}
    said = []
    n = len(cols["job_id"])
    if n == 0:
        return out, None
    start = cols["submit"] + cols["wait"]
    started_by = cols.get("started_by")
    # The log's first job (by submission), which two of the readings below look at.
    head = int(np.lexsort((cols["job_id"], cols["submit"]))[0])
    head_wait = float(cols["wait"][head])
    interval = float(conf.sched.bf_interval)
    if conf.sched.backfill and options.bf_phase < 0 and started_by is not None \
            and interval > 1:
        backfilled = (started_by == 3) & (cols["wait"] >= 0)
        if backfilled.sum() >= 3:
            # The agent's phase drifts: it sleeps bf_interval from the end of each cycle,
            # so cycles' own durations add up (multifactor-fs/r5, on a loaded machine,
            # moved from 1 to 2 s after 33 cycles). The phase at the log's start is the
            # one a divergence there would cascade from: its first backfilled starts.
            ordered = np.sort(start[backfilled])
            first = ordered[:FIRST_CYCLES]
            phase, hits = _mode_residue(first, interval)
            began = first_residue(ordered, interval)
            if began is not None and began != phase:
                hits = int(np.count_nonzero(np.floor(np.mod(first, interval)) == began))
                out["bf_phase"] = began
                said.append(f"backfill cycles {began:g} s past each {interval:g} s at the "
                            f"log's start (its first two backfilled starts in a row; {hits} "
                            f"of the first {len(first)}, then a second later: the agent's "
                            "drift)")
            else:
                out["bf_phase"] = phase
                said.append(f"backfill cycles {phase:g} s past each {interval:g} s "
                            f"({hits} of the first {len(first)} backfilled starts)")
    if started_by is not None:
        # A job started in its submission's second needs a pass of that second after the
        # submission: a backfill cycle, or the background thread's tick. Where none ever
        # did (one in six at most), though many started in the next second, the
        # submissions came after that thread's turn in their second.
        for option, how, name in (("submit_after_backfill", 3, "backfill cycle"),
                                  ("submit_after_tick", 2, "background tick")):
            if getattr(options, option) >= 0 or (how == 3 and not conf.sched.backfill):
                continue
            by = (started_by == how) & (cols["wait"] >= 0)
            same = int(((cols["wait"] == 0) & by).sum())
            after = int(((cols["wait"] == 1) & by).sum())
            if same + after >= 5:
                late = same * 6 <= same + after
                out[option] = 1.0 if late else 0.0
                said.append(f"submissions {'after' if late else 'before'} the {name} of "
                            f"their second ({same} jobs it started in it, {after} in the "
                            "next)")
    phase = out.get("bf_phase", options.bf_phase)
    if (started_by is not None and conf.sched.backfill and phase >= 0 and interval > 0
            and "submit_after_backfill" not in out and options.submit_after_backfill < 0):
        # Too few quick starts to say; the log's first job, on a machine that had room
        # for it (started within batch_sched_delay), says it for its own second where
        # the agent's grid puts a cycle there: that cycle started it (the submission
        # came before), or left it to a later pass (after).
        wait = head_wait
        second = float(cols["submit"][head])
        if 0 <= wait < conf.sched.batch_sched_delay and (second - phase) % interval == 0:
            late = not (started_by[head] == 3 and wait == 0)
            out["submit_after_backfill"] = 1.0 if late else 0.0
            said.append(f"submissions {'after' if late else 'before'} the backfill cycle "
                        f"of their second (the first job, submitted in a cycle's second, "
                        f"started {wait:g} s later by "
                        f"{'backfill' if started_by[head] == 3 else 'the main scheduler'})")
    if options.backfill_after_tick < 0 and conf.sched.backfill:
        # Submissions after the tick of their second but before its backfill cycle (or
        # with nothing said about the cycle, where they are taken as before it): the
        # cycle comes later in the second than the tick, so a job it started ends after
        # the tick of its last second.
        tick = out.get("submit_after_tick", options.submit_after_tick)
        cycle = out.get("submit_after_backfill", options.submit_after_backfill)
        if tick > 0 and cycle <= 0:
            out["backfill_after_tick"] = 1.0
            said.append("backfill cycles later in the second than the background tick "
                        "(submissions came between them)")

    if options.boot < 0 and started_by is not None:
        # The first job (by submission) started by the main scheduler before
        # batch_sched_delay had passed: the background thread's last pass was at least
        # that long before the pass that started it. At once: the controller had been up
        # (a long-up one: 600 s, a multiple of every interval). w seconds later (0 < w <
        # batch_sched_delay): its tick of time 0 could not run a pass yet, that of w
        # could, so its last pass was batch_sched_delay - w before time 0. Started
        # otherwise, it says nothing: boot stays 0.
        wait = head_wait
        delay = conf.sched.batch_sched_delay
        if started_by[head] == 2 and wait == 0 < delay:
            out["boot"] = 600.0
            said.append("a controller up since before time 0 (its main scheduler started "
                        "the first job at once)")
        elif started_by[head] == 2 and 0 < wait < delay and wait == int(wait):
            out["boot"] = delay - wait
            said.append(f"the background thread's last pass {delay - wait:g} s before time "
                        f"0 (its main scheduler started the first job {wait:g} s after it "
                        f"came)")
    if limit_kills is None:
        timed_out = _timed_out(cols, header) & (cols["wait"] >= 0)
        limit_kills = start[timed_out] + cols["runtime"][timed_out]
    if options.check_phase < 0 and len(limit_kills) >= 3:
        phase, hits = _mode_residue(limit_kills, PERIODIC_TIMEOUT)
        out["check_phase"] = phase
        said.append(f"time-limit checks {phase:g} s past each {PERIODIC_TIMEOUT:g} s "
                    f"({hits} of {len(limit_kills)} time-outs)")
    if not said:
        return out, None
    return out, ("read off the log: " + "; ".join(said)
                 + " (--opt bf_phase=S / check_phase=S / boot=S / submit_after_backfill=0|1 / "
                 "submit_after_tick=0|1 / backfill_after_tick=0|1 to set them)")


def cluster_of(conf: SlurmConf) -> CpuNodes:
    return CpuNodes(conf.node_cpus, conf.node_names, conf.cluster_name)


@dataclass
class SlurmSetup:
    conf: SlurmConf
    assocs: Associations | None
    cluster: CpuNodes
    qos: dict[str, int] | None = None

    @classmethod
    def read(cls, conf_path: str, assoc_path: str | None,
             qos_path: str | None = None) -> SlurmSetup:
        conf = read_slurm_conf(conf_path)
        assocs = read_associations(assoc_path) if assoc_path else None
        qos = read_qos(qos_path) if qos_path else None
        return cls(conf, assocs, cluster_of(conf), qos)

    def warnings(self) -> list[str]:
        out = list(self.conf.warnings)
        if self.assocs is not None:
            out += self.assocs.warnings
        return out

    def prepare(self, trace: Any) -> tuple[Any, TraceJobs]:
        """The normalized trace with each job's size in CPUs, and the jobs that cannot run
        here dropped (counted under "nodes>max" in `trace.dropped`)."""
        jobs = table_from_trace(trace.columns, trace.header, self.conf)
        cols = dict(trace.columns)
        cols["nodes"] = jobs.cpus
        timed_out = _timed_out(cols, trace.header)
        started = timed_out & (cols["wait"] >= 0)
        jobs.limit_kills = (cols["submit"] + cols["wait"] + cols["runtime"])[started]
        if timed_out.any():
            # Killed at its limit, a job's own length is unknown: it runs past every check
            # that could kill it, so that Slurm's check, not its recorded end, ends it.
            past = (cols["walltime"] + self.conf.over_time_limit * 60.0
                    + 2 * PERIODIC_TIMEOUT)
            cols["runtime"] = np.where(timed_out, np.maximum(cols["runtime"], past),
                                       cols["runtime"])
        if jobs.unfit:
            keep = np.array([int(i) not in jobs.unfit for i in cols["job_id"]], dtype=bool)
            cols = {name: (col[keep] if len(col) == len(keep) and col.ndim == 1 else col)
                    for name, col in cols.items()}
            for jid in jobs.unfit:
                jobs.jobs.pop(jid, None)
            dropped = dict(trace.dropped)
            dropped["nodes>max"] = dropped.get("nodes>max", 0) + len(jobs.unfit)
            trace = replace(trace, columns=cols, dropped=dropped)
        else:
            trace = replace(trace, columns=cols)
        return trace, jobs

    def bind(self, policy: Any, jobs: TraceJobs | None, epoch: float | None = None,
             trace: Any = None) -> str | None:
        """Give a `slurm` policy the conf, associations and the trace's jobs; `epoch` is the
        trace's UnixStartTime. The phases of Slurm's backfill cycle and time-limit check
        are read off an imported log's jobs (`infer_phases`) unless the options give
        them; returns the line that says so (None if nothing was inferred)."""
        phases: dict[str, float] = {}
        said = None
        if trace is not None:
            phases, said = infer_phases(trace.columns, trace.header, self.conf,
                                        policy.options,
                                        jobs.limit_kills if jobs is not None else None)
        policy.configure(self.conf, self.assocs, jobs.jobs if jobs is not None else None,
                         epoch, self.qos, **phases)
        if self.qos is None and self.conf.priority.multifactor \
                and self.conf.priority.weight_qos:
            self.conf_warning("PriorityWeightQOS without a QOS list (--slurm-qos): the QOS "
                              "factor is 0")
        if self.assocs is None and self.conf.priority.multifactor \
                and self.conf.priority.weight_fairshare:
            self.conf_warning("multifactor fair-share without an associations file "
                              "(--slurm-assoc): every account and user gets 1 share")
        return said

    def conf_warning(self, text: str) -> None:
        self.conf = replace(self.conf, warnings=self.conf.warnings + (text,))
