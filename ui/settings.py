"""The app's settings: every key declared once, with its type and default, read through one typed registry.

QSettings in INI format hands back strings ("8" for 8) and whatever a foreign or corrupted file holds,
so every read goes through `Option.convert`: a value that does not convert falls back to the default,
and the fall-back is recorded in `Settings.notices` for the status bar — never an exception.

Tests (and `--settings FILE`) point the store at a file of their own with ``Settings(path)``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Callable

from PySide6.QtCore import QByteArray, QSettings

ORGANIZATION = "advisor"
APPLICATION = "advisor"
#: bump when a key changes meaning; `Settings.__init__` then drops what it cannot upgrade
SETTINGS_VERSION = 1


def _to_bytes(v: Any) -> QByteArray:
    if isinstance(v, QByteArray):
        return v
    if isinstance(v, (bytes, bytearray)):
        return QByteArray(bytes(v))
    raise TypeError("not a byte array")


def _to_int(v: Any) -> int:
    if isinstance(v, bool):
        raise TypeError("a boolean is not a number")
    return int(str(v).strip())


def _to_bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    text = str(v).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise ValueError(f"not a yes/no value: {v!r}")


def _to_int_list(v: Any) -> list[int]:
    if isinstance(v, str):
        v = [x for x in v.split(",") if x.strip()]
    if not isinstance(v, (list, tuple)):
        raise TypeError("not a list")
    out = [int(str(x).strip()) for x in v]
    if any(x < 0 for x in out):
        raise ValueError("negative size")
    return out


def _to_json_dict(v: Any) -> dict:
    from advisor.api import load_json

    d = load_json(v, "a stored setting") if isinstance(v, str) else v
    if not isinstance(d, dict):
        raise TypeError("not a JSON object")
    return d


def _to_str(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError("not text")
    return v


@dataclass(frozen=True)
class Option:
    key: str
    default: Any
    convert: Callable[[Any], Any]
    title: str
    #: how to store the value (QSettings keeps bytes and strings as they are)
    store: Callable[[Any], Any] = lambda v: v


OPTIONS: dict[str, Option] = {o.key: o for o in (
    Option("settings_version", SETTINGS_VERSION, _to_int, "Version of this settings file"),
    Option("window/geometry", QByteArray(), _to_bytes, "Main window position and size"),
    Option("window/state", QByteArray(), _to_bytes, "Main window docks and toolbars"),
    Option("window/splitter", [], _to_int_list, "Sizes of the inputs | results splitter",
           store=lambda v: ",".join(str(int(x)) for x in v)),
    Option("window/right_splitter", [], _to_int_list, "Sizes of the summary | tabs splitter",
           store=lambda v: ",".join(str(int(x)) for x in v)),
    Option("window/tab", 0, _to_int, "The tab shown last"),
    Option("session/inputs", {}, _to_json_dict, "The inputs of the last sizing (catalog keys and numbers)",
           store=lambda v: json.dumps(v, sort_keys=True)),
    Option("files/last_dir", "", _to_str, "Folder of the last opened or saved file"),
)}


class Settings:
    """Typed access to the app's QSettings. ``path`` = an INI file of one's own (tests, portable use)."""

    def __init__(self, path: str | os.PathLike | None = None):
        if path is not None:
            self.qs = QSettings(str(path), QSettings.Format.IniFormat)
        else:
            self.qs = QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, ORGANIZATION, APPLICATION)
        #: human-readable lines about values that were unreadable and fell back to their defaults
        self.notices: list[str] = []
        if self.qs.status() != QSettings.Status.NoError:
            self.notices.append(f"settings file {self.qs.fileName()} could not be read; using defaults")
        version = self.get("settings_version")
        if version > SETTINGS_VERSION:
            self.notices.append(f"settings were written by a newer version ({version}); unknown values are ignored")

    @property
    def file_name(self) -> str:
        return self.qs.fileName()

    def get(self, key: str) -> Any:
        opt = OPTIONS[key]
        if not self.qs.contains(key):
            return _copy(opt.default)
        raw = self.qs.value(key)
        try:
            return opt.convert(raw)
        except Exception:  # noqa: BLE001 - any unreadable value falls back, that is the contract
            self.notices.append(f"setting {key!r} ({opt.title.lower()}) was unreadable; using its default")
            return _copy(opt.default)

    def set(self, key: str, value: Any) -> None:
        opt = OPTIONS[key]
        self.qs.setValue(key, opt.store(value))

    def sync(self) -> None:
        self.qs.setValue("settings_version", SETTINGS_VERSION)
        self.qs.sync()

    def clear(self) -> None:
        self.qs.clear()


def _copy(v: Any) -> Any:
    if isinstance(v, (list, dict)):
        return type(v)(v)
    if isinstance(v, QByteArray):
        return QByteArray(v)
    return v
