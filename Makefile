# The two set-up commands of the README: `make demo` (quickstart) and `make test`.
PYTHON ?= python3
VENV ?= .venv
STAMP := $(VENV)/.installed

.PHONY: demo demo-s3tables demo-postgres test parse-examples clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test]'
	touch $@

demo: $(STAMP)
	rm -rf .demo
	$(VENV)/bin/icesink --data-dir .demo -f examples/quickstart.sql

demo-s3tables: $(STAMP)
	examples/s3tables-demo.sh

demo-postgres: $(STAMP)
	examples/postgres-demo.sh

test: $(STAMP)
	$(VENV)/bin/python -m pytest -q

clean:
	rm -rf $(VENV) .demo .demo-s3tables .demo-postgres
