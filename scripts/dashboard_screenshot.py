"""Take docs/images/dashboard.png: `sova serve` on the moving-hotspots scenario in approve mode, the
dashboard in headless Chromium once plans wait for approval, one of them approved from the page (its
question answered yes).

    .venv/bin/python scripts/dashboard_screenshot.py [--out docs/images/dashboard.png]
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from sova.service.natsd import free_port

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images" / "dashboard.png")
    args = parser.parse_args()
    scenario = ROOT / "scenarios" / "service" / "moving-hotspots.toml"
    with tempfile.TemporaryDirectory(prefix="sova-shot-") as tmp:
        directory = Path(tmp) / "stack"
        command = ["serve", "--sim", str(scenario), "--speed", "10", "--mode", "approve", "--dir", str(directory)]
        serve = subprocess.Popen(
            [sys.executable, "-m", "sova.cli", *command, "--api", f"127.0.0.1:{free_port()}"],
            start_new_session=True,
        )
        options = webdriver.ChromeOptions()
        for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1500"):
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={tmp}/chromium")
        browser = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        try:
            while not (directory / "serve.json").exists():
                if serve.poll() is not None:
                    raise SystemExit("sova serve exited")
                time.sleep(0.2)
            url = json.loads((directory / "serve.json").read_text())["url"]
            browser.get(url + "/")
            browser.find_element(By.NAME, "token").send_keys((directory / "admin.token").read_text().strip())
            browser.find_element(By.CSS_SELECTOR, "form.login button").click()
            wait = WebDriverWait(browser, 300, poll_frequency=0.5)
            wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#pending tr")) >= 2)
            browser.find_elements(By.CSS_SELECTOR, "#pending button.approve")[-1].click()
            wait.until(expected_conditions.alert_is_present()).accept()  # the page asks first
            time.sleep(30)  # a minute of simulated load more on the chart, and the approved plan run
            args.out.parent.mkdir(parents=True, exist_ok=True)
            browser.save_screenshot(str(args.out))
            print(f"wrote {args.out}")
        finally:
            browser.quit()
            serve.send_signal(signal.SIGINT)
            serve.wait(60)


if __name__ == "__main__":
    main()
