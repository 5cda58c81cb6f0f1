# The two set-up commands of the README: `make demo` (quickstart) and `make test`.
PYTHON ?= python3
VENV ?= .venv
STAMP := $(VENV)/.installed
# a second reader for the tests: Spark 3.5 with Iceberg's own runtime, in a venv of its own
SPARK35 := .venv-spark35/.installed

.PHONY: demo demo-s3tables demo-postgres test parse-examples clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test]'
	touch $@

$(SPARK35): tests/spark35/install.sh
	tests/spark35/install.sh $(PYTHON) .venv-spark35

demo: $(STAMP)
	rm -rf .demo
	$(VENV)/bin/icesink --data-dir .demo -f examples/quickstart.sql

demo-s3tables: $(STAMP)
	examples/s3tables-demo.sh

demo-postgres: $(STAMP)
	examples/postgres-demo.sh

test: $(STAMP) $(SPARK35)
	$(VENV)/bin/python -m pytest -q --durations=30

clean:
	rm -rf $(VENV) .venv-spark35 .demo .demo-s3tables .demo-postgres
