"""Postgres connections over SSL, against a real PostgreSQL 15 serving a certificate of a test CA: SSL MODE
require, verify-ca and verify-full, a CA given as a secret, a client certificate and key given as secrets, and what
a mismatch says."""
from __future__ import annotations

import subprocess

import pytest

from icesink.catalog_connections import connector_for
from tests.conftest import error_of
from tests.servers import Postgres

PASSWORD = "ssl-pw-52"


def _openssl(directory, *args):
    subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A test CA, the server's certificate for 127.0.0.1, a client certificate for user 'certuser', another CA."""
    d = tmp_path_factory.mktemp("pki")
    for ca in ("ca", "other"):
        _openssl(d, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{ca}.key", "-out", f"{ca}.crt",
                 "-days", "2", "-subj", f"/CN=icesink test {ca}")
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    for name, subject, extra in (("server", "/CN=127.0.0.1", ["-extfile", "san.ext"]),
                                 ("client", "/CN=certuser", [])):
        _openssl(d, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", subject)
        _openssl(d, "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", f"{name}.crt", "-days", "2", *extra)
    return d


@pytest.fixture(scope="module")
def postgres(pki):
    server = Postgres(hba=("hostssl all certuser 127.0.0.1/32 cert", "hostnossl all certuser 127.0.0.1/32 reject"),
                      ssl="on", ssl_cert_file="server.crt", ssl_key_file="server.key", ssl_ca_file="ca.crt")
    for name in ("server.crt", "server.key", "ca.crt"):  # relative to the data directory, once initdb made it
        server.files[name] = (pki / name).read_bytes()
    server.start()
    with server.admin() as admin:
        admin.execute(f"CREATE ROLE repl LOGIN REPLICATION PASSWORD '{PASSWORD}'")
        admin.execute("CREATE ROLE certuser LOGIN REPLICATION")
    yield server
    server.stop()


def pem(pki, name) -> str:
    return (pki / name).read_text()


def ssl_connection(session, postgres, mode, user="repl", password=True, options="") -> None:
    login = "PASSWORD SECRET pg_pass, " if password else ""
    session.execute(f"CREATE CONNECTION pg TO POSTGRES (HOST '127.0.0.1', PORT {postgres.port}, USER '{user}', "
                    f"{login}SSL MODE '{mode}'{options})")


def encrypted(session) -> bool:
    """What the server says of the connection icesink makes."""
    connector = connector_for(session.catalog.get("pg"), session.executor.secret_value, session.catalog)
    with connector.connect() as connection:
        return connection.execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").fetchone()[0]


def test_require_encrypts_without_checking_the_certificate(session, postgres):
    session.execute(f"CREATE SECRET pg_pass AS '{PASSWORD}'")
    ssl_connection(session, postgres, "require")
    assert encrypted(session)


def test_verify_full_checks_the_server_against_the_ca_given_as_a_secret(session, postgres, pki):
    session.execute(f"CREATE SECRET pg_pass AS '{PASSWORD}'; CREATE SECRET ca AS '{pem(pki, 'ca.crt')}'")
    ssl_connection(session, postgres, "verify-full", options=", SSL CERTIFICATE AUTHORITY SECRET ca")
    assert encrypted(session)


def test_a_server_certificate_from_another_ca_is_refused_with_the_cause(session, postgres, pki):
    session.execute(f"CREATE SECRET pg_pass AS '{PASSWORD}'; CREATE SECRET ca AS '{pem(pki, 'other.crt')}'")
    error = error_of(session, f"CREATE CONNECTION pg TO POSTGRES (HOST '127.0.0.1', PORT {postgres.port}, USER "
                              "'repl', PASSWORD SECRET pg_pass, SSL MODE 'verify-ca', SSL CERTIFICATE AUTHORITY "
                              "SECRET ca)")
    assert error.message.startswith("Postgres connection 'pg': SSL failed (verify-ca): "), error.message
    assert "certificate verify failed" in error.message, error.message


def test_a_client_certificate_and_key_given_as_secrets_log_in(session, postgres, pki):
    key = pem(pki, "client.key")
    session.execute(f"CREATE SECRET ca AS '{pem(pki, 'ca.crt')}'; CREATE SECRET client_crt AS "
                    f"'{pem(pki, 'client.crt')}'; CREATE SECRET client_key AS '{key}'")
    ssl_connection(session, postgres, "verify-ca", user="certuser", password=False,
                   options=", SSL CERTIFICATE AUTHORITY SECRET ca, SSL CERTIFICATE SECRET client_crt, "
                           "SSL KEY SECRET client_key")
    assert encrypted(session)
    session.execute("DROP CONNECTION pg")
    error = error_of(session, f"CREATE CONNECTION pg TO POSTGRES (HOST '127.0.0.1', PORT {postgres.port}, USER "
                              "'certuser', SSL MODE 'disable')")
    assert error.message.startswith("Postgres connection 'pg': the server refused the login of user 'certuser': "
                                    "pg_hba.conf rejects connection"), error.message
    assert "PRIVATE KEY" not in error.message
