#!/usr/bin/env bash
# A second reader for the tests: Spark 3.5 with Iceberg's own runtime (the reader most lakes use). No Iceberg runtime
# exists for PySpark 4, so it gets a venv of its own: pyspark 3.5 and the runtime jar that a PyPI package ships. That
# jar lacks its shaded Jackson and HttpClient5 classes; they are rebuilt under Iceberg's shaded names from PySpark's
# own Jackson and Debian's HttpClient5 with jarjar.
#   usage: tests/spark35/install.sh <python> <venv directory>
set -euo pipefail
PYTHON=$1
VENV=$2
missing=()
for f in /usr/share/java/jarjar.jar /usr/share/java/httpclient5.jar /usr/share/java/httpcore5.jar \
         /usr/share/java/httpcore5-h2.jar; do
  [ -f "$f" ] || missing+=("$f")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "tests/spark35/install.sh: missing ${missing[*]}; install Debian's packages:" >&2
  echo "  apt-get install -y libjarjar-java libhttpclient5-java libhttpcore5-java" >&2
  exit 1
fi
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install --quiet --upgrade pip
"$VENV/bin/pip" install --quiet "pyspark==3.5.9"
"$VENV/bin/pip" install --quiet --no-deps "snowpark-connect-deps-iceberg==1.0.3"
site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$VENV/bin/python" - "$work/merged.jar" "$site"/pyspark/jars/jackson-{core,databind,annotations}-2.15.2.jar \
    /usr/share/java/httpclient5.jar /usr/share/java/httpcore5.jar /usr/share/java/httpcore5-h2.jar <<'EOF'
import sys
import zipfile

seen = set()
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as merged:
    for path in sys.argv[2:]:
        with zipfile.ZipFile(path) as jar:
            for entry in jar.infolist():
                name = entry.filename
                if name.startswith("META-INF/versions/") or name == "META-INF/MANIFEST.MF" or name in seen:
                    continue
                seen.add(name)
                merged.writestr(entry, jar.read(name))
EOF
printf 'rule com.fasterxml.jackson.** org.apache.iceberg.shaded.com.fasterxml.jackson.@1\nrule org.apache.hc.** org.apache.iceberg.shaded.org.apache.hc.@1\n' \
  > "$work/rules.txt"
java -jar /usr/share/java/jarjar.jar process "$work/rules.txt" "$work/merged.jar" "$VENV/iceberg-shaded-deps.jar"
cp "$site"/snowpark_connect_deps_iceberg/jars/iceberg-spark-runtime-3.5_2.12-1.10.2.jar "$VENV/"
touch "$VENV/.installed"
