"""Runs typing_usage.py, which mypy checks statically (make test-python)."""

import typing_usage


def test_the_typed_usage_runs(tmp_path):
    typing_usage.bytes_store(tmp_path / "t.bale")
    typing_usage.codec_stores(tmp_path / "c.bale")
    typing_usage.object_store(tmp_path / "objects")
    typing_usage.remotes(tmp_path / "remote-a")
    typing_usage.bitables(tmp_path / "t.bitable")
