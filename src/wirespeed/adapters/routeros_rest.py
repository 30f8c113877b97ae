"""The RouterOS REST API over HTTPS (or HTTP), with the standard library: Basic auth, JSON in and out.

Certificates are verified by default, against the system's trust store or the `ca_file` the user names (a
switch's self-signed certificate); `insecure` turns verification off, as `curl -k` does. The password is read from
the environment variable or the file the cluster file names, sent in the Authorization header and nowhere else:
it is never printed, logged, or written into runs and reports. Every failure becomes one SwitchError line naming
the switch, with a hint.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import ssl
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from wirespeed.core.cluster.routeros import SwitchConfig
from wirespeed.core.errors import SwitchError

DEFAULT_TIMEOUT_S = 10.0


class SwitchTimeout(SwitchError):
    """The switch did not answer one request in time (its caller may say which request, and which ports)."""


def read_password(config: SwitchConfig, environ: Mapping[str, str] | None = None) -> str:
    """The switch password: the environment variable first, then the password file (its first line).

    The file must not be readable by group or others, as ssh demands of a private key."""
    env = os.environ if environ is None else environ
    if config.password_env in env:
        return env[config.password_env]
    if config.password_file:
        path = Path(config.password_file).expanduser()
        try:
            mode = path.stat().st_mode
            text = path.read_text()
        except OSError as exc:
            raise SwitchError(
                f"switch {config.address}: cannot read password_file {path}: {exc.strerror}",
                hint=f"create it with only the password, chmod 600, or export {config.password_env}",
            ) from None
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise SwitchError(
                f"switch {config.address}: password_file {path} is readable by others",
                hint=f"chmod 600 {path}",
            )
        return text.splitlines()[0] if text else ""
    raise SwitchError(
        f"switch {config.address}: no password for user {config.user!r}",
        hint=f"export {config.password_env}=..., or password_file = a file only you can read, in [switch]",
    )


def _host_port(address: str, tls: bool) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if sep and port.isdigit() and "]" not in port:
        return host.strip("[]"), int(port)
    return address.strip("[]"), 443 if tls else 80


class RouterOSClient:
    """One switch's REST API (`/rest/...`). Paths are given without `/rest`; ids like `*1` are quoted for the URL."""

    def __init__(
        self,
        config: SwitchConfig,
        password: str,
        *,
        insecure: bool = False,
        ca_file: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.config = config
        self.address = config.address
        self.timeout_s = timeout_s
        self._host, self._port = _host_port(config.address, config.tls)
        token = base64.b64encode(f"{config.user}:{password}".encode()).decode()
        self._headers = {"Authorization": f"Basic {token}", "Accept": "application/json"}
        self._context: ssl.SSLContext | None = None
        if config.tls:
            ca = ca_file or config.ca_file
            try:
                self._context = ssl.create_default_context(cafile=str(Path(ca).expanduser()) if ca else None)
            except (OSError, ssl.SSLError) as exc:
                raise SwitchError(
                    f"switch {self.address}: cannot load ca_file {ca}: {exc}",
                    hint="ca_file is the switch's certificate (PEM): /certificate export-certificate on the switch",
                ) from None
            if insecure:
                self._context.check_hostname = False
                self._context.verify_mode = ssl.CERT_NONE

    def __repr__(self) -> str:
        return f"RouterOSClient({self.address!r}, user={self.config.user!r})"  # never the password

    # -- the four methods the API has ----------------------------------------------------------------------------
    def get(self, path: str) -> Any:
        return self.call("GET", path)

    def post(self, path: str, body: Mapping[str, Any], *, timeout_s: float | None = None) -> Any:
        return self.call("POST", path, body, timeout_s=timeout_s)

    def patch(self, path: str, body: Mapping[str, Any]) -> Any:
        return self.call("PATCH", path, body)

    def put(self, path: str, body: Mapping[str, Any]) -> Any:
        return self.call("PUT", path, body)

    def call(
        self, method: str, path: str, body: Mapping[str, Any] | None = None, *, timeout_s: float | None = None
    ) -> Any:
        """One request; the decoded JSON reply (None for an empty one). Raises SwitchError with one line
        (SwitchTimeout when no answer came within `timeout_s`, the client's own timeout by default)."""
        timeout = self.timeout_s if timeout_s is None else timeout_s
        target = "/rest/" + quote(path.strip("/"), safe="/,=*")  # `*1` as the documentation writes it
        data = None if body is None else json.dumps(body).encode()
        headers = dict(self._headers)
        if data is not None:
            headers["Content-Type"] = "application/json"
        connection: http.client.HTTPConnection
        if self._context is not None:
            connection = http.client.HTTPSConnection(self._host, self._port, timeout=timeout, context=self._context)
        else:
            connection = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        where = f"switch {self.address}"
        try:
            connection.request(method, target, body=data, headers=headers)
            reply = connection.getresponse()
            raw = reply.read()
        except ssl.SSLCertVerificationError as exc:
            raise SwitchError(
                f"{where}: TLS certificate not trusted ({exc.verify_message})",
                hint="ca_file = the switch's certificate in [switch] (or --ca-file), or --insecure to skip the check",
            ) from None
        except TimeoutError:
            raise SwitchTimeout(
                f"{where}: no answer within {timeout:g} s",
                hint="is the address right, and the www-ssl service enabled? (/ip/service print)",
            ) from None
        except ConnectionRefusedError:
            raise SwitchError(
                f"{where}: connection refused",
                hint="enable the REST service: /ip/service enable www-ssl (or www with tls = false, RouterOS 7.9+)",
            ) from None
        except (OSError, http.client.HTTPException) as exc:
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            raise SwitchError(f"{where}: cannot connect: {reason}", hint="check [switch] address and tls") from None
        finally:
            connection.close()
        return self._decode(method, target, reply.status, raw)

    def _decode(self, method: str, target: str, status: int, raw: bytes) -> Any:
        where = f"switch {self.address}"
        try:
            payload = json.loads(raw) if raw.strip() else None
        except (UnicodeDecodeError, json.JSONDecodeError):
            if status < 400:
                raise SwitchError(
                    f"{where}: {method} {target}: the reply is not JSON", hint="is this RouterOS?"
                ) from None
            payload = None
        if status == 401:
            raise SwitchError(
                f"{where}: login refused for user {self.config.user!r}",
                hint=f"check the password in ${self.config.password_env}"
                + (f" or {self.config.password_file}" if self.config.password_file else "")
                + " and the user's group (read, or write for apply)",
            )
        if status >= 400:
            message = detail = None
            if isinstance(payload, Mapping):
                message, detail = payload.get("message"), payload.get("detail")
            said = ": ".join(str(p) for p in (message, detail) if p) or f"HTTP {status}"
            raise SwitchError(f"{where}: {method} {target} refused: {said}", hint=f"HTTP {status} from RouterOS")
        return payload
