"""Incidents: records grouped by shared pivots (host, account, address, logon id, process GUID, hash)
within a time gap, across windows, files, hosts and runs (`grouping.py`, pure; `regroup.py`, on the
store), rolled up (`rollup.py`) and told as a story the model writes and code checks (`story.py`).

Knows nothing of the CLI, terminals or pages.
"""

from logwarden.app.incidents.grouping import Group, GroupingPolicy, group_records
from logwarden.app.incidents.regroup import IncidentOptions, Regrouped, Span, regroup

__all__ = ["Group", "GroupingPolicy", "IncidentOptions", "Regrouped", "Span", "group_records", "regroup"]
