"""The console at /ui, driven in headless Chromium (Debian's chromium and chromedriver through
selenium): browsing keys set over RESP, editing a value with its version (a stale version shows
the conflict), the live tail of changes over SSE, and the metrics chart. Each state is saved as
a screenshot under the test's tmp path (docs/screenshots/ holds a copy of each)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import requests
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from conftest import free_port

pytestmark = pytest.mark.larder_only

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WAIT_S = 15


def start(start_server, *args):
    port = free_port()
    srv = start_server("--http-port", str(port), *args)
    return srv, f"http://127.0.0.1:{port}"


@pytest.fixture
def browser():
    for path in (CHROMIUM, CHROMEDRIVER):
        if not Path(path).exists():
            pytest.fail(f"{path} is missing: apt-get install -y chromium chromium-driver",
                        pytrace=False)
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1280,900", "--force-device-scale-factor=1"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def shots(tmp_path):
    """Saves a screenshot of the page as <name>.png under the test's tmp path."""
    directory = tmp_path / "screenshots"
    directory.mkdir()

    def shot(driver, name):
        path = directory / f"{name}.png"
        assert driver.save_screenshot(str(path))
        assert path.stat().st_size > 1000
        return path

    shot.directory = directory
    return shot


def wait(driver, condition, what):
    return WebDriverWait(driver, WAIT_S).until(lambda d: condition(d), message=what)


def listed(driver):
    return [li.get_attribute("data-key") for li in driver.find_elements(By.CSS_SELECTOR, "#keys li")]


def tail(driver):
    return [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#tail li")]


def etag(base, key, headers=None):
    resp = requests.get(f"{base}/v1/kv/{key}", headers=headers, timeout=5)
    assert resp.status_code == 200
    return resp.headers["ETag"].strip('"')


def test_the_page_is_one_self_contained_document(start_server):
    srv, base = start(start_server, "--requirepass", "s3cret")
    # Served without a token: the page itself holds no data.
    resp = requests.get(f"{base}/ui", timeout=5)
    assert resp.status_code == 200
    assert resp.headers["Content-Type"] == "text/html; charset=utf-8"
    csp = resp.headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "connect-src 'self'" in csp
    page = resp.text
    assert page.startswith("<!doctype html>")
    # No external assets: no script, style, image or font from anywhere else.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page, re.I)
    assert "<link" not in page and "@import" not in page
    assert requests.get(f"{base}/ui/", timeout=5).status_code == 200
    head = requests.head(f"{base}/ui", timeout=5)
    assert head.status_code == 200 and head.content == b""
    assert int(head.headers["Content-Length"]) == len(resp.content)
    post = requests.post(f"{base}/ui", timeout=5)
    assert post.status_code == 405 and post.headers["Allow"] == "GET, HEAD"
    assert requests.get(f"{base}/ui/other", timeout=5).status_code == 404


def test_browse_edit_conflict_tail_and_chart(start_server, browser, shots):
    srv, base = start(start_server)
    c = srv.client(decode_responses=True)
    for i in range(1, 4):
        c.set(f"user:{i}", f"name {i}")
    c.set("order:1", "pending")
    d = browser
    d.get(f"{base}/ui")
    wait(d, lambda d: sorted(listed(d)) == ["order:1", "user:1", "user:2", "user:3"],
         "every key listed")
    shots(d, "01-keys")

    # Browse by prefix.
    d.find_element(By.ID, "prefix").send_keys("user:")
    d.find_element(By.ID, "list").click()
    wait(d, lambda d: sorted(listed(d)) == ["user:1", "user:2", "user:3"], "keys by prefix")

    # View a value with its version.
    d.find_element(By.CSS_SELECTOR, '#keys li[data-key="user:2"]').click()
    value = d.find_element(By.ID, "value")
    wait(d, lambda d: value.get_attribute("value") == "name 2", "the value shown")
    version = etag(base, "user:2")
    wait(d, lambda d: d.find_element(By.ID, "version").text == version, "its version")
    shots(d, "02-value")

    # Edit it: the new value is what RESP reads, and the version moves on.
    value.clear()
    value.send_keys("edited in the console")
    d.find_element(By.ID, "save").click()
    wait(d, lambda d: "saved" in d.find_element(By.ID, "message").text, "saved")
    assert c.get("user:2") == "edited in the console"
    new_version = etag(base, "user:2")
    assert new_version != version
    assert d.find_element(By.ID, "version").text == new_version

    # Someone else writes: a save from the stale version is refused with the current one.
    c.set("user:2", "written over RESP")
    current = etag(base, "user:2")
    value.clear()
    value.send_keys("stale edit")
    d.find_element(By.ID, "save").click()
    message = d.find_element(By.ID, "message")
    wait(d, lambda d: "conflict" in message.text, "the conflict shown")
    assert current in message.text and new_version in message.text
    assert message.get_attribute("data-current") == current
    assert "error" in message.get_attribute("class")
    assert c.get("user:2") == "written over RESP"
    shots(d, "03-conflict")

    # The live tail shows a change made over RESP (the tail follows the listed prefix).
    c.set("user:9", "live")
    c.delete("user:1")
    c.set("order:2", "not under the prefix")
    wait(d, lambda d: any("user:9" in t and t.startswith("set") for t in tail(d)), "set in tail")
    wait(d, lambda d: any("user:1" in t and t.startswith("del") for t in tail(d)), "del in tail")
    assert not any("order:2" in t for t in tail(d))
    shots(d, "04-tail")

    # The chart: polled samples drawn on the canvas.
    for i in range(200):
        c.incr("counter")
    wait(d, lambda d: int(d.find_element(By.ID, "chart").get_attribute("data-samples")) >= 3,
         "samples in the chart")
    painted = d.execute_script("""
        const c = document.getElementById('chart');
        const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 0; i < data.length; i += 4) if (data[i + 3] > 0) n++;
        return n;""")
    assert painted > 500
    legend = d.execute_script("return document.getElementById('chart-status').textContent")
    assert legend.startswith("every")
    d.execute_script("document.getElementById('chart').scrollIntoView()")
    shots(d, "05-chart")


def test_a_password_needs_the_token_in_the_console(start_server, browser, shots):
    srv, base = start(start_server, "--requirepass", "s3cret")
    c = srv.client(decode_responses=True)
    c.set("secret:1", "v")
    d = browser
    d.get(f"{base}/ui")
    needed = d.find_element(By.ID, "auth-needed")
    wait(d, lambda d: needed.is_displayed(), "the token asked for")
    assert listed(d) == []
    d.find_element(By.ID, "token").send_keys("default:s3cret")
    d.find_element(By.ID, "save-token").click()
    wait(d, lambda d: listed(d) == ["secret:1"], "keys with the token")
    assert not needed.is_displayed()
    # The tail's EventSource carries the token as ?_token=.
    c.set("secret:2", "w")
    wait(d, lambda d: any("secret:2" in t for t in tail(d)), "tail with the token")
    # The token lives in the tab's session storage.
    assert d.execute_script("return sessionStorage.getItem('larder-token')") == "default:s3cret"
    shots(d, "06-token")
