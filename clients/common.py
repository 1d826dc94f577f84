"""What every client shares: connecting to the daemon (TLS, bearer token) and its options."""

from __future__ import annotations

import argparse
import os
from typing import Any

import grpc

from schedd.v1 import scheduler_pb2_grpc as pb_grpc

DEFAULT_SERVER = "127.0.0.1:50051"


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--server", default=os.environ.get("SCHEDD_SERVER", DEFAULT_SERVER),
                        metavar="HOST:PORT",
                        help=f"daemon address (default $SCHEDD_SERVER or {DEFAULT_SERVER})")
    parser.add_argument("--token", default=os.environ.get("SCHEDD_TOKEN"),
                        help="bearer token (default $SCHEDD_TOKEN)")
    parser.add_argument("--tls-ca", metavar="FILE",
                        help="PEM root certificate: connect with TLS and check the server")


def metadata(token: str | None) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),) if token else ()


def _credentials(tls_ca: str | None) -> grpc.ChannelCredentials | None:
    if not tls_ca:
        return None
    with open(tls_ca, "rb") as f:
        return grpc.ssl_channel_credentials(root_certificates=f.read())


def channel(args: argparse.Namespace) -> grpc.Channel:
    creds = _credentials(getattr(args, "tls_ca", None))
    if creds is None:
        return grpc.insecure_channel(args.server)
    return grpc.secure_channel(args.server, creds)


def aio_channel(args: argparse.Namespace) -> grpc.aio.Channel:
    creds = _credentials(getattr(args, "tls_ca", None))
    if creds is None:
        return grpc.aio.insecure_channel(args.server)
    return grpc.aio.secure_channel(args.server, creds)


def stub(ch: Any) -> pb_grpc.SchedulerStub:
    return pb_grpc.SchedulerStub(ch)


def rpc_error_text(err: grpc.RpcError) -> str:
    """`CODE: details` of a failed call (a one-line message for the user)."""
    code = err.code() if hasattr(err, "code") else None
    name = code.name if code is not None else "ERROR"
    details = err.details() if hasattr(err, "details") else str(err)
    return f"{name}: {details}"
