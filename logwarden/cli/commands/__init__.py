"""One module per CLI command; `COMMANDS` is what `logwarden` exposes."""

from logwarden.cli.commands.analyze import analyze
from logwarden.cli.commands.baseline import baseline
from logwarden.cli.commands.config import config
from logwarden.cli.commands.dataset import dataset
from logwarden.cli.commands.eval import eval_command
from logwarden.cli.commands.export import export
from logwarden.cli.commands.incidents import incidents
from logwarden.cli.commands.records import db, records
from logwarden.cli.commands.report import report
from logwarden.cli.commands.review import review
from logwarden.cli.commands.rules import rules
from logwarden.cli.commands.train import train
from logwarden.cli.commands.triage import triage
from logwarden.cli.commands.ui import ui
from logwarden.cli.commands.watch import watch

COMMANDS = [analyze, triage, watch, review, ui, export, report, records, incidents, db, rules, baseline, config, eval_command,
            dataset,
            train]
