"""To-do items and the list that holds them, kept in a JSON file."""

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from todo.errors import NotFoundError

PRIORITIES = (1, 2, 3)  # 1 is the most urgent


@dataclass
class Item:
    id: int
    title: str
    priority: int = 2
    done: bool = False
    tags: list[str] = field(default_factory=list)


class TodoList:
    """Numbered to-do items."""

    def __init__(self, items: list[Item] | None = None) -> None:
        self.items: list[Item] = list(items or [])

    def add(self, title: str, priority: int = 2, tags: list[str] | None = None) -> Item:
        """Add an item; returns it with its new id."""
        item = Item(max((i.id for i in self.items), default=0) + 1, title, priority, tags=list(tags or []))
        self.items.append(item)
        return item

    def get(self, item_id: int) -> Item:
        """The item numbered `item_id`."""
        for item in self.items:
            if item.id == item_id:
                return item
        raise NotFoundError(f"no item {item_id}")

    def complete(self, item_id: int) -> Item:
        """Mark an item done."""
        item = self.get(item_id)
        item.done = True
        return item

    def pending(self) -> list[Item]:
        """The items not done yet, most urgent first."""
        return sorted((i for i in self.items if not i.done), key=lambda i: (i.priority, i.id))

    def save(self, path: str | Path) -> None:
        """Write the list to `path` as JSON."""
        Path(path).write_text(json.dumps([asdict(i) for i in self.items], indent=1))

    @classmethod
    def load(cls, path: str | Path) -> "TodoList":
        """The list saved at `path` (an empty list when there is no file yet)."""
        path = Path(path)
        if not path.exists():
            return cls()
        return cls([Item(**data) for data in json.loads(path.read_text())])
