"""Incidents: records grouped by shared pivots (host, account, address, logon id, process GUID, hash)
within a time gap, across windows, files, hosts and runs (`grouping.py`, pure; `regroup.py`, on the
store), rolled up (`rollup.py`) and told as a story the model writes and code checks (`story.py`);
`options.py` is how (`IncidentOptions`).

The package itself imports nothing of the store: `regroup`, `Span` and `Regrouped` are imported
from `incidents.regroup` where a store is at hand (a run's options need only `IncidentOptions`).

Knows nothing of the CLI, terminals or pages.
"""

from logwarden.app.incidents.grouping import Group, GroupingPolicy, group_records
from logwarden.app.incidents.options import IncidentOptions

__all__ = ["Group", "GroupingPolicy", "IncidentOptions", "group_records"]
