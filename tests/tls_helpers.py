"""Certificates for TLS tests, made by openssl: a CA of our own, a server certificate it signed for
127.0.0.1, and client certificates it signed."""

from __future__ import annotations

import subprocess
from pathlib import Path


def _openssl(*commands: str) -> None:
    for command in commands:
        subprocess.run(["openssl", *command.split()], check=True, capture_output=True)


def make_certificates(directory: Path, name: str) -> tuple[Path, Path, Path]:
    """A CA of our own and a server certificate it signed for 127.0.0.1: (ca, certificate, key). The CA's
    key is beside them, for `make_client_certificate`."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca, key, request, cert, extensions = (
        directory / f"{name}-{part}" for part in ("ca.key", "ca.pem", "server.key", "server.csr", "server.pem", "ext")
    )
    extensions.write_text("subjectAltName = IP:127.0.0.1\n")
    _openssl(
        f"req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN={name}-CA -keyout {ca_key} -out {ca}",
        f"req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout {key} -out {request}",
        f"x509 -req -days 2 -in {request} -CA {ca} -CAkey {ca_key} -CAcreateserial -out {cert} -extfile {extensions}",
    )
    return ca, cert, key


def make_client_certificate(ca: Path, client: str) -> tuple[Path, Path]:
    """A client certificate (for TLS client authentication) that the CA `ca` (made by `make_certificates`)
    signed, named `client`: (certificate, key)."""
    directory = ca.parent
    ca_key = ca.with_name(ca.name.replace("ca.pem", "ca.key"))
    key, request, cert, extensions = (directory / f"{client}.{part}" for part in ("key", "csr", "pem", "ext"))
    extensions.write_text("extendedKeyUsage = clientAuth\n")
    _openssl(
        f"req -newkey rsa:2048 -nodes -subj /CN={client} -keyout {key} -out {request}",
        f"x509 -req -days 2 -in {request} -CA {ca} -CAkey {ca_key} -CAcreateserial -out {cert} -extfile {extensions}",
    )
    return cert, key
