"""The generated gRPC classes for proto/anvil_rehost.proto, built at import time."""

from __future__ import annotations

import os
import sys

import grpc

_PROTO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "proto")
if _PROTO_DIR not in sys.path:
    sys.path.append(_PROTO_DIR)  # protos_and_services resolves the file on sys.path

messages, services = grpc.protos_and_services("anvil_rehost.proto")

SERVICE = "anvil.rehost.Rehost"
DEFAULT_ADDRESS = "127.0.0.1:50051"
