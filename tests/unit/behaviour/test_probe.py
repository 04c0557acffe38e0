"""The repeated-token probe: ordinary tokens only, seeded, wrapped as the tokenizer wraps text."""

from __future__ import annotations

import pytest
from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers, processors

from headforms.behaviour.probe import repeated_tokens
from headforms.behaviour.tokens import TextTokenizer
from headforms.errors import OptionError

WORDS = [f"w{i}" for i in range(20)]


def tokenizer(encoder: bool) -> TextTokenizer:
    """[UNK]=0 [CLS]=1 [SEP]=2 [unused0]=3 <extra>=4 (added), then 20 words."""
    vocab = {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "[unused0]": 3, "<extra>": 4}
    vocab.update({w: i + 5 for i, w in enumerate(WORDS)})
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.add_tokens([AddedToken("<extra>", special=False)])
    if encoder:
        backend.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)]
        )
    return TextTokenizer(backend, frozenset({0, 1, 2}), frozenset({4}))


@pytest.mark.parametrize("encoder", [False, True])
def test_the_probe_is_two_copies_of_ordinary_tokens_in_the_tokenizers_wrapping(
    encoder: bool,
) -> None:
    tok = tokenizer(encoder)
    probe = repeated_tokens(tok, vocab_size=25, length=8, seed=3)
    start = 1 if encoder else 0
    assert probe.start == start and probe.length == 8
    ids = probe.token_ids
    assert len(ids) == 16 + (2 if encoder else 0)
    if encoder:
        assert (ids[0], ids[-1]) == (1, 2)  # [CLS] ... [SEP], as around any text
    first, second = ids[start : start + 8], ids[start + 8 : start + 16]
    assert first == second and len(set(first)) == 8
    assert set(first) <= set(range(5, 25))  # no special, added or unused token
    assert repeated_tokens(tok, 25, 8, 3) == probe
    assert repeated_tokens(tok, 25, 8, 4).token_ids != ids
    # the wrapping is exactly what the tokenizer does to text
    assert tok.encode("w0") == ([1, 5, 2] if encoder else [5])


def test_the_models_vocabulary_bounds_the_draw_and_a_probe_must_fit_it() -> None:
    tok = tokenizer(False)
    probe = repeated_tokens(tok, vocab_size=10, length=5, seed=0)  # only w0..w4 are embedded
    assert sorted(probe.token_ids[:5]) == [5, 6, 7, 8, 9]
    with pytest.raises(OptionError, match="5 ordinary tokens, fewer than the probe length 6"):
        repeated_tokens(tok, vocab_size=10, length=6, seed=0)
