"""What tokenmill trusts: locations from files by protocol, numbers from files within bounds, and
private places found from what only the user controls."""

import json
import os
import stat
from fractions import Fraction

import pytest

from schemas.trust import (
    MAX_DIGITS,
    MAX_EXPONENT,
    REMOTE_PROTOCOLS,
    SECRET_FILE,
    OutOfBounds,
    TooLarge,
    UntrustedPath,
    bounded_decimal,
    bounded_json,
    is_url,
    location_from_file,
    shared_private_folder,
    user_cache,
)


@pytest.mark.parametrize("location", [
    "local:///etc", "file:///etc/passwd", "memory://bucket/x", "simplecache::file:///etc", "blockcache::s3://b/x",
    "zip://inner::s3://b/x.zip", "s3://b/x::file:///etc", "S3://b/x", "reference://x", "dir://x", "git://x",
    "ftp://host/x", "ssh://host/x", "://x", "/etc", "../up", "~/x", "//host/x",
])
def test_a_location_from_a_file_is_a_remote_url_or_a_path_inside_its_folder(location):
    with pytest.raises(ValueError, match=r"source 'a': path .* must be relative to its folder"):
        location_from_file(location, "source 'a': path")


@pytest.mark.parametrize("location", ["https://example.org/shards/web", "http://host:8080/x", "s3://bucket/web",
                                      "s3a://b/x", "gs://b/x", "gcs://b/x", "az://c/x", "abfs://c/x", "abfss://c@a/x",
                                      "adl://s/x", "hf://datasets/org/name/shards", "hdfs://nn/x", "webhdfs://nn/x",
                                      "web", "web/heldout"])
def test_remote_urls_and_paths_inside_the_folder_pass(location):
    assert location_from_file(location, "f") == location


def test_the_users_own_locations_may_be_any_url_or_local_path():
    assert is_url("memory://x") and is_url("local:///x") and not is_url("file:///x") and not is_url("/x")
    assert {"s3", "gs", "https", "hf"} <= REMOTE_PROTOCOLS and not {"file", "local", "memory"} & REMOTE_PROTOCOLS


@pytest.mark.parametrize("text, value", [
    ("0.37", Fraction(37, 100)), ("1e-3", Fraction(1, 1000)), ("-2", -2), (".5", Fraction(1, 2)), ("5.", 5),
    ("1" * MAX_DIGITS, int("1" * MAX_DIGITS)), (f"1e{MAX_EXPONENT}", 10**MAX_EXPONENT),
    (f"1e-{MAX_EXPONENT}", Fraction(1, 10**MAX_EXPONENT)),
    ("0.000" + "1" * MAX_DIGITS, Fraction(int("1" * MAX_DIGITS), 10 ** (MAX_DIGITS + 3))),
    ("1/3", Fraction(1, 3)), (" 2 ", 2), ("1E+2", 100),
])
def test_decimals_within_the_bounds_are_read_exactly(text, value):
    assert bounded_decimal(text) == value


@pytest.mark.parametrize("text", [
    "1e100000000", "1e-100000000", f"1e{MAX_EXPONENT + 1}", f"1e-{MAX_EXPONENT + 1}", "1" * (MAX_DIGITS + 1),
    "0." + "0" * 40 + "1", "9" * 5000, "inf", "nan", "Infinity", "1/0", "", ".", "e5", "1_000", "0x10", "1e", "--1",
    "1/" + "3" * 40, "1" + "0" * 31, "\u0663", "1\u00b2",
])
def test_numbers_past_the_bounds_or_not_decimals_are_not_read(text):
    assert bounded_decimal(text) is None


def test_json_numbers_past_the_bounds_stay_text_for_their_field_to_refuse():
    data = bounded_json(b'{"int": 12, "big": 1' + b"0" * 30 + b', "huge": ' + b"9" * 1_000_000 + b', "float": 0.5, '
                        b'"exp": 1e100000000, "nan": NaN, "inf": -Infinity, "int64": 9223372036854775808}', 2 << 20)
    assert data["int"] == 12 and data["float"] == 0.5
    for key in ("big", "huge", "exp", "nan", "inf", "int64"):
        assert isinstance(data[key], OutOfBounds) and not isinstance(data[key], (int, float, str)), key
    assert len(repr(data["huge"])) < 100  # an error naming it stays one line
    with pytest.raises(TooLarge, match="larger than 10 bytes"):
        bounded_json(b'{"a": 1}   ', 10)
    with pytest.raises(json.JSONDecodeError):
        bounded_json(b"{", 10)


def test_a_key_given_twice_in_a_json_object_is_refused():
    """Found by review: a mixture.json from elsewhere naming the source "web" twice was read as the second
    alone, the first dropped without a word (json keeps the last)."""
    with pytest.raises(ValueError, match="the key 'web' is given twice in one object"):
        bounded_json(b'{"sources": {"web": {"path": "a"}, "code": {}, "web": {"path": "b"}}}', 1000)
    assert bounded_json(b'[{"web": 1}, {"web": 2}]', 1000) == [{"web": 1}, {"web": 2}]  # in two objects: fine


def test_the_users_cache_follows_xdg_and_is_private(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert user_cache() == tmp_path / "xdg" / "tokenmill"
    assert stat.S_IMODE(user_cache().stat().st_mode) == 0o700
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # not absolute: ignored, as the XDG spec says
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user_cache() == tmp_path / "home" / ".cache" / "tokenmill"
    (tmp_path / "open").mkdir(mode=0o777)
    (tmp_path / "open").chmod(0o777)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "open"))  # anyone could swap the folder in it
    with pytest.raises(UntrustedPath, match="written by other users"):
        user_cache()


def test_a_shared_folder_is_named_by_the_users_secret_and_found_alike(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    shared = tmp_path / "shm"
    shared.mkdir()
    folder = shared_private_folder(shared, "a folder")
    assert folder.parent == shared and folder.name != f"tokenmill-{os.getuid()}"
    assert shared_private_folder(shared, "a folder") == folder
    secret = tmp_path / "xdg" / "tokenmill" / SECRET_FILE
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    secret.chmod(0o644)  # readable by others: the names are no longer secret
    with pytest.warns(UserWarning, match=f"{secret}"):
        assert shared_private_folder(shared, "a folder") == shared / f"tokenmill-{os.getuid()}"
