"""The journal body and the pending record of a submission, written out field by field
for speed (issue 21), hold every field of the JobSpec under its own name."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from schedd.core.job import JobClass, JobSpec
from schedd.daemon.records import (
    _BODY_FIELDS,
    PENDING,
    JobRecord,
    record_of_spec,
    spec_body,
    spec_of_body,
)

specs = st.builds(
    JobSpec, id=st.integers(1, 2**53), submit=st.floats(0, 1e9), runtime=st.floats(0, 1e9),
    nodes=st.integers(1, 10**6), walltime=st.floats(1, 1e9), user=st.integers(-1, 10**6),
    project=st.integers(-1, 10**6), job_class=st.sampled_from(list(JobClass)),
    min_nodes=st.integers(-1, 10**6), checkpointable=st.booleans(),
    ckpt_gb_per_node=st.floats(-1, 1e3), setup=st.floats(0, 1e4),
    requested_start=st.floats(-1, 1e9), queue=st.integers(-1, 100),
    ckpt_interval=st.floats(-1, 1e6))


@given(specs)
def test_the_body_is_every_field_by_name_then_the_class_letter(spec: JobSpec) -> None:
    body = spec_body(spec)
    assert list(body) == [*_BODY_FIELDS, "job_class"]
    assert all(body[name] == getattr(spec, name) for name in _BODY_FIELDS)
    assert body["job_class"] == spec.job_class.value
    assert spec_of_body(body) == spec


@given(specs)
def test_the_pending_record_names_each_field(spec: JobSpec) -> None:
    assert record_of_spec(spec, "alice") == JobRecord(
        spec.id, PENDING, spec.job_class.value, spec.nodes, spec.walltime, spec.submit,
        owner="alice", min_nodes=spec.min_nodes, user=spec.user, project=spec.project,
        queue=spec.queue, requested_start=spec.requested_start)
