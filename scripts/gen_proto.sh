#!/usr/bin/env bash
# Regenerates patchgate/v1/*_pb2.py, *_pb2_grpc.py and *.pyi from proto/. One way, used by the
# staleness test too (tests/unit/test_generated_code.py).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$here}
cd "$here"
python -m grpc_tools.protoc -I proto \
  --python_out="$out" --pyi_out="$out" --grpc_python_out="$out" \
  proto/patchgate/v1/common.proto proto/patchgate/v1/signer.proto proto/patchgate/v1/executor.proto
