"""Headless Chromium for the tests that open ``report.html``: load a page and read its DOM after
its script ran, or take a screenshot. A test that calls these is marked ``browser``: tests/conftest.py skips it
where no Chromium is found (Debian's ``chromium`` package; ``.ci/run`` installs it;
``LEAN_DOJO_V2_CHROMIUM`` names another build)."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

NAMES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> str | None:
    """The Chromium to run, or None where there is none."""
    return os.environ.get("LEAN_DOJO_V2_CHROMIUM") or next(
        filter(None, map(shutil.which, NAMES)), None
    )


def chromium() -> str:
    found = find_chromium()
    assert found is not None, "a test that opens a browser must be marked browser"
    return found


def browse(url: str, *args: str, timeout: float = 180) -> str:
    """Run headless Chromium on ``url`` with ``args`` (``--dump-dom``, ``--screenshot=…``) and
    return what it printed; a failure to run is the test's failure, with Chromium's stderr."""
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
        command = [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            f"--user-data-dir={profile}",
            *args,
            url,
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def dump_dom(page: Path, fragment: str = "", *, query: str = "") -> str:
    """The DOM of ``page`` (``report.html``) after its script ran, as HTML; ``fragment`` is the
    URL's ``#…`` part (without the ``#``), which the report's script opens, ``query`` its
    ``?…`` part (without the ``?``: ``status=failed&sort=name``)."""
    url = (
        page.resolve().as_uri()
        + (f"?{query}" if query else "")
        + (f"#{fragment}" if fragment else "")
    )
    return browse(url, "--dump-dom")


def shown_problems(dom: str, *, visible: bool = False) -> dict[str, str]:
    """``{problem name: status}`` of every problem row of a report's DOM, in page order;
    ``visible``: only the rows the page's filter left visible."""
    out = {}
    for attrs in re.findall(r'<details class="problem" ([^>]*)>', dom):
        if visible and re.search(r'\shidden(=""|\s|$)', attrs):
            continue
        name = re.search(r'data-name="([^"]*)"', attrs)
        status = re.search(r'data-status="([^"]*)"', attrs)
        assert name and status, attrs
        out[html.unescape(name[1])] = status[1]
    return out
