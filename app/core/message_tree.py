"""The messages of one conversation as a tree: Edit and Regenerate add a sibling instead of
replacing, so every version stays (issue 17, item 1).

Each message has a parent (None: it opened the conversation); siblings are the versions of one
message, oldest first (ids grow with creation). The *active path* runs from a root to the active
message and then on down, at each step through the reply last shown there (`shown`: the version
the user last looked at, so switching back to a version brings back the branch viewed under it)
or, where none was recorded, the newest reply. Pure data: the Store builds it from its rows, the
chat asks it for paths and version numbers.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class MessageTree:
    """Parent pointers of one conversation's messages: `parents[id]` is the parent's id or None;
    `shown[id]`: the reply to `id` last shown (absent, or not a reply of `id`: the newest one).
    Methods taking an id raise KeyError when it is not in the tree."""

    parents: Mapping[int, int | None]
    shown: Mapping[int, int] = field(default_factory=dict)
    _children: dict[int | None, list[int]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        children: dict[int | None, list[int]] = {}
        for message_id in sorted(self.parents):
            children.setdefault(self.parents[message_id], []).append(message_id)
        object.__setattr__(self, "_children", children)

    def children(self, message_id: int | None) -> list[int]:
        """The replies to `message_id` (None: the roots), oldest first."""
        return list(self._children.get(message_id, ()))

    def siblings(self, message_id: int) -> list[int]:
        """The versions of `message_id` (itself included), oldest first."""
        return self.children(self.parents[message_id])

    def path_to(self, message_id: int) -> list[int]:
        """Ids from the root down to `message_id`, both included."""
        path = [message_id]
        while (parent := self.parents[path[-1]]) is not None:
            path.append(parent)
        return path[::-1]

    def shown_leaf(self, message_id: int) -> int:
        """Follow the reply last shown (else the newest) from `message_id` down to a message
        without replies."""
        self.parents[message_id]  # KeyError for an unknown id
        while children := self._children.get(message_id):
            shown = self.shown.get(message_id)
            message_id = shown if shown in children else children[-1]
        return message_id

    def active_path(self, active_id: int | None) -> list[int]:
        """The path shown: root → `active_id` → the replies last shown below it. An `active_id`
        that is None or not in the tree falls back to the newest root ([] when empty)."""
        if active_id not in self.parents:
            roots = self._children.get(None)
            if not roots:
                return []
            active_id = roots[-1]
        return self.path_to(self.shown_leaf(active_id))

    def versions(self, path: Sequence[int]) -> list[tuple[int, int]]:
        """For each message of `path`: (its number among its versions, from 1; how many there are)."""
        out = []
        for message_id in path:
            siblings = self.siblings(message_id)
            out.append((siblings.index(message_id) + 1, len(siblings)))
        return out

    def subtree(self, message_id: int) -> set[int]:
        """`message_id` and every message below it."""
        found, todo = set(), [message_id]
        while todo:
            current = todo.pop()
            found.add(current)
            todo.extend(self._children.get(current, ()))
        return found
