"""Helpers for tests that drive the dashboard in Chromium (the `browser` fixture is in conftest.py)."""

from __future__ import annotations


def wait(browser, condition, timeout: float = 60.0):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, timeout, poll_frequency=0.1).until(lambda _: condition())


def rows(browser, table: str) -> list:
    from selenium.webdriver.common.by import By

    return browser.find_elements(By.CSS_SELECTOR, f"#{table} tr")


def log_in(browser, secret: str) -> None:
    from selenium.webdriver.common.by import By

    field = browser.find_element(By.NAME, "token")
    field.clear()
    field.send_keys(secret)
    browser.find_element(By.CSS_SELECTOR, "form.login button").click()
