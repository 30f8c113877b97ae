"""An emulator of the MikroTik RouterOS 7 REST API, for tests of the switch client.

Written from MikroTik's REST API documentation (help.mikrotik.com/docs/display/ROS/REST+API); not RouterOS. It
serves the few menus wirespeed touches, over HTTPS with a throw-away self-signed certificate (or plain HTTP, the
`www` service of RouterOS 7.9+), on 127.0.0.1 only, so a client can be tested without a switch.

What it keeps from the documentation:
- base path `/rest`, HTTP Basic auth with the console user; a wrong or missing login is 401
  `{"error": 401, "message": "Unauthorized"}`;
- every value in a reply is a string (`"9000"`, `"true"`), record ids are `*1`, `*2`, ... (hex, as RouterOS);
- GET reads (`?prop=value` filters, `?.proplist=a,b`), PATCH sets one record, PUT adds, DELETE removes (204),
  POST runs a command (`print` with `.proplist`/`.query`, and `stats` for the error counters, named as the Ethernet
  manual's Stats list names them: `tx-drop`, `rs-fec-uncorrected`; `monitor` with `once` and the ports in `numbers`,
  `{"numbers":"ether2","once":""}`; `set`);
- a request ends at the router's 60-second limit with 400 `Session closed` (manual.mikrotik.com REST API, "Keep
  commands within 60 seconds"): `monitor` without `once` runs until then, and so does the monitor of a port whose
  `monitor_hangs` is set (a monitor that never returns); `session_limit_s` shortens the limit for tests;
- errors are JSON `{"error": N, "message": ..., "detail": ...}`: 400 for a bad value, an unknown parameter or
  malformed JSON, 404 for an unknown path or id, 405 for a method the path does not take.

What it models of the switch (a CRS804-4DDQ by default), and why:
- ethernet ports with RouterOS defaults that bite at 200G: auto-negotiation on, `fec-mode=auto`, L2MTU 1584;
- PATCH applies its properties in the order sent, all or nothing, and refuses `mtu` above `l2mtu` (or `l2mtu`
  below `mtu`): jumbo frames need `l2mtu` raised first, as the switch plan does;
- the link rule (`EthernetPort.settle`), deliberately simple: each port has a cable to a peer running
  `peer_speed` (None: no cable). Auto-negotiation on gives `no-link` (the breakout-at-defaults failure of the
  field reports); auto-negotiation off with `speed == peer_speed` gives `link-ok` at that rate ("200Gbps");
  any other forced speed, or a disabled port, gives `no-link`. FEC is not part of the rule. The rule runs when a
  port is made and when a PATCH changes `speed`, `auto-negotiation` or `disabled`; tests may override it with
  `EthernetPort.set_link` (e.g. a lane that came up at 100G) or by setting the fields;
- `delay_s` holds every answer back, so a client's timeout can be tested; stopping cuts the wait short.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, NamedTuple, Self
from urllib.parse import parse_qsl, unquote, urlsplit

SPEEDS = (
    "10M-baseT-half", "10M-baseT-full", "100M-baseT-half", "100M-baseT-full", "1G-baseT-half", "1G-baseT-full",
    "1G-baseX", "2.5G-baseT", "2.5G-baseX", "5G-baseT", "10G-baseT", "10G-baseSR-LR", "10G-baseCR",
    "25G-baseSR-LR", "25G-baseCR", "40G-baseSR4-LR4", "40G-baseCR4", "50G-baseSR2-LR2", "50G-baseCR2",
    "50G-baseSR-LR", "50G-baseCR", "100G-baseSR4-LR4", "100G-baseCR4", "100G-baseSR2-LR2", "100G-baseCR2",
    "200G-baseSR4-LR4", "200G-baseCR4", "400G-baseSR8-LR8", "400G-baseCR8",
)  # fmt: skip
FEC_MODES = ("auto", "fec74", "fec91", "off")
MIN_MTU = 68
MAX_L2MTU = 10218  # the CRS8xx ceiling
BOOLEANS = {"yes": True, "true": True, "no": False, "false": False}
WRITABLE = ("name", "mtu", "l2mtu", "speed", "auto-negotiation", "fec-mode", "disabled")
READ_ONLY = (".id", "default-name", "running")
COUNTERS = ("rx-fcs-error", "rx-too-long", "tx-drop", "rs-fec-uncorrected")
SESSION_LIMIT_S = 60.0  # RouterOS ends a REST request at 60 s: 400 with the detail `Session closed`
LINK_PROPS = frozenset({"speed", "auto-negotiation", "disabled"})
DEFAULT_PORTS = tuple(f"qsfp56-dd-{cage}-{lane}" for cage in range(1, 5) for lane in (1, 5))
HANDLER_TIMEOUT_S = 5.0  # a client that connects and says nothing must not hold a thread past stop()


def _bool(flag: bool) -> str:
    return "true" if flag else "false"


def rate_of(speed: str) -> str:
    """`200G-baseCR4` -> `200Gbps`: what monitor reports for a link that came up at that speed."""
    return speed.split("-", 1)[0] + "bps"


class _HoldSession(Exception):
    """A command that runs until the router's session limit ends it (raised inside the lock, waited outside)."""


class ApiError(Exception):
    """A request the emulated router refuses: becomes the documented JSON error body."""

    def __init__(self, status: int, detail: str | None = None) -> None:
        super().__init__(detail or HTTPStatus(status).phrase)
        self.status = status
        self.detail = detail


class Request(NamedTuple):
    """One request as received: a tuple, so tests may compare it with `(method, path, body)`."""

    method: str
    path: str  # as the client sent it, query string included
    body: dict[str, Any] | None  # the JSON object sent, None when there was none (or it was not an object)


class Response(NamedTuple):
    status: int
    payload: Any  # JSON-able, None for no body
    headers: dict[str, str]


@dataclass
class EthernetPort:
    """One `/interface/ethernet` record, RouterOS property names in Python spelling (`fec_mode` is `fec-mode`).

    `running`, `status` and `rate` are the link's state: the rule in `settle` sets them, tests may overwrite them.
    """

    name: str
    default_name: str = ""  # empty: the same as `name`
    mtu: int = 1500
    l2mtu: int = 1584  # the RouterOS default, which clamps jumbo frames
    speed: str = "400G-baseCR8"
    auto_negotiation: bool = True
    fec_mode: str = "auto"
    disabled: bool = False
    peer_speed: str | None = "200G-baseCR4"  # what the far end of the cable runs; None: no cable
    rx_fcs_error: int = 0
    rx_too_long: int = 0
    tx_drop: int = 0  # `tx-drop`: frames dropped for a full output queue
    rs_fec_uncorrected: int = 0  # `rs-fec-uncorrected` on the CLI
    monitor_hangs: bool = False  # its `monitor` never answers: the request runs to the session limit
    running: bool = field(default=False, init=False)
    status: str = field(default="no-link", init=False)  # monitor's `status`: "link-ok" or "no-link"
    rate: str | None = field(default=None, init=False)  # monitor's `rate`, e.g. "200Gbps"; None without link

    def __post_init__(self) -> None:
        if not self.default_name:
            self.default_name = self.name
        self.settle()

    def settle(self) -> None:
        """Bring the link up or down by the module's rule: only a forced speed equal to the peer's links."""
        linked = (
            not self.disabled
            and self.peer_speed is not None
            and not self.auto_negotiation
            and self.speed == self.peer_speed
        )
        self.set_link(rate_of(self.speed) if linked else None)

    def set_link(self, rate: str | None) -> None:
        """Force the link state past the rule: `set_link("100Gbps")` is a lane that came up at 100G."""
        self.running = rate is not None
        self.status = "link-ok" if rate is not None else "no-link"
        self.rate = rate

    def record(self, record_id: str) -> dict[str, str]:
        """The record as GET returns it: RouterOS names, every value a string."""
        return {
            ".id": record_id,
            "name": self.name,
            "default-name": self.default_name,
            "mtu": str(self.mtu),
            "l2mtu": str(self.l2mtu),
            "speed": self.speed,
            "auto-negotiation": _bool(self.auto_negotiation),
            "fec-mode": self.fec_mode,
            "disabled": _bool(self.disabled),
            "running": _bool(self.running),
        }

    def stats(self, record_id: str) -> dict[str, str]:
        """`print stats`: the name and the error counters a commissioning check reads."""
        return {
            ".id": record_id,
            "name": self.name,
            "rx-fcs-error": str(self.rx_fcs_error),
            "rx-too-long": str(self.rx_too_long),
            "tx-drop": str(self.tx_drop),
            "rs-fec-uncorrected": str(self.rs_fec_uncorrected),
        }

    def monitor(self) -> dict[str, str]:
        """`monitor once`: `rate` and `full-duplex` only while the link is up, as the console shows them."""
        linked = self.status == "link-ok"
        out = {"name": self.name, "status": self.status}
        if not self.auto_negotiation:
            out["auto-negotiation"] = "disabled"
        else:
            out["auto-negotiation"] = "done" if linked else "incomplete"
        if linked and self.rate is not None:
            out["rate"] = self.rate
            out["full-duplex"] = _bool(not self.speed.endswith("-half"))
        return out


def make_certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (CN and IP SAN), so clients verify it with hostname checks on."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("the RouterOS emulator needs `openssl` on PATH to make its TLS certificate")
    cert, key = directory / "cert.pem", directory / "key.pem"
    # EC P-256 is generated in milliseconds, where RSA 2048 costs a noticeable share of a short test
    subprocess.run(
        [
            openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )  # fmt: skip
    return cert, key


def _text(prop: str, value: object) -> str:
    """A property value as RouterOS reads it: strings as sent, JSON numbers and booleans accepted too."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value
    raise ApiError(400, f"value of {prop} must be a string or a number")


def _integer(prop: str, text: str, low: int, high: int) -> int:
    if not (text.isascii() and text.isdigit()):
        raise ApiError(400, f"value of {prop} must be a number")
    number = int(text)
    if not low <= number <= high:
        raise ApiError(400, f"value of {prop} out of range ({low}..{high})")
    return number


def _choice(prop: str, text: str, choices: Iterable[str]) -> str:
    if text not in choices:
        raise ApiError(400, f"input does not match any value of {prop}")
    return text


def _flag(prop: str, text: str) -> bool:
    if text not in BOOLEANS:
        raise ApiError(400, f"value of {prop} must be yes, no, true or false")
    return BOOLEANS[text]


def _proplist(value: object) -> list[str] | None:
    """`.proplist` as a JSON list or a comma-separated string; None: every property."""
    if value is None:
        return None
    if isinstance(value, str):
        return [p for p in value.split(",") if p]
    if isinstance(value, list) and all(isinstance(p, str) for p in value):
        return list(value)
    raise ApiError(400, "value of .proplist must be a list of names or a comma-separated string")


def _select(record: Mapping[str, str], proplist: Sequence[str] | None) -> dict[str, str]:
    if proplist is None:
        return dict(record)
    return {key: value for key, value in record.items() if key in proplist}


def _equal(have: str, want: str) -> bool:
    """A filter value compares as text, except that yes/no match true/false as they do on the console."""
    if have in ("true", "false") and want in BOOLEANS:
        return BOOLEANS[want] == (have == "true")
    return have == want


def _query_words(value: object) -> list[tuple[str, str, str | None]]:
    """`.query` words: `prop=value` (equal), `prop` (has it), `-prop` (lacks it); stack operators are refused."""
    if value is None:
        return []
    if not (isinstance(value, list) and all(isinstance(w, str) for w in value)):
        raise ApiError(400, "value of .query must be a list of strings")
    words: list[tuple[str, str, str | None]] = []
    for word in value:
        if word.startswith("#") or "<" in word or ">" in word:
            raise ApiError(400, f"query word {word!r}: only prop=value, prop and -prop are emulated")
        if "=" in word:
            prop, wanted = word.split("=", 1)
            words.append(("=", prop, wanted))
        elif word.startswith("-"):
            words.append(("-", word[1:], None))
        else:
            words.append(("has", word, None))
    return words


def _matches(record: Mapping[str, str], words: Sequence[tuple[str, str, str | None]]) -> bool:
    for op, prop, wanted in words:
        if op == "=" and (prop not in record or wanted is None or not _equal(record[prop], wanted)):
            return False
        if op == "has" and prop not in record:
            return False
        if op == "-" and prop in record:
            return False
    return True


def _uptime(seconds: float) -> str:
    """RouterOS spelling of a duration: `1d2h3m4s`, units that are zero at the front left out."""
    rest = int(seconds)
    parts: list[str] = []
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, rest = divmod(rest, size)
        if count or parts:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"


def _error(status: int, detail: str | None = None) -> Response:
    payload: dict[str, Any] = {"error": status, "message": HTTPStatus(status).phrase}
    if detail:
        payload["detail"] = detail
    headers = {"WWW-Authenticate": 'Basic realm="RouterOS"'} if status == 401 else {}
    return Response(status, payload, headers)


class _Server(ThreadingHTTPServer):
    """Threads per connection; TLS is wrapped per connection so a stalled handshake never blocks accept()."""

    daemon_threads = True

    def __init__(self, emulator: RouterOSEmulator, context: ssl.SSLContext | None) -> None:
        self.emulator = emulator
        self.context = context
        super().__init__(("127.0.0.1", 0), _Handler)

    def get_request(self) -> tuple[Any, Any]:
        sock, address = super().get_request()
        if self.context is not None:
            sock = self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that give up (timeouts, refused certificates) are expected in tests: stay quiet about them."""
        if isinstance(sys.exc_info()[1], OSError):  # ssl.SSLError, ConnectionError and TimeoutError are OSErrors
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = HANDLER_TIMEOUT_S

    def version_string(self) -> str:
        """The `Server` header says what this is: an emulator, not a router."""
        return "wirespeed-routeros-emulator"

    def setup(self) -> None:
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(self.timeout)
            self.request.do_handshake()
        super().setup()

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the emulator's record of what it served is `RouterOSEmulator.requests`."""

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        answer = self.server.emulator.handle(self.command, self.path, self.headers.get("Authorization"), body)
        data = b"" if answer.payload is None else json.dumps(answer.payload).encode()
        self.send_response(answer.status)
        for name, value in answer.headers.items():
            self.send_header(name, value)
        if answer.payload is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _serve


class RouterOSEmulator:
    """A RouterOS switch's REST API on 127.0.0.1, started and stopped as a context manager.

    `url` is the base to call (`https://127.0.0.1:PORT`, no `/rest`), `ca_file` the certificate to trust,
    `requests` what was received, `port(name)` a port's live state. Everything is kept in memory, per instance.
    """

    MENUS: ClassVar[tuple[tuple[str, ...], ...]] = (
        ("interface", "bridge", "port"),
        ("interface", "ethernet"),
        ("interface", "bridge"),
        ("system", "resource"),
    )  # longest first: `interface/bridge/port` is not bridge `port`

    def __init__(
        self,
        *,
        user: str = "admin",
        password: str = "",
        ports: Iterable[EthernetPort] | None = None,
        version: str = "7.23.1",
        tls: bool = True,
        board_name: str = "CRS804-4DDQ",
        bridges: Sequence[str] = ("bridge1",),
        delay_s: float = 0.0,
        session_limit_s: float = SESSION_LIMIT_S,
    ) -> None:
        self.user = user
        self.password = password
        self.version = version
        self.tls = tls
        self.board_name = board_name
        self.delay_s = delay_s  # may be changed while running
        self.session_limit_s = session_limit_s  # may be changed while running
        self.requests: list[Request] = []
        made = list(ports) if ports is not None else [EthernetPort(name) for name in DEFAULT_PORTS]
        self._ethernet: dict[str, EthernetPort] = {f"*{n:X}": port for n, port in enumerate(made, start=1)}
        if len({p.name for p in made}) != len(made):
            raise ValueError("port names must be unique")
        self._bridges: dict[str, dict[str, str]] = {}
        for name in bridges:
            record_id = f"*{len(self._bridges) + 1:X}"
            self._bridges[record_id] = {
                ".id": record_id, "name": name, "mtu": "auto", "actual-mtu": "1500", "l2mtu": "1584",
                "disabled": "false", "running": "true", "vlan-filtering": "false",
            }  # fmt: skip
        self._bridge_ports: dict[str, dict[str, str]] = {}
        self._next_bridge_port = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._started_at = time.monotonic()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._tmpdir: tempfile.TemporaryDirectory[str] | None = None
        self._ca_file: Path | None = None

    # -- life cycle ---------------------------------------------------------------------------------------------

    def start(self) -> Self:
        """Make the certificate (TLS), bind 127.0.0.1 on a free port, serve from a thread."""
        if self._server is not None:
            raise RuntimeError("the emulator is already running")
        self._stopping.clear()
        try:
            context = None
            if self.tls:
                self._tmpdir = tempfile.TemporaryDirectory(prefix="routeros-emulator-")
                cert, key = make_certificate(Path(self._tmpdir.name))
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                context.load_cert_chain(cert, key)
                self._ca_file = cert
            self._server = _Server(self, context)
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"routeros-emulator-{self._server.server_address[1]}",
                daemon=True,
            )
            self._thread.start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop serving, join the thread, delete the certificate; safe to call twice or after a failed start."""
        self._stopping.set()  # wakes answers held back by delay_s
        server, thread, self._server = self._server, self._thread, None
        if server is not None:
            if thread is not None and thread.is_alive():
                server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(timeout=10)
        if self._tmpdir is not None:
            self._tmpdir.cleanup()
            self._tmpdir = None
        self._ca_file = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- what tests read and change -----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """`https://127.0.0.1:PORT` (or `http://`): the router's address; the API is under `/rest`."""
        if self._server is None:
            raise RuntimeError("the emulator is not running")
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self._server.server_address[1]}"

    @property
    def ca_file(self) -> str:
        """The PEM certificate the emulator serves: a client trusts it to verify the connection."""
        if self._ca_file is None:
            raise RuntimeError("no certificate: the emulator is not running, or serves plain HTTP")
        return str(self._ca_file)

    @property
    def thread(self) -> threading.Thread | None:
        """The serving thread, so a test can see that it is gone after stop()."""
        return self._thread

    @property
    def ports(self) -> list[EthernetPort]:
        return list(self._ethernet.values())

    @property
    def bridge_ports(self) -> list[dict[str, str]]:
        """The `/interface/bridge/port` records, copies."""
        with self._lock:
            return [dict(r) for r in self._bridge_ports.values()]

    def port(self, name: str) -> EthernetPort:
        """The live state of the port called `name` (tests may change its fields)."""
        for port in self._ethernet.values():
            if name in (port.name, port.default_name):
                return port
        raise KeyError(name)

    def client_context(self) -> ssl.SSLContext:
        """A client SSL context that trusts only this emulator's certificate, with hostname checks on."""
        return ssl.create_default_context(cafile=self.ca_file)

    # -- the API ------------------------------------------------------------------------------------------------

    def handle(self, method: str, target: str, authorization: str | None, raw: bytes) -> Response:
        """One request to one answer; the HTTP layer only carries bytes."""
        body: Any = None
        bad_json: str | None = None
        if raw.strip():
            try:
                body = json.loads(raw)
            except (UnicodeDecodeError, json.JSONDecodeError) as err:
                bad_json = f"JSON: {err}"
        self.requests.append(Request(method, target, body if isinstance(body, dict) else None))
        if self.delay_s > 0:
            self._stopping.wait(self.delay_s)
        if not self._authorized(authorization):
            return _error(401)
        try:
            if bad_json is not None:
                raise ApiError(400, bad_json)
            with self._lock:
                return self._dispatch(method, target, body)
        except ApiError as err:
            return _error(err.status, err.detail)
        except _HoldSession:  # runs on, past the lock, until the limit (or stop) ends it
            self._stopping.wait(self.session_limit_s)
            return _error(400, "Session closed")

    def _authorized(self, authorization: str | None) -> bool:
        if not authorization or not authorization.startswith("Basic "):
            return False
        try:
            user, _, password = base64.b64decode(authorization[6:], validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        same_user = hmac.compare_digest(user.encode(), self.user.encode())
        same_password = hmac.compare_digest(password.encode(), self.password.encode())
        return same_user and same_password

    def _dispatch(self, method: str, target: str, body: Any) -> Response:
        parts = urlsplit(target)
        segments = [unquote(s) for s in parts.path.split("/") if s]
        if not segments or segments[0] != "rest":
            raise ApiError(404)
        path = tuple(segments[1:])
        query = parse_qsl(parts.query, keep_blank_values=True)
        if method in ("POST", "PUT", "PATCH"):
            body = {} if body is None else body
            if not isinstance(body, dict):
                raise ApiError(400, "the body must be a JSON object")
        for menu in self.MENUS:
            if path[: len(menu)] == menu:
                rest = path[len(menu) :]
                if menu == ("interface", "ethernet"):
                    return self._ethernet_api(method, rest, query, body)
                if menu == ("interface", "bridge", "port"):
                    return self._bridge_port_api(method, rest, query, body)
                if menu == ("interface", "bridge"):
                    return self._read_only_api(method, rest, query, body, self._bridges)
                return self._resource_api(method, rest, body)
        raise ApiError(404)

    @staticmethod
    def _not_allowed(method: str, allowed: str) -> ApiError:
        return ApiError(405, f"{method} is not supported here (allowed: {allowed})")

    @staticmethod
    def _get(query: Sequence[tuple[str, str]], records: Iterable[dict[str, str]]) -> list[dict[str, str]]:
        """GET on a menu: `?prop=value` filters, `?.proplist=a,b` picks properties."""
        proplist = None
        words: list[tuple[str, str, str | None]] = []
        for key, value in query:
            if key == ".proplist":
                proplist = _proplist(value)
            else:
                words.append(("=", key, value))
        return [_select(r, proplist) for r in records if _matches(r, words)]

    @staticmethod
    def _print(body: Mapping[str, Any], records: Iterable[dict[str, str]], extra: Sequence[str] = ()) -> Response:
        """POST `print`: `.proplist` and `.query` as the documentation shows them."""
        for key in body:
            if key not in (".proplist", ".query", "detail", "without-paging", *extra):
                raise ApiError(400, f"unknown parameter {key}")
        proplist = _proplist(body.get(".proplist"))
        words = _query_words(body.get(".query"))
        return Response(200, [_select(r, proplist) for r in records if _matches(r, words)], {})

    def _find_ports(self, numbers: object) -> list[tuple[str, EthernetPort]]:
        """`numbers`: a name, an `.id`, or a comma list of them, as the console takes it."""
        if not isinstance(numbers, str) or not numbers:
            raise ApiError(400, "missing value for numbers")
        found = []
        for item in numbers.split(","):
            match = [(i, p) for i, p in self._ethernet.items() if item in (i, p.name)]
            if not match:
                raise ApiError(400, "no such item")
            found.append(match[0])
        return found

    def _ethernet_api(
        self, method: str, rest: tuple[str, ...], query: Sequence[tuple[str, str]], body: Any
    ) -> Response:
        if not rest:
            if method != "GET":
                raise self._not_allowed(method, "GET")
            return Response(200, self._get(query, (p.record(i) for i, p in self._ethernet.items())), {})
        if len(rest) > 1:
            raise ApiError(404)
        (item,) = rest
        if method == "POST":
            if item == "monitor":
                return self._monitor(body)
            if item == "print":  # `stats` adds the counters to each record
                stats = "stats" in body
                records = [p.record(i) | (p.stats(i) if stats else {}) for i, p in self._ethernet.items()]
                return self._print(body, records, ("stats",))
            if item == "set":
                target = body.get(".id", body.get("numbers"))
                values = {k: v for k, v in body.items() if k not in (".id", "numbers")}
                for record_id, port in self._find_ports(target):
                    self._set_port(record_id, port, values)
                return Response(200, [], {})
            raise ApiError(404)
        match = [(i, p) for i, p in self._ethernet.items() if item in (i, p.name)]
        if not match:
            raise ApiError(404)
        record_id, port = match[0]
        if method == "GET":
            return Response(200, _select(port.record(record_id), self._get_proplist(query)), {})
        if method == "PATCH":
            return Response(200, self._set_port(record_id, port, body), {})
        raise self._not_allowed(method, "GET, PATCH")

    @staticmethod
    def _get_proplist(query: Sequence[tuple[str, str]]) -> list[str] | None:
        return next((_proplist(v) for k, v in query if k == ".proplist"), None)

    def _set_port(self, record_id: str, port: EthernetPort, values: Mapping[str, Any]) -> dict[str, str]:
        """PATCH/set: properties applied in the order sent, checked against each other, all or nothing."""
        new: dict[str, Any] = {
            "name": port.name,
            "mtu": port.mtu,
            "l2mtu": port.l2mtu,
            "speed": port.speed,
            "auto_negotiation": port.auto_negotiation,
            "fec_mode": port.fec_mode,
            "disabled": port.disabled,
        }
        for prop, raw in values.items():
            if prop in READ_ONLY:
                raise ApiError(400, f"{prop} is read-only")
            if prop not in WRITABLE:
                raise ApiError(400, f"unknown parameter {prop}")
            text = _text(prop, raw)
            if prop == "name":
                taken = {p.name for i, p in self._ethernet.items() if i != record_id}
                if not text or text in taken:
                    raise ApiError(400, f"name {text!r} is empty or already used")
                new["name"] = text
            elif prop == "mtu":
                mtu = _integer(prop, text, MIN_MTU, MAX_L2MTU)
                if mtu > new["l2mtu"]:
                    raise ApiError(400, f"mtu {mtu} is greater than l2mtu {new['l2mtu']}: raise l2mtu first")
                new["mtu"] = mtu
            elif prop == "l2mtu":
                l2mtu = _integer(prop, text, MIN_MTU, MAX_L2MTU)
                if l2mtu < new["mtu"]:
                    raise ApiError(400, f"l2mtu {l2mtu} is less than mtu {new['mtu']}: lower mtu first")
                new["l2mtu"] = l2mtu
            elif prop == "speed":
                new["speed"] = _choice(prop, text, SPEEDS)
            elif prop == "fec-mode":
                new["fec_mode"] = _choice(prop, text, FEC_MODES)
            else:  # auto-negotiation, disabled
                new[prop.replace("-", "_")] = _flag(prop, text)
        for attribute, value in new.items():
            setattr(port, attribute, value)
        if LINK_PROPS & set(values):
            port.settle()
        return port.record(record_id)

    def _monitor(self, body: Mapping[str, Any]) -> Response:
        """`monitor` with `once` returns one sample per port; without it, it runs until the session limit."""
        for key in body:
            if key not in ("numbers", "once", "interval", ".proplist"):
                raise ApiError(400, f"unknown parameter {key}")
        ports = self._find_ports(body.get("numbers"))
        if "once" not in body or any(p.monitor_hangs for _, p in ports):
            raise _HoldSession
        proplist = _proplist(body.get(".proplist"))
        return Response(200, [_select(p.monitor(), proplist) for _, p in ports], {})

    def _bridge_port_api(
        self, method: str, rest: tuple[str, ...], query: Sequence[tuple[str, str]], body: Any
    ) -> Response:
        table = self._bridge_ports
        if not rest:
            if method == "GET":
                return Response(200, self._get(query, table.values()), {})
            if method == "PUT":
                self._next_bridge_port += 1
                record_id = f"*{self._next_bridge_port:X}"
                record = self._bridge_port(record_id, {"disabled": "false"}, body)
                table[record_id] = record
                return Response(200, dict(record), {})
            raise self._not_allowed(method, "GET, PUT")
        if len(rest) > 1:
            raise ApiError(404)
        (item,) = rest
        if method == "POST" and item == "print":
            return self._print(body, table.values())
        if item not in table:
            raise ApiError(404)
        if method == "GET":
            return Response(200, _select(table[item], self._get_proplist(query)), {})
        if method == "PATCH":
            table[item] = self._bridge_port(item, table[item], body)
            return Response(200, dict(table[item]), {})
        if method == "DELETE":
            del table[item]
            return Response(204, None, {})
        raise self._not_allowed(method, "GET, PATCH, DELETE")

    def _bridge_port(self, record_id: str, old: Mapping[str, str], values: Mapping[str, Any]) -> dict[str, str]:
        """A bridge port record after `values`: the bridge and interface must exist, an interface joins once."""
        record = dict(old)
        for prop, raw in values.items():
            if prop not in ("bridge", "interface", "disabled", "comment"):
                raise ApiError(400, f"unknown parameter {prop}")
            text = _text(prop, raw)
            if prop == "bridge" and text not in {b["name"] for b in self._bridges.values()}:
                raise ApiError(400, "input does not match any value of bridge")
            if prop == "interface" and text not in {p.name for p in self._ethernet.values()}:
                raise ApiError(400, "input does not match any value of interface")
            if prop == "disabled":
                text = _bool(_flag(prop, text))
            record[prop] = text
        for prop in ("bridge", "interface"):
            if prop not in record:
                raise ApiError(400, f"missing value for {prop}")
        others = (r["interface"] for i, r in self._bridge_ports.items() if i != record_id)
        if record["interface"] in others:
            raise ApiError(400, "device already added as bridge port")
        return {".id": record_id, **{k: v for k, v in record.items() if k != ".id"}}

    def _read_only_api(
        self,
        method: str,
        rest: tuple[str, ...],
        query: Sequence[tuple[str, str]],
        body: Any,
        table: Mapping[str, dict[str, str]],
    ) -> Response:
        if len(rest) > 1:
            raise ApiError(404)
        if method == "POST" and rest == ("print",):
            return self._print(body, table.values())
        if method != "GET":
            raise self._not_allowed(method, "GET")
        if not rest:
            return Response(200, self._get(query, table.values()), {})
        record = next((r for i, r in table.items() if rest[0] in (i, r.get("name"))), None)
        if record is None:
            raise ApiError(404)
        return Response(200, _select(record, self._get_proplist(query)), {})

    def _resource_api(self, method: str, rest: tuple[str, ...], body: Any) -> Response:
        resource = {
            "uptime": _uptime(93780 + time.monotonic() - self._started_at),  # from 1d2h3m: a switch up a while
            "version": self.version if "(" in self.version else f"{self.version} (stable)",
            "build-time": "2025-06-02 10:00:00",
            "free-memory": "1843945472",
            "total-memory": "2147483648",
            "cpu": "ARM64",
            "cpu-count": "4",
            "cpu-frequency": "1200",
            "cpu-load": "1",
            "free-hdd-space": "96468992",
            "total-hdd-space": "134217728",
            "architecture-name": "arm64",
            "board-name": self.board_name,
            "platform": "MikroTik",
        }
        if rest == () and method == "GET":
            return Response(200, resource, {})
        if rest == ("print",) and method == "POST":
            return self._print(body, [resource])
        if rest in ((), ("print",)):
            raise self._not_allowed(method, "GET" if not rest else "POST")
        raise ApiError(404)
