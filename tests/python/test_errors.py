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
