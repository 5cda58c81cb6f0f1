"""Real servers the tests start on 127.0.0.1: SeaweedFS (S3, Iceberg REST with SigV4, the S3 Tables API), moto (S3,
Glue, STS) and PostgreSQL 15. Each is started once per test module that needs it."""
from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import shutil
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import requests

SEAWEED_KEY, SEAWEED_SECRET = "admin", "adminsecret"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait(url: str, process: subprocess.Popen | None = None, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server for {url} exited with {process.returncode}")
        try:
            requests.get(url, timeout=1)
            return
        except requests.RequestException:
            time.sleep(0.2)
    raise RuntimeError(f"server for {url} did not start in {timeout}s")


_SEAWEED_PORTS = ("s3.port", "s3.port.iceberg", "s3.port.grpc", "master.port", "master.port.grpc", "volume.port",
                  "volume.port.grpc", "filer.port", "filer.port.grpc", "admin.port", "admin.port.grpc")


def _without_aws(env) -> dict:
    return {k: v for k, v in env.items() if not k.startswith("AWS_")}


class SeaweedFS:
    """`weed mini`: S3 on `s3_port`, the Iceberg REST catalog on `iceberg_port` (SigV4 with the admin keys), a general
    bucket `warehouse` and a table bucket `tables`. stop() and start() keep its data directory."""

    ROLE = "arn:aws:iam::111122223333:role/Lake"

    def __init__(self, directory: Path, sts_session: str | None = None):
        """`sts_session` (such as '30s'): STS answers AssumeRole for `ROLE` (S3 and S3 Tables allowed) with
        credentials that live that long, whatever duration is asked for."""
        self.directory = directory
        self.ports = {name: free_port() for name in _SEAWEED_PORTS}
        self.process: subprocess.Popen | None = None
        self.sts_session = sts_session

    def _iam_flags(self) -> list[str]:
        if self.sts_session is None:
            return []
        config = self.directory / "iam.json"
        config.write_text(json.dumps({
            "sts": {"tokenDuration": self.sts_session, "maxSessionLength": self.sts_session,
                    "issuer": "seaweedfs-sts", "signingKey": "dGVzdC1zaWduaW5nLWtleS0zMi1jaGFyYWN0ZXJzLWxvbmc="},
            "policy": {"defaultEffect": "Deny"},
            "roles": [{"roleName": "Lake", "roleArn": self.ROLE, "attachedPolicies": ["all"],
                       "trustPolicy": {"Version": "2012-10-17", "Statement": [
                           {"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": ["sts:AssumeRole"]}]}}],
            "policies": [{"name": "all", "document": {"Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Action": ["s3:*", "s3tables:*"], "Resource": ["*"]}]}}]}))
        return [f"-s3.iam.config={config}"]

    @property
    def s3_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports['s3.port']}"

    @property
    def iceberg_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['s3.port.iceberg']}"

    def start(self) -> "SeaweedFS":
        weed = Path(sys.executable).parent / "weed"
        self.directory.mkdir(parents=True, exist_ok=True)
        atexit.register(self.stop)  # a run that fails half-way leaves no server behind
        self.process = subprocess.Popen(
            [str(weed), "mini", f"-dir={self.directory}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
             "-bucket=warehouse", "-tableBucket=tables", "-admin.ui=false", "-webdav=false", *self._iam_flags(),
             *(f"-{flag}={self.ports[flag]}" for flag in _SEAWEED_PORTS)],
            env=_without_aws(os.environ) | dict(AWS_ACCESS_KEY_ID=SEAWEED_KEY, AWS_SECRET_ACCESS_KEY=SEAWEED_SECRET),
            stdout=open(self.directory / "weed.log", "ab"), stderr=subprocess.STDOUT, start_new_session=True)
        _wait(f"{self.iceberg_url}/v1/config", self.process)
        _wait(self.s3_endpoint, self.process)
        self._wait_for_table_bucket()
        return self

    def _wait_for_table_bucket(self, timeout: float = 30) -> None:
        """`weed mini` creates the table bucket a moment after its endpoints answer."""
        import boto3

        tables = boto3.client("s3tables", endpoint_url=self.s3_endpoint, region_name="us-east-1",
                              aws_access_key_id=SEAWEED_KEY, aws_secret_access_key=SEAWEED_SECRET)
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if any(b["name"] == "tables" for b in tables.list_table_buckets()["tableBuckets"]):
                    return
            except Exception:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"SeaweedFS created no table bucket in {timeout}s")

    def stop(self, graceful: bool = True) -> None:
        """Stopped with SIGTERM to start again on its data (while clients hold connections, it may take the whole
        20 s it is given); at a module's end, with SIGKILL."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM if graceful else signal.SIGKILL)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None


class Moto:
    """moto's server in this process (its backends, such as the STS roles it issued, can be looked at)."""

    def __init__(self):
        from moto.server import ThreadedMotoServer

        self.port = free_port()
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "Moto":
        self.server.start()
        _wait(f"{self.endpoint}/moto-api/")
        return self

    def stop(self) -> None:
        self.server.stop()

    def assumed_roles(self) -> list:
        from moto.sts.models import sts_backends

        return [role for backend in sts_backends.values() for regional in backend.values()
                for role in regional.assumed_roles]


class TokenEndpoint:
    """An OAuth2 token endpoint and the two REST catalog calls a client makes after it (config, namespaces), recording
    every request as it arrived on the wire."""

    TOKEN = "tok-123"

    def __init__(self):
        seen = self.requests = []

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, body: dict, status: int = 200) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                seen.append(("POST", self.path, dict(self.headers), form))
                self._answer({"access_token": TokenEndpoint.TOKEN, "token_type": "bearer", "expires_in": 3600,
                              "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})

            def do_GET(self):
                url = urlsplit(self.path)
                seen.append(("GET", url.path, dict(self.headers), {k: v[0] for k, v in parse_qs(url.query).items()}))
                if self.headers.get("Authorization") != f"Bearer {TokenEndpoint.TOKEN}":
                    return self._answer({"error": {"message": "no token", "type": "NotAuthorized", "code": 401}}, 401)
                if url.path.endswith("/v1/config"):
                    return self._answer({"defaults": {}, "overrides": {}})
                return self._answer({"namespaces": [["shop"]]})

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()


class MotoWithIam:
    """moto's server in its own process with IAM enforced after its first `open_actions` requests (which set up the
    identities the test uses): requests a policy does not allow are refused as AWS refuses them."""

    def __init__(self, open_actions: int):
        self.port = free_port()
        self.open_actions = open_actions
        self.process: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "MotoWithIam":
        self.process = subprocess.Popen(
            [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(self.port)],
            env=dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT=str(self.open_actions)),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait(f"{self.endpoint}/moto-api/", self.process)
        return self

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


PG_BIN = Path(os.environ.get("ICESINK_PG_BIN", "/usr/lib/postgresql/15/bin"))  # Debian's postgresql-15


class Postgres:
    """A PostgreSQL 15 cluster of its own in a temporary directory: TCP on 127.0.0.1 with passwords (scram), the
    superuser `postgres` also over a Unix socket without one (`admin()`). As root it runs as the `postgres` user,
    since the server refuses to run as root."""

    SUPERUSER_PASSWORD = "pg-super-pw"

    def __init__(self, hba: tuple[str, ...] = (), **settings):
        """`hba`: pg_hba.conf lines that come before the default ones; `settings`: postgresql.conf settings."""
        self.port = free_port()
        self.hba = hba
        self.files: dict[str, bytes] = {}  # written into the data directory (the server's own, mode 0600)
        self.settings = {"wal_level": "logical", "max_replication_slots": 10, "max_wal_senders": 10,
                         "fsync": "off", "synchronous_commit": "off", **settings}
        self.directory = Path(tempfile.mkdtemp(prefix="icesink-pg-"))
        self.user = "postgres" if os.geteuid() == 0 else None

    def _run(self, *args, **kwargs):
        return subprocess.run([str(PG_BIN / args[0]), *args[1:]], check=True, capture_output=True, user=self.user,
                              **kwargs)

    def start(self) -> "Postgres":
        if self.user:
            shutil.chown(self.directory, self.user)
        password_file = self.directory / "pw"
        password_file.write_text(self.SUPERUSER_PASSWORD)
        if self.user:
            shutil.chown(password_file, self.user)
        self._run("initdb", "-D", str(self.directory / "data"), "-U", "postgres", "--auth-local=trust",
                  "--auth-host=scram-sha-256", f"--pwfile={password_file}", "-E", "UTF8", "--locale=C.UTF-8")
        for name, content in self.files.items():
            path = self.directory / "data" / name
            path.write_bytes(content)
            path.chmod(0o600)
            if self.user:
                shutil.chown(path, self.user)
        if self.hba:
            hba = self.directory / "data" / "pg_hba.conf"
            hba.write_text("\n".join(self.hba) + "\n" + hba.read_text())
        atexit.register(self.stop)
        return self.resume()

    def resume(self) -> "Postgres":
        """Starts the cluster again after halt(), with its data."""
        options = " ".join(f"-c {k}={v}" for k, v in self.settings.items())
        self._run("pg_ctl", "-D", str(self.directory / "data"), "-w", "-l", str(self.directory / "log"),
                  "-o", f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 {options}", "start")
        return self

    def halt(self) -> None:
        """Stops the server as an administrator would (fast: open connections are cut), keeping its data."""
        self._run("pg_ctl", "-D", str(self.directory / "data"), "-m", "fast", "-w", "stop")

    def admin(self, dbname: str = "postgres"):
        """A psycopg connection as the superuser, autocommit."""
        import psycopg

        return psycopg.connect(host=str(self.directory), port=self.port, user="postgres", dbname=dbname,
                               autocommit=True)

    def stop(self) -> None:
        if (self.directory / "data" / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.directory / "data"), "-m", "fast", "-w", "stop")
        shutil.rmtree(self.directory, ignore_errors=True)
