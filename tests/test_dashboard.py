"""The dashboard in a real headless Chromium (Debian's, driven by Selenium through chromedriver), in
front of a manager and a simulated cluster's agents on a real nats-server: log in with a token, see the
hosts and the hotspot, approve one plan and reject another from the page."""

from __future__ import annotations

from pathlib import Path

from browser_helpers import attributes, click, log_in, rows, wait
from service_stack import StackThread


def test_an_operator_logs_in_sees_the_hotspot_and_decides_plans_from_the_page(nats_server, tmp_path, browser):
    from selenium.webdriver.common.by import By

    stack = StackThread(nats_server, tmp_path)
    base = stack.start()
    try:
        browser.get(base + "/")
        assert "Log in with an API token" in browser.page_source
        log_in(browser, "sova_wrong")
        wait(browser, lambda: "unknown, revoked" in browser.page_source)  # the answer to the form's post
        log_in(browser, stack.stack.secrets["tenant"])  # a tenant's token opens no dashboard
        wait(browser, lambda: "not one for the dashboard" in browser.page_source)
        log_in(browser, stack.stack.secrets["operator"])
        wait(browser, lambda: len(rows(browser, "hosts")) == 2)
        wait(browser, lambda: browser.find_elements(By.CSS_SELECTOR, "#findings li[data-kind=hotspot]"))
        wait(browser, lambda: len(rows(browser, "pending")) >= 1)
        (second,) = (int(plan) for plan in attributes(browser, "#pending tr", "data-plan"))
        click(browser, f'#pending tr[data-plan="{second}"] button.reject')
        wait(browser, lambda: f"plan {second}: rejected" in browser.find_element(By.ID, "decision").text)
        # the policy recommends again at its next round: a new plan, shown once
        wait(browser, lambda: [int(p) for p in attributes(browser, "#pending tr", "data-plan")] > [second])
        (first,) = (int(plan) for plan in attributes(browser, "#pending tr", "data-plan"))
        click(browser, f'#pending tr[data-plan="{first}"] button.approve')
        wait(browser, lambda: f"plan {first}: ongoing" in browser.find_element(By.ID, "decision").text)
        store = stack.stack.manager.store
        wait(browser, lambda: store.plan(first).state == "succeeded")
        wait(
            browser, lambda: browser.find_elements(By.CSS_SELECTOR, f'#plans tr[data-plan="{first}"] .state-succeeded')
        )
        chart_hosts = set(attributes(browser, "#chart polyline", "data-host"))
        browser.save_screenshot(str(tmp_path / "dashboard.png"))
        decided = store.plan(first), store.plan(second)
    finally:
        stack.stop()
    assert decided[0].decided_by == "otto" and decided[1].state == "rejected"
    assert decided[1].decided_by == "otto"
    assert chart_hosts == {"h1", "h2"}
    assert Path(tmp_path / "dashboard.png").stat().st_size > 10_000
