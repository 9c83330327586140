"""The log side of logwarden: ingest → parse → mine → detect → postprocess → store → export."""
