"""A service connects to a nats-server that requires TLS and a password, as in Kubernetes."""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest

from rag_common.wire import subjects
from rag_devrun.natsserver import nats_server_binary
from rag_router.app import create_app
from rag_router.settings import RouterSettings

pytestmark = pytest.mark.integration

PASSWORD = "test-password-1"


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture
def secure_nats(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """nats-server with TLS (a throw-away CA) and user `rag`; yields its tls:// URL and the CA file."""
    if not shutil.which("openssl"):
        pytest.skip("openssl is not installed: cannot make test certificates")
    curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl(
        "req",
        "-x509",
        *curve,
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-subj",
        "/CN=test-ca",
        "-days",
        "1",
        cwd=tmp_path,
    )
    openssl("req", *curve, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1", cwd=tmp_path)
    (tmp_path / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl(
        "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "server.crt", "-days", "1", "-extfile", "san.ext", cwd=tmp_path,
    )  # fmt: skip
    config = tmp_path / "nats.conf"
    config.write_text(
        "host: 127.0.0.1\nport: -1\n"
        f'ports_file_dir: "{tmp_path}"\n'
        f'tls {{\n  cert_file: "{tmp_path / "server.crt"}"\n  key_file: "{tmp_path / "server.key"}"\n}}\n'
        f'authorization {{\n  user: rag\n  password: "{PASSWORD}"\n}}\n'
        f'jetstream {{\n  store_dir: "{tmp_path / "js"}"\n}}\n'
    )
    process = subprocess.Popen(
        [nats_server_binary(), "-c", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        ports = tmp_path / f"nats-server_{process.pid}.ports"
        deadline = time.monotonic() + 15
        while not ports.exists():
            assert process.poll() is None, "nats-server exited"
            assert time.monotonic() < deadline, "nats-server not ready"
            time.sleep(0.02)
        port = json.loads(ports.read_text())["nats"][0].rsplit(":", 1)[-1]
        yield f"tls://127.0.0.1:{port}", tmp_path / "ca.crt"
    finally:
        process.terminate()
        process.wait(timeout=10)


async def test_service_connects_with_tls_and_password_and_declares_its_consumer(
    secure_nats: tuple[str, Path],
) -> None:
    url, ca = secure_nats
    settings = RouterSettings(
        nats_url=url, nats_user="rag", nats_password=PASSWORD, nats_tls_ca_file=ca, metrics_port=0
    )
    app = create_app(settings)
    await app.start()
    try:
        context = ssl.create_default_context(cafile=str(ca))
        nc = await nats.connect(url, user="rag", password=PASSWORD, tls=context)
        try:
            info = await nc.jetstream().consumer_info(subjects.QUERY_STREAM, subjects.ROUTER_CONSUMER)
            assert info.config.durable_name == subjects.ROUTER_CONSUMER
        finally:
            await nc.close()
    finally:
        await app.stop()


async def test_a_wrong_password_is_refused(secure_nats: tuple[str, Path]) -> None:
    url, ca = secure_nats
    settings = RouterSettings(nats_url=url, nats_user="rag", nats_password="wrong", nats_tls_ca_file=ca, metrics_port=0)
    broker = create_app(settings).broker
    assert broker is not None
    with pytest.raises(Exception, match=r"(?i)authorization"):
        await broker.connect()
    await broker.stop()
