#!/usr/bin/env bash
# Generates contend's CRI client code (src/contend/cri/api_pb2*.py) from src/contend/cri/api.proto, with
# grpcio-tools (a dev dependency). The generated files are committed: contend needs no compiler at run time.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m grpc_tools.protoc -I src --python_out=src --pyi_out=src --grpc_python_out=src src/contend/cri/api.proto
