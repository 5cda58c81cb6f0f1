"""Sinks on every Iceberg catalog type against real servers on 127.0.0.1: SeaweedFS for S3 Tables (SigV4) and REST,
moto for Glue, S3 and STS. Rows are read back by DuckDB (httpfs) from the object store, not through icesink."""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import boto3
import pytest

from icesink.catalog_connections import aws as aws_connections
from tests.conftest import ICESINK, cli_env, error_of, rows
from tests.readers import duckdb_rows
from tests.runtime import caught_up, iceberg_table, wait_for
from tests.servers import SEAWEED_KEY, SEAWEED_SECRET, Moto, MotoWithIam, SeaweedFS, TokenEndpoint

MOTO_KEY, MOTO_SECRET = "testing", "testingsecret"


@pytest.fixture(scope="module")
def seaweed(tmp_path_factory):
    server = SeaweedFS(tmp_path_factory.mktemp("seaweedfs")).start()
    yield server
    server.stop(graceful=False)


@pytest.fixture(scope="module")
def moto():
    server = Moto().start()
    s3 = boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1", aws_access_key_id=MOTO_KEY,
                      aws_secret_access_key=MOTO_SECRET)
    s3.create_bucket(Bucket="lake")
    yield server
    server.stop()


def seaweed_aws(seaweed, secret=SEAWEED_SECRET) -> str:
    return f"""CREATE SECRET sw_secret AS '{secret}';
        CREATE CONNECTION sw TO AWS (ENDPOINT '{seaweed.s3_endpoint}', REGION 'us-east-1',
          ACCESS KEY ID '{SEAWEED_KEY}', SECRET ACCESS KEY SECRET sw_secret);"""


def s3tables_setup(seaweed) -> str:
    return seaweed_aws(seaweed) + f"""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 's3tablesrest', URL '{seaweed.iceberg_url}',
          WAREHOUSE 's3://tables', AWS CONNECTION sw);"""


def glue_setup(moto) -> str:
    return f"""CREATE SECRET m_secret AS '{MOTO_SECRET}';
        CREATE CONNECTION m TO AWS (ENDPOINT '{moto.endpoint}', REGION 'us-east-1', ACCESS KEY ID '{MOTO_KEY}',
          SECRET ACCESS KEY SECRET m_secret);
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'glue', WAREHOUSE 's3://lake/warehouse',
          AWS CONNECTION m);"""


ORDERS = """
    CREATE TABLE orders (id bigint NOT NULL, note text, PRIMARY KEY (id));
    INSERT INTO orders VALUES (1, 'a'), (2, 'b'), (3, 'c');
    CREATE SINK orders_lake FROM orders INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE = 'shop{n}', TABLE = 'orders')
      KEY (id) MODE UPSERT WITH (COMMIT INTERVAL = '1s');"""


def run_round_trip(session, n: str, s3: dict | None):
    """Inserts, updates and deletes reach the table; DuckDB and SELECT … FROM ICEBERG read the same rows."""
    session.execute(ORDERS.format(n=n))
    wait_for(caught_up(session, "orders_lake", "orders"), what="the first commit")
    session.execute("UPDATE orders SET note = 'b2' WHERE id = 2; DELETE FROM orders WHERE id = 3;"
                    "INSERT INTO orders VALUES (4, 'd')")
    wait_for(caught_up(session, "orders_lake", "orders"), what="the changes")
    expected = [(1, "a"), (2, "b2"), (4, "d")]
    location = iceberg_table(session, "orders_lake").metadata_location
    assert duckdb_rows(location, "id, note", "id", s3=s3) == expected
    assert rows(session, f"SELECT id, note FROM ICEBERG lake.shop{n}.orders ORDER BY id") == expected
    status = rows(session, "SELECT st.status FROM mz_sinks s JOIN mz_internal.mz_sink_statuses st ON s.id = st.id")
    assert status == [("running",)]
    return location


def test_s3tablesrest_on_seaweedfs(session, scheduler, seaweed):
    session.execute(s3tables_setup(seaweed))
    location = run_round_trip(session, "1", {"endpoint": seaweed.s3_endpoint, "key": SEAWEED_KEY,
                                             "secret": SEAWEED_SECRET})
    assert location.startswith("s3://")


def test_rest_on_seaweedfs_with_oauth2(session, scheduler, seaweed):
    """SeaweedFS's REST catalog exchanges S3 keys as OAuth2 client credentials at its own /v1/oauth/tokens."""
    session.execute(seaweed_aws(seaweed) + f"""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'rest', URL '{seaweed.iceberg_url}',
          WAREHOUSE 's3://tables', CREDENTIAL = '{SEAWEED_KEY}:' || SECRET sw_secret, AWS CONNECTION sw);""")
    run_round_trip(session, "4", {"endpoint": seaweed.s3_endpoint, "key": SEAWEED_KEY, "secret": SEAWEED_SECRET})


def test_glue_on_moto(session, scheduler, moto):
    session.execute(glue_setup(moto))
    location = run_round_trip(session, "2", {"endpoint": moto.endpoint, "key": MOTO_KEY, "secret": MOTO_SECRET})
    assert location.startswith("s3://lake/warehouse/")


def test_local(session, scheduler):
    session.execute("CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local')")
    run_round_trip(session, "3", None)


def test_oauth2_client_credentials_on_the_wire(session):
    """pyiceberg's client-credentials flow with the secret read when connecting: a rotated secret is what the next
    VALIDATE sends, without restarting anything."""
    endpoint = TokenEndpoint()
    try:
        session.execute(f"""CREATE SECRET client_secret AS 'first-secret';
            CREATE CONNECTION rest TO ICEBERG CATALOG (CATALOG TYPE 'rest', URL '{endpoint.url}/api',
              WAREHOUSE 'wh', CREDENTIAL = 'client-1:' || SECRET client_secret, SCOPE 'PRINCIPAL_ROLE:ALL',
              OAUTH2 SERVER URL '{endpoint.url}/oauth/token')""")
        posts = [r for r in endpoint.requests if r[0] == "POST"]
        gets = {path: (headers, query) for method, path, headers, query in endpoint.requests if method == "GET"}
        assert posts and {path for _, path, _, _ in posts} == {"/oauth/token"}
        assert all(form == {"grant_type": "client_credentials", "client_id": "client-1",
                            "client_secret": "first-secret", "scope": "PRINCIPAL_ROLE:ALL"} for *_, form in posts)
        assert set(gets) == {"/api/v1/config", "/api/v1/namespaces"}  # VALIDATE lists namespaces
        assert gets["/api/v1/config"][1] == {"warehouse": "wh"}
        assert {headers["Authorization"] for headers, _ in gets.values()} == {f"Bearer {TokenEndpoint.TOKEN}"}
        endpoint.requests.clear()
        session.execute("ALTER SECRET client_secret AS 'second-secret'; VALIDATE CONNECTION rest")
        assert endpoint.requests[0][3]["client_secret"] == "second-secret"
        endpoint.requests.clear()
        session.execute(f"""CREATE SECRET bearer AS '{TokenEndpoint.TOKEN}';
            CREATE CONNECTION rest2 TO ICEBERG CATALOG (CATALOG TYPE 'rest', URL '{endpoint.url}/api',
              TOKEN = SECRET bearer, ACCESS DELEGATION = 'vended-credentials')""")
        assert {r[0] for r in endpoint.requests} == {"GET"}  # a token is sent as it is, without an exchange
        assert {r[2]["Authorization"] for r in endpoint.requests} == {f"Bearer {TokenEndpoint.TOKEN}"}
        assert {r[2]["X-Iceberg-Access-Delegation"] for r in endpoint.requests} == {"vended-credentials"}
    finally:
        endpoint.stop()


def sink_status(session, name="orders_lake"):
    return rows(session, "SELECT st.status, st.error FROM mz_sinks s JOIN mz_internal.mz_sink_statuses st "
                         f"ON s.id = st.id WHERE s.name = '{name}'")[0]


def test_assumed_role_is_refreshed_while_a_sink_runs(session, scheduler, moto, monkeypatch):
    """The role's credentials come from moto's STS; asked for 900 s and refreshed when 895 s are left, they are
    assumed again within seconds, and the sink goes on committing with the new ones."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", MOTO_KEY)  # the engine's own credentials, which assume the role
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", MOTO_SECRET)
    monkeypatch.setattr(aws_connections, "ROLE_SECONDS", 900)
    monkeypatch.setattr(aws_connections, "REFRESH_BEFORE_EXPIRY", 895)
    role = "arn:aws:iam::123456789012:role/icesink-writer"
    before = len([r for r in moto.assumed_roles() if r.role_arn == role])
    session.execute(f"""CREATE CONNECTION role TO AWS (ASSUME ROLE ARN '{role}', ASSUME ROLE SESSION NAME 'lake',
          EXTERNAL ID 'shop-7', ENDPOINT '{moto.endpoint}', REGION 'us-east-1');
        VALIDATE CONNECTION role;
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'glue', WAREHOUSE 's3://lake/roles',
          AWS CONNECTION role);""")
    session.execute(ORDERS.format(n="_role"))
    wait_for(caught_up(session, "orders_lake", "orders"), what="the first commit")
    for n in range(5, 12):
        session.execute(f"INSERT INTO orders VALUES ({n}, 'n{n}')")
        time.sleep(1.5)
    wait_for(caught_up(session, "orders_lake", "orders"), what="commits with refreshed credentials")
    assumed = [r for r in moto.assumed_roles() if r.role_arn == role][before:]
    assert len(assumed) >= 3 and {r.session_name for r in assumed} == {"lake"}
    assert {r.external_id for r in assumed} == {"shop-7"}
    got = duckdb_rows(iceberg_table(session, "orders_lake").metadata_location, "count(*)", "1",
                      s3={"endpoint": moto.endpoint, "key": MOTO_KEY, "secret": MOTO_SECRET})
    assert got == [(10,)]
    assert sink_status(session) == ("running", None)


def test_a_sink_survives_its_catalog_server_stopping_for_30_seconds(session, scheduler, seaweed):
    session.execute(s3tables_setup(seaweed))
    session.execute(ORDERS.format(n="_outage"))
    wait_for(caught_up(session, "orders_lake", "orders"), what="the first commit")
    seaweed.stop()
    stopped = time.time()
    try:
        session.execute("INSERT INTO orders VALUES (10, 'during'), (11, 'the outage'); DELETE FROM orders WHERE id = 1")
        status, error = wait_for(lambda: sink_status(session)[0] == "stalled" and sink_status(session), timeout=60,
                                 what="the sink to stall")
        assert "cannot reach" in error or "connect" in error.lower(), error
        time.sleep(max(0.0, 30 - (time.time() - stopped)))
    finally:
        seaweed.start()
    wait_for(caught_up(session, "orders_lake", "orders"), timeout=180, what="the sink to resume")
    wait_for(lambda: sink_status(session)[0] == "running", what="running again")
    got = duckdb_rows(iceberg_table(session, "orders_lake").metadata_location, "id, note", "id",
                      s3={"endpoint": seaweed.s3_endpoint, "key": SEAWEED_KEY, "secret": SEAWEED_SECRET})
    assert got == [(2, "b"), (3, "c"), (10, "during"), (11, "the outage")]


def test_a_wrong_secret_stalls_the_sink_until_it_is_rotated(session, scheduler, seaweed):
    session.execute(seaweed_aws(seaweed, secret="not-the-secret") + f"""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 's3tablesrest', URL '{seaweed.iceberg_url}',
          WAREHOUSE 's3://tables', AWS CONNECTION sw) WITH (VALIDATE = false);""")
    session.execute(ORDERS.format(n="_rotated"))
    status, error = wait_for(lambda: sink_status(session)[0] == "stalled" and sink_status(session),
                             what="the sink to stall")
    assert "credentials" in error and "not-the-secret" not in error, error
    session.execute(f"ALTER SECRET sw_secret AS '{SEAWEED_SECRET}'")
    wait_for(caught_up(session, "orders_lake", "orders"), timeout=120, what="the sink to recover")
    wait_for(lambda: sink_status(session)[0] == "running", what="running again")


@pytest.mark.parametrize("setup, message", [
    pytest.param(lambda sw, m: seaweed_aws(sw, secret="wrong") + f"""CREATE CONNECTION lake TO ICEBERG CATALOG (
        CATALOG TYPE 's3tablesrest', URL '{sw.iceberg_url}', WAREHOUSE 's3://tables', AWS CONNECTION sw)""",
                 "connection 'lake': the Iceberg catalog refused the credentials", id="wrong-credentials"),
    pytest.param(lambda sw, m: seaweed_aws(sw) + f"""CREATE CONNECTION lake TO ICEBERG CATALOG (
        CATALOG TYPE 's3tablesrest', URL '{sw.iceberg_url}', WAREHOUSE 's3://no-such-bucket', AWS CONNECTION sw)""",
                 "connection 'lake': unknown warehouse 's3://no-such-bucket' (for S3 Tables, the table bucket's ARN)",
                 id="unknown-warehouse"),
    pytest.param(lambda sw, m: seaweed_aws(sw) + """CREATE CONNECTION lake TO ICEBERG CATALOG (
        CATALOG TYPE 's3tablesrest', URL 'http://127.0.0.1:9', WAREHOUSE 's3://tables', AWS CONNECTION sw)""",
                 "connection 'lake': cannot reach the Iceberg catalog at http://127.0.0.1:9", id="unreachable"),
    pytest.param(lambda sw, m: glue_setup(m).replace("s3://lake/", "s3://no-such-bucket/"),
                 "connection 'lake': the bucket 'no-such-bucket' of WAREHOUSE does not exist", id="missing-bucket"),
    pytest.param(lambda sw, m: """CREATE SECRET m_secret AS 'x';
        CREATE CONNECTION m TO AWS (ENDPOINT 'http://127.0.0.1:9', ACCESS KEY ID 'k', SECRET ACCESS KEY SECRET m_secret)
          WITH (VALIDATE = true)""",
                 "AWS connection 'm': checking its credentials with STS failed: cannot reach http://127.0.0.1:9",
                 id="aws-unreachable"),
])
def test_validation_errors_say_what_to_fix(session, seaweed, moto, setup, message):
    error = error_of(session, setup(seaweed, moto))
    assert error.message.startswith(message), error.message
    assert "Traceback" not in error.message


@pytest.fixture(scope="module")
def identities():
    """moto with IAM enforced and a bucket; a reader's keys may read it and use Glue but not write objects, a
    writer's may also write."""
    server = MotoWithIam(open_actions=8).start()
    given = dict(endpoint_url=server.endpoint, region_name="us-east-1", aws_access_key_id="setup",
                 aws_secret_access_key="setup")
    boto3.client("s3", **given).create_bucket(Bucket="lake")
    iam = boto3.client("iam", **given)
    reading = ["glue:*", "s3:GetObject", "s3:ListBucket", "s3:HeadBucket", "sts:GetCallerIdentity"]
    keys = {}
    for user, actions in (("reader", reading), ("writer", reading + ["s3:*"])):
        iam.create_user(UserName=user)
        iam.put_user_policy(UserName=user, PolicyName="access", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Resource": "*", "Action": actions}]}))
        key = iam.create_access_key(UserName=user)["AccessKey"]
        keys[user] = key["AccessKeyId"], key["SecretAccessKey"]
    yield server, keys
    server.stop()


@pytest.fixture(scope="module")
def read_only_identity(identities):
    server, keys = identities
    return (server, *keys["reader"])


def test_permission_denied_stalls_the_sink_and_says_so(session, scheduler, read_only_identity):
    server, key_id, secret = read_only_identity
    session.execute(f"""CREATE SECRET reader_secret AS '{secret}';
        CREATE CONNECTION reader TO AWS (ENDPOINT '{server.endpoint}', REGION 'us-east-1', ACCESS KEY ID '{key_id}',
          SECRET ACCESS KEY SECRET reader_secret) WITH (VALIDATE = true);
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'glue', WAREHOUSE 's3://lake/warehouse',
          AWS CONNECTION reader);""")  # validation passes: listing and reading are allowed
    session.execute(ORDERS.format(n="_denied"))
    status, error = wait_for(lambda: sink_status(session)[0] == "stalled" and sink_status(session),
                             what="the sink to stall")
    assert "permission denied" in error and secret not in error, error


def test_a_sinks_aws_connection_writes_its_files(session, scheduler, identities):
    """USING AWS CONNECTION (as in Materialize): the catalog is reached with the catalog connection's credentials,
    the sink's files are written with the sink's; here only the latter may write."""
    server, keys = identities
    session.execute(f"""CREATE SECRET reader_secret AS '{keys["reader"][1]}';
        CREATE SECRET writer_secret AS '{keys["writer"][1]}';
        CREATE CONNECTION reader TO AWS (ENDPOINT '{server.endpoint}', REGION 'us-east-1',
          ACCESS KEY ID '{keys["reader"][0]}', SECRET ACCESS KEY SECRET reader_secret);
        CREATE CONNECTION writer TO AWS (ENDPOINT '{server.endpoint}', REGION 'us-east-1',
          ACCESS KEY ID '{keys["writer"][0]}', SECRET ACCESS KEY SECRET writer_secret);
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'glue', WAREHOUSE 's3://lake/warehouse',
          AWS CONNECTION reader);""")
    session.execute(ORDERS.format(n="_using").replace("KEY (id) MODE", "USING AWS CONNECTION writer KEY (id) MODE"))
    wait_for(caught_up(session, "orders_lake", "orders"), what="the first commit")
    location = iceberg_table(session, "orders_lake").metadata_location
    s3 = {"endpoint": server.endpoint, "key": keys["writer"][0], "secret": keys["writer"][1]}
    assert duckdb_rows(location, "id, note", "id", s3=s3) == [(1, "a"), (2, "b"), (3, "c")]
    assert sink_status(session) == ("running", None)


def test_files_of_expired_snapshots_are_deleted_from_s3(session, scheduler, seaweed, monkeypatch):
    """Every upsert rewrites the file holding its key; once the snapshots that referenced the old file expire, the
    file is deleted from the bucket: what remains is what the kept snapshots reference, and their metadata."""
    from icesink.engine.sink import committer

    monkeypatch.setattr(committer, "KEEP_SNAPSHOTS", 2)
    session.execute(s3tables_setup(seaweed))
    session.execute(ORDERS.format(n="_expiry"))
    wait_for(caught_up(session, "orders_lake", "orders"), what="the first commit")
    for n in range(8):
        session.execute(f"UPDATE orders SET note = 'v{n}' WHERE id = 1")
        wait_for(caught_up(session, "orders_lake", "orders"), what=f"update {n}")
    s3 = boto3.client("s3", endpoint_url=seaweed.s3_endpoint, region_name="us-east-1",
                      aws_access_key_id=SEAWEED_KEY, aws_secret_access_key=SEAWEED_SECRET)

    def expired():  # the files are deleted on the housekeeping thread, after the commit that expired them
        table = iceberg_table(session, "orders_lake")
        referenced = {task.file.file_path for snapshot in table.metadata.snapshots
                      for task in table.scan(snapshot_id=snapshot.snapshot_id).plan_files()}
        bucket, prefix = table.location().removeprefix("s3://").split("/", 1)
        listed = s3.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/data/").get("Contents", [])
        stored = {f"s3://{bucket}/{o['Key']}" for o in listed if not o['Key'].endswith('/')}  # not the folder
        return len(table.metadata.snapshots) <= 3 and stored == referenced
    wait_for(expired, timeout=30, what="the old files to be deleted")


def test_the_s3_tables_example_runs(tmp_path, seaweed):
    """examples/s3tables.sql (what `make demo-s3tables` runs), pointed at this module's SeaweedFS."""
    text = (Path(__file__).parent.parent / "examples" / "s3tables.sql").read_text()
    script = tmp_path / "s3tables.sql"
    script.write_text(text.replace("http://127.0.0.1:8333", seaweed.s3_endpoint)
                      .replace("http://127.0.0.1:8181", seaweed.iceberg_url))
    done = subprocess.run(ICESINK + ["--data-dir", str(tmp_path / "data"), "-f", str(script)], capture_output=True,
                          text=True, env=cli_env(ICESINK_SPARK_MASTER="local[1]"), timeout=300)
    assert done.returncode == 0, done.stderr
    lines = [line.split() for line in done.stdout.splitlines()]
    assert ["bids_iceberg", "running", "NULL"] in lines
    header = lines.index(["bids_in_s3_tables", "newest_bid"])
    counts = [int(line[0]) for line in lines[header:] if len(line) == 2 and line[0].isdigit()]
    assert counts[-1] > 0 and counts == sorted(counts)


def test_validating_aws_credentials_names_the_one_that_is_wrong(session, read_only_identity):
    server, key_id, secret = read_only_identity
    session.execute(f"CREATE SECRET good AS '{secret}'; CREATE SECRET bad AS 'not-it'")
    connection = ("CREATE CONNECTION {name} TO AWS (ENDPOINT '" + server.endpoint + "', REGION 'us-east-1', "
                  "ACCESS KEY ID '{key}', SECRET ACCESS KEY SECRET {secret}) WITH (VALIDATE = true)")
    session.execute(connection.format(name="ok", key=key_id, secret="good"))
    unknown = error_of(session, connection.format(name="unknown", key="no-such-key-id", secret="good"))
    assert unknown.message.startswith("AWS connection 'unknown': checking its credentials with STS failed: "
                                      "InvalidClientTokenId"), unknown.message
    assert unknown.message.endswith("(the access key ID is not known)")
    wrong = error_of(session, connection.format(name="wrong", key=key_id, secret="bad"))
    assert wrong.message.endswith("(the secret access key is wrong)"), wrong.message
    assert "not-it" not in wrong.message and secret not in wrong.message


@pytest.fixture(scope="module")
def seaweed_sts(tmp_path_factory):
    server = SeaweedFS(tmp_path_factory.mktemp("seaweedfs-sts"), sts_session="30s").start()
    yield server
    server.stop(graceful=False)


def test_expired_temporary_credentials_stall_the_sink_until_renewed(session, scheduler, seaweed_sts):
    """Temporary credentials (a SESSION TOKEN) from SeaweedFS's STS live 30 s: once they expire the sink stalls and
    says so; new ones given through ALTER SECRET bring it back, nothing lost."""
    sts = boto3.client("sts", endpoint_url=seaweed_sts.s3_endpoint, region_name="us-east-1",
                       aws_access_key_id=SEAWEED_KEY, aws_secret_access_key=SEAWEED_SECRET)

    def issue():
        given = sts.assume_role(RoleArn=SeaweedFS.ROLE, RoleSessionName="lake", DurationSeconds=900)["Credentials"]
        return given["AccessKeyId"], given["SecretAccessKey"], given["SessionToken"], given["Expiration"]

    key_id, secret, token, expires = issue()
    session.execute(s3tables_setup(seaweed_sts) + f"""CREATE SECRET tmp_id AS '{key_id}';
        CREATE SECRET tmp_secret AS '{secret}'; CREATE SECRET tmp_token AS '{token}';
        CREATE CONNECTION tmp TO AWS (ENDPOINT '{seaweed_sts.s3_endpoint}', REGION 'us-east-1',
          ACCESS KEY ID SECRET tmp_id, SECRET ACCESS KEY SECRET tmp_secret, SESSION TOKEN SECRET tmp_token);""")
    session.execute(ORDERS.format(n="_tmp").replace("KEY (id) MODE", "USING AWS CONNECTION tmp KEY (id) MODE"))
    wait_for(caught_up(session, "orders_lake", "orders"), what="the first commit")
    time.sleep(max(0.0, expires.timestamp() - time.time()) + 1)
    session.execute("INSERT INTO orders VALUES (4, 'd')")
    status, error = wait_for(lambda: sink_status(session)[0] == "stalled" and sink_status(session),
                             what="the sink to stall")
    assert "AWS connection 'tmp': its temporary credentials (SESSION TOKEN) have expired" in error, error
    assert secret not in error and token not in error
    validated = error_of(session, "VALIDATE CONNECTION tmp")
    assert "temporary credentials" in validated.message and token not in validated.message, validated.message

    key_id, secret, token, _ = issue()
    session.execute(f"ALTER SECRET tmp_id AS '{key_id}'; ALTER SECRET tmp_secret AS '{secret}';"
                    f"ALTER SECRET tmp_token AS '{token}'")
    wait_for(caught_up(session, "orders_lake", "orders"), what="the sink to resume")
    assert sink_status(session) == ("running", None)
    location = iceberg_table(session, "orders_lake").metadata_location
    s3 = {"endpoint": seaweed_sts.s3_endpoint, "key": SEAWEED_KEY, "secret": SEAWEED_SECRET}
    assert duckdb_rows(location, "id, note", "id", s3=s3) == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
