"""Training data, QLoRA training and distillation for logwarden's own adapter.

`dataset` renders generated scenarios through the pipeline's digest + prompt; `train` fine-tunes
a base model with QLoRA (peft); `teacher` relabels generated windows with a larger model.
Imports of torch/peft happen inside `train` only, so building a dataset needs neither.
"""
