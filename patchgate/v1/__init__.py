"""Generated gRPC/protobuf code for the patchgate.v1 wire contract (see proto/, scripts/gen_proto.sh)."""
