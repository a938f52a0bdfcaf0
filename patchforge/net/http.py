"""The HTTP client every patchforge network call goes through (the one module that imports requests).

It owns: timeouts; bounded retries with exponential backoff and jitter on connection errors, 5xx,
429 and 403 rate limits, honouring `Retry-After` and `x-ratelimit-remaining`/`-reset` (with a cap on
the total wait: past it we fail clearly instead of sleeping for an hour); ETag conditional requests
backed by an on-disk cache under `<cache>/http/` (an entry whose body is not the one written is
a miss, never revalidated); `offline` mode answered from that cache; `Link`
pagination; and the rule that a token is sent only to the host it belongs to and never appears in
an exception message, a log line or a repr.
"""
from __future__ import annotations

import email.utils
import hashlib
import json
import logging
import os
import random
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import KW_ONLY, dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from patchforge.errors import NetworkError
from patchforge.fsutil import atomic_write, parse_json

log = logging.getLogger("patchforge.net")

IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
CACHEABLE = frozenset({"GET", "HEAD"})
# A POST or PATCH that reached the server may have done its work even if the answer was a 5xx;
# only 503 ("not processed, come back later") is safe to repeat for them.
RETRY_STATUS_IDEMPOTENT = frozenset({429, 500, 502, 503, 504})
RETRY_STATUS_OTHER = frozenset({429, 503})
# Response headers never written to the cache (they carry per-session secrets).
_UNCACHED_HEADERS = frozenset({"set-cookie", "www-authenticate", "authorization"})
_CACHE_FORMAT = 1
_LINK_RE = re.compile(r'<([^>]*)>\s*((?:;\s*[^;,]+)*)')
_REL_RE = re.compile(r';\s*rel\s*=\s*"?([^";]+)"?')


def _requests():
    # Imported here, not at module import: requests is heavy to load and most commands never
    # touch the network.
    import requests
    return requests


LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def is_loopback(host: str | None) -> bool:
    """127.0.0.0/8, ::1 or localhost: this machine (a local test server or proxy)."""
    host = (host or "").lower().strip("[]")
    return host in LOOPBACK_HOSTS or host.startswith("127.")


def may_carry_secret(url: str) -> bool:
    """Whether a token may travel to `url`: only over https, or plain http to this machine."""
    try:
        parts = urlsplit(url)
    except ValueError:  # no URL (an unclosed `[`): nothing travels to it
        return False
    scheme = parts.scheme.lower()
    return scheme == "https" or (scheme == "http" and is_loopback(parts.hostname))


def host_of(url: str) -> str:
    """`host[:port]` of a URL, lowercased: what a token is bound to. A URL from a server (a
    redirect, a next page, a token realm) that no parser takes (`http://[::1`, a port past
    65535) is its whole authority part as written: never a host a token is bound to, and no
    ValueError of the command."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return url.split("://", 1)[-1].split("/", 1)[0].lower()
    host = (parts.hostname or "").lower()
    return f"{host}:{port}" if port else host


@dataclass(frozen=True)
class Response:
    """An HTTP answer, fully read. `headers` has lowercase names; `from_cache` for 304 and offline."""

    method: str
    url: str
    status: int
    headers: Mapping[str, str]
    body: bytes
    from_cache: bool = False

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def json(self) -> Any:
        """The body as JSON (UTF-8, as forges and registries send it). Whatever is wrong with
        it (an HTML error page, bytes that are not UTF-8, `[[[[...` nested deeper than the
        parser's recursion) is a NetworkError naming the request."""
        try:
            return parse_json(self.body)
        except ValueError as exc:
            raise NetworkError(f"{self.method} {self.url}: the answer is {exc}") from None

    def links(self) -> dict[str, str]:
        """The `Link` header as {rel: url}."""
        return parse_link_header(self.header("link") or "")

    def error_detail(self) -> str:
        """A short reason for a failed answer: the status and the server's own message if any."""
        parts: list[str] = []
        try:
            doc = parse_json(self.body)
        except ValueError:
            doc = None
        if isinstance(doc, dict):
            # GitHub: {"message", "errors": [{"message"}]}; OCI: {"errors": [{"code", "message"}]}
            if isinstance(doc.get("message"), str):
                parts.append(doc["message"])
            errors = doc.get("errors")
            if isinstance(errors, list) and errors and isinstance(errors[0], dict):
                first = errors[0]
                parts.append(str(first.get("message") or first.get("code") or ""))
        # The server's words on one line: quoted in what patchforge prints, a newline in them
        # started a line of its own (`::error ...::` there is a GitHub Actions command).
        detail = " ".join(": ".join(p for p in parts if p).split())
        try:
            phrase = " " + HTTPStatus(self.status).phrase
        except ValueError:
            phrase = ""
        return f"{self.status}{phrase}" + (f" ({detail[:200]})" if detail else "")

    def raise_for_status(self) -> "Response":
        if not self.ok:
            raise NetworkError(f"{self.method} {self.url}: server answered {self.error_detail()}")
        return self


def _secrets_sent(headers: Mapping[str, str], token: str | None) -> list[bytes]:
    """Every form a credential of this request may be echoed in: the token, the credential of
    the Authorization header sent (`Bearer X`, `Basic X`), and a Basic one's decoded
    `user:secret` and secret. Longest first, so a part is never scrubbed out of a whole."""
    import base64
    import binascii

    found = {token} if token else set()
    value = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
    scheme, _, credential = value.strip().partition(" ")
    credential = credential.strip()
    if credential:
        found.add(credential)
        if scheme.lower() == "basic":
            try:
                pair = base64.b64decode(credential, validate=True).decode("utf-8", "replace")
            except (binascii.Error, ValueError):
                pair = ""
            if pair:
                found.add(pair)
                secret = pair.partition(":")[2]
                if len(secret) >= 4:  # (a one-letter password would scrub every such letter)
                    found.add(secret)
    return sorted((s.encode("utf-8", "surrogateescape") for s in found), key=len, reverse=True)


def parse_link_header(value: str) -> dict[str, str]:
    """`<https://...?page=2>; rel="next", <...>; rel="last"` -> {"next": ..., "last": ...}."""
    links: dict[str, str] = {}
    for match in _LINK_RE.finditer(value):
        for rel in _REL_RE.findall(match.group(2)):
            for name in rel.split():
                links.setdefault(name.lower(), match.group(1))
    return links


def parse_retry_after(value: str, now: float) -> float | None:
    """Seconds to wait from a `Retry-After` value (delta-seconds or an HTTP date); None if junk."""
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now)


class StreamedResponse:
    """An HTTP answer whose body is read as it arrives (a registry blob can be gigabytes).

    Use as a context manager; `read(n)` gives at most n bytes of the body, b"" at its end.
    """

    def __init__(self, url: str, status: int, headers: Mapping[str, str], raw: Any, *,
                 deadline: float | None = None) -> None:
        self.url = url
        self.status = status
        self.headers = headers
        self._raw = raw
        self._deadline = deadline  # time.monotonic() past which reading stops

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def read(self, size: int = 1 << 20) -> bytes:
        if self._deadline is not None and time.monotonic() > self._deadline:
            raise NetworkError(f"GET {self.url}: the answer is taking too long; stopped reading")
        try:
            return self._raw.raw.read(size, decode_content=True) or b""
        except Exception as exc:  # urllib3's protocol and timeout errors: the body broke off
            raise NetworkError(f"GET {self.url}: the answer broke off while reading "
                               f"({type(exc).__name__})") from None

    def error_detail(self) -> str:
        """The status and the server's message (reads at most 64 KiB of the body)."""
        return Response("GET", self.url, self.status, self.headers,
                        self.read(1 << 16)).error_detail()

    def close(self) -> None:
        self._raw.close()

    def __enter__(self) -> "StreamedResponse":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _BodyBroken(Exception):
    """Reading a body failed part way (a read timeout, a connection cut)."""


@dataclass
class _Attempt:
    """What went wrong with one attempt, and how long the server asked us to wait (if it did)."""

    problem: str
    asked_wait: float | None = None
    response: Response | None = None
    unreachable: bool = False  # no connection could be made at all (host down, no route, DNS)


@dataclass
class HttpClient:
    """One HTTP client per run: a requests session, a cache directory, and the retry policy.

    `token` (or the environment variable `token_env`) is sent as `Authorization: <auth_scheme>
    <token>` only to `token_host` (`host[:port]`); requests drops it on a redirect to another host.
    `max_wait` caps the total time spent sleeping between attempts of one request.

    Every answer is bounded: `max_body` bytes (after decompression) and `deadline` seconds from
    the request to the last byte of the body, however slowly a server sends it (the per-read
    `timeout` alone lets a server that sends a byte every few seconds hold a command forever).
    A token (own or in a passed `Authorization` header) goes only over https, or plain http to
    loopback, and then never through a proxy.
    """

    cache_dir: Path
    _: KW_ONLY
    offline: bool = False
    timeout: tuple[float, float] = (5, 30)
    max_retries: int = 4
    token_env: str | None = None
    token: str | None = field(default=None, repr=False)
    token_host: str | None = None
    auth_scheme: str = "Bearer"
    sleep: Callable[[float], None] = time.sleep
    max_wait: float = 60.0
    backoff_base: float = 0.5
    backoff_max: float = 16.0
    clock: Callable[[], float] = time.time
    rng: Callable[[], float] = random.random
    user_agent: str = "patchforge"
    max_body: int = 64 << 20
    deadline: float = 120.0
    stream_deadline: float = 3600.0  # a streamed body (a registry layer) may be gigabytes
    _session: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.cache_dir = Path(self.cache_dir)
        if self.token is None and self.token_env:
            self.token = os.environ.get(self.token_env) or None
        if self.token is not None:
            # A trailing newline from `$(cat tokenfile)` is common; anything else unprintable
            # would make requests raise an error that quotes the header, token and all.
            self.token = self.token.strip() or None
            if self.token and not all(33 <= ord(c) < 127 for c in self.token):
                source = f"${self.token_env}" if self.token_env else "the token"
                raise NetworkError(f"{source} contains characters a token cannot have",
                                   hint="check the variable holds only the token")
        if self.token_host:
            self.token_host = self.token_host.lower()

    def __repr__(self) -> str:
        return (f"HttpClient(cache_dir={str(self.cache_dir)!r}, offline={self.offline}, "
                f"token={'<set>' if self.token else None}, token_host={self.token_host!r})")

    # -- public verbs ---------------------------------------------------------------------------
    def get(self, url: str, **kw: Any) -> Response:
        return self.request("GET", url, **kw)

    def head(self, url: str, **kw: Any) -> Response:
        return self.request("HEAD", url, **kw)

    def post(self, url: str, **kw: Any) -> Response:
        return self.request("POST", url, **kw)

    def patch(self, url: str, **kw: Any) -> Response:
        return self.request("PATCH", url, **kw)

    def get_json(self, url: str, *, accept: str = "application/json",
                 headers: Mapping[str, str] | None = None) -> Any:
        """GET a JSON document; any non-2xx answer raises NetworkError."""
        return self.get(url, accept=accept, headers=headers).raise_for_status().json()

    def paginate(self, url: str, *, accept: str = "application/json",
                 headers: Mapping[str, str] | None = None, max_pages: int = 100) -> Iterator[Response]:
        """Yield each page of a listing, following `Link: rel="next"` (bounded, loop-safe, and
        on the listing's own scheme and host: a page of another host would be taken for the
        forge's answer, a pull request there for one of the forge's)."""
        seen: set[str] = set()
        next_url: str | None = url
        origin = _origin(url)
        while next_url:
            if next_url in seen or len(seen) >= max_pages:
                raise NetworkError(f"GET {url}: pagination did not end after {len(seen)} pages")
            if _origin(next_url) != origin:
                raise NetworkError(f"GET {url}: the next page is on another host "
                                   f"({next_url[:200]!r}); not followed")
            seen.add(next_url)
            page = self.get(next_url, accept=accept, headers=headers).raise_for_status()
            yield page
            next_url = page.links().get("next")

    def get_all(self, url: str, **kw: Any) -> list[Any]:
        """All items of a paginated JSON array listing."""
        items: list[Any] = []
        for page in self.paginate(url, **kw):
            doc = page.json()
            if not isinstance(doc, list):
                raise NetworkError(f"GET {page.url}: expected a JSON array, got {type(doc).__name__}")
            items.extend(doc)
        return items

    def request(self, method: str, url: str, *, headers: Mapping[str, str] | None = None,
                accept: str | None = None, json_body: Any = None, data: bytes | None = None,
                use_cache: bool = True, immutable: bool = False) -> Response:
        """Send one request (with retries); answers of any status are returned, not raised.

        GET/HEAD answers are cached on disk and revalidated with If-None-Match; a 304 gives the
        cached answer back with `from_cache=True`. `immutable` (content-addressed URLs, e.g. a
        blob by digest) serves a cached answer without asking the server at all.
        """
        method = method.upper()
        cacheable = use_cache and method in CACHEABLE
        cache_path = self._cache_path(method, url, accept) if cacheable else None
        cached = self._cache_read(cache_path) if cache_path else None
        if cached is not None and immutable:
            return cached
        if self.offline:
            if cached is not None:
                return cached
            raise NetworkError(f"offline and no cached answer for {method} {url}",
                               hint="run once without --offline to fill the cache")
        send_headers = {"User-Agent": self.user_agent}
        if accept:
            send_headers["Accept"] = accept
        if headers:
            send_headers.update(headers)
        if cached is not None and cached.header("etag"):
            send_headers["If-None-Match"] = cached.header("etag") or ""
        self._add_token(method, url, send_headers)
        if json_body is not None:
            data = json.dumps(json_body).encode()
            send_headers["Content-Type"] = "application/json"
        resp = self._send_with_retries(method, url, send_headers, data)
        if resp.status == 304 and cached is not None:
            return cached
        if cache_path and resp.status == 200:
            self._cache_write(cache_path, resp, accept)
        return resp

    def open_stream(self, url: str, *, headers: Mapping[str, str] | None = None,
                    accept: str | None = None) -> StreamedResponse:
        """GET `url` leaving the body unread, for answers too large to hold in memory.

        Retried like `request` until an answer's headers arrive (connection failures, 429,
        5xx); never cached, refused offline. The token rule is the same as for `request`.
        """
        if self.offline:
            raise NetworkError(f"offline: cannot stream GET {url}",
                               hint="run without --offline")
        send_headers = {"User-Agent": self.user_agent}
        if accept:
            send_headers["Accept"] = accept
        if headers:
            send_headers.update(headers)
        self._add_token("GET", url, send_headers)
        exc_types = _requests().exceptions
        waited = 0.0
        for number in range(1, self.max_retries + 2):
            try:
                raw = self._get_session().get(url, headers=send_headers, timeout=self.timeout,
                                              stream=True, allow_redirects=True,
                                              **self._proxies(url, send_headers))
            except (exc_types.ConnectionError, exc_types.Timeout) as exc:
                problem, asked = f"cannot connect to {_failed_host(url, exc)}", None
            except exc_types.RequestException as exc:
                raise NetworkError(f"GET {url}: {self._scrub(type(exc).__name__)}") from None
            else:
                headers_seen = {k.lower(): v for k, v in raw.headers.items()}
                answer = StreamedResponse(raw.url or url, raw.status_code, headers_seen, raw,
                                          deadline=time.monotonic() + self.stream_deadline)
                if raw.status_code not in RETRY_STATUS_IDEMPOTENT:
                    return answer
                probe = Response("GET", answer.url, answer.status, headers_seen, b"")
                problem, asked = f"server answered {probe.error_detail()}", self._asked_wait(probe)
                answer.close()
            if number == self.max_retries + 1:
                break
            delay = asked if asked is not None else min(self.backoff_base * 2 ** (number - 1),
                                                        self.backoff_max)
            if waited + delay > self.max_wait:
                break
            self.sleep(delay)
            waited += delay
        raise _gave_up(f"GET {url}: {problem} (gave up after {number} attempts)", url)

    # -- retries --------------------------------------------------------------------------------
    def _send_with_retries(self, method: str, url: str, headers: dict[str, str],
                           data: bytes | None) -> Response:
        waited = 0.0
        attempts = self.max_retries + 1
        for number in range(1, attempts + 1):
            outcome = self._send_once(method, url, headers, data)
            if isinstance(outcome, Response):
                return outcome
            attempt = outcome
            if number == attempts:
                break
            if outcome.asked_wait is not None:
                delay = outcome.asked_wait
                if waited + delay > self.max_wait:
                    late = NetworkError(
                        f"{method} {url}: {outcome.problem}; the server asks to wait {delay:.0f} s, "
                        f"more than patchforge waits ({self.max_wait:.0f} s in all)",
                        hint="try again later" + (
                            " (a GITHUB_TOKEN raises GitHub's rate limit)" if self.token_host
                            else " (a registry's limit for anonymous pulls is raised by logging "
                                 "in: `docker login`, or PATCHFORGE_REGISTRY_TOKEN with _USER "
                                 "and _HOST)"))
                    late.gave_up = True
                    raise late
            else:
                delay = min(self.backoff_base * 2 ** (number - 1), self.backoff_max)
                delay += delay * 0.5 * self.rng()  # jitter: clients retrying together spread out
                delay = min(delay, max(0.0, self.max_wait - waited))
            log.debug("%s %s: %s; retry %d in %.1f s", method, url, outcome.problem, number, delay)
            if delay > 0:
                self.sleep(delay)
                waited += delay
        error = _gave_up(f"{method} {url}: {attempt.problem} (gave up after {attempts} attempts)",
                         url)
        error.unreachable = attempt.unreachable  # callers stop asking this host (net.forge)
        raise error

    def _send_once(self, method: str, url: str, headers: dict[str, str],
                   data: bytes | None) -> Response | _Attempt:
        requests = _requests()
        exc_types = requests.exceptions
        started = time.monotonic()
        try:
            raw = self._get_session().request(method, url, headers=headers, data=data,
                                              timeout=self.timeout, allow_redirects=True,
                                              stream=True, **self._proxies(url, headers))
            self._refuse_changed_method(method, url, raw)
            body = self._read_body(method, url, raw, started)
        except _BodyBroken as exc:
            return self._not_retried(method, url, str(exc), None)
        except exc_types.ConnectTimeout as exc:
            return _Attempt(f"timed out connecting to {_failed_host(url, exc)}", unreachable=True)
        except exc_types.ReadTimeout as exc:
            return self._not_retried(method, url, f"no answer from {_failed_host(url, exc)} within "
                                     f"{self.timeout[1]} s", exc)
        except exc_types.ChunkedEncodingError as exc:
            return self._not_retried(method, url, "the answer was cut short (truncated body)", exc)
        except exc_types.ConnectionError as exc:
            if _is_connect_failure(exc):
                return _Attempt(f"cannot connect to {_failed_host(url, exc)}", unreachable=True)
            return self._not_retried(method, url, f"connection to {_failed_host(url, exc)} broke",
                                     exc)
        except exc_types.RequestException as exc:
            # Invalid URL, too many redirects...: retrying will not help.
            raise NetworkError(f"{method} {url}: {self._scrub(type(exc).__name__)}: "
                               f"{self._scrub(str(exc))}") from None
        resp = Response(method, raw.url or url, raw.status_code,
                        {k.lower(): v for k, v in raw.headers.items()}, body)
        log.debug("%s %s -> %d", method, url, resp.status)
        truncated = _truncation(resp, raw.headers.get("Content-Encoding"))
        secrets = _secrets_sent(headers, self.token)
        if any(secret in body for secret in secrets):
            # A server that echoes the request's headers (a debug endpoint, a proxy, a token
            # realm quoting the Authorization it refused) would have the credential printed
            # with the answer's fields and written into the HTTP cache: this client's token,
            # and whatever credential the caller passed in its own Authorization header.
            for secret in secrets:
                body = body.replace(secret, b"***")
            resp = Response(resp.method, resp.url, resp.status, resp.headers, body)
        if truncated:
            return self._not_retried(method, url, truncated, None)
        retry_set = RETRY_STATUS_IDEMPOTENT if method in IDEMPOTENT else RETRY_STATUS_OTHER
        if resp.status in retry_set or _is_rate_limited_403(resp):
            return _Attempt(f"server answered {resp.error_detail()}", self._asked_wait(resp), resp)
        return resp

    @staticmethod
    def _refuse_changed_method(method: str, url: str, raw: Any) -> None:
        """A 301, 302 or 303 answer to a POST or PATCH is followed as a GET (as browsers do):
        the change was never sent, and the GET's answer (an existing pull request) was taken
        for what the POST made. Refused, naming where it was sent."""
        final = getattr(getattr(raw, "request", None), "method", None) or method
        if final.upper() != method:
            raw.close()
            raise NetworkError(f"{method} {url}: the server redirected it to "
                               f"{raw.url or '?'}, where it arrived as a {final.upper()}: "
                               f"the {method} was not done",
                               hint="check the forge's address (forge.api-url): a redirect "
                                    "from http to https, or to a moved host, drops a POST")

    def _not_retried(self, method: str, url: str, problem: str,
                     exc: Exception | None) -> _Attempt:
        # A broken answer to a POST/PATCH may have been acted on: never send it twice.
        if method not in IDEMPOTENT:
            raise NetworkError(f"{method} {url}: {problem}; not retried since the server may "
                               f"have acted on it") from None
        return _Attempt(problem)

    def _asked_wait(self, resp: Response) -> float | None:
        now = self.clock()
        retry_after = resp.header("retry-after")
        if retry_after:
            seconds = parse_retry_after(retry_after, now)
            if seconds is not None:
                return seconds
        if resp.header("x-ratelimit-remaining") == "0" and resp.header("x-ratelimit-reset"):
            try:
                return max(0.0, float(resp.header("x-ratelimit-reset") or 0) - now)
            except ValueError:
                return None
        return None

    def _add_token(self, method: str, url: str, send_headers: dict[str, str]) -> None:
        """This client's token for its own host; and no token at all in clear text."""
        passed = any(k.lower() == "authorization" for k in send_headers)
        own = bool(self.token and self.token_host and host_of(url) == self.token_host)
        if (passed or own) and not may_carry_secret(url):
            raise NetworkError(f"{method} {url}: refusing to send a token over plain http to "
                               f"{host_of(url)}",
                               hint="use an https:// URL (plain http is only for this machine)")
        if own and not passed:
            send_headers["Authorization"] = f"{self.auth_scheme} {self.token}"

    @staticmethod
    def _proxies(url: str, send_headers: Mapping[str, str]) -> dict[str, Any]:
        """A request carrying a token over plain http (to loopback) never goes through a proxy,
        which would see it in clear text."""
        if urlsplit(url).scheme.lower() == "http" and \
                any(k.lower() == "authorization" for k in send_headers):
            return {"proxies": {"http": None, "https": None, "all": None}}
        return {}

    def _read_body(self, method: str, url: str, raw: Any, started: float) -> bytes:
        """The whole body, within `max_body` bytes and `deadline` seconds from `started`."""
        stream = raw.raw
        read = getattr(stream, "read1", None)
        chunks: list[bytes] = []
        size = 0
        try:
            while True:
                if time.monotonic() - started > self.deadline:
                    raise NetworkError(f"{method} {url}: the answer took longer than "
                                       f"{self.deadline:.0f} s", hint="the server is too slow "
                                       "or stalled; try again later")
                # read1 returns what one read of the socket gave (at most 64 KiB), so the
                # deadline is looked at between every few bytes a slow server sends.
                chunk = read(1 << 16, decode_content=True) if read else \
                    stream.read(1 << 12, decode_content=True)
                if not chunk:
                    break
                size += len(chunk)
                if size > self.max_body:
                    raise NetworkError(f"{method} {url}: the answer is larger than "
                                       f"{self.max_body >> 20} MiB; refusing to read more")
                chunks.append(chunk)
        except NetworkError:
            raise
        except Exception as exc:  # urllib3's read timeout and protocol errors, raw
            if "timeout" in type(exc).__name__.lower():
                raise _BodyBroken(f"no answer from {host_of(url)} within "
                                  f"{self.timeout[1]} s") from None
            raise _BodyBroken("the answer was cut short (truncated body)") from None
        finally:
            raw.close()
        return b"".join(chunks)

    def _get_session(self) -> Any:
        if self._session is None:
            self._session = _requests().Session()
        return self._session

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def _scrub(self, text: str) -> str:
        return text.replace(self.token, "***") if self.token else text

    # -- cache ----------------------------------------------------------------------------------
    def _cache_path(self, method: str, url: str, accept: str | None) -> Path:
        # Keyed by what selects the representation, never by the token: the same answer is
        # reused whoever asks, and the cache file name says nothing about credentials.
        key = hashlib.sha256(f"{method}\n{url}\n{accept or ''}".encode()).hexdigest()
        return self.cache_dir / "http" / key[:2] / key

    def forget(self, method: str, url: str, accept: str | None = None) -> None:
        """Drop the cached answer to `method url` (one found damaged by its reader)."""
        path = self._cache_path(method.upper(), url, accept)
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise NetworkError(f"the cached answer to {method} {url} is damaged and cannot be "
                               f"removed: {path}: {exc.strerror}",
                               hint=f"remove {path} by hand") from None

    def _cache_read(self, path: Path) -> Response | None:
        try:
            raw = path.read_bytes()
        except OSError:
            return None
        head, sep, body = raw.partition(b"\n")
        try:
            meta = parse_json(head)
            if not sep or not isinstance(meta, dict) or meta.get("format") != _CACHE_FORMAT:
                return None
            headers = meta["headers"]
            if not isinstance(headers, dict) or not all(
                    isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
                return None
            cached = Response(str(meta["method"]), str(meta["url"]), int(meta["status"]),
                              headers, body, from_cache=True)
        except (ValueError, KeyError, TypeError):
            return None  # a damaged entry is a miss, not an error
        if not _cached_body_whole(meta, cached):
            # Cut short or changed since it was written (by hand, a copy of a cache, a disk
            # tool): revalidated with its ETag, the server's 304 made it the answer on every
            # later run, "the answer is not valid JSON" blamed on the server. A miss: dropped,
            # and asked again without the validator.
            log.debug("dropping a damaged HTTP cache entry %s", path)
            try:
                path.unlink()
            except OSError:
                pass  # written over by the next answer
            return None
        return cached

    def _cache_write(self, path: Path, resp: Response, accept: str | None) -> None:
        meta = {"format": _CACHE_FORMAT, "method": resp.method, "url": resp.url,
                "accept": accept or "", "status": resp.status,
                "headers": {k: v for k, v in sorted(resp.headers.items())
                            if k not in _UNCACHED_HEADERS},
                "body_sha256": hashlib.sha256(resp.body).hexdigest()}
        try:
            atomic_write(path, json.dumps(meta, sort_keys=True).encode() + b"\n" + resp.body)
        except OSError as exc:
            log.debug("cannot write HTTP cache entry %s: %s", path, exc)


def _cached_body_whole(meta: dict, cached: Response) -> bool:
    """Whether a cache entry's body is the one written: its SHA-256 as recorded, or, in an
    entry written before the digest was recorded, a JSON answer that still parses."""
    recorded = meta.get("body_sha256")
    if recorded is not None:
        return recorded == hashlib.sha256(cached.body).hexdigest()
    if "json" not in (cached.header("content-type") or "").lower():
        return True
    try:
        parse_json(cached.body)
    except ValueError:
        return False
    return True


def _origin(url: str) -> tuple[str, str]:
    """(scheme, host[:port]) of a URL (of one no parser takes: what is before `://`)."""
    return url.split("://", 1)[0].lower() if "://" in url else "", host_of(url)


def _is_rate_limited_403(resp: Response) -> bool:
    if resp.status != 403:
        return False
    if resp.header("x-ratelimit-remaining") == "0" or resp.header("retry-after"):
        return True
    # GitHub's secondary rate limit answers 403 with only a message saying so.
    return b"rate limit" in resp.body[:2000].lower()


def _gave_up(message: str, url: str) -> NetworkError:
    """The error of a request that got no usable answer after the retries (exit 75): the hint
    says that nothing asked was wrong, so that a person or a CI job tries again rather than
    changing a configuration that is right."""
    error = NetworkError(message, hint=f"no usable answer from {host_of(url)} after the "
                                       "retries (the network, a proxy or the service "
                                       "itself): nothing in the project or the "
                                       "command line is wrong; run the command again later "
                                       "(exit 75 says so to a script), or with --offline where "
                                       "an earlier run's answers are cached")
    error.gave_up = True
    return error


def _failed_host(url: str, exc: BaseException) -> str:
    """The host a failed request was talking to: `url`'s, or the one a redirect sent it to,
    said as such (the host that answered with the redirect is not the one to check)."""
    request = getattr(exc, "request", None)
    failed = getattr(request, "url", None) or url
    if host_of(failed) != host_of(url):
        return f"{host_of(failed)} (where {host_of(url)} redirected to)"
    return host_of(url)


def _is_connect_failure(exc: BaseException) -> bool:
    """True if the request never reached the server (refused, DNS), so any method can be retried."""
    seen = 0
    cur: Any = exc
    while cur is not None and seen < 10:
        if type(cur).__name__ in {"NewConnectionError", "NameResolutionError", "ConnectTimeoutError"}:
            return True
        cur = getattr(cur, "reason", None) or (cur.args[0] if getattr(cur, "args", None)
                                               and isinstance(cur.args[0], BaseException) else None)
        seen += 1
    return False


def _truncation(resp: Response, content_encoding: str | None) -> str | None:
    if resp.method == "HEAD" or resp.status in (204, 304) or content_encoding:
        return None
    declared = resp.header("content-length")
    if declared and declared.isdigit() and len(declared) > 18:
        # (int() refuses more than 4300 digits, and no answer is an exabyte.)
        return f"the answer's Content-Length ({declared[:20]}...) is no length"
    if declared and declared.isdigit() and int(declared) != len(resp.body):
        return f"the answer was cut short (got {len(resp.body)} of {declared} bytes)"
    return None
