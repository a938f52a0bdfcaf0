"""patchforge.net: the HTTP services patchforge talks to.

`http` (the client: retries, rate limits, ETag cache, offline, token hygiene; the one module that
imports requests, lazily), `forge` (pull requests and compare, GitHub REST first) and `registry`
(OCI distribution: image reference -> digest -> labels). Nothing is imported here, so that
importing one of them never pays for the others.
"""
