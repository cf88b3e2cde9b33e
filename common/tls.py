"""One TLS context a process for the HTTP clients the project makes. A client made with httpx's default
(`verify=True`) loads the CA bundle again, about 35 ms of CPU each, and a judge run makes clients per endpoint, per
round and per check, plain-HTTP endpoints included."""

from __future__ import annotations

import ssl
from functools import cache


@cache
def tls_context() -> ssl.SSLContext:
    """httpx's default context (its CA bundle; SSL_CERT_FILE and SSL_CERT_DIR honoured), made once."""
    import httpx2

    return httpx2.create_ssl_context()
