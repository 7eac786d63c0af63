"""Sign in to a served console and read its pages, as a browser would: `package_check.sh`'s last step.

    python package_smoke.py http://127.0.0.1:8000 USER PASSWORD

Standard library only, so that it runs in a fresh virtual environment. It sends
`X-Forwarded-Proto: https`, as the TLS proxy in front of a production console does, and keeps the
cookies itself (they are `Secure`). Exits 0 when the probes answer, the sign-in works, the pages
render with their stylesheet, and the stylesheet is served.
"""

from __future__ import annotations

import http.client
import json
import re
import sys
import time
import urllib.parse


class Browser:
    def __init__(self, base: str) -> None:
        self.base = base.rstrip("/")
        parts = urllib.parse.urlsplit(self.base)
        self.host, self.port = parts.hostname, parts.port
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, form: dict | None = None) -> tuple[int, dict, bytes]:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        headers = {"X-Forwarded-Proto": "https", "Host": f"{self.host}:{self.port}"}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        body = None
        if form is not None:
            body = urllib.parse.urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            headers["Referer"] = f"https://{self.host}:{self.port}{path}"
            headers["Origin"] = f"https://{self.host}:{self.port}"
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        content = response.read()
        for name, value in response.getheaders():
            if name.lower() == "set-cookie":
                key, _, rest = value.partition("=")
                self.cookies[key.strip()] = rest.split(";", 1)[0]
        result = (response.status, {k.lower(): v for k, v in response.getheaders()}, content)
        connection.close()
        return result


def check(condition: bool, message: str) -> None:
    if not condition:
        sys.stderr.write(f"package smoke: FAILED: {message}\n")
        raise SystemExit(1)
    print(f"package smoke: {message}")


def main() -> int:
    base, user, password = sys.argv[1:4]
    browser = Browser(base)
    status, _, body = browser.request("GET", "/healthz")
    check(status == 200 and json.loads(body) == {"live": True}, "/healthz answers without a key")
    deadline = time.monotonic() + 90
    while True:
        status, _, body = browser.request("GET", "/readyz")
        if status == 200 or time.monotonic() > deadline:
            break
        time.sleep(2)
    check(status == 200, f"/readyz says ready (database, broker and a worker): {body.decode()}")
    status, _, page = browser.request("GET", "/accounts/login/")
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    check(status == 200 and token is not None, "the sign-in page renders")
    status, headers, _ = browser.request(
        "POST",
        "/accounts/login/",
        {"username": user, "password": password, "csrfmiddlewaretoken": token.group(1).decode()},
    )
    check(status == 302 and headers.get("location") == "/", f"signing in works ({status})")
    for path in ("/", "/events/", "/firewall/", "/rulebooks/", "/tools/", "/try/", "/health/"):
        status, _, page = browser.request("GET", path)
        check(status == 200, f"{path} renders ({status})")
    styles = re.search(rb'<link rel="stylesheet" href="([^"]+\.css)"', page)
    check(styles is not None, "the pages link their stylesheet")
    status, headers, css = browser.request("GET", styles.group(1).decode())
    check(
        status == 200 and b"{" in css and "css" in headers.get("content-type", ""),
        f"the stylesheet {styles.group(1).decode()} is served",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
