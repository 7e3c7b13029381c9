from patchgate.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SignFixtureDigestRequest(_message.Message):
    __slots__ = ("manifest",)
    MANIFEST_FIELD_NUMBER: _ClassVar[int]
    manifest: _common_pb2.FixtureManifest
    def __init__(self, manifest: _Optional[_Union[_common_pb2.FixtureManifest, _Mapping]] = ...) -> None: ...

class SignFixtureDigestResponse(_message.Message):
    __slots__ = ("envelope", "fixture_digest")
    ENVELOPE_FIELD_NUMBER: _ClassVar[int]
    FIXTURE_DIGEST_FIELD_NUMBER: _ClassVar[int]
    envelope: _common_pb2.Envelope
    fixture_digest: str
    def __init__(self, envelope: _Optional[_Union[_common_pb2.Envelope, _Mapping]] = ..., fixture_digest: _Optional[str] = ...) -> None: ...

class GetKeyringRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class KeyringEntry(_message.Message):
    __slots__ = ("keyid", "role", "public_key_pem", "active")
    KEYID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_KEY_PEM_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    keyid: str
    role: str
    public_key_pem: str
    active: bool
    def __init__(self, keyid: _Optional[str] = ..., role: _Optional[str] = ..., public_key_pem: _Optional[str] = ..., active: _Optional[bool] = ...) -> None: ...

class Keyring(_message.Message):
    __slots__ = ("keys",)
    KEYS_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedCompositeFieldContainer[KeyringEntry]
    def __init__(self, keys: _Optional[_Iterable[_Union[KeyringEntry, _Mapping]]] = ...) -> None: ...
