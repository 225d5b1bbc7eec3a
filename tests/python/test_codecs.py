"""Codecs chosen at open: key_codec ("bytes", "utf8") and value_codec
("bytes", "utf8", "json", "pickle") apply to every read and write path,
range bounds included."""

import io
import pickle

import pytest

import bale


class Point:
    """A module-level class, so pickle can find it again."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __eq__(self, other):
        return isinstance(other, Point) and (self.x, self.y) == (other.x, other.y)


ASSET = {"kind": "texture", "size": [512, 512], "name": "héllo", "ok": True, "none": None}


@pytest.fixture
def path(tmp_path):
    return tmp_path / "c.bale"


def test_str_keys_and_json_values_on_every_path(path):
    with bale.Tree.open(path, create=True, key_codec="utf8", value_codec="json") as t:
        assert (t.key_codec, t.value_codec) == ("utf8", "json")
        t["asset/42"] = ASSET
        assert t["asset/42"] == ASSET and t.get("asset/42") == ASSET and t.get("nope", 7) == 7
        assert "asset/42" in t and "asset/43" not in t and len(t) == 1
        t.update({"asset/1": [1, 2.5, "x"], "asset/2": 3})
        t.update([("asset/3", {"a": {}})], other="kw")  # keyword keys are str: they fit a utf8 store
        t.put("asset/4", "plain string")
        assert t.setdefault("asset/5", {"d": 1}) == {"d": 1} and t.setdefault("asset/5", 0) == {"d": 1}
        assert t.setdefault("asset/6") is None and t["asset/6"] is None  # None is JSON null
        assert list(t) == ["asset/1", "asset/2", "asset/3", "asset/4", "asset/42", "asset/5", "asset/6", "other"]
        assert t.keys("asset/2", "asset/42", include_stop=True).__next__() == "asset/2"
        assert list(t.keys("asset/2", "asset/42", include_stop=True)) == ["asset/2", "asset/3", "asset/4", "asset/42"]
        assert list(t.items(prefix="asset/4")) == [("asset/4", "plain string"), ("asset/42", ASSET)]
        assert list(t.values(gt="asset/42", lt="other")) == [{"d": 1}, None]
        assert list(t.keys(prefix="asset/", reverse=True, limit=2)) == ["asset/6", "asset/5"]
        assert ("asset/2", 3) in t.items() and 3 in t.values() and "other" in t.keys()
        assert t.pop("asset/2") == 3 and t.pop("asset/2", "gone") == "gone"
        assert t.delete("asset/3") and not t.delete("asset/3")
        del t["asset/4"]
        assert t.popitem() == ("asset/1", [1, 2.5, "x"])
        with t.read() as snap:
            assert snap["asset/42"] == ASSET and dict(snap.items())["other"] == "kw"
            assert list(snap.keys(prefix="asset/4")) == ["asset/42"]
            with snap.open_value("asset/42") as f:  # value files give the stored bytes
                assert f.read() == b'{"kind":"texture","size":[512,512],"name":"h\xc3\xa9llo","ok":true,"none":null}'
        with t.write() as txn:
            txn["t/1"] = {"in": "txn"}
            assert txn["t/1"] == {"in": "txn"} and list(txn.items(prefix="t/")) == [("t/1", {"in": "txn"})]
            assert txn.put_stream("t/raw", io.BytesIO(b'{"streamed": 1}')) == 15
        assert t["t/raw"] == {"streamed": 1}
    with bale.Tree.open(path, readonly=True) as raw:  # the bytes underneath: UTF-8 keys, compact JSON
        assert raw[b"asset/42"].startswith(b'{"kind":"texture"') and raw[b"other"] == b'"kw"'


def test_utf8_key_order_is_code_point_order(path):
    keys = ["z", "a", "é", "\U0001f600", "ab", "", "A", "\x7f", "\u00ff", "\uffff"]
    with bale.Tree.open(path, create=True, key_codec="utf8", mmap=False) as t:  # reads without a map too
        t.update((k, k.encode()) for k in keys)
        assert list(t.keys()) == sorted(keys)
        assert list(t.keys("a", "é")) == [k for k in sorted(keys) if "a" <= k < "é"]
        with t.read() as snap:
            assert list(snap.items(reverse=True))[0] == ("\U0001f600", "\U0001f600".encode())


def test_utf8_values(path):
    with bale.Tree.open(path, create=True, value_codec="utf8") as t:
        t[b"k"] = "text é"
        assert t[b"k"] == "text é" and t.open_value(b"k").read() == "text é".encode()
        with pytest.raises(bale.InvalidTypeError, match='value must be a str \\(value_codec="utf8"\\)'):
            t[b"k2"] = b"bytes"
        with pytest.raises(bale.InvalidArgumentError) as e:
            t[b"k3"] = "\ud800"  # a lone surrogate has no UTF-8
        assert not isinstance(e.value, TypeError) and isinstance(e.value.__cause__, UnicodeEncodeError)


def test_pickle_values_and_never_pickled_keys(path):
    with bale.Tree.open(path, create=True, key_codec="utf8", value_codec="pickle") as t:
        values = {"tuple": (1, "a", b"b"), "set": {1, 2}, "point": Point(1, 2), "big": list(range(100_000))}
        t.update(values)
        assert dict(t.items()) == values and t["point"] == Point(1, 2)
        assert pickle.loads(t.open_value("set").read()) == {1, 2}
        with pytest.raises(bale.BaleError) as e:
            t["fn"] = lambda: 0  # not picklable
        assert e.value.code == "INVALID_ARGUMENT" and e.value.__cause__ is not None
    for bad in ("pickle", "json"):
        with pytest.raises(bale.InvalidArgumentError, match="key_codec must be one of"):
            bale.Tree.open(path, key_codec=bad)


def test_wrong_types_for_a_codec_are_type_errors(path):
    with bale.Tree.open(path, create=True, key_codec="utf8", value_codec="json") as t:
        t["k"] = 1
        with t.read() as snap:
            for op in (lambda: t[b"k"], lambda: t.get(b"k"), lambda: b"k" in t, lambda: t.__setitem__(b"k", 1),
                       lambda: t.keys(b"a"), lambda: t.keys(prefix=b"a"), lambda: t.items(gt=b"a"),
                       lambda: snap[b"k"], lambda: snap.values(lte=1), lambda: t.open_value(b"k")):
                with pytest.raises(bale.InvalidTypeError, match='must be a str \\(key_codec="utf8"\\)'):
                    op()
        with pytest.raises(bale.InvalidTypeError, match="JSON") as e:
            t["set"] = {1, 2}
        assert isinstance(e.value.__cause__, TypeError)
        loop: list = []
        loop.append(loop)
        with pytest.raises(bale.InvalidArgumentError) as e:
            t["loop"] = loop
        assert not isinstance(e.value, TypeError) and isinstance(e.value.__cause__, ValueError)
        assert list(t.keys()) == ["k"]


def test_stored_bytes_a_codec_cannot_read(path):
    with bale.Tree.open(path, create=True) as t:
        t.update({b"bad-utf8": b"\xff\xfe", b"not-json": b"{nope", b"\xffkey": b"1", b"not-pickle": b"x"})
    with bale.Tree.open(path, value_codec="utf8") as t:
        with pytest.raises(bale.InvalidArgumentError, match="not UTF-8.*value_codec=\"bytes\""):
            t[b"bad-utf8"]
    with bale.Tree.open(path, value_codec="json") as t:
        with pytest.raises(bale.InvalidArgumentError, match="not JSON") as e:
            t[b"not-json"]
        assert e.value.code == "INVALID_ARGUMENT" and e.value.__cause__ is not None
    with bale.Tree.open(path, value_codec="pickle") as t:
        with pytest.raises(bale.InvalidArgumentError, match="not a pickle"):
            t[b"not-pickle"]
    with bale.Tree.open(path, key_codec="utf8") as t:
        with pytest.raises(bale.InvalidArgumentError, match="stored key is not UTF-8"):
            list(t.keys())
        assert t["bad-utf8"] == b"\xff\xfe"  # other keys still read


def test_codec_options_are_checked(path):
    with pytest.raises(bale.InvalidTypeError, match="key_codec must be a str"):
        bale.Tree.open(path, create=True, key_codec=5)
    with pytest.raises(bale.InvalidArgumentError, match='value_codec must be one of "bytes", "utf8", "json", "pickle"'):
        bale.Tree.open(path, create=True, value_codec="yaml")
    with bale.Tree.open(path, create=True, key_codec=None, value_codec="bytes") as t:
        assert (t.key_codec, t.value_codec) == ("bytes", "bytes")
