"""The delivery cursor's rows (`deliveries`): per forwarding destination and kind (records, incidents),
which item ids it took and how sure that is (the states are the export's, `app/export/tally.py`).

Owns: reading and writing those rows, each batch's marks in a transaction of their own (so what a
destination took is remembered even when a later batch fails). Does not know how anything is sent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager

from sqlalchemy import Connection, delete, insert, select

from logwarden.app.store.convert import utc_now
from logwarden.app.store.tables import Delivery

CHUNK = 500

Opener = Callable[[], AbstractContextManager[Connection]]


class DeliveryStore:
    """The delivery cursor of one `Store` (`store.deliveries`)."""

    def __init__(self, *, read: Opener, write: Opener) -> None:
        self._read, self._write = read, write

    def states(self, destination: str, kind: str) -> dict[str, str]:
        """item id → state, for what `destination` took of `kind`."""
        stmt = select(Delivery.item_id, Delivery.state).where(Delivery.destination == destination,
                                                              Delivery.kind == kind)
        with self._read() as conn:
            return {item_id: state for item_id, state in conn.execute(stmt)}

    def mark(self, destination: str, kind: str, item_ids: Iterable[str], state: str) -> None:
        ids = list(dict.fromkeys(item_ids))
        now = utc_now()
        with self._write() as conn:
            for start in range(0, len(ids), CHUNK):
                chunk = ids[start:start + CHUNK]
                conn.execute(delete(Delivery).where(Delivery.destination == destination, Delivery.kind == kind,
                                                    Delivery.item_id.in_(chunk)))
                conn.execute(insert(Delivery), [{"destination": destination, "kind": kind, "item_id": item_id,
                                                 "state": state, "updated_at": now} for item_id in chunk])
