"""patchgate-signerd: the operator key signs canonical fixture digests and nothing else.

Layout: ``canonical`` (manifest checks and limits), ``keystore`` (the loaded keys, one active),
``audit`` (hash-chained, fsync'd JSON lines), ``core`` (authorize, validate, sign, audit; no grpc),
``service`` (thin gRPC adapter), ``interceptor`` (domain errors → gRPC status), ``cli``.
"""

__all__: list[str] = []
