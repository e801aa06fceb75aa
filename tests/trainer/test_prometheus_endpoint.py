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


def test_idle_connections_are_bounded_and_a_gone_client_is_no_traceback(tmp_path, capfd, monkeypatch):
    """Found by review (2026-12-07): each idle connection held a thread and a file of the run for good (1,600
    connections: 1,600 threads, then the run's own open() failed, EMFILE), and each client that went away
    printed a traceback of 23 lines into rank 0's log."""
    import threading
    import time

    from trainer.dashboards import MetricsServer, _MetricsHandler

    monkeypatch.setattr(_MetricsHandler, "timeout", 1)
    port = free_port()
    dashboards = Dashboards(DashboardConfig(tensorboard=False, prometheus_port=port), tmp_path)
    try:
        before = threading.active_count()
        idle = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(40)]
        time.sleep(0.3)  # the server has accepted what it takes
        assert threading.active_count() - before <= MetricsServer.MAX_CONNECTIONS
        refused = [s.recv(1) for s in idle[MetricsServer.MAX_CONNECTIONS:]]
        assert refused == [b""] * (40 - MetricsServer.MAX_CONNECTIONS)  # closed at once
        assert [s.recv(1) for s in idle[:MetricsServer.MAX_CONNECTIONS]] == [b""] * MetricsServer.MAX_CONNECTIONS
        for s in idle:  # the silent ones closed after the timeout; a scrape is answered again
            s.close()
        assert get(f"http://127.0.0.1:{port}/metrics")[0] == 200
        dashboards.heldout(1, {f"source{i}": {"loss": 1.0, "bits_per_byte": 1.0} for i in range(200)})  # 30 KB
        for _ in range(5):  # a client that sends a request and resets the connection before the answer
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            s.close()
        assert get(f"http://127.0.0.1:{port}/metrics")[0] == 200
    finally:
        dashboards.close()
    assert "Exception occurred during processing of request" not in capfd.readouterr().err  # socketserver's


def test_a_taken_port_names_the_address_and_an_empty_address_is_refused(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match=f"the Prometheus endpoint on 127.0.0.1:{port}: Address already in use"):
            Dashboards(DashboardConfig(tensorboard=False, prometheus_port=port), tmp_path)
    with pytest.raises(ValueError, match="prometheus_addr must be an address"):
        DashboardConfig(prometheus_port=port, prometheus_addr=" ")


def test_a_figure_never_given_is_not_served_as_zero(endpoint):
    """Found by review: MFU (none off CUDA) read 0 in Grafana for the whole run, while metrics.jsonl said null."""
    text = get(f"http://127.0.0.1:{endpoint}/metrics")[1]
    assert "tokenmill_loss 2.5" in text and "tokenmill_mfu" not in text
