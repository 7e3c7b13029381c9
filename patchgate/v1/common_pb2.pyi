from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PropertyClass(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PROPERTY_CLASS_UNSPECIFIED: _ClassVar[PropertyClass]
    PROPERTY_CLASS_PURE_FN: _ClassVar[PropertyClass]
    PROPERTY_CLASS_IDEMPOTENT_IO: _ClassVar[PropertyClass]
    PROPERTY_CLASS_BOUNDED_TIME: _ClassVar[PropertyClass]
    PROPERTY_CLASS_EXTERNAL_PROBE: _ClassVar[PropertyClass]

class Outcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OUTCOME_UNSPECIFIED: _ClassVar[Outcome]
    OUTCOME_PASS: _ClassVar[Outcome]
    OUTCOME_FAIL: _ClassVar[Outcome]
    OUTCOME_ERROR: _ClassVar[Outcome]
    OUTCOME_EXCEEDED_BOUND: _ClassVar[Outcome]

class TransportKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TRANSPORT_KIND_UNSPECIFIED: _ClassVar[TransportKind]
    TRANSPORT_KIND_UNAVAILABLE: _ClassVar[TransportKind]
    TRANSPORT_KIND_EMPTY_RESPONSE: _ClassVar[TransportKind]
    TRANSPORT_KIND_DEADLINE: _ClassVar[TransportKind]
    TRANSPORT_KIND_SANDBOX_START_FAILED: _ClassVar[TransportKind]
    TRANSPORT_KIND_IMAGE_MISSING: _ClassVar[TransportKind]
    TRANSPORT_KIND_RESOURCE_EXHAUSTED: _ClassVar[TransportKind]
    TRANSPORT_KIND_INTERNAL: _ClassVar[TransportKind]
    TRANSPORT_KIND_KILLED_EXTERNALLY: _ClassVar[TransportKind]
PROPERTY_CLASS_UNSPECIFIED: PropertyClass
PROPERTY_CLASS_PURE_FN: PropertyClass
PROPERTY_CLASS_IDEMPOTENT_IO: PropertyClass
PROPERTY_CLASS_BOUNDED_TIME: PropertyClass
PROPERTY_CLASS_EXTERNAL_PROBE: PropertyClass
OUTCOME_UNSPECIFIED: Outcome
OUTCOME_PASS: Outcome
OUTCOME_FAIL: Outcome
OUTCOME_ERROR: Outcome
OUTCOME_EXCEEDED_BOUND: Outcome
TRANSPORT_KIND_UNSPECIFIED: TransportKind
TRANSPORT_KIND_UNAVAILABLE: TransportKind
TRANSPORT_KIND_EMPTY_RESPONSE: TransportKind
TRANSPORT_KIND_DEADLINE: TransportKind
TRANSPORT_KIND_SANDBOX_START_FAILED: TransportKind
TRANSPORT_KIND_IMAGE_MISSING: TransportKind
TRANSPORT_KIND_RESOURCE_EXHAUSTED: TransportKind
TRANSPORT_KIND_INTERNAL: TransportKind
TRANSPORT_KIND_KILLED_EXTERNALLY: TransportKind

class FixtureEntry(_message.Message):
    __slots__ = ("path", "sha256", "size")
    PATH_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    path: str
    sha256: str
    size: int
    def __init__(self, path: _Optional[str] = ..., sha256: _Optional[str] = ..., size: _Optional[int] = ...) -> None: ...

class Command(_message.Message):
    __slots__ = ("argv",)
    ARGV_FIELD_NUMBER: _ClassVar[int]
    argv: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, argv: _Optional[_Iterable[str]] = ...) -> None: ...

class FixtureManifest(_message.Message):
    __slots__ = ("pin_id", "algorithm", "files", "seed", "clock_bound_ms", "allowed_commands", "environment_digest")
    PIN_ID_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    CLOCK_BOUND_MS_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_COMMANDS_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_DIGEST_FIELD_NUMBER: _ClassVar[int]
    pin_id: str
    algorithm: str
    files: _containers.RepeatedCompositeFieldContainer[FixtureEntry]
    seed: int
    clock_bound_ms: int
    allowed_commands: _containers.RepeatedCompositeFieldContainer[Command]
    environment_digest: str
    def __init__(self, pin_id: _Optional[str] = ..., algorithm: _Optional[str] = ..., files: _Optional[_Iterable[_Union[FixtureEntry, _Mapping]]] = ..., seed: _Optional[int] = ..., clock_bound_ms: _Optional[int] = ..., allowed_commands: _Optional[_Iterable[_Union[Command, _Mapping]]] = ..., environment_digest: _Optional[str] = ...) -> None: ...

class Signature(_message.Message):
    __slots__ = ("keyid", "sig")
    KEYID_FIELD_NUMBER: _ClassVar[int]
    SIG_FIELD_NUMBER: _ClassVar[int]
    keyid: str
    sig: bytes
    def __init__(self, keyid: _Optional[str] = ..., sig: _Optional[bytes] = ...) -> None: ...

class Envelope(_message.Message):
    __slots__ = ("payload", "payload_type", "signatures")
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_TYPE_FIELD_NUMBER: _ClassVar[int]
    SIGNATURES_FIELD_NUMBER: _ClassVar[int]
    payload: bytes
    payload_type: str
    signatures: _containers.RepeatedCompositeFieldContainer[Signature]
    def __init__(self, payload: _Optional[bytes] = ..., payload_type: _Optional[str] = ..., signatures: _Optional[_Iterable[_Union[Signature, _Mapping]]] = ...) -> None: ...

class Provenance(_message.Message):
    __slots__ = ("draft_id", "drafter", "received_at", "patch_sha256")
    DRAFT_ID_FIELD_NUMBER: _ClassVar[int]
    DRAFTER_FIELD_NUMBER: _ClassVar[int]
    RECEIVED_AT_FIELD_NUMBER: _ClassVar[int]
    PATCH_SHA256_FIELD_NUMBER: _ClassVar[int]
    draft_id: str
    drafter: str
    received_at: str
    patch_sha256: str
    def __init__(self, draft_id: _Optional[str] = ..., drafter: _Optional[str] = ..., received_at: _Optional[str] = ..., patch_sha256: _Optional[str] = ...) -> None: ...

class PropertySpec(_message.Message):
    __slots__ = ("id", "claim", "property_class", "covers", "command")
    ID_FIELD_NUMBER: _ClassVar[int]
    CLAIM_FIELD_NUMBER: _ClassVar[int]
    PROPERTY_CLASS_FIELD_NUMBER: _ClassVar[int]
    COVERS_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    id: str
    claim: str
    property_class: PropertyClass
    covers: _containers.RepeatedScalarFieldContainer[str]
    command: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, id: _Optional[str] = ..., claim: _Optional[str] = ..., property_class: _Optional[_Union[PropertyClass, str]] = ..., covers: _Optional[_Iterable[str]] = ..., command: _Optional[_Iterable[str]] = ...) -> None: ...

class RunOutcome(_message.Message):
    __slots__ = ("property_id", "run_index", "outcome", "outcome_hash", "failure_signature", "duration_ms", "executed", "tree_hash", "cases", "failure_kind", "variant")
    PROPERTY_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_INDEX_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_HASH_FIELD_NUMBER: _ClassVar[int]
    FAILURE_SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    EXECUTED_FIELD_NUMBER: _ClassVar[int]
    TREE_HASH_FIELD_NUMBER: _ClassVar[int]
    CASES_FIELD_NUMBER: _ClassVar[int]
    FAILURE_KIND_FIELD_NUMBER: _ClassVar[int]
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    property_id: str
    run_index: int
    outcome: Outcome
    outcome_hash: str
    failure_signature: str
    duration_ms: int
    executed: _containers.RepeatedScalarFieldContainer[str]
    tree_hash: str
    cases: _containers.RepeatedCompositeFieldContainer[CaseOutcome]
    failure_kind: str
    variant: int
    def __init__(self, property_id: _Optional[str] = ..., run_index: _Optional[int] = ..., outcome: _Optional[_Union[Outcome, str]] = ..., outcome_hash: _Optional[str] = ..., failure_signature: _Optional[str] = ..., duration_ms: _Optional[int] = ..., executed: _Optional[_Iterable[str]] = ..., tree_hash: _Optional[str] = ..., cases: _Optional[_Iterable[_Union[CaseOutcome, _Mapping]]] = ..., failure_kind: _Optional[str] = ..., variant: _Optional[int] = ...) -> None: ...

class CaseOutcome(_message.Message):
    __slots__ = ("nodeid", "outcome")
    NODEID_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    nodeid: str
    outcome: str
    def __init__(self, nodeid: _Optional[str] = ..., outcome: _Optional[str] = ...) -> None: ...

class TransportRecord(_message.Message):
    __slots__ = ("property_id", "run_index", "kind", "detail")
    PROPERTY_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_INDEX_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    property_id: str
    run_index: int
    kind: TransportKind
    detail: str
    def __init__(self, property_id: _Optional[str] = ..., run_index: _Optional[int] = ..., kind: _Optional[_Union[TransportKind, str]] = ..., detail: _Optional[str] = ...) -> None: ...
