"""Secret values: in the OS keyring, or, where no secure keyring backend exists (a headless
server), in owner-only files under the data directory.

The file store encrypts each value with a key kept in its own owner-only file. That protects
against values turning up in greps, backups of the catalog and screen shares; against a reader
with the owner's file access only the file mode protects, which is why a real keyring is
preferred whenever one is available.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Optional

import keyring
import keyring.errors
from cryptography.fernet import Fernet, InvalidToken

from ..errors import CatalogError

SECRETS_DIR = "secrets"
_INSECURE_BACKENDS = ("keyring.backends.fail", "keyring.backends.null", "keyrings.alt")


def _keyring_is_secure() -> bool:
    backend = keyring.get_keyring()
    module = type(backend).__module__
    if module.startswith(_INSECURE_BACKENDS):
        return False
    if module == "keyring.backends.chainer":
        return bool(getattr(backend, "backends", ()))
    return getattr(backend, "priority", 0) >= 1


def _write_private(path: Path, data: bytes) -> None:
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


class KeyringSecrets:
    description = "the OS keyring"

    def __init__(self, service: str):
        self.service = service

    def set(self, secret_id: str, value: str) -> None:
        keyring.set_password(self.service, secret_id, value)

    def get(self, secret_id: str) -> Optional[str]:
        return keyring.get_password(self.service, secret_id)

    def delete(self, secret_id: str) -> None:
        try:
            keyring.delete_password(self.service, secret_id)
        except keyring.errors.PasswordDeleteError:
            pass


class FileSecrets:
    def __init__(self, directory: Path, announce: Callable[[str], None]):
        self.directory = directory
        self.description = f"owner-only files in {directory}"
        self._announce = announce
        self._fernet: Optional[Fernet] = None

    def _cipher(self) -> Fernet:
        if self._fernet is None:
            key_file = self.directory / "key"
            if not key_file.exists():
                self.directory.mkdir(mode=0o700, exist_ok=True)
                os.chmod(self.directory, 0o700)
                try:
                    fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                    with os.fdopen(fd, "wb") as f:
                        f.write(Fernet.generate_key())
                    self._announce(f"no secure keyring backend found: secret values are kept in {self.description}"
                                   " (mode 0600); set ICESINK_SECRET_STORE=keyring once a keyring is available")
                except FileExistsError:  # another process created it first
                    pass
            try:
                self._fernet = Fernet(key_file.read_bytes())
            except ValueError:
                raise CatalogError(f"secret store {key_file}: the key file is damaged; without it the stored "
                                   "values cannot be read, so set each secret again with ALTER SECRET … AS") from None
        return self._fernet

    def _path(self, secret_id: str) -> Path:
        return self.directory / f"{secret_id}.secret"

    def set(self, secret_id: str, value: str) -> None:
        _write_private(self._path(secret_id), self._cipher().encrypt(value.encode()))

    def get(self, secret_id: str) -> Optional[str]:
        path = self._path(secret_id)
        if not path.exists():
            return None
        try:
            return self._cipher().decrypt(path.read_bytes()).decode()
        except InvalidToken:
            raise CatalogError(f"secret store {path}: the value cannot be decrypted with {self.directory / 'key'} "
                               "(one of the two files changed); set the secret again with ALTER SECRET … AS") from None

    def delete(self, secret_id: str) -> None:
        self._path(secret_id).unlink(missing_ok=True)


def open_secret_store(data_dir: Path, install_id: str, announce: Callable[[str], None]):
    """ICESINK_SECRET_STORE=keyring|file forces a store; otherwise the keyring when it is secure."""
    choice = os.environ.get("ICESINK_SECRET_STORE", "").lower()
    if choice == "keyring" or (choice != "file" and _keyring_is_secure()):
        return KeyringSecrets(f"icesink/{install_id}")
    return FileSecrets(Path(data_dir) / SECRETS_DIR, announce)


def secret_value(catalog, secrets, secret_id: str) -> str:
    """A secret's value from `secrets`, or an error saying which secret lost its value and how to set it."""
    value = secrets.get(secret_id)
    if value is None:
        obj = catalog.get_by_id(secret_id)
        raise CatalogError(f"the value of secret '{obj.name if obj else secret_id}' is missing from "
                           f"{secrets.description}; set it again with ALTER SECRET … AS '…'")
    return value
