"""The dashboard: one page served by the manager, which reads the API from the browser.

A person logs in with a token (``sova token add``): the page answers 401 with a login form until then,
and the token then rides in an HttpOnly, SameSite=Strict cookie (Secure over TLS), so no script can read
it and no other site can send it. Requests that change something and come with the cookie must also carry
the ``X-Sova-Dashboard`` header, which a form on another site cannot set.
"""

from __future__ import annotations

import html
from importlib.resources import files
from urllib.parse import parse_qs

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from sova.service.tokens import TokenBook

COOKIE = "sova_token"
CSRF_HEADER = "X-Sova-Dashboard"
VIEWERS = ("admin", "operator", "viewer")
_ASSETS = {"dashboard.js": "text/javascript", "dashboard.css": "text/css"}


def _asset(name: str) -> str:
    return files("sova.service").joinpath("dashboard", name).read_text(encoding="utf-8")


def _login_page(message: str = "") -> HTMLResponse:
    error = f'<p class="error">{html.escape(message)}</p>' if message else ""
    page = f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sova: log in</title>
<style>{_asset("dashboard.css")}</style></head><body><form class="login" method="post" action="/login">
<h1>Sova</h1><p>Log in with an API token (<code>sova token add NAME --role viewer</code>).</p>{error}
<input type="password" name="token" placeholder="sova_..." autocomplete="off" autofocus>
<button type="submit">log in</button></form></body></html>"""
    return HTMLResponse(page, status_code=401)


def add_dashboard(app: FastAPI, tokens: TokenBook, secure_cookie: bool) -> None:
    def signed_in(request: Request) -> bool:
        token = tokens.verify(request.cookies.get(COOKIE, ""))
        return token is not None and token.role in VIEWERS and "read" in token.scopes

    @app.get("/", include_in_schema=False)
    async def index(request: Request) -> Response:
        if not signed_in(request):
            return _login_page()
        return HTMLResponse(_asset("index.html"))

    @app.get("/dashboard/{name}", include_in_schema=False)
    async def asset(request: Request, name: str) -> Response:
        if not signed_in(request):
            return Response("log in first", status_code=401, media_type="text/plain")
        if name not in _ASSETS:
            return Response("not found", status_code=404, media_type="text/plain")
        return Response(_asset(name), media_type=_ASSETS[name])

    @app.post("/login", include_in_schema=False)
    async def login(request: Request) -> Response:
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        secret = (form.get("token") or [""])[0].strip()
        token = tokens.verify(secret)
        if token is None or token.role not in VIEWERS or "read" not in token.scopes:
            return _login_page(
                "That token is unknown, revoked, or not one for the dashboard (a tenant's, or one without the scope read)."
            )
        page = RedirectResponse("/", status_code=303)
        page.set_cookie(COOKIE, secret, httponly=True, samesite="strict", secure=secure_cookie)
        return page

    @app.post("/logout", include_in_schema=False)
    async def logout() -> Response:
        page = RedirectResponse("/", status_code=303)
        page.delete_cookie(COOKIE)
        return page
