"""HttpClient against a real server on 127.0.0.1 that misbehaves on purpose."""
from __future__ import annotations

import email.utils
import logging
import socket

import pytest

from patchforge.errors import NetworkError
from patchforge.net.http import HttpClient, host_of, parse_link_header, parse_retry_after

TOKEN = "ghp_s3cretTOKENvalue"
NOW = 1_800_000_000.0


@pytest.fixture
def sleeps():
    return []


@pytest.fixture
def make_client(tmp_path, sleeps, forge_server):
    def build(**kw) -> HttpClient:
        kw.setdefault("token", TOKEN)
        kw.setdefault("token_host", forge_server.host)
        kw.setdefault("sleep", sleeps.append)
        kw.setdefault("clock", lambda: NOW)
        kw.setdefault("rng", lambda: 0.0)
        return HttpClient(tmp_path / "cache", **kw)
    return build


@pytest.fixture
def pull_url(forge_server):
    forge_server.add_pull("o/r", 1, title="first")
    return f"{forge_server.url}/repos/o/r/pulls/1"


def test_get_json_sends_token_to_its_host_only(make_client, forge_server, pull_url):
    client = make_client()
    assert client.get_json(pull_url)["title"] == "first"
    assert forge_server.requests[-1].header("authorization") == f"Bearer {TOKEN}"
    other = make_client(token_host="api.github.com")
    other.get(pull_url, use_cache=False)
    assert forge_server.requests[-1].header("authorization") is None


def test_redirect_to_another_host_drops_the_token(make_client, forge_server, other_server,
                                                  pull_url):
    forge_server.misbehave("redirect", path="/repos/o/r/pulls/1",
                           location=f"{other_server.url}/elsewhere")
    resp = make_client().get(pull_url)
    assert resp.status == 404 and resp.url.endswith("/elsewhere")
    assert forge_server.requests[0].header("authorization") == f"Bearer {TOKEN}"
    assert other_server.requests[0].header("authorization") is None


def test_429_retry_after_seconds_is_honoured(make_client, forge_server, sleeps, pull_url):
    forge_server.misbehave("status", status=429, headers={"Retry-After": "7"})
    assert make_client().get_json(pull_url)["number"] == 1
    assert sleeps == [7.0]
    assert len(forge_server.requests) == 2


def test_retry_after_http_date(make_client, forge_server, sleeps, pull_url):
    when = email.utils.formatdate(NOW + 12, usegmt=True)
    forge_server.misbehave("status", status=503, headers={"Retry-After": when})
    make_client().get_json(pull_url)
    assert sleeps == [12.0]


def test_403_rate_limit_waits_until_reset(make_client, forge_server, sleeps, pull_url):
    forge_server.misbehave("status", status=403, body=b'{"message": "API rate limit exceeded"}',
                           headers={"x-ratelimit-remaining": "0",
                                    "x-ratelimit-reset": str(int(NOW) + 30)})
    make_client().get_json(pull_url)
    assert sleeps == [30.0]


def test_plain_403_is_not_retried(make_client, forge_server, sleeps, pull_url):
    forge_server.misbehave("status", status=403, body=b'{"message": "Resource not accessible"}')
    with pytest.raises(NetworkError, match="403 Forbidden .Resource not accessible"):
        make_client().get_json(pull_url)
    assert sleeps == [] and len(forge_server.requests) == 1


def test_rate_limit_longer_than_the_cap_fails_clearly(make_client, forge_server, sleeps,
                                                      pull_url):
    forge_server.misbehave("status", status=403, body=b'{"message": "API rate limit exceeded"}',
                           headers={"x-ratelimit-remaining": "0",
                                    "x-ratelimit-reset": str(int(NOW) + 3600)})
    with pytest.raises(NetworkError, match=r"asks to wait 3600 s, more than patchforge waits"):
        make_client(max_wait=60).get(pull_url)
    assert sleeps == []


def test_5xx_then_success_backs_off_exponentially(make_client, forge_server, sleeps,
                                                  pull_url):
    forge_server.misbehave("status", status=502, times=3)
    assert make_client().get_json(pull_url)["number"] == 1
    assert sleeps == [0.5, 1.0, 2.0]


def test_jitter_spreads_the_waits(make_client, forge_server, sleeps, pull_url):
    forge_server.misbehave("status", status=500, times=1)
    make_client(rng=lambda: 1.0).get(pull_url)
    assert sleeps == [0.75]


def test_5xx_forever_gives_up(make_client, forge_server, sleeps, pull_url):
    forge_server.misbehave("status", status=500, times=99)
    with pytest.raises(NetworkError, match=r"server answered 500 Internal Server Error \(gave up after 3 attempts\)"):
        make_client(max_retries=2).get(pull_url)
    assert len(forge_server.requests) == 3 and len(sleeps) == 2


def test_total_backoff_is_capped(make_client, forge_server, sleeps, pull_url):
    forge_server.misbehave("status", status=500, times=99)
    with pytest.raises(NetworkError):
        make_client(max_retries=10, max_wait=3.0).get(pull_url)
    assert sum(sleeps) <= 3.0


def test_post_is_not_repeated_after_a_500(make_client, forge_server, pull_url):
    forge_server.misbehave("status", status=500, path="/repos/o/r/pulls")
    resp = make_client().post(f"{forge_server.url}/repos/o/r/pulls",
                              json_body={"title": "t", "head": "me:b", "base": "main"})
    assert resp.status == 500
    assert forge_server.paths("POST") == ["/repos/o/r/pulls"]


def test_slow_answer_times_out_and_is_retried(make_client, forge_server, sleeps, pull_url):
    forge_server.misbehave("slow", delay=0.6)
    assert make_client(timeout=(2, 0.2)).get_json(pull_url)["number"] == 1
    assert len(forge_server.requests) == 2 and len(sleeps) == 1


def test_slow_answer_forever_names_the_timeout(make_client, forge_server, pull_url):
    forge_server.misbehave("slow", delay=0.4, times=2)
    with pytest.raises(NetworkError, match=r"no answer from 127\.0\.0\.1:\d+ within 0.2 s"):
        make_client(timeout=(2, 0.2), max_retries=1).get(pull_url)


def test_bad_json_names_the_url(make_client, forge_server, pull_url):
    forge_server.misbehave("bad_json")
    with pytest.raises(NetworkError, match=r"GET http://127\.0\.0\.1:\d+/repos/o/r/pulls/1: "
                                           r"the answer is not valid JSON"):
        make_client().get_json(pull_url)


def test_truncated_body_is_detected_and_retried(make_client, forge_server, pull_url):
    forge_server.misbehave("truncate")
    assert make_client().get_json(pull_url)["title"] == "first"
    forge_server.misbehave("truncate", times=9)
    with pytest.raises(NetworkError, match="cut short"):
        make_client(max_retries=1).get(pull_url, use_cache=False)


def test_etag_revalidation_serves_304_from_cache(make_client, forge_server, pull_url):
    client = make_client()
    first = client.get(pull_url)
    assert not first.from_cache and first.header("etag")
    second = client.get(pull_url)
    assert second.from_cache and second.body == first.body
    assert forge_server.requests[1].header("if-none-match") == first.header("etag")
    forge_server.pulls[("o/r", 1)]["title"] = "changed"
    assert client.get_json(pull_url)["title"] == "changed"


def test_offline_answers_from_cache_or_says_it_cannot(make_client, forge_server, pull_url):
    make_client().get_json(pull_url)
    served = len(forge_server.requests)
    # Another token, offline: the cache is keyed without the token, and nothing is sent.
    offline = make_client(offline=True, token="another")
    assert offline.get_json(pull_url)["number"] == 1
    assert len(forge_server.requests) == served
    missing = f"{forge_server.url}/repos/o/r/pulls/2"
    with pytest.raises(NetworkError) as err:
        offline.get(missing)
    assert err.value.message == f"offline and no cached answer for GET {missing}"
    with pytest.raises(NetworkError, match="offline"):
        offline.post(f"{forge_server.url}/repos/o/r/pulls", json_body={})


def test_accept_is_part_of_the_cache_key(make_client, forge_server, pull_url):
    make_client().get(pull_url, accept="application/json")
    with pytest.raises(NetworkError, match="offline"):
        make_client(offline=True).get(pull_url, accept="application/vnd.github.diff")


def test_pagination_follows_link_next(make_client, forge_server):
    for n in range(1, 6):
        forge_server.add_pull("o/r", n)
    items = make_client().get_all(f"{forge_server.url}/repos/o/r/pulls?state=open")
    assert [p["number"] for p in items] == [1, 2, 3, 4, 5]
    assert len(forge_server.paths("GET")) == 3


def test_token_never_in_messages_logs_repr_or_cache(make_client, forge_server, pull_url,
                                                    caplog, tmp_path):
    caplog.set_level(logging.DEBUG)
    client = make_client(max_retries=1)
    client.get(pull_url)
    forge_server.misbehave("status", status=500, times=9)
    with pytest.raises(NetworkError) as err:
        client.get(pull_url, use_cache=False)
    assert TOKEN not in str(err.value) and TOKEN not in repr(err.value)
    assert TOKEN not in repr(client) and "<set>" in repr(client)
    assert TOKEN not in caplog.text and "500" in caplog.text
    for path in (tmp_path / "cache").rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes()


def test_token_from_environment(tmp_path, monkeypatch, forge_server, pull_url):
    monkeypatch.setenv("GITHUB_TOKEN", "envtoken")
    client = HttpClient(tmp_path, token_env="GITHUB_TOKEN", token_host=forge_server.host)
    client.get(pull_url)
    assert forge_server.requests[-1].header("authorization") == "Bearer envtoken"


def test_connection_refused_is_retried_then_fails(make_client, sleeps):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(NetworkError, match=rf"cannot connect to 127\.0\.0\.1:{port} "
                                           r"\(gave up after 3 attempts\)"):
        make_client(max_retries=2).get(f"http://127.0.0.1:{port}/x")
    assert len(sleeps) == 2


def test_a_redirect_to_a_host_that_cannot_be_reached_names_that_host(make_client, forge_server,
                                                                      pull_url):
    """The forge answered 302 to a host that refuses connections. The error said "cannot
    connect to" the forge, which had answered, and never named the host that failed: a
    person checked the wrong one. Both requests and the streamed reads say it now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    for _ in range(2):
        forge_server.misbehave("redirect", path="/repos/o/r/pulls/1", times=3,
                               location=f"http://127.0.0.1:{port}/elsewhere")
    where = rf"cannot connect to 127\.0\.0\.1:{port} \(where {forge_server.host} redirected to\)"
    with pytest.raises(NetworkError, match=where + r" \(gave up after 3 attempts\)"):
        make_client(max_retries=2).get(pull_url, use_cache=False)
    with pytest.raises(NetworkError, match=where):
        make_client(max_retries=2).open_stream(pull_url)


def test_a_redirect_to_a_host_that_never_answers_names_that_host(make_client, forge_server,
                                                                  pull_url):
    """The same for a redirect target that takes the connection and never answers (storage
    behind a registry that hangs): "no answer from" the host that answered with the redirect."""
    with socket.socket() as hang:
        hang.bind(("127.0.0.1", 0))
        hang.listen(5)
        port = hang.getsockname()[1]
        forge_server.misbehave("redirect", path="/repos/o/r/pulls/1", times=1,
                               location=f"http://127.0.0.1:{port}/blob")
        with pytest.raises(NetworkError, match=rf"no answer from 127\.0\.0\.1:{port} \(where "
                                               rf"{forge_server.host} redirected to\)"):
            make_client(max_retries=0, timeout=(5, 0.5)).get(pull_url, use_cache=False)


def test_requests_is_not_imported_at_module_import():
    import subprocess
    import sys
    code = "import sys, patchforge.net.http; print('requests' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_header_parsers():
    links = parse_link_header('<https://a/x?page=2>; rel="next", <https://a/x?page=9>; rel="last"')
    assert links == {"next": "https://a/x?page=2", "last": "https://a/x?page=9"}
    assert parse_link_header("") == {}
    assert parse_retry_after("120", NOW) == 120.0
    assert parse_retry_after(email.utils.formatdate(NOW - 5, usegmt=True), NOW) == 0.0
    assert parse_retry_after("soon", NOW) is None
    assert host_of("https://API.github.com/repos") == "api.github.com"
    assert host_of("http://127.0.0.1:8080/x") == "127.0.0.1:8080"


def test_token_is_trimmed_and_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "abc123\n")
    assert HttpClient(tmp_path, token_env="GITHUB_TOKEN").token == "abc123"
    monkeypatch.setenv("GITHUB_TOKEN", "abc 123")
    with pytest.raises(NetworkError, match=r"\$GITHUB_TOKEN contains characters") as err:
        HttpClient(tmp_path, token_env="GITHUB_TOKEN")
    assert "abc" not in str(err.value)


@pytest.mark.parametrize("head", [b"[]", b"5", b'"text"',
                                  b'{"format": 1, "method": "GET", "url": "u", "status": 200, '
                                  b'"headers": {"etag": 5}}',
                                  b'{"format": 1, "method": "GET", "url": "u", "status": 200, '
                                  b'"headers": [["etag", "x"]]}'])
def test_a_cache_entry_of_the_wrong_shape_is_a_miss(make_client, forge_server, pull_url, head):
    """A cache file whose first line is JSON but not the entry's object (another tool's file,
    a damaged one): before, an AttributeError (exit 70) or a header sent as a number; now it
    is a miss, the server is asked, and the entry is written again."""
    make_client().get(pull_url)
    (entry,) = [p for p in (make_client().cache_dir / "http").rglob("*") if p.is_file()]
    entry.write_bytes(head + b"\n{}")
    answer = make_client().get(pull_url)
    assert answer.json()["number"] == 1 and not answer.from_cache
    assert forge_server.requests[-1].header("if-none-match") is None
    assert make_client(offline=True).get(pull_url).json()["number"] == 1


def test_pagination_never_follows_a_next_page_on_another_host(make_client, forge_server,
                                                              other_server):
    """A listing whose Link header sends the next page to another host: before, it was
    followed, and that host's answer taken for the forge's (`pr --open` takes an open pull
    request it finds there by its number, and updates that number on the forge). Now the
    listing fails naming the link, and the other host gets no request."""
    for n in range(1, 4):
        forge_server.add_pull("o/r", n)
    forge_server.misbehave("status", path="/repos/o/r/pulls", status=200, body=b"[]",
                           headers={"Content-Type": "application/json",
                                    "Link": f'<{other_server.url}/repos/o/r/pulls?page=2>; '
                                            'rel="next"'})
    with pytest.raises(NetworkError, match="the next page is on another host"):
        make_client().get_all(f"{forge_server.url}/repos/o/r/pulls?state=open")
    assert other_server.requests == []


@pytest.mark.parametrize("damage", ["cut short", "cut short, an older entry", "edited"])
def test_a_damaged_cached_forge_answer_is_asked_again_never_blamed_on_the_forge(
        tmp_path, forge_server, damage):
    """A forge answer in the HTTP cache whose body was cut short (by hand, a copy of a cache, a
    disk tool) was revalidated with its ETag; the forge answered 304 and the damaged body was
    the answer: `status` said `PR: GET .../pulls/5: the answer is not valid JSON` on every
    later run, blaming the forge, and the PR's state stayed unknown. A cached body that is not
    the one written (its recorded SHA-256; in an entry written before that was recorded, a
    JSON answer that no longer parses) is a miss now: dropped, and asked again without the
    validator; the next run revalidates the new entry. Through the CLI, on the test forge."""
    import json

    from patchforge.store.diff import make_file_diff
    from patchforge.store.gitstore import cache_dir

    from helpers.cli import run_subprocess
    from helpers.project import add_git_upstream, make_project
    from helpers.upstream import Upstream, dep3_patch

    upstream = Upstream(tmp_path / "upstream", {"pkg/a.py": b"def f(x):\n    return x + 1\n"})
    root = make_project(tmp_path / "project", api_url=forge_server.url)
    add_git_upstream(root, "up", upstream.path, upstream.base, install_root=None)
    series = root / "series" / "up"
    series.mkdir(parents=True, exist_ok=True)
    (series / "fix.patch").write_bytes(dep3_patch(
        make_file_diff("pkg/a.py", "pkg/a.py", b"def f(x):\n    return x + 1\n",
                       b"def f(x):\n    return x + 2\n"),
        extra="Forwarded: https://github.com/o/r/pull/5\n"))
    (series / "series").write_text("fix.patch\n")
    forge_server.add_pull("o/r", 5, state="open")

    def status_of_the_pull() -> str:
        proc = run_subprocess(root, "status")
        said = (proc.stdout + proc.stderr).decode()
        assert proc.returncode == 0 and "not valid JSON" not in said, said
        return said

    def asked() -> list:
        return [r for r in forge_server.requests if r.path == "/repos/o/r/pulls/5"]

    assert "PR open" in status_of_the_pull()
    entries = [p for p in (cache_dir() / "http").rglob("*") if p.is_file()
               and b"/repos/o/r/pulls/5" in p.read_bytes().partition(b"\n")[0]]
    assert len(entries) == 1, entries
    (entry,) = entries
    head, _, body = entry.read_bytes().partition(b"\n")
    meta = json.loads(head)
    assert meta["headers"].get("etag")
    if damage == "edited":  # still JSON, but not what the forge sent
        body = body.replace(b'"open"', b'"closed"')
    else:
        body = body[:len(body) // 2]
    if damage.endswith("an older entry"):
        meta.pop("body_sha256")
    entry.write_bytes(json.dumps(meta).encode() + b"\n" + body)

    before = len(asked())
    assert "PR open" in status_of_the_pull()
    assert asked()[before].header("if-none-match") is None
    assert entry.read_bytes().partition(b"\n")[2].endswith(b"}")  # written again, whole
    # The entry written again is revalidated as before: a 304, and the same answer.
    before = len(asked())
    assert "PR open" in status_of_the_pull()
    assert asked()[before].header("if-none-match") == meta["headers"]["etag"]
