"""slurm.conf as far as it decides when and where jobs run.

`read_slurm_conf(path)` gives a `SlurmConf`: the nodes and their CPUs, the partitions, and
the scheduler, priority and selection parameters the Slurm policy models
(docs/slurm.md lists them one by one). A parameter that can change scheduling but is not
modelled gives one warning line naming it (`SlurmConf.warnings`); parameters with no
effect on scheduling (paths, ports, logging, plugins for accounting or process tracking)
are read silently. Errors name FILE:LINE and the parameter.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from . import hostlist, timestr


class SlurmConfError(ValueError):
    """A slurm.conf that cannot be read; the message is one sentence naming FILE:LINE."""


@dataclass(frozen=True)
class Partition:
    name: str
    nodes: tuple[int, ...]  # node indices, in the conf's order
    max_time: float = math.inf  # s
    default_time: float = math.inf  # s (inf: the job gets max_time)
    priority_tier: int = 1
    priority_job_factor: int = 1
    default: bool = False
    exclusive: bool = False  # OverSubscribe=EXCLUSIVE: every job gets whole nodes
    up: bool = True
    max_nodes: float = math.inf
    over_time_limit: float | None = None  # minutes; None: the global OverTimeLimit


@dataclass(frozen=True)
class SchedParams:
    """SchedulerParameters and SchedulerType (defaults as in Slurm 22.05)."""

    backfill: bool = True  # sched/backfill (else sched/builtin)
    bf_interval: int = 30
    bf_resolution: int = 60
    bf_window: int = 1440 * 60  # s
    bf_max_job_test: int = 500
    bf_max_job_start: int = 0
    bf_continue: bool = False
    bf_min_age_reserve: int = 0
    bf_min_prio_reserve: int = 0
    bf_window_scale: int = 0  # (cons_common's will-run window growth; 0: doubling)
    default_queue_depth: int = 100
    partition_job_depth: int = 0
    sched_interval: int = 60
    batch_sched_delay: int = 3
    sched_max_job_start: int = 0
    defer: bool = False


@dataclass(frozen=True)
class PriorityParams:
    multifactor: bool = False  # priority/multifactor (else priority/basic)
    weight_age: int = 0
    weight_fairshare: int = 0
    weight_job_size: int = 0
    weight_partition: int = 0
    weight_qos: int = 0
    weight_assoc: int = 0
    max_age: float = 7 * 86400.0  # s
    decay_half_life: float = 7 * 86400.0  # s; 0: no decay
    calc_period: float = 300.0  # s
    favor_small: bool = False
    fair_tree: bool = True  # PriorityFlags=NO_FAIR_TREE: the classic formula
    small_relative_to_time: bool = False
    calculate_running: bool = False
    incr_only: bool = False
    no_normal_part: bool = False
    no_normal_qos: bool = False
    usage_reset: str = "NONE"


@dataclass(frozen=True)
class SlurmConf:
    path: str
    node_names: tuple[str, ...]
    node_cpus: tuple[int, ...]
    partitions: tuple[Partition, ...]
    sched: SchedParams = field(default_factory=SchedParams)
    priority: PriorityParams = field(default_factory=PriorityParams)
    whole_nodes: bool = False  # select/linear (or a cons_* with CR_Memory only)
    over_time_limit: float = 0.0  # minutes (inf: UNLIMITED)
    kill_wait: float = 30.0  # s
    # An Epilog script on the nodes: every job's nodes then come back with the
    # epilog-complete message, which runs the main scheduler at once (req.c
    # `_rpc_terminate_job`); without one, a job that exited by itself has them back at once
    # and only queues a request for the background thread (policy.py, "What runs when").
    epilog_script: bool = False
    # AccountingStorageEnforce includes limits (limits, safe, all): only then does a
    # job's end charge its last part of usage (acct_policy.c, _adjust_limit_usage).
    enforce_limits: bool = False
    cluster_name: str = "slurm"
    warnings: tuple[str, ...] = ()

    @property
    def default_partition(self) -> Partition:
        for part in self.partitions:
            if part.default:
                return part
        return self.partitions[0]

    def partition(self, name: str) -> Partition:
        for part in self.partitions:
            if part.name == name:
                return part
        raise KeyError(name)

    @property
    def total_cpus(self) -> int:
        return sum(self.node_cpus)

    def node_cpus_min(self, partition: int) -> int:
        """The fewest CPUs of a node of partition `partition` (a whole node at least)."""
        cache = self.__dict__.setdefault("_min_cpus", {})
        if partition not in cache:
            cache[partition] = min(self.node_cpus[i]
                                   for i in self.partitions[partition].nodes)
        return int(cache[partition])


# Parameters read without effect on scheduling (lower case): where daemons live, logs,
# authentication, accounting storage, process tracking, timeouts between daemons.
_NO_EFFECT = frozenset(s.lower() for s in """
ClusterName SlurmctldHost ControlMachine ControlAddr BackupController SlurmctldPort
SlurmdPort SlurmUser SlurmdUser StateSaveLocation SlurmdSpoolDir SlurmctldPidFile
SlurmdPidFile SlurmctldLogFile SlurmdLogFile SlurmctldDebug SlurmdDebug SlurmSchedLogFile
SlurmSchedLogLevel DebugFlags AuthType AuthInfo AuthAltTypes AuthAltParameters CredType
CryptoType AccountingStorageType AccountingStorageHost AccountingStoragePort
AccountingStorageUser AccountingStoragePass AccountingStorageLoc AccountingStorageTRES
AccountingStoreFlags AccountingStoreJobComment JobAcctGatherType
JobAcctGatherFrequency JobAcctGatherParams JobCompType JobCompLoc JobCompHost JobCompPort
JobCompUser JobCompPass JobCompParams ProctrackType TaskPlugin TaskPluginParam MpiDefault
MpiParams SwitchType LaunchType ReturnToService SlurmctldTimeout SlurmdTimeout
MessageTimeout TCPTimeout InactiveLimit MinJobAge MaxJobCount FirstJobId MaxJobId
SlurmdParameters SlurmctldParameters MailProg MailDomain PluginDir PlugStackConfig
Prolog EpilogSlurmctld PrologSlurmctld PrologFlags SrunEpilog SrunProlog TaskEpilog
TaskProlog HealthCheckProgram HealthCheckInterval HealthCheckNodeState TmpFS CacheGroups
GroupUpdateForce GroupUpdateTime UsePAM PropagateResourceLimits
PropagateResourceLimitsExcept PropagatePrioProcess KillOnBadExit WaitTime
UnkillableStepTimeout UnkillableStepProgram AcctGatherNodeFreq AcctGatherEnergyType
AcctGatherInterconnectType AcctGatherFilesystemType AcctGatherProfileType JobContainerType
GresTypes CpuFreqDef CpuFreqGovernors MemLimitEnforce TopologyPlugin TrackWCKey TreeWidth
VSizeFactor MaxArraySize MaxStepCount MaxTasksPerNode RebootProgram ResumeTimeout
SuspendTime SuspendTimeout ResumeProgram SuspendProgram DefMemPerCPU DefMemPerNode
MaxMemPerCPU MaxMemPerNode SlurmctldSyslogDebug SlurmdSyslogDebug LogTimeFormat
DefCpuPerGPU DefMemPerGPU JobSubmitPlugins ResvOverRun ResvEpilog ResvProlog
EnforcePartLimits PrivateData
""".split())  # noqa: SIM905

_SCHED_INT = {"bf_interval", "bf_resolution", "bf_max_job_test", "bf_max_job_start",
              "bf_min_age_reserve", "bf_min_prio_reserve", "bf_window_scale",
              "default_queue_depth", "partition_job_depth", "sched_interval",
              "batch_sched_delay", "sched_max_job_start"}
# SchedulerParameters with no effect on a simulated machine: cycle time budgets and
# yields (our passes take no wall time), RPC throttles, logging.
_SCHED_NO_EFFECT = {"bf_max_time", "bf_yield_interval", "bf_yield_sleep", "max_rpc_cnt",
                    "sched_min_interval", "max_sched_time", "bf_node_space_size",
                    "bf_busy_nodes", "enable_user_top", "nohold_on_prolog_fail",
                    "kill_invalid_depend", "max_switch_wait", "bf_ignore_newly_avail_nodes"}
_PRIORITY_FLAGS = {"FAIR_TREE", "NO_FAIR_TREE", "SMALL_RELATIVE_TO_TIME",
                   "CALCULATE_RUNNING", "INCR_ONLY", "NO_NORMAL_PART", "NO_NORMAL_QOS",
                   "NO_NORMAL_ALL", "NO_NORMAL_ASSOC", "NO_NORMAL_TRES",
                   "DEPTH_OBLIVIOUS", "MAX_TRES", "ACCRUE_ALWAYS"}


def read_slurm_conf(path: str | Path) -> SlurmConf:
    """Read slurm.conf; SlurmConfError (one sentence, FILE:LINE) if it can't be used."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise SlurmConfError(f"{name}: cannot read the slurm.conf ({err.strerror})") from None
    return _Reader(name).read(text)


class _Reader:
    def __init__(self, path: str):
        self.path = path
        self.warnings: list[str] = []
        self.node_names: list[str] = []
        self.node_cpus: list[int] = []
        self.node_default: dict[str, str] = {}
        self.part_lines: list[tuple[int, dict[str, str]]] = []
        self.part_default: dict[str, str] = {}
        self.general: dict[str, tuple[int, str]] = {}

    def fail(self, line: int, what: str) -> SlurmConfError:
        return SlurmConfError(f"{self.path}:{line}: {what}")

    def warn(self, line: int, what: str) -> None:
        self.warnings.append(f"{self.path}:{line}: {what}")

    def read(self, text: str) -> SlurmConf:
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            try:
                words = shlex.split(line, posix=True)
            except ValueError:
                raise self.fail(number, f"unbalanced quotes in {raw.strip()!r}") from None
            pairs = []
            for word in words:
                key, sep, value = word.partition("=")
                if not sep:
                    if key.lower() == "include":
                        self.warn(number, "Include is not followed; put the included "
                                  "parameters in this file")
                        break
                    raise self.fail(number, f"expected KEY=VALUE, found {word!r}")
                pairs.append((key.strip(), value.strip()))
            if not pairs:
                continue
            head = pairs[0][0].lower()
            if head == "nodename":
                self._node_line(number, dict((k.lower(), v) for k, v in pairs))
            elif head == "partitionname":
                opts = dict((k.lower(), v) for k, v in pairs)
                if opts["partitionname"].upper() == "DEFAULT":
                    self.part_default.update({k: v for k, v in opts.items()
                                              if k != "partitionname"})
                else:
                    self.part_lines.append((number, {**self.part_default, **opts}))
            elif head in ("nodeset", "frontendname", "downnodes", "switchname"):
                self.warn(number, f"{pairs[0][0]} lines are not modelled; ignored")
            else:
                for key, value in pairs:
                    self.general[key.lower()] = (number, value)
        return self._build()

    def _node_line(self, number: int, opts: dict[str, str]) -> None:
        names = opts["nodename"]
        if names.upper() == "DEFAULT":
            self.node_default.update({k: v for k, v in opts.items() if k != "nodename"})
            return
        merged = {**self.node_default, **opts}
        topology = ("boards", "sockets", "socketsperboard", "corespersocket",
                    "threadspercore")
        if "cpus" not in opts and "procs" not in opts and any(k in opts for k in topology):
            # The line's own topology counts its CPUs, not a DEFAULT line's CPUs=.
            merged.pop("cpus", None)
            merged.pop("procs", None)
        try:
            expanded = hostlist.expand(names)
        except ValueError as err:
            raise self.fail(number, f"NodeName: {err}") from None
        cpus = self._node_cpus(number, merged)
        for key in merged:
            if key in ("features", "feature", "gres", "weight") and merged[key]:
                self.warn(number, f"NodeName {key.capitalize()}= is not modelled; every "
                          "node is taken as equal but for its CPUs")
        for node in expanded:
            if node in self.node_names:
                raise self.fail(number, f"node {node} is defined twice")
            self.node_names.append(node)
            self.node_cpus.append(cpus)

    def _node_cpus(self, number: int, opts: dict[str, str]) -> int:
        def whole(key: str, default: int) -> int:
            raw = opts.get(key)
            if raw is None:
                return default
            try:
                value = int(raw)
            except ValueError:
                raise self.fail(number, f"expected a whole number for {key}, found "
                                f"{raw!r}") from None
            if value < 1:
                raise self.fail(number, f"expected {key} >= 1, found {value}")
            return value

        if "cpus" in opts or "procs" in opts:
            return whole("cpus" if "cpus" in opts else "procs", 1)
        product = (whole("boards", 1) * whole("sockets", whole("socketsperboard", 1))
                   * whole("corespersocket", 1) * whole("threadspercore", 1))
        return product

    def _time(self, number: int, key: str, value: str) -> float:
        try:
            return timestr.seconds(value)
        except ValueError as err:
            raise self.fail(number, f"{key}: {err}") from None

    def _int(self, number: int, key: str, value: str) -> int:
        try:
            return int(value)
        except ValueError:
            raise self.fail(number, f"expected a whole number for {key}, found "
                            f"{value!r}") from None

    def _partitions(self, index: dict[str, int]) -> list[Partition]:
        parts = []
        for number, opts in self.part_lines:
            name = opts["partitionname"]
            raw_nodes = opts.get("nodes", "")
            if raw_nodes.upper() == "ALL":
                nodes = tuple(range(len(self.node_names)))
            else:
                try:
                    names = hostlist.expand(raw_nodes)
                except ValueError as err:
                    raise self.fail(number, f"PartitionName={name} Nodes: {err}") from None
                missing = [n for n in names if n not in index]
                if missing:
                    raise self.fail(number, f"partition {name} names node {missing[0]}, "
                                    "which no NodeName line defines")
                nodes = tuple(index[n] for n in names)
            if not nodes:
                raise self.fail(number, f"partition {name} has no nodes")
            kw: dict = {}
            for key, value in opts.items():
                if key in ("partitionname", "nodes"):
                    continue
                if key == "maxtime":
                    kw["max_time"] = self._time(number, "MaxTime", value)
                elif key == "defaulttime":
                    kw["default_time"] = self._time(number, "DefaultTime", value)
                elif key == "prioritytier":
                    kw["priority_tier"] = self._int(number, "PriorityTier", value)
                elif key == "priorityjobfactor":
                    kw["priority_job_factor"] = self._int(number, "PriorityJobFactor", value)
                elif key == "priority":  # before 16.05: both at once
                    value_int = self._int(number, "Priority", value)
                    kw.setdefault("priority_tier", value_int)
                    kw.setdefault("priority_job_factor", value_int)
                elif key == "default":
                    kw["default"] = value.upper() == "YES"
                elif key == "state":
                    kw["up"] = value.upper() == "UP"
                    if value.upper() not in ("UP", "DOWN", "DRAIN", "INACTIVE"):
                        raise self.fail(number, f"expected State=UP, DOWN, DRAIN or "
                                        f"INACTIVE, found {value!r}")
                    if not kw["up"]:
                        self.warn(number, f"partition {name} is {value.upper()}: its jobs "
                                  "never start")
                elif key in ("oversubscribe", "shared"):
                    mode = value.upper().split(":")[0]
                    kw["exclusive"] = mode == "EXCLUSIVE"
                    if mode in ("YES", "FORCE"):
                        self.warn(number, f"OverSubscribe={value} (more than one job per "
                                  "CPU) is not modelled; jobs get their own CPUs")
                elif key == "maxnodes":
                    kw["max_nodes"] = (math.inf if value.upper() in ("UNLIMITED", "INFINITE")
                                       else self._int(number, "MaxNodes", value))
                elif key == "overtimelimit":
                    kw["over_time_limit"] = (math.inf if value.upper() == "UNLIMITED"
                                             else float(self._int(number, "OverTimeLimit",
                                                                  value)))
                elif key in ("allowaccounts", "allowgroups", "allowqos", "denyaccounts",
                             "denyqos", "qos", "maxcpuspernode", "mincpusnode", "minnodes",
                             "maxmempercpu", "defmempercpu", "preemptmode", "gracetime",
                             "lln", "alternate", "reqresv", "rootonly", "exclusiveuser",
                             "tresbillingweights", "selecttypeparameters", "cpubind",
                             "hidden", "disablerootjobs", "allocnodes", "powerdownonidle",
                             "suspendtime", "resumetimeout", "suspendtimeout", "maxmempernode",
                             "defmempernode", "defcpupergpu", "defmempergpu", "exclusivetopo"):
                    if key in ("allowaccounts", "allowgroups", "allowqos", "denyaccounts",
                               "denyqos", "qos", "maxcpuspernode", "minnodes", "lln",
                               "preemptmode", "reqresv", "exclusiveuser",
                               "selecttypeparameters"):
                        self.warn(number, f"partition {name}: {key} is not modelled; ignored")
                else:
                    self.warn(number, f"partition {name}: unknown parameter {key}; ignored")
            parts.append(Partition(name, nodes, **kw))
        return parts

    def _build(self) -> SlurmConf:
        if not self.node_names:
            raise SlurmConfError(f"{self.path}: expected at least one NodeName line, found "
                                 "none")
        index = {n: i for i, n in enumerate(self.node_names)}
        parts = self._partitions(index)
        if not parts:
            raise SlurmConfError(f"{self.path}: expected at least one PartitionName line, "
                                 "found none")
        if sum(p.default for p in parts) > 1:
            first = [p.name for p in parts if p.default]
            self.warnings.append(f"{self.path}: more than one default partition "
                                 f"({', '.join(first)}); the first is used")
        sched: dict = {}
        prio: dict = {}
        top: dict = {}
        for key, (number, value) in sorted(self.general.items(), key=lambda kv: kv[1][0]):
            self._general(key, number, value, sched, prio, top)
        return SlurmConf(
            self.path, tuple(self.node_names), tuple(self.node_cpus), tuple(parts),
            SchedParams(**sched), PriorityParams(**prio), warnings=tuple(self.warnings),
            **top)

    def _general(self, key: str, number: int, value: str, sched: dict, prio: dict,
                 top: dict) -> None:
        if key == "clustername":
            top["cluster_name"] = value
        elif key in _NO_EFFECT:
            return
        elif key == "schedulertype":
            kind = value.lower().removeprefix("sched/")
            if kind not in ("backfill", "builtin"):
                raise self.fail(number, f"expected SchedulerType sched/backfill or "
                                f"sched/builtin, found {value!r}")
            sched["backfill"] = kind == "backfill"
        elif key == "schedulerparameters":
            self._sched_params(number, value, sched)
        elif key == "prioritytype":
            kind = value.lower().removeprefix("priority/")
            if kind not in ("basic", "multifactor"):
                raise self.fail(number, f"expected PriorityType priority/basic or "
                                f"priority/multifactor, found {value!r}")
            prio["multifactor"] = kind == "multifactor"
        elif key.startswith("priorityweight"):
            what = key.removeprefix("priorityweight")
            target = {"age": "weight_age", "fairshare": "weight_fairshare",
                      "jobsize": "weight_job_size", "partition": "weight_partition",
                      "qos": "weight_qos", "assoc": "weight_assoc"}.get(what)
            if target is None:
                self.warn(number, f"PriorityWeight{what.upper() if what == 'tres' else what}"
                          " is not modelled; ignored")
                return
            prio[target] = self._int(number, f"PriorityWeight{what}", value)
        elif key == "prioritymaxage":
            prio["max_age"] = self._time(number, "PriorityMaxAge", value)
        elif key == "prioritydecayhalflife":
            prio["decay_half_life"] = self._time(number, "PriorityDecayHalfLife", value)
        elif key == "prioritycalcperiod":
            prio["calc_period"] = self._time(number, "PriorityCalcPeriod", value)
        elif key == "priorityfavorsmall":
            prio["favor_small"] = value.upper() in ("YES", "1", "TRUE")
        elif key == "priorityusageresetperiod":
            prio["usage_reset"] = value.upper()
            if value.upper() not in ("NONE",):
                self.warn(number, f"PriorityUsageResetPeriod={value} is not modelled; "
                          "usage only decays")
        elif key == "priorityflags":
            for flag in filter(None, (f.strip().upper() for f in value.split(","))):
                if flag not in _PRIORITY_FLAGS:
                    self.warn(number, f"PriorityFlags {flag} is unknown; ignored")
                elif flag == "NO_FAIR_TREE":
                    prio["fair_tree"] = False
                elif flag == "SMALL_RELATIVE_TO_TIME":
                    prio["small_relative_to_time"] = True
                elif flag == "CALCULATE_RUNNING":
                    prio["calculate_running"] = True
                elif flag == "INCR_ONLY":
                    prio["incr_only"] = True
                elif flag in ("NO_NORMAL_PART", "NO_NORMAL_ALL"):
                    prio["no_normal_part"] = True
                    if flag == "NO_NORMAL_ALL":
                        prio["no_normal_qos"] = True
                elif flag == "NO_NORMAL_QOS":
                    prio["no_normal_qos"] = True
                elif flag != "FAIR_TREE":
                    self.warn(number, f"PriorityFlags {flag} is not modelled; ignored")
        elif key == "selecttype":
            kind = value.lower().removeprefix("select/")
            if kind == "linear":
                top["whole_nodes"] = True
            elif kind not in ("cons_tres", "cons_res"):
                self.warn(number, f"SelectType={value} is not modelled; CPUs are allocated "
                          "as select/cons_tres does")
        elif key == "selecttypeparameters":
            params = {p.strip().upper() for p in value.split(",")}
            if params & {"CR_MEMORY"} and not params & {"CR_CORE", "CR_CPU", "CR_SOCKET",
                                                        "CR_CORE_MEMORY", "CR_CPU_MEMORY",
                                                        "CR_SOCKET_MEMORY"}:
                top["whole_nodes"] = True
                self.warn(number, "SelectTypeParameters=CR_Memory: memory is not modelled; "
                          "jobs get whole nodes")
        elif key == "overtimelimit":
            top["over_time_limit"] = (math.inf if value.upper() == "UNLIMITED"
                                      else float(self._int(number, "OverTimeLimit", value)))
        elif key == "completewait":
            if value not in ("0", ""):
                self.warn(number, f"CompleteWait={value} is not modelled; nodes are free "
                          "again when their job ends")
        elif key == "accountingstorageenforce":
            words = {w.strip().lower() for w in value.split(",")}
            top["enforce_limits"] = bool(words & {"2", "limits", "safe", "all"})
        elif key == "epilog":
            top["epilog_script"] = bool(value.strip())
        elif key == "killwait":
            top["kill_wait"] = float(self._int(number, "KillWait", value))
        elif key in ("preempttype", "preemptmode", "preemptexempttime"):
            if value.lower() not in ("preempt/none", "off", "0", "-1", "00:00:00"):
                self.warn(number, f"{key} (preemption) is not modelled; jobs are never "
                          "preempted")
        else:
            self.warn(number, f"parameter {key} is not modelled; ignored")

    def _sched_params(self, number: int, value: str, sched: dict) -> None:
        for item in filter(None, (v.strip() for v in value.split(","))):
            name, sep, arg = item.partition("=")
            name = name.lower()
            if name in _SCHED_INT:
                if not sep:
                    raise self.fail(number, f"SchedulerParameters {name} needs =VALUE")
                sched[name] = self._int(number, name, arg)
            elif name == "bf_window":
                sched["bf_window"] = self._int(number, name, arg) * 60  # minutes
            elif name == "bf_continue":
                sched["bf_continue"] = True
            elif name == "defer":
                sched["defer"] = True
            elif name in _SCHED_NO_EFFECT:
                continue
            else:
                self.warn(number, f"SchedulerParameters {name} is not modelled; ignored")
