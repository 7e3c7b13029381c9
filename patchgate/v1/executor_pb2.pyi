from patchgate.v1 import common_pb2 as _common_pb2
from patchgate.v1 import signer_pb2 as _signer_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class FindMissingBlobsRequest(_message.Message):
    __slots__ = ("digests",)
    DIGESTS_FIELD_NUMBER: _ClassVar[int]
    digests: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, digests: _Optional[_Iterable[str]] = ...) -> None: ...

class FindMissingBlobsResponse(_message.Message):
    __slots__ = ("missing",)
    MISSING_FIELD_NUMBER: _ClassVar[int]
    missing: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, missing: _Optional[_Iterable[str]] = ...) -> None: ...

class BlobChunk(_message.Message):
    __slots__ = ("digest", "size", "offset", "data")
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    digest: str
    size: int
    offset: int
    data: bytes
    def __init__(self, digest: _Optional[str] = ..., size: _Optional[int] = ..., offset: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class UploadBlobsResponse(_message.Message):
    __slots__ = ("blobs_stored", "bytes_stored")
    BLOBS_STORED_FIELD_NUMBER: _ClassVar[int]
    BYTES_STORED_FIELD_NUMBER: _ClassVar[int]
    blobs_stored: int
    bytes_stored: int
    def __init__(self, blobs_stored: _Optional[int] = ..., bytes_stored: _Optional[int] = ...) -> None: ...

class TreeEntry(_message.Message):
    __slots__ = ("path", "digest", "size", "executable")
    PATH_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    EXECUTABLE_FIELD_NUMBER: _ClassVar[int]
    path: str
    digest: str
    size: int
    executable: bool
    def __init__(self, path: _Optional[str] = ..., digest: _Optional[str] = ..., size: _Optional[int] = ..., executable: _Optional[bool] = ...) -> None: ...

class ExecuteRequest(_message.Message):
    __slots__ = ("request_id", "fixture_envelope", "workspace", "fixture_root", "properties", "runs", "targets", "isolation", "environment", "judge", "source_roots", "production", "variants", "variant_bound_ms", "variant_scope")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    FIXTURE_ENVELOPE_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_FIELD_NUMBER: _ClassVar[int]
    FIXTURE_ROOT_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    RUNS_FIELD_NUMBER: _ClassVar[int]
    TARGETS_FIELD_NUMBER: _ClassVar[int]
    ISOLATION_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    JUDGE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_ROOTS_FIELD_NUMBER: _ClassVar[int]
    PRODUCTION_FIELD_NUMBER: _ClassVar[int]
    VARIANTS_FIELD_NUMBER: _ClassVar[int]
    VARIANT_BOUND_MS_FIELD_NUMBER: _ClassVar[int]
    VARIANT_SCOPE_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    fixture_envelope: _common_pb2.Envelope
    workspace: _containers.RepeatedCompositeFieldContainer[TreeEntry]
    fixture_root: str
    properties: _containers.RepeatedCompositeFieldContainer[_common_pb2.PropertySpec]
    runs: int
    targets: _containers.RepeatedCompositeFieldContainer[CodeTarget]
    isolation: str
    environment: _containers.RepeatedCompositeFieldContainer[TreeEntry]
    judge: str
    source_roots: _containers.RepeatedScalarFieldContainer[str]
    production: _containers.RepeatedScalarFieldContainer[str]
    variants: _containers.RepeatedCompositeFieldContainer[Variant]
    variant_bound_ms: int
    variant_scope: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, request_id: _Optional[str] = ..., fixture_envelope: _Optional[_Union[_common_pb2.Envelope, _Mapping]] = ..., workspace: _Optional[_Iterable[_Union[TreeEntry, _Mapping]]] = ..., fixture_root: _Optional[str] = ..., properties: _Optional[_Iterable[_Union[_common_pb2.PropertySpec, _Mapping]]] = ..., runs: _Optional[int] = ..., targets: _Optional[_Iterable[_Union[CodeTarget, _Mapping]]] = ..., isolation: _Optional[str] = ..., environment: _Optional[_Iterable[_Union[TreeEntry, _Mapping]]] = ..., judge: _Optional[str] = ..., source_roots: _Optional[_Iterable[str]] = ..., production: _Optional[_Iterable[str]] = ..., variants: _Optional[_Iterable[_Union[Variant, _Mapping]]] = ..., variant_bound_ms: _Optional[int] = ..., variant_scope: _Optional[_Iterable[str]] = ...) -> None: ...

class Variant(_message.Message):
    __slots__ = ("path", "source", "scope")
    PATH_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    path: str
    source: bytes
    scope: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, path: _Optional[str] = ..., source: _Optional[bytes] = ..., scope: _Optional[_Iterable[str]] = ...) -> None: ...

class CodeTarget(_message.Message):
    __slots__ = ("path", "first_line", "last_line", "name")
    PATH_FIELD_NUMBER: _ClassVar[int]
    FIRST_LINE_FIELD_NUMBER: _ClassVar[int]
    LAST_LINE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    path: str
    first_line: int
    last_line: int
    name: str
    def __init__(self, path: _Optional[str] = ..., first_line: _Optional[int] = ..., last_line: _Optional[int] = ..., name: _Optional[str] = ...) -> None: ...

class Progress(_message.Message):
    __slots__ = ("property_id", "run_index", "phase", "message")
    PROPERTY_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_INDEX_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    property_id: str
    run_index: int
    phase: str
    message: str
    def __init__(self, property_id: _Optional[str] = ..., run_index: _Optional[int] = ..., phase: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class PhaseTimings(_message.Message):
    __slots__ = ("upload_ms", "materialize_ms", "container_start_ms", "run_ms", "collect_ms")
    UPLOAD_MS_FIELD_NUMBER: _ClassVar[int]
    MATERIALIZE_MS_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_START_MS_FIELD_NUMBER: _ClassVar[int]
    RUN_MS_FIELD_NUMBER: _ClassVar[int]
    COLLECT_MS_FIELD_NUMBER: _ClassVar[int]
    upload_ms: int
    materialize_ms: int
    container_start_ms: int
    run_ms: int
    collect_ms: int
    def __init__(self, upload_ms: _Optional[int] = ..., materialize_ms: _Optional[int] = ..., container_start_ms: _Optional[int] = ..., run_ms: _Optional[int] = ..., collect_ms: _Optional[int] = ...) -> None: ...

class SandboxSettings(_message.Message):
    __slots__ = ("image", "runtime", "network_mode", "read_only_rootfs", "user", "cap_drop", "security_opt", "pids_limit", "memory_bytes", "memswap_bytes", "nano_cpus", "tmpfs_tmp", "clock_bound_ms", "cap_add", "judge_user", "subject_user", "shared_gid", "tmpfs")
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    NETWORK_MODE_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_ROOTFS_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    CAP_DROP_FIELD_NUMBER: _ClassVar[int]
    SECURITY_OPT_FIELD_NUMBER: _ClassVar[int]
    PIDS_LIMIT_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    MEMSWAP_BYTES_FIELD_NUMBER: _ClassVar[int]
    NANO_CPUS_FIELD_NUMBER: _ClassVar[int]
    TMPFS_TMP_FIELD_NUMBER: _ClassVar[int]
    CLOCK_BOUND_MS_FIELD_NUMBER: _ClassVar[int]
    CAP_ADD_FIELD_NUMBER: _ClassVar[int]
    JUDGE_USER_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_USER_FIELD_NUMBER: _ClassVar[int]
    SHARED_GID_FIELD_NUMBER: _ClassVar[int]
    TMPFS_FIELD_NUMBER: _ClassVar[int]
    image: str
    runtime: str
    network_mode: str
    read_only_rootfs: bool
    user: str
    cap_drop: _containers.RepeatedScalarFieldContainer[str]
    security_opt: _containers.RepeatedScalarFieldContainer[str]
    pids_limit: int
    memory_bytes: int
    memswap_bytes: int
    nano_cpus: int
    tmpfs_tmp: str
    clock_bound_ms: int
    cap_add: _containers.RepeatedScalarFieldContainer[str]
    judge_user: str
    subject_user: str
    shared_gid: int
    tmpfs: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, image: _Optional[str] = ..., runtime: _Optional[str] = ..., network_mode: _Optional[str] = ..., read_only_rootfs: _Optional[bool] = ..., user: _Optional[str] = ..., cap_drop: _Optional[_Iterable[str]] = ..., security_opt: _Optional[_Iterable[str]] = ..., pids_limit: _Optional[int] = ..., memory_bytes: _Optional[int] = ..., memswap_bytes: _Optional[int] = ..., nano_cpus: _Optional[int] = ..., tmpfs_tmp: _Optional[str] = ..., clock_bound_ms: _Optional[int] = ..., cap_add: _Optional[_Iterable[str]] = ..., judge_user: _Optional[str] = ..., subject_user: _Optional[str] = ..., shared_gid: _Optional[int] = ..., tmpfs: _Optional[_Iterable[str]] = ...) -> None: ...

class ExecutionReport(_message.Message):
    __slots__ = ("request_id", "executor_keyid", "observed_fixture_digest", "pin_id", "outcomes", "transport", "timings", "sandbox", "started_at", "finished_at", "logs", "isolation", "alone", "environment", "judge")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    EXECUTOR_KEYID_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_FIXTURE_DIGEST_FIELD_NUMBER: _ClassVar[int]
    PIN_ID_FIELD_NUMBER: _ClassVar[int]
    OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    TRANSPORT_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    LOGS_FIELD_NUMBER: _ClassVar[int]
    ISOLATION_FIELD_NUMBER: _ClassVar[int]
    ALONE_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    JUDGE_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    executor_keyid: str
    observed_fixture_digest: str
    pin_id: str
    outcomes: _containers.RepeatedCompositeFieldContainer[_common_pb2.RunOutcome]
    transport: _containers.RepeatedCompositeFieldContainer[_common_pb2.TransportRecord]
    timings: PhaseTimings
    sandbox: SandboxSettings
    started_at: str
    finished_at: str
    logs: _containers.RepeatedCompositeFieldContainer[RunLog]
    isolation: str
    alone: _containers.RepeatedCompositeFieldContainer[AloneRun]
    environment: str
    judge: str
    def __init__(self, request_id: _Optional[str] = ..., executor_keyid: _Optional[str] = ..., observed_fixture_digest: _Optional[str] = ..., pin_id: _Optional[str] = ..., outcomes: _Optional[_Iterable[_Union[_common_pb2.RunOutcome, _Mapping]]] = ..., transport: _Optional[_Iterable[_Union[_common_pb2.TransportRecord, _Mapping]]] = ..., timings: _Optional[_Union[PhaseTimings, _Mapping]] = ..., sandbox: _Optional[_Union[SandboxSettings, _Mapping]] = ..., started_at: _Optional[str] = ..., finished_at: _Optional[str] = ..., logs: _Optional[_Iterable[_Union[RunLog, _Mapping]]] = ..., isolation: _Optional[str] = ..., alone: _Optional[_Iterable[_Union[AloneRun, _Mapping]]] = ..., environment: _Optional[str] = ..., judge: _Optional[str] = ...) -> None: ...

class AloneRun(_message.Message):
    __slots__ = ("property_id", "run_index", "reason")
    PROPERTY_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_INDEX_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    property_id: str
    run_index: int
    reason: str
    def __init__(self, property_id: _Optional[str] = ..., run_index: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class RunLog(_message.Message):
    __slots__ = ("property_id", "run_index", "stdout_tail", "stderr_tail", "stdout_bytes", "stderr_bytes", "property_ids")
    PROPERTY_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_INDEX_FIELD_NUMBER: _ClassVar[int]
    STDOUT_TAIL_FIELD_NUMBER: _ClassVar[int]
    STDERR_TAIL_FIELD_NUMBER: _ClassVar[int]
    STDOUT_BYTES_FIELD_NUMBER: _ClassVar[int]
    STDERR_BYTES_FIELD_NUMBER: _ClassVar[int]
    PROPERTY_IDS_FIELD_NUMBER: _ClassVar[int]
    property_id: str
    run_index: int
    stdout_tail: str
    stderr_tail: str
    stdout_bytes: int
    stderr_bytes: int
    property_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, property_id: _Optional[str] = ..., run_index: _Optional[int] = ..., stdout_tail: _Optional[str] = ..., stderr_tail: _Optional[str] = ..., stdout_bytes: _Optional[int] = ..., stderr_bytes: _Optional[int] = ..., property_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class ExecuteResult(_message.Message):
    __slots__ = ("report", "result_envelope")
    REPORT_FIELD_NUMBER: _ClassVar[int]
    RESULT_ENVELOPE_FIELD_NUMBER: _ClassVar[int]
    report: ExecutionReport
    result_envelope: _common_pb2.Envelope
    def __init__(self, report: _Optional[_Union[ExecutionReport, _Mapping]] = ..., result_envelope: _Optional[_Union[_common_pb2.Envelope, _Mapping]] = ...) -> None: ...

class ExecuteEvent(_message.Message):
    __slots__ = ("progress", "result")
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    progress: Progress
    result: ExecuteResult
    def __init__(self, progress: _Optional[_Union[Progress, _Mapping]] = ..., result: _Optional[_Union[ExecuteResult, _Mapping]] = ...) -> None: ...

class BuildRequest(_message.Message):
    __slots__ = ("request_id", "environment", "inputs", "argv", "outputs", "timeout_s", "source_roots")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    ARGV_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    SOURCE_ROOTS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    environment: _containers.RepeatedCompositeFieldContainer[TreeEntry]
    inputs: _containers.RepeatedCompositeFieldContainer[TreeEntry]
    argv: _containers.RepeatedScalarFieldContainer[str]
    outputs: _containers.RepeatedScalarFieldContainer[str]
    timeout_s: int
    source_roots: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, request_id: _Optional[str] = ..., environment: _Optional[_Iterable[_Union[TreeEntry, _Mapping]]] = ..., inputs: _Optional[_Iterable[_Union[TreeEntry, _Mapping]]] = ..., argv: _Optional[_Iterable[str]] = ..., outputs: _Optional[_Iterable[str]] = ..., timeout_s: _Optional[int] = ..., source_roots: _Optional[_Iterable[str]] = ...) -> None: ...

class BuildFile(_message.Message):
    __slots__ = ("path", "size", "offset", "data")
    PATH_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    path: str
    size: int
    offset: int
    data: bytes
    def __init__(self, path: _Optional[str] = ..., size: _Optional[int] = ..., offset: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class BuildResult(_message.Message):
    __slots__ = ("exit_code", "timed_out", "oom_killed", "files", "ignored", "stdout_tail", "stderr_tail", "run_ms")
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    TIMED_OUT_FIELD_NUMBER: _ClassVar[int]
    OOM_KILLED_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    IGNORED_FIELD_NUMBER: _ClassVar[int]
    STDOUT_TAIL_FIELD_NUMBER: _ClassVar[int]
    STDERR_TAIL_FIELD_NUMBER: _ClassVar[int]
    RUN_MS_FIELD_NUMBER: _ClassVar[int]
    exit_code: int
    timed_out: bool
    oom_killed: bool
    files: int
    ignored: int
    stdout_tail: str
    stderr_tail: str
    run_ms: int
    def __init__(self, exit_code: _Optional[int] = ..., timed_out: _Optional[bool] = ..., oom_killed: _Optional[bool] = ..., files: _Optional[int] = ..., ignored: _Optional[int] = ..., stdout_tail: _Optional[str] = ..., stderr_tail: _Optional[str] = ..., run_ms: _Optional[int] = ...) -> None: ...

class BuildEvent(_message.Message):
    __slots__ = ("file", "result")
    FILE_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    file: BuildFile
    result: BuildResult
    def __init__(self, file: _Optional[_Union[BuildFile, _Mapping]] = ..., result: _Optional[_Union[BuildResult, _Mapping]] = ...) -> None: ...

class GetInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ExecutorInfo(_message.Message):
    __slots__ = ("executor_keyid", "public_key_pem", "image", "runtime", "max_parallel", "version", "operator_keyring")
    EXECUTOR_KEYID_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_KEY_PEM_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    MAX_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_KEYRING_FIELD_NUMBER: _ClassVar[int]
    executor_keyid: str
    public_key_pem: str
    image: str
    runtime: str
    max_parallel: int
    version: str
    operator_keyring: _signer_pb2.Keyring
    def __init__(self, executor_keyid: _Optional[str] = ..., public_key_pem: _Optional[str] = ..., image: _Optional[str] = ..., runtime: _Optional[str] = ..., max_parallel: _Optional[int] = ..., version: _Optional[str] = ..., operator_keyring: _Optional[_Union[_signer_pb2.Keyring, _Mapping]] = ...) -> None: ...
