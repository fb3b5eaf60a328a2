"""The dashboard in a real headless Chromium (Debian's, driven by Selenium through chromedriver), in
front of a manager and a simulated cluster's agents (at --speed 20) on a real nats-server: log in with a
token, see the hosts and the hotspot, approve one plan and reject another from the page, each asked for
first; every plan shown once; times shown as dates, the simulated clock beside them."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from browser_helpers import answer_dialog, attributes, click, log_in, posts, record_posts, rows, texts, wait
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
        answer_dialog(browser, accept=True)
        wait(browser, lambda: f"plan {second}: rejected" in browser.find_element(By.ID, "decision").text)
        # the policy recommends again at its next round: a new plan, shown once
        wait(browser, lambda: [int(p) for p in attributes(browser, "#pending tr", "data-plan")] > [second])
        (first,) = (int(plan) for plan in attributes(browser, "#pending tr", "data-plan"))
        click(browser, f'#pending tr[data-plan="{first}"] button.approve')
        answer_dialog(browser, accept=True)
        wait(browser, lambda: f"plan {first}: " in browser.find_element(By.ID, "decision").text)
        decision = browser.find_element(By.ID, "decision").text  # the API's answer, or why it refused
        assert f"plan {first}: ongoing" in decision, decision
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


def shown(browser, plan: int) -> int:
    """How many rows of the page's two plan tables show `plan`."""
    return len(attributes(browser, f'#pending tr[data-plan="{plan}"], #plans tr[data-plan="{plan}"]', "data-plan"))


def test_a_decision_is_asked_for_first_naming_the_plan_a_no_sends_nothing_and_each_plan_is_shown_once(
    nats_server, tmp_path, browser
):
    from selenium.webdriver.common.by import By

    stack = StackThread(nats_server, tmp_path)
    base = stack.start()
    store = stack.stack.manager.store
    try:
        browser.get(base + "/")
        log_in(browser, stack.stack.secrets["operator"])
        wait(browser, lambda: len(rows(browser, "pending")) >= 1)
        (plan,) = (int(plan) for plan in attributes(browser, "#pending tr", "data-plan"))
        shown_waiting = shown(browser, plan)
        record_posts(browser)
        click(browser, f'#pending tr[data-plan="{plan}"] button.approve')
        asked = answer_dialog(browser, accept=False)
        wait(browser, lambda: "nothing sent" in browser.find_element(By.ID, "decision").text)
        after_no = posts(browser), store.plan(plan).state
        click(browser, f'#pending tr[data-plan="{plan}"] button.approve')
        answer_dialog(browser, accept=True)
        wait(browser, lambda: f"plan {plan}: ongoing" in browser.find_element(By.ID, "decision").text)
        after_yes = posts(browser)
        wait(browser, lambda: attributes(browser, f'#plans tr[data-plan="{plan}"]', "data-plan"))
        shown_decided = shown(browser, plan)
    finally:
        stack.stop()
    assert asked.startswith(f"Approve plan {plan} (threshold-migration)?") and "migrate vm=v" in asked
    assert after_no == ([], "pending")
    assert after_yes == [f"/api/v1/plans/{plan}/approve"]
    assert shown_waiting == shown_decided == 1


def test_times_are_shown_as_local_dates_with_the_simulated_clusters_clock_beside_them(nats_server, tmp_path, browser):
    stack = StackThread(nats_server, tmp_path)
    base = stack.start()
    try:
        browser.get(base + "/")
        log_in(browser, stack.stack.secrets["viewer"])
        wait(browser, lambda: texts(browser, "#pending .sim") and texts(browser, "#audit .sim"))
        audit, simulated, made = (
            texts(browser, "#audit .time"),
            texts(browser, "#audit .sim"),
            texts(browser, "#pending td"),
        )
        chart = texts(browser, "#chart text")[-1]
    finally:
        stack.stop()
    year = str(datetime.now().year)  # the machine's local year, as the page shows it
    assert audit and all(year in text and not re.search(r"\d{9}", text) for text in audit)  # no epoch numbers
    assert all(text.startswith("simulated ") for text in simulated)
    assert year in made[1] and "simulated" in made[1]  # the waiting plan's "made" column
    assert year in chart and "simulated s" in chart


def test_a_waiting_plan_shows_its_forecast_beside_approve_and_reject(nats_server, tmp_path, browser):
    from sova.service.plan_forecasts import ForecastSettings

    stack = StackThread(nats_server, tmp_path, forecasts=ForecastSettings(horizon=120.0, window=120.0))
    base = stack.start()
    try:
        browser.get(base + "/")
        log_in(browser, stack.stack.secrets["viewer"])
        wait(browser, lambda: any("hot-host" in text for text in texts(browser, "#pending td.forecast")), 120)
        (plan,) = (int(plan) for plan in attributes(browser, "#pending tr", "data-plan"))
        shown_text = texts(browser, f'#pending tr[data-plan="{plan}"] td.forecast')[0]
        headings = texts(browser, "table[data-testid=pending] th")
        kept = stack.stack.manager.store.forecasts([plan])[plan]["answer"]
    finally:
        stack.stop()
    with_plan, nothing = kept["alternatives"][-1]["forecast"], kept["alternatives"][0]["forecast"]
    assert "forecast, against nothing" in headings and "over 120 s" in shown_text
    # the page says what the stored forecast says: hot-host time with the plan, and its change against nothing
    change = with_plan["hot_host_seconds"] - nothing["hot_host_seconds"]
    assert f"hot-host {with_plan['hot_host_seconds']:.0f} s ({change:+.0f} s)" in shown_text, shown_text
    assert f"{with_plan['migrations']} migration(s)" in shown_text
