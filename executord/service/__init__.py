"""The executor's face to the network: the thin gRPC adapter and who may call it.

``adapter`` turns protos into domain calls of ``executord.runs`` and ``executord.store`` and maps
domain errors to statuses in one interceptor; ``access`` decides, over mTLS, which peers may call.
This room may import ``runs``, ``store`` and ``errors``; nothing below it imports grpc servers.
"""
