"""One module per CLI command; `COMMANDS` is what `logwarden` exposes."""

from logwarden.app.commands.analyze import analyze
from logwarden.app.commands.dataset import dataset
from logwarden.app.commands.eval import eval_command
from logwarden.app.commands.export import export
from logwarden.app.commands.records import db, records
from logwarden.app.commands.rules import rules
from logwarden.app.commands.train import train
from logwarden.app.commands.triage import triage
from logwarden.app.commands.ui import ui
from logwarden.app.commands.watch import watch

COMMANDS = [analyze, triage, watch, ui, export, records, db, rules, eval_command, dataset, train]
