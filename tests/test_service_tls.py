"""TLS on the bus and the API, with certificates of a CA made by openssl: a client that does not trust the
server's CA is refused, and, where client certificates are required (mutual TLS), so is a client that
shows none or one another CA signed."""

from __future__ import annotations

import asyncio
import ssl

import httpx

from service_stack import Stack
from sova.service.bus import Bus, BusError, TlsFiles, action_subject
from sova.service.natsd import NatsServer
from tls_helpers import make_certificates, make_client_certificate


async def bus_attempt(server: NatsServer, tls: TlsFiles | None) -> bool | str:
    """True if a client with `tls` connects and JetStream stores its message; else the error it got."""
    try:
        bus = await Bus.connect(server.url, server.user, server.password, name="t", timeout=3, tls=tls)
    except BusError as err:
        return str(err)
    stored = await bus.publish(action_subject("h1"), "tls-1", b"{}")
    await bus.close()
    return stored


def test_a_bus_that_wants_tls_takes_only_clients_that_check_its_certificate(tmp_path):
    ca, cert, key = make_certificates(tmp_path / "tls", "bus")
    other_ca, _, _ = make_certificates(tmp_path / "other", "other")
    server = NatsServer(tmp_path / "nats", tls=(cert, key)).start()
    try:
        trusted = asyncio.run(bus_attempt(server, TlsFiles(ca)))
        plain = asyncio.run(bus_attempt(server, None))
        stranger = asyncio.run(bus_attempt(server, TlsFiles(other_ca)))
    finally:
        server.stop()
    assert trusted is True
    assert "cannot connect to the bus" in plain and "cannot connect to the bus" in stranger


def test_a_bus_that_wants_client_certificates_takes_only_clients_showing_one_its_ca_signed(tmp_path):
    ca, cert, key = make_certificates(tmp_path / "tls", "bus")
    agent_cert, agent_key = make_client_certificate(ca, "agent-h1")
    other_ca, _, _ = make_certificates(tmp_path / "other", "other")
    stranger_cert, stranger_key = make_client_certificate(other_ca, "stranger")
    server = NatsServer(tmp_path / "nats", tls=(cert, key), client_ca=ca).start()
    try:
        with_certificate = asyncio.run(bus_attempt(server, TlsFiles(ca, agent_cert, agent_key)))
        without = asyncio.run(bus_attempt(server, TlsFiles(ca)))
        signed_elsewhere = asyncio.run(bus_attempt(server, TlsFiles(ca, stranger_cert, stranger_key)))
    finally:
        server.stop()
    assert with_certificate is True
    assert "cannot connect to the bus" in without and "cannot connect to the bus" in signed_elsewhere
    assert "verify: true" in (tmp_path / "nats" / "nats.conf").read_text()


def client_context(ca=None, certificate=None, key=None) -> ssl.SSLContext:
    """A client's TLS: trusting `ca` (else the system's CAs), showing `certificate` if given."""
    context = ssl.create_default_context(cafile=str(ca) if ca else None)
    if certificate is not None:
        context.load_cert_chain(str(certificate), str(key))
    return context


async def get_health(url: str, context: ssl.SSLContext) -> int | str:
    """/healthz's status code, or the name of the error the client got."""
    try:
        async with httpx.AsyncClient(verify=context, timeout=10) as client:
            return (await client.get(f"{url}/healthz")).status_code
    except httpx.TransportError as err:
        return f"{type(err).__name__}: {err}"


def test_the_api_over_tls_serves_a_client_that_trusts_its_ca_and_refuses_one_that_does_not(nats_server, tmp_path):
    ca, cert, key = make_certificates(tmp_path / "tls", "api")

    async def run():
        stack = Stack(nats_server, tmp_path)
        await stack.start_manager()
        try:
            url = await stack.start_api(cert, key)
            return url, await get_health(url, client_context(ca)), await get_health(url, client_context())
        finally:
            await stack.stop_all()

    url, trusting, not_trusting = asyncio.run(run())
    assert url.startswith("https://") and trusting == 200
    assert "CERTIFICATE_VERIFY_FAILED" in not_trusting


def test_an_api_that_wants_client_certificates_serves_only_clients_showing_one_its_ca_signed(nats_server, tmp_path):
    ca, cert, key = make_certificates(tmp_path / "tls", "api")
    client_cert, client_key = make_client_certificate(ca, "operator")
    other_ca, _, _ = make_certificates(tmp_path / "other", "other")
    stranger_cert, stranger_key = make_client_certificate(other_ca, "stranger")

    async def run():
        stack = Stack(nats_server, tmp_path)
        await stack.start_manager()
        try:
            url = await stack.start_api(cert, key, client_ca=ca)
            return [
                await get_health(url, context)
                for context in (
                    client_context(ca, client_cert, client_key),
                    client_context(ca),
                    client_context(ca, stranger_cert, stranger_key),
                )
            ]
        finally:
            await stack.stop_all()

    with_certificate, without, signed_elsewhere = asyncio.run(run())
    assert with_certificate == 200
    # the server ends the handshake: under TLS 1.3 the client sees it on its first read
    for refused in (without, signed_elsewhere):
        assert str(refused).startswith(("ReadError", "ConnectError")), refused
