"""slurm.conf, host lists, time strings and the association file: what is read, what is
said about what is not modelled, and one-sentence errors naming FILE:LINE."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from schedd.slurm import hostlist, timestr
from schedd.slurm.assoc import AssocError, read_associations
from schedd.slurm.conf import SlurmConfError, read_slurm_conf


def write(tmp_path: Path, text: str, name: str = "slurm.conf") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_hostlists_expand_ranges_lists_and_padding() -> None:
    assert hostlist.expand("n[1-3]") == ["n1", "n2", "n3"]
    # Each range keeps its own width, as Slurm's hostlist does.
    assert hostlist.expand("n[01-03,7],gpu1") == ["n01", "n02", "n03", "n7", "gpu1"]
    assert hostlist.expand("r[1-2]-n[1-2]") == ["r1-n1", "r1-n2", "r2-n1", "r2-n2"]
    for bad in ("n[1-", "n[a-b]", "n[3-1]", "n]"):
        with pytest.raises(ValueError):
            hostlist.expand(bad)


@pytest.mark.parametrize(("text", "seconds"), [
    ("30", 1800.0), ("5:30", 330.0), ("1:00:00", 3600.0), ("2-00", 172800.0),
    ("1-02:03", 93780.0), ("1-02:03:04", 93784.0), ("UNLIMITED", math.inf),
    ("INFINITE", math.inf)])
def test_time_strings_as_slurm_reads_them(text: str, seconds: float) -> None:
    assert timestr.seconds(text) == seconds


def test_time_string_errors_name_the_forms() -> None:
    with pytest.raises(ValueError, match="D-HH"):
        timestr.seconds("ten minutes")
    assert timestr.minutes_rounded_up("0:30") == 1.0  # time_str2mins rounds up


CONF = """\
# a small machine
ClusterName=tiny
SlurmctldHost=head(127.0.0.1)
NodeName=DEFAULT CPUs=4
NodeName=n[1-4]
NodeName=big[1-2] Sockets=2 CoresPerSocket=4 ThreadsPerCore=1
PartitionName=short Nodes=n[1-4] Default=YES MaxTime=00:30:00 PriorityTier=2
PartitionName=long Nodes=ALL MaxTime=2-00:00:00 PriorityJobFactor=10 OverSubscribe=EXCLUSIVE
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=10,bf_resolution=30,bf_window=120,bf_max_job_test=50,bf_continue,default_queue_depth=20,sched_interval=30,bf_max_time=60
PriorityType=priority/multifactor
PriorityWeightAge=1000
PriorityWeightFairshare=5000
PriorityWeightJobSize=200
PriorityWeightPartition=100
PriorityDecayHalfLife=7-0
PriorityMaxAge=1-0
PriorityCalcPeriod=2
PriorityFavorSmall=YES
PriorityFlags=SMALL_RELATIVE_TO_TIME
OverTimeLimit=2
KillWait=15
SlurmctldLogFile=/var/log/slurmctld.log
"""


def test_a_conf_is_read_as_slurm_reads_it(tmp_path: Path) -> None:
    conf = read_slurm_conf(write(tmp_path, CONF))
    assert conf.cluster_name == "tiny"
    assert conf.node_names == ("n1", "n2", "n3", "n4", "big1", "big2")
    assert conf.node_cpus == (4, 4, 4, 4, 8, 8)
    short, long = conf.partitions
    assert short.nodes == (0, 1, 2, 3) and short.default and short.priority_tier == 2
    assert short.max_time == 1800.0 and not short.exclusive
    assert long.nodes == (0, 1, 2, 3, 4, 5) and long.exclusive and long.max_time == 172800
    assert long.priority_job_factor == 10
    assert conf.default_partition is short
    s = conf.sched
    assert (s.backfill, s.bf_interval, s.bf_resolution, s.bf_window, s.bf_max_job_test,
            s.bf_continue, s.default_queue_depth, s.sched_interval) == (
        True, 10, 30, 7200, 50, True, 20, 30)
    p = conf.priority
    assert p.multifactor and (p.weight_age, p.weight_fairshare, p.weight_job_size,
                              p.weight_partition) == (1000, 5000, 200, 100)
    assert (p.decay_half_life, p.max_age, p.calc_period) == (7 * 86400, 86400, 120)
    assert p.favor_small and p.small_relative_to_time and p.fair_tree
    assert (conf.over_time_limit, conf.kill_wait) == (2.0, 15.0)
    assert conf.warnings == ()  # everything above is modelled or has no effect


def test_defaults_are_slurm_2205s(tmp_path: Path) -> None:
    conf = read_slurm_conf(write(tmp_path, "NodeName=n1 CPUs=2\nPartitionName=p Nodes=n1\n"))
    s, p = conf.sched, conf.priority
    assert (s.bf_interval, s.bf_resolution, s.bf_window, s.bf_max_job_test,
            s.default_queue_depth, s.sched_interval, s.batch_sched_delay) == (
        30, 60, 86400, 500, 100, 60, 3)
    assert not p.multifactor and p.calc_period == 300 and p.decay_half_life == 7 * 86400
    assert conf.kill_wait == 30 and conf.over_time_limit == 0
    assert conf.default_partition.name == "p"  # none marked Default: the first


def test_unmodelled_parameters_get_one_warning_line_each(tmp_path: Path) -> None:
    conf = read_slurm_conf(write(tmp_path, (
        "NodeName=n[1-2] CPUs=1 Features=fast\n"
        "PartitionName=p Nodes=ALL AllowAccounts=a,b\n"
        "SchedulerParameters=bf_interval=5,bf_max_job_user=3\n"
        "PreemptType=preempt/qos\n"
        "PriorityWeightTRES=CPU=10\n"
        "FairShareDampeningFactor=2\n")))
    text = "\n".join(conf.warnings)
    assert len(conf.warnings) == 6, text
    for name in ("features", "allowaccounts", "bf_max_job_user", "preempttype",
                 "PriorityWeightTRES", "fairsharedampeningfactor"):
        assert name.lower() in text.lower(), name
    assert all(line.startswith(str(tmp_path)) for line in conf.warnings)


@pytest.mark.parametrize(("text", "message"), [
    ("PartitionName=p Nodes=n1\n", "expected at least one NodeName line"),
    ("NodeName=n1\n", "expected at least one PartitionName line"),
    ("NodeName=n1\nPartitionName=p Nodes=n2\n", ":2: partition p names node n2"),
    ("NodeName=n[1-\nPartitionName=p Nodes=ALL\n", ":1: NodeName: unbalanced"),
    ("NodeName=n1 CPUs=four\nPartitionName=p Nodes=ALL\n", ":1: expected a whole number for cpus"),
    ("NodeName=n1\nPartitionName=p Nodes=ALL MaxTime=soon\n", ":2: MaxTime: expected a Slurm time"),
    ("NodeName=n1\nPartitionName=p Nodes=ALL\nSchedulerType=sched/wiki\n",
     ":3: expected SchedulerType sched/backfill or sched/builtin"),
    ("NodeName=n1\nNodeName=n1\nPartitionName=p Nodes=ALL\n", ":2: node n1 is defined twice"),
])
def test_errors_are_one_sentence_naming_the_line(tmp_path: Path, text: str,
                                                 message: str) -> None:
    with pytest.raises(SlurmConfError, match=message.replace("[", r"\[")):
        read_slurm_conf(write(tmp_path, text))


def test_a_missing_conf_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(SlurmConfError, match="cannot read the slurm.conf"):
        read_slurm_conf(tmp_path / "nope.conf")


# sacctmgr's default columns, as a real 22.05 prints them.
HEADER = ("Cluster|Account|User|Partition|Share|Priority|GrpJobs|GrpTRES|GrpSubmit|GrpWall|"
          "GrpTRESMins|MaxJobs|MaxTRES|MaxTRESPerNode|MaxSubmit|MaxWall|MaxTRESMins|QOS|"
          "Def QOS|GrpTRESRunMins")
ASSOC = HEADER + """
c|root|||1|||||||||||||normal||
c|root|root||1|||||||||||||normal||
c|phys|||30|||||||||||||normal||
c|phys|ann||1|||||||||||||normal||
c|chem|||10|||||||||||||normal||
c|chem|bob||parent|||||||||||||normal||
"""


def test_associations_from_sacctmgr_parsable2(tmp_path: Path) -> None:
    assocs = read_associations(write(tmp_path, ASSOC, "assoc.txt"))
    names = {(a.account, a.user): a for a in assocs.walk()}
    phys, chem = names[("phys", None)], names[("chem", None)]
    assert phys.parent is assocs.root and chem.parent is assocs.root
    assert phys.shares_raw == 30 and names[("chem", "bob")].shares_raw is None
    assert phys.shares_norm == pytest.approx(30 / 41)  # root's user has 1 share too
    assert names[("phys", "ann")].parent is phys
    assert any("ParentName" in w for w in assocs.warnings)
    assert assocs.charged("phys", "ann") is names[("phys", "ann")]
    # A user the file does not name is charged to a new association with 1 share, said.
    carl = assocs.charged("phys", "carl")
    assert carl.parent is phys and carl.shares_raw == 1
    assert any("carl" in w for w in assocs.warnings)


def test_parent_names_place_accounts_in_a_tree(tmp_path: Path) -> None:
    text = ("Account|User|Share|ParentName\nroot||1|\nsci||5|root\nphys||1|sci\n"
            "phys|ann|1|\n")
    assocs = read_associations(write(tmp_path, text, "assoc.txt"))
    phys = next(a for a in assocs.walk() if a.account == "phys" and a.user is None)
    assert phys.parent is not None and phys.parent.account == "sci"
    assert not assocs.warnings


@pytest.mark.parametrize(("text", "message"), [
    ("", "found an empty file"),
    ("Account|Share\nroot|1\n", "expected a column User"),
    ("Account|User|Share\nroot||x\n", ":2: expected a whole number or 'parent'"),
    ("Account|User|Share\nroot||1|3\n", ":2: expected 3 '|'-separated columns, found 4"),
    ("Account|User|Share\nroot||1\nphys|ann|1\n", ":3: user 'ann' is in account 'phys'"),
])
def test_association_errors_name_the_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(AssocError, match=message):
        read_associations(write(tmp_path, text, "assoc.txt"))
