import ssl

from common.tls import tls_context


def test_one_context_a_process_and_it_verifies_what_it_connects_to():
    ctx = tls_context()
    assert tls_context() is ctx  # made once: each client built with it skips loading the CA bundle again
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert ctx.cert_store_stats()["x509_ca"] > 0  # a CA bundle is loaded
