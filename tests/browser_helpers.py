"""Helpers for tests that drive the dashboard in Chromium (the `browser` fixture is in conftest.py)."""

from __future__ import annotations


def wait(browser, condition, timeout: float = 60.0):
    """Poll `condition()` until it holds; the page redraws every 2 s, so an element found a moment ago
    may be gone (stale): that counts as not yet."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    stale = (StaleElementReferenceException,)
    return WebDriverWait(browser, timeout, poll_frequency=0.1, ignored_exceptions=stale).until(lambda _: condition())


def attributes(browser, css: str, name: str) -> list[str]:
    """An attribute of every element matching `css`, read in one go (no element can go stale meanwhile)."""
    script = "return [...document.querySelectorAll(arguments[0])].map(e => e.getAttribute(arguments[1]))"
    return browser.execute_script(script, css, name)


def click(browser, css: str) -> None:
    """Click the element matching `css`, looked up again if the page redrew it meanwhile."""
    from selenium.webdriver.common.by import By

    def clicked() -> bool:
        browser.find_element(By.CSS_SELECTOR, css).click()
        return True

    wait(browser, clicked)


def rows(browser, table: str) -> list:
    from selenium.webdriver.common.by import By

    return browser.find_elements(By.CSS_SELECTOR, f"#{table} tr")


def log_in(browser, secret: str) -> None:
    """Fill the login form and send it, from the start again if the page redrew the form meanwhile (the
    answer to an earlier post can replace it between finding the field and typing into it)."""
    from selenium.webdriver.common.by import By

    def sent() -> bool:
        field = browser.find_element(By.NAME, "token")
        field.clear()
        field.send_keys(secret)
        browser.find_element(By.CSS_SELECTOR, "form.login button").click()
        return True

    wait(browser, sent)


def answer_dialog(browser, accept: bool) -> str:
    """Wait for the page's confirm dialog, say yes (`accept`) or no to it; its question."""
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    dialog = WebDriverWait(browser, 30).until(expected_conditions.alert_is_present())
    question = dialog.text
    if accept:
        dialog.accept()
    else:
        dialog.dismiss()
    return question


def record_posts(browser) -> None:
    """From now on, note on the page every POST it sends (read them with `posts`)."""
    script = """window.sentPosts = [];
    const send = window.fetch;
    window.fetch = (path, options = {}) => {
      if (options.method === "POST") window.sentPosts.push(String(path));
      return send(path, options);
    };"""
    browser.execute_script(script)


def posts(browser) -> list[str]:
    return browser.execute_script("return window.sentPosts")


def texts(browser, css: str) -> list[str]:
    """The text of every element matching `css`, read in one go."""
    return browser.execute_script("return [...document.querySelectorAll(arguments[0])].map(e => e.textContent)", css)
