"""A notice for a job that has already arrived is refused, also in the moment between the
job's acknowledgement and the engine's next iteration, when its record is still pending
(the race behind a CI failure of test_daemon_hybrid's refusal test)."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest

from schedd.core.job import JobClass, JobSpec
from schedd.daemon.auth import ANONYMOUS_OPERATOR
from schedd.daemon.interceptor import _principal
from schedd.daemon.records import Stimulus, spec_body
from schedd.daemon.server import Daemon
from schedd.daemon.service import Refused


@pytest.fixture(autouse=True)
def as_operator() -> Iterator[None]:
    token = _principal.set(ANONYMOUS_OPERATOR)  # what the interceptor sets for a call
    yield
    _principal.reset(token)


def accepted(daemon: Daemon, spec: JobSpec) -> None:
    """What the journal's commit does before the acknowledgement: the record, pending."""
    daemon.host.accept([Stimulus("submit", spec_body(spec), "anonymous", "", spec=spec)])
    assert daemon.host.records[spec.id].state == "pending"


def test_a_job_acknowledged_but_not_yet_taken_in_has_arrived(memory_daemon: Daemon) -> None:
    accepted(memory_daemon, JobSpec(id=10, submit=0.0, runtime=100.0, nodes=1,
                                    walltime=100.0, job_class=JobClass.ONDEMAND))
    with pytest.raises(Refused) as err:
        memory_daemon.service.notice_body(10, 60.0, 1, 100.0, None)
    assert err.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert "job 10 has already arrived (submitted for 0)" in str(err.value)


def test_a_job_submitted_for_later_can_still_be_announced(memory_daemon: Daemon) -> None:
    accepted(memory_daemon, JobSpec(id=11, submit=500.0, runtime=100.0, nodes=1,
                                    walltime=100.0, job_class=JobClass.ONDEMAND))
    body = memory_daemon.service.notice_body(11, 500.0, 1, 100.0, None)
    assert body["job_id"] == 11 and body["est_arrival"] == 500.0
    # ... but not by a notice dated at or after its arrival.
    with pytest.raises(Refused):
        memory_daemon.service.notice_body(11, 600.0, 1, 100.0, 500.0)
