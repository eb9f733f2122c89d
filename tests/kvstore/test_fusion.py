"""Fusion plans and settings (no MPI needed)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from ember.kvstore import KVStoreError, config, fusion
from ember.kvstore.keys import group, stable_hash


def entry(key, shape, dtype=np.float32):
    return SimpleNamespace(key=key, shape=shape, dtype=np.dtype(dtype))


def test_small_keys_share_buffers_up_to_the_threshold_and_large_ones_go_alone():
    items = [(entry(0, (10,)), "v0"), (entry(1, (10,)), "v1"), (entry(2, (1000,)), "v2"),
             (entry(3, (10,)), "v3"), (entry(4, (10,), np.float64), "v4")]
    buckets = fusion.plan(items, threshold=100)  # 100 bytes: 25 float32
    layout = [([e.key for e, _ in b.items], b.fused) for b in buckets]
    assert layout == [([0, 1], True), ([2], False), ([3], False), ([4], False)]  # lone keys: not packed
    assert buckets[0].offsets == [0, 10] and buckets[0].size == 20 and buckets[0].nbytes == 80
    assert buckets[3].dtype == np.float64


def test_keys_at_the_key_limit_go_alone_even_under_the_threshold():
    items = [(entry(0, (10,)), "v0"), (entry(1, (16,)), "v1"), (entry(2, (15,)), "v2"), (entry(3, (5,)), "v3")]
    buckets = fusion.plan(items, threshold=1000, key_limit=64)  # 64 bytes: 16 float32
    layout = [([e.key for e, _ in b.items], b.fused) for b in buckets]
    assert layout == [([0, 2, 3], True), ([1], False)]
    assert buckets[0].offsets == [0, 10, 25]
    # without a key limit the threshold alone decides
    assert [len(b.items) for b in fusion.plan(items, threshold=1000)] == [4]


def test_zero_threshold_disables_fusion():
    items = [(entry(k, (3,)), None) for k in range(4)]
    assert [b.fused for b in fusion.plan(items, 0)] == [False] * 4


def test_chunks_cover_the_buffer_exactly():
    flat = np.arange(1001, dtype=np.float32)
    parts = fusion.chunks(flat, 400)  # 100 floats per chunk
    assert [len(p) for p in parts] == [100] * 10 + [1]
    np.testing.assert_array_equal(np.concatenate(parts), flat)
    parts[3][0] = -1  # views, not copies: allreduce results land in the buffer
    assert flat[300] == -1


def test_fingerprint_is_exact_in_float32_and_names_the_layout():
    a = fusion.fingerprint(((0, (3,)), "float32"), np.dtype(np.float32))
    b = fusion.fingerprint(((1, (3,)), "float32"), np.dtype(np.float32))
    assert a != b and 1 <= a < 2 ** 16 and float(np.float32(a * 64)) == a * 64
    assert fusion.fingerprint(((0, (3,)),), np.dtype(np.float16)) is None


def test_stable_hash_does_not_depend_on_the_process():
    import zlib
    assert stable_hash("fc1_weight") == zlib.crc32(b"fc1_weight") & 0x7FFFFFFF
    assert stable_hash(12) == 12


def test_group_merges_repeated_keys_in_order():
    a, b, c = (SimpleNamespace(_data=None, var=object()) for _ in range(3))
    assert group([5, "x", 5], [a, b, c]) == [(5, [a, c]), ("x", [b])]


def test_bad_settings_are_named(monkeypatch):
    monkeypatch.setenv("EMBER_KVSTORE_TIMEOUT", "soon")
    with pytest.raises(KVStoreError, match="EMBER_KVSTORE_TIMEOUT='soon'"):
        config.settings()
    monkeypatch.setenv("EMBER_KVSTORE_TIMEOUT", "-3")
    with pytest.raises(KVStoreError, match="must not be negative"):
        config.settings()
    monkeypatch.setenv("EMBER_KVSTORE_TIMEOUT", "12")
    monkeypatch.setenv("DMLC_ROLE", "boss")
    with pytest.raises(KVStoreError, match="DMLC_ROLE='boss'"):
        config.settings()
    monkeypatch.setenv("DMLC_ROLE", "worker")
    monkeypatch.setenv("EMBER_KVSTORE_FUSION_THRESHOLD", "1024")
    s = config.settings()
    assert s.timeout == 12 and s.heartbeat == 3 and s.fusion_threshold == 1024 and s.role == "worker"


def test_window_setting(monkeypatch):
    monkeypatch.delenv("EMBER_KVSTORE_WINDOW", raising=False)
    assert config.settings().window == 2
    monkeypatch.setenv("EMBER_KVSTORE_WINDOW", "5")
    assert config.settings().window == 5
    monkeypatch.setenv("EMBER_KVSTORE_WINDOW", "0")
    with pytest.raises(KVStoreError, match="EMBER_KVSTORE_WINDOW must be at least 1"):
        config.settings()
    monkeypatch.setenv("EMBER_KVSTORE_WINDOW", "two")
    with pytest.raises(KVStoreError, match="EMBER_KVSTORE_WINDOW='two'"):
        config.settings()


def test_fusion_key_limit_setting(monkeypatch):
    monkeypatch.delenv("EMBER_KVSTORE_FUSION_KEY_LIMIT", raising=False)
    assert config.settings().fusion_key_limit == 128 << 10
    monkeypatch.setenv("EMBER_KVSTORE_FUSION_KEY_LIMIT", "4096")
    assert config.settings().fusion_key_limit == 4096
    monkeypatch.setenv("EMBER_KVSTORE_FUSION_KEY_LIMIT", "lots")
    with pytest.raises(KVStoreError, match="EMBER_KVSTORE_FUSION_KEY_LIMIT='lots'"):
        config.settings()
