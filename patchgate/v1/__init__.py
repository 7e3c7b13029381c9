"""Generated protobuf and gRPC code: patchgate.v1 wire contract (proto/, scripts/gen_proto.sh)."""
