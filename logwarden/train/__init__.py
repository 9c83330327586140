"""Training data, QLoRA training and distillation for logwarden's own adapter.

`scenarios` writes generated windows with their truth; `realdata` splits the real labelled logs
of `../shared/realdata` (train / held-out, by file and source group) and cuts the train side by
the pipeline's stages; `targets` writes each prompt's answer (findings pinned to the incident's
lines, grounded in the prompt); `production` runs labelled and generated logs through the `Pipeline`
after a learned baseline and keeps the prompts `analyze` queues (analyze_v3's shape) with their
targets (a finding, a rule's floor, or a deviation's dismissal); `dataset` renders and mixes them into
train/val files; `train`
fine-tunes a base model with QLoRA (peft); `teacher` relabels with a larger model where it agrees
with the label; `replay` records prompts and replays answers generated elsewhere.
Imports of torch/peft happen inside `train` only, so building a dataset needs neither.
"""
