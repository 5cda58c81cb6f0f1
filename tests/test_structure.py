"""The package's shape, as docs/architecture.md draws it: imports flow one way, and kinds are looked up in registries."""
import ast
import re
from pathlib import Path

import icesink

PACKAGE = Path(icesink.__file__).parent


def _imports(path: Path) -> set[str]:
    """The icesink modules a file imports, as absolute dotted names."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module.rsplit(".", 1)[0] if path.name != "__init__.py" else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                found.add(".".join(base + ([node.module] if node.module else [])))
            elif node.module and node.module.startswith("icesink"):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("icesink"))
    return found


def _package_files(sub: str):
    return sorted((PACKAGE / sub).rglob("*.py"))


def test_the_runtime_never_imports_the_control_plane():
    offenders = {str(p.relative_to(PACKAGE)): sorted(i for i in _imports(p) if i.startswith("icesink.control"))
                 for p in _package_files("engine")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_model_and_the_connectors_stay_below_both_planes():
    for sub, forbidden in (("model", ("icesink.control", "icesink.engine", "icesink.catalog", "icesink.repl")),
                           ("catalog_connections", ("icesink.control", "icesink.engine", "icesink.repl")),
                           ("catalog", ("icesink.control", "icesink.engine", "icesink.repl")),
                           ("grammar", ("icesink.control", "icesink.engine", "icesink.catalog", "icesink.repl"))):
        for path in _package_files(sub):
            bad = [i for i in _imports(path) if i.startswith(forbidden)]
            assert not bad, (str(path.relative_to(PACKAGE)), bad)


def test_no_descriptor_is_read_by_string_key():
    """Only a descriptor's own to/from JSON names its keys; the system views (catalog/schema.py) read the JSON form
    in SQL, which is what that form is for."""
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        assert ".definition[" not in text and ".definition.get(" not in text and "to_json()[" not in text, path
        if path.parent.name != "model" and path.relative_to(PACKAGE).as_posix() != "catalog/schema.py":
            assert not re.search(r"json_extract\(definition, *'", text), path


def test_each_kind_is_one_registry_line():
    from icesink.catalog_connections import CONNECTION_KINDS
    from icesink.engine.sink.writers import WRITERS
    from icesink.engine.sources import INPUTS
    assert set(INPUTS) == {"table", "load-generator", "postgres"}
    assert set(WRITERS) == {"upsert", "append", "merge-on-read"}
    assert set(CONNECTION_KINDS) == {"aws", "iceberg-catalog", "postgres", "gcp"}
