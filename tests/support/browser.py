"""Headless Chromium for tests that look at a page as a person would: its DOM after
load, and a screenshot. Under CI (``CI=true``) a missing browser fails the test; elsewhere
it skips (``.ci/run`` installs Debian's ``chromium``)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
WINDOW = (1280, 2400)


def chromium() -> str:
    """The browser's path (fails under CI, skips elsewhere, when there is none)."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    message = "headless Chromium is not installed (apt-get install chromium)"
    if IN_CI:
        pytest.fail(f"{message}; CI=true: this test must not skip")
    pytest.skip(message)


def _run(page: Path, profile: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    command = [
        chromium(),
        "--headless",
        "--no-sandbox",  # (root in a container)
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        f"--user-data-dir={profile}",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
        *flags,
        page.resolve().as_uri(),
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=True)


def rendered_dom(page: Path, profile: Path) -> str:
    """The page's DOM after it loaded (its scripts, if any, have run)."""
    return _run(page, profile, "--dump-dom", "--virtual-time-budget=3000").stdout


def screenshot(page: Path, profile: Path, png: Path) -> Path:
    """A PNG of the page's first ``WINDOW`` pixels."""
    _run(page, profile, f"--screenshot={png}")
    return png
