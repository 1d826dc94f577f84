"""Every field of a SubmitJobRequest lands in the right field of the JobSpec the daemon
journals: the handler builds it by position (issue 21), so a slip in the order would
swap two fields of the same type without any error."""

from __future__ import annotations

import grpc
import pytest

from schedd.core.job import JobClass, JobSpec
from schedd.daemon.server import Daemon
from schedd.daemon.service import Refused
from schedd.v1 import scheduler_pb2 as pb


@pytest.mark.parametrize("cls", [pb.JOB_CLASS_MALLEABLE, pb.JOB_CLASS_DEDICATED])
def test_each_request_field_lands_in_its_spec_field(memory_daemon: Daemon, cls: int) -> None:
    malleable = cls == pb.JOB_CLASS_MALLEABLE
    request = pb.SubmitJobRequest(
        job_id=41, nodes=12, walltime=7200.0, runtime=3000.0, user=5, project=6, queue=7,
        job_class=cls, min_nodes=3 if malleable else 0, not_checkpointable=True,
        ckpt_gb_per_node=2.5, setup=11.0, submit_time=13.0, ckpt_interval=900.0,
        **({} if malleable else {"requested_start": 17.0}))
    expected = JobSpec(id=41, submit=13.0, runtime=3000.0, nodes=12, walltime=7200.0,
                       user=5, project=6,
                       job_class=JobClass.MALLEABLE if malleable else JobClass.DEDICATED,
                       min_nodes=3 if malleable else -1, checkpointable=False,
                       ckpt_gb_per_node=2.5, setup=11.0,
                       requested_start=-1.0 if malleable else 17.0, notice=None, queue=7,
                       ckpt_interval=900.0)
    assert memory_daemon.service._spec(request) == expected


def test_fields_left_out_take_the_defaults(memory_daemon: Daemon) -> None:
    spec = memory_daemon.service._spec(pb.SubmitJobRequest(nodes=2, walltime=60.0))
    assert spec == JobSpec(id=0, submit=0.0, runtime=60.0, nodes=2, walltime=60.0, user=0,
                           project=0, queue=0)


def test_an_assigned_id_is_built_in_once_and_claimed_only_when_valid(
        memory_daemon: Daemon) -> None:
    service = memory_daemon.service
    service.known_ids.update({1, 2, 4})
    first = service._new_spec(pb.SubmitJobRequest(nodes=2, walltime=60.0))
    assert first.id == 3 and 3 in service.known_ids  # past the taken ids
    with pytest.raises(Refused) as refused:
        service._new_spec(pb.SubmitJobRequest(nodes=0, walltime=60.0))
    assert refused.value.code is grpc.StatusCode.INVALID_ARGUMENT
    assert 5 not in service.known_ids  # a refusal uses no id up ...
    assert service._new_spec(pb.SubmitJobRequest(nodes=1, walltime=60.0)).id == 5  # ... so


def test_an_explicit_id_is_checked_before_it_is_found_taken(memory_daemon: Daemon) -> None:
    service = memory_daemon.service
    service.known_ids.add(7)
    with pytest.raises(Refused) as invalid:
        service._new_spec(pb.SubmitJobRequest(job_id=7, nodes=0, walltime=60.0))
    assert invalid.value.code is grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(Refused) as taken:
        service._new_spec(pb.SubmitJobRequest(job_id=7, nodes=1, walltime=60.0))
    assert taken.value.code is grpc.StatusCode.ALREADY_EXISTS
    assert service._new_spec(pb.SubmitJobRequest(job_id=8, nodes=1, walltime=60.0)).id == 8


@pytest.mark.parametrize(("fields", "first"), [
    ({"nodes": 65, "walltime": -1.0}, "65 nodes is more than"),  # the machine before walltime
    ({"nodes": 0, "walltime": -1.0}, "nodes must be"),
    ({"walltime": float("nan"), "user": -5}, "walltime must be"),
    ({"runtime": -1.0, "setup": -1.0}, "runtime must be"),
    ({"setup": float("inf"), "queue": -2}, "setup must be"),
    ({"user": -2, "project": -2}, "user must be"),
    ({"project": -2, "queue": -2}, "project must be"),
    ({"queue": 2**62}, "queue must be"),
])
def test_the_first_bad_field_is_the_one_named(memory_daemon: Daemon, fields: dict,
                                              first: str) -> None:
    """The quick comparisons (limits.quick_range) keep the full check's order: nodes,
    what the machine can give, then walltime, runtime, setup, user, project, queue."""
    request = pb.SubmitJobRequest(**({"nodes": 2, "walltime": 60.0} | fields))
    with pytest.raises(Refused) as refused:
        memory_daemon.service._spec(request)
    assert refused.value.code is grpc.StatusCode.INVALID_ARGUMENT
    assert str(refused.value).startswith(first), str(refused.value)
