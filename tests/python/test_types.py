"""One rule for arguments of the wrong type, everywhere in the package: they
raise bale.InvalidTypeError, which is both bale's InvalidArgumentError (code
INVALID_ARGUMENT) and a TypeError. Wrong values of the right type stay
InvalidArgumentError alone."""

import io

import pytest

import bale

# Not bytes-like: the wrong type for every key, bound and value of a bytes store.
WRONG = ["text", 42, 1.5, [b"a"], object()]


@pytest.fixture
def tree(tmp_path):
    with bale.Tree.open(tmp_path / "t.bale", create=True) as t:
        t[b"k"] = b"v"
        yield t


def assert_type_error(op, what=""):
    with pytest.raises(bale.InvalidTypeError) as e:
        op()
    err = e.value
    assert isinstance(err, TypeError) and isinstance(err, bale.InvalidArgumentError), type(err)
    assert err.code == "INVALID_ARGUMENT" and str(err) == f"INVALID_ARGUMENT: {err.message}"
    assert what in err.message, (what, err.message)
    return err


def key_ops(m, bad):
    """Every call of a mapping (tree, snapshot, transaction) that takes a key."""
    ops = [
        lambda: m[bad],
        lambda: m.get(bad),
        lambda: bad in m,
        lambda: m.keys(bad),
        lambda: m.values(None, bad),
        lambda: m.items(gt=bad),
        lambda: m.keys(lte=bad),
        lambda: m.keys(prefix=bad),
    ]
    if hasattr(m, "put"):
        ops += [
            lambda: m.__setitem__(bad, b"v"),
            lambda: m.put(bad, b"v"),
            lambda: m.__delitem__(bad),
            lambda: m.delete(bad),
            lambda: m.pop(bad),
            lambda: m.pop(bad, None),
            lambda: m.setdefault(bad, b"v"),
            lambda: m.update([(bad, b"v")]),
            lambda: m.put_stream(bad, io.BytesIO(b"x")),
        ]
    if hasattr(m, "open_value"):
        ops.append(lambda: m.open_value(bad))
    return ops


def value_ops(m, bad):
    return [
        lambda: m.__setitem__(b"k", bad),
        lambda: m.put(b"k", bad),
        lambda: m.setdefault(b"new", bad),
        lambda: m.update([(b"k", bad)]),
    ]


def test_wrong_key_and_value_types_everywhere(tree):
    with tree.read() as snap:
        for bad in WRONG:
            for op in key_ops(tree, bad) + key_ops(snap, bad) + value_ops(tree, bad):
                assert_type_error(op, "bytes-like")
    with tree.write() as txn:
        for bad in WRONG:
            for op in key_ops(txn, bad) + value_ops(txn, bad):
                assert_type_error(op, "bytes-like")
    assert dict(tree.items()) == {b"k": b"v"}  # nothing was written


def test_wrong_option_types_are_type_errors_wrong_values_are_not(tree):
    for bad in [dict(limit="3"), dict(offset=b"1"), dict(limit=True), dict(reverse="yes"), dict(reverse=1),
                dict(include_stop=1), dict(gt=7), dict(start="a")]:
        assert_type_error(lambda: tree.keys(**bad))
    for bad in [dict(limit=-1), dict(limit=1.5), dict(offset=-2), dict(gt=b"1", gte=b"2"), dict(lmit=3),
                dict(end=b"x")]:
        with pytest.raises(bale.InvalidArgumentError) as e:
            tree.keys(**bad)
        assert not isinstance(e.value, TypeError), bad


def test_open_argument_types(tmp_path):
    p = tmp_path / "o.bale"
    assert_type_error(lambda: bale.Tree.open(42), "path")
    for name in ["create", "readonly", "durable", "mmap", "wait"]:
        assert_type_error(lambda: bale.Tree.open(p, **{name: "yes"}), name)
    assert_type_error(lambda: bale.Tree.open(p, create=True, page_size="4096"), "page_size")
    assert_type_error(lambda: bale.Tree.open(p, create=True, bogus=1), "unexpected keyword argument \"bogus\"")
    for bad in (-1, 1000, 2**40):
        with pytest.raises(bale.InvalidArgumentError, match=f"page size {bad} ") as e:
            bale.Tree.open(p, create=True, page_size=bad)
        assert not isinstance(e.value, TypeError)
    with bale.Tree.open(p, create=True, page_size=None, mmap=None) as t:  # None: the default
        assert t.page_size == 4096


def test_update_needs_pairs_and_put_stream_a_binary_file(tree):
    assert_type_error(lambda: tree.update(5), "pairs")
    assert_type_error(lambda: tree.update([b"abc"]), "pairs")
    assert_type_error(lambda: tree.update([(b"a", b"b", b"c")]), "pairs")
    with tree.write() as txn:
        assert_type_error(lambda: txn.update([7]), "pairs")
        assert_type_error(lambda: txn.put_stream(b"k", io.StringIO("text")), "binary file")
    assert_type_error(lambda: tree.put_stream(b"k", io.StringIO("text")), "binary file")


def test_user_exceptions_inside_update_pass_unchanged(tree):
    def pairs():
        yield (b"a", b"1")
        raise ZeroDivisionError("from the generator")

    with pytest.raises(ZeroDivisionError):
        tree.update(pairs())


def test_pickling_a_tree_is_a_type_error(tree):
    import pickle

    assert_type_error(lambda: pickle.dumps(tree), "Tree.open")
