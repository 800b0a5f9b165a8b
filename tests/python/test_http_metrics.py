"""The HTTP door's operations endpoints: /metrics in the Prometheus text format (parsed with
prometheus_client's parser) under redis_exporter's names, and /healthz, /livez, /readyz."""

from __future__ import annotations

import socket
import subprocess
import time

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from conftest import free_port

pytestmark = pytest.mark.larder_only


def start(start_server, *args):
    port = free_port()
    srv = start_server("--http-port", str(port), *args)
    return srv, f"http://127.0.0.1:{port}"


def scrape(base, headers=None, session=requests):
    """Families by name (prometheus_client strips `_total` from counter family names)."""
    resp = session.get(f"{base}/metrics", headers=headers, timeout=10)
    assert resp.status_code == 200, resp.text
    assert resp.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    return {f.name: f for f in text_string_to_metric_families(resp.text)}, resp.text


def value(families, name, **labels):
    """The value of the sample `name` whose labels include `labels` (None when absent)."""
    for fam in families.values():
        for s in fam.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
    return None


# redis_exporter's names and types for what its stock Grafana dashboard and the redis-mixin
# read (contrib/grafana_prometheus_redis_dashboard.json), with their label names.
DASHBOARD = {
    "redis_up": ("gauge", set()),
    "redis_uptime_in_seconds": ("gauge", set()),
    "redis_connected_clients": ("gauge", set()),
    "redis_blocked_clients": ("gauge", set()),
    "redis_memory_used_bytes": ("gauge", set()),
    "redis_memory_max_bytes": ("gauge", set()),
    "redis_memory_used_rss_bytes": ("gauge", set()),
    "redis_commands": ("counter", {"cmd"}),
    "redis_commands_duration_seconds": ("counter", {"cmd"}),
    "redis_keyspace_hits": ("counter", set()),
    "redis_keyspace_misses": ("counter", set()),
    "redis_db_keys": ("gauge", {"db"}),
    "redis_db_keys_expiring": ("gauge", {"db"}),
    "redis_expired_keys": ("counter", set()),
    "redis_evicted_keys": ("counter", set()),
    "redis_net_input_bytes": ("counter", set()),
    "redis_net_output_bytes": ("counter", set()),
    "redis_commands_processed": ("counter", set()),
    "redis_connections_received": ("counter", set()),
    "redis_connected_slaves": ("gauge", set()),
    "redis_rdb_last_save_timestamp_seconds": ("gauge", set()),
    "redis_aof_enabled": ("gauge", set()),
    "redis_instance_info": ("gauge", {"role", "redis_version", "redis_mode", "tcp_port",
                                      "run_id", "maxmemory_policy", "os", "process_id",
                                      "redis_build_id", "master_replid"}),
    "redis_errors": ("counter", {"err"}),
    "redis_latency_percentiles_usec": ("summary", {"cmd", "quantile"}),
    "larder_expiry_lateness_seconds": ("histogram", {"le"}),
    "larder_http_requests": ("counter", {"route", "code"}),
    "larder_http_request_duration_seconds": ("histogram", {"route", "le"}),
}


def test_metrics_are_well_formed_with_redis_exporter_names(start_server):
    srv, base = start(start_server)
    c = srv.client(decode_responses=True)
    c.set("a", "1")
    c.set("b", "2", ex=100)
    c.get("a")
    c.get("missing")
    try:
        c.execute_command("NOSUCHCOMMAND")
    except Exception:
        pass
    requests.get(f"{base}/v1/kv/a", timeout=5)
    fams, text = scrape(base)
    # Every family was declared: an undeclared sample would parse as an untyped family.
    untyped = [f.name for f in fams.values() if f.type == "untyped"]
    assert untyped == []
    # One HELP and one TYPE line per family, and no sample of a family outside its block.
    type_lines = [l.split()[2] for l in text.splitlines() if l.startswith("# TYPE ")]
    assert len(type_lines) == len(set(type_lines))
    for name, (kind, labels) in DASHBOARD.items():
        assert name in fams, name
        fam = fams[name]
        assert fam.type == kind, (name, fam.type)
        assert fam.samples, name
        for s in fam.samples:
            if s.name.endswith(("_sum", "_count")):
                continue
            assert set(s.labels) == labels, (s.name, s.labels)
    # HELP texts as redis_exporter writes them.
    assert fams["redis_commands"].documentation == "Total number of calls per command"
    assert fams["redis_db_keys"].documentation == "Total number of keys by DB"
    assert fams["redis_up"].documentation == "Information about the Redis instance"
    assert fams["redis_memory_used_bytes"].documentation == "memory_used_bytes metric"
    assert value(fams, "redis_up") == 1
    assert value(fams, "redis_db_keys", db="db0") == 2
    assert value(fams, "redis_db_keys_expiring", db="db0") == 1
    assert value(fams, "redis_errors_total", err="ERR") >= 1
    info = c.info("everything")
    assert value(fams, "redis_instance_info", role="master",
                 redis_version=info["redis_version"], run_id=info["run_id"]) == 1
    assert value(fams, "redis_memory_max_bytes") == info["maxmemory"]
    assert value(fams, "larder_http_requests_total", route="kv", code="200") == 1
    assert value(fams, "larder_http_request_duration_seconds_count", route="kv") == 1


def test_metrics_move_with_the_commands_sent(start_server):
    srv, base = start(start_server)
    c = srv.client(decode_responses=True)
    c.set("warm", "up")
    # One kept-alive connection for every scrape: it counts as a client in each.
    http = requests.Session()
    before, _ = scrape(base, session=http)
    sets_before = value(before, "redis_commands_total", cmd="set")
    hits_before = value(before, "redis_keyspace_hits_total")
    misses_before = value(before, "redis_keyspace_misses_total")
    for i in range(17):
        c.set(f"k{i}", i)
    for i in range(5):
        assert c.get(f"k{i}") == str(i)
    for i in range(3):
        assert c.get(f"nope{i}") is None
    extra = [srv.client() for _ in range(3)]
    for e in extra:
        e.ping()
    after, _ = scrape(base, session=http)
    assert value(after, "redis_commands_total", cmd="set") == sets_before + 17
    assert value(after, "redis_keyspace_hits_total") == hits_before + 5
    assert value(after, "redis_keyspace_misses_total") == misses_before + 3
    assert value(after, "redis_db_keys", db="db0") == 18
    clients = value(after, "redis_connected_clients")
    assert clients == value(before, "redis_connected_clients") + 3
    assert clients == c.info("clients")["connected_clients"]
    assert value(after, "redis_commands_duration_seconds_total", cmd="set") > 0
    # The summary's count is the command's calls.
    assert value(after, "redis_latency_percentiles_usec_count", cmd="set") == sets_before + 17
    c.select(3)
    c.set("x", 1)
    third, _ = scrape(base)
    assert value(third, "redis_db_keys", db="db3") == 1


def test_http_requests_are_counted_by_route_and_code(start_server):
    srv, base = start(start_server)
    s = requests.Session()
    for _ in range(4):
        assert s.put(f"{base}/v1/kv/k", data=b"v", timeout=5).status_code in (200, 201, 204)
    for _ in range(2):
        assert s.get(f"{base}/v1/kv/absent", timeout=5).status_code == 404
    assert s.get(f"{base}/healthz", timeout=5).status_code == 200
    fams, _ = scrape(base)
    puts = sum(value(fams, "larder_http_requests_total", route="kv", code=str(code)) or 0
               for code in (200, 201, 204))
    assert puts == 4
    assert value(fams, "larder_http_requests_total", route="kv", code="404") == 2
    assert value(fams, "larder_http_requests_total", route="health", code="200") == 1
    assert value(fams, "larder_http_request_duration_seconds_count", route="kv") == 6
    assert value(fams, "larder_http_request_duration_seconds_bucket", route="kv",
                 le="+Inf") == 6
    # A request the codec refuses is counted too.
    with socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1])), timeout=5) as raw:
        raw.sendall(b"GET /v1/kv/x HTTP/1.1\r\nContent-Length: nope\r\n\r\n")
        assert raw.recv(100).startswith(b"HTTP/1.1 400")
    fams, _ = scrape(base)
    assert value(fams, "larder_http_requests_total", route="invalid", code="400") == 1
    # The scrape before this one was counted as well.
    assert value(fams, "larder_http_requests_total", route="metrics", code="200") >= 1


def test_expiry_lateness_histogram_counts_removed_keys(start_server):
    srv, base = start(start_server)
    c = srv.client()
    for i in range(20):
        c.set(f"e{i}", 1, px=20)
    deadline = time.monotonic() + 10
    while c.dbsize() and time.monotonic() < deadline:
        time.sleep(0.05)
    fams, _ = scrape(base)
    count = value(fams, "larder_expiry_lateness_seconds_count")
    assert value(fams, "redis_expired_keys_total") == 20
    assert count == 20
    assert value(fams, "larder_expiry_lateness_seconds_bucket", le="+Inf") == count
    assert value(fams, "larder_expiry_lateness_seconds_bucket", le="0.5") <= count


def test_metrics_need_the_token_once_a_password_is_set(start_server):
    srv, base = start(start_server, "--requirepass", "s3cret")
    resp = requests.get(f"{base}/metrics", timeout=5)
    assert resp.status_code == 401
    assert resp.headers["WWW-Authenticate"].startswith("Bearer")
    resp = requests.get(f"{base}/metrics", headers={"Authorization": "Bearer wrong"}, timeout=5)
    assert resp.status_code == 401
    fams, _ = scrape(base, headers={"Authorization": "Bearer default:s3cret"})
    assert value(fams, "redis_up") == 1
    # Health needs no token.
    for path in ("/healthz", "/livez", "/readyz"):
        assert requests.get(base + path, timeout=5).status_code == 200


def test_health_endpoints(start_server):
    srv, base = start(start_server)
    for path, status in (("/healthz", "ok"), ("/livez", "ok"), ("/readyz", "ready")):
        resp = requests.get(base + path, timeout=5)
        assert resp.status_code == 200
        assert resp.json() == {"status": status}
        head = requests.head(base + path, timeout=5)
        assert head.status_code == 200
        assert head.content == b""
        assert int(head.headers["Content-Length"]) == len(resp.content)
        post = requests.post(base + path, timeout=5)
        assert post.status_code == 405
        assert post.headers["Allow"] == "GET, HEAD"
    head = requests.head(f"{base}/metrics", timeout=5)
    assert head.status_code == 200 and head.content == b""


def test_readyz_is_503_while_the_log_refuses_writes(start_server):
    srv, base = start(start_server, "--appendonly", "yes", "--appendfsync", "always")
    c = srv.client()
    c.set("before", 1)
    c.config_set("aof-test-fail-writes", "yes")
    with pytest.raises(Exception, match="MISCONF"):
        c.set("lost", 1)
    resp = requests.get(f"{base}/readyz", timeout=5)
    assert resp.status_code == 503
    assert resp.json()["status"] == "refusing writes"
    assert resp.json()["error"].startswith("MISCONF")
    assert requests.get(f"{base}/livez", timeout=5).status_code == 200
    fams, _ = scrape(base)
    assert value(fams, "redis_aof_last_write_status") == 0
    c.config_set("aof-test-fail-writes", "no")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if requests.get(f"{base}/readyz", timeout=5).status_code == 200:
            break
        time.sleep(0.2)
    assert requests.get(f"{base}/readyz", timeout=5).status_code == 200


def test_readyz_is_503_while_the_data_loads(start_server):
    srv, _ = start(start_server, "--appendfsync", "always")
    c = srv.client()
    for i in range(300):
        c.set(f"k{i}", i)
    c.save()
    srv.stop()
    # 10 ms per key: about 3 s of loading the snapshot.
    http = free_port()
    argv = srv.argv() + ["--http-port", str(http),
                         "--key-load-delay", "10000"]
    proc = subprocess.Popen(argv, cwd=srv.workdir, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{http}"
    try:
        seen = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                ready = requests.get(f"{base}/readyz", timeout=2)
                live = requests.get(f"{base}/livez", timeout=2)
                metrics = requests.get(f"{base}/metrics", timeout=5)
            except requests.ConnectionError:
                time.sleep(0.05)
                continue
            assert live.status_code == 200
            fams = {f.name: f for f in text_string_to_metric_families(metrics.text)}
            loading = value(fams, "redis_loading_dump_file")
            seen.append((ready.status_code, loading))
            if ready.status_code == 200:
                break
            assert ready.json()["status"] == "loading"
            time.sleep(0.05)
        assert (503, 1) in seen, seen
        assert seen[-1][0] == 200, seen
        assert requests.get(f"{base}/v1/kv/k7", timeout=5).content == b"7"
    finally:
        proc.kill()
        proc.wait()
