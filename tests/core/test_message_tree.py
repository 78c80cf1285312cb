"""The message tree (app.core.message_tree): paths, versions, the leaf shown."""

import pytest

from app.core.message_tree import MessageTree

#   1 ─ 2 ─ 3 ─ 4          (1: root; 5 is a second version of 2, 6 a second root)
#     └ 5 ─ 7
#   6
TREE = MessageTree({1: None, 2: 1, 3: 2, 4: 3, 5: 1, 6: None, 7: 5})


def test_paths_versions_and_leaves():
    assert TREE.children(None) == [1, 6] and TREE.siblings(5) == [2, 5]
    assert TREE.path_to(4) == [1, 2, 3, 4]
    assert TREE.shown_leaf(1) == 7 and TREE.shown_leaf(2) == 4
    assert TREE.active_path(2) == [1, 2, 3, 4] and TREE.active_path(1) == [1, 5, 7]
    assert TREE.versions([1, 5, 7]) == [(1, 2), (2, 2), (1, 1)]
    assert TREE.subtree(2) == {2, 3, 4}


def test_an_unknown_active_message_falls_back_to_the_newest_root():
    assert TREE.active_path(None) == [6] and TREE.active_path(99) == [6]
    assert MessageTree({}).active_path(None) == []
    with pytest.raises(KeyError):
        TREE.path_to(99)
    with pytest.raises(KeyError):
        TREE.shown_leaf(99)


def test_the_reply_last_shown_is_followed_instead_of_the_newest():
    #   1 ─ 2 ─ 3 ─ 4
    #         └ 8        (8: a newer version of 3; 2 last showed 3, 1 last showed 2)
    tree = MessageTree({1: None, 2: 1, 3: 2, 4: 3, 5: 1, 7: 5, 8: 2}, shown={1: 2, 2: 3})
    assert tree.active_path(1) == [1, 2, 3, 4] and tree.shown_leaf(2) == 4
    assert MessageTree(tree.parents).active_path(1) == [1, 5, 7]  # nothing recorded: the newest
    assert MessageTree(tree.parents, {1: 2, 2: 99}).active_path(2) == [1, 2, 8]  # a stale record is ignored
