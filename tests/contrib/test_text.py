"""mx.contrib.text: token counting, Vocabulary indexing, embeddings read from small files written here."""
from collections import Counter

import numpy as np
import pytest

import ember as mx
from ember.contrib import text

COUNTER = Counter(["a", "b", "b", "c", "c", "c", "d", "d", "e"])  # c:3, b:2, d:2, a:1, e:1


def _write(path, lines, delim=" "):
    path.write_text("".join(delim.join(str(x) for x in line) + "\n" for line in lines))
    return str(path)


@pytest.fixture
def small_file(tmp_path):
    return _write(tmp_path / "small.txt", [["a", 0.1, 0.2, 0.3], ["b", 1, 2, 3], ["z", -1, -2, -3]])


def test_count_tokens_regex_delims_and_update():
    counts = text.utils.count_tokens_from_str("*Life*is*good*\n*life*is*.*\n", r"\*", "\n", to_lower=True)
    assert counts == Counter({"life": 2, "is": 2, "good": 1, ".": 1})
    base = Counter({"x": 1})
    out = text.utils.count_tokens_from_str("x y", counter_to_update=base)
    assert out is base and base == Counter({"x": 2, "y": 1})


def test_vocabulary_order_thresholds_and_reserved():
    v = text.vocab.Vocabulary(COUNTER, reserved_tokens=["<pad>", "<bos>"])
    # unknown, reserved in order, then by falling count with ties in token order
    assert v.idx_to_token == ["<unk>", "<pad>", "<bos>", "c", "b", "d", "a", "e"]
    assert v.token_to_idx["d"] == 5 and len(v) == 8
    assert v.reserved_tokens == ["<pad>", "<bos>"] and v.unknown_token == "<unk>"
    assert text.vocab.Vocabulary(COUNTER, min_freq=2).idx_to_token == ["<unk>", "c", "b", "d"]
    # most_freq_count does not count reserved tokens; a counter key equal to a reserved one is not re-indexed
    v2 = text.vocab.Vocabulary(Counter({"<pad>": 9, "c": 3, "b": 2}), most_freq_count=1,
                               reserved_tokens=["<pad>"])
    assert v2.idx_to_token == ["<unk>", "<pad>", "c"]
    assert text.vocab.Vocabulary(COUNTER, min_freq=100).idx_to_token == ["<unk>"]


def test_vocabulary_conversions():
    v = text.vocab.Vocabulary(COUNTER, unknown_token="<u>")
    assert v.to_indices("b") == 2 and v.to_indices(["a", "nope", "c"]) == [4, 0, 1]
    assert v.to_tokens(1) == "c" and v.to_tokens([0, np.int64(2)]) == ["<u>", "b"]
    for bad in (100, -1, 1.5):
        with pytest.raises(ValueError, match="invalid"):
            v.to_tokens(bad)


@pytest.mark.parametrize("kwargs, message", [
    (dict(min_freq=0), "min_freq"),
    (dict(reserved_tokens=["<unk>"]), "unknown token"),
    (dict(reserved_tokens=["x", "x"]), "duplicates"),
    (dict(counter={"a": 1}), "collections.Counter"),
])
def test_vocabulary_bad_arguments(kwargs, message):
    kwargs.setdefault("counter", COUNTER)
    with pytest.raises(AssertionError, match=message):
        text.vocab.Vocabulary(**kwargs)


def test_custom_embedding_vectors_and_unknown(small_file):
    e = text.embedding.CustomEmbedding(small_file)
    assert e.idx_to_token == ["<unk>", "a", "b", "z"] and e.vec_len == 3
    np.testing.assert_allclose(e.idx_to_vec.asnumpy(), [[0, 0, 0], [0.1, 0.2, 0.3], [1, 2, 3], [-1, -2, -3]],
                               rtol=1e-6)
    np.testing.assert_allclose(e.get_vecs_by_tokens("b").asnumpy(), [1, 2, 3])
    np.testing.assert_allclose(e.get_vecs_by_tokens(["B", "nope"]).asnumpy(), [[0, 0, 0], [0, 0, 0]])
    np.testing.assert_allclose(e.get_vecs_by_tokens(["B"], lower_case_backup=True).asnumpy(), [[1, 2, 3]])
    ones = text.embedding.CustomEmbedding(small_file, init_unknown_vec=mx.nd.ones)
    np.testing.assert_allclose(ones.get_vecs_by_tokens("nope").asnumpy(), [1, 1, 1])


def test_custom_embedding_file_unknown_header_duplicates(tmp_path):
    path = _write(tmp_path / "e.vec", [[3, 2], ["x", 1, 2], ["<unk>", 7, 8], ["x", 5, 5]], delim="\t")
    with pytest.warns(UserWarning):
        e = text.embedding.CustomEmbedding(path, "\t", init_unknown_vec=mx.nd.ones)
    assert e.idx_to_token == ["<unk>", "x"]  # header and duplicate skipped
    np.testing.assert_allclose(e.idx_to_vec.asnumpy(), [[7, 8], [1, 2]])  # the file's unknown vector wins


def test_custom_embedding_reserved_tokens_get_rows(small_file):
    e = text.embedding.CustomEmbedding(small_file, reserved_tokens=["<pad>"], init_unknown_vec=mx.nd.ones)
    assert e.idx_to_token == ["<unk>", "<pad>", "a", "b", "z"]
    assert e.idx_to_vec.shape == (5, 3)
    np.testing.assert_allclose(e.get_vecs_by_tokens(["<pad>", "a"]).asnumpy(), [[1, 1, 1], [0.1, 0.2, 0.3]],
                               rtol=1e-6)


@pytest.mark.parametrize("lines", [[["a", 1, 2], ["b"]], [["a", 1, 2], ["b", 1, 2, 3]]])
def test_custom_embedding_malformed_files(tmp_path, lines):
    with pytest.raises(AssertionError, match="line|Line"):
        text.embedding.CustomEmbedding(_write(tmp_path / "bad.txt", lines))


def test_custom_embedding_missing_file(tmp_path):
    with pytest.raises(ValueError, match="not a file"):
        text.embedding.CustomEmbedding(str(tmp_path / "none.txt"))


def test_embedding_with_vocabulary(small_file):
    v = text.vocab.Vocabulary(Counter(["b", "b", "q"]), reserved_tokens=["<pad>"])
    e = text.embedding.CustomEmbedding(small_file, vocabulary=v)
    assert e.idx_to_token == ["<unk>", "<pad>", "b", "q"]
    np.testing.assert_allclose(e.idx_to_vec.asnumpy(), [[0, 0, 0], [0, 0, 0], [1, 2, 3], [0, 0, 0]])
    assert e.token_to_idx is not v.token_to_idx  # a copy: later changes to one leave the other alone


def test_composite_embedding_concatenates(small_file, tmp_path):
    # 2-element vectors: a 1-element line would be taken for a fastText header
    other = _write(tmp_path / "o.txt", [["a", 9, 9], ["q", 8, 8], ["<unk>", 5, 5]])
    e1 = text.embedding.CustomEmbedding(small_file)
    e2 = text.embedding.CustomEmbedding(other)
    v = text.vocab.Vocabulary(Counter(["a", "a", "b", "q"]))
    c = text.embedding.CompositeEmbedding(v, [e1, e2])
    assert c.idx_to_token == ["<unk>", "a", "b", "q"] and c.vec_len == 5
    np.testing.assert_allclose(c.idx_to_vec.asnumpy(), [[0, 0, 0, 5, 5], [0.1, 0.2, 0.3, 9, 9],
                                                        [1, 2, 3, 5, 5], [0, 0, 0, 8, 8]], rtol=1e-6)
    single = text.embedding.CompositeEmbedding(v, e2)
    np.testing.assert_allclose(single.get_vecs_by_tokens(["q", "b"]).asnumpy(), [[8, 8], [5, 5]])
    with pytest.raises(AssertionError, match="token embedding"):
        text.embedding.CompositeEmbedding(v, ["not an embedding"])


def test_update_token_vectors(small_file):
    e = text.embedding.CustomEmbedding(small_file)
    e.update_token_vectors(["a", "z"], mx.nd.array([[1, 1, 1], [2, 2, 2]]))
    e.update_token_vectors("<unk>", mx.nd.array([7, 7, 7]))
    e.update_token_vectors(["b"], mx.nd.array([[3, 3, 3]]))
    np.testing.assert_allclose(e.idx_to_vec.asnumpy(), [[7] * 3, [1] * 3, [3] * 3, [2] * 3])
    with pytest.raises(ValueError, match="unknown"):
        e.update_token_vectors("nope", mx.nd.array([0, 0, 0]))
    with pytest.raises(AssertionError, match="shape"):
        e.update_token_vectors("a", mx.nd.array([0]))
    with pytest.raises(AssertionError, match="2-D"):
        e.update_token_vectors(["a", "b"], mx.nd.array([0, 0, 0]))
    with pytest.raises(AssertionError, match="NDArray"):
        e.update_token_vectors("a", [0, 0, 0])


def test_registry_and_pretrained_names(tmp_path):
    names = text.embedding.get_pretrained_file_names()
    assert len(names["glove"]) == 10 and len(names["fasttext"]) == 327
    assert "wiki.simple.vec" in text.embedding.get_pretrained_file_names("fasttext")
    with pytest.raises(KeyError, match="nope"):
        text.embedding.get_pretrained_file_names("nope")
    with pytest.raises(AssertionError, match="not registered"):
        text.embedding.create("nope")
    with pytest.raises(KeyError, match="Valid pretrained files"):
        text.embedding.create("GloVe", pretrained_file_name="glove.bogus.txt")


def test_pretrained_file_must_be_local(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        text.embedding.create("glove", pretrained_file_name="glove.6B.50d.txt", embedding_root=str(tmp_path))
    assert str(tmp_path / "glove" / "glove.6B.50d.txt") in str(info.value)
    # a local file is read (its digest differs from MXNet's, hence the warning); the header line is skipped
    _write((tmp_path / "fasttext").mkdir() or tmp_path / "fasttext" / "wiki.simple.vec",
           [[1, 2], ["hi", 0.5, 0.25]])
    with pytest.warns(UserWarning) as caught:
        ft = text.embedding.FastText(embedding_root=str(tmp_path))
    assert any("SHA-1" in str(w.message) for w in caught) and any("header" in str(w.message) for w in caught)
    assert ft.idx_to_token == ["<unk>", "hi"]
    np.testing.assert_allclose(ft.get_vecs_by_tokens("hi").asnumpy(), [0.5, 0.25])


def test_register_custom_class(small_file):
    class MyEmbed(text.embedding._TokenEmbedding):
        """A registered test embedding."""
        pretrained_file_name_sha1 = {"mine.txt": "0" * 40}

        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self._load_embedding(small_file, " ", mx.nd.zeros)

    assert text.embedding.register(MyEmbed) is MyEmbed
    try:
        assert isinstance(text.embedding.create("myembed"), MyEmbed)
        assert text.embedding.get_pretrained_file_names("myembed") == ["mine.txt"]
    finally:
        text.embedding._REGISTRY.pop("myembed")
    with pytest.raises(AssertionError, match="_TokenEmbedding"):
        text.embedding.register(int)
