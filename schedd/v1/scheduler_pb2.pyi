from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class JobClass(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JOB_CLASS_UNSPECIFIED: _ClassVar[JobClass]
    JOB_CLASS_BATCH: _ClassVar[JobClass]
    JOB_CLASS_REALTIME: _ClassVar[JobClass]
    JOB_CLASS_ON_DEMAND: _ClassVar[JobClass]
    JOB_CLASS_MALLEABLE: _ClassVar[JobClass]
    JOB_CLASS_DEDICATED: _ClassVar[JobClass]

class JobState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JOB_STATE_UNSPECIFIED: _ClassVar[JobState]
    JOB_STATE_PENDING: _ClassVar[JobState]
    JOB_STATE_QUEUED: _ClassVar[JobState]
    JOB_STATE_RUNNING: _ClassVar[JobState]
    JOB_STATE_CHECKPOINTING: _ClassVar[JobState]
    JOB_STATE_PREEMPTED: _ClassVar[JobState]
    JOB_STATE_COMPLETED: _ClassVar[JobState]
    JOB_STATE_KILLED: _ClassVar[JobState]
    JOB_STATE_CANCELLED: _ClassVar[JobState]
    JOB_STATE_FAILED: _ClassVar[JobState]

class EccKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ECC_KIND_UNSPECIFIED: _ClassVar[EccKind]
    ECC_KIND_ET: _ClassVar[EccKind]
    ECC_KIND_RT: _ClassVar[EccKind]
    ECC_KIND_EP: _ClassVar[EccKind]
    ECC_KIND_RP: _ClassVar[EccKind]
JOB_CLASS_UNSPECIFIED: JobClass
JOB_CLASS_BATCH: JobClass
JOB_CLASS_REALTIME: JobClass
JOB_CLASS_ON_DEMAND: JobClass
JOB_CLASS_MALLEABLE: JobClass
JOB_CLASS_DEDICATED: JobClass
JOB_STATE_UNSPECIFIED: JobState
JOB_STATE_PENDING: JobState
JOB_STATE_QUEUED: JobState
JOB_STATE_RUNNING: JobState
JOB_STATE_CHECKPOINTING: JobState
JOB_STATE_PREEMPTED: JobState
JOB_STATE_COMPLETED: JobState
JOB_STATE_KILLED: JobState
JOB_STATE_CANCELLED: JobState
JOB_STATE_FAILED: JobState
ECC_KIND_UNSPECIFIED: EccKind
ECC_KIND_ET: EccKind
ECC_KIND_RT: EccKind
ECC_KIND_EP: EccKind
ECC_KIND_RP: EccKind

class SubmitJobRequest(_message.Message):
    __slots__ = ("request_id", "job_id", "nodes", "walltime", "runtime", "job_class", "min_nodes", "user", "project", "queue", "not_checkpointable", "setup", "requested_start", "submit_time", "ckpt_interval", "ckpt_gb_per_node")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    WALLTIME_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    JOB_CLASS_FIELD_NUMBER: _ClassVar[int]
    MIN_NODES_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    PROJECT_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NOT_CHECKPOINTABLE_FIELD_NUMBER: _ClassVar[int]
    SETUP_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_START_FIELD_NUMBER: _ClassVar[int]
    SUBMIT_TIME_FIELD_NUMBER: _ClassVar[int]
    CKPT_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    CKPT_GB_PER_NODE_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    job_id: int
    nodes: int
    walltime: float
    runtime: float
    job_class: JobClass
    min_nodes: int
    user: int
    project: int
    queue: int
    not_checkpointable: bool
    setup: float
    requested_start: float
    submit_time: float
    ckpt_interval: float
    ckpt_gb_per_node: float
    def __init__(self, request_id: _Optional[str] = ..., job_id: _Optional[int] = ..., nodes: _Optional[int] = ..., walltime: _Optional[float] = ..., runtime: _Optional[float] = ..., job_class: _Optional[_Union[JobClass, str]] = ..., min_nodes: _Optional[int] = ..., user: _Optional[int] = ..., project: _Optional[int] = ..., queue: _Optional[int] = ..., not_checkpointable: _Optional[bool] = ..., setup: _Optional[float] = ..., requested_start: _Optional[float] = ..., submit_time: _Optional[float] = ..., ckpt_interval: _Optional[float] = ..., ckpt_gb_per_node: _Optional[float] = ...) -> None: ...

class SubmitJobResponse(_message.Message):
    __slots__ = ("job_id", "submit_time", "duplicate", "stimulus_id")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    SUBMIT_TIME_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    STIMULUS_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    submit_time: float
    duplicate: bool
    stimulus_id: int
    def __init__(self, job_id: _Optional[int] = ..., submit_time: _Optional[float] = ..., duplicate: _Optional[bool] = ..., stimulus_id: _Optional[int] = ...) -> None: ...

class SubmitJobsRequest(_message.Message):
    __slots__ = ("jobs",)
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[SubmitJobRequest]
    def __init__(self, jobs: _Optional[_Iterable[_Union[SubmitJobRequest, _Mapping]]] = ...) -> None: ...

class SubmitJobsResponse(_message.Message):
    __slots__ = ("job_ids", "accepted", "duplicates")
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    DUPLICATES_FIELD_NUMBER: _ClassVar[int]
    job_ids: _containers.RepeatedScalarFieldContainer[int]
    accepted: int
    duplicates: int
    def __init__(self, job_ids: _Optional[_Iterable[int]] = ..., accepted: _Optional[int] = ..., duplicates: _Optional[int] = ...) -> None: ...

class CancelJobRequest(_message.Message):
    __slots__ = ("job_id", "request_id")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    request_id: str
    def __init__(self, job_id: _Optional[int] = ..., request_id: _Optional[str] = ...) -> None: ...

class CancelJobResponse(_message.Message):
    __slots__ = ("job_id", "stimulus_id")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    STIMULUS_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    stimulus_id: int
    def __init__(self, job_id: _Optional[int] = ..., stimulus_id: _Optional[int] = ...) -> None: ...

class GetJobRequest(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    def __init__(self, job_id: _Optional[int] = ...) -> None: ...

class Job(_message.Message):
    __slots__ = ("job_id", "state", "job_class", "nodes", "min_nodes", "alloc_nodes", "walltime", "submit_time", "first_start", "last_start", "predicted_end", "end_time", "preemptions", "user", "project", "queue", "owner", "block", "requested_start", "wait", "executed", "checkpoints")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    JOB_CLASS_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    MIN_NODES_FIELD_NUMBER: _ClassVar[int]
    ALLOC_NODES_FIELD_NUMBER: _ClassVar[int]
    WALLTIME_FIELD_NUMBER: _ClassVar[int]
    SUBMIT_TIME_FIELD_NUMBER: _ClassVar[int]
    FIRST_START_FIELD_NUMBER: _ClassVar[int]
    LAST_START_FIELD_NUMBER: _ClassVar[int]
    PREDICTED_END_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    PREEMPTIONS_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    PROJECT_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_START_FIELD_NUMBER: _ClassVar[int]
    WAIT_FIELD_NUMBER: _ClassVar[int]
    EXECUTED_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINTS_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    state: JobState
    job_class: JobClass
    nodes: int
    min_nodes: int
    alloc_nodes: int
    walltime: float
    submit_time: float
    first_start: float
    last_start: float
    predicted_end: float
    end_time: float
    preemptions: int
    user: int
    project: int
    queue: int
    owner: str
    block: str
    requested_start: float
    wait: float
    executed: float
    checkpoints: int
    def __init__(self, job_id: _Optional[int] = ..., state: _Optional[_Union[JobState, str]] = ..., job_class: _Optional[_Union[JobClass, str]] = ..., nodes: _Optional[int] = ..., min_nodes: _Optional[int] = ..., alloc_nodes: _Optional[int] = ..., walltime: _Optional[float] = ..., submit_time: _Optional[float] = ..., first_start: _Optional[float] = ..., last_start: _Optional[float] = ..., predicted_end: _Optional[float] = ..., end_time: _Optional[float] = ..., preemptions: _Optional[int] = ..., user: _Optional[int] = ..., project: _Optional[int] = ..., queue: _Optional[int] = ..., owner: _Optional[str] = ..., block: _Optional[str] = ..., requested_start: _Optional[float] = ..., wait: _Optional[float] = ..., executed: _Optional[float] = ..., checkpoints: _Optional[int] = ...) -> None: ...

class ListJobsRequest(_message.Message):
    __slots__ = ("states", "classes", "user", "owner", "page_size", "page_token")
    STATES_FIELD_NUMBER: _ClassVar[int]
    CLASSES_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    states: _containers.RepeatedScalarFieldContainer[JobState]
    classes: _containers.RepeatedScalarFieldContainer[JobClass]
    user: int
    owner: str
    page_size: int
    page_token: str
    def __init__(self, states: _Optional[_Iterable[_Union[JobState, str]]] = ..., classes: _Optional[_Iterable[_Union[JobClass, str]]] = ..., user: _Optional[int] = ..., owner: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListJobsResponse(_message.Message):
    __slots__ = ("jobs", "next_page_token", "total")
    JOBS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[Job]
    next_page_token: str
    total: int
    def __init__(self, jobs: _Optional[_Iterable[_Union[Job, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total: _Optional[int] = ...) -> None: ...

class AdvanceNoticeRequest(_message.Message):
    __slots__ = ("request_id", "job_id", "expected_arrival", "nodes", "walltime", "notice_time")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_ARRIVAL_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    WALLTIME_FIELD_NUMBER: _ClassVar[int]
    NOTICE_TIME_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    job_id: int
    expected_arrival: float
    nodes: int
    walltime: float
    notice_time: float
    def __init__(self, request_id: _Optional[str] = ..., job_id: _Optional[int] = ..., expected_arrival: _Optional[float] = ..., nodes: _Optional[int] = ..., walltime: _Optional[float] = ..., notice_time: _Optional[float] = ...) -> None: ...

class AdvanceNoticeResponse(_message.Message):
    __slots__ = ("stimulus_id",)
    STIMULUS_ID_FIELD_NUMBER: _ClassVar[int]
    stimulus_id: int
    def __init__(self, stimulus_id: _Optional[int] = ...) -> None: ...

class ElasticControlRequest(_message.Message):
    __slots__ = ("request_id", "job_id", "kind", "amount", "time")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    job_id: int
    kind: EccKind
    amount: float
    time: float
    def __init__(self, request_id: _Optional[str] = ..., job_id: _Optional[int] = ..., kind: _Optional[_Union[EccKind, str]] = ..., amount: _Optional[float] = ..., time: _Optional[float] = ...) -> None: ...

class ElasticControlResponse(_message.Message):
    __slots__ = ("stimulus_id",)
    STIMULUS_ID_FIELD_NUMBER: _ClassVar[int]
    stimulus_id: int
    def __init__(self, stimulus_id: _Optional[int] = ...) -> None: ...

class CheckpointDoneRequest(_message.Message):
    __slots__ = ("request_id", "job_id")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    job_id: int
    def __init__(self, request_id: _Optional[str] = ..., job_id: _Optional[int] = ...) -> None: ...

class CheckpointDoneResponse(_message.Message):
    __slots__ = ("stimulus_id",)
    STIMULUS_ID_FIELD_NUMBER: _ClassVar[int]
    stimulus_id: int
    def __init__(self, stimulus_id: _Optional[int] = ...) -> None: ...

class WatchEventsRequest(_message.Message):
    __slots__ = ("from_seq", "kinds", "job_id", "batch")
    FROM_SEQ_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    from_seq: int
    kinds: _containers.RepeatedScalarFieldContainer[str]
    job_id: int
    batch: bool
    def __init__(self, from_seq: _Optional[int] = ..., kinds: _Optional[_Iterable[str]] = ..., job_id: _Optional[int] = ..., batch: _Optional[bool] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("seq", "time", "kind", "job_id", "state", "cause", "nodes", "epoch", "more")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    MORE_FIELD_NUMBER: _ClassVar[int]
    seq: int
    time: float
    kind: str
    job_id: int
    state: JobState
    cause: str
    nodes: int
    epoch: str
    more: _containers.RepeatedCompositeFieldContainer[Event]
    def __init__(self, seq: _Optional[int] = ..., time: _Optional[float] = ..., kind: _Optional[str] = ..., job_id: _Optional[int] = ..., state: _Optional[_Union[JobState, str]] = ..., cause: _Optional[str] = ..., nodes: _Optional[int] = ..., epoch: _Optional[str] = ..., more: _Optional[_Iterable[_Union[Event, _Mapping]]] = ...) -> None: ...

class GetClusterRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ClassCount(_message.Message):
    __slots__ = ("job_class", "jobs", "nodes")
    JOB_CLASS_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    job_class: JobClass
    jobs: int
    nodes: int
    def __init__(self, job_class: _Optional[_Union[JobClass, str]] = ..., jobs: _Optional[int] = ..., nodes: _Optional[int] = ...) -> None: ...

class Partition(_message.Message):
    __slots__ = ("block", "nodes", "job_id")
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    block: str
    nodes: int
    job_id: int
    def __init__(self, block: _Optional[str] = ..., nodes: _Optional[int] = ..., job_id: _Optional[int] = ...) -> None: ...

class ClusterInfo(_message.Message):
    __slots__ = ("name", "total_nodes", "free_nodes", "busy_nodes", "down_nodes", "reserved_nodes", "utilisation", "partitions", "queue_by_class", "running_by_class", "clock", "policy", "policy_options", "seed", "pending", "finished", "counters", "max_job_nodes", "engine_options", "cluster", "policy_spec", "next_job_id")
    class PolicyOptionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class CountersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOTAL_NODES_FIELD_NUMBER: _ClassVar[int]
    FREE_NODES_FIELD_NUMBER: _ClassVar[int]
    BUSY_NODES_FIELD_NUMBER: _ClassVar[int]
    DOWN_NODES_FIELD_NUMBER: _ClassVar[int]
    RESERVED_NODES_FIELD_NUMBER: _ClassVar[int]
    UTILISATION_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_BY_CLASS_FIELD_NUMBER: _ClassVar[int]
    RUNNING_BY_CLASS_FIELD_NUMBER: _ClassVar[int]
    CLOCK_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    POLICY_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    MAX_JOB_NODES_FIELD_NUMBER: _ClassVar[int]
    ENGINE_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    POLICY_SPEC_FIELD_NUMBER: _ClassVar[int]
    NEXT_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    total_nodes: int
    free_nodes: int
    busy_nodes: int
    down_nodes: int
    reserved_nodes: int
    utilisation: float
    partitions: _containers.RepeatedCompositeFieldContainer[Partition]
    queue_by_class: _containers.RepeatedCompositeFieldContainer[ClassCount]
    running_by_class: _containers.RepeatedCompositeFieldContainer[ClassCount]
    clock: Clock
    policy: str
    policy_options: _containers.ScalarMap[str, str]
    seed: int
    pending: int
    finished: int
    counters: _containers.ScalarMap[str, float]
    max_job_nodes: int
    engine_options: str
    cluster: str
    policy_spec: str
    next_job_id: int
    def __init__(self, name: _Optional[str] = ..., total_nodes: _Optional[int] = ..., free_nodes: _Optional[int] = ..., busy_nodes: _Optional[int] = ..., down_nodes: _Optional[int] = ..., reserved_nodes: _Optional[int] = ..., utilisation: _Optional[float] = ..., partitions: _Optional[_Iterable[_Union[Partition, _Mapping]]] = ..., queue_by_class: _Optional[_Iterable[_Union[ClassCount, _Mapping]]] = ..., running_by_class: _Optional[_Iterable[_Union[ClassCount, _Mapping]]] = ..., clock: _Optional[_Union[Clock, _Mapping]] = ..., policy: _Optional[str] = ..., policy_options: _Optional[_Mapping[str, str]] = ..., seed: _Optional[int] = ..., pending: _Optional[int] = ..., finished: _Optional[int] = ..., counters: _Optional[_Mapping[str, float]] = ..., max_job_nodes: _Optional[int] = ..., engine_options: _Optional[str] = ..., cluster: _Optional[str] = ..., policy_spec: _Optional[str] = ..., next_job_id: _Optional[int] = ...) -> None: ...

class GetResultsRequest(_message.Message):
    __slots__ = ("table",)
    TABLE_FIELD_NUMBER: _ClassVar[int]
    table: str
    def __init__(self, table: _Optional[str] = ...) -> None: ...

class ResultColumn(_message.Message):
    __slots__ = ("name", "values")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    name: str
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, name: _Optional[str] = ..., values: _Optional[_Iterable[float]] = ...) -> None: ...

class ResultChunk(_message.Message):
    __slots__ = ("columns",)
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    columns: _containers.RepeatedCompositeFieldContainer[ResultColumn]
    def __init__(self, columns: _Optional[_Iterable[_Union[ResultColumn, _Mapping]]] = ...) -> None: ...

class GetClockRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Clock(_message.Message):
    __slots__ = ("now", "mode", "speedup", "paused", "engine_time", "lag", "idle")
    NOW_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    SPEEDUP_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    ENGINE_TIME_FIELD_NUMBER: _ClassVar[int]
    LAG_FIELD_NUMBER: _ClassVar[int]
    IDLE_FIELD_NUMBER: _ClassVar[int]
    now: float
    mode: str
    speedup: float
    paused: bool
    engine_time: float
    lag: float
    idle: bool
    def __init__(self, now: _Optional[float] = ..., mode: _Optional[str] = ..., speedup: _Optional[float] = ..., paused: _Optional[bool] = ..., engine_time: _Optional[float] = ..., lag: _Optional[float] = ..., idle: _Optional[bool] = ...) -> None: ...

class AdvanceClockRequest(_message.Message):
    __slots__ = ("to", "by", "until_idle")
    TO_FIELD_NUMBER: _ClassVar[int]
    BY_FIELD_NUMBER: _ClassVar[int]
    UNTIL_IDLE_FIELD_NUMBER: _ClassVar[int]
    to: float
    by: float
    until_idle: bool
    def __init__(self, to: _Optional[float] = ..., by: _Optional[float] = ..., until_idle: _Optional[bool] = ...) -> None: ...

class PauseRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ResumeRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
