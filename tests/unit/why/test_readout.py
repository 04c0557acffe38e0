"""The readouts of a lobe's top directions: which eigenvalues are the top directions, the token
pairs of largest |contribution| and the tokens at each end of a direction, against brute force
(sorting every value)."""

from __future__ import annotations

import numpy as np

from headforms.why.readout import top_directions, top_pairs, vocabulary_readout


def test_top_directions_are_the_largest_of_each_sign() -> None:
    values = np.array([-3.0, -1.0, 0.0, 0.5, 2.0, 4.0])  # ascending, as eigh returns them
    assert top_directions(values, 2) == [(0, 0, 5), (0, 1, 4), (1, 0, 0), (1, 1, 1)]
    assert top_directions(values, 3) == [(0, 0, 5), (0, 1, 4), (0, 2, 3), (1, 0, 0), (1, 1, 1)]


def test_top_pairs_are_the_largest_contributions_in_size() -> None:
    rng = np.random.default_rng(0)
    length = 6
    visible = np.tril(np.ones((length, length), bool))
    ranked = np.where(visible, rng.standard_normal((2, 2, length, length)), np.nan)
    total = np.where(visible, rng.standard_normal((length, length)), np.nan)
    eigenvalues = np.array([-2.0, -1.0, 1.0, 3.0])
    directions = top_directions(eigenvalues, 2)
    tokens = [f"t{i}" for i in range(length)]
    found = top_pairs(ranked, total, eigenvalues, directions, 4, tokens)
    assert len(found["rank"]) == 4 * len(directions)
    for index, (lobe, rank, column) in enumerate(directions):
        rows = slice(4 * index, 4 * (index + 1))
        values = ranked[lobe, rank]
        seen = list(zip(*np.nonzero(visible), strict=True))
        pairs = sorted(seen, key=lambda p: -abs(values[p]))[:4]
        got = zip(found["query_position"][rows], found["key_position"][rows], strict=True)
        assert list(got) == pairs
        assert found["contribution"][rows] == [values[p] for p in pairs]
        assert found["score"][rows] == [total[p] for p in pairs]
        assert found["eigenvalue"][rows] == [eigenvalues[column]] * 4
        assert found["rank"][rows] == [rank + 1] * 4
        assert found["lobe"][rows] == [("positive", "negative")[lobe]] * 4
        assert found["distance"][rows] == [q - k for q, k in pairs]
        assert found["query_token"][rows] == [f"t{q}" for q, _ in pairs]


def test_vocabulary_readout_lists_each_end_of_each_direction() -> None:
    rng = np.random.default_rng(1)
    projections = rng.standard_normal((50, 3))
    ids = np.arange(100, 150)
    eigenvalues = np.array([-1.0, 0.5, 2.0])
    directions = top_directions(eigenvalues, 2)
    spelled: list[list[int]] = []

    def texts(wanted: list[int]) -> list[str]:
        spelled.append(wanted)
        return [f"<{i}>" for i in wanted]

    found = vocabulary_readout(projections, ids, eigenvalues, directions, 5, texts)
    assert len(spelled) == 1 and len(spelled[0]) == 2 * 5 * len(directions)  # listed ones only
    for index, (lobe, rank, _) in enumerate(directions):
        for end, sign in (("+", 1.0), ("-", -1.0)):
            keep = (found["rank"] == rank + 1) & (found["lobe"] == ("positive", "negative")[lobe])
            keep &= found["end"] == end
            want = ids[np.argsort(-sign * projections[:, index], kind="stable")[:5]]
            assert list(found["token_id"][keep]) == list(want)
            assert list(found["place"][keep]) == [1, 2, 3, 4, 5]
            assert list(found["token"][keep]) == [f"<{i}>" for i in want]
            np.testing.assert_array_equal(found["projection"][keep], projections[want - 100, index])
