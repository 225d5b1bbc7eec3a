"""Every core error kind maps to its own exception class."""

import pytest

import bale
from bale import _bale
from bale._support import ERROR_CLASSES


def test_every_error_kind_is_mapped():
    # ERROR_CODES comes from the core's ErrorKind::ALL; _error_for_code goes
    # through the same conversion as every raised error.
    codes = _bale.ERROR_CODES
    assert len(codes) == len(set(codes)) == 11
    seen = set()
    for code in codes:
        exc = _bale._error_for_code(code)
        cls = type(exc)
        assert cls is not bale.BaleError, f"{code} falls back to the base class"
        assert isinstance(exc, bale.BaleError) and cls.code == exc.code == code
        assert exc.message == "probe" and str(exc) == f"{code}: probe"
        assert getattr(bale, cls.__name__) is cls and cls.__module__ == "bale"
        seen.add(cls)
    assert len(seen) == len(codes)
    assert set(ERROR_CLASSES) - {""} == set(codes)


def test_builtin_bases():
    assert issubclass(bale.NotFoundError, KeyError) and issubclass(bale.NotFoundError, bale.BaleError)
    assert issubclass(bale.IoError, OSError) and issubclass(bale.IoError, bale.BaleError)
    for cls in ERROR_CLASSES.values():
        assert issubclass(cls, Exception)


def test_unknown_code_is_rejected():
    with pytest.raises(TypeError):
        _bale._error_for_code("NO_SUCH_KIND")


def test_error_attributes(tmp_path):
    with pytest.raises(bale.BaleError) as e:
        bale.Tree.open(tmp_path / "x.bale", create=True, page_size=12345)
    err = e.value
    assert type(err) is bale.InvalidArgumentError and err.code == "INVALID_ARGUMENT"
    assert "page size" in err.message and str(err) == f"INVALID_ARGUMENT: {err.message}" and err.page is None


def test_empty_popitem_raises_not_found(tmp_path):
    with bale.Tree.open(tmp_path / "t.bale", create=True) as t:
        with pytest.raises(bale.NotFoundError) as e:
            t.popitem()
        assert isinstance(e.value, KeyError) and e.value.code == "NOT_FOUND" and "empty" in e.value.message
        with t.write() as txn:
            txn[b"only"] = b"1"
            assert txn.popitem() == (b"only", b"1")
            with pytest.raises(bale.NotFoundError) as e:
                txn.popitem()
            assert isinstance(e.value, KeyError) and e.value.code == "NOT_FOUND"


def test_open_errors_name_the_file(tmp_path):
    text = tmp_path / "text"
    text.write_bytes(b"hello, not a store")
    with pytest.raises(bale.NotABaleFileError) as e:
        bale.Tree.open(text)
    assert e.value.message.startswith(f"{text}: ") and str(e.value) == f"NOT_A_BALE_FILE: {e.value.message}"
    with pytest.raises(bale.NotFoundError) as missing:
        bale.Tree.open(tmp_path / "missing.bale")
    assert str(tmp_path / "missing.bale") in missing.value.message
    with pytest.raises(bale.IoError) as io_err:
        bale.Tree.open(text / "below", create=True)
    assert str(text / "below") in io_err.value.message and io_err.value.filename == str(text / "below")
    assert io_err.value.errno == 20  # ENOTDIR, still set


def test_reports_print_as_python_calls(tmp_path):
    with bale.Tree.open(tmp_path / "t.bale", create=True) as t:
        t.update({b"a": b"1", b"b": b"2"})
        st = t.stat()
        fields = st.to_dict()
        assert list(fields)[:3] == ["txn", "page_size", "file_pages"] and "fill" in fields
        assert repr(st) == "Stat(" + ", ".join(f"{k}={v!r}" for k, v in fields.items()) + ")"
        assert repr(st).startswith(f"Stat(txn={st.txn}, page_size=4096, ") and f"entries=2," in repr(st)
        rep = t.check()
        assert repr(rep) == (
            f"CheckReport(ok=True, txn={rep.txn}, pages={rep.pages}, entries=2, large_values=0, "
            f"free_pages={rep.free_pages}, meta_slot={rep.meta_slot}, problems=[])"
        )
        c = t.compact()
        assert repr(c) == f"CompactReport(bytes_before={c.bytes_before}, bytes_after={c.bytes_after}, entries=2)"
