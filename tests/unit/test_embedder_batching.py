"""How the in-process embedder cuts the texts of one embed() call into forward passes."""

from __future__ import annotations

import random

import pytest

from godot_rag.infra.embedder import PAD_RATIO, PAD_SLACK, length_groups

pytestmark = pytest.mark.unit


def test_every_text_lands_in_exactly_one_group():
    rng = random.Random(3)
    lengths = [rng.randint(3, 256) for _ in range(300)]
    groups = length_groups(lengths, 64, 2048)
    flat = sorted(i for g in groups for i in g)
    assert flat == list(range(len(lengths)))


def test_groups_respect_batch_size_token_budget_and_padding_bound():
    rng = random.Random(5)
    lengths = [rng.randint(3, 256) for _ in range(500)]
    for g in length_groups(lengths, 32, 2048):
        widths = [lengths[i] for i in g]
        assert len(g) <= 32
        assert len(g) == 1 or len(g) * max(widths) <= 2048
        assert max(widths) <= max(min(widths) * PAD_RATIO, min(widths) + PAD_SLACK)


def test_like_lengths_share_a_pass_and_unlike_ones_do_not():
    # Sixteen texts of 20 tokens go together; a 200-token text never pads them.
    lengths = [20] * 16 + [200]
    groups = length_groups(lengths, 64, 2048)
    assert sorted(map(len, groups)) == [1, 16]
    assert [16] in groups


def test_empty_input_gives_no_group():
    assert length_groups([], 64, 2048) == []
