"""The command line: the top floor. Parses flags, calls `app/` and `train/`, prints, and turns
domain errors into exit codes. Nothing below imports it."""
