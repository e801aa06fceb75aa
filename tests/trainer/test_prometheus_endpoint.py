"""The Prometheus endpoint listens on 127.0.0.1 unless dashboards.prometheus_addr says otherwise, and answers
/metrics only: another address of the machine is refused, any other path is 404."""

import socket
import sys
import urllib.error
import urllib.request

import pytest

from trainer.dashboards import DashboardConfig, Dashboards

LOOPBACK_NETWORK = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                      reason="127.0.0.2 is a loopback address of this machine on Linux only")
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through a proxy


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def host_address() -> str | None:
    """An address of this machine outside the loopback network, if it has one (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # a documentation address: only picks the route's source address
        except OSError:
            return None
        address = s.getsockname()[0]
    return None if address.startswith("127.") or address == "0.0.0.0" else address


@pytest.fixture
def endpoint(tmp_path):
    port = free_port()
    dashboards = Dashboards(DashboardConfig(tensorboard=False, prometheus_port=port), tmp_path)
    dashboards.step({"step": 7, "loss": 2.5})
    yield port
    dashboards.close()


def get(url: str) -> tuple[int, str]:
    try:
        with DIRECT.open(url, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, ""


def test_metrics_are_served_on_127_0_0_1_and_no_other_path(endpoint):
    status, text = get(f"http://127.0.0.1:{endpoint}/metrics")
    assert status == 200 and "tokenmill_step 7.0" in text and "tokenmill_loss 2.5" in text
    for path in ("/", "/metrics/x", "/favicon.ico", "/metrics.json", "/x/metrics", "/metrics%00"):
        assert get(f"http://127.0.0.1:{endpoint}{path}")[0] == 404, path


@LOOPBACK_NETWORK
def test_another_loopback_address_is_refused(endpoint):
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.2", endpoint), timeout=30).close()


def test_the_hosts_network_address_is_refused(endpoint):
    address = host_address()
    if address is None:
        pytest.skip("this machine has no address outside the loopback network")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((address, endpoint), timeout=30).close()


@LOOPBACK_NETWORK
def test_prometheus_addr_chooses_the_address(tmp_path):
    port = free_port()
    dashboards = Dashboards(DashboardConfig(tensorboard=False, prometheus_port=port, prometheus_addr="127.0.0.2"),
                            tmp_path)
    try:
        assert get(f"http://127.0.0.2:{port}/metrics")[0] == 200
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=30).close()
    finally:
        dashboards.close()
